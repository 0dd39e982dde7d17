package mcpserver_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/gate"
	"github.com/triunalabs/trovesnap/store"
)

// Figures, not assertions:
//
//	go test -run '^$' -bench Reads100k -benchtime 2000x ./internal/mcpserver
//
// The store is seeded in the benchmark (not in fixtures) with 100,000
// published items of one public sale, through store.Open's seed path, so
// rows, photos and the search index are written exactly as production
// writes them. Every call goes through a real go-sdk client, the server and
// the gate; per-call latencies give the p50s.

const benchItems = 100_000

var (
	benchMaterials = []string{"walnut", "oak", "brass", "teak", "maple", "pine", "cherry", "chrome", "glass", "wicker"}
	benchNouns     = []string{"lamp", "chair", "table", "mirror", "dresser", "desk", "bench", "clock", "vase", "rug",
		"shelf", "stool", "cabinet", "chest", "sofa", "bowl", "tray", "frame", "radio", "sconce"}
)

func bench100kDataset() domain.Dataset {
	ds := fixtures.Dataset()
	start := fixtures.Epoch.Add(-24 * time.Hour)
	ds.Sales = append(ds.Sales, domain.Sale{ID: "sale_900", TenantID: fixtures.DemoTenantID, Title: "Warehouse clearance",
		Status: domain.SaleLive, Visibility: "public", City: "Columbus", Region: "OH", StreetAddress: "1 Bench Way",
		AddressPolicy: domain.AddressAlways, StartsAt: start, EndsAt: start.Add(72 * time.Hour), Version: 1,
		CreatedAt: start.Add(-30 * 24 * time.Hour), UpdatedAt: start})
	for i := range benchItems {
		id := fmt.Sprintf("item_9%06d", i)
		created := start.Add(-time.Duration(benchItems-i) * time.Second)
		price, guidance := int64(500+i%200*100), int64(600+i%200*100)
		title := fmt.Sprintf("%s %s no %d", benchMaterials[i%len(benchMaterials)], benchNouns[(i/len(benchMaterials))%len(benchNouns)], i)
		ds.Items = append(ds.Items, domain.Item{ID: id, TenantID: fixtures.DemoTenantID, SaleID: "sale_900", Title: title,
			Description: "Bench fixture item in good condition.", Category: "decor.accent.misc", Room: "warehouse",
			Status: domain.ItemPublished, PriceCents: &price, InternalPriceGuidanceCents: &guidance, StaffNotes: "bench",
			QRCode: fmt.Sprintf("QR-900-%06d", i), Version: 2, CreatedAt: created, UpdatedAt: created,
			Photos: []domain.Photo{{ID: fmt.Sprintf("photo_9%06da", i), StorageKey: "bench/" + id + ".jpg", Width: 1600, Height: 1200, Published: true}}})
	}
	return ds
}

// latencies runs call b.N times and reports the median and p90 per call.
func latencies(b *testing.B, call func()) {
	b.Helper()
	var d []time.Duration
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		call()
		d = append(d, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(d[len(d)*9/10].Microseconds())/1000, "p90-ms")
}

func mustCall(b *testing.B, cs *mcp.ClientSession, params *mcp.CallToolParams) *mcp.CallToolResult {
	res, err := cs.CallTool(context.Background(), params)
	if err != nil || res.IsError {
		b.Fatalf("%s: %v %+v", params.Name, err, res)
	}
	return res
}

func BenchmarkReads100k(b *testing.B) {
	ctx := context.Background()
	ds := bench100kDataset()
	clock := domain.NewFixedClock(fixtures.Epoch)
	t0 := time.Now()
	st, err := store.Open(ctx, filepath.Join(b.TempDir(), "bench.db"), store.Options{Clock: clock, IDs: domain.NewSeqIDs(), Seed: &ds})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	b.Logf("seeded %d items in %v", len(ds.Items), time.Since(t0).Round(time.Millisecond))
	l := domain.DefaultLimits()
	l.ReadsPerMinute = 1 << 30 // the fixed clock never leaves its rate window
	if err := st.SetLimits(ctx, fixtures.DemoTenantID, "", l); err != nil {
		b.Fatal(err)
	}
	g := gate.New(gate.Options{Backend: st, Mode: domain.ModeMock, Clock: clock, IDs: domain.NewSeqIDs(), ServerVersion: "bench"})
	cs := connect(b, g, "") // the demo owner: the widest projection

	// The cursor of page 500 (100 items a page) of the bench sale, found by
	// walking the store. Both pages hold bench items alike (one photo, no
	// history), so the ratio measures depth alone.
	owner, err := st.ResolvePrincipal(ctx, "")
	if err != nil {
		b.Fatal(err)
	}
	q := domain.ItemQuery{SaleID: "sale_900", Limit: 100}
	var page500 string
	for page := 1; page < 500; page++ {
		res, err := st.ListItems(ctx, owner, q)
		if err != nil {
			b.Fatal(err)
		}
		page500 = res.NextCursor
		if q.After, err = st.Cursors().Decode(store.CursorItems, owner.TenantID, res.NextCursor); err != nil {
			b.Fatal(err)
		}
	}
	first := &mcp.CallToolParams{Name: "trove_list_items", Arguments: map[string]any{"sale_id": "sale_900", "limit": 100}}
	deep := &mcp.CallToolParams{Name: "trove_list_items", Arguments: map[string]any{"sale_id": "sale_900", "limit": 100, "cursor": page500}}

	b.Run("ListItems_Page1", func(b *testing.B) { latencies(b, func() { mustCall(b, cs, first) }) })
	b.Run("ListItems_Page500", func(b *testing.B) { latencies(b, func() { mustCall(b, cs, deep) }) })
	b.Run("ListItems_Page500_over_Page1", func(b *testing.B) {
		var d1, d500 []time.Duration
		for b.Loop() {
			t0 := time.Now()
			mustCall(b, cs, first)
			t1 := time.Now()
			mustCall(b, cs, deep)
			d1, d500 = append(d1, t1.Sub(t0)), append(d500, time.Since(t1))
		}
		slices.Sort(d1)
		slices.Sort(d500)
		b.ReportMetric(float64(d500[len(d500)/2])/float64(d1[len(d1)/2]), "p50-ratio")
	})
	// 10% of the items match "walnut", 0.5% "walnut lamp"; hits are the
	// first page of 25.
	for name, query := range map[string]string{"OneWord": "walnut", "TwoWords": "walnut lamp", "Category": ""} {
		args := map[string]any{"query": query}
		if query == "" {
			args = map[string]any{"category": "decor.accent"}
		}
		params := &mcp.CallToolParams{Name: "trove_search_marketplace", Arguments: args}
		b.Run("SearchMarketplace_"+name, func(b *testing.B) { latencies(b, func() { mustCall(b, cs, params) }) })
	}
	i := 0
	b.Run("GetItem", func(b *testing.B) {
		latencies(b, func() {
			i = (i + 7919) % benchItems // spread over the table
			mustCall(b, cs, &mcp.CallToolParams{Name: "trove_get_item", Arguments: map[string]any{"item_id": fmt.Sprintf("item_9%06d", i)}})
		})
	})
}
