package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// ExecuteProposal runs an approved proposal's ONE domain function. In one
// IMMEDIATE transaction (with the idempotency row and the event) it:
// re-reads the proposal and checks it still has the hash the approval step
// verified and that the caller is the client (and actor) that proposed it;
// re-checks and consumes the authority (a single-use grant, or a
// policy use within its daily limit at the same policy version); checks
// every target is still at its expected version; checks the client's and
// the tenant's daily paid budgets; applies the domain rules
// and the change; marks the proposal executed. Two processes executing one
// grant serialise on the write lock: exactly one consumes it.
func (s *Store) ExecuteProposal(ctx context.Context, p domain.Principal, w domain.WriteMeta, proposalID string, auth domain.Authorization) (domain.ExecutionResult, domain.WriteOutcome, error) {
	var policyGrantID string
	if auth.PolicyID != "" {
		policyGrantID = s.ids.New(domain.PrefixApproval)
		w.Event.Approval.ApprovalID = &policyGrantID
	}
	return idempotentWrite(ctx, s, p, w, func(tx *sql.Tx, now time.Time) (domain.ExecutionResult, domain.Related, error) {
		var res domain.ExecutionResult
		prop, err := s.getProposalAs(ctx, tx, p, proposalID)
		if err != nil {
			return res, domain.Related{}, err
		}
		switch {
		case prop.Hash != auth.ProposalHash || auth.ProposalHash == "":
			return res, domain.Related{}, domain.Because(domain.ErrProposalChanged, "proposal %s", prop.ID)
		case prop.Status == domain.ProposalExecuted:
			return res, domain.Related{}, domain.Because(domain.ErrApprovalConsumed, "proposal %s was already executed", prop.ID)
		case prop.Status == domain.ProposalDenied:
			return res, domain.Related{}, domain.Because(domain.ErrApprovalInvalid, "proposal %s was rejected", prop.ID)
		case !now.Before(prop.ExpiresAt):
			return res, domain.Related{}, domain.Because(domain.ErrApprovalExpired, "proposal %s expired", prop.ID)
		case prop.Tool.Name != w.Idem.Tool:
			return res, domain.Related{}, domain.Because(domain.ErrApprovalInvalid, "proposal %s is for %s", prop.ID, prop.Tool.Name)
		}
		// Only the client that proposed it, for the same actor, executes it.
		if err := domain.RequireRequester(p, prop); err != nil {
			return res, domain.Related{}, err
		}
		grantID, err := s.consumeAuthority(ctx, tx, prop, auth, policyGrantID, now)
		if err != nil {
			return res, domain.Related{}, err
		}
		// The frozen target set at its expected versions: nothing else runs.
		want, got := map[string]int{}, map[string]int{}
		var stale []string
		for _, ev := range prop.ExpectedVersions {
			v, err := s.versionOf(ctx, tx, p.TenantID, ev.ID)
			if err != nil {
				return res, domain.Related{}, err
			}
			want[ev.ID], got[ev.ID] = ev.Version, v
			if v != ev.Version {
				stale = append(stale, ev.ID)
			}
		}
		if len(stale) > 0 {
			return res, domain.Related{}, domain.StaleError(stale, want, got)
		}
		// The daily paid budgets, counted under the write lock.
		if err := s.checkCostBudget(ctx, tx, p.TenantID, p.Client.ID, prop.Impact.EstimatedCostUSD, now); err != nil {
			return res, domain.Related{}, err
		}
		res = domain.ExecutionResult{
			ProposalID: prop.ID, Executed: true, Simulated: s.mode == domain.ModeMock,
			DomainFunction: domain.DomainFunction(prop.Action), Results: []domain.TargetOutcome{},
			Approval: domain.ExecutionApproval{Decision: auth.Decision, ApprovalID: &grantID},
		}
		if auth.PolicyID != "" {
			pid := auth.PolicyID
			res.Approval.PolicyID = &pid
		}
		rel := domain.Related{ProposalIDs: []string{prop.ID}}
		if err := s.runDomainFunction(ctx, tx, p, prop, now, &res, &rel); err != nil {
			return domain.ExecutionResult{}, domain.Related{}, err
		}
		if _, err := tx.ExecContext(ctx, "UPDATE proposals SET status = ?, executed_at = ? WHERE id = ?", domain.ProposalExecuted, ts(now), prop.ID); err != nil {
			return res, domain.Related{}, s.dbErr("mark executed", err)
		}
		return res, rel, nil
	})
}

// consumeAuthority re-checks and uses up the authority of an execution
// under the write lock, returning the grant id it used.
func (s *Store) consumeAuthority(ctx context.Context, tx *sql.Tx, prop domain.Proposal, auth domain.Authorization, policyGrantID string, now time.Time) (string, error) {
	switch {
	case auth.GrantID != "":
		g, err := scanGrant(tx.QueryRowContext(ctx, "SELECT "+grantCols+" FROM approval_grants WHERE id = ?", auth.GrantID))
		if errors.Is(err, sql.ErrNoRows) {
			return "", domain.Because(domain.ErrApprovalInvalid, "grant %s", auth.GrantID)
		}
		if err != nil {
			return "", s.dbErr("load grant", err)
		}
		// The grant's binding (BoundTo) is its proposal's requester, read from
		// the same row; RequireRequester refused any other principal above.
		switch {
		case g.TenantID != prop.TenantID || g.ProposalID != prop.ID || g.Tool != prop.Tool.Name:
			return "", domain.Because(domain.ErrApprovalInvalid, "grant %s is for another proposal", g.ID)
		case g.ProposalHash != prop.Hash:
			return "", domain.Because(domain.ErrProposalChanged, "grant %s", g.ID)
		case g.Status == domain.GrantRevoked:
			return "", domain.Because(domain.ErrApprovalRevoked, "grant %s", g.ID)
		case g.Status == domain.GrantConsumed:
			return "", domain.Because(domain.ErrApprovalConsumed, "grant %s", g.ID)
		case !now.Before(g.ExpiresAt):
			return "", domain.Because(domain.ErrApprovalExpired, "grant %s", g.ID)
		}
		if g.SingleUse {
			r, err := tx.ExecContext(ctx, "UPDATE approval_grants SET status = 'consumed', consumed_at = ? WHERE id = ? AND status = 'active'", ts(now), g.ID)
			if err != nil {
				return "", s.dbErr("consume grant", err)
			}
			if n, _ := r.RowsAffected(); n != 1 {
				return "", domain.Because(domain.ErrApprovalConsumed, "grant %s", g.ID)
			}
		}
		return g.ID, nil
	case auth.PolicyID != "":
		pol, err := scanPolicy(tx.QueryRowContext(ctx, "SELECT "+policyCols+" FROM automation_policies WHERE id = ?", auth.PolicyID))
		if errors.Is(err, sql.ErrNoRows) {
			return "", domain.Because(domain.ErrApprovalInvalid, "policy %s", auth.PolicyID)
		}
		if err != nil {
			return "", s.dbErr("load policy", err)
		}
		switch {
		case pol.TenantID != prop.TenantID || !slices.Contains(pol.AllowedTools, prop.Tool.Name):
			return "", domain.Because(domain.ErrApprovalInvalid, "policy %s does not cover this proposal", pol.ID)
		case pol.Status == domain.PolicyRevoked:
			return "", domain.Because(domain.ErrApprovalRevoked, "policy %s was revoked", pol.ID)
		case pol.Status != domain.PolicyActive || pol.Version != auth.PolicyVersion:
			return "", domain.Because(domain.ErrApprovalRevoked, "policy %s changed (now v%d, %s)", pol.ID, pol.Version, pol.Status)
		}
		// What the gate decides on the proposal's content (scope, items per
		// run, fields, conflicts, the §18.2 categories): a caller naming a
		// policy directly must not skip it.
		if r := domain.PolicyContentRefusal(pol, prop, now); r != "" {
			return "", domain.Because(domain.ErrApprovalRequired, "proposal %s is not authorised by policy %s: %s", prop.ID, pol.ID, r)
		}
		u, err := s.policyUsage(ctx, tx, pol.ID, now)
		if err != nil {
			return "", err
		}
		if u.ActionsToday+1 > pol.Limits.MaxDailyActions || u.CostToday+prop.Impact.EstimatedCostUSD > pol.Limits.MaxCostUSDPerDay {
			return "", domain.Because(domain.ErrApprovalRequired, "policy %s reached its daily limit", pol.ID)
		}
		// A policy authorisation is a distinguishable grant record, consumed at once.
		g := domain.Grant{
			ID: policyGrantID, TenantID: prop.TenantID, ProposalID: prop.ID, ProposalHash: prop.Hash,
			IssuedBy: domain.GrantIssuer{Type: domain.IssuerPolicy, PolicyID: pol.ID, PolicyVersion: pol.Version},
			Tool:     prop.Tool.Name, TargetIDs: prop.TargetIDs, Status: domain.GrantConsumed, SingleUse: true,
			Constraints: domain.GrantConstraints{MaxItems: pol.Conditions.MaxItemsPerRun},
			IssuedAt:    now, ExpiresAt: now, ConsumedAt: &now,
		}
		if err := s.insertGrant(ctx, tx, g); err != nil {
			return "", err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO policy_uses (tenant_id, policy_id, policy_version, proposal_id, grant_id, cost_usd, used_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, prop.TenantID, pol.ID, pol.Version, prop.ID, g.ID, prop.Impact.EstimatedCostUSD, ts(now)); err != nil {
			return "", s.dbErr("policy use", err)
		}
		return g.ID, nil
	}
	return "", domain.Because(domain.ErrApprovalRequired, "no grant or policy")
}

// runDomainFunction runs the proposal's domain function (domainFunctions).
func (s *Store) runDomainFunction(ctx context.Context, tx *sql.Tx, p domain.Principal, prop domain.Proposal, now time.Time, res *domain.ExecutionResult, rel *domain.Related) error {
	run, ok := domainFunctions[prop.Action]
	if !ok {
		return fmt.Errorf("store: no domain function for %s: %w", prop.Action, domain.ErrInvalidInput)
	}
	return run(s, ctx, tx, p, prop, now, res, rel)
}

func outcome(m domain.Mode) string {
	if m == domain.ModeMock {
		return "simulated"
	}
	return "applied"
}

func (s *Store) recordSimulated(ctx context.Context, tx *sql.Tx, prop domain.Proposal, kind string, now time.Time) error {
	summary, _ := json.Marshal(struct {
		Plan   *domain.NotificationPlan `json:"plan"`
		Impact domain.ProposalImpact    `json:"impact"`
	}{prop.Notification, prop.Impact})
	_, err := tx.ExecContext(ctx, "INSERT INTO simulated_deliveries (id, tenant_id, kind, proposal_id, summary, created_at) VALUES (?, ?, ?, ?, ?, ?)",
		s.ids.New("delivery"), prop.TenantID, kind, prop.ID, string(summary), ts(now))
	if err != nil {
		return s.dbErr("simulated delivery", err)
	}
	return nil
}
