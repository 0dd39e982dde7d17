package contract

import (
	"fmt"
	"slices"
	"testing"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/domain"
)

// runPromotion runs the seller's loop after promotion (issue 16): a
// candidate with photos and a supplied price becomes a complete draft item,
// goes to ready, and is published with the photos its publication names —
// exactly those, and nothing else, reach the buyer.
func runPromotion(t *testing.T, open func(t *testing.T) Instance) {
	t.Run("Promotion/PromotedItemToPublic", func(t *testing.T) { testPromotedItemToPublic(t, open(t)) })
	t.Run("Promotion/PriceNeedsPricingPermission", func(t *testing.T) { testPromotionPricePermission(t, open(t)) })
	t.Run("Promotion/MediaCandidateOntoItsItem", func(t *testing.T) { testMediaCandidatePromotion(t, open(t)) })
}

func publicationDraftNaming(id string, version int, photos ...string) domain.ProposalDraft {
	d := itemPublicationDraft(id, version)
	d.Fields = map[string]any{"photo_ids": photos}
	return d
}

func testPromotedItemToPublic(t *testing.T, in Instance) {
	f := newFlow(t, in)
	c := f.candidate(fixtures.PublishedSaleID, candUnreviewed)
	for k, up := range []domain.PhotoUpload{medPNG(t, 6, 4, 31), medPNG(t, 4, 6, 32)} {
		if _, _, err := f.b.AttachCandidateMedia(ctx, f.owner, ingMeta(f.owner, toolAttachPhoto, fmt.Sprintf("loop-photo-%d", k),
			fmt.Sprintf("sha256:lp%d", k), fmt.Sprintf("event_lp%d", k)), domain.NewCandidateMedia{CandidateID: c.ID, Upload: &up}); err != nil {
			t.Fatalf("attach a photo: %v", err)
		}
	}
	promo := f.mustPropose(promotionDraft(c.ID, c.Version, nil))
	res, _, err := f.execute(f.b, f.owner, promo, allowed(promo, f.approve(promo).ID))
	if err != nil || len(res.CreatedItemIDs) != 1 {
		t.Fatalf("promote: %+v, %v", res, err)
	}
	id := res.CreatedItemIDs[0]
	it := f.mustItem(domain.ItemQuery{SaleID: c.SaleID, Status: domain.ItemDraft}, id)
	if len(it.Photos) != 2 || it.PriceCents == nil {
		t.Fatalf("promoted item = %+v", it)
	}

	// draft → ready, by a status proposal and a grant.
	st := f.mustPropose(statusDraft(id, it.Version, domain.ItemReady, "", ""))
	if _, _, err := f.execute(f.b, f.owner, st, allowed(st, f.approve(st).ID)); err != nil {
		t.Fatalf("draft → ready: %v", err)
	}
	it = f.mustItem(domain.ItemQuery{SaleID: c.SaleID, Status: domain.ItemReady}, id)
	first, second := it.Photos[0].ID, it.Photos[1].ID

	// No photo approved and none named: not ready, nothing stored.
	before := in.Counts(t)
	_, _, err = f.propose(f.owner, itemPublicationDraft(id, it.Version))
	wantErr(t, err, domain.ErrTransitionInvalid, "publishing without an approved photo")
	// A photo of another item, a photo named twice: refused, nothing stored.
	other := f.mustItem(domain.ItemQuery{SaleID: fixtures.PublishedSaleID, Status: domain.ItemReady}, readyItem)
	_, _, err = f.propose(f.owner, publicationDraftNaming(id, it.Version, other.Photos[0].ID))
	wantInput(t, err, "photo_ids")
	_, _, err = f.propose(f.owner, publicationDraftNaming(id, it.Version, second, second))
	wantInput(t, err, "photo_ids")
	f.unchanged(before, "a refused publication")

	// Naming the second photo: the proposal says exactly which photos
	// become public (from none to that one).
	pub := f.mustPropose(publicationDraftNaming(id, it.Version, second))
	want := []domain.FieldChange{
		{TargetID: id, Field: "status", From: domain.ItemReady, To: domain.ItemPublished},
		{TargetID: id, Field: "public_photo_ids", From: []string{}, To: []string{second}},
	}
	if len(pub.Changes) != 2 || pub.Changes[0] != want[0] || pub.Changes[1].Field != want[1].Field ||
		!slices.Equal(domain.StringList(pub.Changes[1].From), []string{}) || !slices.Equal(domain.StringList(pub.Changes[1].To), []string{second}) {
		t.Fatalf("publication changes = %+v, want %+v", pub.Changes, want)
	}
	// Before it runs, the buyer sees nothing of the item.
	if _, err := f.b.PublicItem(ctx, id); err == nil {
		t.Fatalf("a ready item is public before its publication")
	}
	if _, _, err := f.execute(f.b, f.owner, pub, allowed(pub, f.approve(pub).ID)); err != nil {
		t.Fatalf("publish: %v", err)
	}
	it = f.mustItem(domain.ItemQuery{SaleID: c.SaleID, Status: domain.ItemPublished}, id)
	if it.Photos[0].ID != first || it.Photos[0].Published || it.Photos[1].ID != second || !it.Photos[1].Published {
		t.Fatalf("after publication the photos are %+v: want only %s public", it.Photos, second)
	}
	// The buyer's view: the approved photo and the price, nothing else.
	pi, err := f.b.PublicItem(ctx, id)
	if avail, _ := domain.PublicItemStatus(domain.ItemPublished); err != nil || pi.ID != id || pi.Status != avail || pi.PriceCents == nil || *pi.PriceCents != *c.SuppliedPriceCents ||
		len(pi.Photos) != 1 || pi.Photos[0].ID != second {
		t.Fatalf("public item = %+v, %v", pi, err)
	}
}

// A promotion prices its item only when the proposer may change prices: a
// cataloger's promotion leaves the supplied price for a pricer, and a
// cataloger naming a price is refused.
func testPromotionPricePermission(t *testing.T, in Instance) {
	f := newFlow(t, in)
	cat := resolve(t, f.b, CredCataloger)
	page, err := f.b.ListCandidates(ctx, cat, domain.CandidateQuery{SaleID: fixtures.LiveSaleID, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var c domain.Candidate
	for _, x := range page.Rows {
		if x.Kind == domain.CandidateNewItem && x.SuppliedPriceCents != nil && slices.Contains(domain.OpenReviewStatuses(), x.ReviewStatus) {
			c = x
			break
		}
	}
	if c.ID == "" {
		t.Fatalf("the dataset has no open priced candidate in %s", fixtures.LiveSaleID)
	}
	before := in.Counts(t)
	_, _, err = f.propose(cat, promotionDraft(c.ID, c.Version, map[string]any{"price_cents": int64(100)}))
	wantErr(t, err, domain.ErrPermissionDenied, "a cataloger naming a price")
	f.unchanged(before, "a cataloger naming a price")
	prop, _, err := f.propose(cat, promotionDraft(c.ID, c.Version, nil))
	if err != nil {
		t.Fatalf("a cataloger's promotion: %v", err)
	}
	for _, ch := range prop.Changes {
		if ch.Field == "create_item.price_cents" {
			t.Fatalf("a cataloger's promotion sets the price: %+v", prop.Changes)
		}
	}
	// The owner's promotion of the same candidate carries it.
	own := f.mustPropose(promotionDraft(c.ID, c.Version, nil))
	if !slices.ContainsFunc(own.Changes, func(ch domain.FieldChange) bool {
		return ch.Field == "create_item.price_cents" && fmt.Sprint(ch.To) == fmt.Sprint(*c.SuppliedPriceCents)
	}) {
		t.Fatalf("the owner's promotion = %+v, want the supplied price %d", own.Changes, *c.SuppliedPriceCents)
	}
}

// An attach_media candidate (a photo proposed for an existing item) is
// promoted onto that item: the proposal names the item and the photos, the
// execution adds them as private photos (the item changes, nothing is
// created), and a later publication can approve them for the buyer.
func testMediaCandidatePromotion(t *testing.T, in Instance) {
	f := newFlow(t, in)
	item := f.mustItem(domain.ItemQuery{SaleID: fixtures.PublishedSaleID, Status: domain.ItemReady}, readyItem)
	up := medPNG(t, 7, 5, 41)
	mc, _, err := f.b.CreateMediaCandidate(ctx, f.owner, ingMeta(f.owner, toolMediaCandidate, "mp-1", "sha256:mp1", "event_mp1"),
		domain.NewCandidateMedia{ItemID: item.ID, Upload: &up, Caption: "maker's mark"})
	if err != nil {
		t.Fatalf("CreateMediaCandidate: %v", err)
	}
	c := f.candidate(fixtures.PublishedSaleID, mc.CandidateID)

	// It adds photos only: a draft naming anything else is refused.
	before := in.Counts(t)
	_, _, err = f.propose(f.owner, promotionDraft(c.ID, c.Version, map[string]any{"title": "Renamed"}))
	wantInput(t, err, "title")
	f.unchanged(before, "a media promotion naming a title")

	prop := f.mustPropose(promotionDraft(c.ID, c.Version, nil))
	want := []string{
		fmt.Sprint(domain.FieldChange{TargetID: c.ID, Field: domain.FieldAddPhotosItem, To: item.ID}),
		fmt.Sprint(domain.FieldChange{TargetID: c.ID, Field: domain.FieldAddPhotosAssets, To: []string{mc.AssetID}}),
		fmt.Sprint(domain.FieldChange{TargetID: c.ID, Field: "review_status", From: domain.ReviewNeedsReview, To: domain.ReviewPromoted}),
	}
	var got []string
	for _, ch := range prop.Changes {
		if l := domain.StringList(ch.To); l != nil {
			ch.To = l
		}
		got = append(got, fmt.Sprint(ch))
	}
	if !slices.Equal(got, want) || prop.Impact != (domain.ProposalImpact{ItemsChanged: 1}) ||
		!slices.Equal(prop.Validation.Warnings, []string{"candidate_not_reviewed"}) || !slices.Equal(prop.SaleIDs, []string{item.SaleID}) {
		t.Fatalf("media promotion = %v %+v %+v %v; want %v", got, prop.Impact, prop.Validation, prop.SaleIDs, want)
	}
	before = in.Counts(t)
	_, _, err = f.execute(f.b, f.owner, prop, domain.Authorization{Decision: "allowed", ProposalHash: prop.Hash})
	wantErr(t, err, domain.ErrApprovalRequired, "a media promotion without a grant")
	f.unchanged(before, "a media promotion without a grant")

	g := f.approve(prop)
	before = in.Counts(t)
	res, out, err := f.execute(f.b, f.owner, prop, allowed(prop, g.ID))
	if err != nil {
		t.Fatalf("execute the media promotion: %v", err)
	}
	f.grew(before, map[string]int64{"item_photos": 1, "items": 0, "inventory_candidates": 0, "item_provenance": 0})
	v := item.Version + 1
	if len(res.CreatedItemIDs) != 0 || len(res.Results) != 2 || res.Results[1].TargetID != item.ID || res.Results[1].NewVersion == nil ||
		*res.Results[1].NewVersion != v || !slices.Equal(out.Related.ItemIDs, []string{item.ID}) || !slices.Equal(out.Related.CandidateIDs, []string{c.ID}) {
		t.Fatalf("result = %+v, outcome %+v", res, out)
	}
	after := f.mustItem(domain.ItemQuery{SaleID: fixtures.PublishedSaleID, Status: domain.ItemReady}, item.ID)
	added := after.Photos[len(after.Photos)-1]
	if after.Version != v || len(after.Photos) != len(item.Photos)+1 || added.Published || added.Width != 7 || added.Height != 5 ||
		added.Position <= item.Photos[len(item.Photos)-1].Position {
		t.Fatalf("the item after the media promotion = %+v", after)
	}
	if c2 := f.candidate(fixtures.PublishedSaleID, c.ID); c2.ReviewStatus != domain.ReviewPromoted || c2.Version != c.Version+1 {
		t.Fatalf("the candidate after its promotion = %+v", c2)
	}
	// Promoted once: a second promotion is refused.
	_, _, err = f.propose(f.owner, promotionDraft(c.ID, c.Version+1, nil))
	wantErr(t, err, domain.ErrTransitionInvalid, "promoting a promoted media candidate")

	// Publication approving exactly the new photo: the buyer sees it alone.
	pub := f.mustPropose(publicationDraftNaming(item.ID, v, added.ID))
	if _, _, err := f.execute(f.b, f.owner, pub, allowed(pub, f.approve(pub).ID)); err != nil {
		t.Fatalf("publish: %v", err)
	}
	pi, err := f.b.PublicItem(ctx, item.ID)
	if err != nil || len(pi.Photos) != 1 || pi.Photos[0].ID != added.ID {
		t.Fatalf("public item = %+v, %v", pi, err)
	}
}
