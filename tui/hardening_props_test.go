package tui

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/domain"
)

// Issue 13, finding 2: the queue of a seller whose membership is limited to
// sale_223 (user_93) omits the owner's proposal for sale_221, while the
// owner's queue shows both.
func TestHardening_ScopedSellerQueueOmitsOtherSalesProposal(t *testing.T) {
	h := newHarness(t)
	other := h.proposePromotion() // candidate_771, sale_221
	mine := h.propose("trove_propose_candidate_promotion", map[string]any{"candidate_id": "candidate_781", "expected_version": 1})
	if got := h.proposal(other).SaleIDs; !slices.Equal(got, []string{fixtures.PublishedSaleID}) {
		t.Fatalf("%s is for %v", other, got)
	}
	if got := h.proposal(mine).SaleIDs; !slices.Equal(got, []string{fixtures.LiveSaleID}) {
		t.Fatalf("%s is for %v", mine, got)
	}

	m := h.open(fixtures.ScopedCatalogerUserID)
	mustContain(t, m, mine)
	if s := plain(m); strings.Contains(s, other) {
		t.Fatalf("the sale_223 seller's queue shows the sale_221 proposal %s:\n%s", other, s)
	}
	if n := len(m.s.proposals); n != 1 || m.s.proposals[0].ID != mine {
		t.Fatalf("the scoped seller's queue holds %d proposals: %+v", n, m.s.proposals)
	}
	wantAction(t, m, "enter", OpenProposal{ID: mine})

	owner := h.open(fixtures.DemoUserID)
	mustContain(t, owner, mine, other)
}

// Issue 13, finding 3: the detail of a bulk price change shows the prices to
// the owner and hides them from a cataloger (no item.read_pricing), by the
// same rule as the item views; the hash shown is the same.
func TestHardening_DetailHidesPricesFromARoleWithoutPricing(t *testing.T) {
	h := newHarness(t)
	it := item(t, func(it domain.Item) bool {
		return it.SaleID == fixtures.PublishedSaleID && it.PriceCents != nil && (it.Status == domain.ItemReady || it.Status == domain.ItemPublished)
	})
	const newPrice = 12345
	pid := h.propose("trove_propose_bulk_item_update", map[string]any{"item_ids": []string{it.ID},
		"expected_versions": []map[string]any{{"id": it.ID, "version": it.Version}}, "changes": map[string]any{"price_cents": newPrice}})
	old := strconv.FormatInt(*it.PriceCents, 10)

	owner := h.open(fixtures.DemoUserID)
	owner = h.press(owner, "enter")
	mustContain(t, owner, it.ID+" price_cents: "+old+" → "+strconv.Itoa(newPrice))

	cat := h.open(fixtures.CatalogerUserID)
	wantAction(t, cat, "enter", OpenProposal{ID: pid})
	cat = h.press(cat, "enter")
	mustContain(t, cat, it.ID+" price_cents: (hidden from your role, cataloger)", "Changes (1)")
	if s := plain(cat); strings.Contains(s, strconv.Itoa(newPrice)) || strings.Contains(s, old) {
		t.Fatalf("the cataloger's detail shows a price:\n%s", s)
	}

	// The hash covers the hidden price, which hashing guesses would find
	// again: the cataloger sees neither its short nor its full form, on the
	// detail or on the audit trail; the owner sees both.
	hash := h.proposal(pid).Hash
	hex, ok := strings.CutPrefix(hash, "sha256:")
	if !ok || len(hex) != 64 {
		t.Fatalf("proposal hash %q", hash)
	}
	mustContain(t, owner, shortHash(hash))
	mustContain(t, h.press(owner, "enter"), "Audit trail of "+pid, hash)
	mustContain(t, cat, "hash withheld: a change is hidden from your role")
	catTrail := h.press(cat, "enter")
	mustContain(t, catTrail, "Audit trail of "+pid, "hash withheld: a change is hidden from your role")
	for name, m := range map[string]Model{"detail": cat, "audit trail": catTrail} {
		if s := plain(m); strings.Contains(s, hex[:12]) || strings.Contains(s, shortHash(hash)) || strings.Contains(s, hash) {
			t.Fatalf("the cataloger's %s shows the proposal hash %s:\n%s", name, hash, s)
		}
	}
}
