package live

import (
	"context"
	"errors"
	"time"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// The scoped reads of §12 beyond the four lists. The database decides
// tenant, permissions and sale assignment from the client's credential:
// another tenant's record is a RefError like a missing one (CrossTenant for
// the audit), a record of a sale outside a sale-scoped member's assignment
// is ErrSaleAssignment, and lists hold assigned sales only. Inputs are
// checked here first, in the store's order, so both backends refuse alike.

var labelBatchStatuses = []string{domain.LabelBatchDraft, domain.LabelBatchPrinted, domain.LabelBatchRetired}

// GetSale reads one sale of the principal's tenant.
func (b *Backend) GetSale(ctx context.Context, p domain.Principal, saleID string) (domain.Sale, error) {
	const fn = "mcp_get_sale"
	tok, err := b.tokenOf(p)
	if err != nil {
		return domain.Sale{}, err
	}
	var s domain.Sale
	if err := b.callClient(ctx, tok, fn, map[string]any{"p_sale_id": saleID}, &s); err != nil {
		return domain.Sale{}, err
	}
	if s.ID == "" {
		return domain.Sale{}, b.unavailable(fn, errors.New("answer without a sale"))
	}
	return s, nil
}

// GetItem reads one item of the principal's tenant with the extras inc asks
// for, in one snapshot. Price history needs a pricing role: the database
// refuses it to others.
func (b *Backend) GetItem(ctx context.Context, p domain.Principal, itemID string, inc domain.ItemIncludes) (domain.ItemDetail, error) {
	const fn = "mcp_get_item"
	tok, err := b.tokenOf(p)
	if err != nil {
		return domain.ItemDetail{}, err
	}
	var r itemRow
	if err := b.callClient(ctx, tok, fn, map[string]any{"p_item_id": itemID,
		"p_include_photos": readsPhotos(inc), "p_include_price_history": inc.PriceHistory}, &r); err != nil {
		return domain.ItemDetail{}, err
	}
	if r.ID == "" {
		return domain.ItemDetail{}, b.unavailable(fn, errors.New("answer without an item"))
	}
	return r.detail(inc), nil
}

// readsPhotos is whether an RPC must return an item's photos: to show
// them, or to tally them (the RPCs return no tally of their own, so live
// mode counts what they return).
func readsPhotos(inc domain.ItemIncludes) bool { return inc.Photos || inc.PhotoTally }

// detail is the ItemDetail of a row, its extras present (possibly empty)
// exactly when asked for, like the store's.
func (r itemRow) detail(inc domain.ItemIncludes) domain.ItemDetail {
	d := domain.ItemDetail{Item: r.Item, PriceHistory: r.PriceHistory}
	if inc.Provenance {
		d.Provenance = r.Provenance
	}
	if inc.PhotoTally {
		t := domain.TallyPhotos(d.Photos)
		d.PhotoTally = &t
	}
	switch {
	case !inc.Photos:
		d.Photos = nil
	case d.Photos == nil:
		d.Photos = []domain.Photo{}
	}
	switch {
	case !inc.PriceHistory:
		d.PriceHistory = nil
	case d.PriceHistory == nil:
		d.PriceHistory = []domain.PriceChange{}
	}
	return d
}

// GetCandidate reads one candidate of the principal's tenant.
func (b *Backend) GetCandidate(ctx context.Context, p domain.Principal, candidateID string) (domain.Candidate, error) {
	const fn = "mcp_get_candidate"
	tok, err := b.tokenOf(p)
	if err != nil {
		return domain.Candidate{}, err
	}
	var c domain.Candidate
	if err := b.callClient(ctx, tok, fn, map[string]any{"p_candidate_id": candidateID}, &c); err != nil {
		return domain.Candidate{}, err
	}
	if c.ID == "" {
		return domain.Candidate{}, b.unavailable(fn, errors.New("answer without a candidate"))
	}
	return c, nil
}

// runRow is an import run with the kind of its source.
type runRow struct {
	domain.ImportRun
	SourceKind string `json:"source_kind"`
}

func (r runRow) summary() domain.ImportRunSummary {
	return domain.ImportRunSummary{ImportRun: r.ImportRun, SourceKind: r.SourceKind}
}

// ListImportRuns lists the import runs of the principal's tenant, newest
// first: keyset on (created_at, id) descending.
func (b *Backend) ListImportRuns(ctx context.Context, p domain.Principal, q domain.ImportRunQuery) (domain.Page[domain.ImportRunSummary], error) {
	tok, err := b.tokenOf(p)
	if err != nil {
		return domain.Page[domain.ImportRunSummary]{}, err
	}
	limit, err := domain.PageLimit(q.Limit)
	if err != nil {
		return domain.Page[domain.ImportRunSummary]{}, err
	}
	args := map[string]any{"p_limit": limit}
	if q.SaleID != "" {
		args["p_sale_id"] = q.SaleID
	}
	if err := keysetArgs(args, q.After); err != nil {
		return domain.Page[domain.ImportRunSummary]{}, err
	}
	var a pageAnswer[runRow]
	if err := b.callClient(ctx, tok, "mcp_list_import_runs", args, &a); err != nil {
		return domain.Page[domain.ImportRunSummary]{}, err
	}
	rows, err := sealPage(ctx, b, p, domain.CursorImportRuns, a)
	if err != nil {
		return domain.Page[domain.ImportRunSummary]{}, err
	}
	out := domain.Page[domain.ImportRunSummary]{Rows: make([]domain.ImportRunSummary, len(rows.Rows)), NextCursor: rows.NextCursor}
	for i, r := range rows.Rows {
		out.Rows[i] = r.summary()
	}
	return out, nil
}

// recordRow is a source record and the candidates it produced.
type recordRow struct {
	domain.SourceRecord
	CandidateIDs []string `json:"candidate_ids"`
}

// importRunAnswer is what mcp_get_import_run returns.
type importRunAnswer struct {
	Run        *runRow `json:"run"`
	Candidates struct {
		NeedsReview int `json:"needs_review"`
		Approved    int `json:"approved"`
		Rejected    int `json:"rejected"`
		Promoted    int `json:"promoted"`
		Duplicate   int `json:"duplicate"`
	} `json:"candidates"`
	Records []recordRow `json:"records"`
	Next    *struct {
		K string `json:"k"`
		I string `json:"i"`
	} `json:"next"`
}

// GetImportRun reads one run, its candidate counts and a page of its source
// records (by ordinal) with the candidates each produced.
func (b *Backend) GetImportRun(ctx context.Context, p domain.Principal, q domain.ImportRunDetailQuery) (domain.ImportRunDetail, error) {
	const fn = "mcp_get_import_run"
	tok, err := b.tokenOf(p)
	if err != nil {
		return domain.ImportRunDetail{}, err
	}
	limit, err := domain.PageLimit(q.Limit)
	if err != nil {
		return domain.ImportRunDetail{}, err
	}
	args := map[string]any{"p_run_id": q.RunID, "p_limit": limit}
	if q.After != nil {
		after, err := ordinalKey(q.After)
		if err != nil {
			return domain.ImportRunDetail{}, err
		}
		args["p_after_ordinal"] = after
	}
	var a importRunAnswer
	if err := b.callClient(ctx, tok, fn, args, &a); err != nil {
		return domain.ImportRunDetail{}, err
	}
	if a.Run == nil || a.Run.ID == "" {
		return domain.ImportRunDetail{}, b.unavailable(fn, errors.New("answer without a run"))
	}
	out := domain.ImportRunDetail{Run: a.Run.summary(), Records: make([]domain.SourceRecordDetail, len(a.Records)),
		Candidates: domain.ReviewCounts{NeedsReview: a.Candidates.NeedsReview, Approved: a.Candidates.Approved,
			Rejected: a.Candidates.Rejected, Promoted: a.Candidates.Promoted, Duplicate: a.Candidates.Duplicate}}
	for i, r := range a.Records {
		out.Records[i] = domain.SourceRecordDetail{SourceRecord: r.SourceRecord, CandidateIDs: r.CandidateIDs}
		if out.Records[i].CandidateIDs == nil {
			out.Records[i].CandidateIDs = []string{}
		}
	}
	if a.Next != nil && a.Next.I != "" {
		c, err := b.sealCursor(ctx, p, domain.CursorImportRecords(a.Run.ID), domain.Keyset{Key: a.Next.K, ID: a.Next.I})
		if err != nil {
			return domain.ImportRunDetail{}, err
		}
		out.RecordsNextCursor = c
	}
	return out, nil
}

// ListStatusEvents lists the status history of the principal's items,
// newest first: keyset on (effective_at, id) descending.
func (b *Backend) ListStatusEvents(ctx context.Context, p domain.Principal, q domain.StatusEventQuery) (domain.Page[domain.StatusEvent], error) {
	tok, err := b.tokenOf(p)
	if err != nil {
		return domain.Page[domain.StatusEvent]{}, err
	}
	limit, err := domain.PageLimit(q.Limit)
	if err != nil {
		return domain.Page[domain.StatusEvent]{}, err
	}
	if err := oneOf("to_status", q.ToStatus, domain.ItemStatuses()); err != nil {
		return domain.Page[domain.StatusEvent]{}, err
	}
	args := map[string]any{"p_limit": limit}
	for k, v := range map[string]string{"p_item_id": q.ItemID, "p_sale_id": q.SaleID, "p_to_status": q.ToStatus} {
		if v != "" {
			args[k] = v
		}
	}
	if err := keysetArgs(args, q.After); err != nil {
		return domain.Page[domain.StatusEvent]{}, err
	}
	var a pageAnswer[domain.StatusEvent]
	if err := b.callClient(ctx, tok, "mcp_list_status_events", args, &a); err != nil {
		return domain.Page[domain.StatusEvent]{}, err
	}
	return sealPage(ctx, b, p, domain.CursorStatusEvents, a)
}

// labelBatchRow is a label batch as mcp_list_label_batches answers it.
type labelBatchRow struct {
	ID         string     `json:"id"`
	TenantID   string     `json:"tenant_id"`
	SaleID     string     `json:"sale_id"`
	Status     string     `json:"status"`
	LabelCount int        `json:"label_count"`
	BoundCount int        `json:"bound_count"`
	CreatedAt  time.Time  `json:"created_at"`
	PrintedAt  *time.Time `json:"printed_at"`
}

// ListLabelBatches lists QR label batches in (created_at, id) order with
// their label and bound counts (a label is bound when an item's qr_code
// names it).
func (b *Backend) ListLabelBatches(ctx context.Context, p domain.Principal, q domain.LabelBatchQuery) (domain.Page[domain.LabelBatchSummary], error) {
	tok, err := b.tokenOf(p)
	if err != nil {
		return domain.Page[domain.LabelBatchSummary]{}, err
	}
	limit, err := domain.PageLimit(q.Limit)
	if err != nil {
		return domain.Page[domain.LabelBatchSummary]{}, err
	}
	if err := oneOf("status", q.Status, labelBatchStatuses); err != nil {
		return domain.Page[domain.LabelBatchSummary]{}, err
	}
	args := map[string]any{"p_limit": limit}
	if q.SaleID != "" {
		args["p_sale_id"] = q.SaleID
	}
	if q.Status != "" {
		args["p_status"] = q.Status
	}
	if err := keysetArgs(args, q.After); err != nil {
		return domain.Page[domain.LabelBatchSummary]{}, err
	}
	var a pageAnswer[labelBatchRow]
	if err := b.callClient(ctx, tok, "mcp_list_label_batches", args, &a); err != nil {
		return domain.Page[domain.LabelBatchSummary]{}, err
	}
	rows, err := sealPage(ctx, b, p, domain.CursorLabelBatches, a)
	if err != nil {
		return domain.Page[domain.LabelBatchSummary]{}, err
	}
	out := domain.Page[domain.LabelBatchSummary]{Rows: make([]domain.LabelBatchSummary, len(rows.Rows)), NextCursor: rows.NextCursor}
	for i, r := range rows.Rows {
		out.Rows[i] = domain.LabelBatchSummary{ID: r.ID, TenantID: r.TenantID, SaleID: r.SaleID, Status: r.Status,
			LabelCount: r.LabelCount, BoundCount: r.BoundCount, CreatedAt: r.CreatedAt, PrintedAt: r.PrintedAt}
	}
	return out, nil
}

// dispositionRow is an unsold item of a closed sale and when it was queued.
type dispositionRow struct {
	itemRow
	QueuedAt time.Time `json:"queued_at"`
}

// DispositionQueue lists the unsold items (published or on hold) of a
// closed sale in (created_at, id) order, with the extras inc asks for; a
// sale that has not closed has an empty queue.
func (b *Backend) DispositionQueue(ctx context.Context, p domain.Principal, q domain.DispositionQuery, inc domain.ItemIncludes) (domain.Page[domain.DispositionEntry], error) {
	tok, err := b.tokenOf(p)
	if err != nil {
		return domain.Page[domain.DispositionEntry]{}, err
	}
	limit, err := domain.PageLimit(q.Limit)
	if err != nil {
		return domain.Page[domain.DispositionEntry]{}, err
	}
	args := map[string]any{"p_sale_id": q.SaleID, "p_limit": limit,
		"p_include_photos": readsPhotos(inc), "p_include_price_history": inc.PriceHistory}
	if q.Room != "" {
		args["p_room"] = q.Room
	}
	if err := keysetArgs(args, q.After); err != nil {
		return domain.Page[domain.DispositionEntry]{}, err
	}
	var a pageAnswer[dispositionRow]
	if err := b.callClient(ctx, tok, "mcp_disposition_queue", args, &a); err != nil {
		return domain.Page[domain.DispositionEntry]{}, err
	}
	rows, err := sealPage(ctx, b, p, domain.CursorDisposition(q.SaleID), a)
	if err != nil {
		return domain.Page[domain.DispositionEntry]{}, err
	}
	out := domain.Page[domain.DispositionEntry]{Rows: make([]domain.DispositionEntry, len(rows.Rows)), NextCursor: rows.NextCursor}
	for i, r := range rows.Rows {
		out.Rows[i] = domain.DispositionEntry{ItemDetail: r.detail(inc), QueuedAt: r.QueuedAt}
	}
	return out, nil
}
