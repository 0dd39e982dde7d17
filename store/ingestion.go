package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// The ingestion writes (issue: candidate and draft tools). Each is ONE
// idempotentWrite: the key row, every record it creates and the call's
// plugin_event commit together or not at all. None writes items,
// item_photos or any status table: candidates are reviewable data until a
// seller's approved action promotes or applies them.

// Import run kinds of the single-record MCP chains.
const (
	importKindStatusReport = "mcp_status_report"
	importKindMedia        = "mcp_media"
)

// importProgressEvery is how often (rows) a long import reports progress.
const importProgressEvery = 500

// bigImportRows is the import size above which its transaction gets the
// larger writer page cache.
const bigImportRows = 1000

// RunImport implements domain.IngestionBackend.
func (s *Store) RunImport(ctx context.Context, p domain.Principal, w domain.WriteMeta, in domain.NewImport) (domain.ImportCreated, domain.WriteOutcome, error) {
	var zero domain.ImportCreated
	checked, err := domain.CheckImport(in)
	if err != nil {
		return zero, domain.WriteOutcome{}, err
	}
	rows, label := checked.Rows, checked.Label
	mapping, err := json.Marshal(checked.Mapping)
	if err != nil {
		return zero, domain.WriteOutcome{}, fmt.Errorf("store: import mapping: %w", domain.ErrInvalidInput)
	}

	big := len(rows) > bigImportRows
	if big {
		defer s.resetWriteCache(ctx) // after the transaction, committed or not
	}
	return idempotentWrite(ctx, s, p, w, func(tx *sql.Tx, now time.Time) (domain.ImportCreated, domain.Related, error) {
		var res domain.ImportCreated
		if big {
			if err := s.raiseWriteCache(ctx, tx); err != nil {
				return res, domain.Related{}, err
			}
		}
		if err := s.ingCheckSale(ctx, tx, p, in.SaleID); err != nil {
			return res, domain.Related{}, err
		}
		// Status rows must name an item of this tenant and this sale; an
		// item of another tenant reads exactly like a missing one.
		var ids []string
		for _, r := range rows {
			if r.Kind == domain.CandidateStatusUpdate && r.ItemID != "" {
				ids = append(ids, r.ItemID)
			}
		}
		items, err := s.ingItemRefs(ctx, tx, p.TenantID, ids)
		if err != nil {
			return res, domain.Related{}, err
		}
		for i := range rows {
			r := &rows[i]
			if r.Kind == domain.CandidateStatusUpdate && r.ItemID != "" {
				it, ok := items[r.ItemID]
				switch {
				case !ok:
					r.MarkItemUnknown()
				case it.SaleID != in.SaleID:
					r.MarkItemInOtherSale()
				case !p.MaySeeSale(it.SaleID):
					r.MarkItemUnknown()
				}
			}
		}
		valid, err := domain.CountValidImportRows(checked.Field, rows, in.SkipInvalidRows)
		if err != nil {
			return res, domain.Related{}, err
		}

		descID, err := s.ingDescriptor(ctx, tx, p, in.Kind, label, now)
		if err != nil {
			return res, domain.Related{}, err
		}
		runID := s.ids.New(domain.PrefixRun)
		status := domain.ImportRunCompleted
		if valid < len(rows) {
			status = domain.ImportRunWithRejects
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO import_runs (id, tenant_id, source_descriptor_id, sale_id, kind, status,
			record_count, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			runID, p.TenantID, descID, in.SaleID, in.Kind, status, len(rows), ts(now)); err != nil {
			return res, domain.Related{}, s.dbErr("import: run", err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO import_run_details (import_run_id, tenant_id, source_label, content_sha256,
			content_bytes, mapping, rows_total, rows_rejected, created_by_client_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			runID, p.TenantID, label, nullStr(in.ContentHash), in.ContentBytes, string(mapping), len(rows), len(rows)-valid,
			p.Client.ID); err != nil {
			return res, domain.Related{}, s.dbErr("import: run details", err)
		}

		ins, err := s.ingPrepare(ctx, tx)
		if err != nil {
			return res, domain.Related{}, err
		}
		defer ins.close()
		// Records and candidates go in by batches of ingBatch rows, one
		// statement each (a record before the candidate that names it).
		records := newRowBatch(tx, recordInsert, 7)
		candidates := newRowBatch(tx, candidateInsert, 19)
		flush := func() error {
			if err := records.flush(ctx); err != nil {
				return s.dbErr("import: source record", err)
			}
			if err := candidates.flush(ctx); err != nil {
				return s.dbErr("import: candidate", err)
			}
			return nil
		}
		res = domain.ImportCreated{ImportRunID: runID, SourceDescriptorID: descID, SaleID: in.SaleID, Status: status,
			SourceRecordCount: len(rows), CandidateIDs: []string{}, StatusUpdateCandidateIDs: []string{}, RejectedRows: []domain.RowIssue{}}
		rel := domain.Related{SourceImportRunIDs: []string{runID}}
		var buf bytes.Buffer
		for i, r := range rows {
			recordID := s.ids.New(domain.PrefixRecord)
			payload, err := domain.EncodeSourcePayload(&buf, r)
			if err != nil {
				return res, domain.Related{}, s.dbErr("import: encode row", err)
			}
			records.add(recordID, p.TenantID, runID, r.Row, domain.OriginalHash(payload), string(payload), ts(now))
			if len(rel.SourceImportRecordIDs) < domain.MaxRelatedIDs {
				rel.SourceImportRecordIDs = append(rel.SourceImportRecordIDs, recordID)
			}
			if !r.Valid() {
				res.RejectedRowCount++
				for _, is := range r.Issues {
					if is.Severity == domain.SeverityError && len(res.RejectedRows) < domain.MaxListedIssues {
						res.RejectedRows = append(res.RejectedRows, is)
					}
				}
				continue
			}
			c := ingCandidate(r, p, in.SaleID, descID, runID, recordID, now)
			c.ID = s.ids.New(domain.PrefixCandidate)
			candidates.add(c.ID, c.TenantID, c.SaleID, c.Kind, c.Title, c.Description, c.Category,
				c.Room, c.Condition, c.Quantity, nullInt(c.SuppliedPriceCents), c.Notes, c.ReviewStatus, c.SourceDescriptorID,
				c.ImportRunID, c.SourceRecordID, c.CreatedByClientID, c.Version, ts(now))
			if records.full() || candidates.full() || r.Kind == domain.CandidateStatusUpdate {
				if err := flush(); err != nil {
					return res, domain.Related{}, err
				}
			}
			if r.Kind == domain.CandidateStatusUpdate {
				it := items[r.ItemID]
				if _, err := ins.change.ExecContext(ctx, c.ID, p.TenantID, domain.CandidateStatusUpdate, it.ID, it.Version, it.Status,
					r.ReportedStatus, tsPtr(r.EffectiveAt), domain.ReportSpreadsheet); err != nil {
					return res, domain.Related{}, s.dbErr("import: status report", err)
				}
				res.StatusUpdateCandidateCount++
				if len(res.StatusUpdateCandidateIDs)+len(res.CandidateIDs) < domain.MaxListedIDs {
					res.StatusUpdateCandidateIDs = append(res.StatusUpdateCandidateIDs, c.ID)
				} else {
					res.IDsTruncated = true
				}
			} else {
				res.CandidateCount++
				if len(res.StatusUpdateCandidateIDs)+len(res.CandidateIDs) < domain.MaxListedIDs {
					res.CandidateIDs = append(res.CandidateIDs, c.ID)
				} else {
					res.IDsTruncated = true
				}
			}
			if len(rel.CandidateIDs) < domain.MaxRelatedIDs {
				rel.CandidateIDs = append(rel.CandidateIDs, c.ID)
			}
			if in.Progress != nil && (i+1)%importProgressEvery == 0 {
				in.Progress(i+1, len(rows))
			}
		}
		if err := flush(); err != nil {
			return res, domain.Related{}, err
		}
		if in.Progress != nil {
			in.Progress(len(rows), len(rows))
		}
		return res, rel, nil
	})
}

// The per-row inserts of an import, each for a batch of rows.
const (
	recordInsert    = `INSERT INTO source_records (id, tenant_id, import_run_id, ordinal, payload_hash, payload, created_at) VALUES `
	candidateInsert = `INSERT INTO inventory_candidates (id, tenant_id, sale_id, kind, title,
		description, category, room, condition, quantity, supplied_price_cents, notes, review_status, source_descriptor_id,
		import_run_id, source_record_id, created_by_client_id, version, created_at) VALUES `
	// ingBatch rows per statement: a statement's overhead (its journal
	// among it) is paid once for them.
	ingBatch = 64
)

// rowBatch gathers the values of up to ingBatch rows of one insert and
// runs them as one statement.
type rowBatch struct {
	tx     *sql.Tx
	prefix string
	cols   int
	args   []any
	stmts  map[int]string
}

func newRowBatch(tx *sql.Tx, prefix string, cols int) *rowBatch {
	return &rowBatch{tx: tx, prefix: prefix, cols: cols, stmts: map[int]string{}}
}

func (b *rowBatch) add(vals ...any) { b.args = append(b.args, vals...) }

func (b *rowBatch) full() bool { return len(b.args) >= ingBatch*b.cols }

// flush inserts the rows gathered so far.
func (b *rowBatch) flush(ctx context.Context) error {
	n := len(b.args) / b.cols
	if n == 0 {
		return nil
	}
	q, ok := b.stmts[n]
	if !ok {
		row := "(?" + strings.Repeat(", ?", b.cols-1) + ")"
		q = b.prefix + row + strings.Repeat(", "+row, n-1)
		b.stmts[n] = q
	}
	_, err := b.tx.ExecContext(ctx, q, b.args...)
	b.args = b.args[:0]
	return err
}

// ingStatements are the per-row statements of an import prepared once (the
// records and candidates go by batches: rowBatch).
type ingStatements struct {
	change *sql.Stmt
}

func (s *Store) ingPrepare(ctx context.Context, tx *sql.Tx) (*ingStatements, error) {
	var st ingStatements
	var err error
	if st.change, err = tx.PrepareContext(ctx, `INSERT INTO candidate_item_changes (candidate_id, tenant_id, kind, item_id,
		observed_version, observed_status, reported_status, effective_at, report_source) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`); err != nil {
		return nil, s.dbErr("import: prepare", err)
	}
	return &st, nil
}

func (st *ingStatements) close() {
	for _, s := range []*sql.Stmt{st.change} {
		if s != nil {
			_ = s.Close()
		}
	}
}

// ingCandidate builds the candidate of a valid import row.
func ingCandidate(r domain.ImportRow, p domain.Principal, saleID, descID, runID, recordID string, now time.Time) domain.Candidate {
	c := domain.ImportRowCandidate(r)
	c.TenantID, c.SaleID, c.ReviewStatus = p.TenantID, saleID, domain.ReviewNeedsReview
	c.SourceDescriptorID, c.ImportRunID, c.SourceRecordID = descID, runID, recordID
	c.CreatedByClientID, c.Version, c.CreatedAt = p.Client.ID, 1, now
	return c
}

// ingPayloadBytes encodes a source record's payload into a buffer of its
// own (domain.SourcePayload).
func ingPayloadBytes(v any) ([]byte, error) { return domain.SourcePayload(v) }

// ingDescriptor returns the source descriptor of an import: the client's
// own mcp_client descriptor for rows typed through it, a new csv_upload
// descriptor (naming the client) for each uploaded file.
func (s *Store) ingDescriptor(ctx context.Context, tx *sql.Tx, p domain.Principal, kind, label string, now time.Time) (string, error) {
	if kind != domain.ImportCSV {
		return s.mcpDescriptor(ctx, tx, p, now)
	}
	id := s.ids.New(domain.PrefixSource)
	if label == "" {
		label = "CSV upload"
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO source_descriptors (id, tenant_id, kind, client_id, label, created_at)
		VALUES (?, ?, ?, ?, ?, ?)`, id, p.TenantID, domain.SourceKindCSVUpload, p.Client.ID, label, ts(now)); err != nil {
		return "", s.dbErr("import: source descriptor", err)
	}
	return id, nil
}

// ingCheckSale checks that a sale is the tenant's and the actor's.
func (s *Store) ingCheckSale(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, p domain.Principal, saleID string) error {
	if err := s.checkRef(ctx, q, "estate_sales", "sale_id", saleID, p.TenantID); err != nil {
		return err
	}
	if !p.MaySeeSale(saleID) {
		return fmt.Errorf("store: sale %s: %w", saleID, domain.ErrSaleAssignment)
	}
	return nil
}

type ingQueryer interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}

// ingItemRefs reads, in chunks, the items of tenantID among ids.
func (s *Store) ingItemRefs(ctx context.Context, q ingQueryer, tenantID string, ids []string) (map[string]domain.ItemRef, error) {
	out := map[string]domain.ItemRef{}
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	const chunk = 500
	for start := 0; start < len(ids); start += chunk {
		part := ids[start:min(start+chunk, len(ids))]
		args := []any{tenantID}
		for _, id := range part {
			args = append(args, id)
		}
		rows, err := q.QueryContext(ctx, "SELECT id, sale_id, status, version FROM items WHERE tenant_id = ? AND id IN (?"+
			strings.Repeat(", ?", len(part)-1)+")", args...)
		if err != nil {
			return nil, s.dbErr("import: items", err)
		}
		for rows.Next() {
			var it domain.ItemRef
			if err := rows.Scan(&it.ID, &it.SaleID, &it.Status, &it.Version); err != nil {
				_ = rows.Close()
				return nil, s.dbErr("import: items", err)
			}
			out[it.ID] = it
		}
		if err := rows.Close(); err != nil {
			return nil, s.dbErr("import: items", err)
		}
		if err := rows.Err(); err != nil {
			return nil, s.dbErr("import: items", err)
		}
	}
	return out, nil
}

// ImportTargets implements domain.IngestionBackend: a read, in one snapshot.
func (s *Store) ImportTargets(ctx context.Context, p domain.Principal, saleID string, itemIDs []string) (domain.ImportTargets, error) {
	out := domain.ImportTargets{SaleID: saleID, Items: map[string]domain.ItemRef{}}
	if err := requireTenant(p); err != nil {
		return out, err
	}
	if len(itemIDs) > domain.MaxImportRows {
		return out, domain.Invalid("item_id", "too many items")
	}
	err := s.withRead(ctx, func(tx *sql.Tx) error {
		if err := s.ingCheckSale(ctx, tx, p, saleID); err != nil {
			return err
		}
		items, err := s.ingItemRefs(ctx, tx, p.TenantID, itemIDs)
		if err != nil {
			return err
		}
		for id, it := range items {
			if p.MaySeeSale(it.SaleID) {
				out.Items[id] = it
			}
		}
		return nil
	})
	return out, err
}

// CreateStatusReport implements domain.IngestionBackend.
func (s *Store) CreateStatusReport(ctx context.Context, p domain.Principal, w domain.WriteMeta, in domain.NewStatusReport) (domain.StatusReportCreated, domain.WriteOutcome, error) {
	var zero domain.StatusReportCreated
	in, payload, err := domain.CheckStatusReport(in)
	if err != nil {
		return zero, domain.WriteOutcome{}, err
	}

	return idempotentWrite(ctx, s, p, w, func(tx *sql.Tx, now time.Time) (domain.StatusReportCreated, domain.Related, error) {
		var res domain.StatusReportCreated
		it, err := s.ingItem(ctx, tx, p, in.ItemID)
		if err != nil {
			return res, domain.Related{}, err
		}
		c, err := s.ingSingleRecordCandidate(ctx, tx, p, it.SaleID, importKindStatusReport, payload, now)
		if err != nil {
			return res, domain.Related{}, err
		}
		c.Kind = domain.CandidateStatusUpdate
		c.Title = fmt.Sprintf("Reported %s: %s", in.ReportedStatus, in.ItemID)
		c.Notes = in.Notes
		if err := insertCandidate(ctx, tx, c); err != nil {
			return res, domain.Related{}, s.dbErr("status report: candidate", err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO candidate_item_changes (candidate_id, tenant_id, kind, item_id,
			observed_version, observed_status, reported_status, effective_at, report_source) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			c.ID, p.TenantID, domain.CandidateStatusUpdate, it.ID, it.Version, it.Status, in.ReportedStatus, ts(in.EffectiveAt),
			in.Source); err != nil {
			return res, domain.Related{}, s.dbErr("status report: change", err)
		}
		res = domain.StatusReportCreated{CandidateID: c.ID, Kind: c.Kind, ItemID: it.ID, SaleID: it.SaleID,
			ReportedStatus: in.ReportedStatus, ReviewStatus: c.ReviewStatus, ImportRunID: c.ImportRunID,
			SourceRecordID: c.SourceRecordID, ObservedItemStatus: it.Status, ObservedItemVersion: it.Version}
		return res, domain.Related{SourceImportRunIDs: []string{c.ImportRunID}, SourceImportRecordIDs: []string{c.SourceRecordID},
			CandidateIDs: []string{c.ID}, ItemIDs: []string{it.ID}}, nil
	})
}

// ingItem reads an item of the principal's tenant (a RefError otherwise,
// the same for a missing and a foreign item) on a sale the actor may see.
func (s *Store) ingItem(ctx context.Context, tx *sql.Tx, p domain.Principal, itemID string) (domain.ItemRef, error) {
	if err := s.checkRef(ctx, tx, "items", "item_id", itemID, p.TenantID); err != nil {
		return domain.ItemRef{}, err
	}
	items, err := s.ingItemRefs(ctx, tx, p.TenantID, []string{itemID})
	if err != nil {
		return domain.ItemRef{}, err
	}
	it := items[itemID]
	if !p.MaySeeSale(it.SaleID) {
		return it, fmt.Errorf("store: item %s: %w", itemID, domain.ErrSaleAssignment)
	}
	return it, nil
}

// ingSingleRecordCandidate writes the provenance of a one-record MCP chain
// (the client's descriptor, a run of one record, the record) and returns
// the candidate to insert, with its id, provenance and review state set.
func (s *Store) ingSingleRecordCandidate(ctx context.Context, tx *sql.Tx, p domain.Principal, saleID, runKind string, payload []byte, now time.Time) (domain.Candidate, error) {
	descID, err := s.mcpDescriptor(ctx, tx, p, now)
	if err != nil {
		return domain.Candidate{}, err
	}
	runID := s.ids.New(domain.PrefixRun)
	if _, err := tx.ExecContext(ctx, `INSERT INTO import_runs (id, tenant_id, source_descriptor_id, sale_id, kind, status,
		record_count, created_at) VALUES (?, ?, ?, ?, ?, ?, 1, ?)`,
		runID, p.TenantID, descID, saleID, runKind, domain.ImportRunCompleted, ts(now)); err != nil {
		return domain.Candidate{}, s.dbErr("candidate chain: run", err)
	}
	recordID := s.ids.New(domain.PrefixRecord)
	if _, err := tx.ExecContext(ctx, `INSERT INTO source_records (id, tenant_id, import_run_id, ordinal, payload_hash, payload,
		created_at) VALUES (?, ?, ?, 1, ?, ?, ?)`, recordID, p.TenantID, runID, domain.OriginalHash(payload), string(payload), ts(now)); err != nil {
		return domain.Candidate{}, s.dbErr("candidate chain: record", err)
	}
	return domain.Candidate{ID: s.ids.New(domain.PrefixCandidate), TenantID: p.TenantID, SaleID: saleID, Quantity: 1,
		ReviewStatus: domain.ReviewNeedsReview, SourceDescriptorID: descID, ImportRunID: runID, SourceRecordID: recordID,
		CreatedByClientID: p.Client.ID, Version: 1, CreatedAt: now}, nil
}
