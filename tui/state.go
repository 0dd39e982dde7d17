package tui

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/triunalabs/trovesnap/internal/approval"
	"github.com/triunalabs/trovesnap/internal/domain"
)

// state is what the screens render: the last snapshot of the store and the
// clock. Screens only read it; the root model replaces its parts when a
// command's result arrives, never in place, so a command still running
// never sees a half-updated state.
type state struct {
	tenant, actor, mode string
	role                string
	risk                func(tool string) string
	changeVisible       func(role, field string) bool
	now                 time.Time
	poll                time.Duration
	loaded              bool
	proposals           []domain.Proposal // pending, newest first
	grants              []domain.Grant    // active, consumed, expired, revoked
	policies            []domain.Policy
	clients             []domain.Client
	reviews             map[string]reviewResult // proposals open on a screen
	trails              map[string]trailResult  // by proposal id
	bodyH               int                     // lines the body had at the last render
	st                  styles
}

// reviewResult is a fresh look at one proposal: its content, whether it
// still matches its hash, the current target versions, and the bounds of
// a grant for it.
type reviewResult struct {
	approval.Review
	// limits are the requesting client's effective limits: already narrowed
	// by the tenant's (domain.Narrow), so their paid budget is the smaller
	// of the two, and no grant may allow more (the backend refuses it).
	limits domain.Limits
	err    error
}

type trailResult struct {
	events []domain.Event
	err    error
}

func (s *state) can(perm string) bool { return domain.Principal{Role: s.role}.Has(perm) }

// proposal finds a proposal by id: a fresh review first, then the queue.
func (s *state) proposal(id string) (domain.Proposal, bool) {
	if r, ok := s.reviews[id]; ok && r.err == nil {
		return r.Proposal, true
	}
	for _, p := range s.proposals {
		if p.ID == id {
			return p, true
		}
	}
	return domain.Proposal{}, false
}

func (s *state) clientName(id string) string {
	for _, c := range s.clients {
		if c.ID == id {
			return c.Name
		}
	}
	return ""
}

// problem says why a reviewed proposal cannot be approved now ("" when it
// can). The approval service and the store check all of it again; this is
// so the seller sees the reason before pressing anything.
func problem(r reviewResult, now time.Time) string {
	p := r.Proposal
	switch {
	case r.err != nil:
		return r.err.Error()
	case !r.HashValid:
		return "the proposal no longer matches its hash (it was changed after it was made)"
	case p.Status == domain.ProposalExpired || p.Status == domain.ProposalPending && !now.Before(p.ExpiresAt):
		return "the proposal expired; ask the agent for a new proposal"
	case p.Status != domain.ProposalPending:
		return "the proposal is " + statusWord(p.Status) + ": there is nothing to decide"
	case len(r.Stale) > 0:
		return fmt.Sprintf("stale: %v changed since the proposal was made; ask the agent for a new proposal", r.Stale)
	}
	// The rule the backend applies when it issues the grant: the smallest
	// grant this proposal needs allows its estimated cost.
	if err := domain.CheckGrantCost(p.Impact.EstimatedCostUSD, r.paidBudget()); err != nil {
		return err.Error()
	}
	return ""
}

// paidBudget is the daily paid budget a grant for this proposal must stay
// within: the requesting client's, narrowed by the tenant's.
func (r reviewResult) paidBudget() domain.CostBudget {
	return domain.CostBudget{Scope: domain.BudgetClient, LimitUSD: r.limits.MaxDailyPaidCostUSD}
}

func statusWord(s string) string {
	switch s {
	case domain.ProposalPending:
		return "pending"
	case domain.ProposalApproved:
		return "approved (a grant is waiting for the agent)"
	case domain.ProposalDenied:
		return "denied"
	}
	return s
}

// grantOrder lists grants by the tab order, newest first within a
// status (ListGrants already returns newest first; the sort is stable).
func grantOrder(gs []domain.Grant) []domain.Grant {
	rank := map[string]int{domain.GrantActive: 0, domain.GrantConsumed: 1, domain.GrantExpired: 2, domain.GrantRevoked: 3}
	out := slices.Clone(gs)
	slices.SortStableFunc(out, func(a, b domain.Grant) int { return cmp.Compare(rank[a.Status], rank[b.Status]) })
	return out
}

// grantBounds are the limits within which a seller may set a grant: never
// below what the proposal needs (such a grant could not execute it), never
// above the tenant's limits for the requesting client (the cost never above
// the client's or the tenant's daily paid budget), never longer than
// the approval service allows or than the proposal lives.
type grantBounds struct {
	minItems, maxItems int
	minCost, maxCost   float64
	needPub, needNotif bool
	maxMinutes         int
}

func boundsFor(r reviewResult, now time.Time) grantBounds {
	p := r.Proposal
	need := approval.DefaultConstraints(p)
	b := grantBounds{
		minItems: need.MaxItems, maxItems: max(need.MaxItems, r.limits.MaxBulkTargets),
		minCost: need.MaxCostUSD, maxCost: r.limits.MaxDailyPaidCostUSD,
		needPub: need.AllowPublication, needNotif: need.AllowNotifications,
	}
	// A grant is capped at its proposal's expiry anyway; offering more
	// minutes than the proposal has left would promise what it cannot be.
	b.maxMinutes = int(min(approval.MaxGrantTTL, max(time.Minute, p.ExpiresAt.Sub(now))) / time.Minute)
	return b
}
