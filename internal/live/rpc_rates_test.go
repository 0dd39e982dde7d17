package live_test

import (
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/catalog"
	"github.com/triunalabs/trovesnap/internal/contract"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/live"
	"github.com/triunalabs/trovesnap/internal/live/pgtest"
)

// ownerClient is the client of contract.CredOwner.
const ownerClient = "mcp_client_81"

// fillWindow sets bucket's count in class far over any limit for the
// current minute and the next, so a test cannot straddle a window.
func fillWindow(t *testing.T, env *pgtest.Env, bucket, tenant, class string) {
	t.Helper()
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var tid any
	if tenant != "" {
		tid = tenant
	}
	if _, err := conn.Exec(ctx, `INSERT INTO trovesnap.rate_counters (bucket, class, window_start, count, tenant_id)
		SELECT $1, $2, w.s + 60 * n, 1000000, $3
		FROM (SELECT floor(extract(epoch FROM now()))::bigint / 60 * 60 AS s) w, generate_series(0, 1) n
		ON CONFLICT (bucket, class, window_start) DO UPDATE SET count = excluded.count`, bucket, class, tid); err != nil {
		t.Fatal(err)
	}
}

// publicHeadroom lets the shared public bucket take many more reads than
// its limit in this minute and the next: the contract suite reads every
// item of the dataset anonymously, more than 120 public reads a minute,
// and each now counts (the RPC's wrapper). A debt of calls in the bucket's
// count is the only knob: the public bucket has no limits row.
func publicHeadroom(t *testing.T, env *pgtest.Env) {
	t.Helper()
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `INSERT INTO trovesnap.rate_counters (bucket, class, window_start, count, tenant_id)
		SELECT 'public', 'reads', w.s + 60 * n, -100000, NULL
		FROM (SELECT floor(extract(epoch FROM now()))::bigint / 60 * 60 AS s) w, generate_series(0, 1) n
		ON CONFLICT (bucket, class, window_start) DO UPDATE SET count = excluded.count`); err != nil {
		t.Fatal(err)
	}
}

// rateCounts is what bucket has counted, by class, over every window.
func rateCounts(t *testing.T, env *pgtest.Env, bucket string) map[string]int {
	t.Helper()
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, _ := conn.Query(ctx, "SELECT class, sum(count)::integer FROM trovesnap.rate_counters WHERE bucket = $1 GROUP BY class", bucket)
	out := map[string]int{}
	type row struct {
		Class string
		N     int
	}
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[row])
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range got {
		out[r.Class] = r.N
	}
	return out
}

// rateLimited asserts an RPC's answer is trovesnap:rate_limited of class
// with the retry delay in its details.
func rateLimited(t *testing.T, what string, status int, body map[string]any, class string) {
	t.Helper()
	if status != http.StatusBadRequest || body["code"] != "P0001" || body["message"] != "trovesnap:rate_limited" {
		t.Fatalf("%s: HTTP %d %v, want trovesnap:rate_limited", what, status, body)
	}
	var d struct {
		Class string `json:"class"`
		Retry int    `json:"retry_after_seconds"`
	}
	if s, _ := body["details"].(string); json.Unmarshal([]byte(s), &d) != nil || d.Class != class || d.Retry < 1 || d.Retry > 60 {
		t.Fatalf("%s: details %v, want class %s and a retry delay of 1–60 s", what, body["details"], class)
	}
}

// Issue 15: a caller holding a client token called the RPCs itself and
// never counted a call, so for it there were no rate limits. Now every RPC
// that serves a tool counts itself: over the limit a direct write, a
// direct read and an anonymous public read are rate_limited with the retry
// delay, and nothing changes. The doctor's RPCs are not counted.
func TestRPCRates_DirectCallsOverTheLimitAreRefused(t *testing.T) {
	env := seeded(t)
	fillWindow(t, env, ownerClient, fixtures.DemoTenantID, domain.LimitCandidateWrites)
	fillWindow(t, env, ownerClient, fixtures.DemoTenantID, domain.LimitReads)
	fillWindow(t, env, ownerClient, fixtures.DemoTenantID, domain.LimitProposals)
	fillWindow(t, env, "public", "", domain.LimitReads)
	before := counts(t, env)
	status, body := rpcClient(t, env, contract.CredOwner, "mcp_create_inventory_candidate", map[string]any{
		"p_tool": "trove_create_candidate", "p_tool_major": 1, "p_key": "rl-1", "p_fingerprint": "sha256:rl-1",
		"p_event": map[string]any{"id": "event_rl_1"}, "p_started_at": nil,
		"p_input": map[string]any{"sale_id": fixtures.PublishedSaleID, "title": "Lamp"}})
	rateLimited(t, "a direct candidate write", status, body, domain.LimitCandidateWrites)
	status, body = rpcClient(t, env, contract.CredOwner, "mcp_list_sales", map[string]any{})
	rateLimited(t, "a direct read", status, body, domain.LimitReads)
	status, body = rpc(t, env, "mcp_public_sale", map[string]any{"p_sale_id": fixtures.PublishedSaleID})
	rateLimited(t, "an anonymous public read", status, body, domain.LimitReads)
	sameCounts(t, env, before, "a call over its limit")
	if v, err := newBackend(t, env).RemoteSchemaVersion(ctx); err != nil || v == 0 {
		t.Fatalf("mcp_schema_version with every bucket full = %d, %v", v, err)
	}
	// The same token's other classes are its own: a controlled action's
	// class is not full, and the proposal class is.
	if got := rateCounts(t, env, ownerClient); got[domain.LimitControlledActions] != 0 {
		t.Fatalf("counts = %v", got)
	}
}

// Through the gate, the RPC's refusal is the rate_limited envelope with
// retry_after_seconds, the call has exactly one event, nothing was written
// and the refusal is not charged again to the rejected budget.
func TestRPCRates_GateAnswersTheRPCsRefusal(t *testing.T) {
	env := seeded(t)
	fillWindow(t, env, ownerClient, fixtures.DemoTenantID, domain.LimitCandidateWrites)
	before := counts(t, env)
	lg := newLiveGate(t, env)
	cs := connect(t, lg.g, contract.CredOwner)
	e := call(t, cs, "trove_create_candidate", map[string]any{"sale_id": fixtures.PublishedSaleID, "title": "Lamp", "idempotency_key": "rl-gate-1"})
	errs, _ := e["errors"].([]any)
	if e["status"] != "blocked" || len(errs) != 1 {
		t.Fatalf("envelope = %v", e)
	}
	first := errs[0].(map[string]any)
	if first["code"] != "rate_limited" || first["retry_after_seconds"] == nil || first["retry_after_seconds"].(float64) < 1 {
		t.Fatalf("error = %v, want rate_limited with retry_after_seconds", first)
	}
	sameCounts(t, env, before, "a gate call over its limit, before its event is flushed")
	eventsBefore := rateCounts(t, env, ownerClient)["events"]
	if _, err := lg.st.FlushOutbox(ctx, lg.b, 100); err != nil {
		t.Fatal(err)
	}
	id := e["audit"].(map[string]any)["plugin_event_id"].(string)
	if n := countEvents(t, env, id); n != 1 {
		t.Fatalf("events of the call = %d, want 1", n)
	}
	if ev := eventBody(t, env, id); ev["outcome"] == "success" {
		t.Fatalf("event = %v", ev)
	}
	after := counts(t, env)
	after["plugin_events"]--
	// The event's own count in the client's events bucket (a new row when
	// the bucket had none this minute), and nothing else.
	if got := rateCounts(t, env, ownerClient)["events"]; got != eventsBefore+1 {
		t.Fatalf("events bucket %d → %d, want one more", eventsBefore, got)
	}
	if eventsBefore == 0 {
		after["rate_counters"]--
	}
	if !maps.Equal(before, after) {
		t.Fatalf("a gate call over its limit changed more than its one event: %v → %v", before, after)
	}
	if got := rateCounts(t, env, ownerClient); got[domain.LimitRejected] != 0 {
		t.Fatalf("counts = %v: the RPC's refusal was charged again", got)
	}
}

// A normal flow counts each call exactly once: the gate no longer counts
// what the RPC counts (N calls, N counts — not 2N), an anonymous public
// read counts once in the public bucket, and a refusal by the RPC (whose
// count rolls back with it) is charged once to the rejected budget.
func TestRPCRates_EachCallCountsOnce(t *testing.T) {
	env := seeded(t)
	lg := newLiveGate(t, env)
	cs := connect(t, lg.g, contract.CredOwner)
	for i := 0; i < 3; i++ {
		if e := call(t, cs, "trove_list_sales", map[string]any{}); e["status"] != "succeeded" {
			t.Fatalf("list = %v", e)
		}
	}
	for _, key := range []string{"once-key-1", "once-key-2"} {
		if e := call(t, cs, "trove_create_candidate", map[string]any{"sale_id": fixtures.PublishedSaleID, "title": "Lamp", "idempotency_key": key}); e["status"] != "succeeded" {
			t.Fatalf("create = %v", e)
		}
	}
	if e := call(t, cs, "trove_get_sale", map[string]any{"sale_id": "sale_999999"}); e["status"] != "failed" {
		t.Fatalf("unknown sale = %v", e)
	}
	if e := call(t, connect(t, lg.g, ""), "trove_get_public_sale", map[string]any{"sale_id": fixtures.PublishedSaleID}); e["status"] == "failed" {
		t.Fatalf("public sale = %v", e)
	}
	want := map[string]int{domain.LimitReads: 3, domain.LimitCandidateWrites: 2, domain.LimitRejected: 1}
	if got := rateCounts(t, env, ownerClient); !maps.Equal(got, want) {
		t.Fatalf("the client's counts = %v, want %v", got, want)
	}
	if got := rateCounts(t, env, "public"); !maps.Equal(got, map[string]int{domain.LimitReads: 1}) {
		t.Fatalf("the public bucket = %v, want one read", got)
	}
	// A direct call counts itself too.
	if status, body := rpcClient(t, env, contract.CredOwner, "mcp_list_sales", map[string]any{}); status != http.StatusOK {
		t.Fatalf("direct list = %d %v", status, body)
	}
	if got := rateCounts(t, env, ownerClient)[domain.LimitReads]; got != 4 {
		t.Fatalf("reads after a direct call = %d, want 4", got)
	}
}

// The SQL map RPC → class (trovesnap.rpc_rate_class, behind every
// wrapper) is the Go one, and every public MCP RPC of the database is
// classified: a new RPC fails here until it is given its class or none.
func TestRPCRates_SQLClassesAreGos(t *testing.T) {
	env := pgtest.Need(t)
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, _ := conn.Query(ctx, `SELECT DISTINCT p.proname::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
		WHERE n.nspname = 'public' AND p.proname LIKE 'mcp\_%' AND p.proowner = 'trovesnap_owner'::regrole AND p.proname <> 'mcp_seed_fixtures'`)
	fns, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(fns) < 30 {
		t.Fatalf("public MCP RPCs = %v, %v", fns, err)
	}
	for _, fn := range fns {
		if _, ok := live.RPCRateClass[fn]; !ok {
			t.Errorf("%s has no entry in live's rpcRateClass", fn)
		}
	}
	for fn, want := range live.RPCRateClass {
		if !slices.Contains(fns, fn) {
			t.Errorf("rpcRateClass names %s, which the database does not have", fn)
		}
		var got *string
		if err := conn.QueryRow(ctx, "SELECT trovesnap.rpc_rate_class($1)", fn).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if (got == nil) != (want == "") || (got != nil && *got != want) {
			t.Errorf("%s: SQL class %v, Go %q", fn, got, want)
		}
	}
}

// The class an RPC counts in is its tool's: the limit class of the tool's
// tier. Every tool is counted once, by its RPC or (when it has none that
// counts) by the gate.
func TestRPCRates_ClassesAreTheToolsTiers(t *testing.T) {
	gateCounted := []string{"trove_map_csv_columns", "trove_preview_csv_import"}
	b := &live.Backend{}
	for _, tool := range catalog.All() {
		if !tool.HasHandler() {
			continue
		}
		class := tool.Tier.LimitClass()
		fn := live.RPCOfTool(tool.Name, class)
		switch {
		case fn == "" && !slices.Contains(gateCounted, tool.Name):
			t.Errorf("%s has no RPC in live's toolRPC", tool.Name)
		case fn != "" && live.RPCRateClass[fn] != class:
			t.Errorf("%s (%s) is made by %s, which counts in %q", tool.Name, class, fn, live.RPCRateClass[fn])
		case b.CountsRateInCall(tool.Name, class) == (fn == ""):
			t.Errorf("%s: CountsRateInCall = %v with RPC %q", tool.Name, !(fn == ""), fn)
		}
	}
}
