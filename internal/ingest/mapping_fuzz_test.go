package ingest

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// FuzzCSVColumnMap: for any CSV and any column map (the JSON "mapping"
// input; anything that is not a JSON list of {column, field} means none, so
// the header inference runs), suggesting and resolving a mapping never
// panic; a suggestion names each column once with a known field, one column
// per field; a refusal is an InputError on "mapping"; an accepted mapping has
// one known field per existing column, fills each field from one column at
// most, can make a candidate, and is exactly what the caller asked for (or
// what was suggested).
func FuzzCSVColumnMap(f *testing.F) {
	f.Add([]byte("title,price\nLamp,12\n"), true, []byte(`[{"column":"title","field":"title"},{"column":"price","field":"supplied_price_cents"}]`))
	f.Add([]byte("Item Name,Qty.,Price ($)\nLamp,2,$12.50\n"), true, []byte(`null`))
	f.Add([]byte("item_991,sold\nitem_992,sold\n"), false, []byte(`[{"column":"col_1","field":"item_id"},{"column":"col_2","field":"reported_status"}]`))
	f.Add([]byte("a,b\nx,y\n"), true, []byte(`[{"column":"a","field":"title"},{"column":"a","field":"notes"}]`))
	f.Add([]byte("a,b\nx,y\n"), true, []byte(`[{"column":"a","field":"title"},{"column":"b","field":"title"}]`))
	f.Add([]byte("a,b\nx,y\n"), true, []byte(`[{"column":"c","field":"title"}]`))
	f.Add([]byte("a,b\nx,y\n"), true, []byte(`[{"column":"a","field":"price"}]`))
	f.Add([]byte("a,b\nx,y\n"), true, []byte(`[]`))
	f.Add([]byte("a,a\nx,y\n"), true, []byte(`[{"column":"a","field":"title"}]`))
	f.Add([]byte("date,status,item id\n2026-01-02,sold,item_1\n"), true, []byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte, header bool, mapJSON []byte) {
		tb, err := ParseCSV("csv_text", data, header)
		if err != nil {
			return // FuzzParseCSV covers the parser's refusals
		}
		sug := SuggestMapping(tb)
		if len(sug) != len(tb.Header) {
			t.Fatalf("%d suggestions for %d columns", len(sug), len(tb.Header))
		}
		suggested := map[string]bool{}
		for i, s := range sug {
			if s.Index != i || s.Column != tb.Header[i] || !slices.Contains(Fields, s.Field) || len(s.Sample) > sampleValues {
				t.Fatalf("suggestion %d: %+v", i, s)
			}
			if c, ok := basisConfidence[s.Basis]; !ok || c != s.Confidence || (s.Field == FieldIgnore) != (s.Basis == BasisNone) {
				t.Fatalf("suggestion %d: basis %q confidence %v field %q", i, s.Basis, s.Confidence, s.Field)
			}
			if s.Field != FieldIgnore && suggested[s.Field] {
				t.Fatalf("field %s suggested twice", s.Field)
			}
			suggested[s.Field] = true
		}

		var explicit []domain.ColumnMapping
		if json.Unmarshal(mapJSON, &explicit) != nil {
			explicit = nil
		}
		m, err := ResolveMapping("mapping", tb, explicit)
		if err != nil {
			var ie *domain.InputError
			if !errors.As(err, &ie) || ie.Field != "mapping" {
				t.Fatalf("refusal is not an InputError on mapping: %v", err)
			}
			return
		}
		if len(m) != len(tb.Header) {
			t.Fatalf("mapping of %d for %d columns", len(m), len(tb.Header))
		}
		filled := map[string]bool{}
		for _, fld := range m {
			if !slices.Contains(Fields, fld) {
				t.Fatalf("unknown field %q accepted", fld)
			}
			if fld != FieldIgnore && filled[fld] {
				t.Fatalf("field %s filled by two columns", fld)
			}
			filled[fld] = true
		}
		if len(MissingRequired(m)) > 0 {
			t.Fatalf("a mapping that makes no candidate accepted: %v", m)
		}
		if explicit == nil {
			for i, s := range sug {
				if m[i] != s.Field {
					t.Fatalf("column %d: resolved %q, suggested %q", i, m[i], s.Field)
				}
			}
			return
		}
		named := make([]bool, len(m))
		for _, cm := range explicit {
			idx := slices.Index(tb.Header, cm.Column)
			if idx < 0 {
				t.Fatalf("entry for a column that does not exist accepted: %q", cm.Column)
			}
			if m[idx] != cm.Field {
				t.Fatalf("column %q: asked %q, resolved %q", cm.Column, cm.Field, m[idx])
			}
			named[idx] = true
		}
		for i, fld := range m {
			if !named[i] && fld != FieldIgnore {
				t.Fatalf("column %q not named but mapped to %s", tb.Header[i], fld)
			}
		}
	})
}
