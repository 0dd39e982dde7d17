package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/triunalabs/trovesnap/internal/mcpserver"
)

// stdioServer is a real server (gate over the temp-dir store) behind
// StdioTransport on io.Pipes: what `mcp serve` runs, in process.
type stdioServer struct {
	in    chan string // one writer goroutine keeps the lines in order
	lines chan string
	ended chan error
	mu    sync.Mutex
	bad   string // the first stdout line that was not one JSON-RPC object
	seq   int
	// early holds the answers read while awaiting another id: the server
	// answers concurrent requests in any order (a tools/list may be
	// answered before the ping sent ahead of it).
	early map[string]map[string]json.RawMessage
}

func startStdio(tb testing.TB) *stdioServer {
	tb.Helper()
	return startStdioOn(tb, newEnv(tb), false)
}

// startStdioOn serves e's gate over stdio pipes; with admit, as `mcp serve`
// does: the guard admits every tools/call (mcpserver.Admitter).
func startStdioOn(tb testing.TB, e *env, admit bool) *stdioServer {
	tb.Helper()
	var adm *mcpserver.Admitter
	if admit {
		adm = mcpserver.NewAdmitter(e.gate)
	}
	s := mcpserver.New(mcpserver.Options{Gate: e.gate, Transport: "stdio", Admitter: adm})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	srv := &stdioServer{in: make(chan string, 1<<12), lines: make(chan string, 1<<14), ended: make(chan error, 1)}
	go func() {
		for l := range srv.in {
			if _, err := io.WriteString(inW, l+"\n"); err != nil {
				return
			}
		}
		_ = inW.Close()
	}()
	go func() {
		var tr mcp.Transport = mcpserver.StdioTransport(inR, outW)
		if adm != nil {
			tr = adm.StdioTransport(inR, outW)
		}
		srv.ended <- s.Run(context.Background(), tr)
		_ = outW.Close()
	}()
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 64<<10), 64<<20)
		for sc.Scan() {
			line := sc.Text()
			var m map[string]json.RawMessage
			if err := json.Unmarshal([]byte(line), &m); err != nil || string(m["jsonrpc"]) != `"2.0"` {
				srv.mu.Lock()
				if srv.bad == "" {
					srv.bad = line
				}
				srv.mu.Unlock()
			}
			srv.lines <- line
		}
		close(srv.lines)
	}()
	tb.Cleanup(func() { close(srv.in) })
	srv.send(tb, `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"stream","version":"1"}}}`)
	srv.await(tb, `"init"`)
	srv.send(tb, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return srv
}

// send writes lines without waiting on the server to read them: a server
// that stopped reading shows up as a missing answer in await.
func (s *stdioServer) send(tb testing.TB, lines ...string) {
	tb.Helper()
	for _, l := range lines {
		s.in <- l
	}
}

// await returns the message answering id (raw JSON), keeping the answers
// to other ids for their own await and skipping notifications. The
// deadline is a hang guard, not a timing check.
func (s *stdioServer) await(tb testing.TB, id string) map[string]json.RawMessage {
	tb.Helper()
	if m, ok := s.early[id]; ok {
		delete(s.early, id)
		return m
	}
	deadline := time.After(2 * time.Minute)
	for {
		select {
		case line, ok := <-s.lines:
			if !ok {
				tb.Fatalf("stdout closed: the session ended (%v) before answering %s", <-s.ended, id)
			}
			s.mu.Lock()
			bad := s.bad
			s.mu.Unlock()
			if bad != "" {
				tb.Fatalf("stdout carried a line that is not a JSON-RPC object: %.300q", bad)
			}
			var m map[string]json.RawMessage
			_ = json.Unmarshal([]byte(line), &m)
			if _, isReq := m["method"]; isReq || m["id"] == nil {
				continue
			}
			if string(m["id"]) == id {
				return m
			}
			if s.early == nil {
				s.early = map[string]map[string]json.RawMessage{}
			}
			s.early[string(m["id"])] = m
		case <-deadline:
			tb.Fatalf("no answer to %s", id)
		}
	}
}

// alive sends a ping and tools/list and wants both answered.
func (s *stdioServer) alive(tb testing.TB) {
	tb.Helper()
	s.seq++
	ping, list := fmt.Sprintf(`"stream-ping-%d"`, s.seq), fmt.Sprintf(`"stream-list-%d"`, s.seq)
	s.send(tb, `{"jsonrpc":"2.0","id":`+ping+`,"method":"ping"}`, `{"jsonrpc":"2.0","id":`+list+`,"method":"tools/list"}`)
	if m := s.await(tb, ping); m["result"] == nil && m["error"] == nil {
		tb.Fatalf("ping: %v", m)
	}
	if m := s.await(tb, list); m["result"] == nil && m["error"] == nil {
		tb.Fatalf("tools/list: %v", m)
	}
	// Answers kept for other ids are dropped once the session is known to
	// be alive: an input may send ids like a later alive's, and a stale
	// answer must not stand in for that alive's own.
	s.early = nil
}

// Lines that ended the session on main because the go-sdk could not decode
// them after the old guard let them through (case-mismatched keys, a
// response without an id, an error that is not an object, a batch under
// 2025-11-25, trailing blanks, an id the decoder overflows) are answered by
// the guard, or handled, and the session goes on.
func TestHardening_StdioLinesTheSDKCouldNotDecodeLeaveTheSessionUp(t *testing.T) {
	for _, c := range []struct{ name, line, answer string }{
		{"keys in upper case", `{"JSONRPC":"2.0","id":101,"method":"ping"}`, `101`},
		{"trailing blanks", `{"jsonrpc":"2.0","id":102,"method":"ping"}  ` + "\t", `102`},
		{"a batch", `[{"jsonrpc":"2.0","id":103,"method":"ping"}]`, `null`},
		{"a response without id", `{"jsonrpc":"2.0","result":{}}`, `null`},
		{"an error that is a string", `{"jsonrpc":"2.0","id":1,"error":"boom"}`, `null`},
		{"an id out of range", `{"jsonrpc":"2.0","id":1e400,"method":"ping"}`, `null`},
		{"_meta 2000 deep", `{"jsonrpc":"2.0","id":104,"method":"tools/call","params":{"name":"trove_list_sales","arguments":{},"_meta":` + strings.Repeat("[", 2000) + strings.Repeat("]", 2000) + `}}`, `104`},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := startStdio(t)
			s.send(t, c.line)
			if m := s.await(t, c.answer); m["result"] == nil && m["error"] == nil {
				t.Fatalf("no result or error: %v", m)
			}
			s.alive(t)
		})
	}
}

// FuzzServerStream feeds mutated lines to a running server and, after each
// input, wants a ping and tools/list answered on the same session, and only
// JSON-RPC objects on its stdout.
func FuzzServerStream(f *testing.F) {
	s := startStdio(f)
	f.Fuzz(func(t *testing.T, input string) {
		s.send(t, strings.Split(input, "\n")...)
		s.alive(t)
	})
}
