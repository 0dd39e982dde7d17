package live_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/contract"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/gate"
	"github.com/triunalabs/trovesnap/internal/live"
	"github.com/triunalabs/trovesnap/internal/live/pgtest"
	"github.com/triunalabs/trovesnap/internal/mcpserver"
	"github.com/triunalabs/trovesnap/store"
)

// The version this release expects is the number of migration files, and
// each file records its own ordinal.
func TestMigrations_SchemaVersionMatchesTheFiles(t *testing.T) {
	files, err := pgtest.MigrationFiles()
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != live.SchemaVersion {
		t.Fatalf("%d migration files, live.SchemaVersion = %d", len(files), live.SchemaVersion)
	}
	for i, f := range files {
		body, _ := os.ReadFile(f)
		want := "VALUES (" + strconv.Itoa(i+1) + ", '" + strings.TrimSuffix(filepath.Base(f), ".sql") + "')"
		if !strings.Contains(string(body), want) {
			t.Errorf("%s does not record itself as %s", filepath.Base(f), want)
		}
	}
	env := seeded(t)
	v, err := newBackend(t, env).RemoteSchemaVersion(ctx)
	if err != nil || v != live.SchemaVersion {
		t.Fatalf("mcp_schema_version = %d, %v", v, err)
	}
}

// The public key's role (anon) may EXECUTE the RPCs and nothing else: every
// direct SELECT, INSERT, UPDATE and DELETE on every table is refused.
func TestMigrations_PublicRoleCannotTouchAnyTable(t *testing.T) {
	env := seeded(t)
	tables, err := env.Cluster.Tables(ctx)
	if err != nil || len(tables) < 15 {
		t.Fatalf("tables = %v, %v", tables, err)
	}
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, table := range tables {
		q := "trovesnap." + pgx.Identifier{table}.Sanitize()
		for _, stmt := range []string{
			"SELECT * FROM " + q + " LIMIT 1",
			"INSERT INTO " + q + " DEFAULT VALUES",
			"UPDATE " + q + " SET tenant_id = tenant_id",
			"DELETE FROM " + q,
		} {
			err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
				if _, err := tx.Exec(ctx, "SET LOCAL ROLE anon"); err != nil {
					t.Fatal(err)
				}
				_, err := tx.Exec(ctx, stmt)
				return err
			})
			if err == nil || !strings.Contains(err.Error(), "SQLSTATE 42501") {
				t.Errorf("as anon, %q: %v; want permission denied (42501)", stmt, err)
			}
		}
	}
	rr, err := newBackend(t, env).RoleCheck(ctx)
	if err != nil || rr.Role != "anon" || rr.TableAccess() || len(rr.TablePrivileges) != 0 {
		t.Fatalf("role check = %+v, %v", rr, err)
	}
	for _, fn := range rr.Functions {
		if !strings.HasPrefix(fn, "mcp_") || fn == "mcp_seed_fixtures" {
			t.Errorf("anon may execute %s", fn)
		}
	}
}

// The SQL role matrix is the domain's.
func TestMigrations_RolePermissionsMatchTheDomain(t *testing.T) {
	env := pgtest.Need(t)
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, role := range domain.Roles() {
		rows, _ := conn.Query(ctx, "SELECT permission FROM trovesnap.role_permissions WHERE role = $1 ORDER BY permission COLLATE \"C\"", role)
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil || !slices.Equal(got, domain.RolePermissions(role)) {
			t.Errorf("%s: SQL %v, domain %v (%v)", role, got, domain.RolePermissions(role), err)
		}
	}
}

// rpc calls an RPC directly with the project's public key and no client
// token, as anyone on the internet could.
func rpc(t *testing.T, env *pgtest.Env, fn string, args map[string]any) (int, map[string]any) {
	t.Helper()
	return rpcClient(t, env, "", fn, args)
}

// rpcClient calls an RPC directly as the holder of the client token tok
// ("" = none) and the public key — what an agent with a shell on the
// host could send.
func rpcClient(t *testing.T, env *pgtest.Env, tok, fn string, args map[string]any) (int, map[string]any) {
	t.Helper()
	body, _ := json.Marshal(args)
	req, _ := http.NewRequest(http.MethodPost, env.Endpoint.URL+"/rest/v1/rpc/"+fn, bytes.NewReader(body))
	req.Header.Set("apikey", env.PublicKey())
	if tok != "" {
		req.Header.Set(live.ClientTokenHeader, tok)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// §40.2 enforced by the database even if the Go code were wrong: a client
// of tenant A asking mcp_list_items for tenant B's sale is refused, and the
// owner role itself sees no row of another tenant under A's context.
func TestRLS_AnotherTenantsSaleIsRefusedByTheDatabase(t *testing.T) {
	env := seeded(t)
	status, body := rpcClient(t, env, contract.CredOwner, "mcp_list_items", map[string]any{"p_sale_id": fixtures.OtherPublishedSaleID})
	if status != http.StatusBadRequest || body["code"] != "P0001" || body["message"] != "trovesnap:invalid_reference:sale_id" {
		t.Fatalf("cross-tenant list = %d %v", status, body)
	}
	status, body = rpcClient(t, env, contract.CredSuspended, "mcp_list_sales", map[string]any{})
	if status != http.StatusBadRequest || body["message"] != "trovesnap:client_suspended" {
		t.Fatalf("suspended client = %d %v", status, body)
	}
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var mine, theirs, none int
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL ROLE trovesnap_owner"); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, "SELECT count(*) FROM trovesnap.items").Scan(&none); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "SELECT set_config('trovesnap.tenant_id', $1, true)", fixtures.DemoTenantID); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, "SELECT count(*) FROM trovesnap.items WHERE tenant_id = $1", fixtures.DemoTenantID).Scan(&mine); err != nil {
			return err
		}
		return tx.QueryRow(ctx, "SELECT count(*) FROM trovesnap.items WHERE sale_id = $1", fixtures.OtherPublishedSaleID).Scan(&theirs)
	})
	if err != nil || none != 0 || mine == 0 || theirs != 0 {
		t.Fatalf("as the owner role: no context %d rows, tenant A %d rows, B's sale %d rows (%v); want 0, >0, 0", none, mine, theirs, err)
	}
}

// liveGate is a gate in live mode over the live Backend, whose events of
// calls that wrote nothing go to a local outbox store.
type liveGate struct {
	env   *pgtest.Env
	st    *store.Store
	b     *live.Backend
	g     *gate.Gate
	clock *domain.FixedClock
	logs  *bytes.Buffer
}

func newLiveGate(t *testing.T, env *pgtest.Env) *liveGate {
	t.Helper()
	clock := domain.NewFixedClock(time.Now())
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "trovesnap-live.db"), store.Options{Mode: domain.ModeLive, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	logs := &bytes.Buffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	b := newBackend(t, env, func(o *live.Options) { o.Outbox = st; o.Logger = logger; o.Timeout = 5 * time.Second })
	g := gate.New(gate.Options{Backend: b, Mode: domain.ModeLive, ServerVersion: "test", Logger: logger})
	return &liveGate{env: env, st: st, b: b, g: g, clock: clock, logs: logs}
}

func connect(t *testing.T, g *gate.Gate, credential string) *mcp.ClientSession {
	t.Helper()
	s := mcpserver.New(mcpserver.Options{Gate: g, Credential: credential, Transport: "inmemory"})
	sct, cct := mcp.NewInMemoryTransports()
	ss, err := s.Connect(ctx, sct, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "claude-code", Version: "2.1.0"}, nil).Connect(ctx, cct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close(); _ = ss.Wait() })
	return cs
}

func call(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) map[string]any {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var env map[string]any
	_ = json.Unmarshal(b, &env)
	return env
}

// §40.4: the five compatibility tools through a real MCP client, in live
// mode, over the live Backend and real PostgreSQL.
func TestCompat_FiveToolsLive(t *testing.T) {
	env := seeded(t)
	lg := newLiveGate(t, env)
	cs := connect(t, lg.g, contract.CredOwner)
	ok := func(name string, e map[string]any) map[string]any {
		t.Helper()
		if e["mode"] != "live" || (e["status"] != "succeeded" && e["status"] != "succeeded_with_warnings") {
			t.Fatalf("%s = %v", name, e)
		}
		return e["data"].(map[string]any)
	}
	sales := ok("trove_list_sales", call(t, cs, "trove_list_sales", map[string]any{}))["sales"].([]any)
	if len(sales) != 4 {
		t.Fatalf("sales = %d", len(sales))
	}
	items := ok("trove_list_items", call(t, cs, "trove_list_items", map[string]any{"sale_id": fixtures.LiveSaleID, "limit": 5}))
	if len(items["items"].([]any)) != 5 || items["next_cursor"] == "" {
		t.Fatalf("items = %v", items)
	}
	page2 := ok("trove_list_items", call(t, cs, "trove_list_items", map[string]any{"sale_id": fixtures.LiveSaleID, "limit": 5, "cursor": items["next_cursor"]}))
	if len(page2["items"].([]any)) == 0 {
		t.Fatal("page 2 of items is empty")
	}
	args := map[string]any{"sale_id": fixtures.PublishedSaleID, "title": "Mid-century lamp", "idempotency_key": "compat-1"}
	created := call(t, cs, "trove_create_candidate", args)
	cand := ok("trove_create_candidate", created)
	if cand["review_status"] != "needs_review" || cand["canonical_item_created"] != false {
		t.Fatalf("candidate = %v", cand)
	}
	replay := call(t, cs, "trove_create_candidate", args)
	if ok("trove_create_candidate", replay)["candidate_id"] != cand["candidate_id"] {
		t.Fatalf("replay = %v", replay)
	}
	cands := ok("trove_list_candidates", call(t, cs, "trove_list_candidates", map[string]any{"sale_id": fixtures.PublishedSaleID}))["candidates"].([]any)
	found := false
	for _, c := range cands {
		found = found || c.(map[string]any)["id"] == cand["candidate_id"]
	}
	if !found {
		t.Fatal("the new candidate is not listed")
	}
	sig := ok("trove_demand_signals", call(t, cs, "trove_demand_signals", map[string]any{"sale_id": fixtures.LiveSaleID}))
	if len(sig["signals"].([]any)) == 0 {
		t.Fatal("no demand signals")
	}
	// §40.2 live: another tenant's sale is invalid_reference; no credential
	// is not the demo client.
	cross := call(t, cs, "trove_list_items", map[string]any{"sale_id": fixtures.OtherPublishedSaleID})
	if cross["status"] != "failed" || !strings.Contains(mustJSON(cross["errors"]), "invalid_reference") {
		t.Fatalf("cross-tenant = %v", cross)
	}
	anon := call(t, connect(t, lg.g, ""), "trove_list_sales", map[string]any{})
	if anon["status"] == "succeeded" || !strings.Contains(mustJSON(anon["errors"]), "authentication_required") {
		t.Fatalf("anonymous private read = %v", anon)
	}
	// The write's event committed with it in Postgres; the reads' events
	// wait in the outbox until flushed.
	events, _ := env.Events(ctx)
	if len(events) != 1 || events[0].Tool.Name != "trove_create_candidate" || events[0].Outcome != domain.OutcomeSuccess {
		t.Fatalf("events in Postgres before the flush = %+v", events)
	}
	if res, err := lg.st.FlushOutbox(ctx, lg.b, 100); err != nil || res.Sent < 8 {
		t.Fatalf("flush = %+v, %v", res, err)
	}
	events, _ = env.Events(ctx)
	if len(events) < 9 {
		t.Fatalf("events after the flush = %d", len(events))
	}
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

// The outbox survives a stopped PostgreSQL: calls keep answering (reads
// fail closed with service_unavailable), their events queue locally, and
// once PostgreSQL is back every event arrives exactly once.
func TestOutbox_SurvivesStoppedPostgres(t *testing.T) {
	env := seeded(t)
	lg := newLiveGate(t, env)
	invoke := func(tool string) *gate.Envelope {
		return lg.g.Invoke(ctx, gate.Call{Tool: tool, Arguments: json.RawMessage(`{}`), Credential: contract.CredOwner, Transport: "test"})
	}
	before := invoke("trove_list_sales")
	if before.Status != "succeeded" {
		t.Fatalf("before the outage: %+v", before)
	}
	if err := env.Cluster.StopServer(); err != nil {
		t.Fatal(err)
	}
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			_ = env.Cluster.StartServer()
		}
	})
	var ids []string
	ids = append(ids, before.Audit.PluginEventID)
	for i := 0; i < 3; i++ {
		e := invoke("trove_list_sales")
		if e.Status != "failed" || len(e.Errors) != 1 || e.Errors[0].Code != gate.CodeServiceUnavailable || !e.Errors[0].Retryable {
			t.Fatalf("during the outage: %+v", e)
		}
		ids = append(ids, e.Audit.PluginEventID)
	}
	if _, err := lg.st.FlushOutbox(ctx, lg.b, 100); !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("flush during the outage: %v", err)
	}
	st, _ := lg.st.OutboxStatus(ctx)
	if st.Pending != 4 {
		t.Fatalf("outbox during the outage = %+v, want 4 pending", st)
	}
	if err := env.Cluster.StartServer(); err != nil {
		t.Fatal(err)
	}
	restarted = true
	lg.clock.Advance(time.Hour) // past every backoff
	res, err := lg.st.FlushOutbox(ctx, lg.b, 100)
	if err != nil || res.Sent != 4 {
		t.Fatalf("flush after the outage = %+v, %v", res, err)
	}
	// Delivering again (a flush whose answer was lost) records nothing twice.
	events, err := env.Events(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range events {
		if err := lg.b.SendEvent(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	if events, err = env.Events(ctx); err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, e := range events {
		got[e.ID]++
	}
	for _, id := range ids {
		if got[id] != 1 {
			t.Fatalf("event %s recorded %d times, want exactly once (all: %v)", id, got[id], got)
		}
	}
	if after := invoke("trove_list_sales"); after.Status != "succeeded" {
		t.Fatalf("after the outage: %+v", after)
	}
}
