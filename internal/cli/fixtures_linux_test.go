package cli_test

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/creack/pty"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/cli"
	"github.com/triunalabs/trovesnap/internal/domain"
)

// On a terminal, `fixtures reset` asks for the word "reset": anything else
// refuses (exit 2) and changes nothing; the word resets.
func TestHardening_FixturesResetAsksOnATerminal(t *testing.T) {
	for _, c := range []struct {
		typed string
		code  cli.ExitCode
	}{{"yes\n", cli.ExitUsage}, {"reset\n", cli.ExitOK}} {
		env, dir := tempEnv(t)
		path := filepath.Join(dir, "t.db")
		dirtyDB(t, env, path)
		setPassphrase(t, env, path)
		before := digestOf(t, path)

		ptmx, tty, err := pty.Open()
		if err != nil {
			t.Fatal(err)
		}
		go func() { _, _ = io.Copy(io.Discard, ptmx) }() // drain the echo
		var out, errb strings.Builder
		f := &cli.Factory{
			IO:     cli.IOStreams{In: tty, Out: &out, ErrOut: &errb},
			Getenv: func(k string) string { return env[k] },
			Clock:  domain.NewFixedClock(fixtures.Epoch), IDs: domain.RandomIDs{},
		}
		if _, err := ptmx.Write([]byte(testPass + "\n" + c.typed)); err != nil { // the passphrase, then the word
			t.Fatal(err)
		}
		code := cli.Run(context.Background(), f, []string{"--db", path, "fixtures", "reset"})
		_ = tty.Close()
		_ = ptmx.Close()
		if code != c.code || !strings.Contains(errb.String(), `Type "reset" to confirm`) || !strings.Contains(errb.String(), "3 audit event(s)") {
			t.Fatalf("typed %q: code %d, stderr %q; want %d after the prompt", c.typed, code, errb.String(), c.code)
		}
		after := digestOf(t, path)
		changed := after["plugin_events"] != before["plugin_events"] || after["inventory_candidates"] != before["inventory_candidates"]
		if changed != (c.code == cli.ExitOK) {
			t.Fatalf("typed %q: database changed = %v", c.typed, changed)
		}
	}
}
