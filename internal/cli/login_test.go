package cli

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/zalando/go-keyring"

	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/live"
)

// liveVars configure live mode for a project nothing listens on: these
// tests never reach the network (see internal/live for the commands
// against a project).
func liveVars(dir string) map[string]string {
	return map[string]string{"SUPABASE_URL": "http://127.0.0.1:1", "SUPABASE_ANON_KEY": "anon-key", "TROVESNAP_DATA_DIR": dir, "HOME": dir}
}

// argv → options: --email, --password-stdin and the root's --db; a
// password is never an argument.
func TestLogin_ArgvToOptions(t *testing.T) {
	f, _, _ := approveFactory(t, nil)
	var got *LoginOptions
	root := &cobra.Command{Use: "trovesnap", SilenceUsage: true, SilenceErrors: true}
	root.PersistentFlags().String("db", "", "")
	root.AddCommand(newLoginCmd(f, func(_ context.Context, o *LoginOptions) error { got = o; return nil }))
	root.SetArgs([]string{"--db", "/tmp/x.db", "login", "--email", "paul@heritage.test", "--password-stdin"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if *got != (LoginOptions{Email: "paul@heritage.test", PasswordStdin: true, DB: "/tmp/x.db"}) {
		t.Fatalf("%+v", *got)
	}
	root.SetArgs([]string{"login", "--email", "paul@heritage.test", "--password", "x"})
	if err := root.Execute(); err == nil {
		t.Fatal("--password accepted")
	}
}

// Signing in is for live mode; without --email, or without the project's
// anon key, it refuses before reading any password, with its exit code.
func TestLogin_RefusesWithoutLiveConfiguration(t *testing.T) {
	dir := t.TempDir()
	noAnon := liveVars(dir)
	delete(noAnon, "SUPABASE_ANON_KEY")
	for _, c := range []struct {
		name string
		env  map[string]string
		argv []string
		code ExitCode
		want string
	}{
		{"mock mode", map[string]string{"HOME": dir}, []string{"login", "--email", "a@b.c", "--password-stdin"}, ExitConfig, "live mode"},
		{"no anon key", noAnon, []string{"login", "--email", "a@b.c", "--password-stdin"}, ExitConfig, "SUPABASE_ANON_KEY"},
		{"no email", liveVars(dir), []string{"login", "--password-stdin"}, ExitUsage, "--email is required"},
	} {
		f, out, errb := approveFactory(t, c.env)
		in := &countingReader{r: strings.NewReader("secret-pass\n")}
		f.IO.In = in
		if code := Run(context.Background(), f, c.argv); code != c.code || !strings.Contains(errb.String(), c.want) || out.Len() != 0 || in.n != 0 {
			t.Errorf("%s: exit %d, stdout %q, stderr %q, password bytes read %d", c.name, code, out, errb, in.n)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("a refused login wrote files: %v", entries)
	}
	if v, err := keyring.Get(live.KeyringService, live.SessionAccount("http://127.0.0.1:1")); !errors.Is(err, keyring.ErrNotFound) {
		t.Fatalf("a refused login kept a session: %q, %v", v, err)
	}
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// The password comes from the first line of stdin with --password-stdin,
// else from a terminal; never from a pipe without the flag.
func TestLogin_ReadsThePassword(t *testing.T) {
	var errb bytes.Buffer
	pw, err := readPassword(IOStreams{In: strings.NewReader("p@ss word\r\nsecond line\n"), ErrOut: &errb}, &LoginOptions{PasswordStdin: true})
	if err != nil || pw != "p@ss word" {
		t.Fatalf("stdin: %q, %v", pw, err)
	}
	if pw, err := readPassword(IOStreams{In: strings.NewReader("no newline"), ErrOut: &errb}, &LoginOptions{PasswordStdin: true}); err != nil || pw != "no newline" {
		t.Fatalf("stdin without newline: %q, %v", pw, err)
	}
	var ue usageError
	if _, err := readPassword(IOStreams{In: strings.NewReader("\n"), ErrOut: &errb}, &LoginOptions{PasswordStdin: true}); !errors.As(err, &ue) {
		t.Fatalf("empty stdin: %v", err)
	}
	if _, err := readPassword(IOStreams{In: strings.NewReader("pw\n"), ErrOut: &errb}, &LoginOptions{}); !errors.As(err, &ue) ||
		!strings.Contains(err.Error(), "--password-stdin") {
		t.Fatalf("a pipe without --password-stdin: %v", err)
	}
	if errb.Len() != 0 {
		t.Fatalf("prompted without a terminal: %q", errb.String())
	}
}

// Not signed in: the live seller commands say to run `trovesnap login` and
// exit with the configuration code, without reaching the network.
func TestOpenSeller_NotSignedInSaysToLogIn(t *testing.T) {
	dir := t.TempDir()
	f, _, _ := approveFactory(t, liveVars(dir))
	cfg, err := f.Config("")
	if err != nil || cfg.Mode != domain.ModeLive {
		t.Fatalf("config = %+v, %v", cfg, err)
	}
	_, err = f.OpenSeller(context.Background(), cfg)
	if err == nil || exitCodeFor(err) != ExitConfig || !strings.Contains(err.Error(), "trovesnap login") ||
		!errors.Is(err, live.ErrNotSignedIn) || !strings.Contains(err.Error(), "http://127.0.0.1:1") {
		t.Fatalf("OpenSeller without a session: %v (exit %d)", err, exitCodeFor(err))
	}
	// The same through a command.
	_, _, errb := approveFactory(t, nil)
	f.IO.ErrOut = errb
	if code := Run(context.Background(), f, []string{"policy", "list"}); code != ExitConfig || !strings.Contains(errb.String(), "trovesnap login") {
		t.Fatalf("policy list without a session: exit %d, %s", code, errb)
	}
}

// Logout deletes, unread, the session file an older release left in the
// data directory — whatever else it can do — and says so.
func TestLogout_DeletesTheOldSessionFileWhateverHappens(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, live.LegacySessionFileName)
	f, out, errb := approveFactory(t, map[string]string{"TROVESNAP_DATA_DIR": dir})
	if code := Run(context.Background(), f, []string{"logout"}); code != ExitOK || !strings.Contains(out.String(), "Not signed in") ||
		errb.Len() != 0 {
		t.Fatalf("logout without a session: exit %d, %s %s", code, out, errb)
	}
	// A session file (here one that is not even readable as a session) in
	// mock mode: deleted, with a note.
	if err := os.WriteFile(path, []byte(`{"version":1,"refresh_token":"old"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if code := Run(context.Background(), f, []string{"logout"}); code != ExitOK || !strings.Contains(out.String(), "Not signed in") ||
		!strings.Contains(errb.String(), "older release") || !strings.Contains(errb.String(), path) {
		t.Fatalf("logout in mock mode: exit %d, %s %s", code, out, errb)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("files left: %v", entries)
	}
}

// Where sessions are kept is TROVESNAP_SESSION_STORE's choice: the OS
// credential store by default, this process's memory with "memory", and
// anything else is a configuration error. A store that does not answer
// falls back to memory, with its reason.
func TestSessionStore_Choice(t *testing.T) {
	defer keyring.MockInit()
	for _, c := range []struct {
		name, value string
		keyringErr  error
		persistent  bool
		why         string
	}{
		{"default", "", nil, true, ""},
		{"os", "OS", nil, true, ""},
		{"memory", "memory", nil, false, "TROVESNAP_SESSION_STORE=memory"},
		{"no store", "", errors.New("dbus: couldn't determine address of session bus"), false, "couldn't determine address of session bus"},
	} {
		keyring.MockInit()
		if c.keyringErr != nil {
			keyring.MockInitWithError(c.keyringErr)
		}
		f, _, _ := approveFactory(t, map[string]string{envSessionStore: c.value})
		ss, err := f.sessionStore()
		if err != nil || ss.Persistent() != c.persistent || !strings.Contains(ss.Why(), c.why) {
			t.Errorf("%s: %v, persistent %v, why %q", c.name, err, ss.Persistent(), ss.Why())
		}
		if again, _ := f.sessionStore(); again != ss {
			t.Errorf("%s: the store is opened again", c.name)
		}
	}
	f, _, _ := approveFactory(t, map[string]string{envSessionStore: "file"})
	if _, err := f.sessionStore(); exitCodeFor(err) != ExitConfig || !strings.Contains(err.Error(), envSessionStore) {
		t.Fatalf("an unknown store: %v", err)
	}
}

// Without a credential store a seller command signs in itself, on a
// terminal only: from a pipe it says so, exits with the configuration
// code, and reads nothing.
func TestOpenSeller_WithoutACredentialStoreNeedsATerminal(t *testing.T) {
	dir := t.TempDir()
	vars := liveVars(dir)
	vars[envSessionStore] = "memory"
	f, _, _ := approveFactory(t, vars)
	in := &countingReader{r: strings.NewReader("paul@heritage.test\npw\n")}
	f.IO.In = in
	cfg, err := f.Config("")
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.OpenSeller(context.Background(), cfg)
	if err == nil || exitCodeFor(err) != ExitConfig || !errors.Is(err, live.ErrNotSignedIn) ||
		!strings.Contains(err.Error(), "no credential store") || !strings.Contains(err.Error(), "terminal") || in.n != 0 {
		t.Fatalf("OpenSeller without a store or a terminal: %v (exit %d, %d bytes read)", err, exitCodeFor(err), in.n)
	}
}
