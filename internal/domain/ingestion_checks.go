package domain

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// The checks of the ingestion writes that need no stored state, and the
// encoding of their source records. Every Backend applies them (the store
// inside its transaction, the live backend before its write RPC), so both
// accept and refuse the same inputs, with the same issues, and store the
// same payloads.

// CheckedImport is an import that passed CheckImport.
type CheckedImport struct {
	// Field is the input field the import's errors name: csv_text for a
	// CSV import, rows for a manual one.
	Field string
	// Rows are the import's rows, each through CheckImportRow.
	Rows []ImportRow
	// Label is the source label, normalised and bounded.
	Label string
	// Mapping is the column mapping, never nil (stored as a JSON list).
	Mapping []ColumnMapping
}

// CheckImport checks what an import is before any state is read: its kind,
// its sale id, its row count and every row. A strict import (not
// SkipInvalidRows) with an invalid row fails here with the rows and codes
// at fault.
func CheckImport(in NewImport) (CheckedImport, error) {
	c := CheckedImport{Field: "rows"}
	switch in.Kind {
	case ImportManual:
	case ImportCSV:
		c.Field = "csv_text"
	default:
		return c, fmt.Errorf("import kind %q: %w", in.Kind, ErrInvalidInput)
	}
	if !ValidID(PrefixSale, in.SaleID) {
		return c, Invalid("sale_id", "required: the sale every row belongs to")
	}
	if len(in.Rows) == 0 {
		return c, Invalid(c.Field, "no rows to import")
	}
	if len(in.Rows) > MaxImportRows {
		return c, Invalid(c.Field, fmt.Sprintf("more than %d rows in one import", MaxImportRows))
	}
	c.Rows = make([]ImportRow, len(in.Rows))
	for i, r := range in.Rows {
		c.Rows[i] = CheckImportRow(r)
	}
	if !in.SkipInvalidRows {
		if err := importRowsError(c.Field, c.Rows); err != nil {
			return c, err
		}
	}
	c.Label = Truncate(CleanLine(in.SourceLabel), 200)
	c.Mapping = in.Mapping
	if c.Mapping == nil {
		c.Mapping = []ColumnMapping{}
	}
	return c, nil
}

// CheckImportRow applies the rules every import row obeys whatever door it
// came through: text normalised and bounded, a kind and the fields that
// kind needs. It only adds issues, never guesses, and never changes r's
// issues or cells in place.
func CheckImportRow(r ImportRow) ImportRow {
	r.Issues = slices.Clone(r.Issues)
	r.Title = CleanLine(r.Title)
	r.Description = CleanText(r.Description)
	r.Notes = CleanText(r.Notes)
	r.ExternalRef = CleanLine(r.ExternalRef)
	r.Category, r.Room, r.Condition = CleanLine(r.Category), CleanLine(r.Room), CleanLine(r.Condition)
	r.Cells = slices.Clone(r.Cells)
	for i := range r.Cells {
		r.Cells[i].Column, r.Cells[i].Value = CleanLine(r.Cells[i].Column), CleanText(r.Cells[i].Value)
	}
	bad := func(field, reason string) { r.AddError(field, "invalid_row", reason) }
	for _, f := range []struct {
		name, v string
		max     int
	}{{"title", r.Title, 200}, {"description", r.Description, 4000}, {"notes", r.Notes, 4000}, {"external_ref", r.ExternalRef, 128},
		{"category", r.Category, 128}, {"room", r.Room, 64}} {
		if RuneLen(f.v) > f.max {
			bad(f.name, fmt.Sprintf("longer than %d characters", f.max))
		}
	}
	if r.Quantity < 0 || r.Quantity > 10_000 {
		bad("quantity", "out of range")
	}
	if r.SuppliedPriceCents != nil && (*r.SuppliedPriceCents < 0 || *r.SuppliedPriceCents > MaxPriceCents) {
		bad("supplied_price_cents", "out of range")
	}
	switch r.Kind {
	case CandidateNewItem:
		if r.Title == "" && r.Valid() {
			bad("title", "a new item needs a title")
		}
	case CandidateStatusUpdate:
		if !ValidID(PrefixItem, r.ItemID) && r.Valid() {
			bad("item_id", "a status report needs an item id")
		}
		if !slices.Contains(ReportableStatuses, r.ReportedStatus) && r.Valid() {
			bad("reported_status", "not a reportable status")
		}
	default:
		bad("kind", "unknown row kind")
	}
	return r
}

// AddError records an error of the row at column, in the server's own
// words (msg never quotes imported text). It never writes into an issues
// array the row may share with a copy of it.
func (r *ImportRow) AddError(column, code, msg string) {
	r.Issues = append(slices.Clip(r.Issues), RowIssue{Row: r.Row, Line: r.Line, Column: column, Code: code,
		Severity: SeverityError, Message: msg})
}

// MarkItemUnknown refuses a status row whose item does not exist, is
// another tenant's or is in a sale the caller may not see: all alike.
func (r *ImportRow) MarkItemUnknown() {
	r.AddError("item_id", "unknown_item", "the item does not exist or is not visible to you")
}

// MarkItemInOtherSale refuses a status row whose item is in another sale
// than the import's.
func (r *ImportRow) MarkItemInOtherSale() {
	r.AddError("item_id", "item_in_other_sale", "the item belongs to another sale than this import's")
}

// CountValidImportRows is the last check of an import's rows, once its
// status rows' items are checked against the stored state: a strict import
// with an invalid row fails, and so does an import with no valid row. It
// returns how many rows are valid.
func CountValidImportRows(field string, rows []ImportRow, skipInvalid bool) (int, error) {
	if !skipInvalid {
		if err := importRowsError(field, rows); err != nil {
			return 0, err
		}
	}
	valid := 0
	for _, r := range rows {
		if r.Valid() {
			valid++
		}
	}
	if valid == 0 {
		return 0, Invalid(field, "no row is valid, so nothing was imported: "+importIssueSummary(rows))
	}
	return valid, nil
}

// ImportRowCandidate is the candidate a valid import row proposes, without
// its ids and provenance: at least one of the thing, and for a status
// report a title saying what was reported and never a sale price.
func ImportRowCandidate(r ImportRow) Candidate {
	c := Candidate{Kind: r.Kind, Title: r.Title, Description: r.Description, Category: r.Category, Room: r.Room,
		Condition: r.Condition, Quantity: max(r.Quantity, 1), SuppliedPriceCents: r.SuppliedPriceCents, Notes: r.Notes}
	if r.Kind == CandidateStatusUpdate {
		if c.Title == "" {
			c.Title = fmt.Sprintf("Reported %s: %s", r.ReportedStatus, r.ItemID)
		}
		c.SuppliedPriceCents = nil
	}
	return c
}

// importRowsError fails a strict import that has an invalid row, saying
// which rows and why (codes only: messages never quote imported text).
func importRowsError(field string, rows []ImportRow) error {
	for _, r := range rows {
		if !r.Valid() {
			return Invalid(field, "some rows are invalid and nothing was imported: "+importIssueSummary(rows)+
				"; preview the import to see every issue, fix the rows, or pass skip_invalid_rows to import the valid rows only")
		}
	}
	return nil
}

// importIssueSummary names the first invalid rows and their error codes.
func importIssueSummary(rows []ImportRow) string {
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
			if is.Severity == SeverityError && !slices.Contains(codes, is.Code) {
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

// CheckStatusReport normalises and checks a status report and returns it as
// it is stored, with its source record's payload.
func CheckStatusReport(in NewStatusReport) (NewStatusReport, []byte, error) {
	in.Notes = CleanText(in.Notes)
	switch {
	case !ValidID(PrefixItem, in.ItemID):
		return in, nil, Invalid("item_id", "required: the item whose status was reported")
	case !slices.Contains(ReportableStatuses, in.ReportedStatus):
		return in, nil, Invalid("reported_status", "must be one of "+strings.Join(ReportableStatuses, ", "))
	case in.EffectiveAt.IsZero():
		return in, nil, Invalid("effective_at", "required")
	case strings.TrimSpace(in.Source) == "":
		return in, nil, Invalid("source", "required")
	case RuneLen(in.Notes) > 4000:
		return in, nil, Invalid("notes", "longer than 4000 characters")
	}
	in.EffectiveAt = in.EffectiveAt.UTC()
	payload, err := SourcePayload(struct {
		Kind string `json:"kind"`
		NewStatusReport
	}{CandidateStatusUpdate, in})
	if err != nil {
		return in, nil, fmt.Errorf("status report: encode: %w", ErrInvalidInput)
	}
	return in, payload, nil
}

// CheckDraftRequest checks a request for listing copy and returns it with
// its tone defaulted.
func CheckDraftRequest(in DraftRequest) (DraftRequest, error) {
	switch {
	case (in.CandidateID == "") == (in.ItemID == ""):
		return in, Invalid("candidate_id", "give exactly one of candidate_id or item_id")
	case in.CandidateID != "" && !ValidID(PrefixCandidate, in.CandidateID):
		return in, Invalid("candidate_id", "not a candidate id")
	case in.ItemID != "" && !ValidID(PrefixItem, in.ItemID):
		return in, Invalid("item_id", "not an item id")
	case in.Tone != "" && !slices.Contains(DraftTones, in.Tone):
		return in, Invalid("tone", "must be one of "+strings.Join(DraftTones, ", "))
	case in.MaxWords != 0 && (in.MaxWords < 20 || in.MaxWords > 400):
		return in, Invalid("max_words", "must be from 20 to 400")
	}
	if in.Tone == "" {
		in.Tone = "plain"
	}
	return in, nil
}

// CheckNewExport checks an export's channel and items before any is read.
func CheckNewExport(in NewExport) error {
	switch {
	case !slices.Contains(ExportChannels, in.Channel):
		return Invalid("channel", "must be one of "+strings.Join(ExportChannels, ", "))
	case len(in.ItemIDs) == 0 || len(in.ItemIDs) > MaxExportItems:
		return Invalid("item_ids", fmt.Sprintf("give 1 to %d items", MaxExportItems))
	}
	seen := map[string]bool{}
	for _, id := range in.ItemIDs {
		if !ValidID(PrefixItem, id) {
			return Invalid("item_ids", "an entry is not an item id")
		}
		if seen[id] {
			return Invalid("item_ids", "an item is listed twice")
		}
		seen[id] = true
	}
	return nil
}

// StageListings applies the channel's rules (ValidateExportListing) to each
// item's snapshot and sums them up: the staged export without its id and
// time.
func StageListings(channel string, listings []ExportListing) ExportDraft {
	res := ExportDraft{Channel: channel, Status: ExportStaged, Listings: []ExportListing{}, Warnings: []string{}}
	for _, l := range listings {
		l.Valid, l.Warnings = ValidateExportListing(channel, l)
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

// EncodeSourcePayload encodes v as a source record's payload (an import
// row as normalised, with the hash of its original bytes; a report; a
// snapshot): JSON never HTML-escaped, so the stored text is the text, and
// without a trailing newline. It reuses buf, as an import encodes
// thousands of rows: the bytes it returns are buf's until its next use.
func EncodeSourcePayload(buf *bytes.Buffer, v any) ([]byte, error) {
	buf.Reset()
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// SourcePayload is EncodeSourcePayload into a buffer of its own.
func SourcePayload(v any) ([]byte, error) {
	var buf bytes.Buffer
	return EncodeSourcePayload(&buf, v)
}

// MediaTypes are the accepted image types of a source asset.
var MediaTypes = []string{"image/jpeg", "image/png", "image/gif", "image/webp"}

// CheckMediaInput validates a media write before any write: one source of
// bytes (an upload or an asset id), a short caption (cleaned in place), and
// uploaded bytes that are what the photo checks reported. Both backends
// call it; the live RPC verifies size and sha256 of the bytes again.
func CheckMediaInput(in *NewCandidateMedia) error {
	in.Caption = CleanLine(in.Caption)
	switch {
	case (in.Upload == nil) == (in.AssetID == ""):
		return Invalid("image_base64", "give exactly one of image_base64 or asset_id")
	case in.AssetID != "" && !ValidID(PrefixAsset, in.AssetID):
		return Invalid("asset_id", "not an asset id (asset_…)")
	case RuneLen(in.Caption) > 200:
		return Invalid("caption", "longer than 200 characters")
	}
	if up := in.Upload; up != nil {
		if !slices.Contains(MediaTypes, up.MimeType) || up.Size != len(up.Bytes) || up.Size == 0 || up.Size > MaxPhotoBytes ||
			up.Width <= 0 || up.Height <= 0 || int64(up.Width)*int64(up.Height) > MaxPhotoPixels ||
			OriginalHash(up.Bytes) != up.ContentHash {
			return Invalid("image_base64", "the image did not pass the server's checks")
		}
	}
	return nil
}
