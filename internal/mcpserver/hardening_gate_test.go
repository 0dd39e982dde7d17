package mcpserver_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/gate"
	"github.com/triunalabs/trovesnap/internal/mcpserver"
	"github.com/triunalabs/trovesnap/store"
)

// Hardening tests of the gate (issue 13, findings 5 and 6).

// hgEnv is a server over the real store whose tools/call requests pass
// through an outer test middleware first: it reports each call that reached
// the server (and so the gate) with the server-side request context, and
// when the gate answered it.
type hgEnv struct {
	st      *store.Store
	path    string
	cs      *mcp.ClientSession
	entered chan context.Context
	done    chan struct{}
}

func newHGEnv(t *testing.T) *hgEnv {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "trovesnap.db")
	seed := fixtures.Dataset()
	clock := domain.NewFixedClock(fixtures.Epoch)
	ids := domain.NewSeqIDs()
	st, err := store.Open(ctx, path, store.Options{Mode: domain.ModeMock, Clock: clock, IDs: ids, Seed: &seed})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	g := gate.New(gate.Options{Backend: st, Mode: domain.ModeMock, Clock: clock, IDs: ids, ServerVersion: "test"})
	e := &hgEnv{st: st, path: path, entered: make(chan context.Context, 1000), done: make(chan struct{}, 1000)}
	s := mcpserver.New(mcpserver.Options{Gate: g, Transport: "inmemory"})
	// Added last, so outermost: it sees every tools/call before the gate.
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "tools/call" {
				return next(ctx, method, req)
			}
			e.entered <- ctx
			defer func() { e.done <- struct{}{} }()
			return next(ctx, method, req)
		}
	})
	sct, cct := mcp.NewInMemoryTransports()
	ss, err := s.Connect(ctx, sct, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.cs, err = mcp.NewClient(&mcp.Implementation{Name: "claude-code", Version: "2.1.0"}, nil).Connect(ctx, cct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.cs.Close(); _ = ss.Wait() })
	return e
}

// holdWriteLock takes SQLite's write lock from a second connection, as
// another server process sharing the file would; release lets go of it.
func holdWriteLock(t *testing.T, path string) (release func()) {
	t.Helper()
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			_, _ = conn.ExecContext(ctx, "ROLLBACK")
			_ = conn.Close()
			_ = db.Close()
		})
	}
	t.Cleanup(release)
	return release
}

// TestHardening_CancelledCallsRecordExactlyOneEvent fires cross-tenant
// probes, reads and candidate writes, each cancelled by its client while the
// call is in flight inside the gate (held there by another connection's
// write lock), and counts plugin_events: exactly one per call that reached
// the gate, and every candidate write either committed with its event or
// left a failure event.
func TestHardening_CancelledCallsRecordExactlyOneEvent(t *testing.T) {
	e := newHGEnv(t)
	ctx := context.Background()
	before, err := e.st.Events(ctx, store.EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	countsBefore, err := e.st.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}

	type call struct {
		name string
		args map[string]any
		meta mcp.Meta
	}
	var calls []call
	const each = 8
	for i := range each {
		calls = append(calls,
			call{"trove_list_sales", map[string]any{}, mcp.Meta{gate.MetaTenantHint: fixtures.OtherTenantID}},
			call{"trove_list_sales", map[string]any{}, nil},
			call{"trove_create_candidate", map[string]any{"sale_id": fixtures.PublishedSaleID, "title": fmt.Sprintf("Cancelled lamp %d", i),
				"idempotency_key": fmt.Sprintf("hg-cancel-%04d", i)}, nil},
		)
	}

	release := holdWriteLock(t, e.path)
	var wg sync.WaitGroup
	cancels := make([]context.CancelFunc, len(calls))
	for i, c := range calls {
		cctx, cancel := context.WithCancel(ctx)
		cancels[i] = cancel
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = e.cs.CallTool(cctx, &mcp.CallToolParams{Name: c.name, Arguments: c.args, Meta: c.meta})
		}()
	}
	// Every call is inside the server (the gate is waiting for the write
	// lock); cancel them all and wait until the server has seen each cancel.
	serverCtxs := make([]context.Context, 0, len(calls))
	for range calls {
		serverCtxs = append(serverCtxs, <-e.entered)
	}
	for _, cancel := range cancels {
		cancel()
	}
	for _, sctx := range serverCtxs {
		<-sctx.Done()
	}
	wg.Wait()
	release()
	for range calls {
		<-e.done
	}

	after, err := e.st.Events(ctx, store.EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	newEvents := after[len(before):]
	if len(after) < len(before) {
		t.Fatalf("events went from %d to %d", len(before), len(after))
	}
	perTool := map[string]int{}
	requests := map[string]bool{}
	writesCommitted := 0
	for _, ev := range newEvents {
		perTool[ev.Tool.Name]++
		requests[ev.ServerRequestID] = true
		if ev.Tool.Name == "trove_create_candidate" && ev.Outcome == domain.OutcomeSuccess {
			writesCommitted++
		}
	}
	if len(newEvents) != len(calls) || len(requests) != len(calls) {
		t.Fatalf("%d calls reached the gate and were cancelled: want exactly one plugin_event each, got %d events for %d requests (%v)",
			len(calls), len(newEvents), len(requests), perTool)
	}
	if perTool["trove_list_sales"] != 2*each || perTool["trove_create_candidate"] != each {
		t.Fatalf("events per tool: %v", perTool)
	}
	countsAfter, err := e.st.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := countsAfter["inventory_candidates"] - countsBefore["inventory_candidates"]; got != int64(writesCommitted) {
		t.Fatalf("%d candidates written but %d write events say success", got, writesCommitted)
	}
}
