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
