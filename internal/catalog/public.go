package catalog

import "time"

// Public tools (spec §11) answer anyone, through public-safe views only:
// published sales and items, published photos, the sale's address-reveal
// policy, never a seller-internal field. They need no permission.

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
	Status      string            `json:"status"`
	PriceCents  *int64            `json:"price_cents"`
	Photos      []PublicPhotoView `json:"photos"`
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

// PublicSearchHit is one search result: a published sale or a published item.
type PublicSearchHit struct {
	Kind       string           `json:"kind" jsonschema:"sale or item"`
	SaleID     string           `json:"sale_id"`
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
	return define[SearchMarketplaceInput, SearchMarketplaceOutput](Definition{
		Name: "trove_search_marketplace", Version: "1.0.0", Title: "Search the public marketplace",
		Description: "Search published estate sales and their published items by text, category, city, region and dates. Public: needs no sign-in and returns only what any buyer may see (published photos, public prices, the sale's current address policy); never seller-internal pricing, notes or unpublished records. Paginated: pass next_cursor back as cursor.",
		Tier:        TierPublicRead, Risk: RiskPublicRead, Permissions: []string{},
		Modes: bothModes, Idempotent: true, Approval: ApprovalNone, Status: StatusExperimental,
		Domain: DomainMapping{Service: "marketplace", Operation: "search_public_marketplace"},
		Impact: readImpact,
	}, nil)
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
	return define[GetPublicSaleInput, GetPublicSaleOutput](Definition{
		Name: "trove_get_public_sale", Version: "1.0.0", Title: "Get a public sale",
		Description: "Get one published estate sale as a buyer sees it: title, dates, city and region, and the street address only once the sale's reveal policy allows. Public: needs no sign-in. An unpublished or unknown sale answers invalid_reference alike; never returns seller-internal fields.",
		Tier:        TierPublicRead, Risk: RiskPublicRead, Permissions: []string{},
		Modes: bothModes, Idempotent: true, Approval: ApprovalNone, Status: StatusExperimental,
		Domain: DomainMapping{Service: "marketplace", Operation: "get_public_sale"},
		Impact: readImpact,
	}, nil)
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
	return define[GetPublicItemInput, GetPublicItemOutput](Definition{
		Name: "trove_get_public_item", Version: "1.0.0", Title: "Get a public item",
		Description: "Get one published item and its sale as a buyer sees them: public title, description, category, public price and published photos only. Public: needs no sign-in. Never returns internal price guidance, cost basis, appraisal flags, staff notes or unpublished photos; an unpublished or unknown item answers invalid_reference alike.",
		Tier:        TierPublicRead, Risk: RiskPublicRead, Permissions: []string{},
		Modes: bothModes, Idempotent: true, Approval: ApprovalNone, Status: StatusExperimental,
		Domain: DomainMapping{Service: "marketplace", Operation: "get_public_item"},
		Impact: readImpact,
	}, nil)
}

// ResolvePublicQRInput is the input of trove_resolve_public_qr.
type ResolvePublicQRInput struct {
	Common
	QRCode string `json:"qr_code" jsonschema:"the code printed on the tag, e.g. QR-221-0001" ts:"max=64,pattern=^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$"`
}

// ResolvePublicQROutput is the data of trove_resolve_public_qr.
type ResolvePublicQROutput struct {
	Item PublicItemView `json:"item"`
}

func resolvePublicQR() Tool {
	return define[ResolvePublicQRInput, ResolvePublicQROutput](Definition{
		Name: "trove_resolve_public_qr", Version: "1.0.0", Title: "Resolve a public QR tag",
		Description: "Resolve the QR code printed on an item's tag to that item's public view, as a buyer scanning it would see. Public: needs no sign-in and is rate limited against enumeration. A tag that is unbound, released or on an unpublished item answers invalid_reference alike; never returns seller-internal fields.",
		Tier:        TierPublicRead, Risk: RiskPublicRead, Permissions: []string{},
		Modes: bothModes, Idempotent: true, Approval: ApprovalNone, Status: StatusExperimental,
		Domain: DomainMapping{Service: "marketplace", Operation: "resolve_public_qr"},
		Impact: readImpact,
	}, nil)
}
