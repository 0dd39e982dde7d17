package live

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// Ingestion writes (§13) beyond CreateCandidate, in live mode: CSV and
// manual imports, status reports, listing-copy drafts and staged exports,
// each mirroring the embedded store (store/ingestion.go,
// store/ingestion_drafts.go) and each ONE database transaction with its
// idempotency row and its plugin_event (supabase migration 9).
//
// The pure rules, shared with the store — row checks and the source
// records' JSON (domain/ingestion_checks.go), listing copy
// (domain.ComposeListingCopy), channel rules (domain.StageListings) — run
// here, on the state a read RPC answers (mcp_import_targets,
// mcp_draft_facts, mcp_export_state; a used key replays or conflicts there
// already). The write RPC re-reads that state under its locks and refuses
// with stale_version if it moved meanwhile; then the state is read again
// and the rules re-run, so what is stored is exactly what the state it
// names gives, as when the store computes it inside its transaction. None
// of these writes an item, a photo or a status event.
//
// Media (AttachCandidateMedia, CreateMediaCandidate) are in media.go.

// ingStaleAttempts bounds how often a write re-reads the state it was
// prepared from when that state moves between the read and the write.
const ingStaleAttempts = 3

// ingState is the answer of a read that prepares a write: a replay of the
// write's key, or the state the write is computed from (one of Targets,
// Facts, Listings). The state is echoed back to the write verbatim.
type ingState struct {
	Replayed bool            `json:"replayed"`
	Result   json.RawMessage `json:"result"`
	Related  domain.Related  `json:"related"`
	EventID  string          `json:"event_id"`
	Targets  json.RawMessage `json:"targets"`
	Facts    json.RawMessage `json:"facts"`
	Listings json.RawMessage `json:"listings"`
}

// replay decodes the stored result of a replayed key.
func ingReplay[T any](b *Backend, fn string, st ingState) (T, domain.WriteOutcome, error) {
	var res T
	if len(st.Result) == 0 || json.Unmarshal(st.Result, &res) != nil {
		var zero T
		return zero, domain.WriteOutcome{}, b.unavailable(fn, errors.New("a replay without its stored result"))
	}
	return res, domain.WriteOutcome{Replayed: true, OriginalEventID: st.EventID, Related: st.Related.Normalized()}, nil
}

// ingPreparedWrite is a write computed from state: the read RPC state
// (keyArgs and the read's own stateArgs) answers a replay of the key
// or the state; prepare computes from that the write's argument param; the
// write RPC stores it with its idempotency row and event if the state has
// not moved since, and refuses with stale_version otherwise, when the
// whole is tried again (ingStaleAttempts in all).
type ingPreparedWrite[T any] struct {
	state     string
	stateArgs map[string]any
	write     string
	param     string
	prepare   func(ingState) (any, error)
	// written says whether the write's answer carries its result; missing
	// says what an answer without it lacks (persist).
	written func(T) bool
	missing string
}

func (pw ingPreparedWrite[T]) run(ctx context.Context, b *Backend, p domain.Principal, w domain.WriteMeta) (T, domain.WriteOutcome, error) {
	var zero T
	tok, err := b.writeToken(p, w)
	if err != nil {
		return zero, domain.WriteOutcome{}, err
	}
	sargs := keyArgs(w)
	maps.Copy(sargs, pw.stateArgs)
	for attempt := 1; ; attempt++ {
		var st ingState
		if err := b.callClient(ctx, tok, pw.state, sargs, &st); err != nil {
			return zero, domain.WriteOutcome{}, err
		}
		if st.Replayed {
			return ingReplay[T](b, pw.state, st)
		}
		arg, err := pw.prepare(st)
		if err != nil {
			return zero, domain.WriteOutcome{}, err
		}
		wargs := writeArgs(w)
		wargs[pw.param] = arg
		res, out, err := persist(ctx, b, tok, pw.write, wargs, pw.written, pw.missing)
		if errors.Is(err, domain.ErrStaleVersion) && attempt < ingStaleAttempts {
			continue
		}
		return res, out, err
	}
}

// ingTargets is what mcp_import_targets reports of the items an import's
// status rows name: the ones the caller sees, and the ids of its tenant's
// items in sales outside a sale-scoped member's assignment.
type ingTargets struct {
	Items     map[string]domain.ItemRef `json:"items"`
	Elsewhere []string                  `json:"elsewhere"`
}

// ingItemIDs are the distinct ids the status rows of an import name that
// are shaped like item ids (no other id can exist), in order.
func ingItemIDs(rows []domain.ImportRow) []string {
	var ids []string
	for _, r := range rows {
		if r.Kind == domain.CandidateStatusUpdate && domain.ValidID(domain.PrefixItem, r.ItemID) {
			ids = append(ids, r.ItemID)
		}
	}
	return nonNil(slices.Compact(slices.Sorted(slices.Values(ids))))
}

// ImportTargets implements domain.IngestionBackend: a read (the CSV
// preview's) that checks the sale and reports which of itemIDs are items
// of the principal's tenant in a sale it may see.
func (b *Backend) ImportTargets(ctx context.Context, p domain.Principal, saleID string, itemIDs []string) (domain.ImportTargets, error) {
	out := domain.ImportTargets{SaleID: saleID, Items: map[string]domain.ItemRef{}}
	tok, err := b.tokenOf(p)
	if err != nil {
		return out, err
	}
	if len(itemIDs) > domain.MaxImportRows {
		return out, domain.Invalid("item_id", "too many items")
	}
	var ids []string
	for _, id := range itemIDs {
		if domain.ValidID(domain.PrefixItem, id) {
			ids = append(ids, id)
		}
	}
	var st ingState
	if err := b.callClient(ctx, tok, "mcp_import_targets", map[string]any{"p_sale_id": saleID,
		"p_item_ids": nonNil(ids)}, &st); err != nil {
		return out, err
	}
	t, err := b.ingDecodeTargets(st)
	if err != nil {
		return out, err
	}
	for id, it := range t.Items {
		out.Items[id] = it
	}
	return out, nil
}

func (b *Backend) ingDecodeTargets(st ingState) (ingTargets, error) {
	var t ingTargets
	if len(st.Targets) == 0 || json.Unmarshal(st.Targets, &t) != nil || t.Items == nil {
		return t, b.unavailable("mcp_import_targets", errors.New("answer without the targets"))
	}
	return t, nil
}

// ingRowArg is one row of an import as mcp_run_import takes it: the
// source record's payload, whether the row gets a candidate and, if so,
// the candidate's fields; a status row names its item and claim.
type ingRowArg struct {
	Row            int              `json:"row"`
	Kind           string           `json:"kind"`
	Valid          bool             `json:"valid"`
	Payload        string           `json:"payload"`
	ItemID         string           `json:"item_id,omitempty"`
	ReportedStatus string           `json:"reported_status,omitempty"`
	EffectiveAt    *time.Time       `json:"effective_at,omitempty"`
	Candidate      *ingCandidateArg `json:"candidate,omitempty"`
}

type ingCandidateArg struct {
	Title              string `json:"title"`
	Description        string `json:"description"`
	Category           string `json:"category"`
	Room               string `json:"room"`
	Condition          string `json:"condition"`
	Quantity           int    `json:"quantity"`
	SuppliedPriceCents *int64 `json:"supplied_price_cents"`
	Notes              string `json:"notes"`
}

// RunImport implements domain.IngestionBackend, like the store: the rows
// checked here first (a strict import with an invalid row writes nothing),
// the sale and the status rows' items checked against the database, then
// ONE transaction writes the run, its details, a source record per row and
// a candidate per valid row (mcp_run_import).
func (b *Backend) RunImport(ctx context.Context, p domain.Principal, w domain.WriteMeta, in domain.NewImport) (domain.ImportCreated, domain.WriteOutcome, error) {
	var zero domain.ImportCreated
	checked, err := domain.CheckImport(in)
	if err != nil {
		return zero, domain.WriteOutcome{}, err
	}
	if in.ContentHash != "" && (!strings.HasPrefix(in.ContentHash, "sha256:") || len(in.ContentHash) != 71) {
		return zero, domain.WriteOutcome{}, fmt.Errorf("live: import content hash: %w", domain.ErrInvalidInput)
	}
	res, out, err := ingPreparedWrite[domain.ImportCreated]{
		state: "mcp_import_targets", write: "mcp_run_import", param: "p_import",
		stateArgs: map[string]any{"p_sale_id": in.SaleID, "p_item_ids": ingItemIDs(checked.Rows)},
		prepare: func(st ingState) (any, error) {
			t, err := b.ingDecodeTargets(st)
			if err != nil {
				return nil, err
			}
			imp, err := ingPrepareImport(in, checked, t)
			if err != nil {
				return nil, err
			}
			imp["targets"], imp["mapping"], imp["source_label"] = st.Targets, checked.Mapping, checked.Label
			return imp, nil
		},
		written: func(r domain.ImportCreated) bool { return r.ImportRunID != "" }, missing: "answer without a run",
	}.run(ctx, b, p, w)
	if err == nil && !out.Replayed && in.Progress != nil {
		in.Progress(len(checked.Rows), len(checked.Rows))
	}
	return res, out, err
}

// ingPrepareImport applies what the database said of the status rows'
// items to the checked rows (as the store does inside its transaction),
// refuses what the store refuses, and builds mcp_run_import's input.
func ingPrepareImport(in domain.NewImport, checked domain.CheckedImport, t ingTargets) (map[string]any, error) {
	// A shallow copy: AddError never writes into the issues it shares with
	// checked.Rows, which a retry starts from again.
	rows := slices.Clone(checked.Rows)
	for i := range rows {
		r := &rows[i]
		if r.Kind == domain.CandidateStatusUpdate && r.ItemID != "" {
			it, seen := t.Items[r.ItemID]
			switch {
			case slices.Contains(t.Elsewhere, r.ItemID):
				// In a sale outside the member's assignment: the import's
				// own sale is assigned, so this is another sale.
				r.MarkItemInOtherSale()
			case !seen:
				r.MarkItemUnknown()
			case it.SaleID != in.SaleID:
				r.MarkItemInOtherSale()
			}
		}
	}
	if _, err := domain.CountValidImportRows(checked.Field, rows, in.SkipInvalidRows); err != nil {
		return nil, err
	}
	args := make([]ingRowArg, len(rows))
	rejected := []domain.RowIssue{}
	var buf bytes.Buffer
	for i, r := range rows {
		payload, err := domain.EncodeSourcePayload(&buf, r)
		if err != nil {
			return nil, fmt.Errorf("live: import: encode row %d: %w", r.Row, domain.ErrInvalidInput)
		}
		a := ingRowArg{Row: r.Row, Kind: r.Kind, Valid: r.Valid(), Payload: string(payload)}
		if r.Kind == domain.CandidateStatusUpdate {
			if domain.ValidID(domain.PrefixItem, r.ItemID) {
				a.ItemID = r.ItemID
			}
			a.ReportedStatus, a.EffectiveAt = r.ReportedStatus, r.EffectiveAt
		}
		if a.Valid {
			a.Candidate = ingCandidate(r)
		} else {
			for _, is := range r.Issues {
				if is.Severity == domain.SeverityError && len(rejected) < domain.MaxListedIssues {
					rejected = append(rejected, is)
				}
			}
		}
		args[i] = a
	}
	return map[string]any{"sale_id": in.SaleID, "kind": in.Kind, "content_hash": in.ContentHash,
		"content_bytes": max(in.ContentBytes, 0), "skip_invalid_rows": in.SkipInvalidRows, "rows": args,
		"rejected_rows": rejected}, nil
}

// ingCandidate is the candidate of a valid import row
// (domain.ImportRowCandidate) as mcp_run_import takes it.
func ingCandidate(r domain.ImportRow) *ingCandidateArg {
	c := domain.ImportRowCandidate(r)
	return &ingCandidateArg{Title: c.Title, Description: c.Description, Category: c.Category, Room: c.Room,
		Condition: c.Condition, Quantity: c.Quantity, SuppliedPriceCents: c.SuppliedPriceCents, Notes: c.Notes}
}

// CreateStatusReport implements domain.IngestionBackend: the report as a
// status_update candidate with its provenance run and record, and what the
// item was when it was recorded (mcp_create_status_report). The item is
// never changed.
func (b *Backend) CreateStatusReport(ctx context.Context, p domain.Principal, w domain.WriteMeta, in domain.NewStatusReport) (domain.StatusReportCreated, domain.WriteOutcome, error) {
	var zero domain.StatusReportCreated
	in, payload, err := domain.CheckStatusReport(in)
	if err != nil {
		return zero, domain.WriteOutcome{}, err
	}
	tok, err := b.writeToken(p, w)
	if err != nil {
		return zero, domain.WriteOutcome{}, err
	}
	wargs := writeArgs(w)
	wargs["p_report"] = map[string]any{"item_id": in.ItemID, "reported_status": in.ReportedStatus, "effective_at": in.EffectiveAt,
		"source": in.Source, "notes": in.Notes, "payload": string(payload)}
	return persist(ctx, b, tok, "mcp_create_status_report", wargs,
		func(r domain.StatusReportCreated) bool { return r.CandidateID != "" }, "answer without a candidate")
}

// ingFacts is the wire shape of domain.DraftFacts (mcp_draft_facts).
type ingFacts struct {
	SourceID    string `json:"source_id"`
	SourceKind  string `json:"source_kind"`
	Version     int    `json:"version"`
	Origin      string `json:"origin"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Category    string `json:"category"`
	Room        string `json:"room"`
	Condition   string `json:"condition"`
	Quantity    int    `json:"quantity"`
}

// DraftListingCopy implements domain.IngestionBackend: the copy composed
// here from the facts the database answers (mcp_draft_facts), stored — as
// an immutable revision when in.Persist — only if those facts are still
// the record's under its row lock (mcp_draft_listing_copy). It never
// changes the item's public text and never publishes.
func (b *Backend) DraftListingCopy(ctx context.Context, p domain.Principal, w domain.WriteMeta, in domain.DraftRequest) (domain.DraftCreated, domain.WriteOutcome, error) {
	var zero domain.DraftCreated
	in, err := domain.CheckDraftRequest(in)
	if err != nil {
		return zero, domain.WriteOutcome{}, err
	}
	return ingPreparedWrite[domain.DraftCreated]{
		state: "mcp_draft_facts", write: "mcp_draft_listing_copy", param: "p_draft",
		stateArgs: map[string]any{"p_candidate_id": in.CandidateID, "p_item_id": in.ItemID},
		prepare: func(st ingState) (any, error) {
			var f ingFacts
			if len(st.Facts) == 0 || json.Unmarshal(st.Facts, &f) != nil || f.SourceID == "" || f.Version < 1 {
				return nil, b.unavailable("mcp_draft_facts", errors.New("answer without the facts"))
			}
			draft := domain.ComposeListingCopy(domain.DraftFacts{SourceID: f.SourceID, SourceKind: f.SourceKind, Version: f.Version,
				Origin: f.Origin, Title: f.Title, Description: f.Description, Category: f.Category, Room: f.Room,
				Condition: f.Condition, Quantity: f.Quantity}, in.Tone, in.MaxWords)
			return map[string]any{"candidate_id": in.CandidateID, "item_id": in.ItemID, "tone": in.Tone,
				"max_words": in.MaxWords, "persist": in.Persist, "facts": st.Facts, "copy": draft}, nil
		},
		written: func(r domain.DraftCreated) bool { return r.SourceID != "" }, missing: "answer without the draft",
	}.run(ctx, b, p, w)
}

// StageExport implements domain.IngestionBackend: the items' public
// snapshots (mcp_export_state) validated here for the channel, then stored
// as an immutable staged export if they are still the items' under a share
// lock (mcp_stage_export). It delivers, lists and publishes nothing.
func (b *Backend) StageExport(ctx context.Context, p domain.Principal, w domain.WriteMeta, in domain.NewExport) (domain.ExportDraft, domain.WriteOutcome, error) {
	var zero domain.ExportDraft
	if err := domain.CheckNewExport(in); err != nil {
		return zero, domain.WriteOutcome{}, err
	}
	return ingPreparedWrite[domain.ExportDraft]{
		state: "mcp_export_state", write: "mcp_stage_export", param: "p_export",
		stateArgs: map[string]any{"p_item_ids": in.ItemIDs},
		prepare: func(st ingState) (any, error) {
			var listings []domain.ExportListing
			if len(st.Listings) == 0 || json.Unmarshal(st.Listings, &listings) != nil || len(listings) != len(in.ItemIDs) {
				return nil, b.unavailable("mcp_export_state", errors.New("answer without one snapshot per item"))
			}
			res := domain.StageListings(in.Channel, listings)
			return map[string]any{"channel": in.Channel, "item_ids": in.ItemIDs, "listings": res.Listings,
				"valid_count": res.ValidCount, "warnings": res.Warnings}, nil
		},
		written: func(r domain.ExportDraft) bool { return r.ExportID != "" }, missing: "answer without an export",
	}.run(ctx, b, p, w)
}
