package domain

import (
	"slices"
	"testing"
)

// The exported lists say exactly what the rules decide: a step is listed
// iff CanTransition allows it, and every permission any role grants is
// listed once.
func TestRulesExport_ListsWhatTheRulesDecide(t *testing.T) {
	steps := ItemTransitions()
	for _, from := range append(ItemStatuses(), "unknown") {
		for _, to := range append(ItemStatuses(), "unknown") {
			listed := slices.Contains(steps, Transition{From: from, To: to})
			if listed != CanTransition(from, to) {
				t.Errorf("%s → %s: listed %v, CanTransition %v", from, to, listed, CanTransition(from, to))
			}
		}
	}
	perms := Permissions()
	if !slices.IsSorted(perms) || len(slices.Compact(slices.Clone(perms))) != len(perms) {
		t.Errorf("Permissions() = %v: not sorted and unique", perms)
	}
	for _, r := range Roles() {
		for _, p := range RolePermissions(r) {
			if !slices.Contains(perms, p) {
				t.Errorf("%s grants %s, which Permissions() omits", r, p)
			}
		}
	}
	if !slices.Equal(perms, RolePermissions(RoleOwner)) {
		t.Errorf("the owner grants %v, all permissions are %v", RolePermissions(RoleOwner), perms)
	}
	if len(SaleStatuses()) != 5 || len(ProposalStatuses()) != 5 {
		t.Errorf("statuses: %v %v", SaleStatuses(), ProposalStatuses())
	}
}

// Every status list the SQL is generated from names statuses that exist:
// a subset of the item or sale lifecycle, without repeats, and the public
// item statuses are exactly those PublicItemStatus names.
func TestRulesExport_StatusSubsetsNameRealStatuses(t *testing.T) {
	for name, c := range map[string]struct{ list, of []string }{
		"PublicItemStatuses":      {PublicItemStatuses(), ItemStatuses()},
		"ReportableStatuses":      {ReportableStatuses, ItemStatuses()},
		"UnsoldItemStatuses":      {UnsoldItemStatuses(), ItemStatuses()},
		"PublicSaleStatuses":      {PublicSaleStatuses, SaleStatuses()},
		"DispositionSaleStatuses": {DispositionSaleStatuses(), SaleStatuses()},
	} {
		if len(c.list) == 0 || len(slices.Compact(slices.Sorted(slices.Values(c.list)))) != len(c.list) {
			t.Errorf("%s = %v: empty or repeats", name, c.list)
		}
		for _, s := range c.list {
			if !slices.Contains(c.of, s) {
				t.Errorf("%s lists %q, which is no status of the lifecycle %v", name, s, c.of)
			}
		}
	}
	for _, s := range append(ItemStatuses(), "unknown") {
		_, public := PublicItemStatus(s)
		if public != slices.Contains(PublicItemStatuses(), s) {
			t.Errorf("%s: PublicItemStatus says public %v, PublicItemStatuses disagrees", s, public)
		}
	}
	if GrantStatuses()[0] != GrantActive || slices.Contains(GrantStatuses(), GrantExpired) {
		t.Errorf("GrantStatuses() = %v: expired is derived, never stored", GrantStatuses())
	}
}
