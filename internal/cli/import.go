package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/triunalabs/trovesnap/internal/catalog"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/gate"
)

// The CSV tools `import csv` calls: both candidate-tier.
const (
	toolPreviewCSV = "trove_preview_csv_import"
	toolApplyCSV   = "trove_apply_csv_import"
)

// ImportCSVOptions are the options of `trovesnap import csv`.
type ImportCSVOptions struct {
	DB              string
	File            string
	Sale            string
	MapFile         string
	Preview         bool
	NoHeader        bool
	SkipInvalidRows bool
	SourceLabel     string
	JSON            bool
}

func newImportCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "import", Short: "Files from the seller's disk into TroveSnap, as candidates for review"}
	o := &ImportCSVOptions{}
	csvCmd := &cobra.Command{
		Use:   "csv FILE --sale ID [--map FILE] [--preview]",
		Short: "Preview or apply a CSV import for a sale, through the same gate as the MCP tools",
		Long: "Preview (--preview: trove_preview_csv_import, writes nothing) or apply (trove_apply_csv_import) a CSV\n" +
			"of items for a sale. Every row becomes a candidate for review, or a status_update candidate for a\n" +
			"sold-report row; no canonical item is created or changed. The call goes through the same gate as an\n" +
			"MCP call: the same client (TROVESNAP_CLIENT_TOKEN, or the demo client in mock mode when it is unset),\n" +
			"checks, rate limits, idempotency and audit events. This command reads the file; no tool ever receives\n" +
			"a path.\n\n" +
			"--map FILE is JSON: an array of {\"column\": \"<CSV header>\", \"field\": \"<candidate field>\"}, or an object\n" +
			"whose \"mapping\" is that array (the data of trove_map_csv_columns or of a preview's --json output).\n" +
			"Without it the suggested mapping is used.\n\n" +
			"The apply's idempotency key derives from the file's sha256, the sale and the options, so running the\n" +
			"same command again replays the original import. --json prints the tool's envelope.",
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			o.DB, o.File = dbFlag(cmd), a[0]
			return importCSVRun(cmd.Context(), f, o)
		},
	}
	fl := csvCmd.Flags()
	fl.StringVar(&o.Sale, "sale", "", "the sale every row belongs to (required)")
	fl.StringVar(&o.MapFile, "map", "", "a JSON column mapping (see above); default: the suggested mapping")
	fl.BoolVar(&o.Preview, "preview", false, "show what the import would create; write nothing")
	fl.BoolVar(&o.NoHeader, "no-header", false, "the first row is data, not a header (columns are then col_1, col_2, …)")
	fl.BoolVar(&o.SkipInvalidRows, "skip-invalid-rows", false, "apply: import the valid rows and report the others (default: any invalid row fails the whole import and nothing is written)")
	fl.StringVar(&o.SourceLabel, "source-label", "", "apply: where the file came from, kept as provenance (e.g. \"family inventory spreadsheet\")")
	fl.BoolVar(&o.JSON, "json", false, "print the tool's envelope as JSON")
	cmd.AddCommand(csvCmd)
	return cmd
}

// readMapping reads a --map file: an array of column mappings, or an object
// with a "mapping" array (other fields of such an object are ignored, so a
// tool's data can be saved and passed as is).
func readMapping(path string) ([]catalog.ColumnMapping, error) {
	b, err := readBounded(path, 1<<20)
	if err != nil {
		return nil, usageError{fmt.Errorf("--map %s: %w", path, err)}
	}
	var m []catalog.ColumnMapping
	strict := func(raw []byte) error {
		d := json.NewDecoder(bytes.NewReader(raw))
		d.DisallowUnknownFields()
		return d.Decode(&m)
	}
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '{' {
		var obj struct {
			Mapping json.RawMessage `json:"mapping"`
		}
		if err := json.Unmarshal(t, &obj); err != nil || obj.Mapping == nil {
			return nil, usageError{fmt.Errorf("--map %s: want a JSON array of {\"column\", \"field\"} or an object with a \"mapping\" array", path)}
		}
		b = obj.Mapping
	}
	if err := strict(b); err != nil {
		return nil, usageError{fmt.Errorf("--map %s: want a JSON array of {\"column\": \"…\", \"field\": \"…\"}: %v", path, err)}
	}
	if len(m) == 0 {
		return nil, usageError{fmt.Errorf("--map %s: the mapping is empty", path)}
	}
	return m, nil
}

// readBounded reads a file of at most limit bytes.
func readBounded(path string, limit int64) ([]byte, error) {
	fh, err := openForRead(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errors.New("no such file")
		}
		return nil, errors.New(pathlessError(err))
	}
	defer fh.Close()
	if st, err := fh.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	b, err := io.ReadAll(io.LimitReader(fh, limit+1))
	if err != nil {
		return nil, errors.New(pathlessError(err))
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("over the limit of %d bytes", limit)
	}
	return b, nil
}

// errImportFailed carries a refused import's first error (exit 1).
type errImportFailed struct{ e gate.Error }

func (e errImportFailed) Error() string {
	if e.e.Field != "" {
		return fmt.Sprintf("%s (%s, %s)", e.e.Message, e.e.Code, e.e.Field)
	}
	return fmt.Sprintf("%s (%s)", e.e.Message, e.e.Code)
}

func importCSVRun(ctx context.Context, f *Factory, o *ImportCSVOptions) error {
	if o.Sale == "" {
		return usageError{errors.New("--sale ID is required")}
	}
	if !domain.ValidID(domain.PrefixSale, o.Sale) {
		return usageError{fmt.Errorf("--sale %q is not a sale id (sale_…)", o.Sale)}
	}
	if o.Preview && (o.SkipInvalidRows || o.SourceLabel != "") {
		return usageError{errors.New("--skip-invalid-rows and --source-label apply to an import, not a --preview")}
	}
	var mapping []catalog.ColumnMapping
	if o.MapFile != "" {
		m, err := readMapping(o.MapFile)
		if err != nil {
			return err
		}
		mapping = m
	}
	text, err := readBounded(o.File, catalog.MaxCSVText)
	if err != nil {
		return usageError{fmt.Errorf("%s: %w", o.File, err)}
	}
	var header *bool
	if o.NoHeader {
		header = new(bool)
	}
	tool, args := toolPreviewCSV, any(catalog.PreviewCSVImportInput{SaleID: o.Sale, CSVText: string(text), HasHeader: header, Mapping: mapping})
	if !o.Preview {
		in := catalog.ApplyCSVImportInput{SaleID: o.Sale, CSVText: string(text), HasHeader: header, Mapping: mapping,
			SourceLabel: o.SourceLabel, SkipInvalidRows: o.SkipInvalidRows}
		// The key: the file, the sale and every option, so the same command
		// replays and a changed mapping is a new import, not a conflict.
		opts, _ := json.Marshal(struct {
			Sale    string                  `json:"s"`
			Mapping []catalog.ColumnMapping `json:"m"`
			Header  *bool                   `json:"h"`
			Label   string                  `json:"l"`
			Skip    bool                    `json:"k"`
		}{o.Sale, mapping, header, o.SourceLabel, o.SkipInvalidRows})
		fileSum, optSum := sha256.Sum256(text), sha256.Sum256(opts)
		in.IdempotencyKey = "import-csv:" + hex.EncodeToString(fileSum[:16]) + ":" + hex.EncodeToString(optSum[:8])
		tool, args = toolApplyCSV, in
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return err
	}
	text = nil
	logger := slog.New(slog.NewTextHandler(f.IO.ErrOut, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s, err := f.openGate(ctx, o.DB, logger)
	if err != nil {
		return err
	}
	defer s.close()
	bar := newProgressBar(f.IO.ErrOut)
	defer bar.done()
	env, err := s.call(ctx, func(format string, a ...any) { bar.println(f.IO.ErrOut, format, a...) }, tool, raw, bar.set)
	bar.done()
	if err != nil {
		return err
	}
	if err := printImport(f.IO.Out, o, env); err != nil {
		return err
	}
	if env.IsError() {
		return errImportFailed{env.Errors[0]}
	}
	return nil
}

func printImport(w io.Writer, o *ImportCSVOptions, env *gate.Envelope) error {
	if o.JSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(env)
	}
	if env.IsError() {
		return nil // the error goes to stderr
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if o.Preview {
		var p catalog.PreviewCSVImportOutput
		if err := remarshal(env.Data, &p); err != nil {
			return err
		}
		fmt.Fprintf(tw, "rows\t%d (%d valid, %d invalid)\n", p.RowsTotal, p.RowsValid, p.RowsInvalid)
		fmt.Fprintf(tw, "would create\t%d candidates, %d status_update candidates\n", p.WouldCreateCandidates, p.WouldCreateStatusCandidates)
		fmt.Fprintf(tw, "content hash\t%s\n", p.ContentHash)
		for _, m := range p.Mapping {
			fmt.Fprintf(tw, "column %q\t→ %s\n", m.Column, m.Field)
		}
		for _, c := range p.IssueCounts {
			fmt.Fprintf(tw, "%s %s\t%d rows\n", c.Severity, c.Code, c.Rows)
		}
		for i, is := range p.Issues {
			if i == 20 {
				fmt.Fprintf(tw, "…\t%d more issues (--json lists the first %d)\n", len(p.Issues)-20, len(p.Issues))
				break
			}
			fmt.Fprintf(tw, "line %d\t%s %s %q: %s\n", is.Line, is.Severity, is.Code, is.Column, is.Message)
		}
		fmt.Fprintln(tw, "nothing written\t(preview)")
		return tw.Flush()
	}
	var r catalog.ImportResult
	if err := remarshal(env.Data, &r); err != nil {
		return err
	}
	replay := ""
	if env.Audit.Replayed {
		replay = " (a replay: this file was already imported with these options)"
	}
	fmt.Fprintf(tw, "import run\t%s%s\n", r.ImportRunID, replay)
	fmt.Fprintf(tw, "status\t%s\n", r.Status)
	fmt.Fprintf(tw, "candidates\t%d new_item, %d status_update (review status %s)\n", r.CandidateCount, r.StatusUpdateCandidateCount, r.ReviewStatus)
	fmt.Fprintf(tw, "rejected rows\t%d\n", r.RejectedRowCount)
	for _, w := range env.Warnings {
		fmt.Fprintf(tw, "warning %s\t%s\n", w.Code, w.Message)
	}
	return tw.Flush()
}
