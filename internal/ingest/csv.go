package ingest

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// Limits on CSV input, documented in the README. A file beyond them is
// refused whole (invalid_input); a row beyond them gets a row error.
const (
	// MaxCSVBytes bounds the whole file of a preview or an apply.
	MaxCSVBytes = 5 << 20
	// MaxCSVSampleBytes bounds the header-and-sample a column mapping reads.
	MaxCSVSampleBytes = 128 << 10
	// MaxCSVRows bounds the data rows (after the header) of one file.
	MaxCSVRows = domain.MaxImportRows
	// MaxCSVColumns bounds the columns of one file.
	MaxCSVColumns = 200
	// MaxCSVCellBytes bounds one cell: the longest field a candidate keeps is
	// 4,000 characters, so a larger cell is an export accident (or an
	// attack), not data.
	MaxCSVCellBytes = 16 << 10
	// MaxHeaderName bounds a column name.
	MaxHeaderName = 100
)

// Row issue codes of the parser.
const (
	CodeMalformedQuotes = "malformed_quotes"
	CodeBareQuote       = "bare_quote"
	CodeCellTooLarge    = "cell_too_large"
	CodeTooManyCells    = "too_many_cells"
	CodeShortRow        = "short_row"
	CodeInvalidUTF8     = "invalid_utf8"
)

// Table is a parsed CSV file.
type Table struct {
	Delimiter rune
	HasHeader bool
	// Header holds one unique, normalised name per column: the file's own
	// header, or col_1 … col_N without one (and for an empty header cell).
	Header []string
	Rows   []Row
}

// Row is one data row. Cells has exactly len(Header) entries.
type Row struct {
	Number int // 1-based, after the header; all-empty rows are skipped
	Line   int // 1-based line of the file where the row starts
	Cells  []string
	// OriginalHash is the sha256 of the row's original bytes.
	OriginalHash string
	Issues       []domain.RowIssue
}

// Valid reports whether the row has no error.
func (r Row) Valid() bool {
	for _, i := range r.Issues {
		if i.Severity == domain.SeverityError {
			return false
		}
	}
	return true
}

// ParseCSV parses a CSV file. File-level problems (empty, binary, not UTF-8
// or UTF-16 text, too large, too many rows or columns, no data row) are a
// *domain.InputError on field; problems of one row (malformed quotes, a
// huge cell, a ragged row, bytes that are not UTF-8) are issues of that row,
// and the other rows parse normally.
//
// Quoting is RFC 4180 (encoding/csv). A bare quote inside an unquoted field
// (12" record — inches are everywhere in estate inventories) is kept as text
// with a warning: the file is then re-read with lazy quotes, which is safe
// only because every other quote in it was well formed. A UTF-8 BOM is
// dropped; CR LF, LF and lone CR line ends are accepted; the delimiter is
// comma, or semicolon or tab when the header line says so.
func ParseCSV(field string, data []byte, hasHeader bool) (*Table, error) {
	switch {
	case len(data) == 0:
		return nil, domain.Invalid(field, "the file is empty (0 bytes)")
	case len(data) > MaxCSVBytes:
		return nil, domain.Invalid(field, fmt.Sprintf("the file is larger than %d bytes: split it", MaxCSVBytes))
	}
	if reason := binaryReason(data); reason != "" {
		return nil, domain.Invalid(field, reason)
	}
	data = bytes.TrimPrefix(data, []byte("\xEF\xBB\xBF"))
	if bytes.IndexByte(data, '\n') < 0 && bytes.IndexByte(data, '\r') >= 0 {
		data = bytes.ReplaceAll(data, []byte("\r"), []byte("\n")) // classic Mac line ends
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, domain.Invalid(field, "the file holds no rows")
	}
	t := &Table{Delimiter: detectDelimiter(data), HasHeader: hasHeader}
	recs, bare, err := readRecords(field, data, t.Delimiter, false)
	if err != nil {
		return nil, err
	}
	if len(bare) > 0 && onlyBareQuoteErrors(recs, bare) {
		lazy, _, err := readRecords(field, data, t.Delimiter, true)
		if err != nil {
			return nil, err
		}
		if len(lazy) == len(recs) {
			recs = lazy
			for i := range recs {
				if bare[i] {
					recs[i].issues = append(recs[i].issues, issue(0, "", CodeBareQuote, domain.SeverityWarning,
						"a quote inside an unquoted cell (e.g. 12\" for inches) was kept as text"))
				}
			}
		}
	}
	if len(recs) == 0 {
		return nil, domain.Invalid(field, "the file holds no rows")
	}
	if hasHeader {
		h := recs[0]
		if len(h.issues) > 0 || h.cells == nil {
			return nil, domain.Invalid(field, "the header row (line 1) is malformed: fix its quotes or encoding")
		}
		t.Header = headerNames(h.cells)
		recs = recs[1:]
	} else {
		width := 0
		for _, r := range recs {
			width = max(width, len(r.cells))
		}
		// At least one column, even when no row could be parsed: every
		// row then carries its error under it.
		t.Header = headerNames(make([]string, min(max(width, 1), MaxCSVColumns)))
	}
	if len(t.Header) > MaxCSVColumns {
		return nil, domain.Invalid(field, fmt.Sprintf("the file has %d columns, more than %d", len(t.Header), MaxCSVColumns))
	}
	if len(recs) == 0 {
		return nil, domain.Invalid(field, "the file has a header but no data rows")
	}
	t.Rows = make([]Row, 0, len(recs))
	for i, r := range recs {
		row := Row{Number: i + 1, Line: r.line, OriginalHash: r.hash, Issues: r.issues}
		row.Cells = fitCells(&row, r.cells, t.Header)
		for k := range row.Issues {
			row.Issues[k].Row, row.Issues[k].Line = row.Number, row.Line
		}
		t.Rows = append(t.Rows, row)
	}
	return t, nil
}

// rawRecord is one record as encoding/csv read it.
type rawRecord struct {
	line   int
	cells  []string // nil when the record could not be parsed
	hash   string
	issues []domain.RowIssue
}

// readRecords reads every record. bare marks (by index) records whose only
// problem was a bare quote. All-empty records (",,,") are skipped: a
// spreadsheet pads its exports with them.
func readRecords(field string, data []byte, delim rune, lazy bool) ([]rawRecord, map[int]bool, error) {
	r := csv.NewReader(bytes.NewReader(data))
	r.Comma = delim
	r.FieldsPerRecord = -1
	r.LazyQuotes = lazy
	var (
		recs []rawRecord
		bare = map[int]bool{}
		line = 1
	)
	for {
		start := r.InputOffset()
		rec, err := r.Read()
		end := r.InputOffset()
		if errors.Is(err, io.EOF) {
			break
		}
		raw := data[start:end]
		rr := rawRecord{line: line + countLeadingBlankLines(raw), hash: domain.OriginalHash(bytes.TrimRight(raw, "\r\n"))}
		line += bytes.Count(raw, []byte("\n"))
		var pe *csv.ParseError
		switch {
		case err == nil:
			if allEmpty(rec) {
				continue
			}
			rr.cells = rec
		case errors.As(err, &pe) && errors.Is(pe.Err, csv.ErrBareQuote):
			bare[len(recs)] = true
			rr.issues = append(rr.issues, issue(0, "", CodeMalformedQuotes, domain.SeverityError,
				fmt.Sprintf("a quote inside an unquoted cell at line %d", pe.Line)))
		case errors.As(err, &pe):
			msg := fmt.Sprintf("malformed quotes near line %d, column %d: a quoted cell must end with a quote before the next delimiter", pe.Line, pe.Column)
			if end >= int64(len(data)) && pe.Line > rr.line {
				msg = fmt.Sprintf("a quoted cell opened at line %d is never closed: the rest of the file could not be read", rr.line)
			}
			rr.issues = append(rr.issues, issue(0, "", CodeMalformedQuotes, domain.SeverityError, msg))
		default:
			return nil, nil, domain.Invalid(field, "the file could not be read as CSV")
		}
		recs = append(recs, rr)
		if len(recs) > MaxCSVRows+1 { // +1: the header
			return nil, nil, domain.Invalid(field, fmt.Sprintf("the file has more than %d data rows: split it", MaxCSVRows))
		}
	}
	return recs, bare, nil
}

func onlyBareQuoteErrors(recs []rawRecord, bare map[int]bool) bool {
	for i, r := range recs {
		if len(r.issues) > 0 && !bare[i] {
			return false
		}
	}
	return true
}

// countLeadingBlankLines counts the empty lines encoding/csv skipped before
// a record, so the record's line number is where its text starts.
func countLeadingBlankLines(raw []byte) int {
	n := 0
	for len(raw) > 0 {
		switch {
		case raw[0] == '\n':
			raw = raw[1:]
		case len(raw) > 1 && raw[0] == '\r' && raw[1] == '\n':
			raw = raw[2:]
		default:
			return n
		}
		n++
	}
	return n
}

func allEmpty(rec []string) bool {
	for _, c := range rec {
		if strings.TrimSpace(c) != "" {
			return false
		}
	}
	return true
}

// fitCells bounds, checks and aligns a record's cells to the header.
func fitCells(row *Row, cells []string, header []string) []string {
	out := make([]string, len(header))
	if cells == nil {
		return out
	}
	col := func(i int) string {
		if i < len(header) {
			return header[i]
		}
		return fmt.Sprintf("col_%d", i+1)
	}
	extra := 0
	for i, c := range cells {
		if len(c) > MaxCSVCellBytes {
			row.Issues = append(row.Issues, issue(0, col(i), CodeCellTooLarge, domain.SeverityError,
				fmt.Sprintf("the cell is larger than %d bytes", MaxCSVCellBytes)))
			c = ""
		} else if !utf8.ValidString(c) || strings.ContainsRune(c, utf8.RuneError) {
			row.Issues = append(row.Issues, issue(0, col(i), CodeInvalidUTF8, domain.SeverityError,
				"the cell is not valid UTF-8 (the file was probably saved in another encoding): re-save it as UTF-8 CSV"))
			c = ""
		}
		if i >= len(header) {
			if strings.TrimSpace(c) != "" {
				extra++
			}
			continue
		}
		out[i] = c
	}
	switch {
	case extra > 0:
		row.Issues = append(row.Issues, issue(0, "", CodeTooManyCells, domain.SeverityError,
			fmt.Sprintf("the row has %d cells, the header %d: a delimiter inside a cell must be quoted", len(cells), len(header))))
	case len(cells) < len(header):
		row.Issues = append(row.Issues, issue(0, "", CodeShortRow, domain.SeverityWarning,
			fmt.Sprintf("the row has %d cells, the header %d: the missing cells are empty", len(cells), len(header))))
	}
	return out
}

// headerNames normalises header cells into unique column names.
func headerNames(cells []string) []string {
	names := make([]string, len(cells))
	seen := map[string]int{}
	for i, c := range cells {
		n := domain.Truncate(domain.CleanLine(strings.TrimPrefix(c, "\uFEFF")), MaxHeaderName)
		if n == "" {
			n = fmt.Sprintf("col_%d", i+1)
		}
		if k := seen[n]; k > 0 {
			seen[n] = k + 1
			n = fmt.Sprintf("%s (%d)", n, k+1)
		}
		seen[n]++
		names[i] = n
	}
	return names
}

// detectDelimiter picks comma, or semicolon or tab when the first line holds
// more of them (spreadsheets in comma-decimal locales write semicolons).
func detectDelimiter(data []byte) rune {
	first := data
	if i := bytes.IndexAny(data, "\r\n"); i >= 0 {
		first = data[:i]
	}
	counts := map[rune]int{}
	inQuotes := false
	for _, c := range string(first) {
		switch {
		case c == '"':
			inQuotes = !inQuotes
		case !inQuotes && (c == ',' || c == ';' || c == '\t'):
			counts[c]++
		}
	}
	best := ','
	for _, d := range []rune{';', '\t'} {
		if counts[d] > counts[best] {
			best = d
		}
	}
	return best
}

// binaryReason says why data is not CSV text, or "" when it may be.
func binaryReason(data []byte) string {
	sniffed := http.DetectContentType(data)
	switch {
	case strings.Contains(sniffed, "utf-16"):
		return "the file is UTF-16 text: re-save it as UTF-8 CSV"
	case bytes.IndexByte(data, 0) >= 0:
		return "the file contains NUL bytes: it looks like a binary file (a spreadsheet workbook, an image or an archive), not CSV text"
	case !strings.HasPrefix(sniffed, "text/"):
		mt, _, _ := strings.Cut(sniffed, ";")
		return fmt.Sprintf("the file looks like a binary file (%s), not CSV text: export the spreadsheet as CSV", mt)
	}
	return ""
}

func issue(row int, column, code, severity, msg string) domain.RowIssue {
	return domain.RowIssue{Row: row, Column: column, Code: code, Severity: severity, Message: msg}
}
