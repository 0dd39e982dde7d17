package domain

import (
	"slices"
	"testing"
)

// The registry declares each action once: unique actions and executing
// tools, a known approval, permissions the owner's role grants, and a
// human-only category exactly where the approval is explicit_human.
func TestRegistry_DeclaresEachActionOnce(t *testing.T) {
	all := []string{ActionPromoteCandidate, ActionPublishItem, ActionPublishSale, ActionBulkItemUpdate, ActionStatusTransition,
		ActionArchiveItem, ActionBuyerNotify, ActionBindIdentity, ActionReleaseIdentity, ActionDisposition, ActionExportDelivery}
	seenAction, seenTool := map[string]bool{}, map[string]bool{}
	for _, a := range Actions() {
		if seenAction[a.Action] || seenTool[a.Tool] {
			t.Errorf("%s / %s declared twice", a.Action, a.Tool)
		}
		seenAction[a.Action], seenTool[a.Tool] = true, true
		if !slices.Contains(all, a.Action) {
			t.Errorf("%s is not an action constant", a.Action)
		}
		if a.Requirement != RequireExplicitHuman && a.Requirement != RequireHumanOrPolicy {
			t.Errorf("%s: requirement %q", a.Action, a.Requirement)
		}
		if (a.HumanOnly != "") != (a.Requirement == RequireExplicitHuman) {
			t.Errorf("%s: human-only %q with requirement %s", a.Action, a.HumanOnly, a.Requirement)
		}
		if len(a.Permissions) == 0 || a.ProposalTool == "" || a.Tool == "" || a.Service == "" || a.Operation == "" {
			t.Errorf("%s: incomplete declaration %+v", a.Action, a)
		}
		for _, p := range a.Permissions {
			if !slices.Contains(RolePermissions(RoleOwner), p) {
				t.Errorf("%s: permission %s is granted by no role", a.Action, p)
			}
		}
		if got, ok := ActionOf(a.Action); !ok || got.Tool != a.Tool {
			t.Errorf("ActionOf(%s) = %+v, %v", a.Action, got, ok)
		}
		if got, ok := ActionByTool(a.Tool); !ok || got.Action != a.Action {
			t.Errorf("ActionByTool(%s) = %+v, %v", a.Tool, got, ok)
		}
	}
	for _, a := range all {
		if !seenAction[a] {
			t.Errorf("action %s is not declared", a)
		}
	}
	if _, ok := ActionOf("delete_everything"); ok {
		t.Error("an unknown action was found")
	}
	// Actions returns copies: a caller cannot widen the registry.
	Actions()[0].Permissions[0] = PermSaleRead
	if Actions()[0].Permissions[0] == PermSaleRead {
		t.Error("Actions shares its permission slices")
	}
}

// Each action of the registry names the domain function its execution
// reports (ExecutionResult.DomainFunction), and an unknown action none.
// It is the registry's Operation, as in the SQL generated for live mode.
func TestRegistry_EveryActionReportsItsDomainFunction(t *testing.T) {
	if got := DomainFunction("delete_everything"); got != "" {
		t.Errorf("an unknown action reports domain function %q", got)
	}
	for _, a := range Actions() {
		if got := DomainFunction(a.Action); got != a.Operation {
			t.Errorf("DomainFunction(%s) = %q, want %q", a.Action, got, a.Operation)
		}
	}
}
