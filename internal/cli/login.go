package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"

	"github.com/triunalabs/trovesnap/internal/config"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/live"
)

// LoginOptions are the options of `trovesnap login`.
type LoginOptions struct {
	Email         string
	PasswordStdin bool
	DB            string
}

// maxPassword bounds what --password-stdin reads.
const maxPassword = 4 << 10

func newLoginCmd(f *Factory, runF func(context.Context, *LoginOptions) error) *cobra.Command {
	o := &LoginOptions{}
	cmd := &cobra.Command{
		Use:   "login --email EMAIL",
		Short: "Sign in as a seller to the live project (for approve, client and policy in live mode)",
		Long: `Signs in to the live project's Supabase Auth with your email and password and
saves the session in the data directory (seller-session.json, readable only by
you). In live mode ` + "`trovesnap approve`, `client` and `policy`" + ` then act as you: the
project's seller RPCs and row level security decide what you may see and do.

The password is read from the terminal without echo, or from stdin with
--password-stdin; never from an argument. Nothing printed ever contains a token.
The session refreshes itself; ` + "`trovesnap logout`" + ` ends it.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.DB = dbFlag(cmd)
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return loginRun(cmd.Context(), f, o)
		},
	}
	cmd.Flags().StringVar(&o.Email, "email", "", "your email address (the Supabase Auth account)")
	cmd.Flags().BoolVar(&o.PasswordStdin, "password-stdin", false, "read the password from stdin (first line) instead of the terminal")
	return cmd
}

// LogoutOptions are the options of `trovesnap logout`.
type LogoutOptions struct {
	DB string
}

func newLogoutCmd(f *Factory) *cobra.Command {
	o := &LogoutOptions{}
	return &cobra.Command{
		Use:   "logout",
		Short: "Sign out: revoke the seller session on the project when reachable, and delete it from this computer",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.DB = dbFlag(cmd)
			return logoutRun(cmd.Context(), f, o)
		},
	}
}

func loginRun(ctx context.Context, f *Factory, o *LoginOptions) error {
	if strings.TrimSpace(o.Email) == "" {
		return usageError{errors.New("--email is required: the email address of your account on the project")}
	}
	cfg, err := f.Config(o.DB)
	if err != nil {
		return err
	}
	auth, opts, err := f.sellerAuth(cfg)
	if err != nil {
		return err
	}
	password, err := readPassword(f.IO, o)
	if err != nil {
		return err
	}
	sess, err := auth.SignIn(ctx, o.Email, password)
	switch {
	case errors.Is(err, live.ErrInvalidCredentials):
		return fmt.Errorf("sign-in to %s refused: %w", cfg.SupabaseURL, live.ErrInvalidCredentials)
	case errors.Is(err, domain.ErrInvalidInput):
		return usageError{err}
	case err != nil:
		return fmt.Errorf("sign-in to %s: %w", cfg.SupabaseURL, err)
	}
	path := live.SessionPath(cfg.DataDir)
	if err := live.SaveSession(path, sess); err != nil {
		return err
	}
	w := f.IO.Out
	fmt.Fprintf(w, "Signed in to %s as %s.\n", cfg.SupabaseURL, sess.Email)
	who, err := whoAmI(ctx, sess, opts)
	switch {
	case err != nil:
		fmt.Fprintf(f.IO.ErrOut, "trovesnap: signed in, but your memberships could not be read: %v\n", err)
	case !who.Linked:
		fmt.Fprintf(w, "  This account is not linked to a TroveSnap user yet: ask an owner of your company to link\n"+
			"  the Supabase Auth user %s (trovesnap.users.auth_subject). Until then it can act nowhere.\n", sess.UserID)
	default:
		fmt.Fprintf(w, "  TroveSnap user %s (%s)\n", who.UserID, who.DisplayName)
		for _, m := range who.Memberships {
			fmt.Fprintf(w, "  %s of %s (%s)\n", m.Role, m.TenantID, m.TenantName)
		}
		if len(who.Memberships) == 0 {
			fmt.Fprintln(w, "  member of no tenant yet")
		}
	}
	_, err = fmt.Fprintf(w, "Session saved to %s (readable only by you); it refreshes itself. Sign out with `trovesnap logout`.\n", path)
	return err
}

func whoAmI(ctx context.Context, s *live.Session, o live.Options) (live.SellerIdentity, error) {
	seller, err := s.Seller(o)
	if err != nil {
		return live.SellerIdentity{}, err
	}
	return seller.WhoAmI(ctx)
}

// readPassword reads the password: the first line of stdin with
// --password-stdin, else from the terminal without echo (the prompt goes
// to stderr, so stdout carries only the result).
func readPassword(s IOStreams, o *LoginOptions) (string, error) {
	if o.PasswordStdin {
		line, err := bufio.NewReaderSize(limitReader(s.In, maxPassword), 512).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return "", fmt.Errorf("reading the password from stdin: %w", err)
		}
		pw := strings.TrimRight(line, "\r\n")
		if pw == "" {
			return "", usageError{errors.New("--password-stdin: stdin held no password")}
		}
		return pw, nil
	}
	in, ok := s.In.(interface{ Fd() uintptr })
	if !ok || !term.IsTerminal(in.Fd()) {
		return "", usageError{errors.New("stdin is not a terminal to read the password from: pipe it with --password-stdin (a password is never an argument)")}
	}
	fmt.Fprintf(s.ErrOut, "Password for %s: ", strings.TrimSpace(o.Email))
	b, err := term.ReadPassword(in.Fd())
	fmt.Fprintln(s.ErrOut)
	if err != nil {
		return "", fmt.Errorf("reading the password: %w", err)
	}
	if len(b) == 0 {
		return "", usageError{errors.New("no password given")}
	}
	return string(b), nil
}

func limitReader(r io.Reader, n int64) io.Reader {
	if r == nil {
		return strings.NewReader("")
	}
	return io.LimitReader(r, n)
}

func logoutRun(ctx context.Context, f *Factory, o *LogoutOptions) error {
	cfg, err := f.Config(o.DB)
	if err != nil {
		return err
	}
	path := live.SessionPath(cfg.DataDir)
	revoked, note := false, ""
	if auth, _, err := f.sellerAuth(cfg); err != nil {
		note = "no live project is configured here, so the session could not be revoked on the server"
	} else if s, err := live.LoadSession(path); err == nil {
		revoked, note = revokeSession(ctx, auth, s, f.now().Now())
	}
	removed, err := live.RemoveSession(path)
	if err != nil {
		return err
	}
	w := f.IO.Out
	switch {
	case !removed:
		_, err = fmt.Fprintf(w, "Not signed in (no session in %s).\n", cfg.DataDir)
		return err
	case revoked:
		_, err = fmt.Fprintf(w, "Signed out: the session was revoked on %s and deleted from this computer.\n", cfg.SupabaseURL)
		return err
	}
	_, err = fmt.Fprintf(w, "Signed out on this computer: the session file is deleted.\n")
	if note != "" {
		fmt.Fprintf(f.IO.ErrOut, "trovesnap: %s.\n", note)
	}
	return err
}

// revokeSession ends s on the server. An expired access token is refreshed
// first (the server revokes only with a valid one). It never fails the
// logout: the note says what could not be done.
func revokeSession(ctx context.Context, auth *live.Auth, s *live.Session, now time.Time) (bool, string) {
	why := func(err error) string {
		switch {
		case errors.Is(err, live.ErrNotSignedIn):
			return fmt.Sprintf("the session belonged to %s, not the configured %s: it was not revoked there", s.ProjectURL, auth.ProjectURL())
		case errors.Is(err, live.ErrSessionEnded):
			return "the session had already ended on the server"
		}
		return fmt.Sprintf("the project could not be reached to revoke the session (%v); its refresh token stays valid until it expires", err)
	}
	if s.Expired(now) {
		fresh, err := auth.Refresh(ctx, s)
		if err != nil {
			return false, why(err)
		}
		s = fresh
	}
	if err := auth.SignOut(ctx, s); err != nil {
		return false, why(err)
	}
	return true, ""
}

// sellerAuth is the Supabase Auth client of the configured live project and
// the options a Seller connects with: the project URL and its anon key.
func (f *Factory) sellerAuth(cfg config.Config) (*live.Auth, live.Options, error) {
	if cfg.Mode != domain.ModeLive {
		return nil, live.Options{}, fmt.Errorf("%w: signing in is for live mode: set %s and %s (in mock mode the seller is chosen with --as)",
			errConfig, config.EnvSupabaseURL, config.EnvSupabaseAPIKey)
	}
	anon := cfg.SupabaseAPIKey()
	if anon == "" {
		return nil, live.Options{}, fmt.Errorf("%w: %s is not set: a seller signs in with the project's anon (public) key",
			errConfig, config.EnvSupabaseAPIKey)
	}
	o := live.Options{URL: cfg.SupabaseURL, PublicKey: anon, HTTPClient: f.HTTPClient}
	a, err := live.NewAuth(o)
	if err != nil {
		return nil, live.Options{}, fmt.Errorf("%w: %w", config.ErrLiveUnavailable, err)
	}
	return a, o, nil
}

// OpenSeller is the signed-in seller's connection to the live project: the
// saved session under which every seller RPC runs. Each call takes the
// session's current access token, refreshing (and saving) it when it is
// about to expire, so a terminal left open outlives one token. Not signed
// in — or a session of another project, or one the project ended — is an
// error that says to run `trovesnap login` (exit code: configuration).
func (f *Factory) OpenSeller(ctx context.Context, cfg config.Config) (*live.Seller, error) {
	auth, o, err := f.sellerAuth(cfg)
	if err != nil {
		return nil, err
	}
	path := live.SessionPath(cfg.DataDir)
	if _, err := auth.Current(ctx, path, f.now().Now()); err != nil {
		return nil, signInError(cfg, err)
	}
	src := auth.Source(path, func() time.Time { return f.now().Now() })
	return live.NewSellerSource(o, func(ctx context.Context) (string, error) {
		tok, err := src(ctx)
		if err != nil {
			return "", signInError(cfg, err)
		}
		return tok, nil
	})
}

// signInError turns a missing, foreign or ended session into the error
// that says to sign in; anything else passes unchanged.
func signInError(cfg config.Config, err error) error {
	if errors.Is(err, live.ErrNotSignedIn) || errors.Is(err, live.ErrSessionEnded) {
		return notSignedInError{project: cfg.SupabaseURL, err: err}
	}
	return err
}

// notSignedInError tells to sign in; it exits with the configuration code.
type notSignedInError struct {
	project string
	err     error
}

func (e notSignedInError) Error() string {
	reason := "no saved session"
	if errors.Is(e.err, live.ErrSessionEnded) {
		reason = "the saved session ended (it expired, was revoked or signed out elsewhere)"
	} else if msg := e.err.Error(); strings.Contains(msg, "is for ") {
		reason = strings.TrimPrefix(strings.SplitN(msg, ": not signed in", 2)[0], "live: ")
	}
	return fmt.Sprintf("not signed in to %s (%s): run `trovesnap login --email YOU@EXAMPLE.COM` first", e.project, reason)
}

func (e notSignedInError) Unwrap() error { return e.err }

// Is makes the error exit with ExitConfig: a seller session is part of
// what a live seller command needs configured.
func (e notSignedInError) Is(target error) bool { return target == errConfig }

func (f *Factory) now() domain.Clock {
	if f.Clock == nil {
		return domain.SystemClock{}
	}
	return f.Clock
}
