package domain

import "time"

// Mode is fixed at start-up from trusted configuration; no tool argument can
// change it (spec §8.3).
type Mode string

// Modes of a server.
const (
	ModeMock Mode = "mock"
	ModeLive Mode = "live"
)

// Roles of a tenant membership.
const (
	RoleOwner     = "owner"
	RoleManager   = "manager"
	RoleCataloger = "cataloger"
	RolePricer    = "pricer"
	RoleCheckout  = "checkout"
)

// Tenant is an estate-sale company.
type Tenant struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// User is a person who may act for a tenant through a membership.
type User struct {
	ID          string `json:"id"`
	DisplayName string `json:"display_name"`
	Email       string `json:"email"`
}

// Membership binds a user to one tenant with one role.
type Membership struct {
	ID       string `json:"id"`
	TenantID string `json:"tenant_id"`
	UserID   string `json:"user_id"`
	Role     string `json:"role"`
}

// Sale statuses and visibilities.
const (
	SaleDraft     = "draft"
	SalePublished = "published"
	SaleLive      = "live"
	SaleClosed    = "closed"
	SaleArchived  = "archived"
)

// Sale is one estate sale: a location and a date range.
type Sale struct {
	ID            string `json:"id"`
	TenantID      string `json:"tenant_id"`
	Title         string `json:"title"`
	Status        string `json:"status"`
	Visibility    string `json:"visibility"` // private | public
	City          string `json:"city"`
	Region        string `json:"region"`
	PostalCode    string `json:"postal_code"`
	StreetAddress string `json:"street_address"`
	// AddressPolicy is "hidden_until" (reveal at AddressRevealAt), "always" or "never".
	AddressPolicy   string     `json:"address_policy"`
	AddressRevealAt *time.Time `json:"address_reveal_at"`
	StartsAt        time.Time  `json:"starts_at"`
	EndsAt          time.Time  `json:"ends_at"`
	Version         int        `json:"version"`
	CreatedAt       time.Time  `json:"created_at"`
	UpdatedAt       time.Time  `json:"updated_at"`
}

// Item statuses (the P6 lifecycle).
const (
	ItemDraft         = "draft"
	ItemReady         = "ready"
	ItemPublished     = "published"
	ItemOnHold        = "on_hold"
	ItemPendingPickup = "pending_pickup"
	ItemSold          = "sold"
	ItemWithdrawn     = "withdrawn"
	ItemArchived      = "archived"
)

// Item is a canonical inventory item. It carries private fields (internal
// pricing, appraisal flag, staff notes): no tool returns an Item as-is; tools
// project it.
type Item struct {
	ID                         string    `json:"id"`
	TenantID                   string    `json:"tenant_id"`
	SaleID                     string    `json:"sale_id"`
	Title                      string    `json:"title"`
	Description                string    `json:"description"`
	Category                   string    `json:"category"`
	Room                       string    `json:"room"`
	Status                     string    `json:"status"`
	PriceCents                 *int64    `json:"price_cents"`
	InternalPriceGuidanceCents *int64    `json:"internal_price_guidance_cents"`
	CostBasisCents             *int64    `json:"cost_basis_cents"`
	AppraisalFlag              bool      `json:"appraisal_flag"`
	StaffNotes                 string    `json:"staff_notes"`
	QRCode                     string    `json:"qr_code"`
	Photos                     []Photo   `json:"photos"`
	Version                    int       `json:"version"`
	CreatedAt                  time.Time `json:"created_at"`
	UpdatedAt                  time.Time `json:"updated_at"`
}

// Photo of an item. Unpublished photos never reach a public projection.
type Photo struct {
	ID         string `json:"id"`
	ItemID     string `json:"item_id"`
	StorageKey string `json:"storage_key"`
	Width      int    `json:"width"`
	Height     int    `json:"height"`
	Position   int    `json:"position"`
	Published  bool   `json:"published"`
}

// Candidate review statuses.
const (
	ReviewNeedsReview = "needs_review"
	ReviewApproved    = "approved"
	ReviewRejected    = "rejected"
	ReviewPromoted    = "promoted"
	// ReviewDuplicate: a reviewer found the candidate duplicates another
	// candidate or an item (DuplicateOf*); like rejected, it is closed.
	ReviewDuplicate = "duplicate"
)

// Candidate kinds.
const (
	CandidateNewItem = "new_item"
)

// Candidate is a reviewable, non-canonical proposal for inventory (P5).
type Candidate struct {
	ID                 string    `json:"id"`
	TenantID           string    `json:"tenant_id"`
	SaleID             string    `json:"sale_id"`
	Kind               string    `json:"kind"`
	Title              string    `json:"title"`
	Description        string    `json:"description"`
	Category           string    `json:"category"`
	Room               string    `json:"room"`
	Condition          string    `json:"condition"`
	Quantity           int       `json:"quantity"`
	SuppliedPriceCents *int64    `json:"supplied_price_cents"`
	Notes              string    `json:"notes"`
	ReviewStatus       string    `json:"review_status"`
	SourceDescriptorID string    `json:"source_descriptor_id"`
	ImportRunID        string    `json:"import_run_id"`
	SourceRecordID     string    `json:"source_record_id"`
	CreatedByClientID  string    `json:"created_by_client_id"`
	Version            int       `json:"version"`
	CreatedAt          time.Time `json:"created_at"`

	// The review's record (ReviewCandidate): what a duplicate duplicates,
	// and the reviewer's reason; empty (and left out of JSON, so the
	// fixtures' dataset does not change) when not reviewed.
	DuplicateOfCandidateID string `json:"duplicate_of_candidate_id,omitempty"`
	DuplicateOfItemID      string `json:"duplicate_of_item_id,omitempty"`
	ReviewReason           string `json:"review_reason,omitempty"`
}

// SourceDescriptor says where ingested data comes from (an MCP client, a CSV
// upload, a folder).
type SourceDescriptor struct {
	ID        string    `json:"id"`
	TenantID  string    `json:"tenant_id"`
	Kind      string    `json:"kind"` // mcp_client | csv_upload | manual
	ClientID  string    `json:"client_id"`
	Label     string    `json:"label"`
	CreatedAt time.Time `json:"created_at"`
}

// ImportRun is one ingestion batch.
type ImportRun struct {
	ID                 string    `json:"id"`
	TenantID           string    `json:"tenant_id"`
	SourceDescriptorID string    `json:"source_descriptor_id"`
	SaleID             string    `json:"sale_id"`
	Kind               string    `json:"kind"`
	Status             string    `json:"status"`
	RecordCount        int       `json:"record_count"`
	CreatedAt          time.Time `json:"created_at"`
}

// SourceRecord is one row or file of an import run, kept as data.
type SourceRecord struct {
	ID          string    `json:"id"`
	TenantID    string    `json:"tenant_id"`
	ImportRunID string    `json:"import_run_id"`
	Ordinal     int       `json:"ordinal"`
	PayloadHash string    `json:"payload_hash"`
	Payload     string    `json:"payload"`
	CreatedAt   time.Time `json:"created_at"`
}

// DemandSignal counts buyer interest; it never names a buyer.
type DemandSignal struct {
	TenantID    string    `json:"tenant_id"`
	SaleID      string    `json:"sale_id"`
	Category    string    `json:"category"`
	Saves       int       `json:"saves"`
	Searches    int       `json:"searches"`
	Follows     int       `json:"follows"`
	WindowStart time.Time `json:"window_start"`
	WindowEnd   time.Time `json:"window_end"`
}

// Client types and statuses (spec §7).
const (
	ClientActive    = "active"
	ClientPending   = "pending"
	ClientSuspended = "suspended"
	ClientRevoked   = "revoked"
)

// Client is a registered MCP client: a principal distinct from the actor it
// acts for. CredentialHash is never serialised.
type Client struct {
	ID                 string     `json:"id"`
	TenantID           string     `json:"tenant_id"`
	SourceConnectionID string     `json:"source_connection_id"`
	Name               string     `json:"name"`
	ClientType         string     `json:"client_type"`
	Status             string     `json:"status"`
	ActorID            string     `json:"actor_id"`
	AllowedToolGroups  []string   `json:"allowed_tool_groups"`
	ApprovalPolicyIDs  []string   `json:"approval_policy_ids"`
	TrustLevel         string     `json:"trust_level"`
	RiskClass          string     `json:"risk_class"`
	Demo               bool       `json:"demo"`
	CreatedBy          string     `json:"created_by"`
	CreatedAt          time.Time  `json:"created_at"`
	LastSeenAt         *time.Time `json:"last_seen_at"`
	// HasCredential says whether a credential was issued; the credential
	// (and its hash) never leave the store.
	HasCredential  bool   `json:"has_credential"`
	CredentialHash string `json:"-"`
	// OAuthClientID is the OAuth client (connector) the client is bound to,
	// if any: it is reached by that connector's access tokens only.
	OAuthClientID string `json:"oauth_client_id,omitempty"`
}

// Dataset is a complete seed for a store: what fixtures provide and what
// `trovesnap fixtures reset` restores.
type Dataset struct {
	Tenants           []Tenant           `json:"tenants"`
	Users             []User             `json:"users"`
	Memberships       []Membership       `json:"memberships"`
	Clients           []Client           `json:"clients"`
	Sales             []Sale             `json:"sales"`
	Items             []Item             `json:"items"`
	SourceDescriptors []SourceDescriptor `json:"source_descriptors"`
	ImportRuns        []ImportRun        `json:"import_runs"`
	SourceRecords     []SourceRecord     `json:"source_records"`
	Candidates        []Candidate        `json:"candidates"`
	DemandSignals     []DemandSignal     `json:"demand_signals"`
	// The read tools' records (issue: read tools).
	SaleScopes   []SaleScope   `json:"sale_scopes"`
	PriceChanges []PriceChange `json:"price_changes"`
	StatusEvents []StatusEvent `json:"status_events"`
	LabelBatches []LabelBatch  `json:"label_batches"`
}
