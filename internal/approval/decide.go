package approval

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// Decision values (§19 approval_decision).
const (
	DecisionAllowed          = "allowed"
	DecisionAllowedByPolicy  = "allowed_by_policy"
	DecisionProposalRequired = "proposal_required"
	DecisionHumanRequired    = "human_approval_required"
	DecisionBlocked          = "blocked"
	DecisionExpired          = "expired"
	DecisionRevoked          = "revoked"
)

// Decision is the approval step's verdict on one execution attempt. When
// Err is nil, Auth carries the authority into the execution transaction.
type Decision struct {
	Decision string
	Err      error // a domain approval sentinel, wrapped with the reason
	Reason   string
	Auth     domain.Authorization
}

// Resolve decides whether proposal p may be executed now by tool on behalf
// of principal, given the grants issued for it and the tenant's policies
// naming tool. Only the client that proposed p, acting for the same actor,
// may execute it, whatever authorises it (a grant or a policy). It
// recomputes the proposal hash: content edited after approval is
// proposal_changed.
func Resolve(now time.Time, tool string, principal domain.Principal, p domain.Proposal, grants []domain.Grant, policies []domain.Policy, usage map[string]domain.PolicyUsage) Decision {
	block := func(decision string, sentinel error, reason string) Decision {
		return Decision{Decision: decision, Err: domain.Because(sentinel, "%s", reason), Reason: reason}
	}
	if p.Tool.Name != tool {
		return block(DecisionBlocked, domain.ErrApprovalInvalid, fmt.Sprintf("proposal %s is executed by %s, not %s", p.ID, p.Tool.Name, tool))
	}
	if err := domain.RequireRequester(principal, p); err != nil {
		return Decision{Decision: DecisionBlocked, Err: err, Reason: "requested by another client"}
	}
	h, err := Hash(p)
	if err != nil || h != p.Hash {
		return block(DecisionBlocked, domain.ErrProposalChanged, fmt.Sprintf("proposal %s no longer matches its hash", p.ID))
	}
	switch p.Status {
	case domain.ProposalExecuted:
		return block(DecisionBlocked, domain.ErrApprovalConsumed, fmt.Sprintf("proposal %s was already executed", p.ID))
	case domain.ProposalDenied:
		return block(DecisionBlocked, domain.ErrApprovalInvalid, fmt.Sprintf("the seller rejected proposal %s", p.ID))
	}
	if !now.Before(p.ExpiresAt) {
		return block(DecisionExpired, domain.ErrApprovalExpired, fmt.Sprintf("proposal %s expired at %s", p.ID, p.ExpiresAt.Format(time.RFC3339)))
	}
	// A human grant bound to exactly this proposal, hash, tool and targets.
	var failures []Decision
	for _, g := range grants {
		if d := checkGrant(now, tool, p, g); d.Err != nil {
			failures = append(failures, d)
			continue
		}
		return Decision{Decision: DecisionAllowed, Reason: "grant " + g.ID,
			Auth: domain.Authorization{Decision: DecisionAllowed, GrantID: g.ID, ProposalHash: p.Hash}}
	}
	// A policy, where the tool allows one.
	var policyReason string
	if p.Requirement == domain.RequireHumanOrPolicy {
		for _, pol := range policies {
			ok, reason := EvaluatePolicy(pol, p, tool, usage[pol.ID], now)
			if ok {
				return Decision{Decision: DecisionAllowedByPolicy, Reason: reason,
					Auth: domain.Authorization{Decision: DecisionAllowedByPolicy, PolicyID: pol.ID, PolicyVersion: pol.Version, ProposalHash: p.Hash}}
			}
			if policyReason == "" {
				policyReason = reason
			}
		}
	}
	if len(failures) > 0 {
		return worst(failures)
	}
	reason := fmt.Sprintf("proposal %s has no approval yet: the seller approves it in `trovesnap approve`", p.ID)
	if policyReason != "" {
		reason += " (no policy applies: " + policyReason + ")"
	}
	return block(DecisionHumanRequired, domain.ErrApprovalRequired, reason)
}

// checkGrant checks one grant against the proposal and tool. Its binding
// (BoundTo) is not compared: both backends make it the requester of the
// proposal the grant is for (the store reads it from the proposal row; live
// stores it from the proposal at issue, immutable), the first case below
// holds the grant to p, and Resolve has already refused, by
// RequireRequester, any principal but p's requester.
func checkGrant(now time.Time, tool string, p domain.Proposal, g domain.Grant) Decision {
	bad := func(decision string, sentinel error, reason string) Decision {
		// The grant's id is part of the reason a model sees: with several
		// grants, it says which one failed.
		return Decision{Decision: decision, Err: domain.Because(sentinel, "grant %s: %s", g.ID, reason), Reason: reason}
	}
	switch {
	case g.TenantID != p.TenantID || g.ProposalID != p.ID:
		return bad(DecisionBlocked, domain.ErrApprovalInvalid, "issued for another proposal")
	case g.ProposalHash != p.Hash:
		return bad(DecisionBlocked, domain.ErrProposalChanged, "issued for another version of the proposal")
	case g.Tool != tool:
		return bad(DecisionBlocked, domain.ErrApprovalInvalid, "issued for "+g.Tool)
	case !sameSet(g.TargetIDs, p.TargetIDs):
		return bad(DecisionBlocked, domain.ErrApprovalInvalid, "issued for other targets")
	case g.Status == domain.GrantRevoked || g.RevokedAt != nil:
		return bad(DecisionRevoked, domain.ErrApprovalRevoked, "revoked")
	case g.Status == domain.GrantConsumed || g.ConsumedAt != nil:
		return bad(DecisionBlocked, domain.ErrApprovalConsumed, "already used")
	case g.Status != domain.GrantActive:
		return bad(DecisionBlocked, domain.ErrApprovalInvalid, "not active")
	case !now.Before(g.ExpiresAt):
		return bad(DecisionExpired, domain.ErrApprovalExpired, "expired at "+g.ExpiresAt.Format(time.RFC3339))
	}
	if err := CoveredBy(p, g.Constraints); err != nil {
		return bad(DecisionBlocked, domain.ErrApprovalInvalid, err.Error())
	}
	return Decision{}
}

// CoveredBy checks that a grant's constraints allow what the proposal does.
func CoveredBy(p domain.Proposal, c domain.GrantConstraints) error {
	switch {
	case len(p.TargetIDs) > c.MaxItems:
		return fmt.Errorf("%d targets exceed the grant's maximum of %d", len(p.TargetIDs), c.MaxItems)
	case p.Impact.EstimatedCostUSD > c.MaxCostUSD:
		return fmt.Errorf("cost $%.2f exceeds the grant's $%.2f", p.Impact.EstimatedCostUSD, c.MaxCostUSD)
	case p.Impact.PublicRecordsChanged > 0 && !c.AllowPublication:
		return fmt.Errorf("the grant does not allow publication")
	case p.Impact.NotificationsSent > 0 && !c.AllowNotifications:
		return fmt.Errorf("the grant does not allow notifications")
	}
	return nil
}

// worst picks the failure to report when no grant is usable: the most
// specific state wins (changed, consumed, revoked, expired, invalid).
func worst(ds []Decision) Decision {
	rank := func(d Decision) int {
		for i, s := range []error{domain.ErrProposalChanged, domain.ErrApprovalConsumed, domain.ErrApprovalRevoked, domain.ErrApprovalExpired, domain.ErrApprovalInvalid} {
			if errors.Is(d.Err, s) {
				return i
			}
		}
		return 99
	}
	best := ds[0]
	for _, d := range ds[1:] {
		if rank(d) < rank(best) {
			best = d
		}
	}
	return best
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

// DefaultConstraints are the tightest constraints that cover a proposal.
func DefaultConstraints(p domain.Proposal) domain.GrantConstraints {
	return domain.GrantConstraints{
		MaxItems:           len(p.TargetIDs),
		MaxCostUSD:         p.Impact.EstimatedCostUSD,
		AllowPublication:   p.Impact.PublicRecordsChanged > 0,
		AllowNotifications: p.Impact.NotificationsSent > 0,
	}
}
