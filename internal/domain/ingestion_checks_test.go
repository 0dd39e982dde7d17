package domain

import (
	"bytes"
	"slices"
	"testing"
)

// CheckImportRow normalises and refuses on a copy: the caller's row (its
// cells and issues) is as it was, so a backend that checks an import again
// (a retry) starts from the same rows.
func TestCheckImportRow_LeavesTheCallersRowAlone(t *testing.T) {
	in := ImportRow{Row: 3, Line: 4, Kind: CandidateStatusUpdate, Title: " a\tb ",
		Cells:  []Cell{{Column: " title ", Value: "x\r\ny"}},
		Issues: make([]RowIssue, 0, 4)}
	cells := slices.Clone(in.Cells)

	got := CheckImportRow(in)

	if !slices.Equal(in.Cells, cells) || len(in.Issues) != 0 || in.Issues[:cap(in.Issues)][0] != (RowIssue{}) {
		t.Fatalf("the caller's row changed: %+v", in)
	}
	if got.Title != "a b" || got.Cells[0] != (Cell{Column: "title", Value: "x\ny"}) {
		t.Errorf("not normalised: %+v", got)
	}
	want := []string{"item_id"} // reported_status is not checked once the row is invalid
	var cols []string
	for _, is := range got.Issues {
		if is.Row != 3 || is.Line != 4 || is.Code != "invalid_row" || is.Severity != SeverityError {
			t.Errorf("issue %+v", is)
		}
		cols = append(cols, is.Column)
	}
	if !slices.Equal(cols, want) || got.Valid() {
		t.Errorf("issues at %v, want %v", cols, want)
	}
}

// The rows summary names the first five invalid rows by their codes only.
func TestCountValidImportRows(t *testing.T) {
	var rows []ImportRow
	for i := 1; i <= 7; i++ {
		r := ImportRow{Row: i}
		r.MarkItemUnknown()
		r.MarkItemUnknown()
		rows = append(rows, r)
	}
	_, err := CountValidImportRows("rows", rows, true)
	const want = "invalid rows: no row is valid, so nothing was imported: row 1: unknown_item; row 2: unknown_item; " +
		"row 3: unknown_item; row 4: unknown_item; row 5: unknown_item; 7 invalid rows in all"
	if err == nil || err.Error() != want {
		t.Fatalf("err %v, want %s", err, want)
	}
	rows = append(rows, ImportRow{Row: 8})
	if n, err := CountValidImportRows("rows", rows, true); n != 1 || err != nil {
		t.Errorf("skipping invalid rows: %d, %v", n, err)
	}
	if _, err := CountValidImportRows("csv_text", rows, false); err == nil || err.(*InputError).Field != "csv_text" {
		t.Errorf("strict: %v", err)
	}
}

// A payload is the text as it is: no HTML escaping, no trailing newline,
// and the buffer is reused.
func TestEncodeSourcePayload(t *testing.T) {
	var buf bytes.Buffer
	got, err := EncodeSourcePayload(&buf, map[string]string{"t": "<a & b>"})
	if err != nil || string(got) != `{"t":"<a & b>"}` {
		t.Fatalf("%s, %v", got, err)
	}
	if again, _ := EncodeSourcePayload(&buf, 1); string(again) != "1" {
		t.Errorf("reused buffer: %s", again)
	}
}
