package mcpserver_test

import (
	"context"
	"strings"
	"testing"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/domain"
)

// setPaidBudget sets the demo tenant's daily paid budget (§38
// maximum_daily_paid_cost_usd), the other limits at their defaults.
func (e *env) setPaidBudget(usd float64) {
	e.t.Helper()
	l := domain.DefaultLimits()
	l.MaxDailyPaidCostUSD = usd
	if err := e.st.SetLimits(context.Background(), fixtures.DemoTenantID, "", l); err != nil {
		e.t.Fatalf("SetLimits $%.2f: %v", usd, err)
	}
}

// Issue 13, finding 4, through a real go-sdk client: a grant the seller
// issued for the demo client's proposal cannot be consumed by a second
// client of the same tenant whose role holds the tool's permission. Its
// call is blocked with approval_invalid, only bookkeeping changes, the
// grant stays active, and the requesting client then executes it.
func TestHardening_AnotherClientsGrantIsApprovalInvalidOverMCP(t *testing.T) {
	e := newEnv(t)
	_, tok := e.register(fixtures.DemoTenantID, fixtures.DemoUserID) // the same owner, another agent
	other := connect(t, e.gate, tok)
	prop := e.propose("trove_propose_candidate_promotion", map[string]any{
		"candidate_id": fixtures.DemoCandidateID, "expected_version": 3, "idempotency_key": "bound-prop-0001"})
	g := e.approve(prop.ProposalID)

	before := e.digest()
	env := callOn(t, other, "trove_execute_candidate_promotion", map[string]any{"proposal_id": prop.ProposalID, "idempotency_key": "bound-exec-0001"}, nil)
	wantCode(t, env, "blocked", "approval_invalid")
	if ev := e.oneEvent(env); ev.ErrorCode != "approval_invalid" || ev.Outcome != domain.OutcomeBlocked {
		t.Errorf("the refused call's event: %+v", ev)
	}
	assertOnlyEventsChanged(t, before, e.digest())
	if n := e.query("SELECT count(*) FROM approval_grants WHERE id = ? AND status = 'active' AND consumed_at IS NULL", g.ID); n != 1 {
		t.Fatalf("the grant was touched by another client's call")
	}

	done := e.call("trove_execute_candidate_promotion", map[string]any{"proposal_id": prop.ProposalID, "idempotency_key": "bound-exec-0002"})
	if res := dataAs[domain.ExecutionResult](t, done); !strings.HasPrefix(done.Status, "succeeded") || !res.Executed ||
		res.Approval.ApprovalID == nil || *res.Approval.ApprovalID != g.ID {
		t.Fatalf("the requesting client's execution: %s", done.raw)
	}
}

// Issue 13, finding 9 (criterion 62), through a real go-sdk client: an SMS
// notification under the default $0/day budget is cost_limit_exceeded and
// stores nothing; proposed and approved under $5/day, it cannot execute
// once the budget is lowered below its cost (nothing changes, the grant
// stays active); raised again, it executes.
func TestHardening_PaidNotificationOverBudgetIsCostLimitExceededOverMCP(t *testing.T) {
	e := newEnv(t)
	var sale domain.Sale
	for _, s := range fixtures.Dataset().Sales {
		if s.ID == fixtures.PublishedSaleID {
			sale = s
		}
	}
	args := map[string]any{"sale_id": sale.ID, "expected_version": sale.Version, "audience": "followed_sale",
		"channels": []string{"sms"}, "message_template": "{{sale_title}} opens soon", "idempotency_key": "paid-note-0001"}

	before := e.digest()
	refused := e.call("trove_propose_buyer_notification", args)
	wantCode(t, refused, "blocked", "cost_limit_exceeded")
	if !strings.Contains(refused.Errors[0].Message, "daily paid budget of $0.00") {
		t.Errorf("the message does not say which budget: %q", refused.Errors[0].Message)
	}
	assertOnlyEventsChanged(t, before, e.digest())

	e.setPaidBudget(5)
	args["idempotency_key"] = "paid-note-0002"
	note := e.propose("trove_propose_buyer_notification", args)
	if note.Impact.EstimatedCostUSD <= 0 || note.Impact.EstimatedCostUSD >= 5 {
		t.Fatalf("notification cost $%.2f", note.Impact.EstimatedCostUSD)
	}
	g := e.approve(note.ProposalID)
	e.setPaidBudget(note.Impact.EstimatedCostUSD / 2)

	before = e.digest()
	blocked := e.call("trove_notify_matched_buyers", map[string]any{"proposal_id": note.ProposalID, "idempotency_key": "paid-exec-0001"})
	wantCode(t, blocked, "blocked", "cost_limit_exceeded")
	assertOnlyEventsChanged(t, before, e.digest())
	if n := e.query("SELECT count(*) FROM approval_grants WHERE id = ? AND status = 'active'", g.ID); n != 1 {
		t.Fatal("a refused execution consumed the grant")
	}

	e.setPaidBudget(5)
	sent := e.call("trove_notify_matched_buyers", map[string]any{"proposal_id": note.ProposalID, "idempotency_key": "paid-exec-0002"})
	if !strings.HasPrefix(sent.Status, "succeeded") {
		t.Fatalf("execution within budget: %s", sent.raw)
	}
}
