package domain

import (
	"errors"
	"slices"
	"testing"
	"time"
)

// The registry declares each action once: unique actions and executing
// tools, a known approval, permissions the owner's role grants, and a
// human-only category exactly where the approval is explicit_human.
func TestRegistry_DeclaresEachActionOnce(t *testing.T) {
	all := []string{ActionPromoteCandidate, ActionPublishItem, ActionPublishSale, ActionBulkItemUpdate, ActionStatusTransition,
		ActionArchiveItem, ActionBuyerNotify, ActionBindIdentity, ActionReleaseIdentity, ActionDisposition, ActionExportDelivery,
		ActionCheckoutScan}
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

// A draft that pairs its action with another executing tool or a weaker
// approval than the registry's is refused by StartProposal, in every
// backend that builds proposals with it; the registry's own pairing passes.
func TestRegistry_StartProposalHoldsTheDraftToTheRegistry(t *testing.T) {
	p := Principal{TenantID: "tenant_1", ActorID: "user_1", Role: RoleOwner}
	draft := func(action, tool, req string) ProposalDraft {
		return ProposalDraft{Action: action, Tool: ExecutingTool{Name: tool, Version: "1.0.0"}, Requirement: req,
			TargetIDs: []string{"item_1"}, ExpectedVersions: []TargetVersion{{ID: "item_1", Version: 1}}}
	}
	for _, a := range Actions() {
		if _, err := StartProposal(p, draft(a.Action, a.Tool, a.Requirement), time.Unix(0, 0), 50); err != nil {
			t.Errorf("%s with its registry pairing: %v", a.Action, err)
		}
	}
	var ie *InputError
	for name, d := range map[string]ProposalDraft{
		"release under the bind tool":          draft(ActionReleaseIdentity, "trove_bind_item_identity", RequireHumanOrPolicy),
		"archive under the status tool":        draft(ActionArchiveItem, "trove_update_item_status", RequireExplicitHuman),
		"publication with policy approval":     draft(ActionPublishItem, "trove_publish_item", RequireHumanOrPolicy),
		"an action the registry does not know": draft("delete_everything", "trove_publish_item", RequireExplicitHuman),
	} {
		if _, err := StartProposal(p, d, time.Unix(0, 0), 50); !errors.As(err, &ie) || ie.Field != "action" {
			t.Errorf("%s: %v, want invalid_input on action", name, err)
		}
	}
}
