package tui

import (
	"context"
	"fmt"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/domain"
)

// Issue 13, finding 9: the terminal bounds a grant's maximum cost by the
// daily paid budget (it used to take the larger of what the proposal needs
// and the budget). An SMS notification proposed under a $5/day budget,
// which the seller then lowers below its cost, cannot be approved: the
// terminal says why and writes nothing.
func TestHardening_ApproveRefusesAGrantOverTheDailyPaidBudget(t *testing.T) {
	h := newHarness(t)
	setBudget := func(usd float64) {
		l := domain.DefaultLimits()
		l.MaxDailyPaidCostUSD = usd
		if err := h.st.SetLimits(context.Background(), fixtures.DemoTenantID, "", l); err != nil {
			t.Fatal(err)
		}
	}
	var sale domain.Sale
	for _, s := range fixtures.Dataset().Sales {
		if s.ID == fixtures.PublishedSaleID {
			sale = s
		}
	}
	setBudget(5)
	pid := h.propose("trove_propose_buyer_notification", map[string]any{"sale_id": sale.ID, "expected_version": sale.Version,
		"audience": "followed_sale", "channels": []string{"sms"}, "message_template": "{{sale_title}} opens soon"})
	cost := h.proposal(pid).Impact.EstimatedCostUSD
	if cost <= 0.02 {
		t.Fatalf("the SMS proposal costs $%.2f: the case proves nothing", cost)
	}
	setBudget(0.01)

	m := h.open(fixtures.DemoUserID)
	m = h.update(m, tea.WindowSizeMsg{Width: 240, Height: 24}) // the whole refusal on one line
	before := h.digest()
	m = h.press(m, "a")
	// The backend's own rule and words (domain.CheckGrantCost): the smallest
	// grant the proposal needs allows its cost, over the client's budget
	// (narrowed by the tenant's).
	mustContain(t, m, fmt.Sprintf("✗ cannot approve %s: a grant of up to $%.2f exceeds the client's daily paid budget of $0.01: raise the budget with", pid, cost))
	m = h.press(m, "y")
	if gs := h.grants(""); len(gs) != 0 || h.proposal(pid).Status != domain.ProposalPending {
		t.Fatalf("a grant over budget was issued: %+v", gs)
	}
	if after := h.digest(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatal("a refused approval wrote")
	}

	// Within budget, the cost field is bounded by the budget, not above it.
	setBudget(cost + 1)
	m = h.tick(m, 2*time.Second)
	m = h.press(m, "a")
	mustContain(t, m, "Approve "+pid+"?", fmt.Sprintf("($%.2f–$%.2f)", cost, cost+1))

	// A client row with a larger budget does not widen the bound: the
	// client's effective limits are narrowed by the tenant's (one read).
	cl := domain.DefaultLimits()
	cl.MaxDailyPaidCostUSD = cost + 100
	if err := h.st.SetLimits(context.Background(), fixtures.DemoTenantID, h.proposal(pid).RequestedBy.ClientID, cl); err != nil {
		t.Fatal(err)
	}
	m = h.press(m, "esc")
	m = h.tick(m, 2*time.Second)
	m = h.press(m, "a")
	mustContain(t, m, "Approve "+pid+"?", fmt.Sprintf("($%.2f–$%.2f)", cost, cost+1))
}
