package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/triunalabs/trovesnap/internal/domain"
)

func itemIDs(items []domain.Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.ID
	}
	return out
}

// walkItems follows NextCursor from the first page to the end, decoding each
// cursor the way the gate does; between pages it calls between(pageNo).
func walkItems(t *testing.T, s *Store, p domain.Principal, q domain.ItemQuery, between func(int)) []string {
	t.Helper()
	var seen []string
	for page := 0; ; page++ {
		res, err := s.ListItems(context.Background(), p, q)
		if err != nil {
			t.Fatalf("page %d: %v", page, err)
		}
		if len(res.Rows) > q.Limit && q.Limit > 0 {
			t.Fatalf("page %d has %d rows, limit %d", page, len(res.Rows), q.Limit)
		}
		seen = append(seen, itemIDs(res.Rows)...)
		if res.NextCursor == "" {
			return seen
		}
		if q.After, err = s.Cursors().Decode(CursorItems, p.TenantID, res.NextCursor); err != nil {
			t.Fatalf("page %d: own cursor rejected: %v", page, err)
		}
		if between != nil {
			between(page)
		}
		if page > 100 {
			t.Fatal("pagination does not terminate")
		}
	}
}

func TestListItems_KeysetWalksEveryRowOnce(t *testing.T) {
	s := openTest(t)
	p := principal(t, s, "")
	all := []string{"item_a1", "item_a2", "item_a3", "item_a4", "item_a5", "item_a6", "item_a7"} // (created_at, id) order

	for _, limit := range []int{1, 2, 3, 7, 8, 0} {
		got := walkItems(t, s, p, domain.ItemQuery{Limit: limit}, nil)
		if !slices.Equal(got, all) {
			t.Fatalf("limit %d: walked %v; want %v", limit, got, all)
		}
	}

	// A row committed by another connection while the walk is under way (it
	// sorts after the cursor) is reached once; nothing repeats or is skipped.
	other := rawDB(t, s.Path())
	got := walkItems(t, s, p, domain.ItemQuery{Limit: 2}, func(page int) {
		if page != 0 {
			return
		}
		if _, err := other.Exec(`INSERT INTO items (id, tenant_id, sale_id, title, status, created_at, updated_at)
			VALUES ('item_a8', ?, ?, 'Late arrival', 'draft', ?, ?)`, tenantA, saleA1, ts(epoch), ts(epoch)); err != nil {
			t.Fatal(err)
		}
	})
	if want := append(slices.Clone(all), "item_a8"); !slices.Equal(got, want) {
		t.Fatalf("walk with concurrent insert = %v; want %v", got, want)
	}
}

func TestListItems_FiltersAndTenantScope(t *testing.T) {
	s := openTest(t)
	pA, pB := principal(t, s, ""), principal(t, s, credB)
	cases := []struct {
		name string
		p    domain.Principal
		q    domain.ItemQuery
		want []string
	}{
		{"tenant B sees only its items", pB, domain.ItemQuery{}, []string{"item_b1", "item_b2"}},
		{"sale", pA, domain.ItemQuery{SaleID: saleA2}, []string{"item_a5", "item_a6"}},
		{"status", pA, domain.ItemQuery{Status: domain.ItemPublished}, []string{"item_a1", "item_a2"}},
		{"room", pA, domain.ItemQuery{Room: "garage"}, []string{"item_a3", "item_a4"}},
		{"category prefix stops at a dot", pA, domain.ItemQuery{Category: "electronics.audio"}, []string{"item_a2", "item_a3"}},
		{"category root", pA, domain.ItemQuery{Category: "electronics"}, []string{"item_a2", "item_a3", "item_a4", "item_a7"}},
		{"category partial word matches nothing", pA, domain.ItemQuery{Category: "electro"}, []string{}},
		{"combined", pA, domain.ItemQuery{SaleID: saleA1, Room: "den", Category: "electronics"}, []string{"item_a2", "item_a7"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := s.ListItems(context.Background(), tc.p, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			if got := itemIDs(res.Rows); !slices.Equal(got, tc.want) { // (created_at, id) order
				t.Fatalf("got %v; want %v", got, tc.want)
			}
			if res.NextCursor != "" {
				t.Fatalf("unexpected next cursor")
			}
		})
	}
	if _, err := s.ListItems(context.Background(), pA, domain.ItemQuery{Status: "lost"}); !errors.Is(err, domain.ErrInvalidInput) {
		t.Fatalf("unknown status: err = %v; want ErrInvalidInput", err)
	}
}

func TestListItems_CarryPhotosInPositionOrder(t *testing.T) {
	s := openTest(t)
	res, err := s.ListItems(context.Background(), principal(t, s, ""), domain.ItemQuery{Room: "garage"})
	if err != nil {
		t.Fatal(err)
	}
	a3, a4 := res.Rows[0], res.Rows[1]
	if a3.ID != "item_a3" || len(a3.Photos) != 3 {
		t.Fatalf("item_a3 photos = %+v", a3.Photos)
	}
	for i, ph := range a3.Photos {
		if ph.Position != i+1 || ph.ItemID != "item_a3" || ph.Published != (i == 0) || ph.Width != 800 {
			t.Fatalf("photo %d = %+v", i, ph)
		}
	}
	if a4.Photos == nil || len(a4.Photos) != 0 {
		t.Fatalf("an item without photos must carry an empty list, got %#v", a4.Photos)
	}
	// Private fields are returned (projection is the gate's job) and exact.
	if a3.InternalPriceGuidanceCents == nil || *a3.InternalPriceGuidanceCents != 3000 || a3.CostBasisCents != nil ||
		a3.StaffNotes != "note" || a3.QRCode != "QR-item_a3" || !a3.CreatedAt.Equal(at(-97*time.Hour)) {
		t.Fatalf("item fields = %+v", a3)
	}
}

// A sale id of another tenant fails exactly like a missing one; only the
// CrossTenant flag (for the audit) tells them apart.
func TestListItems_UnknownAndCrossTenantSaleSameError(t *testing.T) {
	s := openTest(t)
	p := principal(t, s, "")
	_, errMissing := s.ListItems(context.Background(), p, domain.ItemQuery{SaleID: "sale_zz"})
	_, errForeign := s.ListItems(context.Background(), p, domain.ItemQuery{SaleID: saleB1})
	var rm, rf *domain.RefError
	if !errors.As(errMissing, &rm) || !errors.As(errForeign, &rf) {
		t.Fatalf("errors = %v / %v; want *RefError", errMissing, errForeign)
	}
	if rm.CrossTenant || !rf.CrossTenant || !errors.Is(errForeign, domain.ErrCrossTenant) || !errors.Is(errMissing, domain.ErrNotFound) {
		t.Fatalf("cross-tenant flags: missing %+v foreign %+v", rm, rf)
	}
	if errMissing.Error() != fmt.Sprintf("unknown sale_id %q", "sale_zz") || errForeign.Error() != fmt.Sprintf("unknown sale_id %q", saleB1) {
		t.Fatalf("messages differ in form: %q / %q", errMissing, errForeign)
	}
	for _, q := range []func() error{
		func() error {
			_, err := s.ListCandidates(context.Background(), p, domain.CandidateQuery{SaleID: saleB1})
			return err
		},
		func() error {
			_, err := s.DemandSignals(context.Background(), p, domain.DemandQuery{SaleID: saleB1})
			return err
		},
	} {
		if err := q(); !errors.As(err, &rf) || !rf.CrossTenant {
			t.Fatalf("err = %v; want cross-tenant RefError", err)
		}
	}
}

func TestListItems_ForeignCursorRejected(t *testing.T) {
	s := openTest(t)
	pA, pB := principal(t, s, ""), principal(t, s, credB)
	items, err := s.ListItems(context.Background(), pA, domain.ItemQuery{Limit: 1})
	if err != nil || items.NextCursor == "" {
		t.Fatalf("items page: %v", err)
	}
	sales, err := s.ListSales(context.Background(), pA, domain.SaleQuery{Limit: 1})
	if err != nil || sales.NextCursor == "" {
		t.Fatalf("sales page: %v", err)
	}
	// Another list's cursor, and this list's cursor of another tenant.
	if _, err := s.Cursors().Decode(CursorItems, pA.TenantID, sales.NextCursor); !errors.Is(err, domain.ErrInvalidInput) {
		t.Errorf("sales cursor on items: err = %v", err)
	}
	if _, err := s.Cursors().Decode(CursorItems, pB.TenantID, items.NextCursor); !errors.Is(err, domain.ErrInvalidInput) {
		t.Errorf("tenant A cursor for tenant B: err = %v", err)
	}
	// A keyset that no cursor of ours can carry is refused by the store too.
	bad := &domain.Keyset{Key: "not-a-time", ID: "item_a1"}
	if _, err := s.ListItems(context.Background(), pA, domain.ItemQuery{After: bad}); !errors.Is(err, domain.ErrInvalidInput) {
		t.Errorf("malformed keyset: err = %v", err)
	}
	// A tenant-A position replayed by tenant B reveals nothing of A.
	k, _ := s.Cursors().Decode(CursorItems, pA.TenantID, items.NextCursor)
	res, err := s.ListItems(context.Background(), pB, domain.ItemQuery{After: k})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range res.Rows {
		if it.TenantID != tenantB {
			t.Fatalf("tenant B saw %s", it.ID)
		}
	}
}

func TestListSales_CalendarOrderAndPaging(t *testing.T) {
	s := openTest(t)
	p := principal(t, s, "")
	ctx := context.Background()
	first, err := s.ListSales(ctx, p, domain.SaleQuery{Limit: 1})
	if err != nil || len(first.Rows) != 1 || first.Rows[0].ID != saleA1 || first.NextCursor == "" {
		t.Fatalf("first page = %+v, %v", first, err)
	}
	if r := first.Rows[0]; r.AddressRevealAt == nil || !r.AddressRevealAt.Equal(at(12*24*time.Hour)) || r.Version != 2 || r.StreetAddress != "12 Maple St" {
		t.Fatalf("sale fields = %+v", r)
	}
	k, err := s.Cursors().Decode(CursorSales, p.TenantID, first.NextCursor)
	if err != nil {
		t.Fatal(err)
	}
	second, err := s.ListSales(ctx, p, domain.SaleQuery{Limit: 1, After: k})
	if err != nil || len(second.Rows) != 1 || second.Rows[0].ID != saleA2 || second.NextCursor != "" {
		t.Fatalf("second page = %+v, %v", second, err)
	}
	if second.Rows[0].AddressRevealAt != nil {
		t.Fatalf("reveal time invented")
	}
	drafts, err := s.ListSales(ctx, p, domain.SaleQuery{Status: domain.SaleDraft})
	if err != nil || len(drafts.Rows) != 1 || drafts.Rows[0].ID != saleA2 {
		t.Fatalf("drafts = %+v, %v", drafts, err)
	}
}

func TestListCandidates_FiltersAndPaging(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	p := principal(t, s, "")
	for i := range 3 {
		if _, _, err := s.CreateCandidate(ctx, p, meta(p, fmt.Sprint("k", i), "fp", fmt.Sprint("event_", i)),
			domain.NewCandidate{SaleID: saleA2, Title: fmt.Sprint("Chair ", i)}); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	q := domain.CandidateQuery{Limit: 2}
	for {
		res, err := s.ListCandidates(ctx, p, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range res.Rows {
			got = append(got, c.ID)
		}
		if res.NextCursor == "" {
			break
		}
		if q.After, err = s.Cursors().Decode(CursorCandidates, p.TenantID, res.NextCursor); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"candidate_csv1", "candidate_s0001", "candidate_s0002", "candidate_s0003"}
	if !slices.Equal(got, want) {
		t.Fatalf("walk = %v; want %v", got, want)
	}
	res, err := s.ListCandidates(ctx, p, domain.CandidateQuery{SaleID: saleA1, ReviewStatus: domain.ReviewNeedsReview})
	if err != nil || len(res.Rows) != 1 {
		t.Fatalf("filtered = %+v, %v", res, err)
	}
	c := res.Rows[0]
	if c.ID != "candidate_csv1" || c.Version != 3 || c.ImportRunID != "run_csv1" || c.CreatedByClientID != "" || c.Quantity != 1 {
		t.Fatalf("candidate = %+v", c)
	}
	if res, err := s.ListCandidates(ctx, principal(t, s, credB), domain.CandidateQuery{}); err != nil || len(res.Rows) != 0 {
		t.Fatalf("tenant B candidates = %+v, %v", res, err)
	}
}

func TestDemandSignals_FilterAndOrder(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	p := principal(t, s, "")
	all, err := s.DemandSignals(ctx, p, domain.DemandQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range all {
		got = append(got, d.SaleID+"/"+d.Category)
	}
	if want := []string{"/electronics", "sale_a1/electronics.audio", "sale_a1/furniture.seating"}; !slices.Equal(got, want) {
		t.Fatalf("order = %v; want %v", got, want)
	}
	audio, err := s.DemandSignals(ctx, p, domain.DemandQuery{SaleID: saleA1, Category: "electronics"})
	if err != nil || len(audio) != 1 || audio[0].Saves != 12 || audio[0].Follows != 6 || !audio[0].WindowEnd.Equal(epoch) {
		t.Fatalf("filtered = %+v, %v", audio, err)
	}
	if none, err := s.DemandSignals(ctx, p, domain.DemandQuery{Category: "toys"}); err != nil || none == nil || len(none) != 0 {
		t.Fatalf("no match must be an empty list: %#v, %v", none, err)
	}
}

func TestLists_PageSizePolicy(t *testing.T) {
	ds := testDataset()
	for i := range 130 {
		ds.Items = append(ds.Items, domain.Item{ID: fmt.Sprintf("item_m%03d", i), TenantID: tenantA, SaleID: saleA2,
			Title: "bulk", Status: domain.ItemDraft, CreatedAt: epoch, UpdatedAt: epoch})
	}
	s := openTest(t, func(o *Options) { o.Seed = &ds })
	p := principal(t, s, "")
	for limit, want := range map[int]int{0: domain.DefaultPageSize, 1000: domain.MaxPageSize, 10: 10} {
		res, err := s.ListItems(context.Background(), p, domain.ItemQuery{Limit: limit})
		if err != nil || len(res.Rows) != want || res.NextCursor == "" {
			t.Fatalf("limit %d: %d rows, cursor %q, %v; want %d", limit, len(res.Rows), res.NextCursor, err, want)
		}
	}
	if _, err := s.ListItems(context.Background(), p, domain.ItemQuery{Limit: -1}); !errors.Is(err, domain.ErrInvalidInput) {
		t.Fatalf("negative limit: %v", err)
	}
	if got := walkItems(t, s, p, domain.ItemQuery{Limit: 100}, nil); len(got) != 137 {
		t.Fatalf("walked %d items; want 137", len(got))
	}
}

func TestLists_AnonymousPrincipalRefused(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	anon := domain.Anonymous()
	_, e1 := s.ListSales(ctx, anon, domain.SaleQuery{})
	_, e2 := s.ListItems(ctx, anon, domain.ItemQuery{})
	_, e3 := s.ListCandidates(ctx, anon, domain.CandidateQuery{})
	_, e4 := s.DemandSignals(ctx, anon, domain.DemandQuery{})
	_, _, e5 := s.CreateCandidate(ctx, anon, domain.WriteMeta{}, domain.NewCandidate{SaleID: saleA1, Title: "x"})
	for i, err := range []error{e1, e2, e3, e4, e5} {
		if !errors.Is(err, domain.ErrAuthRequired) {
			t.Errorf("call %d: err = %v; want ErrAuthRequired", i+1, err)
		}
	}
}

// An item with no photo is absent from the tally's GROUP BY: its tally is
// zero, not missing, and it is not ready for want of an approved photo.
func TestPhotoTally_ItemWithoutPhotos(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	p, err := s.ResolvePrincipal(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	full, err := s.ListItemDetails(ctx, p, domain.ItemQuery{Limit: 10}, domain.ItemIncludes{Photos: true})
	if err != nil || len(full.Rows) < 2 {
		t.Fatalf("ListItemDetails: %d rows, %v", len(full.Rows), err)
	}
	bare := full.Rows[0].ID
	if len(full.Rows[0].Photos) == 0 {
		t.Fatalf("setup: %s has no photo to remove", bare)
	}
	if _, err := rawDB(t, s.Path()).ExecContext(ctx, "DELETE FROM item_photos WHERE item_id = ?", bare); err != nil {
		t.Fatal(err)
	}
	page, err := s.ListItemDetails(ctx, p, domain.ItemQuery{Limit: 10}, domain.ItemIncludes{PhotoTally: true})
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range page.Rows {
		want := domain.TallyPhotos(full.Rows[i].Photos)
		if d.ID == bare {
			want = domain.PhotoTally{}
		}
		if d.PhotoTally == nil || *d.PhotoTally != want || d.Photos != nil {
			t.Fatalf("item %s: tally %v photos %v, want %+v and no photos", d.ID, d.PhotoTally, d.Photos, want)
		}
		if d.ID == bare && !slices.Contains(domain.TalliedReadiness(d.Item, *d.PhotoTally), "approved_photo") {
			t.Fatalf("item %s without photos: readiness %v", d.ID, domain.TalliedReadiness(d.Item, *d.PhotoTally))
		}
	}
}
