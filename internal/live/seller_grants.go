package live

import (
	"context"
	"fmt"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// Human approval grants (§17) in live mode. They are issued and revoked
// under the signed-in seller's own access token: the database resolves the
// user from the token's `sub`, and refuses a grant whose actor or tenant is
// not that user's, a user without approval.grant in the proposal's tenant,
// and a proposal that is not pending with the hash the seller reviewed.

// IssueGrant records a human grant for a pending proposal whose current
// hash is g.ProposalHash (seller_issue_grant). g.IssuedBy.ActorID and
// g.TenantID must be the signed-in user and one of its tenants. The grant
// is single use and never outlives its proposal; the proposal becomes
// approved.
func (s *Seller) IssueGrant(ctx context.Context, g domain.Grant) (domain.Grant, error) {
	if g.IssuedBy.Type != domain.IssuerHuman || g.IssuedBy.ActorID == "" || g.IssuedBy.Surface == "" {
		return domain.Grant{}, domain.Invalid("issued_by", "a human grant names its actor and surface")
	}
	if g.TargetIDs == nil {
		g.TargetIDs = []string{}
	}
	var out domain.Grant
	if err := s.call(ctx, "seller_issue_grant", map[string]any{"p_tenant_id": g.TenantID, "p_actor_id": g.IssuedBy.ActorID, "p_grant": g}, &out); err != nil {
		return domain.Grant{}, err
	}
	if out.ID == "" {
		return domain.Grant{}, s.b.unavailable("seller_issue_grant", fmt.Errorf("answer without a grant"))
	}
	return out, nil
}

// RevokeGrant revokes an active grant of tenantID (seller_revoke_grant):
// it can never authorise afterwards. actorID must be the signed-in user,
// holding approval.grant in the tenant.
func (s *Seller) RevokeGrant(ctx context.Context, tenantID, grantID, actorID string) (domain.Grant, error) {
	var out domain.Grant
	if err := s.call(ctx, "seller_revoke_grant", map[string]any{"p_tenant_id": tenantID, "p_grant_id": grantID, "p_actor_id": actorID}, &out); err != nil {
		return domain.Grant{}, err
	}
	if out.ID == "" {
		return domain.Grant{}, s.b.unavailable("seller_revoke_grant", fmt.Errorf("answer without a grant"))
	}
	return out, nil
}
