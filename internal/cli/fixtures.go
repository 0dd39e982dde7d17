package cli

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/domain"
)

func newFixturesCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "fixtures", Short: "The deterministic mock data set"}
	cmd.AddCommand(&cobra.Command{
		Use:   "reset",
		Short: "Restore the local database to the fixture seed state (mock mode only)",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := f.Config(dbFlag(cmd))
			if err != nil {
				return err
			}
			if cfg.Mode != domain.ModeMock {
				return fmt.Errorf("%w: fixtures reset runs in mock mode only", errConfig)
			}
			st, err := f.OpenStore(cmd.Context(), cfg, slog.New(slog.DiscardHandler))
			if err != nil {
				return err
			}
			defer st.Close()
			ds := fixtures.Dataset()
			if err := st.Reset(cmd.Context(), ds); err != nil {
				return errors.Join(errors.New("reset failed; the database is unchanged"), err)
			}
			_, err = fmt.Fprintf(f.IO.Out, "reset %s to the fixture data set: %d tenants, %d sales, %d items, %d candidates\n",
				cfg.DBPath, len(ds.Tenants), len(ds.Sales), len(ds.Items), len(ds.Candidates))
			return err
		},
	})
	return cmd
}
