package domain

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Page is one page of a list with the cursor of the next (empty at the end).
type Page[T any] struct {
	Rows       []T
	NextCursor string
}

// Page size bounds for every list tool.
const (
	DefaultPageSize = 25
	MaxPageSize     = 100
)

// PageLimit applies the page-size policy of every list: 0 is the default
// size, more than the maximum is the maximum, a negative limit is invalid.
func PageLimit(n int) (int, error) {
	switch {
	case n < 0:
		return 0, Invalid("limit", "must not be negative")
	case n == 0:
		return DefaultPageSize, nil
	case n > MaxPageSize:
		return MaxPageSize, nil
	}
	return n, nil
}

// SaleQuery filters the sales of the principal's tenant.
type SaleQuery struct {
	Status string
	Limit  int
	After  *Keyset
}

// ItemQuery filters the items of the principal's tenant.
type ItemQuery struct {
	SaleID   string
	Status   string
	Room     string
	Category string // prefix match on the dotted category path
	Limit    int
	After    *Keyset
}

// CandidateQuery filters the candidates of the principal's tenant.
type CandidateQuery struct {
	SaleID       string
	ReviewStatus string
	Limit        int
	After        *Keyset
}

// DemandQuery filters demand signals.
type DemandQuery struct {
	SaleID   string
	Category string
}

// NewCandidate is the input of the P5 candidate chain.
type NewCandidate struct {
	SaleID             string `json:"sale_id"`
	Title              string `json:"title"`
	Description        string `json:"description,omitempty"`
	Category           string `json:"category,omitempty"`
	Room               string `json:"room,omitempty"`
	Condition          string `json:"condition,omitempty"`
	Quantity           int    `json:"quantity,omitempty"`
	SuppliedPriceCents *int64 `json:"supplied_price_cents,omitempty"`
	Notes              string `json:"notes,omitempty"`
}

// Validate checks what every Backend requires of a new candidate, before
// any storage is touched.
func (in NewCandidate) Validate() error {
	switch {
	case strings.TrimSpace(in.SaleID) == "":
		return Invalid("sale_id", "required")
	case strings.TrimSpace(in.Title) == "":
		return Invalid("title", "required")
	case in.Quantity < 0:
		return Invalid("quantity", "must not be negative")
	case in.SuppliedPriceCents != nil && *in.SuppliedPriceCents < 0:
		return Invalid("supplied_price_cents", "must not be negative")
	}
	return nil
}

// CandidateCreated is the result of the candidate chain (spec §13.1).
type CandidateCreated struct {
	CandidateID          string `json:"candidate_id"`
	ReviewStatus         string `json:"review_status"`
	CanonicalItemCreated bool   `json:"canonical_item_created"`
	SourceDescriptorID   string `json:"source_descriptor_id"`
	ImportRunID          string `json:"import_run_id"`
	SourceRecordID       string `json:"source_record_id"`
	SaleID               string `json:"sale_id"`
}

// IdempotencyKey scopes a persisted write: tenant + client + tool + tool major
// version + the caller's key. Fingerprint is the sha256 of the canonical input
// without the key and request id.
type IdempotencyKey struct {
	TenantID    string
	ClientID    string
	Tool        string
	ToolMajor   int
	Key         string
	Fingerprint string
}

// WriteMeta travels with every persisted write so that the Backend can commit
// the idempotency row and the call's plugin_event in the same transaction as
// the domain write. The Backend fills Event.Related and Event.Outcome.
//
// Started is when the call reached the gate: the Backend sets
// Event.Metrics.LatencyMS from it just before committing.
type WriteMeta struct {
	Idem    IdempotencyKey
	Event   Event
	Started time.Time
	// RateClass, when set, is the limit class the Backend counts the call
	// in, inside the write's own transaction and before anything else
	// (replays included); a full window refuses the write with
	// *RateLimitError and nothing is written. The gate sets it only for a
	// Backend that says it counts this way (the embedded store).
	RateClass string
}

// Check refuses write metadata that does not belong to p: an idempotency
// key is required, its scope is the caller's own (tenant, client) with a
// tool and an input fingerprint, and every write is audited under an event
// id. Both backends check it before they write.
func (w WriteMeta) Check(p Principal) error {
	k := w.Idem
	switch {
	case k.Key == "":
		return Invalid("idempotency_key", "required for a persisted write")
	case k.Fingerprint == "" || k.Tool == "":
		return fmt.Errorf("idempotency scope without tool or fingerprint: %w", ErrInvalidInput)
	case k.TenantID != p.TenantID || k.ClientID != p.Client.ID:
		return fmt.Errorf("idempotency scope is not the principal's: %w", ErrInvalidInput)
	case w.Event.ID == "":
		return fmt.Errorf("write without an event id: %w", ErrInvalidInput)
	}
	return nil
}

// WriteOutcome tells the gate whether a write ran or replayed a stored one.
type WriteOutcome struct {
	Replayed        bool
	OriginalEventID string
	Related         Related
}

// IdemState is the state of an idempotency key.
type IdemState int

// Idempotency key states.
const (
	IdemUnused IdemState = iota
	IdemReplay
	IdemConflict
)

// StoredResult is what the idempotency cache keeps of a first execution.
type StoredResult struct {
	Result  json.RawMessage `json:"result"`
	Related Related         `json:"related"`
	EventID string          `json:"event_id"`
}

// Backend is the P5/P6 domain surface plus the P7 records. The embedded store
// and the live Supabase backend implement it; the gate sees only this.
//
// Every method is tenant-scoped by the Principal: a reference to another
// tenant's record fails exactly like a missing one (a *RefError).
type Backend interface {
	Mode() Mode

	// Capability groups, each declared in its own file.
	ReadBackend
	IngestionBackend
	ApprovalBackend
	CursorOpener

	// ResolvePrincipal turns a client credential into a principal. An empty
	// credential means the demo client in mock mode and Anonymous in live
	// mode. A wrong, suspended or revoked credential is an error, never the
	// demo client.
	ResolvePrincipal(ctx context.Context, credential string) (Principal, error)
	// ResolveConnector turns a caller signed in through OAuth (its access
	// token already verified by the HTTP server) into the principal of the
	// client bound to its OAuth client and subject; none bound is
	// ErrClientNotRegistered. Fresh on every call, like ResolvePrincipal.
	ResolveConnector(ctx context.Context, c Connector) (Principal, error)

	ListSales(ctx context.Context, p Principal, q SaleQuery) (Page[Sale], error)
	ListItems(ctx context.Context, p Principal, q ItemQuery) (Page[Item], error)
	ListCandidates(ctx context.Context, p Principal, q CandidateQuery) (Page[Candidate], error)
	DemandSignals(ctx context.Context, p Principal, q DemandQuery) ([]DemandSignal, error)

	// CreateCandidate runs the P5 chain (source descriptor → import run →
	// source record → candidate) with the idempotency row and plugin_event in
	// one transaction.
	CreateCandidate(ctx context.Context, p Principal, w WriteMeta, in NewCandidate) (CandidateCreated, WriteOutcome, error)

	// AppendEvent records the plugin_event of a call that wrote nothing
	// (reads, blocks, failures, replays).
	AppendEvent(ctx context.Context, e Event) error

	// CheckIdempotency says whether a persisted write's key was already used:
	// with the same input (a replay), with other input (a conflict), or not.
	// The write itself re-checks under its transaction; this lets the gate
	// answer a replay before re-deciding approval for an action that ran.
	CheckIdempotency(ctx context.Context, k IdempotencyKey) (IdemState, error)

	// ConsumeRate counts one call of a limit class for the principal's
	// client, across every process sharing the store, unless the limit is
	// reached.
	ConsumeRate(ctx context.Context, p Principal, class string) (RateDecision, error)
}
