package cli

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/gate"
	"github.com/triunalabs/trovesnap/store"
)

// syncBuffer is a log sink read while the server writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A drain whose grace ends with a request still in its handler cuts its
// connection and returns only once that handler has returned (the caller
// then closes the store: no call's bookkeeping meets a closed store), with
// an error (the process exits non-zero). Past --max-connections, a new
// connection waits until one closes.
func TestServeHTTP_DrainPastTheGraceWaitsForHandlers(t *testing.T) {
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "t.db"), store.Options{Mode: domain.ModeMock})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	g := gate.New(gate.Options{Backend: st, Mode: domain.ModeMock})
	logs := &syncBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	ctx, stop := context.WithCancel(context.Background())
	o := &HTTPServeOptions{Addr: "127.0.0.1:0", grace: 200 * time.Millisecond, MaxConnections: 1}
	result := make(chan error, 1)
	go func() { result <- serveHTTP(ctx, o, g, nil, false, "", logger) }()
	var addr string
	for deadline := time.Now().Add(10 * time.Second); addr == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if m := regexp.MustCompile(`url=http://(127\.0\.0\.1:\d+)/mcp`).FindStringSubmatch(logs.String()); m != nil {
			addr = m[1]
		}
	}
	if addr == "" {
		t.Fatalf("not listening: %s", logs.String())
	}
	// A public call whose body never finishes: its handler stays in the read.
	slow, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	fmt.Fprintf(slow, "POST /public/mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\":", addr)
	time.Sleep(200 * time.Millisecond)
	// The one connection allowed is taken: a second is accepted by the
	// kernel but not served.
	second, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	fmt.Fprintf(second, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
	_ = second.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if n, _ := second.Read(make([]byte, 64)); n != 0 {
		t.Fatalf("a connection past --max-connections was served")
	}
	stop()
	select {
	case err := <-result:
		if err == nil || !strings.Contains(err.Error(), "draining") {
			t.Fatalf("a drain that cut a request returned %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the drain did not end")
	}
	if !strings.Contains(logs.String(), "cut") || strings.Contains(logs.String(), "after they were cut") {
		t.Fatalf("log: %s", logs.String())
	}
}
