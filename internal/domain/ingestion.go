package domain

import "context"

// IngestionBackend holds the P5 candidate and draft writes (§13) beyond
// CreateCandidate, which is declared in backend.go.
//
// Every write runs, like CreateCandidate, in ONE transaction with its
// idempotency row and its plugin_event; none of them changes a canonical item
// (no item row, photo or status is written): what they create is reviewable
// and non-canonical until a seller promotes or approves it.
type IngestionBackend interface {
	// RunImport creates one import run for in.SaleID with one source record
	// per row and one candidate per valid row: a new_item candidate, or a
	// status_update candidate for a row that reports an item's status
	// (never a status event). A status row whose item is unknown, of
	// another tenant or of another sale is invalid. Unless
	// in.SkipInvalidRows, any invalid row fails the whole call with
	// ErrInvalidInput and nothing is written; with it, invalid rows keep
	// their source record and get no candidate, and a run with no valid row
	// still fails.
	RunImport(ctx context.Context, p Principal, w WriteMeta, in NewImport) (ImportCreated, WriteOutcome, error)

	// CreateStatusReport records a reported item status as a status_update
	// candidate (provenance run and record included) for seller review.
	CreateStatusReport(ctx context.Context, p Principal, w WriteMeta, in NewStatusReport) (StatusReportCreated, WriteOutcome, error)

	// AttachCandidateMedia attaches a private source asset (uploaded bytes,
	// stored under a path the backend chooses and deduplicated by content
	// hash, or an asset already stored) to a candidate awaiting review.
	AttachCandidateMedia(ctx context.Context, p Principal, w WriteMeta, in NewCandidateMedia) (CandidateMediaCreated, WriteOutcome, error)

	// CreateMediaCandidate creates an attach_media candidate proposing a
	// private source asset for a canonical item, which it never changes.
	CreateMediaCandidate(ctx context.Context, p Principal, w WriteMeta, in NewCandidateMedia) (CandidateMediaCreated, WriteOutcome, error)

	// ReviewCandidate rejects a candidate awaiting review, marks it a
	// duplicate of another candidate or an item, or reopens a rejected or
	// duplicate one (CheckCandidateReview decides), at in.ExpectedVersion;
	// the candidate's version moves by one. It never touches an item. A
	// reopened candidate counts against the open-candidate quota again and
	// is refused over it.
	ReviewCandidate(ctx context.Context, p Principal, w WriteMeta, in CandidateReview) (CandidateReviewed, WriteOutcome, error)

	// ImportTargets is the read a preview needs: it checks the sale and
	// reports which of itemIDs are items of the principal's tenant (an item
	// of another tenant is absent, exactly like a missing one). It writes
	// nothing.
	ImportTargets(ctx context.Context, p Principal, saleID string, itemIDs []string) (ImportTargets, error)

	// DraftListingCopy composes listing copy (ComposeListingCopy) from the
	// current facts of a candidate or an item and, when in.Persist, stores
	// it as an immutable draft revision. It never changes the item's public
	// text and never publishes.
	DraftListingCopy(ctx context.Context, p Principal, w WriteMeta, in DraftRequest) (DraftCreated, WriteOutcome, error)

	// StageExport snapshots the public fields and versions of items for an
	// outside channel, validates them (ValidateExportListing) and stores an
	// immutable export draft. It delivers, lists and publishes nothing.
	StageExport(ctx context.Context, p Principal, w WriteMeta, in NewExport) (ExportDraft, WriteOutcome, error)
}
