package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// readsDataset extends the hand-built test dataset with what the read tools
// need: a cataloger limited to sale_a1 (with a credential), a closed sale
// with unsold items, status and pricing history, and a label batch with a
// spare code.
const (
	userDave    = "user_dave" // cataloger of A, assigned to sale_a1 only
	clientDave  = "mcp_client_dave"
	credDave    = "tsk_delta"
	saleA3      = "sale_a3" // closed, public
	spareCode   = "QR-spare-0001"
	revealDelay = 12 * 24 * time.Hour // sale_a1's address reveal, from epoch
)

func readsDataset() domain.Dataset {
	ds := testDataset()
	ds.Users = append(ds.Users, domain.User{ID: userDave, DisplayName: "Dave", Email: "dave@acme.test"})
	ds.Memberships = append(ds.Memberships, domain.Membership{ID: "membership_a3", TenantID: tenantA, UserID: userDave, Role: domain.RoleCataloger})
	ds.Clients = append(ds.Clients, domain.Client{ID: clientDave, TenantID: tenantA, Name: "Dave CLI", ClientType: "cli",
		Status: domain.ClientActive, ActorID: userDave, CreatedBy: userAlice, CreatedAt: at(-1 * time.Hour), CredentialHash: CredentialHash(credDave)})
	ds.SaleScopes = []domain.SaleScope{{MembershipID: "membership_a3", TenantID: tenantA, SaleIDs: []string{saleA1}}}
	ds.Sales = append(ds.Sales, domain.Sale{ID: saleA3, TenantID: tenantA, Title: "Elm Court Clearance", Status: domain.SaleClosed,
		Visibility: "public", City: "Eugene", Region: "OR", StreetAddress: "9 Elm Ct", AddressPolicy: "always",
		StartsAt: at(-20 * 24 * time.Hour), EndsAt: at(-18 * 24 * time.Hour), Version: 4, CreatedAt: at(-40 * 24 * time.Hour), UpdatedAt: at(-18 * 24 * time.Hour)})
	for i, st := range []string{domain.ItemPublished, domain.ItemSold, domain.ItemOnHold, domain.ItemArchived, domain.ItemPublished} {
		id := fmt.Sprintf("item_c%d", i+1)
		ds.Items = append(ds.Items, domain.Item{ID: id, TenantID: tenantA, SaleID: saleA3, Title: "Leftover " + id, Category: "decor.lamp",
			Room: []string{"den", "attic"}[i%2], Status: st, PriceCents: i64(900), Version: 2,
			CreatedAt: at(time.Duration(-30*24+i) * time.Hour), UpdatedAt: at(-19 * 24 * time.Hour)})
	}
	ds.PriceChanges = []domain.PriceChange{
		{ID: "price_1", TenantID: tenantA, ItemID: "item_a1", PriceCents: i64(3000), InternalPriceGuidanceCents: i64(3000), Reason: "initial pricing", ActorID: userCarol, ChangedAt: at(-99 * time.Hour)},
		{ID: "price_2", TenantID: tenantA, ItemID: "item_a1", PriceCents: i64(2500), InternalPriceGuidanceCents: i64(3000), Reason: "markdown", ActorID: userCarol, ChangedAt: at(-98 * time.Hour)},
	}
	ev := func(n int, item, sale, from, to string, hour int) domain.StatusEvent {
		return domain.StatusEvent{ID: fmt.Sprintf("status_%d", n), TenantID: tenantA, ItemID: item, SaleID: sale, FromStatus: from, ToStatus: to,
			EffectiveAt: at(time.Duration(hour) * time.Hour), SourceType: domain.StatusSourceSeller, ActorID: userAlice, RecordedAt: at(time.Duration(hour) * time.Hour)}
	}
	ds.StatusEvents = []domain.StatusEvent{
		ev(1, "item_a1", saleA1, domain.ItemDraft, domain.ItemReady, -90),
		ev(2, "item_a1", saleA1, domain.ItemReady, domain.ItemPublished, -80),
		ev(3, "item_a2", saleA1, domain.ItemReady, domain.ItemPublished, -80), // same instant: id breaks the tie
		ev(4, "item_a5", saleA2, domain.ItemDraft, domain.ItemReady, -70),
		ev(5, "item_c2", saleA3, domain.ItemPublished, domain.ItemSold, -60),
	}
	printed := at(-200 * time.Hour)
	ds.LabelBatches = []domain.LabelBatch{
		{ID: "batch_a1", TenantID: tenantA, SaleID: saleA1, Status: domain.LabelBatchPrinted, CreatedAt: at(-201 * time.Hour), PrintedAt: &printed,
			Codes: []string{"QR-item_a1", "QR-item_a2", "QR-item_a3", spareCode}},
		{ID: "batch_a2", TenantID: tenantA, SaleID: saleA2, Status: domain.LabelBatchDraft, CreatedAt: at(-100 * time.Hour), Codes: []string{"QR-draft-0001"}},
	}
	return ds
}

// openReads opens a store seeded with readsDataset and returns its clock.
func openReads(t *testing.T) (*Store, *domain.FixedClock) {
	t.Helper()
	clock := domain.NewFixedClock(epoch)
	ds := readsDataset()
	s := openTest(t, func(o *Options) { o.Seed, o.Clock = &ds, clock })
	return s, clock
}

func TestSaleScope_ResolvedWithThePrincipal(t *testing.T) {
	s, _ := openReads(t)
	p := principal(t, s, credDave)
	if !p.SaleScoped || !slices.Equal(p.AssignedSaleIDs, []string{saleA1}) || p.Role != domain.RoleCataloger {
		t.Fatalf("scoped principal = %+v", p)
	}
	if owner := principal(t, s, ""); owner.SaleScoped || owner.AssignedSaleIDs != nil {
		t.Fatalf("owner is not sale-scoped: %+v", owner)
	}
	// An assignment change is seen by the very next resolution.
	if _, err := s.w.Exec("DELETE FROM membership_sales WHERE membership_id = 'membership_a3'"); err != nil {
		t.Fatal(err)
	}
	if p := principal(t, s, credDave); !p.SaleScoped || len(p.AssignedSaleIDs) != 0 || p.AssignedSaleIDs == nil {
		t.Fatalf("a scoped membership without sales sees none: %+v", p)
	}
	// The database refuses an assignment across tenants.
	if _, err := s.w.Exec("INSERT INTO membership_sales (membership_id, tenant_id, sale_id) VALUES ('membership_a3', ?, ?)", tenantB, saleB1); err == nil ||
		!strings.Contains(err.Error(), "different tenants") {
		t.Fatalf("cross-tenant assignment: err = %v", err)
	}
}

func TestSaleScope_ListsFilterAndGetsRefuse(t *testing.T) {
	ctx := context.Background()
	s, _ := openReads(t)
	p := principal(t, s, credDave)
	sales, err := s.ListSales(ctx, p, domain.SaleQuery{})
	if err != nil || len(sales.Rows) != 1 || sales.Rows[0].ID != saleA1 {
		t.Fatalf("scoped sales = %+v, %v", sales.Rows, err)
	}
	for _, it := range walkItems(t, s, p, domain.ItemQuery{Limit: 2}, nil) {
		if !slices.Contains([]string{"item_a1", "item_a2", "item_a3", "item_a4", "item_a7"}, it) {
			t.Errorf("scoped walk saw %s", it)
		}
	}
	sig, err := s.DemandSignals(ctx, p, domain.DemandQuery{})
	if err != nil || len(sig) != 2 {
		t.Fatalf("scoped demand signals (no tenant-wide row) = %+v, %v", sig, err)
	}
	evs, err := s.ListStatusEvents(ctx, p, domain.StatusEventQuery{})
	if err != nil || len(evs.Rows) != 3 {
		t.Fatalf("scoped status events = %+v, %v", evs.Rows, err)
	}
	batches, err := s.ListLabelBatches(ctx, p, domain.LabelBatchQuery{})
	if err != nil || len(batches.Rows) != 1 || batches.Rows[0].ID != "batch_a1" {
		t.Fatalf("scoped batches = %+v, %v", batches.Rows, err)
	}

	refused := map[string]error{}
	_, refused["get sale"] = s.GetSale(ctx, p, saleA2)
	_, refused["get item"] = s.GetItem(ctx, p, "item_a5", domain.ItemIncludes{})
	_, refused["list items of sale"] = s.ListItems(ctx, p, domain.ItemQuery{SaleID: saleA2})
	_, refused["list candidates of sale"] = s.ListCandidates(ctx, p, domain.CandidateQuery{SaleID: saleA2})
	_, refused["status events of item"] = s.ListStatusEvents(ctx, p, domain.StatusEventQuery{ItemID: "item_a5"})
	_, refused["disposition queue"] = s.DispositionQueue(ctx, p, domain.DispositionQuery{SaleID: saleA3}, domain.ItemIncludes{})
	for name, err := range refused {
		if !errors.Is(err, domain.ErrSaleAssignment) {
			t.Errorf("%s: err = %v; want ErrSaleAssignment", name, err)
		}
	}
	// Another tenant's sale is unknown first: assignment never answers for it.
	var ref *domain.RefError
	if _, err := s.GetSale(ctx, p, saleB1); !errors.As(err, &ref) || !ref.CrossTenant || errors.Is(err, domain.ErrSaleAssignment) {
		t.Fatalf("foreign sale: err = %v", err)
	}
	if got, err := s.GetSale(ctx, p, saleA1); err != nil || got.ID != saleA1 {
		t.Fatalf("assigned sale: %+v, %v", got, err)
	}
}

// The address follows the reveal policy at the time of the call, on the
// store's clock; linked records (an item's sale) follow it too.
func TestPublic_AddressFollowsRevealPolicyAtCallTime(t *testing.T) {
	ctx := context.Background()
	s, clock := openReads(t)
	sale, err := s.PublicSale(ctx, saleA1)
	if err != nil {
		t.Fatal(err)
	}
	if sale.StreetAddress != nil || sale.AddressRevealAt == nil || !sale.AddressRevealAt.Equal(at(revealDelay)) || sale.PublishedItems != 2 {
		t.Fatalf("before reveal: %+v", sale)
	}
	item, err := s.PublicItem(ctx, "item_a1")
	if err != nil || item.Sale.StreetAddress != nil {
		t.Fatalf("item's sale before reveal: %+v, %v", item.Sale, err)
	}
	clock.Set(at(revealDelay - time.Nanosecond))
	if sale, _ := s.PublicSale(ctx, saleA1); sale.StreetAddress != nil {
		t.Fatal("revealed a nanosecond early")
	}
	clock.Set(at(revealDelay))
	sale, _ = s.PublicSale(ctx, saleA1)
	item, _ = s.PublicItem(ctx, "item_a1")
	if sale.StreetAddress == nil || *sale.StreetAddress != "12 Maple St" || item.Sale.StreetAddress == nil {
		t.Fatalf("after reveal: sale %+v, item's sale %+v", sale, item.Sale)
	}
	live, err := s.PublicSale(ctx, saleB1) // always
	if err != nil || live.StreetAddress == nil || live.AddressRevealAt != nil {
		t.Fatalf("always-policy sale: %+v, %v", live, err)
	}
	for _, c := range []struct {
		policy string
		reveal *time.Time
		now    time.Time
		want   bool
	}{
		{domain.AddressNever, nil, epoch, false},
		{domain.AddressHiddenUntil, nil, epoch, false},
		{"unknown", nil, epoch, false},
	} {
		if got := domain.AddressRevealed(c.policy, c.reveal, c.now); got != c.want {
			t.Errorf("AddressRevealed(%s) = %v", c.policy, got)
		}
	}
}

// Unknown, unpublished, withdrawn and private records are one error, never
// marked cross-tenant, whoever's they are.
func TestPublic_NonPublicIsUnknown(t *testing.T) {
	ctx := context.Background()
	s, _ := openReads(t)
	if _, err := s.w.Exec("UPDATE items SET status = 'withdrawn' WHERE id = 'item_a2'"); err != nil {
		t.Fatal(err)
	}
	check := func(name string, err error, field, id string) {
		t.Helper()
		var ref *domain.RefError
		if !errors.As(err, &ref) || ref.CrossTenant || ref.Field != field || ref.ID != id {
			t.Errorf("%s: err = %#v; want an unknown %s", name, err, field)
		}
	}
	for _, id := range []string{"sale_none", saleA2, saleA3} { // unknown, draft/private, closed
		_, err := s.PublicSale(ctx, id)
		check(id, err, "sale_id", id)
	}
	for _, id := range []string{"item_none", "item_a2", "item_a3", "item_a5", "item_c1"} { // unknown, withdrawn, draft, private sale, closed sale
		_, err := s.PublicItem(ctx, id)
		check(id, err, "item_id", id)
	}
	// A code never printed, a printed spare, a code on a withdrawn item, a
	// code of a draft batch: all alike.
	for _, code := range []string{"QR-none-0001", spareCode, "QR-item_a2", "QR-draft-0001", ""} {
		_, err := s.ResolvePublicQR(ctx, code)
		check(code, err, "qr_code", code)
	}
	it, err := s.ResolvePublicQR(ctx, "QR-item_a7")
	if err != nil || it.ID != "item_a7" || it.Status != "sold" {
		t.Fatalf("sold item by tag: %+v, %v", it, err)
	}
	it, err = s.PublicItem(ctx, "item_a1")
	if err != nil || it.Status != "available" || len(it.Photos) != 1 || it.Photos[0].ID != "photo_a1_1" {
		t.Fatalf("public item: %+v, %v; want only the published photo", it, err)
	}
}

func searchIDs(t *testing.T, s *Store, q domain.MarketplaceQuery) []string {
	t.Helper()
	var out []string
	for page := 0; ; page++ {
		res, err := s.SearchMarketplace(context.Background(), q)
		if err != nil {
			t.Fatalf("search %+v: %v", q, err)
		}
		for _, h := range res.Rows {
			id := h.SaleID
			if h.Kind == domain.HitItem {
				id = h.ItemID
			}
			out = append(out, id)
		}
		if res.NextCursor == "" {
			return out
		}
		if q.After, err = s.Cursors().Decode(domain.CursorMarketplace, domain.PublicTenant, res.NextCursor); err != nil {
			t.Fatal(err)
		}
		if page > 50 {
			t.Fatal("search pagination does not end")
		}
	}
}

func TestSearchMarketplace_PublicHitsOnly(t *testing.T) {
	s, _ := openReads(t)
	// Everything public and for sale, in index order (sales first: they
	// were recorded first), walked one hit per page.
	all := searchIDs(t, s, domain.MarketplaceQuery{Limit: 1})
	if want := []string{saleA1, saleB1, "item_a1", "item_a2", "item_b1", "item_b2"}; !slices.Equal(all, want) {
		t.Fatalf("browse = %v; want %v", all, want)
	}
	for _, c := range []struct {
		name string
		q    domain.MarketplaceQuery
		want []string
	}{
		{"a word of a sale title", domain.MarketplaceQuery{Text: "maple"}, []string{saleA1}},
		{"city words are sale text", domain.MarketplaceQuery{Text: "Bend"}, []string{saleB1}},
		{"every word must match", domain.MarketplaceQuery{Text: "title item_a1"}, []string{"item_a1"}},
		{"no match", domain.MarketplaceQuery{Text: "harpsichord"}, nil},
		{"category prefix", domain.MarketplaceQuery{Category: "electronics.audio"}, []string{"item_a2", "item_b2"}},
		{"category stops at a dot", domain.MarketplaceQuery{Category: "electro"}, nil},
		{"city filter", domain.MarketplaceQuery{City: "portland"}, []string{saleA1, "item_a1", "item_a2"}},
		{"region and text", domain.MarketplaceQuery{Region: "OR", Text: "lamp"}, []string{"item_b1"}},
		{"dates", domain.MarketplaceQuery{From: ptrTime(at(10 * 24 * time.Hour))}, []string{saleA1, "item_a1", "item_a2"}},
		{"FTS syntax is text", domain.MarketplaceQuery{Text: `title:"x" OR NEAR(a b) *`}, nil},
	} {
		if got := searchIDs(t, s, c.q); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v; want %v", c.name, got, c.want)
		}
	}
	// The index follows every writer: a new published item and an edited
	// title are found at once; nothing reads unpublished text.
	if _, err := s.w.Exec("UPDATE items SET title = 'Harpsichord bench' WHERE id = 'item_a1'"); err != nil {
		t.Fatal(err)
	}
	if got := searchIDs(t, s, domain.MarketplaceQuery{Text: "harpsichord"}); !slices.Equal(got, []string{"item_a1"}) {
		t.Fatalf("after an edit: %v", got)
	}
	if got := searchIDs(t, s, domain.MarketplaceQuery{Text: "note"}); len(got) != 0 {
		t.Fatalf("staff notes are searchable: %v", got)
	}
	res, err := s.SearchMarketplace(context.Background(), domain.MarketplaceQuery{Text: "harpsichord"})
	if err != nil || res.Rows[0].Photo == nil || res.Rows[0].Photo.ID != "photo_a1_1" || *res.Rows[0].PriceCents != 2500 {
		t.Fatalf("hit = %+v, %v", res.Rows, err)
	}
	for _, bad := range []domain.MarketplaceQuery{
		{Text: "!!!"},
		{Text: "a b c d e f g h i"},
		{After: &domain.Keyset{Key: "x", ID: "item_a1"}},
		{From: ptrTime(at(time.Hour)), To: ptrTime(epoch)},
		{Limit: -1},
	} {
		if _, err := s.SearchMarketplace(context.Background(), bad); !errors.Is(err, domain.ErrInvalidInput) {
			t.Errorf("%+v: err = %v; want invalid input", bad, err)
		}
	}
}

func ptrTime(t time.Time) *time.Time { return &t }

func TestScopedReads_GetsAndDetails(t *testing.T) {
	ctx := context.Background()
	s, _ := openReads(t)
	p := principal(t, s, "")
	it, err := s.GetItem(ctx, p, "item_a1", domain.ItemIncludes{Photos: true, PriceHistory: true})
	if err != nil || len(it.Photos) != 2 || len(it.PriceHistory) != 2 || it.PriceHistory[1].Reason != "markdown" {
		t.Fatalf("item with extras = %+v, %v", it, err)
	}
	bare, err := s.GetItem(ctx, p, "item_a1", domain.ItemIncludes{})
	if err != nil || bare.Photos != nil || bare.PriceHistory != nil {
		t.Fatalf("extras read without being asked: %+v", bare)
	}
	for name, err := range map[string]error{
		"sale":      func() error { _, err := s.GetSale(ctx, p, saleB1); return err }(),
		"item":      func() error { _, err := s.GetItem(ctx, p, "item_b1", domain.ItemIncludes{}); return err }(),
		"candidate": func() error { _, err := s.GetCandidate(ctx, principal(t, s, credB), "candidate_csv1"); return err }(),
		"run": func() error {
			_, err := s.GetImportRun(ctx, principal(t, s, credB), domain.ImportRunDetailQuery{RunID: "run_csv1"})
			return err
		}(),
	} {
		var ref *domain.RefError
		if !errors.As(err, &ref) || !ref.CrossTenant {
			t.Errorf("foreign %s: err = %v", name, err)
		}
	}
	run, err := s.GetImportRun(ctx, p, domain.ImportRunDetailQuery{RunID: "run_csv1"})
	if err != nil || run.Run.SourceKind != "csv_upload" || run.Candidates.NeedsReview != 1 || len(run.Records) != 1 ||
		!slices.Equal(run.Records[0].CandidateIDs, []string{"candidate_csv1"}) {
		t.Fatalf("run = %+v, %v", run, err)
	}
	runs, err := s.ListImportRuns(ctx, p, domain.ImportRunQuery{})
	if err != nil || len(runs.Rows) != 1 || runs.Rows[0].SourceKind != "csv_upload" {
		t.Fatalf("runs = %+v, %v", runs, err)
	}
	batches, err := s.ListLabelBatches(ctx, p, domain.LabelBatchQuery{})
	if err != nil || len(batches.Rows) != 2 {
		t.Fatalf("batches = %+v, %v", batches, err)
	}
	if b := batches.Rows[0]; b.ID != "batch_a1" || b.LabelCount != 4 || b.BoundCount != 3 || b.PrintedAt == nil {
		t.Fatalf("batch_a1 = %+v", b)
	}
	if b := batches.Rows[1]; b.ID != "batch_a2" || b.LabelCount != 1 || b.BoundCount != 0 || b.PrintedAt != nil {
		t.Fatalf("batch_a2 = %+v", b)
	}
	drafts, err := s.ListLabelBatches(ctx, p, domain.LabelBatchQuery{Status: domain.LabelBatchDraft})
	if err != nil || len(drafts.Rows) != 1 {
		t.Fatalf("draft batches = %+v, %v", drafts, err)
	}
}

func TestStatusEvents_NewestFirstKeyset(t *testing.T) {
	ctx := context.Background()
	s, _ := openReads(t)
	p := principal(t, s, "")
	var got []string
	q := domain.StatusEventQuery{Limit: 2}
	other := rawDB(t, s.Path())
	for page := 0; ; page++ {
		res, err := s.ListStatusEvents(ctx, p, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range res.Rows {
			got = append(got, ev.ID)
		}
		if page == 0 { // a newer event committed mid-walk sorts before the cursor: never seen, nothing repeats
			if _, err := other.Exec(`INSERT INTO item_status_events (id, tenant_id, item_id, sale_id, from_status, to_status, effective_at,
				source_type, recorded_at) VALUES ('status_9', ?, 'item_a1', ?, 'published', 'on_hold', ?, 'checkout_scan', ?)`,
				tenantA, saleA1, ts(epoch), ts(epoch)); err != nil {
				t.Fatal(err)
			}
		}
		if res.NextCursor == "" {
			break
		}
		if q.After, err = s.Cursors().Decode(domain.CursorStatusEvents, p.TenantID, res.NextCursor); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{"status_5", "status_4", "status_3", "status_2", "status_1"}; !slices.Equal(got, want) {
		t.Fatalf("walk = %v; want %v", got, want)
	}
	res, err := s.ListStatusEvents(ctx, p, domain.StatusEventQuery{ItemID: "item_a1", ToStatus: domain.ItemPublished})
	if err != nil || len(res.Rows) != 1 || res.Rows[0].ID != "status_2" {
		t.Fatalf("filtered = %+v, %v", res.Rows, err)
	}
	if _, err := other.Exec("DELETE FROM item_status_events"); err == nil || !strings.Contains(err.Error(), "append-only") {
		t.Fatalf("status history delete: err = %v", err)
	}
}

func TestDispositionQueue_UnsoldItemsOfAClosedSale(t *testing.T) {
	ctx := context.Background()
	s, _ := openReads(t)
	p := principal(t, s, "")
	res, err := s.DispositionQueue(ctx, p, domain.DispositionQuery{SaleID: saleA3, Limit: 2}, domain.ItemIncludes{Photos: true})
	if err != nil || len(res.Rows) != 2 || res.NextCursor == "" {
		t.Fatalf("first page = %+v, %v", res, err)
	}
	k, err := s.Cursors().Decode(domain.CursorDisposition(saleA3), p.TenantID, res.NextCursor)
	if err != nil {
		t.Fatal(err)
	}
	rest, err := s.DispositionQueue(ctx, p, domain.DispositionQuery{SaleID: saleA3, Limit: 2, After: k}, domain.ItemIncludes{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range append(res.Rows, rest.Rows...) {
		ids = append(ids, e.ID)
		if !e.QueuedAt.Equal(at(-18*24*time.Hour)) || e.Photos == nil && len(ids) <= 2 {
			t.Errorf("entry %s = %+v", e.ID, e)
		}
	}
	if want := []string{"item_c1", "item_c3", "item_c5"}; !slices.Equal(ids, want) || rest.NextCursor != "" {
		t.Fatalf("queue = %v; want %v", ids, want)
	}
	den, err := s.DispositionQueue(ctx, p, domain.DispositionQuery{SaleID: saleA3, Room: "attic"}, domain.ItemIncludes{})
	if err != nil || len(den.Rows) != 0 {
		t.Fatalf("attic = %+v, %v", den.Rows, err) // c2 (sold) and c4 (archived) are in the attic, not in the queue
	}
	open, err := s.DispositionQueue(ctx, p, domain.DispositionQuery{SaleID: saleA1}, domain.ItemIncludes{})
	if err != nil || len(open.Rows) != 0 {
		t.Fatalf("a sale still open has no queue: %+v, %v", open.Rows, err)
	}
}

// A reset drops and recreates the search index: it answers like a fresh one.
func TestReset_RebuildsTheSearchIndex(t *testing.T) {
	s, _ := openReads(t)
	fresh, _ := openReads(t)
	if _, err := s.w.Exec("UPDATE items SET title = 'Harpsichord bench' WHERE id = 'item_a1'"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reset(context.Background(), readsDataset(), "tester"); err != nil {
		t.Fatal(err)
	}
	if d := diffKeys(withoutEvents(mustDigest(t, fresh)), withoutEvents(mustDigest(t, s))); len(d) != 0 {
		t.Fatalf("after Reset, %v differ from a fresh store", d)
	}
	if got := searchIDs(t, s, domain.MarketplaceQuery{Text: "harpsichord"}); len(got) != 0 {
		t.Fatalf("search still finds the edited title: %v", got)
	}
	if got := searchIDs(t, s, domain.MarketplaceQuery{Text: "maple"}); !slices.Equal(got, []string{saleA1}) {
		t.Fatalf("search after reset: %v", got)
	}
}
