package ingest

import (
	"errors"
	"strings"
	"testing"
	"unicode"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// FuzzParseCSV: whatever the bytes, parsing and normalising never panic,
// fail only with an InputError, keep every row aligned to the header and
// within the limits, and leave no hidden character in any normalised text.
// The seed corpus is testdata/fuzz/FuzzParseCSV (plain `go test` runs it).
func FuzzParseCSV(f *testing.F) {
	f.Add([]byte("title,price\nLamp,12\n"), true)
	f.Fuzz(func(t *testing.T, data []byte, header bool) {
		tb, err := ParseCSV("csv_text", data, header)
		if err != nil {
			var ie *domain.InputError
			if !errors.As(err, &ie) || ie.Field != "csv_text" {
				t.Fatalf("error is not an InputError on csv_text: %v", err)
			}
			return
		}
		if len(tb.Header) == 0 || len(tb.Header) > MaxCSVColumns || len(tb.Rows) == 0 || len(tb.Rows) > MaxCSVRows {
			t.Fatalf("header %d columns, %d rows", len(tb.Header), len(tb.Rows))
		}
		seen := map[string]bool{}
		for _, h := range tb.Header {
			if seen[h] || h == "" || hidden(h, true) {
				t.Fatalf("bad column name %q", h)
			}
			seen[h] = true
		}
		for i, r := range tb.Rows {
			if r.Number != i+1 || len(r.Cells) != len(tb.Header) || !strings.HasPrefix(r.OriginalHash, "sha256:") {
				t.Fatalf("row %d: number %d, %d cells", i, r.Number, len(r.Cells))
			}
			for _, c := range r.Cells {
				if len(c) > MaxCSVCellBytes {
					t.Fatalf("cell of %d bytes kept", len(c))
				}
			}
		}
		m, err := ResolveMapping("mapping", tb, nil)
		if err != nil {
			m = make(Mapping, len(tb.Header))
			for i := range m {
				m[i] = FieldIgnore
			}
			m[0] = FieldTitle
		}
		for _, r := range NormalizeRows(tb, m, nil) {
			for _, s := range []string{r.Title, r.ExternalRef, r.Category, r.Room, r.Condition, r.ItemID, r.ReportedStatus} {
				if hidden(s, true) {
					t.Fatalf("hidden character in %q", s)
				}
			}
			for _, s := range []string{r.Description, r.Notes} {
				if hidden(s, false) {
					t.Fatalf("hidden character in %q", s)
				}
			}
			if r.Valid() && r.Kind == domain.CandidateNewItem && r.Title == "" {
				t.Fatal("a valid new item without a title")
			}
			if domain.RuneLen(r.Title) > MaxTitle || domain.RuneLen(r.Description) > MaxLongText {
				t.Fatal("a field over its bound")
			}
		}
	})
}

// FuzzCheckPhoto: whatever the bytes and the claimed type, the checks never
// panic, fail only with an InputError, and accept only a decoded image of an
// accepted type within the pixel limits, hashed as stored (location
// metadata removed).
func FuzzCheckPhoto(f *testing.F) {
	f.Add([]byte("\x89PNG\r\n\x1a\n"), "image/png")
	f.Fuzz(func(t *testing.T, data []byte, claimed string) {
		up, err := CheckPhoto("image_base64", data, claimed)
		if err != nil {
			var ie *domain.InputError
			if !errors.As(err, &ie) {
				t.Fatalf("error is not an InputError: %v", err)
			}
			return
		}
		if _, ok := photoTypes[up.MimeType]; !ok || up.Width <= 0 || up.Height <= 0 ||
			int64(up.Width)*int64(up.Height) > domain.MaxPhotoPixels || up.Size != len(up.Bytes) || up.ContentHash != domain.OriginalHash(up.Bytes) {
			t.Fatalf("accepted %+v", up)
		}
		if claimed != "" && !strings.EqualFold(claimed, up.MimeType) {
			t.Fatalf("accepted a claim of %q for %s", claimed, up.MimeType)
		}
	})
}

// hidden reports a character normalised text must not hold.
func hidden(s string, line bool) bool {
	for _, r := range s {
		switch {
		case r == '\n' || r == '\t':
			if line {
				return true
			}
		case unicode.IsControl(r), unicode.Is(unicode.Cf, r), unicode.Is(unicode.Co, r):
			return true
		}
	}
	return false
}
