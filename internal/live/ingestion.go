package live

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
// The pure rules — row checks, the source records' JSON, listing copy
// (domain.ComposeListingCopy), channel rules (domain.ValidateExportListing)
// — run here, on the state a read RPC answers (mcp_import_targets,
// mcp_draft_facts, mcp_export_state; a used key replays or conflicts there
// already). The write RPC re-reads that state under its locks and refuses
// with stale_version if it moved meanwhile; then the state is read again
// and the rules re-run, so what is stored is exactly what the state it
// names gives, as when the store computes it inside its transaction. None
// of these writes an item, a photo or a status event.
//
// Media (AttachCandidateMedia, CreateMediaCandidate) stay unavailable in
// live mode (unavailable.go): see there.

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

// ingStateArgs are the arguments of a read that prepares the write w.
func ingStateArgs(h string, w domain.WriteMeta) map[string]any {
	return map[string]any{"p_credential_hash": h, "p_tool": w.Idem.Tool, "p_tool_major": w.Idem.ToolMajor,
		"p_key": w.Idem.Key, "p_fingerprint": w.Idem.Fingerprint}
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
	h, err := b.hashOf(p)
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
	if err := b.call(ctx, "mcp_import_targets", map[string]any{"p_credential_hash": h, "p_sale_id": saleID,
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
	field := "rows"
	switch in.Kind {
	case domain.ImportManual:
	case domain.ImportCSV:
		field = "csv_text"
	default:
		return zero, domain.WriteOutcome{}, fmt.Errorf("live: import kind %q: %w", in.Kind, domain.ErrInvalidInput)
	}
	if !domain.ValidID(domain.PrefixSale, in.SaleID) {
		return zero, domain.WriteOutcome{}, domain.Invalid("sale_id", "required: the sale every row belongs to")
	}
	if len(in.Rows) == 0 {
		return zero, domain.WriteOutcome{}, domain.Invalid(field, "no rows to import")
	}
	if len(in.Rows) > domain.MaxImportRows {
		return zero, domain.WriteOutcome{}, domain.Invalid(field, fmt.Sprintf("more than %d rows in one import", domain.MaxImportRows))
	}
	rows := make([]domain.ImportRow, len(in.Rows))
	for i, r := range in.Rows {
		rows[i] = ingCheckRow(r)
	}
	if !in.SkipInvalidRows {
		if err := ingRowsError(field, rows); err != nil {
			return zero, domain.WriteOutcome{}, err
		}
	}
	label := domain.Truncate(domain.CleanLine(in.SourceLabel), 200)
	if in.ContentHash != "" && (!strings.HasPrefix(in.ContentHash, "sha256:") || len(in.ContentHash) != 71) {
		return zero, domain.WriteOutcome{}, fmt.Errorf("live: import content hash: %w", domain.ErrInvalidInput)
	}
	h, err := b.hashOf(p)
	if err != nil {
		return zero, domain.WriteOutcome{}, err
	}
	if err := checkWriteMeta(p, w); err != nil {
		return zero, domain.WriteOutcome{}, err
	}
	sargs := ingStateArgs(h, w)
	sargs["p_sale_id"], sargs["p_item_ids"] = in.SaleID, ingItemIDs(rows)
	for attempt := 1; ; attempt++ {
		var st ingState
		if err := b.call(ctx, "mcp_import_targets", sargs, &st); err != nil {
			return zero, domain.WriteOutcome{}, err
		}
		if st.Replayed {
			return ingReplay[domain.ImportCreated](b, "mcp_import_targets", st)
		}
		t, err := b.ingDecodeTargets(st)
		if err != nil {
			return zero, domain.WriteOutcome{}, err
		}
		imp, err := ingPrepareImport(field, in, rows, t)
		if err != nil {
			return zero, domain.WriteOutcome{}, err
		}
		imp["targets"], imp["mapping"], imp["source_label"] = st.Targets, ingNonNil(in.Mapping), label
		wargs := writeArgs(h, w)
		wargs["p_import"] = imp
		var a writeAnswer[domain.ImportCreated]
		err = b.call(ctx, "mcp_run_import", wargs, &a)
		if errors.Is(err, domain.ErrStaleVersion) && attempt < ingStaleAttempts {
			continue
		}
		if err != nil {
			return zero, domain.WriteOutcome{}, err
		}
		if a.Result.ImportRunID == "" {
			return zero, domain.WriteOutcome{}, b.unavailable("mcp_run_import", errors.New("answer without a run"))
		}
		if !a.Replayed && in.Progress != nil {
			in.Progress(len(rows), len(rows))
		}
		return a.Result, a.outcome(), nil
	}
}

// ingPrepareImport applies what the database said of the status rows'
// items to the checked rows (as the store does inside its transaction),
// refuses what the store refuses, and builds mcp_run_import's input.
func ingPrepareImport(field string, in domain.NewImport, checked []domain.ImportRow, t ingTargets) (map[string]any, error) {
	rows := slices.Clone(checked)
	valid := 0
	for i := range rows {
		r := &rows[i]
		if r.Kind == domain.CandidateStatusUpdate && r.ItemID != "" {
			it, seen := t.Items[r.ItemID]
			switch {
			case slices.Contains(t.Elsewhere, r.ItemID):
				// In a sale outside the member's assignment: the import's
				// own sale is assigned, so this is another sale.
				r.Issues = append(slices.Clip(r.Issues), ingRowIssue(r, "item_id", "item_in_other_sale", "the item belongs to another sale than this import's"))
			case !seen:
				r.Issues = append(slices.Clip(r.Issues), ingRowIssue(r, "item_id", "unknown_item", "the item does not exist or is not visible to you"))
			case it.SaleID != in.SaleID:
				r.Issues = append(slices.Clip(r.Issues), ingRowIssue(r, "item_id", "item_in_other_sale", "the item belongs to another sale than this import's"))
			}
		}
		if r.Valid() {
			valid++
		}
	}
	if !in.SkipInvalidRows {
		if err := ingRowsError(field, rows); err != nil {
			return nil, err
		}
	}
	if valid == 0 {
		return nil, domain.Invalid(field, "no row is valid, so nothing was imported: "+ingIssueSummary(rows))
	}
	args := make([]ingRowArg, len(rows))
	rejected := []domain.RowIssue{}
	var buf bytes.Buffer
	for i, r := range rows {
		payload, err := ingPayload(&buf, r)
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

// ingCandidate is the candidate of a valid import row (the store's
// ingCandidate): a status report never records a sale price.
func ingCandidate(r domain.ImportRow) *ingCandidateArg {
	c := &ingCandidateArg{Title: r.Title, Description: r.Description, Category: r.Category, Room: r.Room,
		Condition: r.Condition, Quantity: max(r.Quantity, 1), SuppliedPriceCents: r.SuppliedPriceCents, Notes: r.Notes}
	if r.Kind == domain.CandidateStatusUpdate {
		if c.Title == "" {
			c.Title = fmt.Sprintf("Reported %s: %s", r.ReportedStatus, r.ItemID)
		}
		c.SuppliedPriceCents = nil
	}
	return c
}

// ingCheckRow re-applies, inside the Backend, the rules every import row
// obeys whatever door it came through: text normalised and bounded, a kind
// and the fields that kind needs. It only adds issues; it never guesses.
// (The store's ingCheckRow, rule for rule.)
func ingCheckRow(r domain.ImportRow) domain.ImportRow {
	r.Issues = slices.Clone(r.Issues)
	r.Title = domain.CleanLine(r.Title)
	r.Description = domain.CleanText(r.Description)
	r.Notes = domain.CleanText(r.Notes)
	r.ExternalRef = domain.CleanLine(r.ExternalRef)
	r.Category, r.Room, r.Condition = domain.CleanLine(r.Category), domain.CleanLine(r.Room), domain.CleanLine(r.Condition)
	r.Cells = slices.Clone(r.Cells)
	for i := range r.Cells {
		r.Cells[i].Column, r.Cells[i].Value = domain.CleanLine(r.Cells[i].Column), domain.CleanText(r.Cells[i].Value)
	}
	bad := func(field, reason string) { r.Issues = append(r.Issues, ingRowIssue(&r, field, "invalid_row", reason)) }
	for _, f := range []struct {
		name, v string
		max     int
	}{{"title", r.Title, 200}, {"description", r.Description, 4000}, {"notes", r.Notes, 4000}, {"external_ref", r.ExternalRef, 128},
		{"category", r.Category, 128}, {"room", r.Room, 64}} {
		if domain.RuneLen(f.v) > f.max {
			bad(f.name, fmt.Sprintf("longer than %d characters", f.max))
		}
	}
	if r.Quantity < 0 || r.Quantity > 10_000 {
		bad("quantity", "out of range")
	}
	if r.SuppliedPriceCents != nil && (*r.SuppliedPriceCents < 0 || *r.SuppliedPriceCents > 100_000_000) {
		bad("supplied_price_cents", "out of range")
	}
	switch r.Kind {
	case domain.CandidateNewItem:
		if r.Title == "" && r.Valid() {
			bad("title", "a new item needs a title")
		}
	case domain.CandidateStatusUpdate:
		if !domain.ValidID(domain.PrefixItem, r.ItemID) && r.Valid() {
			bad("item_id", "a status report needs an item id")
		}
		if !slices.Contains(domain.ReportableStatuses, r.ReportedStatus) && r.Valid() {
			bad("reported_status", "not a reportable status")
		}
	default:
		bad("kind", "unknown row kind")
	}
	return r
}

func ingRowIssue(r *domain.ImportRow, column, code, msg string) domain.RowIssue {
	return domain.RowIssue{Row: r.Row, Line: r.Line, Column: column, Code: code, Severity: domain.SeverityError, Message: msg}
}

// ingRowsError fails a strict import that has an invalid row, saying which
// rows and why (codes only: messages never quote imported text).
func ingRowsError(field string, rows []domain.ImportRow) error {
	for _, r := range rows {
		if !r.Valid() {
			return domain.Invalid(field, "some rows are invalid and nothing was imported: "+ingIssueSummary(rows)+
				"; preview the import to see every issue, fix the rows, or pass skip_invalid_rows to import the valid rows only")
		}
	}
	return nil
}

// ingIssueSummary names the first invalid rows and their error codes.
func ingIssueSummary(rows []domain.ImportRow) string {
	const show = 5
	var parts []string
	bad := 0
	for _, r := range rows {
		if r.Valid() {
			continue
		}
		bad++
		if len(parts) == show {
			continue
		}
		var codes []string
		for _, is := range r.Issues {
			if is.Severity == domain.SeverityError && !slices.Contains(codes, is.Code) {
				codes = append(codes, is.Code)
			}
		}
		parts = append(parts, fmt.Sprintf("row %d: %s", r.Row, strings.Join(codes, ", ")))
	}
	s := strings.Join(parts, "; ")
	if bad > show {
		s += fmt.Sprintf("; %d invalid rows in all", bad)
	}
	return s
}

// ingPayload encodes a value as a source record's payload, exactly as the
// store does: no HTML escaping (the stored text is the text), no newline.
func ingPayload(buf *bytes.Buffer, v any) ([]byte, error) {
	buf.Reset()
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func ingNonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// CreateStatusReport implements domain.IngestionBackend: the report as a
// status_update candidate with its provenance run and record, and what the
// item was when it was recorded (mcp_create_status_report). The item is
// never changed.
func (b *Backend) CreateStatusReport(ctx context.Context, p domain.Principal, w domain.WriteMeta, in domain.NewStatusReport) (domain.StatusReportCreated, domain.WriteOutcome, error) {
	var zero domain.StatusReportCreated
	in.Notes = domain.CleanText(in.Notes)
	switch {
	case !domain.ValidID(domain.PrefixItem, in.ItemID):
		return zero, domain.WriteOutcome{}, domain.Invalid("item_id", "required: the item whose status was reported")
	case !slices.Contains(domain.ReportableStatuses, in.ReportedStatus):
		return zero, domain.WriteOutcome{}, domain.Invalid("reported_status", "must be one of "+strings.Join(domain.ReportableStatuses, ", "))
	case in.EffectiveAt.IsZero():
		return zero, domain.WriteOutcome{}, domain.Invalid("effective_at", "required")
	case strings.TrimSpace(in.Source) == "":
		return zero, domain.WriteOutcome{}, domain.Invalid("source", "required")
	case domain.RuneLen(in.Notes) > 4000:
		return zero, domain.WriteOutcome{}, domain.Invalid("notes", "longer than 4000 characters")
	}
	in.EffectiveAt = in.EffectiveAt.UTC()
	var buf bytes.Buffer
	payload, err := ingPayload(&buf, struct {
		Kind string `json:"kind"`
		domain.NewStatusReport
	}{domain.CandidateStatusUpdate, in})
	if err != nil {
		return zero, domain.WriteOutcome{}, fmt.Errorf("live: status report: encode: %w", domain.ErrInvalidInput)
	}
	h, err := b.hashOf(p)
	if err != nil {
		return zero, domain.WriteOutcome{}, err
	}
	if err := checkWriteMeta(p, w); err != nil {
		return zero, domain.WriteOutcome{}, err
	}
	wargs := writeArgs(h, w)
	wargs["p_report"] = map[string]any{"item_id": in.ItemID, "reported_status": in.ReportedStatus, "effective_at": in.EffectiveAt,
		"source": in.Source, "notes": in.Notes, "payload": string(payload)}
	var a writeAnswer[domain.StatusReportCreated]
	if err := b.call(ctx, "mcp_create_status_report", wargs, &a); err != nil {
		return zero, domain.WriteOutcome{}, err
	}
	if a.Result.CandidateID == "" {
		return zero, domain.WriteOutcome{}, b.unavailable("mcp_create_status_report", errors.New("answer without a candidate"))
	}
	return a.Result, a.outcome(), nil
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
	switch {
	case (in.CandidateID == "") == (in.ItemID == ""):
		return zero, domain.WriteOutcome{}, domain.Invalid("candidate_id", "give exactly one of candidate_id or item_id")
	case in.CandidateID != "" && !domain.ValidID(domain.PrefixCandidate, in.CandidateID):
		return zero, domain.WriteOutcome{}, domain.Invalid("candidate_id", "not a candidate id")
	case in.ItemID != "" && !domain.ValidID(domain.PrefixItem, in.ItemID):
		return zero, domain.WriteOutcome{}, domain.Invalid("item_id", "not an item id")
	case in.Tone != "" && !slices.Contains(domain.DraftTones, in.Tone):
		return zero, domain.WriteOutcome{}, domain.Invalid("tone", "must be one of "+strings.Join(domain.DraftTones, ", "))
	case in.MaxWords != 0 && (in.MaxWords < 20 || in.MaxWords > 400):
		return zero, domain.WriteOutcome{}, domain.Invalid("max_words", "must be from 20 to 400")
	}
	if in.Tone == "" {
		in.Tone = "plain"
	}
	h, err := b.hashOf(p)
	if err != nil {
		return zero, domain.WriteOutcome{}, err
	}
	if err := checkWriteMeta(p, w); err != nil {
		return zero, domain.WriteOutcome{}, err
	}
	sargs := ingStateArgs(h, w)
	sargs["p_candidate_id"], sargs["p_item_id"] = in.CandidateID, in.ItemID
	for attempt := 1; ; attempt++ {
		var st ingState
		if err := b.call(ctx, "mcp_draft_facts", sargs, &st); err != nil {
			return zero, domain.WriteOutcome{}, err
		}
		if st.Replayed {
			return ingReplay[domain.DraftCreated](b, "mcp_draft_facts", st)
		}
		var f ingFacts
		if len(st.Facts) == 0 || json.Unmarshal(st.Facts, &f) != nil || f.SourceID == "" || f.Version < 1 {
			return zero, domain.WriteOutcome{}, b.unavailable("mcp_draft_facts", errors.New("answer without the facts"))
		}
		draft := domain.ComposeListingCopy(domain.DraftFacts{SourceID: f.SourceID, SourceKind: f.SourceKind, Version: f.Version,
			Origin: f.Origin, Title: f.Title, Description: f.Description, Category: f.Category, Room: f.Room,
			Condition: f.Condition, Quantity: f.Quantity}, in.Tone, in.MaxWords)
		wargs := writeArgs(h, w)
		wargs["p_draft"] = map[string]any{"candidate_id": in.CandidateID, "item_id": in.ItemID, "tone": in.Tone,
			"max_words": in.MaxWords, "persist": in.Persist, "facts": st.Facts, "copy": draft}
		var a writeAnswer[domain.DraftCreated]
		err := b.call(ctx, "mcp_draft_listing_copy", wargs, &a)
		if errors.Is(err, domain.ErrStaleVersion) && attempt < ingStaleAttempts {
			continue
		}
		if err != nil {
			return zero, domain.WriteOutcome{}, err
		}
		if a.Result.SourceID == "" {
			return zero, domain.WriteOutcome{}, b.unavailable("mcp_draft_listing_copy", errors.New("answer without the draft"))
		}
		return a.Result, a.outcome(), nil
	}
}

// StageExport implements domain.IngestionBackend: the items' public
// snapshots (mcp_export_state) validated here for the channel, then stored
// as an immutable staged export if they are still the items' under a share
// lock (mcp_stage_export). It delivers, lists and publishes nothing.
func (b *Backend) StageExport(ctx context.Context, p domain.Principal, w domain.WriteMeta, in domain.NewExport) (domain.ExportDraft, domain.WriteOutcome, error) {
	var zero domain.ExportDraft
	switch {
	case !slices.Contains(domain.ExportChannels, in.Channel):
		return zero, domain.WriteOutcome{}, domain.Invalid("channel", "must be one of "+strings.Join(domain.ExportChannels, ", "))
	case len(in.ItemIDs) == 0 || len(in.ItemIDs) > domain.MaxExportItems:
		return zero, domain.WriteOutcome{}, domain.Invalid("item_ids", fmt.Sprintf("give 1 to %d items", domain.MaxExportItems))
	}
	seen := map[string]bool{}
	for _, id := range in.ItemIDs {
		if !domain.ValidID(domain.PrefixItem, id) {
			return zero, domain.WriteOutcome{}, domain.Invalid("item_ids", "an entry is not an item id")
		}
		if seen[id] {
			return zero, domain.WriteOutcome{}, domain.Invalid("item_ids", "an item is listed twice")
		}
		seen[id] = true
	}
	h, err := b.hashOf(p)
	if err != nil {
		return zero, domain.WriteOutcome{}, err
	}
	if err := checkWriteMeta(p, w); err != nil {
		return zero, domain.WriteOutcome{}, err
	}
	sargs := ingStateArgs(h, w)
	sargs["p_item_ids"] = in.ItemIDs
	for attempt := 1; ; attempt++ {
		var st ingState
		if err := b.call(ctx, "mcp_export_state", sargs, &st); err != nil {
			return zero, domain.WriteOutcome{}, err
		}
		if st.Replayed {
			return ingReplay[domain.ExportDraft](b, "mcp_export_state", st)
		}
		var listings []domain.ExportListing
		if len(st.Listings) == 0 || json.Unmarshal(st.Listings, &listings) != nil || len(listings) != len(in.ItemIDs) {
			return zero, domain.WriteOutcome{}, b.unavailable("mcp_export_state", errors.New("answer without one snapshot per item"))
		}
		res := ingValidateExport(in.Channel, listings)
		wargs := writeArgs(h, w)
		wargs["p_export"] = map[string]any{"channel": in.Channel, "item_ids": in.ItemIDs, "listings": res.Listings,
			"valid_count": res.ValidCount, "warnings": res.Warnings}
		var a writeAnswer[domain.ExportDraft]
		err := b.call(ctx, "mcp_stage_export", wargs, &a)
		if errors.Is(err, domain.ErrStaleVersion) && attempt < ingStaleAttempts {
			continue
		}
		if err != nil {
			return zero, domain.WriteOutcome{}, err
		}
		if a.Result.ExportID == "" {
			return zero, domain.WriteOutcome{}, b.unavailable("mcp_stage_export", errors.New("answer without an export"))
		}
		return a.Result, a.outcome(), nil
	}
}

// ingValidateExport applies the channel's rules to each snapshot and sums
// them up, exactly as the store's StageExport does.
func ingValidateExport(channel string, listings []domain.ExportListing) domain.ExportDraft {
	res := domain.ExportDraft{Channel: channel, Status: domain.ExportStaged, Listings: []domain.ExportListing{}, Warnings: []string{}}
	for _, l := range listings {
		l.Valid, l.Warnings = domain.ValidateExportListing(channel, l)
		if l.Valid {
			res.ValidCount++
		}
		res.Listings = append(res.Listings, l)
	}
	if res.ValidCount == 0 {
		res.Warnings = append(res.Warnings, "no staged item can be delivered to this channel as it is: see each item's warnings")
	} else if res.ValidCount < len(res.Listings) {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%d of %d items cannot be delivered as they are: see each item's warnings",
			len(res.Listings)-res.ValidCount, len(res.Listings)))
	}
	return res
}
