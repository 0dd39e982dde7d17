package ingest

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// Bounds of normalised fields: the same as the candidate tools' schemas.
const (
	MaxTitle       = 200
	MaxLongText    = 4000
	MaxExternalRef = 128
	MaxCategory    = 128
	MaxRoom        = 64
	MaxQuantity    = 10_000
	MaxPriceCents  = 100_000_000
)

// Row issue codes of normalisation.
const (
	CodeFormulaLike      = "formula_like_cell"
	CodeMissingTitle     = "missing_title"
	CodeMissingItemID    = "missing_item_id"
	CodeMissingStatus    = "missing_reported_status"
	CodeTooLong          = "too_long"
	CodeInvalidQuantity  = "invalid_quantity"
	CodeInvalidPrice     = "invalid_price"
	CodeInvalidItemID    = "invalid_item_id"
	CodeInvalidStatus    = "invalid_reported_status"
	CodeInvalidDate      = "invalid_date"
	CodeUnknownCategory  = "unrecognized_category"
	CodeUnknownRoom      = "unrecognized_room"
	CodeUnknownCondition = "unrecognized_condition"
	CodeTextNormalised   = "text_normalised"
)

// progressEvery is how often (in rows) a long normalisation reports progress.
const progressEvery = 1000

// NormalizeRows turns parsed rows into import rows under mapping m: text
// normalised (domain.CleanText/CleanLine) and bounded, values parsed (money
// to cents, dates to instants, statuses and conditions to their
// vocabularies), and every problem an issue of its row. A row that has an
// item_id or a reported_status is a status report (a status_update
// candidate); any other row is a new item. Cells that a spreadsheet would
// run as a formula are kept as text with a warning. progress (may be nil)
// hears rows done of total every 1,000 rows.
func NormalizeRows(t *Table, m Mapping, progress func(done, total int)) []domain.ImportRow {
	out := make([]domain.ImportRow, len(t.Rows))
	for k, r := range t.Rows {
		out[k] = normalizeRow(t, m, r)
		if progress != nil && ((k+1)%progressEvery == 0 || k+1 == len(t.Rows)) {
			progress(k+1, len(t.Rows))
		}
	}
	return out
}

func normalizeRow(t *Table, m Mapping, r Row) domain.ImportRow {
	ir := domain.ImportRow{Row: r.Number, Line: r.Line, OriginalHash: r.OriginalHash, Kind: domain.CandidateNewItem,
		Cells: make([]domain.Cell, len(r.Cells)), Issues: append([]domain.RowIssue(nil), r.Issues...)}
	add := func(col, code, sev, msg string) {
		ir.Issues = append(ir.Issues, domain.RowIssue{Row: r.Number, Line: r.Line, Column: col, Code: code, Severity: sev, Message: msg})
	}
	normalised := false
	for i, raw := range r.Cells {
		col := t.Header[i]
		cleaned := domain.CleanText(raw)
		if cleaned != strings.TrimSpace(raw) {
			normalised = true
		}
		ir.Cells[i] = domain.Cell{Column: col, Value: cleaned}
		field := m[i]
		if field == FieldIgnore {
			continue
		}
		if domain.LooksLikeFormula(strings.TrimLeft(raw, " ")) {
			add(col, CodeFormulaLike, domain.SeverityWarning,
				"the cell starts with =, +, -, @ or a tab, which a spreadsheet would run as a formula: it is kept as plain text")
		}
		applyField(&ir, field, col, raw, add)
	}
	if normalised {
		add("", CodeTextNormalised, domain.SeverityWarning,
			"control, invisible or bidirectional characters were removed from the row's text")
	}
	finishRow(&ir, add)
	return ir
}

// applyField parses one mapped cell into its field of ir.
func applyField(ir *domain.ImportRow, field, col, raw string, add func(col, code, sev, msg string)) {
	tooLong := func(max int) {
		add(col, CodeTooLong, domain.SeverityError, fmt.Sprintf("longer than %d characters", max))
	}
	switch field {
	case FieldTitle:
		v := domain.CleanLine(raw)
		if domain.RuneLen(v) > MaxTitle {
			tooLong(MaxTitle)
			return
		}
		ir.Title = v
	case FieldDescription, FieldNotes:
		v := domain.CleanText(raw)
		if domain.RuneLen(v) > MaxLongText {
			tooLong(MaxLongText)
			return
		}
		if field == FieldDescription {
			ir.Description = v
		} else {
			ir.Notes = v
		}
	case FieldExternalRef:
		v := domain.CleanLine(raw)
		if domain.RuneLen(v) > MaxExternalRef {
			tooLong(MaxExternalRef)
			return
		}
		ir.ExternalRef = v
	case FieldCategory:
		if v := domain.CleanLine(raw); v != "" {
			c, ok := normalizeCategory(v)
			if !ok {
				add(col, CodeUnknownCategory, domain.SeverityWarning,
					"not a category path (e.g. kitchen.cookware): left empty for the reviewer")
				return
			}
			ir.Category = c
		}
	case FieldRoom:
		if v := domain.CleanLine(raw); v != "" {
			rm, ok := normalizeRoom(v)
			if !ok {
				add(col, CodeUnknownRoom, domain.SeverityWarning, "not a room name (e.g. den, living_room): left empty for the reviewer")
				return
			}
			ir.Room = rm
		}
	case FieldCondition:
		c, ok := normalizeCondition(raw)
		if !ok {
			add(col, CodeUnknownCondition, domain.SeverityWarning,
				"not one of new, excellent, good, fair, poor, for_parts: left empty for the reviewer")
			return
		}
		ir.Condition = c
	case FieldQuantity:
		q, ok := parseQuantity(raw)
		if !ok {
			add(col, CodeInvalidQuantity, domain.SeverityError, fmt.Sprintf("not a whole number from 1 to %d", MaxQuantity))
			return
		}
		ir.Quantity = q
	case FieldPrice:
		cents, ok := parsePrice(raw, strings.Contains(headerKey(col), "cents"))
		if !ok {
			add(col, CodeInvalidPrice, domain.SeverityError,
				"not a price: use an amount like 12.50 or $1,200 (or whole cents in a column named …cents)")
			return
		}
		ir.SuppliedPriceCents = cents
	case FieldItemID:
		v := domain.CleanLine(raw)
		if v != "" && !domain.ValidID(domain.PrefixItem, v) {
			add(col, CodeInvalidItemID, domain.SeverityError, "not a TroveSnap item id (item_…)")
			return
		}
		ir.ItemID = v
	case FieldReportedStatus:
		s, ok := normalizeStatus(raw)
		if !ok {
			add(col, CodeInvalidStatus, domain.SeverityError,
				"not a reportable status: sold, on_hold, pending_pickup or withdrawn (available/blank means no report)")
			return
		}
		ir.ReportedStatus = s
	case FieldEffectiveAt:
		if strings.TrimSpace(raw) == "" {
			return
		}
		at, ok := parseDate(raw)
		if !ok {
			add(col, CodeInvalidDate, domain.SeverityError, "not a date: use 2026-06-20, 2026-06-20T15:04:05Z or 06/20/2026")
			return
		}
		ir.EffectiveAt = &at
	}
}

// finishRow decides the row's kind and checks what that kind requires.
func finishRow(ir *domain.ImportRow, add func(col, code, sev, msg string)) {
	if ir.ItemID != "" || ir.ReportedStatus != "" {
		ir.Kind = domain.CandidateStatusUpdate
		if ir.ItemID == "" && !hasCode(ir.Issues, CodeInvalidItemID) {
			add("", CodeMissingItemID, domain.SeverityError, "a status report needs the item_id of the item it reports")
		}
		if ir.ReportedStatus == "" && !hasCode(ir.Issues, CodeInvalidStatus) {
			add("", CodeMissingStatus, domain.SeverityError, "the row names an item but reports no status")
		}
		return
	}
	if ir.Title == "" && !hasCode(ir.Issues, CodeTooLong) && !hasCode(ir.Issues, CodeInvalidStatus) && !hasCode(ir.Issues, CodeInvalidItemID) {
		add("", CodeMissingTitle, domain.SeverityError, "the row has no title")
	}
}

func hasCode(is []domain.RowIssue, code string) bool {
	for _, i := range is {
		if i.Code == code {
			return true
		}
	}
	return false
}

// CleanManualRow normalises a manual-import row the same way: text through
// domain.CleanText/CleanLine, then the checks a new item needs.
func CleanManualRow(ir *domain.ImportRow) {
	ir.Kind = domain.CandidateNewItem
	add := func(col, code, sev, msg string) {
		ir.Issues = append(ir.Issues, domain.RowIssue{Row: ir.Row, Column: col, Code: code, Severity: sev, Message: msg})
	}
	before := []string{ir.Title, ir.Description, ir.Notes, ir.ExternalRef}
	ir.Title = domain.CleanLine(ir.Title)
	ir.Description = domain.CleanText(ir.Description)
	ir.Notes = domain.CleanText(ir.Notes)
	ir.ExternalRef = domain.CleanLine(ir.ExternalRef)
	for i, v := range []string{ir.Title, ir.Description, ir.Notes, ir.ExternalRef} {
		if v != strings.TrimSpace(before[i]) {
			add("", CodeTextNormalised, domain.SeverityWarning, "control, invisible or bidirectional characters were removed from the row's text")
			break
		}
	}
	for _, f := range []struct{ col, v string }{{"title", before[0]}, {"description", before[1]}, {"notes", before[2]}} {
		if domain.LooksLikeFormula(strings.TrimLeft(f.v, " ")) {
			add(f.col, CodeFormulaLike, domain.SeverityWarning, "the text starts with =, +, -, @ or a tab, which a spreadsheet would run as a formula: it is kept as plain text")
		}
	}
	if ir.Title == "" {
		add("title", CodeMissingTitle, domain.SeverityError, "the title is empty once invisible characters are removed")
	}
}

var (
	categorySeparators = strings.NewReplacer(" > ", ".", ">", ".", "/", ".", "\\", ".", "|", ".", ":", ".", " › ", ".", "›", ".")
	categoryPath       = domain.LazyRegexp(`^[a-z0-9_]+(\.[a-z0-9_]+)*$`)
	roomName           = domain.LazyRegexp(`^[a-z0-9_]{1,64}$`)
)

// normalizeCategory folds "Electronics > Audio > Receiver" into
// "electronics.audio.receiver".
func normalizeCategory(v string) (string, bool) {
	v = categorySeparators.Replace(strings.ToLower(v))
	parts := strings.Split(v, ".")
	for i, p := range parts {
		parts[i] = snake(p)
	}
	c := strings.Join(parts, ".")
	if len(c) > MaxCategory || !categoryPath().MatchString(c) {
		return "", false
	}
	return c, true
}

func normalizeRoom(v string) (string, bool) {
	r := snake(strings.ToLower(v))
	if !roomName().MatchString(r) {
		return "", false
	}
	return r, true
}

// snake turns "Living Room" into "living_room": letters and digits kept,
// runs of anything else one underscore, none at the ends.
func snake(s string) string {
	var b strings.Builder
	under := false
	for _, r := range strings.ToLower(strings.TrimSpace(s)) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if under && b.Len() > 0 {
				b.WriteByte('_')
			}
			b.WriteRune(r)
			under = false
			continue
		}
		under = true
	}
	return b.String()
}

var conditions = map[string]string{
	"new": "new", "excellent": "excellent", "good": "good", "fair": "fair", "poor": "poor",
	"for_parts": "for_parts", "for_parts_or_repair": "for_parts", "parts_only": "for_parts", "parts": "for_parts",
}

// normalizeCondition maps a condition cell to the candidate vocabulary; an
// empty cell is ("", true).
func normalizeCondition(v string) (string, bool) {
	k := snake(domain.CleanLine(v))
	if k == "" {
		return "", true
	}
	c, ok := conditions[k]
	return c, ok
}

var statuses = map[string]string{
	"sold": domain.ItemSold, "sold_out": domain.ItemSold,
	"on_hold": domain.ItemOnHold, "hold": domain.ItemOnHold, "held": domain.ItemOnHold, "reserved": domain.ItemOnHold,
	"pending_pickup": domain.ItemPendingPickup, "awaiting_pickup": domain.ItemPendingPickup, "paid_pending_pickup": domain.ItemPendingPickup,
	"withdrawn": domain.ItemWithdrawn, "family_kept": domain.ItemWithdrawn, "not_for_sale": domain.ItemWithdrawn, "nfs": domain.ItemWithdrawn,
	// No report: the item's status is not being claimed.
	"available": "", "for_sale": "", "unsold": "", "listed": "",
}

// normalizeStatus maps a status cell to a reportable status; "" means the
// cell reports nothing (blank or "available").
func normalizeStatus(v string) (string, bool) {
	k := snake(domain.CleanLine(v))
	if k == "" {
		return "", true
	}
	s, ok := statuses[k]
	return s, ok
}

func parseQuantity(v string) (int, bool) {
	v = strings.ReplaceAll(strings.TrimSpace(domain.CleanLine(v)), ",", "")
	if v == "" {
		return 0, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > MaxQuantity {
		return 0, false
	}
	return n, true
}

var priceText = domain.LazyRegexp(`^(?:usd\s*)?\$?\s*([0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:\.([0-9]{1,2}))?\s*(?:usd)?$`)

// parsePrice reads a price cell: whole cents when the column says cents,
// otherwise an amount in dollars ("12", "12.5", "$1,234.56"). Blank is nil.
func parsePrice(v string, cents bool) (*int64, bool) {
	v = strings.ToLower(strings.TrimSpace(domain.CleanLine(v)))
	if v == "" {
		return nil, true
	}
	var total int64
	if cents {
		n, err := strconv.ParseInt(strings.ReplaceAll(v, ",", ""), 10, 64)
		if err != nil {
			return nil, false
		}
		total = n
	} else {
		m := priceText().FindStringSubmatch(v)
		if m == nil {
			return nil, false
		}
		whole, err := strconv.ParseInt(strings.ReplaceAll(m[1], ",", ""), 10, 64)
		if err != nil || whole > MaxPriceCents/100 {
			return nil, false
		}
		frac := int64(0)
		if m[2] != "" {
			f, _ := strconv.ParseInt(m[2], 10, 64)
			if len(m[2]) == 1 {
				f *= 10
			}
			frac = f
		}
		total = whole*100 + frac
	}
	if total < 0 || total > MaxPriceCents {
		return nil, false
	}
	return &total, true
}

var dateLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02", "01/02/2006", "1/2/2006"}

// parseDate reads a date cell. Times without a zone are UTC; US-style
// month/day/year is the only slash form accepted (documented), so a cell is
// never read two ways.
func parseDate(v string) (time.Time, bool) {
	v = strings.TrimSpace(domain.CleanLine(v))
	for _, l := range dateLayouts {
		if t, err := time.Parse(l, v); err == nil {
			if t.Year() < 1900 || t.Year() > 2200 {
				return time.Time{}, false
			}
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}
