package mcpserver_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/catalog"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/gate"
	"github.com/triunalabs/trovesnap/internal/mcpserver"
	"github.com/triunalabs/trovesnap/store"
)

var allGroups = []string{"public_read", "tenant_read", "candidate_write", "action_proposal", "controlled_action"}

// register creates a client for actor in tenant and returns it with its token.
func (e *env) register(tenant, actor string, groups ...string) (domain.Client, string) {
	e.t.Helper()
	if len(groups) == 0 {
		groups = allGroups
	}
	c, tok, err := e.st.RegisterClient(context.Background(), domain.NewClient{TenantID: tenant, ActorID: actor, Name: "test " + actor, ClientType: "claude_code", Groups: groups})
	if err != nil {
		e.t.Fatalf("register: %v", err)
	}
	return c, tok
}

func listNames(t testing.TB, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}

// visibleByRule is what Decide admits for p among active tools: the list a
// session must show is exactly this.
func visibleByRule(mode domain.Mode, p domain.Principal) []string {
	out := []string{}
	for i := range catalog.All() {
		if catalog.Decide(&catalog.All()[i], mode, p).Visible {
			out = append(out, catalog.All()[i].Name)
		}
	}
	return out
}

// §40.1: discovery per role. Each role sees exactly the tools its
// permissions and groups allow — and tools/list equals the call-time rule.
func TestDiscovery_PerRole(t *testing.T) {
	e := newEnv(t)
	roles := map[string]string{
		domain.RoleOwner: fixtures.DemoUserID, domain.RoleCataloger: fixtures.CatalogerUserID,
		domain.RolePricer: fixtures.PricerUserID, domain.RoleCheckout: fixtures.CheckoutUserID,
	}
	seen := map[string][]string{}
	for role, user := range roles {
		c, tok := e.register(fixtures.DemoTenantID, user)
		cs := connect(t, e.gate, tok)
		got := listNames(t, cs)
		p, err := e.st.PrincipalForClient(context.Background(), c.ID)
		if err != nil {
			t.Fatal(err)
		}
		if p.Role != role {
			t.Fatalf("%s resolved as %s", user, p.Role)
		}
		if want := visibleByRule(domain.ModeMock, p); !slices.Equal(got, want) {
			t.Errorf("%s: tools/list %v, rule %v", role, got, want)
		}
		seen[role] = got
		// Every listed tool is callable; every unlisted one answers like an unknown tool.
		for i := range catalog.All() {
			tool := &catalog.All()[i]
			if slices.Contains(got, tool.Name) {
				continue
			}
			env := callOn(t, cs, tool.Name, map[string]any{}, nil)
			wantCode(t, env, "blocked", "tool_not_available")
		}
	}
	// Role facts (§40.1): cataloger reads + writes candidates; pricer reads
	// but writes no candidate; checkout sees no candidate tools.
	if !slices.Contains(seen[domain.RoleCataloger], "trove_create_candidate") || !slices.Contains(seen[domain.RoleCataloger], "trove_list_items") {
		t.Errorf("cataloger: %v", seen[domain.RoleCataloger])
	}
	if slices.Contains(seen[domain.RolePricer], "trove_create_candidate") || !slices.Contains(seen[domain.RolePricer], "trove_list_items") {
		t.Errorf("pricer: %v", seen[domain.RolePricer])
	}
	if slices.ContainsFunc(seen[domain.RoleCheckout], func(n string) bool { return strings.Contains(n, "candidate") }) {
		t.Errorf("checkout sees candidate tools: %v", seen[domain.RoleCheckout])
	}
	if len(seen[domain.RoleOwner]) < len(seen[domain.RoleCataloger]) {
		t.Errorf("owner sees less than cataloger")
	}
	// A client's groups narrow what its actor's role allows.
	_, tok := e.register(fixtures.DemoTenantID, fixtures.DemoUserID, "tenant_read")
	if got := listNames(t, connect(t, e.gate, tok)); slices.Contains(got, "trove_create_candidate") || len(got) == 0 {
		t.Errorf("read-only owner client: %v", got)
	}
}

// §40.1/§40.2 suspended, revoked, rotated and malformed credentials, and the
// suspension seen by the very next call of a running server.
func TestDiscovery_SuspendedClientSeesNoToolsAndIsRefused(t *testing.T) {
	e := newEnv(t)
	c, tok := e.register(fixtures.DemoTenantID, fixtures.CatalogerUserID)
	cs := connect(t, e.gate, tok)
	if got := listNames(t, cs); len(got) == 0 {
		t.Fatal("active client sees nothing")
	}
	ok := callOn(t, cs, "trove_list_sales", map[string]any{}, nil)
	if ok.Status != "succeeded" {
		t.Fatal(ok.raw)
	}
	// Suspend through another store handle (another process in real life).
	other, err := store.Open(context.Background(), e.path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.SetClientStatus(context.Background(), c.ID, domain.ClientSuspended, fixtures.DemoUserID); err != nil {
		t.Fatal(err)
	}
	before := e.digest()
	if got := listNames(t, cs); len(got) != 0 {
		t.Errorf("suspended client sees %v", got)
	}
	for _, tool := range []string{"trove_list_sales", "trove_create_candidate", "trove_nope"} {
		env := callOn(t, cs, tool, map[string]any{"sale_id": fixtures.PublishedSaleID, "title": "x", "idempotency_key": "susp-key-0001"}, nil)
		wantCode(t, env, "blocked", "client_suspended")
	}
	assertOnlyEventsChanged(t, before, e.digest())
	if _, err := other.SetClientStatus(context.Background(), c.ID, domain.ClientActive, fixtures.DemoUserID); err != nil {
		t.Fatal(err)
	}
	if env := callOn(t, cs, "trove_list_sales", map[string]any{}, nil); env.Status != "succeeded" {
		t.Errorf("reactivated: %s", env.raw)
	}
	// Rotation: the old credential stops working at once.
	_, newTok, err := other.RotateCredential(context.Background(), c.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, callOn(t, cs, "trove_list_sales", map[string]any{}, nil), "blocked", "client_not_registered")
	if env := callOn(t, connect(t, e.gate, newTok), "trove_list_sales", map[string]any{}, nil); env.Status != "succeeded" {
		t.Errorf("rotated token: %s", env.raw)
	}
	// Revocation is final.
	if _, err := other.SetClientStatus(context.Background(), c.ID, domain.ClientRevoked, ""); err != nil {
		t.Fatal(err)
	}
	revoked := connect(t, e.gate, newTok)
	if got := listNames(t, revoked); len(got) != 0 {
		t.Errorf("revoked sees %v", got)
	}
	wantCode(t, callOn(t, revoked, "trove_list_sales", map[string]any{}, nil), "blocked", "client_not_registered")
	if _, err := other.SetClientStatus(context.Background(), c.ID, domain.ClientActive, ""); err == nil {
		t.Error("a revoked client was reactivated")
	}
	// A wrong or malformed token is never the demo client.
	for _, bad := range []string{"tsk_" + strings.Repeat("a", 52), "not-a-token", tok} {
		cs := connect(t, e.gate, bad)
		if got := listNames(t, cs); len(got) != 0 {
			t.Errorf("%q sees %v", bad, got)
		}
		wantCode(t, callOn(t, cs, "trove_list_sales", map[string]any{}, nil), "blocked", "client_not_registered")
	}
}

// A store that cannot be read grants nothing (fail closed).
func TestDiscovery_UnreadableStoreFailsClosed(t *testing.T) {
	e := newEnv(t)
	_, tok := e.register(fixtures.DemoTenantID, fixtures.CatalogerUserID)
	cs := connect(t, e.gate, tok)
	if err := e.st.Close(); err != nil {
		t.Fatal(err)
	}
	if got := listNames(t, cs); len(got) != 0 {
		t.Errorf("closed store: tools %v", got)
	}
	env := callOn(t, cs, "trove_list_sales", map[string]any{}, nil)
	wantCode(t, env, "failed", "service_unavailable")
}

// §40.2 in a server without the demo client (live configuration): anonymous
// callers see public tools only; private reads and candidate writes fail;
// tenant A cannot read or write tenant B.
func TestAuth_AnonymousAndCrossTenant(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "live.db")
	seed := fixtures.Dataset()
	clock := domain.NewFixedClock(fixtures.Epoch)
	ids := domain.NewSeqIDs() // one generator: store and gate mint event ids from the same sequence
	st, err := store.Open(ctx, path, store.Options{Mode: domain.ModeLive, Clock: clock, IDs: ids, Seed: &seed})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	g := gate.New(gate.Options{Backend: st, Mode: domain.ModeLive, Clock: clock, IDs: ids, ServerVersion: "test"})
	anon := connect(t, g, "")
	for _, name := range listNames(t, anon) {
		if tool, _ := catalog.Lookup(name); tool.Tier != catalog.TierPublicRead {
			t.Errorf("anonymous sees %s", name)
		}
	}
	wantCode(t, callOn(t, anon, "trove_list_sales", map[string]any{}, nil), "blocked", "authentication_required")
	wantCode(t, callOn(t, anon, "trove_create_candidate", map[string]any{"sale_id": fixtures.PublishedSaleID, "title": "x", "idempotency_key": "anon-key-0001"}, nil), "blocked", "authentication_required")

	_, tokA := registerOn(t, st, fixtures.DemoTenantID, fixtures.CatalogerUserID)
	_, tokB := registerOn(t, st, fixtures.OtherTenantID, fixtures.OtherOwnerUserID)
	a, b := connect(t, g, tokA), connect(t, g, tokB)
	for _, s := range dataAs[catalog.ListSalesOutput](t, callOn(t, b, "trove_list_sales", map[string]any{"limit": 100}, nil)).Sales {
		if !strings.HasPrefix(s.ID, "sale_3") {
			t.Errorf("tenant B lists %s", s.ID)
		}
	}
	wantCode(t, callOn(t, b, "trove_list_items", map[string]any{"sale_id": fixtures.PublishedSaleID}, nil), "failed", "invalid_reference")
	wantCode(t, callOn(t, b, "trove_create_candidate", map[string]any{"sale_id": fixtures.PublishedSaleID, "title": "x", "idempotency_key": "xt-key-0002"}, nil), "failed", "invalid_reference")
	wantCode(t, callOn(t, a, "trove_list_candidates", map[string]any{}, mcp.Meta{"trovesnap/tenant_id": fixtures.OtherTenantID}), "blocked", "cross_tenant_reference")
	if env := callOn(t, a, "trove_list_items", map[string]any{"sale_id": fixtures.PublishedSaleID, "limit": 1}, nil); env.Status != "succeeded" {
		t.Errorf("A reads its own sale: %s", env.raw)
	}
}

func registerOn(t testing.TB, st *store.Store, tenant, actor string) (domain.Client, string) {
	t.Helper()
	c, tok, err := st.RegisterClient(context.Background(), domain.NewClient{TenantID: tenant, ActorID: actor, Name: "t", ClientType: "custom", Groups: allGroups})
	if err != nil {
		t.Fatal(err)
	}
	return c, tok
}

// §38: a client over its per-minute limit gets rate_limited with a retry
// hint and nothing runs; the next window admits it again.
func TestLimits_RateLimitedNothingExecuted(t *testing.T) {
	e := newEnv(t)
	c, tok := e.register(fixtures.DemoTenantID, fixtures.CatalogerUserID)
	l := domain.DefaultLimits()
	l.ReadsPerMinute, l.CandidateWritesPerMinute = 3, 1
	if err := e.st.SetLimits(context.Background(), fixtures.DemoTenantID, c.ID, l); err != nil {
		t.Fatal(err)
	}
	cs := connect(t, e.gate, tok)
	for i := 0; i < 3; i++ {
		if env := callOn(t, cs, "trove_list_sales", map[string]any{}, nil); env.Status != "succeeded" {
			t.Fatalf("call %d: %s", i, env.raw)
		}
	}
	env := callOn(t, cs, "trove_list_sales", map[string]any{}, nil)
	wantCode(t, env, "blocked", "rate_limited")
	if !env.Errors[0].Retryable || !strings.Contains(env.raw, `"retry_after_seconds":60`) {
		t.Errorf("no retry hint: %s", env.raw)
	}
	write := map[string]any{"sale_id": fixtures.PublishedSaleID, "title": "Limit lamp", "idempotency_key": "limit-key-0001"}
	if env := callOn(t, cs, "trove_create_candidate", write, nil); env.Status != "succeeded_with_warnings" {
		t.Fatalf("first write: %s", env.raw)
	}
	before := e.digest()
	write["idempotency_key"] = "limit-key-0002"
	wantCode(t, callOn(t, cs, "trove_create_candidate", write, nil), "blocked", "rate_limited")
	assertOnlyEventsChanged(t, before, e.digest())
	// Other clients have their own budget; the tenant default still applies to them.
	if env := e.call("trove_list_sales", map[string]any{}); env.Status != "succeeded" {
		t.Errorf("demo client limited by another client's budget: %s", env.raw)
	}
	e.clock.Advance(time.Minute)
	if env := callOn(t, cs, "trove_list_sales", map[string]any{}, nil); env.Status != "succeeded" {
		t.Errorf("next window: %s", env.raw)
	}
}

// §40.15: the version is recorded with its schema hash; a deprecated tool
// answers with a warning and its use is marked in the event.
func TestVersion_DeprecatedWarnsAndIsCounted(t *testing.T) {
	e := newEnv(t)
	var deprecated *catalog.Tool
	for i := range catalog.All() {
		if tl := &catalog.All()[i]; tl.Status == catalog.StatusDeprecated && tl.HasHandler() {
			deprecated = tl
		}
	}
	if deprecated == nil {
		t.Fatal("no deprecated tool with a handler in the catalog (trove_demand_signals should be one)")
	}
	env := e.call(deprecated.Name, map[string]any{})
	if env.Status != "succeeded_with_warnings" || !strings.Contains(env.raw, "tool_deprecated") {
		t.Fatalf("deprecated call: %s", env.raw)
	}
	ev := e.events(env.ServerRequestID)
	if len(ev) != 1 || !ev[0].Tool.Deprecated || ev[0].Tool.InputSchemaHash != deprecated.InputSchemaHash() {
		t.Errorf("event = %+v", ev)
	}
	cur := e.call("trove_list_sales", map[string]any{})
	if ev := e.events(cur.ServerRequestID); len(ev) != 1 || ev[0].Tool.Deprecated {
		t.Errorf("current tool marked deprecated: %+v", ev)
	}
}

// In mock mode controlled actions are marked simulation-only.
func TestDiscovery_MockMarksControlledActionsSimulationOnly(t *testing.T) {
	for i := range catalog.All() {
		tl := &catalog.All()[i]
		if tl.Tier != catalog.TierControlledAction {
			continue
		}
		mt := mcpserver.DescribeTool(tl, domain.ModeMock, false)
		if mt.Meta["trovesnap/simulation_only"] != true || !strings.HasPrefix(mt.Description, "[simulation only in mock mode]") {
			t.Errorf("%s not marked simulation-only in mock mode", tl.Name)
		}
		if live := mcpserver.DescribeTool(tl, domain.ModeLive, false); live.Meta["trovesnap/simulation_only"] != nil {
			t.Errorf("%s marked simulation-only in live mode", tl.Name)
		}
	}
}

// §40.12: after registering, rotating, suspending and calling with good, bad
// and stale credentials, no table (but the hash column), event, envelope or
// log line contains a token or a credential hash.
func TestCredentialIsolation_NoSecretAnywhere(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e := newEnv(t)
	g := gate.New(gate.Options{Backend: e.st, Mode: domain.ModeMock, Clock: e.clock, IDs: domain.RandomIDs{}, ServerVersion: "test", Logger: logger})
	var tokens []string
	c1, t1 := e.register(fixtures.DemoTenantID, fixtures.CatalogerUserID)
	_, t2 := e.register(fixtures.DemoTenantID, fixtures.PricerUserID)
	_, t3, err := e.st.RotateCredential(context.Background(), c1.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	tokens = append(tokens, t1, t2, t3)
	var envelopes []string
	for _, tok := range append(slices.Clone(tokens), "tsk_"+strings.Repeat("b", 52), "") {
		s := mcpserver.New(mcpserver.Options{Gate: g, Credential: tok, Transport: "inmemory", Logger: logger})
		cs := connectServer(t, s)
		for _, call := range []struct {
			tool string
			args map[string]any
		}{
			{"trove_list_sales", map[string]any{}},
			{"trove_list_candidates", map[string]any{"limit": 5}},
			{"trove_create_candidate", map[string]any{"sale_id": fixtures.PublishedSaleID, "title": "Iso", "idempotency_key": "iso-key-" + fmt.Sprint(len(envelopes))}},
			{"trove_list_items", map[string]any{"bogus": tok}},
		} {
			envelopes = append(envelopes, callOn(t, cs, call.tool, call.args, nil).raw)
		}
	}
	hashes := []string{}
	for _, tok := range tokens {
		hashes = append(hashes, store.CredentialHash(tok))
	}
	needles := append([]string{"tsk_"}, hashes...)
	for _, tok := range tokens {
		needles = append(needles, tok[4:20]) // any fragment of a token
	}
	haystacks := map[string]string{"logs": logs.String(), "envelopes": strings.Join(envelopes, "\n")}
	for _, ev := range e.allEvents() {
		b, _ := json.Marshal(ev)
		haystacks["event "+ev.ID] = string(b)
	}
	haystacks["database"] = dumpWithoutCredentialHashes(t, e.path)
	for where, text := range haystacks {
		for _, n := range needles {
			if strings.Contains(text, n) {
				t.Errorf("%s contains %q", where, n)
			}
		}
	}
}

// dumpWithoutCredentialHashes renders every row of every table, leaving out
// only mcp_clients.credential_hash (where a hash must live).
func dumpWithoutCredentialHashes(t *testing.T, path string) string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query("SELECT name FROM sqlite_schema WHERE type = 'table'")
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var n string
		_ = rows.Scan(&n)
		tables = append(tables, n)
	}
	rows.Close()
	var out strings.Builder
	for _, table := range tables {
		cols := "*"
		if table == "mcp_clients" {
			cols = "id, tenant_id, source_connection_id, name, client_type, status, actor_id, allowed_tool_groups, demo, created_by, created_at"
		}
		r, err := db.Query("SELECT " + cols + " FROM " + table)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := r.Columns()
		vals := make([]any, len(n))
		ptrs := make([]any, len(n))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for r.Next() {
			_ = r.Scan(ptrs...)
			fmt.Fprintln(&out, table, vals)
		}
		r.Close()
	}
	return out.String()
}

func connectServer(t testing.TB, s *mcp.Server) *mcp.ClientSession {
	t.Helper()
	sct, cct := mcp.NewInMemoryTransports()
	ss, err := s.Connect(context.Background(), sct, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(context.Background(), cct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close(); _ = ss.Wait() })
	return cs
}
