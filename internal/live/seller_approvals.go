package live

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// The human approval surface in live mode (domain.ApprovalAdmin, with
// IssueGrant and RevokeGrant in seller_grants.go): every method is one
// seller_* RPC under the signed-in user's token, and the database decides —
// the user's memberships, the role's permissions, the tenant boundary. A
// tenant the user is not a member of is refused (permission denied); a
// record of such a tenant answers like a missing one. Actor arguments may
// only name the signed-in user ("" means the signed-in user).

// The Seller is the human approval surface; this fails the build if it drifts.
var _ domain.ApprovalAdmin = (*Seller)(nil)

// SellerIdentity is the signed-in user as the project knows it.
type SellerIdentity struct {
	// AuthSubject is the Supabase Auth user id of the session.
	AuthSubject string `json:"auth_subject,omitempty"`
	// Linked is false when the Auth account is linked to no TroveSnap user:
	// it can sign in but act nowhere.
	Linked      bool               `json:"linked"`
	UserID      string             `json:"user_id"`
	DisplayName string             `json:"display_name"`
	Email       string             `json:"email"`
	Memberships []SellerMembership `json:"memberships"`
}

// SellerMembership is one tenant the user belongs to.
type SellerMembership struct {
	TenantID     string   `json:"tenant_id"`
	TenantName   string   `json:"tenant_name"`
	MembershipID string   `json:"membership_id"`
	Role         string   `json:"role"`
	SaleScoped   bool     `json:"sale_scoped"`
	Permissions  []string `json:"permissions"`
}

// Membership picks the tenant a command acts in: tenantID when given (the
// user must be a member), else the user's only tenant.
func (id SellerIdentity) Membership(tenantID string) (SellerMembership, error) {
	if !id.Linked {
		return SellerMembership{}, fmt.Errorf("live: %w", domain.Because(domain.ErrPermissionDenied, "the signed-in account is not linked to a TroveSnap user (ask an owner to link it)"))
	}
	var tenants []string
	for _, m := range id.Memberships {
		if tenantID != "" && m.TenantID == tenantID {
			return m, nil
		}
		tenants = append(tenants, m.TenantID)
	}
	switch {
	case tenantID != "":
		return SellerMembership{}, fmt.Errorf("live: %w", domain.Because(domain.ErrPermissionDenied, "%s is not a member of %s (member of: %s)", id.UserID, tenantID, tenantList(tenants)))
	case len(id.Memberships) == 1:
		return id.Memberships[0], nil
	case len(id.Memberships) == 0:
		return SellerMembership{}, fmt.Errorf("live: %w", domain.Because(domain.ErrPermissionDenied, "%s is a member of no tenant", id.UserID))
	}
	return SellerMembership{}, fmt.Errorf("live: %s is a member of %s: choose one tenant: %w", id.UserID, strings.Join(tenants, ", "), domain.ErrInvalidInput)
}

func tenantList(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// WhoAmI returns the signed-in user and its memberships.
func (s *Seller) WhoAmI(ctx context.Context) (SellerIdentity, error) {
	var out struct {
		User *struct {
			ID          string `json:"id"`
			DisplayName string `json:"display_name"`
			Email       string `json:"email"`
		} `json:"user"`
		Memberships []SellerMembership `json:"memberships"`
	}
	if err := s.call(ctx, "seller_whoami", map[string]any{}, &out); err != nil {
		return SellerIdentity{}, err
	}
	id := SellerIdentity{Memberships: out.Memberships}
	if id.Memberships == nil {
		id.Memberships = []SellerMembership{}
	}
	if out.User != nil && out.User.ID != "" {
		id.Linked, id.UserID, id.DisplayName, id.Email = true, out.User.ID, out.User.DisplayName, out.User.Email
	}
	return id, nil
}

// ListProposals lists a tenant's proposals, newest first; status filters
// with expiry applied ("expired" includes pending proposals past it).
func (s *Seller) ListProposals(ctx context.Context, tenantID, status string) ([]domain.Proposal, error) {
	out := []domain.Proposal{}
	if err := s.call(ctx, "seller_list_proposals", map[string]any{"p_tenant_id": tenantID, "p_status": status}, &out); err != nil {
		return nil, err
	}
	return sellerList(out), nil
}

// GetProposalAdmin reads one proposal of a tenant, as sealed: its hash can
// be recomputed from what is returned.
func (s *Seller) GetProposalAdmin(ctx context.Context, tenantID, id string) (domain.Proposal, error) {
	var p domain.Proposal
	if err := s.call(ctx, "seller_get_proposal", map[string]any{"p_tenant_id": tenantID, "p_proposal_id": id}, &p); err != nil {
		return domain.Proposal{}, err
	}
	return p, nil
}

// DenyProposal rejects a pending proposal as the signed-in user, who must
// hold approval.grant; the database records who and why with an
// approval_denied event under the proposal's correlation id.
func (s *Seller) DenyProposal(ctx context.Context, tenantID, proposalID, actorID, surface, reason string) error {
	return s.call(ctx, "seller_deny_proposal", map[string]any{"p_tenant_id": tenantID, "p_proposal_id": proposalID,
		"p_actor_id": actorID, "p_surface": surface, "p_reason": reason}, nil)
}

// ListGrants lists a tenant's grants, newest first; "expired" means active
// grants past their expiry.
func (s *Seller) ListGrants(ctx context.Context, tenantID, status string) ([]domain.Grant, error) {
	out := []domain.Grant{}
	if err := s.call(ctx, "seller_list_grants", map[string]any{"p_tenant_id": tenantID, "p_status": status}, &out); err != nil {
		return nil, err
	}
	return sellerList(out), nil
}

// CreatePolicy stores a new automation policy, disabled, at version 1. The
// signed-in user must hold policy.manage in pol.TenantID; pol.CreatedBy may
// only name that user. The RPC validates the policy as
// approval.ValidatePolicy does (callers validate first for a friendlier
// message) and checks every scoped sale is the tenant's.
func (s *Seller) CreatePolicy(ctx context.Context, pol domain.Policy) (domain.Policy, error) {
	body := map[string]any{
		"name": pol.Name, "tenant_id": pol.TenantID, "created_by": pol.CreatedBy,
		"allowed_tools": sellerList(pol.AllowedTools),
		"scope":         map[string]any{"estate_sale_ids": sellerList(pol.Scope.EstateSaleIDs)},
		"conditions": map[string]any{"maximum_items_per_run": pol.Conditions.MaxItemsPerRun,
			"permitted_fields": sellerList(pol.Conditions.PermittedFields), "require_no_conflicts": pol.Conditions.RequireNoConflicts},
		"limits": map[string]any{"maximum_daily_actions": pol.Limits.MaxDailyActions, "maximum_cost_usd_per_day": pol.Limits.MaxCostUSDPerDay},
	}
	if len(pol.Conditions.CheckoutScans) > 0 { // the scans a checkout-scan policy authorises (a hold)
		body["conditions"].(map[string]any)["checkout_scans"] = pol.Conditions.CheckoutScans
	}
	var out domain.Policy
	if err := s.call(ctx, "seller_create_policy", map[string]any{"p_tenant_id": pol.TenantID, "p_policy": body}, &out); err != nil {
		return domain.Policy{}, err
	}
	return out, nil
}

// ListPolicies lists a tenant's policies by id.
func (s *Seller) ListPolicies(ctx context.Context, tenantID string) ([]domain.Policy, error) {
	out := []domain.Policy{}
	if err := s.call(ctx, "seller_list_policies", map[string]any{"p_tenant_id": tenantID}, &out); err != nil {
		return nil, err
	}
	return sellerList(out), nil
}

// GetPolicy reads one policy of a tenant the user is a member of; any other
// id is an unknown reference.
func (s *Seller) GetPolicy(ctx context.Context, id string) (domain.Policy, error) {
	var out domain.Policy
	if err := s.call(ctx, "seller_get_policy", map[string]any{"p_policy_id": id}, &out); err != nil {
		return domain.Policy{}, err
	}
	return out, nil
}

// SetPolicyStatus enables, disables or revokes a policy (revoked is final)
// as the signed-in user, who must hold policy.manage. Every change is a
// new version, kept with the others.
func (s *Seller) SetPolicyStatus(ctx context.Context, id, status, actorID string) (domain.Policy, error) {
	var out domain.Policy
	if err := s.call(ctx, "seller_set_policy_status", map[string]any{"p_policy_id": id, "p_status": status, "p_actor_id": actorID}, &out); err != nil {
		return domain.Policy{}, err
	}
	return out, nil
}

// MemberRole returns the role of userID in one of the signed-in user's
// tenants ("" when userID is no member of it).
func (s *Seller) MemberRole(ctx context.Context, tenantID, userID string) (string, error) {
	var role string
	if err := s.call(ctx, "seller_member_role", map[string]any{"p_tenant_id": tenantID, "p_user_id": userID}, &role); err != nil {
		return "", err
	}
	return role, nil
}

// CurrentVersions returns the current version of each target id (items,
// sales, candidates, staged exports — migration 10 extends the RPC to
// exports) of the tenant; unknown ids are absent.
func (s *Seller) CurrentVersions(ctx context.Context, tenantID string, ids []string) (map[string]int, error) {
	out := map[string]int{}
	if len(ids) == 0 {
		return out, nil
	}
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	if err := s.call(ctx, "seller_current_versions", map[string]any{"p_tenant_id": tenantID, "p_ids": ids}, &out); err != nil {
		return nil, err
	}
	if out == nil {
		out = map[string]int{}
	}
	return out, nil
}

// AuditTrail returns the events of one correlation id of the tenant (a
// proposal, its approval and its execution) in append order; "" has none.
func (s *Seller) AuditTrail(ctx context.Context, tenantID, correlationID string) ([]domain.Event, error) {
	if correlationID == "" {
		return nil, nil
	}
	out := []domain.Event{}
	if err := s.call(ctx, "seller_audit_trail", map[string]any{"p_tenant_id": tenantID, "p_correlation_id": correlationID}, &out); err != nil {
		return nil, err
	}
	return sellerList(out), nil
}

func sellerList[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
