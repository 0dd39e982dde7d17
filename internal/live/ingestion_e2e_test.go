package live_test

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/catalog"
	"github.com/triunalabs/trovesnap/internal/contract"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/live"
	"github.com/triunalabs/trovesnap/internal/live/pgtest"
)

// ingCounts is the row count of every table but the bookkeeping ones.
func ingCounts(t *testing.T, env *pgtest.Env) map[string]int64 {
	t.Helper()
	c, err := env.Cluster.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"plugin_events", "rate_counters"} {
		delete(c, k)
	}
	return c
}

func ingDelta(before, after map[string]int64) map[string]int64 {
	d := map[string]int64{}
	for k, n := range after {
		if n != before[k] {
			d[k] = n - before[k]
		}
	}
	return d
}

func ingMeta(p domain.Principal, tool, key, eventID string) domain.WriteMeta {
	return domain.WriteMeta{
		Idem: domain.IdempotencyKey{TenantID: p.TenantID, ClientID: p.Client.ID, Tool: tool, ToolMajor: 1, Key: key,
			Fingerprint: "sha256:" + key},
		Event: domain.Event{ID: eventID, TenantID: p.TenantID, CorrelationID: "corr_" + key, Mode: domain.ModeLive, Client: p.Client,
			Tool: domain.ToolRef{Name: tool, Version: "1.0.0"}, Actor: domain.ActorRef{ID: p.ActorID, Type: p.ActorType},
			Action: "mcp_tool_called", OccurredAt: time.Now()},
		Started: time.Now(),
	}
}

// The ingestion tools through a real MCP client in live mode, over the live
// Backend and PostgreSQL: a CSV previewed (nothing written), refused while
// a row is invalid (nothing written), applied with the invalid row skipped,
// replayed; listing copy drafted and stored; an export staged; a status
// reported. Each write's event commits with it; no item changes. Every
// ingestion tool is offered, the media tools included (media_test.go).
func TestIngestion_ToolsLive(t *testing.T) {
	env := seeded(t)
	lg := newLiveGate(t, env)
	cs := connect(t, lg.g, contract.CredOwner)
	ok := func(tool string, e map[string]any) map[string]any {
		t.Helper()
		if e["mode"] != "live" || (e["status"] != "succeeded" && e["status"] != "succeeded_with_warnings") {
			t.Fatalf("%s = %v", tool, e)
		}
		return e["data"].(map[string]any)
	}
	tools, err := cs.ListTools(ctx, &mcp.ListToolsParams{})
	if err != nil {
		t.Fatal(err)
	}
	var offered []string
	for _, tl := range tools.Tools {
		offered = append(offered, tl.Name)
	}
	wantOfferedLive(t, offered, catalog.TierCandidateWrite)

	item, err := lg.b.GetItem(ctx, resolveAs(t, lg.b, contract.CredOwner), "item_1172", domain.ItemIncludes{})
	if err != nil {
		t.Fatal(err)
	}
	before := ingCounts(t, env)
	csv := "title,quantity,price,item_id,reported_status\n" +
		"Brass lamp,2,45,,\n" +
		",,,item_1172,sold\n" +
		",,,item_1290,sold\n"
	prev := ok("trove_preview_csv_import", call(t, cs, "trove_preview_csv_import", map[string]any{"sale_id": fixtures.LiveSaleID, "csv_text": csv}))
	if prev["rows_total"] != 3.0 || prev["rows_valid"] != 2.0 || prev["would_create_candidates"] != 1.0 ||
		prev["would_create_status_update_candidates"] != 1.0 || prev["persisted"] != false {
		t.Fatalf("preview = %v", prev)
	}
	if !strings.Contains(mustJSON(prev["issues"]), "unknown_item") {
		t.Fatalf("preview issues = %v: another tenant's item is unknown", prev["issues"])
	}
	apply := map[string]any{"sale_id": fixtures.LiveSaleID, "csv_text": csv, "idempotency_key": "live-apply-0001",
		"source_label": "estate spreadsheet"}
	strict := call(t, cs, "trove_apply_csv_import", apply)
	if strict["status"] != "failed" || !strings.Contains(mustJSON(strict["errors"]), "invalid_input") {
		t.Fatalf("strict apply with an invalid row = %v", strict)
	}
	if d := ingDelta(before, ingCounts(t, env)); len(d) != 0 {
		t.Fatalf("a preview and a refused apply wrote %v", d)
	}
	apply["skip_invalid_rows"] = true
	res := ok("trove_apply_csv_import", call(t, cs, "trove_apply_csv_import", apply))
	if res["candidate_count"] != 1.0 || res["status_update_candidate_count"] != 1.0 || res["rejected_row_count"] != 1.0 ||
		res["status"] != domain.ImportRunWithRejects {
		t.Fatalf("apply = %v", res)
	}
	if again := ok("trove_apply_csv_import", call(t, cs, "trove_apply_csv_import", apply)); again["import_run_id"] != res["import_run_id"] {
		t.Fatalf("replay = %v, want run %v", again, res["import_run_id"])
	}
	cand := res["candidate_ids"].([]any)[0].(string)
	dr := ok("trove_draft_listing_copy", call(t, cs, "trove_draft_listing_copy", map[string]any{"candidate_id": cand, "persist": true,
		"idempotency_key": "live-draft-0001"}))
	if dr["persisted"] != true || dr["draft_id"] == nil || dr["revision"] != 1.0 || dr["published"] != false || dr["title"] != "Brass lamp (set of 2)" {
		t.Fatalf("draft = %v", dr)
	}
	ex := ok("trove_stage_export", call(t, cs, "trove_stage_export", map[string]any{"channel": "csv_file",
		"item_ids": []string{"item_1172", fixtures.DemoItemID}, "idempotency_key": "live-export-0001"}))
	if ex["status"] != "staged" || ex["delivered"] != false || len(ex["items"].([]any)) != 2 || ex["export_id"] == nil {
		t.Fatalf("export = %v", ex)
	}
	sr := ok("trove_create_status_update_candidate", call(t, cs, "trove_create_status_update_candidate", map[string]any{
		"item_id": "item_1172", "reported_status": "sold", "effective_at": "2026-06-20T15:04:05Z", "source": "staff_report",
		"idempotency_key": "live-status-0001"}))
	if sr["item_status_changed"] != false || sr["observed_item_status"] != item.Status || sr["kind"] != "status_update" {
		t.Fatalf("status report = %v", sr)
	}
	d := ingDelta(before, ingCounts(t, env))
	for table, n := range map[string]int64{"source_descriptors": 1, "import_runs": 2, "import_run_details": 1, "source_records": 4,
		"inventory_candidates": 3, "candidate_item_changes": 2, "draft_revisions": 1, "export_drafts": 1, "export_draft_items": 2,
		"idempotency_keys": 4} {
		if d[table] != n {
			t.Errorf("%s grew by %d, want %d (all: %v)", table, d[table], n, d)
		}
		delete(d, table)
	}
	if len(d) != 0 {
		t.Errorf("other tables changed: %v", d)
	}
	after, err := lg.b.GetItem(ctx, resolveAs(t, lg.b, contract.CredOwner), "item_1172", domain.ItemIncludes{})
	if err != nil || after.Status != item.Status || after.Version != item.Version || !after.UpdatedAt.Equal(item.UpdatedAt) {
		t.Fatalf("the reported item is now %+v, %v", after, err)
	}
	// Each write's event is in Postgres already, committed with the write.
	events, err := env.Events(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var written []string
	for _, e := range events {
		if e.Outcome == domain.OutcomeSuccess {
			written = append(written, e.Tool.Name)
		}
	}
	if want := []string{"trove_apply_csv_import", "trove_draft_listing_copy", "trove_stage_export", "trove_create_status_update_candidate"}; !slices.Equal(written, want) {
		t.Fatalf("successful events in Postgres = %v, want %v", written, want)
	}

	// What was stored is immutable in the database itself (triggers fire
	// for every role): a draft revision, an export's snapshot. Only an
	// export's status may move, by the later, approved delivery step.
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, stmt := range []string{
		"UPDATE trovesnap.draft_revisions SET title = 'edited'",
		"UPDATE trovesnap.export_draft_items SET valid = NOT valid",
		"UPDATE trovesnap.export_drafts SET channel = 'etsy'",
	} {
		if _, err := conn.Exec(ctx, stmt); err == nil || !strings.Contains(err.Error(), "trovesnap:immutable:") {
			t.Errorf("%s: %v, want it refused as immutable", stmt, err)
		}
	}
	if _, err := conn.Exec(ctx, "UPDATE trovesnap.export_drafts SET status = 'delivery_proposed'"); err != nil {
		t.Errorf("an export's status may move: %v", err)
	}
}

// The ingestion tables are tenant-owned like every other: row level
// security enabled and forced (so the SECURITY DEFINER RPCs are subject to
// it too), the tenant of the request context, and for a signed-in seller
// the tenants it is a member of.
func TestIngestion_TablesUnderRowLevelSecurity(t *testing.T) {
	env := pgtest.Need(t)
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, table := range []string{"import_run_details", "candidate_item_changes", "draft_revisions", "export_drafts", "export_draft_items"} {
		var enabled, forced bool
		var policies []string
		err := conn.QueryRow(ctx, `SELECT c.relrowsecurity, c.relforcerowsecurity,
			coalesce((SELECT array_agg(p.polname::text ORDER BY p.polname) FROM pg_policy p WHERE p.polrelid = c.oid), '{}')
			FROM pg_class c WHERE c.oid = ('trovesnap.' || $1)::regclass`, table).Scan(&enabled, &forced, &policies)
		if err != nil || !enabled || !forced || !slices.Equal(policies, []string{"seller_member_read", "tenant_context"}) {
			t.Errorf("%s: rls %v forced %v policies %v, %v", table, enabled, forced, policies, err)
		}
	}
	// Another tenant's context sees none of a tenant's ingestion rows.
	env = seeded(t)
	b := newBackend(t, env)
	p := resolveAs(t, b, contract.CredOwner)
	if _, _, err := b.StageExport(ctx, p, ingMeta(p, "trove_stage_export", "rls-0001", "event_x1"),
		domain.NewExport{Channel: domain.ChannelCSVFile, ItemIDs: []string{"item_1172"}}); err != nil {
		t.Fatal(err)
	}
	var mine, theirs int
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL ROLE trovesnap_owner"); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "SELECT set_config('trovesnap.tenant_id', $1, true)", fixtures.OtherTenantID); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, "SELECT count(*) FROM trovesnap.export_drafts").Scan(&theirs); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "SELECT set_config('trovesnap.tenant_id', $1, true)", fixtures.DemoTenantID); err != nil {
			return err
		}
		return tx.QueryRow(ctx, "SELECT count(*) FROM trovesnap.export_drafts").Scan(&mine)
	})
	if err != nil || mine != 1 || theirs != 0 {
		t.Fatalf("export drafts seen by their tenant %d, by another %d, %v", mine, theirs, err)
	}
}

func resolveAs(t *testing.T, b *live.Backend, cred string) domain.Principal {
	t.Helper()
	p, err := b.ResolvePrincipal(ctx, cred)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The database enforces the tool group and the permission itself: a client
// without candidate_write (the pricer's) is refused by every ingestion RPC,
// whatever the server in front of it decided, and nothing is written.
func TestIngestion_DatabaseRefusesAClientWithoutTheToolGroup(t *testing.T) {
	env := seeded(t)
	b := newBackend(t, env)
	p := resolveAs(t, b, contract.CredPricer)
	before := ingCounts(t, env)
	_, err := b.ImportTargets(ctx, p, fixtures.LiveSaleID, nil)
	errs := []error{err}
	_, _, err = b.RunImport(ctx, p, ingMeta(p, "trove_run_manual_import", "perm-0001", "event_p1"), domain.NewImport{
		SaleID: fixtures.LiveSaleID, Kind: domain.ImportManual, Rows: []domain.ImportRow{{Row: 1, Kind: domain.CandidateNewItem, Title: "Lamp"}}})
	errs = append(errs, err)
	_, _, err = b.CreateStatusReport(ctx, p, ingMeta(p, "trove_create_status_update_candidate", "perm-0002", "event_p2"), domain.NewStatusReport{
		ItemID: "item_1172", ReportedStatus: domain.ItemSold, EffectiveAt: time.Now(), Source: domain.ReportSellerConfirmed})
	errs = append(errs, err)
	_, _, err = b.DraftListingCopy(ctx, p, ingMeta(p, "trove_draft_listing_copy", "perm-0003", "event_p3"), domain.DraftRequest{ItemID: "item_1172", Persist: true})
	errs = append(errs, err)
	_, _, err = b.StageExport(ctx, p, ingMeta(p, "trove_stage_export", "perm-0004", "event_p4"), domain.NewExport{Channel: domain.ChannelEbay, ItemIDs: []string{"item_1172"}})
	errs = append(errs, err)
	for i, err := range errs {
		if !errors.Is(err, domain.ErrPermissionDenied) {
			t.Errorf("call %d: %v, want ErrPermissionDenied", i, err)
		}
	}
	if d := ingDelta(before, ingCounts(t, env)); len(d) != 0 {
		t.Fatalf("refused calls wrote %v", d)
	}
}

// hookTransport runs hook before each request to one RPC.
type hookTransport struct {
	fn   string
	hook func(n int)
	mu   sync.Mutex
	n    int
}

func (h *hookTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.URL.Path, "/rpc/"+h.fn) {
		h.mu.Lock()
		h.n++
		n := h.n
		h.mu.Unlock()
		h.hook(n)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func (h *hookTransport) calls() int { h.mu.Lock(); defer h.mu.Unlock(); return h.n }

func superExec(t *testing.T, env *pgtest.Env, sql string, args ...any) {
	t.Helper()
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Error(err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		t.Error(err)
	}
}

func superInt(t *testing.T, env *pgtest.Env, sql string, args ...any) int {
	t.Helper()
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// What a write was computed from can move between the read that prepared
// it and the write: the write refuses (stale_version, nothing written), the
// state is read again and the write goes through computed from the new
// state — exactly what the store, which reads inside its transaction,
// would have stored. A state that keeps moving fails closed.
func TestIngestion_StateMovedBetweenReadAndWrite(t *testing.T) {
	env := seeded(t)
	withHook := func(fn string, hook func(n int)) (*live.Backend, *hookTransport) {
		ht := &hookTransport{fn: fn, hook: hook}
		return newBackend(t, env, func(o *live.Options) { o.HTTPClient = &http.Client{Transport: ht} }), ht
	}
	bump := func(n int) {
		if n == 1 {
			superExec(t, env, "UPDATE trovesnap.items SET version = version + 1 WHERE id = 'item_1172'")
		}
	}
	version := superInt(t, env, "SELECT version FROM trovesnap.items WHERE id = 'item_1172'")

	// An import's status row records the item as it is at commit.
	b, ht := withHook("mcp_run_import", bump)
	p := resolveAs(t, b, contract.CredOwner)
	res, out, err := b.RunImport(ctx, p, ingMeta(p, "trove_run_manual_import", "stale-0001", "event_s1"), domain.NewImport{
		SaleID: fixtures.LiveSaleID, Kind: domain.ImportManual,
		Rows: []domain.ImportRow{{Row: 1, Kind: domain.CandidateStatusUpdate, ItemID: "item_1172", ReportedStatus: domain.ItemSold}}})
	if err != nil || out.Replayed || ht.calls() != 2 {
		t.Fatalf("import across a moved item: %+v, %v after %d writes", res, err, ht.calls())
	}
	if v := superInt(t, env, "SELECT observed_version FROM trovesnap.candidate_item_changes WHERE candidate_id = $1",
		res.StatusUpdateCandidateIDs[0]); v != version+1 {
		t.Fatalf("observed version %d, want the version at commit %d", v, version+1)
	}

	// A draft is the copy of the facts at commit.
	b, ht = withHook("mcp_draft_listing_copy", func(n int) {
		if n == 1 {
			superExec(t, env, "UPDATE trovesnap.inventory_candidates SET title = 'Renamed teak chairs', version = version + 1 WHERE id = 'candidate_772'")
		}
	})
	p = resolveAs(t, b, contract.CredOwner)
	dr, _, err := b.DraftListingCopy(ctx, p, ingMeta(p, "trove_draft_listing_copy", "stale-0002", "event_s2"),
		domain.DraftRequest{CandidateID: "candidate_772", Persist: true})
	if err != nil || !strings.HasPrefix(dr.Copy.Title, "Renamed teak chairs") || dr.SourceVersion != 2 || ht.calls() != 2 {
		t.Fatalf("draft across a renamed candidate: %+v, %v after %d writes", dr, err, ht.calls())
	}
	if v := superInt(t, env, "SELECT source_version FROM trovesnap.draft_revisions WHERE id = $1", dr.DraftID); v != 2 {
		t.Fatalf("stored draft of version %d", v)
	}

	// An export snapshots the items at commit.
	b, ht = withHook("mcp_stage_export", func(n int) {
		if n == 1 {
			superExec(t, env, "UPDATE trovesnap.items SET title = 'Renamed flatware', version = version + 1 WHERE id = 'item_1172'")
		}
	})
	p = resolveAs(t, b, contract.CredOwner)
	ex, _, err := b.StageExport(ctx, p, ingMeta(p, "trove_stage_export", "stale-0003", "event_s3"),
		domain.NewExport{Channel: domain.ChannelCSVFile, ItemIDs: []string{"item_1172"}})
	if err != nil || ex.Listings[0].Title != "Renamed flatware" || ex.Listings[0].Version != version+2 || ht.calls() != 2 {
		t.Fatalf("export across a renamed item: %+v, %v after %d writes", ex, err, ht.calls())
	}

	// A state that moves on every attempt: refused, nothing written.
	b, ht = withHook("mcp_run_import", func(int) {
		superExec(t, env, "UPDATE trovesnap.items SET version = version + 1 WHERE id = 'item_1172'")
	})
	p = resolveAs(t, b, contract.CredOwner)
	before := ingCounts(t, env)
	_, _, err = b.RunImport(ctx, p, ingMeta(p, "trove_run_manual_import", "stale-0004", "event_s4"), domain.NewImport{
		SaleID: fixtures.LiveSaleID, Kind: domain.ImportManual,
		Rows: []domain.ImportRow{{Row: 1, Kind: domain.CandidateStatusUpdate, ItemID: "item_1172", ReportedStatus: domain.ItemSold}}})
	if !errors.Is(err, domain.ErrStaleVersion) || ht.calls() != 3 {
		t.Fatalf("an ever-moving item: %v after %d writes, want ErrStaleVersion after 3", err, ht.calls())
	}
	if d := ingDelta(before, ingCounts(t, env)); len(d) != 0 {
		t.Fatalf("a stale import wrote %v", d)
	}
}

// Two servers retrying one import with one key at the same moment: the
// key's lock lets exactly one execute; the other replays its result.
func TestIngestion_OneKeyRacedFromTwoBackends(t *testing.T) {
	env := seeded(t)
	b1, b2 := newBackend(t, env), newBackend(t, env)
	p1, p2 := resolveAs(t, b1, contract.CredOwner), resolveAs(t, b2, contract.CredOwner)
	rows := make([]domain.ImportRow, 300)
	for i := range rows {
		rows[i] = domain.ImportRow{Row: i + 1, Kind: domain.CandidateNewItem, Title: "Jar", OriginalHash: "sha256:aa"}
	}
	imp := domain.NewImport{SaleID: fixtures.LiveSaleID, Kind: domain.ImportManual, Rows: rows}
	before := ingCounts(t, env)
	var (
		wg   sync.WaitGroup
		res  [2]domain.ImportCreated
		outs [2]domain.WriteOutcome
		errs [2]error
	)
	start := make(chan struct{})
	for i, pb := range []struct {
		b *live.Backend
		p domain.Principal
	}{{b1, p1}, {b2, p2}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			res[i], outs[i], errs[i] = pb.b.RunImport(ctx, pb.p, ingMeta(pb.p, "trove_run_manual_import", "race-0001", "event_r"+string(rune('1'+i))), imp)
		}()
	}
	close(start)
	wg.Wait()
	if errs[0] != nil || errs[1] != nil || res[0].ImportRunID != res[1].ImportRunID || outs[0].Replayed == outs[1].Replayed {
		t.Fatalf("raced imports = %+v %+v %v %v", outs[0], outs[1], errs[0], errs[1])
	}
	d := ingDelta(before, ingCounts(t, env))
	if d["import_runs"] != 1 || d["source_records"] != 300 || d["inventory_candidates"] != 300 || d["idempotency_keys"] != 1 {
		t.Fatalf("raced imports wrote %v", d)
	}
}
