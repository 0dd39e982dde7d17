package live

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// Cursor kinds, as the embedded store names them: a cursor is bound to its
// list and tenant by the database's MAC (cursors.go).
const (
	cursorSales      = "sales"
	cursorItems      = "items"
	cursorCandidates = "candidates"
)

// keyLayout is the keyset key format of both backends: UTC, nine
// fractional digits.
const keyLayout = "2006-01-02T15:04:05.000000000Z"

func oneOf(field, v string, allowed []string) error {
	if v == "" || slices.Contains(allowed, v) {
		return nil
	}
	return domain.Invalid(field, "must be one of "+strings.Join(allowed, ", "))
}

// keysetArgs adds the position of a cursor; its key must be one of our
// timestamps.
func keysetArgs(args map[string]any, k *domain.Keyset) error {
	if k == nil {
		return nil
	}
	if _, err := time.Parse(keyLayout, k.Key); err != nil || k.ID == "" {
		return domain.Invalid("cursor", "not a cursor of this list: start again without a cursor")
	}
	args["p_after_key"], args["p_after_id"] = k.Key, k.ID
	return nil
}

// pageAnswer is what a list RPC returns: up to limit rows and the keyset of
// the last one when there are more.
type pageAnswer[T any] struct {
	Rows []T `json:"rows"`
	Next *struct {
		K string `json:"k"`
		I string `json:"i"`
	} `json:"next"`
}

// sealPage turns an answer into a page, the database sealing the cursor of
// the next one (cursors.go).
func sealPage[T any](ctx context.Context, b *Backend, p domain.Principal, kind string, a pageAnswer[T]) (domain.Page[T], error) {
	out := domain.Page[T]{Rows: a.Rows}
	if out.Rows == nil {
		out.Rows = []T{}
	}
	if a.Next != nil && a.Next.I != "" {
		c, err := b.sealCursor(ctx, p, kind, domain.Keyset{Key: a.Next.K, ID: a.Next.I})
		if err != nil {
			return domain.Page[T]{}, err
		}
		out.NextCursor = c
	}
	return out, nil
}

// ListSales lists the sales of the principal's tenant in (starts_at, id) order.
func (b *Backend) ListSales(ctx context.Context, p domain.Principal, q domain.SaleQuery) (domain.Page[domain.Sale], error) {
	tok, err := b.tokenOf(p)
	if err != nil {
		return domain.Page[domain.Sale]{}, err
	}
	limit, err := domain.PageLimit(q.Limit)
	if err != nil {
		return domain.Page[domain.Sale]{}, err
	}
	if err := oneOf("status", q.Status, domain.SaleStatuses()); err != nil {
		return domain.Page[domain.Sale]{}, err
	}
	args := map[string]any{"p_limit": limit}
	if q.Status != "" {
		args["p_status"] = q.Status
	}
	if err := keysetArgs(args, q.After); err != nil {
		return domain.Page[domain.Sale]{}, err
	}
	var a pageAnswer[domain.Sale]
	if err := b.callClient(ctx, tok, "mcp_list_sales", args, &a); err != nil {
		return domain.Page[domain.Sale]{}, err
	}
	return sealPage(ctx, b, p, cursorSales, a)
}

// ListItems lists the items of the principal's tenant in (created_at, id)
// order, each with its photos (published or not: projection is the gate's).
func (b *Backend) ListItems(ctx context.Context, p domain.Principal, q domain.ItemQuery) (domain.Page[domain.Item], error) {
	page, err := b.ListItemDetails(ctx, p, q, domain.ItemIncludes{Photos: true})
	if err != nil {
		return domain.Page[domain.Item]{}, err
	}
	out := domain.Page[domain.Item]{Rows: make([]domain.Item, len(page.Rows)), NextCursor: page.NextCursor}
	for i, d := range page.Rows {
		out.Rows[i] = d.Item
	}
	return out, nil
}

// itemRow is an item as mcp_list_items returns it: the item's fields, and
// price_history when asked.
type itemRow struct {
	domain.Item
	PriceHistory []domain.PriceChange   `json:"price_history"`
	Provenance   *domain.ItemProvenance `json:"provenance"` // mcp_get_item, for item.read
}

// ListItemDetails is ListItems with the extras inc asks for, read by the
// RPC in the same snapshot as the page. Price history needs a pricing role:
// the database refuses it to others.
func (b *Backend) ListItemDetails(ctx context.Context, p domain.Principal, q domain.ItemQuery, inc domain.ItemIncludes) (domain.Page[domain.ItemDetail], error) {
	tok, err := b.tokenOf(p)
	if err != nil {
		return domain.Page[domain.ItemDetail]{}, err
	}
	limit, err := domain.PageLimit(q.Limit)
	if err != nil {
		return domain.Page[domain.ItemDetail]{}, err
	}
	if err := oneOf("status", q.Status, domain.ItemStatuses()); err != nil {
		return domain.Page[domain.ItemDetail]{}, err
	}
	args := map[string]any{"p_limit": limit,
		"p_include_photos": readsPhotos(inc), "p_include_price_history": inc.PriceHistory}
	for k, v := range map[string]string{"p_sale_id": q.SaleID, "p_status": q.Status, "p_room": q.Room, "p_category": q.Category} {
		if v != "" {
			args[k] = v
		}
	}
	if err := keysetArgs(args, q.After); err != nil {
		return domain.Page[domain.ItemDetail]{}, err
	}
	var a pageAnswer[itemRow]
	if err := b.callClient(ctx, tok, "mcp_list_items", args, &a); err != nil {
		return domain.Page[domain.ItemDetail]{}, err
	}
	rows, err := sealPage(ctx, b, p, cursorItems, a)
	if err != nil {
		return domain.Page[domain.ItemDetail]{}, err
	}
	out := domain.Page[domain.ItemDetail]{Rows: make([]domain.ItemDetail, len(rows.Rows)), NextCursor: rows.NextCursor}
	for i, r := range rows.Rows {
		r.Provenance = nil // a list reads no provenance
		out.Rows[i] = r.detail(inc)
	}
	return out, nil
}

// ListCandidates lists the candidates of the principal's tenant in
// (created_at, id) order.
func (b *Backend) ListCandidates(ctx context.Context, p domain.Principal, q domain.CandidateQuery) (domain.Page[domain.Candidate], error) {
	tok, err := b.tokenOf(p)
	if err != nil {
		return domain.Page[domain.Candidate]{}, err
	}
	limit, err := domain.PageLimit(q.Limit)
	if err != nil {
		return domain.Page[domain.Candidate]{}, err
	}
	if err := oneOf("review_status", q.ReviewStatus, domain.ReviewStatuses()); err != nil {
		return domain.Page[domain.Candidate]{}, err
	}
	args := map[string]any{"p_limit": limit}
	if q.SaleID != "" {
		args["p_sale_id"] = q.SaleID
	}
	if q.ReviewStatus != "" {
		args["p_review_status"] = q.ReviewStatus
	}
	if err := keysetArgs(args, q.After); err != nil {
		return domain.Page[domain.Candidate]{}, err
	}
	var a pageAnswer[domain.Candidate]
	if err := b.callClient(ctx, tok, "mcp_list_candidates", args, &a); err != nil {
		return domain.Page[domain.Candidate]{}, err
	}
	return sealPage(ctx, b, p, cursorCandidates, a)
}

// DemandSignals lists the demand signals of the principal's tenant,
// optionally for one sale and a category prefix.
func (b *Backend) DemandSignals(ctx context.Context, p domain.Principal, q domain.DemandQuery) ([]domain.DemandSignal, error) {
	tok, err := b.tokenOf(p)
	if err != nil {
		return nil, err
	}
	args := map[string]any{}
	if q.SaleID != "" {
		args["p_sale_id"] = q.SaleID
	}
	if q.Category != "" {
		args["p_category"] = q.Category
	}
	out := []domain.DemandSignal{}
	if err := b.callClient(ctx, tok, "mcp_demand_signals", args, &out); err != nil {
		return nil, err
	}
	if out == nil {
		out = []domain.DemandSignal{}
	}
	return out, nil
}
