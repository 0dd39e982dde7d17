package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/triunalabs/trovesnap/internal/buildinfo"
	"github.com/triunalabs/trovesnap/internal/config"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/store"
)

// DoctorReport is what `trovesnap doctor` prints.
type DoctorReport struct {
	Version       string           `json:"version"`
	Mode          string           `json:"mode"`
	ModeReason    string           `json:"mode_reason"`
	DataDir       string           `json:"data_dir"`
	DBPath        string           `json:"db_path"`
	DBPathSource  string           `json:"db_path_source"`
	Synchronous   string           `json:"synchronous"`
	SchemaVersion int              `json:"schema_version"`
	LatestSchema  int              `json:"latest_schema_version"`
	ClientToken   string           `json:"client_token"` // "set" or "unset", never the value
	Rows          map[string]int64 `json:"rows"`
	// Project says whether the data lies inside the current project, where
	// a sandboxed agent may write.
	Project ProjectCheck `json:"project"`
	// Live is set in live mode: Supabase reachability, migration version,
	// the server key's role grants, and the local outbox backlog.
	Live *LiveDoctor `json:"live,omitempty"`
}

// DoctorOptions are the options of `trovesnap doctor`.
type DoctorOptions struct {
	DB   string
	JSON bool
}

func newDoctorCmd(f *Factory) *cobra.Command {
	o := &DoctorOptions{}
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Print the mode (and why), data dir, database path and schema version",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.DB = dbFlag(cmd)
			return doctorRun(cmd.Context(), f, o)
		},
	}
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print JSON")
	return cmd
}

func doctorRun(ctx context.Context, f *Factory, o *DoctorOptions) error {
	return withStore(ctx, f, o.DB, func(cfg config.Config, st *store.Store) error {
		v, err := st.SchemaVersion(ctx)
		if err != nil {
			return err
		}
		rows, err := st.Counts(ctx)
		if err != nil {
			return err
		}
		r := DoctorReport{
			Version: buildinfo.Version, Mode: string(cfg.Mode), ModeReason: cfg.ModeReason, DataDir: cfg.DataDir,
			DBPath: cfg.DBPath, DBPathSource: cfg.DBPathSource, Synchronous: cfg.Synchronous,
			SchemaVersion: v, LatestSchema: store.LatestSchemaVersion(), ClientToken: "unset", Rows: rows,
		}
		if cfg.ClientToken() != "" {
			r.ClientToken = "set"
		}
		r.Project = checkProject(cfg.DataDir, cfg.DBPath)
		if cfg.Mode == domain.ModeLive {
			r.Live = f.liveDoctor(ctx, cfg, st)
		}
		if o.JSON {
			enc := json.NewEncoder(f.IO.Out)
			enc.SetIndent("", "  ")
			if err := enc.Encode(r); err != nil {
				return err
			}
			return r.Live.err()
		}
		w := f.IO.Out
		fmt.Fprintf(w, "trovesnap %s\n", r.Version)
		fmt.Fprintf(w, "mode:            %s (%s)\n", r.Mode, r.ModeReason)
		fmt.Fprintf(w, "data dir:        %s\n", r.DataDir)
		fmt.Fprintf(w, "database:        %s (from %s)\n", r.DBPath, r.DBPathSource)
		fmt.Fprintf(w, "schema version:  %d (latest %d)\n", r.SchemaVersion, r.LatestSchema)
		fmt.Fprintf(w, "durability:      WAL, synchronous=%s\n", r.Synchronous)
		fmt.Fprintf(w, "client token:    %s (TROVESNAP_CLIENT_TOKEN)\n", r.ClientToken)
		r.Project.print(w)
		_, err = fmt.Fprintf(w, "rows:            %d sales, %d items, %d candidates, %d plugin_events\n",
			rows["estate_sales"], rows["items"], rows["inventory_candidates"], rows["plugin_events"])
		if err != nil || r.Live == nil {
			return err
		}
		r.Live.print(w)
		return r.Live.err()
	})
}

// ProjectCheck is doctor's answer to "can an agent working in this project
// write trovesnap's data?". Claude Code's and Codex's sandboxes let the
// commands an agent runs write the project (the working directory, up to
// its git root): data kept there is open to them, whatever the guards say.
type ProjectCheck struct {
	// Root is the project: the git root of the working directory, or the
	// working directory itself outside a repository.
	Root          string `json:"root"`
	DataDirInside bool   `json:"data_dir_inside"`
	DBInside      bool   `json:"db_inside"`
	Warning       string `json:"warning,omitempty"`
}

func checkProject(dataDir, dbPath string) ProjectCheck {
	cwd, err := os.Getwd()
	if err != nil {
		return ProjectCheck{Warning: "the working directory is unknown: cannot tell whether the data lies inside a project"}
	}
	cwd = realPath(cwd)
	pc := ProjectCheck{Root: cwd}
	if g := gitRoot(cwd); g != "" {
		pc.Root = g
	}
	pc.DataDirInside = inside(realPath(dataDir), pc.Root)
	pc.DBInside = inside(realPath(dbPath), pc.Root)
	var what []string
	if pc.DataDirInside {
		what = append(what, "the data directory "+dataDir)
	}
	if pc.DBInside && !pc.DataDirInside {
		what = append(what, "the database "+dbPath)
	}
	if len(what) > 0 {
		pc.Warning = fmt.Sprintf("%s lies inside the project %s, where a sandboxed agent (Claude Code, Codex) may write: "+
			"it could change trovesnap's database. Move it out of the project: unset or change %s and %s (the default is your platform's data directory), "+
			"or run trovesnap from outside the project", strings.Join(what, " and "), pc.Root, config.EnvDataDir, config.EnvDB)
	}
	return pc
}

func (pc ProjectCheck) print(w io.Writer) {
	switch {
	case pc.Warning != "":
		fmt.Fprintf(w, "project:         WARNING: %s\n", pc.Warning)
	default:
		fmt.Fprintf(w, "project:         %s; the data lies outside it (an agent sandboxed to the project cannot write it)\n", pc.Root)
	}
}

// gitRoot returns the nearest directory at or above dir holding .git (a
// directory, or the file of a worktree), or "".
func gitRoot(dir string) string {
	for d := dir; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return ""
		}
		d = parent
	}
}

// realPath resolves symlinks in the longest existing prefix of p, so two
// spellings of one place compare equal.
func realPath(p string) string {
	p = filepath.Clean(p)
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	parent := filepath.Dir(p)
	if parent == p {
		return p
	}
	return filepath.Join(realPath(parent), filepath.Base(p))
}

// inside reports whether path is root or lies below it.
func inside(path, root string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && !filepath.IsAbs(rel) && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}
