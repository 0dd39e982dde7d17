package domain

import (
	"context"
	"time"
)

// ReadBackend holds the public marketplace reads (§11) and the scoped reads
// (§12) beyond the original four lists, which are declared in backend.go.
//
// Public reads take no Principal: what a buyer may see cannot depend on who
// asks, so an owner calling a public tool sees exactly what an anonymous
// caller sees. Unknown, unpublished and withdrawn records all fail with the
// same *RefError (CrossTenant false), so the answer is no existence oracle.
//
// Scoped reads are tenant-scoped by the Principal (a record of another
// tenant is a *RefError like a missing one) and honour sale assignment: a
// sale-scoped principal reading a sale it is not assigned to gets
// ErrSaleAssignment, and its lists silently hold only its assigned sales.
type ReadBackend interface {
	// SearchMarketplace searches published sales and their items for sale.
	SearchMarketplace(ctx context.Context, q MarketplaceQuery) (Page[MarketplaceHit], error)
	// PublicSale is one published sale, its street address present only
	// when the reveal policy allows it at the time of the call.
	PublicSale(ctx context.Context, saleID string) (PublicSale, error)
	// PublicItem is one public item with its sale (under the same policy).
	PublicItem(ctx context.Context, itemID string) (PublicItem, error)
	// ResolvePublicQR is the public item a printed tag is bound to. An
	// unknown code, a printed but unbound code and a code on a non-public
	// item fail alike.
	ResolvePublicQR(ctx context.Context, code string) (PublicItem, error)

	GetSale(ctx context.Context, p Principal, saleID string) (Sale, error)
	// ListItemDetails is ListItems with the extras inc asks for; the gate's
	// projection decides inc, so a role never even reads what it may not see.
	ListItemDetails(ctx context.Context, p Principal, q ItemQuery, inc ItemIncludes) (Page[ItemDetail], error)
	GetItem(ctx context.Context, p Principal, itemID string, inc ItemIncludes) (ItemDetail, error)
	GetCandidate(ctx context.Context, p Principal, candidateID string) (Candidate, error)
	ListImportRuns(ctx context.Context, p Principal, q ImportRunQuery) (Page[ImportRunSummary], error)
	GetImportRun(ctx context.Context, p Principal, q ImportRunDetailQuery) (ImportRunDetail, error)
	ListStatusEvents(ctx context.Context, p Principal, q StatusEventQuery) (Page[StatusEvent], error)
	ListLabelBatches(ctx context.Context, p Principal, q LabelBatchQuery) (Page[LabelBatchSummary], error)
	// DispositionQueue lists the unsold items of a closed sale that still
	// await a disposition decision.
	DispositionQueue(ctx context.Context, p Principal, q DispositionQuery, inc ItemIncludes) (Page[DispositionEntry], error)
}

// Cursor kinds of the read lists. Lists whose rows belong to one parent bind
// the parent into the kind, so a cursor of run_1's records is refused for
// run_2.
const (
	CursorMarketplace  = "marketplace"
	CursorImportRuns   = "import_runs"
	CursorStatusEvents = "status_events"
	CursorLabelBatches = "label_batches"
)

// CursorImportRecords is the cursor kind of one run's source records.
func CursorImportRecords(runID string) string { return "import_records:" + runID }

// CursorDisposition is the cursor kind of one sale's disposition queue.
func CursorDisposition(saleID string) string { return "disposition:" + saleID }

// PublicTenant is the tenant a public cursor is bound to: public lists
// hold every tenant's public records, so their cursors belong to no tenant.
const PublicTenant = ""

// MaxSearchPageSize bounds a marketplace page (public callers get smaller
// pages than sellers).
const MaxSearchPageSize = 50

// MaxSearchTerms bounds the words of a marketplace query.
const MaxSearchTerms = 8

// Address reveal policies of a sale.
const (
	AddressHiddenUntil = "hidden_until"
	AddressAlways      = "always"
	AddressNever       = "never"
)

// AddressRevealed is THE reveal rule: whether a sale's street address is
// public at now. "never" means only registered buyers (outside the public
// tools) ever see it.
func AddressRevealed(policy string, revealAt *time.Time, now time.Time) bool {
	switch policy {
	case AddressAlways:
		return true
	case AddressHiddenUntil:
		return revealAt != nil && !now.Before(*revealAt)
	}
	return false
}

// PublicSaleStatuses are the sale statuses a buyer may see (with visibility
// public): announced and running sales. Drafts are private; a closed sale is
// over and leaves the marketplace.
var PublicSaleStatuses = []string{SalePublished, SaleLive}

// publicItemStatus maps the item statuses a buyer may see to the public
// vocabulary. pending_pickup (paid, not collected) is the seller's
// fulfilment state: a buyer only needs to know the piece is sold. Draft,
// ready, withdrawn and archived items are not public at all.
var publicItemStatus = map[string]string{
	ItemPublished:     "available",
	ItemOnHold:        "on_hold",
	ItemPendingPickup: "sold",
	ItemSold:          "sold",
}

// PublicItemStatuses lists the item statuses that are public, in lifecycle order.
func PublicItemStatuses() []string {
	return []string{ItemPublished, ItemOnHold, ItemPendingPickup, ItemSold}
}

// PublicItemStatus returns the public status of an item status, and false
// when items in that status are not public.
func PublicItemStatus(status string) (string, bool) {
	s, ok := publicItemStatus[status]
	return s, ok
}

// PublicSale is a sale as a buyer sees it. It has no seller-internal field
// to leak: the store reads public columns only. StreetAddress is nil unless
// the reveal policy allows it at the time of the call.
type PublicSale struct {
	ID              string
	Title           string
	Status          string
	City            string
	Region          string
	StreetAddress   *string
	AddressRevealAt *time.Time // the announced reveal time of a hidden_until sale
	StartsAt        time.Time
	EndsAt          time.Time
	PublishedItems  int
}

// PublicPhoto is a published photo; its storage path (which names tenant and
// sale) never leaves the store.
type PublicPhoto struct {
	ID       string
	Width    int
	Height   int
	Position int
}

// PublicItem is an item as a buyer sees it: public price and published
// photos only. Status is the public vocabulary (available, on_hold, sold).
type PublicItem struct {
	ID          string
	SaleID      string
	Title       string
	Description string
	Category    string
	Status      string
	PriceCents  *int64
	Photos      []PublicPhoto
	Sale        PublicSale
}

// MarketplaceQuery filters the public search. Text is matched word by word
// (every word must appear in a title, description or category); Category is
// a dotted path prefix; From/To bound the sale dates (UTC days).
type MarketplaceQuery struct {
	Text     string
	Category string
	City     string
	Region   string
	From     *time.Time // sales still running on or after this instant
	To       *time.Time // sales starting before this instant
	Limit    int
	After    *Keyset
}

// Marketplace hit kinds.
const (
	HitSale = "sale"
	HitItem = "item"
)

// MarketplaceHit is one search result: a published sale, or an item for sale
// in one. Hits never carry a street address: a buyer opens the sale for it.
type MarketplaceHit struct {
	Kind       string
	SaleID     string
	SaleTitle  string
	ItemID     string // "" for a sale hit
	Title      string
	City       string
	Region     string
	StartsAt   time.Time
	EndsAt     time.Time
	PriceCents *int64
	Photo      *PublicPhoto // the lead published photo of an item
}

// ItemIncludes says which extras of an item to read besides its row.
type ItemIncludes struct {
	Photos bool
	// PhotoTally counts an item's photos, and those approved for public
	// view, without reading them (ItemDetail.PhotoTally; Item.Photos stays
	// nil): what a list row shows of them (issue 18: a 50-item page read
	// ~175 photo rows to count them).
	PhotoTally   bool
	PriceHistory bool
	Provenance   bool
}

// PhotoTally is how many photos an item has, and how many of them are
// approved for public view.
type PhotoTally struct {
	Count     int
	Published int
}

// TallyPhotos is the PhotoTally of photos.
func TallyPhotos(photos []Photo) PhotoTally {
	t := PhotoTally{Count: len(photos)}
	for _, ph := range photos {
		if ph.Published {
			t.Published++
		}
	}
	return t
}

// ItemDetail is an item with the extras an ItemIncludes asked for. Like
// Item, it is never returned as-is: tools project it by role.
type ItemDetail struct {
	Item
	// PhotoTally is set when ItemIncludes.PhotoTally asked for it.
	PhotoTally   *PhotoTally
	PriceHistory []PriceChange
	// Provenance is where a promoted item came from: nil for an item made
	// otherwise, or when not asked for.
	Provenance *ItemProvenance
}

// ProvenancePermission is the permission that shows an item's provenance:
// the roles that read the catalogue, not checkout. store.GetItem reads it
// here; live mode's mcp_get_item (migration 38) checks the same name, held
// to this rule for every role by TestRPCAuthority_ItemProvenanceFollowsTheRule.
const ProvenancePermission = PermItemRead

// ItemProvenance links an item to what it was promoted from: the candidate,
// the source record and import run the candidate came from (empty for a
// candidate made by hand), and the proposal whose execution created it.
type ItemProvenance struct {
	CandidateID    string    `json:"candidate_id"`
	SourceRecordID string    `json:"source_record_id"`
	ImportRunID    string    `json:"import_run_id"`
	ProposalID     string    `json:"proposal_id"`
	PromotedAt     time.Time `json:"promoted_at"`
}

// PriceChange is one entry of an item's append-only pricing history:
// internal, shown only to roles with pricing permission.
type PriceChange struct {
	ID                         string    `json:"id"`
	TenantID                   string    `json:"tenant_id"`
	ItemID                     string    `json:"item_id"`
	PriceCents                 *int64    `json:"price_cents"`
	InternalPriceGuidanceCents *int64    `json:"internal_price_guidance_cents"`
	Reason                     string    `json:"reason"`
	ActorID                    string    `json:"actor_id"`
	ProposalID                 string    `json:"proposal_id"`
	ChangedAt                  time.Time `json:"changed_at"`
}

// Status event sources.
const (
	StatusSourceSeller   = "seller_confirmed"
	StatusSourceCheckout = "checkout_scan"
	StatusSourceImport   = "status_import"
	StatusSourceProposal = "proposal"
)

// StatusSources lists the status event sources.
func StatusSources() []string {
	return []string{StatusSourceSeller, StatusSourceCheckout, StatusSourceImport, StatusSourceProposal}
}

// StatusEvent is one entry of an item's append-only status history. A sold
// event records the item lifecycle, never a payment.
type StatusEvent struct {
	ID          string    `json:"id"`
	TenantID    string    `json:"tenant_id"`
	ItemID      string    `json:"item_id"`
	SaleID      string    `json:"sale_id"`
	FromStatus  string    `json:"from_status"`
	ToStatus    string    `json:"to_status"`
	EffectiveAt time.Time `json:"effective_at"`
	SourceType  string    `json:"source_type"`
	ActorID     string    `json:"actor_id"`
	ProposalID  string    `json:"proposal_id"` // "" unless the event executed a proposal
	RecordedAt  time.Time `json:"recorded_at"`
}

// StatusEventQuery filters status events; they list newest first.
type StatusEventQuery struct {
	ItemID   string
	SaleID   string
	ToStatus string
	Limit    int
	After    *Keyset
}

// Label batch statuses.
const (
	LabelBatchDraft   = "draft"
	LabelBatchPrinted = "printed"
	LabelBatchRetired = "retired"
)

// LabelBatch is a batch of printed QR tags for a sale, as fixtures seed it.
// A code is bound to an item when the item's qr_code names it; the batch
// itself only records which codes were printed.
type LabelBatch struct {
	ID        string     `json:"id"`
	TenantID  string     `json:"tenant_id"`
	SaleID    string     `json:"sale_id"`
	Status    string     `json:"status"`
	Codes     []string   `json:"codes"`
	CreatedAt time.Time  `json:"created_at"`
	PrintedAt *time.Time `json:"printed_at"`
}

// LabelBatchSummary is a label batch as a read returns it: counts, never the
// codes (a code list is an enumeration aid for the public QR tool).
type LabelBatchSummary struct {
	ID         string
	TenantID   string
	SaleID     string
	Status     string
	LabelCount int
	BoundCount int
	CreatedAt  time.Time
	PrintedAt  *time.Time
}

// LabelBatchQuery filters label batches.
type LabelBatchQuery struct {
	SaleID string
	Status string
	Limit  int
	After  *Keyset
}

// ImportRunQuery filters import runs; they list newest first.
type ImportRunQuery struct {
	SaleID string
	Limit  int
	After  *Keyset
}

// ImportRunSummary is an import run with the kind of its source.
type ImportRunSummary struct {
	ImportRun
	SourceKind string
}

// ImportRunDetailQuery names a run and a page of its source records.
type ImportRunDetailQuery struct {
	RunID string
	Limit int
	After *Keyset
}

// ReviewCounts counts candidates by review status.
type ReviewCounts struct {
	NeedsReview int
	Approved    int
	Rejected    int
	Promoted    int
	Duplicate   int
}

// SourceRecordDetail is a source record and the candidates it produced.
type SourceRecordDetail struct {
	SourceRecord
	CandidateIDs []string
}

// ImportRunDetail is one run, its candidate counts and a page of records.
type ImportRunDetail struct {
	Run               ImportRunSummary
	Candidates        ReviewCounts
	Records           []SourceRecordDetail
	RecordsNextCursor string
}

// DispositionSaleStatuses are the sales whose unsold items await a
// disposition decision: the sale is over.
func DispositionSaleStatuses() []string { return []string{SaleClosed, SaleArchived} }

// UnsoldItemStatuses are the items a closed sale leaves for disposition:
// still for sale, or held for a buyer who never paid.
func UnsoldItemStatuses() []string { return []string{ItemPublished, ItemOnHold} }

// DispositionQuery names a sale whose disposition queue to list.
type DispositionQuery struct {
	SaleID string
	Room   string
	Limit  int
	After  *Keyset
}

// DispositionEntry is an unsold item awaiting a disposition decision since
// its sale closed.
type DispositionEntry struct {
	ItemDetail
	QueuedAt time.Time
}

// SaleScope limits a membership to the sales it is assigned (§4.3). A
// membership with a scope and no sale sees no sale at all.
type SaleScope struct {
	MembershipID string   `json:"membership_id"`
	TenantID     string   `json:"tenant_id"`
	SaleIDs      []string `json:"sale_ids"`
}

// Id prefixes of the read-side records (ids.go holds the spec's own).
const (
	PrefixStatusEvent = "status"
	PrefixPriceChange = "price"
	PrefixLabelBatch  = "batch"
)
