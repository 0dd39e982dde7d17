package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os/user"
	"strings"

	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/config"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/store"
)

// resetConfirmWord is what the seller types to confirm `fixtures reset`.
const resetConfirmWord = "reset"

// FixturesResetOptions are the options of `fixtures reset`.
type FixturesResetOptions struct {
	// DiscardAuditEvents confirms without a terminal; the flag names what is
	// lost, so a script that passes it says so in its own text.
	DiscardAuditEvents bool
	// PassphraseStdin reads the seller's approval passphrase from the first
	// line of standard input (scripts); otherwise it is asked on the terminal.
	PassphraseStdin bool
	DB              string
}

func newFixturesCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "fixtures", Short: "The deterministic mock data set"}
	o := &FixturesResetOptions{}
	reset := &cobra.Command{
		Use:   "reset",
		Short: "Restore the local database to the fixture seed state, discarding its audit log (mock mode only)",
		Long: "Replace every record of the local mock database with the fixture data set. This discards the\n" +
			"audit log (every plugin_event): the new log starts with one event that records the reset, who\n" +
			"asked, how many events were discarded and the head of every discarded chain.\n\n" +
			"On a terminal it asks you to type \"" + resetConfirmWord + "\"; without one, pass --discard-audit-events.\n\n" +
			"A reset reactivates every client and restores every limit of the seed, so it needs the seller's\n" +
			"approval passphrase (asked on the terminal, or --passphrase-stdin) and refuses inside an agent's shell.",
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.DB = dbFlag(cmd)
			return fixturesResetRun(cmd.Context(), f, o)
		},
	}
	reset.Flags().BoolVar(&o.DiscardAuditEvents, "discard-audit-events", false,
		"confirm without a terminal that the audit log (every plugin_event) is discarded")
	reset.Flags().BoolVar(&o.PassphraseStdin, "passphrase-stdin", false,
		"read the seller's approval passphrase from the first line of standard input (a reset reactivates clients and restores limits)")
	cmd.AddCommand(reset)
	return cmd
}

func fixturesResetRun(ctx context.Context, f *Factory, o *FixturesResetOptions) error {
	cfg, err := f.Config(o.DB)
	if err != nil {
		return err
	}
	if cfg.Mode != domain.ModeMock {
		return fmt.Errorf("%w: fixtures reset runs in mock mode only", errConfig)
	}
	return withConfiguredStore(ctx, f, cfg, func(cfg config.Config, st *store.Store) error {
		return fixturesReset(ctx, f, o, cfg, st)
	})
}

// fixturesReset is the reset itself, on the open mock store.
func fixturesReset(ctx context.Context, f *Factory, o *FixturesResetOptions, cfg config.Config, st *store.Store) error {
	// A reset restores every client's status and every limit to the seed:
	// it reactivates what the seller suspended or revoked and undoes what
	// they lowered, so it widens authority like `client reactivate` or a
	// raising `limits set` — the same tripwire and passphrase.
	if _, err := authorize(ctx, f, cfg, st, sellerGate{Command: "fixtures reset", Stdin: o.PassphraseStdin}); err != nil {
		return err
	}
	heads, err := st.ChainHeads(ctx)
	if err != nil {
		return err
	}
	var events int64
	for _, h := range heads {
		events += h.Events
	}
	loss := fmt.Sprintf("%d audit event(s) in %d chain(s)", events, len(heads))
	if !o.DiscardAuditEvents {
		in, ok := f.IO.In.(interface{ Fd() uintptr })
		if !ok || !term.IsTerminal(in.Fd()) {
			return usageError{fmt.Errorf("fixtures reset discards %s of %s and is not confirmed: run it on a terminal and type %q, or pass --discard-audit-events; nothing was changed",
				loss, cfg.DBPath, resetConfirmWord)}
		}
		fmt.Fprintf(f.IO.ErrOut, "This replaces every record of %s with the fixture data set and discards %s.\n", cfg.DBPath, loss)
		for _, h := range heads {
			fmt.Fprintf(f.IO.ErrOut, "  chain %s: %d events, head %s (%s)\n", auditTenant(h.TenantID), h.Events, h.EventID, h.EventHash)
		}
		fmt.Fprintf(f.IO.ErrOut, "Type %q to confirm: ", resetConfirmWord)
		line, err := bufio.NewReaderSize(io.LimitReader(f.IO.In, 256), 256).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("reading the confirmation: %w", err)
		}
		if strings.TrimSpace(line) != resetConfirmWord {
			return usageError{errors.New("fixtures reset not confirmed; nothing was changed")}
		}
	}
	ds := fixtures.Dataset()
	res, err := st.Reset(ctx, ds, localUser())
	if err != nil {
		return errors.Join(errors.New("reset failed; the database is unchanged"), err)
	}
	_, err = fmt.Fprintf(f.IO.Out, "reset %s to the fixture data set: %d tenants, %d sales, %d items, %d candidates\n"+
		"discarded %d audit event(s) in %d chain(s); the new log starts with %s (%s), which records them\n",
		cfg.DBPath, len(ds.Tenants), len(ds.Sales), len(ds.Items), len(ds.Candidates),
		res.DiscardedEvents, len(res.OldHeads), res.EventID, store.ResetAction)
	return err
}

// localUser names the OS user who ran a command, for the audit record.
func localUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "unknown"
}
