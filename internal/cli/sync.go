package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/triunalabs/trovesnap/internal/config"
	"github.com/triunalabs/trovesnap/store"
)

// SyncStatus is what `trovesnap sync status` prints.
type SyncStatus struct {
	Mode   string             `json:"mode"`
	DBPath string             `json:"db_path"`
	Outbox store.OutboxStatus `json:"outbox"`
}

// SyncStatusOptions are the options of `trovesnap sync status`.
type SyncStatusOptions struct {
	DB   string
	JSON bool
}

func newSyncCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "sync", Short: "Live mode's local event outbox"}
	o := &SyncStatusOptions{}
	status := &cobra.Command{
		Use:   "status",
		Short: "Show the backlog of events waiting for Supabase (live mode's outbox)",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.DB = dbFlag(cmd)
			return syncStatusRun(cmd.Context(), f, o)
		},
	}
	status.Flags().BoolVar(&o.JSON, "json", false, "print JSON")
	cmd.AddCommand(status)
	return cmd
}

func syncStatusRun(ctx context.Context, f *Factory, o *SyncStatusOptions) error {
	return withStore(ctx, f, o.DB, func(cfg config.Config, st *store.Store) error {
		ob, err := st.OutboxStatus(ctx)
		if err != nil {
			return err
		}
		s := SyncStatus{Mode: string(cfg.Mode), DBPath: cfg.DBPath, Outbox: ob}
		if o.JSON {
			enc := json.NewEncoder(f.IO.Out)
			enc.SetIndent("", "  ")
			return enc.Encode(s)
		}
		w := f.IO.Out
		fmt.Fprintf(w, "mode:       %s\n", s.Mode)
		fmt.Fprintf(w, "outbox:     %s\n", s.DBPath)
		fmt.Fprintf(w, "pending:    %d event(s)", ob.Pending)
		if ob.OldestPending != nil {
			fmt.Fprintf(w, ", oldest queued %s", ob.OldestPending.Format(time.RFC3339))
		}
		if ob.NextAttempt != nil {
			fmt.Fprintf(w, ", next attempt %s (attempts so far: up to %d)", ob.NextAttempt.Format(time.RFC3339), ob.MaxAttempts)
		}
		fmt.Fprintln(w)
		fmt.Fprintf(w, "rejected:   %d event(s) refused by Supabase as invalid (kept, not retried)\n", ob.Rejected)
		fmt.Fprintf(w, "delivered:  %d event(s) in the last day\n", ob.SentLastDay)
		if ob.LastError != "" {
			fmt.Fprintf(w, "last error: %s\n", ob.LastError)
		}
		return nil
	})
}
