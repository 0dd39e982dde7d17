package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// Cursor kinds: a cursor is bound to its list (and tenant) by
// the store's CursorCodec, so one list's cursor is rejected by another.
const (
	CursorSales      = "sales"
	CursorItems      = "items"
	CursorCandidates = "candidates"
)

// Orderings (keyset pagination, never OFFSET): sales by (starts_at, id) — a
// seller reads sales in calendar order; items and candidates by
// (created_at, id) — new rows sort last, so a walk that is under way still
// reaches rows added meanwhile and never repeats one. The id breaks ties, so
// the order is total and deterministic.

// where accumulates a conjunction of SQL conditions and their arguments.
// Every condition is a constant string; values are always bound.
type where struct {
	conds []string
	args  []any
}

func (w *where) add(cond string, args ...any) {
	w.conds = append(w.conds, cond)
	w.args = append(w.args, args...)
}

func (w *where) sql() string { return " WHERE " + strings.Join(w.conds, " AND ") }

// categoryPrefix matches a dotted category path and everything below it:
// "electronics.audio" matches itself and "electronics.audio.receiver", not
// "electronics.audiophile". The range ['p.', 'p/') holds exactly the strings
// that start with "p." ('/' follows '.' in every collation of bytes), so it
// is exact, case-sensitive and served by an index on (tenant_id, category).
func (w *where) categoryPrefix(col, prefix string) {
	w.add("("+col+" = ? OR ("+col+" >= ? AND "+col+" < ?))", prefix, prefix+".", prefix+"/")
}

// keysetAfter adds "(orderCol, id) > (key, id)" for a cursor position whose
// key must be one of our timestamps.
func (w *where) keysetAfter(orderCol string, k *domain.Keyset) error {
	if k == nil {
		return nil
	}
	if _, err := parseTS(k.Key); err != nil || k.ID == "" {
		return domain.Invalid("cursor", "not a cursor of this list: start again without a cursor")
	}
	w.add("("+orderCol+", id) > (?, ?)", k.Key, k.ID)
	return nil
}

func oneOf(field, v string, allowed []string) error {
	if v == "" || slices.Contains(allowed, v) {
		return nil
	}
	return domain.Invalid(field, "must be one of "+strings.Join(allowed, ", "))
}

// requireTenant refuses a principal without a tenant (anonymous): every list
// here is tenant data.
// listPrelude is what every tenant list checks first: a tenant principal,
// a page size in range, and a filter value the list knows.
func listPrelude(p domain.Principal, limit int, field, value string, allowed []string) (int, error) {
	if err := requireTenant(p); err != nil {
		return 0, err
	}
	n, err := domain.PageLimit(limit)
	if err != nil {
		return 0, err
	}
	return n, oneOf(field, value, allowed)
}

func requireTenant(p domain.Principal) error {
	if p.TenantID == "" {
		return fmt.Errorf("store: tenant data needs a tenant principal: %w", domain.ErrAuthRequired)
	}
	return nil
}

// checkRef verifies that id names a row of table in the principal's tenant.
// Missing and foreign rows give the same RefError; CrossTenant tells the
// audit which one it was.
func (s *Store) checkRef(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, tableName, field, id, tenantID string) error {
	var owner string
	err := q.QueryRowContext(ctx, "SELECT tenant_id FROM "+tableName+" WHERE id = ?", id).Scan(&owner)
	if errors.Is(err, sql.ErrNoRows) {
		return domain.UnknownRef(field, id, false)
	}
	if err != nil {
		return s.dbErr("check "+field, err)
	}
	if owner != tenantID {
		return domain.UnknownRef(field, id, true)
	}
	return nil
}

const saleCols = `id, tenant_id, title, status, visibility, city, region, postal_code, street_address, address_policy,
	address_reveal_at, starts_at, ends_at, version, created_at, updated_at`

// ListSales lists the sales of the principal's tenant in (starts_at, id) order.
func (s *Store) ListSales(ctx context.Context, p domain.Principal, q domain.SaleQuery) (domain.Page[domain.Sale], error) {
	var page domain.Page[domain.Sale]
	limit, err := listPrelude(p, q.Limit, "status", q.Status, domain.SaleStatuses())
	if err != nil {
		return page, err
	}
	var w where
	w.add("tenant_id = ?", p.TenantID)
	w.assignedSales("id", p)
	if q.Status != "" {
		w.add("status = ?", q.Status)
	}
	if err := w.keysetAfter("starts_at", q.After); err != nil {
		return page, err
	}
	err = s.withRead(ctx, func(tx *sql.Tx) error {
		var err error
		page.Rows, err = collect(s, "list sales", scanSale)(tx.QueryContext(ctx, "SELECT "+saleCols+" FROM estate_sales"+w.sql()+
			" ORDER BY starts_at, id LIMIT ?", append(w.args, limit+1)...))
		return err
	})
	if err != nil {
		return domain.Page[domain.Sale]{}, err
	}
	return finishPage(s.cursors, page.Rows, limit, CursorSales, p.TenantID, func(sl domain.Sale) domain.Keyset {
		return domain.Keyset{Key: ts(sl.StartsAt), ID: sl.ID}
	}), nil
}

// collect scans every row of a list query (closing it), wrapping driver
// errors as op.
func collect[T any](s *Store, op string, scan func(interface{ Scan(...any) error }) (T, error)) func(*sql.Rows, error) ([]T, error) {
	return func(rows *sql.Rows, err error) ([]T, error) {
		if err != nil {
			return nil, s.dbErr(op, err)
		}
		defer func() { _ = rows.Close() }()
		var out []T
		for rows.Next() {
			v, err := scan(rows)
			if err != nil {
				return nil, s.dbErr(op+": scan", err)
			}
			out = append(out, v)
		}
		if err := rows.Err(); err != nil {
			return nil, s.dbErr(op, err)
		}
		return out, nil
	}
}

// finishPage trims a keyset page fetched with limit+1 rows and sets the
// cursor of the next page from the last row kept.
func finishPage[T any](cur *domain.CursorCodec, rows []T, limit int, kind, tenantID string, keyOf func(T) domain.Keyset) domain.Page[T] {
	page := domain.Page[T]{Rows: rows}
	if len(page.Rows) > limit {
		page.Rows = page.Rows[:limit]
		page.NextCursor = cur.Encode(kind, tenantID, keyOf(page.Rows[limit-1]))
	}
	if page.Rows == nil {
		page.Rows = []T{}
	}
	return page
}

func scanSale(r interface{ Scan(...any) error }) (domain.Sale, error) {
	var (
		sl                                     domain.Sale
		reveal                                 sql.NullString
		startsAt, endsAt, createdAt, updatedAt string
		tsc                                    timeScanner
	)
	if err := r.Scan(&sl.ID, &sl.TenantID, &sl.Title, &sl.Status, &sl.Visibility, &sl.City, &sl.Region, &sl.PostalCode,
		&sl.StreetAddress, &sl.AddressPolicy, &reveal, &startsAt, &endsAt, &sl.Version, &createdAt, &updatedAt); err != nil {
		return sl, err
	}
	sl.AddressRevealAt = tsc.ptr(reveal)
	sl.StartsAt, sl.EndsAt = tsc.at(startsAt), tsc.at(endsAt)
	sl.CreatedAt, sl.UpdatedAt = tsc.at(createdAt), tsc.at(updatedAt)
	return sl, tsc.err
}

const itemCols = `id, tenant_id, sale_id, title, description, category, room, status, price_cents,
	internal_price_guidance_cents, cost_basis_cents, appraisal_flag, staff_notes, qr_code, version, created_at, updated_at`

// ListItems lists the items of the principal's tenant in (created_at, id)
// order, each with its photos (published or not: projection is the gate's
// job). It is ListItemDetails with photos and nothing else.
func (s *Store) ListItems(ctx context.Context, p domain.Principal, q domain.ItemQuery) (domain.Page[domain.Item], error) {
	page, err := s.ListItemDetails(ctx, p, q, domain.ItemIncludes{Photos: true})
	if err != nil {
		return domain.Page[domain.Item]{}, err
	}
	out := domain.Page[domain.Item]{Rows: make([]domain.Item, len(page.Rows)), NextCursor: page.NextCursor}
	for i, d := range page.Rows {
		out.Rows[i] = d.Item
	}
	return out, nil
}

// ListItemDetails lists the items of the principal's tenant (its assigned
// sales only, for a sale-scoped principal) in (created_at, id) order, with
// the extras inc asks for, read in the same snapshot as the page.
func (s *Store) ListItemDetails(ctx context.Context, p domain.Principal, q domain.ItemQuery, inc domain.ItemIncludes) (domain.Page[domain.ItemDetail], error) {
	var page domain.Page[domain.ItemDetail]
	limit, err := listPrelude(p, q.Limit, "status", q.Status, domain.ItemStatuses())
	if err != nil {
		return page, err
	}
	var w where
	w.add("tenant_id = ?", p.TenantID)
	w.assignedSales("sale_id", p)
	if q.SaleID != "" {
		w.add("sale_id = ?", q.SaleID)
	}
	if q.Status != "" {
		w.add("status = ?", q.Status)
	}
	if q.Room != "" {
		w.add("room = ?", q.Room)
	}
	if q.Category != "" {
		w.categoryPrefix("category", q.Category)
	}
	if err := w.keysetAfter("created_at", q.After); err != nil {
		return page, err
	}
	err = s.withRead(ctx, func(tx *sql.Tx) error {
		if q.SaleID != "" {
			if err := s.checkSale(ctx, tx, p, q.SaleID); err != nil {
				return err
			}
		}
		rows, err := tx.QueryContext(ctx, "SELECT "+itemCols+" FROM items"+w.sql()+" ORDER BY created_at, id LIMIT ?",
			append(w.args, limit+1)...)
		if err != nil {
			return s.dbErr("list items", err)
		}
		for rows.Next() {
			it, err := scanItem(rows)
			if err != nil {
				_ = rows.Close()
				return s.dbErr("list items: scan", err)
			}
			page.Rows = append(page.Rows, domain.ItemDetail{Item: it})
		}
		if err := rows.Err(); err != nil {
			_ = rows.Close()
			return s.dbErr("list items", err)
		}
		_ = rows.Close()
		if len(page.Rows) > limit {
			page.Rows = page.Rows[:limit]
			last := page.Rows[limit-1]
			page.NextCursor = s.cursors.Encode(CursorItems, p.TenantID, domain.Keyset{Key: ts(last.CreatedAt), ID: last.ID})
		}
		return s.attachDetails(ctx, tx, p.TenantID, page.Rows, inc)
	})
	if err != nil {
		return domain.Page[domain.ItemDetail]{}, err
	}
	if page.Rows == nil {
		page.Rows = []domain.ItemDetail{}
	}
	return page, nil
}

// attachPhotos sets the photos (published or not) of each item, in
// position order, with one query for the whole slice.
func (s *Store) attachPhotos(ctx context.Context, tx *sql.Tx, tenantID string, items []domain.Item) error {
	ptrs := make([]*domain.Item, len(items))
	for i := range items {
		ptrs[i] = &items[i]
	}
	return s.attachPhotosTo(ctx, tx, tenantID, ptrs)
}

func (s *Store) attachPhotosTo(ctx context.Context, tx *sql.Tx, tenantID string, items []*domain.Item) error {
	if len(items) == 0 {
		return nil
	}
	idx := make(map[string]int, len(items))
	args := make([]any, 0, len(items)+1)
	args = append(args, tenantID)
	for i, it := range items {
		it.Photos = []domain.Photo{}
		idx[it.ID] = i
		args = append(args, it.ID)
	}
	rows, err := tx.QueryContext(ctx, `SELECT id, item_id, storage_key, width, height, position, published FROM item_photos
		WHERE tenant_id = ? AND item_id IN (?`+strings.Repeat(", ?", len(items)-1)+`) ORDER BY item_id, position, id`, args...)
	if err != nil {
		return s.dbErr("list items: photos", err)
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		var ph domain.Photo
		if err := rows.Scan(&ph.ID, &ph.ItemID, &ph.StorageKey, &ph.Width, &ph.Height, &ph.Position, &ph.Published); err != nil {
			return s.dbErr("list items: photos", err)
		}
		it := items[idx[ph.ItemID]]
		it.Photos = append(it.Photos, ph)
	}
	if err := rows.Err(); err != nil {
		return s.dbErr("list items: photos", err)
	}
	return nil
}

func scanItem(r interface{ Scan(...any) error }) (domain.Item, error) {
	var (
		it                    domain.Item
		price, guidance, cost sql.NullInt64
		createdAt, updatedAt  string
		tsc                   timeScanner
	)
	if err := r.Scan(&it.ID, &it.TenantID, &it.SaleID, &it.Title, &it.Description, &it.Category, &it.Room, &it.Status,
		&price, &guidance, &cost, &it.AppraisalFlag, &it.StaffNotes, &it.QRCode, &it.Version, &createdAt, &updatedAt); err != nil {
		return it, err
	}
	it.PriceCents, it.InternalPriceGuidanceCents, it.CostBasisCents = intPtr(price), intPtr(guidance), intPtr(cost)
	it.CreatedAt, it.UpdatedAt = tsc.at(createdAt), tsc.at(updatedAt)
	return it, tsc.err
}

const candidateCols = `id, tenant_id, sale_id, kind, title, description, category, room, condition, quantity,
	supplied_price_cents, notes, review_status, ifnull(source_descriptor_id, ''), ifnull(import_run_id, ''),
	ifnull(source_record_id, ''), ifnull(created_by_client_id, ''), version, created_at,
	ifnull(duplicate_of_candidate_id, ''), ifnull(duplicate_of_item_id, ''), review_reason`

// ListCandidates lists the candidates of the principal's tenant in
// (created_at, id) order.
func (s *Store) ListCandidates(ctx context.Context, p domain.Principal, q domain.CandidateQuery) (domain.Page[domain.Candidate], error) {
	var page domain.Page[domain.Candidate]
	limit, err := listPrelude(p, q.Limit, "review_status", q.ReviewStatus, domain.ReviewStatuses())
	if err != nil {
		return page, err
	}
	var w where
	w.add("tenant_id = ?", p.TenantID)
	w.assignedSales("sale_id", p)
	if q.SaleID != "" {
		w.add("sale_id = ?", q.SaleID)
	}
	if q.ReviewStatus != "" {
		w.add("review_status = ?", q.ReviewStatus)
	}
	if err := w.keysetAfter("created_at", q.After); err != nil {
		return page, err
	}
	err = s.withRead(ctx, func(tx *sql.Tx) error {
		if q.SaleID != "" {
			if err := s.checkSale(ctx, tx, p, q.SaleID); err != nil {
				return err
			}
		}
		var err error
		page.Rows, err = collect(s, "list candidates", scanCandidate)(tx.QueryContext(ctx, "SELECT "+candidateCols+
			" FROM inventory_candidates"+w.sql()+" ORDER BY created_at, id LIMIT ?", append(w.args, limit+1)...))
		return err
	})
	if err != nil {
		return domain.Page[domain.Candidate]{}, err
	}
	return finishPage(s.cursors, page.Rows, limit, CursorCandidates, p.TenantID, func(c domain.Candidate) domain.Keyset {
		return domain.Keyset{Key: ts(c.CreatedAt), ID: c.ID}
	}), nil
}

func scanCandidate(r interface{ Scan(...any) error }) (domain.Candidate, error) {
	var (
		c         domain.Candidate
		price     sql.NullInt64
		createdAt string
		tsc       timeScanner
	)
	if err := r.Scan(&c.ID, &c.TenantID, &c.SaleID, &c.Kind, &c.Title, &c.Description, &c.Category, &c.Room, &c.Condition,
		&c.Quantity, &price, &c.Notes, &c.ReviewStatus, &c.SourceDescriptorID, &c.ImportRunID, &c.SourceRecordID,
		&c.CreatedByClientID, &c.Version, &createdAt, &c.DuplicateOfCandidateID, &c.DuplicateOfItemID, &c.ReviewReason); err != nil {
		return c, err
	}
	c.SuppliedPriceCents = intPtr(price)
	c.CreatedAt = tsc.at(createdAt)
	return c, tsc.err
}

// DemandSignals lists the demand signals of the principal's tenant,
// optionally for one sale and a category prefix, ordered by sale (tenant-wide
// rows first), category and window.
func (s *Store) DemandSignals(ctx context.Context, p domain.Principal, q domain.DemandQuery) ([]domain.DemandSignal, error) {
	if err := requireTenant(p); err != nil {
		return nil, err
	}
	var w where
	w.add("tenant_id = ?", p.TenantID)
	// Tenant-wide rows (no sale) aggregate sales a scoped principal may not
	// see: the IN list leaves them out.
	w.assignedSales("sale_id", p)
	if q.SaleID != "" {
		w.add("sale_id = ?", q.SaleID)
	}
	if q.Category != "" {
		w.categoryPrefix("category", q.Category)
	}
	out := []domain.DemandSignal{}
	err := s.withRead(ctx, func(tx *sql.Tx) error {
		if q.SaleID != "" {
			if err := s.checkSale(ctx, tx, p, q.SaleID); err != nil {
				return err
			}
		}
		rows, err := tx.QueryContext(ctx, `SELECT tenant_id, ifnull(sale_id, ''), category, saves, searches, follows,
			window_start, window_end FROM demand_signals`+w.sql()+
			` ORDER BY ifnull(sale_id, ''), category, window_start, window_end, id`, w.args...)
		if err != nil {
			return s.dbErr("demand signals", err)
		}
		defer func() { _ = rows.Close() }()
		for rows.Next() {
			var (
				d          domain.DemandSignal
				start, end string
				tsc        timeScanner
			)
			if err := rows.Scan(&d.TenantID, &d.SaleID, &d.Category, &d.Saves, &d.Searches, &d.Follows, &start, &end); err != nil {
				return s.dbErr("demand signals: scan", err)
			}
			d.WindowStart, d.WindowEnd = tsc.at(start), tsc.at(end)
			if tsc.err != nil {
				return s.dbErr("demand signals: scan", tsc.err)
			}
			out = append(out, d)
		}
		if err := rows.Err(); err != nil {
			return s.dbErr("demand signals", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
