package catalog

import (
	"context"
	"fmt"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// lookupTool is Lookup, bound when the catalog is built (a direct reference
// from a constructor would be an initialization cycle).
var lookupTool func(string) (*Tool, bool)

// proposalTool gives a proposal tool its handler: the draft from the input,
// then ONE Backend call that validates it against current state and stores
// the sealed, immutable proposal. The draft chooses the action; the tool
// that will execute it, and so its version and approval, come from the
// action registry (domain.ActionOf), which also says which proposal tool
// proposes the action.
func proposalTool[In any](d Definition, draft func(In) (domain.ProposalDraft, error)) Tool {
	return define(d, func(ctx context.Context, env Env, in In) (ProposalView, Effects, error) {
		dr, err := draft(in)
		if err != nil {
			return ProposalView{}, Effects{}, err
		}
		spec, ok := domain.ActionOf(dr.Action)
		if !ok || spec.ProposalTool != d.Name {
			return ProposalView{}, Effects{}, fmt.Errorf("catalog: %s does not propose %q: %w", d.Name, dr.Action, domain.ErrInvalidInput)
		}
		exec, ok := lookupTool(spec.Tool)
		if !ok {
			return ProposalView{}, Effects{}, fmt.Errorf("catalog: no executor %s: %w", spec.Tool, domain.ErrInvalidInput)
		}
		dr.Tool, dr.Requirement = domain.ExecutingTool{Name: exec.Name, Version: exec.Version}, string(exec.Approval)
		prop, out, err := env.Backend.CreateProposal(ctx, env.Principal, env.Write, dr, env.Seal)
		if err != nil {
			return ProposalView{}, Effects{}, err
		}
		return proposalView(env.Principal.Role, prop), Effects{Related: out.Related, Outcome: out}, nil
	})
}

// proposalView projects a proposal for the agent: everything it needs to
// wait for, and explain, the seller's decision — with each change projected
// for role like every item view (projectChanges). The hash is the hash of
// the whole proposal, so it is withheld from a role that sees a change
// redacted: the redacted values are low-entropy (a price), and hashing
// guesses against the hash would reveal them.
func proposalView(role string, p domain.Proposal) ProposalView {
	decision := map[string]string{
		domain.ProposalPending:  "human_approval_required",
		domain.ProposalApproved: "allowed",
		domain.ProposalExecuted: "allowed",
		domain.ProposalDenied:   "blocked",
		domain.ProposalExpired:  "expired",
	}[p.Status]
	if p.Status == domain.ProposalPending && p.Requirement == string(ApprovalHumanOrPolicy) {
		decision = "human_approval_required" // a policy, if one applies, decides at execution time
	}
	v := ProposalView{
		ProposalID: p.ID, ProposalHash: p.Hash, Status: p.Status, Tool: p.Tool, Action: p.Action,
		TargetIDs: p.TargetIDs, ExpectedVersions: p.ExpectedVersions, Changes: projectChanges(role, p.Changes), Impact: p.Impact,
		Validation: p.Validation, Approval: ProposalApproval{Requirement: p.Requirement, Decision: decision},
		Notification: p.Notification, RequestedBy: p.RequestedBy.ActorID, CreatedAt: p.CreatedAt, ExpiresAt: p.ExpiresAt,
	}
	for _, c := range v.Changes {
		if c.Redacted {
			v.ProposalHash = ""
			break
		}
	}
	if v.TargetIDs == nil {
		v.TargetIDs = []string{}
	}
	if v.ExpectedVersions == nil {
		v.ExpectedVersions = []TargetVersion{}
	}
	return v
}

func one(id string, version int) ([]string, []domain.TargetVersion) {
	return []string{id}, []domain.TargetVersion{{ID: id, Version: version}}
}

func many(ids []string, versions []ItemVersion) ([]string, []domain.TargetVersion) {
	evs := make([]domain.TargetVersion, 0, len(versions))
	for _, v := range versions {
		evs = append(evs, domain.TargetVersion{ID: v.ID, Version: v.Version})
	}
	return ids, evs
}
