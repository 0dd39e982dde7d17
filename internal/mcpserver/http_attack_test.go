package mcpserver_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/mcpserver"
)

// Attack review of the HTTP server (issue 17): each test here failed
// before its fix.

// pingSession sends a ping on a session and returns the status.
func pingSession(t *testing.T, url, token, session string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+mcpserver.PathMCP, strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"ping"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// A session holds a goroutine and its state until it ends, and the SDK
// ends none by itself: one token (even a suspended client's) that
// initializes again and again — and never sends DELETE — grew the server
// without bound (200 initializes: 200 goroutines more, for ever). A token
// keeps a bounded number of sessions: its oldest ends; other tokens'
// sessions are untouched.
func TestHTTP_OneTokenCannotHoldUnboundedSessions(t *testing.T) {
	e := newEnv(t)
	_, tok := e.register(fixtures.DemoTenantID, fixtures.CatalogerUserID)
	_, other := e.register(fixtures.DemoTenantID, fixtures.CatalogerUserID)
	srv := serveHTTP(t, e.gate, mcpserver.HTTPOptions{})
	open := func(token string) string {
		resp, body := post(t, srv.URL, map[string]string{"Authorization": "Bearer " + token})
		id := resp.Header.Get("Mcp-Session-Id")
		if resp.StatusCode != http.StatusOK || id == "" {
			t.Fatalf("initialize: %d %s", resp.StatusCode, body)
		}
		return id
	}
	victim := open(other)
	first := open(tok)
	var last string
	for range 64 { // more than any bound
		last = open(tok)
	}
	deadline := time.Now().Add(20 * time.Second) // a failsafe, not a measure
	for pingSession(t, srv.URL, tok, first) != http.StatusNotFound {
		if time.Now().After(deadline) {
			t.Fatalf("the token's first session is still open after 64 more")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := pingSession(t, srv.URL, tok, last); got != http.StatusOK {
		t.Errorf("the token's newest session: %d", got)
	}
	if got := pingSession(t, srv.URL, other, victim); got != http.StatusOK {
		t.Errorf("another token's session: %d", got)
	}
}

// A subscriptions/listen request (protocol 2026-07-28, and the old
// protocol's too: the method is served under either) parked until its
// client left: over HTTP a POST stream that the drain does not end (it
// ends GET streams and lets POSTs, calls, finish), so one such request
// from any token — a suspended client's too — made every SIGTERM wait the
// full grace and exit non-zero. The catalog never changes: nothing is
// offered to listen to and the request answers at once.
func TestHTTP_ListenDoesNotHoldAStreamOpen(t *testing.T) {
	e := newEnv(t)
	_, tok := e.register(fixtures.DemoTenantID, fixtures.CatalogerUserID)
	const newMeta = `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"p","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	for name, newProtocol := range map[string]bool{"2026-07-28": true, "old protocol": false} {
		t.Run(name, func(t *testing.T) {
			srv := serveHTTP(t, e.gate, mcpserver.HTTPOptions{Stateless: true})
			meta := ""
			if newProtocol {
				meta = newMeta
			}
			body := `{"jsonrpc":"2.0","id":7,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true,"promptsListChanged":true,"resourcesListChanged":true}` + meta + `}}`
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a failsafe, not a measure
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+mcpserver.PathMCP, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Authorization", "Bearer "+tok)
			if newProtocol {
				req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
				req.Header.Set("Mcp-Method", "subscriptions/listen")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			got, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatalf("the listen stream stayed open (status %d): %v; read so far: %s", resp.StatusCode, err, got)
			}
			if !strings.Contains(string(got), `"id":7`) {
				t.Errorf("no answer to the listen request: %d %s", resp.StatusCode, got)
			}
		})
	}
}

// A Host whose "port" is not a number passed the check as its host part
// ("localhost:evil.com" as localhost, "mcp.example.com:x" as the named
// host) and was echoed into WWW-Authenticate and the protected-resource
// metadata (http://localhost:evil.com/…): a port is digits.
func TestHTTP_HostWithAPortThatIsNoNumberIs403(t *testing.T) {
	e := newEnv(t)
	_, tok := e.register(fixtures.DemoTenantID, fixtures.CatalogerUserID)
	loop := serveHTTP(t, e.gate, mcpserver.HTTPOptions{})
	named := serveHTTP(t, e.gate, mcpserver.HTTPOptions{AllowedHosts: []string{"mcp.example.com"}})
	for _, c := range []struct{ url, host string }{
		{loop.URL, "localhost:evil.com"},
		{loop.URL, "127.0.0.1:80x"},
		{loop.URL, "[::1]:a"},
		{named.URL, "mcp.example.com:evil.example"},
	} {
		resp, body := post(t, c.url, map[string]string{"Host": c.host, "Authorization": "Bearer " + tok})
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("Host %q: %d %s (WWW-Authenticate %q)", c.host, resp.StatusCode, body, resp.Header.Get("WWW-Authenticate"))
		}
	}
	for _, c := range []struct{ url, host string }{{loop.URL, "localhost:8080"}, {loop.URL, "[::1]:8080"}, {named.URL, "mcp.example.com:443"}} {
		if resp, body := post(t, c.url, map[string]string{"Host": c.host, "Authorization": "Bearer " + tok}); resp.StatusCode != http.StatusOK {
			t.Errorf("Host %q: %d %s", c.host, resp.StatusCode, body)
		}
	}
}

// The SDK reads and decodes a request's body whole before the gate's
// argument budget sees it, at several times its size: 8 concurrent 11 MiB
// calls of one low-privilege token took the heap to 752 MiB (the server's
// soft limit is 256 MiB), and nothing bounded how many ran at once. The
// body bytes in flight are bounded: with the largest bodies arriving, the
// next large request is refused 503 (Retry-After) instead of read; small
// ones still pass.
func TestHTTP_BodyBytesInFlightAreBounded(t *testing.T) {
	e := newEnv(t)
	_, tok := e.register(fixtures.DemoTenantID, fixtures.CatalogerUserID)
	srv := serveHTTP(t, e.gate, mcpserver.HTTPOptions{})
	addr := strings.TrimPrefix(srv.URL, "http://")
	// Two of the largest bodies, announced and trickling (a slow or
	// hostile client). Each asks 100-continue: its "100 Continue" says the
	// server has begun to read it.
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nExpect: 100-continue\r\nContent-Length: %d\r\n\r\n",
			addr, tok, mcpserver.MaxFrameBytes())
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "HTTP/1.1 100 ") {
			t.Fatalf("a large body is not read: %q %v", line, err)
		}
		fmt.Fprint(c, `{"jsonrpc":"2.0",`)
	}
	large := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"` +
		strings.Repeat("p", 100<<10) + `","version":"1"}}}`
	req, _ := http.NewRequest(http.MethodPost, srv.URL+mcpserver.PathMCP, strings.NewReader(large))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("with %d body bytes arriving, another large request: %d %v %.200s", 2*mcpserver.MaxFrameBytes(), resp.StatusCode, resp.Header, body)
	}
	// The ordinary small requests are not held back by the large ones.
	if resp, body := post(t, srv.URL, map[string]string{"Authorization": "Bearer " + tok}); resp.StatusCode != http.StatusOK {
		t.Errorf("a small request while large ones arrive: %d %s", resp.StatusCode, body)
	}
}
