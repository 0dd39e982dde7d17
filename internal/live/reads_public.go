package live

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// The public marketplace reads (§11). They take no principal and send no
// credential: the RPCs run in the database's public context, whose row
// level security admits published rows only, and answer public projections
// computed there (the street address per the sale's reveal policy at the
// time of the call, on the database's clock). Unknown, unpublished,
// withdrawn and private records are the same RefError, never cross-tenant.

// publicSaleRow is a sale as mcp_public_* answer it.
type publicSaleRow struct {
	ID              string     `json:"id"`
	Title           string     `json:"title"`
	Status          string     `json:"status"`
	City            string     `json:"city"`
	Region          string     `json:"region"`
	StreetAddress   *string    `json:"street_address"`
	AddressRevealAt *time.Time `json:"address_reveal_at"`
	StartsAt        time.Time  `json:"starts_at"`
	EndsAt          time.Time  `json:"ends_at"`
	PublishedItems  int        `json:"published_items"`
}

func (r publicSaleRow) sale() domain.PublicSale {
	return domain.PublicSale{ID: r.ID, Title: r.Title, Status: r.Status, City: r.City, Region: r.Region,
		StreetAddress: r.StreetAddress, AddressRevealAt: r.AddressRevealAt, StartsAt: r.StartsAt, EndsAt: r.EndsAt,
		PublishedItems: r.PublishedItems}
}

// publicPhotoRow is a published photo (no storage path).
type publicPhotoRow struct {
	ID       string `json:"id"`
	Width    int    `json:"width"`
	Height   int    `json:"height"`
	Position int    `json:"position"`
}

func (r publicPhotoRow) photo() domain.PublicPhoto {
	return domain.PublicPhoto{ID: r.ID, Width: r.Width, Height: r.Height, Position: r.Position}
}

// publicItemRow is an item as mcp_public_item and mcp_resolve_public_qr
// answer it.
type publicItemRow struct {
	ID          string           `json:"id"`
	SaleID      string           `json:"sale_id"`
	Title       string           `json:"title"`
	Description string           `json:"description"`
	Category    string           `json:"category"`
	Status      string           `json:"status"`
	PriceCents  *int64           `json:"price_cents"`
	Photos      []publicPhotoRow `json:"photos"`
	Sale        publicSaleRow    `json:"sale"`
}

func (r publicItemRow) item() domain.PublicItem {
	out := domain.PublicItem{ID: r.ID, SaleID: r.SaleID, Title: r.Title, Description: r.Description, Category: r.Category,
		Status: r.Status, PriceCents: r.PriceCents, Photos: make([]domain.PublicPhoto, len(r.Photos)), Sale: r.Sale.sale()}
	for i, ph := range r.Photos {
		out.Photos[i] = ph.photo()
	}
	return out
}

// PublicSale reads one public sale.
func (b *Backend) PublicSale(ctx context.Context, saleID string) (domain.PublicSale, error) {
	const fn = "mcp_public_sale"
	var r publicSaleRow
	if err := b.call(ctx, fn, map[string]any{"p_sale_id": saleID}, &r); err != nil {
		return domain.PublicSale{}, err
	}
	if r.ID == "" {
		return domain.PublicSale{}, b.unavailable(fn, errors.New("answer without a sale"))
	}
	return r.sale(), nil
}

// PublicItem reads one public item and its sale.
func (b *Backend) PublicItem(ctx context.Context, itemID string) (domain.PublicItem, error) {
	return b.publicItem(ctx, "mcp_public_item", map[string]any{"p_item_id": itemID})
}

// ResolvePublicQR reads the public item a tag is bound to. An empty code is
// unknown without asking (as in the store); every other code goes to the
// database, whose answer does not depend on whether it was ever printed.
func (b *Backend) ResolvePublicQR(ctx context.Context, code string) (domain.PublicItem, error) {
	if code == "" {
		return domain.PublicItem{}, fmt.Errorf("live: mcp_resolve_public_qr: %w", domain.UnknownRef("qr_code", code, false))
	}
	return b.publicItem(ctx, "mcp_resolve_public_qr", map[string]any{"p_qr_code": code})
}

func (b *Backend) publicItem(ctx context.Context, fn string, args map[string]any) (domain.PublicItem, error) {
	var r publicItemRow
	if err := b.call(ctx, fn, args, &r); err != nil {
		return domain.PublicItem{}, err
	}
	if r.ID == "" || r.Sale.ID == "" {
		return domain.PublicItem{}, b.unavailable(fn, errors.New("answer without an item or its sale"))
	}
	return r.item(), nil
}

// hitRow is one search hit as mcp_search_marketplace answers it.
type hitRow struct {
	Kind       string          `json:"kind"`
	SaleID     string          `json:"sale_id"`
	SaleTitle  string          `json:"sale_title"`
	ItemID     string          `json:"item_id"`
	Title      string          `json:"title"`
	City       string          `json:"city"`
	Region     string          `json:"region"`
	StartsAt   time.Time       `json:"starts_at"`
	EndsAt     time.Time       `json:"ends_at"`
	PriceCents *int64          `json:"price_cents"`
	Photo      *publicPhotoRow `json:"photo"`
}

// SearchMarketplace searches public sales and the items for sale in them,
// in search key order (sales and items in the order they were first
// recorded); pages are keyset ranges of the key.
func (b *Backend) SearchMarketplace(ctx context.Context, q domain.MarketplaceQuery) (domain.Page[domain.MarketplaceHit], error) {
	limit, err := domain.PageLimit(q.Limit)
	if err != nil {
		return domain.Page[domain.MarketplaceHit]{}, err
	}
	limit = min(limit, domain.MaxSearchPageSize)
	terms, err := domain.CheckMarketplaceQuery(q)
	if err != nil {
		return domain.Page[domain.MarketplaceHit]{}, err
	}
	args := map[string]any{"p_limit": limit}
	if q.After != nil {
		after, err := ordinalKey(q.After)
		if err != nil {
			return domain.Page[domain.MarketplaceHit]{}, err
		}
		args["p_after"] = after
	}
	if len(terms) > 0 {
		args["p_terms"] = terms
	}
	for k, v := range map[string]string{"p_category": q.Category, "p_city": q.City, "p_region": q.Region} {
		if v != "" {
			args[k] = v
		}
	}
	if q.From != nil {
		args["p_from"] = q.From.UTC().Format(time.RFC3339Nano)
	}
	if q.To != nil {
		args["p_to"] = q.To.UTC().Format(time.RFC3339Nano)
	}
	var a pageAnswer[hitRow]
	if err := b.call(ctx, "mcp_search_marketplace", args, &a); err != nil {
		return domain.Page[domain.MarketplaceHit]{}, err
	}
	rows, err := sealPage(ctx, b, domain.Principal{}, domain.CursorMarketplace, a)
	if err != nil {
		return domain.Page[domain.MarketplaceHit]{}, err
	}
	out := domain.Page[domain.MarketplaceHit]{Rows: make([]domain.MarketplaceHit, len(rows.Rows)), NextCursor: rows.NextCursor}
	for i, h := range rows.Rows {
		out.Rows[i] = domain.MarketplaceHit{Kind: h.Kind, SaleID: h.SaleID, SaleTitle: h.SaleTitle, ItemID: h.ItemID, Title: h.Title,
			City: h.City, Region: h.Region, StartsAt: h.StartsAt, EndsAt: h.EndsAt, PriceCents: h.PriceCents}
		if h.Photo != nil {
			ph := h.Photo.photo()
			out.Rows[i].Photo = &ph
		}
	}
	return out, nil
}

// ordinalKey reads a keyset key that must be a non-negative integer (a
// search key, a record ordinal), as the store's intKey does.
func ordinalKey(k *domain.Keyset) (int64, error) {
	n, err := strconv.ParseInt(k.Key, 10, 64)
	if err != nil || n < 0 || k.ID == "" {
		return 0, domain.Invalid("cursor", "not a cursor of this list: start again without a cursor")
	}
	return n, nil
}
