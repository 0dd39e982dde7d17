package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// metaFor is meta for another tool's idempotency scope.
func metaFor(p domain.Principal, tool, key, fingerprint, eventID string) domain.WriteMeta {
	w := meta(p, key, fingerprint, eventID)
	w.Idem.Tool = tool
	w.Event.Tool.Name = tool
	return w
}

func importRows() []domain.ImportRow {
	return []domain.ImportRow{
		{Row: 1, Kind: domain.CandidateNewItem, Title: "Brass lamp", Category: "lighting.lamp", Quantity: 2, OriginalHash: "sha256:aa",
			Cells: []domain.Cell{{Column: "title", Value: "Brass lamp"}}},
		{Row: 2, Kind: domain.CandidateNewItem, Title: "Oak chair", SuppliedPriceCents: i64(3000), OriginalHash: "sha256:bb"},
		{Row: 3, Kind: domain.CandidateStatusUpdate, ItemID: "item_a1", ReportedStatus: domain.ItemSold, OriginalHash: "sha256:cc",
			SuppliedPriceCents: i64(999)},
	}
}

func TestRunImport_OneRunRecordsAndCandidatesInOneTransaction(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	p := principal(t, s, "")
	before, counts := mustDigest(t, s), mustCounts(t, s)
	var progress [][2]int
	res, out, err := s.RunImport(ctx, p, metaFor(p, "trove_apply_csv_import", "imp-1", "sha256:f1", "event_1"), domain.NewImport{
		SaleID: saleA1, Kind: domain.ImportCSV, SourceLabel: "family\u202e sheet", ContentHash: domain.OriginalHash([]byte("x")),
		ContentBytes: 1, Mapping: []domain.ColumnMapping{{Column: "title", Field: "title"}}, Rows: importRows(),
		Progress: func(d, n int) { progress = append(progress, [2]int{d, n}) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.SourceRecordCount != 3 || res.CandidateCount != 2 || res.StatusUpdateCandidateCount != 1 || res.Status != domain.ImportRunCompleted ||
		len(res.CandidateIDs) != 2 || len(res.StatusUpdateCandidateIDs) != 1 || res.RejectedRowCount != 0 || out.Replayed {
		t.Fatalf("result = %+v", res)
	}
	if !slices.Equal(progress, [][2]int{{3, 3}}) {
		t.Errorf("progress = %v", progress)
	}
	after := mustCounts(t, s)
	for tb, d := range map[string]int64{"source_descriptors": 1, "import_runs": 1, "import_run_details": 1, "source_records": 3,
		"inventory_candidates": 3, "candidate_item_changes": 1, "plugin_events": 1, "idempotency_keys": 1} {
		if after[tb]-counts[tb] != d {
			t.Errorf("%s: +%d, want +%d", tb, after[tb]-counts[tb], d)
		}
	}
	changed := diffKeys(before, mustDigest(t, s))
	slices.Sort(changed)
	if want := []string{"candidate_item_changes", "idempotency_keys", "import_run_details", "import_runs", "inventory_candidates",
		"plugin_events", "source_descriptors", "source_records", "tenant_usage"}; !slices.Equal(changed, want) {
		t.Fatalf("changed tables %v, want %v (items never)", changed, want)
	}
	// Provenance: a csv_upload descriptor naming the client, label cleaned;
	// records keep the normalised row and its original hash.
	var kind, label, client string
	if err := s.r.QueryRow("SELECT kind, label, client_id FROM source_descriptors WHERE id = ?", res.SourceDescriptorID).Scan(&kind, &label, &client); err != nil {
		t.Fatal(err)
	}
	if kind != "csv_upload" || label != "family sheet" || client != clientDemo {
		t.Errorf("descriptor = %s %q %s", kind, label, client)
	}
	var payload string
	if err := s.r.QueryRow("SELECT payload FROM source_records WHERE import_run_id = ? AND ordinal = 1", res.ImportRunID).Scan(&payload); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(payload, `"original_sha256":"sha256:aa"`) || !strings.Contains(payload, `"cells":[{"column":"title","value":"Brass lamp"}]`) {
		t.Errorf("payload = %s", payload)
	}
	// The status report is a candidate about item_a1 that records what it
	// claims and what the item was; no price is kept from it.
	var item, observed, reported, source string
	var version int
	var price *int64
	if err := s.r.QueryRow(`SELECT c.item_id, c.observed_status, c.observed_version, c.reported_status, c.report_source, i.supplied_price_cents
		FROM candidate_item_changes c JOIN inventory_candidates i ON i.id = c.candidate_id WHERE c.candidate_id = ?`,
		res.StatusUpdateCandidateIDs[0]).Scan(&item, &observed, &version, &reported, &source, &price); err != nil {
		t.Fatal(err)
	}
	if item != "item_a1" || observed != domain.ItemPublished || version != 1 || reported != "sold" || source != "spreadsheet" || price != nil {
		t.Errorf("status report = %s %s v%d %s %s %v", item, observed, version, reported, source, price)
	}
}

func TestRunImport_StrictRefusalWritesNothingAndAFixedRetrySucceeds(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	p := principal(t, s, "")
	w := metaFor(p, "trove_apply_csv_import", "imp-strict", "sha256:f1", "event_1")
	cases := map[string][]domain.ImportRow{
		"empty title": {{Row: 1, Kind: domain.CandidateNewItem, Title: "\u200b"}},
		"foreign item": append(importRows()[:1],
			domain.ImportRow{Row: 2, Kind: domain.CandidateStatusUpdate, ItemID: "item_b1", ReportedStatus: domain.ItemSold}),
		"item of another sale": {{Row: 1, Kind: domain.CandidateStatusUpdate, ItemID: "item_a5", ReportedStatus: domain.ItemSold}},
		"row error":            {{Row: 1, Kind: domain.CandidateNewItem, Title: "x", Issues: []domain.RowIssue{{Code: "invalid_price", Severity: domain.SeverityError}}}},
	}
	before := mustDigest(t, s)
	for name, rows := range cases {
		_, _, err := s.RunImport(ctx, p, w, domain.NewImport{SaleID: saleA1, Kind: domain.ImportCSV, Rows: rows})
		var ie *domain.InputError
		if !errors.As(err, &ie) || ie.Field != "csv_text" || !strings.Contains(ie.Reason, "row ") {
			t.Errorf("%s: err = %v", name, err)
		}
		if strings.Contains(fmt.Sprint(err), "item_b1") {
			t.Errorf("%s: the error names a foreign item", name)
		}
	}
	if changed := diffKeys(before, mustDigest(t, s)); len(changed) != 0 {
		t.Fatalf("a refused import wrote %v", changed)
	}
	// Nothing was stored under the key: the fixed rows go through with it.
	if _, out, err := s.RunImport(ctx, p, w, domain.NewImport{SaleID: saleA1, Kind: domain.ImportCSV, Rows: importRows()}); err != nil || out.Replayed {
		t.Fatalf("fixed retry: %v %+v", err, out)
	}
}

func TestRunImport_SkipInvalidRowsKeepsEveryRecord(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	p := principal(t, s, "")
	rows := append(importRows(), domain.ImportRow{Row: 4, Kind: domain.CandidateStatusUpdate, ItemID: "item_zzz", ReportedStatus: domain.ItemSold})
	res, _, err := s.RunImport(ctx, p, metaFor(p, "trove_run_manual_import", "imp-skip", "sha256:f1", "event_1"),
		domain.NewImport{SaleID: saleA1, Kind: domain.ImportManual, Rows: rows, SkipInvalidRows: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.SourceRecordCount != 4 || res.RejectedRowCount != 1 || res.Status != domain.ImportRunWithRejects ||
		len(res.RejectedRows) != 1 || res.RejectedRows[0].Code != "unknown_item" || res.RejectedRows[0].Row != 4 {
		t.Fatalf("result = %+v", res)
	}
	var records, cands, rejected int
	_ = s.r.QueryRow("SELECT count(*) FROM source_records WHERE import_run_id = ?", res.ImportRunID).Scan(&records)
	_ = s.r.QueryRow("SELECT count(*) FROM inventory_candidates WHERE import_run_id = ?", res.ImportRunID).Scan(&cands)
	_ = s.r.QueryRow("SELECT rows_rejected FROM import_run_details WHERE import_run_id = ?", res.ImportRunID).Scan(&rejected)
	if records != 4 || cands != 3 || rejected != 1 {
		t.Errorf("records %d candidates %d rejected %d", records, cands, rejected)
	}
	// A manual import uses the client's own mcp_client descriptor.
	var kind string
	_ = s.r.QueryRow("SELECT kind FROM source_descriptors WHERE id = ?", res.SourceDescriptorID).Scan(&kind)
	if kind != "mcp_client" {
		t.Errorf("descriptor kind = %s", kind)
	}
	// No valid row at all still fails, skip or not.
	_, _, err = s.RunImport(ctx, p, metaFor(p, "trove_run_manual_import", "imp-none", "sha256:f2", "event_2"),
		domain.NewImport{SaleID: saleA1, Kind: domain.ImportManual, Rows: rows[3:], SkipInvalidRows: true})
	if !errors.Is(err, domain.ErrInvalidInput) {
		t.Errorf("no valid row: %v", err)
	}
}

func TestRunImport_ReplayConflictAndForeignSale(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	p := principal(t, s, "")
	w := metaFor(p, "trove_apply_csv_import", "imp-idem", "sha256:f1", "event_1")
	in := domain.NewImport{SaleID: saleA1, Kind: domain.ImportCSV, Rows: importRows()}
	first, _, err := s.RunImport(ctx, p, w, in)
	if err != nil {
		t.Fatal(err)
	}
	before := mustDigest(t, s)
	w2 := w
	w2.Event.ID = "event_2"
	again, out, err := s.RunImport(ctx, p, w2, in)
	if err != nil || !out.Replayed || out.OriginalEventID != "event_1" || again.ImportRunID != first.ImportRunID ||
		!slices.Equal(again.CandidateIDs, first.CandidateIDs) {
		t.Fatalf("replay: %v %+v %+v", err, out, again)
	}
	w2.Idem.Fingerprint = "sha256:other"
	if _, _, err := s.RunImport(ctx, p, w2, in); !errors.Is(err, domain.ErrIdempotencyConflict) {
		t.Fatalf("conflict: %v", err)
	}
	if changed := diffKeys(before, mustDigest(t, s)); len(changed) != 0 {
		t.Fatalf("replay or conflict wrote %v", changed)
	}
	var re *domain.RefError
	_, _, err = s.RunImport(ctx, p, metaFor(p, "trove_apply_csv_import", "imp-b", "sha256:f3", "event_3"),
		domain.NewImport{SaleID: saleB1, Kind: domain.ImportCSV, Rows: importRows()[:1]})
	if !errors.As(err, &re) || !re.CrossTenant || re.Field != "sale_id" {
		t.Errorf("foreign sale: %v", err)
	}
}

func TestImportTargets_ReadsOnlyAndHidesForeignItems(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	p := principal(t, s, "")
	before := mustDigest(t, s)
	got, err := s.ImportTargets(ctx, p, saleA1, []string{"item_a1", "item_a5", "item_b1", "item_nope", "item_a1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Items) != 2 || got.Items["item_a1"].SaleID != saleA1 || got.Items["item_a5"].SaleID != saleA2 {
		t.Errorf("items = %+v", got.Items)
	}
	if _, err := s.ImportTargets(ctx, p, saleB1, nil); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("foreign sale: %v", err)
	}
	if changed := diffKeys(before, mustDigest(t, s)); len(changed) != 0 {
		t.Errorf("a read wrote %v", changed)
	}
}

func TestCreateStatusReport_IsACandidateNeverAStatusChange(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	p := principal(t, s, "")
	before := mustDigest(t, s)
	at := epoch.Add(-time.Hour)
	res, _, err := s.CreateStatusReport(ctx, p, metaFor(p, "trove_create_status_update_candidate", "st-1", "sha256:f", "event_1"),
		domain.NewStatusReport{ItemID: "item_a2", ReportedStatus: domain.ItemSold, EffectiveAt: at, Source: "buyer_message", Notes: "paid\u202e cash"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Kind != domain.CandidateStatusUpdate || res.ReviewStatus != domain.ReviewNeedsReview || res.ObservedItemStatus != domain.ItemPublished ||
		res.SaleID != saleA1 || res.ImportRunID == "" || res.SourceRecordID == "" {
		t.Fatalf("result = %+v", res)
	}
	changed := diffKeys(before, mustDigest(t, s))
	for _, tb := range changed {
		if tb == "items" || tb == "item_photos" || strings.Contains(tb, "status") {
			t.Errorf("%s changed: a status report never changes an item", tb)
		}
	}
	var notes, eff string
	_ = s.r.QueryRow("SELECT notes FROM inventory_candidates WHERE id = ?", res.CandidateID).Scan(&notes)
	_ = s.r.QueryRow("SELECT effective_at FROM candidate_item_changes WHERE candidate_id = ?", res.CandidateID).Scan(&eff)
	if notes != "paid cash" || eff != ts(at) {
		t.Errorf("notes %q effective_at %q", notes, eff)
	}
	for _, in := range []domain.NewStatusReport{
		{ItemID: "item_b1", ReportedStatus: "sold", EffectiveAt: at, Source: "x"},
		{ItemID: "item_a2", ReportedStatus: "published", EffectiveAt: at, Source: "x"},
		{ItemID: "item_a2", ReportedStatus: "sold", Source: "x"},
	} {
		if _, _, err := s.CreateStatusReport(ctx, p, metaFor(p, "trove_create_status_update_candidate", "st-2", "sha256:g", "event_2"), in); err == nil {
			t.Errorf("%+v accepted", in)
		}
	}
}

func pngOf(t *testing.T, w, h int, seed uint8) domain.PhotoUpload {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	img.Set(0, 0, color.RGBA{seed, 1, 2, 255})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return domain.PhotoUpload{Bytes: b.Bytes(), MimeType: "image/png", Ext: "png", Width: w, Height: h, Size: b.Len(),
		ContentHash: domain.OriginalHash(b.Bytes())}
}

// assetFiles lists every file under the assets directory.
func assetFiles(t *testing.T, s *Store) []string {
	t.Helper()
	var out []string
	_ = filepath.WalkDir(s.AssetsDir(), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, path)
		}
		return nil
	})
	return out
}

func TestMedia_StoredAtAServerPathDeduplicatedNeverOnAnItem(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	p := principal(t, s, "")
	up := pngOf(t, 3, 2, 1)
	before := mustDigest(t, s)
	res, _, err := s.AttachCandidateMedia(ctx, p, metaFor(p, "trove_attach_candidate_photo", "m-1", "sha256:f", "event_1"),
		domain.NewCandidateMedia{CandidateID: "candidate_csv1", Upload: &up, Caption: "front\u200b view"})
	if err != nil {
		t.Fatal(err)
	}
	hex := strings.TrimPrefix(up.ContentHash, "sha256:")
	want := filepath.Join(filepath.Dir(s.Path()), "assets", tenantA, hex[:2], hex+".png")
	files := assetFiles(t, s)
	if !slices.Equal(files, []string{want}) {
		t.Fatalf("files = %v, want %v", files, want)
	}
	if got := readFile(t, want); !bytes.Equal(got, up.Bytes) {
		t.Error("stored bytes differ")
	}
	if fi, _ := os.Stat(want); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v", fi.Mode().Perm())
	}
	if res.AssetReused || res.AlreadyAttached || res.MimeType != "image/png" || res.Width != 3 || res.ContentHash != up.ContentHash {
		t.Errorf("result = %+v", res)
	}
	changed := diffKeys(before, mustDigest(t, s))
	slices.Sort(changed)
	if w := []string{"candidate_media", "idempotency_keys", "plugin_events", "source_assets", "tenant_usage"}; !slices.Equal(changed, w) {
		t.Errorf("changed = %v, want %v", changed, w)
	}
	var caption, path string
	_ = s.r.QueryRow("SELECT caption FROM candidate_media WHERE id = ?", res.MediaID).Scan(&caption)
	_ = s.r.QueryRow("SELECT storage_path FROM source_assets WHERE id = ?", res.AssetID).Scan(&path)
	if caption != "front view" || path != "assets/"+tenantA+"/"+hex[:2]+"/"+hex+".png" {
		t.Errorf("caption %q path %q", caption, path)
	}

	// The same bytes again, proposed for an item: one asset, one file.
	res2, _, err := s.CreateMediaCandidate(ctx, p, metaFor(p, "trove_create_media_attachment_candidate", "m-2", "sha256:g", "event_2"),
		domain.NewCandidateMedia{ItemID: "item_a1", Upload: &up})
	if err != nil {
		t.Fatal(err)
	}
	if !res2.AssetReused || res2.AssetID != res.AssetID || res2.Kind != domain.CandidateAttachMedia || res2.ItemID != "item_a1" || len(assetFiles(t, s)) != 1 {
		t.Errorf("dedupe: %+v files %v", res2, assetFiles(t, s))
	}
	var n int
	_ = s.r.QueryRow("SELECT count(*) FROM item_photos WHERE item_id = 'item_a1'").Scan(&n)
	if n != 2 {
		t.Errorf("item_a1 has %d photos: an attach_media candidate never touches the item", n)
	}
	// By asset id, to another candidate; attaching it twice is a no-op.
	for k := range 2 {
		r, _, err := s.AttachCandidateMedia(ctx, p, metaFor(p, "trove_attach_candidate_photo", fmt.Sprintf("m-3-%d", k), "sha256:h", fmt.Sprintf("event_3%d", k)),
			domain.NewCandidateMedia{CandidateID: res2.CandidateID, AssetID: res.AssetID})
		if err != nil || r.AlreadyAttached != true {
			t.Errorf("attach by id #%d: %+v %v (an attach_media candidate already holds its asset)", k, r, err)
		}
	}
}

func TestMedia_RefusalsWriteNoRowAndNoFile(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	p := principal(t, s, "")
	pB := principal(t, s, credB)
	// An asset of tenant B.
	upB := pngOf(t, 2, 2, 9)
	resB, _, err := s.CreateMediaCandidate(ctx, pB, metaFor(pB, "trove_create_media_attachment_candidate", "b-1", "sha256:b", "event_b"),
		domain.NewCandidateMedia{ItemID: "item_b1", Upload: &upB})
	if err != nil {
		t.Fatal(err)
	}
	filesBefore := assetFiles(t, s)
	// A promoted candidate takes no photo.
	if _, err := rawDB(t, s.Path()).Exec("INSERT INTO inventory_candidates (id, tenant_id, sale_id, kind, title, review_status, created_at) VALUES ('candidate_done', ?, ?, 'new_item', 'x', 'promoted', ?)", tenantA, saleA1, ts(epoch)); err != nil {
		t.Fatal(err)
	}
	before := mustDigest(t, s)
	up := pngOf(t, 4, 4, 2)
	cases := map[string]struct {
		in   domain.NewCandidateMedia
		want error
	}{
		"promoted candidate":  {domain.NewCandidateMedia{CandidateID: "candidate_done", Upload: &up}, domain.ErrTransitionInvalid},
		"foreign candidate":   {domain.NewCandidateMedia{CandidateID: resB.CandidateID, Upload: &up}, domain.ErrNotFound},
		"foreign asset":       {domain.NewCandidateMedia{CandidateID: "candidate_csv1", AssetID: resB.AssetID}, domain.ErrNotFound},
		"both sources":        {domain.NewCandidateMedia{CandidateID: "candidate_csv1", AssetID: resB.AssetID, Upload: &up}, domain.ErrInvalidInput},
		"bytes not as hashed": {domain.NewCandidateMedia{CandidateID: "candidate_csv1", Upload: &domain.PhotoUpload{Bytes: []byte("x"), MimeType: "image/png", Width: 1, Height: 1, Size: 1, ContentHash: up.ContentHash}}, domain.ErrInvalidInput},
	}
	for name, c := range cases {
		_, _, err := s.AttachCandidateMedia(ctx, p, metaFor(p, "trove_attach_candidate_photo", "r-"+strings.ReplaceAll(name, " ", "-"), "sha256:r", "event_r"), c.in)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", name, err, c.want)
		}
	}
	if changed := diffKeys(before, mustDigest(t, s)); len(changed) != 0 {
		t.Errorf("refusals wrote %v", changed)
	}
	if files := assetFiles(t, s); !slices.Equal(files, filesBefore) {
		t.Errorf("refusals left files: %v", files)
	}

	// The per-candidate limit is checked after the asset is written: the
	// failed call removes the file it wrote.
	for k := range domain.MaxPhotosPerCandidate {
		u := pngOf(t, 2, 3, uint8(100+k))
		if _, _, err := s.AttachCandidateMedia(ctx, p, metaFor(p, "trove_attach_candidate_photo", fmt.Sprintf("lim-%02d", k), "sha256:l", fmt.Sprintf("event_l%d", k)),
			domain.NewCandidateMedia{CandidateID: "candidate_csv1", Upload: &u}); err != nil {
			t.Fatal(err)
		}
	}
	filesFull, beforeFull := assetFiles(t, s), mustDigest(t, s)
	extra := pngOf(t, 5, 5, 250)
	_, _, err = s.AttachCandidateMedia(ctx, p, metaFor(p, "trove_attach_candidate_photo", "lim-over", "sha256:o", "event_o"),
		domain.NewCandidateMedia{CandidateID: "candidate_csv1", Upload: &extra})
	var ie *domain.InputError
	if !errors.As(err, &ie) || !strings.Contains(ie.Reason, "12 photos") {
		t.Fatalf("over the limit: %v", err)
	}
	if files := assetFiles(t, s); !slices.Equal(files, filesFull) {
		t.Errorf("a failed attach left a file behind: %d files, had %d", len(files), len(filesFull))
	}
	if changed := diffKeys(beforeFull, mustDigest(t, s)); len(changed) != 0 {
		t.Errorf("a failed attach wrote %v", changed)
	}
	// No temporary file is ever left in the assets tree.
	for _, f := range assetFiles(t, s) {
		if strings.Contains(filepath.Base(f), ".upload-") {
			t.Errorf("temporary file left: %s", f)
		}
	}
}

func TestDraftListingCopy_StoresARevisionOnlyWhenAsked(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	p := principal(t, s, "")
	before := mustDigest(t, s)
	res, _, err := s.DraftListingCopy(ctx, p, metaFor(p, "trove_draft_listing_copy", "d-1", "sha256:d", "event_1"),
		domain.DraftRequest{ItemID: "item_a1", Tone: "warm"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Persisted || res.DraftID != "" || res.SourceKind != "item" || res.Copy.Title != "Title item_a1" {
		t.Fatalf("draft = %+v", res)
	}
	changed := diffKeys(before, mustDigest(t, s))
	slices.Sort(changed)
	if w := []string{"idempotency_keys", "plugin_events"}; !slices.Equal(changed, w) {
		t.Errorf("an unpersisted draft changed %v", changed)
	}
	for k := 1; k <= 2; k++ {
		res, _, err = s.DraftListingCopy(ctx, p, metaFor(p, "trove_draft_listing_copy", fmt.Sprintf("d-p%d", k), "sha256:e", fmt.Sprintf("event_p%d", k)),
			domain.DraftRequest{CandidateID: "candidate_csv1", Persist: true})
		if err != nil || !res.Persisted || res.Revision != k || res.SourceVersion != 3 {
			t.Fatalf("persisted draft %d: %+v %v", k, res, err)
		}
	}
	if _, err := rawDB(t, s.Path()).Exec("UPDATE draft_revisions SET title = 'x'"); err == nil {
		t.Error("a draft revision was updated in place")
	}
	var title string
	_ = s.r.QueryRow("SELECT title FROM items WHERE id = 'item_a1'").Scan(&title)
	if title != "Title item_a1" {
		t.Error("drafting changed the item")
	}
}

func TestStageExport_SnapshotsValidatesAndNeverDelivers(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	p := principal(t, s, "")
	before := mustDigest(t, s)
	res, out, err := s.StageExport(ctx, p, metaFor(p, "trove_stage_export", "x-1", "sha256:x", "event_1"),
		domain.NewExport{Channel: domain.ChannelEbay, ItemIDs: []string{"item_a1", "item_a4", "item_a7"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != domain.ExportStaged || len(res.Listings) != 3 || res.ValidCount != 1 || !slices.Equal(out.Related.ItemIDs, []string{"item_a1", "item_a4", "item_a7"}) {
		t.Fatalf("export = %+v", res)
	}
	if l := res.Listings[0]; !l.Valid || l.PhotoCount != 1 || l.Version != 1 || *l.PriceCents != 2500 {
		t.Errorf("item_a1 = %+v", l)
	}
	if l := res.Listings[1]; l.Valid || !slices.ContainsFunc(l.Warnings, func(w string) bool { return strings.Contains(w, "no published photo") }) {
		t.Errorf("item_a4 (no photo) = %+v", l)
	}
	if l := res.Listings[2]; l.Valid || !slices.ContainsFunc(l.Warnings, func(w string) bool { return strings.Contains(w, "sold") }) {
		t.Errorf("item_a7 (sold) = %+v", l)
	}
	changed := diffKeys(before, mustDigest(t, s))
	slices.Sort(changed)
	if w := []string{"export_draft_items", "export_drafts", "idempotency_keys", "plugin_events", "tenant_usage"}; !slices.Equal(changed, w) {
		t.Errorf("staging changed %v", changed)
	}
	var snap string
	_ = s.r.QueryRow("SELECT snapshot FROM export_draft_items WHERE export_id = ? AND position = 1", res.ExportID).Scan(&snap)
	var m map[string]any
	if err := json.Unmarshal([]byte(snap), &m); err != nil || m["item_id"] != "item_a1" || m["internal_price_guidance_cents"] != nil {
		t.Errorf("snapshot = %s", snap)
	}
	db := rawDB(t, s.Path())
	for _, q := range []string{"UPDATE export_draft_items SET item_version = 9", "UPDATE export_drafts SET channel = 'etsy'"} {
		if _, err := db.Exec(q); err == nil {
			t.Errorf("%s: an export snapshot changed", q)
		}
	}
	for _, in := range []domain.NewExport{
		{Channel: "myspace", ItemIDs: []string{"item_a1"}},
		{Channel: domain.ChannelEtsy, ItemIDs: []string{"item_a1", "item_a1"}},
		{Channel: domain.ChannelEtsy, ItemIDs: []string{"item_b1"}},
	} {
		if _, _, err := s.StageExport(ctx, p, metaFor(p, "trove_stage_export", "x-bad", "sha256:y", "event_2"), in); err == nil {
			t.Errorf("%+v accepted", in)
		}
	}
}

// A large import raises the writer's page cache for its own transaction
// only: after it — committed or refused — the writer is back at its
// default, so the memory stays with the import.
func TestRunImport_LargeImportCacheIsItsOwn(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	p := principal(t, s, "")
	rows := make([]domain.ImportRow, bigImportRows+1)
	for i := range rows {
		rows[i] = domain.ImportRow{Row: i + 1, Kind: domain.CandidateNewItem, Title: fmt.Sprintf("Lot %d lamp", i), OriginalHash: fmt.Sprintf("sha256:%04x", i)}
	}
	cacheNow := func() int {
		var c int
		if err := s.w.QueryRowContext(ctx, "PRAGMA cache_size").Scan(&c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	refused := append(append([]domain.ImportRow{}, rows...), domain.ImportRow{Row: len(rows) + 1, Kind: domain.CandidateNewItem, Title: "\u200b"})
	before := mustDigest(t, s)
	if _, _, err := s.RunImport(ctx, p, metaFor(p, "trove_apply_csv_import", "imp-big-0", "sha256:f0", "event_big0"), domain.NewImport{SaleID: saleA1, Kind: domain.ImportCSV, Rows: refused}); err == nil {
		t.Fatal("an import with an empty title was accepted")
	}
	if changed := diffKeys(before, mustDigest(t, s)); len(changed) != 0 || cacheNow() != writerCacheKiB {
		t.Fatalf("after a refused large import: wrote %v, writer cache %d (want %d)", changed, cacheNow(), writerCacheKiB)
	}
	_, _, err := s.RunImport(ctx, p, metaFor(p, "trove_apply_csv_import", "imp-big-1", "sha256:f1", "event_big1"), domain.NewImport{SaleID: saleA1, Kind: domain.ImportCSV, Rows: rows})
	if err != nil && !errors.Is(err, domain.ErrInvalidInput) { // a quota may refuse it: the cache must come back either way
		t.Fatal(err)
	}
	if c := cacheNow(); c != writerCacheKiB {
		t.Fatalf("after a large import: writer cache %d, want %d", c, writerCacheKiB)
	}
}
