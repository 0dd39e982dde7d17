package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/triunalabs/trovesnap/internal/buildinfo"
)

// Main runs the CLI with the process's arguments and returns the exit code.
func Main() ExitCode {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Run(ctx, DefaultFactory(), os.Args[1:])
}

// Run executes one command line with a factory and returns its exit code;
// errors are printed to the factory's stderr.
func Run(ctx context.Context, f *Factory, argv []string) ExitCode {
	cmd := NewRootCmd(f)
	cmd.SetArgs(argv)
	err := cmd.ExecuteContext(ctx)
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(f.IO.ErrOut, "trovesnap:", err)
	}
	return exitCodeFor(err)
}

// NewRootCmd builds a fresh command tree (no package-level state, so tests
// build their own).
func NewRootCmd(f *Factory) *cobra.Command {
	root := &cobra.Command{
		Use:           "trovesnap",
		Short:         "Governed MCP server for TroveSnap estate-sale inventory",
		Version:       buildinfo.Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(f.IO.In)
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	root.PersistentFlags().String("db", "", "SQLite database path (env TROVESNAP_DB; default: the platform data dir)")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(
		newVersionCmd(f),
		newMCPCmd(f),
		newFixturesCmd(f),
		newDoctorCmd(f),
		newClientCmd(f),
		newToolsCmd(f),
		newLimitsCmd(f),
		newPolicyCmd(f),
		newSaleCmd(f),
		newPassphraseCmd(f),
		newApproveCmd(f, nil),
		newLoginCmd(f, nil),
		newLogoutCmd(f),
		newAuditCmd(f),
		newSyncCmd(f),
		newMediaCmd(f),
		newImportCmd(f),
	)
	return root
}

// dbFlag reads the persistent --db flag.
func dbFlag(cmd *cobra.Command) string {
	v, _ := cmd.Flags().GetString("db")
	return v
}

// args wraps a cobra.PositionalArgs so its failures are usage errors.
func args(p cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if err := p(cmd, a); err != nil {
			return usageError{err}
		}
		return nil
	}
}

func newVersionCmd(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(f.IO.Out, "trovesnap %s (commit %s, built %s)\n", buildinfo.Version, buildinfo.Commit, buildinfo.Date)
			return err
		},
	}
}
