package domain

import (
	"slices"
	"time"
)

// Candidate kinds beyond CandidateNewItem: a candidate may propose a change
// to an existing item instead of a new one. Both stay reviewable data; a
// seller's reviewed action is what changes the item.
const (
	CandidateStatusUpdate = "status_update" // a reported status (e.g. "sold"), never a status event
	CandidateAttachMedia  = "attach_media"  // a photo proposed for an item, never an item photo
)

// Id prefixes of ingestion records.
const (
	PrefixAsset  = "asset"  // a durable source asset (uploaded media)
	PrefixMedia  = "media"  // an asset attached to a candidate
	PrefixDraft  = "draft"  // a stored draft revision of listing copy
	PrefixExport = "export" // a staged export
)

// Import run kinds and the source descriptor kind of a CSV upload.
const (
	ImportManual         = "manual"
	ImportCSV            = "csv"
	SourceKindCSVUpload  = "csv_upload"
	ImportRunCompleted   = "completed"
	ImportRunWithRejects = "completed_with_rejections"
)

// Limits of ingestion (spec §29.3), documented in the README. They live here
// because both the pure checks (internal/ingest) and the store enforce them.
const (
	// MaxPhotoBytes bounds one uploaded image.
	MaxPhotoBytes = 8 << 20
	// MaxPhotoPixels bounds width × height before a full decode: a small
	// file can declare a huge canvas (a decompression bomb), and decoding
	// allocates for every pixel. 40 MP covers phone cameras.
	MaxPhotoPixels = 40_000_000
	// MaxPhotoSide bounds either dimension.
	MaxPhotoSide = 20_000
	// MaxPhotoDecodeBytes bounds the memory one full decode may allocate,
	// estimated from the header BEFORE decoding (ingest.photoDecodeCost:
	// width × height × bytes per pixel of the decoded form, plus the
	// decoder's own working buffers). The pixel caps above ignore bytes per
	// pixel: a 300 KB PNG of 6300×6300 16-bit RGBA is under 40 MP yet
	// decodes to 318 MB. 32 MiB holds a 12 MP phone JPEG (4:2:0 chroma, ~18
	// MB decoded) with room to spare, and with one decode at a time it keeps
	// the server's peak RSS well under its 100 MB promise (issue 13). It
	// makes the 40 MP cap moot (no decoded form is under 1 byte a pixel);
	// the pixel caps stay as a first, cheaper refusal.
	MaxPhotoDecodeBytes = 32 << 20
	// MaxPhotosPerCandidate bounds the media of one candidate.
	MaxPhotosPerCandidate = 12
	// MaxPriceCents bounds a price: a candidate's supplied price, a
	// promotion's, a bulk update's.
	MaxPriceCents = 100_000_000
	// MaxTenantMediaBytes is a tenant's quota of stored source assets.
	MaxTenantMediaBytes = 2 << 30
	// MaxManualImportRows bounds one manual import.
	MaxManualImportRows = 500
	// MaxImportRows bounds the data rows of one CSV import.
	MaxImportRows = 10_000
	// MaxListedIDs bounds the ids an import result lists (counts are always
	// complete; the run lists every record).
	MaxListedIDs = 500
	// MaxListedIssues bounds the row issues a result lists.
	MaxListedIssues = 200
	// MaxRelatedIDs bounds each id list of an envelope's and event's related
	// records for a large import: the run id always leads to the rest.
	MaxRelatedIDs = 100
	// MaxExportItems bounds a staged export.
	MaxExportItems = 50
)

// ReportableStatuses are the item statuses a status report may claim.
var ReportableStatuses = []string{ItemOnHold, ItemPendingPickup, ItemSold, ItemWithdrawn}

// Status report sources.
const (
	ReportSellerConfirmed = "seller_confirmed"
	ReportSpreadsheet     = "spreadsheet"
)

// Row issue severities: an error makes a row invalid; a warning is kept
// with the row for the reviewer.
const (
	SeverityError   = "error"
	SeverityWarning = "warning"
)

// RowIssue is a problem with one imported row. Messages are written by the
// server and never quote cell text; Column is the column's (normalised)
// header, which is imported data.
type RowIssue struct {
	Row      int    `json:"row"`
	Line     int    `json:"line,omitempty"`
	Column   string `json:"column"`
	Code     string `json:"code"`
	Severity string `json:"severity"`
	Message  string `json:"message"`
}

// Cell is one imported cell, normalised, under its column header.
type Cell struct {
	Column string `json:"column"`
	Value  string `json:"value"`
}

// ColumnMapping maps one CSV column to one candidate field.
type ColumnMapping struct {
	Column string `json:"column"`
	Field  string `json:"field"`
}

// ImportRow is one normalised row of an import: what its source record
// keeps and what its candidate is built from.
type ImportRow struct {
	Row                int        `json:"row"`
	Line               int        `json:"line,omitempty"`
	Kind               string     `json:"kind"` // CandidateNewItem or CandidateStatusUpdate
	ExternalRef        string     `json:"external_ref,omitempty"`
	Title              string     `json:"title,omitempty"`
	Description        string     `json:"description,omitempty"`
	Category           string     `json:"category,omitempty"`
	Room               string     `json:"room,omitempty"`
	Condition          string     `json:"condition,omitempty"`
	Quantity           int        `json:"quantity,omitempty"`
	SuppliedPriceCents *int64     `json:"supplied_price_cents,omitempty"`
	Notes              string     `json:"notes,omitempty"`
	ItemID             string     `json:"item_id,omitempty"`
	ReportedStatus     string     `json:"reported_status,omitempty"`
	EffectiveAt        *time.Time `json:"effective_at,omitempty"`
	// Cells are the row as imported (normalised), for provenance.
	Cells []Cell `json:"cells,omitempty"`
	// OriginalHash is the sha256 of the row's original bytes.
	OriginalHash string     `json:"original_sha256"`
	Issues       []RowIssue `json:"issues,omitempty"`
}

// Valid reports whether the row has no error.
func (r ImportRow) Valid() bool {
	return !slices.ContainsFunc(r.Issues, func(i RowIssue) bool { return i.Severity == SeverityError })
}

// NewImport is the input of RunImport.
type NewImport struct {
	SaleID          string
	Kind            string // ImportManual or ImportCSV
	SourceLabel     string
	ContentHash     string // sha256 of the original file (CSV)
	ContentBytes    int
	Mapping         []ColumnMapping
	Rows            []ImportRow
	SkipInvalidRows bool
	// Progress, when set, is told rows done of rows total while a long
	// import is written.
	Progress func(done, total int)
}

// ImportCreated is the result of RunImport.
type ImportCreated struct {
	ImportRunID                string     `json:"import_run_id"`
	SourceDescriptorID         string     `json:"source_descriptor_id"`
	SaleID                     string     `json:"sale_id"`
	Status                     string     `json:"status"`
	SourceRecordCount          int        `json:"source_record_count"`
	CandidateCount             int        `json:"candidate_count"`
	StatusUpdateCandidateCount int        `json:"status_update_candidate_count"`
	CandidateIDs               []string   `json:"candidate_ids"`
	StatusUpdateCandidateIDs   []string   `json:"status_update_candidate_ids"`
	IDsTruncated               bool       `json:"ids_truncated"`
	RejectedRowCount           int        `json:"rejected_row_count"`
	RejectedRows               []RowIssue `json:"rejected_rows"`
}

// ItemRef is what an import may know of an existing item.
type ItemRef struct {
	ID      string `json:"id"`
	SaleID  string `json:"sale_id"`
	Status  string `json:"status"`
	Version int    `json:"version"`
}

// ImportTargets answers ImportTargets: the sale and the known items.
type ImportTargets struct {
	SaleID string
	Items  map[string]ItemRef
}

// NewStatusReport is the input of CreateStatusReport.
type NewStatusReport struct {
	ItemID         string    `json:"item_id"`
	ReportedStatus string    `json:"reported_status"`
	EffectiveAt    time.Time `json:"effective_at"`
	Source         string    `json:"source"`
	Notes          string    `json:"notes,omitempty"`
}

// StatusReportCreated is the result of CreateStatusReport.
type StatusReportCreated struct {
	CandidateID         string `json:"candidate_id"`
	Kind                string `json:"kind"`
	ItemID              string `json:"item_id"`
	SaleID              string `json:"sale_id"`
	ReportedStatus      string `json:"reported_status"`
	ReviewStatus        string `json:"review_status"`
	ImportRunID         string `json:"import_run_id"`
	SourceRecordID      string `json:"source_record_id"`
	ObservedItemStatus  string `json:"observed_item_status"`
	ObservedItemVersion int    `json:"observed_item_version"`
}

// PhotoUpload is an image that passed the server's checks: sniffed type,
// size, a real decode, bounded pixels. Bytes are never serialised.
type PhotoUpload struct {
	Bytes       []byte `json:"-"`
	MimeType    string `json:"mime_type"`
	Ext         string `json:"ext"`
	Width       int    `json:"width"`
	Height      int    `json:"height"`
	Size        int    `json:"size"`
	ContentHash string `json:"content_hash"` // sha256: of Bytes
}

// NewCandidateMedia is the input of AttachCandidateMedia (CandidateID) and
// CreateMediaCandidate (ItemID). Exactly one of Upload and AssetID is set.
type NewCandidateMedia struct {
	CandidateID string
	ItemID      string
	Upload      *PhotoUpload
	AssetID     string
	Caption     string
}

// CandidateMediaCreated is the result of both media writes.
type CandidateMediaCreated struct {
	CandidateID     string `json:"candidate_id"`
	Kind            string `json:"kind"`
	MediaID         string `json:"media_id"`
	AssetID         string `json:"asset_id"`
	ContentHash     string `json:"content_hash"`
	MimeType        string `json:"mime_type"`
	Width           int    `json:"width"`
	Height          int    `json:"height"`
	ByteSize        int    `json:"byte_size"`
	ReviewStatus    string `json:"review_status"`
	AssetReused     bool   `json:"asset_reused"`
	AlreadyAttached bool   `json:"already_attached"`
	ItemID          string `json:"item_id,omitempty"`
	ImportRunID     string `json:"import_run_id,omitempty"`
	SourceRecordID  string `json:"source_record_id,omitempty"`
}

// Export channels (§13.5).
const (
	ChannelEbay     = "ebay"
	ChannelFacebook = "facebook_marketplace"
	ChannelEtsy     = "etsy"
	ChannelCSVFile  = "csv_file"
)

// ExportChannels lists the channels in a fixed order.
var ExportChannels = []string{ChannelEbay, ChannelFacebook, ChannelEtsy, ChannelCSVFile}

// ExportStaged is the only status StageExport writes; delivery is a
// separate, approved step.
const ExportStaged = "staged"

// NewExport is the input of StageExport.
type NewExport struct {
	Channel string
	ItemIDs []string
}

// ExportListing is one staged listing: a snapshot of the item's public
// fields at a version, and what the channel's rules say about it.
type ExportListing struct {
	ItemID      string   `json:"item_id"`
	SaleID      string   `json:"sale_id"`
	Version     int      `json:"version"`
	Status      string   `json:"status"`
	Title       string   `json:"title"`
	Description string   `json:"description"`
	Category    string   `json:"category"`
	PriceCents  *int64   `json:"price_cents"`
	PhotoCount  int      `json:"photo_count"` // published photos only
	Valid       bool     `json:"valid"`
	Warnings    []string `json:"warnings"`
}

// ExportDraft is the result of StageExport.
type ExportDraft struct {
	ExportID   string          `json:"export_id"`
	Channel    string          `json:"channel"`
	Status     string          `json:"status"`
	Listings   []ExportListing `json:"listings"`
	ValidCount int             `json:"valid_count"`
	Warnings   []string        `json:"warnings"`
	CreatedAt  time.Time       `json:"created_at"`
}

// Draft copy origins: the distinction a seller needs to check what was
// invented (§13.4).
const (
	OriginObserved  = "observed"  // recorded by whoever catalogued or imported the record
	OriginSupplied  = "supplied"  // the seller's own canonical text or figures
	OriginGenerated = "generated" // drafted by the server; unverified
)

// Draft tones.
var DraftTones = []string{"plain", "warm", "collector", "concise"}

// DraftRequest is the input of DraftListingCopy: exactly one of
// CandidateID and ItemID.
type DraftRequest struct {
	CandidateID string
	ItemID      string
	Tone        string
	MaxWords    int
	Persist     bool
}

// DraftFacts are the recorded facts copy is drafted from, each with its
// origin.
type DraftFacts struct {
	SourceID    string
	SourceKind  string // candidate | item
	Version     int
	Origin      string // origin of the text fields: observed (candidate) or supplied (item)
	Title       string
	Description string
	Category    string
	Room        string
	Condition   string
	Quantity    int
}

// CopySegment is one piece of drafted copy and where it came from.
type CopySegment struct {
	Part   string `json:"part"` // title | description
	Field  string `json:"field,omitempty"`
	Text   string `json:"text"`
	Origin string `json:"origin"`
}

// DraftCopy is drafted listing copy.
type DraftCopy struct {
	Title       string        `json:"title"`
	Description string        `json:"description"`
	Segments    []CopySegment `json:"segments"`
	Unverified  []string      `json:"unverified_claims"`
}

// DraftCreated is the result of DraftListingCopy.
type DraftCreated struct {
	SourceID      string    `json:"source_id"`
	SourceKind    string    `json:"source_kind"`
	SourceVersion int       `json:"source_version"`
	Copy          DraftCopy `json:"copy"`
	Persisted     bool      `json:"persisted"`
	DraftID       string    `json:"draft_id,omitempty"`
	Revision      int       `json:"revision,omitempty"`
}
