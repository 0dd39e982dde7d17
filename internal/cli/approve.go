package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/catalog"
	"github.com/triunalabs/trovesnap/internal/config"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/live"
	"github.com/triunalabs/trovesnap/store"
	"github.com/triunalabs/trovesnap/tui"
)

// ApproveOptions are the options of `trovesnap approve`.
type ApproveOptions struct {
	As     string // the seller: a user with a membership
	Tenant string // needed only when the user belongs to several tenants
	DB     string
}

// errNotInteractive refuses `trovesnap approve` without a terminal. There
// is deliberately no --yes and no other way to approve from a script: an
// agent that can run shell commands must not be able to approve its own
// proposals.
var errNotInteractive = errors.New("trovesnap approve needs an interactive terminal")

// approveDeps are the two edges of the command a test replaces: whether
// the streams are a terminal, and the terminal program itself.
type approveDeps struct {
	interactive func(IOStreams) bool
	run         func(context.Context, tui.Options, io.Reader, io.Writer) error
	// passphrase reads the seller's passphrase from the terminal (nil: the
	// terminal on stdin, echo off, prompt on stdout).
	passphrase func(prompt string) ([]byte, error)
}

func newApproveCmd(f *Factory, runF func(context.Context, *ApproveOptions) error) *cobra.Command {
	o := &ApproveOptions{}
	cmd := &cobra.Command{
		Use:   "approve [--as USER]",
		Short: "The seller's approval terminal: review, approve and deny proposals; revoke grants (interactive only)",
		Long: `Opens the approval terminal for a seller. It needs an interactive terminal
on stdin and stdout and refuses otherwise (exit 5): there is no --yes and no
non-interactive approval. It asks for the seller's approval passphrase
(` + "`trovesnap passphrase set`" + `) before it opens, with echo off; a wrong one
refuses (exit 8) and nothing is decided. It refuses to run inside a known
agent's shell (exit 7).

In mock mode you act as the passphrase's owner (--as may only repeat it);
only a member with approval.grant (owner, manager) may approve or deny.
In live mode you act as the seller signed in with ` + "`trovesnap login`" + `: the
project decides your tenant, role and what you may do.

Keys: ↑/↓ or j/k move, enter opens, a approve, d deny, y confirms a pending
approve/deny, esc back, tab switches tabs, q quits.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.DB = dbFlag(cmd)
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return approveRun(cmd.Context(), f, o, approveDeps{interactive: isInteractive, run: tui.Run})
		},
	}
	cmd.Flags().StringVar(&o.As, "as", "", "who you are (mock mode: the passphrase's owner, the default; live mode: the signed-in user, the default)")
	cmd.Flags().StringVar(&o.Tenant, "tenant", "", "the tenant, when the user is a member of several")
	return cmd
}

func approveRun(ctx context.Context, f *Factory, o *ApproveOptions, d approveDeps) error {
	// First, before the database is even opened: no terminal, no approval.
	if !d.interactive(f.IO) {
		return fmt.Errorf("%w (stdin and stdout must both be a terminal): approvals come from a person at a keyboard, "+
			"never from a pipe, a script or an agent's shell; there is no --yes", errNotInteractive)
	}
	cfg, err := f.Config(o.DB)
	if err != nil {
		return err
	}
	// The agent-shell tripwire runs once, in authorize, before the
	// passphrase is asked in either mode.
	gate := sellerGate{Command: "approve", Tenant: o.Tenant, Claims: []claim{{"--as", o.As}}, Prompt: f.IO.Out, Terminal: d.passphrase}
	if cfg.Mode == domain.ModeLive {
		return approveLive(ctx, f, cfg, o, d, gate)
	}
	return withConfiguredStore(ctx, f, cfg, func(cfg config.Config, st *store.Store) error {
		return approveMock(ctx, f, cfg, st, o, d, gate)
	})
}

// approveMock runs the terminal in mock mode on the open local store.
func approveMock(ctx context.Context, f *Factory, cfg config.Config, st *store.Store, o *ApproveOptions, d approveDeps, gate sellerGate) error {
	// The terminal acts as the passphrase's owner; the tenant is resolved
	// first so that a wrong --tenant is said before the passphrase is asked.
	as := o.As
	if as == "" {
		info, err := st.PassphraseStatus(ctx)
		if err != nil {
			return err
		}
		as = info.Owner
	}
	if as != "" {
		var err error
		if gate.Tenant, err = sellerTenant(ctx, st, as, o.Tenant); err != nil {
			return err
		}
	}
	// Asked once, before the terminal opens: every approve or deny of this
	// session is the passphrase owner's. Keystrokes replayed into the
	// terminal without it decide nothing.
	owner, err := authorize(ctx, f, cfg, st, gate)
	if err != nil {
		return err
	}
	// An owner without approval.grant in this tenant starts read-only: every
	// approve or deny is refused with a message naming their role (the
	// service and the store refuse again).
	return d.run(ctx, tui.Options{
		Backend:       approveBackend{st.AsSeller(owner)},
		TenantID:      gate.Tenant,
		ActorID:       owner,
		Mode:          string(cfg.Mode),
		Clock:         f.Clock,
		IDs:           f.IDs,
		RiskOf:        riskOf,
		ChangeVisible: catalog.ChangeVisible,
		NoColor:       f.Getenv("NO_COLOR") != "", // any value, as no-color.org says
	}, f.IO.In, f.IO.Out) // q returns nil; a signal returns context.Canceled (exit 130)
}

// approveLive runs the terminal in live mode as the signed-in seller
// (`trovesnap login`): the tenant and the actor come from the project
// (seller_whoami), never from a flag, and every read and decision is a
// seller RPC under the user's own token. --as, when given, must name that
// user.
func approveLive(ctx context.Context, f *Factory, cfg config.Config, o *ApproveOptions, d approveDeps, gate sellerGate) error {
	// The terminal stays open: the Seller refreshes the session as it goes.
	seller, err := f.OpenSeller(ctx, cfg)
	if err != nil {
		return err
	}
	who, err := seller.WhoAmI(ctx)
	if err != nil {
		return err
	}
	m, err := who.Membership(o.Tenant)
	if err != nil {
		return usageError{err}
	}
	if o.As != "" && o.As != who.UserID {
		return usageError{fmt.Errorf("--as %s: in live mode you act as the signed-in user %s (%s); sign in as another user with `trovesnap login`",
			o.As, who.UserID, who.Email)}
	}
	// The local passphrase, once, before the terminal opens (defence in
	// depth: the project still decides every grant under the user's token).
	gate.Tenant, gate.Claims = m.TenantID, []claim{{"--as", who.UserID}}
	if _, err := authorize(ctx, f, cfg, nil, gate); err != nil {
		return err
	}
	return d.run(ctx, tui.Options{
		Backend:       seller,
		TenantID:      m.TenantID,
		ActorID:       who.UserID,
		Mode:          string(cfg.Mode),
		Clock:         f.Clock,
		IDs:           f.IDs,
		RiskOf:        riskOf,
		ChangeVisible: catalog.ChangeVisible,
		NoColor:       f.Getenv("NO_COLOR") != "",
	}, f.IO.In, f.IO.Out)
}

func riskOf(tool string) string {
	if t, ok := catalog.Lookup(tool); ok {
		return string(t.Risk)
	}
	return ""
}

// sellerTenant finds the tenant in which user is a member. The store
// answers membership per tenant; the tenants of a local store are those of
// its seed, so those are the ones asked.
func sellerTenant(ctx context.Context, st *store.Store, user, tenant string) (string, error) {
	candidates := []string{tenant}
	if tenant == "" {
		candidates = candidates[:0]
		for _, t := range fixtures.Dataset().Tenants {
			candidates = append(candidates, t.ID)
		}
	}
	var found []string
	for _, t := range candidates {
		role, err := st.MemberRole(ctx, t, user)
		if err != nil {
			return "", err
		}
		if role != "" {
			found = append(found, t)
		}
	}
	switch {
	case len(found) == 1:
		return found[0], nil
	case len(found) > 1:
		return "", usageError{fmt.Errorf("--as %s is a member of %v: choose one with --tenant", user, found)}
	case tenant != "":
		return "", usageError{fmt.Errorf("--as %s: not a member of %s", user, tenant)}
	}
	return "", usageError{fmt.Errorf("--as %s: no member of that id in this database (in mock mode the seller is %s, owner of %s)",
		user, fixtures.DemoUserID, fixtures.DemoTenantID)}
}

// isInteractive reports whether stdin and stdout are both a terminal.
func isInteractive(s IOStreams) bool {
	in, okIn := s.In.(interface{ Fd() uintptr })
	out, okOut := s.Out.(interface{ Fd() uintptr })
	return okIn && okOut && term.IsTerminal(in.Fd()) && term.IsTerminal(out.Fd())
}

// approveBackend is the store as the terminal sees it: the store acting as
// the seller (store.SellerView), so a sale-scoped seller's queue, detail,
// grants, decisions and audit trails cover only its assigned sales.
type approveBackend struct{ store.SellerView }

var (
	_ tui.Backend = approveBackend{}
	_ tui.Backend = (*live.Seller)(nil) // the live terminal runs on the signed-in seller
)
