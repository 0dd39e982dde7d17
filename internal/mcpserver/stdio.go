package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/triunalabs/trovesnap/internal/catalog"
	"github.com/triunalabs/trovesnap/internal/gate"
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

var maxFrameBytes = sync.OnceValue(func() int { return catalog.MaxToolArgumentBytes() + frameEnvelopeBytes })

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
//
// This transport does not admit calls (see Admitter.StdioTransport).
func StdioTransport(in io.Reader, out io.Writer) mcp.Transport {
	return &stdioTransport{in: in, out: out}
}

type stdioTransport struct {
	in  io.Reader
	out io.Writer
	adm *Admitter
}

// Connect implements mcp.Transport.
func (t *stdioTransport) Connect(context.Context) (mcp.Connection, error) {
	ctx, cancel := context.WithCancel(context.Background())
	c := &guardConn{
		out:      &lockedWriter{w: t.out},
		incoming: make(chan jsonrpc.Message),
		done:     make(chan struct{}),
		closed:   make(chan struct{}),
		adm:      t.adm,
		ctx:      ctx,
		cancel:   cancel,
		inflight: map[jsonrpc.ID]inflightCall{},
	}
	go c.readLoop(t.in)
	return c, nil
}

// Admitter applies the gate's admission rule (gate.Gate.Admit: the tool's
// argument size limit, then the gate-wide budget of argument bytes in
// flight) at the stdio guard, on the raw line, before the SDK decodes
// anything: an oversize call is never decoded, and big calls queue at the
// guard (which stops reading stdin) instead of piling up in memory. An
// admitted call holds its bytes until its response is written.
//
// The SDK never sees a call's arguments either: the guard hands it the line
// with the arguments replaced by a marker (a random nonce known only to the
// guard) and keeps the arguments, a slice of the line, here; the server's
// middleware swaps them back before the gate runs. The SDK decodes a
// message's params twice, through buffering decoders, which cost several
// times a big photo call. A refused call is handed over the same way,
// without arguments, so the gate still writes its one plugin_event and
// answers its §23 envelope.
//
// Build the server with Options.Admitter set to the same Admitter, and serve
// it on a.StdioTransport only: the gate then trusts that every call was
// admitted.
type Admitter struct {
	gate    *gate.Gate
	mu      sync.Mutex
	pending map[string]pendingCall // by nonce
}

type pendingCall struct {
	args json.RawMessage
	v    *gate.Admission
}

// NewAdmitter returns an Admitter over g.
func NewAdmitter(g *gate.Gate) *Admitter {
	return &Admitter{gate: g, pending: map[string]pendingCall{}}
}

// StdioTransport is the guarded stdio transport (see the package function)
// that also admits every tools/call.
func (a *Admitter) StdioTransport(in io.Reader, out io.Writer) mcp.Transport {
	return &stdioTransport{in: in, out: out, adm: a}
}

// markerKey is the one key of the arguments marker.
const markerKey = "trovesnap/admission"

// hold keeps a call's arguments (nil for a refusal) and verdict, and returns
// the nonce and the marker that stands for them on the wire to the SDK.
func (a *Admitter) hold(args json.RawMessage, v *gate.Admission) (string, []byte) {
	var nb [16]byte
	_, _ = rand.Read(nb[:])
	nonce := hex.EncodeToString(nb[:])
	a.mu.Lock()
	a.pending[nonce] = pendingCall{args: args, v: v}
	a.mu.Unlock()
	return nonce, fmt.Appendf(nil, `{%q:%q}`, markerKey, nonce)
}

// drop forgets a held call the SDK answered without running it.
func (a *Admitter) drop(nonce string) {
	a.mu.Lock()
	delete(a.pending, nonce)
	a.mu.Unlock()
}

// take swaps a marker the server received back into the call's arguments
// and verdict. Arguments that are not a held marker (a small line the guard
// passed whole, a client's own look-alike) are the call's own, with no
// verdict: the gate admits them itself.
func (a *Admitter) take(args json.RawMessage) (json.RawMessage, *gate.Admission) {
	if len(args) < 128 {
		var m map[string]string
		if json.Unmarshal(args, &m) == nil && len(m) == 1 {
			if nonce, ok := m[markerKey]; ok {
				a.mu.Lock()
				p, held := a.pending[nonce]
				delete(a.pending, nonce)
				a.mu.Unlock()
				if held {
					return p.args, p.v
				}
			}
		}
	}
	return args, nil
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

	// Admission (nil adm: none). Admitted calls by id, released when their
	// response is written or the connection closes.
	adm      *Admitter
	ctx      context.Context // ends on Close: stops a wait for budget
	cancel   context.CancelFunc
	mu       sync.Mutex
	inflight map[jsonrpc.ID]inflightCall
	waitFor  <-chan struct{} // the answer of a big call just handed over (read loop only)
}

type inflightCall struct {
	v        *gate.Admission
	nonce    string        // of its held arguments, "" if none
	answered chan struct{} // closed when its response is written
}

func (c *guardConn) readLoop(in io.Reader) {
	defer func() {
		if c.readErr == nil {
			c.readErr = io.EOF
		}
		close(c.done)
	}()
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		line, sc, err := readLine(r, c.frameLimit)
		if msg, reply := c.judge(line, sc); msg != nil {
			select {
			case c.incoming <- msg:
			case <-c.closed:
				return
			}
			c.awaitBigCall()
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

// frameLimit is the largest line kept whole. With admission, once the scan
// has read the method: for a tools/call whose tool name it has read, that
// tool's argument limit plus the envelope; for any other method, the
// default argument limit plus the envelope (only tool calls carry big
// bodies, and the SDK decodes other params itself, at several times their
// size). Until then, and for responses, the largest frame.
func (c *guardConn) frameLimit(sc *lineScan) int {
	if c.adm == nil {
		return MaxFrameBytes()
	}
	switch {
	case sc.methodOK && string(sc.method) != "tools/call":
		return catalog.MaxArgumentBytes + frameEnvelopeBytes
	case sc.nameOK:
		return catalog.ArgumentLimit(sc.name) + frameEnvelopeBytes
	}
	return MaxFrameBytes()
}

// judge decides one scanned line. With admission, every tools/call whose id
// and tool name the scan read is decided on its raw bytes first: arguments
// over the tool's limit, a call nested too deep, or more than the envelope
// allowance besides the arguments (a huge _meta) is refused without being
// decoded — and still reaches the gate, as a small stand-in carrying the
// refusal, so that it gets its §23 envelope and its one plugin_event like
// any other refused call. Any other tools/call takes its bytes from the
// gate's budget first (waiting, with stdin unread, for calls in flight to
// answer) or is refused as busy. Either way the SDK gets the call with its
// arguments held aside (see Admitter). A JSON-RPC error answers a line
// that is not an identifiable tools/call, and — before the gate, so with no
// event — a tools/call whose id is already in flight (answered with a null
// id, so the first call keeps its own) or that would exceed the requests in
// flight: these are refusals of the session's framing, not of a call the
// gate could attribute, and the client's rejected budget is not charged.
func (c *guardConn) judge(line []byte, sc *lineScan) (jsonrpc.Message, []byte) {
	if c.adm != nil && sc.toolCall() {
		if id, ok := sc.jsonrpcID(); ok {
			var refusal *gate.Admission
			switch {
			case sc.argsLen > catalog.ArgumentLimit(sc.name):
				refusal = c.adm.gate.Admit(c.ctx, sc.name, sc.argsLen, sc.argsHash()) // the size refusal
			case sc.tooDeep:
				refusal = gate.RefuseArguments("arguments", fmt.Sprintf("the call (its arguments or _meta) nests deeper than %d levels", MaxDepth), sc.argsHash())
			case sc.size-sc.argsLen > frameEnvelopeBytes:
				// Only the arguments may be big: the SDK decodes everything
				// around them (_meta above all) into generic values at many
				// times their size (found by the attack review).
				refusal = gate.RefuseArguments("_meta", fmt.Sprintf("a tools/call may carry at most %d bytes besides its arguments", frameEnvelopeBytes), sc.argsHash())
			}
			if refusal != nil {
				return c.standIn(id, sc.name, refusal, sc)
			}
		}
	}
	msg, reply := judge(line, sc, c.frameLimit(sc))
	if msg == nil {
		return nil, reply
	}
	req, isReq := msg.(*jsonrpc.Request)
	if !isReq || req.Method != "tools/call" {
		// Only a tools/call may be big. A line whose method the scan could
		// not read (an escaped key or value) was kept under the largest
		// frame; decoded, anything else must fit the small one — the SDK
		// decodes its params generically, at many times their size.
		if small := catalog.MaxArgumentBytes + frameEnvelopeBytes; c.adm != nil && sc.size > small {
			return nil, rpcError(sc.replyID(), jsonrpc.CodeInvalidRequest,
				fmt.Sprintf("Invalid Request: the message is larger than %d bytes", small))
		}
		if !isReq || !req.ID.IsValid() {
			return msg, nil // a response, or a notification
		}
		if refusal := c.admitID(req.ID); refusal != nil {
			return nil, refusal
		}
		c.track(req.ID, nil, "", 0)
		return req, nil
	}
	if c.adm == nil {
		return msg, reply
	}
	if !req.ID.IsValid() {
		return nil, rpcError(nil, jsonrpc.CodeInvalidRequest, "Invalid Request: a tools/call needs an id")
	}
	if refusal := c.admitID(req.ID); refusal != nil {
		return nil, refusal
	}
	if !sc.toolCall() {
		// A line the scan could not follow (an escaped key or tool name):
		// its whole params must fit the default limit; within it the call
		// passes as it is and the gate admits it itself (budget included).
		if len(req.Params) > catalog.MaxArgumentBytes {
			return c.standIn(req.ID, "", gate.RefuseArguments("arguments",
				fmt.Sprintf("larger than %d bytes", catalog.MaxArgumentBytes), rawSHA256(req.Params)), sc)
		}
		c.track(req.ID, nil, "", 0)
		return req, nil
	}
	v := c.adm.gate.Admit(c.ctx, sc.name, sc.argsLen, sc.argsHash())
	start, end := sc.argsStart, sc.argsStart+sc.argsLen
	var args json.RawMessage
	if !v.Refused() {
		args = bytes.TrimSpace(line[start:end])
	}
	nonce, marker := c.adm.hold(args, v)
	small := make([]byte, 0, start+len(marker)+len(line)-end)
	small = append(append(append(small, line[:start]...), marker...), line[end:]...)
	m, err := decodeMessage(bytes.TrimSpace(small))
	if err != nil { // cannot happen: the line decoded with its arguments
		c.adm.drop(nonce)
		v.Release()
		return nil, rpcError(sc.replyID(), jsonrpc.CodeInvalidRequest, "Invalid Request: the message could not be read")
	}
	c.track(req.ID, v, nonce, sc.argsLen)
	return m, nil
}

func rawSHA256(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// maxRequestsInFlight bounds the requests a client may have open at once
// (each holds a goroutine and its state in the SDK until answered; some,
// such as subscriptions/listen, stay open). An honest host has a few.
const maxRequestsInFlight = 64

// admitID refuses a request whose id is already in flight — with a null
// id, because an answer carrying the client's own id would end its first,
// running request on the client side (and the SDK, which refuses it too,
// answers with a null id, so its budget would never come back) — or one
// past maxRequestsInFlight. Every request id is tracked until answered.
func (c *guardConn) admitID(id jsonrpc.ID) []byte {
	c.mu.Lock()
	_, busy := c.inflight[id]
	n := len(c.inflight)
	c.mu.Unlock()
	switch {
	case busy:
		return rpcError(nil, jsonrpc.CodeInvalidRequest, msgIDInUse)
	case n >= maxRequestsInFlight:
		return rpcError(idJSON(id), jsonrpc.CodeInvalidRequest,
			fmt.Sprintf("Invalid Request: more than %d requests in flight; wait for answers", maxRequestsInFlight))
	}
	return nil
}

// idJSON is id as JSON, for an error reply.
func idJSON(id jsonrpc.ID) json.RawMessage {
	b, err := json.Marshal(id.Raw())
	if err != nil {
		return nil
	}
	return b
}

// standIn hands the gate a refused tools/call as a small request: the same
// id and tool name, the arguments replaced by a marker that carries the
// refusal. An id already in flight is refused on the wire instead.
func (c *guardConn) standIn(id jsonrpc.ID, name string, refusal *gate.Admission, sc *lineScan) (jsonrpc.Message, []byte) {
	if r := c.admitID(id); r != nil {
		return nil, r
	}
	nonce, marker := c.adm.hold(nil, refusal)
	n, _ := json.Marshal(name)
	c.track(id, refusal, nonce, 0)
	return &jsonrpc.Request{ID: id, Method: "tools/call", Params: fmt.Appendf(nil, `{"name":%s,"arguments":%s}`, n, marker)}, nil
}

const msgIDInUse = "Invalid Request: this id is already in use by a call in progress"

// track records a call in flight until its response is written. A call
// holding more than half the budget leaves no room for another big line:
// the guard reads no further until it is answered (or argumentWait passes),
// so the next big line does not wait in memory behind it.
func (c *guardConn) track(id jsonrpc.ID, v *gate.Admission, nonce string, size int) {
	call := inflightCall{v: v, nonce: nonce, answered: make(chan struct{})}
	c.mu.Lock()
	c.inflight[id] = call
	c.mu.Unlock()
	if c.adm != nil && !v.Refused() && size > c.adm.gate.ArgumentBudget()/2 {
		c.waitFor = call.answered
	}
}

// argumentWait is how long the guard waits, unread, for a big call's answer
// before it reads on (the gate's own wait for budget is as long).
const argumentWait = 5 * time.Second

// awaitBigCall holds the reading while the big call just handed over runs.
func (c *guardConn) awaitBigCall() {
	if c.waitFor == nil {
		return
	}
	t := time.NewTimer(argumentWait)
	defer t.Stop()
	select {
	case <-c.waitFor:
	case <-t.C:
	case <-c.closed:
	}
	c.waitFor = nil
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
	b, err := encodeMessage(msg)
	if err != nil {
		return err
	}
	_, err = c.out.Write(append(b, '\n'))
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.release(resp.ID)
	}
	return err
}

// encodeMessage is jsonrpc.EncodeMessage, byte for byte, without its
// second pass over a result. The SDK hands a response's result over already
// encoded (by encoding/json, compact, HTML left unescaped), and
// EncodeMessage, marshalling it as a json.RawMessage, scanned and copied it
// again: on a 50-item list that scan was ~7 % of the server's CPU (issue
// 18). A response with an error, and every other message, goes through
// EncodeMessage.
func encodeMessage(msg jsonrpc.Message) ([]byte, error) {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok || resp.Error != nil || !compactObject(resp.Result) || !resp.ID.IsValid() {
		return jsonrpc.EncodeMessage(msg)
	}
	var id []byte
	switch v := resp.ID.Raw().(type) {
	case int64:
		id = strconv.AppendInt(nil, v, 10)
	case string:
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			return nil, err
		}
		id = bytes.TrimRight(buf.Bytes(), "\n")
	default:
		return jsonrpc.EncodeMessage(msg)
	}
	b := make([]byte, 0, len(`{"jsonrpc":"2.0","id":,"result":}`)+len(id)+len(resp.Result))
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"result":`...)
	b = append(b, resp.Result...)
	return append(b, '}'), nil
}

// compactObject is a cheap check that a result is what the SDK hands over —
// one compact JSON object — before it is written as is: a result that is
// not (a raw newline would break stdout's framing; found by the attack
// review) goes through EncodeMessage, which compacts and validates it. A
// full validation would be the scan the fast path saves; the SDK's results
// are encoding/json's output.
func compactObject(b []byte) bool {
	return len(b) >= 2 && b[0] == '{' && b[len(b)-1] == '}' && bytes.IndexByte(b, '\n') < 0 && bytes.IndexByte(b, '\r') < 0
}

// release gives back the budget of the call answered with id.
func (c *guardConn) release(id jsonrpc.ID) {
	c.mu.Lock()
	call, ok := c.inflight[id]
	delete(c.inflight, id)
	c.mu.Unlock()
	if ok {
		c.forget(call)
	}
}

// forget ends a call in flight: its bytes back to the budget, its held
// arguments dropped if the SDK answered without running it.
func (c *guardConn) forget(call inflightCall) {
	call.v.Release()
	close(call.answered)
	if call.nonce != "" {
		c.adm.drop(call.nonce)
	}
}

// Close implements mcp.Connection.
func (c *guardConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		if c.cancel != nil {
			c.cancel()
		}
		c.mu.Lock()
		for id, call := range c.inflight {
			delete(c.inflight, id)
			c.forget(call)
		}
		c.mu.Unlock()
	})
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
func readLine(r *bufio.Reader, limit func(*lineScan) int) ([]byte, *lineScan, error) {
	// A long line arrives in bufio-sized chunks; they are copied once more
	// into one slice of the exact size at the end (2L at the peak, L after).
	var chunks [][]byte
	sc := &lineScan{}
	dropped := false
	for {
		chunk, err := r.ReadSlice('\n')
		body := bytes.TrimSuffix(chunk, []byte("\n"))
		sc.feed(body)
		if dropped || sc.size > limit(sc) || sc.tooDeep {
			chunks, dropped = nil, true
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
// request so that a refusal can answer it, its "method", and in its
// "params" the tool "name" and the extent (and sha256) of "arguments", so
// that a tools/call can be admitted before anything decodes it.
type lineScan struct {
	size     int
	depth    int
	tooDeep  bool
	inString bool
	escaped  bool

	// keys of the top level (depth 1) and of the params object (depth 2)
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

	inParams   bool
	expectKey2 bool
	lastKey2   string

	// a short string value being captured: the method or the tool name
	capWant  *[]byte
	capOK    *bool
	capIn    bool
	method   []byte
	methodOK bool
	name     string
	nameBuf  []byte
	nameOK   bool

	// the arguments value: where it starts, its length once it ends
	argsPending bool
	argsIn      bool
	argsScalar  bool
	argsStart   int
	argsLen     int
	argsDone    bool
	argsSum     hashWriter
}

// hashWriter is the running sha256 of the arguments bytes.
type hashWriter struct{ h hash.Hash }

func (w *hashWriter) write(p []byte) {
	if w.h == nil {
		w.h = sha256.New()
	}
	_, _ = w.h.Write(p)
}

// maxCapture bounds a captured method or tool name.
const maxCapture = 64

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\r' || b == '\n' }

func (s *lineScan) feed(p []byte) {
	base := s.size
	s.size += len(p)
	seg := 0 // start in p of the arguments bytes not yet hashed
	for i, b := range p {
		if s.capturing {
			if len(s.id) < maxEchoedID+1 {
				s.id = append(s.id, b)
			} else {
				s.idBad = true
			}
		}
		if !s.inString && !isSpace(b) {
			if s.argsPending {
				s.argsPending, s.argsIn, s.argsDone = false, true, false
				s.argsScalar = b != '{' && b != '[' && b != '"'
				s.argsStart, seg = base+i, i
				s.argsSum = hashWriter{}
			}
			if s.capWant != nil && !s.capIn {
				if b == '"' {
					s.capIn, *s.capWant = true, (*s.capWant)[:0]
				} else {
					*s.capOK, s.capWant = false, nil
				}
			}
		}
		if s.inString {
			switch {
			case s.escaped:
				s.escaped = false
			case b == '\\':
				s.escaped = true
				if s.capIn {
					*s.capOK, s.capWant, s.capIn = false, nil, false // names are plain
				}
			case b == '"':
				s.inString = false
				if s.inKey {
					s.inKey = false
					k := ""
					if !s.keyLong {
						k = string(s.key)
					}
					if s.depth == 1 {
						s.lastKey = k
					} else {
						s.lastKey2 = k
					}
				}
				if s.capIn {
					if s.capWant == &s.nameBuf {
						s.name = string(s.nameBuf)
					}
					*s.capOK, s.capWant, s.capIn = true, nil, false
				}
				if s.argsIn && !s.argsScalar && s.depth == 2 {
					s.endArgs(base+i+1, p[seg:i+1])
				}
				continue
			}
			if s.inKey {
				if len(s.key) < 16 {
					s.key = append(s.key, b)
				} else {
					s.keyLong = true
				}
			}
			if s.capIn {
				if len(*s.capWant) < maxCapture {
					*s.capWant = append(*s.capWant, b)
				} else {
					*s.capOK, s.capWant, s.capIn = false, nil, false
				}
			}
			continue
		}
		switch b {
		case '"':
			s.inString = true
			if (s.depth == 1 && s.expectKey) || (s.depth == 2 && s.inParams && s.expectKey2) {
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
			if s.depth == 2 && b == '{' && !s.expectKey && s.lastKey == "params" {
				s.inParams, s.expectKey2 = true, true
			}
			if s.capturing {
				s.idBad = true // an id is a string or a number
			}
		case '}', ']':
			if s.depth == 1 {
				s.endID()
			}
			if s.depth == 2 && s.argsIn && s.argsScalar {
				s.endArgs(base+i, p[seg:i])
			}
			if s.depth > 0 {
				s.depth--
			}
			if s.depth == 2 && s.argsIn && !s.argsScalar {
				s.endArgs(base+i+1, p[seg:i+1])
			}
			if s.depth == 1 {
				s.inParams = false
			}
		case ':':
			switch {
			case s.depth == 1 && s.expectKey:
				s.expectKey = false
				switch s.lastKey {
				case "method":
					s.sawMethod = true
					s.capWant, s.capOK, s.capIn = &s.method, &s.methodOK, false
				case "id":
					if !s.idSeen {
						s.idSeen, s.capturing, s.id = true, true, s.id[:0]
					}
				}
			case s.depth == 2 && s.inParams && s.expectKey2:
				s.expectKey2 = false
				switch s.lastKey2 {
				case "name":
					s.name = ""
					s.capWant, s.capOK, s.capIn = &s.nameBuf, &s.nameOK, false
				case "arguments":
					s.argsPending = true
				}
			}
		case ',':
			if s.depth == 1 {
				s.endID()
				s.expectKey = true
			}
			if s.depth == 2 && s.inParams {
				if s.argsIn && s.argsScalar {
					s.endArgs(base+i, p[seg:i])
				}
				s.expectKey2 = true
			}
		}
	}
	if s.argsIn {
		s.argsSum.write(p[seg:])
	}
}

// endArgs ends the arguments value at offset end, hashing its last bytes.
func (s *lineScan) endArgs(end int, last []byte) {
	s.argsSum.write(last)
	s.argsIn, s.argsDone = false, true
	s.argsLen = end - s.argsStart
}

// toolCall reports whether the scan read a whole tools/call: its method, its
// plain tool name and the extent of its arguments.
func (s *lineScan) toolCall() bool {
	return s.methodOK && string(s.method) == "tools/call" && s.nameOK && s.name != "" && s.argsDone && !s.argsIn
}

// argsHash is the audit hash of the arguments bytes as received.
func (s *lineScan) argsHash() string {
	if s.argsSum.h == nil {
		s.argsSum.write(nil)
	}
	return "sha256:" + hex.EncodeToString(s.argsSum.h.Sum(nil))
}

// jsonrpcID is the request id the scan read, as the SDK would decode it.
func (s *lineScan) jsonrpcID() (jsonrpc.ID, bool) {
	raw := s.replyID()
	if raw == nil {
		return jsonrpc.ID{}, false
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return jsonrpc.ID{}, false
	}
	id, err := jsonrpc.MakeID(v)
	return id, err == nil && id.IsValid()
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
