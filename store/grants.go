package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/triunalabs/trovesnap/internal/domain"
)

const grantCols = `id, tenant_id, proposal_id, proposal_hash, issuer_type, issuer_actor, issuer_surface, policy_id,
	policy_version, tool, target_ids, constraints, status, single_use, issued_at, expires_at, consumed_at, revoked_at,
	coalesce((SELECT requested_by_client FROM proposals WHERE proposals.id = approval_grants.proposal_id), ''),
	coalesce((SELECT requested_by_actor FROM proposals WHERE proposals.id = approval_grants.proposal_id), '')`

// A grant's binding to the client and actor that asked (Grant.BoundTo) is
// its proposal's requester: the grant row references the proposal, whose
// requester is immutable content covered by the hash the grant is bound to.

func scanGrant(row interface{ Scan(...any) error }) (domain.Grant, error) {
	var (
		g                 domain.Grant
		targets, cons     string
		single            int
		issued, expires   string
		consumed, revoked sql.NullString
	)
	if err := row.Scan(&g.ID, &g.TenantID, &g.ProposalID, &g.ProposalHash, &g.IssuedBy.Type, &g.IssuedBy.ActorID,
		&g.IssuedBy.Surface, &g.IssuedBy.PolicyID, &g.IssuedBy.PolicyVersion, &g.Tool, &targets, &cons, &g.Status,
		&single, &issued, &expires, &consumed, &revoked, &g.BoundTo.ClientID, &g.BoundTo.ActorID); err != nil {
		return g, err
	}
	var tp timeScanner
	g.IssuedAt, g.ExpiresAt = tp.at(issued), tp.at(expires)
	g.ConsumedAt, g.RevokedAt = tp.ptr(consumed), tp.ptr(revoked)
	if tp.err != nil {
		return g, tp.err
	}
	g.SingleUse = single == 1
	if err := json.Unmarshal([]byte(targets), &g.TargetIDs); err != nil {
		return g, err
	}
	return g, json.Unmarshal([]byte(cons), &g.Constraints)
}

// insertGrant writes a grant row inside tx.
func (s *Store) insertGrant(ctx context.Context, tx *sql.Tx, g domain.Grant) error {
	tj, _ := json.Marshal(g.TargetIDs)
	cj, _ := json.Marshal(g.Constraints)
	_, err := tx.ExecContext(ctx, `INSERT INTO approval_grants (id, tenant_id, proposal_id, proposal_hash, issuer_type, issuer_actor,
		issuer_surface, policy_id, policy_version, tool, target_ids, constraints, status, single_use, issued_at, expires_at, consumed_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		g.ID, g.TenantID, g.ProposalID, g.ProposalHash, g.IssuedBy.Type, g.IssuedBy.ActorID, g.IssuedBy.Surface,
		g.IssuedBy.PolicyID, g.IssuedBy.PolicyVersion, g.Tool, string(tj), string(cj), g.Status, boolInt(g.SingleUse),
		ts(g.IssuedAt), ts(g.ExpiresAt), tsPtr(g.ConsumedAt))
	if err != nil {
		return s.dbErr("insert grant", err)
	}
	return nil
}

// IssueGrant records a human grant. Under the write lock it re-checks what
// the approval service checked: the proposal is pending, unexpired and
// still has the hash the human reviewed; the issuer is a member holding
// approval.grant. The grant is bound to the proposal's requester, and its
// maximum cost may not exceed the requesting client's or the tenant's daily
// paid budget (domain.ErrCostLimit). The proposal becomes approved; an
// approval event is recorded under the proposal's correlation id.
func (s *Store) IssueGrant(ctx context.Context, g domain.Grant) (domain.Grant, error) {
	if g.IssuedBy.Type != domain.IssuerHuman || g.IssuedBy.ActorID == "" || g.IssuedBy.Surface == "" {
		return domain.Grant{}, domain.Invalid("issued_by", "a human grant names its actor and surface")
	}
	// A negative maximum cost would pass every budget check (and NaN
	// compares false with every limit): a grant's cost is an amount.
	if !domain.ValidUSD(g.Constraints.MaxCostUSD) {
		return domain.Grant{}, domain.Invalid("maximum_cost_usd", "a grant's maximum cost must be a finite amount of at least 0")
	}
	err := s.withTx(ctx, func(tx *sql.Tx) error {
		prop, corr, err := scanProposal(tx.QueryRowContext(ctx, "SELECT "+proposalCols+" FROM proposals WHERE id = ?", g.ProposalID))
		if errors.Is(err, sql.ErrNoRows) || (err == nil && prop.TenantID != g.TenantID) {
			return domain.UnknownRef("proposal_id", g.ProposalID, false)
		}
		if err != nil {
			return s.dbErr("issue grant: proposal", err)
		}
		now := s.clock.Now()
		switch {
		case prop.Hash != g.ProposalHash:
			return domain.Because(domain.ErrProposalChanged, "proposal %s changed", prop.ID)
		case prop.Status != domain.ProposalPending:
			return domain.Because(domain.ErrTransitionInvalid, "proposal %s is %s", prop.ID, prop.Status)
		case !now.Before(prop.ExpiresAt):
			return domain.Because(domain.ErrApprovalExpired, "proposal %s expired", prop.ID)
		case g.Tool != prop.Tool.Name:
			return domain.Invalid("tool", "a grant is for the proposal's own tool")
		case g.BoundTo != (domain.Requester{}) && g.BoundTo != prop.RequestedBy:
			return domain.Invalid("bound_to", "a grant is bound to the client and actor that requested the proposal")
		}
		g.BoundTo = prop.RequestedBy
		role, err := s.roleIn(ctx, tx, g.TenantID, g.IssuedBy.ActorID)
		if err != nil {
			return err
		}
		if !(domain.Principal{Role: role}).Has(domain.PermApprovalGrant) {
			return domain.Because(domain.ErrPermissionDenied, "%s may not approve", g.IssuedBy.ActorID)
		}
		// A grant never allows more than the daily paid budgets.
		budgets, err := s.costBudgets(ctx, tx, g.TenantID, prop.RequestedBy.ClientID, now)
		if err != nil {
			return err
		}
		if err := domain.CheckGrantCost(g.Constraints.MaxCostUSD, budgets...); err != nil {
			return err
		}
		if err := s.insertGrant(ctx, tx, g); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "UPDATE proposals SET status = ?, decided_by = ? WHERE id = ?", domain.ProposalApproved, g.IssuedBy.ActorID, prop.ID); err != nil {
			return s.dbErr("issue grant: proposal status", err)
		}
		return s.approvalEvent(ctx, tx, prop, corr, g.IssuedBy.ActorID, "approval_granted", "allowed", &g.ID, now)
	})
	if err != nil {
		return domain.Grant{}, err
	}
	return g, nil
}

func (s *Store) roleIn(ctx context.Context, tx *sql.Tx, tenantID, userID string) (string, error) {
	var role string
	err := tx.QueryRowContext(ctx, "SELECT role FROM memberships WHERE tenant_id = ? AND user_id = ?", tenantID, userID).Scan(&role)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", s.dbErr("role", err)
	}
	return role, nil
}

// approvalEvent records a human or policy decision as a plugin_event joined
// to the proposal's correlation id.
func (s *Store) approvalEvent(ctx context.Context, tx *sql.Tx, prop domain.Proposal, corr, actor, action, decision string, grantID *string, now time.Time) error {
	pid := prop.ID
	ev := domain.Event{
		ID: s.ids.New(domain.PrefixEvent), TenantID: prop.TenantID, CorrelationID: corr, Mode: s.mode,
		Plugin: domain.PluginRef{Type: "mcp", ID: "trovesnap", Version: "approval"},
		Client: domain.ClientRef{ID: prop.RequestedBy.ClientID},
		Tool:   domain.ToolRef{Name: prop.Tool.Name, Version: prop.Tool.Version},
		Actor:  domain.ActorRef{ID: actor, Type: "seller"}, Action: action, Outcome: domain.OutcomeSuccess,
		Related:    domain.Related{ProposalIDs: []string{prop.ID}},
		Payload:    domain.EventPayload{InputHash: prop.Hash, RedactedSummary: map[string]string{"proposal_id": prop.ID}},
		Approval:   domain.EventApproval{ProposalID: &pid, ApprovalID: grantID, Decision: decision},
		Impact:     domain.EventImpact{Type: action, Material: true},
		OccurredAt: now,
	}
	if actor == "" {
		ev.Actor = domain.ActorRef{Type: "policy"}
	}
	if err := s.completeApprovalEvent(ctx, tx, &ev, prop); err != nil {
		return err
	}
	return s.insertEvent(ctx, tx, ev)
}

// DenyProposal rejects a pending proposal, recording who and why.
func (s *Store) DenyProposal(ctx context.Context, tenantID, proposalID, actorID, surface, reason string) error {
	return s.withTx(ctx, func(tx *sql.Tx) error {
		prop, corr, err := scanProposal(tx.QueryRowContext(ctx, "SELECT "+proposalCols+" FROM proposals WHERE id = ?", proposalID))
		if errors.Is(err, sql.ErrNoRows) || (err == nil && prop.TenantID != tenantID) {
			return domain.UnknownRef("proposal_id", proposalID, false)
		}
		if err != nil {
			return s.dbErr("deny: proposal", err)
		}
		if prop.Status != domain.ProposalPending {
			return domain.Because(domain.ErrTransitionInvalid, "proposal %s is %s", prop.ID, prop.Status)
		}
		role, err := s.roleIn(ctx, tx, tenantID, actorID)
		if err != nil {
			return err
		}
		if !(domain.Principal{Role: role}).Has(domain.PermApprovalGrant) {
			return domain.Because(domain.ErrPermissionDenied, "%s may not decide", actorID)
		}
		if _, err := tx.ExecContext(ctx, "UPDATE proposals SET status = ?, status_reason = ?, decided_by = ? WHERE id = ?",
			domain.ProposalDenied, reason, actorID, prop.ID); err != nil {
			return s.dbErr("deny", err)
		}
		return s.approvalEvent(ctx, tx, prop, corr, actorID, "approval_denied", "blocked", nil, s.clock.Now())
	})
}

// ListGrants lists a tenant's grants, newest first; status "expired" means
// active grants past their expiry.
func (s *Store) ListGrants(ctx context.Context, tenantID, status string) ([]domain.Grant, error) {
	out := []domain.Grant{}
	now := s.clock.Now()
	err := s.withRead(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, "SELECT "+grantCols+" FROM approval_grants WHERE tenant_id = ? ORDER BY issued_at DESC, id DESC LIMIT 500", tenantID)
		if err != nil {
			return s.dbErr("list grants", err)
		}
		defer rows.Close()
		for rows.Next() {
			g, err := scanGrant(rows)
			if err != nil {
				return s.dbErr("list grants: scan", err)
			}
			if g.Status == domain.GrantActive && !now.Before(g.ExpiresAt) {
				g.Status = domain.GrantExpired
			}
			if status == "" || g.Status == status {
				out = append(out, g)
			}
		}
		return rows.Err()
	})
	return out, err
}

// RevokeGrant revokes an active grant: it can never authorise afterwards.
func (s *Store) RevokeGrant(ctx context.Context, tenantID, grantID, actorID string) (domain.Grant, error) {
	var out domain.Grant
	err := s.withTx(ctx, func(tx *sql.Tx) error {
		g, err := scanGrant(tx.QueryRowContext(ctx, "SELECT "+grantCols+" FROM approval_grants WHERE id = ?", grantID))
		if errors.Is(err, sql.ErrNoRows) || (err == nil && g.TenantID != tenantID) {
			return domain.UnknownRef("grant", grantID, false)
		}
		if err != nil {
			return s.dbErr("revoke grant", err)
		}
		if g.Status != domain.GrantActive {
			return domain.Because(domain.ErrTransitionInvalid, "grant %s is %s", g.ID, g.Status)
		}
		now := s.clock.Now()
		if _, err := tx.ExecContext(ctx, "UPDATE approval_grants SET status = 'revoked', revoked_at = ?, revoked_by = ? WHERE id = ?", ts(now), actorID, g.ID); err != nil {
			return s.dbErr("revoke grant", err)
		}
		prop, corr, err := scanProposal(tx.QueryRowContext(ctx, "SELECT "+proposalCols+" FROM proposals WHERE id = ?", g.ProposalID))
		if err != nil {
			return s.dbErr("revoke grant: proposal", err)
		}
		if prop.Status == domain.ProposalApproved {
			if _, err := tx.ExecContext(ctx, "UPDATE proposals SET status = ? WHERE id = ?", domain.ProposalPending, prop.ID); err != nil {
				return s.dbErr("revoke grant: proposal status", err)
			}
		}
		g.Status, g.RevokedAt = domain.GrantRevoked, &now
		out = g
		return s.approvalEvent(ctx, tx, prop, corr, actorID, "approval_revoked", "revoked", &g.ID, now)
	})
	return out, err
}

// CreatePolicy stores a new automation policy, disabled, at version 1.
func (s *Store) CreatePolicy(ctx context.Context, pol domain.Policy) (domain.Policy, error) {
	err := s.withTx(ctx, func(tx *sql.Tx) error {
		role, err := s.roleIn(ctx, tx, pol.TenantID, pol.CreatedBy)
		if err != nil {
			return err
		}
		if !(domain.Principal{Role: role}).Has(domain.PermPolicyManage) {
			return domain.Because(domain.ErrPermissionDenied, "%s may not manage policies", pol.CreatedBy)
		}
		// A checkout-scan policy is bounded to the scans a policy may
		// authorise (a hold), as live's seller_validate_policy holds it.
		if field, reason := domain.CheckoutPolicyRefusal(pol); reason != "" {
			return domain.Invalid(field, reason)
		}
		for _, sale := range pol.Scope.EstateSaleIDs {
			if err := s.checkRef(ctx, tx, "estate_sales", "scope.estate_sale_ids", sale, pol.TenantID); err != nil {
				return err
			}
		}
		now := s.clock.Now()
		pol.ID = s.ids.New(domain.PrefixPolicy)
		pol.Version, pol.Status, pol.CreatedAt, pol.UpdatedAt = 1, domain.PolicyDisabled, now, now
		return s.writePolicy(ctx, tx, pol, pol.CreatedBy, true, "policy_created")
	})
	return pol, err
}

func policyBody(p domain.Policy) ([]byte, error) {
	return json.Marshal(struct {
		AllowedTools []string                `json:"allowed_tools"`
		Scope        domain.PolicyScope      `json:"scope"`
		Conditions   domain.PolicyConditions `json:"conditions"`
		Limits       domain.PolicyLimits     `json:"limits"`
	}{p.AllowedTools, p.Scope, p.Conditions, p.Limits})
}

func (s *Store) writePolicy(ctx context.Context, tx *sql.Tx, pol domain.Policy, by string, insert bool, action string) error {
	body, err := policyBody(pol)
	if err != nil {
		return s.dbErr("encode policy", err)
	}
	if insert {
		_, err = tx.ExecContext(ctx, `INSERT INTO automation_policies (id, tenant_id, name, version, status, body, created_by, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, pol.ID, pol.TenantID, pol.Name, pol.Version, pol.Status, string(body), pol.CreatedBy, ts(pol.CreatedAt), ts(pol.UpdatedAt))
	} else {
		_, err = tx.ExecContext(ctx, "UPDATE automation_policies SET version = ?, status = ?, updated_at = ? WHERE id = ?", pol.Version, pol.Status, ts(pol.UpdatedAt), pol.ID)
	}
	if err != nil {
		return s.dbErr("write policy", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO automation_policy_versions (policy_id, version, status, body, changed_by, changed_at)
		VALUES (?, ?, ?, ?, ?, ?)`, pol.ID, pol.Version, pol.Status, string(body), by, ts(pol.UpdatedAt)); err != nil {
		return s.dbErr("write policy version", err)
	}
	ev := domain.Event{
		ID: s.ids.New(domain.PrefixEvent), TenantID: pol.TenantID, CorrelationID: s.ids.New(domain.PrefixCorr), Mode: s.mode,
		Plugin: domain.PluginRef{Type: "mcp", ID: "trovesnap", Version: "policy"},
		Actor:  domain.ActorRef{ID: by, Type: "seller"}, Action: action, Outcome: domain.OutcomeSuccess,
		Payload:    domain.EventPayload{RedactedSummary: map[string]string{"policy_id": pol.ID, "policy_version": fmt.Sprint(pol.Version)}},
		Approval:   domain.EventApproval{Decision: "not_required"},
		Impact:     domain.EventImpact{Type: action, Material: true},
		OccurredAt: pol.UpdatedAt,
	}
	if err := s.completeSellerEvent(ctx, tx, &ev, "automation_policy", domain.PermPolicyManage); err != nil {
		return err
	}
	return s.insertEvent(ctx, tx, ev)
}

const policyCols = "id, tenant_id, name, version, status, body, created_by, created_at, updated_at"

func scanPolicy(row interface{ Scan(...any) error }) (domain.Policy, error) {
	var (
		p            domain.Policy
		body, cr, up string
	)
	if err := row.Scan(&p.ID, &p.TenantID, &p.Name, &p.Version, &p.Status, &body, &p.CreatedBy, &cr, &up); err != nil {
		return p, err
	}
	var tp timeScanner
	p.CreatedAt, p.UpdatedAt = tp.at(cr), tp.at(up)
	if tp.err != nil {
		return p, tp.err
	}
	return p, json.Unmarshal([]byte(body), &p)
}

func (s *Store) listPolicies(ctx context.Context, tx *sql.Tx, tenantID string) ([]domain.Policy, error) {
	rows, err := tx.QueryContext(ctx, "SELECT "+policyCols+" FROM automation_policies WHERE tenant_id = ? ORDER BY id", tenantID)
	if err != nil {
		return nil, s.dbErr("list policies", err)
	}
	defer rows.Close()
	out := []domain.Policy{}
	for rows.Next() {
		p, err := scanPolicy(rows)
		if err != nil {
			return nil, s.dbErr("list policies: scan", err)
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// ListPolicies lists a tenant's policies.
func (s *Store) ListPolicies(ctx context.Context, tenantID string) ([]domain.Policy, error) {
	var out []domain.Policy
	err := s.withRead(ctx, func(tx *sql.Tx) error {
		var err error
		out, err = s.listPolicies(ctx, tx, tenantID)
		return err
	})
	return out, err
}

// GetPolicy reads one policy.
func (s *Store) GetPolicy(ctx context.Context, id string) (domain.Policy, error) {
	p, err := scanPolicy(s.r.QueryRowContext(ctx, "SELECT "+policyCols+" FROM automation_policies WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return p, domain.UnknownRef("policy", id, false)
	}
	if err != nil {
		return p, s.dbErr("get policy", err)
	}
	return p, nil
}

var policyTransitions = map[string][]string{
	domain.PolicyDisabled: {domain.PolicyActive, domain.PolicyRevoked},
	domain.PolicyActive:   {domain.PolicyDisabled, domain.PolicyRevoked},
}

// SetPolicyStatus enables, disables or revokes a policy (revoked is final).
// Every change is a new version, so an execution authorised under an older
// version is refused.
func (s *Store) SetPolicyStatus(ctx context.Context, id, status, actorID string) (domain.Policy, error) {
	var out domain.Policy
	err := s.withTx(ctx, func(tx *sql.Tx) error {
		p, err := scanPolicy(tx.QueryRowContext(ctx, "SELECT "+policyCols+" FROM automation_policies WHERE id = ?", id))
		if errors.Is(err, sql.ErrNoRows) {
			return domain.UnknownRef("policy", id, false)
		}
		if err != nil {
			return s.dbErr("set policy status", err)
		}
		role, err := s.roleIn(ctx, tx, p.TenantID, actorID)
		if err != nil {
			return err
		}
		if !(domain.Principal{Role: role}).Has(domain.PermPolicyManage) {
			return domain.Because(domain.ErrPermissionDenied, "%s may not manage policies", actorID)
		}
		allowed := policyTransitions[p.Status]
		ok := false
		for _, a := range allowed {
			ok = ok || a == status
		}
		if !ok {
			return domain.Because(domain.ErrTransitionInvalid, "policy %s is %s and cannot become %s", id, p.Status, status)
		}
		p.Status, p.Version, p.UpdatedAt = status, p.Version+1, s.clock.Now()
		out = p
		action := map[string]string{domain.PolicyActive: "policy_enabled", domain.PolicyDisabled: "policy_disabled", domain.PolicyRevoked: "policy_revoked"}[status]
		return s.writePolicy(ctx, tx, p, actorID, false, action)
	})
	return out, err
}
