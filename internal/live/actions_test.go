package live_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/approval"
	"github.com/triunalabs/trovesnap/internal/catalog"
	"github.com/triunalabs/trovesnap/internal/contract"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/live/pgtest"
)

// wantOfferedLive fails for every catalog tool of the tiers that runs in
// live mode yet is missing from offered (a tools/list answer to the owner,
// who may use every tool).
func wantOfferedLive(t *testing.T, offered []string, tiers ...catalog.Tier) {
	t.Helper()
	n := 0
	for _, tool := range catalog.All() {
		if !slices.Contains(tiers, tool.Tier) || !slices.Contains(tool.Modes, domain.ModeLive) {
			continue
		}
		n++
		if !slices.Contains(offered, tool.Name) {
			t.Errorf("live mode does not offer %s", tool.Name)
		}
	}
	if n == 0 {
		t.Errorf("the catalog has no live tool of %v", tiers)
	}
}

// The SQL lifecycle (migration 10's can_transition) is the domain's, for
// every pair of statuses, unknown ones included.
func TestMigrations_LifecycleMatchesTheDomain(t *testing.T) {
	env := pgtest.Need(t)
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	statuses := append(domain.ItemStatuses(), "", "paid")
	for _, from := range statuses {
		for _, to := range statuses {
			var got bool
			if err := conn.QueryRow(ctx, "SELECT trovesnap.can_transition($1, $2)", from, to).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != domain.CanTransition(from, to) {
				t.Errorf("%q → %q: SQL %v, domain %v", from, to, got, domain.CanTransition(from, to))
			}
		}
	}
}

// Migration 10's actions through the live gate and a real MCP client: the
// tools are offered, a status transition runs once a human approves it, and
// a buyer notification and an export delivery are queued — the tools
// answer "queued", never "sent" — each as ONE outbound request whose
// payload is the approved plan (no buyer identity) or the staged snapshot
// (public fields only). The request's content never
// changes and it is never deleted; a worker may record one outcome.
func TestFlow_RemainingActionsLive(t *testing.T) {
	env := seeded(t)
	lg := newLiveGate(t, env)
	cs := connect(t, lg.g, contract.CredOwner)
	seller := approval.Service{Admin: sellerAs(t, env, fixtures.DemoUserID), Clock: domain.SystemClock{}, IDs: domain.RandomIDs{}}
	data := func(name string, e map[string]any) map[string]any {
		t.Helper()
		if e["mode"] != "live" || (e["status"] != "succeeded" && e["status"] != "succeeded_with_warnings" && e["status"] != "proposed") {
			t.Fatalf("%s = %s", name, mustJSON(e))
		}
		return e["data"].(map[string]any)
	}
	approve := func(prop map[string]any) {
		t.Helper()
		if _, err := seller.Approve(ctx, approval.ApproveRequest{TenantID: fixtures.DemoTenantID, ProposalID: prop["proposal_id"].(string),
			ExpectedHash: prop["proposal_hash"].(string), ActorID: fixtures.DemoUserID}); err != nil {
			t.Fatalf("approve %s: %v", prop["proposal_id"], err)
		}
	}

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	wantOfferedLive(t, names, catalog.TierActionProposal, catalog.TierControlledAction)

	// A status transition, blocked until the seller approves it.
	prop := data("trove_propose_status_transition", call(t, cs, "trove_propose_status_transition", map[string]any{
		"item_id": "item_1001", "expected_version": 3, "to_status": "on_hold", "effective_at": "2026-06-20T15:04:05Z",
		"idempotency_key": "act-status-1"}))
	before := counts(t, env)
	blocked := call(t, cs, "trove_update_item_status", map[string]any{"proposal_id": prop["proposal_id"], "idempotency_key": "act-status-x0"})
	if blocked["status"] != "approval_required" {
		t.Fatalf("execution without a grant = %s", mustJSON(blocked))
	}
	flowUnchanged(t, env, before, "a blocked status change")
	approve(prop)
	done := data("trove_update_item_status", call(t, cs, "trove_update_item_status", map[string]any{
		"proposal_id": prop["proposal_id"], "idempotency_key": "act-status-x1"}))
	res := done["results"].([]any)
	if done["executed"] != true || done["simulated"] != false || done["domain_function"] != "append_inventory_status_event" ||
		len(res) != 1 || res[0].(map[string]any)["outcome"] != "applied" || res[0].(map[string]any)["new_version"] != float64(4) {
		t.Fatalf("status change = %s", mustJSON(done))
	}
	item := data("trove_get_item", call(t, cs, "trove_get_item", map[string]any{"item_id": "item_1001"}))
	if it := item["item"].(map[string]any); it["status"] != domain.ItemOnHold {
		t.Fatalf("item after the status change = %s", mustJSON(item))
	}

	// A buyer notification: queued for a worker, not sent.
	note := data("trove_propose_buyer_notification", call(t, cs, "trove_propose_buyer_notification", map[string]any{
		"sale_id": fixtures.PublishedSaleID, "expected_version": 4, "audience": "followed_sale", "channels": []string{"email"},
		"message_template": "{{sale_title}} opens Saturday", "idempotency_key": "act-note-1"}))
	approve(note)
	before = counts(t, env)
	sent := data("trove_notify_matched_buyers", call(t, cs, "trove_notify_matched_buyers", map[string]any{
		"proposal_id": note["proposal_id"], "idempotency_key": "act-note-x1"}))
	res = sent["results"].([]any)
	if sent["executed"] != true || sent["simulated"] != false || len(res) != 1 || res[0].(map[string]any)["outcome"] != "queued" ||
		res[0].(map[string]any)["target_id"] != fixtures.PublishedSaleID {
		t.Fatalf("notification = %s", mustJSON(sent))
	}
	if after := counts(t, env); after["outbound_requests"] != before["outbound_requests"]+1 || after["estate_sales"] != before["estate_sales"] {
		t.Fatalf("outbound requests %d → %d", before["outbound_requests"], after["outbound_requests"])
	}

	// An export delivery: staged, approved, queued with its snapshot.
	staged := data("trove_stage_export", call(t, cs, "trove_stage_export", map[string]any{
		"channel": "csv_file", "item_ids": []string{"item_1002"}, "idempotency_key": "act-export-1"}))
	exportID := staged["export_id"].(string)
	dp := data("trove_propose_export_delivery", call(t, cs, "trove_propose_export_delivery", map[string]any{
		"export_id": exportID, "idempotency_key": "act-export-p1"}))
	approve(dp)
	delivered := data("trove_deliver_export", call(t, cs, "trove_deliver_export", map[string]any{
		"proposal_id": dp["proposal_id"], "idempotency_key": "act-export-x1"}))
	res = delivered["results"].([]any)
	if delivered["executed"] != true || delivered["simulated"] != false || delivered["domain_function"] != "deliver_export" || len(res) != 2 ||
		res[0].(map[string]any)["outcome"] != "queued" || res[1].(map[string]any)["outcome"] != "queued" ||
		res[1].(map[string]any)["target_id"] != "item_1002" {
		t.Fatalf("delivery = %s", mustJSON(delivered))
	}

	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var exportPayload string
	if err := conn.QueryRow(ctx, `SELECT payload::text FROM trovesnap.outbound_requests
		WHERE kind = 'export_delivery' AND target_id = $1 AND status = 'queued'`, exportID).Scan(&exportPayload); err != nil {
		t.Fatalf("the export's outbound request: %v", err)
	}
	if !strings.Contains(exportPayload, `"channel": "csv_file"`) || !strings.Contains(exportPayload, `"item_id": "item_1002"`) ||
		strings.Contains(exportPayload, "internal_price_guidance") || strings.Contains(exportPayload, "staff_notes") {
		t.Fatalf("export request payload = %s", exportPayload)
	}
	var id, kind, status, target, payload string
	if err := conn.QueryRow(ctx, `SELECT id, kind, status, target_id, payload::text FROM trovesnap.outbound_requests
		WHERE proposal_id = $1`, note["proposal_id"]).Scan(&id, &kind, &status, &target, &payload); err != nil {
		t.Fatal(err)
	}
	if kind != "buyer_notification" || status != "queued" || target != fixtures.PublishedSaleID ||
		!strings.Contains(payload, "opens Saturday") || !strings.Contains(payload, `"audience_size"`) || strings.Contains(payload, "@") {
		t.Fatalf("outbound request = %s %s %s %s %s", id, kind, status, target, payload)
	}
	// As its owner, in system context (what a worker's RPC would run as).
	owner := func(stmt string, args ...any) error {
		return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "SET LOCAL ROLE trovesnap_owner"); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, "SELECT set_config('trovesnap.system', 'on', true)"); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, stmt, args...)
			return err
		})
	}
	for _, stmt := range []string{
		"UPDATE trovesnap.outbound_requests SET payload = '{}' WHERE id = $1",
		"UPDATE trovesnap.outbound_requests SET target_id = 'sale_222' WHERE id = $1",
		"DELETE FROM trovesnap.outbound_requests WHERE id = $1",
	} {
		if err := owner(stmt, id); err == nil || !strings.Contains(err.Error(), "trovesnap:append_only:outbound_requests") {
			t.Errorf("%s: %v; want it refused", stmt, err)
		}
	}
	if err := owner("UPDATE trovesnap.outbound_requests SET status = 'delivered', status_detail = 'worker 1', updated_at = now() WHERE id = $1", id); err != nil {
		t.Fatalf("recording the worker's outcome: %v", err)
	}
	for _, next := range []string{"queued", "failed"} {
		if err := owner("UPDATE trovesnap.outbound_requests SET status = $2 WHERE id = $1", id, next); err == nil ||
			!strings.Contains(err.Error(), "trovesnap:transition_invalid") {
			t.Errorf("delivered → %s: %v; want it refused", next, err)
		}
	}
	// Without the tenant's context (or system), the owner sees none of it.
	var visible int
	if err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL ROLE trovesnap_owner"); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "SELECT set_config('trovesnap.tenant_id', $1, true)", fixtures.OtherTenantID); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT (SELECT count(*) FROM trovesnap.outbound_requests) + (SELECT count(*) FROM trovesnap.item_change_history)
			+ (SELECT count(*) FROM trovesnap.item_dispositions)`).Scan(&visible)
	}); err != nil {
		t.Fatal(err)
	}
	if visible != 0 {
		t.Fatalf("another tenant's context sees %d rows of migration 10's tables", visible)
	}
}
