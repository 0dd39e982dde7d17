package mcpserver_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/gate"
	"github.com/triunalabs/trovesnap/internal/mcpserver"
	"github.com/triunalabs/trovesnap/store"
)

// env is one server over the real store on a temp-dir SQLite file, seeded
// from fixtures, with a real go-sdk client over in-memory transports.
type env struct {
	t     testing.TB
	st    *store.Store
	gate  *gate.Gate
	cs    *mcp.ClientSession
	clock *domain.FixedClock
	path  string
}

type envOpt func(*envConfig)

type envConfig struct {
	credential string
	path       string
	mode       domain.Mode
	fresh      bool // seed the file rather than copy the template (seeded_copy_test.go)
}

func withCredential(c string) envOpt { return func(o *envConfig) { o.credential = c } }
func withPath(p string) envOpt       { return func(o *envConfig) { o.path = p } }

func newEnv(t testing.TB, opts ...envOpt) *env {
	t.Helper()
	cfg := envConfig{mode: domain.ModeMock}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.path == "" {
		cfg.path = filepath.Join(t.TempDir(), "trovesnap.db")
		if !cfg.fresh {
			seededCopy(t, cfg.path, cfg.mode)
		}
	}
	ctx := context.Background()
	seed := fixtures.Dataset()
	clock := domain.NewFixedClock(fixtures.Epoch)
	ids := domain.NewSeqIDs()
	st, err := store.Open(ctx, cfg.path, store.Options{Mode: cfg.mode, Clock: clock, IDs: ids, Seed: &seed})
	if err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	g := gate.New(gate.Options{Backend: st, Mode: cfg.mode, Clock: clock, IDs: ids, ServerVersion: "test"})
	e := &env{t: t, st: st, gate: g, clock: clock, path: cfg.path}
	e.cs = connect(t, g, cfg.credential)
	return e
}

func connect(t testing.TB, g *gate.Gate, credential string) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	// Tests see the output schemas, to validate every envelope against them.
	s := mcpserver.New(mcpserver.Options{Gate: g, Credential: credential, Transport: "inmemory", OutputSchemas: true})
	sct, cct := mcp.NewInMemoryTransports()
	ss, err := s.Connect(ctx, sct, nil)
	if err != nil {
		t.Fatalf("server connect: %v", err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "claude-code", Version: "2.1.0"}, nil).Connect(ctx, cct, nil)
	if err != nil {
		t.Fatalf("client connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close(); _ = ss.Wait() })
	return cs
}

// envelope is the §22 envelope as a client decodes it.
type envelope struct {
	RequestID       *string `json:"request_id"`
	ServerRequestID string  `json:"server_request_id"`
	Mode            string  `json:"mode"`
	Tool            struct{ Name, Version string }
	Status          string          `json:"status"`
	Data            json.RawMessage `json:"data"`
	Warnings        []struct{ Code, Message string }
	Errors          []struct {
		Code      string `json:"code"`
		Message   string `json:"message"`
		Field     string `json:"field"`
		Retryable bool   `json:"retryable"`
	}
	Related domain.Related `json:"related"`
	Audit   struct {
		PluginEventID string `json:"plugin_event_id"`
		Replayed      bool   `json:"idempotent_replay"`
	}
	raw     string
	isError bool
}

func (e *env) call(name string, args map[string]any) envelope {
	e.t.Helper()
	return e.callMeta(name, args, nil)
}

func (e *env) callMeta(name string, args map[string]any, meta mcp.Meta) envelope {
	e.t.Helper()
	return callOn(e.t, e.cs, name, args, meta)
}

func callOn(t testing.TB, cs *mcp.ClientSession, name string, args any, meta mcp.Meta) envelope {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args, Meta: meta})
	if err != nil {
		t.Fatalf("CallTool %s: protocol error %v", name, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("CallTool %s: want 1 content block, got %d", name, len(res.Content))
	}
	text := res.Content[0].(*mcp.TextContent).Text
	var env envelope
	if err := json.Unmarshal([]byte(text), &env); err != nil {
		t.Fatalf("CallTool %s: text is not an envelope: %v\n%s", name, err, text)
	}
	sc, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if !jsonEqual(t, sc, []byte(text)) {
		t.Fatalf("structuredContent and text differ:\n%s\n%s", sc, text)
	}
	env.raw, env.isError = text, res.IsError
	return env
}

func jsonEqual(t testing.TB, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

func (e *env) digest() map[string]string {
	e.t.Helper()
	d, err := e.st.Digest(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return d
}

func (e *env) counts() map[string]int64 {
	e.t.Helper()
	c, err := e.st.Counts(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// assertOnlyEventsChanged checks that between two digests nothing changed
// but the bookkeeping every call does (its own event, its rate count, the
// client's last use).
func assertOnlyEventsChanged(t testing.TB, before, after map[string]string) {
	t.Helper()
	for table, h := range before {
		if slices.Contains(store.BookkeepingTables, table) {
			continue
		}
		if after[table] != h {
			t.Errorf("table %s changed", table)
		}
	}
}

func dataAs[T any](t testing.TB, e envelope) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(e.Data, &v); err != nil {
		t.Fatalf("data: %v\n%s", err, e.raw)
	}
	return v
}

func wantCode(t testing.TB, e envelope, status, code string) {
	t.Helper()
	// isError marks blocked and failed calls; approval_required is a state
	// the agent waits on, not an error (DESIGN "Envelope").
	wantIsError := status == "blocked" || status == "failed"
	if e.Status != status || len(e.Errors) != 1 || e.Errors[0].Code != code || e.isError != wantIsError {
		t.Fatalf("want %s/%s (isError %v), got status=%s errors=%+v isError=%v\n%s", status, code, wantIsError, e.Status, e.Errors, e.isError, e.raw)
	}
	if string(e.Data) != "null" {
		t.Fatalf("failed call returned data: %s", e.Data)
	}
}

func (e *env) events(serverRequestID string) []domain.Event {
	e.t.Helper()
	evs, err := e.st.Events(context.Background(), store.EventFilter{ServerRequestID: serverRequestID})
	if err != nil {
		e.t.Fatal(err)
	}
	return evs
}

func (e *env) allEvents() []domain.Event {
	e.t.Helper()
	evs, err := e.st.Events(context.Background(), store.EventFilter{})
	if err != nil {
		e.t.Fatal(err)
	}
	return evs
}
