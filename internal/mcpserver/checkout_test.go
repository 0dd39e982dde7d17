package mcpserver_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/catalog"
	"github.com/triunalabs/trovesnap/internal/domain"
)

// Sale day through a real go-sdk client acting as the checkout role
// (issue 16, part 4; §40.10): checkout proposes a hold of a published item
// but not a withdrawal; it proposes a checkout scan, which a seller's
// bounded hold policy executes without a person, recording the status
// event with source checkout_scan and the scan's row; a picked-up scan
// under the same policy waits for the seller (approval_required), moving
// nothing; nothing anywhere names a payment.
func TestCheckout_SaleDayThroughAClient(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	_, tok := e.register(fixtures.DemoTenantID, fixtures.CheckoutUserID)
	cs := connect(t, e.gate, tok)
	var pub []domain.Item
	for _, it := range fixtures.Dataset().Items {
		if it.TenantID == fixtures.DemoTenantID && it.SaleID == fixtures.PublishedSaleID && it.Status == domain.ItemPublished && len(pub) < 3 {
			pub = append(pub, it)
		}
	}
	if len(pub) < 3 {
		t.Fatal("fixtures: too few published items")
	}
	eff := fixtures.Epoch.Add(time.Hour).Format(time.RFC3339)

	hold := callOn(t, cs, "trove_propose_status_transition", map[string]any{"item_id": pub[0].ID, "expected_version": pub[0].Version,
		"to_status": "on_hold", "effective_at": eff, "idempotency_key": "co-st-0001"}, nil)
	if hold.Status != "proposed" {
		t.Fatalf("checkout's hold proposal: %s", hold.raw)
	}
	before := e.counts()
	wantCode(t, callOn(t, cs, "trove_propose_status_transition", map[string]any{"item_id": pub[0].ID, "expected_version": pub[0].Version,
		"to_status": "withdrawn", "effective_at": eff, "idempotency_key": "co-st-0002"}, nil), "blocked", "permission_denied")
	if d := changedCounts(before, e.counts()); len(d) > 0 {
		t.Fatalf("a refused checkout proposal wrote %v", d)
	}

	pol, err := e.st.CreatePolicy(ctx, domain.Policy{TenantID: fixtures.DemoTenantID, Name: "Checkout holds", CreatedBy: fixtures.DemoUserID,
		AllowedTools: []string{"trove_record_checkout_scan"}, Scope: domain.PolicyScope{EstateSaleIDs: []string{fixtures.PublishedSaleID}},
		Conditions: domain.PolicyConditions{MaxItemsPerRun: 1, PermittedFields: []string{"checkout_scan", "status"}, CheckoutScans: []string{"hold"}},
		Limits:     domain.PolicyLimits{MaxDailyActions: 50}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.SetPolicyStatus(ctx, pol.ID, domain.PolicyActive, fixtures.DemoUserID); err != nil {
		t.Fatal(err)
	}
	scan := callOn(t, cs, "trove_propose_checkout_scan", map[string]any{"item_id": pub[1].ID, "expected_version": pub[1].Version,
		"qr_code": pub[1].QRCode, "scan": "hold", "idempotency_key": "co-scan-0001"}, nil)
	if scan.Status != "proposed" {
		t.Fatalf("scan proposal: %s", scan.raw)
	}
	prop := dataAs[catalog.ProposalView](t, scan)
	done := callOn(t, cs, "trove_record_checkout_scan", map[string]any{"proposal_id": prop.ProposalID, "idempotency_key": "co-exec-0001"}, nil)
	res := dataAs[domain.ExecutionResult](t, done)
	if !strings.HasPrefix(done.Status, "succeeded") || res.Approval.Decision != "allowed_by_policy" || res.DomainFunction != "record_checkout_scan" {
		t.Fatalf("hold by policy: %s", done.raw)
	}
	if got := e.item(pub[1].ID); got.Status != domain.ItemOnHold || got.Version != pub[1].Version+1 {
		t.Errorf("held item %+v", got)
	}
	if n := e.query("SELECT count(*) FROM item_status_events WHERE item_id = ? AND to_status = 'on_hold' AND source_type = 'checkout_scan' AND proposal_id = ?", pub[1].ID, prop.ProposalID); n != 1 {
		t.Errorf("checkout_scan status events %d", n)
	}
	if n := e.query("SELECT count(*) FROM checkout_scans WHERE item_id = ? AND scan = 'hold' AND proposal_id = ? AND qr_code = ?", pub[1].ID, prop.ProposalID, pub[1].QRCode); n != 1 {
		t.Errorf("checkout_scans rows %d", n)
	}
	if r := callOn(t, cs, "trove_record_checkout_scan", map[string]any{"proposal_id": prop.ProposalID, "idempotency_key": "co-exec-0001"}, nil); !r.Audit.Replayed || string(r.Data) != string(done.Data) {
		t.Errorf("replay %s", r.raw)
	}

	pick := dataAs[catalog.ProposalView](t, callOn(t, cs, "trove_propose_checkout_scan", map[string]any{"item_id": pub[2].ID,
		"expected_version": pub[2].Version, "scan": "picked_up", "idempotency_key": "co-scan-0002"}, nil))
	before = e.counts()
	wantCode(t, callOn(t, cs, "trove_record_checkout_scan", map[string]any{"proposal_id": pick.ProposalID, "idempotency_key": "co-exec-0002"}, nil),
		"approval_required", "approval_required")
	if got := e.item(pub[2].ID); got.Status != domain.ItemPublished || got.Version != pub[2].Version {
		t.Errorf("picked-up item moved without a person: %+v", got)
	}
	if n := e.query("SELECT count(*) FROM checkout_scans WHERE item_id = ?", pub[2].ID); n != 0 {
		t.Errorf("a refused scan was recorded")
	}
	if d := changedCounts(before, e.counts()); len(d) > 0 {
		t.Errorf("a picked-up scan refused by the policy wrote %v", d)
	}
	for _, raw := range []string{hold.raw, scan.raw, done.raw} {
		if strings.Contains(raw, "payment") || strings.Contains(raw, "amount") || strings.Contains(raw, "settled") {
			t.Errorf("a sale-day answer names a payment: %s", raw)
		}
	}
}

// changedCounts names the tables whose row count moved, bookkeeping aside.
func changedCounts(before, after map[string]int64) map[string]int64 {
	d := map[string]int64{}
	for k, n := range after {
		if k == "plugin_events" || k == "rate_counters" || k == "client_activity" {
			continue
		}
		if n != before[k] {
			d[k] = n - before[k]
		}
	}
	return d
}
