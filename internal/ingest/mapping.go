package ingest

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// Candidate fields a column can fill. Ignore drops the column.
const (
	FieldTitle          = "title"
	FieldDescription    = "description"
	FieldCategory       = "category"
	FieldRoom           = "room"
	FieldCondition      = "condition"
	FieldQuantity       = "quantity"
	FieldPrice          = "supplied_price_cents"
	FieldNotes          = "notes"
	FieldExternalRef    = "external_ref"
	FieldItemID         = "item_id"
	FieldReportedStatus = "reported_status"
	FieldEffectiveAt    = "effective_at"
	FieldIgnore         = "ignore"
)

// Fields lists every field a mapping may name, in a fixed order (the
// tools' enum).
var Fields = []string{FieldTitle, FieldDescription, FieldCategory, FieldRoom, FieldCondition, FieldQuantity, FieldPrice,
	FieldNotes, FieldExternalRef, FieldItemID, FieldReportedStatus, FieldEffectiveAt, FieldIgnore}

// How a suggestion was found, and the confidence each basis carries.
const (
	BasisExactName  = "exact_name"
	BasisKnownAlias = "known_alias"
	BasisValueShape = "value_shape"
	BasisNone       = "none"
)

var basisConfidence = map[string]float64{BasisExactName: 1, BasisKnownAlias: 0.8, BasisValueShape: 0.5, BasisNone: 0}

// aliases are header names (lower case, words joined by one space) that
// spreadsheets in the estate-sale trade use for each field.
var aliases = map[string]string{
	"name": FieldTitle, "item": FieldTitle, "item name": FieldTitle, "item title": FieldTitle, "product": FieldTitle,
	"product name": FieldTitle, "listing title": FieldTitle, "what": FieldTitle,
	"desc": FieldDescription, "details": FieldDescription, "item description": FieldDescription, "long description": FieldDescription,
	"cat": FieldCategory, "category path": FieldCategory, "type": FieldCategory, "item type": FieldCategory, "department": FieldCategory,
	"location": FieldRoom, "area": FieldRoom, "room name": FieldRoom, "found in": FieldRoom,
	"cond": FieldCondition, "state": FieldCondition, "item condition": FieldCondition,
	"qty": FieldQuantity, "count": FieldQuantity, "units": FieldQuantity, "pieces": FieldQuantity, "pcs": FieldQuantity, "number of items": FieldQuantity,
	"price": FieldPrice, "asking price": FieldPrice, "asking": FieldPrice, "price usd": FieldPrice, "suggested price": FieldPrice,
	"est price": FieldPrice, "estimated price": FieldPrice, "tag price": FieldPrice, "price cents": FieldPrice, "supplied price": FieldPrice,
	"note": FieldNotes, "comments": FieldNotes, "comment": FieldNotes, "remarks": FieldNotes, "staff notes": FieldNotes,
	"id": FieldExternalRef, "ref": FieldExternalRef, "reference": FieldExternalRef, "sku": FieldExternalRef, "lot": FieldExternalRef,
	"lot number": FieldExternalRef, "lot no": FieldExternalRef, "tag": FieldExternalRef, "tag number": FieldExternalRef, "row id": FieldExternalRef,
	"item number": FieldExternalRef, "item no": FieldExternalRef, "external ref": FieldExternalRef,
	"item id": FieldItemID, "trovesnap id": FieldItemID, "trovesnap item id": FieldItemID, "troves id": FieldItemID,
	"status": FieldReportedStatus, "sale status": FieldReportedStatus, "sold": FieldReportedStatus, "item status": FieldReportedStatus,
	"reported status": FieldReportedStatus,
	"date":            FieldEffectiveAt, "sold at": FieldEffectiveAt, "sold on": FieldEffectiveAt, "sold date": FieldEffectiveAt, "date sold": FieldEffectiveAt,
	"when": FieldEffectiveAt, "effective date": FieldEffectiveAt, "effective at": FieldEffectiveAt,
}

// Suggestion is a suggested mapping of one column.
type Suggestion struct {
	Column     string
	Index      int
	Field      string
	Basis      string
	Confidence float64
	Sample     []string // up to three values, normalised and shortened
}

const (
	sampleValues = 3
	sampleLen    = 60
	shapeRows    = 20
)

// SuggestMapping maps each column to a field, deterministically: by exact
// field name, then known alias, then the shape of its values (item ids,
// statuses, conditions, money, dates, category paths). A field is suggested
// for at most one column: the most confident, then the leftmost.
func SuggestMapping(t *Table) []Suggestion {
	out := make([]Suggestion, len(t.Header))
	for i, name := range t.Header {
		s := Suggestion{Column: name, Index: i, Field: FieldIgnore, Basis: BasisNone, Sample: []string{}}
		key := headerKey(name)
		switch {
		case slices.Contains(Fields, strings.ReplaceAll(key, " ", "_")) && key != FieldIgnore:
			s.Field, s.Basis = strings.ReplaceAll(key, " ", "_"), BasisExactName
		case aliases[key] != "":
			s.Field, s.Basis = aliases[key], BasisKnownAlias
		default:
			if f := shapeOf(t, i); f != "" {
				s.Field, s.Basis = f, BasisValueShape
			}
		}
		s.Confidence = basisConfidence[s.Basis]
		for _, r := range t.Rows {
			if len(s.Sample) == sampleValues {
				break
			}
			if v := domain.CleanLine(r.Cells[i]); v != "" {
				s.Sample = append(s.Sample, domain.Truncate(v, sampleLen))
			}
		}
		out[i] = s
	}
	// One column per field: the most confident wins, ties go left.
	order := make([]int, len(out))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(out[b].Confidence, out[a].Confidence) })
	taken := map[string]bool{}
	for _, i := range order {
		f := out[i].Field
		if f == FieldIgnore {
			continue
		}
		if taken[f] {
			out[i].Field, out[i].Basis, out[i].Confidence = FieldIgnore, BasisNone, 0
			continue
		}
		taken[f] = true
	}
	return out
}

// MissingRequired lists what a mapping lacks to make any candidate: a title
// (new items), or an item id and a reported status (status reports).
func MissingRequired(fields []string) []string {
	has := func(f string) bool { return slices.Contains(fields, f) }
	if has(FieldTitle) || (has(FieldItemID) && has(FieldReportedStatus)) {
		return []string{}
	}
	if has(FieldItemID) {
		return []string{FieldReportedStatus}
	}
	if has(FieldReportedStatus) {
		return []string{FieldItemID}
	}
	return []string{FieldTitle}
}

// Mapping is a resolved mapping: the field of each column, by index.
type Mapping []string

// Pairs returns the mapping as column → field pairs in column order.
func (m Mapping) Pairs(t *Table) []domain.ColumnMapping {
	out := make([]domain.ColumnMapping, len(m))
	for i, f := range m {
		out[i] = domain.ColumnMapping{Column: t.Header[i], Field: f}
	}
	return out
}

// ResolveMapping turns the caller's mapping (nil: the suggested one) into a
// Mapping. Each entry must name a column of the header; a field other than
// ignore may be filled by one column only; columns not named are ignored.
func ResolveMapping(field string, t *Table, explicit []domain.ColumnMapping) (Mapping, error) {
	m := make(Mapping, len(t.Header))
	for i := range m {
		m[i] = FieldIgnore
	}
	if explicit == nil {
		for _, s := range SuggestMapping(t) {
			m[s.Index] = s.Field
		}
	} else {
		byField := map[string]int{}
		seenCol := map[int]bool{}
		for k, cm := range explicit {
			idx := slices.Index(t.Header, cm.Column)
			if idx < 0 {
				return nil, domain.Invalid(field, fmt.Sprintf("entry %d names a column that is not in the file's header (column names are matched exactly, after normalisation; see trove_map_csv_columns)", k+1))
			}
			if !slices.Contains(Fields, cm.Field) {
				return nil, domain.Invalid(field, fmt.Sprintf("entry %d names an unknown field", k+1))
			}
			if seenCol[idx] {
				return nil, domain.Invalid(field, fmt.Sprintf("entry %d maps a column that an earlier entry already maps", k+1))
			}
			seenCol[idx] = true
			if cm.Field != FieldIgnore {
				if prev, dup := byField[cm.Field]; dup {
					return nil, domain.Invalid(field, fmt.Sprintf("entries %d and %d both fill %s: a field takes one column", prev+1, k+1, cm.Field))
				}
				byField[cm.Field] = k
			}
			m[idx] = cm.Field
		}
	}
	if missing := MissingRequired(m); len(missing) > 0 {
		return nil, domain.Invalid(field, fmt.Sprintf("no column is mapped to %s: a row needs a title (a new item) or an item_id and a reported_status (a status report)", strings.Join(missing, " and ")))
	}
	return m, nil
}

// headerKey folds a header into lower-case words joined by single spaces:
// "Item Name" → "item name", "Price ($)" → "price", "Qty." → "qty",
// "price_cents" → "price cents".
func headerKey(h string) string {
	var b strings.Builder
	space := false
	for _, r := range strings.ToLower(h) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteRune(r)
			space = false
			continue
		}
		space = true
	}
	return b.String()
}

var (
	itemIDShape   = domain.LazyRegexp(domain.IDPattern(domain.PrefixItem))
	categoryShape = domain.LazyRegexp(`^[a-z0-9_]+(\.[a-z0-9_]+)+$`)
	moneyShape    = domain.LazyRegexp(`^\$\s?[0-9][0-9,]*(\.[0-9]{1,2})?$`)
)

// shapeOf suggests a field from the values of column i when every sampled
// non-empty value has the same recognisable shape.
func shapeOf(t *Table, i int) string {
	var vals []string
	for _, r := range t.Rows {
		if v := strings.TrimSpace(r.Cells[i]); v != "" {
			vals = append(vals, v)
			if len(vals) == shapeRows {
				break
			}
		}
	}
	if len(vals) == 0 {
		return ""
	}
	all := func(ok func(string) bool) bool {
		for _, v := range vals {
			if !ok(v) {
				return false
			}
		}
		return true
	}
	switch {
	case all(itemIDShape().MatchString):
		return FieldItemID
	case all(func(v string) bool { s, ok := normalizeStatus(v); return ok && s != "" }):
		return FieldReportedStatus
	case all(func(v string) bool { c, ok := normalizeCondition(v); return ok && c != "" }):
		return FieldCondition
	case all(moneyShape().MatchString):
		return FieldPrice
	case all(func(v string) bool { _, ok := parseDate(v); return ok }):
		return FieldEffectiveAt
	case all(categoryShape().MatchString):
		return FieldCategory
	}
	return ""
}
