package ingest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/triunalabs/trovesnap/internal/domain"
)

func parseOK(t *testing.T, data string) *Table {
	t.Helper()
	tb, err := ParseCSV("csv_text", []byte(data), true)
	if err != nil {
		t.Fatalf("ParseCSV: %v", err)
	}
	return tb
}

func codes(is []domain.RowIssue) []string {
	var out []string
	for _, i := range is {
		out = append(out, i.Code)
	}
	return out
}

func TestParseCSV_QuotedFieldsBOMAndCRLF(t *testing.T) {
	data := "\xEF\xBB\xBFtitle,description,price\r\n" +
		"\"Lamp, brass\",\"two lines\r\nof text\",12.50\r\n" +
		"\"Say \"\"cheese\"\" camera\",,5\r\n"
	tb := parseOK(t, data)
	if !slices.Equal(tb.Header, []string{"title", "description", "price"}) {
		t.Fatalf("header = %q (BOM must be dropped)", tb.Header)
	}
	if len(tb.Rows) != 2 {
		t.Fatalf("rows = %d", len(tb.Rows))
	}
	if got := tb.Rows[0].Cells; !slices.Equal(got, []string{"Lamp, brass", "two lines\nof text", "12.50"}) {
		t.Errorf("row 1 = %q", got)
	}
	if got := tb.Rows[1].Cells[0]; got != `Say "cheese" camera` {
		t.Errorf("escaped quotes = %q", got)
	}
	if tb.Rows[0].Line != 2 || tb.Rows[1].Line != 4 || tb.Rows[1].Number != 2 {
		t.Errorf("lines = %d, %d; number %d", tb.Rows[0].Line, tb.Rows[1].Line, tb.Rows[1].Number)
	}
	for _, r := range tb.Rows {
		if len(r.Issues) != 0 || !strings.HasPrefix(r.OriginalHash, "sha256:") {
			t.Errorf("row %d: issues %v hash %q", r.Number, r.Issues, r.OriginalHash)
		}
	}
	// The same bytes give the same hashes; other bytes other hashes.
	again := parseOK(t, data)
	if again.Rows[0].OriginalHash != tb.Rows[0].OriginalHash || tb.Rows[0].OriginalHash == tb.Rows[1].OriginalHash {
		t.Error("row hashes are not a function of the row bytes")
	}
}

func TestParseCSV_LoneCRLineEnds(t *testing.T) {
	tb := parseOK(t, "title,room\rLamp,den\rChair,kitchen\r")
	if len(tb.Rows) != 2 || tb.Rows[1].Cells[1] != "kitchen" {
		t.Fatalf("rows = %+v", tb.Rows)
	}
}

func TestParseCSV_BareQuoteKeptAsTextWithWarning(t *testing.T) {
	tb := parseOK(t, "title,notes\n12\" LP record,mint\nLamp,ok\n")
	if len(tb.Rows) != 2 || tb.Rows[0].Cells[0] != `12" LP record` {
		t.Fatalf("rows = %+v", tb.Rows)
	}
	if !slices.Equal(codes(tb.Rows[0].Issues), []string{CodeBareQuote}) || !tb.Rows[0].Valid() {
		t.Errorf("issues = %+v", tb.Rows[0].Issues)
	}
}

func TestParseCSV_MalformedQuotesAreRowErrors(t *testing.T) {
	tb := parseOK(t, "title,notes\n\"Lamp\"x,1\nChair,2\n")
	if len(tb.Rows) != 2 {
		t.Fatalf("rows = %+v", tb.Rows)
	}
	if tb.Rows[0].Valid() || !slices.Contains(codes(tb.Rows[0].Issues), CodeMalformedQuotes) {
		t.Errorf("row 1 = %+v", tb.Rows[0])
	}
	if !tb.Rows[1].Valid() || tb.Rows[1].Cells[0] != "Chair" {
		t.Errorf("row 2 = %+v: other rows must parse", tb.Rows[1])
	}
	// An unterminated quote swallows the rest of the file: one row error
	// that says so.
	tb = parseOK(t, "title,notes\nLamp,1\n\"Chair,2\nTable,3\n")
	last := tb.Rows[len(tb.Rows)-1]
	if last.Valid() || !strings.Contains(last.Issues[0].Message, "never closed") || last.Line != 3 {
		t.Errorf("unterminated = %+v", last)
	}
}

func TestParseCSV_RaggedRows(t *testing.T) {
	tb := parseOK(t, "title,room,notes\nLamp,den\nChair,den,x,extra\nTable,den,x,,\n")
	short, long, trailing := tb.Rows[0], tb.Rows[1], tb.Rows[2]
	if !short.Valid() || !slices.Equal(codes(short.Issues), []string{CodeShortRow}) || len(short.Cells) != 3 || short.Cells[2] != "" {
		t.Errorf("short row = %+v", short)
	}
	if long.Valid() || !slices.Equal(codes(long.Issues), []string{CodeTooManyCells}) {
		t.Errorf("long row = %+v", long)
	}
	if !trailing.Valid() || len(trailing.Issues) != 0 {
		t.Errorf("trailing empty cells = %+v", trailing)
	}
}

func TestParseCSV_NonUTF8IsARowError(t *testing.T) {
	tb := parseOK(t, "title,notes\nCaf\xe9 table,latin-1\nLamp,ok\nBad \uFFFD char,x\n")
	if tb.Rows[0].Valid() || !slices.Equal(codes(tb.Rows[0].Issues), []string{CodeInvalidUTF8}) || tb.Rows[0].Cells[0] != "" {
		t.Errorf("latin-1 row = %+v", tb.Rows[0])
	}
	if !tb.Rows[1].Valid() {
		t.Errorf("UTF-8 row = %+v", tb.Rows[1])
	}
	if tb.Rows[2].Valid() {
		t.Errorf("replacement-character row = %+v", tb.Rows[2])
	}
}

func TestParseCSV_HugeCellIsARowErrorAndDropped(t *testing.T) {
	tb := parseOK(t, "title,description\nLamp,"+strings.Repeat("x", 1<<20)+"\nChair,ok\n")
	r := tb.Rows[0]
	if r.Valid() || !slices.Equal(codes(r.Issues), []string{CodeCellTooLarge}) || r.Cells[1] != "" || r.Issues[0].Column != "description" {
		t.Errorf("row = issues %+v, cell of %d bytes", r.Issues, len(r.Cells[1]))
	}
	if !tb.Rows[1].Valid() {
		t.Error("the next row must parse")
	}
}

func TestParseCSV_FileLevelRefusals(t *testing.T) {
	manyRows := "title\n" + strings.Repeat("lamp\n", MaxCSVRows+1)
	manyCols := strings.Repeat("c,", MaxCSVColumns) + "c\n" + strings.Repeat("x,", MaxCSVColumns) + "x\n"
	cases := map[string]struct {
		data, want string
	}{
		"empty":         {"", "empty"},
		"blank":         {" \n\n  \n", "no rows"},
		"header only":   {"title,room\n", "no data rows"},
		"png":           {"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary"},
		"zip (xlsx)":    {"PK\x03\x04\x14\x00\x06\x00", "binary"},
		"pdf":           {"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj", "binary"},
		"nul in text":   {"title\nlamp\x00\n", "NUL"},
		"utf-16":        {"\xff\xfet\x00i\x00t\x00l\x00e\x00", "UTF-16"},
		"too large":     {strings.Repeat("a", MaxCSVBytes+1), "larger than"},
		"too many rows": {manyRows, "more than 10000 data rows"},
		"too many cols": {manyCols, "columns"},
		"bad header":    {"\"title,room\nx,y\n", "header row"},
	}
	for name, c := range cases {
		_, err := ParseCSV("csv_text", []byte(c.data), true)
		var ie *domain.InputError
		if !errors.As(err, &ie) || ie.Field != "csv_text" || !strings.Contains(ie.Reason, c.want) {
			t.Errorf("%s: err = %v, want invalid csv_text mentioning %q", name, err, c.want)
		}
	}
	// Exactly the limit is fine.
	if _, err := ParseCSV("csv_text", []byte("title\n"+strings.Repeat("lamp\n", MaxCSVRows)), true); err != nil {
		t.Errorf("%d rows: %v", MaxCSVRows, err)
	}
}

func TestParseCSV_DelimiterHeadersAndNoHeader(t *testing.T) {
	if tb := parseOK(t, "title;price;room\nLamp;12,50;den\n"); tb.Delimiter != ';' || tb.Rows[0].Cells[1] != "12,50" {
		t.Errorf("semicolon: %+v", tb)
	}
	if tb := parseOK(t, "title\tprice\nLamp\t12\n"); tb.Delimiter != '\t' || tb.Rows[0].Cells[1] != "12" {
		t.Errorf("tab: %+v", tb)
	}
	if tb := parseOK(t, "\"a;b\",c\nx,y\n"); tb.Delimiter != ',' {
		t.Errorf("a delimiter inside quotes does not count: %q", tb.Delimiter)
	}
	tb := parseOK(t, "Title,,Title, Notes\u200b \n a,b,c,d\n")
	if want := []string{"Title", "col_2", "Title (2)", "Notes"}; !slices.Equal(tb.Header, want) {
		t.Errorf("header = %q, want %q", tb.Header, want)
	}
	tb, err := ParseCSV("csv_text", []byte("Lamp,den\nChair,kitchen,extra\n"), false)
	if err != nil || !slices.Equal(tb.Header, []string{"col_1", "col_2", "col_3"}) || len(tb.Rows) != 2 || tb.Rows[0].Number != 1 {
		t.Errorf("no header: %+v %v", tb, err)
	}
}

func TestParseCSV_SkipsEmptyRowsKeepsLineNumbers(t *testing.T) {
	tb := parseOK(t, "title,room\n\nLamp,den\n,,\n , \nChair,den\n")
	if len(tb.Rows) != 2 || tb.Rows[0].Line != 3 || tb.Rows[1].Line != 6 || tb.Rows[1].Number != 2 {
		t.Fatalf("rows = %+v", tb.Rows)
	}
}

func TestSuggestMapping_DeterministicByNameAliasShape(t *testing.T) {
	data := "Item Name,Desc,Qty.,Price ($),Where,Lot #,Mystery,Stuff,Condition\n" +
		"Lamp,brass,2,$12.50,den,A1,item_991,sold,Good\n" +
		"Chair,oak,1,$30,kitchen,A2,item_992,on hold,fair\n"
	tb := parseOK(t, data)
	got := SuggestMapping(tb)
	want := []struct{ field, basis string }{
		{FieldTitle, BasisKnownAlias}, {FieldDescription, BasisKnownAlias}, {FieldQuantity, BasisKnownAlias},
		{FieldPrice, BasisKnownAlias}, {FieldIgnore, BasisNone}, {FieldExternalRef, BasisKnownAlias},
		{FieldItemID, BasisValueShape}, {FieldReportedStatus, BasisValueShape}, {FieldCondition, BasisExactName},
	}
	for i, w := range want {
		if got[i].Field != w.field || got[i].Basis != w.basis || got[i].Confidence != basisConfidence[w.basis] {
			t.Errorf("column %q: %s/%s (%v), want %s/%s", got[i].Column, got[i].Field, got[i].Basis, got[i].Confidence, w.field, w.basis)
		}
	}
	if !slices.Equal(got[0].Sample, []string{"Lamp", "Chair"}) {
		t.Errorf("sample = %q", got[0].Sample)
	}
	// Deterministic.
	for range 5 {
		again := SuggestMapping(parseOK(t, data))
		for i := range got {
			if again[i].Field != got[i].Field {
				t.Fatal("suggestions differ between runs")
			}
		}
	}
}

func TestSuggestMapping_OneColumnPerField(t *testing.T) {
	tb := parseOK(t, "name,title,item\nLamp,Lamp,Lamp\n")
	got := SuggestMapping(tb)
	if got[0].Field != FieldIgnore || got[1].Field != FieldTitle || got[2].Field != FieldIgnore {
		t.Errorf("exact name beats aliases, and a field takes one column: %+v", got)
	}
}

func TestResolveMapping_RefusesWhatCannotWork(t *testing.T) {
	tb := parseOK(t, "title,room,notes\nLamp,den,x\n")
	cases := map[string][]domain.ColumnMapping{
		"unknown column":  {{Column: "nope", Field: FieldTitle}},
		"unknown field":   {{Column: "title", Field: "price"}},
		"duplicate field": {{Column: "title", Field: FieldTitle}, {Column: "notes", Field: FieldTitle}},
		"duplicate col":   {{Column: "title", Field: FieldTitle}, {Column: "title", Field: FieldNotes}},
		"no title":        {{Column: "room", Field: FieldRoom}},
	}
	for name, m := range cases {
		var ie *domain.InputError
		if _, err := ResolveMapping("mapping", tb, m); !errors.As(err, &ie) || ie.Field != "mapping" {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	m, err := ResolveMapping("mapping", tb, []domain.ColumnMapping{{Column: "title", Field: FieldTitle}})
	if err != nil || !slices.Equal(m, Mapping{FieldTitle, FieldIgnore, FieldIgnore}) {
		t.Errorf("unnamed columns are ignored: %v %v", m, err)
	}
	// A status-only file needs no title.
	st := parseOK(t, "item_id,reported_status\nitem_1,sold\n")
	if _, err := ResolveMapping("mapping", st, nil); err != nil {
		t.Errorf("status file: %v", err)
	}
}

func TestNormalize_FieldsParsedAndBounded(t *testing.T) {
	data := "title,quantity,price,price_cents,effective_at,reported_status,item_id,category,room,condition\n" +
		"Lamp,2,\"$1,234.56\",,,,,Electronics > Audio,Living Room,Like New\n" +
		"Chair,0,12.345,,,,,kitchen.cookware,den,good\n" +
		",,,,06/20/2026,Sold,item_991,,,\n" +
		",,,,2026-13-45,maybe,item_992,,,\n" +
		"Table,1,,4500,,available,,,,\n"
	tb := parseOK(t, data)
	m, err := ResolveMapping("mapping", tb, []domain.ColumnMapping{
		{Column: "title", Field: FieldTitle}, {Column: "quantity", Field: FieldQuantity}, {Column: "price", Field: FieldPrice},
		{Column: "effective_at", Field: FieldEffectiveAt}, {Column: "reported_status", Field: FieldReportedStatus},
		{Column: "item_id", Field: FieldItemID}, {Column: "category", Field: FieldCategory}, {Column: "room", Field: FieldRoom},
		{Column: "condition", Field: FieldCondition},
	})
	if err != nil {
		t.Fatal(err)
	}
	rows := NormalizeRows(tb, m, nil)
	r := rows[0]
	if !r.Valid() || r.Quantity != 2 || *r.SuppliedPriceCents != 123456 || r.Category != "electronics.audio" || r.Room != "living_room" ||
		r.Condition != "" || !slices.Contains(codes(r.Issues), CodeUnknownCondition) || r.Kind != domain.CandidateNewItem {
		t.Errorf("row 1 = %+v", r)
	}
	if r := rows[1]; r.Valid() || !slices.Contains(codes(r.Issues), CodeInvalidQuantity) || !slices.Contains(codes(r.Issues), CodeInvalidPrice) {
		t.Errorf("row 2 = %+v", r)
	}
	if r := rows[2]; !r.Valid() || r.Kind != domain.CandidateStatusUpdate || r.ReportedStatus != domain.ItemSold || r.ItemID != "item_991" ||
		r.EffectiveAt == nil || r.EffectiveAt.Format("2006-01-02") != "2026-06-20" {
		t.Errorf("sold report = %+v", r)
	}
	if r := rows[3]; r.Valid() || !slices.Contains(codes(r.Issues), CodeInvalidDate) || !slices.Contains(codes(r.Issues), CodeInvalidStatus) {
		t.Errorf("bad report = %+v", r)
	}
	if r := rows[4]; !r.Valid() || r.Kind != domain.CandidateNewItem || r.ReportedStatus != "" {
		t.Errorf("available is no report: %+v", r)
	}
	// A "…cents" column is whole cents.
	tb = parseOK(t, "title,price_cents\nLamp,4500\n")
	rows = NormalizeRows(tb, Mapping{FieldTitle, FieldPrice}, nil)
	if *rows[0].SuppliedPriceCents != 4500 {
		t.Errorf("cents column = %d", *rows[0].SuppliedPriceCents)
	}
	// Every kept row names its cells for provenance, normalised.
	if len(rows[0].Cells) != 2 || rows[0].Cells[0] != (domain.Cell{Column: "title", Value: "Lamp"}) {
		t.Errorf("cells = %+v", rows[0].Cells)
	}
}

func TestNormalize_FormulaInjectionKeptAsTextAndFlagged(t *testing.T) {
	tb := parseOK(t, "title,notes\n\"=HYPERLINK(\"\"http://evil.example\"\",\"\"click\"\")\",+1 555 0100\n@SUM(A1:A9),\tcmd\n")
	rows := NormalizeRows(tb, Mapping{FieldTitle, FieldNotes}, nil)
	if rows[0].Title != `=HYPERLINK("http://evil.example","click")` || !rows[0].Valid() {
		t.Errorf("formula title = %q (kept as text, valid)", rows[0].Title)
	}
	n := 0
	for _, is := range append(rows[0].Issues, rows[1].Issues...) {
		if is.Code == CodeFormulaLike {
			n++
			if is.Severity != domain.SeverityWarning || strings.Contains(is.Message, "HYPERLINK") {
				t.Errorf("issue = %+v", is)
			}
		}
	}
	if n != 4 {
		t.Errorf("%d formula warnings, want 4", n)
	}
}

func TestNormalize_HiddenTextRemovedAndNoted(t *testing.T) {
	tb := parseOK(t, "title,notes\n\"Lamp\u200b\u202e \x1b[31mred\",\"ok\u2066 hidden\u2069\"\n")
	rows := NormalizeRows(tb, Mapping{FieldTitle, FieldNotes}, nil)
	if rows[0].Title != "Lamp [31mred" || rows[0].Notes != "ok hidden" {
		t.Errorf("title %q notes %q", rows[0].Title, rows[0].Notes)
	}
	if !slices.Contains(codes(rows[0].Issues), CodeTextNormalised) {
		t.Errorf("issues = %+v", rows[0].Issues)
	}
}

func TestNormalize_ReportsProgress(t *testing.T) {
	var b strings.Builder
	b.WriteString("title\n")
	for i := range 2500 {
		fmt.Fprintf(&b, "item %d\n", i)
	}
	tb := parseOK(t, b.String())
	var got [][2]int
	NormalizeRows(tb, Mapping{FieldTitle}, func(done, total int) { got = append(got, [2]int{done, total}) })
	if want := [][2]int{{1000, 2500}, {2000, 2500}, {2500, 2500}}; !slices.Equal(got, want) {
		t.Errorf("progress = %v, want %v", got, want)
	}
}

func TestCleanManualRow_SameRulesAsCSV(t *testing.T) {
	r := domain.ImportRow{Row: 1, Title: "\u200b\u200d", Notes: "=cmd|' /C calc'!A0"}
	CleanManualRow(&r)
	if r.Valid() || !slices.Contains(codes(r.Issues), CodeMissingTitle) || !slices.Contains(codes(r.Issues), CodeFormulaLike) {
		t.Errorf("row = %+v", r)
	}
}
