package catalog

import (
	"slices"
	"strings"
	"testing"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// Every controlled tool of the catalog is an action of the registry, with
// the registry's approval, permissions and domain function, and every
// action's proposing tool is a proposal tool.
func TestRegistry_CatalogControlledToolsAreTheRegistrys(t *testing.T) {
	n := 0
	for _, tool := range All() {
		d := tool.Definition
		if d.Tier != TierControlledAction {
			continue
		}
		n++
		a, ok := domain.ActionByTool(d.Name)
		if !ok {
			t.Errorf("%s is a controlled tool the registry does not declare", d.Name)
			continue
		}
		if string(d.Approval) != a.Requirement || !slices.Equal(d.Permissions, a.Permissions) ||
			d.Domain.Service != a.Service || d.Domain.Operation != a.Operation {
			t.Errorf("%s: catalog %s %v %s.%s, registry %s %v %s.%s", d.Name, d.Approval, d.Permissions, d.Domain.Service, d.Domain.Operation,
				a.Requirement, a.Permissions, a.Service, a.Operation)
		}
	}
	if n != len(domain.Actions()) {
		t.Errorf("%d controlled tools, %d actions", n, len(domain.Actions()))
	}
	for _, a := range domain.Actions() {
		p, ok := Lookup(a.ProposalTool)
		if !ok || p.Definition.Tier != TierActionProposal {
			t.Errorf("%s: proposal tool %s is not a proposal tool of the catalog", a.Action, a.ProposalTool)
		}
	}
}

// Every proposal tool of the catalog proposes at least one action of the
// registry: the executing tool of its drafts is the registry's, so a
// proposal tool the registry does not know could never make a proposal.
func TestRegistry_EveryProposalToolProposesARegistryAction(t *testing.T) {
	for _, tool := range All() {
		if tool.Tier != TierActionProposal {
			continue
		}
		if !slices.ContainsFunc(domain.Actions(), func(a domain.ActionSpec) bool { return a.ProposalTool == tool.Name }) {
			t.Errorf("%s proposes no action of the registry", tool.Name)
		}
	}
}

// A proposal tool's description names the controlled tool that executes
// each action it proposes, and that tool's description names the proposal
// tool: the text a model reads cannot drift from the registry.
func TestRegistry_DescriptionsNameTheRegistrysTools(t *testing.T) {
	for _, a := range domain.Actions() {
		p, _ := Lookup(a.ProposalTool)
		x, _ := Lookup(a.Tool)
		if p == nil || x == nil {
			t.Fatalf("%s: %s or %s missing from the catalog", a.Action, a.ProposalTool, a.Tool)
		}
		if !strings.Contains(p.Definition.Description, a.Tool) {
			t.Errorf("%s's description does not name %s, which executes %s", a.ProposalTool, a.Tool, a.Action)
		}
		if !strings.Contains(x.Definition.Description, a.ProposalTool) {
			t.Errorf("%s's description does not name %s, which proposes %s", a.Tool, a.ProposalTool, a.Action)
		}
	}
}
