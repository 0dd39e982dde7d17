package contract

import (
	"strings"
	"testing"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/domain"
)

// runHardeningGrants runs the cases of issue 13's findings 4 and 9 on every
// Backend: a grant is bound to the client and actor that asked for its
// proposal, and the daily paid budget (§38 maximum_daily_paid_cost_usd) is
// enforced at proposal, at execution and when a grant is issued.
func runHardeningGrants(t *testing.T, open func(t *testing.T) Instance) {
	t.Run("Hardening/GrantBoundToRequestingClient", func(t *testing.T) { testGrantBoundToRequester(t, open(t)) })
	t.Run("Hardening/PolicyExecutionBoundToRequestingClient", func(t *testing.T) { testPolicyBoundToRequester(t, open(t)) })
	t.Run("Hardening/CostBudgetAtProposal", func(t *testing.T) { testCostBudgetAtProposal(t, open(t)) })
	t.Run("Hardening/CostBudgetAtExecution", func(t *testing.T) { testCostBudgetAtExecution(t, open(t)) })
	t.Run("Hardening/GrantOverBudgetRefused", func(t *testing.T) { testGrantOverBudget(t, open(t)) })
}

var controlledGroups = []string{"public_read", "tenant_read", "candidate_write", "action_proposal", "controlled_action"}

// otherClient registers another active client of the demo tenant acting for
// actorID with every tool group, and returns its principal.
func (f *flow) otherClient(actorID string) domain.Principal {
	f.t.Helper()
	_, tok, err := f.in.Clients(f.t, fixtures.DemoTenantID, fixtures.DemoUserID).RegisterClient(ctx, domain.NewClient{
		TenantID: fixtures.DemoTenantID, ActorID: actorID, Name: "second agent of " + actorID, ClientType: "custom", Groups: controlledGroups})
	if err != nil {
		f.t.Fatalf("RegisterClient for %s: %v", actorID, err)
	}
	return resolve(f.t, f.b, tok)
}

// setPaidBudget sets the demo tenant's daily paid budget (clientID "") or
// one client's, keeping the other limits at the §38 defaults.
func (f *flow) setPaidBudget(clientID string, usd float64) {
	f.t.Helper()
	l := domain.DefaultLimits()
	l.MaxDailyPaidCostUSD = usd
	if err := f.in.Clients(f.t, fixtures.DemoTenantID, fixtures.DemoUserID).SetLimits(ctx, fixtures.DemoTenantID, clientID, l); err != nil {
		f.t.Fatalf("SetLimits %q $%.2f: %v", clientID, usd, err)
	}
}

// smsDraft is a buyer notification by SMS for the published sale: it costs
// money (domain.BuildNotification prices SMS per message).
func (f *flow) smsDraft() domain.ProposalDraft {
	s := f.sale(fixtures.PublishedSaleID)
	return notifyDraft(s.ID, s.Version, "followed_sale", []string{"sms"}, "{{sale_title}} opens soon")
}

// A grant issued for client A's proposal cannot be consumed by client B of
// the same tenant, whose role holds the tool's permission — neither a
// second client of the same user nor a client of another user: both get
// approval_invalid, and nothing changes (the grant stays active, the
// candidate unpromoted). The requesting client then executes it.
func testGrantBoundToRequester(t *testing.T, in Instance) {
	f := newFlow(t, in)
	sameActor := f.otherClient(fixtures.DemoUserID)
	otherActor := f.otherClient(fixtures.ManagerUserID)
	c := f.candidate(fixtures.PublishedSaleID, candReviewed)
	prop := f.mustPropose(promotionDraft(c.ID, c.Version, nil))
	g := f.approve(prop)
	before := in.Counts(t)
	for name, p := range map[string]domain.Principal{"a second client of the same user": sameActor, "a client of another user": otherActor} {
		if !p.Has(domain.PermItemCreateCandidate) {
			t.Fatalf("%s: role %s lacks the tool's permission, the case proves nothing", name, p.Role)
		}
		_, _, err := f.execute(f.b, p, prop, allowed(prop, g.ID))
		wantErr(t, err, domain.ErrApprovalInvalid, name+" consuming another client's grant")
		f.unchanged(before, name+" consuming another client's grant")
		f.wantGrant(prop, g.ID, domain.GrantActive)
		if got := f.proposal(prop.ID); got.Status != domain.ProposalApproved {
			t.Fatalf("%s: proposal is %s", name, got.Status)
		}
		if c2 := f.candidate(c.SaleID, c.ID); c2.Version != c.Version || c2.ReviewStatus != c.ReviewStatus {
			t.Fatalf("%s: candidate moved: %+v", name, c2)
		}
	}
	// The grant records its binding.
	if g.BoundTo != (domain.Requester{ClientID: f.owner.Client.ID, ActorID: f.owner.ActorID}) {
		t.Fatalf("grant binding = %+v, want the requesting client %s and actor %s", g.BoundTo, f.owner.Client.ID, f.owner.ActorID)
	}
	if gs := f.grants(prop); len(gs) != 1 || gs[0].BoundTo != g.BoundTo {
		t.Fatalf("grants as read back = %+v", gs)
	}
	if _, _, err := f.execute(f.b, f.owner, prop, allowed(prop, g.ID)); err != nil {
		t.Fatalf("the requesting client's execution: %v", err)
	}
	f.wantGrant(prop, g.ID, domain.GrantConsumed)
}

// A policy covers proposals, not other clients: an execution it would
// authorise is refused to any client but the one that proposed.
func testPolicyBoundToRequester(t *testing.T, in Instance) {
	f := newFlow(t, in)
	admin := in.Admin(t, fixtures.DemoTenantID, fixtures.DemoUserID)
	pol, err := admin.CreatePolicy(ctx, domain.Policy{TenantID: fixtures.DemoTenantID, Name: "Promote reviewed draft-sale candidates",
		AllowedTools: []string{toolPromote}, Scope: domain.PolicyScope{EstateSaleIDs: []string{fixtures.DraftSaleID}},
		Conditions: domain.PolicyConditions{MaxItemsPerRun: 1, PermittedFields: []string{"create_item.sale_id", "create_item.title",
			"create_item.description", "create_item.category", "create_item.room", "create_item.status", "review_status"}},
		Limits: domain.PolicyLimits{MaxDailyActions: 5}, CreatedBy: fixtures.DemoUserID})
	if err != nil {
		t.Fatalf("CreatePolicy: %v", err)
	}
	if pol, err = admin.SetPolicyStatus(ctx, pol.ID, domain.PolicyActive, fixtures.DemoUserID); err != nil {
		t.Fatalf("enable policy: %v", err)
	}
	other := f.otherClient(fixtures.DemoUserID)
	c := f.unpricedCandidate(fixtures.DraftSaleID, "Brass floor lamp")
	prop := f.mustPropose(promotionDraft(c.ID, c.Version, nil))
	byPolicy := domain.Authorization{Decision: "allowed_by_policy", PolicyID: pol.ID, PolicyVersion: pol.Version, ProposalHash: prop.Hash}
	before := in.Counts(t)
	_, _, err = f.execute(f.b, other, prop, byPolicy)
	wantErr(t, err, domain.ErrApprovalInvalid, "another client executing under a policy")
	f.unchanged(before, "another client executing under a policy")
	if _, _, err := f.execute(f.b, f.owner, prop, byPolicy); err != nil {
		t.Fatalf("the requesting client under the policy: %v", err)
	}
}

// Under the default $0/day budget an SMS notification (a cost) is refused
// at proposal with cost_limit_exceeded and nothing is stored; free work is
// not affected. The client's own budget binds as well as the tenant's.
func testCostBudgetAtProposal(t *testing.T, in Instance) {
	f := newFlow(t, in)
	sms := f.smsDraft()
	before := in.Counts(t)
	_, _, err := f.propose(f.owner, sms)
	wantErr(t, err, domain.ErrCostLimit, "an SMS notification under a $0/day budget")
	if !strings.Contains(err.Error(), "daily paid budget") {
		t.Fatalf("the refusal does not say why: %v", err)
	}
	f.unchanged(before, "a proposal over budget")
	// An e-mail notification costs nothing: it is proposed as before.
	s := f.sale(fixtures.PublishedSaleID)
	if _, _, err := f.propose(f.owner, notifyDraft(s.ID, s.Version, "followed_sale", []string{"email"}, "Soon")); err != nil {
		t.Fatalf("a free notification: %v", err)
	}
	// The tenant allows $5/day, but this client only $0.01: still refused.
	f.setPaidBudget("", 5)
	f.setPaidBudget(f.owner.Client.ID, 0.01)
	before = in.Counts(t)
	_, _, err = f.propose(f.owner, sms)
	wantErr(t, err, domain.ErrCostLimit, "an SMS notification over the client's own budget")
	f.unchanged(before, "a proposal over the client's budget")
	// Both allow it: proposed, with its cost.
	f.setPaidBudget(f.owner.Client.ID, 5)
	prop, _, err := f.propose(f.owner, sms)
	if err != nil || prop.Impact.EstimatedCostUSD <= 0 {
		t.Fatalf("an SMS notification within budget: %+v %v", prop.Impact, err)
	}
}

// A paid proposal made and approved under a $5/day budget cannot execute
// once the budget is lowered below its cost: cost_limit_exceeded, nothing
// changed, the grant still active. Raised again, it executes; what it cost
// then counts as spent today, so a second one that would pass the budget
// is refused at proposal.
func testCostBudgetAtExecution(t *testing.T, in Instance) {
	f := newFlow(t, in)
	f.setPaidBudget("", 5)
	prop := f.mustPropose(f.smsDraft())
	cost := prop.Impact.EstimatedCostUSD
	if cost <= 0 || cost >= 5 {
		t.Fatalf("the SMS proposal costs $%.2f: the case needs 0 < cost < 5", cost)
	}
	g := f.approve(prop)
	f.setPaidBudget("", cost/2)
	before := in.Counts(t)
	_, _, err := f.execute(f.b, f.owner, prop, allowed(prop, g.ID))
	wantErr(t, err, domain.ErrCostLimit, "an execution over the lowered budget")
	f.unchanged(before, "an execution over budget")
	f.wantGrant(prop, g.ID, domain.GrantActive)
	if got := f.proposal(prop.ID); got.Status != domain.ProposalApproved {
		t.Fatalf("proposal is %s after a refused execution", got.Status)
	}

	// Budget for one and a half: the first runs, the second no longer fits.
	f.setPaidBudget("", cost*1.5)
	if _, _, err := f.execute(f.b, f.owner, prop, allowed(prop, g.ID)); err != nil {
		t.Fatalf("execution within budget: %v", err)
	}
	f.wantGrant(prop, g.ID, domain.GrantConsumed)
	before = in.Counts(t)
	_, _, err = f.propose(f.owner, f.smsDraft())
	wantErr(t, err, domain.ErrCostLimit, "a second paid proposal past what is left today")
	f.unchanged(before, "a second paid proposal past what is left today")
}

// The seller surface never issues a grant that could spend more than the
// budget: neither for a proposal that now costs more than the budget, nor
// with a maximum cost above it. Nothing is written; the proposal stays
// pending.
func testGrantOverBudget(t *testing.T, in Instance) {
	f := newFlow(t, in)
	f.setPaidBudget("", 5)
	prop := f.mustPropose(f.smsDraft())
	issuer := in.Grants(t, prop.TenantID, fixtures.DemoUserID)

	wide := grantFor(prop, fixtures.DemoUserID)
	wide.Constraints.MaxCostUSD = 6
	before := in.Counts(t)
	_, err := issuer.IssueGrant(ctx, wide)
	wantErr(t, err, domain.ErrCostLimit, "a grant allowing $6 under a $5/day budget")
	if !strings.Contains(err.Error(), "daily paid budget") {
		t.Fatalf("the refusal does not say why: %v", err)
	}
	f.unchanged(before, "a grant over budget")

	f.setPaidBudget("", prop.Impact.EstimatedCostUSD/2)
	before = in.Counts(t)
	_, err = issuer.IssueGrant(ctx, grantFor(prop, fixtures.DemoUserID))
	wantErr(t, err, domain.ErrCostLimit, "a grant for a proposal costing more than the lowered budget")
	f.unchanged(before, "a grant over the lowered budget")
	if gs := f.grants(prop); len(gs) != 0 {
		t.Fatalf("grants after refusals: %+v", gs)
	}
	if got := f.proposal(prop.ID); got.Status != domain.ProposalPending {
		t.Fatalf("proposal is %s after refused grants", got.Status)
	}
}
