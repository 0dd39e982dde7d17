package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// A small hand-built dataset: two tenants, so every tenant rule has a
// foreign row to refuse, and few enough rows that tests can assert exact
// pages.
var epoch = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

const (
	tenantA    = "tenant_a"
	tenantB    = "tenant_b"
	userAlice  = "user_alice" // owner of A, actor of the demo client
	userCarol  = "user_carol" // pricer of A, actor of clientA2
	userBob    = "user_bob"   // manager of B
	clientDemo = "mcp_client_demo"
	clientA2   = "mcp_client_a2"
	clientB    = "mcp_client_b"
	saleA1     = "sale_a1" // published, two weeks out
	saleA2     = "sale_a2" // draft, later
	saleB1     = "sale_b1"

	credA2 = "tsk_alpha2"
	credB  = "tsk_bravo"
)

func i64(n int64) *int64 { return &n }

func at(d time.Duration) time.Time { return epoch.Add(d) }

func testDataset() domain.Dataset {
	reveal := at(12 * 24 * time.Hour)
	ds := domain.Dataset{
		Tenants: []domain.Tenant{{ID: tenantA, Name: "Acme Estate Sales"}, {ID: tenantB, Name: "Birch Liquidators"}},
		Users: []domain.User{
			{ID: userAlice, DisplayName: "Alice", Email: "alice@acme.test"},
			{ID: userCarol, DisplayName: "Carol", Email: "carol@acme.test"},
			{ID: userBob, DisplayName: "Bob", Email: "bob@birch.test"},
		},
		Memberships: []domain.Membership{
			{ID: "membership_a1", TenantID: tenantA, UserID: userAlice, Role: domain.RoleOwner},
			{ID: "membership_a2", TenantID: tenantA, UserID: userCarol, Role: domain.RolePricer},
			{ID: "membership_b1", TenantID: tenantB, UserID: userBob, Role: domain.RoleManager},
		},
		Clients: []domain.Client{
			{ID: clientDemo, TenantID: tenantA, SourceConnectionID: "conn_1", Name: "Demo Desktop", ClientType: "desktop",
				Status: domain.ClientActive, ActorID: userAlice, AllowedToolGroups: []string{"catalog.read", "intake.write"},
				Demo: true, CreatedBy: userAlice, CreatedAt: at(-48 * time.Hour)},
			{ID: clientA2, TenantID: tenantA, Name: "Carol CLI", ClientType: "cli", Status: domain.ClientActive,
				ActorID: userCarol, AllowedToolGroups: []string{"catalog.read"}, CreatedBy: userAlice,
				CreatedAt: at(-24 * time.Hour), CredentialHash: CredentialHash(credA2)},
			{ID: clientB, TenantID: tenantB, Name: "Birch Agent", ClientType: "agent", Status: domain.ClientActive,
				ActorID: userBob, CreatedBy: userBob, CreatedAt: at(-24 * time.Hour), CredentialHash: "sha256:" + CredentialHash(credB)},
		},
		Sales: []domain.Sale{
			{ID: saleA1, TenantID: tenantA, Title: "Maple Street Estate", Status: domain.SalePublished, Visibility: "public",
				City: "Portland", Region: "OR", PostalCode: "97201", StreetAddress: "12 Maple St", AddressPolicy: "hidden_until",
				AddressRevealAt: &reveal, StartsAt: at(14 * 24 * time.Hour), EndsAt: at(17 * 24 * time.Hour), Version: 2,
				CreatedAt: at(-72 * time.Hour), UpdatedAt: at(-1 * time.Hour)},
			{ID: saleA2, TenantID: tenantA, Title: "Oak Lane Downsizing", Status: domain.SaleDraft, Visibility: "private",
				City: "Salem", Region: "OR", AddressPolicy: "never", StartsAt: at(40 * 24 * time.Hour),
				EndsAt: at(42 * 24 * time.Hour), Version: 1, CreatedAt: at(-2 * time.Hour), UpdatedAt: at(-2 * time.Hour)},
			{ID: saleB1, TenantID: tenantB, Title: "Lakeside Clear-out", Status: domain.SaleLive, Visibility: "public",
				City: "Bend", Region: "OR", AddressPolicy: "always", StreetAddress: "3 Lake Rd", StartsAt: at(-24 * time.Hour),
				EndsAt: at(48 * time.Hour), Version: 5, CreatedAt: at(-240 * time.Hour), UpdatedAt: at(-24 * time.Hour)},
		},
		DemandSignals: []domain.DemandSignal{
			{TenantID: tenantA, SaleID: saleA1, Category: "furniture.seating", Saves: 4, Searches: 9, Follows: 1,
				WindowStart: at(-7 * 24 * time.Hour), WindowEnd: epoch},
			{TenantID: tenantA, SaleID: saleA1, Category: "electronics.audio", Saves: 12, Searches: 30, Follows: 6,
				WindowStart: at(-7 * 24 * time.Hour), WindowEnd: epoch},
			{TenantID: tenantA, Category: "electronics", Saves: 20, Searches: 80, Follows: 11,
				WindowStart: at(-30 * 24 * time.Hour), WindowEnd: epoch},
			{TenantID: tenantB, SaleID: saleB1, Category: "electronics.audio", Saves: 1, WindowStart: at(-7 * 24 * time.Hour), WindowEnd: epoch},
		},
	}
	// Items of A: created an hour apart so (created_at, id) order is the
	// order below; item_a3 and item_a4 share an instant to exercise the id
	// tie-break.
	type spec struct {
		id, sale, cat, room, status string
		hour                        int
		photos                      int
	}
	specs := []spec{
		{"item_a1", saleA1, "furniture.seating.chair", "den", domain.ItemPublished, 1, 2},
		{"item_a2", saleA1, "electronics.audio.receiver", "den", domain.ItemPublished, 2, 1},
		{"item_a4", saleA1, "electronics.audiophile.cable", "garage", domain.ItemReady, 3, 0},
		{"item_a3", saleA1, "electronics.audio", "garage", domain.ItemDraft, 3, 3},
		{"item_a5", saleA2, "kitchen.cookware", "kitchen", domain.ItemDraft, 4, 0},
		{"item_a6", saleA2, "furniture.tables", "den", domain.ItemDraft, 5, 1},
		{"item_a7", saleA1, "electronics", "den", domain.ItemSold, 6, 0},
	}
	for _, sp := range specs {
		it := domain.Item{ID: sp.id, TenantID: tenantA, SaleID: sp.sale, Title: "Title " + sp.id, Description: "desc",
			Category: sp.cat, Room: sp.room, Status: sp.status, PriceCents: i64(2500), InternalPriceGuidanceCents: i64(3000),
			AppraisalFlag: sp.id == "item_a2", StaffNotes: "note", QRCode: "QR-" + sp.id, Version: 1,
			CreatedAt: at(time.Duration(sp.hour-100) * time.Hour), UpdatedAt: at(time.Duration(sp.hour-100) * time.Hour)}
		// Photos listed out of position order: the store returns them sorted.
		for k := sp.photos; k >= 1; k-- {
			it.Photos = append(it.Photos, domain.Photo{ID: fmt.Sprintf("photo_%s_%d", sp.id[5:], k), ItemID: sp.id,
				StorageKey: fmt.Sprintf("%s/%d.jpg", sp.id, k), Width: 800, Height: 600, Position: k, Published: k == 1})
		}
		ds.Items = append(ds.Items, it)
	}
	ds.Items = append(ds.Items,
		domain.Item{ID: "item_b1", TenantID: tenantB, SaleID: saleB1, Title: "Lamp", Category: "lighting.lamp", Room: "den",
			Status: domain.ItemPublished, PriceCents: i64(1500), Version: 3, CreatedAt: at(-200 * time.Hour), UpdatedAt: at(-200 * time.Hour)},
		domain.Item{ID: "item_b2", TenantID: tenantB, SaleID: saleB1, Title: "Stereo", Category: "electronics.audio", Room: "den",
			Status: domain.ItemPublished, Version: 1, CreatedAt: at(-99 * time.Hour), UpdatedAt: at(-99 * time.Hour)},
	)
	// One CSV-imported candidate with full provenance.
	ds.SourceDescriptors = []domain.SourceDescriptor{{ID: "source_csv1", TenantID: tenantA, Kind: "csv_upload", Label: "inventory.csv", CreatedAt: at(-50 * time.Hour)}}
	ds.ImportRuns = []domain.ImportRun{{ID: "run_csv1", TenantID: tenantA, SourceDescriptorID: "source_csv1", SaleID: saleA1,
		Kind: "csv", Status: "completed", RecordCount: 1, CreatedAt: at(-50 * time.Hour)}}
	ds.SourceRecords = []domain.SourceRecord{{ID: "record_csv1", TenantID: tenantA, ImportRunID: "run_csv1", Ordinal: 1,
		PayloadHash: "sha256:00", Payload: `{"title":"Brass lamp"}`, CreatedAt: at(-50 * time.Hour)}}
	ds.Candidates = []domain.Candidate{{ID: "candidate_csv1", TenantID: tenantA, SaleID: saleA1, Kind: domain.CandidateNewItem,
		Title: "Brass lamp", Quantity: 1, ReviewStatus: domain.ReviewNeedsReview, SourceDescriptorID: "source_csv1",
		ImportRunID: "run_csv1", SourceRecordID: "record_csv1", Version: 3, CreatedAt: at(-50 * time.Hour)}}
	return ds
}

// openTest opens a seeded mock store on a fresh file with a fixed clock and
// sequential ids. mod may adjust the options.
func openTest(t *testing.T, mod ...func(*Options)) *Store {
	t.Helper()
	return openAt(t, filepath.Join(t.TempDir(), "trovesnap.db"), mod...)
}

func openAt(t *testing.T, path string, mod ...func(*Options)) *Store {
	t.Helper()
	ds := testDataset()
	opts := Options{Clock: domain.NewFixedClock(epoch), IDs: domain.NewSeqIDs(), Seed: &ds}
	for _, m := range mod {
		m(&opts)
	}
	if _, err := os.Stat(path); len(mod) == 0 && errors.Is(err, fs.ErrNotExist) {
		seededCopy(t, path, ds, opts.Clock) // the same seeded file, made once (seeded_copy_test.go)
	}
	s, err := Open(context.Background(), path, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// principal resolves a credential ("" = the demo client of tenant A).
func principal(t *testing.T, s *Store, credential string) domain.Principal {
	t.Helper()
	p, err := s.ResolvePrincipal(context.Background(), credential)
	if err != nil {
		t.Fatalf("ResolvePrincipal(%q): %v", credential, err)
	}
	return p
}

// meta builds the write metadata the gate would send.
func meta(p domain.Principal, key, fingerprint, eventID string) domain.WriteMeta {
	return domain.WriteMeta{
		Idem: domain.IdempotencyKey{TenantID: p.TenantID, ClientID: p.Client.ID, Tool: "create_inventory_candidate",
			ToolMajor: 1, Key: key, Fingerprint: fingerprint},
		Event: domain.Event{ID: eventID, TenantID: p.TenantID, CorrelationID: "corr_" + eventID, RequestID: "req_" + key,
			ServerRequestID: "mcp_req_" + eventID, Mode: domain.ModeMock, Client: p.Client,
			Tool:  domain.ToolRef{Name: "create_inventory_candidate", Version: "1.0.0"},
			Actor: domain.ActorRef{ID: p.ActorID, Type: p.ActorType}, Action: "create"},
	}
}

// rawDB opens a plain second connection to the store's file, as another
// process (or the sqlite3 shell) would: it bypasses the store's API.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", fileURI(path)+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func mustDigest(t *testing.T, s *Store) map[string]string {
	t.Helper()
	d, err := s.Digest(context.Background())
	if err != nil {
		t.Fatalf("Digest: %v", err)
	}
	return d
}

func mustCounts(t *testing.T, s *Store) map[string]int64 {
	t.Helper()
	c, err := s.Counts(context.Background())
	if err != nil {
		t.Fatalf("Counts: %v", err)
	}
	return c
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// diffKeys lists the keys whose values differ between two digests.
func diffKeys(a, b map[string]string) []string {
	var out []string
	for k, v := range a {
		if b[k] != v {
			out = append(out, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	return out
}
