package catalog

import (
	"context"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// CreateCandidateInput is the input of trove_create_candidate.
type CreateCandidateInput struct {
	WriteCommon
	SaleID             string `json:"sale_id" jsonschema:"the sale the candidate belongs to" ts:"id=sale"`
	Title              string `json:"title" jsonschema:"short title as observed, e.g. Pioneer SX-series stereo receiver" ts:"min=1,max=200"`
	Description        string `json:"description,omitempty" jsonschema:"what was observed" ts:"max=4000"`
	Category           string `json:"category,omitempty" jsonschema:"dotted category path, e.g. electronics.audio.receiver" ts:"max=128,pattern=^[a-z0-9_]+(\\.[a-z0-9_]+)*$"`
	Room               string `json:"room,omitempty" jsonschema:"room where the item is, e.g. den" ts:"max=64,pattern=^[a-z0-9_]{1,64}$"`
	Condition          string `json:"condition,omitempty" jsonschema:"condition as observed" ts:"enum=new|excellent|good|fair|poor|for_parts"`
	Quantity           int    `json:"quantity,omitempty" jsonschema:"how many identical pieces (default 1)" ts:"min=1,max=10000"`
	SuppliedPriceCents *int64 `json:"supplied_price_cents,omitempty" jsonschema:"a price suggestion in cents; a pricer decides" ts:"min=0,max=100000000"`
	Notes              string `json:"notes,omitempty" jsonschema:"reviewer notes" ts:"max=4000"`
}

func createCandidate() Tool {
	return define(Definition{
		Name: "trove_create_candidate", Version: "1.0.0", Title: "Create inventory candidate",
		Description: "Create an inventory candidate for seller review (never a canonical item). Runs the P5 chain: source descriptor, import run, source record, candidate. Requires idempotency_key: retrying with the same key and input returns the original result.",
		Tier:        TierCandidateWrite, Risk: RiskLowWrite, Permissions: []string{domain.PermItemCreateCandidate},
		Modes: bothModes, Idempotent: true, Persists: true, Approval: ApprovalNone, Status: StatusActive,
		Domain: DomainMapping{Service: "ingestion", Operation: "create_inventory_candidate"},
		Impact: domain.EventImpact{Type: "candidate_created", Material: true},
	}, func(ctx context.Context, env Env, in CreateCandidateInput) (domain.CandidateCreated, Effects, error) {
		res, outcome, err := env.Backend.CreateCandidate(ctx, env.Principal, env.Write, domain.NewCandidate{
			SaleID: in.SaleID, Title: in.Title, Description: in.Description, Category: in.Category, Room: in.Room,
			Condition: in.Condition, Quantity: in.Quantity, SuppliedPriceCents: in.SuppliedPriceCents, Notes: in.Notes,
		})
		if err != nil {
			return domain.CandidateCreated{}, Effects{}, err
		}
		return res, Effects{
			Related: outcome.Related,
			Outcome: outcome,
		}, nil
	})
}

// Limits on media and manual imports (spec §29.3).
const (
	// MaxImageBase64 is the longest image_base64: 8 MiB of image bytes.
	MaxImageBase64 = 11184812
	// mediaArgumentBytes bounds the arguments of a tool taking an image body.
	mediaArgumentBytes = 12 << 20
)

// CandidateMediaResult is the data of the media candidate tools: the asset
// stays private source media until a reviewed action publishes it.
type CandidateMediaResult struct {
	CandidateID          string `json:"candidate_id"`
	AssetID              string `json:"asset_id"`
	ContentHash          string `json:"content_hash" jsonschema:"sha256: of the image bytes"`
	MimeType             string `json:"mime_type"`
	Width                int    `json:"width"`
	Height               int    `json:"height"`
	ReviewStatus         string `json:"review_status"`
	Private              bool   `json:"private" jsonschema:"always true: candidate media is never public"`
	CanonicalItemChanged bool   `json:"canonical_item_changed" jsonschema:"always false"`
}

// AttachCandidatePhotoInput is the input of trove_attach_candidate_photo.
type AttachCandidatePhotoInput struct {
	WriteCommon
	CandidateID string `json:"candidate_id" jsonschema:"the candidate the photo documents" ts:"id=candidate"`
	ImageBase64 string `json:"image_base64,omitempty" jsonschema:"the image bytes, base64 (at most 8 MiB decoded); give exactly one of image_base64 or asset_id" ts:"max=11184812,pattern=^[A-Za-z0-9+/]*={0,2}$"`
	AssetID     string `json:"asset_id,omitempty" jsonschema:"a durable source asset already uploaded to TroveSnap; give exactly one of image_base64 or asset_id" ts:"id=asset"`
	MimeType    string `json:"mime_type,omitempty" jsonschema:"a hint; the server checks the bytes" ts:"enum=image/jpeg|image/png|image/webp|image/heic"`
	Caption     string `json:"caption,omitempty" jsonschema:"what the photo shows, as observed" ts:"max=200"`
}

func attachCandidatePhoto() Tool {
	return define[AttachCandidatePhotoInput, CandidateMediaResult](Definition{
		Name: "trove_attach_candidate_photo", Version: "1.0.0", Title: "Attach a photo to a candidate",
		Description: "Attach a photo to an inventory candidate as private source media for seller review: either the image bytes (base64, at most 8 MiB) or a durable source asset already in TroveSnap. Never attaches anything to a canonical item, never publishes, and never reads a local path or fetches a URL. Checks MIME type, size and decoding, and records a content hash. Requires idempotency_key.",
		Tier:        TierCandidateWrite, Risk: RiskLowWrite, Permissions: []string{domain.PermItemCreateCandidate},
		Modes: bothModes, Idempotent: true, Persists: true, Approval: ApprovalNone, Status: StatusExperimental,
		Domain:           DomainMapping{Service: "ingestion", Operation: "attach_candidate_media"},
		MaxArgumentBytes: mediaArgumentBytes,
		Impact:           domain.EventImpact{Type: "candidate_media_attached", Material: true},
	}, nil)
}

// ManualImportRow is one candidate-like row of a manual import.
type ManualImportRow struct {
	ExternalRef        string `json:"external_ref,omitempty" jsonschema:"your own row reference, kept as provenance" ts:"max=128"`
	Title              string `json:"title" jsonschema:"short title as observed" ts:"min=1,max=200"`
	Description        string `json:"description,omitempty" jsonschema:"what was observed" ts:"max=4000"`
	Category           string `json:"category,omitempty" jsonschema:"dotted category path, e.g. kitchen.cookware" ts:"max=128,pattern=^[a-z0-9_]+(\\.[a-z0-9_]+)*$"`
	Room               string `json:"room,omitempty" jsonschema:"room where the item is" ts:"max=64,pattern=^[a-z0-9_]{1,64}$"`
	Condition          string `json:"condition,omitempty" jsonschema:"condition as observed" ts:"enum=new|excellent|good|fair|poor|for_parts"`
	Quantity           int    `json:"quantity,omitempty" jsonschema:"how many identical pieces (default 1)" ts:"min=1,max=10000"`
	SuppliedPriceCents *int64 `json:"supplied_price_cents,omitempty" jsonschema:"a price suggestion in cents; a pricer decides" ts:"min=0,max=100000000"`
	Notes              string `json:"notes,omitempty" jsonschema:"reviewer notes" ts:"max=4000"`
}

// RunManualImportInput is the input of trove_run_manual_import.
type RunManualImportInput struct {
	WriteCommon
	SaleID      string            `json:"sale_id" jsonschema:"the sale every row belongs to" ts:"id=sale"`
	SourceLabel string            `json:"source_label,omitempty" jsonschema:"where the rows came from, e.g. garage walk-through notes" ts:"max=200"`
	Rows        []ManualImportRow `json:"rows" jsonschema:"1 to 500 rows; each becomes one source record and one candidate" ts:"minitems=1,maxitems=500"`
}

// ImportResult is the data of the tools that create an import run.
type ImportResult struct {
	ImportRunID              string     `json:"import_run_id"`
	SourceRecordCount        int        `json:"source_record_count"`
	CandidateIDs             []string   `json:"candidate_ids"`
	StatusUpdateCandidateIDs []string   `json:"status_update_candidate_ids"`
	RejectedRows             []RowIssue `json:"rejected_rows"`
	ReviewStatus             string     `json:"review_status" jsonschema:"needs_review"`
	CanonicalItemsCreated    int        `json:"canonical_items_created" jsonschema:"always 0"`
	ItemStatusesChanged      int        `json:"item_statuses_changed" jsonschema:"always 0"`
}

// RowIssue is a problem with one input row.
type RowIssue struct {
	Row     int    `json:"row" jsonschema:"1-based row number (CSV: data row, after the header)"`
	Column  string `json:"column"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

func runManualImport() Tool {
	return define[RunManualImportInput, ImportResult](Definition{
		Name: "trove_run_manual_import", Version: "1.0.0", Title: "Run a manual import",
		Description: "Import up to 500 observed items for one sale in one run: creates one import run, a source record per row and a candidate per valid row, all for seller review. Never creates or changes canonical items; invalid rows are reported, not guessed. Requires idempotency_key: a retry returns the original run.",
		Tier:        TierCandidateWrite, Risk: RiskLowWrite, Permissions: []string{domain.PermItemCreateCandidate},
		Modes: bothModes, Idempotent: true, Persists: true, Approval: ApprovalNone, Status: StatusExperimental,
		Domain: DomainMapping{Service: "ingestion", Operation: "run_manual_import"},
		Impact: domain.EventImpact{Type: "candidate_created", Material: true},
	}, nil)
}

// CreateStatusUpdateCandidateInput is the input of trove_create_status_update_candidate.
type CreateStatusUpdateCandidateInput struct {
	WriteCommon
	ItemID         string `json:"item_id" jsonschema:"the item whose status was reported" ts:"id=item"`
	ReportedStatus string `json:"reported_status" jsonschema:"the status the source reports" ts:"enum=on_hold|pending_pickup|sold|withdrawn"`
	EffectiveAt    string `json:"effective_at" jsonschema:"when the reported change happened (RFC 3339, e.g. 2026-06-20T15:04:05Z)" ts:"max=35,pattern=^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,9})?(Z|[+-][0-9]{2}:[0-9]{2})$"`
	Source         string `json:"source" jsonschema:"who reported it" ts:"enum=seller_confirmed|staff_report|spreadsheet|external_marketplace|buyer_message"`
	Notes          string `json:"notes,omitempty" jsonschema:"what the source said, as data" ts:"max=4000"`
}

// StatusUpdateCandidateResult is the data of trove_create_status_update_candidate.
type StatusUpdateCandidateResult struct {
	CandidateID       string `json:"candidate_id"`
	Kind              string `json:"kind" jsonschema:"status_update"`
	ItemID            string `json:"item_id"`
	ReportedStatus    string `json:"reported_status"`
	ReviewStatus      string `json:"review_status" jsonschema:"needs_review"`
	ItemStatusChanged bool   `json:"item_status_changed" jsonschema:"always false"`
}

func createStatusUpdateCandidate() Tool {
	return define[CreateStatusUpdateCandidateInput, StatusUpdateCandidateResult](Definition{
		Name: "trove_create_status_update_candidate", Version: "1.0.0", Title: "Report an item status for review",
		Description: "Record a reported item status (on hold, pending pickup, sold, withdrawn) as a status_update candidate for seller review. Never changes the item's status, never records a sale price or payment: a reviewed candidate becomes a status event only through a proposal and approval. Requires idempotency_key.",
		Tier:        TierCandidateWrite, Risk: RiskLowWrite, Permissions: []string{domain.PermItemCreateCandidate},
		Modes: bothModes, Idempotent: true, Persists: true, Approval: ApprovalNone, Status: StatusExperimental,
		Domain: DomainMapping{Service: "ingestion", Operation: "create_status_update_candidate"},
		Impact: domain.EventImpact{Type: "candidate_created", Material: true},
	}, nil)
}

// CreateMediaAttachmentCandidateInput is the input of trove_create_media_attachment_candidate.
type CreateMediaAttachmentCandidateInput struct {
	WriteCommon
	ItemID      string `json:"item_id" jsonschema:"the canonical item the media is proposed for" ts:"id=item"`
	ImageBase64 string `json:"image_base64,omitempty" jsonschema:"the image bytes, base64 (at most 8 MiB decoded); give exactly one of image_base64 or asset_id" ts:"max=11184812,pattern=^[A-Za-z0-9+/]*={0,2}$"`
	AssetID     string `json:"asset_id,omitempty" jsonschema:"a durable source asset already uploaded to TroveSnap; give exactly one of image_base64 or asset_id" ts:"id=asset"`
	MimeType    string `json:"mime_type,omitempty" jsonschema:"a hint; the server checks the bytes" ts:"enum=image/jpeg|image/png|image/webp|image/heic"`
	Caption     string `json:"caption,omitempty" jsonschema:"what the photo shows, as observed" ts:"max=200"`
}

func createMediaAttachmentCandidate() Tool {
	return define[CreateMediaAttachmentCandidateInput, CandidateMediaResult](Definition{
		Name: "trove_create_media_attachment_candidate", Version: "1.0.0", Title: "Propose media for an item",
		Description: "Create an attach_media candidate proposing a photo for an existing canonical item, for seller review: either the image bytes (base64, at most 8 MiB) or a durable source asset. The photo stays private and is never attached to the item or published by this tool; never reads a local path or fetches a URL. Requires idempotency_key.",
		Tier:        TierCandidateWrite, Risk: RiskLowWrite, Permissions: []string{domain.PermItemCreateCandidate},
		Modes: bothModes, Idempotent: true, Persists: true, Approval: ApprovalNone, Status: StatusExperimental,
		Domain:           DomainMapping{Service: "ingestion", Operation: "create_media_attachment_candidate"},
		MaxArgumentBytes: mediaArgumentBytes,
		Impact:           domain.EventImpact{Type: "candidate_created", Material: true},
	}, nil)
}
