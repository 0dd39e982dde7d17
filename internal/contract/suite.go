package contract

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/domain"
)

// Instance is one Backend over freshly seeded Dataset() data, with the
// inspection the suite needs from outside the contract.
type Instance struct {
	Backend domain.Backend
	// Second opens another, independent Backend over the same data (what a
	// second server process would be).
	Second func(t *testing.T) domain.Backend
	// Counts returns the row count of every table.
	Counts func(t *testing.T) map[string]int64
	// Events returns every recorded plugin_event, in append order.
	Events func(t *testing.T) []domain.Event
	// Admin is the human approval surface acting as the user userID of
	// tenantID: the store itself, or a live seller session of that user
	// (so the database, under the user's JWT, decides what it may do).
	Admin func(t *testing.T, tenantID, userID string) domain.ApprovalAdmin
	// Clients is the client administration surface acting as userID of
	// tenantID, like Admin.
	Clients func(t *testing.T, tenantID, userID string) domain.ClientAdmin
	// Grants is the part of Admin that issues and revokes grants, acting as
	// userID of tenantID (the approval cases need only this).
	Grants func(t *testing.T, tenantID, userID string) GrantIssuer
}

// GrantIssuer issues and revokes human approval grants.
type GrantIssuer interface {
	IssueGrant(ctx context.Context, g domain.Grant) (domain.Grant, error)
	RevokeGrant(ctx context.Context, tenantID, grantID, actorID string) (domain.Grant, error)
}

// Bookkeeping tables change on every call; "nothing changed" means every
// other table is unchanged.
var bookkeeping = []string{"plugin_events", "rate_counters", "client_activity"}

// Run runs the contract against the Backend open returns.
func Run(t *testing.T, open func(t *testing.T) Instance) {
	t.Run("ResolvePrincipal", func(t *testing.T) { testResolve(t, open(t)) })
	t.Run("ListSales", func(t *testing.T) { testListSales(t, open(t)) })
	t.Run("ListItems", func(t *testing.T) { testListItems(t, open(t)) })
	t.Run("PhotoTally", func(t *testing.T) { testPhotoTally(t, open(t)) })
	t.Run("ListCandidates", func(t *testing.T) { testListCandidates(t, open(t)) })
	t.Run("DemandSignals", func(t *testing.T) { testDemand(t, open(t)) })
	t.Run("CreateCandidate", func(t *testing.T) { testCreateCandidate(t, open(t)) })
	t.Run("AppendEvent", func(t *testing.T) { testAppendEvent(t, open(t)) })
	t.Run("ConsumeRateAcrossInstances", func(t *testing.T) { testConsumeRate(t, open(t)) })
	t.Run("CheckIdempotency", func(t *testing.T) { testCheckIdempotency(t, open(t)) })
	runReads(t, open)           // suite_reads.go: public and scoped reads
	runApprovals(t, open)       // suite_approvals.go: proposals, grants, controlled actions
	runPromotion(t, open)       // suite_promotion.go: a promoted item's photos and price, to the buyer
	runSeller(t, open)          // suite_seller.go: the human approval surface
	runClients(t, open)         // suite_clients.go: client administration
	runIngestion(t, open)       // suite_ingestion.go: CSV import, status reports, media, drafts, exports
	runActions(t, open)         // suite_actions.go: the remaining controlled actions
	runHardeningGrants(t, open) // suite_hardening_grants.go: grants bound to the requester, paid budgets
	runHardeningProposals(t, open)
	runHardeningRates(t, open)
	runHardeningQuota(t, open) // suite_hardening_quota.go: signed cursors, the candidate quota
	runHardeningLimits(t, open)
	runReviewLimits(t, open) // suite_review_limits.go: Go's default and narrowed limits, in both backends
	runReviewScope(t, open)  // suite_review_scope.go: sale scope on grants, audit trails, multi-sale proposals
	runAuthority(t, open)    // suite_authority.go: a direct call is refused where the gate would refuse it
	runCheckout(t, open)     // suite_checkout.go: sale day — checkout proposals, checkout scans, hold policies

	// suite_review.go: candidate review (reject, mark duplicate, reopen).
	runCandidateReview(t, open)
}

var ctx = context.Background()

func resolve(t *testing.T, b domain.Backend, cred string) domain.Principal {
	t.Helper()
	p, err := b.ResolvePrincipal(ctx, cred)
	if err != nil {
		t.Fatalf("ResolvePrincipal: %v", err)
	}
	return p
}

func wantRef(t *testing.T, err error, field, id string, crossTenant bool) {
	t.Helper()
	var re *domain.RefError
	if !errors.As(err, &re) || re.Field != field || re.ID != id || re.CrossTenant != crossTenant {
		t.Fatalf("err = %v, want RefError{%s %s cross_tenant=%v}", err, field, id, crossTenant)
	}
	if !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("a RefError must match ErrNotFound: %v", err)
	}
}

func wantInput(t *testing.T, err error, field string) {
	t.Helper()
	var ie *domain.InputError
	if !errors.As(err, &ie) || ie.Field != field {
		t.Fatalf("err = %v, want InputError on %s", err, field)
	}
}

func testResolve(t *testing.T, in Instance) {
	b := in.Backend
	p := resolve(t, b, CredOwner)
	if p.Client.ID != fixtures.DemoClientID || p.TenantID != fixtures.DemoTenantID || p.ActorID != fixtures.DemoUserID ||
		p.MembershipID != fixtures.DemoMembershipID || p.Role != domain.RoleOwner || p.ActorType != "seller" ||
		p.ClientStatus != domain.ClientActive || p.Public || p.SaleScoped {
		t.Fatalf("owner principal = %+v", p)
	}
	if !slices.Contains(p.AllowedToolGroups, "candidate_write") || p.Client.Name == "" || p.Client.Type == "" {
		t.Fatalf("owner client = %+v groups %v", p.Client, p.AllowedToolGroups)
	}
	if o := resolve(t, b, CredOther); o.TenantID != fixtures.OtherTenantID || o.Client.ID != fixtures.OtherClientID {
		t.Fatalf("other tenant's principal = %+v (a sha256:-prefixed hash must resolve)", o)
	}
	s := resolve(t, b, CredScoped)
	if !s.SaleScoped || !slices.Equal(s.AssignedSaleIDs, []string{fixtures.LiveSaleID}) || s.Role != domain.RoleCataloger {
		t.Fatalf("scoped principal = %+v", s)
	}
	for _, c := range []struct {
		name, cred string
		want       error
	}{
		{"suspended", CredSuspended, domain.ErrClientSuspended},
		{"revoked", CredRevoked, domain.ErrClientNotRegistered},
		{"unknown", CredUnknown, domain.ErrClientNotRegistered},
	} {
		if _, err := b.ResolvePrincipal(ctx, c.cred); !errors.Is(err, c.want) {
			t.Errorf("%s credential: err = %v, want %v", c.name, err, c.want)
		}
	}
	anon, err := b.ResolvePrincipal(ctx, "")
	switch b.Mode() {
	case domain.ModeLive:
		if err != nil || !anon.Public || anon.TenantID != "" || anon.Client.ID != "" {
			t.Fatalf("live: empty credential = %+v, %v; want the anonymous principal", anon, err)
		}
	default:
		if err != nil || anon.Client.ID != fixtures.DemoClientID {
			t.Fatalf("mock: empty credential = %+v, %v; want the demo client", anon, err)
		}
	}
}

// cursorFn opens a list's cursor the way the list tool does.
type cursorFn func(kind, cursor string) (*domain.Keyset, error)

// cursorsOf opens cursors with b for p (the zero Principal for public lists).
func cursorsOf(b domain.Backend, p domain.Principal) cursorFn {
	return func(kind, cursor string) (*domain.Keyset, error) {
		return b.OpenCursor(context.Background(), p, kind, cursor)
	}
}

// walk pages through a list with page size n and returns every row's id.
func walk[T any](t *testing.T, n int, list func(after *domain.Keyset, limit int) (domain.Page[T], error), kind string, open cursorFn, id func(T) string) []string {
	t.Helper()
	var (
		ids   []string
		after *domain.Keyset
	)
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatal("pagination does not end")
		}
		page, err := list(after, n)
		if err != nil {
			t.Fatalf("page %d: %v", pages, err)
		}
		if len(page.Rows) > n {
			t.Fatalf("page %d has %d rows, limit %d", pages, len(page.Rows), n)
		}
		for _, r := range page.Rows {
			ids = append(ids, id(r))
		}
		if page.NextCursor == "" {
			return ids
		}
		if len(page.Rows) != n {
			t.Fatalf("page %d: a short page (%d) with a next cursor", pages, len(page.Rows))
		}
		if after, err = open(kind, page.NextCursor); err != nil {
			t.Fatalf("cursor of page %d does not decode for its list: %v", pages, err)
		}
	}
}

func testListSales(t *testing.T, in Instance) {
	b, ds := in.Backend, Dataset()
	p := resolve(t, b, CredOwner)
	var want []domain.Sale
	for _, s := range ds.Sales {
		if s.TenantID == fixtures.DemoTenantID {
			want = append(want, s)
		}
	}
	slices.SortFunc(want, func(x, y domain.Sale) int { return cmp.Or(x.StartsAt.Compare(y.StartsAt), cmp.Compare(x.ID, y.ID)) })
	wantIDs := make([]string, len(want))
	for i, s := range want {
		wantIDs[i] = s.ID
	}
	got := walk(t, 1, func(after *domain.Keyset, n int) (domain.Page[domain.Sale], error) {
		return b.ListSales(ctx, p, domain.SaleQuery{Limit: n, After: after})
	}, "sales", cursorsOf(b, p), func(s domain.Sale) string { return s.ID })
	if !slices.Equal(got, wantIDs) {
		t.Fatalf("sales walked one by one = %v, want %v", got, wantIDs)
	}
	page, err := b.ListSales(ctx, p, domain.SaleQuery{})
	if err != nil || len(page.Rows) != len(want) || page.NextCursor != "" {
		t.Fatalf("one page = %d rows, cursor %q, %v", len(page.Rows), page.NextCursor, err)
	}
	first := page.Rows[0]
	if first.TenantID != want[0].TenantID || first.Title != want[0].Title || !first.StartsAt.Equal(want[0].StartsAt) ||
		first.AddressPolicy != want[0].AddressPolicy || first.Version != max(want[0].Version, 1) {
		t.Fatalf("sale row = %+v, want %+v", first, want[0])
	}
	live, err := b.ListSales(ctx, p, domain.SaleQuery{Status: domain.SaleLive})
	if err != nil || len(live.Rows) != 1 || live.Rows[0].ID != fixtures.LiveSaleID {
		t.Fatalf("status filter = %+v, %v", live.Rows, err)
	}
	_, err = b.ListSales(ctx, p, domain.SaleQuery{Status: "bogus"})
	wantInput(t, err, "status")
	_, err = b.ListSales(ctx, p, domain.SaleQuery{Limit: -1})
	wantInput(t, err, "limit")
	_, err = b.ListSales(ctx, p, domain.SaleQuery{After: &domain.Keyset{Key: "yesterday", ID: "sale_1"}})
	wantInput(t, err, "cursor")
	scoped, err := b.ListSales(ctx, resolve(t, b, CredScoped), domain.SaleQuery{})
	if err != nil || len(scoped.Rows) != 1 || scoped.Rows[0].ID != fixtures.LiveSaleID {
		t.Fatalf("a sale-scoped member lists %+v, %v; want only its assigned sale", scoped.Rows, err)
	}
	if _, err := b.ListSales(ctx, domain.Anonymous(), domain.SaleQuery{}); !errors.Is(err, domain.ErrAuthRequired) {
		t.Fatalf("anonymous list: %v, want ErrAuthRequired", err)
	}
}

func testListItems(t *testing.T, in Instance) {
	b, ds := in.Backend, Dataset()
	p := resolve(t, b, CredOwner)
	var want []domain.Item
	for _, it := range ds.Items {
		if it.TenantID == fixtures.DemoTenantID {
			want = append(want, it)
		}
	}
	slices.SortFunc(want, func(x, y domain.Item) int { return cmp.Or(x.CreatedAt.Compare(y.CreatedAt), cmp.Compare(x.ID, y.ID)) })
	var wantIDs []string
	for _, it := range want {
		wantIDs = append(wantIDs, it.ID)
	}
	got := walk(t, 37, func(after *domain.Keyset, n int) (domain.Page[domain.Item], error) {
		return b.ListItems(ctx, p, domain.ItemQuery{Limit: n, After: after})
	}, "items", cursorsOf(b, p), func(it domain.Item) string { return it.ID })
	if !slices.Equal(got, wantIDs) {
		t.Fatalf("walked %d items, want %d in (created_at, id) order", len(got), len(wantIDs))
	}
	// The first page carries every field and every photo, in position order.
	page, err := b.ListItems(ctx, p, domain.ItemQuery{Limit: 100})
	if err != nil || page.NextCursor == "" {
		t.Fatalf("first page: %v, cursor %q", err, page.NextCursor)
	}
	for i, it := range page.Rows {
		w := want[i]
		if it.Title != w.Title || it.Status != w.Status || it.Category != w.Category || it.Room != w.Room ||
			!eqPtr(it.PriceCents, w.PriceCents) || !eqPtr(it.InternalPriceGuidanceCents, w.InternalPriceGuidanceCents) ||
			it.AppraisalFlag != w.AppraisalFlag || it.StaffNotes != w.StaffNotes || it.QRCode != w.QRCode ||
			it.Version != max(w.Version, 1) || !it.CreatedAt.Equal(w.CreatedAt) || it.CreatedAt.Location() != time.UTC {
			t.Fatalf("item %s = %+v, want %+v", it.ID, it, w)
		}
		wp := slices.Clone(w.Photos)
		slices.SortFunc(wp, func(x, y domain.Photo) int {
			return cmp.Or(cmp.Compare(x.Position, y.Position), cmp.Compare(x.ID, y.ID))
		})
		if it.Photos == nil || len(it.Photos) != len(wp) {
			t.Fatalf("item %s photos = %v, want %d", it.ID, it.Photos, len(wp))
		}
		for k := range wp {
			if it.Photos[k].ID != wp[k].ID || it.Photos[k].Published != wp[k].Published || it.Photos[k].StorageKey != wp[k].StorageKey {
				t.Fatalf("item %s photo %d = %+v, want %+v", it.ID, k, it.Photos[k], wp[k])
			}
		}
	}
	// Filters: sale, category prefix (a path, not a string prefix), status.
	bySale, err := b.ListItems(ctx, p, domain.ItemQuery{SaleID: fixtures.LiveSaleID, Limit: 100})
	if err != nil || len(bySale.Rows) == 0 {
		t.Fatalf("by sale: %d rows, %v", len(bySale.Rows), err)
	}
	for _, it := range bySale.Rows {
		if it.SaleID != fixtures.LiveSaleID {
			t.Fatalf("sale filter returned %s of %s", it.ID, it.SaleID)
		}
	}
	cat := want[0].Category
	if i := strings.Index(cat, "."); i > 0 {
		cat = cat[:i]
	}
	byCat, err := b.ListItems(ctx, p, domain.ItemQuery{Category: cat, Limit: 100})
	if err != nil || len(byCat.Rows) == 0 {
		t.Fatalf("by category %s: %v", cat, err)
	}
	for _, it := range byCat.Rows {
		if it.Category != cat && !strings.HasPrefix(it.Category, cat+".") {
			t.Fatalf("category %s matched %s", cat, it.Category)
		}
	}
	// A sale of another tenant fails exactly like a missing one.
	_, err = b.ListItems(ctx, p, domain.ItemQuery{SaleID: fixtures.OtherPublishedSaleID})
	wantRef(t, err, "sale_id", fixtures.OtherPublishedSaleID, true)
	_, err = b.ListItems(ctx, p, domain.ItemQuery{SaleID: "sale_404"})
	wantRef(t, err, "sale_id", "sale_404", false)
	_, err = b.ListItems(ctx, resolve(t, b, CredScoped), domain.ItemQuery{SaleID: fixtures.PublishedSaleID})
	if !errors.Is(err, domain.ErrSaleAssignment) {
		t.Fatalf("scoped member on an unassigned sale: %v, want ErrSaleAssignment", err)
	}
	// Details: price history for a pricer, in (changed_at, id) order.
	pr := resolve(t, b, CredPricer)
	det, err := b.ListItemDetails(ctx, pr, domain.ItemQuery{Limit: 100}, domain.ItemIncludes{PriceHistory: true})
	if err != nil {
		t.Fatalf("ListItemDetails: %v", err)
	}
	history := map[string][]domain.PriceChange{}
	for _, pc := range ds.PriceChanges {
		history[pc.ItemID] = append(history[pc.ItemID], pc)
	}
	seen := 0
	for _, d := range det.Rows {
		if d.Photos != nil {
			t.Fatalf("item %s: photos read although not asked for", d.ID)
		}
		w := history[d.ID]
		slices.SortFunc(w, func(x, y domain.PriceChange) int {
			return cmp.Or(x.ChangedAt.Compare(y.ChangedAt), cmp.Compare(x.ID, y.ID))
		})
		if d.PriceHistory == nil || len(d.PriceHistory) != len(w) {
			t.Fatalf("item %s price history = %v, want %d", d.ID, d.PriceHistory, len(w))
		}
		for k := range w {
			if d.PriceHistory[k].ID != w[k].ID || !eqPtr(d.PriceHistory[k].PriceCents, w[k].PriceCents) {
				t.Fatalf("item %s history %d = %+v, want %+v", d.ID, k, d.PriceHistory[k], w[k])
			}
		}
		seen += len(w)
	}
	if seen == 0 {
		t.Fatal("no price history on the first page: the case proves nothing")
	}
}

// testPhotoTally: a tally (ItemIncludes.PhotoTally, what a list row shows)
// counts exactly the photos the Photos include reads, and reads none.
func testPhotoTally(t *testing.T, in Instance) {
	ctx := context.Background()
	b := in.Backend
	p := resolve(t, b, CredOwner)
	q := domain.ItemQuery{Limit: 100}
	full, err := b.ListItemDetails(ctx, p, q, domain.ItemIncludes{Photos: true})
	if err != nil {
		t.Fatalf("ListItemDetails photos: %v", err)
	}
	tallied, err := b.ListItemDetails(ctx, p, q, domain.ItemIncludes{PhotoTally: true})
	if err != nil {
		t.Fatalf("ListItemDetails tally: %v", err)
	}
	if len(full.Rows) == 0 || len(full.Rows) != len(tallied.Rows) {
		t.Fatalf("%d rows with photos, %d tallied", len(full.Rows), len(tallied.Rows))
	}
	var some, mixed bool
	for i, d := range tallied.Rows {
		f := full.Rows[i]
		want := domain.TallyPhotos(f.Photos)
		switch {
		case d.ID != f.ID:
			t.Fatalf("row %d: %s tallied, %s read", i, d.ID, f.ID)
		case d.Photos != nil:
			t.Fatalf("item %s: photos read although only a tally was asked for", d.ID)
		case d.PhotoTally == nil || *d.PhotoTally != want:
			t.Fatalf("item %s: tally %+v, want %+v", d.ID, d.PhotoTally, want)
		case f.PhotoTally != nil:
			t.Fatalf("item %s: a tally although none was asked for", d.ID)
		case !slices.Equal(domain.TalliedReadiness(d.Item, *d.PhotoTally), domain.PublicationReadiness(f.Item)):
			t.Fatalf("item %s: tallied readiness %v, read %v", d.ID, domain.TalliedReadiness(d.Item, *d.PhotoTally), domain.PublicationReadiness(f.Item))
		}
		some = some || want.Published > 0
		mixed = mixed || (want.Published > 0 && want.Published < want.Count)
	}
	if !some || !mixed {
		t.Fatalf("the page lacks an item with a published photo (%v) or with both kinds (%v): the case proves less", some, mixed)
	}
	// The disposition queue's rows are tallied the same way.
	dq, err := b.DispositionQueue(ctx, p, domain.DispositionQuery{SaleID: fixtures.ClosedSaleID, Limit: 100}, domain.ItemIncludes{PhotoTally: true})
	if err != nil {
		t.Fatalf("DispositionQueue tally: %v", err)
	}
	for _, e := range dq.Rows {
		if e.Photos != nil || e.PhotoTally == nil {
			t.Fatalf("disposition entry %s: photos %v, tally %v", e.ID, e.Photos, e.PhotoTally)
		}
	}
}

func eqPtr[T comparable](a, b *T) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func testListCandidates(t *testing.T, in Instance) {
	b, ds := in.Backend, Dataset()
	p := resolve(t, b, CredOwner)
	var want []domain.Candidate
	for _, c := range ds.Candidates {
		if c.TenantID == fixtures.DemoTenantID {
			want = append(want, c)
		}
	}
	slices.SortFunc(want, func(x, y domain.Candidate) int {
		return cmp.Or(x.CreatedAt.Compare(y.CreatedAt), cmp.Compare(x.ID, y.ID))
	})
	var wantIDs []string
	for _, c := range want {
		wantIDs = append(wantIDs, c.ID)
	}
	got := walk(t, 2, func(after *domain.Keyset, n int) (domain.Page[domain.Candidate], error) {
		return b.ListCandidates(ctx, p, domain.CandidateQuery{Limit: n, After: after})
	}, "candidates", cursorsOf(b, p), func(c domain.Candidate) string { return c.ID })
	if !slices.Equal(got, wantIDs) {
		t.Fatalf("candidates = %v, want %v", got, wantIDs)
	}
	one, err := b.ListCandidates(ctx, p, domain.CandidateQuery{SaleID: fixtures.LiveSaleID})
	if err != nil || len(one.Rows) == 0 {
		t.Fatalf("by sale: %v %v", one.Rows, err)
	}
	for _, c := range one.Rows {
		w := want[slices.Index(wantIDs, c.ID)]
		if c.SaleID != fixtures.LiveSaleID || c.Title != w.Title || c.ReviewStatus != w.ReviewStatus ||
			c.ImportRunID != w.ImportRunID || c.SourceRecordID != w.SourceRecordID || c.Version != max(w.Version, 1) {
			t.Fatalf("candidate = %+v, want %+v", c, w)
		}
	}
	_, err = b.ListCandidates(ctx, p, domain.CandidateQuery{SaleID: fixtures.OtherDraftSaleID})
	wantRef(t, err, "sale_id", fixtures.OtherDraftSaleID, true)
	_, err = b.ListCandidates(ctx, p, domain.CandidateQuery{ReviewStatus: "maybe"})
	wantInput(t, err, "review_status")
	// The other tenant sees only its own.
	o, err := b.ListCandidates(ctx, resolve(t, b, CredOther), domain.CandidateQuery{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range o.Rows {
		if c.TenantID != fixtures.OtherTenantID {
			t.Fatalf("tenant %s listed candidate %s of %s", fixtures.OtherTenantID, c.ID, c.TenantID)
		}
	}
}

func testDemand(t *testing.T, in Instance) {
	b, ds := in.Backend, Dataset()
	p := resolve(t, b, CredOwner)
	want := 0
	for _, d := range ds.DemandSignals {
		if d.TenantID == fixtures.DemoTenantID {
			want++
		}
	}
	all, err := b.DemandSignals(ctx, p, domain.DemandQuery{})
	if err != nil || len(all) != want {
		t.Fatalf("signals = %d, want %d, %v", len(all), want, err)
	}
	if !slices.IsSortedFunc(all, func(x, y domain.DemandSignal) int {
		return cmp.Or(cmp.Compare(x.SaleID, y.SaleID), cmp.Compare(x.Category, y.Category), x.WindowStart.Compare(y.WindowStart))
	}) {
		t.Fatal("signals are not in (sale, category, window) order")
	}
	cat := all[len(all)-1].Category
	if i := strings.Index(cat, "."); i > 0 {
		cat = cat[:i]
	}
	some, err := b.DemandSignals(ctx, p, domain.DemandQuery{SaleID: fixtures.LiveSaleID, Category: cat})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range some {
		if d.SaleID != fixtures.LiveSaleID || (d.Category != cat && !strings.HasPrefix(d.Category, cat+".")) {
			t.Fatalf("filter matched %+v", d)
		}
	}
	_, err = b.DemandSignals(ctx, p, domain.DemandQuery{SaleID: fixtures.OtherPublishedSaleID})
	wantRef(t, err, "sale_id", fixtures.OtherPublishedSaleID, true)
	scoped, err := b.DemandSignals(ctx, resolve(t, b, CredScoped), domain.DemandQuery{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range scoped {
		if d.SaleID != fixtures.LiveSaleID {
			t.Fatalf("a sale-scoped member sees %+v", d)
		}
	}
}

// meta builds the write metadata the gate would send.
func meta(p domain.Principal, key, fingerprint, eventID string) domain.WriteMeta {
	return domain.WriteMeta{
		Idem: domain.IdempotencyKey{TenantID: p.TenantID, ClientID: p.Client.ID, Tool: "trove_create_candidate", ToolMajor: 1,
			Key: key, Fingerprint: fingerprint},
		Event: domain.Event{ID: eventID, TenantID: p.TenantID, CorrelationID: "corr_" + key, RequestID: "req_" + key,
			ServerRequestID: "mcp_req_" + key, Mode: domain.ModeLive, Client: p.Client,
			Tool: domain.ToolRef{Name: "trove_create_candidate", Version: "1.0.0"}, Actor: domain.ActorRef{ID: p.ActorID, Type: p.ActorType},
			Action: "mcp_tool_called", OccurredAt: fixtures.Epoch},
		Started: time.Now(),
	}
}

func changed(before, after map[string]int64) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(after)) {
		if !slices.Contains(bookkeeping, k) && before[k] != after[k] {
			out = append(out, fmt.Sprintf("%s %d→%d", k, before[k], after[k]))
		}
	}
	return out
}

func testCreateCandidate(t *testing.T, in Instance) {
	b := in.Backend
	p := resolve(t, b, CredOwner)
	price := int64(4500)
	nc := domain.NewCandidate{SaleID: fixtures.PublishedSaleID, Title: "Walnut side table", Category: "furniture.tables",
		Room: "den", SuppliedPriceCents: &price}
	before := in.Counts(t)
	res, out, err := b.CreateCandidate(ctx, p, meta(p, "key-1", "sha256:aa", "event_c1"), nc)
	if err != nil {
		t.Fatalf("CreateCandidate: %v", err)
	}
	after := in.Counts(t)
	if !domain.ValidID(domain.PrefixCandidate, res.CandidateID) || !domain.ValidID(domain.PrefixRun, res.ImportRunID) ||
		!domain.ValidID(domain.PrefixRecord, res.SourceRecordID) || !domain.ValidID(domain.PrefixSource, res.SourceDescriptorID) ||
		res.ReviewStatus != domain.ReviewNeedsReview || res.CanonicalItemCreated || res.SaleID != nc.SaleID {
		t.Fatalf("result = %+v", res)
	}
	if out.Replayed || out.OriginalEventID != "event_c1" || !slices.Equal(out.Related.CandidateIDs, []string{res.CandidateID}) ||
		!slices.Equal(out.Related.SourceImportRunIDs, []string{res.ImportRunID}) || out.Related.ItemIDs == nil {
		t.Fatalf("outcome = %+v", out)
	}
	for table, n := range map[string]int64{"import_runs": 1, "source_records": 1, "inventory_candidates": 1,
		"idempotency_keys": 1, "plugin_events": 1, "items": 0, "item_photos": 0} {
		if d := after[table] - before[table]; d != n {
			t.Errorf("%s grew by %d, want %d", table, d, n)
		}
	}
	events := in.Events(t)
	ev := events[len(events)-1]
	if ev.ID != "event_c1" || ev.Outcome != domain.OutcomeSuccess || ev.TenantID != p.TenantID ||
		!slices.Equal(ev.Related.CandidateIDs, []string{res.CandidateID}) || ev.Tool.Name != "trove_create_candidate" {
		t.Fatalf("write event = %+v", ev)
	}
	list, err := b.ListCandidates(ctx, p, domain.CandidateQuery{SaleID: nc.SaleID, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(list.Rows, func(c domain.Candidate) bool { return c.ID == res.CandidateID })
	if i < 0 {
		t.Fatal("the new candidate is not listed")
	}
	c := list.Rows[i]
	if c.Title != nc.Title || c.Quantity != 1 || !eqPtr(c.SuppliedPriceCents, &price) || c.Version != 1 ||
		c.CreatedByClientID != p.Client.ID || c.Kind != domain.CandidateNewItem || c.ImportRunID != res.ImportRunID {
		t.Fatalf("stored candidate = %+v", c)
	}

	// Replay: same key, same input → the original result, nothing written.
	res2, out2, err := b.CreateCandidate(ctx, p, meta(p, "key-1", "sha256:aa", "event_c2"), nc)
	if err != nil || res2 != res || !out2.Replayed || out2.OriginalEventID != "event_c1" {
		t.Fatalf("replay = %+v %+v %v", res2, out2, err)
	}
	if d := changed(after, in.Counts(t)); len(d) > 0 {
		t.Fatalf("a replay wrote: %v", d)
	}
	// Conflict: same key, other input → refused, nothing written.
	if _, _, err := b.CreateCandidate(ctx, p, meta(p, "key-1", "sha256:bb", "event_c3"), nc); !errors.Is(err, domain.ErrIdempotencyConflict) {
		t.Fatalf("conflict: %v", err)
	}
	if d := changed(after, in.Counts(t)); len(d) > 0 {
		t.Fatalf("a conflict wrote: %v", d)
	}
	// Another tenant's sale: refused like a missing one, nothing written.
	_, _, err = b.CreateCandidate(ctx, p, meta(p, "key-2", "sha256:cc", "event_c4"), domain.NewCandidate{SaleID: fixtures.OtherPublishedSaleID, Title: "x"})
	wantRef(t, err, "sale_id", fixtures.OtherPublishedSaleID, true)
	_, _, err = b.CreateCandidate(ctx, p, meta(p, "key-3", "sha256:dd", "event_c5"), domain.NewCandidate{SaleID: nc.SaleID, Title: " "})
	wantInput(t, err, "title")
	// §4.3: a sale-scoped member writes only into its assigned sales.
	sc := resolve(t, b, CredScoped)
	_, _, err = b.CreateCandidate(ctx, sc, meta(sc, "key-s1", "sha256:s1", "event_c8"), domain.NewCandidate{SaleID: fixtures.PublishedSaleID, Title: "Planted"})
	if !errors.Is(err, domain.ErrSaleAssignment) {
		t.Fatalf("a scoped member's candidate in an unassigned sale: %v", err)
	}
	if d := changed(after, in.Counts(t)); len(d) > 0 {
		t.Fatalf("a refused write wrote: %v", d)
	}
	if _, _, err := b.CreateCandidate(ctx, sc, meta(sc, "key-s2", "sha256:s2", "event_c9"), domain.NewCandidate{SaleID: fixtures.LiveSaleID, Title: "Assigned"}); err != nil {
		t.Fatalf("a scoped member's candidate in its sale: %v", err)
	}
	after = in.Counts(t)
	// A second candidate of the client reuses its source descriptor.
	res3, _, err := b.CreateCandidate(ctx, p, meta(p, "key-4", "sha256:ee", "event_c6"), domain.NewCandidate{SaleID: nc.SaleID, Title: "Lamp", Quantity: 2})
	if err != nil || res3.SourceDescriptorID != res.SourceDescriptorID || res3.CandidateID == res.CandidateID {
		t.Fatalf("second candidate = %+v, %v", res3, err)
	}
	// The same key is the client's own: another client may use it.
	o := resolve(t, b, CredOther)
	if _, out, err := b.CreateCandidate(ctx, o, meta(o, "key-1", "sha256:ff", "event_c7"), domain.NewCandidate{SaleID: fixtures.OtherPublishedSaleID, Title: "Crate"}); err != nil || out.Replayed {
		t.Fatalf("other client's key-1: %+v %v", out, err)
	}
}

func testAppendEvent(t *testing.T, in Instance) {
	b := in.Backend
	p := resolve(t, b, CredOwner)
	ev := domain.Event{ID: "event_blocked_1", TenantID: p.TenantID, CorrelationID: "corr_b1", ServerRequestID: "mcp_req_b1",
		Mode: b.Mode(), Client: p.Client, Tool: domain.ToolRef{Name: "trove_list_items", Version: "1.0.0"},
		Actor: domain.ActorRef{ID: p.ActorID, Type: p.ActorType}, Action: "mcp_tool_called", Outcome: domain.OutcomeBlocked,
		ErrorCode: "invalid_reference", AuditCode: "cross_tenant_reference", OccurredAt: fixtures.Epoch}
	before := in.Counts(t)
	if err := b.AppendEvent(ctx, ev); err != nil {
		t.Fatalf("AppendEvent: %v", err)
	}
	if d := in.Counts(t)["plugin_events"] - before["plugin_events"]; d != 1 {
		t.Fatalf("plugin_events grew by %d", d)
	}
	events := in.Events(t)
	got := events[len(events)-1]
	if got.ID != ev.ID || got.Outcome != ev.Outcome || got.AuditCode != ev.AuditCode || got.ErrorCode != ev.ErrorCode ||
		got.Tool.Name != ev.Tool.Name || !got.OccurredAt.Equal(ev.OccurredAt) || got.Related.CandidateIDs == nil {
		t.Fatalf("recorded %+v", got)
	}
	if err := b.AppendEvent(ctx, domain.Event{ID: "event_bad", Outcome: "maybe"}); !errors.Is(err, domain.ErrInvalidInput) {
		t.Fatalf("an event with an unknown outcome: %v", err)
	}
}

func testConsumeRate(t *testing.T, in Instance) {
	if _, err := in.Backend.ConsumeRate(ctx, resolve(t, in.Backend, CredOwner), "bogus"); !errors.Is(err, domain.ErrInvalidInput) {
		t.Fatalf("unknown class: %v", err)
	}
	second := in.Second(t)
	// Windows are wall-clock minutes on a live database: a case that
	// straddles a minute boundary is repeated with a fresh client.
	for _, cred := range []string{CredOwner, CredPricer, CredScoped} {
		if rateCase(t, in.Backend, second, cred) {
			return
		}
	}
	t.Fatal("three rate cases in a row straddled a minute boundary")
}

// rateCase spends a client's controlled_actions limit (10) alternating two
// instances and reports false if the window rolled over meanwhile.
func rateCase(t *testing.T, a, b domain.Backend, cred string) bool {
	pa, pb := resolve(t, a, cred), resolve(t, b, cred)
	last := 61
	for i := 0; i < 11; i++ {
		be, p := a, pa
		if i%2 == 1 {
			be, p = b, pb
		}
		d, err := be.ConsumeRate(ctx, p, domain.LimitControlledActions)
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if d.RetryAfterSeconds > last {
			return false
		}
		last = d.RetryAfterSeconds
		if d.Limit != 10 || d.Class != domain.LimitControlledActions || d.RetryAfterSeconds < 1 || d.RetryAfterSeconds > 60 {
			t.Fatalf("call %d decision = %+v", i, d)
		}
		if want := i < 10; d.Allowed != want {
			t.Fatalf("call %d allowed = %v, want %v (the two instances must share one count)", i, d.Allowed, want)
		}
	}
	return true
}

func testCheckIdempotency(t *testing.T, in Instance) {
	b := in.Backend
	p := resolve(t, b, CredOwner)
	k := domain.IdempotencyKey{TenantID: p.TenantID, ClientID: p.Client.ID, Tool: "trove_create_candidate", ToolMajor: 1, Key: "idem-1", Fingerprint: "sha256:11"}
	if s, err := b.CheckIdempotency(ctx, k); err != nil || s != domain.IdemUnused {
		t.Fatalf("before: %v %v", s, err)
	}
	if _, _, err := b.CreateCandidate(ctx, p, meta(p, k.Key, k.Fingerprint, "event_i1"), domain.NewCandidate{SaleID: fixtures.PublishedSaleID, Title: "Clock"}); err != nil {
		t.Fatal(err)
	}
	if s, err := b.CheckIdempotency(ctx, k); err != nil || s != domain.IdemReplay {
		t.Fatalf("same input: %v %v", s, err)
	}
	other := k
	other.Fingerprint = "sha256:22"
	if s, err := b.CheckIdempotency(ctx, other); err != nil || s != domain.IdemConflict {
		t.Fatalf("other input: %v %v", s, err)
	}
	other = k
	other.Key = "idem-2"
	if s, err := b.CheckIdempotency(ctx, other); err != nil || s != domain.IdemUnused {
		t.Fatalf("other key: %v %v", s, err)
	}
	other = k
	other.ToolMajor = 2
	if s, err := b.CheckIdempotency(ctx, other); err != nil || s != domain.IdemUnused {
		t.Fatalf("other major: %v %v", s, err)
	}
}
