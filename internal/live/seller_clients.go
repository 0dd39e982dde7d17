package live

import (
	"context"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// The seller surface manages clients and limits (`trovesnap client …`,
// `trovesnap limits …` and the approval terminal's client list).
var _ domain.ClientAdmin = (*Seller)(nil)

// RegisterClient registers a client for a member of a tenant the signed-in
// user manages clients of. The credential is generated here and only its
// hash is sent: the token crosses no network and the project never holds
// it. It is returned once, for the caller to show. in.CreatedBy may only
// name the signed-in user (empty: the signed-in user); the RPC decides.
func (s *Seller) RegisterClient(ctx context.Context, in domain.NewClient) (domain.Client, string, error) {
	if err := domain.ValidateNewClient(in); err != nil {
		return domain.Client{}, "", err
	}
	token := domain.NewClientToken()
	groups := in.Groups
	if groups == nil {
		groups = []string{}
	}
	var c domain.Client
	err := s.call(ctx, "seller_register_client", map[string]any{
		"p_tenant_id":       in.TenantID,
		"p_actor_id":        in.ActorID,
		"p_name":            in.Name,
		"p_client_type":     in.ClientType,
		"p_groups":          groups,
		"p_credential_hash": credentialHash(token),
		"p_trust_level":     in.TrustLevel,
		"p_risk_class":      in.RiskClass,
		"p_created_by":      in.CreatedBy,
		"p_oauth_client_id": in.OAuthClientID,
		"p_oauth_resource":  in.OAuthResource,
	}, &c)
	if err != nil {
		return domain.Client{}, "", err
	}
	return c, token, nil
}

// ListClients lists the clients of tenantID, or ("") of every tenant the
// signed-in user is a member of, by (tenant, id). A tenant the user is not a
// member of answers like a missing one.
func (s *Seller) ListClients(ctx context.Context, tenantID string) ([]domain.Client, error) {
	out := []domain.Client{}
	if err := s.call(ctx, "seller_list_clients", map[string]any{"p_tenant_id": tenantID}, &out); err != nil {
		return nil, err
	}
	if out == nil {
		out = []domain.Client{}
	}
	return out, nil
}

// GetClient returns one client of a tenant the signed-in user is a member of.
func (s *Seller) GetClient(ctx context.Context, id string) (domain.Client, error) {
	var c domain.Client
	if err := s.call(ctx, "seller_get_client", map[string]any{"p_client_id": id}, &c); err != nil {
		return domain.Client{}, err
	}
	return c, nil
}

// SetClientStatus suspends, reactivates or revokes a client (client.manage;
// revoked is final). by may only name the signed-in user ("" = it).
func (s *Seller) SetClientStatus(ctx context.Context, id, status, by string) (domain.Client, error) {
	var c domain.Client
	if err := s.call(ctx, "seller_set_client_status", map[string]any{"p_client_id": id, "p_status": status, "p_by": by}, &c); err != nil {
		return domain.Client{}, err
	}
	return c, nil
}

// RotateCredential issues a new credential, generated here like
// RegisterClient's; only its hash is sent, and the old credential stops
// working when the RPC commits.
func (s *Seller) RotateCredential(ctx context.Context, id, by string) (domain.Client, string, error) {
	token := domain.NewClientToken()
	var c domain.Client
	err := s.call(ctx, "seller_rotate_client_credential", map[string]any{
		"p_client_id": id, "p_credential_hash": credentialHash(token), "p_by": by,
	}, &c)
	if err != nil {
		return domain.Client{}, "", err
	}
	return c, token, nil
}

// PrincipalForClient resolves a client by id, whatever its status, so
// `tools list --as` can explain visibility.
func (s *Seller) PrincipalForClient(ctx context.Context, id string) (domain.Principal, error) {
	var p domain.Principal
	if err := s.call(ctx, "seller_client_principal", map[string]any{"p_client_id": id}, &p); err != nil {
		return domain.Principal{}, err
	}
	return p, nil
}

// SetLimits stores the limits of a tenant (clientID "") or of one of its
// clients (client.manage).
func (s *Seller) SetLimits(ctx context.Context, tenantID, clientID string, l domain.Limits) error {
	if err := l.Validate(); err != nil {
		return err
	}
	err := s.call(ctx, "seller_set_limits", map[string]any{
		"p_tenant_id":                     tenantID,
		"p_client_id":                     clientID,
		"p_read_calls_per_minute":         l.ReadsPerMinute,
		"p_candidate_writes_per_minute":   l.CandidateWritesPerMinute,
		"p_proposals_per_minute":          l.ProposalsPerMinute,
		"p_controlled_actions_per_minute": l.ControlledActionsPerMinute,
		"p_maximum_bulk_targets":          l.MaxBulkTargets,
		"p_maximum_daily_paid_cost_usd":   l.MaxDailyPaidCostUSD,
		"p_rejected_calls_per_minute":     l.RejectedPerMinute,
	}, nil)
	if err != nil || clientID != "" {
		return err
	}
	// The candidate quota is the tenant's: set on its row, after the rates
	// (docs/quota.md).
	// 0 is the default (domain.Limits): stored as NULL.
	var cands, bytes any
	if l.MaxOpenCandidates > 0 {
		cands = l.MaxOpenCandidates
	}
	if l.MaxCandidateBytes > 0 {
		bytes = l.MaxCandidateBytes
	}
	return s.call(ctx, "seller_set_quota", map[string]any{"p_tenant_id": tenantID,
		"p_maximum_open_candidates": cands, "p_maximum_candidate_bytes": bytes}, nil)
}

// EffectiveLimits returns the tenant's limits (else the defaults) narrowed
// by the client's own row where it has one (trovesnap.effective_limits).
func (s *Seller) EffectiveLimits(ctx context.Context, tenantID, clientID string) (domain.Limits, error) {
	var l domain.Limits
	if err := s.call(ctx, "seller_effective_limits", map[string]any{"p_tenant_id": tenantID, "p_client_id": clientID}, &l); err != nil {
		return domain.Limits{}, err
	}
	return l, nil
}
