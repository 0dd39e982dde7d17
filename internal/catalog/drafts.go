package catalog

import "github.com/triunalabs/trovesnap/internal/domain"

// Draft and staging tools (spec §13.4–§13.5): they prepare reviewable
// records and never publish or deliver anything.

// DraftListingCopyInput is the input of trove_draft_listing_copy.
type DraftListingCopyInput struct {
	WriteCommon
	CandidateID string `json:"candidate_id,omitempty" jsonschema:"draft copy for this candidate; give exactly one of candidate_id or item_id" ts:"id=candidate"`
	ItemID      string `json:"item_id,omitempty" jsonschema:"draft copy for this item; give exactly one of candidate_id or item_id" ts:"id=item"`
	Tone        string `json:"tone,omitempty" jsonschema:"writing style (default plain)" ts:"enum=plain|warm|collector|concise"`
	MaxWords    int    `json:"max_words,omitempty" jsonschema:"upper bound on the description length (default 120)" ts:"min=20,max=400"`
	Persist     bool   `json:"persist,omitempty" jsonschema:"store the draft as a reviewable revision (default false: return it only)"`
}

// CopySegment is a piece of drafted copy and where it came from.
type CopySegment struct {
	Text   string `json:"text"`
	Origin string `json:"origin" jsonschema:"observed (from the record), supplied (by the seller) or generated (drafted here; unverified)"`
}

// DraftListingCopyOutput is the data of trove_draft_listing_copy.
type DraftListingCopyOutput struct {
	SourceID     string        `json:"source_id" jsonschema:"the candidate or item drafted for"`
	Title        string        `json:"title"`
	Description  string        `json:"description"`
	Segments     []CopySegment `json:"segments"`
	Persisted    bool          `json:"persisted"`
	DraftID      *string       `json:"draft_id" jsonschema:"the stored draft revision, when persist was true"`
	Published    bool          `json:"published" jsonschema:"always false"`
	Unverified   []string      `json:"unverified_claims" jsonschema:"generated statements a seller should check, e.g. maker or age"`
	ReviewStatus string        `json:"review_status"`
}

func draftListingCopy() Tool {
	return define[DraftListingCopyInput, DraftListingCopyOutput](Definition{
		Name: "trove_draft_listing_copy", Version: "1.0.0", Title: "Draft listing copy",
		Description: "Draft a public title and description for a candidate or an item from its recorded facts, marking each part as observed, seller-supplied or generated so a seller can check what was invented. Returns the draft, or with persist stores it as a reviewable draft revision. Never changes the item's public text and never publishes. Requires idempotency_key.",
		Tier:        TierCandidateWrite, Risk: RiskLowWrite, Permissions: []string{domain.PermItemCreateCandidate},
		Modes: bothModes, Idempotent: true, Persists: true, Approval: ApprovalNone, Status: StatusExperimental,
		Domain: DomainMapping{Service: "listing", Operation: "draft_listing_copy"},
		Impact: domain.EventImpact{Type: "draft_created", Material: true},
	}, nil)
}

// StageExportInput is the input of trove_stage_export.
type StageExportInput struct {
	WriteCommon
	Channel string   `json:"channel" jsonschema:"the outside channel to prepare listings for" ts:"enum=ebay|facebook_marketplace|etsy|csv_file"`
	ItemIDs []string `json:"item_ids" jsonschema:"1 to 50 items to stage" ts:"id=item,minitems=1,maxitems=50"`
}

// ExportItemPreview is one staged listing as the channel would receive it.
type ExportItemPreview struct {
	ItemID     string   `json:"item_id"`
	Version    int      `json:"version" jsonschema:"the item version the snapshot was taken at"`
	Title      string   `json:"title"`
	PriceCents *int64   `json:"price_cents" jsonschema:"the public price, when your role's projection includes prices"`
	PhotoCount int      `json:"photo_count"`
	Valid      bool     `json:"valid"`
	Warnings   []string `json:"warnings"`
}

// StageExportOutput is the data of trove_stage_export.
type StageExportOutput struct {
	ExportID            string              `json:"export_id"`
	Channel             string              `json:"channel"`
	Status              string              `json:"status" jsonschema:"staged"`
	Items               []ExportItemPreview `json:"items"`
	Warnings            []string            `json:"warnings"`
	ApprovalRequirement string              `json:"approval_requirement" jsonschema:"what delivery will need, e.g. explicit_human"`
	Delivered           bool                `json:"delivered" jsonschema:"always false"`
}

func stageExport() Tool {
	return define[StageExportInput, StageExportOutput](Definition{
		Name: "trove_stage_export", Version: "1.0.0", Title: "Stage an export",
		Description: "Stage up to 50 items for an outside channel (eBay, Facebook Marketplace, Etsy, CSV file): snapshots their public fields and versions, validates them against the channel's rules and returns a preview with warnings and the approval delivery will need. Never delivers, lists or publishes anything: delivery needs trove_propose_export_delivery and a seller's approval. Requires idempotency_key.",
		Tier:        TierCandidateWrite, Risk: RiskLowWrite, Permissions: []string{domain.PermExportStage},
		Modes: bothModes, Idempotent: true, Persists: true, Approval: ApprovalNone, Status: StatusExperimental,
		Domain: DomainMapping{Service: "exports", Operation: "stage_export"},
		Impact: domain.EventImpact{Type: "export_staged", Material: true},
	}, nil)
}
