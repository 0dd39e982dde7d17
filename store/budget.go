package store

import (
	"context"
	"time"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// costBudgets returns the daily paid budgets (§38
// maximum_daily_paid_cost_usd) that bind paid work of clientID in
// tenantID, each with what was spent against it today: the client's (the
// tenant's narrowed by the client's own row: effectiveLimits) and the
// tenant's (its row, else the $0 default). Spent is the estimated cost of the proposals executed since
// the start of the UTC day — by that client, and by the whole tenant.
// Only the requesting client executes a proposal, so its requester is the
// client that spent. A cost counts as at least 0: nothing executed can
// give budget back (the live SQL's paid_spent_today does the same).
func (s *Store) costBudgets(ctx context.Context, q queryRower, tenantID, clientID string, now time.Time) ([]domain.CostBudget, error) {
	cl, err := s.effectiveLimits(ctx, q, tenantID, clientID)
	if err != nil {
		return nil, err
	}
	tl, err := s.effectiveLimits(ctx, q, tenantID, "")
	if err != nil {
		return nil, err
	}
	var clientSpent, tenantSpent float64
	err = q.QueryRowContext(ctx, `SELECT coalesce(sum(CASE WHEN requested_by_client = ? THEN cost END), 0), coalesce(sum(cost), 0)
		FROM (SELECT requested_by_client, max(coalesce(json_extract(body, '$.impact.estimated_cost_usd'), 0), 0) AS cost
		      FROM proposals WHERE tenant_id = ? AND status = ? AND executed_at >= ?)`,
		clientID, tenantID, domain.ProposalExecuted, ts(domain.DayStart(now))).Scan(&clientSpent, &tenantSpent)
	if err != nil {
		return nil, s.dbErr("cost spent today", err)
	}
	return []domain.CostBudget{
		{Scope: domain.BudgetClient, LimitUSD: cl.MaxDailyPaidCostUSD, SpentUSD: clientSpent},
		{Scope: domain.BudgetTenant, LimitUSD: tl.MaxDailyPaidCostUSD, SpentUSD: tenantSpent},
	}, nil
}

// checkCostBudget refuses (domain.ErrCostLimit) a cost that would take the
// client's or the tenant's daily paid budget past its limit. Called inside
// the write transaction, so concurrent writers cannot together overspend.
func (s *Store) checkCostBudget(ctx context.Context, q queryRower, tenantID, clientID string, cost float64, now time.Time) error {
	if cost <= 0 {
		return nil
	}
	b, err := s.costBudgets(ctx, q, tenantID, clientID, now)
	if err != nil {
		return err
	}
	return domain.CheckCost(cost, b...)
}
