package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/catalog"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/mcpserver"
	"github.com/triunalabs/trovesnap/store"
)

// Tests of the candidate and draft tools (spec §13, §40.3, §40.14): the
// P5 ingestion door through the real gate, store and go-sdk client.

// ingEnv is newEnv with the tenant's limits lifted, so that a test making
// many candidate-tier calls under the fixed clock tests the tools, not the
// rate limiter (its own tests are elsewhere).
func ingEnv(t testing.TB, opts ...envOpt) *env {
	t.Helper()
	e := newEnv(t, opts...)
	l := domain.Limits{ReadsPerMinute: 1_000_000, CandidateWritesPerMinute: 1_000_000, ProposalsPerMinute: 1_000_000,
		ControlledActionsPerMinute: 1_000_000, MaxBulkTargets: 50}
	if err := e.st.SetLimits(context.Background(), fixtures.DemoTenantID, "", l); err != nil {
		t.Fatal(err)
	}
	return e
}

// ingCandidateTables are the tables a successful ingestion write may change
// besides the bookkeeping every call does; every other table (items, sales,
// photos, status events, proposals …) must stay hash-identical.
var ingCandidateTables = []string{"source_descriptors", "import_runs", "import_run_details", "source_records",
	"inventory_candidates", "candidate_item_changes", "idempotency_keys", "tenant_usage"}

// ingAssertOnlyChanged fails if a table outside allowed (and the bookkeeping
// tables) changed between two digests.
func ingAssertOnlyChanged(t testing.TB, before, after map[string]string, allowed ...string) {
	t.Helper()
	for table, h := range before {
		if slices.Contains(store.BookkeepingTables, table) || slices.Contains(allowed, table) {
			continue
		}
		if after[table] != h {
			t.Errorf("table %s changed", table)
		}
	}
}

// ingAssertOnlyEventsCounted fails if a row count changed outside the
// bookkeeping tables.
func ingAssertOnlyEventsCounted(t testing.TB, before, after map[string]int64) {
	t.Helper()
	for table, n := range before {
		if !slices.Contains(store.BookkeepingTables, table) && after[table] != n {
			t.Errorf("table %s: %d rows, had %d", table, after[table], n)
		}
	}
}

func ingDelta(before, after map[string]int64) map[string]int64 {
	d := map[string]int64{}
	for k, v := range after {
		if after[k] != before[k] {
			d[k] = v - before[k]
		}
	}
	return d
}

// ingAssetFiles lists the files under the store's assets directory.
func ingAssetFiles(t testing.TB, e *env) []string {
	t.Helper()
	var out []string
	_ = filepath.WalkDir(e.st.AssetsDir(), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, path)
		}
		return nil
	})
	return out
}

func ingPNG(t testing.TB, w, h int, seed uint8) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{seed, uint8(x), uint8(y), 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func ingJPEG(t testing.TB, w, h int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := jpeg.Encode(&b, image.NewRGBA(image.Rect(0, 0, w, h)), nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// ingPNGBomb is a PNG whose header declares w×h pixels: tiny on the wire,
// gigabytes once decoded.
func ingPNGBomb(w, h uint32) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	chunk := func(typ string, data []byte) {
		_ = binary.Write(&b, binary.BigEndian, uint32(len(data)))
		b.WriteString(typ)
		b.Write(data)
		_ = binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(append([]byte(typ), data...)))
	}
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 2
	chunk("IHDR", ihdr)
	chunk("IDAT", bytes.Repeat([]byte{0}, 64))
	chunk("IEND", nil)
	return b.Bytes()
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func hasWarning(e envelope, code string) bool {
	return slices.ContainsFunc(e.Warnings, func(w struct{ Code, Message string }) bool { return w.Code == code })
}

// §40.3 for a batch: one import run, a source record per row, a candidate
// per row, one event — and no canonical item.
func TestManualImport_OneRunRecordPerRowCandidatePerRowNoItem(t *testing.T) {
	e := ingEnv(t)
	before, counts := e.digest(), e.counts()
	env := e.call("trove_run_manual_import", map[string]any{
		"sale_id": fixtures.PublishedSaleID, "source_label": "garage walk-through", "idempotency_key": "manual-key-0001",
		"rows": []map[string]any{
			{"title": "Craftsman tool chest", "category": "tools.storage", "room": "garage", "condition": "good", "quantity": 1},
			{"title": "Box of mason jars", "quantity": 24, "supplied_price_cents": 1200},
			{"title": "Snow shovel", "external_ref": "G-17", "notes": "rusty blade"},
		},
	})
	if env.Status != "succeeded_with_warnings" || env.isError || !hasWarning(env, "mock_mode_no_persistence") {
		t.Fatalf("import: %s", env.raw)
	}
	res := dataAs[catalog.ImportResult](t, env)
	if res.SourceRecordCount != 3 || res.CandidateCount != 3 || len(res.CandidateIDs) != 3 || res.CanonicalItemsCreated != 0 ||
		res.ItemStatusesChanged != 0 || res.ReviewStatus != "needs_review" || !res.UntrustedContent || res.Status != "completed" {
		t.Fatalf("result = %+v", res)
	}
	if d := ingDelta(counts, e.counts()); d["import_runs"] != 1 || d["source_records"] != 3 || d["inventory_candidates"] != 3 ||
		d["plugin_events"] != 1 || d["idempotency_keys"] != 1 || d["import_run_details"] != 1 {
		t.Errorf("row deltas = %v", d)
	}
	ingAssertOnlyChanged(t, before, e.digest(), ingCandidateTables...)
	if !slices.Equal(env.Related.SourceImportRunIDs, []string{res.ImportRunID}) || !slices.Equal(env.Related.CandidateIDs, res.CandidateIDs) ||
		len(env.Related.SourceImportRecordIDs) != 3 {
		t.Errorf("related = %+v", env.Related)
	}
	evs := e.events(env.ServerRequestID)
	if len(evs) != 1 || evs[0].Outcome != "success" || evs[0].Impact.Type != "candidate_created" || evs[0].Impact.CanonicalStateChanged ||
		!slices.Equal(evs[0].Related.CandidateIDs, res.CandidateIDs) {
		t.Fatalf("events = %+v", evs)
	}
	list := dataAs[catalog.ListCandidatesOutput](t, e.call("trove_list_candidates", map[string]any{"sale_id": fixtures.PublishedSaleID, "limit": 100}))
	n := 0
	for _, c := range list.Candidates {
		if slices.Contains(res.CandidateIDs, c.ID) {
			n++
			got := dataAs[catalog.GetCandidateOutput](t, e.call("trove_get_candidate", map[string]any{"candidate_id": c.ID})).Candidate
			if c.ReviewStatus != "needs_review" || !c.Untrusted || c.Kind != "new_item" || got.ImportRunID != res.ImportRunID {
				t.Errorf("candidate = %+v (read: %+v)", c, got)
			}
		}
	}
	if n != 3 {
		t.Errorf("%d candidates of the run listed, want 3", n)
	}
}

// A manual import with an invalid row writes nothing and is not stored
// under its key, so the corrected call with the same key goes through.
func TestManualImport_InvalidRowRefusedThenFixedRetrySucceeds(t *testing.T) {
	e := ingEnv(t)
	rows := []map[string]any{{"title": "Lamp"}, {"title": "\u200b\u200d\u2066"}}
	args := map[string]any{"sale_id": fixtures.PublishedSaleID, "rows": rows, "idempotency_key": "manual-fix-0001"}
	before := e.digest()
	env := e.call("trove_run_manual_import", args)
	wantCode(t, env, "failed", "invalid_input")
	if env.Errors[0].Field != "rows" || !strings.Contains(env.Errors[0].Message, "row 2: missing_title") {
		t.Errorf("error = %+v", env.Errors[0])
	}
	assertOnlyEventsChanged(t, before, e.digest())
	rows[1]["title"] = "Lamp shade"
	if ok := e.call("trove_run_manual_import", args); ok.isError || ok.Audit.Replayed {
		t.Fatalf("fixed retry: %s", ok.raw)
	}
	// skip_invalid_rows imports the valid rows and reports the other.
	skip := e.call("trove_run_manual_import", map[string]any{"sale_id": fixtures.PublishedSaleID, "skip_invalid_rows": true,
		"idempotency_key": "manual-skip-0001", "rows": []map[string]any{{"title": "Vase"}, {"title": "\u200b"}}})
	res := dataAs[catalog.ImportResult](t, skip)
	if res.CandidateCount != 1 || res.RejectedRowCount != 1 || res.SourceRecordCount != 2 || res.Status != "completed_with_rejections" ||
		res.RejectedRows[0].Row != 2 || res.RejectedRows[0].Code != "missing_title" {
		t.Errorf("skip = %+v", res)
	}
}

// ingWrite is one persisted ingestion write for the §40.14 table.
type ingWrite struct {
	tool     string
	args     func(key string) map[string]any
	other    func(args map[string]any) // makes the input differ
	creates  map[string]int64          // rows the first call adds (besides event and key)
	setupRef func(e *env) string       // an id the args need, made first
}

// §40.14 for EVERY ingestion write tool: the same key and input replays the
// original result (one run, record, candidate, event — nothing written
// again); the same key with other input is idempotency_conflict and writes
// nothing.
func TestIdempotency_EveryIngestionWriteReplaysOnceAndConflicts(t *testing.T) {
	pngBytes := ingPNG(t, 6, 4, 7)
	csv := "title,price,item_id,reported_status\nLamp,12.50,,\n,,item_991,sold\n"
	writes := []ingWrite{
		{tool: "trove_run_manual_import", args: func(k string) map[string]any {
			return map[string]any{"sale_id": fixtures.PublishedSaleID, "idempotency_key": k, "rows": []map[string]any{{"title": "Oak desk"}, {"title": "Desk lamp"}}}
		}, other: func(a map[string]any) { a["source_label"] = "another label" },
			creates: map[string]int64{"import_runs": 1, "source_records": 2, "inventory_candidates": 2}},
		{tool: "trove_apply_csv_import", args: func(k string) map[string]any {
			return map[string]any{"sale_id": fixtures.PublishedSaleID, "idempotency_key": k, "csv_text": csv}
		}, other: func(a map[string]any) { a["csv_text"] = csv + "Vase,3,,\n" },
			creates: map[string]int64{"import_runs": 1, "source_records": 2, "inventory_candidates": 2, "candidate_item_changes": 1, "source_descriptors": 1}},
		{tool: "trove_create_status_update_candidate", args: func(k string) map[string]any {
			return map[string]any{"item_id": fixtures.DemoItemID, "reported_status": "sold", "effective_at": "2026-06-20T15:04:05Z",
				"source": "seller_confirmed", "idempotency_key": k}
		}, other: func(a map[string]any) { a["reported_status"] = "on_hold" },
			creates: map[string]int64{"import_runs": 1, "source_records": 1, "inventory_candidates": 1, "candidate_item_changes": 1}},
		{tool: "trove_create_media_attachment_candidate", args: func(k string) map[string]any {
			return map[string]any{"item_id": fixtures.DemoItemID, "image_base64": b64(pngBytes), "idempotency_key": k}
		}, other: func(a map[string]any) { a["caption"] = "another caption" },
			creates: map[string]int64{"import_runs": 1, "source_records": 1, "inventory_candidates": 1, "candidate_item_changes": 1,
				"source_assets": 1, "candidate_media": 1}},
		{tool: "trove_attach_candidate_photo", args: func(k string) map[string]any {
			return map[string]any{"candidate_id": fixtures.DemoCandidateID, "image_base64": b64(ingPNG(t, 5, 5, 1)), "idempotency_key": k}
		}, other: func(a map[string]any) { a["caption"] = "from the left" },
			creates: map[string]int64{"source_assets": 1, "candidate_media": 1}},
		{tool: "trove_draft_listing_copy", args: func(k string) map[string]any {
			return map[string]any{"item_id": fixtures.DemoItemID, "persist": true, "idempotency_key": k}
		}, other: func(a map[string]any) { a["tone"] = "warm" },
			creates: map[string]int64{"draft_revisions": 1}},
		{tool: "trove_stage_export", args: func(k string) map[string]any {
			return map[string]any{"channel": "ebay", "item_ids": []string{fixtures.DemoItemID}, "idempotency_key": k}
		}, other: func(a map[string]any) { a["channel"] = "etsy" },
			creates: map[string]int64{"export_drafts": 1, "export_draft_items": 1}},
		{tool: "trove_create_candidate", args: func(k string) map[string]any {
			return map[string]any{"sale_id": fixtures.PublishedSaleID, "title": "Wicker basket", "idempotency_key": k}
		}, other: func(a map[string]any) { a["title"] = "Wicker hamper" },
			creates: map[string]int64{"import_runs": 1, "source_records": 1, "inventory_candidates": 1}},
	}
	// One store for all: each tool's keys and rows are its own, and the
	// checks compare the store just before and after each call.
	e := ingEnv(t)
	for _, w := range writes {
		t.Run(w.tool, func(t *testing.T) {
			key := "idem-" + w.tool
			countsBefore := e.counts()
			first := e.call(w.tool, w.args(key))
			if first.isError {
				t.Fatalf("first: %s", first.raw)
			}
			d := ingDelta(countsBefore, e.counts())
			want := map[string]int64{"plugin_events": 1, "idempotency_keys": 1}
			for k, v := range w.creates {
				want[k] = v
			}
			for k, v := range want {
				if d[k] != v {
					t.Errorf("first call: %s +%d, want +%d (all deltas %v)", k, d[k], v, d)
				}
			}
			files := ingAssetFiles(t, e)

			before, counts := e.digest(), e.counts()
			args := w.args(key)
			args["request_id"] = "retry-1"
			replay := e.call(w.tool, args)
			if replay.isError || !replay.Audit.Replayed || string(replay.Data) != string(first.Data) || !hasWarning(replay, "idempotent_replay") {
				t.Fatalf("replay:\n%s\nfirst:\n%s", replay.raw, first.raw)
			}
			assertOnlyEventsChanged(t, before, e.digest())
			if d := ingDelta(counts, e.counts()); d["plugin_events"] != 1 || len(d) > 3 {
				t.Errorf("replay deltas = %v: only its own event (and bookkeeping)", d)
			}
			if evs := e.events(replay.ServerRequestID); len(evs) != 1 || evs[0].Outcome != "replayed" || !slices.Contains(evs[0].Related.EventIDs, first.Audit.PluginEventID) {
				t.Errorf("replay event = %+v", evs)
			}

			before = e.digest()
			args = w.args(key)
			w.other(args)
			conflict := e.call(w.tool, args)
			wantCode(t, conflict, "failed", "idempotency_conflict")
			assertOnlyEventsChanged(t, before, e.digest())
			if got := ingAssetFiles(t, e); !slices.Equal(got, files) {
				t.Errorf("a replay or conflict touched asset files: %v -> %v", files, got)
			}
		})
	}
}

// CSV preview persists NOTHING: row counts of every table are unchanged but
// the bookkeeping every call does (its event, its rate count, last use).
func TestCSVPreview_PersistsNothing(t *testing.T) {
	e := ingEnv(t)
	csv := "Item Name,Qty,Price ($),Room,Status,TroveSnap ID,Notes\r\n" +
		"Brass lamp,2,$45.00,Living Room,,,\"two bulbs, one shade\"\r\n" +
		"Walnut chair,1,120,den,,,\r\n" +
		",,,,Sold,item_991,buyer paid cash\r\n" +
		",,,,sold,item_1290,\r\n" +
		"\"=HYPERLINK(\"\"x\"\")\",1,3,,,,\r\n" +
		"Broken,abc,,,,,\r\n"
	before, counts := e.digest(), e.counts()
	env := e.call("trove_preview_csv_import", map[string]any{"sale_id": fixtures.PublishedSaleID, "csv_text": csv})
	if env.isError {
		t.Fatalf("preview: %s", env.raw)
	}
	out := dataAs[catalog.PreviewCSVImportOutput](t, env)
	if out.RowsTotal != 6 || out.RowsValid != 4 || out.RowsInvalid != 2 || out.WouldCreateCandidates != 3 || out.WouldCreateStatusCandidates != 1 ||
		out.Persisted || !out.UntrustedContent || len(out.Rows) != 6 || !strings.HasPrefix(out.ContentHash, "sha256:") {
		t.Fatalf("preview = %+v", out)
	}
	if r := out.Rows[2]; r.Kind != "status_update" || r.ItemID == nil || *r.ItemID != "item_991" || *r.ReportedStatus != "sold" || !r.Valid {
		t.Errorf("sold row = %+v", r)
	}
	if r := out.Rows[3]; r.Valid || !slices.Contains(r.IssueCodes, "unknown_item") {
		t.Errorf("unknown item row = %+v", r)
	}
	if r := out.Rows[4]; !r.Valid || r.Title != `=HYPERLINK("x")` || !slices.Contains(r.IssueCodes, "formula_like_cell") {
		t.Errorf("formula row = %+v", r)
	}
	if r := out.Rows[5]; r.Valid || !slices.Contains(r.IssueCodes, "invalid_quantity") {
		t.Errorf("bad quantity row = %+v", r)
	}
	if r := out.Rows[0]; r.Room != "living_room" || *r.SuppliedPriceCents != 4500 || r.Quantity != 2 {
		t.Errorf("normalised row = %+v", r)
	}
	after := e.counts()
	for table, n := range counts {
		if after[table] != n && !slices.Contains(store.BookkeepingTables, table) {
			t.Errorf("preview changed the row count of %s: %d -> %d", table, n, after[table])
		}
	}
	assertOnlyEventsChanged(t, before, e.digest())
	if len(ingAssetFiles(t, e)) != 0 {
		t.Error("preview wrote a file")
	}
	// Mapping suggestions persist nothing either, and are deterministic.
	m1 := e.call("trove_map_csv_columns", map[string]any{"csv_text": csv})
	m2 := e.call("trove_map_csv_columns", map[string]any{"csv_text": csv})
	if string(m1.Data) != string(m2.Data) || m1.isError {
		t.Fatalf("map: %s", m1.raw)
	}
	mo := dataAs[catalog.MapCSVColumnsOutput](t, m1)
	if mo.Persisted || mo.Delimiter != "comma" || len(mo.MissingRequired) != 0 || mo.Columns[5].Field != "item_id" || !mo.Columns[0].UntrustedContent {
		t.Errorf("map = %+v", mo)
	}
	assertOnlyEventsChanged(t, before, e.digest())
}

// CSV apply creates the run, records and candidates — a sold-report row
// becomes a status_update candidate — and changes no item, no status and no
// other canonical table.
func TestCSVApply_CandidatesBeforeAnyCanonicalUpdate(t *testing.T) {
	e := ingEnv(t)
	csv := "title,quantity,price,item_id,reported_status,effective_at\n" +
		"Brass lamp,2,45,,,\n" +
		"Walnut chair,1,120,,,\n" +
		",,,item_991,sold,2026-06-21\n"
	before, counts := e.digest(), e.counts()
	env := e.call("trove_apply_csv_import", map[string]any{"sale_id": fixtures.PublishedSaleID, "csv_text": csv, "idempotency_key": "apply-key-0001",
		"source_label": "family spreadsheet"})
	if env.isError {
		t.Fatalf("apply: %s", env.raw)
	}
	res := dataAs[catalog.ImportResult](t, env)
	if res.CandidateCount != 2 || res.StatusUpdateCandidateCount != 1 || res.ItemStatusesChanged != 0 || res.CanonicalItemsCreated != 0 {
		t.Fatalf("result = %+v", res)
	}
	ingAssertOnlyChanged(t, before, e.digest(), ingCandidateTables...)
	if d := ingDelta(counts, e.counts()); d["source_records"] != 3 || d["inventory_candidates"] != 3 || d["candidate_item_changes"] != 1 {
		t.Errorf("deltas = %v", d)
	}
	items := dataAs[catalog.ListItemsOutput](t, e.call("trove_list_items", map[string]any{"sale_id": fixtures.PublishedSaleID, "limit": 100}))
	for _, it := range items.Items {
		if it.ID == fixtures.DemoItemID && (it.Status == nil || *it.Status != "published") {
			t.Errorf("item_991 status = %v: a sold report must not change it", it.Status)
		}
	}
	list := dataAs[catalog.ListCandidatesOutput](t, e.call("trove_list_candidates", map[string]any{"sale_id": fixtures.PublishedSaleID, "limit": 100}))
	found := false
	for _, c := range list.Candidates {
		if c.ID == res.StatusUpdateCandidateIDs[0] {
			found = c.Kind == "status_update" && c.ReviewStatus == "needs_review"
		}
	}
	if !found {
		t.Error("the status_update candidate is not listed for review")
	}
}

// Long imports report progress to a caller that sent a progressToken.
func TestCSVApply_ReportsProgressNotifications(t *testing.T) {
	e := ingEnv(t)
	var mu sync.Mutex
	var got []float64
	last := make(chan struct{})
	client := mcp.NewClient(&mcp.Implementation{Name: "codex", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, req.Params.Progress)
			if req.Params.Progress == req.Params.Total && req.Params.Message == "rows imported" {
				close(last)
			}
		},
	})
	srv := mcpserver.New(mcpserver.Options{Gate: e.gate, Transport: "inmemory"})
	sct, cct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), sct, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := client.Connect(context.Background(), cct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close(); _ = ss.Wait() })
	var b strings.Builder
	b.WriteString("title\n")
	for i := range 1200 {
		fmt.Fprintf(&b, "Jar %d\n", i)
	}
	params := &mcp.CallToolParams{Name: "trove_apply_csv_import", Arguments: map[string]any{
		"sale_id": fixtures.PublishedSaleID, "csv_text": b.String(), "idempotency_key": "progress-key-0001"}}
	params.SetProgressToken("tok-1")
	res, err := cs.CallTool(context.Background(), params)
	if err != nil || res.IsError {
		t.Fatalf("apply: %v %+v", err, res)
	}
	select {
	case <-last:
	case <-time.After(10 * time.Second):
		t.Fatal("no final progress notification")
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(got, []float64{500, 1000, 1200}) {
		t.Errorf("progress = %v, want 500, 1000, 1200", got)
	}
}

// Bad CSV input: a clear invalid_input and nothing written.
func TestCSV_BadInputClearErrorNothingWritten(t *testing.T) {
	e := ingEnv(t)
	key := "bad-csv-0001"
	start := e.digest()
	cases := []struct {
		name    string
		tool    string
		args    map[string]any
		code    string
		field   string
		message string
	}{
		{"binary file", "trove_apply_csv_import", map[string]any{"csv_text": "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00", "idempotency_key": key}, "invalid_input", "csv_text", "binary"},
		{"xlsx (zip)", "trove_preview_csv_import", map[string]any{"csv_text": "PK\x03\x04\x14\x00\x06\x00\x08\x00\x00\x00!\x00"}, "invalid_input", "csv_text", "binary"},
		{"0-byte file", "trove_apply_csv_import", map[string]any{"csv_text": "", "idempotency_key": key}, "invalid_input", "csv_text", "too short"},
		{"1 MiB in one cell", "trove_apply_csv_import", map[string]any{"csv_text": "title,description\nLamp," + strings.Repeat("x", 1<<20) + "\n", "idempotency_key": key}, "invalid_input", "csv_text", "cell_too_large"},
		{"latin-1 bytes", "trove_apply_csv_import", map[string]any{"csv_text": "title\nCaf\xe9 table\n", "idempotency_key": key}, "invalid_input", "csv_text", "invalid_utf8"},
		{"header only", "trove_apply_csv_import", map[string]any{"csv_text": "title,price\n", "idempotency_key": key}, "invalid_input", "csv_text", "no data rows"},
		{"no title column", "trove_apply_csv_import", map[string]any{"csv_text": "colour,size\nred,L\n", "idempotency_key": key}, "invalid_input", "mapping", "title"},
		{"mapping names no column", "trove_preview_csv_import", map[string]any{"csv_text": "title\nLamp\n", "mapping": []map[string]any{{"column": "Title ", "field": "title"}}}, "invalid_input", "mapping", "not in the file"},
		{"unknown item", "trove_apply_csv_import", map[string]any{"csv_text": "item_id,reported_status\nitem_1290,sold\n", "idempotency_key": key}, "invalid_input", "csv_text", "unknown_item"},
		{"foreign sale", "trove_apply_csv_import", map[string]any{"sale_id": fixtures.OtherPublishedSaleID, "csv_text": "title\nLamp\n", "idempotency_key": key}, "invalid_reference", "sale_id", ""},
		{"unterminated quote", "trove_apply_csv_import", map[string]any{"csv_text": "title\n\"Lamp\n", "idempotency_key": key}, "invalid_input", "csv_text", "malformed_quotes"},
		{"too many rows", "trove_preview_csv_import", map[string]any{"csv_text": "title\n" + strings.Repeat("a\n", 10_001)}, "invalid_input", "csv_text", "10000"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, ok := c.args["sale_id"]; !ok {
				c.args["sale_id"] = fixtures.PublishedSaleID
			}
			counts := e.counts()
			env := e.call(c.tool, c.args)
			wantCode(t, env, "failed", c.code)
			if env.Errors[0].Field != c.field || !strings.Contains(env.Errors[0].Message, c.message) {
				t.Errorf("error = %+v, want field %s mentioning %q", env.Errors[0], c.field, c.message)
			}
			if len(env.raw) > 4000 {
				t.Errorf("error envelope of %d bytes: it echoes input", len(env.raw))
			}
			ingAssertOnlyEventsCounted(t, counts, e.counts())
		})
	}
	assertOnlyEventsChanged(t, start, e.digest())
	// After all those refusals the key is still unused: a valid file goes through.
	ok := e.call("trove_apply_csv_import", map[string]any{"sale_id": fixtures.PublishedSaleID, "csv_text": "title\nLamp\n", "idempotency_key": key})
	if ok.isError || ok.Audit.Replayed {
		t.Fatalf("valid file after refusals: %s", ok.raw)
	}
	// A formula-injection cell is kept as text and flagged, not refused.
	f := e.call("trove_apply_csv_import", map[string]any{"sale_id": fixtures.PublishedSaleID, "idempotency_key": "formula-0001",
		"csv_text": "title,notes\n\"=HYPERLINK(\"\"http://evil.example\"\",\"\"win\"\")\",=1+1\n"})
	if f.isError || !hasWarning(f, "row_warnings") || !strings.Contains(f.raw, "formula_like_cell") {
		t.Fatalf("formula: %s", f.raw)
	}
	id := dataAs[catalog.ImportResult](t, f).CandidateIDs[0]
	if c := dataAs[catalog.GetCandidateOutput](t, e.call("trove_get_candidate", map[string]any{"candidate_id": id})).Candidate; c.Title != `=HYPERLINK("http://evil.example","win")` || c.Notes != "=1+1" {
		t.Errorf("formula text not kept as text: %+v", c)
	}
}

// Photos: every refusal is a clear invalid_input naming the reason, and
// writes no row and no file.
func TestPhotos_BadInputClearErrorNoRowNoFile(t *testing.T) {
	e := ingEnv(t)
	pngBytes := ingPNG(t, 4, 4, 3)
	key := "bad-photo-0001"
	cand := fixtures.DemoCandidateID
	// Row counts per case (cheap); table hashes once over all the cases,
	// which also catches an update in place.
	start := e.digest()
	defer func() { assertOnlyEventsChanged(t, start, e.digest()) }()
	cases := []struct {
		name, field, message string
		args                 map[string]any
	}{
		{"png that says jpeg", "mime_type", "bytes are image/png", map[string]any{"image_base64": b64(pngBytes), "mime_type": "image/jpeg"}},
		{"text that says png", "image_base64", "not an accepted image", map[string]any{"image_base64": b64([]byte("definitely an image, trust me")), "mime_type": "image/png"}},
		{"script that says jpeg", "image_base64", "not an accepted image", map[string]any{"image_base64": b64([]byte("<script>fetch('/secrets')</script>")), "mime_type": "image/jpeg"}},
		{"jpeg header then junk", "image_base64", "corrupt", map[string]any{"image_base64": b64(append([]byte{0xFF, 0xD8, 0xFF, 0xE0, 0, 16}, bytes.Repeat([]byte{7}, 300)...))}},
		{"decompression bomb 50000x50000", "image_base64", "refused before decoding", map[string]any{"image_base64": b64(ingPNGBomb(50000, 50000))}},
		{"heic", "image_base64", "HEIC", map[string]any{"image_base64": b64(append([]byte{0, 0, 0, 24}, []byte("ftypheic\x00\x00\x00\x00mif1heic")...)), "mime_type": "image/heic"}},
		{"client-local path", "image_base64", "local file path", map[string]any{"image_base64": "/Users/paul/Pictures/IMG_0042.JPG"}},
		{"windows path", "image_base64", "local file path", map[string]any{"image_base64": `C:\Users\Paul\Pictures\lamp.jpg`}},
		{"file: URL", "image_base64", "file: URL", map[string]any{"image_base64": "file:///Users/paul/Pictures/lamp.jpg"}},
		{"Google Drive link", "image_base64", "expiring or private share link", map[string]any{"image_base64": "https://drive.google.com/file/d/1AbC/view?usp=sharing"}},
		{"OneDrive link", "image_base64", "expiring or private share link", map[string]any{"image_base64": "https://1drv.ms/i/s!AkXyz"}},
		{"signed S3 URL", "image_base64", "expiring or private share link", map[string]any{"image_base64": "https://b.s3.amazonaws.com/l.jpg?X-Amz-Expires=300&X-Amz-Signature=ab"}},
		{"plain URL", "image_base64", "never fetches URLs", map[string]any{"image_base64": "https://example.com/lamp.jpg"}},
		{"not base64", "image_base64", "not valid base64", map[string]any{"image_base64": "not base64 at all!"}},
		{"neither source", "image_base64", "exactly one", map[string]any{}},
		{"both sources", "image_base64", "exactly one", map[string]any{"image_base64": b64(pngBytes), "asset_id": "asset_1"}},
	}
	for _, c := range cases {
		for _, tool := range []string{"trove_attach_candidate_photo", "trove_create_media_attachment_candidate"} {
			t.Run(tool+"/"+c.name, func(t *testing.T) {
				args := map[string]any{"idempotency_key": key}
				if tool == "trove_attach_candidate_photo" {
					args["candidate_id"] = cand
				} else {
					args["item_id"] = fixtures.DemoItemID
				}
				for k, v := range c.args {
					args[k] = v
				}
				counts := e.counts()
				env := e.call(tool, args)
				wantCode(t, env, "failed", "invalid_input")
				if env.Errors[0].Field != c.field || !strings.Contains(env.Errors[0].Message, c.message) {
					t.Errorf("error = %+v, want %s mentioning %q", env.Errors[0], c.field, c.message)
				}
				ingAssertOnlyEventsCounted(t, counts, e.counts())
				if files := ingAssetFiles(t, e); len(files) != 0 {
					t.Errorf("files left: %v", files)
				}
			})
		}
	}
	// Another tenant's candidate or item answers like a missing one.
	for tool, args := range map[string]map[string]any{
		"trove_attach_candidate_photo":            {"candidate_id": "candidate_901", "image_base64": b64(pngBytes), "idempotency_key": key},
		"trove_create_media_attachment_candidate": {"item_id": "item_1290", "image_base64": b64(pngBytes), "idempotency_key": key},
	} {
		counts := e.counts()
		wantCode(t, e.call(tool, args), "failed", "invalid_reference")
		ingAssertOnlyEventsCounted(t, counts, e.counts())
		if files := ingAssetFiles(t, e); len(files) != 0 {
			t.Errorf("%s: files left: %v", tool, files)
		}
	}
}

// A photo becomes private candidate media at a server-chosen path; it never
// reaches a canonical item.
func TestPhotos_PrivateSourceAssetsNeverOnAnItem(t *testing.T) {
	e := ingEnv(t)
	jpg := ingJPEG(t, 32, 24)
	before := e.digest()
	env := e.call("trove_attach_candidate_photo", map[string]any{"candidate_id": fixtures.DemoCandidateID,
		"image_base64": "data:image/jpeg;base64," + b64(jpg), "caption": "maker's mark", "idempotency_key": "photo-key-0001"})
	if env.isError {
		t.Fatalf("attach: %s", env.raw)
	}
	r := dataAs[catalog.CandidateMediaResult](t, env)
	if !r.Private || r.CanonicalItemChanged || r.MimeType != "image/jpeg" || r.Width != 32 || r.Height != 24 || r.ContentHash != domain.OriginalHash(jpg) ||
		r.Kind != "new_item" || r.ItemID != nil {
		t.Fatalf("result = %+v", r)
	}
	ingAssertOnlyChanged(t, before, e.digest(), "source_assets", "candidate_media", "idempotency_keys", "tenant_usage")
	files := ingAssetFiles(t, e)
	hex := strings.TrimPrefix(r.ContentHash, "sha256:")
	if len(files) != 1 || files[0] != filepath.Join(e.st.AssetsDir(), fixtures.DemoTenantID, hex[:2], hex+".jpg") {
		t.Fatalf("files = %v", files)
	}
	// The same photo proposed for an item: an attach_media candidate reusing
	// the asset; the item's photos do not change.
	before = e.digest()
	env = e.call("trove_create_media_attachment_candidate", map[string]any{"item_id": fixtures.DemoItemID, "asset_id": r.AssetID,
		"idempotency_key": "photo-key-0002"})
	m := dataAs[catalog.CandidateMediaResult](t, env)
	if env.isError || m.Kind != "attach_media" || m.ItemID == nil || *m.ItemID != fixtures.DemoItemID || !m.AssetReused || m.AssetID != r.AssetID {
		t.Fatalf("media candidate: %s", env.raw)
	}
	ingAssertOnlyChanged(t, before, e.digest(), append(ingCandidateTables, "candidate_media")...)
	if len(ingAssetFiles(t, e)) != 1 {
		t.Error("reusing an asset wrote another file")
	}
	// Candidate media is never public: the public item shows no new photo.
	pub := e.call("trove_get_public_item", map[string]any{"item_id": fixtures.DemoItemID})
	if strings.Contains(pub.raw, r.AssetID) || strings.Contains(pub.raw, hex) {
		t.Errorf("candidate media leaked into a public read: %s", pub.raw)
	}
}

// A status report is a reviewed candidate, never a status event.
func TestStatusUpdateCandidate_NeverChangesTheItem(t *testing.T) {
	e := ingEnv(t)
	before := e.digest()
	env := e.call("trove_create_status_update_candidate", map[string]any{"item_id": fixtures.DemoItemID, "reported_status": "sold",
		"effective_at": "2026-06-20T15:04:05-07:00", "source": "buyer_message", "notes": "buyer says: mark it sold and refund me",
		"idempotency_key": "status-key-0001"})
	if env.isError {
		t.Fatalf("report: %s", env.raw)
	}
	r := dataAs[catalog.StatusUpdateCandidateResult](t, env)
	if r.Kind != "status_update" || r.ItemStatusChanged || r.ObservedItemStatus != "published" || r.ObservedItemVersion != 8 || r.SaleID != fixtures.PublishedSaleID {
		t.Fatalf("result = %+v", r)
	}
	ingAssertOnlyChanged(t, before, e.digest(), ingCandidateTables...)
	if !slices.Equal(env.Related.ItemIDs, []string{fixtures.DemoItemID}) {
		t.Errorf("related = %+v", env.Related)
	}
	wantCode(t, e.call("trove_create_status_update_candidate", map[string]any{"item_id": "item_1290", "reported_status": "sold",
		"effective_at": "2026-06-20T15:04:05Z", "source": "spreadsheet", "idempotency_key": "status-key-0002"}), "failed", "invalid_reference")
}

// Drafting never publishes and never changes the item's text; each piece of
// copy says where it came from.
func TestDraftListingCopy_NeverPublishes(t *testing.T) {
	e := ingEnv(t)
	before := e.digest()
	env := e.call("trove_draft_listing_copy", map[string]any{"item_id": fixtures.DemoItemID, "tone": "collector", "idempotency_key": "draft-key-0001"})
	if env.isError {
		t.Fatalf("draft: %s", env.raw)
	}
	d := dataAs[catalog.DraftListingCopyOutput](t, env)
	if d.Published || d.Persisted || d.DraftID != nil || d.SourceKind != "item" || d.SourceVersion != 8 || !d.UntrustedContent || len(d.Unverified) == 0 {
		t.Fatalf("draft = %+v", d)
	}
	origins := map[string]bool{}
	for _, s := range d.Segments {
		origins[s.Origin] = true
		if s.Origin == "generated" && s.Field != "" {
			t.Errorf("a generated segment claims a recorded field: %+v", s)
		}
	}
	if !origins["supplied"] || !origins["generated"] {
		t.Errorf("origins = %v", origins)
	}
	ingAssertOnlyChanged(t, before, e.digest(), "idempotency_keys")
	// Persisted: a draft revision, still nothing published.
	env = e.call("trove_draft_listing_copy", map[string]any{"candidate_id": fixtures.DemoCandidateID, "persist": true, "idempotency_key": "draft-key-0002"})
	d = dataAs[catalog.DraftListingCopyOutput](t, env)
	if env.isError || !d.Persisted || d.DraftID == nil || *d.Revision != 1 || d.Published || d.SourceKind != "candidate" {
		t.Fatalf("persisted draft: %s", env.raw)
	}
	for _, s := range d.Segments {
		if s.Field == "title" && s.Origin != "observed" {
			t.Errorf("a candidate's title is observed, got %+v", s)
		}
	}
	ingAssertOnlyChanged(t, before, e.digest(), "idempotency_keys", "draft_revisions", "tenant_usage") // a stored draft counts in the quota
	wantCode(t, e.call("trove_draft_listing_copy", map[string]any{"idempotency_key": "draft-key-0003"}), "failed", "invalid_input")
	wantCode(t, e.call("trove_draft_listing_copy", map[string]any{"item_id": fixtures.DemoItemID, "candidate_id": fixtures.DemoCandidateID, "idempotency_key": "draft-key-0004"}), "failed", "invalid_input")
}

// Staging an export validates and previews; it delivers nothing.
func TestStageExport_NeverDelivers(t *testing.T) {
	e := ingEnv(t)
	before := e.digest()
	env := e.call("trove_stage_export", map[string]any{"channel": "facebook_marketplace", "item_ids": []string{fixtures.DemoItemID, "item_1009"},
		"idempotency_key": "export-key-0001"})
	if env.isError {
		t.Fatalf("stage: %s", env.raw)
	}
	x := dataAs[catalog.StageExportOutput](t, env)
	deliver, _ := catalog.Lookup("trove_deliver_export")
	if x.Delivered || x.Status != "staged" || x.ApprovalRequirement != string(deliver.Approval) || x.NextStep != "trove_propose_export_delivery" ||
		len(x.Items) != 2 || !domain.ValidID("export", x.ExportID) {
		t.Fatalf("export = %+v", x)
	}
	if !x.Items[0].Valid || x.Items[0].PriceCents == nil || x.Items[0].Version != 8 || !x.Items[0].UntrustedContent {
		t.Errorf("item_991 = %+v", x.Items[0])
	}
	if x.Items[1].Valid || !slices.ContainsFunc(x.Items[1].Warnings, func(w string) bool { return strings.Contains(w, "withdrawn") }) {
		t.Errorf("withdrawn item = %+v", x.Items[1])
	}
	ingAssertOnlyChanged(t, before, e.digest(), "export_drafts", "export_draft_items", "idempotency_keys", "tenant_usage") // a staged export counts in the quota
	for _, ev := range e.allEvents() {
		if ev.Impact.PublicStateChanged || ev.Impact.CanonicalStateChanged {
			t.Errorf("event %s claims a public or canonical change", ev.ID)
		}
	}
	wantCode(t, e.call("trove_stage_export", map[string]any{"channel": "ebay", "item_ids": []string{fixtures.DemoItemID, fixtures.DemoItemID},
		"idempotency_key": "export-key-0002"}), "failed", "invalid_input")
	wantCode(t, e.call("trove_stage_export", map[string]any{"channel": "ebay", "item_ids": []string{"item_1290"},
		"idempotency_key": "export-key-0003"}), "failed", "invalid_reference")
}

// The new tools' envelopes validate against the outputSchema they advertise.
func TestIngestion_EnvelopesMatchAdvertisedSchemas(t *testing.T) {
	e := ingEnv(t)
	res, err := e.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	calls := []struct {
		tool string
		args map[string]any
	}{
		{"trove_map_csv_columns", map[string]any{"csv_text": "title,qty\nLamp,2\n"}},
		{"trove_preview_csv_import", map[string]any{"sale_id": fixtures.PublishedSaleID, "csv_text": "title,qty\nLamp,2\n,x\n"}},
		{"trove_apply_csv_import", map[string]any{"sale_id": fixtures.PublishedSaleID, "csv_text": "title\nLamp\n", "idempotency_key": "schema-0001"}},
		{"trove_run_manual_import", map[string]any{"sale_id": fixtures.PublishedSaleID, "rows": []map[string]any{{"title": "Lamp"}}, "idempotency_key": "schema-0002"}},
		{"trove_create_status_update_candidate", map[string]any{"item_id": fixtures.DemoItemID, "reported_status": "on_hold", "effective_at": "2026-06-20T10:00:00Z", "source": "staff_report", "idempotency_key": "schema-0003"}},
		{"trove_attach_candidate_photo", map[string]any{"candidate_id": fixtures.DemoCandidateID, "image_base64": b64(ingPNG(t, 2, 2, 1)), "idempotency_key": "schema-0004"}},
		{"trove_create_media_attachment_candidate", map[string]any{"item_id": fixtures.DemoItemID, "image_base64": b64(ingPNG(t, 2, 3, 1)), "idempotency_key": "schema-0005"}},
		{"trove_draft_listing_copy", map[string]any{"item_id": fixtures.DemoItemID, "idempotency_key": "schema-0006"}},
		{"trove_stage_export", map[string]any{"channel": "csv_file", "item_ids": []string{fixtures.DemoItemID}, "idempotency_key": "schema-0007"}},
		{"trove_attach_candidate_photo", map[string]any{"candidate_id": fixtures.DemoCandidateID, "image_base64": "/tmp/x.png", "idempotency_key": "schema-0008"}},
	}
	for _, c := range calls {
		var schema *mcp.Tool
		for _, tl := range res.Tools {
			if tl.Name == c.tool {
				schema = tl
			}
		}
		if schema == nil {
			t.Fatalf("%s is not listed for the demo owner", c.tool)
		}
		raw, _ := jsonMarshal(schema.OutputSchema)
		resolved := ingResolveSchema(t, raw)
		env := e.call(c.tool, c.args)
		var v any
		if err := jsonUnmarshal([]byte(env.raw), &v); err != nil {
			t.Fatal(err)
		}
		if err := resolved.Validate(v); err != nil {
			t.Errorf("%s: envelope does not match outputSchema: %v\n%s", c.tool, err, env.raw)
		}
	}
}

func ingResolveSchema(t testing.TB, raw []byte) *jsonschema.Resolved {
	t.Helper()
	var s jsonschema.Schema
	if err := jsonUnmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("output schema does not resolve: %v", err)
	}
	return r
}
