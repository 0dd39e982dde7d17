package cli

import (
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/triunalabs/trovesnap/internal/buildinfo"
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
	// Live is set in live mode: Supabase reachability, migration version,
	// the server key's role grants, and the local outbox backlog.
	Live *LiveDoctor `json:"live,omitempty"`
}

func newDoctorCmd(f *Factory) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Print the mode (and why), data dir, database path and schema version",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := f.Config(dbFlag(cmd))
			if err != nil {
				return err
			}
			st, err := f.OpenStore(cmd.Context(), cfg, slog.New(slog.DiscardHandler))
			if err != nil {
				return err
			}
			defer st.Close()
			v, err := st.SchemaVersion(cmd.Context())
			if err != nil {
				return err
			}
			rows, err := st.Counts(cmd.Context())
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
			if cfg.Mode == domain.ModeLive {
				r.Live = f.liveDoctor(cmd.Context(), cfg, st)
			}
			if asJSON {
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
			_, err = fmt.Fprintf(w, "rows:            %d sales, %d items, %d candidates, %d plugin_events\n",
				rows["estate_sales"], rows["items"], rows["inventory_candidates"], rows["plugin_events"])
			if err != nil || r.Live == nil {
				return err
			}
			r.Live.print(w)
			return r.Live.err()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
