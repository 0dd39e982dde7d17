package domain

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// The checkout transitions are lifecycle transitions, and a policy may
// authorise exactly the scans whose status completes no sale: a hold.
func TestCheckout_ActionsAreLifecycleAndOnlyAHoldIsPolicyMay(t *testing.T) {
	for from, tos := range checkoutActions {
		for _, to := range tos {
			if !CanTransition(from, to) {
				t.Errorf("checkout action %s → %s is not a lifecycle transition", from, to)
			}
		}
	}
	for _, scan := range CheckoutScans() {
		to, ok := CheckoutScanStatus(scan)
		if !ok || !slices.Contains(ItemStatuses(), to) {
			t.Errorf("scan %s records %q", scan, to)
		}
	}
	if got := PolicyCheckoutScans(); !slices.Equal(got, []string{ScanHold}) {
		t.Errorf("PolicyCheckoutScans() = %v, want [hold]", got)
	}
	it := Item{ID: "item_1", TenantID: "tenant_123", SaleID: "sale_221", Status: ItemPublished, Version: 1, QRCode: "QR-1"}
	prop := Proposal{ExpectedVersions: []TargetVersion{{ID: it.ID, Version: 1}}, TargetIDs: []string{it.ID}}
	long := ProposalDraft{Action: ActionCheckoutScan, Fields: map[string]any{"scan": ScanHold, "note": strings.Repeat("é", MaxCheckoutNoteLen+1)}}
	var ie *InputError
	if err := BuildCheckoutScan(Principal{TenantID: "tenant_123", Role: RoleCheckout}, long, &prop, []Item{it}); !errors.As(err, &ie) || ie.Field != "note" {
		t.Errorf("a note over the bound: %v", err)
	}
	if _, ok := CheckoutScanStatus("paid"); ok {
		t.Error("a payment is no scan")
	}
}

// A status proposal by a principal without proposal.create (checkout):
// only the checkout transitions from the item's status, of items in its
// assigned sales, and no imported status.
func TestBuildStatusTransition_CheckoutOnlyItsTransitions(t *testing.T) {
	checkout := Principal{TenantID: "tenant_123", Role: RoleCheckout, SaleScoped: true, AssignedSaleIDs: []string{"sale_221"}}
	owner := Principal{TenantID: "tenant_123", Role: RoleOwner}
	pub := Item{ID: "item_1", TenantID: "tenant_123", SaleID: "sale_221", Status: ItemPublished, Version: 3}
	other := Item{ID: "item_2", TenantID: "tenant_123", SaleID: "sale_223", Status: ItemPublished, Version: 1}
	build := func(p Principal, it Item, to, cand string) error {
		prop := Proposal{ExpectedVersions: []TargetVersion{{ID: it.ID, Version: it.Version}}, TargetIDs: []string{it.ID}}
		d := ProposalDraft{Action: ActionStatusTransition, StatusCandidateID: cand, Fields: map[string]any{"to_status": to}}
		return BuildStatusTransition(p, d, &prop, []Item{it}, func(string) (string, string, error) { return "status_update", ReviewApproved, nil })
	}
	for _, c := range []struct {
		what string
		p    Principal
		it   Item
		to   string
		cand string
		want error
	}{
		{"a hold of its sale", checkout, pub, ItemOnHold, "", nil},
		{"sold of its sale", checkout, pub, ItemSold, "", nil},
		{"a withdrawal", checkout, pub, ItemWithdrawn, "", ErrPermissionDenied},
		{"an imported status", checkout, pub, ItemOnHold, "candidate_1", ErrPermissionDenied},
		{"another sale's item", checkout, other, ItemOnHold, "", ErrSaleAssignment},
		{"the owner withdraws", owner, pub, ItemWithdrawn, "", nil},
		{"a role with neither permission", Principal{TenantID: "tenant_123", Role: "intern"}, pub, ItemOnHold, "", ErrPermissionDenied},
	} {
		if err := build(c.p, c.it, c.to, c.cand); c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.what, err, c.want)
		}
	}
}

// A hold policy is bounded: only a policy naming the scan tool lists
// scans, it must list them, and only a hold; at execution a listed scan
// is authorised, another is not, and a sale completion is human-only.
func TestCheckoutPolicy_BoundedToHolds(t *testing.T) {
	pol := func(tools []string, scans ...string) Policy {
		return Policy{AllowedTools: tools, Scope: PolicyScope{EstateSaleIDs: []string{"sale_221"}},
			Conditions: PolicyConditions{MaxItemsPerRun: 1, PermittedFields: []string{"checkout_scan", "status"}, CheckoutScans: scans},
			Limits:     PolicyLimits{MaxDailyActions: 20}}
	}
	scan := []string{CheckoutScanTool}
	for _, c := range []struct {
		what string
		pol  Policy
		ok   bool
	}{
		{"holds", pol(scan, ScanHold), true},
		{"no scans named", pol(scan), false},
		{"picked up", pol(scan, ScanHold, ScanPickedUp), false},
		{"sold pending pickup", pol(scan, ScanSoldPendingPickup), false},
		{"an unknown scan", pol(scan, "paid"), false},
		{"scans on another tool's policy", pol([]string{"trove_update_item_status"}, ScanHold), false},
		{"another tool's policy", pol([]string{"trove_update_item_status"}), true},
	} {
		if field, reason := CheckoutPolicyRefusal(c.pol); (reason == "") != c.ok || !c.ok && field != "conditions.checkout_scans" {
			t.Errorf("%s: %q %q", c.what, field, reason)
		}
	}
	now := time.Date(2026, 6, 20, 12, 0, 0, 0, time.UTC)
	prop := func(scan, to string) Proposal {
		return Proposal{Action: ActionCheckoutScan, Requirement: RequireHumanOrPolicy, TargetIDs: []string{"item_1"}, SaleIDs: []string{"sale_221"},
			ExpiresAt: now.Add(time.Hour), Validation: ProposalValidation{Status: "valid"},
			Changes: []FieldChange{{TargetID: "item_1", Field: "checkout_scan", To: scan}, {TargetID: "item_1", Field: "status", From: ItemPublished, To: to}}}
	}
	hold := pol(scan, ScanHold)
	if r := PolicyContentRefusal(hold, prop(ScanHold, ItemOnHold), now); r != "" {
		t.Errorf("a hold under a hold policy: %q", r)
	}
	if r := PolicyContentRefusal(hold, prop(ScanPickedUp, ItemSold), now); r != "sale completion is never authorised by a policy" {
		t.Errorf("picked up under a hold policy: %q", r)
	}
	if r := PolicyContentRefusal(pol(scan, "x"), prop(ScanHold, ItemOnHold), now); r != "checkout scan not permitted by the policy: hold" {
		t.Errorf("a hold under a policy not listing it: %q", r)
	}
}
