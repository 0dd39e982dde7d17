package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"
	"unicode/utf8"

	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"

	"github.com/triunalabs/trovesnap/internal/config"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/store"
)

// The seller's approval passphrase guards every command that grants or
// widens authority: approve/deny in `trovesnap approve`, `policy create`
// and `policy enable`, `client register|reactivate|rotate`, and `limits
// set` when it raises a limit. It is asked on the terminal with echo off,
// or read from standard input with --passphrase-stdin (for provisioning
// scripts) — never from an argument or an environment variable, where an
// agent or a process listing would see it.

// Passphrase length bounds, in characters and bytes.
const (
	minPassphraseChars = 12
	maxPassphraseBytes = 1024
)

// errPassphraseNeeded: the command needs the passphrase and has no way to
// ask for it (no terminal, no --passphrase-stdin).
var errPassphraseNeeded = errors.New("the seller's approval passphrase is needed")

const passphraseSetHint = "the seller sets one first, at their own terminal: `trovesnap passphrase set --as USER` (live mode: `trovesnap passphrase set`)"

// claim is a flag naming the user a command acts as.
type claim struct{ flag, value string }

// sellerGate describes one command that grants or widens authority.
type sellerGate struct {
	Command string // e.g. "policy enable", for messages and the audit
	Tenant  string // the tenant it acts in, when known (audit only)
	Stdin   bool   // --passphrase-stdin
	// Claims are flags naming the acting user. In mock mode the command
	// acts as the passphrase's owner: a claim naming anyone else is
	// refused before the passphrase is asked.
	Claims []claim
	// Prompt is where the terminal prompt goes (default stderr).
	Prompt io.Writer
	// Terminal reads the passphrase from the terminal (default: the
	// factory's stdin without echo). `trovesnap approve`'s tests replace it.
	Terminal func(prompt string) ([]byte, error)
}

func (g sellerGate) actor(owner string) string {
	for _, c := range g.Claims {
		if c.value != "" {
			return c.value
		}
	}
	return owner
}

// refuseAgentShell is the tripwire: inside a known agent shell the
// command refuses, and the refusal is recorded in st when a store is open
// (or, st nil, in the configured store when its file already exists).
func refuseAgentShell(ctx context.Context, f *Factory, cfg config.Config, st *store.Store, g sellerGate) error {
	m, ok := detectAgentShell(f.Getenv)
	if !ok {
		return nil
	}
	if st == nil {
		if _, err := os.Stat(cfg.DBPath); err == nil {
			if opened, err := f.OpenStore(ctx, cfg, slog.New(slog.DiscardHandler)); err == nil {
				defer opened.Close()
				st = opened
			}
		}
	}
	if st != nil {
		// Best effort: the refusal stands whether or not it could be recorded.
		_ = st.RecordSellerRefusal(ctx, store.PassphraseAttempt{Command: g.Command, TenantID: g.Tenant, Actor: g.actor("")},
			"agent_shell_refused", map[string]string{"marker": m.Name, "host": m.Host})
	}
	return &agentShellError{Command: g.Command, Marker: m}
}

// authorize runs the tripwire and the passphrase check for a command that
// grants or widens authority and returns the user it acts as: in mock mode
// the passphrase's owner; in live mode "" (the signed-in user acts, and
// the project decides). st is the open store (nil: the configured one is
// opened for the check, as in live mode, where it is the local outbox).
func authorize(ctx context.Context, f *Factory, cfg config.Config, st *store.Store, g sellerGate) (string, error) {
	if err := refuseAgentShell(ctx, f, cfg, st, g); err != nil {
		return "", err
	}
	if st == nil {
		opened, err := f.OpenStore(ctx, cfg, slog.New(slog.DiscardHandler))
		if err != nil {
			return "", err
		}
		defer opened.Close()
		st = opened
	}
	info, err := st.PassphraseStatus(ctx)
	if err != nil {
		return "", err
	}
	if !info.Set {
		return "", fmt.Errorf("%s: %w for this data directory (%s): %s", g.Command, store.ErrNoPassphrase, cfg.DBPath, passphraseSetHint)
	}
	if cfg.Mode != domain.ModeLive {
		for _, c := range g.Claims {
			if c.value != "" && c.value != info.Owner {
				return "", usageError{fmt.Errorf("%s %s: this data directory's approval passphrase belongs to %s, and %s acts as that seller; "+
					"leave %s out, or use the data directory of %s", c.flag, c.value, info.Owner, g.Command, c.flag, c.value)}
			}
		}
	}
	secret, err := g.read(f, g.Command+": approval passphrase: ")
	if err != nil {
		return "", err
	}
	owner, err := st.VerifyPassphrase(ctx, secret, store.PassphraseAttempt{Command: g.Command, TenantID: g.Tenant, Actor: g.actor(info.Owner)})
	switch {
	case errors.Is(err, store.ErrPassphraseWrong):
		return "", fmt.Errorf("%s refused: %w; nothing was changed", g.Command, err)
	case errors.Is(err, store.ErrPassphraseLocked):
		return "", fmt.Errorf("%s refused: %w (%d wrong attempts within %s); nothing was changed", g.Command, err,
			store.PassphraseMaxFailures, store.PassphraseWindow)
	case err != nil:
		return "", err
	}
	return owner, nil
}

// read reads one passphrase: the next line of stdin with --passphrase-stdin,
// else from the terminal without echo.
func (g sellerGate) read(f *Factory, prompt string) ([]byte, error) {
	if g.Stdin {
		return readStdinSecret(stdinLines(f.IO.In))
	}
	if g.Terminal != nil {
		return g.Terminal(prompt)
	}
	w := g.Prompt
	if w == nil {
		w = f.IO.ErrOut
	}
	return readTerminalSecret(f.IO, w, prompt, g.Command)
}

// stdinLines wraps r once per command, so several secrets (old, new) come
// from successive lines.
func stdinLines(r io.Reader) *bufio.Reader {
	if br, ok := r.(*bufio.Reader); ok {
		return br
	}
	if r == nil {
		r = bytes.NewReader(nil)
	}
	return bufio.NewReaderSize(r, 2*maxPassphraseBytes)
}

func readStdinSecret(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, usageError{fmt.Errorf("--passphrase-stdin: a line longer than %d bytes", maxPassphraseBytes)}
		}
		return nil, fmt.Errorf("reading the passphrase from stdin: %w", err)
	}
	line = bytes.TrimRight(line, "\r\n")
	if len(line) == 0 {
		return nil, fmt.Errorf("%w: --passphrase-stdin found no passphrase on standard input", errPassphraseNeeded)
	}
	return bytes.Clone(line), nil
}

// readTerminalSecret reads a secret from the terminal on stdin with echo
// off, after a prompt on w.
func readTerminalSecret(s IOStreams, w io.Writer, prompt, command string) ([]byte, error) {
	in, ok := s.In.(interface{ Fd() uintptr })
	if !ok || !term.IsTerminal(in.Fd()) {
		return nil, fmt.Errorf("%s: %w: type it at a terminal (it is read with echo off), or give it on standard input with "+
			"--passphrase-stdin; it is never an argument or an environment variable", command, errPassphraseNeeded)
	}
	fmt.Fprint(w, prompt)
	b, err := term.ReadPassword(in.Fd())
	fmt.Fprintln(w)
	if err != nil {
		return nil, fmt.Errorf("reading the passphrase: %w", err)
	}
	return b, nil
}

// checkNewPassphrase enforces the length bounds.
func checkNewPassphrase(p []byte) error {
	switch {
	case len(bytes.TrimSpace(p)) == 0:
		return usageError{errors.New("the passphrase is empty")}
	case !utf8.Valid(p):
		return usageError{errors.New("the passphrase is not valid UTF-8")}
	case utf8.RuneCount(p) < minPassphraseChars:
		return usageError{fmt.Errorf("the passphrase is shorter than %d characters", minPassphraseChars)}
	case len(p) > maxPassphraseBytes:
		return usageError{fmt.Errorf("the passphrase is longer than %d bytes", maxPassphraseBytes)}
	}
	return nil
}

// readNewSecret reads a new passphrase: one line of stdin, or twice on the
// terminal (they must match).
func readNewSecret(f *Factory, g sellerGate, br *bufio.Reader) ([]byte, error) {
	if g.Stdin {
		p, err := readStdinSecret(br)
		if err != nil {
			return nil, err
		}
		return p, checkNewPassphrase(p)
	}
	p, err := g.read(f, "New approval passphrase (at least 12 characters): ")
	if err != nil {
		return nil, err
	}
	if err := checkNewPassphrase(p); err != nil {
		return nil, err
	}
	again, err := g.read(f, "The same again: ")
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(p, again) {
		return nil, usageError{errors.New("the two passphrases differ: nothing was set")}
	}
	return p, nil
}

// PassphraseOptions are the options of `trovesnap passphrase set|change`.
type PassphraseOptions struct {
	As    string
	Stdin bool
	DB    string
}

func newPassphraseCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "passphrase",
		Short: "The seller's approval passphrase, asked by every command that grants or widens authority",
		Long: `The approval passphrase guards the commands that grant or widen authority:
approve and deny in ` + "`trovesnap approve`" + `, ` + "`policy create`, `policy enable`" + `,
` + "`client register|reactivate|rotate`" + ` and ` + "`limits set`" + ` when it raises a limit.
Without one set, those commands refuse.

There is one passphrase per database file (so one per data directory; --db
or TROVESNAP_DB name another). In mock mode it belongs to the seller named
with --as when it is set (an owner or manager): the guarded commands then act
as that seller, and a --by, --as or --created-by naming anyone else is
refused. In live mode it guards this computer's CLI only — defence in depth:
the signed-in user (` + "`trovesnap login`" + `) acts, and the project decides.

It is stored as an argon2id hash (random salt, parameters kept with it) and
compared in constant time. After 5 wrong attempts within 15 minutes every
attempt is refused for 15 minutes; each refusal is an audit event.

It is typed at the terminal with echo off, or given on standard input with
--passphrase-stdin (set: one line; change: the current one, then the new
one) — never as an argument or an environment variable. These commands
also refuse to run inside a known agent's shell.`,
	}
	cmd.AddCommand(newPassphraseSetCmd(f), newPassphraseChangeCmd(f), newPassphraseStatusCmd(f))
	return cmd
}

func newPassphraseSetCmd(f *Factory) *cobra.Command {
	o := &PassphraseOptions{}
	cmd := &cobra.Command{
		Use:   "set --as USER",
		Short: "Set the approval passphrase (the first time; `passphrase change` replaces it)",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.DB = dbFlag(cmd)
			return passphraseSetRun(cmd.Context(), f, o)
		},
	}
	cmd.Flags().StringVar(&o.As, "as", "", "mock mode: the seller it belongs to (an owner or manager), whom the guarded commands act as")
	cmd.Flags().BoolVar(&o.Stdin, "passphrase-stdin", false, "read the new passphrase from the first line of standard input")
	return cmd
}

func passphraseSetRun(ctx context.Context, f *Factory, o *PassphraseOptions) error {
	return withStore(ctx, f, o.DB, func(cfg config.Config, st *store.Store) error {
		g := sellerGate{Command: "passphrase set", Stdin: o.Stdin, Claims: []claim{{"--as", o.As}}}
		if err := refuseAgentShell(ctx, f, cfg, st, g); err != nil {
			return err
		}
		if cfg.Mode == domain.ModeLive && o.As != "" {
			return usageError{errors.New("--as: in live mode the passphrase guards this data directory and the signed-in user acts; leave --as out")}
		}
		if cfg.Mode != domain.ModeLive && o.As == "" {
			return usageError{errors.New("--as USER is required: the seller (an owner or manager) the guarded commands will act as")}
		}
		info, err := st.PassphraseStatus(ctx)
		if err != nil {
			return err
		}
		if info.Set {
			return usageError{fmt.Errorf("%w for this data directory: change it with `trovesnap passphrase change`, which asks for the current one", store.ErrPassphraseExists)}
		}
		p, err := readNewSecret(f, g, stdinLines(f.IO.In))
		if err != nil {
			return err
		}
		if err := st.SetPassphrase(ctx, o.As, p); err != nil {
			if errors.Is(err, store.ErrPassphraseExists) {
				return usageError{err}
			}
			return adminError(err)
		}
		who := "this data directory"
		if o.As != "" {
			who = o.As
		}
		pp := store.DefaultPassphraseParams
		_, err = fmt.Fprintf(f.IO.Out, "Approval passphrase set for %s (argon2id, %d MiB, %d passes, %d lanes). "+
			"Commands that grant or widen authority now ask for it.\n", who, pp.MemoryKiB/1024, pp.Time, pp.Threads)
		return err
	})
}

func newPassphraseChangeCmd(f *Factory) *cobra.Command {
	o := &PassphraseOptions{}
	cmd := &cobra.Command{
		Use:   "change",
		Short: "Change the approval passphrase (asks for the current one)",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.DB = dbFlag(cmd)
			return passphraseChangeRun(cmd.Context(), f, o)
		},
	}
	cmd.Flags().BoolVar(&o.Stdin, "passphrase-stdin", false, "read the current passphrase, then the new one, from the first two lines of standard input")
	return cmd
}

func passphraseChangeRun(ctx context.Context, f *Factory, o *PassphraseOptions) error {
	return withStore(ctx, f, o.DB, func(cfg config.Config, st *store.Store) error {
		g := sellerGate{Command: "passphrase change", Stdin: o.Stdin}
		if err := refuseAgentShell(ctx, f, cfg, st, g); err != nil {
			return err
		}
		info, err := st.PassphraseStatus(ctx)
		if err != nil {
			return err
		}
		if !info.Set {
			return fmt.Errorf("passphrase change: %w for this data directory: %s", store.ErrNoPassphrase, passphraseSetHint)
		}
		br := stdinLines(f.IO.In)
		var old []byte
		if o.Stdin {
			old, err = readStdinSecret(br)
		} else {
			old, err = g.read(f, "Current approval passphrase: ")
		}
		if err != nil {
			return err
		}
		next, err := readNewSecret(f, g, br)
		if err != nil {
			return err
		}
		err = st.ChangePassphrase(ctx, old, next, store.PassphraseAttempt{Command: g.Command, Actor: info.Owner})
		if errors.Is(err, store.ErrPassphraseWrong) || errors.Is(err, store.ErrPassphraseLocked) {
			return fmt.Errorf("passphrase change refused: %w; nothing was changed", err)
		}
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(f.IO.Out, "Approval passphrase changed.")
		return err
	})
}

// PassphraseStatusOptions are the options of `trovesnap passphrase status`.
type PassphraseStatusOptions struct {
	DB   string
	JSON bool
}

func newPassphraseStatusCmd(f *Factory) *cobra.Command {
	o := &PassphraseStatusOptions{}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Say whether an approval passphrase is set, for whom, and whether it is locked",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.DB = dbFlag(cmd)
			return passphraseStatusRun(cmd.Context(), f, o)
		},
	}
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print JSON")
	return cmd
}

func passphraseStatusRun(ctx context.Context, f *Factory, o *PassphraseStatusOptions) error {
	return withStore(ctx, f, o.DB, func(cfg config.Config, st *store.Store) error {
		info, err := st.PassphraseStatus(ctx)
		if err != nil {
			return err
		}
		if o.JSON {
			return writeJSON(f.IO.Out, info)
		}
		w := f.IO.Out
		if !info.Set {
			_, err = fmt.Fprintf(w, "No approval passphrase is set for %s: %s.\n", cfg.DBPath, passphraseSetHint)
			return err
		}
		owner := "this data directory (live mode: the signed-in user acts)"
		if info.Owner != "" {
			owner = info.Owner
		}
		fmt.Fprintf(w, "Approval passphrase set for %s at %s.\n", owner, info.SetAt.Format(time.RFC3339))
		if info.LockedUntil != nil {
			fmt.Fprintf(w, "Locked after repeated wrong attempts until %s.\n", info.LockedUntil.Format(time.RFC3339))
		} else if info.Failures > 0 {
			fmt.Fprintf(w, "%d wrong attempt(s) in the last %s.\n", info.Failures, store.PassphraseWindow)
		}
		return nil
	})
}
