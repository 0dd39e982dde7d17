package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/triunalabs/trovesnap/internal/catalog"
)

// MaxDepth bounds how deep objects and arrays may nest in one inbound line.
// An honest MCP message nests a handful of levels (message, params,
// arguments, a tool's flat fields, an array of ids); the go-sdk's decoder
// stops at 1000 and ends the whole session, so the guard refuses long
// before that, on the raw bytes.
const MaxDepth = 64

// frameEnvelopeBytes is what a line may carry around a tool's arguments:
// "jsonrpc", "id", "method", the tool name and "_meta".
const frameEnvelopeBytes = 64 << 10

// MaxFrameBytes bounds one inbound JSON-RPC line on stdio: the largest
// arguments any tool accepts (a base64 photo) plus the envelope. Nothing
// larger than a tool could accept is ever held whole.
func MaxFrameBytes() int { return maxFrameBytes() }

var maxFrameBytes = sync.OnceValue(func() int {
	limit := catalog.MaxArgumentBytes
	for _, t := range catalog.All() {
		limit = max(limit, t.MaxArgumentBytes)
	}
	return limit + frameEnvelopeBytes
})

// maxEchoedID bounds the id the guard copies into the error it answers.
const maxEchoedID = 256

// StdioTransport is the stdio transport with a guard in front of the SDK:
// the go-sdk ends the whole session on any inbound message it cannot decode
// (not JSON, nested 1000 deep, an id of the wrong type …), so the guard reads
// each line itself, checks its size and nesting depth in one pass over the
// bytes before anything decodes it, and hands the SDK only messages that
// decoded. Any other line is answered with a JSON-RPC error (-32700 parse
// error or -32600 invalid request) and dropped; the session goes on. Every
// write to out is one whole message, so the guard's answers never interleave
// with the SDK's.
func StdioTransport(in io.Reader, out io.Writer) mcp.Transport {
	return &stdioTransport{in: in, out: out}
}

type stdioTransport struct {
	in  io.Reader
	out io.Writer
}

// Connect implements mcp.Transport.
func (t *stdioTransport) Connect(context.Context) (mcp.Connection, error) {
	c := &guardConn{
		out:      &lockedWriter{w: t.out},
		incoming: make(chan jsonrpc.Message),
		done:     make(chan struct{}),
		closed:   make(chan struct{}),
	}
	go c.readLoop(t.in)
	return c, nil
}

// guardConn is the mcp.Connection of StdioTransport. One goroutine reads
// and checks lines (stdin cannot be unblocked, so Read selects on it); it
// holds at most one line and one decoded message at a time.
type guardConn struct {
	out       *lockedWriter
	incoming  chan jsonrpc.Message
	done      chan struct{} // closed when input ends; readErr says why
	readErr   error
	closed    chan struct{}
	closeOnce sync.Once
}

func (c *guardConn) readLoop(in io.Reader) {
	defer func() {
		if c.readErr == nil {
			c.readErr = io.EOF
		}
		close(c.done)
	}()
	r := bufio.NewReaderSize(in, 64<<10)
	limit := MaxFrameBytes()
	for {
		line, sc, err := readLine(r, limit)
		if msg, reply := judge(line, sc, limit); msg != nil {
			select {
			case c.incoming <- msg:
			case <-c.closed:
				return
			}
		} else if reply != nil {
			if _, werr := c.out.Write(reply); werr != nil {
				c.readErr = werr
				return
			}
		}
		if err != nil {
			c.readErr = err // io.EOF ends the session cleanly
			return
		}
	}
}

// Read implements mcp.Connection.
func (c *guardConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	default:
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case msg := <-c.incoming:
		return msg, nil
	case <-c.done:
		return nil, c.readErr
	case <-c.closed:
		return nil, io.EOF
	}
}

// Write implements mcp.Connection.
func (c *guardConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	default:
	}
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	_, err = c.out.Write(append(b, '\n'))
	return err
}

// Close implements mcp.Connection.
func (c *guardConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}

// SessionID implements mcp.Connection.
func (c *guardConn) SessionID() string { return "" }

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// readLine reads one newline-terminated line, scanning it as it arrives.
// Bytes are kept only while the line is within limit and MaxDepth: past
// either, the rest is read and scanned (for the id) but not kept, and the
// returned line is nil.
func readLine(r *bufio.Reader, limit int) ([]byte, *lineScan, error) {
	// A long line arrives in bufio-sized chunks; they are copied once more
	// into one slice of the exact size at the end (2L at the peak, L after).
	var chunks [][]byte
	sc := &lineScan{}
	for {
		chunk, err := r.ReadSlice('\n')
		body := bytes.TrimSuffix(chunk, []byte("\n"))
		sc.feed(body)
		if sc.size > limit || sc.tooDeep {
			chunks = nil
		} else if len(body) > 0 {
			chunks = append(chunks, bytes.Clone(body))
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		var line []byte
		if len(chunks) == 1 {
			line = chunks[0]
		} else if len(chunks) > 1 {
			line = make([]byte, 0, sc.size)
			for _, c := range chunks {
				line = append(line, c...)
			}
		}
		return bytes.TrimSuffix(line, []byte("\r")), sc, err
	}
}

// lineScan is the one pass over a raw line: its size, its nesting depth
// outside strings (escapes honoured), and, cheaply, the top-level "id" of a
// request so that a refusal can answer it.
type lineScan struct {
	size     int
	depth    int
	tooDeep  bool
	inString bool
	escaped  bool

	// top level of an object: keys, the "method" key, the "id" value
	expectKey bool
	inKey     bool
	key       []byte
	keyLong   bool
	lastKey   string
	sawMethod bool
	capturing bool
	idSeen    bool
	idBad     bool
	id        []byte
}

func (s *lineScan) feed(p []byte) {
	s.size += len(p)
	for _, b := range p {
		if s.capturing {
			if len(s.id) < maxEchoedID+1 {
				s.id = append(s.id, b)
			} else {
				s.idBad = true
			}
		}
		if s.inString {
			switch {
			case s.escaped:
				s.escaped = false
			case b == '\\':
				s.escaped = true
			case b == '"':
				s.inString = false
				if s.inKey {
					s.inKey = false
					s.lastKey = ""
					if !s.keyLong {
						s.lastKey = string(s.key)
					}
				}
				continue
			}
			if s.inKey {
				if len(s.key) < 8 {
					s.key = append(s.key, b)
				} else {
					s.keyLong = true
				}
			}
			continue
		}
		switch b {
		case '"':
			s.inString = true
			if s.depth == 1 && s.expectKey {
				s.inKey, s.key, s.keyLong = true, s.key[:0], false
			}
		case '{', '[':
			s.depth++
			if s.depth > MaxDepth {
				s.tooDeep = true
			}
			if s.depth == 1 {
				s.expectKey = b == '{'
			}
			if s.capturing {
				s.idBad = true // an id is a string or a number
			}
		case '}', ']':
			if s.depth == 1 {
				s.endID()
			}
			if s.depth > 0 {
				s.depth--
			}
		case ':':
			if s.depth == 1 && s.expectKey {
				s.expectKey = false
				switch s.lastKey {
				case "method":
					s.sawMethod = true
				case "id":
					if !s.idSeen {
						s.idSeen, s.capturing, s.id = true, true, s.id[:0]
					}
				}
			}
		case ',':
			if s.depth == 1 {
				s.endID()
				s.expectKey = true
			}
		}
	}
}

// endID ends the capture of the id value at its terminator (already copied).
func (s *lineScan) endID() {
	if s.capturing {
		s.capturing = false
		if n := len(s.id); n > 0 {
			s.id = s.id[:n-1]
		}
	}
}

// replyID is the id to answer a refused line with: the request's own id
// when the scan read a plain string or number, else null. A line without
// "method" is a response (or garbage): its id is not ours to answer.
func (s *lineScan) replyID() json.RawMessage {
	if !s.sawMethod || !s.idSeen || s.capturing || s.idBad {
		return nil
	}
	id := bytes.TrimSpace(s.id)
	if len(id) == 0 || len(id) > maxEchoedID || !json.Valid(id) {
		return nil
	}
	if c := id[0]; c != '"' {
		if f, err := strconv.ParseFloat(string(id), 64); err != nil || math.IsInf(f, 0) {
			return nil // not a number a client could read back
		}
	}
	return id
}

// judge decides one scanned line: a message for the SDK, an error reply,
// or neither (a blank line).
func judge(line []byte, sc *lineScan, limit int) (jsonrpc.Message, []byte) {
	switch {
	case sc.size > limit:
		return nil, rpcError(sc.replyID(), jsonrpc.CodeInvalidRequest,
			fmt.Sprintf("Invalid Request: the message is larger than %d bytes", limit))
	case sc.tooDeep:
		return nil, rpcError(sc.replyID(), jsonrpc.CodeInvalidRequest,
			fmt.Sprintf("Invalid Request: the message nests deeper than %d levels", MaxDepth))
	}
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 {
		return nil, nil
	}
	return checkFrame(trimmed, sc.replyID())
}

// checkFrame decodes a line that passed the scan (within the size and depth
// limits) into the message the SDK will handle, or returns the error reply.
func checkFrame(line []byte, id json.RawMessage) (jsonrpc.Message, []byte) {
	if !json.Valid(line) {
		return nil, rpcError(id, jsonrpc.CodeParseError, "Parse error: the line is not valid JSON")
	}
	switch line[0] {
	case '{':
	case '[':
		// JSON-RPC batching left MCP in 2025-06-18, and the SDK ends the
		// session on a batch under a newer protocol version.
		return nil, rpcError(nil, jsonrpc.CodeInvalidRequest, "Invalid Request: batches are not supported; send one message per line")
	default:
		return nil, rpcError(nil, jsonrpc.CodeInvalidRequest, "Invalid Request: a JSON-RPC message must be an object")
	}
	msg, err := decodeMessage(line)
	if err != nil {
		return nil, rpcError(id, jsonrpc.CodeInvalidRequest, `Invalid Request: want "jsonrpc":"2.0", a string method and a string or number id`)
	}
	if resp, ok := msg.(*jsonrpc.Response); ok && resp.Result == nil && resp.Error == nil {
		return nil, rpcError(nil, jsonrpc.CodeInvalidRequest, `Invalid Request: want "jsonrpc":"2.0" and a method`)
	}
	return msg, nil
}

// decodeMessage decodes a checked line. A request is built here, its
// params a slice of the line: the SDK's decoder buffers a message several
// times over, and a request carries the large part (a tool's arguments). A
// response (to a server-initiated request; small) is left to the SDK's own
// decoder. Keys match exactly, as in the SDK.
func decodeMessage(line []byte) (jsonrpc.Message, error) {
	var top map[string]rawRef
	if err := json.Unmarshal(line, &top); err != nil {
		return nil, err
	}
	method, ok := top["method"]
	if !ok {
		return jsonrpc.DecodeMessage(line)
	}
	var version, name string
	if json.Unmarshal(top["jsonrpc"], &version) != nil || version != "2.0" {
		return nil, errors.New("not JSON-RPC 2.0")
	}
	if len(method) == 0 || method[0] != '"' || json.Unmarshal(method, &name) != nil {
		return nil, errors.New("method is not a string")
	}
	var rawID any
	if raw, ok := top["id"]; ok {
		if err := json.Unmarshal(raw, &rawID); err != nil {
			return nil, err
		}
	}
	id, err := jsonrpc.MakeID(rawID)
	if err != nil {
		return nil, err
	}
	return &jsonrpc.Request{ID: id, Method: name, Params: json.RawMessage(top["params"])}, nil
}

// rawRef is a json.RawMessage that keeps a slice of the input instead of a
// copy: the line is never reused, so params can point into it.
type rawRef []byte

// UnmarshalJSON implements json.Unmarshaler.
func (r *rawRef) UnmarshalJSON(b []byte) error {
	*r = b
	return nil
}

func rpcError(id json.RawMessage, code int, msg string) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{code, msg}})
	return append(b, '\n')
}
