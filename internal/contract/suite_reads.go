package contract

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/domain"
)

// runReads runs the contract cases of the public and scoped read methods (§11, §12) beyond the four lists.
func runReads(t *testing.T, open func(t *testing.T) Instance) {
	t.Run("GetSale", func(t *testing.T) { readsGetSale(t, open(t)) })
	t.Run("GetItem", func(t *testing.T) { readsGetItem(t, open(t)) })
	t.Run("GetCandidate", func(t *testing.T) { readsGetCandidate(t, open(t)) })
	t.Run("PublicSale", func(t *testing.T) { readsPublicSale(t, open(t)) })
	t.Run("PublicItemAndQR", func(t *testing.T) { readsPublicItem(t, open(t)) })
	t.Run("SearchMarketplace", func(t *testing.T) { readsSearch(t, open(t)) })
	t.Run("ListStatusEvents", func(t *testing.T) { readsStatusEvents(t, open(t)) })
	t.Run("ListImportRuns", func(t *testing.T) { readsImportRuns(t, open(t)) })
	t.Run("GetImportRun", func(t *testing.T) { readsGetImportRun(t, open(t)) })
	t.Run("ListLabelBatches", func(t *testing.T) { readsLabelBatches(t, open(t)) })
	t.Run("DispositionQueue", func(t *testing.T) { readsDisposition(t, open(t)) })
}

// rdReadNow is "now" for a backend's reveal rule: the store of the contract
// runs on a clock fixed at fixtures.Epoch (store/contract_test.go), the live
// database on its own clock.
func rdReadNow(b domain.Backend) time.Time {
	if b.Mode() == domain.ModeLive {
		return time.Now()
	}
	return fixtures.Epoch
}

// rdUnchanged fails when a read changed any table but the bookkeeping ones.
func rdUnchanged(t *testing.T, in Instance, before map[string]int64) {
	t.Helper()
	if d := changed(before, in.Counts(t)); len(d) > 0 {
		t.Fatalf("a read wrote: %v", d)
	}
}

func rdWantAssignment(t *testing.T, err error, what string) {
	t.Helper()
	if !errors.Is(err, domain.ErrSaleAssignment) {
		t.Fatalf("%s: err = %v, want ErrSaleAssignment", what, err)
	}
}

// dataset indexes of the contract dataset.
type rdDsIndex struct {
	ds    domain.Dataset
	sales map[string]domain.Sale
	items map[string]domain.Item
}

func rdIndexed() rdDsIndex {
	ix := rdDsIndex{ds: Dataset(), sales: map[string]domain.Sale{}, items: map[string]domain.Item{}}
	for _, s := range ix.ds.Sales {
		ix.sales[s.ID] = s
	}
	for _, it := range ix.ds.Items {
		ix.items[it.ID] = it
	}
	return ix
}

// firstItem is the first dataset item that satisfies ok (the case fails if
// none does: it would prove nothing).
func (ix rdDsIndex) firstItem(t *testing.T, what string, ok func(domain.Item) bool) domain.Item {
	t.Helper()
	for _, it := range ix.ds.Items {
		if ok(it) {
			return it
		}
	}
	t.Fatalf("the dataset has no %s", what)
	return domain.Item{}
}

func rdEqTime(a, b *time.Time) bool { return (a == nil) == (b == nil) && (a == nil || a.Equal(*b)) }

func rdSaleDiff(got, want domain.Sale) string {
	if got.ID != want.ID || got.TenantID != want.TenantID || got.Title != want.Title || got.Status != want.Status ||
		got.Visibility != want.Visibility || got.City != want.City || got.Region != want.Region || got.PostalCode != want.PostalCode ||
		got.StreetAddress != want.StreetAddress || got.AddressPolicy != want.AddressPolicy ||
		!rdEqTime(got.AddressRevealAt, want.AddressRevealAt) || !got.StartsAt.Equal(want.StartsAt) || !got.EndsAt.Equal(want.EndsAt) ||
		got.Version != max(want.Version, 1) || !got.CreatedAt.Equal(want.CreatedAt) || !got.UpdatedAt.Equal(want.UpdatedAt) {
		return fmt.Sprintf("sale = %+v, want %+v", got, want)
	}
	return ""
}

func rdItemDiff(got, want domain.Item) string {
	if got.ID != want.ID || got.TenantID != want.TenantID || got.SaleID != want.SaleID || got.Title != want.Title ||
		got.Description != want.Description || got.Category != want.Category || got.Room != want.Room || got.Status != want.Status ||
		!eqPtr(got.PriceCents, want.PriceCents) || !eqPtr(got.InternalPriceGuidanceCents, want.InternalPriceGuidanceCents) ||
		!eqPtr(got.CostBasisCents, want.CostBasisCents) || got.AppraisalFlag != want.AppraisalFlag || got.StaffNotes != want.StaffNotes ||
		got.QRCode != want.QRCode || got.Version != max(want.Version, 1) || !got.CreatedAt.Equal(want.CreatedAt) ||
		!got.UpdatedAt.Equal(want.UpdatedAt) || got.CreatedAt.Location() != time.UTC {
		return fmt.Sprintf("item = %+v, want %+v", got, want)
	}
	return ""
}

// rdSortedPhotos is an item's photos in (position, id) order.
func rdSortedPhotos(it domain.Item) []domain.Photo {
	ph := slices.Clone(it.Photos)
	slices.SortFunc(ph, func(x, y domain.Photo) int {
		return cmp.Or(cmp.Compare(x.Position, y.Position), cmp.Compare(x.ID, y.ID))
	})
	return ph
}

func rdPhotosDiff(got []domain.Photo, want domain.Item) string {
	w := rdSortedPhotos(want)
	if got == nil || len(got) != len(w) {
		return fmt.Sprintf("item %s photos = %v, want %d", want.ID, got, len(w))
	}
	for k := range w {
		g := got[k]
		if g.ID != w[k].ID || g.ItemID != want.ID || g.StorageKey != w[k].StorageKey || g.Width != w[k].Width ||
			g.Height != w[k].Height || g.Position != w[k].Position || g.Published != w[k].Published {
			return fmt.Sprintf("item %s photo %d = %+v, want %+v", want.ID, k, g, w[k])
		}
	}
	return ""
}

// rdPriceHistory is an item's price changes in (changed_at, id) order.
func rdPriceHistory(ds domain.Dataset, itemID string) []domain.PriceChange {
	var out []domain.PriceChange
	for _, pc := range ds.PriceChanges {
		if pc.ItemID == itemID {
			out = append(out, pc)
		}
	}
	slices.SortFunc(out, func(x, y domain.PriceChange) int {
		return cmp.Or(x.ChangedAt.Compare(y.ChangedAt), cmp.Compare(x.ID, y.ID))
	})
	return out
}

func rdHistoryDiff(got []domain.PriceChange, want []domain.PriceChange) string {
	if got == nil || len(got) != len(want) {
		return fmt.Sprintf("price history = %v, want %d entries", got, len(want))
	}
	for k := range want {
		g, w := got[k], want[k]
		if g.ID != w.ID || g.TenantID != w.TenantID || g.ItemID != w.ItemID || !eqPtr(g.PriceCents, w.PriceCents) ||
			!eqPtr(g.InternalPriceGuidanceCents, w.InternalPriceGuidanceCents) || g.Reason != w.Reason || g.ActorID != w.ActorID ||
			g.ProposalID != w.ProposalID || !g.ChangedAt.Equal(w.ChangedAt) {
			return fmt.Sprintf("price history %d = %+v, want %+v", k, g, w)
		}
	}
	return ""
}

func readsGetSale(t *testing.T, in Instance) {
	b, ix := in.Backend, rdIndexed()
	before := in.Counts(t)
	p := resolve(t, b, CredOwner)
	for _, id := range []string{fixtures.PublishedSaleID, fixtures.DraftSaleID, fixtures.LiveSaleID, fixtures.ClosedSaleID} {
		got, err := b.GetSale(ctx, p, id)
		if err != nil {
			t.Fatalf("GetSale %s: %v", id, err)
		}
		if d := rdSaleDiff(got, ix.sales[id]); d != "" {
			t.Fatal(d)
		}
	}
	// Another tenant's sale is the same answer as a missing one.
	_, err := b.GetSale(ctx, p, fixtures.OtherPublishedSaleID)
	wantRef(t, err, "sale_id", fixtures.OtherPublishedSaleID, true)
	_, err = b.GetSale(ctx, p, "sale_404")
	wantRef(t, err, "sale_id", "sale_404", false)
	_, err = b.GetSale(ctx, p, "")
	wantRef(t, err, "sale_id", "", false)
	o := resolve(t, b, CredOther)
	_, err = b.GetSale(ctx, o, fixtures.PublishedSaleID)
	wantRef(t, err, "sale_id", fixtures.PublishedSaleID, true)
	if got, err := b.GetSale(ctx, o, fixtures.OtherDraftSaleID); err != nil || got.TenantID != fixtures.OtherTenantID {
		t.Fatalf("the other tenant's own draft sale = %+v, %v", got, err)
	}
	// Sale assignment: the assigned sale only; a foreign sale is unknown
	// first (assignment never answers for another tenant's record).
	s := resolve(t, b, CredScoped)
	if got, err := b.GetSale(ctx, s, fixtures.LiveSaleID); err != nil || got.ID != fixtures.LiveSaleID {
		t.Fatalf("scoped member's assigned sale = %+v, %v", got, err)
	}
	_, err = b.GetSale(ctx, s, fixtures.PublishedSaleID)
	rdWantAssignment(t, err, "scoped member on an unassigned sale")
	_, err = b.GetSale(ctx, s, fixtures.OtherPublishedSaleID)
	wantRef(t, err, "sale_id", fixtures.OtherPublishedSaleID, true)
	if _, err := b.GetSale(ctx, domain.Anonymous(), fixtures.PublishedSaleID); !errors.Is(err, domain.ErrAuthRequired) {
		t.Fatalf("anonymous get: %v, want ErrAuthRequired", err)
	}
	rdUnchanged(t, in, before)
}

func readsGetItem(t *testing.T, in Instance) {
	b, ix := in.Backend, rdIndexed()
	before := in.Counts(t)
	p := resolve(t, b, CredOwner)
	want := ix.items[fixtures.DemoItemID]
	got, err := b.GetItem(ctx, p, want.ID, domain.ItemIncludes{Photos: true})
	if err != nil {
		t.Fatalf("GetItem: %v", err)
	}
	if d := rdItemDiff(got.Item, want); d != "" {
		t.Fatal(d)
	}
	if d := rdPhotosDiff(got.Photos, want); d != "" {
		t.Fatal(d)
	}
	if got.PriceHistory != nil {
		t.Fatalf("price history read although not asked for: %v", got.PriceHistory)
	}
	bare, err := b.GetItem(ctx, p, want.ID, domain.ItemIncludes{})
	if err != nil || bare.Photos != nil || bare.PriceHistory != nil || rdItemDiff(bare.Item, want) != "" {
		t.Fatalf("without extras = %+v, %v", bare, err)
	}

	// Price history, in (changed_at, id) order, for a pricing role.
	priced := ix.firstItem(t, "item with two price changes", func(it domain.Item) bool {
		return it.TenantID == fixtures.DemoTenantID && len(rdPriceHistory(ix.ds, it.ID)) >= 2
	})
	pr := resolve(t, b, CredPricer)
	det, err := b.GetItem(ctx, pr, priced.ID, domain.ItemIncludes{PriceHistory: true})
	if err != nil {
		t.Fatalf("pricer GetItem: %v", err)
	}
	if d := rdHistoryDiff(det.PriceHistory, rdPriceHistory(ix.ds, priced.ID)); d != "" {
		t.Fatalf("item %s: %s", priced.ID, d)
	}
	if det.Photos != nil {
		t.Fatal("photos read although not asked for")
	}
	unpriced := ix.firstItem(t, "item without price changes", func(it domain.Item) bool {
		return it.TenantID == fixtures.DemoTenantID && len(rdPriceHistory(ix.ds, it.ID)) == 0
	})
	if det, err := b.GetItem(ctx, pr, unpriced.ID, domain.ItemIncludes{PriceHistory: true}); err != nil || det.PriceHistory == nil || len(det.PriceHistory) != 0 {
		t.Fatalf("item without history = %v, %v", det.PriceHistory, err)
	}

	// References: another tenant's item is the same answer as a missing one.
	foreign := ix.firstItem(t, "item of the other tenant", func(it domain.Item) bool { return it.TenantID == fixtures.OtherTenantID })
	_, err = b.GetItem(ctx, p, foreign.ID, domain.ItemIncludes{Photos: true})
	wantRef(t, err, "item_id", foreign.ID, true)
	_, err = b.GetItem(ctx, p, "item_404", domain.ItemIncludes{})
	wantRef(t, err, "item_id", "item_404", false)

	// Sale assignment.
	s := resolve(t, b, CredScoped)
	assigned := ix.firstItem(t, "item of the live sale", func(it domain.Item) bool { return it.SaleID == fixtures.LiveSaleID })
	if got, err := b.GetItem(ctx, s, assigned.ID, domain.ItemIncludes{Photos: true}); err != nil || got.ID != assigned.ID {
		t.Fatalf("scoped member's item = %+v, %v", got, err)
	}
	_, err = b.GetItem(ctx, s, fixtures.DemoItemID, domain.ItemIncludes{})
	rdWantAssignment(t, err, "scoped member on an item of an unassigned sale")
	_, err = b.GetItem(ctx, s, foreign.ID, domain.ItemIncludes{})
	wantRef(t, err, "item_id", foreign.ID, true)

	// Pricing history is internal. The gate's projection never asks for it
	// for a non-pricing role; the live database refuses it as well (the
	// store leaves the decision to that projection).
	_, err = b.GetItem(ctx, s, assigned.ID, domain.ItemIncludes{PriceHistory: true})
	if b.Mode() == domain.ModeLive && !errors.Is(err, domain.ErrPermissionDenied) {
		t.Fatalf("live: a cataloger's price history: %v, want ErrPermissionDenied", err)
	}
	if _, err := b.GetItem(ctx, domain.Anonymous(), fixtures.DemoItemID, domain.ItemIncludes{}); !errors.Is(err, domain.ErrAuthRequired) {
		t.Fatalf("anonymous get: %v, want ErrAuthRequired", err)
	}
	rdUnchanged(t, in, before)
}

func readsGetCandidate(t *testing.T, in Instance) {
	b, ix := in.Backend, rdIndexed()
	before := in.Counts(t)
	p := resolve(t, b, CredOwner)
	cands := map[string]domain.Candidate{}
	for _, c := range ix.ds.Candidates {
		cands[c.ID] = c
	}
	for _, c := range ix.ds.Candidates {
		if c.TenantID != fixtures.DemoTenantID {
			continue
		}
		got, err := b.GetCandidate(ctx, p, c.ID)
		if err != nil {
			t.Fatalf("GetCandidate %s: %v", c.ID, err)
		}
		if got.ID != c.ID || got.TenantID != c.TenantID || got.SaleID != c.SaleID || got.Kind != c.Kind || got.Title != c.Title ||
			got.Description != c.Description || got.Category != c.Category || got.Room != c.Room || got.Condition != c.Condition ||
			got.Quantity != max(c.Quantity, 1) || !eqPtr(got.SuppliedPriceCents, c.SuppliedPriceCents) || got.Notes != c.Notes ||
			got.ReviewStatus != c.ReviewStatus || got.SourceDescriptorID != c.SourceDescriptorID || got.ImportRunID != c.ImportRunID ||
			got.SourceRecordID != c.SourceRecordID || got.CreatedByClientID != c.CreatedByClientID || got.Version != max(c.Version, 1) ||
			!got.CreatedAt.Equal(c.CreatedAt) {
			t.Fatalf("candidate = %+v, want %+v", got, c)
		}
	}
	if got, err := b.GetCandidate(ctx, p, fixtures.DemoCandidateID); err != nil || got.Version != 3 || got.ImportRunID != "run_844" {
		t.Fatalf("the demo candidate = %+v, %v", got, err)
	}
	var foreign, unassigned, assigned string
	for _, c := range ix.ds.Candidates {
		switch {
		case c.TenantID == fixtures.OtherTenantID && foreign == "":
			foreign = c.ID
		case c.SaleID == fixtures.LiveSaleID && assigned == "":
			assigned = c.ID
		case c.TenantID == fixtures.DemoTenantID && c.SaleID != fixtures.LiveSaleID && unassigned == "":
			unassigned = c.ID
		}
	}
	if foreign == "" || assigned == "" || unassigned == "" {
		t.Fatal("the dataset lacks a foreign, an assigned or an unassigned candidate")
	}
	_, err := b.GetCandidate(ctx, p, foreign)
	wantRef(t, err, "candidate_id", foreign, true)
	_, err = b.GetCandidate(ctx, p, "candidate_404")
	wantRef(t, err, "candidate_id", "candidate_404", false)
	s := resolve(t, b, CredScoped)
	if got, err := b.GetCandidate(ctx, s, assigned); err != nil || got.ID != assigned {
		t.Fatalf("scoped member's candidate = %+v, %v", got, err)
	}
	_, err = b.GetCandidate(ctx, s, unassigned)
	rdWantAssignment(t, err, "scoped member on a candidate of an unassigned sale")
	_, err = b.GetCandidate(ctx, s, foreign)
	wantRef(t, err, "candidate_id", foreign, true)
	if _, err := b.GetCandidate(ctx, domain.Anonymous(), fixtures.DemoCandidateID); !errors.Is(err, domain.ErrAuthRequired) {
		t.Fatalf("anonymous get: %v, want ErrAuthRequired", err)
	}
	rdUnchanged(t, in, before)
}

// rdIsPublicSale is the public rule for sales.
func rdIsPublicSale(s domain.Sale) bool {
	return s.Visibility == "public" && slices.Contains(domain.PublicSaleStatuses, s.Status)
}

// wantPublicSale is the public view of a sale at now: public fields only,
// the address per the reveal rule, the count of items for sale.
func (ix rdDsIndex) wantPublicSale(s domain.Sale, now time.Time) domain.PublicSale {
	out := domain.PublicSale{ID: s.ID, Title: s.Title, Status: s.Status, City: s.City, Region: s.Region, StartsAt: s.StartsAt, EndsAt: s.EndsAt}
	if s.AddressPolicy == domain.AddressHiddenUntil {
		out.AddressRevealAt = s.AddressRevealAt
	}
	if domain.AddressRevealed(s.AddressPolicy, s.AddressRevealAt, now) && s.StreetAddress != "" {
		addr := s.StreetAddress
		out.StreetAddress = &addr
	}
	for _, it := range ix.ds.Items {
		if it.TenantID == s.TenantID && it.SaleID == s.ID && it.Status == domain.ItemPublished {
			out.PublishedItems++
		}
	}
	return out
}

func rdPublicSaleDiff(got, want domain.PublicSale) string {
	if got.ID != want.ID || got.Title != want.Title || got.Status != want.Status || got.City != want.City || got.Region != want.Region ||
		!eqPtr(got.StreetAddress, want.StreetAddress) || !rdEqTime(got.AddressRevealAt, want.AddressRevealAt) ||
		!got.StartsAt.Equal(want.StartsAt) || !got.EndsAt.Equal(want.EndsAt) || got.PublishedItems != want.PublishedItems {
		return fmt.Sprintf("public sale = %+v, want %+v", got, want)
	}
	return ""
}

// rdSameRefAnswer checks that refused public reads are one error: the same
// RefError (field, never cross-tenant) and the same text but for the id.
func rdSameRefAnswer(t *testing.T, field string, errs map[string]error) {
	t.Helper()
	var text string
	for id, err := range errs {
		wantRef(t, err, field, id, false)
		s := err.Error()
		if id != "" {
			s = strings.ReplaceAll(s, strconv.Quote(id), `"?"`)
		} else {
			s = strings.ReplaceAll(s, `""`, `"?"`)
		}
		if text == "" {
			text = s
		} else if s != text {
			t.Fatalf("refused public reads differ: %q vs %q (an existence oracle)", s, text)
		}
	}
}

func readsPublicSale(t *testing.T, in Instance) {
	b, ix := in.Backend, rdIndexed()
	before := in.Counts(t)
	now := rdReadNow(b)
	refused := map[string]error{}
	public := 0
	for _, s := range ix.ds.Sales {
		got, err := b.PublicSale(ctx, s.ID)
		if !rdIsPublicSale(s) {
			refused[s.ID] = err
			continue
		}
		if err != nil {
			t.Fatalf("PublicSale %s: %v", s.ID, err)
		}
		if d := rdPublicSaleDiff(got, ix.wantPublicSale(s, now)); d != "" {
			t.Fatal(d)
		}
		public++
	}
	if public < 3 || len(refused) < 3 {
		t.Fatalf("%d public and %d non-public sales: the case proves little", public, len(refused))
	}
	_, refused["sale_404"] = b.PublicSale(ctx, "sale_404")
	_, refused[""] = b.PublicSale(ctx, "")
	rdSameRefAnswer(t, "sale_id", refused)

	// The address: always shown for an "always" sale; for a hidden_until
	// sale exactly from its reveal time on (the backend's clock).
	live, err := b.PublicSale(ctx, fixtures.LiveSaleID)
	if err != nil || live.StreetAddress == nil || *live.StreetAddress != ix.sales[fixtures.LiveSaleID].StreetAddress || live.AddressRevealAt != nil {
		t.Fatalf("always-policy sale = %+v, %v", live, err)
	}
	pub, err := b.PublicSale(ctx, fixtures.PublishedSaleID)
	reveal := ix.sales[fixtures.PublishedSaleID].AddressRevealAt
	if err != nil || pub.AddressRevealAt == nil || !pub.AddressRevealAt.Equal(*reveal) || (pub.StreetAddress != nil) != !now.Before(*reveal) {
		t.Fatalf("hidden_until sale at %v = %+v, %v", now, pub, err)
	}
	// Public reads are the same for everyone: another tenant's public sale
	// is public too.
	if got, err := b.PublicSale(ctx, fixtures.OtherPublishedSaleID); err != nil || got.ID != fixtures.OtherPublishedSaleID {
		t.Fatalf("the other tenant's public sale = %+v, %v", got, err)
	}
	rdUnchanged(t, in, before)
}

// wantPublicItem is the public view of an item, and whether it has one.
func (ix rdDsIndex) wantPublicItem(it domain.Item, now time.Time) (domain.PublicItem, bool) {
	s := ix.sales[it.SaleID]
	status, ok := domain.PublicItemStatus(it.Status)
	if !ok || !rdIsPublicSale(s) {
		return domain.PublicItem{}, false
	}
	out := domain.PublicItem{ID: it.ID, SaleID: it.SaleID, Title: it.Title, Description: it.Description, Category: it.Category,
		Status: status, PriceCents: it.PriceCents, Photos: []domain.PublicPhoto{}, Sale: ix.wantPublicSale(s, now)}
	for _, ph := range rdSortedPhotos(it) {
		if ph.Published {
			out.Photos = append(out.Photos, domain.PublicPhoto{ID: ph.ID, Width: ph.Width, Height: ph.Height, Position: ph.Position})
		}
	}
	return out, true
}

func rdPublicItemDiff(got, want domain.PublicItem) string {
	if got.ID != want.ID || got.SaleID != want.SaleID || got.Title != want.Title || got.Description != want.Description ||
		got.Category != want.Category || got.Status != want.Status || !eqPtr(got.PriceCents, want.PriceCents) ||
		got.Photos == nil || !slices.Equal(got.Photos, want.Photos) {
		return fmt.Sprintf("public item = %+v, want %+v", got, want)
	}
	if d := rdPublicSaleDiff(got.Sale, want.Sale); d != "" {
		return "item " + want.ID + ": " + d
	}
	return ""
}

func readsPublicItem(t *testing.T, in Instance) {
	b, ix := in.Backend, rdIndexed()
	before := in.Counts(t)
	now := rdReadNow(b)
	refusedByID := map[string]error{}
	refusedByQR := map[string]error{}
	seen := map[string]int{}
	for _, it := range ix.ds.Items {
		want, public := ix.wantPublicItem(it, now)
		got, err := b.PublicItem(ctx, it.ID)
		var byQR domain.PublicItem
		var qrErr error
		if it.QRCode != "" {
			byQR, qrErr = b.ResolvePublicQR(ctx, it.QRCode)
		}
		if !public {
			refusedByID[it.ID] = err
			if it.QRCode != "" {
				refusedByQR[it.QRCode] = qrErr
			}
			continue
		}
		if err != nil {
			t.Fatalf("PublicItem %s (%s in %s): %v", it.ID, it.Status, it.SaleID, err)
		}
		if d := rdPublicItemDiff(got, want); d != "" {
			t.Fatal(d)
		}
		seen[want.Status]++
		if it.QRCode != "" {
			if qrErr != nil {
				t.Fatalf("ResolvePublicQR %s: %v", it.QRCode, qrErr)
			}
			if d := rdPublicItemDiff(byQR, want); d != "" {
				t.Fatal("by tag: " + d)
			}
		}
	}
	// Every public status and every kind of refusal is covered.
	for _, st := range []string{"available", "on_hold", "sold"} {
		if seen[st] == 0 {
			t.Fatalf("no public item is %s: the case proves little (%v)", st, seen)
		}
	}
	var draft, withdrawn, privateSale, closedSale bool
	for id := range refusedByID {
		it := ix.items[id]
		draft = draft || it.Status == domain.ItemDraft
		withdrawn = withdrawn || it.Status == domain.ItemWithdrawn
		privateSale = privateSale || ix.sales[it.SaleID].Visibility == "private"
		closedSale = closedSale || ix.sales[it.SaleID].Status == domain.SaleClosed
	}
	if !draft || !withdrawn || !privateSale || !closedSale || len(refusedByQR) == 0 {
		t.Fatalf("refusals cover draft %v, withdrawn %v, private sale %v, closed sale %v, tags %d", draft, withdrawn, privateSale,
			closedSale, len(refusedByQR))
	}
	_, refusedByID["item_404"] = b.PublicItem(ctx, "item_404")
	_, refusedByID[""] = b.PublicItem(ctx, "")
	rdSameRefAnswer(t, "item_id", refusedByID)

	// A printed code bound to nothing, an unknown code, a code in another
	// case and no code fail like a code on a non-public item.
	_, refusedByQR[fixtures.SpareQRCode] = b.ResolvePublicQR(ctx, fixtures.SpareQRCode)
	_, refusedByQR["QR-000-0000"] = b.ResolvePublicQR(ctx, "QR-000-0000")
	demo := ix.items[fixtures.DemoItemID]
	_, refusedByQR[strings.ToLower(demo.QRCode)] = b.ResolvePublicQR(ctx, strings.ToLower(demo.QRCode))
	_, refusedByQR[""] = b.ResolvePublicQR(ctx, "")
	rdSameRefAnswer(t, "qr_code", refusedByQR)
	rdUnchanged(t, in, before)
}

// searchModel is the marketplace search over the dataset: sales then
// items in dataset order (the order both backends record them), the
// publication rules, and word matching over public text.
type rdSearchDoc struct {
	hit    domain.MarketplaceHit
	words  map[string]bool
	sale   domain.Sale
	item   *domain.Item
	search bool // a hit of an empty query
}

func rdWords(texts ...string) map[string]bool {
	out := map[string]bool{}
	for _, s := range texts {
		for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
			return (r < 'a' || r > 'z') && (r < '0' || r > '9')
		}) {
			out[w] = true
		}
	}
	return out
}

func (ix rdDsIndex) searchDocs() []rdSearchDoc {
	var docs []rdSearchDoc
	for _, s := range ix.ds.Sales {
		docs = append(docs, rdSearchDoc{sale: s, words: rdWords(s.Title, s.City, s.Region), search: rdIsPublicSale(s),
			hit: domain.MarketplaceHit{Kind: domain.HitSale, SaleID: s.ID, SaleTitle: s.Title, Title: s.Title, City: s.City,
				Region: s.Region, StartsAt: s.StartsAt, EndsAt: s.EndsAt}})
	}
	for i := range ix.ds.Items {
		it := &ix.ds.Items[i]
		s := ix.sales[it.SaleID]
		d := rdSearchDoc{sale: s, item: it, words: rdWords(it.Title, it.Description, it.Category),
			search: rdIsPublicSale(s) && it.Status == domain.ItemPublished,
			hit: domain.MarketplaceHit{Kind: domain.HitItem, SaleID: s.ID, SaleTitle: s.Title, ItemID: it.ID, Title: it.Title,
				City: s.City, Region: s.Region, StartsAt: s.StartsAt, EndsAt: s.EndsAt, PriceCents: it.PriceCents}}
		for _, ph := range rdSortedPhotos(*it) {
			if ph.Published {
				d.hit.Photo = &domain.PublicPhoto{ID: ph.ID, Width: ph.Width, Height: ph.Height, Position: ph.Position}
				break
			}
		}
		docs = append(docs, d)
	}
	return docs
}

func (ix rdDsIndex) wantSearch(q domain.MarketplaceQuery) []domain.MarketplaceHit {
	var out []domain.MarketplaceHit
	terms := rdWords(q.Text)
	for _, d := range ix.searchDocs() {
		ok := d.search
		for w := range terms {
			ok = ok && d.words[w]
		}
		if q.Category != "" {
			ok = ok && d.item != nil && (d.item.Category == q.Category || strings.HasPrefix(d.item.Category, q.Category+"."))
		}
		ok = ok && (q.City == "" || strings.EqualFold(d.sale.City, q.City)) && (q.Region == "" || strings.EqualFold(d.sale.Region, q.Region))
		ok = ok && (q.From == nil || !d.sale.EndsAt.Before(*q.From)) && (q.To == nil || d.sale.StartsAt.Before(*q.To))
		if ok {
			out = append(out, d.hit)
		}
	}
	return out
}

func rdHitDiff(got, want domain.MarketplaceHit) string {
	if got.Kind != want.Kind || got.SaleID != want.SaleID || got.SaleTitle != want.SaleTitle || got.ItemID != want.ItemID ||
		got.Title != want.Title || got.City != want.City || got.Region != want.Region || !got.StartsAt.Equal(want.StartsAt) ||
		!got.EndsAt.Equal(want.EndsAt) || !eqPtr(got.PriceCents, want.PriceCents) || !eqPtr(got.Photo, want.Photo) {
		return fmt.Sprintf("hit = %+v, want %+v", got, want)
	}
	return ""
}

// rdSearchAll walks every page of a query with page size n.
func rdSearchAll(t *testing.T, b domain.Backend, q domain.MarketplaceQuery, n int) []domain.MarketplaceHit {
	t.Helper()
	var out []domain.MarketplaceHit
	walk(t, n, func(after *domain.Keyset, limit int) (domain.Page[domain.MarketplaceHit], error) {
		q.After, q.Limit = after, limit
		page, err := b.SearchMarketplace(ctx, q)
		out = append(out, page.Rows...)
		return page, err
	}, domain.CursorMarketplace, cursorsOf(b, domain.Principal{}), func(h domain.MarketplaceHit) string { return h.Kind + ":" + h.SaleID + h.ItemID })
	return out
}

func readsSearch(t *testing.T, in Instance) {
	b, ix := in.Backend, rdIndexed()
	before := in.Counts(t)
	day := func(s string) *time.Time {
		d, err := time.Parse(time.DateOnly, s)
		if err != nil {
			t.Fatal(err)
		}
		return &d
	}
	demo := ix.items[fixtures.DemoItemID]
	titleWords := strings.Fields(demo.Title)
	cases := []struct {
		name  string
		q     domain.MarketplaceQuery
		n     int
		least int
	}{
		{"everything", domain.MarketplaceQuery{}, 7, 100},
		{"words of a title, any case and punctuation", domain.MarketplaceQuery{Text: "  " + strings.ToUpper(titleWords[1]) + ", " + titleWords[2] + "!"}, 2, 1},
		{"a word of a category", domain.MarketplaceQuery{Text: "pyrex"}, 3, 1},
		{"a city's words find the sale", domain.MarketplaceQuery{Text: "Upper Arlington"}, 5, 1},
		{"category path", domain.MarketplaceQuery{Category: "furniture.seating"}, 4, 2},
		{"category path is not a string prefix", domain.MarketplaceQuery{Category: "furniture.seat"}, 4, 0},
		{"words and category", domain.MarketplaceQuery{Text: titleWords[1], Category: "furniture"}, 4, 1},
		{"city, any case", domain.MarketplaceQuery{City: "WORTHINGTON"}, 25, 2},
		{"region and dates", domain.MarketplaceQuery{Region: "oh", From: day("2026-06-21"), To: day("2026-06-27")}, 50, 2},
		{"dates that end before every sale", domain.MarketplaceQuery{To: day("2026-01-01")}, 5, 0},
		{"no such word", domain.MarketplaceQuery{Text: "zeppelin"}, 5, 0},
	}
	for _, c := range cases {
		want := ix.wantSearch(c.q)
		if len(want) < c.least {
			t.Fatalf("%s: the model finds %d hits, the case needs %d", c.name, len(want), c.least)
		}
		got := rdSearchAll(t, b, c.q, c.n)
		if len(got) != len(want) {
			t.Fatalf("%s: %d hits, want %d", c.name, len(got), len(want))
		}
		for i := range want {
			if d := rdHitDiff(got[i], want[i]); d != "" {
				t.Fatalf("%s: hit %d: %s", c.name, i, d)
			}
		}
	}
	// Nothing private is ever a hit: no draft sale, no item not for sale.
	for _, h := range rdSearchAll(t, b, domain.MarketplaceQuery{}, 50) {
		s := ix.sales[h.SaleID]
		if !rdIsPublicSale(s) || (h.Kind == domain.HitItem && ix.items[h.ItemID].Status != domain.ItemPublished) {
			t.Fatalf("a private record is a hit: %+v", h)
		}
	}
	// Page size: a public page holds at most MaxSearchPageSize hits.
	page, err := b.SearchMarketplace(ctx, domain.MarketplaceQuery{Limit: domain.MaxPageSize})
	if err != nil || len(page.Rows) != domain.MaxSearchPageSize || page.NextCursor == "" {
		t.Fatalf("a page of %d = %d rows, cursor %q, %v", domain.MaxPageSize, len(page.Rows), page.NextCursor, err)
	}
	if p, err := b.ResolvePrincipal(ctx, CredOwner); err != nil {
		t.Fatal(err)
	} else if _, err := b.OpenCursor(ctx, p, "items", page.NextCursor); err == nil {
		t.Fatal("a public cursor decodes for a tenant")
	}
	// Refusals.
	for _, c := range []struct {
		q     domain.MarketplaceQuery
		field string
	}{
		{domain.MarketplaceQuery{Text: " !!! ?? "}, "query"},
		{domain.MarketplaceQuery{Text: "a b c d e f g h i"}, "query"},
		{domain.MarketplaceQuery{From: day("2026-06-21"), To: day("2026-06-21")}, "date_from"},
		{domain.MarketplaceQuery{From: day("2026-06-22"), To: day("2026-06-21")}, "date_from"},
		{domain.MarketplaceQuery{Limit: -1}, "limit"},
		{domain.MarketplaceQuery{After: &domain.Keyset{Key: "2026-06-20T00:00:00.000000000Z", ID: "sale_221"}}, "cursor"},
		{domain.MarketplaceQuery{After: &domain.Keyset{Key: "-1", ID: "sale_221"}}, "cursor"},
		{domain.MarketplaceQuery{After: &domain.Keyset{Key: "3"}}, "cursor"},
	} {
		_, err := b.SearchMarketplace(ctx, c.q)
		wantInput(t, err, c.field)
	}
	// Eight words are allowed; repeats count once.
	if _, err := b.SearchMarketplace(ctx, domain.MarketplaceQuery{Text: "a b c d e f g h a b"}); err != nil {
		t.Fatalf("eight distinct words: %v", err)
	}
	rdUnchanged(t, in, before)
}

// wantEvents is the dataset's status events that ok keeps, newest first.
func (ix rdDsIndex) wantEvents(ok func(domain.StatusEvent) bool) []domain.StatusEvent {
	var out []domain.StatusEvent
	for _, e := range ix.ds.StatusEvents {
		if ok(e) {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(x, y domain.StatusEvent) int {
		return cmp.Or(y.EffectiveAt.Compare(x.EffectiveAt), cmp.Compare(y.ID, x.ID))
	})
	return out
}

func rdEventsAll(t *testing.T, b domain.Backend, p domain.Principal, q domain.StatusEventQuery, n int) []domain.StatusEvent {
	t.Helper()
	var out []domain.StatusEvent
	walk(t, n, func(after *domain.Keyset, limit int) (domain.Page[domain.StatusEvent], error) {
		q.After, q.Limit = after, limit
		page, err := b.ListStatusEvents(ctx, p, q)
		out = append(out, page.Rows...)
		return page, err
	}, domain.CursorStatusEvents, cursorsOf(b, p), func(e domain.StatusEvent) string { return e.ID })
	return out
}

func rdEventsDiff(got, want []domain.StatusEvent) string {
	if len(got) != len(want) {
		return fmt.Sprintf("%d events, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.ID != w.ID || g.TenantID != w.TenantID || g.ItemID != w.ItemID || g.SaleID != w.SaleID || g.FromStatus != w.FromStatus ||
			g.ToStatus != w.ToStatus || !g.EffectiveAt.Equal(w.EffectiveAt) || g.SourceType != w.SourceType || g.ActorID != w.ActorID ||
			g.ProposalID != w.ProposalID || !g.RecordedAt.Equal(w.RecordedAt) {
			return fmt.Sprintf("event %d = %+v, want %+v", i, g, w)
		}
	}
	return ""
}

func readsStatusEvents(t *testing.T, in Instance) {
	b, ix := in.Backend, rdIndexed()
	before := in.Counts(t)
	p := resolve(t, b, CredOwner)
	demo := func(e domain.StatusEvent) bool { return e.TenantID == fixtures.DemoTenantID }
	cases := []struct {
		name string
		q    domain.StatusEventQuery
		keep func(domain.StatusEvent) bool
		n    int
	}{
		{"all, newest first", domain.StatusEventQuery{}, demo, 97},
		{"one item", domain.StatusEventQuery{ItemID: fixtures.DemoItemID}, func(e domain.StatusEvent) bool { return e.ItemID == fixtures.DemoItemID }, 1},
		{"one sale", domain.StatusEventQuery{SaleID: fixtures.LiveSaleID}, func(e domain.StatusEvent) bool { return e.SaleID == fixtures.LiveSaleID }, 30},
		{"into sold", domain.StatusEventQuery{ToStatus: domain.ItemSold}, func(e domain.StatusEvent) bool { return demo(e) && e.ToStatus == domain.ItemSold }, 7},
		{"sale and status", domain.StatusEventQuery{SaleID: fixtures.ClosedSaleID, ToStatus: domain.ItemPublished},
			func(e domain.StatusEvent) bool {
				return e.SaleID == fixtures.ClosedSaleID && e.ToStatus == domain.ItemPublished
			}, 100},
	}
	for _, c := range cases {
		want := ix.wantEvents(c.keep)
		if len(want) < 2 {
			t.Fatalf("%s: the dataset has %d events: the case proves little", c.name, len(want))
		}
		if d := rdEventsDiff(rdEventsAll(t, b, p, c.q, c.n), want); d != "" {
			t.Fatalf("%s: %s", c.name, d)
		}
	}
	// Refusals, in the store's order: input first, then references.
	_, err := b.ListStatusEvents(ctx, p, domain.StatusEventQuery{ToStatus: "gone"})
	wantInput(t, err, "to_status")
	_, err = b.ListStatusEvents(ctx, p, domain.StatusEventQuery{Limit: -1})
	wantInput(t, err, "limit")
	_, err = b.ListStatusEvents(ctx, p, domain.StatusEventQuery{After: &domain.Keyset{Key: "12", ID: "status_1"}})
	wantInput(t, err, "cursor")
	foreign := ix.firstItem(t, "item of the other tenant", func(it domain.Item) bool { return it.TenantID == fixtures.OtherTenantID })
	_, err = b.ListStatusEvents(ctx, p, domain.StatusEventQuery{ItemID: foreign.ID})
	wantRef(t, err, "item_id", foreign.ID, true)
	_, err = b.ListStatusEvents(ctx, p, domain.StatusEventQuery{ItemID: "item_404"})
	wantRef(t, err, "item_id", "item_404", false)
	_, err = b.ListStatusEvents(ctx, p, domain.StatusEventQuery{SaleID: fixtures.OtherPublishedSaleID})
	wantRef(t, err, "sale_id", fixtures.OtherPublishedSaleID, true)
	// The other tenant lists its own history only.
	o := resolve(t, b, CredOther)
	want := ix.wantEvents(func(e domain.StatusEvent) bool { return e.TenantID == fixtures.OtherTenantID })
	if d := rdEventsDiff(rdEventsAll(t, b, o, domain.StatusEventQuery{}, 100), want); d != "" {
		t.Fatalf("other tenant: %s", d)
	}
	// A sale-scoped member: its assigned sale's history only.
	s := resolve(t, b, CredScoped)
	want = ix.wantEvents(func(e domain.StatusEvent) bool { return e.SaleID == fixtures.LiveSaleID })
	if d := rdEventsDiff(rdEventsAll(t, b, s, domain.StatusEventQuery{}, 100), want); d != "" {
		t.Fatalf("scoped member: %s", d)
	}
	_, err = b.ListStatusEvents(ctx, s, domain.StatusEventQuery{ItemID: fixtures.DemoItemID})
	rdWantAssignment(t, err, "scoped member on an item of an unassigned sale")
	_, err = b.ListStatusEvents(ctx, s, domain.StatusEventQuery{SaleID: fixtures.PublishedSaleID})
	rdWantAssignment(t, err, "scoped member on an unassigned sale")
	if _, err := b.ListStatusEvents(ctx, domain.Anonymous(), domain.StatusEventQuery{}); !errors.Is(err, domain.ErrAuthRequired) {
		t.Fatalf("anonymous list: %v, want ErrAuthRequired", err)
	}
	rdUnchanged(t, in, before)
}

// wantRuns is the dataset's import runs that ok keeps, newest first, with
// the kind of their source.
func (ix rdDsIndex) wantRuns(ok func(domain.ImportRun) bool) []domain.ImportRunSummary {
	kinds := map[string]string{}
	for _, d := range ix.ds.SourceDescriptors {
		kinds[d.ID] = d.Kind
	}
	var out []domain.ImportRunSummary
	for _, r := range ix.ds.ImportRuns {
		if ok(r) {
			out = append(out, domain.ImportRunSummary{ImportRun: r, SourceKind: kinds[r.SourceDescriptorID]})
		}
	}
	slices.SortFunc(out, func(x, y domain.ImportRunSummary) int {
		return cmp.Or(y.CreatedAt.Compare(x.CreatedAt), cmp.Compare(y.ID, x.ID))
	})
	return out
}

func rdRunDiff(got, want domain.ImportRunSummary) string {
	if got.ID != want.ID || got.TenantID != want.TenantID || got.SourceDescriptorID != want.SourceDescriptorID || got.SaleID != want.SaleID ||
		got.Kind != want.Kind || got.Status != want.Status || got.RecordCount != want.RecordCount || !got.CreatedAt.Equal(want.CreatedAt) ||
		got.SourceKind != want.SourceKind || got.SourceKind == "" {
		return fmt.Sprintf("run = %+v, want %+v", got, want)
	}
	return ""
}

func rdRunsAll(t *testing.T, b domain.Backend, p domain.Principal, q domain.ImportRunQuery, n int) []domain.ImportRunSummary {
	t.Helper()
	var out []domain.ImportRunSummary
	walk(t, n, func(after *domain.Keyset, limit int) (domain.Page[domain.ImportRunSummary], error) {
		q.After, q.Limit = after, limit
		page, err := b.ListImportRuns(ctx, p, q)
		out = append(out, page.Rows...)
		return page, err
	}, domain.CursorImportRuns, cursorsOf(b, p), func(r domain.ImportRunSummary) string { return r.ID })
	return out
}

func rdRunsDiff(got, want []domain.ImportRunSummary) string {
	if len(got) != len(want) {
		return fmt.Sprintf("%d runs, want %d", len(got), len(want))
	}
	for i := range want {
		if d := rdRunDiff(got[i], want[i]); d != "" {
			return fmt.Sprintf("run %d: %s", i, d)
		}
	}
	return ""
}

func readsImportRuns(t *testing.T, in Instance) {
	b, ix := in.Backend, rdIndexed()
	before := in.Counts(t)
	p := resolve(t, b, CredOwner)
	want := ix.wantRuns(func(r domain.ImportRun) bool { return r.TenantID == fixtures.DemoTenantID })
	if len(want) < 3 {
		t.Fatalf("the dataset has %d runs: the case proves little", len(want))
	}
	if d := rdRunsDiff(rdRunsAll(t, b, p, domain.ImportRunQuery{}, 2), want); d != "" {
		t.Fatalf("walked two by two: %s", d)
	}
	want = ix.wantRuns(func(r domain.ImportRun) bool { return r.SaleID == fixtures.PublishedSaleID })
	if d := rdRunsDiff(rdRunsAll(t, b, p, domain.ImportRunQuery{SaleID: fixtures.PublishedSaleID}, 100), want); d != "" || len(want) == 0 {
		t.Fatalf("by sale: %s", d)
	}
	_, err := b.ListImportRuns(ctx, p, domain.ImportRunQuery{SaleID: fixtures.OtherPublishedSaleID})
	wantRef(t, err, "sale_id", fixtures.OtherPublishedSaleID, true)
	_, err = b.ListImportRuns(ctx, p, domain.ImportRunQuery{SaleID: "sale_404"})
	wantRef(t, err, "sale_id", "sale_404", false)
	_, err = b.ListImportRuns(ctx, p, domain.ImportRunQuery{Limit: -1})
	wantInput(t, err, "limit")
	_, err = b.ListImportRuns(ctx, p, domain.ImportRunQuery{After: &domain.Keyset{Key: "7", ID: "run_844"}})
	wantInput(t, err, "cursor")
	o := resolve(t, b, CredOther)
	want = ix.wantRuns(func(r domain.ImportRun) bool { return r.TenantID == fixtures.OtherTenantID })
	if d := rdRunsDiff(rdRunsAll(t, b, o, domain.ImportRunQuery{}, 100), want); d != "" {
		t.Fatalf("other tenant: %s", d)
	}
	s := resolve(t, b, CredScoped)
	want = ix.wantRuns(func(r domain.ImportRun) bool { return r.SaleID == fixtures.LiveSaleID })
	if d := rdRunsDiff(rdRunsAll(t, b, s, domain.ImportRunQuery{}, 100), want); d != "" || len(want) == 0 {
		t.Fatalf("scoped member: %s", d)
	}
	_, err = b.ListImportRuns(ctx, s, domain.ImportRunQuery{SaleID: fixtures.PublishedSaleID})
	rdWantAssignment(t, err, "scoped member on an unassigned sale")
	rdUnchanged(t, in, before)
}

// wantRunDetail is one run's counts and records (by ordinal) with the
// candidates each produced.
func (ix rdDsIndex) wantRunDetail(runID string) (domain.ReviewCounts, []domain.SourceRecordDetail) {
	var counts domain.ReviewCounts
	cands := slices.Clone(ix.ds.Candidates)
	slices.SortFunc(cands, func(x, y domain.Candidate) int {
		return cmp.Or(x.CreatedAt.Compare(y.CreatedAt), cmp.Compare(x.ID, y.ID))
	})
	for _, c := range cands {
		if c.ImportRunID != runID {
			continue
		}
		switch c.ReviewStatus {
		case domain.ReviewNeedsReview:
			counts.NeedsReview++
		case domain.ReviewApproved:
			counts.Approved++
		case domain.ReviewRejected:
			counts.Rejected++
		case domain.ReviewPromoted:
			counts.Promoted++
		case domain.ReviewDuplicate:
			counts.Duplicate++
		}
	}
	var recs []domain.SourceRecordDetail
	for _, r := range ix.ds.SourceRecords {
		if r.ImportRunID != runID {
			continue
		}
		d := domain.SourceRecordDetail{SourceRecord: r, CandidateIDs: []string{}}
		for _, c := range cands {
			if c.SourceRecordID == r.ID {
				d.CandidateIDs = append(d.CandidateIDs, c.ID)
			}
		}
		recs = append(recs, d)
	}
	slices.SortFunc(recs, func(x, y domain.SourceRecordDetail) int { return cmp.Compare(x.Ordinal, y.Ordinal) })
	return counts, recs
}

func rdRecordsDiff(got, want []domain.SourceRecordDetail) string {
	if got == nil || len(got) != len(want) {
		return fmt.Sprintf("records = %v, want %d", got, len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.ID != w.ID || g.TenantID != w.TenantID || g.ImportRunID != w.ImportRunID || g.Ordinal != w.Ordinal ||
			g.PayloadHash != w.PayloadHash || g.Payload != w.Payload || !g.CreatedAt.Equal(w.CreatedAt) ||
			g.CandidateIDs == nil || !slices.Equal(g.CandidateIDs, w.CandidateIDs) {
			return fmt.Sprintf("record %d = %+v, want %+v", i, g, w)
		}
	}
	return ""
}

func readsGetImportRun(t *testing.T, in Instance) {
	b, ix := in.Backend, rdIndexed()
	before := in.Counts(t)
	p := resolve(t, b, CredOwner)
	runs := ix.wantRuns(func(r domain.ImportRun) bool { return r.TenantID == fixtures.DemoTenantID })
	paged := ""
	for _, run := range runs {
		got, err := b.GetImportRun(ctx, p, domain.ImportRunDetailQuery{RunID: run.ID, Limit: 100})
		if err != nil {
			t.Fatalf("GetImportRun %s: %v", run.ID, err)
		}
		counts, recs := ix.wantRunDetail(run.ID)
		if d := rdRunDiff(got.Run, run); d != "" {
			t.Fatal(d)
		}
		if got.Candidates != counts || got.RecordsNextCursor != "" {
			t.Fatalf("run %s: counts %+v, cursor %q; want %+v and none", run.ID, got.Candidates, got.RecordsNextCursor, counts)
		}
		if d := rdRecordsDiff(got.Records, recs); d != "" {
			t.Fatalf("run %s: %s", run.ID, d)
		}
		if len(recs) >= 3 {
			paged = run.ID
		}
	}
	if paged == "" {
		t.Fatal("no run with three records: the paging case proves nothing")
	}
	// Records page by ordinal; the cursor is bound to its run.
	_, recs := ix.wantRunDetail(paged)
	var got []domain.SourceRecordDetail
	walk(t, 2, func(after *domain.Keyset, limit int) (domain.Page[domain.SourceRecordDetail], error) {
		d, err := b.GetImportRun(ctx, p, domain.ImportRunDetailQuery{RunID: paged, Limit: limit, After: after})
		got = append(got, d.Records...)
		return domain.Page[domain.SourceRecordDetail]{Rows: d.Records, NextCursor: d.RecordsNextCursor}, err
	}, domain.CursorImportRecords(paged), cursorsOf(b, p), func(r domain.SourceRecordDetail) string { return r.ID })
	if d := rdRecordsDiff(got, recs); d != "" {
		t.Fatalf("records walked two by two: %s", d)
	}
	// References and input.
	var foreign, unassigned string
	for _, r := range ix.ds.ImportRuns {
		if r.TenantID == fixtures.OtherTenantID && foreign == "" {
			foreign = r.ID
		}
		if r.TenantID == fixtures.DemoTenantID && r.SaleID != fixtures.LiveSaleID && unassigned == "" {
			unassigned = r.ID
		}
	}
	_, err := b.GetImportRun(ctx, p, domain.ImportRunDetailQuery{RunID: foreign})
	wantRef(t, err, "run_id", foreign, true)
	_, err = b.GetImportRun(ctx, p, domain.ImportRunDetailQuery{RunID: "run_404"})
	wantRef(t, err, "run_id", "run_404", false)
	_, err = b.GetImportRun(ctx, p, domain.ImportRunDetailQuery{RunID: paged, After: &domain.Keyset{Key: "2026-06-20T00:00:00.000000000Z", ID: "record_1"}})
	wantInput(t, err, "cursor")
	_, err = b.GetImportRun(ctx, p, domain.ImportRunDetailQuery{RunID: paged, Limit: -3})
	wantInput(t, err, "limit")
	s := resolve(t, b, CredScoped)
	_, err = b.GetImportRun(ctx, s, domain.ImportRunDetailQuery{RunID: unassigned})
	rdWantAssignment(t, err, "scoped member on a run of an unassigned sale")
	_, err = b.GetImportRun(ctx, s, domain.ImportRunDetailQuery{RunID: foreign})
	wantRef(t, err, "run_id", foreign, true)
	for _, r := range ix.wantRuns(func(r domain.ImportRun) bool { return r.SaleID == fixtures.LiveSaleID }) {
		if d, err := b.GetImportRun(ctx, s, domain.ImportRunDetailQuery{RunID: r.ID}); err != nil || d.Run.ID != r.ID {
			t.Fatalf("scoped member's run %s = %+v, %v", r.ID, d.Run, err)
		}
	}
	rdUnchanged(t, in, before)
}

// wantBatches is the dataset's label batches that ok keeps, oldest first,
// with their counts: a label is bound when an item of its tenant carries it.
func (ix rdDsIndex) wantBatches(ok func(domain.LabelBatch) bool) []domain.LabelBatchSummary {
	bound := map[[2]string]bool{}
	for _, it := range ix.ds.Items {
		if it.QRCode != "" {
			bound[[2]string{it.TenantID, it.QRCode}] = true
		}
	}
	var out []domain.LabelBatchSummary
	for _, bt := range ix.ds.LabelBatches {
		if !ok(bt) {
			continue
		}
		s := domain.LabelBatchSummary{ID: bt.ID, TenantID: bt.TenantID, SaleID: bt.SaleID, Status: bt.Status, LabelCount: len(bt.Codes),
			CreatedAt: bt.CreatedAt, PrintedAt: bt.PrintedAt}
		for _, c := range bt.Codes {
			if bound[[2]string{bt.TenantID, c}] {
				s.BoundCount++
			}
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(x, y domain.LabelBatchSummary) int {
		return cmp.Or(x.CreatedAt.Compare(y.CreatedAt), cmp.Compare(x.ID, y.ID))
	})
	return out
}

func rdBatchesAll(t *testing.T, b domain.Backend, p domain.Principal, q domain.LabelBatchQuery, n int) []domain.LabelBatchSummary {
	t.Helper()
	var out []domain.LabelBatchSummary
	walk(t, n, func(after *domain.Keyset, limit int) (domain.Page[domain.LabelBatchSummary], error) {
		q.After, q.Limit = after, limit
		page, err := b.ListLabelBatches(ctx, p, q)
		out = append(out, page.Rows...)
		return page, err
	}, domain.CursorLabelBatches, cursorsOf(b, p), func(x domain.LabelBatchSummary) string { return x.ID })
	return out
}

func rdBatchesDiff(got, want []domain.LabelBatchSummary) string {
	if len(got) != len(want) {
		return fmt.Sprintf("%d batches, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.ID != w.ID || g.TenantID != w.TenantID || g.SaleID != w.SaleID || g.Status != w.Status || g.LabelCount != w.LabelCount ||
			g.BoundCount != w.BoundCount || !g.CreatedAt.Equal(w.CreatedAt) || !rdEqTime(g.PrintedAt, w.PrintedAt) {
			return fmt.Sprintf("batch %d = %+v, want %+v", i, g, w)
		}
	}
	return ""
}

func readsLabelBatches(t *testing.T, in Instance) {
	b, ix := in.Backend, rdIndexed()
	before := in.Counts(t)
	p := resolve(t, b, CredOwner)
	want := ix.wantBatches(func(x domain.LabelBatch) bool { return x.TenantID == fixtures.DemoTenantID })
	bound, spare := 0, 0
	for _, x := range want {
		bound += x.BoundCount
		spare += x.LabelCount - x.BoundCount
	}
	if len(want) < 3 || bound == 0 || spare == 0 {
		t.Fatalf("%d batches, %d bound and %d spare labels: the case proves little", len(want), bound, spare)
	}
	if d := rdBatchesDiff(rdBatchesAll(t, b, p, domain.LabelBatchQuery{}, 2), want); d != "" {
		t.Fatalf("walked two by two: %s", d)
	}
	want = ix.wantBatches(func(x domain.LabelBatch) bool {
		return x.TenantID == fixtures.DemoTenantID && x.Status == domain.LabelBatchPrinted && x.SaleID == fixtures.PublishedSaleID
	})
	got := rdBatchesAll(t, b, p, domain.LabelBatchQuery{SaleID: fixtures.PublishedSaleID, Status: domain.LabelBatchPrinted}, 100)
	if d := rdBatchesDiff(got, want); d != "" || len(want) == 0 {
		t.Fatalf("by sale and status: %s", d)
	}
	_, err := b.ListLabelBatches(ctx, p, domain.LabelBatchQuery{Status: "lost"})
	wantInput(t, err, "status")
	_, err = b.ListLabelBatches(ctx, p, domain.LabelBatchQuery{After: &domain.Keyset{Key: "yesterday", ID: "batch_1"}})
	wantInput(t, err, "cursor")
	_, err = b.ListLabelBatches(ctx, p, domain.LabelBatchQuery{SaleID: fixtures.OtherPublishedSaleID})
	wantRef(t, err, "sale_id", fixtures.OtherPublishedSaleID, true)
	o := resolve(t, b, CredOther)
	want = ix.wantBatches(func(x domain.LabelBatch) bool { return x.TenantID == fixtures.OtherTenantID })
	if d := rdBatchesDiff(rdBatchesAll(t, b, o, domain.LabelBatchQuery{}, 100), want); d != "" {
		t.Fatalf("other tenant: %s", d)
	}
	s := resolve(t, b, CredScoped)
	want = ix.wantBatches(func(x domain.LabelBatch) bool { return x.SaleID == fixtures.LiveSaleID })
	if d := rdBatchesDiff(rdBatchesAll(t, b, s, domain.LabelBatchQuery{}, 100), want); d != "" || len(want) == 0 {
		t.Fatalf("scoped member: %s", d)
	}
	_, err = b.ListLabelBatches(ctx, s, domain.LabelBatchQuery{SaleID: fixtures.PublishedSaleID})
	rdWantAssignment(t, err, "scoped member on an unassigned sale")
	rdUnchanged(t, in, before)
}

func readsDisposition(t *testing.T, in Instance) {
	b, ix := in.Backend, rdIndexed()
	before := in.Counts(t)
	p := resolve(t, b, CredOwner)
	closed := ix.sales[fixtures.ClosedSaleID]
	unsold := func(room string) []domain.Item {
		var out []domain.Item
		for _, it := range ix.ds.Items {
			if it.SaleID == closed.ID && (it.Status == domain.ItemPublished || it.Status == domain.ItemOnHold) && (room == "" || it.Room == room) {
				out = append(out, it)
			}
		}
		slices.SortFunc(out, func(x, y domain.Item) int { return cmp.Or(x.CreatedAt.Compare(y.CreatedAt), cmp.Compare(x.ID, y.ID)) })
		return out
	}
	queue := func(p domain.Principal, q domain.DispositionQuery, inc domain.ItemIncludes, n int) []domain.DispositionEntry {
		var out []domain.DispositionEntry
		walk(t, n, func(after *domain.Keyset, limit int) (domain.Page[domain.DispositionEntry], error) {
			q.After, q.Limit = after, limit
			page, err := b.DispositionQueue(ctx, p, q, inc)
			out = append(out, page.Rows...)
			return page, err
		}, domain.CursorDisposition(q.SaleID), cursorsOf(b, p), func(e domain.DispositionEntry) string { return e.ID })
		return out
	}
	check := func(name string, got []domain.DispositionEntry, want []domain.Item, inc domain.ItemIncludes) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d entries, want %d", name, len(got), len(want))
		}
		for i, w := range want {
			g := got[i]
			if d := rdItemDiff(g.Item, w); d != "" {
				t.Fatalf("%s: entry %d: %s", name, i, d)
			}
			if !g.QueuedAt.Equal(closed.EndsAt) {
				t.Fatalf("%s: %s queued at %v, want the sale's end %v", name, g.ID, g.QueuedAt, closed.EndsAt)
			}
			if inc.Photos {
				if d := rdPhotosDiff(g.Photos, w); d != "" {
					t.Fatalf("%s: %s", name, d)
				}
			} else if g.Photos != nil {
				t.Fatalf("%s: photos read although not asked for", name)
			}
			if inc.PriceHistory {
				if d := rdHistoryDiff(g.PriceHistory, rdPriceHistory(ix.ds, w.ID)); d != "" {
					t.Fatalf("%s: item %s: %s", name, w.ID, d)
				}
			} else if g.PriceHistory != nil {
				t.Fatalf("%s: price history read although not asked for", name)
			}
		}
	}
	want := unsold("")
	if len(want) < 5 {
		t.Fatalf("the closed sale leaves %d unsold items: the case proves little", len(want))
	}
	photos := domain.ItemIncludes{Photos: true}
	check("walked four by four", queue(p, domain.DispositionQuery{SaleID: closed.ID}, photos, 4), want, photos)
	room := want[0].Room
	check("one room", queue(p, domain.DispositionQuery{SaleID: closed.ID, Room: room}, domain.ItemIncludes{}, 100), unsold(room), domain.ItemIncludes{})
	pricing := domain.ItemIncludes{PriceHistory: true}
	check("a pricer's queue", queue(resolve(t, b, CredPricer), domain.DispositionQuery{SaleID: closed.ID}, pricing, 100), want, pricing)
	// A sale that has not closed has an empty queue.
	open, err := b.DispositionQueue(ctx, p, domain.DispositionQuery{SaleID: fixtures.LiveSaleID}, photos)
	if err != nil || open.Rows == nil || len(open.Rows) != 0 || open.NextCursor != "" {
		t.Fatalf("a live sale's queue = %+v, %v", open, err)
	}
	// References, assignment, input.
	_, err = b.DispositionQueue(ctx, p, domain.DispositionQuery{SaleID: fixtures.OtherPublishedSaleID}, photos)
	wantRef(t, err, "sale_id", fixtures.OtherPublishedSaleID, true)
	_, err = b.DispositionQueue(ctx, p, domain.DispositionQuery{SaleID: "sale_404"}, photos)
	wantRef(t, err, "sale_id", "sale_404", false)
	_, err = b.DispositionQueue(ctx, p, domain.DispositionQuery{}, photos)
	wantRef(t, err, "sale_id", "", false)
	_, err = b.DispositionQueue(ctx, p, domain.DispositionQuery{SaleID: closed.ID, Limit: -1}, photos)
	wantInput(t, err, "limit")
	_, err = b.DispositionQueue(ctx, p, domain.DispositionQuery{SaleID: closed.ID, After: &domain.Keyset{Key: "x", ID: "item_1"}}, photos)
	wantInput(t, err, "cursor")
	s := resolve(t, b, CredScoped)
	_, err = b.DispositionQueue(ctx, s, domain.DispositionQuery{SaleID: closed.ID}, photos)
	rdWantAssignment(t, err, "scoped member on an unassigned sale")
	if _, err := b.DispositionQueue(ctx, domain.Anonymous(), domain.DispositionQuery{SaleID: closed.ID}, photos); !errors.Is(err, domain.ErrAuthRequired) {
		t.Fatalf("anonymous queue: %v, want ErrAuthRequired", err)
	}
	rdUnchanged(t, in, before)
}
