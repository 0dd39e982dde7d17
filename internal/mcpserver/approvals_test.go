package mcpserver_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/approval"
	"github.com/triunalabs/trovesnap/internal/catalog"
	"github.com/triunalabs/trovesnap/internal/domain"
)

// service is the human approval surface, as `trovesnap approve` calls it.
func (e *env) service() *approval.Service {
	return &approval.Service{Admin: e.st, Clock: e.clock, IDs: domain.RandomIDs{}}
}

// approve issues a human grant as the demo seller.
func (e *env) approve(proposalID string) domain.Grant {
	e.t.Helper()
	g, err := e.service().Approve(context.Background(), approval.ApproveRequest{TenantID: fixtures.DemoTenantID, ProposalID: proposalID, ActorID: fixtures.DemoUserID})
	if err != nil {
		e.t.Fatalf("approve %s: %v", proposalID, err)
	}
	return g
}

func (e *env) propose(tool string, args map[string]any) catalog.ProposalView {
	e.t.Helper()
	env := e.call(tool, args)
	if env.Status != "proposed" {
		e.t.Fatalf("%s: %s", tool, env.raw)
	}
	return dataAs[catalog.ProposalView](e.t, env)
}

func (e *env) item(id string) domain.Item {
	e.t.Helper()
	var it domain.Item
	db, err := sql.Open("sqlite", "file:"+e.path+"?mode=ro")
	if err != nil {
		e.t.Fatal(err)
	}
	defer db.Close()
	var price sql.NullInt64
	if err := db.QueryRow("SELECT id, status, version, qr_code, price_cents FROM items WHERE id = ?", id).Scan(&it.ID, &it.Status, &it.Version, &it.QRCode, &price); err != nil {
		e.t.Fatalf("item %s: %v", id, err)
	}
	if price.Valid {
		it.PriceCents = &price.Int64
	}
	return it
}

func (e *env) query(q string, args ...any) int {
	e.t.Helper()
	db, err := sql.Open("sqlite", "file:"+e.path+"?mode=ro")
	if err != nil {
		e.t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(q, args...).Scan(&n); err != nil {
		e.t.Fatalf("%s: %v", q, err)
	}
	return n
}

// a ready item of the published sale, with a price and an approved photo.
func readyItem(t *testing.T) domain.Item {
	for _, it := range fixtures.Dataset().Items {
		if it.TenantID == fixtures.DemoTenantID && it.Status == domain.ItemReady && it.PriceCents != nil && it.Category != "" &&
			slices.ContainsFunc(it.Photos, func(p domain.Photo) bool { return p.Published }) {
			return it
		}
	}
	t.Fatal("no ready item in fixtures")
	return domain.Item{}
}

func itemWithStatus(t *testing.T, status string, noQR bool) domain.Item {
	for _, it := range fixtures.Dataset().Items {
		if it.TenantID == fixtures.DemoTenantID && it.Status == status && (!noQR || it.QRCode == "") {
			return it
		}
	}
	t.Fatalf("no %s item in fixtures", status)
	return domain.Item{}
}

// §40.8: proposal → seller approval → execution calls
// promote_inventory_candidate; the item has provenance; events join
// proposal, approval and execution by correlation id; a replay returns the
// original result.
func TestPromotion_ProposeApproveExecuteWithProvenance(t *testing.T) {
	e := newEnv(t)
	prop := e.propose("trove_propose_candidate_promotion", map[string]any{
		"candidate_id": fixtures.DemoCandidateID, "expected_version": 3, "idempotency_key": "promo-prop-0001"})
	if prop.Tool.Name != "trove_execute_candidate_promotion" || prop.Impact.CanonicalItemsCreated != 1 || !strings.HasPrefix(prop.ProposalHash, "sha256:") ||
		prop.Status != domain.ProposalPending || prop.Approval.Decision != "human_approval_required" {
		t.Fatalf("proposal %+v", prop)
	}
	exec := map[string]any{"proposal_id": prop.ProposalID, "idempotency_key": "promo-exec-0001"}
	// Without approval: blocked, nothing changed.
	before := e.digest()
	blocked := e.call("trove_execute_candidate_promotion", exec)
	if blocked.Status != "approval_required" || blocked.Errors[0].Code != "approval_required" || blocked.isError {
		t.Fatalf("unapproved execution: %s", blocked.raw)
	}
	assertOnlyEventsChanged(t, before, e.digest())

	g := e.approve(prop.ProposalID)
	if g.IssuedBy.Type != "human" || g.IssuedBy.Surface != "trovesnap_approve" || !g.SingleUse {
		t.Errorf("grant %+v", g)
	}
	exec["idempotency_key"] = "promo-exec-0002"
	done := e.call("trove_execute_candidate_promotion", exec)
	res := dataAs[domain.ExecutionResult](t, done)
	if !strings.HasPrefix(done.Status, "succeeded") || !res.Executed || !res.Simulated || res.DomainFunction != "promote_inventory_candidate" ||
		len(res.CreatedItemIDs) != 1 || res.Approval.ApprovalID == nil || *res.Approval.ApprovalID != g.ID {
		t.Fatalf("execution %s", done.raw)
	}
	itemID := res.CreatedItemIDs[0]
	if it := e.item(itemID); it.Status != domain.ItemDraft || it.Version != 1 {
		t.Errorf("created item %+v", it)
	}
	if n := e.query("SELECT count(*) FROM item_provenance WHERE item_id = ? AND candidate_id = ? AND source_record_id = 'record_991' AND import_run_id = 'run_844' AND proposal_id = ?",
		itemID, fixtures.DemoCandidateID, prop.ProposalID); n != 1 {
		t.Errorf("provenance rows %d", n)
	}
	if n := e.query("SELECT count(*) FROM inventory_candidates WHERE id = ? AND review_status = 'promoted' AND version = 4", fixtures.DemoCandidateID); n != 1 {
		t.Error("candidate not promoted")
	}
	// trove_get_item shows the provenance to a role that reads the
	// catalogue, and not to checkout.
	type provenanceOf struct {
		Provenance *domain.ItemProvenance `json:"provenance"`
	}
	for role, want := range map[string]bool{domain.RoleOwner: true, domain.RoleCataloger: true, domain.RoleCheckout: false} {
		got := callOn(t, sessionFor(e, fixtures.DemoTenantID, staffOf[role]), "trove_get_item", map[string]any{"item_id": itemID}, nil)
		pv := dataAs[provenanceOf](t, got).Provenance
		switch {
		case got.Status != "succeeded":
			t.Errorf("%s reads the item: %s", role, got.raw)
		case !want && (pv != nil || strings.Contains(string(got.Data), "provenance")):
			t.Errorf("%s sees provenance: %s", role, got.raw)
		case want && (pv == nil || pv.CandidateID != fixtures.DemoCandidateID || pv.SourceRecordID != "record_991" || pv.ImportRunID != "run_844" ||
			pv.ProposalID != prop.ProposalID || pv.PromotedAt.IsZero()):
			t.Errorf("%s: provenance %+v", role, pv)
		}
	}
	// Proposal, approval and execution events share the correlation id.
	evs := e.allEvents()
	var corr string
	var actions []string
	for _, ev := range evs {
		if ev.Tool.Name == "trove_propose_candidate_promotion" && ev.Outcome == "success" {
			corr = ev.CorrelationID
		}
	}
	for _, ev := range evs {
		if ev.CorrelationID == corr {
			actions = append(actions, ev.Action+"/"+ev.Outcome+"/"+ev.Approval.Decision)
		}
	}
	for _, want := range []string{"mcp_tool_called/success/not_required", "mcp_tool_called/blocked/human_approval_required", "approval_granted/success/allowed", "mcp_tool_called/success/allowed"} {
		if !slices.Contains(actions, want) {
			t.Errorf("trace %s lacks %s: %v", corr, want, actions)
		}
	}
	// Replay: the original result; no second item.
	replay := e.call("trove_execute_candidate_promotion", exec)
	if string(replay.Data) != string(done.Data) || !replay.Audit.Replayed {
		t.Errorf("replay %s", replay.raw)
	}
	// A new key cannot reuse the single-use grant.
	exec["idempotency_key"] = "promo-exec-0003"
	wantCode(t, e.call("trove_execute_candidate_promotion", exec), "blocked", "approval_already_consumed")
	if n := e.query("SELECT count(*) FROM item_provenance"); n != 1 {
		t.Errorf("%d promotions", n)
	}
}

// §40.6: every approval failure, each with its code and no state change.
func TestApproval_EveryFailureBlocksAndChangesNothing(t *testing.T) {
	e := newEnv(t)
	qr := func(n int) string { return fmt.Sprintf("QR-221-01%02d", 21+n) } // spare printed labels
	target := itemWithStatus(t, domain.ItemDraft, true)
	newProp := func(n int) catalog.ProposalView {
		it := e.item(target.ID)
		return e.propose("trove_propose_identity_binding", map[string]any{"item_id": target.ID, "expected_version": it.Version,
			"qr_code": qr(n), "action": "bind", "idempotency_key": "bind-prop-000" + string(rune('0'+n))})
	}
	key := 0
	exec := func(tool, pid string) envelope {
		key++
		return e.call(tool, map[string]any{"proposal_id": pid, "idempotency_key": "bind-exec-" + strings.Repeat("0", 3) + string(rune('a'+key))})
	}
	check := func(name string, env envelope, status, code string) {
		t.Helper()
		if env.Status != status || len(env.Errors) == 0 || env.Errors[0].Code != code {
			t.Errorf("%s: want %s/%s, got %s", name, status, code, env.raw)
		}
	}

	p1 := newProp(1)
	before := e.digestExcept("proposals", "approval_grants", "idempotency_keys")
	check("unknown proposal", exec("trove_bind_item_identity", "proposal_nope"), "failed", "invalid_reference")
	check("no approval", exec("trove_bind_item_identity", p1.ProposalID), "approval_required", "approval_required")
	check("wrong tool", exec("trove_release_item_identity", p1.ProposalID), "blocked", "approval_invalid")
	// A grant for another proposal does not authorise this one.
	p2 := newProp(2)
	e.approve(p2.ProposalID)
	check("grant of another proposal", exec("trove_bind_item_identity", p1.ProposalID), "approval_required", "approval_required")
	assertOnlyEventsChanged(t, before, e.digestExcept("proposals", "approval_grants", "idempotency_keys"))

	// Revoked.
	g1 := e.approve(p1.ProposalID)
	if _, err := e.service().Revoke(context.Background(), fixtures.DemoTenantID, g1.ID, fixtures.DemoUserID); err != nil {
		t.Fatal(err)
	}
	check("revoked", exec("trove_bind_item_identity", p1.ProposalID), "blocked", "approval_revoked")

	// Expired grant.
	p3 := newProp(3)
	g3, err := e.service().Approve(context.Background(), approval.ApproveRequest{TenantID: fixtures.DemoTenantID, ProposalID: p3.ProposalID, ActorID: fixtures.DemoUserID, TTL: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(3 * time.Minute)
	check("expired grant", exec("trove_bind_item_identity", p3.ProposalID), "blocked", "approval_expired")
	_ = g3

	// Expired proposal.
	p4 := newProp(4)
	e.approve(p4.ProposalID)
	e.clock.Advance(2 * time.Hour)
	check("expired proposal", exec("trove_bind_item_identity", p4.ProposalID), "blocked", "approval_expired")

	// Modified proposal: edited in the database after approval.
	p5 := newProp(5)
	e.approve(p5.ProposalID)
	e.tamper(`UPDATE proposals SET body = json_set(body, '$.changes[0].to', 'QR-EVIL') WHERE id = ?`, p5.ProposalID)
	check("modified proposal", exec("trove_bind_item_identity", p5.ProposalID), "blocked", "proposal_changed")

	// Stale target: another approved change to the item ran first.
	p6 := newProp(6)
	e.approve(p6.ProposalID)
	p7 := newProp(7)
	e.approve(p7.ProposalID)
	ok := exec("trove_bind_item_identity", p6.ProposalID)
	if !strings.HasPrefix(ok.Status, "succeeded") {
		t.Fatalf("valid human grant: %s", ok.raw)
	}
	if got := e.item(target.ID); got.QRCode != qr(6) {
		t.Errorf("item qr %q", got.QRCode)
	}
	beforeStale := e.digest()
	stale := exec("trove_bind_item_identity", p7.ProposalID)
	check("stale target", stale, "failed", "stale_target_version")
	if !strings.Contains(stale.Errors[0].Message, target.ID) {
		t.Errorf("stale message does not name the item: %s", stale.Errors[0].Message)
	}
	assertOnlyEventsChanged(t, beforeStale, e.digest())
	// Consumed.
	check("consumed", exec("trove_bind_item_identity", p6.ProposalID), "blocked", "approval_already_consumed")
}

// A valid policy authorises a bounded action without a human; its use is
// recorded as a distinguishable grant; revoking the policy stops it.
func TestApproval_PolicyAuthorisesBoundedActionUntilRevoked(t *testing.T) {
	e := newEnv(t)
	target := itemWithStatus(t, domain.ItemDraft, true)
	ctx := context.Background()
	pol, err := e.st.CreatePolicy(ctx, domain.Policy{TenantID: fixtures.DemoTenantID, Name: "Tag binding", CreatedBy: fixtures.DemoUserID,
		AllowedTools: []string{"trove_bind_item_identity"}, Scope: domain.PolicyScope{EstateSaleIDs: []string{target.SaleID}},
		Conditions: domain.PolicyConditions{MaxItemsPerRun: 1, PermittedFields: []string{"qr_code"}, RequireNoConflicts: true},
		Limits:     domain.PolicyLimits{MaxDailyActions: 5}})
	if err != nil {
		t.Fatal(err)
	}
	prop := e.propose("trove_propose_identity_binding", map[string]any{"item_id": target.ID, "expected_version": target.Version, "qr_code": "QR-221-0140", "action": "bind", "idempotency_key": "pol-prop-0001"})
	// Disabled by default: no authority.
	wantCode(t, e.call("trove_bind_item_identity", map[string]any{"proposal_id": prop.ProposalID, "idempotency_key": "pol-exec-0001"}), "approval_required", "approval_required")
	if _, err := e.st.SetPolicyStatus(ctx, pol.ID, domain.PolicyActive, fixtures.DemoUserID); err != nil {
		t.Fatal(err)
	}
	done := e.call("trove_bind_item_identity", map[string]any{"proposal_id": prop.ProposalID, "idempotency_key": "pol-exec-0002"})
	res := dataAs[domain.ExecutionResult](t, done)
	if res.Approval.Decision != "allowed_by_policy" || res.Approval.PolicyID == nil || *res.Approval.PolicyID != pol.ID {
		t.Fatalf("policy execution %s", done.raw)
	}
	if n := e.query("SELECT count(*) FROM approval_grants WHERE issuer_type = 'policy' AND policy_id = ? AND status = 'consumed'", pol.ID); n != 1 {
		t.Errorf("policy grant records %d", n)
	}
	if n := e.query("SELECT count(*) FROM policy_uses WHERE policy_id = ?", pol.ID); n != 1 {
		t.Errorf("policy uses %d", n)
	}
	// Revoked: a later proposal is not authorised.
	if _, err := e.st.SetPolicyStatus(ctx, pol.ID, domain.PolicyRevoked, fixtures.DemoUserID); err != nil {
		t.Fatal(err)
	}
	other := itemWithStatusExcept(t, domain.ItemDraft, target.ID)
	prop2 := e.propose("trove_propose_identity_binding", map[string]any{"item_id": other.ID, "expected_version": other.Version, "qr_code": "QR-221-0141", "action": "bind", "idempotency_key": "pol-prop-0002"})
	wantCode(t, e.call("trove_bind_item_identity", map[string]any{"proposal_id": prop2.ProposalID, "idempotency_key": "pol-exec-0003"}), "approval_required", "approval_required")
	// A policy can never publish, whatever it names.
	if _, err := e.st.CreatePolicy(ctx, domain.Policy{TenantID: fixtures.DemoTenantID, Name: "x", CreatedBy: fixtures.CatalogerUserID,
		AllowedTools: []string{"trove_bind_item_identity"}, Scope: domain.PolicyScope{EstateSaleIDs: []string{target.SaleID}},
		Conditions: domain.PolicyConditions{MaxItemsPerRun: 1, PermittedFields: []string{"qr_code"}}, Limits: domain.PolicyLimits{MaxDailyActions: 1}}); err == nil {
		t.Error("a cataloger created a policy")
	}
}

func itemWithStatusExcept(t *testing.T, status, except string) domain.Item {
	for _, it := range fixtures.Dataset().Items {
		if it.TenantID == fixtures.DemoTenantID && it.Status == status && it.QRCode == "" && it.ID != except {
			return it
		}
	}
	t.Fatal("no second item")
	return domain.Item{}
}

// §40.7: approval-shaped arguments grant nothing; no tool can approve.
func TestSelfApproval_ArgumentsCarryNoAuthority(t *testing.T) {
	e := newEnv(t)
	prop := e.propose("trove_propose_candidate_promotion", map[string]any{"candidate_id": fixtures.DemoCandidateID, "expected_version": 3, "idempotency_key": "self-prop-0001"})
	before := e.digest()
	for _, extra := range []map[string]any{
		{"approved": true}, {"approval_id": "approval_x1"}, {"grant_id": "approval_x1"}, {"policy_id": "policy_x1"},
		{"issued_by": map[string]any{"type": "human", "actor_id": fixtures.DemoUserID}}, {"decision": "allowed"},
	} {
		args := map[string]any{"proposal_id": prop.ProposalID, "idempotency_key": "self-exec-0001"}
		for k, v := range extra {
			args[k] = v
		}
		wantCode(t, e.call("trove_execute_candidate_promotion", args), "failed", "invalid_input")
	}
	wantCode(t, e.callMeta("trove_execute_candidate_promotion", map[string]any{"proposal_id": prop.ProposalID, "idempotency_key": "self-exec-0002"},
		map[string]any{"approved": true, "trovesnap/approval": "granted"}), "approval_required", "approval_required")
	assertOnlyEventsChanged(t, before, e.digest())
	for _, name := range listNames(t, e.cs) {
		for _, verb := range []string{"approve", "grant", "policy", "delete"} {
			if strings.Contains(name, verb) {
				t.Errorf("tool %s can %s", name, verb)
			}
		}
	}
}

// §40.9: publication needs a ready canonical item and explicit approval,
// is bound to its version, and exposes nothing private.
func TestPublication_ItemRulesAndApproval(t *testing.T) {
	e := newEnv(t)
	it := readyItem(t)
	// A candidate can never be published: it is not an item.
	wantCode(t, e.call("trove_propose_item_publication", map[string]any{"item_id": fixtures.DemoCandidateID, "expected_version": 3, "idempotency_key": "pub-prop-0000"}), "failed", "invalid_input")
	// Version enforced at proposal time.
	wantCode(t, e.call("trove_propose_item_publication", map[string]any{"item_id": it.ID, "expected_version": it.Version + 1, "idempotency_key": "pub-prop-0001"}), "failed", "stale_target_version")
	// A draft item is not ready.
	draft := itemWithStatus(t, domain.ItemDraft, false)
	wantCode(t, e.call("trove_propose_item_publication", map[string]any{"item_id": draft.ID, "expected_version": draft.Version, "idempotency_key": "pub-prop-0002"}), "failed", "domain_transition_invalid")
	prop := e.propose("trove_propose_item_publication", map[string]any{"item_id": it.ID, "expected_version": it.Version, "idempotency_key": "pub-prop-0003"})
	if prop.Approval.Requirement != "explicit_human" || prop.Impact.PublicRecordsChanged != 1 {
		t.Errorf("proposal %+v", prop)
	}
	// No policy may authorise publication, even one naming it.
	wantCode(t, e.call("trove_publish_item", map[string]any{"proposal_id": prop.ProposalID, "idempotency_key": "pub-exec-0001"}), "approval_required", "approval_required")
	// Executing a promotion proposal through the publish tool is refused.
	promo := e.propose("trove_propose_candidate_promotion", map[string]any{"candidate_id": fixtures.DemoCandidateID, "expected_version": 3, "idempotency_key": "pub-prop-0004"})
	e.approve(promo.ProposalID)
	wantCode(t, e.call("trove_publish_item", map[string]any{"proposal_id": promo.ProposalID, "idempotency_key": "pub-exec-0002"}), "blocked", "approval_invalid")
	e.approve(prop.ProposalID)
	done := e.call("trove_publish_item", map[string]any{"proposal_id": prop.ProposalID, "idempotency_key": "pub-exec-0003"})
	if !strings.HasPrefix(done.Status, "succeeded") {
		t.Fatalf("publish: %s", done.raw)
	}
	if got := e.item(it.ID); got.Status != domain.ItemPublished || got.Version != it.Version+1 {
		t.Errorf("published item %+v", got)
	}
	for _, private := range []string{"internal_price_guidance", "cost_basis", "staff_notes", "appraisal_flag", "street_address"} {
		if strings.Contains(done.raw, private) {
			t.Errorf("publish result exposes %s", private)
		}
	}
}

// §40.10: status transitions follow the lifecycle; imported status needs
// review; no payment or price is ever recorded.
func TestStatus_TransitionsAndImportedStatus(t *testing.T) {
	e := newEnv(t)
	pub := itemWithStatus(t, domain.ItemPublished, false)
	sold := itemWithStatus(t, domain.ItemSold, false)
	eff := fixtures.Epoch.Add(time.Hour).Format(time.RFC3339)
	wantCode(t, e.call("trove_propose_status_transition", map[string]any{"item_id": sold.ID, "expected_version": sold.Version, "to_status": "on_hold", "effective_at": eff, "idempotency_key": "st-prop-0001"}), "failed", "domain_transition_invalid")
	prop := e.propose("trove_propose_status_transition", map[string]any{"item_id": pub.ID, "expected_version": pub.Version, "to_status": "pending_pickup", "effective_at": eff, "idempotency_key": "st-prop-0002"})
	e.approve(prop.ProposalID)
	before := e.item(pub.ID)
	args := map[string]any{"proposal_id": prop.ProposalID, "idempotency_key": "st-exec-0001"}
	done := e.call("trove_update_item_status", args)
	if !strings.HasPrefix(done.Status, "succeeded") {
		t.Fatalf("%s", done.raw)
	}
	after := e.item(pub.ID)
	if after.Status != domain.ItemPendingPickup || (before.PriceCents == nil) != (after.PriceCents == nil) || (before.PriceCents != nil && *before.PriceCents != *after.PriceCents) {
		t.Errorf("after %+v", after)
	}
	if strings.Contains(done.raw, "payment") || strings.Contains(done.raw, "settled") {
		t.Errorf("status change claims payment: %s", done.raw)
	}
	if n := e.query("SELECT count(*) FROM item_status_events WHERE item_id = ? AND from_status = 'published' AND to_status = 'pending_pickup' AND source_type = 'proposal'", pub.ID); n != 1 {
		t.Errorf("history rows %d", n)
	}
	if r := e.call("trove_update_item_status", args); string(r.Data) != string(done.Data) || !r.Audit.Replayed {
		t.Errorf("replay %s", r.raw)
	}
	// Imported status without review.
	wantCode(t, e.call("trove_propose_status_transition", map[string]any{"item_id": after.ID, "expected_version": after.Version, "to_status": "sold", "effective_at": eff,
		"status_candidate_id": fixtures.DemoCandidateID, "idempotency_key": "st-prop-0003"}), "failed", "candidate_required")
	// Sale day (issue 16): checkout proposes status changes (its checkout
	// transitions only, TestCheckout_SaleDayThroughAClient) and executes
	// them, and records checkout scans, with no other proposal tool; a
	// cataloger may propose but not execute.
	_, tokCheckout := e.register(fixtures.DemoTenantID, fixtures.CheckoutUserID)
	checkout := listNames(t, connect(t, e.gate, tokCheckout))
	for _, want := range []string{"trove_update_item_status", "trove_propose_status_transition", "trove_propose_checkout_scan", "trove_record_checkout_scan"} {
		if !slices.Contains(checkout, want) {
			t.Errorf("checkout tools %v lack %s", checkout, want)
		}
	}
	if slices.Contains(checkout, "trove_propose_bulk_item_update") || slices.Contains(checkout, "trove_propose_item_publication") {
		t.Errorf("checkout tools %v", checkout)
	}
	_, tokCat := e.register(fixtures.DemoTenantID, fixtures.CatalogerUserID)
	cat := listNames(t, connect(t, e.gate, tokCat))
	if slices.Contains(cat, "trove_update_item_status") || !slices.Contains(cat, "trove_propose_status_transition") {
		t.Errorf("cataloger tools %v", cat)
	}
}

// §40.11: bulk plans are frozen, bounded, exact, per-field permitted.
func TestBulk_FrozenBoundedAndPermitted(t *testing.T) {
	e := newEnv(t)
	var items []domain.Item
	for _, it := range fixtures.Dataset().Items {
		if it.TenantID == fixtures.DemoTenantID && it.SaleID == fixtures.PublishedSaleID && (it.Status == domain.ItemReady || it.Status == domain.ItemPublished) && len(items) < 3 {
			items = append(items, it)
		}
	}
	ids := []string{}
	evs := []map[string]any{}
	for _, it := range items {
		ids = append(ids, it.ID)
		evs = append(evs, map[string]any{"id": it.ID, "version": it.Version})
	}
	args := func(key string, changes map[string]any) map[string]any {
		return map[string]any{"item_ids": ids, "expected_versions": evs, "changes": changes, "idempotency_key": key}
	}
	// Per-field permission: a cataloger may not change prices.
	_, tokCat := e.register(fixtures.DemoTenantID, fixtures.CatalogerUserID)
	cat := connect(t, e.gate, tokCat)
	wantCode(t, callOn(t, cat, "trove_propose_bulk_item_update", args("bulk-prop-0001", map[string]any{"price_cents": 500}), nil), "blocked", "permission_denied")
	// Max count: the client's bulk bound.
	c, tok := e.register(fixtures.DemoTenantID, fixtures.DemoUserID)
	l := domain.DefaultLimits()
	l.MaxBulkTargets = 2
	if err := e.st.SetLimits(context.Background(), fixtures.DemoTenantID, c.ID, l); err != nil {
		t.Fatal(err)
	}
	wantCode(t, callOn(t, connect(t, e.gate, tok), "trove_propose_bulk_item_update", args("bulk-prop-0002", map[string]any{"room": "garage"}), nil), "failed", "invalid_input")
	// An id without its version (or the reverse) is refused.
	bad := args("bulk-prop-0003", map[string]any{"room": "garage"})
	bad["expected_versions"] = evs[:2]
	wantCode(t, e.call("trove_propose_bulk_item_update", bad), "failed", "invalid_input")
	// The proposal lists exact targets and changes.
	prop := e.propose("trove_propose_bulk_item_update", args("bulk-prop-0004", map[string]any{"room": "garage"}))
	if !slices.Equal(prop.TargetIDs, ids) || len(prop.Changes) != len(ids) {
		t.Fatalf("proposal %+v", prop)
	}
	e.approve(prop.ProposalID)
	// A target changes after approval: the whole plan stops, nothing applied.
	e.tamper("UPDATE items SET version = version + 1 WHERE id = ?", ids[1])
	before := e.digest()
	stale := e.call("trove_apply_bulk_item_update", map[string]any{"proposal_id": prop.ProposalID, "idempotency_key": "bulk-exec-0001"})
	wantCode(t, stale, "failed", "stale_target_version")
	assertOnlyEventsChanged(t, before, e.digest())
	if e.item(ids[0]).Version != items[0].Version {
		t.Error("a partial bulk update was applied")
	}
	// A fresh plan executes exactly its targets.
	evs[1]["version"] = items[1].Version + 1
	prop2 := e.propose("trove_propose_bulk_item_update", args("bulk-prop-0005", map[string]any{"room": "garage"}))
	e.approve(prop2.ProposalID)
	done := e.call("trove_apply_bulk_item_update", map[string]any{"proposal_id": prop2.ProposalID, "idempotency_key": "bulk-exec-0002"})
	res := dataAs[domain.ExecutionResult](t, done)
	if len(res.Results) != len(ids) {
		t.Fatalf("executed %d of %d: %s", len(res.Results), len(ids), done.raw)
	}
	if n := e.query("SELECT count(*) FROM items WHERE room = 'garage' AND sale_id = ?", fixtures.PublishedSaleID); n < len(ids) {
		t.Errorf("garage items %d", n)
	}
	if n := e.query("SELECT count(*) FROM item_change_history WHERE proposal_id = ?", prop2.ProposalID); n != len(ids) {
		t.Errorf("history rows %d", n)
	}
}

// Buyer notification proposals show audience size, basis, preview,
// channels, suppressions and cost — never buyer identities; execution in
// mock mode only simulates.
func TestNotification_PlanWithoutIdentities(t *testing.T) {
	e := newEnv(t)
	var sale domain.Sale
	for _, s := range fixtures.Dataset().Sales {
		if s.ID == fixtures.PublishedSaleID {
			sale = s
		}
	}
	prop := e.propose("trove_propose_buyer_notification", map[string]any{"sale_id": sale.ID, "expected_version": sale.Version, "audience": "followed_sale",
		"channels": []string{"email"}, "message_template": "{{sale_title}} opens soon", "idempotency_key": "note-prop-0001"})
	if prop.Notification == nil || prop.Notification.AudienceSize == 0 || prop.Notification.MessagePreview == "" || prop.Approval.Requirement != "explicit_human" {
		t.Fatalf("plan %+v", prop)
	}
	raw, _ := json.Marshal(prop)
	for _, pii := range []string{"@", "buyer_id", "email_address", "phone"} {
		if strings.Contains(string(raw), pii) {
			t.Errorf("plan contains %q", pii)
		}
	}
	e.approve(prop.ProposalID)
	done := e.call("trove_notify_matched_buyers", map[string]any{"proposal_id": prop.ProposalID, "idempotency_key": "note-exec-0001"})
	res := dataAs[domain.ExecutionResult](t, done)
	if !res.Simulated || res.Results[0].Outcome != "simulated" || e.query("SELECT count(*) FROM simulated_deliveries WHERE proposal_id = ?", prop.ProposalID) != 1 {
		t.Errorf("notification %s", done.raw)
	}
}

// The human surface refuses what a human must not approve.
func TestApprovalService_Refusals(t *testing.T) {
	e := newEnv(t)
	it := readyItem(t)
	prop := e.propose("trove_propose_item_publication", map[string]any{"item_id": it.ID, "expected_version": it.Version, "idempotency_key": "svc-prop-0001"})
	ctx := context.Background()
	svc := e.service()
	req := approval.ApproveRequest{TenantID: fixtures.DemoTenantID, ProposalID: prop.ProposalID, ActorID: fixtures.CatalogerUserID}
	if _, err := svc.Approve(ctx, req); err == nil {
		t.Error("a cataloger approved")
	}
	req.ActorID = fixtures.DemoUserID
	req.ExpectedHash = "sha256:other"
	if _, err := svc.Approve(ctx, req); err == nil {
		t.Error("approved a proposal whose hash differs from the one reviewed")
	}
	req.ExpectedHash = prop.ProposalHash
	narrow := approval.DefaultConstraints(domain.Proposal{TargetIDs: []string{it.ID}})
	req.Constraints = &narrow // allow_publication false: could never execute this proposal
	if _, err := svc.Approve(ctx, req); err == nil {
		t.Error("approved with constraints that cannot cover the proposal")
	}
	req.Constraints = nil
	if err := svc.Deny(ctx, fixtures.DemoTenantID, prop.ProposalID, fixtures.DemoUserID, "", "not this week"); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Approve(ctx, req); err == nil {
		t.Error("approved a rejected proposal")
	}
	wantCode(t, e.call("trove_publish_item", map[string]any{"proposal_id": prop.ProposalID, "idempotency_key": "svc-exec-0001"}), "blocked", "approval_invalid")
	if env := e.call("trove_get_proposal", map[string]any{"proposal_id": prop.ProposalID}); !strings.Contains(env.raw, `"status":"rejected"`) {
		t.Errorf("get_proposal %s", env.raw)
	}
	// A proposal that went stale cannot be approved.
	it2 := readyItemExcept(t, it.ID)
	p2 := e.propose("trove_propose_item_publication", map[string]any{"item_id": it2.ID, "expected_version": it2.Version, "idempotency_key": "svc-prop-0002"})
	e.tamper("UPDATE items SET version = version + 1 WHERE id = ?", it2.ID)
	if _, err := svc.Approve(ctx, approval.ApproveRequest{TenantID: fixtures.DemoTenantID, ProposalID: p2.ProposalID, ActorID: fixtures.DemoUserID}); err == nil {
		t.Error("approved a stale proposal")
	}
}

func readyItemExcept(t *testing.T, except string) domain.Item {
	for _, it := range fixtures.Dataset().Items {
		if it.TenantID == fixtures.DemoTenantID && it.Status == domain.ItemReady && it.ID != except {
			return it
		}
	}
	t.Fatal("no second ready item")
	return domain.Item{}
}

// tamper edits the database behind the store's back (an attacker with file
// access), bypassing the immutability triggers for the proposal body.
func (e *env) tamper(q string, args ...any) {
	e.t.Helper()
	db, err := sql.Open("sqlite", "file:"+e.path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		e.t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("DROP TRIGGER IF EXISTS proposals_content_immutable"); err != nil {
		e.t.Fatal(err)
	}
	if _, err := db.Exec(q, args...); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) digestExcept(tables ...string) map[string]string {
	d := e.digest()
	for _, t := range tables {
		delete(d, t)
	}
	return d
}

// Export delivery: a staged snapshot is proposed, explicitly approved and
// delivered once (simulated in mock mode); an item changed since staging
// makes the delivery stale; a policy can never deliver.
func TestExportDelivery_StagedProposedApprovedDeliveredOnce(t *testing.T) {
	e := newEnv(t)
	stage := e.call("trove_stage_export", map[string]any{"channel": "facebook_marketplace", "item_ids": []string{fixtures.DemoItemID}, "idempotency_key": "exp-stage-0001"})
	x := dataAs[catalog.StageExportOutput](t, stage)
	prop := e.propose("trove_propose_export_delivery", map[string]any{"export_id": x.ExportID, "idempotency_key": "exp-prop-0001"})
	if prop.Tool.Name != "trove_deliver_export" || prop.Approval.Requirement != "explicit_human" || prop.Impact.ExternalDeliveries != 1 ||
		!slices.ContainsFunc(prop.ExpectedVersions, func(v domain.TargetVersion) bool { return v.ID == fixtures.DemoItemID }) {
		t.Fatalf("proposal %+v", prop)
	}
	exec := map[string]any{"proposal_id": prop.ProposalID, "idempotency_key": "exp-exec-0001"}
	wantCode(t, e.call("trove_deliver_export", exec), "approval_required", "approval_required")
	e.approve(prop.ProposalID)
	done := e.call("trove_deliver_export", exec)
	res := dataAs[domain.ExecutionResult](t, done)
	if !res.Simulated || res.DomainFunction != "deliver_export" || e.query("SELECT count(*) FROM simulated_deliveries WHERE kind = 'export_delivery' AND proposal_id = ?", prop.ProposalID) != 1 ||
		e.query("SELECT count(*) FROM export_drafts WHERE id = ? AND status = 'delivered'", x.ExportID) != 1 {
		t.Fatalf("delivery %s", done.raw)
	}
	exec["idempotency_key"] = "exp-exec-0002"
	wantCode(t, e.call("trove_deliver_export", exec), "blocked", "approval_already_consumed")
	// A delivered export cannot be proposed again.
	wantCode(t, e.call("trove_propose_export_delivery", map[string]any{"export_id": x.ExportID, "idempotency_key": "exp-prop-0002"}), "failed", "domain_transition_invalid")
	// Staged, then the item changes: stale.
	stage2 := dataAs[catalog.StageExportOutput](t, e.call("trove_stage_export", map[string]any{"channel": "ebay", "item_ids": []string{fixtures.DemoItemID}, "idempotency_key": "exp-stage-0002"}))
	e.tamper("UPDATE items SET version = version + 1 WHERE id = ?", fixtures.DemoItemID)
	wantCode(t, e.call("trove_propose_export_delivery", map[string]any{"export_id": stage2.ExportID, "idempotency_key": "exp-prop-0003"}), "failed", "stale_target_version")
}
