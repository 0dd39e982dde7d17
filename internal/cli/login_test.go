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
	if _, err := os.Stat(live.SessionPath(dir)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused login wrote a session: %v", err)
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

// Logout always deletes the local session, even where it cannot revoke it,
// and says what it did.
func TestLogout_DeletesTheLocalSessionWhateverHappens(t *testing.T) {
	dir := t.TempDir()
	path := live.SessionPath(dir)
	f, out, errb := approveFactory(t, map[string]string{"TROVESNAP_DATA_DIR": dir})
	if code := Run(context.Background(), f, []string{"logout"}); code != ExitOK || !strings.Contains(out.String(), "Not signed in") {
		t.Fatalf("logout without a session: exit %d, %s %s", code, out, errb)
	}
	// A session file (here one that is not even readable as a session) in
	// mock mode: deleted, with a note that nothing was revoked.
	if err := os.WriteFile(path, []byte(`{"version":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if code := Run(context.Background(), f, []string{"logout"}); code != ExitOK || !strings.Contains(out.String(), "deleted") ||
		!strings.Contains(errb.String(), "could not be revoked") {
		t.Fatalf("logout in mock mode: exit %d, %s %s", code, out, errb)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the session file survived: %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 0 {
		t.Fatalf("files left: %v", entries)
	}
}
