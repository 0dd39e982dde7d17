package contract

import (
	"strings"
	"testing"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/domain"
)

// runCheckout runs the sale-day cases (issue 16, part 4) on both backends:
// the checkout role (item.update_status and checkout.scan, no
// proposal.create), assigned one sale, proposes the checkout transitions
// of that sale's items and records checkout scans (hold, sold awaiting
// pickup, picked up; never a payment); a seller's bounded policy lets a
// hold run without a person, never a sale completion. Each refusal asserts
// its error AND that nothing changed.
func runCheckout(t *testing.T, open func(t *testing.T) Instance) {
	t.Run("Checkout/ProposesItsSalesTransitions", func(t *testing.T) { testCheckoutProposes(t, open(t)) })
	t.Run("Checkout/ScanWithAGrant", func(t *testing.T) { testCheckoutScanGrant(t, open(t)) })
	t.Run("Checkout/HoldByABoundedPolicy", func(t *testing.T) { testCheckoutHoldPolicy(t, open(t)) })
	t.Run("Checkout/UnboundedPolicyRefused", func(t *testing.T) { testCheckoutPolicyRefused(t, open(t)) })
}

const toolCheckoutScan = "trove_record_checkout_scan"

func init() { proposingTool[toolCheckoutScan] = "trove_propose_checkout_scan" }

func scanDraft(id string, version int, scan, note string) domain.ProposalDraft {
	t, v := actOne(id, version)
	f := map[string]any{"scan": scan}
	if note != "" {
		f["note"] = note
	}
	return domain.ProposalDraft{Action: domain.ActionCheckoutScan, Tool: domain.ExecutingTool{Name: toolCheckoutScan, Version: "1.0.0"},
		Requirement: "human_or_policy", TargetIDs: t, ExpectedVersions: v, Fields: f}
}

func testCheckoutProposes(t *testing.T, in Instance) {
	f := newFlow(t, in)
	co := resolve(t, f.b, CredCheckout)
	if co.Has(domain.PermProposalCreate) || !co.SaleScoped {
		t.Fatalf("checkout principal = %+v", co)
	}
	sofa, rug, other := f.itemNow(actSofa), f.itemNow(actRug), f.itemNow(actScopedItem)
	// A hold of an item of its sale: accepted, the same proposal an owner's would be.
	before := in.Counts(t)
	prop, _, err := f.propose(co, statusDraft(sofa.ID, sofa.Version, domain.ItemOnHold, actEffectiveAt, ""))
	if err != nil {
		t.Fatalf("checkout proposes a hold: %v", err)
	}
	f.grew(before, map[string]int64{"proposals": 1})
	if prop.Action != domain.ActionStatusTransition || prop.RequestedBy.ClientID != CheckoutClientID ||
		prop.Requirement != "human_or_policy" || prop.Status != domain.ProposalPending {
		t.Fatalf("checkout's proposal = %+v", prop)
	}
	actSameChanges(t, prop.Changes, []domain.FieldChange{
		{TargetID: sofa.ID, Field: "status", From: domain.ItemPublished, To: domain.ItemOnHold},
		{TargetID: sofa.ID, Field: "effective_at", To: actEffectiveAt}})

	before = in.Counts(t)
	for _, c := range []struct {
		what     string
		d        domain.ProposalDraft
		sentinel error
	}{
		{"an item outside its sales", statusDraft(other.ID, other.Version, domain.ItemOnHold, actEffectiveAt, ""), domain.ErrSaleAssignment},
		{"a scan of an item outside its sales", scanDraft(other.ID, other.Version, domain.ScanHold, ""), domain.ErrSaleAssignment},
		{"a withdrawal (not a checkout transition)", statusDraft(rug.ID, rug.Version, domain.ItemWithdrawn, actEffectiveAt, ""), domain.ErrPermissionDenied},
		{"an archive", statusDraft(f.itemNow(actWithdrawn).ID, f.itemNow(actWithdrawn).Version, domain.ItemArchived, actEffectiveAt, ""), domain.ErrPermissionDenied},
		{"an imported status", statusDraft(rug.ID, rug.Version, domain.ItemOnHold, actEffectiveAt, candReviewed), domain.ErrPermissionDenied},
		{"a scan the lifecycle refuses (draft → on_hold)", scanDraft(actVase, f.itemNow(actVase).Version, domain.ScanHold, ""), domain.ErrTransitionInvalid},
	} {
		_, _, err := f.propose(co, c.d)
		wantErr(t, err, c.sentinel, c.what)
	}
	// A pricer (proposal.create, no checkout.scan) records no scan.
	_, _, err = f.propose(resolve(t, f.b, CredPricer), scanDraft(rug.ID, rug.Version, domain.ScanHold, ""))
	if err == nil {
		t.Fatal("a pricer proposed a checkout scan")
	}
	f.unchanged(before, "refused checkout proposals")
	f.sameItem(rug, "refused checkout proposals")
	f.sameItem(other, "refused checkout proposals")
}

// execAs executes prop as p under auth with the key given.
func (f *flow) execAs(p domain.Principal, prop domain.Proposal, auth domain.Authorization, key string) (domain.ExecutionResult, domain.WriteOutcome, error) {
	w := f.execMeta(p, prop, auth.GrantID, key, "sha256:"+key)
	if auth.Decision == "allowed_by_policy" {
		w.Event.Approval.Decision = "allowed_by_policy"
	}
	return f.b.ExecuteProposal(ctx, p, w, prop.ID, auth)
}

func testCheckoutScanGrant(t *testing.T, in Instance) {
	f := newFlow(t, in)
	co := resolve(t, f.b, CredCheckout)
	rug := f.itemNow(actRug)
	prop, _, err := f.propose(co, scanDraft(rug.ID, rug.Version, domain.ScanSoldPendingPickup, "Ana, picks up Sunday"))
	if err != nil {
		t.Fatalf("propose scan: %v", err)
	}
	if prop.Action != domain.ActionCheckoutScan || prop.Tool.Name != toolCheckoutScan || prop.TargetKind != "item" ||
		prop.Impact != (domain.ProposalImpact{ItemsChanged: 1, PublicRecordsChanged: 1}) {
		t.Fatalf("scan proposal = %+v", prop)
	}
	actSameChanges(t, prop.Changes, []domain.FieldChange{
		{TargetID: rug.ID, Field: "checkout_scan", To: domain.ScanSoldPendingPickup},
		{TargetID: rug.ID, Field: "status", From: domain.ItemPublished, To: domain.ItemPendingPickup},
		{TargetID: rug.ID, Field: "note", To: "Ana, picks up Sunday"}})
	for _, c := range prop.Changes {
		if strings.Contains(c.Field, "price") || strings.Contains(c.Field, "amount") || strings.Contains(c.Field, "payment") {
			t.Fatalf("a scan carries %s", c.Field)
		}
	}
	// Without an approval nothing runs; with the seller's grant it does.
	before := in.Counts(t)
	_, _, err = f.execAs(co, prop, domain.Authorization{Decision: "allowed", ProposalHash: prop.Hash}, "scan-none")
	wantErr(t, err, domain.ErrApprovalRequired, "a scan without approval")
	f.unchanged(before, "a scan without approval")
	g := f.approve(prop)
	before = in.Counts(t)
	res, out, err := f.execAs(co, prop, allowed(prop, g.ID), "scan-exec-1")
	if err != nil {
		t.Fatalf("execute scan: %v", err)
	}
	after := f.grew(before, map[string]int64{"checkout_scans": 1, "item_status_events": 1, "idempotency_keys": 1, "items": 0})
	if !res.Executed || res.DomainFunction != "record_checkout_scan" || mustJSON(t, res.Results) != mustJSON(t, actApplied(f.b, rug)) {
		t.Fatalf("result = %s", mustJSON(t, res))
	}
	if got := f.itemNow(rug.ID); got.Status != domain.ItemPendingPickup || got.Version != rug.Version+1 || !eqPtr(got.PriceCents, rug.PriceCents) {
		t.Fatalf("item after the scan = %+v", got)
	}
	ev := f.statusEventOf(rug.ID, prop.ID)
	if ev.SourceType != domain.StatusSourceCheckout || ev.FromStatus != domain.ItemPublished || ev.ToStatus != domain.ItemPendingPickup ||
		ev.ActorID != CheckoutUserID {
		t.Fatalf("status event = %+v", ev)
	}
	// Idempotent replay: the original result, nothing written.
	res2, out2, err := f.execAs(co, prop, allowed(prop, g.ID), "scan-exec-1")
	if err != nil || !out2.Replayed || out2.OriginalEventID != out.OriginalEventID || mustJSON(t, res2) != mustJSON(t, res) {
		t.Fatalf("replay = %+v %+v %v", res2, out2, err)
	}
	f.unchanged(after, "a replayed scan")
}

// holdPolicy is the seller's bounded hold policy for the published sale.
func holdPolicy(t *testing.T, in Instance) domain.Policy {
	t.Helper()
	admin := in.Admin(t, fixtures.DemoTenantID, fixtures.DemoUserID)
	pol, err := admin.CreatePolicy(ctx, domain.Policy{TenantID: fixtures.DemoTenantID, Name: "Checkout holds",
		AllowedTools: []string{toolCheckoutScan}, Scope: domain.PolicyScope{EstateSaleIDs: []string{fixtures.PublishedSaleID}},
		Conditions: domain.PolicyConditions{MaxItemsPerRun: 1, PermittedFields: []string{"checkout_scan", "status", "note"},
			CheckoutScans: []string{domain.ScanHold}},
		Limits: domain.PolicyLimits{MaxDailyActions: 20}, CreatedBy: fixtures.DemoUserID})
	if err != nil {
		t.Fatalf("CreatePolicy: %v", err)
	}
	if !slicesEqual(pol.Conditions.CheckoutScans, []string{domain.ScanHold}) {
		t.Fatalf("stored policy = %+v", pol)
	}
	if pol, err = admin.SetPolicyStatus(ctx, pol.ID, domain.PolicyActive, fixtures.DemoUserID); err != nil {
		t.Fatalf("enable policy: %v", err)
	}
	return pol
}

func slicesEqual(a, b []string) bool { return strings.Join(a, ",") == strings.Join(b, ",") }

func testCheckoutHoldPolicy(t *testing.T, in Instance) {
	f := newFlow(t, in)
	co := resolve(t, f.b, CredCheckout)
	pol := holdPolicy(t, in)
	sofa, rug := f.itemNow(actSofa), f.itemNow(actRug)
	byPolicy := func(prop domain.Proposal) domain.Authorization {
		return domain.Authorization{Decision: "allowed_by_policy", PolicyID: pol.ID, PolicyVersion: pol.Version, ProposalHash: prop.Hash}
	}
	// A hold runs without a person.
	hold, _, err := f.propose(co, scanDraft(sofa.ID, sofa.Version, domain.ScanHold, ""))
	if err != nil {
		t.Fatalf("propose hold: %v", err)
	}
	before := in.Counts(t)
	res, _, err := f.execAs(co, hold, byPolicy(hold), "hold-1")
	if err != nil {
		t.Fatalf("hold by policy: %v", err)
	}
	f.grew(before, map[string]int64{"checkout_scans": 1, "item_status_events": 1, "policy_uses": 1, "approval_grants": 1})
	if res.Approval.Decision != "allowed_by_policy" || res.Approval.PolicyID == nil || *res.Approval.PolicyID != pol.ID {
		t.Fatalf("result = %s", mustJSON(t, res))
	}
	if got := f.itemNow(sofa.ID); got.Status != domain.ItemOnHold {
		t.Fatalf("held item = %+v", got)
	}
	if ev := f.statusEventOf(sofa.ID, hold.ID); ev.SourceType != domain.StatusSourceCheckout {
		t.Fatalf("hold event = %+v", ev)
	}
	// Picked up completes a sale: human-only, whatever the policy.
	pick, _, err := f.propose(co, scanDraft(rug.ID, rug.Version, domain.ScanPickedUp, ""))
	if err != nil {
		t.Fatalf("propose picked up: %v", err)
	}
	before = in.Counts(t)
	_, _, err = f.execAs(co, pick, byPolicy(pick), "pick-1")
	wantErr(t, err, domain.ErrApprovalRequired, "picked up by policy")
	if !strings.Contains(err.Error(), "sale completion is never authorised by a policy") {
		t.Fatalf("reason: %v", err)
	}
	f.unchanged(before, "picked up by policy")
	f.sameItem(rug, "picked up by policy")
}

func testCheckoutPolicyRefused(t *testing.T, in Instance) {
	f := newFlow(t, in)
	admin := in.Admin(t, fixtures.DemoTenantID, fixtures.DemoUserID)
	base := func(tools []string, scans ...string) domain.Policy {
		return domain.Policy{TenantID: fixtures.DemoTenantID, Name: "Unbounded checkout", AllowedTools: tools,
			Scope:      domain.PolicyScope{EstateSaleIDs: []string{fixtures.PublishedSaleID}},
			Conditions: domain.PolicyConditions{MaxItemsPerRun: 1, PermittedFields: []string{"checkout_scan", "status"}, CheckoutScans: scans},
			Limits:     domain.PolicyLimits{MaxDailyActions: 20}, CreatedBy: fixtures.DemoUserID}
	}
	before := in.Counts(t)
	for what, pol := range map[string]domain.Policy{
		"no scans named":                 base([]string{toolCheckoutScan}),
		"picked up":                      base([]string{toolCheckoutScan}, domain.ScanHold, domain.ScanPickedUp),
		"sold pending pickup":            base([]string{toolCheckoutScan}, domain.ScanSoldPendingPickup),
		"scans on another tool's policy": base([]string{toolUpdateStatus}, domain.ScanHold),
	} {
		_, err := admin.CreatePolicy(ctx, pol)
		wantInput(t, err, "conditions.checkout_scans")
		_ = what
	}
	f.unchanged(before, "refused checkout policies")
}
