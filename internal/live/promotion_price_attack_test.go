package live_test

import (
	"slices"
	"testing"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/domain"
)

// Attack (issue 16, promotion makes a complete draft): the price a
// promotion gives its item comes from the proposal body, and a pricing
// token's holder can send mcp_create_proposal any body. The database is the
// authority (DESIGN "Modes"): it must hold the price to what the Go builder
// allows (a whole number of cents, 0..domain.MaxPriceCents), as the bulk
// update's check does, instead of storing a proposal whose price is
// negative, fractional or absurd — one the seller is asked to approve and
// whose execution then breaks on a cast or a CHECK.
func TestAttack_PromotionPriceForgedOutOfRangeIsRefused(t *testing.T) {
	a := newAuthority(t)
	promo, err := a.propose(authorityDraft(domain.ActionPromoteCandidate, nil, domain.TargetVersion{ID: fixtures.DemoCandidateID, Version: 3}))
	if err != nil {
		t.Fatal(err)
	}
	withPrice := func(v any) func(*domain.Proposal) {
		return func(x *domain.Proposal) {
			if i := slices.IndexFunc(x.Changes, func(c domain.FieldChange) bool { return c.Field == "create_item.price_cents" }); i >= 0 {
				x.Changes[i].To = v
				return
			}
			at := slices.IndexFunc(x.Changes, func(c domain.FieldChange) bool {
				return c.Field == "create_item.photos" || c.Field == "create_item.status"
			})
			x.Changes = slices.Insert(x.Changes, at, domain.FieldChange{TargetID: fixtures.DemoCandidateID, Field: "create_item.price_cents", To: v})
		}
	}
	for _, v := range []any{-500, 12.5, float64(domain.MaxPriceCents) + 1} {
		a.forge(promo, withPrice(v), "invalid_input:changes", "price_cents")
	}
	// A control: a whole price in range is the pricer's to propose, up to
	// Go's bound exactly (so SQL's bound is Go's).
	for _, v := range []any{4200, domain.MaxPriceCents} {
		ok := promo
		ok.Changes = slices.Clone(promo.Changes)
		withPrice(v)(&ok)
		a.accept(ok)
	}
}
