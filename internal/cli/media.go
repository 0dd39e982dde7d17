package cli

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/triunalabs/trovesnap/internal/catalog"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/gate"
	"github.com/triunalabs/trovesnap/internal/ingest"
)

// The tools `media add` calls: both candidate-tier (toolSession.call
// refuses any other).
const (
	toolCreateCandidate = "trove_create_candidate"
	toolAttachPhoto     = "trove_attach_candidate_photo"
)

// mediaMemoryLimit is the soft memory limit of `media add` unless
// GOMEMLIMIT is set.
const mediaMemoryLimit = 48 << 20

// MediaAddOptions are the options of `trovesnap media add`.
type MediaAddOptions struct {
	DB            string
	Paths         []string
	Candidate     string
	Sale          string
	NewCandidates bool
	JSON          bool
}

// MediaAddResult is the output of `media add --json`.
type MediaAddResult struct {
	Photos []MediaAddPhoto `json:"photos"`
	Added  int             `json:"added" jsonschema:"photos attached (replays included)"`
	Failed int             `json:"failed"`
	Mode   domain.Mode     `json:"mode"`
}

// MediaAddPhoto is what became of one file.
type MediaAddPhoto struct {
	Path string `json:"path"`
	// Status is added, replayed (this file was already added to this
	// target: the original result), failed or skipped (not tried after a
	// failure that would fail every photo).
	Status           string      `json:"status"`
	CandidateID      string      `json:"candidate_id,omitempty"`
	CandidateCreated bool        `json:"candidate_created,omitempty"`
	AssetID          string      `json:"asset_id,omitempty"`
	MediaID          string      `json:"media_id,omitempty"`
	ContentHash      string      `json:"content_hash,omitempty"`
	MimeType         string      `json:"mime_type,omitempty"`
	Width            int         `json:"width,omitempty"`
	Height           int         `json:"height,omitempty"`
	ByteSize         int         `json:"byte_size,omitempty"`
	AssetReused      bool        `json:"asset_reused,omitempty"`
	AlreadyAttached  bool        `json:"already_attached,omitempty"`
	Error            *gate.Error `json:"error,omitempty"`
	PluginEventID    string      `json:"plugin_event_id,omitempty"`
}

func newMediaCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "media", Short: "Photos from the seller's disk into TroveSnap, as private candidate media"}
	o := &MediaAddOptions{}
	add := &cobra.Command{
		Use:   "add PATH... (--candidate ID | --sale ID --new-candidates)",
		Short: "Store photos as private source media of a candidate (or one new candidate per photo), through the same gate as the MCP tools",
		Long: "Store photos as private source media of a candidate, or create one candidate per photo in a sale\n" +
			"(its title from the file name) and attach the photo to it.\n\n" +
			"Each photo is one trove_attach_candidate_photo call (after one trove_create_candidate with\n" +
			"--new-candidates) through the same gate as an MCP call: the same client (TROVESNAP_CLIENT_TOKEN, or\n" +
			"the demo client in mock mode when it is unset), checks (type sniffed, pixels bounded before\n" +
			"decoding, a full decode, location metadata removed, hashes, quotas), rate limits, idempotency and\n" +
			"audit events. This command reads the files; no tool ever receives a path. It never publishes and never\n" +
			"touches a canonical item.\n\n" +
			"Idempotency keys derive from each file's sha256 and the target, so running the same command again\n" +
			"replays the original results instead of adding anything twice. A photo that fails writes nothing and\n" +
			"the others still go in; the exit code is 1 when any failed.",
		Args: args(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			o.DB, o.Paths = dbFlag(cmd), a
			if os.Getenv("GOMEMLIMIT") == "" {
				// As `mcp serve`: the GC works before RSS grows, so photos
				// in flight cost CPU, not the host's memory (peak RSS
				// under 100 MB for any batch).
				defer debug.SetMemoryLimit(debug.SetMemoryLimit(mediaMemoryLimit))
			}
			return mediaAddRun(cmd.Context(), f, o)
		},
	}
	fl := add.Flags()
	fl.StringVar(&o.Candidate, "candidate", "", "attach every photo to this candidate")
	fl.StringVar(&o.Sale, "sale", "", "with --new-candidates: the sale the new candidates belong to")
	fl.BoolVar(&o.NewCandidates, "new-candidates", false, "create one candidate per photo in --sale, titled from the file name")
	fl.BoolVar(&o.JSON, "json", false, "print the result as JSON")
	cmd.AddCommand(add)
	return cmd
}

func (o *MediaAddOptions) check() error {
	switch {
	case o.Candidate != "" && (o.Sale != "" || o.NewCandidates):
		return usageError{errors.New("give either --candidate ID or --sale ID --new-candidates, not both")}
	case o.Candidate == "" && o.Sale == "":
		return usageError{errors.New("give --candidate ID, or --sale ID --new-candidates")}
	case o.Sale != "" && !o.NewCandidates:
		return usageError{errors.New("--sale needs --new-candidates (one new candidate per photo); to add photos to an existing candidate use --candidate")}
	case o.NewCandidates && o.Sale == "":
		return usageError{errors.New("--new-candidates needs --sale ID")}
	case o.Candidate != "" && !domain.ValidID(domain.PrefixCandidate, o.Candidate):
		return usageError{fmt.Errorf("--candidate %q is not a candidate id (candidate_…)", o.Candidate)}
	case o.Sale != "" && !domain.ValidID(domain.PrefixSale, o.Sale):
		return usageError{fmt.Errorf("--sale %q is not a sale id (sale_…)", o.Sale)}
	}
	return nil
}

// errPhotosFailed says how many photos of a batch failed (exit 1).
type errPhotosFailed struct{ failed, total int }

func (e errPhotosFailed) Error() string {
	return fmt.Sprintf("%d of %d photos failed (nothing was written for them)", e.failed, e.total)
}

func mediaAddRun(ctx context.Context, f *Factory, o *MediaAddOptions) error {
	if err := o.check(); err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(f.IO.ErrOut, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s, err := f.openGate(ctx, o.DB, logger)
	if err != nil {
		return err
	}
	defer s.close()
	bar := newProgressBar(f.IO.ErrOut)
	defer bar.done()
	note := func(format string, a ...any) { bar.println(f.IO.ErrOut, format, a...) }
	res := MediaAddResult{Photos: make([]MediaAddPhoto, len(o.Paths)), Mode: s.conn.cfg.Mode}
	// A few photos at once: their full decodes run side by side within
	// ingest's decode memory budget, and the gate's budget of argument
	// bytes in flight admits about two photo calls at a time anyway.
	var (
		mu    sync.Mutex
		next  int
		done  int
		stop  *gate.Error
		fatal error
		wg    sync.WaitGroup
	)
	// work adds photos, taking the next index below limit each time.
	work := func(limit int) {
		for {
			mu.Lock()
			i := next
			halt, failed := stop, fatal != nil
			if i >= limit || failed {
				mu.Unlock()
				return
			}
			next++
			mu.Unlock()
			ph := MediaAddPhoto{Path: o.Paths[i]}
			var err error
			if halt != nil {
				ph.Status = "skipped"
				ph.Error = &gate.Error{Code: halt.Code, Message: "Not tried: an earlier photo failed with " + string(halt.Code) + ", which every photo would."}
			} else {
				err = addPhoto(ctx, s, note, o, &ph)
			}
			mu.Lock()
			res.Photos[i] = ph
			done++
			bar.set(done, len(o.Paths), "photos")
			switch {
			case err != nil:
				fatal = cmp.Or(fatal, err)
			case ph.Error != nil && stop == nil && !photoSpecific(ph.Error):
				stop = ph.Error
			}
			mu.Unlock()
		}
	}
	// The first photo alone: a refusal every photo would meet (the
	// target, the client) then stops the batch before any other starts.
	work(1)
	for range mediaWorkers() {
		wg.Add(1)
		go func() { defer wg.Done(); work(len(o.Paths)) }()
	}
	wg.Wait()
	if fatal != nil {
		return fatal
	}
	for _, ph := range res.Photos {
		if ph.Error != nil {
			res.Failed++
		} else {
			res.Added++
		}
	}
	bar.done()
	if err := printMediaAdd(f.IO.Out, o.JSON, res); err != nil {
		return err
	}
	if res.Failed > 0 {
		return errPhotosFailed{res.Failed, len(o.Paths)}
	}
	return nil
}

// mediaWorkers is how many photos `media add` works on at once.
func mediaWorkers() int { return max(1, min(2, runtime.GOMAXPROCS(0))) }

// photoSpecific tells a failure of one photo (its bytes, its file) from one
// every photo of the batch would meet (the target, the client, a quota).
func photoSpecific(e *gate.Error) bool {
	switch {
	case strings.HasPrefix(string(e.Code), "file_"), e.Code == gate.CodeIdempotencyConflict:
		return true
	case e.Code == gate.CodeInvalidInput:
		return e.Field == "image_base64" || e.Field == "mime_type" || e.Field == "title"
	}
	return false
}

// fileError is a failure to read a photo, before any call.
func fileError(code, msg string) *gate.Error {
	return &gate.Error{Code: gate.Code(code), Message: msg}
}

// readPhoto reads one file, bounded by the largest photo a tool accepts.
func readPhoto(path string) ([]byte, *gate.Error) {
	fh, err := openForRead(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fileError("file_not_found", "No such file.")
	case err != nil:
		return nil, fileError("file_unreadable", "The file cannot be opened: "+pathlessError(err))
	}
	defer fh.Close()
	st, err := fh.Stat()
	switch {
	case err != nil:
		return nil, fileError("file_unreadable", "The file cannot be read: "+pathlessError(err))
	case !st.Mode().IsRegular():
		return nil, fileError("file_not_regular", "Not a regular file (a directory, device or pipe).")
	case st.Size() > domain.MaxPhotoBytes:
		return nil, fileError("file_too_large", fmt.Sprintf("The file has %d bytes, over the limit of %d bytes a photo.", st.Size(), domain.MaxPhotoBytes))
	}
	data, err := io.ReadAll(io.LimitReader(fh, domain.MaxPhotoBytes+1))
	switch {
	case err != nil:
		return nil, fileError("file_unreadable", "The file cannot be read: "+pathlessError(err))
	case len(data) > domain.MaxPhotoBytes:
		return nil, fileError("file_too_large", fmt.Sprintf("The file grew over the limit of %d bytes while it was read.", domain.MaxPhotoBytes))
	}
	return data, nil
}

// pathlessError is an OS error without the path it names (the path is in
// the result already).
func pathlessError(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// addPhoto adds one file; its outcome goes into ph. The error return is for
// a failure that ends the command (cancellation).
func addPhoto(ctx context.Context, s *toolSession, note func(string, ...any), o *MediaAddOptions, ph *MediaAddPhoto) error {
	data, ferr := readPhoto(ph.Path)
	if ferr != nil {
		ph.Status, ph.Error = "failed", ferr
		return nil
	}
	sum := sha256.Sum256(data)
	fileHash := hex.EncodeToString(sum[:16])
	candidate := o.Candidate
	if o.NewCandidates {
		// The photo is checked in full before its candidate is created, so
		// a photo the attach would refuse leaves no candidate behind. The
		// attach's own check of the same bytes then skips the decode
		// (ingest remembers the bytes it decoded).
		if _, err := ingest.CheckPhoto("image_base64", data, ""); err != nil {
			var ie *domain.InputError
			if !errors.As(err, &ie) {
				return err
			}
			ph.Status, ph.Error = "failed", &gate.Error{Code: gate.CodeInvalidInput, Field: ie.Field, Message: fmt.Sprintf("Invalid %s: %s.", ie.Field, ie.Reason)}
			return nil
		}
		args, _ := json.Marshal(catalog.CreateCandidateInput{WriteCommon: catalog.WriteCommon{IdempotencyKey: "media-new:" + fileHash + ":" + o.Sale},
			SaleID: o.Sale, Title: titleFromFile(ph.Path)})
		env, err := s.call(ctx, note, toolCreateCandidate, args, nil)
		if err != nil {
			return err
		}
		if env.IsError() {
			ph.Status, ph.Error = "failed", &env.Errors[0]
			ph.PluginEventID = env.Audit.PluginEventID
			return nil
		}
		var c domain.CandidateCreated
		if err := remarshal(env.Data, &c); err != nil {
			return err
		}
		candidate, ph.CandidateCreated = c.CandidateID, !env.Audit.Replayed
	}
	ph.CandidateID = candidate
	env, err := s.call(ctx, note, toolAttachPhoto, attachArgs(candidate, "media-add:"+fileHash+":"+candidate, data), nil)
	if err != nil {
		return err
	}
	ph.PluginEventID = env.Audit.PluginEventID
	if env.IsError() {
		ph.Status, ph.Error = "failed", &env.Errors[0]
		return nil
	}
	var r catalog.CandidateMediaResult
	if err := remarshal(env.Data, &r); err != nil {
		return err
	}
	ph.Status = "added"
	if env.Audit.Replayed {
		ph.Status = "replayed"
	}
	ph.AssetID, ph.MediaID, ph.ContentHash, ph.MimeType = r.AssetID, r.MediaID, r.ContentHash, r.MimeType
	ph.Width, ph.Height, ph.ByteSize, ph.AssetReused, ph.AlreadyAttached = r.Width, r.Height, r.ByteSize, r.AssetReused, r.AlreadyAttached
	return nil
}

// attachArgs builds the arguments of trove_attach_candidate_photo with the
// image base64-encoded straight into them: the standard alphabet needs no
// JSON escaping, and a multi-megabyte photo is not copied again by a
// marshaller.
func attachArgs(candidate, key string, data []byte) json.RawMessage {
	head, _ := json.Marshal(map[string]string{"candidate_id": candidate, "idempotency_key": key})
	var b bytes.Buffer
	b.Grow(len(head) + base64.StdEncoding.EncodedLen(len(data)) + 20)
	b.Write(head[:len(head)-1])
	b.WriteString(`,"image_base64":"`)
	enc := base64.NewEncoder(base64.StdEncoding, &b)
	_, _ = enc.Write(data)
	_ = enc.Close()
	b.WriteString(`"}`)
	return b.Bytes()
}

// titleFromFile is a candidate's title from a photo's file name: without
// its directory and extension, separators as spaces ("oak_chair-2.jpg" →
// "oak chair 2"); the tool cleans and bounds it.
func titleFromFile(path string) string {
	base := filepath.Base(path)
	base = strings.TrimSuffix(base, filepath.Ext(base))
	t := strings.Join(strings.Fields(strings.NewReplacer("_", " ", "-", " ", ".", " ").Replace(base)), " ")
	if t == "" {
		t = "Photo " + filepath.Base(path)
	}
	if r := []rune(t); len(r) > 200 {
		t = string(r[:200])
	}
	return t
}

// remarshal turns an envelope's data (the handler's value, or a replay's
// stored JSON) into v.
func remarshal(data any, v any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

func printMediaAdd(w io.Writer, asJSON bool, res MediaAddResult) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PATH\tSTATUS\tCANDIDATE\tASSET\tDETAIL")
	for _, p := range res.Photos {
		detail := ""
		switch {
		case p.Error != nil:
			detail = string(p.Error.Code) + ": " + p.Error.Message
		case p.AlreadyAttached:
			detail = "already attached"
		case p.CandidateCreated:
			detail = "new candidate"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", displayPath(p.Path), p.Status, dash(p.CandidateID), dash(p.AssetID), detail)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d added, %d failed (%s mode)\n", res.Added, res.Failed, res.Mode)
	return err
}

// displayPath is a path as the table shows it on the seller's terminal: a
// file name is anyone's to choose (the agent writes files too), so a path
// with control or invisible characters (terminal escape sequences, a
// carriage return that overwrites the line) is shown Go-quoted, escaped.
func displayPath(p string) string {
	if domain.TextChanged(p, true) {
		return strconv.Quote(p)
	}
	return p
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
