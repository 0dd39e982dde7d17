package mcpserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxFrameBytes bounds one inbound JSON-RPC line on stdio.
const MaxFrameBytes = 16 << 20

// StdioTransport is the stdio transport with a guard in front of the SDK:
// the go-sdk ends the whole session on a line that is not JSON, so each
// inbound line is checked first. A malformed line is answered with a
// JSON-RPC error (-32700 parse error or -32600 invalid request) and dropped;
// the server keeps serving. Every write to out is one whole message, so the
// guard's answers never interleave with the SDK's.
func StdioTransport(in io.Reader, out io.Writer) mcp.Transport {
	w := &lockedWriter{w: out}
	pr, pw := io.Pipe()
	go guardLines(in, pw, w)
	return &mcp.IOTransport{Reader: pr, Writer: w, MaxLineLength: MaxFrameBytes + 1}
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) Close() error { return nil }

// frame is the minimal JSON-RPC shape the SDK can route.
type frame struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  *string         `json:"method"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

func guardLines(in io.Reader, pw *io.PipeWriter, w *lockedWriter) {
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		line, err := readLine(r)
		if len(bytes.TrimSpace(line)) > 0 {
			if ok, reply := checkFrame(line); ok {
				if _, werr := pw.Write(append(line, '\n')); werr != nil {
					return
				}
			} else {
				_, _ = w.Write(reply)
			}
		}
		if err != nil {
			if errors.Is(err, errLineTooLong) {
				_, _ = w.Write(rpcError(nil, -32600, "Invalid Request: message larger than 16 MiB"))
				continue
			}
			_ = pw.Close() // EOF (or a read error) ends the session
			return
		}
	}
}

var errLineTooLong = errors.New("line too long")

// readLine reads one newline-terminated line; an oversize line is consumed
// whole and reported as errLineTooLong.
func readLine(r *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(buf)+len(chunk) > MaxFrameBytes {
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = r.ReadSlice('\n')
			}
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, err
			}
			return nil, errLineTooLong
		}
		buf = append(buf, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimRight(buf, "\r\n"), err
	}
}

// checkFrame accepts a JSON object (or a batch array) that looks like
// JSON-RPC 2.0, else returns the error reply to send.
func checkFrame(line []byte) (bool, []byte) {
	trimmed := bytes.TrimSpace(line)
	if !json.Valid(trimmed) {
		return false, rpcError(nil, -32700, "Parse error: the line is not valid JSON")
	}
	if trimmed[0] == '[' {
		var batch []json.RawMessage
		if json.Unmarshal(trimmed, &batch) != nil || len(batch) == 0 {
			return false, rpcError(nil, -32600, "Invalid Request: empty or malformed batch")
		}
		for _, m := range batch {
			if ok, reply := checkFrame(m); !ok {
				return false, reply
			}
		}
		return true, nil
	}
	var f frame
	if trimmed[0] != '{' || json.Unmarshal(trimmed, &f) != nil {
		return false, rpcError(nil, -32600, "Invalid Request: a JSON-RPC message must be an object")
	}
	if f.JSONRPC != "2.0" || (f.Method == nil && f.Result == nil && f.Error == nil) {
		return false, rpcError(f.ID, -32600, `Invalid Request: want "jsonrpc":"2.0" and a method`)
	}
	if len(f.ID) > 0 && f.ID[0] != '"' && (f.ID[0] < '0' || f.ID[0] > '9') && f.ID[0] != '-' && string(f.ID) != "null" {
		return false, rpcError(nil, -32600, "Invalid Request: id must be a string or a number")
	}
	return true, nil
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
