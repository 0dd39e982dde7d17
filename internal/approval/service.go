package approval

import (
	"context"
	"fmt"
	"time"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// Surface names the human surface a grant came from.
const SurfaceApproveTUI = "trovesnap_approve"

// Grant lifetime bounds: a grant defaults to 30 minutes and may be set to at
// most 24 hours (the tenant's bound), never past its proposal's expiry.
const (
	DefaultGrantTTL = 30 * time.Minute
	MaxGrantTTL     = 24 * time.Hour
)

// Service is the human approval surface's logic: the approval terminal (and
// tests, acting as the human) call it. It is never reachable from MCP.
type Service struct {
	Admin domain.ApprovalAdmin
	Clock domain.Clock
	IDs   domain.IDs
}

// ApproveRequest is a human's decision to approve one proposal.
type ApproveRequest struct {
	TenantID     string
	ProposalID   string
	ExpectedHash string // the hash the human reviewed; a changed proposal cannot be approved
	ActorID      string
	Surface      string
	Constraints  *domain.GrantConstraints // nil: the tightest that cover the proposal
	TTL          time.Duration            // 0: DefaultGrantTTL
}

// Review is what the human needs to decide: the proposal, whether it still
// matches its hash, and the current version of each target.
type Review struct {
	Proposal        domain.Proposal
	HashValid       bool
	CurrentVersions map[string]int
	Stale           []string // targets whose version moved since the proposal
}

// Review loads a proposal for a human to decide on.
func (s *Service) Review(ctx context.Context, tenantID, proposalID string) (Review, error) {
	p, err := s.Admin.GetProposalAdmin(ctx, tenantID, proposalID)
	if err != nil {
		return Review{}, err
	}
	h, err := Hash(p)
	r := Review{Proposal: p, HashValid: err == nil && h == p.Hash}
	ids := make([]string, 0, len(p.ExpectedVersions))
	for _, ev := range p.ExpectedVersions {
		ids = append(ids, ev.ID)
	}
	if r.CurrentVersions, err = s.Admin.CurrentVersions(ctx, tenantID, ids); err != nil {
		return Review{}, err
	}
	for _, ev := range p.ExpectedVersions {
		if r.CurrentVersions[ev.ID] != ev.Version {
			r.Stale = append(r.Stale, ev.ID)
		}
	}
	return r, nil
}

// Approve issues a human grant for a proposal the actor reviewed. It refuses
// a proposal that changed, went stale, expired or is no longer pending, an
// actor without approval.grant, and constraints that would not cover it.
func (s *Service) Approve(ctx context.Context, req ApproveRequest) (domain.Grant, error) {
	role, err := s.Admin.MemberRole(ctx, req.TenantID, req.ActorID)
	if err != nil {
		return domain.Grant{}, err
	}
	if !(domain.Principal{Role: role}).Has(domain.PermApprovalGrant) {
		return domain.Grant{}, domain.Because(domain.ErrPermissionDenied, "%s (%s) may not approve", req.ActorID, roleOrNone(role))
	}
	r, err := s.Review(ctx, req.TenantID, req.ProposalID)
	if err != nil {
		return domain.Grant{}, err
	}
	p := r.Proposal
	now := s.Clock.Now()
	switch {
	case !r.HashValid || (req.ExpectedHash != "" && req.ExpectedHash != p.Hash):
		return domain.Grant{}, domain.Because(domain.ErrProposalChanged, "proposal %s changed since it was reviewed", p.ID)
	case len(r.Stale) > 0:
		return domain.Grant{}, domain.Because(domain.ErrStaleVersion, "targets changed since the proposal was made (%v): it cannot be approved", r.Stale)
	case p.Status != domain.ProposalPending:
		return domain.Grant{}, domain.Because(domain.ErrTransitionInvalid, "proposal %s is %s", p.ID, p.Status)
	case !now.Before(p.ExpiresAt):
		return domain.Grant{}, domain.Because(domain.ErrApprovalExpired, "proposal %s expired", p.ID)
	}
	c := DefaultConstraints(p)
	if req.Constraints != nil {
		c = *req.Constraints
	}
	if err := CoveredBy(p, c); err != nil {
		return domain.Grant{}, domain.Invalid("constraints", err.Error()+": such a grant could not execute this proposal")
	}
	ttl := req.TTL
	if ttl == 0 {
		ttl = DefaultGrantTTL
	}
	if ttl < time.Minute || ttl > MaxGrantTTL {
		return domain.Grant{}, domain.Invalid("expiry", fmt.Sprintf("between 1 minute and %s", MaxGrantTTL))
	}
	exp := now.Add(ttl)
	if exp.After(p.ExpiresAt) {
		exp = p.ExpiresAt // a grant never outlives its proposal
	}
	surface := req.Surface
	if surface == "" {
		surface = SurfaceApproveTUI
	}
	return s.Admin.IssueGrant(ctx, domain.Grant{
		ID: s.IDs.New(domain.PrefixApproval), TenantID: p.TenantID, ProposalID: p.ID, ProposalHash: p.Hash,
		IssuedBy: domain.GrantIssuer{Type: domain.IssuerHuman, ActorID: req.ActorID, Surface: surface},
		Tool:     p.Tool.Name, TargetIDs: p.TargetIDs, Constraints: c, BoundTo: p.RequestedBy,
		Status: domain.GrantActive, SingleUse: true, IssuedAt: now, ExpiresAt: exp,
	})
}

// Deny rejects a pending proposal with an optional reason (recorded).
func (s *Service) Deny(ctx context.Context, tenantID, proposalID, actorID, surface, reason string) error {
	role, err := s.Admin.MemberRole(ctx, tenantID, actorID)
	if err != nil {
		return err
	}
	if !(domain.Principal{Role: role}).Has(domain.PermApprovalGrant) {
		return domain.Because(domain.ErrPermissionDenied, "%s (%s) may not decide on proposals", actorID, roleOrNone(role))
	}
	if surface == "" {
		surface = SurfaceApproveTUI
	}
	if len(reason) > 500 {
		return domain.Invalid("reason", "at most 500 characters")
	}
	return s.Admin.DenyProposal(ctx, tenantID, proposalID, actorID, surface, reason)
}

// Revoke revokes an active grant.
func (s *Service) Revoke(ctx context.Context, tenantID, grantID, actorID string) (domain.Grant, error) {
	role, err := s.Admin.MemberRole(ctx, tenantID, actorID)
	if err != nil {
		return domain.Grant{}, err
	}
	if !(domain.Principal{Role: role}).Has(domain.PermApprovalGrant) {
		return domain.Grant{}, domain.Because(domain.ErrPermissionDenied, "%s (%s) may not revoke grants", actorID, roleOrNone(role))
	}
	return s.Admin.RevokeGrant(ctx, tenantID, grantID, actorID)
}

func roleOrNone(r string) string {
	if r == "" {
		return "not a member"
	}
	return r
}
