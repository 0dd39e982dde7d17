package mcpserver_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/domain"
)

// pricedItems returns up to n items of the demo tenant's published sale
// with a tag price that a bulk update may still change.
func pricedItems(t *testing.T, n int) []domain.Item {
	t.Helper()
	var out []domain.Item
	for _, it := range fixtures.Dataset().Items {
		if it.TenantID == fixtures.DemoTenantID && it.SaleID == fixtures.PublishedSaleID && it.PriceCents != nil &&
			(it.Status == domain.ItemReady || it.Status == domain.ItemPublished) && len(out) < n {
			out = append(out, it)
		}
	}
	if len(out) < n {
		t.Fatalf("only %d priced items in %s", len(out), fixtures.PublishedSaleID)
	}
	return out
}

// changesOf decodes the changes of a proposal envelope as raw objects, so
// that a left-out key is told apart from a null one.
func changesOf(t *testing.T, env envelope) []map[string]json.RawMessage {
	t.Helper()
	var d struct {
		ID      string                       `json:"proposal_id"`
		Changes []map[string]json.RawMessage `json:"changes"`
	}
	if err := json.Unmarshal(env.Data, &d); err != nil || d.ID == "" {
		t.Fatalf("not a proposal: %v %s", err, env.raw)
	}
	return d.Changes
}

// Issue 13, finding 3: trove_get_proposal projects a proposal's changes per
// role exactly like trove_get_item projects an item. A cataloger (no
// item.read_pricing) sees the price change of a bulk proposal redacted —
// field named, no from/to, and no hash to test guesses against — while the
// owner sees both values and the hash; the proposal itself is
// the same for both.
func TestHardening_GetProposalProjectsChangesPerRole(t *testing.T) {
	e := newEnv(t)
	items := pricedItems(t, 2)
	ids, evs := []string{}, []map[string]any{}
	for _, it := range items {
		ids = append(ids, it.ID)
		evs = append(evs, map[string]any{"id": it.ID, "version": it.Version})
	}
	const newPrice = 12345
	prop := e.propose("trove_propose_bulk_item_update", map[string]any{"item_ids": ids, "expected_versions": evs,
		"changes": map[string]any{"price_cents": newPrice, "room": "garage"}, "idempotency_key": "hard-props-bulk-0001"})

	// The owner sees every value.
	own := e.call("trove_get_proposal", map[string]any{"proposal_id": prop.ProposalID})
	if own.Status != "succeeded" {
		t.Fatalf("owner get: %s", own.raw)
	}
	prices := 0
	for _, c := range changesOf(t, own) {
		if string(c["field"]) == `"price_cents"` {
			prices++
			if string(c["to"]) != strconv.Itoa(newPrice) || c["from"] == nil || c["redacted"] != nil {
				t.Fatalf("owner's price change = %s", mustMarshal(t, c))
			}
		}
	}
	if prices != len(ids) {
		t.Fatalf("owner sees %d price changes, want %d: %s", prices, len(ids), own.raw)
	}

	// The cataloger: the price changes are redacted, the room changes not.
	_, tok := e.register(fixtures.DemoTenantID, fixtures.CatalogerUserID, "tenant_read", "action_proposal")
	cat := connect(t, e.gate, tok)
	got := callOn(t, cat, "trove_get_proposal", map[string]any{"proposal_id": prop.ProposalID}, nil)
	if got.Status != "succeeded" {
		t.Fatalf("cataloger get: %s", got.raw)
	}
	var redacted, rooms int
	for _, c := range changesOf(t, got) {
		switch string(c["field"]) {
		case `"price_cents"`:
			redacted++
			_, hasFrom := c["from"]
			_, hasTo := c["to"]
			if hasFrom || hasTo || string(c["redacted"]) != "true" {
				t.Fatalf("cataloger's price change = %s", mustMarshal(t, c))
			}
		case `"room"`:
			rooms++
			if string(c["to"]) != `"garage"` || c["redacted"] != nil {
				t.Fatalf("cataloger's room change = %s", mustMarshal(t, c))
			}
		}
	}
	if redacted != len(ids) || rooms != len(ids) {
		t.Fatalf("cataloger sees %d redacted price and %d room changes: %s", redacted, rooms, got.raw)
	}
	for _, it := range items {
		if strings.Contains(got.raw, strconv.FormatInt(*it.PriceCents, 10)) {
			t.Fatalf("the cataloger's view carries the price %d: %s", *it.PriceCents, got.raw)
		}
	}
	if strings.Contains(got.raw, strconv.Itoa(newPrice)) {
		t.Fatalf("the cataloger's view carries the new price: %s", got.raw)
	}
	var oh, ch struct {
		Hash string `json:"proposal_hash"`
	}
	_ = json.Unmarshal(own.Data, &oh)
	_ = json.Unmarshal(got.Data, &ch)
	// The owner sees the hash; the cataloger does not: hashing guessed
	// prices against it would reveal the redacted one (the attack review
	// found the price by brute force in under a second).
	if oh.Hash != prop.ProposalHash || oh.Hash == "" || ch.Hash != "" || strings.Contains(got.raw, prop.ProposalHash) {
		t.Fatalf("hashes owner %q cataloger %q, want the owner's %s and none for the cataloger", oh.Hash, ch.Hash, prop.ProposalHash)
	}
	// The same rule as the item view: the cataloger's item has no price.
	item := callOn(t, cat, "trove_get_item", map[string]any{"item_id": ids[0]}, nil)
	if item.Status != "succeeded" || strings.Contains(string(item.Data), `"price_cents"`) {
		t.Fatalf("cataloger's item: %s", item.raw)
	}
}

// Issue 13, finding 2, through the gate: a cataloger assigned only to
// sale_223 neither reads nor executes the owner's approved sale_221
// promotion; both answers are a missing proposal's, and nothing changes
// (no item, the grant unconsumed).
func TestHardening_ScopedClientNeitherReadsNorExecutesAnotherSalesProposal(t *testing.T) {
	e := newEnv(t)
	var cand domain.Candidate
	for _, c := range fixtures.Dataset().Candidates {
		if c.ID == "candidate_773" {
			cand = c
		}
	}
	if cand.SaleID != fixtures.PublishedSaleID {
		t.Fatalf("candidate_773 = %+v", cand)
	}
	prop := e.propose("trove_propose_candidate_promotion", map[string]any{"candidate_id": cand.ID,
		"expected_version": cand.Version, "idempotency_key": "hard-props-promo-0001"})
	g := e.approve(prop.ProposalID)

	_, tok := e.register(fixtures.DemoTenantID, fixtures.ScopedCatalogerUserID, "tenant_read", "action_proposal", "controlled_action")
	sc := connect(t, e.gate, tok)
	missing := callOn(t, sc, "trove_get_proposal", map[string]any{"proposal_id": "proposal_404"}, nil)
	wantCode(t, missing, "failed", "invalid_reference")
	before := e.digest()
	items := e.query("SELECT count(*) FROM items WHERE sale_id = ?", fixtures.PublishedSaleID)

	read := callOn(t, sc, "trove_get_proposal", map[string]any{"proposal_id": prop.ProposalID}, nil)
	wantCode(t, read, "failed", "invalid_reference")
	exec := callOn(t, sc, "trove_execute_candidate_promotion", map[string]any{"proposal_id": prop.ProposalID,
		"idempotency_key": "hard-props-exec-0001"}, nil)
	wantCode(t, exec, "failed", "invalid_reference")
	for _, env := range []envelope{read, exec} {
		if strings.ReplaceAll(env.Errors[0].Message, prop.ProposalID, "ID") != strings.ReplaceAll(missing.Errors[0].Message, "proposal_404", "ID") ||
			env.Errors[0].Field != missing.Errors[0].Field {
			t.Fatalf("refusal %+v differs from a missing id's %+v", env.Errors[0], missing.Errors[0])
		}
		if env.Data != nil && string(env.Data) != "null" {
			t.Fatalf("a refusal carries data: %s", env.raw)
		}
	}
	assertOnlyEventsChanged(t, before, e.digest())
	if n := e.query("SELECT count(*) FROM items WHERE sale_id = ?", fixtures.PublishedSaleID); n != items {
		t.Fatalf("items in %s: %d, was %d", fixtures.PublishedSaleID, n, items)
	}
	if n := e.query("SELECT count(*) FROM approval_grants WHERE id = ? AND status = 'active'", g.ID); n != 1 {
		t.Fatalf("grant %s is no longer active", g.ID)
	}
}

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
