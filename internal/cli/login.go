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
keeps the session in the OS credential store (macOS Keychain, Windows Credential
Manager, Secret Service on Linux) under the service "trovesnap", never in a file:
a file would be readable by every process of your account, an agent's shell
included. In live mode ` + "`trovesnap approve`, `client` and `policy`" + ` then act as you: the
project's seller RPCs and row level security decide what you may see and do.

Where there is no credential store (or ` + envSessionStore + `=memory), the session
is not kept: login only checks your sign-in, and each seller command asks for your
email and password on the terminal and keeps its session in memory while it runs.

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
	sessions, err := f.sessionStore()
	if err != nil {
		return err
	}
	if err := removeLegacySession(f, cfg); err != nil {
		return err
	}
	password, err := readPassword(f.IO, o)
	if err != nil {
		return err
	}
	sess, err := signIn(ctx, auth, cfg, o.Email, password)
	if err != nil {
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
	kept := sessions.Persistent()
	if kept {
		if err := sessions.Save(sess); err != nil {
			fmt.Fprintf(f.IO.ErrOut, "trovesnap: %v.\n", err)
			kept = false
		}
	}
	if kept {
		_, err = fmt.Fprintf(w, "Session kept in %s; it refreshes itself. Sign out with `trovesnap logout`.\n", sessions.Where())
		return err
	}
	// Not kept anywhere: end it on the server, so that no refresh token of
	// it outlives this command.
	_ = auth.SignOut(ctx, sess)
	if sessions.Persistent() { // the store refused it, as said above
		fmt.Fprintf(f.IO.ErrOut, "trovesnap: the session is not kept, and no file is written.\n")
	} else {
		fmt.Fprintf(f.IO.ErrOut, "trovesnap: no credential store is available (%s): the session is not kept, and no file is written.\n", sessions.Why())
	}
	_, err = fmt.Fprintf(w, "Session not kept: `trovesnap approve` and the other seller commands will ask for your email and\n"+
		"password on the terminal each time they run (sign in per session).\n")
	return err
}

// signIn signs in with an email and a password, with the errors login
// reports.
func signIn(ctx context.Context, auth *live.Auth, cfg config.Config, email, password string) (*live.Session, error) {
	sess, err := auth.SignIn(ctx, email, password)
	switch {
	case errors.Is(err, live.ErrInvalidCredentials):
		return nil, fmt.Errorf("sign-in to %s refused: %w", cfg.SupabaseURL, live.ErrInvalidCredentials)
	case errors.Is(err, domain.ErrInvalidInput):
		return nil, usageError{err}
	case err != nil:
		return nil, fmt.Errorf("sign-in to %s: %w", cfg.SupabaseURL, err)
	}
	return sess, nil
}

// removeLegacySession deletes, unread, the session file an older release
// kept in the data directory, and says so.
func removeLegacySession(f *Factory, cfg config.Config) error {
	path, removed, err := live.RemoveLegacySessionFile(cfg.DataDir)
	if err != nil {
		return err
	}
	if removed {
		fmt.Fprintf(f.IO.ErrOut, "trovesnap: deleted %s, the session file of an older release (unread): sessions are no longer kept in files.\n", path)
	}
	return nil
}

// envSessionStore chooses where the seller session is kept: unset (or
// "os") the OS credential store when there is one; "memory" this process
// only.
const envSessionStore = "TROVESNAP_SESSION_STORE"

// sessionStore is where this process keeps the seller session, opened
// once.
func (f *Factory) sessionStore() (*live.Sessions, error) {
	if f.sessions != nil {
		return f.sessions, nil
	}
	switch v := strings.ToLower(strings.TrimSpace(f.Getenv(envSessionStore))); v {
	case "", "os":
		f.sessions = live.OpenSessions()
	case "memory":
		f.sessions = live.MemorySessions(envSessionStore + "=memory")
	default:
		return nil, fmt.Errorf("%w: %s=%q: use \"os\" (the OS credential store, the default) or \"memory\" (this process only)",
			errConfig, envSessionStore, v)
	}
	return f.sessions, nil
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
	if err := removeLegacySession(f, cfg); err != nil {
		return err
	}
	w := f.IO.Out
	auth, _, err := f.sellerAuth(cfg)
	if err != nil {
		_, err = fmt.Fprintf(w, "Not signed in: no live project is configured here, so there is no session to sign out of.\n")
		return err
	}
	sessions, err := f.sessionStore()
	if err != nil {
		return err
	}
	if !sessions.Persistent() {
		_, err = fmt.Fprintf(w, "Not signed in: no credential store keeps a session here (%s), so none was kept.\n", sessions.Why())
		return err
	}
	revoked, note := false, ""
	if s, err := sessions.Load(auth.ProjectURL()); err == nil {
		revoked, note = revokeSession(ctx, auth, s, f.now().Now())
	}
	removed, err := sessions.Remove(auth.ProjectURL())
	if err != nil {
		return err
	}
	switch {
	case !removed:
		_, err = fmt.Fprintf(w, "Not signed in to %s (no session in %s).\n", auth.ProjectURL(), sessions.Where())
		return err
	case revoked:
		_, err = fmt.Fprintf(w, "Signed out: the session was revoked on %s and deleted from %s.\n", auth.ProjectURL(), sessions.Where())
		return err
	}
	_, err = fmt.Fprintf(w, "Signed out on this computer: the session is deleted from %s.\n", sessions.Where())
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
// kept session under which every seller RPC runs. Each call takes the
// session's current access token, refreshing (and saving) it when it is
// about to expire, so a terminal left open outlives one token. Not signed
// in — or a session the project ended — is an error that says to run
// `trovesnap login` (exit code: configuration). Where no credential store
// keeps sessions, the command signs in itself on the terminal.
func (f *Factory) OpenSeller(ctx context.Context, cfg config.Config) (*live.Seller, error) {
	auth, o, err := f.sellerAuth(cfg)
	if err != nil {
		return nil, err
	}
	sessions, err := f.sessionStore()
	if err != nil {
		return nil, err
	}
	if _, err := auth.Current(ctx, sessions, f.now().Now()); err != nil {
		if sessions.Persistent() || !errors.Is(err, live.ErrNotSignedIn) {
			return nil, signInError(cfg, err)
		}
		if err := f.signInHere(ctx, auth, sessions, cfg); err != nil {
			return nil, err
		}
	}
	src := auth.Source(sessions, func() time.Time { return f.now().Now() })
	return live.NewSellerSource(o, func(ctx context.Context) (string, error) {
		tok, err := src(ctx)
		if err != nil {
			return "", signInError(cfg, err)
		}
		return tok, nil
	})
}

// signInHere signs in for this process only, where no credential store
// keeps the session: the email and the password are asked on the terminal
// (the password without echo), as login asks them.
func (f *Factory) signInHere(ctx context.Context, auth *live.Auth, sessions *live.Sessions, cfg config.Config) error {
	in, ok := f.IO.In.(interface{ Fd() uintptr })
	if !ok || !term.IsTerminal(in.Fd()) {
		return notSignedInError{project: cfg.SupabaseURL, memoryOnly: sessions.Why(),
			err: fmt.Errorf("no credential store keeps a session here: %w", live.ErrNotSignedIn)}
	}
	prompt := f.IO.ErrOut
	if !isTerminalWriter(prompt) && isTerminalWriter(f.IO.Out) {
		prompt = f.IO.Out // approve: the terminal is stdout; stderr may be a log
	}
	fmt.Fprintf(prompt, "No credential store keeps your session here (%s): sign in to %s for this command.\nEmail: ",
		sessions.Why(), cfg.SupabaseURL)
	email, err := readLine(f.IO.In, 320)
	if err != nil {
		return fmt.Errorf("reading the email: %w", err)
	}
	if strings.TrimSpace(email) == "" {
		return usageError{errors.New("no email given")}
	}
	password, err := readPassword(IOStreams{In: f.IO.In, ErrOut: prompt}, &LoginOptions{Email: email})
	if err != nil {
		return err
	}
	sess, err := signIn(ctx, auth, cfg, email, password)
	if err != nil {
		return err
	}
	return sessions.Save(sess)
}

// readLine reads one line, a byte at a time: nothing after it is taken
// from the terminal (the passphrase and the keys that follow).
func readLine(r io.Reader, max int) (string, error) {
	var b strings.Builder
	var c [1]byte
	for b.Len() < max {
		n, err := r.Read(c[:])
		if n == 1 {
			if c[0] == '\n' {
				break
			}
			b.WriteByte(c[0])
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", err
		}
	}
	return strings.TrimSpace(b.String()), nil
}

func isTerminalWriter(w io.Writer) bool {
	fd, ok := w.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(fd.Fd())
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
	// memoryOnly says why no credential store keeps sessions, when none
	// does: signing in then happens on the terminal, per command.
	memoryOnly string
	err        error
}

func (e notSignedInError) Error() string {
	if e.memoryOnly != "" {
		return fmt.Sprintf("not signed in to %s: no credential store keeps a session here (%s), so this command signs in itself "+
			"and needs a terminal to ask for your email and password; run it on a terminal (`trovesnap login` cannot keep a session here)",
			e.project, e.memoryOnly)
	}
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
