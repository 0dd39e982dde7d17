package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// The scoped reads of §12 beyond the original lists. Each is tenant-scoped
// (another tenant's record is a RefError like a missing one, marked
// CrossTenant for the audit) and sale-scoped (§4.3): a get of a sale the
// principal is not assigned to is ErrSaleAssignment, a list holds only
// assigned sales. Each runs in one read snapshot.

// assignedSales restricts a list to the principal's assigned sales when its
// membership is sale-scoped. Rows without a sale (NULL) fall outside the IN
// list, so a scoped principal never sees them either.
func (w *where) assignedSales(col string, p domain.Principal) {
	if !p.SaleScoped {
		return
	}
	if len(p.AssignedSaleIDs) == 0 {
		w.add("0 = 1")
		return
	}
	args := make([]any, len(p.AssignedSaleIDs))
	for i, id := range p.AssignedSaleIDs {
		args[i] = id
	}
	w.add(col+" IN "+placeholders(len(args)), args...)
}

// placeholders returns "(?, ?, …)" for n values.
func placeholders(n int) string { return "(?" + strings.Repeat(", ?", n-1) + ")" }

// queryRows runs query on q and calls scan for each row.
func queryRows(ctx context.Context, q queryRower, scan func(*sql.Rows) error, query string, args ...any) error {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

func anyArgs(xs []string) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

// keysetTS adds the keyset condition of a list ordered by (orderCol, idCol)
// whose key is one of our fixed-width timestamps, ascending or descending.
func (w *where) keysetTS(orderCol, idCol string, k *domain.Keyset, desc bool) error {
	if k == nil {
		return nil
	}
	if _, err := parseTS(k.Key); err != nil || k.ID == "" {
		return domain.Invalid("cursor", "not a cursor of this list: start again without a cursor")
	}
	op := ">"
	if desc {
		op = "<"
	}
	w.add("("+orderCol+", "+idCol+") "+op+" (?, ?)", k.Key, k.ID)
	return nil
}

// intKey reads a keyset key that must be a non-negative integer.
func intKey(k *domain.Keyset) (int64, error) {
	n, err := strconv.ParseInt(k.Key, 10, 64)
	if err != nil || n < 0 || k.ID == "" {
		return 0, domain.Invalid("cursor", "not a cursor of this list: start again without a cursor")
	}
	return n, nil
}

// requireAssigned refuses a sale outside a sale-scoped principal's
// assignment. The error names nothing the caller did not send.
func requireAssigned(p domain.Principal, saleID string) error {
	if !p.MaySeeSale(saleID) {
		return fmt.Errorf("store: sale %s is not assigned to membership %s: %w", saleID, p.MembershipID, domain.ErrSaleAssignment)
	}
	return nil
}

// checkSale is checkRef for a sale plus the assignment rule: unknown and
// foreign sales are RefErrors first, so assignment never answers for a sale
// of another tenant.
func (s *Store) checkSale(ctx context.Context, q queryRower, p domain.Principal, saleID string) error {
	if err := s.checkRef(ctx, q, "estate_sales", "sale_id", saleID, p.TenantID); err != nil {
		return err
	}
	return requireAssigned(p, saleID)
}

// attachDetails reads the extras inc asks for, one query per extra for the
// whole slice.
func (s *Store) attachDetails(ctx context.Context, tx *sql.Tx, tenantID string, items []domain.ItemDetail, inc domain.ItemIncludes) error {
	if len(items) == 0 {
		return nil
	}
	if inc.Photos {
		ptrs := make([]*domain.Item, len(items))
		for i := range items {
			ptrs[i] = &items[i].Item
		}
		if err := s.attachPhotosTo(ctx, tx, tenantID, ptrs); err != nil {
			return err
		}
	}
	if inc.PhotoTally {
		if err := s.attachPhotoTally(ctx, tx, tenantID, items); err != nil {
			return err
		}
	}
	if inc.PriceHistory {
		return s.attachPriceHistory(ctx, tx, tenantID, items)
	}
	return nil
}

// attachPhotoTally counts each item's photos, and those approved for
// public view, in one aggregate query: a list row shows no more of them.
func (s *Store) attachPhotoTally(ctx context.Context, tx *sql.Tx, tenantID string, items []domain.ItemDetail) error {
	idx := make(map[string]int, len(items))
	args := make([]any, 0, len(items)+1)
	args = append(args, tenantID)
	for i := range items {
		items[i].PhotoTally = &domain.PhotoTally{}
		idx[items[i].ID] = i
		args = append(args, items[i].ID)
	}
	err := queryRows(ctx, tx, func(r *sql.Rows) error {
		var (
			item             string
			count, published int
		)
		if err := r.Scan(&item, &count, &published); err != nil {
			return err
		}
		if i, ok := idx[item]; ok {
			*items[i].PhotoTally = domain.PhotoTally{Count: count, Published: published}
		}
		return nil
	}, `SELECT item_id, count(*), sum(published) FROM item_photos
		WHERE tenant_id = ? AND item_id IN `+placeholders(len(items))+` GROUP BY item_id`, args...)
	if err != nil {
		return s.dbErr("list items: photo tally", err)
	}
	return nil
}

// attachProvenance sets the provenance of each promoted item (GetItem's
// one).
func (s *Store) attachProvenance(ctx context.Context, tx *sql.Tx, tenantID string, items []domain.ItemDetail) error {
	idx := make(map[string]int, len(items))
	args := make([]any, 0, len(items)+1)
	args = append(args, tenantID)
	for i := range items {
		idx[items[i].ID] = i
		args = append(args, items[i].ID)
	}
	rows, err := tx.QueryContext(ctx, `SELECT item_id, candidate_id, ifnull(source_record_id, ''), ifnull(import_run_id, ''), proposal_id,
		created_at FROM item_provenance WHERE tenant_id = ? AND item_id IN `+placeholders(len(items)), args...)
	if err != nil {
		return s.dbErr("provenance", err)
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		var (
			item, created string
			pv            domain.ItemProvenance
			tsc           timeScanner
		)
		if err := rows.Scan(&item, &pv.CandidateID, &pv.SourceRecordID, &pv.ImportRunID, &pv.ProposalID, &created); err != nil {
			return s.dbErr("provenance: scan", err)
		}
		if pv.PromotedAt = tsc.at(created); tsc.err != nil {
			return s.dbErr("provenance: scan", tsc.err)
		}
		if i, ok := idx[item]; ok {
			items[i].Provenance = &pv
		}
	}
	if err := rows.Err(); err != nil {
		return s.dbErr("provenance", err)
	}
	return nil
}

func (s *Store) attachPriceHistory(ctx context.Context, tx *sql.Tx, tenantID string, items []domain.ItemDetail) error {
	idx := make(map[string]int, len(items))
	args := make([]any, 0, len(items)+1)
	args = append(args, tenantID)
	for i := range items {
		items[i].PriceHistory = []domain.PriceChange{}
		idx[items[i].ID] = i
		args = append(args, items[i].ID)
	}
	rows, err := tx.QueryContext(ctx, `SELECT id, tenant_id, item_id, price_cents, internal_price_guidance_cents, reason, actor_id,
		proposal_id, changed_at FROM item_price_history WHERE tenant_id = ? AND item_id IN `+placeholders(len(items))+`
		ORDER BY item_id, changed_at, id`, args...)
	if err != nil {
		return s.dbErr("price history", err)
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		var (
			pc              domain.PriceChange
			price, guidance sql.NullInt64
			changed         string
			tsc             timeScanner
		)
		if err := rows.Scan(&pc.ID, &pc.TenantID, &pc.ItemID, &price, &guidance, &pc.Reason, &pc.ActorID, &pc.ProposalID, &changed); err != nil {
			return s.dbErr("price history: scan", err)
		}
		pc.PriceCents, pc.InternalPriceGuidanceCents = intPtr(price), intPtr(guidance)
		pc.ChangedAt = tsc.at(changed)
		if tsc.err != nil {
			return s.dbErr("price history: scan", tsc.err)
		}
		i := idx[pc.ItemID]
		items[i].PriceHistory = append(items[i].PriceHistory, pc)
	}
	if err := rows.Err(); err != nil {
		return s.dbErr("price history", err)
	}
	return nil
}

// getOwned reads one record of the principal's tenant by id inside a read
// transaction: a missing record and another tenant's are the same RefError
// (cross_tenant set for the audit only), and a sale-scoped member must be
// assigned to the record's sale. then, when set, completes the record in
// the same transaction.
func getOwned[T any](ctx context.Context, s *Store, p domain.Principal, field, id, query string, scan func(interface{ Scan(...any) error }) (T, error),
	owner func(T) (tenantID, saleID string), then func(*sql.Tx, *T) error) (T, error) {
	var out T
	if err := requireTenant(p); err != nil {
		return out, err
	}
	err := s.withRead(ctx, func(tx *sql.Tx) error {
		v, err := scan(tx.QueryRowContext(ctx, query, id))
		if errors.Is(err, sql.ErrNoRows) {
			return domain.UnknownRef(field, id, false)
		}
		if err != nil {
			return s.dbErr("get "+field, err)
		}
		tenant, sale := owner(v)
		if tenant != p.TenantID {
			return domain.UnknownRef(field, id, true)
		}
		if err := requireAssigned(p, sale); err != nil {
			return err
		}
		if then != nil {
			if err := then(tx, &v); err != nil {
				return err
			}
		}
		out = v
		return nil
	})
	if err != nil {
		var zero T
		return zero, err
	}
	return out, nil
}

// GetSale reads one sale of the principal's tenant.
func (s *Store) GetSale(ctx context.Context, p domain.Principal, saleID string) (domain.Sale, error) {
	return getOwned(ctx, s, p, "sale_id", saleID, "SELECT "+saleCols+" FROM estate_sales WHERE id = ?", scanSale,
		func(v domain.Sale) (string, string) { return v.TenantID, v.ID }, nil)
}

// GetItem reads one item of the principal's tenant with the extras inc asks for.
func (s *Store) GetItem(ctx context.Context, p domain.Principal, itemID string, inc domain.ItemIncludes) (domain.ItemDetail, error) {
	scan := func(r interface{ Scan(...any) error }) (domain.ItemDetail, error) {
		it, err := scanItem(r)
		return domain.ItemDetail{Item: it}, err
	}
	return getOwned(ctx, s, p, "item_id", itemID, "SELECT "+itemCols+" FROM items WHERE id = ?", scan,
		func(v domain.ItemDetail) (string, string) { return v.TenantID, v.SaleID },
		func(tx *sql.Tx, v *domain.ItemDetail) error {
			details := []domain.ItemDetail{*v}
			if err := s.attachDetails(ctx, tx, p.TenantID, details, inc); err != nil {
				return err
			}
			// Provenance is read for one item, by a role that reads the
			// catalogue, as in live mode's mcp_get_item; no list carries it.
			if inc.Provenance && p.Has(domain.ProvenancePermission) {
				if err := s.attachProvenance(ctx, tx, p.TenantID, details); err != nil {
					return err
				}
			}
			*v = details[0]
			return nil
		})
}

// GetCandidate reads one candidate of the principal's tenant.
func (s *Store) GetCandidate(ctx context.Context, p domain.Principal, candidateID string) (domain.Candidate, error) {
	return getOwned(ctx, s, p, "candidate_id", candidateID, "SELECT "+candidateCols+" FROM inventory_candidates WHERE id = ?", scanCandidate,
		func(v domain.Candidate) (string, string) { return v.TenantID, v.SaleID }, nil)
}

const runCols = `r.id, r.tenant_id, r.source_descriptor_id, ifnull(r.sale_id, ''), r.kind, r.status, r.record_count,
	r.created_at, d.kind`

const runFrom = ` FROM import_runs r JOIN source_descriptors d ON d.tenant_id = r.tenant_id AND d.id = r.source_descriptor_id`

func scanRun(r interface{ Scan(...any) error }) (domain.ImportRunSummary, error) {
	var (
		run     domain.ImportRunSummary
		created string
		tsc     timeScanner
	)
	if err := r.Scan(&run.ID, &run.TenantID, &run.SourceDescriptorID, &run.SaleID, &run.Kind, &run.Status, &run.RecordCount,
		&created, &run.SourceKind); err != nil {
		return run, err
	}
	run.CreatedAt = tsc.at(created)
	return run, tsc.err
}

// ListImportRuns lists the import runs of the principal's tenant, newest
// first: keyset on (created_at, id) descending.
func (s *Store) ListImportRuns(ctx context.Context, p domain.Principal, q domain.ImportRunQuery) (domain.Page[domain.ImportRunSummary], error) {
	var page domain.Page[domain.ImportRunSummary]
	if err := requireTenant(p); err != nil {
		return page, err
	}
	limit, err := domain.PageLimit(q.Limit)
	if err != nil {
		return page, err
	}
	var w where
	w.add("r.tenant_id = ?", p.TenantID)
	w.assignedSales("r.sale_id", p)
	if q.SaleID != "" {
		w.add("r.sale_id = ?", q.SaleID)
	}
	if err := w.keysetTS("r.created_at", "r.id", q.After, true); err != nil {
		return page, err
	}
	err = s.withRead(ctx, func(tx *sql.Tx) error {
		if q.SaleID != "" {
			if err := s.checkSale(ctx, tx, p, q.SaleID); err != nil {
				return err
			}
		}
		rows, err := tx.QueryContext(ctx, "SELECT "+runCols+runFrom+w.sql()+" ORDER BY r.created_at DESC, r.id DESC LIMIT ?",
			append(w.args, limit+1)...)
		if err != nil {
			return s.dbErr("list import runs", err)
		}
		defer func() { _ = rows.Close() }()
		for rows.Next() {
			run, err := scanRun(rows)
			if err != nil {
				return s.dbErr("list import runs: scan", err)
			}
			page.Rows = append(page.Rows, run)
		}
		if err := rows.Err(); err != nil {
			return s.dbErr("list import runs", err)
		}
		return nil
	})
	if err != nil {
		return domain.Page[domain.ImportRunSummary]{}, err
	}
	if len(page.Rows) > limit {
		page.Rows = page.Rows[:limit]
		last := page.Rows[limit-1]
		page.NextCursor = s.cursors.Encode(domain.CursorImportRuns, p.TenantID, domain.Keyset{Key: ts(last.CreatedAt), ID: last.ID})
	}
	if page.Rows == nil {
		page.Rows = []domain.ImportRunSummary{}
	}
	return page, nil
}

// GetImportRun reads one run, its candidate counts and a page of its source
// records (by ordinal) with the candidates each produced.
func (s *Store) GetImportRun(ctx context.Context, p domain.Principal, q domain.ImportRunDetailQuery) (domain.ImportRunDetail, error) {
	var out domain.ImportRunDetail
	if err := requireTenant(p); err != nil {
		return out, err
	}
	limit, err := domain.PageLimit(q.Limit)
	if err != nil {
		return out, err
	}
	var after int64
	if q.After != nil {
		if after, err = intKey(q.After); err != nil {
			return out, err
		}
	}
	err = s.withRead(ctx, func(tx *sql.Tx) error {
		run, err := scanRun(tx.QueryRowContext(ctx, "SELECT "+runCols+runFrom+" WHERE r.id = ?", q.RunID))
		if errors.Is(err, sql.ErrNoRows) {
			return domain.UnknownRef("run_id", q.RunID, false)
		}
		if err != nil {
			return s.dbErr("get import run", err)
		}
		if run.TenantID != p.TenantID {
			return domain.UnknownRef("run_id", q.RunID, true)
		}
		if err := requireAssigned(p, run.SaleID); err != nil {
			return err
		}
		out.Run = run
		if err := s.runCounts(ctx, tx, p.TenantID, run.ID, &out.Candidates); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT id, tenant_id, import_run_id, ordinal, payload_hash, payload, created_at
			FROM source_records WHERE tenant_id = ? AND import_run_id = ? AND ordinal > ? ORDER BY ordinal LIMIT ?`,
			p.TenantID, run.ID, after, limit+1)
		if err != nil {
			return s.dbErr("get import run: records", err)
		}
		for rows.Next() {
			var (
				rec     domain.SourceRecordDetail
				created string
				tsc     timeScanner
			)
			if err := rows.Scan(&rec.ID, &rec.TenantID, &rec.ImportRunID, &rec.Ordinal, &rec.PayloadHash, &rec.Payload, &created); err != nil {
				_ = rows.Close()
				return s.dbErr("get import run: records", err)
			}
			if rec.CreatedAt = tsc.at(created); tsc.err != nil {
				_ = rows.Close()
				return s.dbErr("get import run: records", tsc.err)
			}
			rec.CandidateIDs = []string{}
			out.Records = append(out.Records, rec)
		}
		if err := rows.Err(); err != nil {
			_ = rows.Close()
			return s.dbErr("get import run: records", err)
		}
		_ = rows.Close()
		if len(out.Records) > limit {
			out.Records = out.Records[:limit]
			last := out.Records[limit-1]
			out.RecordsNextCursor = s.cursors.Encode(domain.CursorImportRecords(run.ID), p.TenantID,
				domain.Keyset{Key: strconv.Itoa(last.Ordinal), ID: last.ID})
		}
		return s.recordCandidates(ctx, tx, p.TenantID, out.Records)
	})
	if err != nil {
		return domain.ImportRunDetail{}, err
	}
	if out.Records == nil {
		out.Records = []domain.SourceRecordDetail{}
	}
	return out, nil
}

func (s *Store) runCounts(ctx context.Context, tx *sql.Tx, tenantID, runID string, c *domain.ReviewCounts) error {
	rows, err := tx.QueryContext(ctx, `SELECT review_status, count(*) FROM inventory_candidates
		WHERE tenant_id = ? AND import_run_id = ? GROUP BY review_status`, tenantID, runID)
	if err != nil {
		return s.dbErr("get import run: counts", err)
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		var (
			status string
			n      int
		)
		if err := rows.Scan(&status, &n); err != nil {
			return s.dbErr("get import run: counts", err)
		}
		switch status {
		case domain.ReviewNeedsReview:
			c.NeedsReview = n
		case domain.ReviewApproved:
			c.Approved = n
		case domain.ReviewRejected:
			c.Rejected = n
		case domain.ReviewPromoted:
			c.Promoted = n
		case domain.ReviewDuplicate:
			c.Duplicate = n
		}
	}
	if err := rows.Err(); err != nil {
		return s.dbErr("get import run: counts", err)
	}
	return nil
}

func (s *Store) recordCandidates(ctx context.Context, tx *sql.Tx, tenantID string, recs []domain.SourceRecordDetail) error {
	if len(recs) == 0 {
		return nil
	}
	idx := make(map[string]int, len(recs))
	args := []any{tenantID}
	for i, r := range recs {
		idx[r.ID] = i
		args = append(args, r.ID)
	}
	rows, err := tx.QueryContext(ctx, `SELECT source_record_id, id FROM inventory_candidates
		WHERE tenant_id = ? AND source_record_id IN `+placeholders(len(recs))+` ORDER BY source_record_id, created_at, id`, args...)
	if err != nil {
		return s.dbErr("get import run: candidates", err)
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		var rec, id string
		if err := rows.Scan(&rec, &id); err != nil {
			return s.dbErr("get import run: candidates", err)
		}
		recs[idx[rec]].CandidateIDs = append(recs[idx[rec]].CandidateIDs, id)
	}
	if err := rows.Err(); err != nil {
		return s.dbErr("get import run: candidates", err)
	}
	return nil
}

// ListStatusEvents lists the status history of the principal's items,
// newest first: keyset on (effective_at, id) descending.
func (s *Store) ListStatusEvents(ctx context.Context, p domain.Principal, q domain.StatusEventQuery) (domain.Page[domain.StatusEvent], error) {
	var page domain.Page[domain.StatusEvent]
	limit, err := listPrelude(p, q.Limit, "to_status", q.ToStatus, domain.ItemStatuses())
	if err != nil {
		return page, err
	}
	var w where
	w.add("tenant_id = ?", p.TenantID)
	w.assignedSales("sale_id", p)
	if q.ItemID != "" {
		w.add("item_id = ?", q.ItemID)
	}
	if q.SaleID != "" {
		w.add("sale_id = ?", q.SaleID)
	}
	if q.ToStatus != "" {
		w.add("to_status = ?", q.ToStatus)
	}
	if err := w.keysetTS("effective_at", "id", q.After, true); err != nil {
		return page, err
	}
	err = s.withRead(ctx, func(tx *sql.Tx) error {
		if q.ItemID != "" {
			if err := s.checkItem(ctx, tx, p, q.ItemID); err != nil {
				return err
			}
		}
		if q.SaleID != "" {
			if err := s.checkSale(ctx, tx, p, q.SaleID); err != nil {
				return err
			}
		}
		rows, err := tx.QueryContext(ctx, `SELECT id, tenant_id, item_id, sale_id, from_status, to_status, effective_at, source_type,
			actor_id, proposal_id, recorded_at FROM item_status_events`+w.sql()+` ORDER BY effective_at DESC, id DESC LIMIT ?`,
			append(w.args, limit+1)...)
		if err != nil {
			return s.dbErr("list status events", err)
		}
		defer func() { _ = rows.Close() }()
		for rows.Next() {
			var (
				ev                  domain.StatusEvent
				effective, recorded string
				tsc                 timeScanner
			)
			if err := rows.Scan(&ev.ID, &ev.TenantID, &ev.ItemID, &ev.SaleID, &ev.FromStatus, &ev.ToStatus, &effective,
				&ev.SourceType, &ev.ActorID, &ev.ProposalID, &recorded); err != nil {
				return s.dbErr("list status events: scan", err)
			}
			ev.EffectiveAt, ev.RecordedAt = tsc.at(effective), tsc.at(recorded)
			if tsc.err != nil {
				return s.dbErr("list status events: scan", tsc.err)
			}
			page.Rows = append(page.Rows, ev)
		}
		if err := rows.Err(); err != nil {
			return s.dbErr("list status events", err)
		}
		return nil
	})
	if err != nil {
		return domain.Page[domain.StatusEvent]{}, err
	}
	if len(page.Rows) > limit {
		page.Rows = page.Rows[:limit]
		last := page.Rows[limit-1]
		page.NextCursor = s.cursors.Encode(domain.CursorStatusEvents, p.TenantID, domain.Keyset{Key: ts(last.EffectiveAt), ID: last.ID})
	}
	if page.Rows == nil {
		page.Rows = []domain.StatusEvent{}
	}
	return page, nil
}

// checkItem is checkSale for an item: unknown or foreign items are
// RefErrors, an item of an unassigned sale is ErrSaleAssignment.
func (s *Store) checkItem(ctx context.Context, q queryRower, p domain.Principal, itemID string) error {
	var tenant, sale string
	err := q.QueryRowContext(ctx, "SELECT tenant_id, sale_id FROM items WHERE id = ?", itemID).Scan(&tenant, &sale)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return domain.UnknownRef("item_id", itemID, false)
	case err != nil:
		return s.dbErr("check item_id", err)
	case tenant != p.TenantID:
		return domain.UnknownRef("item_id", itemID, true)
	}
	return requireAssigned(p, sale)
}

// ListLabelBatches lists QR label batches in (created_at, id) order with
// their label and bound counts. A label is bound when an item's qr_code
// names it (items.qr_code is the one record of binding).
func (s *Store) ListLabelBatches(ctx context.Context, p domain.Principal, q domain.LabelBatchQuery) (domain.Page[domain.LabelBatchSummary], error) {
	var page domain.Page[domain.LabelBatchSummary]
	limit, err := listPrelude(p, q.Limit, "status", q.Status, domain.LabelBatchStatuses())
	if err != nil {
		return page, err
	}
	var w where
	w.add("b.tenant_id = ?", p.TenantID)
	w.assignedSales("b.sale_id", p)
	if q.SaleID != "" {
		w.add("b.sale_id = ?", q.SaleID)
	}
	if q.Status != "" {
		w.add("b.status = ?", q.Status)
	}
	if err := w.keysetTS("b.created_at", "b.id", q.After, false); err != nil {
		return page, err
	}
	err = s.withRead(ctx, func(tx *sql.Tx) error {
		if q.SaleID != "" {
			if err := s.checkSale(ctx, tx, p, q.SaleID); err != nil {
				return err
			}
		}
		rows, err := tx.QueryContext(ctx, `SELECT b.id, b.tenant_id, b.sale_id, b.status, b.created_at, b.printed_at,
			(SELECT count(*) FROM qr_labels l WHERE l.batch_id = b.id),
			(SELECT count(*) FROM qr_labels l JOIN items i ON i.qr_code = l.code AND i.qr_code <> '' AND i.tenant_id = l.tenant_id
				WHERE l.batch_id = b.id)
			FROM label_batches b`+w.sql()+` ORDER BY b.created_at, b.id LIMIT ?`, append(w.args, limit+1)...)
		if err != nil {
			return s.dbErr("list label batches", err)
		}
		defer func() { _ = rows.Close() }()
		for rows.Next() {
			var (
				b       domain.LabelBatchSummary
				created string
				printed sql.NullString
				tsc     timeScanner
			)
			if err := rows.Scan(&b.ID, &b.TenantID, &b.SaleID, &b.Status, &created, &printed, &b.LabelCount, &b.BoundCount); err != nil {
				return s.dbErr("list label batches: scan", err)
			}
			b.CreatedAt, b.PrintedAt = tsc.at(created), tsc.ptr(printed)
			if tsc.err != nil {
				return s.dbErr("list label batches: scan", tsc.err)
			}
			page.Rows = append(page.Rows, b)
		}
		if err := rows.Err(); err != nil {
			return s.dbErr("list label batches", err)
		}
		return nil
	})
	if err != nil {
		return domain.Page[domain.LabelBatchSummary]{}, err
	}
	if len(page.Rows) > limit {
		page.Rows = page.Rows[:limit]
		last := page.Rows[limit-1]
		page.NextCursor = s.cursors.Encode(domain.CursorLabelBatches, p.TenantID, domain.Keyset{Key: ts(last.CreatedAt), ID: last.ID})
	}
	if page.Rows == nil {
		page.Rows = []domain.LabelBatchSummary{}
	}
	return page, nil
}

// DispositionQueue lists the unsold items (published or on hold) of a
// closed sale in (created_at, id) order: they entered the queue when the
// sale ended. A sale that has not closed has an empty queue. Applying a
// disposition moves an item out of the unsold statuses, and so out of the
// queue, without any queue bookkeeping that could drift from the items.
func (s *Store) DispositionQueue(ctx context.Context, p domain.Principal, q domain.DispositionQuery, inc domain.ItemIncludes) (domain.Page[domain.DispositionEntry], error) {
	var page domain.Page[domain.DispositionEntry]
	if err := requireTenant(p); err != nil {
		return page, err
	}
	limit, err := domain.PageLimit(q.Limit)
	if err != nil {
		return page, err
	}
	var w where
	w.add("tenant_id = ?", p.TenantID)
	w.add("sale_id = ?", q.SaleID)
	unsold := domain.UnsoldItemStatuses()
	w.add("status IN "+placeholders(len(unsold)), anyArgs(unsold)...)
	if q.Room != "" {
		w.add("room = ?", q.Room)
	}
	if err := w.keysetTS("created_at", "id", q.After, false); err != nil {
		return page, err
	}
	err = s.withRead(ctx, func(tx *sql.Tx) error {
		if err := s.checkSale(ctx, tx, p, q.SaleID); err != nil {
			return err
		}
		var status, ends string
		if err := tx.QueryRowContext(ctx, "SELECT status, ends_at FROM estate_sales WHERE id = ?", q.SaleID).Scan(&status, &ends); err != nil {
			return s.dbErr("disposition queue: sale", err)
		}
		if !slices.Contains(domain.DispositionSaleStatuses(), status) {
			return nil
		}
		queuedAt, err := parseTS(ends)
		if err != nil {
			return s.dbErr("disposition queue: sale", err)
		}
		rows, err := tx.QueryContext(ctx, "SELECT "+itemCols+" FROM items"+w.sql()+" ORDER BY created_at, id LIMIT ?", append(w.args, limit+1)...)
		if err != nil {
			return s.dbErr("disposition queue", err)
		}
		var details []domain.ItemDetail
		for rows.Next() {
			it, err := scanItem(rows)
			if err != nil {
				_ = rows.Close()
				return s.dbErr("disposition queue: scan", err)
			}
			details = append(details, domain.ItemDetail{Item: it})
		}
		if err := rows.Err(); err != nil {
			_ = rows.Close()
			return s.dbErr("disposition queue", err)
		}
		_ = rows.Close()
		if len(details) > limit {
			details = details[:limit]
			last := details[limit-1]
			page.NextCursor = s.cursors.Encode(domain.CursorDisposition(q.SaleID), p.TenantID, domain.Keyset{Key: ts(last.CreatedAt), ID: last.ID})
		}
		if err := s.attachDetails(ctx, tx, p.TenantID, details, inc); err != nil {
			return err
		}
		for _, d := range details {
			page.Rows = append(page.Rows, domain.DispositionEntry{ItemDetail: d, QueuedAt: queuedAt})
		}
		return nil
	})
	if err != nil {
		return domain.Page[domain.DispositionEntry]{}, err
	}
	if page.Rows == nil {
		page.Rows = []domain.DispositionEntry{}
	}
	return page, nil
}
