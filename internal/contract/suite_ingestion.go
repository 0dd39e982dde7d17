package contract

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/domain"
)

// runIngestion runs the contract cases of the ingestion writes (§13) beyond the candidate chain.
//
// Every write succeeds with the records it names and nothing canonical
// touched (no item, photo or status event changes), replays a used key
// without writing, refuses a reused key with other input, and on every
// refusal — invalid input, an unknown or another tenant's record (the same
// RefError, CrossTenant telling which), a sale outside a sale-scoped
// member's assignment — returns the error AND writes nothing.
func runIngestion(t *testing.T, open func(t *testing.T) Instance) {
	t.Run("Ingest/ImportTargets", func(t *testing.T) { testImportTargets(t, open(t)) })
	t.Run("Ingest/RunImport", func(t *testing.T) { testRunImport(t, open(t)) })
	t.Run("Ingest/RunImportRefused", func(t *testing.T) { testRunImportRefused(t, open(t)) })
	t.Run("Ingest/RunImportSkipInvalidRows", func(t *testing.T) { testRunImportSkip(t, open(t)) })
	t.Run("Ingest/RunImportSaleScoped", func(t *testing.T) { testRunImportScoped(t, open(t)) })
	t.Run("Ingest/RunImportLarge", func(t *testing.T) { testRunImportLarge(t, open(t)) })
	t.Run("Ingest/StatusReport", func(t *testing.T) { testStatusReport(t, open(t)) })
	t.Run("Ingest/DraftListingCopy", func(t *testing.T) { testDraftListingCopy(t, open(t)) })
	t.Run("Ingest/StageExport", func(t *testing.T) { testStageExport(t, open(t)) })
	t.Run("Ingest/MediaAttach", func(t *testing.T) { testMediaAttach(t, open(t)) })
	t.Run("Ingest/MediaCandidate", func(t *testing.T) { testMediaCandidate(t, open(t)) })
	t.Run("Ingest/MediaRefused", func(t *testing.T) { testMediaRefused(t, open(t)) })
	t.Run("Ingest/MediaCandidateLimit", func(t *testing.T) { testMediaLimit(t, open(t)) })
	t.Run("Ingest/MediaSaleScoped", func(t *testing.T) { testMediaScoped(t, open(t)) })
}

// Tools of the ingestion writes, as the catalog names them.
const (
	toolApplyCSV     = "trove_apply_csv_import"
	toolManualImport = "trove_run_manual_import"
	toolStatusReport = "trove_create_status_update_candidate"
	toolDraftCopy    = "trove_draft_listing_copy"
	toolStageExport  = "trove_stage_export"
)

// ingMeta is meta for tool's idempotency scope.
func ingMeta(p domain.Principal, tool, key, fingerprint, eventID string) domain.WriteMeta {
	w := meta(p, key, fingerprint, eventID)
	w.Idem.Tool = tool
	w.Event.Tool.Name = tool
	return w
}

// ingDataset gives the suite's view of the dataset.
type ingDataset struct {
	items      map[string]domain.Item
	candidates map[string]domain.Candidate
}

func ingData() ingDataset {
	ds := Dataset()
	d := ingDataset{items: map[string]domain.Item{}, candidates: map[string]domain.Candidate{}}
	for _, it := range ds.Items {
		d.items[it.ID] = it
	}
	for _, c := range ds.Candidates {
		d.candidates[c.ID] = c
	}
	return d
}

// Items of the dataset the cases use (checked against it in ingItem).
const (
	ingLiveItem    = "item_1172" // LiveSaleID, published
	ingLiveItem2   = "item_1170" // LiveSaleID, on hold
	ingPubItem     = fixtures.DemoItemID
	ingDraftItem   = "item_1015" // PublishedSaleID, draft, no price
	ingOtherItem   = "item_1290" // OtherTenantID
	ingOtherCand   = "candidate_901"
	ingReviewCand  = "candidate_772" // PublishedSaleID, needs_review, new_item
	ingMissingItem = "item_404"
)

func (d ingDataset) item(t *testing.T, id, tenant, sale string) domain.Item {
	t.Helper()
	it, ok := d.items[id]
	if !ok || it.TenantID != tenant || (sale != "" && it.SaleID != sale) {
		t.Fatalf("the dataset's %s is %+v: the case needs an item of %s in %s", id, it, tenant, sale)
	}
	it.Version = max(it.Version, 1)
	return it
}

// ingItems is a digest of every item of p's tenant: what an ingestion
// write must never change (content, status, version, photos).
func ingItems(t *testing.T, b domain.Backend, p domain.Principal) map[string]string {
	t.Helper()
	out := map[string]string{}
	var after *domain.Keyset
	for pages := 0; ; pages++ {
		if pages > 100 {
			t.Fatal("item pagination does not end")
		}
		page, err := b.ListItems(ctx, p, domain.ItemQuery{Limit: domain.MaxPageSize, After: after})
		if err != nil {
			t.Fatalf("ListItems: %v", err)
		}
		for _, it := range page.Rows {
			price := "-"
			if it.PriceCents != nil {
				price = fmt.Sprint(*it.PriceCents)
			}
			var photos []string
			for _, ph := range it.Photos {
				photos = append(photos, fmt.Sprintf("%s:%v:%d", ph.ID, ph.Published, ph.Position))
			}
			out[it.ID] = fmt.Sprintf("v%d %s %q %q %s %s %s %v", it.Version, it.Status, it.Title, it.Description, price,
				it.Category, it.UpdatedAt.UTC().Format(time.RFC3339Nano), photos)
		}
		if page.NextCursor == "" {
			return out
		}
		if after, err = b.OpenCursor(ctx, p, "items", page.NextCursor); err != nil {
			t.Fatal(err)
		}
	}
}

// ingState is what a refusal must leave exactly as it was.
type ingState struct {
	counts map[string]int64
	items  map[string]string
}

func ingSnapshot(t *testing.T, in Instance, p domain.Principal) ingState {
	t.Helper()
	return ingState{counts: in.Counts(t), items: ingItems(t, in.Backend, p)}
}

// ingUnchanged fails unless nothing but bookkeeping changed since s.
func ingUnchanged(t *testing.T, in Instance, p domain.Principal, s ingState, what string) {
	t.Helper()
	if d := changed(s.counts, in.Counts(t)); len(d) > 0 {
		t.Fatalf("%s wrote: %v", what, d)
	}
	if !reflect.DeepEqual(s.items, ingItems(t, in.Backend, p)) {
		t.Fatalf("%s changed an item", what)
	}
}

// ingGrew checks that exactly the tables of want grew, by exactly that
// much (bookkeeping aside: each write adds its own one event), and that no
// item changed.
func ingGrew(t *testing.T, in Instance, p domain.Principal, s ingState, want map[string]int64, writes int64, what string) {
	t.Helper()
	after := in.Counts(t)
	for table, n := range after {
		if slices.Contains(bookkeeping, table) {
			continue
		}
		if d := n - s.counts[table]; d != want[table] {
			t.Errorf("%s: %s grew by %d, want %d", what, table, d, want[table])
		}
	}
	for table := range want {
		if _, ok := after[table]; !ok {
			t.Errorf("%s: no table %s", what, table)
		}
	}
	if d := after["plugin_events"] - s.counts["plugin_events"]; d != writes {
		t.Errorf("%s: plugin_events grew by %d, want %d (each write's own event)", what, d, writes)
	}
	if !reflect.DeepEqual(s.items, ingItems(t, in.Backend, p)) {
		t.Fatalf("%s changed an item", what)
	}
}

// ingEvent checks the last event: the write's own, successful, naming what it wrote.
func ingEvent(t *testing.T, in Instance, id, tool string, rel domain.Related) {
	t.Helper()
	events := in.Events(t)
	ev := events[len(events)-1]
	if ev.ID != id || ev.Outcome != domain.OutcomeSuccess || ev.Tool.Name != tool || ev.TenantID != fixtures.DemoTenantID ||
		!reflect.DeepEqual(ev.Related.Normalized(), rel.Normalized()) {
		t.Fatalf("write event = %+v, want %s %s related %+v", ev, id, tool, rel)
	}
}

func wantAssignment(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, domain.ErrSaleAssignment) {
		t.Fatalf("err = %v, want ErrSaleAssignment", err)
	}
}

func testImportTargets(t *testing.T, in Instance) {
	b, d := in.Backend, ingData()
	p := resolve(t, b, CredOwner)
	before := ingSnapshot(t, in, p)
	pub := d.item(t, ingPubItem, fixtures.DemoTenantID, fixtures.PublishedSaleID)
	live := d.item(t, ingLiveItem, fixtures.DemoTenantID, fixtures.LiveSaleID)
	d.item(t, ingOtherItem, fixtures.OtherTenantID, "")
	got, err := b.ImportTargets(ctx, p, fixtures.PublishedSaleID,
		[]string{ingPubItem, ingLiveItem, ingOtherItem, ingMissingItem, ingPubItem, "not an id"})
	if err != nil {
		t.Fatalf("ImportTargets: %v", err)
	}
	want := map[string]domain.ItemRef{
		pub.ID:  {ID: pub.ID, SaleID: pub.SaleID, Status: pub.Status, Version: pub.Version},
		live.ID: {ID: live.ID, SaleID: live.SaleID, Status: live.Status, Version: live.Version},
	}
	if got.SaleID != fixtures.PublishedSaleID || !reflect.DeepEqual(got.Items, want) {
		t.Fatalf("targets = %+v, want %+v (another tenant's item is absent, like a missing one)", got, want)
	}
	_, err = b.ImportTargets(ctx, p, fixtures.OtherPublishedSaleID, nil)
	wantRef(t, err, "sale_id", fixtures.OtherPublishedSaleID, true)
	_, err = b.ImportTargets(ctx, p, "sale_404", []string{ingPubItem})
	wantRef(t, err, "sale_id", "sale_404", false)
	_, err = b.ImportTargets(ctx, p, fixtures.PublishedSaleID, make([]string, domain.MaxImportRows+1))
	wantInput(t, err, "item_id")
	// A sale-scoped member: its sale only, and only the items it may see.
	s := resolve(t, b, CredScoped)
	sc, err := b.ImportTargets(ctx, s, fixtures.LiveSaleID, []string{ingLiveItem, ingPubItem})
	if err != nil || len(sc.Items) != 1 || sc.Items[ingLiveItem] != want[ingLiveItem] {
		t.Fatalf("scoped targets = %+v, %v; want %s only", sc, err, ingLiveItem)
	}
	_, err = b.ImportTargets(ctx, s, fixtures.PublishedSaleID, nil)
	wantAssignment(t, err)
	if _, err := b.ImportTargets(ctx, domain.Anonymous(), fixtures.PublishedSaleID, nil); !errors.Is(err, domain.ErrAuthRequired) {
		t.Fatalf("anonymous: %v, want ErrAuthRequired", err)
	}
	ingUnchanged(t, in, p, before, "a read")
}

func i64(v int64) *int64 { return &v }

// ingImportRows are three rows of LiveSaleID: two items and a sold report
// (whose price is never kept).
func ingImportRows(effective time.Time) []domain.ImportRow {
	return []domain.ImportRow{
		{Row: 1, Line: 2, Kind: domain.CandidateNewItem, Title: "Brass lamp", Category: "lighting.lamp", Quantity: 2,
			OriginalHash: "sha256:aa", Cells: []domain.Cell{{Column: "title", Value: "Brass lamp"}}},
		{Row: 2, Line: 3, Kind: domain.CandidateNewItem, Title: " Oak\u202e chair ", SuppliedPriceCents: i64(3000), OriginalHash: "sha256:bb"},
		{Row: 3, Line: 4, Kind: domain.CandidateStatusUpdate, ItemID: ingLiveItem, ReportedStatus: domain.ItemSold,
			EffectiveAt: &effective, SuppliedPriceCents: i64(999), OriginalHash: "sha256:cc"},
	}
}

func testRunImport(t *testing.T, in Instance) {
	b, d := in.Backend, ingData()
	p := resolve(t, b, CredOwner)
	live := d.item(t, ingLiveItem, fixtures.DemoTenantID, fixtures.LiveSaleID)
	effective := fixtures.Epoch.Add(-3 * time.Hour)
	imp := domain.NewImport{SaleID: fixtures.LiveSaleID, Kind: domain.ImportCSV, SourceLabel: "family\u202e sheet",
		ContentHash: domain.OriginalHash([]byte("csv")), ContentBytes: 3,
		Mapping: []domain.ColumnMapping{{Column: "title", Field: "title"}}, Rows: ingImportRows(effective)}
	var progress [][2]int
	imp.Progress = func(done, total int) { progress = append(progress, [2]int{done, total}) }
	before := ingSnapshot(t, in, p)
	w := ingMeta(p, toolApplyCSV, "imp-1", "sha256:i1", "event_imp1")
	res, out, err := b.RunImport(ctx, p, w, imp)
	if err != nil {
		t.Fatalf("RunImport: %v", err)
	}
	if !domain.ValidID(domain.PrefixRun, res.ImportRunID) || !domain.ValidID(domain.PrefixSource, res.SourceDescriptorID) ||
		res.SaleID != fixtures.LiveSaleID || res.Status != domain.ImportRunCompleted || res.SourceRecordCount != 3 ||
		res.CandidateCount != 2 || res.StatusUpdateCandidateCount != 1 || len(res.CandidateIDs) != 2 ||
		len(res.StatusUpdateCandidateIDs) != 1 || res.IDsTruncated || res.RejectedRowCount != 0 || res.RejectedRows == nil ||
		len(res.RejectedRows) != 0 {
		t.Fatalf("result = %+v", res)
	}
	if !slices.Equal(progress, [][2]int{{3, 3}}) {
		t.Errorf("progress = %v, want one report of 3 of 3", progress)
	}
	cands := append(slices.Clone(res.CandidateIDs), res.StatusUpdateCandidateIDs...)
	if out.Replayed || out.OriginalEventID != "event_imp1" || !slices.Equal(out.Related.SourceImportRunIDs, []string{res.ImportRunID}) ||
		len(out.Related.SourceImportRecordIDs) != 3 || !slices.Equal(out.Related.CandidateIDs, cands) || len(out.Related.ItemIDs) != 0 {
		t.Fatalf("outcome = %+v", out)
	}
	ingGrew(t, in, p, before, map[string]int64{"source_descriptors": 1, "import_runs": 1, "import_run_details": 1,
		"source_records": 3, "inventory_candidates": 3, "candidate_item_changes": 1, "idempotency_keys": 1}, 1, "an import")
	ingEvent(t, in, "event_imp1", toolApplyCSV, out.Related)

	// Provenance: the run and its records, each the row as normalised
	// (text cleaned, the original bytes' hash kept), hashed.
	run, err := b.GetImportRun(ctx, p, domain.ImportRunDetailQuery{RunID: res.ImportRunID, Limit: 10})
	if err != nil {
		t.Fatalf("GetImportRun: %v", err)
	}
	if run.Run.Kind != domain.ImportCSV || run.Run.SourceKind != domain.SourceKindCSVUpload || run.Run.RecordCount != 3 ||
		run.Run.Status != domain.ImportRunCompleted || run.Run.SourceDescriptorID != res.SourceDescriptorID ||
		run.Candidates.NeedsReview != 3 || len(run.Records) != 3 {
		t.Fatalf("run = %+v", run)
	}
	wantPayload := []string{
		`{"row":1,"line":2,"kind":"new_item","title":"Brass lamp","category":"lighting.lamp","quantity":2,"cells":[{"column":"title","value":"Brass lamp"}],"original_sha256":"sha256:aa"}`,
		`{"row":2,"line":3,"kind":"new_item","title":"Oak chair","supplied_price_cents":3000,"original_sha256":"sha256:bb"}`,
		`{"row":3,"line":4,"kind":"status_update","supplied_price_cents":999,"item_id":"` + ingLiveItem + `","reported_status":"sold","effective_at":"` +
			effective.Format(time.RFC3339Nano) + `","original_sha256":"sha256:cc"}`,
	}
	for i, rec := range run.Records {
		if rec.Ordinal != i+1 || rec.Payload != wantPayload[i] || rec.PayloadHash != domain.OriginalHash([]byte(rec.Payload)) ||
			!slices.Equal(rec.CandidateIDs, []string{cands[i]}) {
			t.Errorf("record %d = %+v\nwant payload %s", i+1, rec, wantPayload[i])
		}
	}
	// The candidates: reviewable, the status report about the item as it
	// was, without the row's price; the item itself untouched.
	oak, err := b.GetCandidate(ctx, p, res.CandidateIDs[1])
	if err != nil || oak.Title != "Oak chair" || !eqPtr(oak.SuppliedPriceCents, i64(3000)) || oak.Kind != domain.CandidateNewItem ||
		oak.ReviewStatus != domain.ReviewNeedsReview || oak.Quantity != 1 || oak.CreatedByClientID != p.Client.ID {
		t.Fatalf("candidate = %+v, %v", oak, err)
	}
	report, err := b.GetCandidate(ctx, p, res.StatusUpdateCandidateIDs[0])
	if err != nil || report.Kind != domain.CandidateStatusUpdate || report.Title != "Reported sold: "+ingLiveItem ||
		report.SuppliedPriceCents != nil || report.SaleID != fixtures.LiveSaleID || report.ImportRunID != res.ImportRunID {
		t.Fatalf("status report candidate = %+v, %v", report, err)
	}
	if got, _ := b.GetItem(ctx, p, ingLiveItem, domain.ItemIncludes{}); got.Status != live.Status || got.Version != live.Version {
		t.Fatalf("the reported item became %s v%d", got.Status, got.Version)
	}

	// Replay: the same key and input answer the first result, nothing written.
	after := ingSnapshot(t, in, p)
	again, out2, err := b.RunImport(ctx, p, ingMeta(p, toolApplyCSV, "imp-1", "sha256:i1", "event_imp2"), imp)
	if err != nil || !reflect.DeepEqual(again, res) || !out2.Replayed || out2.OriginalEventID != "event_imp1" ||
		!reflect.DeepEqual(out2.Related, out.Related) {
		t.Fatalf("replay = %+v %+v %v", again, out2, err)
	}
	if len(progress) != 1 {
		t.Errorf("a replay reported progress: %v", progress)
	}
	ingUnchanged(t, in, p, after, "a replay")
	// Conflict: the same key with other input is refused, nothing written.
	_, _, err = b.RunImport(ctx, p, ingMeta(p, toolApplyCSV, "imp-1", "sha256:i2", "event_imp3"), imp)
	if !errors.Is(err, domain.ErrIdempotencyConflict) {
		t.Fatalf("conflict: %v", err)
	}
	ingUnchanged(t, in, p, after, "a conflict")
	// A manual import of the same client uses its own mcp_client source,
	// the same for every typed import.
	m1, _, err := b.RunImport(ctx, p, ingMeta(p, toolManualImport, "man-1", "sha256:m1", "event_man1"),
		domain.NewImport{SaleID: fixtures.LiveSaleID, Kind: domain.ImportManual, Rows: ingImportRows(effective)[:1]})
	if err != nil {
		t.Fatalf("manual import: %v", err)
	}
	mid := ingSnapshot(t, in, p)
	m2, _, err := b.RunImport(ctx, p, ingMeta(p, toolManualImport, "man-2", "sha256:m2", "event_man2"),
		domain.NewImport{SaleID: fixtures.LiveSaleID, Kind: domain.ImportManual, Rows: ingImportRows(effective)[:2]})
	if err != nil || m2.SourceDescriptorID != m1.SourceDescriptorID || m1.SourceDescriptorID == res.SourceDescriptorID {
		t.Fatalf("manual imports' sources = %s, %s (%v); want the client's one source", m1.SourceDescriptorID, m2.SourceDescriptorID, err)
	}
	ingGrew(t, in, p, mid, map[string]int64{"import_runs": 1, "import_run_details": 1, "source_records": 2,
		"inventory_candidates": 2, "idempotency_keys": 1}, 1, "a second manual import")
	mrun, err := b.GetImportRun(ctx, p, domain.ImportRunDetailQuery{RunID: m2.ImportRunID})
	if err != nil || mrun.Run.Kind != domain.ImportManual || mrun.Run.SourceKind != "mcp_client" {
		t.Fatalf("manual run = %+v, %v", mrun.Run, err)
	}
}

func testRunImportRefused(t *testing.T, in Instance) {
	b, d := in.Backend, ingData()
	p := resolve(t, b, CredOwner)
	d.item(t, ingOtherItem, fixtures.OtherTenantID, "")
	d.item(t, ingPubItem, fixtures.DemoTenantID, fixtures.PublishedSaleID)
	before := ingSnapshot(t, in, p)
	w := ingMeta(p, toolApplyCSV, "imp-strict", "sha256:s1", "event_s1")
	rows := ingImportRows(fixtures.Epoch)
	status := func(item string) domain.ImportRow {
		return domain.ImportRow{Row: 2, Kind: domain.CandidateStatusUpdate, ItemID: item, ReportedStatus: domain.ItemSold}
	}
	for name, c := range map[string]struct {
		rows []domain.ImportRow
		code string
	}{
		"an empty title":           {[]domain.ImportRow{{Row: 1, Kind: domain.CandidateNewItem, Title: "\u200b"}}, "invalid_row"},
		"another tenant's item":    {append(slices.Clone(rows[:1]), status(ingOtherItem)), "unknown_item"},
		"a missing item":           {append(slices.Clone(rows[:1]), status(ingMissingItem)), "unknown_item"},
		"an item of another sale":  {append(slices.Clone(rows[:1]), status(ingPubItem)), "item_in_other_sale"},
		"a row the reader refused": {[]domain.ImportRow{{Row: 1, Kind: domain.CandidateNewItem, Title: "x", Issues: []domain.RowIssue{{Row: 1, Code: "invalid_price", Severity: domain.SeverityError}}}}, "invalid_price"},
		"a status without a claim": {[]domain.ImportRow{{Row: 1, Kind: domain.CandidateStatusUpdate, ItemID: ingLiveItem}}, "invalid_row"},
		"a negative quantity":      {[]domain.ImportRow{{Row: 1, Kind: domain.CandidateNewItem, Title: "x", Quantity: -1}}, "invalid_row"},
	} {
		_, _, err := b.RunImport(ctx, p, w, domain.NewImport{SaleID: fixtures.LiveSaleID, Kind: domain.ImportCSV, Rows: c.rows})
		var ie *domain.InputError
		if !errors.As(err, &ie) || ie.Field != "csv_text" || !strings.Contains(ie.Reason, "row ") || !strings.Contains(ie.Reason, c.code) {
			t.Errorf("%s: err = %v, want an InputError on csv_text naming the row and %s", name, err, c.code)
		}
		if strings.Contains(fmt.Sprint(err), ingOtherItem) {
			t.Errorf("%s: the error names another tenant's item", name)
		}
		ingUnchanged(t, in, p, before, "a refused import ("+name+")")
	}
	// Skipping invalid rows still needs one valid row.
	_, _, err := b.RunImport(ctx, p, w, domain.NewImport{SaleID: fixtures.LiveSaleID, Kind: domain.ImportManual,
		Rows: []domain.ImportRow{status(ingMissingItem)}, SkipInvalidRows: true})
	wantInput(t, err, "rows")
	for name, c := range map[string]struct {
		in    domain.NewImport
		field string
	}{
		"no rows":      {domain.NewImport{SaleID: fixtures.LiveSaleID, Kind: domain.ImportManual}, "rows"},
		"no sale":      {domain.NewImport{Kind: domain.ImportCSV, Rows: rows}, "sale_id"},
		"too many":     {domain.NewImport{SaleID: fixtures.LiveSaleID, Kind: domain.ImportCSV, Rows: make([]domain.ImportRow, domain.MaxImportRows+1)}, "csv_text"},
		"a bad source": {domain.NewImport{SaleID: fixtures.LiveSaleID, Kind: "folder", Rows: rows}, ""},
	} {
		_, _, err := b.RunImport(ctx, p, w, c.in)
		if c.field == "" {
			if !errors.Is(err, domain.ErrInvalidInput) {
				t.Errorf("%s: err = %v, want ErrInvalidInput", name, err)
			}
		} else {
			wantInput(t, err, c.field)
		}
	}
	_, _, err = b.RunImport(ctx, p, w, domain.NewImport{SaleID: fixtures.OtherPublishedSaleID, Kind: domain.ImportCSV, Rows: rows[:1]})
	wantRef(t, err, "sale_id", fixtures.OtherPublishedSaleID, true)
	_, _, err = b.RunImport(ctx, p, w, domain.NewImport{SaleID: "sale_404", Kind: domain.ImportCSV, Rows: rows[:1]})
	wantRef(t, err, "sale_id", "sale_404", false)
	bad := w
	bad.Idem.Key = ""
	_, _, err = b.RunImport(ctx, p, bad, domain.NewImport{SaleID: fixtures.LiveSaleID, Kind: domain.ImportCSV, Rows: rows[:1]})
	wantInput(t, err, "idempotency_key")
	ingUnchanged(t, in, p, before, "a refused import")
	// Nothing was kept under the key: the fixed rows go through with it.
	res, out, err := b.RunImport(ctx, p, w, domain.NewImport{SaleID: fixtures.LiveSaleID, Kind: domain.ImportCSV, Rows: rows})
	if err != nil || out.Replayed || res.SourceRecordCount != 3 {
		t.Fatalf("the fixed retry: %+v %+v %v", res, out, err)
	}
}

func testRunImportSkip(t *testing.T, in Instance) {
	b := in.Backend
	p := resolve(t, b, CredOwner)
	rows := append(ingImportRows(fixtures.Epoch),
		domain.ImportRow{Row: 4, Kind: domain.CandidateStatusUpdate, ItemID: ingOtherItem, ReportedStatus: domain.ItemSold},
		domain.ImportRow{Row: 5, Kind: domain.CandidateNewItem, Title: "x", Issues: []domain.RowIssue{{Row: 5, Column: "quantity", Code: "invalid_quantity", Severity: domain.SeverityError, Message: "not a number"}}})
	before := ingSnapshot(t, in, p)
	res, out, err := b.RunImport(ctx, p, ingMeta(p, toolManualImport, "skip-1", "sha256:k1", "event_k1"),
		domain.NewImport{SaleID: fixtures.LiveSaleID, Kind: domain.ImportManual, Rows: rows, SkipInvalidRows: true})
	if err != nil {
		t.Fatalf("RunImport: %v", err)
	}
	wantRejected := []domain.RowIssue{
		{Row: 4, Column: "item_id", Code: "unknown_item", Severity: domain.SeverityError, Message: "the item does not exist or is not visible to you"},
		{Row: 5, Column: "quantity", Code: "invalid_quantity", Severity: domain.SeverityError, Message: "not a number"},
	}
	if res.SourceRecordCount != 5 || res.CandidateCount != 2 || res.StatusUpdateCandidateCount != 1 || res.RejectedRowCount != 2 ||
		res.Status != domain.ImportRunWithRejects || !reflect.DeepEqual(res.RejectedRows, wantRejected) {
		t.Fatalf("result = %+v", res)
	}
	if len(out.Related.SourceImportRecordIDs) != 5 || len(out.Related.CandidateIDs) != 3 {
		t.Fatalf("related = %+v", out.Related)
	}
	ingGrew(t, in, p, before, map[string]int64{"import_runs": 1, "import_run_details": 1, "source_records": 5,
		"inventory_candidates": 3, "candidate_item_changes": 1, "idempotency_keys": 1}, 1, "an import skipping rows")
	run, err := b.GetImportRun(ctx, p, domain.ImportRunDetailQuery{RunID: res.ImportRunID, Limit: 10})
	if err != nil || len(run.Records) != 5 || len(run.Records[3].CandidateIDs) != 0 || run.Run.Status != domain.ImportRunWithRejects {
		t.Fatalf("run = %+v, %v", run, err)
	}
	// The rejected row's record keeps what was wrong with it.
	if !strings.Contains(run.Records[3].Payload, `"code":"unknown_item"`) {
		t.Fatalf("rejected record = %s", run.Records[3].Payload)
	}
}

func testRunImportScoped(t *testing.T, in Instance) {
	b := in.Backend
	o := resolve(t, b, CredOwner)
	s := resolve(t, b, CredScoped)
	before := ingSnapshot(t, in, o)
	rows := ingImportRows(fixtures.Epoch)
	_, _, err := b.RunImport(ctx, s, ingMeta(s, toolApplyCSV, "sc-1", "sha256:c1", "event_c1"),
		domain.NewImport{SaleID: fixtures.PublishedSaleID, Kind: domain.ImportCSV, Rows: rows[:1]})
	wantAssignment(t, err)
	// An item of a sale outside the assignment is in another sale than
	// the import's (the import's own sale is assigned).
	_, _, err = b.RunImport(ctx, s, ingMeta(s, toolApplyCSV, "sc-2", "sha256:c2", "event_c2"),
		domain.NewImport{SaleID: fixtures.LiveSaleID, Kind: domain.ImportCSV, Rows: []domain.ImportRow{
			{Row: 1, Kind: domain.CandidateStatusUpdate, ItemID: ingPubItem, ReportedStatus: domain.ItemSold}}})
	var ie *domain.InputError
	if !errors.As(err, &ie) || ie.Field != "csv_text" || !strings.Contains(ie.Reason, "row 1: item_in_other_sale") {
		t.Fatalf("scoped import naming an unassigned sale's item: %v", err)
	}
	ingUnchanged(t, in, o, before, "a refused scoped import")
	res, out, err := b.RunImport(ctx, s, ingMeta(s, toolApplyCSV, "sc-3", "sha256:c3", "event_c3"),
		domain.NewImport{SaleID: fixtures.LiveSaleID, Kind: domain.ImportCSV, Rows: rows})
	if err != nil || out.Replayed || res.CandidateCount != 2 || res.StatusUpdateCandidateCount != 1 {
		t.Fatalf("scoped import of its own sale: %+v %v", res, err)
	}
	c, err := b.GetCandidate(ctx, o, res.CandidateIDs[0])
	if err != nil || c.CreatedByClientID != ScopedClientID || c.SaleID != fixtures.LiveSaleID {
		t.Fatalf("scoped import's candidate = %+v, %v", c, err)
	}
}

// A large import lists its first 500 candidates in row order (counts are
// complete), and its event names the run and its first 100 records and
// candidates.
func testRunImportLarge(t *testing.T, in Instance) {
	b := in.Backend
	p := resolve(t, b, CredOwner)
	const n = 600
	rows := make([]domain.ImportRow, n)
	for i := range rows {
		rows[i] = domain.ImportRow{Row: i + 1, Kind: domain.CandidateNewItem, Title: fmt.Sprintf("Mason jar %d", i+1), OriginalHash: "sha256:aa"}
	}
	rows[1] = domain.ImportRow{Row: 2, Kind: domain.CandidateStatusUpdate, ItemID: ingLiveItem, ReportedStatus: domain.ItemOnHold}
	rows[n-2].Issues = []domain.RowIssue{{Row: n - 1, Code: "invalid_quantity", Severity: domain.SeverityError, Message: "not a number"}}
	before := ingSnapshot(t, in, p)
	res, out, err := b.RunImport(ctx, p, ingMeta(p, toolManualImport, "large-1", "sha256:l1", "event_l1"),
		domain.NewImport{SaleID: fixtures.LiveSaleID, Kind: domain.ImportManual, Rows: rows, SkipInvalidRows: true})
	if err != nil {
		t.Fatalf("RunImport: %v", err)
	}
	if res.SourceRecordCount != n || res.CandidateCount != n-2 || res.StatusUpdateCandidateCount != 1 || !res.IDsTruncated ||
		len(res.CandidateIDs) != domain.MaxListedIDs-1 || len(res.StatusUpdateCandidateIDs) != 1 || res.RejectedRowCount != 1 ||
		res.Status != domain.ImportRunWithRejects {
		t.Fatalf("result: %d records, %d+%d candidates, %d+%d listed, truncated %v, %d rejected, %s", res.SourceRecordCount,
			res.CandidateCount, res.StatusUpdateCandidateCount, len(res.CandidateIDs), len(res.StatusUpdateCandidateIDs),
			res.IDsTruncated, res.RejectedRowCount, res.Status)
	}
	if len(out.Related.SourceImportRunIDs) != 1 || len(out.Related.SourceImportRecordIDs) != domain.MaxRelatedIDs ||
		len(out.Related.CandidateIDs) != domain.MaxRelatedIDs || out.Related.CandidateIDs[0] != res.CandidateIDs[0] ||
		out.Related.CandidateIDs[1] != res.StatusUpdateCandidateIDs[0] || out.Related.CandidateIDs[2] != res.CandidateIDs[1] {
		t.Fatalf("related = %d runs, %d records, %d candidates", len(out.Related.SourceImportRunIDs),
			len(out.Related.SourceImportRecordIDs), len(out.Related.CandidateIDs))
	}
	ingGrew(t, in, p, before, map[string]int64{"import_runs": 1, "import_run_details": 1, "source_records": n,
		"inventory_candidates": n - 1, "candidate_item_changes": 1, "idempotency_keys": 1}, 1, "a large import")
	run, err := b.GetImportRun(ctx, p, domain.ImportRunDetailQuery{RunID: res.ImportRunID, Limit: 3})
	if err != nil || len(run.Records) != 3 || out.Related.SourceImportRecordIDs[0] != run.Records[0].ID ||
		!slices.Equal(run.Records[0].CandidateIDs, res.CandidateIDs[:1]) || !slices.Equal(run.Records[1].CandidateIDs, res.StatusUpdateCandidateIDs) {
		t.Fatalf("run = %+v, %v", run, err)
	}
}

func testStatusReport(t *testing.T, in Instance) {
	b, d := in.Backend, ingData()
	p := resolve(t, b, CredOwner)
	live := d.item(t, ingLiveItem, fixtures.DemoTenantID, fixtures.LiveSaleID)
	at := time.Date(2026, 6, 19, 23, 0, 0, 0, time.FixedZone("EST", -5*3600))
	rep := domain.NewStatusReport{ItemID: ingLiveItem, ReportedStatus: domain.ItemSold, EffectiveAt: at,
		Source: domain.ReportSellerConfirmed, Notes: " buyer paid\u200b in cash "}
	before := ingSnapshot(t, in, p)
	res, out, err := b.CreateStatusReport(ctx, p, ingMeta(p, toolStatusReport, "rep-1", "sha256:r1", "event_r1"), rep)
	if err != nil {
		t.Fatalf("CreateStatusReport: %v", err)
	}
	if !domain.ValidID(domain.PrefixCandidate, res.CandidateID) || res.Kind != domain.CandidateStatusUpdate || res.ItemID != ingLiveItem ||
		res.SaleID != fixtures.LiveSaleID || res.ReportedStatus != domain.ItemSold || res.ReviewStatus != domain.ReviewNeedsReview ||
		!domain.ValidID(domain.PrefixRun, res.ImportRunID) || !domain.ValidID(domain.PrefixRecord, res.SourceRecordID) ||
		res.ObservedItemStatus != live.Status || res.ObservedItemVersion != live.Version {
		t.Fatalf("result = %+v", res)
	}
	rel := domain.Related{SourceImportRunIDs: []string{res.ImportRunID}, SourceImportRecordIDs: []string{res.SourceRecordID},
		CandidateIDs: []string{res.CandidateID}, ItemIDs: []string{ingLiveItem}}
	if out.Replayed || out.OriginalEventID != "event_r1" || !reflect.DeepEqual(out.Related, rel.Normalized()) {
		t.Fatalf("outcome = %+v", out)
	}
	// The client's own source descriptor exists in the dataset already.
	ingGrew(t, in, p, before, map[string]int64{"import_runs": 1, "source_records": 1, "inventory_candidates": 1,
		"candidate_item_changes": 1, "idempotency_keys": 1}, 1, "a status report")
	ingEvent(t, in, "event_r1", toolStatusReport, rel)
	c, err := b.GetCandidate(ctx, p, res.CandidateID)
	if err != nil || c.Kind != domain.CandidateStatusUpdate || c.Title != "Reported sold: "+ingLiveItem || c.Notes != "buyer paid in cash" ||
		c.SuppliedPriceCents != nil || c.Quantity != 1 || c.ImportRunID != res.ImportRunID || c.Version != 1 {
		t.Fatalf("candidate = %+v, %v", c, err)
	}
	run, err := b.GetImportRun(ctx, p, domain.ImportRunDetailQuery{RunID: res.ImportRunID})
	wantPayload := `{"kind":"status_update","item_id":"` + ingLiveItem + `","reported_status":"sold","effective_at":"2026-06-20T04:00:00Z","source":"seller_confirmed","notes":"buyer paid in cash"}`
	if err != nil || run.Run.Kind != "mcp_status_report" || run.Run.SaleID != fixtures.LiveSaleID || len(run.Records) != 1 ||
		run.Records[0].Payload != wantPayload || run.Records[0].PayloadHash != domain.OriginalHash([]byte(wantPayload)) {
		t.Fatalf("run = %+v, %v\nwant payload %s", run, err, wantPayload)
	}

	after := ingSnapshot(t, in, p)
	again, out2, err := b.CreateStatusReport(ctx, p, ingMeta(p, toolStatusReport, "rep-1", "sha256:r1", "event_r2"), rep)
	if err != nil || again != res || !out2.Replayed || out2.OriginalEventID != "event_r1" {
		t.Fatalf("replay = %+v %+v %v", again, out2, err)
	}
	_, _, err = b.CreateStatusReport(ctx, p, ingMeta(p, toolStatusReport, "rep-1", "sha256:r9", "event_r3"), rep)
	if !errors.Is(err, domain.ErrIdempotencyConflict) {
		t.Fatalf("conflict: %v", err)
	}
	ingUnchanged(t, in, p, after, "a replay or conflict")

	w := ingMeta(p, toolStatusReport, "rep-2", "sha256:r2", "event_r4")
	mod := func(f func(*domain.NewStatusReport)) domain.NewStatusReport { r := rep; f(&r); return r }
	for field, r := range map[string]domain.NewStatusReport{
		"reported_status": mod(func(r *domain.NewStatusReport) { r.ReportedStatus = "lost" }),
		"effective_at":    mod(func(r *domain.NewStatusReport) { r.EffectiveAt = time.Time{} }),
		"source":          mod(func(r *domain.NewStatusReport) { r.Source = " " }),
		"item_id":         mod(func(r *domain.NewStatusReport) { r.ItemID = "sale_223" }),
		"notes":           mod(func(r *domain.NewStatusReport) { r.Notes = strings.Repeat("n", 4001) }),
	} {
		_, _, err := b.CreateStatusReport(ctx, p, w, r)
		wantInput(t, err, field)
	}
	_, _, err = b.CreateStatusReport(ctx, p, w, mod(func(r *domain.NewStatusReport) { r.ItemID = ingOtherItem }))
	wantRef(t, err, "item_id", ingOtherItem, true)
	_, _, err = b.CreateStatusReport(ctx, p, w, mod(func(r *domain.NewStatusReport) { r.ItemID = ingMissingItem }))
	wantRef(t, err, "item_id", ingMissingItem, false)
	s := resolve(t, b, CredScoped)
	_, _, err = b.CreateStatusReport(ctx, s, ingMeta(s, toolStatusReport, "rep-3", "sha256:r3", "event_r5"),
		mod(func(r *domain.NewStatusReport) { r.ItemID = ingPubItem }))
	wantAssignment(t, err)
	ingUnchanged(t, in, p, after, "a refused status report")
	// The scoped member reports on its own sale's items.
	sr, _, err := b.CreateStatusReport(ctx, s, ingMeta(s, toolStatusReport, "rep-4", "sha256:r4", "event_r6"),
		mod(func(r *domain.NewStatusReport) { r.ItemID = ingLiveItem2; r.ReportedStatus = domain.ItemWithdrawn }))
	if err != nil || sr.ItemID != ingLiveItem2 || sr.ReportedStatus != domain.ItemWithdrawn {
		t.Fatalf("scoped report: %+v %v", sr, err)
	}
}

func testDraftListingCopy(t *testing.T, in Instance) {
	b, d := in.Backend, ingData()
	p := resolve(t, b, CredOwner)
	cand, ok := d.candidates[ingReviewCand]
	if !ok || cand.TenantID != fixtures.DemoTenantID || cand.SaleID != fixtures.PublishedSaleID || cand.Kind != domain.CandidateNewItem {
		t.Fatalf("the dataset's %s is %+v", ingReviewCand, cand)
	}
	facts := domain.DraftFacts{SourceID: cand.ID, SourceKind: "candidate", Version: max(cand.Version, 1), Origin: domain.OriginObserved,
		Title: cand.Title, Description: cand.Description, Category: cand.Category, Room: cand.Room, Condition: cand.Condition,
		Quantity: max(cand.Quantity, 1)}
	before := ingSnapshot(t, in, p)
	res, out, err := b.DraftListingCopy(ctx, p, ingMeta(p, toolDraftCopy, "dr-1", "sha256:d1", "event_d1"),
		domain.DraftRequest{CandidateID: cand.ID})
	if err != nil {
		t.Fatalf("DraftListingCopy: %v", err)
	}
	if res.SourceID != cand.ID || res.SourceKind != "candidate" || res.SourceVersion != facts.Version || res.Persisted ||
		res.DraftID != "" || res.Revision != 0 || !reflect.DeepEqual(res.Copy, domain.ComposeListingCopy(facts, "plain", 0)) {
		t.Fatalf("draft = %+v, want the copy of %+v", res, facts)
	}
	if out.Replayed || !slices.Equal(out.Related.CandidateIDs, []string{cand.ID}) {
		t.Fatalf("outcome = %+v", out)
	}
	ingGrew(t, in, p, before, map[string]int64{"idempotency_keys": 1}, 1, "an unstored draft")
	ingEvent(t, in, "event_d1", toolDraftCopy, domain.Related{CandidateIDs: []string{cand.ID}})

	// Stored drafts are revisions, numbered per source.
	mid := ingSnapshot(t, in, p)
	r1, _, err := b.DraftListingCopy(ctx, p, ingMeta(p, toolDraftCopy, "dr-2", "sha256:d2", "event_d2"),
		domain.DraftRequest{CandidateID: cand.ID, Tone: "warm", MaxWords: 40, Persist: true})
	if err != nil || !r1.Persisted || !domain.ValidID(domain.PrefixDraft, r1.DraftID) || r1.Revision != 1 ||
		!reflect.DeepEqual(r1.Copy, domain.ComposeListingCopy(facts, "warm", 40)) {
		t.Fatalf("stored draft = %+v, %v", r1, err)
	}
	r2, _, err := b.DraftListingCopy(ctx, p, ingMeta(p, toolDraftCopy, "dr-3", "sha256:d3", "event_d3"),
		domain.DraftRequest{CandidateID: cand.ID, Persist: true})
	if err != nil || r2.Revision != 2 || r2.DraftID == r1.DraftID {
		t.Fatalf("second stored draft = %+v, %v", r2, err)
	}
	item := d.item(t, ingDraftItem, fixtures.DemoTenantID, fixtures.PublishedSaleID)
	ri, oi, err := b.DraftListingCopy(ctx, p, ingMeta(p, toolDraftCopy, "dr-4", "sha256:d4", "event_d4"),
		domain.DraftRequest{ItemID: item.ID, Tone: "concise", Persist: true})
	ifacts := domain.DraftFacts{SourceID: item.ID, SourceKind: "item", Version: item.Version, Origin: domain.OriginSupplied,
		Title: item.Title, Description: item.Description, Category: item.Category, Room: item.Room, Quantity: 1}
	if err != nil || ri.SourceKind != "item" || ri.SourceVersion != item.Version || ri.Revision != 1 ||
		!reflect.DeepEqual(ri.Copy, domain.ComposeListingCopy(ifacts, "concise", 0)) || !slices.Equal(oi.Related.ItemIDs, []string{item.ID}) {
		t.Fatalf("item draft = %+v %+v, %v", ri, oi, err)
	}
	ingGrew(t, in, p, mid, map[string]int64{"idempotency_keys": 3, "draft_revisions": 3}, 3, "three stored drafts")

	after := ingSnapshot(t, in, p)
	again, out2, err := b.DraftListingCopy(ctx, p, ingMeta(p, toolDraftCopy, "dr-2", "sha256:d2", "event_d5"),
		domain.DraftRequest{CandidateID: cand.ID, Tone: "warm", MaxWords: 40, Persist: true})
	if err != nil || !reflect.DeepEqual(again, r1) || !out2.Replayed || out2.OriginalEventID != "event_d2" {
		t.Fatalf("replay = %+v %+v %v", again, out2, err)
	}
	_, _, err = b.DraftListingCopy(ctx, p, ingMeta(p, toolDraftCopy, "dr-2", "sha256:d9", "event_d6"),
		domain.DraftRequest{CandidateID: cand.ID, Persist: true})
	if !errors.Is(err, domain.ErrIdempotencyConflict) {
		t.Fatalf("conflict: %v", err)
	}
	ingUnchanged(t, in, p, after, "a replay or conflict")

	// A status report is not listing copy's source.
	rep, _, err := b.CreateStatusReport(ctx, p, ingMeta(p, toolStatusReport, "dr-rep", "sha256:dr", "event_d7"),
		domain.NewStatusReport{ItemID: ingLiveItem, ReportedStatus: domain.ItemOnHold, EffectiveAt: fixtures.Epoch, Source: domain.ReportSellerConfirmed})
	if err != nil {
		t.Fatal(err)
	}
	after = ingSnapshot(t, in, p)
	w := ingMeta(p, toolDraftCopy, "dr-x", "sha256:dx", "event_d8")
	for field, r := range map[string]domain.DraftRequest{
		"candidate_id": {CandidateID: cand.ID, ItemID: item.ID},
		"tone":         {CandidateID: cand.ID, Tone: "angry"},
		"max_words":    {ItemID: item.ID, MaxWords: 5},
		"item_id":      {ItemID: "candidate_1"},
	} {
		_, _, err := b.DraftListingCopy(ctx, p, w, r)
		wantInput(t, err, field)
	}
	_, _, err = b.DraftListingCopy(ctx, p, w, domain.DraftRequest{CandidateID: rep.CandidateID, Persist: true})
	wantInput(t, err, "candidate_id")
	_, _, err = b.DraftListingCopy(ctx, p, w, domain.DraftRequest{CandidateID: ingOtherCand, Persist: true})
	wantRef(t, err, "candidate_id", ingOtherCand, true)
	_, _, err = b.DraftListingCopy(ctx, p, w, domain.DraftRequest{ItemID: ingOtherItem, Persist: true})
	wantRef(t, err, "item_id", ingOtherItem, true)
	_, _, err = b.DraftListingCopy(ctx, p, w, domain.DraftRequest{ItemID: ingMissingItem})
	wantRef(t, err, "item_id", ingMissingItem, false)
	s := resolve(t, b, CredScoped)
	_, _, err = b.DraftListingCopy(ctx, s, ingMeta(s, toolDraftCopy, "dr-s", "sha256:ds", "event_d9"), domain.DraftRequest{CandidateID: cand.ID, Persist: true})
	wantAssignment(t, err)
	ingUnchanged(t, in, p, after, "a refused draft")
}

func testStageExport(t *testing.T, in Instance) {
	b, d := in.Backend, ingData()
	p := resolve(t, b, CredOwner)
	pub := d.item(t, ingPubItem, fixtures.DemoTenantID, fixtures.PublishedSaleID)
	draft := d.item(t, ingDraftItem, fixtures.DemoTenantID, fixtures.PublishedSaleID)
	listing := func(it domain.Item) domain.ExportListing {
		l := domain.ExportListing{ItemID: it.ID, SaleID: it.SaleID, Version: it.Version, Status: it.Status, Title: it.Title,
			Description: it.Description, Category: it.Category, PriceCents: it.PriceCents}
		for _, ph := range it.Photos {
			if ph.Published {
				l.PhotoCount++
			}
		}
		l.Valid, l.Warnings = domain.ValidateExportListing(domain.ChannelEbay, l)
		return l
	}
	want := []domain.ExportListing{listing(pub), listing(draft)}
	if !want[0].Valid || want[1].Valid {
		t.Fatalf("the case needs a valid and an invalid listing: %+v", want)
	}
	before := ingSnapshot(t, in, p)
	ids := []string{pub.ID, draft.ID}
	res, out, err := b.StageExport(ctx, p, ingMeta(p, toolStageExport, "ex-1", "sha256:e1", "event_e1"),
		domain.NewExport{Channel: domain.ChannelEbay, ItemIDs: ids})
	if err != nil {
		t.Fatalf("StageExport: %v", err)
	}
	if !domain.ValidID(domain.PrefixExport, res.ExportID) || res.Channel != domain.ChannelEbay || res.Status != domain.ExportStaged ||
		!reflect.DeepEqual(res.Listings, want) || res.ValidCount != 1 ||
		!slices.Equal(res.Warnings, []string{"1 of 2 items cannot be delivered as they are: see each item's warnings"}) ||
		res.CreatedAt.IsZero() || res.CreatedAt.Location() != time.UTC {
		t.Fatalf("export = %+v\nwant listings %+v", res, want)
	}
	if out.Replayed || !slices.Equal(out.Related.ItemIDs, ids) {
		t.Fatalf("outcome = %+v", out)
	}
	ingGrew(t, in, p, before, map[string]int64{"export_drafts": 1, "export_draft_items": 2, "idempotency_keys": 1}, 1, "a staged export")
	ingEvent(t, in, "event_e1", toolStageExport, domain.Related{ItemIDs: ids})

	after := ingSnapshot(t, in, p)
	again, out2, err := b.StageExport(ctx, p, ingMeta(p, toolStageExport, "ex-1", "sha256:e1", "event_e2"),
		domain.NewExport{Channel: domain.ChannelEbay, ItemIDs: ids})
	if err != nil || !reflect.DeepEqual(again, res) || !out2.Replayed || out2.OriginalEventID != "event_e1" {
		t.Fatalf("replay = %+v %+v %v", again, out2, err)
	}
	_, _, err = b.StageExport(ctx, p, ingMeta(p, toolStageExport, "ex-1", "sha256:e9", "event_e3"),
		domain.NewExport{Channel: domain.ChannelCSVFile, ItemIDs: ids})
	if !errors.Is(err, domain.ErrIdempotencyConflict) {
		t.Fatalf("conflict: %v", err)
	}
	w := ingMeta(p, toolStageExport, "ex-2", "sha256:e2", "event_e4")
	for field, e := range map[string]domain.NewExport{
		"channel":  {Channel: "myspace", ItemIDs: ids},
		"item_ids": {Channel: domain.ChannelEtsy, ItemIDs: []string{pub.ID, pub.ID}},
	} {
		_, _, err := b.StageExport(ctx, p, w, e)
		wantInput(t, err, field)
	}
	many := make([]string, domain.MaxExportItems+1)
	for i := range many {
		many[i] = fmt.Sprintf("item_%d", 5000+i)
	}
	_, _, err = b.StageExport(ctx, p, w, domain.NewExport{Channel: domain.ChannelEtsy, ItemIDs: many})
	wantInput(t, err, "item_ids")
	_, _, err = b.StageExport(ctx, p, w, domain.NewExport{Channel: domain.ChannelEtsy, ItemIDs: []string{pub.ID, ingOtherItem}})
	wantRef(t, err, "item_ids", ingOtherItem, true)
	_, _, err = b.StageExport(ctx, p, w, domain.NewExport{Channel: domain.ChannelEtsy, ItemIDs: []string{ingMissingItem, ingOtherItem}})
	wantRef(t, err, "item_ids", ingMissingItem, false)
	s := resolve(t, b, CredScoped)
	_, _, err = b.StageExport(ctx, s, ingMeta(s, toolStageExport, "ex-s", "sha256:es", "event_e5"),
		domain.NewExport{Channel: domain.ChannelCSVFile, ItemIDs: []string{ingLiveItem, pub.ID}})
	wantAssignment(t, err)
	ingUnchanged(t, in, p, after, "a replayed, conflicting or refused export")
	sc, _, err := b.StageExport(ctx, s, ingMeta(s, toolStageExport, "ex-s2", "sha256:es2", "event_e6"),
		domain.NewExport{Channel: domain.ChannelCSVFile, ItemIDs: []string{ingLiveItem}})
	if err != nil || len(sc.Listings) != 1 || sc.Listings[0].ItemID != ingLiveItem {
		t.Fatalf("scoped export of its own sale: %+v %v", sc, err)
	}
}

// The media writes (trove_attach_candidate_photo,
// trove_create_media_attachment_candidate). The tenant quota
// (domain.MaxTenantMediaBytes, 2 GiB) is too large to fill here: the live
// one is asserted by internal/live/media_test.go, which seeds the stored
// bytes directly.
const (
	toolAttachPhoto    = "trove_attach_candidate_photo"
	toolMediaCandidate = "trove_create_media_attachment_candidate"

	medCand       = "candidate_772" // PublishedSaleID, needs_review, new_item
	medCand2      = "candidate_771" // PublishedSaleID, needs_review, new_item
	medDraftCand  = "candidate_775" // a draft sale's, needs_review, new_item
	medLiveCand   = "candidate_781" // LiveSaleID, needs_review, new_item
	medRejected   = "candidate_774" // LiveSaleID, rejected
	medMissingCan = "candidate_404"
)

// medPNG is a small PNG that passed the photo checks (as internal/ingest
// reports them): seed makes its bytes distinct.
func medPNG(t *testing.T, w, h int, seed uint8) domain.PhotoUpload {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	img.Set(0, 0, color.RGBA{seed, 7, 42, 255})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return domain.PhotoUpload{Bytes: b.Bytes(), MimeType: "image/png", Ext: "png", Width: w, Height: h, Size: b.Len(),
		ContentHash: domain.OriginalHash(b.Bytes())}
}

// medCandidate checks that a dataset candidate is what a case needs.
func medCandidate(t *testing.T, id, sale, review string) {
	t.Helper()
	c, ok := ingData().candidates[id]
	if !ok || c.TenantID != fixtures.DemoTenantID || c.SaleID != sale || c.ReviewStatus != review || c.Kind != domain.CandidateNewItem {
		t.Fatalf("the dataset's %s is %+v: the case needs a new_item candidate of %s in %s, %s", id, c, fixtures.DemoTenantID, sale, review)
	}
}

// medWant checks a media result against the upload it stored or reused.
func medWant(t *testing.T, what string, got domain.CandidateMediaCreated, cand, kind string, up domain.PhotoUpload, reused, already bool) {
	t.Helper()
	if got.CandidateID != cand || got.Kind != kind || !domain.ValidID(domain.PrefixMedia, got.MediaID) ||
		!domain.ValidID(domain.PrefixAsset, got.AssetID) || got.ContentHash != up.ContentHash || got.MimeType != up.MimeType ||
		got.Width != up.Width || got.Height != up.Height || got.ByteSize != up.Size || got.ReviewStatus != domain.ReviewNeedsReview ||
		got.AssetReused != reused || got.AlreadyAttached != already {
		t.Fatalf("%s = %+v; want candidate %s (%s), the upload's asset, reused %v, already attached %v", what, got, cand, kind, reused, already)
	}
}

func testMediaAttach(t *testing.T, in Instance) {
	b := in.Backend
	p := resolve(t, b, CredOwner)
	medCandidate(t, medCand, fixtures.PublishedSaleID, domain.ReviewNeedsReview)
	medCandidate(t, medCand2, fixtures.PublishedSaleID, domain.ReviewNeedsReview)
	up := medPNG(t, 3, 2, 1)
	before := ingSnapshot(t, in, p)
	res, out, err := b.AttachCandidateMedia(ctx, p, ingMeta(p, toolAttachPhoto, "med-1", "sha256:m1", "event_m1"),
		domain.NewCandidateMedia{CandidateID: medCand, Upload: &up, Caption: " front\u200b view "})
	if err != nil {
		t.Fatalf("AttachCandidateMedia: %v", err)
	}
	medWant(t, "an attached upload", res, medCand, domain.CandidateNewItem, up, false, false)
	if res.ItemID != "" || res.ImportRunID != "" || res.SourceRecordID != "" {
		t.Fatalf("an attachment names no item, run or record: %+v", res)
	}
	rel := domain.Related{CandidateIDs: []string{medCand}}
	if out.Replayed || out.OriginalEventID != "event_m1" || !reflect.DeepEqual(out.Related, rel.Normalized()) {
		t.Fatalf("outcome = %+v", out)
	}
	ingGrew(t, in, p, before, map[string]int64{"source_assets": 1, "candidate_media": 1, "idempotency_keys": 1}, 1, "an attached photo")
	ingEvent(t, in, "event_m1", toolAttachPhoto, rel)

	// The same bytes to another candidate: the tenant's asset is reused
	// (one asset per content hash), a new attachment is made.
	mid := ingSnapshot(t, in, p)
	r2, _, err := b.AttachCandidateMedia(ctx, p, ingMeta(p, toolAttachPhoto, "med-2", "sha256:m2", "event_m2"),
		domain.NewCandidateMedia{CandidateID: medCand2, Upload: &up})
	if err != nil {
		t.Fatal(err)
	}
	medWant(t, "the same bytes again", r2, medCand2, domain.CandidateNewItem, up, true, false)
	if r2.AssetID != res.AssetID || r2.MediaID == res.MediaID {
		t.Fatalf("dedupe: %+v, first %+v", r2, res)
	}
	// Again to the first candidate (a new key): already attached, nothing new.
	r3, _, err := b.AttachCandidateMedia(ctx, p, ingMeta(p, toolAttachPhoto, "med-3", "sha256:m3", "event_m3"),
		domain.NewCandidateMedia{CandidateID: medCand, Upload: &up})
	if err != nil {
		t.Fatal(err)
	}
	medWant(t, "an attached photo again", r3, medCand, domain.CandidateNewItem, up, true, true)
	if r3.MediaID != res.MediaID || r3.AssetID != res.AssetID {
		t.Fatalf("already attached: %+v, first %+v", r3, res)
	}
	// By asset id, to a candidate of another sale.
	medCandidate(t, medDraftCand, fixtures.DraftSaleID, domain.ReviewNeedsReview)
	r4, out4, err := b.AttachCandidateMedia(ctx, p, ingMeta(p, toolAttachPhoto, "med-4", "sha256:m4", "event_m4"),
		domain.NewCandidateMedia{CandidateID: medDraftCand, AssetID: res.AssetID, Caption: "detail"})
	if err != nil {
		t.Fatal(err)
	}
	medWant(t, "an attachment by asset id", r4, medDraftCand, domain.CandidateNewItem, up, true, false)
	if r4.AssetID != res.AssetID || !slices.Equal(out4.Related.CandidateIDs, []string{medDraftCand}) {
		t.Fatalf("by asset id: %+v %+v", r4, out4)
	}
	// A second upload: a second asset.
	up2 := medPNG(t, 4, 4, 2)
	r5, _, err := b.AttachCandidateMedia(ctx, p, ingMeta(p, toolAttachPhoto, "med-5", "sha256:m5", "event_m5"),
		domain.NewCandidateMedia{CandidateID: medCand, Upload: &up2})
	if err != nil {
		t.Fatal(err)
	}
	medWant(t, "other bytes", r5, medCand, domain.CandidateNewItem, up2, false, false)
	if r5.AssetID == res.AssetID {
		t.Fatalf("other bytes reused asset %s", r5.AssetID)
	}
	ingGrew(t, in, p, mid, map[string]int64{"source_assets": 1, "candidate_media": 3, "idempotency_keys": 4}, 4,
		"a deduplicated upload, an attachment again, one by asset id and a second upload")

	// Replay: the first result, nothing written. Conflict: refused, nothing written.
	after := ingSnapshot(t, in, p)
	again, out6, err := b.AttachCandidateMedia(ctx, p, ingMeta(p, toolAttachPhoto, "med-1", "sha256:m1", "event_m6"),
		domain.NewCandidateMedia{CandidateID: medCand, Upload: &up, Caption: "front view"})
	if err != nil || again != res || !out6.Replayed || out6.OriginalEventID != "event_m1" || !reflect.DeepEqual(out6.Related, out.Related) {
		t.Fatalf("replay = %+v %+v %v; want %+v", again, out6, err, res)
	}
	_, _, err = b.AttachCandidateMedia(ctx, p, ingMeta(p, toolAttachPhoto, "med-1", "sha256:m9", "event_m7"),
		domain.NewCandidateMedia{CandidateID: medCand2, Upload: &up2})
	if !errors.Is(err, domain.ErrIdempotencyConflict) {
		t.Fatalf("conflict: %v", err)
	}
	ingUnchanged(t, in, p, after, "a replayed or conflicting attachment")
}

func testMediaCandidate(t *testing.T, in Instance) {
	b, d := in.Backend, ingData()
	p := resolve(t, b, CredOwner)
	live := d.item(t, ingLiveItem, fixtures.DemoTenantID, fixtures.LiveSaleID)
	up := medPNG(t, 3, 2, 5)
	before := ingSnapshot(t, in, p)
	w := ingMeta(p, toolMediaCandidate, "mc-1", "sha256:c1", "event_c1")
	nm := domain.NewCandidateMedia{ItemID: ingLiveItem, Upload: &up, Caption: "maker's\u202e mark"}
	res, out, err := b.CreateMediaCandidate(ctx, p, w, nm)
	if err != nil {
		t.Fatalf("CreateMediaCandidate: %v", err)
	}
	if !domain.ValidID(domain.PrefixCandidate, res.CandidateID) {
		t.Fatalf("result = %+v", res)
	}
	medWant(t, "a media candidate", res, res.CandidateID, domain.CandidateAttachMedia, up, false, false)
	if res.ItemID != ingLiveItem || !domain.ValidID(domain.PrefixRun, res.ImportRunID) || !domain.ValidID(domain.PrefixRecord, res.SourceRecordID) {
		t.Fatalf("result = %+v", res)
	}
	rel := domain.Related{SourceImportRunIDs: []string{res.ImportRunID}, SourceImportRecordIDs: []string{res.SourceRecordID},
		CandidateIDs: []string{res.CandidateID}, ItemIDs: []string{ingLiveItem}}
	if out.Replayed || out.OriginalEventID != "event_c1" || !reflect.DeepEqual(out.Related, rel.Normalized()) {
		t.Fatalf("outcome = %+v", out)
	}
	// The client's own source descriptor exists in the dataset already.
	ingGrew(t, in, p, before, map[string]int64{"import_runs": 1, "source_records": 1, "inventory_candidates": 1,
		"candidate_item_changes": 1, "source_assets": 1, "candidate_media": 1, "idempotency_keys": 1}, 1, "a media candidate")
	ingEvent(t, in, "event_c1", toolMediaCandidate, rel)
	c, err := b.GetCandidate(ctx, p, res.CandidateID)
	if err != nil || c.Kind != domain.CandidateAttachMedia || c.Title != "Photo proposed for "+ingLiveItem || c.Notes != "maker's mark" ||
		c.SaleID != live.SaleID || c.SuppliedPriceCents != nil || c.Quantity != 1 || c.ImportRunID != res.ImportRunID ||
		c.ReviewStatus != domain.ReviewNeedsReview || c.Version != 1 {
		t.Fatalf("candidate = %+v, %v", c, err)
	}
	run, err := b.GetImportRun(ctx, p, domain.ImportRunDetailQuery{RunID: res.ImportRunID})
	wantPayload := `{"kind":"attach_media","item_id":"` + ingLiveItem + `","asset_id":"` + res.AssetID + `","content_hash":"` +
		up.ContentHash + `","mime_type":"image/png","width":3,"height":2,"caption":"maker's mark"}`
	if err != nil || run.Run.Kind != "mcp_media" || run.Run.SaleID != live.SaleID || len(run.Records) != 1 ||
		run.Records[0].Payload != wantPayload || run.Records[0].PayloadHash != domain.OriginalHash([]byte(wantPayload)) ||
		!slices.Equal(run.Records[0].CandidateIDs, []string{res.CandidateID}) {
		t.Fatalf("run = %+v, %v\nwant payload %s", run, err, wantPayload)
	}

	// The candidate already holds its asset; the same bytes for another
	// item reuse the asset; a proposal without caption has none in its record.
	mid := ingSnapshot(t, in, p)
	r2, _, err := b.AttachCandidateMedia(ctx, p, ingMeta(p, toolAttachPhoto, "mc-2", "sha256:c2", "event_c2"),
		domain.NewCandidateMedia{CandidateID: res.CandidateID, AssetID: res.AssetID})
	if err != nil {
		t.Fatal(err)
	}
	medWant(t, "the media candidate's own asset", r2, res.CandidateID, domain.CandidateAttachMedia, up, true, true)
	r3, _, err := b.CreateMediaCandidate(ctx, p, ingMeta(p, toolMediaCandidate, "mc-3", "sha256:c3", "event_c3"),
		domain.NewCandidateMedia{ItemID: ingLiveItem2, Upload: &up})
	if err != nil {
		t.Fatal(err)
	}
	medWant(t, "the same bytes for another item", r3, r3.CandidateID, domain.CandidateAttachMedia, up, true, false)
	if r3.AssetID != res.AssetID || r3.ItemID != ingLiveItem2 || r3.CandidateID == res.CandidateID {
		t.Fatalf("second media candidate = %+v", r3)
	}
	ingGrew(t, in, p, mid, map[string]int64{"import_runs": 1, "source_records": 1, "inventory_candidates": 1,
		"candidate_item_changes": 1, "candidate_media": 1, "idempotency_keys": 2}, 2, "an attachment again and a reused asset")
	run3, err := b.GetImportRun(ctx, p, domain.ImportRunDetailQuery{RunID: r3.ImportRunID})
	wantPayload3 := `{"kind":"attach_media","item_id":"` + ingLiveItem2 + `","asset_id":"` + res.AssetID + `","content_hash":"` +
		up.ContentHash + `","mime_type":"image/png","width":3,"height":2}`
	if err != nil || len(run3.Records) != 1 || run3.Records[0].Payload != wantPayload3 {
		t.Fatalf("run = %+v, %v\nwant payload %s", run3, err, wantPayload3)
	}

	after := ingSnapshot(t, in, p)
	again, out4, err := b.CreateMediaCandidate(ctx, p, ingMeta(p, toolMediaCandidate, "mc-1", "sha256:c1", "event_c4"), nm)
	if err != nil || again != res || !out4.Replayed || out4.OriginalEventID != "event_c1" || !reflect.DeepEqual(out4.Related, out.Related) {
		t.Fatalf("replay = %+v %+v %v", again, out4, err)
	}
	_, _, err = b.CreateMediaCandidate(ctx, p, ingMeta(p, toolMediaCandidate, "mc-1", "sha256:c9", "event_c5"),
		domain.NewCandidateMedia{ItemID: ingPubItem, Upload: &up})
	if !errors.Is(err, domain.ErrIdempotencyConflict) {
		t.Fatalf("conflict: %v", err)
	}
	ingUnchanged(t, in, p, after, "a replayed or conflicting media candidate")
}

func testMediaRefused(t *testing.T, in Instance) {
	b := in.Backend
	p := resolve(t, b, CredOwner)
	medCandidate(t, medCand, fixtures.PublishedSaleID, domain.ReviewNeedsReview)
	c, ok := ingData().candidates[medRejected]
	if !ok || c.TenantID != fixtures.DemoTenantID || c.ReviewStatus != domain.ReviewRejected {
		t.Fatalf("the dataset's %s is %+v: the case needs a rejected candidate", medRejected, c)
	}
	// Another tenant's asset, and a status report of this one.
	o := resolve(t, b, CredOther)
	upO := medPNG(t, 2, 2, 90)
	theirs, _, err := b.CreateMediaCandidate(ctx, o, ingMeta(o, toolMediaCandidate, "mr-o", "sha256:ro", "event_ro"),
		domain.NewCandidateMedia{ItemID: ingOtherItem, Upload: &upO})
	if err != nil {
		t.Fatalf("the other tenant's media candidate: %v", err)
	}
	rep, _, err := b.CreateStatusReport(ctx, p, ingMeta(p, toolStatusReport, "mr-rep", "sha256:rr", "event_rr"),
		domain.NewStatusReport{ItemID: ingLiveItem, ReportedStatus: domain.ItemOnHold, EffectiveAt: fixtures.Epoch, Source: domain.ReportSellerConfirmed})
	if err != nil {
		t.Fatal(err)
	}

	before := ingSnapshot(t, in, p)
	up := medPNG(t, 4, 3, 3)
	bad := func(f func(u *domain.PhotoUpload)) *domain.PhotoUpload { u := up; f(&u); return &u }
	attach := ingMeta(p, toolAttachPhoto, "mr-1", "sha256:r1", "event_r1")
	for field, nm := range map[string][]domain.NewCandidateMedia{
		"image_base64": {
			{CandidateID: medCand, Upload: &up, AssetID: theirs.AssetID},
			{CandidateID: medCand},
			{CandidateID: medCand, Upload: bad(func(u *domain.PhotoUpload) { u.Bytes = []byte("not the image") })},
			{CandidateID: medCand, Upload: bad(func(u *domain.PhotoUpload) { u.ContentHash = domain.OriginalHash([]byte("x")) })},
			{CandidateID: medCand, Upload: bad(func(u *domain.PhotoUpload) { u.MimeType = "image/bmp" })},
			{CandidateID: medCand, Upload: bad(func(u *domain.PhotoUpload) { u.Size++ })},
			{CandidateID: medCand, Upload: bad(func(u *domain.PhotoUpload) { u.Width = 0 })},
			{CandidateID: medCand, Upload: bad(func(u *domain.PhotoUpload) { u.Width, u.Height = 10_000, 5_000 })},
			{CandidateID: medCand, Upload: bad(func(u *domain.PhotoUpload) { u.Bytes, u.Size = nil, 0 })},
		},
		"asset_id":     {{CandidateID: medCand, AssetID: "item_1172"}},
		"caption":      {{CandidateID: medCand, Upload: &up, Caption: strings.Repeat("c", 201)}},
		"candidate_id": {{Upload: &up}, {CandidateID: ingLiveItem, Upload: &up}, {CandidateID: rep.CandidateID, Upload: &up}},
	} {
		for i, m := range nm {
			_, _, err := b.AttachCandidateMedia(ctx, p, attach, m)
			var ie *domain.InputError
			if !errors.As(err, &ie) || ie.Field != field {
				t.Errorf("attach %s #%d: err = %v, want InputError on %s", field, i, err, field)
			}
		}
	}
	create := ingMeta(p, toolMediaCandidate, "mr-2", "sha256:r2", "event_r2")
	_, _, err = b.CreateMediaCandidate(ctx, p, create, domain.NewCandidateMedia{ItemID: medCand, Upload: &up})
	wantInput(t, err, "item_id")
	_, _, err = b.CreateMediaCandidate(ctx, p, create, domain.NewCandidateMedia{ItemID: ingLiveItem, Upload: bad(func(u *domain.PhotoUpload) {
		u.Bytes = append([]byte{0}, u.Bytes[1:]...)
	})})
	wantInput(t, err, "image_base64")
	// Unknown and another tenant's records: the same RefError.
	_, _, err = b.AttachCandidateMedia(ctx, p, attach, domain.NewCandidateMedia{CandidateID: medMissingCan, Upload: &up})
	wantRef(t, err, "candidate_id", medMissingCan, false)
	_, _, err = b.AttachCandidateMedia(ctx, p, attach, domain.NewCandidateMedia{CandidateID: ingOtherCand, Upload: &up})
	wantRef(t, err, "candidate_id", ingOtherCand, true)
	_, _, err = b.AttachCandidateMedia(ctx, p, attach, domain.NewCandidateMedia{CandidateID: theirs.CandidateID, AssetID: theirs.AssetID})
	wantRef(t, err, "candidate_id", theirs.CandidateID, true)
	_, _, err = b.AttachCandidateMedia(ctx, p, attach, domain.NewCandidateMedia{CandidateID: medCand, AssetID: theirs.AssetID})
	wantRef(t, err, "asset_id", theirs.AssetID, true)
	_, _, err = b.AttachCandidateMedia(ctx, p, attach, domain.NewCandidateMedia{CandidateID: medCand, AssetID: "asset_404"})
	wantRef(t, err, "asset_id", "asset_404", false)
	_, _, err = b.CreateMediaCandidate(ctx, p, create, domain.NewCandidateMedia{ItemID: ingMissingItem, Upload: &up})
	wantRef(t, err, "item_id", ingMissingItem, false)
	_, _, err = b.CreateMediaCandidate(ctx, p, create, domain.NewCandidateMedia{ItemID: ingOtherItem, AssetID: theirs.AssetID})
	wantRef(t, err, "item_id", ingOtherItem, true)
	_, _, err = b.CreateMediaCandidate(ctx, p, create, domain.NewCandidateMedia{ItemID: ingLiveItem, AssetID: theirs.AssetID})
	wantRef(t, err, "asset_id", theirs.AssetID, true)
	// A candidate no longer awaiting review takes no photo.
	_, _, err = b.AttachCandidateMedia(ctx, p, attach, domain.NewCandidateMedia{CandidateID: medRejected, Upload: &up})
	if !errors.Is(err, domain.ErrTransitionInvalid) {
		t.Fatalf("a rejected candidate: err = %v, want ErrTransitionInvalid", err)
	}
	if _, _, err := b.AttachCandidateMedia(ctx, domain.Anonymous(), attach, domain.NewCandidateMedia{CandidateID: medCand, Upload: &up}); !errors.Is(err, domain.ErrAuthRequired) {
		t.Fatalf("anonymous: %v, want ErrAuthRequired", err)
	}
	ingUnchanged(t, in, p, before, "a refused media write")
}

func testMediaLimit(t *testing.T, in Instance) {
	b := in.Backend
	p := resolve(t, b, CredOwner)
	medCandidate(t, medCand2, fixtures.PublishedSaleID, domain.ReviewNeedsReview)
	var first domain.CandidateMediaCreated
	for k := range domain.MaxPhotosPerCandidate {
		up := medPNG(t, 2, 3, uint8(100+k))
		r, _, err := b.AttachCandidateMedia(ctx, p, ingMeta(p, toolAttachPhoto, fmt.Sprintf("lim-%02d", k), "sha256:l", fmt.Sprintf("event_l%d", k)),
			domain.NewCandidateMedia{CandidateID: medCand2, Upload: &up})
		if err != nil {
			t.Fatalf("photo %d: %v", k+1, err)
		}
		if k == 0 {
			first = r
		}
	}
	before := ingSnapshot(t, in, p)
	extra := medPNG(t, 5, 5, 250)
	_, _, err := b.AttachCandidateMedia(ctx, p, ingMeta(p, toolAttachPhoto, "lim-over", "sha256:o", "event_lo"),
		domain.NewCandidateMedia{CandidateID: medCand2, Upload: &extra})
	var ie *domain.InputError
	if !errors.As(err, &ie) || ie.Field != "candidate_id" || !strings.Contains(ie.Reason, fmt.Sprintf("%d photos", domain.MaxPhotosPerCandidate)) {
		t.Fatalf("over the limit: %v", err)
	}
	// Refused after the new asset was resolved: no asset, no attachment, no key.
	ingUnchanged(t, in, p, before, "an attachment over the limit")
	// A photo the candidate holds already is no new photo.
	up0 := medPNG(t, 2, 3, 100)
	r, _, err := b.AttachCandidateMedia(ctx, p, ingMeta(p, toolAttachPhoto, "lim-again", "sha256:a", "event_la"),
		domain.NewCandidateMedia{CandidateID: medCand2, Upload: &up0})
	if err != nil || !r.AlreadyAttached || r.MediaID != first.MediaID {
		t.Fatalf("a held photo on a full candidate: %+v, %v", r, err)
	}
	ingGrew(t, in, p, before, map[string]int64{"idempotency_keys": 1}, 1, "a held photo again")
}

func testMediaScoped(t *testing.T, in Instance) {
	b := in.Backend
	p := resolve(t, b, CredOwner)
	s := resolve(t, b, CredScoped)
	medCandidate(t, medCand, fixtures.PublishedSaleID, domain.ReviewNeedsReview)
	medCandidate(t, medLiveCand, fixtures.LiveSaleID, domain.ReviewNeedsReview)
	up := medPNG(t, 3, 3, 7)
	before := ingSnapshot(t, in, p)
	_, _, err := b.AttachCandidateMedia(ctx, s, ingMeta(s, toolAttachPhoto, "ms-1", "sha256:s1", "event_s1"),
		domain.NewCandidateMedia{CandidateID: medCand, Upload: &up})
	wantAssignment(t, err)
	_, _, err = b.CreateMediaCandidate(ctx, s, ingMeta(s, toolMediaCandidate, "ms-2", "sha256:s2", "event_s2"),
		domain.NewCandidateMedia{ItemID: ingPubItem, Upload: &up})
	wantAssignment(t, err)
	ingUnchanged(t, in, p, before, "a media write outside the member's sales")
	// Its own sale's candidates and items.
	r, _, err := b.AttachCandidateMedia(ctx, s, ingMeta(s, toolAttachPhoto, "ms-3", "sha256:s3", "event_s3"),
		domain.NewCandidateMedia{CandidateID: medLiveCand, Upload: &up})
	if err != nil {
		t.Fatalf("scoped attachment: %v", err)
	}
	medWant(t, "a scoped attachment", r, medLiveCand, domain.CandidateNewItem, up, false, false)
	mc, _, err := b.CreateMediaCandidate(ctx, s, ingMeta(s, toolMediaCandidate, "ms-4", "sha256:s4", "event_s4"),
		domain.NewCandidateMedia{ItemID: ingLiveItem2, AssetID: r.AssetID})
	if err != nil {
		t.Fatalf("scoped media candidate: %v", err)
	}
	medWant(t, "a scoped media candidate", mc, mc.CandidateID, domain.CandidateAttachMedia, up, true, false)
	if mc.ItemID != ingLiveItem2 {
		t.Fatalf("scoped media candidate = %+v", mc)
	}
	// The member's client has its own source descriptor, made on first use.
	ingGrew(t, in, p, before, map[string]int64{"source_assets": 1, "candidate_media": 2, "source_descriptors": 1, "import_runs": 1,
		"source_records": 1, "inventory_candidates": 1, "candidate_item_changes": 1, "idempotency_keys": 2}, 2,
		"a scoped attachment and media candidate")
}
