package mcpserver_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
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
	digestBefore, err := e.st.Digest(ctx)
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
	writesCommitted, crossTenantBlocked := 0, 0
	for _, ev := range newEvents {
		perTool[ev.Tool.Name]++
		requests[ev.ServerRequestID] = true
		if ev.Tool.Name == "trove_create_candidate" && ev.Outcome == domain.OutcomeSuccess {
			writesCommitted++
		}
		if ev.ErrorCode == "cross_tenant_reference" && ev.Outcome == domain.OutcomeBlocked {
			crossTenantBlocked++
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
	// The client's cancel must not stop the gate: every write it accepted
	// commits, every cross-tenant probe is recorded as such, and every call
	// was counted against the rate limits.
	if writesCommitted != each {
		t.Errorf("%d of %d cancelled candidate writes committed: the gate stopped on the client's cancel", writesCommitted, each)
	}
	if got := countsAfter["inventory_candidates"] - countsBefore["inventory_candidates"]; got != each {
		t.Errorf("inventory_candidates grew by %d, want %d", got, each)
	}
	if crossTenantBlocked != each {
		t.Errorf("%d blocked cross_tenant_reference events, want %d (one per probe)", crossTenantBlocked, each)
	}
	digestAfter, err := e.st.Digest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if digestAfter["rate_counters"] == digestBefore["rate_counters"] {
		t.Error("rate_counters unchanged: the cancelled calls were not counted")
	}
}

// hgHugeKeys is an arguments object of about size bytes with hundreds of
// thousands of keys.
func hgHugeKeys(size int) []byte {
	var b bytes.Buffer
	b.Grow(size + 16)
	b.WriteByte('{')
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%07d":%d`, i, i%10)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// BenchmarkHardening_OversizeArgumentsRefused measures a 10 MB, ~650k-key
// arguments object sent to a 256 KiB tool: refused on its raw size.
func BenchmarkHardening_OversizeArgumentsRefused(b *testing.B) {
	e := newEnv(b)
	raw := hgHugeKeys(10_000_000)
	if err := e.st.SetLimits(context.Background(), fixtures.DemoTenantID, "", domain.Limits{ReadsPerMinute: 1 << 30, CandidateWritesPerMinute: 1 << 30,
		ProposalsPerMinute: 1 << 30, ControlledActionsPerMinute: 1 << 30, MaxBulkTargets: 50}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		env := e.gate.Invoke(context.Background(), gate.Call{Tool: "trove_list_sales", Arguments: raw, Transport: "bench"})
		if len(env.Errors) != 1 || env.Errors[0].Code != gate.CodeInvalidInput {
			b.Fatalf("%+v", env.Errors)
		}
	}
}

// BenchmarkHardening_PhotoSizeArguments measures an ~11 MB image_base64
// call (within the photo tool's limit, so parsed; random bytes, refused as
// no image).
func BenchmarkHardening_PhotoSizeArguments(b *testing.B) {
	e := newEnv(b)
	img := make([]byte, 8_300_000)
	_, _ = rand.Read(img)
	if err := e.st.SetLimits(context.Background(), fixtures.DemoTenantID, "", domain.Limits{ReadsPerMinute: 1 << 30, CandidateWritesPerMinute: 1 << 30,
		ProposalsPerMinute: 1 << 30, ControlledActionsPerMinute: 1 << 30, MaxBulkTargets: 50}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		raw, _ := json.Marshal(map[string]any{"candidate_id": fixtures.DemoCandidateID, "idempotency_key": fmt.Sprintf("bench-photo-%06d", i),
			"image_base64": base64.StdEncoding.EncodeToString(img)})
		env := e.gate.Invoke(context.Background(), gate.Call{Tool: "trove_attach_candidate_photo", Arguments: raw, Transport: "bench"})
		if len(env.Errors) != 1 {
			b.Fatalf("%+v", env.Errors)
		}
	}
}

// TestHardening_RefusalsCountAgainstARejectedBudget sends refused calls of
// every kind before the rate step — invalid input, unknown tool, bad version
// pin, cross-tenant hint, oversize arguments — under a rejected budget of 5:
// the first five keep their own code, the rest are rate_limited with a
// retry-after, every call writes exactly one event, and nothing else
// changes. The reads class is a separate budget: a valid read still runs.
func TestHardening_RefusalsCountAgainstARejectedBudget(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	l, err := e.st.EffectiveLimits(ctx, fixtures.DemoTenantID, fixtures.DemoClientID)
	if err != nil {
		t.Fatal(err)
	}
	l.RejectedPerMinute = 5
	if err := e.st.SetLimits(ctx, fixtures.DemoTenantID, "", l); err != nil {
		t.Fatal(err)
	}
	type call struct {
		name string
		args any
		meta mcp.Meta
		code string
	}
	oversize := json.RawMessage(hgHugeKeys(300 << 10))
	calls := []call{
		{"trove_list_sales", map[string]any{"no_such_field": 1}, nil, "invalid_input"},
		{"trove_no_such_tool", map[string]any{}, nil, "tool_not_available"},
		{"trove_list_sales", map[string]any{}, mcp.Meta{gate.MetaToolVersion: "7"}, "tool_version_unsupported"},
		{"trove_list_sales", map[string]any{}, mcp.Meta{gate.MetaTenantHint: fixtures.OtherTenantID}, "cross_tenant_reference"},
		{"trove_create_candidate", map[string]any{"sale_id": fixtures.PublishedSaleID, "title": "No key"}, nil, "invalid_input"},
		{"trove_list_sales", oversize, nil, "rate_limited"},
		{"trove_no_such_tool", map[string]any{}, nil, "rate_limited"},
		{"trove_list_sales", map[string]any{}, mcp.Meta{gate.MetaTenantHint: fixtures.OtherTenantID}, "rate_limited"},
	}
	before := e.digest()
	eventsBefore := len(e.allEvents())
	for i, c := range calls {
		env := callOn(t, e.cs, c.name, c.args, c.meta)
		if len(env.Errors) != 1 || env.Errors[0].Code != c.code {
			t.Fatalf("call %d (%s): want %s, got %+v", i, c.name, c.code, env.Errors)
		}
		if c.code == "rate_limited" {
			var raw struct {
				Errors []struct {
					RetryAfter int `json:"retry_after_seconds"`
				} `json:"errors"`
			}
			if err := json.Unmarshal([]byte(env.raw), &raw); err != nil || raw.Errors[0].RetryAfter < 1 {
				t.Fatalf("call %d: rate_limited without retry_after_seconds: %s", i, env.raw)
			}
		}
		if evs := e.events(env.ServerRequestID); len(evs) != 1 || evs[0].ErrorCode != c.code {
			t.Fatalf("call %d: want one event with %s, got %+v", i, c.code, evs)
		}
	}
	assertOnlyEventsChanged(t, before, e.digest())
	if got := len(e.allEvents()) - eventsBefore; got != len(calls) {
		t.Fatalf("%d calls wrote %d events", len(calls), got)
	}
	if env := e.call("trove_list_sales", map[string]any{}); env.Status != "succeeded" {
		t.Fatalf("a valid read after the refusals: %s", env.raw)
	}
}

// TestHardening_OversizeArgumentsRefusedOnRawBytes sends a 10 MB arguments
// object with ~650k keys to a 256 KiB tool: invalid_input on arguments, one
// event whose input hash is the sha256 of the raw bytes (nothing was parsed
// or canonicalised, so no key reaches the redacted summary), well under a
// megabyte allocated, and nothing changed.
func TestHardening_OversizeArgumentsRefusedOnRawBytes(t *testing.T) {
	e := newEnv(t)
	raw := hgHugeKeys(10_000_000)
	sum := sha256.Sum256(raw)
	before, eventsBefore := e.digest(), len(e.allEvents())
	// The smallest of three runs, each after a collection, so a background
	// allocation (the SDK's session, the store's pool) cannot fail the bound.
	// Three refusals stay far under the rejected-call budget.
	const runs = 3
	minAlloc := uint64(1<<64 - 1)
	for range runs {
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		env := e.gate.Invoke(context.Background(), gate.Call{Tool: "trove_list_sales", Arguments: raw, Transport: "test"})
		runtime.ReadMemStats(&m1)
		if len(env.Errors) != 1 || env.Errors[0].Code != gate.CodeInvalidInput || env.Errors[0].Field != "arguments" {
			t.Fatalf("errors %+v", env.Errors)
		}
		evs := e.events(env.ServerRequestID)
		if len(evs) != 1 || evs[0].Payload.InputHash != "sha256:"+hex.EncodeToString(sum[:]) || len(evs[0].Payload.RedactedSummary) != 0 {
			t.Fatalf("want one event hashing the raw bytes, got %+v", evs)
		}
		minAlloc = min(minAlloc, m1.TotalAlloc-m0.TotalAlloc)
	}
	if minAlloc > 1<<20 {
		t.Fatalf("refusing a 10 MB object allocated at least %d bytes: it was parsed", minAlloc)
	}
	if n := len(e.allEvents()) - eventsBefore; n != runs {
		t.Fatalf("%d refusals left %d events", runs, n)
	}
	assertOnlyEventsChanged(t, before, e.digest())
}

// Attack review: a suspended client's host flooded refusals at full speed
// (1,000 in 1.7 s, no rate_limited): its credential resolves to no active
// client, so no client budget counted them. The process now counts them per
// credential: past the budget the answer is rate_limited, every call still
// records exactly one event, and nothing else changes.
func TestHardening_SuspendedClientFloodIsRateLimited(t *testing.T) {
	e := newEnv(t)
	c, tok := e.register(fixtures.DemoTenantID, fixtures.CatalogerUserID)
	cs := connect(t, e.gate, tok)
	if _, err := e.st.SetClientStatus(context.Background(), c.ID, domain.ClientSuspended, fixtures.DemoUserID); err != nil {
		t.Fatal(err)
	}
	before := e.counts()
	const calls = 130
	codes := map[string]int{}
	for range calls {
		env := callOn(t, cs, "trove_list_sales", map[string]any{}, nil)
		if len(env.Errors) != 1 || env.Data != nil && string(env.Data) != "null" {
			t.Fatalf("a suspended client's call answered %s", env.raw)
		}
		codes[env.Errors[0].Code]++
		evs := e.events(env.ServerRequestID)
		if len(evs) != 1 || evs[0].ErrorCode != env.Errors[0].Code {
			t.Fatalf("call answered %s: want one event with that code, got %+v", env.Errors[0].Code, evs)
		}
		// The refusal past the budget records why it was counted apart: the
		// credential resolved to a suspended client.
		if env.Errors[0].Code == "rate_limited" && evs[0].AuditCode != "unresolved_client_suspended" {
			t.Fatalf("rate_limited event has audit code %q, want unresolved_client_suspended", evs[0].AuditCode)
		}
	}
	if codes["client_suspended"] != 120 || codes["rate_limited"] != calls-120 {
		t.Fatalf("codes %v; want 120 client_suspended, then rate_limited", codes)
	}
	after := e.counts()
	for table, n := range after {
		want := before[table]
		if table == "plugin_events" {
			want += calls
		}
		if n != want {
			t.Errorf("%s: %d rows, want %d", table, n, want)
		}
	}
}
