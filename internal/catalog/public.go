package catalog

import (
	"context"
	"time"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// publicReads are the §11 public reads.
var publicReads = []func() Tool{
	searchMarketplace,
	getPublicSale,
	getPublicItem,
	resolvePublicQR,
}

// Public tools (spec §11) answer anyone, through public-safe views only:
// published sales and items, published photos, the sale's address-reveal
// policy at the time of the call, never a seller-internal field. They need
// no permission and call Backend reads that take no principal, so an owner
// sees exactly what an anonymous buyer sees. The gate rate-limits them in
// the public bucket.

// PublicPhotoURLBase prefixes the public URL of a published photo. The URL
// names the photo only: its storage path (tenant, sale, item) stays private.
const PublicPhotoURLBase = "https://media.trovesnap.example/photos/"

// PublicSaleView is a published sale as a buyer sees it. StreetAddress is
// present only once the sale's reveal policy allows it.
type PublicSaleView struct {
	ID              string     `json:"id"`
	Title           string     `json:"title"`
	Status          string     `json:"status"`
	City            string     `json:"city"`
	Region          string     `json:"region"`
	StreetAddress   *string    `json:"street_address"`
	AddressRevealed bool       `json:"address_revealed"`
	AddressRevealAt *time.Time `json:"address_reveal_at"`
	StartsAt        time.Time  `json:"starts_at"`
	EndsAt          time.Time  `json:"ends_at"`
	PublishedItems  int        `json:"published_items"`
}

// PublicPhotoView is a published photo.
type PublicPhotoView struct {
	ID       string `json:"id"`
	URL      string `json:"url"`
	Width    int    `json:"width"`
	Height   int    `json:"height"`
	Position int    `json:"position"`
}

// PublicItemView is a published item as a buyer sees it.
type PublicItemView struct {
	ID          string            `json:"id"`
	SaleID      string            `json:"sale_id"`
	Title       string            `json:"title"`
	Description string            `json:"description"`
	Category    string            `json:"category"`
	Status      string            `json:"status" jsonschema:"available, on_hold or sold"`
	PriceCents  *int64            `json:"price_cents"`
	Photos      []PublicPhotoView `json:"photos"`
}

func publicSaleView(s domain.PublicSale) PublicSaleView {
	return PublicSaleView{ID: s.ID, Title: s.Title, Status: s.Status, City: s.City, Region: s.Region,
		StreetAddress: s.StreetAddress, AddressRevealed: s.StreetAddress != nil, AddressRevealAt: s.AddressRevealAt,
		StartsAt: s.StartsAt, EndsAt: s.EndsAt, PublishedItems: s.PublishedItems}
}

func publicPhotoView(p domain.PublicPhoto) PublicPhotoView {
	return PublicPhotoView{ID: p.ID, URL: PublicPhotoURLBase + p.ID + ".jpg", Width: p.Width, Height: p.Height, Position: p.Position}
}

func publicItemView(it domain.PublicItem) PublicItemView {
	v := PublicItemView{ID: it.ID, SaleID: it.SaleID, Title: it.Title, Description: it.Description, Category: it.Category,
		Status: it.Status, PriceCents: it.PriceCents, Photos: make([]PublicPhotoView, 0, len(it.Photos))}
	for _, p := range it.Photos {
		v.Photos = append(v.Photos, publicPhotoView(p))
	}
	return v
}

// SearchMarketplaceInput is the input of trove_search_marketplace.
type SearchMarketplaceInput struct {
	Common
	Query    string `json:"query,omitempty" jsonschema:"free-text search over public titles and descriptions, e.g. mid-century lamp" ts:"max=200"`
	Category string `json:"category,omitempty" jsonschema:"category path prefix, e.g. furniture.seating" ts:"max=128,pattern=^[a-z0-9_]+(\\.[a-z0-9_]+)*$"`
	City     string `json:"city,omitempty" jsonschema:"only sales in this city" ts:"max=100"`
	Region   string `json:"region,omitempty" jsonschema:"only sales in this region or state, e.g. OR" ts:"max=64"`
	DateFrom string `json:"date_from,omitempty" jsonschema:"only sales running on or after this date (YYYY-MM-DD)" ts:"max=10,pattern=^[0-9]{4}-[0-9]{2}-[0-9]{2}$"`
	DateTo   string `json:"date_to,omitempty" jsonschema:"only sales starting on or before this date (YYYY-MM-DD)" ts:"max=10,pattern=^[0-9]{4}-[0-9]{2}-[0-9]{2}$"`
	Limit    int    `json:"limit,omitempty" jsonschema:"page size (default 25, max 50)" ts:"min=1,max=50"`
	Cursor   string `json:"cursor,omitempty" jsonschema:"next_cursor of the previous page" ts:"max=512"`
}

// PublicSearchHit is one search result: a published sale or an item for
// sale in one. It carries no street address: get the sale for it.
type PublicSearchHit struct {
	Kind       string           `json:"kind" jsonschema:"sale or item"`
	SaleID     string           `json:"sale_id"`
	SaleTitle  string           `json:"sale_title"`
	ItemID     *string          `json:"item_id"`
	Title      string           `json:"title"`
	City       string           `json:"city"`
	Region     string           `json:"region"`
	StartsAt   time.Time        `json:"starts_at"`
	EndsAt     time.Time        `json:"ends_at"`
	PriceCents *int64           `json:"price_cents"`
	Photo      *PublicPhotoView `json:"photo"`
}

// SearchMarketplaceOutput is the data of trove_search_marketplace.
type SearchMarketplaceOutput struct {
	Hits       []PublicSearchHit `json:"hits"`
	NextCursor string            `json:"next_cursor"`
}

func searchMarketplace() Tool {
	return define(Definition{
		Name: "trove_search_marketplace", Version: "1.0.0", Title: "Search the public marketplace",
		Description: "Search published sales and their items by words (each must match a title, description or category), category, city, region and dates. Public, no sign-in: only what any buyer may see. Open a hit with trove_get_public_sale or trove_get_public_item.",
		Tier:        TierPublicRead, Risk: RiskPublicRead, Permissions: []string{},
		Modes: bothModes, Idempotent: true, Approval: ApprovalNone, Status: StatusActive,
		Domain: DomainMapping{Service: "marketplace", Operation: "search_public_marketplace"},
		Impact: readImpact,
	}, func(ctx context.Context, env Env, in SearchMarketplaceInput) (SearchMarketplaceOutput, Effects, error) {
		after, err := env.Backend.OpenCursor(ctx, domain.Principal{}, domain.CursorMarketplace, in.Cursor)
		if err != nil {
			return SearchMarketplaceOutput{}, Effects{}, err
		}
		q := domain.MarketplaceQuery{Text: in.Query, Category: in.Category, City: in.City, Region: in.Region, Limit: in.Limit, After: after}
		if q.From, err = day(in.DateFrom, "date_from", 0); err != nil {
			return SearchMarketplaceOutput{}, Effects{}, err
		}
		if q.To, err = day(in.DateTo, "date_to", 24*time.Hour); err != nil { // sales starting on that day or before
			return SearchMarketplaceOutput{}, Effects{}, err
		}
		page, err := env.Backend.SearchMarketplace(ctx, q)
		if err != nil {
			return SearchMarketplaceOutput{}, Effects{}, err
		}
		out := SearchMarketplaceOutput{Hits: make([]PublicSearchHit, 0, len(page.Rows)), NextCursor: page.NextCursor}
		for _, h := range page.Rows {
			v := PublicSearchHit{Kind: h.Kind, SaleID: h.SaleID, SaleTitle: h.SaleTitle, Title: h.Title, City: h.City, Region: h.Region,
				StartsAt: h.StartsAt, EndsAt: h.EndsAt, PriceCents: h.PriceCents}
			if h.ItemID != "" {
				v.ItemID = ptr(h.ItemID)
			}
			if h.Photo != nil {
				v.Photo = ptr(publicPhotoView(*h.Photo))
			}
			out.Hits = append(out.Hits, v)
		}
		return out, Effects{}, nil
	})
}

// day parses a YYYY-MM-DD input as the UTC instant of that day's start,
// plus shift; "" is no bound.
func day(s, field string, shift time.Duration) (*time.Time, error) {
	if s == "" {
		return nil, nil
	}
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return nil, domain.Invalid(field, "not a calendar date (YYYY-MM-DD)")
	}
	t = t.Add(shift)
	return &t, nil
}

// GetPublicSaleInput is the input of trove_get_public_sale.
type GetPublicSaleInput struct {
	Common
	SaleID string `json:"sale_id" jsonschema:"the published sale" ts:"id=sale"`
}

// GetPublicSaleOutput is the data of trove_get_public_sale.
type GetPublicSaleOutput struct {
	Sale PublicSaleView `json:"sale"`
}

func getPublicSale() Tool {
	return define(Definition{
		Name: "trove_get_public_sale", Version: "1.0.0", Title: "Get a public sale",
		Description: "Get one published sale as a buyer sees it: title, dates, city, region, and the street address once its reveal policy allows. Public, no sign-in. An unpublished or unknown sale answers invalid_reference alike.",
		Tier:        TierPublicRead, Risk: RiskPublicRead, Permissions: []string{},
		Modes: bothModes, Idempotent: true, Approval: ApprovalNone, Status: StatusActive,
		Domain: DomainMapping{Service: "marketplace", Operation: "get_public_sale"},
		Impact: readImpact,
	}, func(ctx context.Context, env Env, in GetPublicSaleInput) (GetPublicSaleOutput, Effects, error) {
		sl, err := env.Backend.PublicSale(ctx, in.SaleID)
		if err != nil {
			return GetPublicSaleOutput{}, Effects{}, err
		}
		return GetPublicSaleOutput{Sale: publicSaleView(sl)}, Effects{}, nil
	})
}

// GetPublicItemInput is the input of trove_get_public_item.
type GetPublicItemInput struct {
	Common
	ItemID string `json:"item_id" jsonschema:"the published item" ts:"id=item"`
}

// GetPublicItemOutput is the data of trove_get_public_item.
type GetPublicItemOutput struct {
	Item PublicItemView `json:"item"`
	Sale PublicSaleView `json:"sale"`
}

func getPublicItem() Tool {
	return define(Definition{
		Name: "trove_get_public_item", Version: "1.0.0", Title: "Get a public item",
		Description: "Get one published item and its sale as a buyer sees them: public fields and published photos, the address per its reveal policy. Public, no sign-in. An unpublished or unknown item answers invalid_reference alike.",
		Tier:        TierPublicRead, Risk: RiskPublicRead, Permissions: []string{},
		Modes: bothModes, Idempotent: true, Approval: ApprovalNone, Status: StatusActive,
		Domain: DomainMapping{Service: "marketplace", Operation: "get_public_item"},
		Impact: readImpact,
	}, func(ctx context.Context, env Env, in GetPublicItemInput) (GetPublicItemOutput, Effects, error) {
		it, err := env.Backend.PublicItem(ctx, in.ItemID)
		if err != nil {
			return GetPublicItemOutput{}, Effects{}, err
		}
		return GetPublicItemOutput{Item: publicItemView(it), Sale: publicSaleView(it.Sale)}, Effects{}, nil
	})
}

// ResolvePublicQRInput is the input of trove_resolve_public_qr.
type ResolvePublicQRInput struct {
	Common
	QRCode string `json:"qr_code" jsonschema:"the code printed on the tag, e.g. QR-221-0001" ts:"max=64,pattern=^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$"`
}

// ResolvePublicQROutput is the data of trove_resolve_public_qr. The sale
// comes with the item so a scanned tag inherits the sale's current address
// policy rather than exposing anything of its own.
type ResolvePublicQROutput struct {
	Item PublicItemView `json:"item"`
	Sale PublicSaleView `json:"sale"`
}

func resolvePublicQR() Tool {
	return define(Definition{
		Name: "trove_resolve_public_qr", Version: "1.0.0", Title: "Resolve a public QR tag",
		Description: "Resolve the QR code on an item's tag to the item's public view and its sale. Public, no sign-in, rate limited. An unknown, unbound or unpublished tag answers invalid_reference alike.",
		Tier:        TierPublicRead, Risk: RiskPublicRead, Permissions: []string{},
		Modes: bothModes, Idempotent: true, Approval: ApprovalNone, Status: StatusActive,
		Domain: DomainMapping{Service: "marketplace", Operation: "resolve_public_qr"},
		Impact: readImpact,
	}, func(ctx context.Context, env Env, in ResolvePublicQRInput) (ResolvePublicQROutput, Effects, error) {
		it, err := env.Backend.ResolvePublicQR(ctx, in.QRCode)
		if err != nil {
			return ResolvePublicQROutput{}, Effects{}, err
		}
		return ResolvePublicQROutput{Item: publicItemView(it), Sale: publicSaleView(it.Sale)}, Effects{}, nil
	})
}
