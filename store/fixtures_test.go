package store_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/store"
)

// The real fixture dataset seeds cleanly and the store answers for it as the
// gate will see it in mock mode. This uses only the exported API.
func TestFixtures_FullDatasetSeedsAndServes(t *testing.T) {
	ctx := context.Background()
	ds := fixtures.Dataset()
	s, err := store.Open(ctx, filepath.Join(t.TempDir(), "trovesnap.db"),
		store.Options{Clock: domain.NewFixedClock(fixtures.Epoch), IDs: domain.NewSeqIDs(), Seed: &ds})
	if err != nil {
		t.Fatalf("Open with fixtures: %v", err)
	}
	defer func() { _ = s.Close() }()

	counts, err := s.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	photos := 0
	for _, it := range ds.Items {
		photos += len(it.Photos)
	}
	for table, want := range map[string]int{
		"tenants": len(ds.Tenants), "users": len(ds.Users), "memberships": len(ds.Memberships),
		"mcp_clients": len(ds.Clients), "estate_sales": len(ds.Sales), "items": len(ds.Items), "item_photos": photos,
		"source_descriptors": len(ds.SourceDescriptors), "import_runs": len(ds.ImportRuns),
		"source_records": len(ds.SourceRecords), "inventory_candidates": len(ds.Candidates),
		"demand_signals": len(ds.DemandSignals), "plugin_events": 0,
	} {
		if counts[table] != int64(want) {
			t.Errorf("%s: %d rows; dataset has %d", table, counts[table], want)
		}
	}

	p, err := s.ResolvePrincipal(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if p.TenantID != fixtures.DemoTenantID || p.Client.ID != fixtures.DemoClientID || p.ActorID != fixtures.DemoUserID ||
		p.MembershipID != fixtures.DemoMembershipID || p.Role != domain.RoleOwner {
		t.Fatalf("demo principal = %+v", p)
	}

	// Walking every page of the demo tenant's items yields each of its items once.
	want := 0
	for _, it := range ds.Items {
		if it.TenantID == fixtures.DemoTenantID {
			want++
		}
	}
	seen := map[string]bool{}
	q := domain.ItemQuery{Limit: domain.MaxPageSize}
	for {
		page, err := s.ListItems(ctx, p, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Rows {
			if seen[it.ID] || it.TenantID != fixtures.DemoTenantID {
				t.Fatalf("item %s repeated or foreign", it.ID)
			}
			seen[it.ID] = true
		}
		if page.NextCursor == "" {
			break
		}
		if q.After, err = s.Cursors().Decode(store.CursorItems, p.TenantID, page.NextCursor); err != nil {
			t.Fatal(err)
		}
	}
	if len(seen) != want {
		t.Fatalf("walked %d items; the demo tenant has %d", len(seen), want)
	}

	seeded, err := s.Digest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w := domain.WriteMeta{
		Idem:  domain.IdempotencyKey{TenantID: p.TenantID, ClientID: p.Client.ID, Tool: "create_inventory_candidate", ToolMajor: 1, Key: "k1", Fingerprint: "fp"},
		Event: domain.Event{ID: "event_fx1", TenantID: p.TenantID, Tool: domain.ToolRef{Name: "create_inventory_candidate", Version: "1.0.0"}},
	}
	if _, _, err := s.CreateCandidate(ctx, p, w, domain.NewCandidate{SaleID: fixtures.PublishedSaleID, Title: "Walnut side table"}); err != nil {
		t.Fatal(err)
	}
	w.Idem.Key, w.Event.ID = "k2", "event_fx2"
	_, _, err = s.CreateCandidate(ctx, p, w, domain.NewCandidate{SaleID: fixtures.OtherPublishedSaleID, Title: "x"})
	var ref *domain.RefError
	if !errors.As(err, &ref) || !ref.CrossTenant {
		t.Fatalf("other tenant's sale: err = %v; want a cross-tenant RefError", err)
	}

	if _, err := s.Reset(ctx, fixtures.Dataset(), "tester"); err != nil {
		t.Fatal(err)
	}
	after, err := s.Digest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for table, sum := range seeded {
		if table != "plugin_events" && after[table] != sum { // the log now holds the reset's own event
			t.Errorf("%s differs from the seeded state after Reset", table)
		}
	}
}
