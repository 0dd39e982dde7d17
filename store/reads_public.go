package store

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// The public marketplace reads (§11). They take no principal: what a buyer
// sees cannot depend on who asks. They select public columns only (never
// internal pricing, appraisal flags, notes, storage paths or unpublished
// photos), so nothing private is ever in memory to leak. A record that is
// unknown, unpublished, withdrawn or of a private sale is one RefError,
// never marked cross-tenant: public reads have no tenant to cross.

// publicSaleCols are the columns a public sale view is built from. The
// street address is read so the reveal rule can decide, at the time of the
// call, whether it leaves the store.
const publicSaleCols = `s.id, s.tenant_id, s.title, s.status, s.city, s.region, s.street_address, s.address_policy,
	s.address_reveal_at, s.starts_at, s.ends_at`

// publicSale adds the conditions that make sale alias s public.
func (w *where) publicSale() {
	w.add("s.visibility = 'public'")
	w.add("s.status IN "+placeholders(len(domain.PublicSaleStatuses)), anyArgs(domain.PublicSaleStatuses)...)
}

// scanPublicSale applies the reveal rule with the store's clock: the
// address is hidden before the reveal time and shown after it, whatever the
// caller's own clock says.
func (s *Store) scanPublicSale(r interface{ Scan(...any) error }, extra ...any) (domain.PublicSale, string, error) {
	var (
		sl                     domain.PublicSale
		tenant, street, policy string
		reveal                 sql.NullString
		starts, ends           string
		tsc                    timeScanner
	)
	dest := append([]any{&sl.ID, &tenant, &sl.Title, &sl.Status, &sl.City, &sl.Region, &street, &policy, &reveal, &starts, &ends}, extra...)
	if err := r.Scan(dest...); err != nil {
		return sl, "", err
	}
	sl.StartsAt, sl.EndsAt = tsc.at(starts), tsc.at(ends)
	revealAt := tsc.ptr(reveal)
	if tsc.err != nil {
		return sl, "", tsc.err
	}
	if policy == domain.AddressHiddenUntil {
		sl.AddressRevealAt = revealAt
	}
	if domain.AddressRevealed(policy, revealAt, s.clock.Now()) && street != "" {
		sl.StreetAddress = &street
	}
	return sl, tenant, nil
}

// PublicSale reads one public sale.
func (s *Store) PublicSale(ctx context.Context, saleID string) (domain.PublicSale, error) {
	var out domain.PublicSale
	var w where
	w.add("s.id = ?", saleID)
	w.publicSale()
	err := s.withRead(ctx, func(tx *sql.Tx) error {
		sl, tenant, err := s.scanPublicSale(tx.QueryRowContext(ctx, "SELECT "+publicSaleCols+" FROM estate_sales s"+w.sql(), w.args...))
		if errors.Is(err, sql.ErrNoRows) {
			return domain.UnknownRef("sale_id", saleID, false)
		}
		if err != nil {
			return s.dbErr("public sale", err)
		}
		if sl.PublishedItems, err = s.publishedCount(ctx, tx, tenant, sl.ID); err != nil {
			return err
		}
		out = sl
		return nil
	})
	return out, err
}

func (s *Store) publishedCount(ctx context.Context, tx *sql.Tx, tenantID, saleID string) (int, error) {
	var n int
	err := tx.QueryRowContext(ctx, "SELECT count(*) FROM items WHERE tenant_id = ? AND sale_id = ? AND status = ?",
		tenantID, saleID, domain.ItemPublished).Scan(&n)
	if err != nil {
		return 0, s.dbErr("public sale: item count", err)
	}
	return n, nil
}

// PublicItem reads one public item and its sale.
func (s *Store) PublicItem(ctx context.Context, itemID string) (domain.PublicItem, error) {
	return s.publicItemWhere(ctx, "i.id = ?", itemID, "item_id")
}

// ResolvePublicQR reads the public item a tag is bound to. A code nobody
// printed, a printed code bound to nothing (spare or released) and a code on
// a non-public item all fail the same way: the lookup goes through items
// only, so whether a code was ever printed does not change the answer.
func (s *Store) ResolvePublicQR(ctx context.Context, code string) (domain.PublicItem, error) {
	if code == "" {
		return domain.PublicItem{}, domain.UnknownRef("qr_code", code, false)
	}
	// qr_code <> '' lets SQLite use the partial unique index items_qr_code.
	return s.publicItemWhere(ctx, "i.qr_code = ? AND i.qr_code <> ''", code, "qr_code")
}

func (s *Store) publicItemWhere(ctx context.Context, cond, value, field string) (domain.PublicItem, error) {
	var out domain.PublicItem
	var w where
	w.add(cond, value)
	w.add("i.status IN "+placeholders(len(domain.PublicItemStatuses())), anyArgs(domain.PublicItemStatuses())...)
	w.publicSale()
	err := s.withRead(ctx, func(tx *sql.Tx) error {
		var (
			it     domain.PublicItem
			status string
			price  sql.NullInt64
		)
		sl, tenant, err := s.scanPublicSale(tx.QueryRowContext(ctx, "SELECT "+publicSaleCols+`,
			i.id, i.title, i.description, i.category, i.status, i.price_cents
			FROM items i JOIN estate_sales s ON s.tenant_id = i.tenant_id AND s.id = i.sale_id`+w.sql(), w.args...),
			&it.ID, &it.Title, &it.Description, &it.Category, &status, &price)
		if errors.Is(err, sql.ErrNoRows) {
			return domain.UnknownRef(field, value, false)
		}
		if err != nil {
			return s.dbErr("public item", err)
		}
		it.Status, _ = domain.PublicItemStatus(status)
		it.SaleID, it.PriceCents = sl.ID, intPtr(price)
		if sl.PublishedItems, err = s.publishedCount(ctx, tx, tenant, sl.ID); err != nil {
			return err
		}
		it.Sale = sl
		photos, err := s.publicPhotos(ctx, tx, tenant, []string{it.ID}, false)
		if err != nil {
			return err
		}
		it.Photos = photos[it.ID]
		if it.Photos == nil {
			it.Photos = []domain.PublicPhoto{}
		}
		out = it
		return nil
	})
	return out, err
}

// publicPhotos reads the published photos of items of one tenant, in
// position order; with leadOnly, only the first of each.
func (s *Store) publicPhotos(ctx context.Context, tx *sql.Tx, tenantID string, itemIDs []string, leadOnly bool) (map[string][]domain.PublicPhoto, error) {
	out := map[string][]domain.PublicPhoto{}
	if len(itemIDs) == 0 {
		return out, nil
	}
	args := append([]any{tenantID}, anyArgs(itemIDs)...)
	rows, err := tx.QueryContext(ctx, `SELECT item_id, id, width, height, position FROM item_photos
		WHERE tenant_id = ? AND item_id IN `+placeholders(len(itemIDs))+` AND published = 1 ORDER BY item_id, position, id`, args...)
	if err != nil {
		return nil, s.dbErr("public photos", err)
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		var (
			item string
			ph   domain.PublicPhoto
		)
		if err := rows.Scan(&item, &ph.ID, &ph.Width, &ph.Height, &ph.Position); err != nil {
			return nil, s.dbErr("public photos", err)
		}
		if leadOnly && len(out[item]) > 0 {
			continue
		}
		out[item] = append(out[item], ph)
	}
	if err := rows.Err(); err != nil {
		return nil, s.dbErr("public photos", err)
	}
	return out, nil
}

// matchExpr builds the FTS5 query: every word of the text anywhere, and the
// category path's words at the start of the category column (an index
// prefilter; the exact dotted-prefix rule is applied to the row as well).
func matchExpr(terms []string, category string) string {
	var parts []string
	for _, t := range terms {
		parts = append(parts, `"`+t+`"`)
	}
	if category != "" {
		words := strings.FieldsFunc(category, func(r rune) bool { return r == '.' || r == '_' })
		parts = append(parts, `category : ^ "`+strings.Join(words, " ")+`"`)
	}
	return strings.Join(parts, " AND ")
}

// SearchMarketplace searches public sales and the items for sale in them.
// Hits are in index order (search_keys.seq: sales and items in the order
// they were first recorded) and pages are keyset ranges of it, so a page
// costs the same at any depth. A text or category query walks the FTS5
// index; a query with neither walks search_keys.
func (s *Store) SearchMarketplace(ctx context.Context, q domain.MarketplaceQuery) (domain.Page[domain.MarketplaceHit], error) {
	var page domain.Page[domain.MarketplaceHit]
	limit, err := domain.PageLimit(q.Limit)
	if err != nil {
		return page, err
	}
	limit = min(limit, domain.MaxSearchPageSize)
	// Each word becomes one quoted FTS5 string (matchExpr), so no query
	// text is ever read as FTS syntax (column filters, NEAR, prefixes).
	terms, err := domain.CheckMarketplaceQuery(q)
	if err != nil {
		return page, err
	}
	var after int64
	if q.After != nil {
		if after, err = intKey(q.After); err != nil {
			return page, err
		}
	}

	var w where
	from := ` FROM search_keys k`
	key := "k.seq"
	if len(terms) > 0 || q.Category != "" {
		from = ` FROM search_fts f JOIN search_keys k ON k.seq = f.rowid`
		key = "f.rowid"
		w.add("search_fts MATCH ?", matchExpr(terms, q.Category))
	}
	from += ` LEFT JOIN items i ON k.kind = 'item' AND i.id = k.ref_id
		JOIN estate_sales s ON s.id = (CASE WHEN k.kind = 'sale' THEN k.ref_id ELSE i.sale_id END)`
	w.add(key+" > ?", after)
	w.publicSale()
	// Search finds what is for sale: items still available. Held and sold
	// items stay readable by id and by their tag.
	w.add("(k.kind = 'sale' OR (i.status = ? AND i.tenant_id = s.tenant_id))", domain.ItemPublished)
	if q.Category != "" {
		w.add("k.kind = 'item'")
		w.categoryPrefix("i.category", q.Category)
	}
	if q.City != "" {
		w.add("s.city = ? COLLATE NOCASE", q.City)
	}
	if q.Region != "" {
		w.add("s.region = ? COLLATE NOCASE", q.Region)
	}
	if q.From != nil {
		w.add("s.ends_at >= ?", ts(*q.From))
	}
	if q.To != nil {
		w.add("s.starts_at < ?", ts(*q.To))
	}
	type hitRow struct {
		hit    domain.MarketplaceHit
		seq    int64
		tenant string
	}
	var hits []hitRow
	err = s.withRead(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT `+key+`, k.kind, k.ref_id, s.id, s.tenant_id, s.title, s.city, s.region, s.starts_at,
			s.ends_at, ifnull(i.title, ''), i.price_cents`+from+w.sql()+` ORDER BY `+key+` LIMIT ?`, append(w.args, limit+1)...)
		if err != nil {
			return s.dbErr("search marketplace", err)
		}
		for rows.Next() {
			var (
				h              hitRow
				ref, itemTitle string
				starts, ends   string
				price          sql.NullInt64
				tsc            timeScanner
			)
			if err := rows.Scan(&h.seq, &h.hit.Kind, &ref, &h.hit.SaleID, &h.tenant, &h.hit.SaleTitle, &h.hit.City, &h.hit.Region,
				&starts, &ends, &itemTitle, &price); err != nil {
				_ = rows.Close()
				return s.dbErr("search marketplace: scan", err)
			}
			h.hit.StartsAt, h.hit.EndsAt = tsc.at(starts), tsc.at(ends)
			if tsc.err != nil {
				_ = rows.Close()
				return s.dbErr("search marketplace: scan", tsc.err)
			}
			h.hit.Title = h.hit.SaleTitle
			if h.hit.Kind == domain.HitItem {
				h.hit.ItemID, h.hit.Title, h.hit.PriceCents = ref, itemTitle, intPtr(price)
			}
			hits = append(hits, h)
		}
		if err := rows.Err(); err != nil {
			_ = rows.Close()
			return s.dbErr("search marketplace", err)
		}
		_ = rows.Close()
		if len(hits) > limit {
			hits = hits[:limit]
			last := hits[limit-1]
			ref := last.hit.ItemID
			if ref == "" {
				ref = last.hit.SaleID
			}
			page.NextCursor = s.cursors.Encode(domain.CursorMarketplace, domain.PublicTenant,
				domain.Keyset{Key: strconv.FormatInt(last.seq, 10), ID: ref})
		}
		// Lead photos, one query per tenant on the page (photos are
		// indexed by tenant first).
		byTenant := map[string][]string{}
		var tenants []string
		for _, h := range hits {
			if h.hit.Kind != domain.HitItem {
				continue
			}
			if _, ok := byTenant[h.tenant]; !ok {
				tenants = append(tenants, h.tenant)
			}
			byTenant[h.tenant] = append(byTenant[h.tenant], h.hit.ItemID)
		}
		for _, t := range tenants {
			photos, err := s.publicPhotos(ctx, tx, t, byTenant[t], true)
			if err != nil {
				return err
			}
			for i := range hits {
				if ph := photos[hits[i].hit.ItemID]; hits[i].hit.Kind == domain.HitItem && len(ph) > 0 {
					p := ph[0]
					hits[i].hit.Photo = &p
				}
			}
		}
		return nil
	})
	if err != nil {
		return domain.Page[domain.MarketplaceHit]{}, err
	}
	page.Rows = make([]domain.MarketplaceHit, len(hits))
	for i, h := range hits {
		page.Rows[i] = h.hit
	}
	return page, nil
}
