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

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/tui"
)

func approveFactory(t *testing.T, env map[string]string) (*Factory, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	var out, errb bytes.Buffer
	dir := t.TempDir()
	base := map[string]string{"HOME": dir, "XDG_DATA_HOME": filepath.Join(dir, "data")}
	for k, v := range env {
		base[k] = v
	}
	return &Factory{
		IO:     IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errb},
		Getenv: func(k string) string { return base[k] },
		Clock:  domain.NewFixedClock(fixtures.Epoch),
		IDs:    domain.RandomIDs{},
	}, &out, &errb
}

// argv → options: --as, --tenant and the root's --db.
func TestApprove_ArgvToOptions(t *testing.T) {
	f, _, _ := approveFactory(t, nil)
	var got *ApproveOptions
	root := &cobra.Command{Use: "trovesnap", SilenceUsage: true, SilenceErrors: true}
	root.PersistentFlags().String("db", "", "")
	root.AddCommand(newApproveCmd(f, func(_ context.Context, o *ApproveOptions) error { got = o; return nil }))
	root.SetArgs([]string{"--db", "/tmp/x.db", "approve", "--as", "user_88", "--tenant", "tenant_123"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if *got != (ApproveOptions{As: "user_88", Tenant: "tenant_123", DB: "/tmp/x.db"}) {
		t.Fatalf("%+v", *got)
	}
	// There is no --yes, nor any other way to approve without the terminal.
	root.SetArgs([]string{"approve", "--as", "user_88", "--yes"})
	if err := root.Execute(); err == nil {
		t.Fatal("--yes accepted")
	}
}

// Without a terminal the command refuses before opening the database,
// writes nothing to stdout, and exits with its own code.
func TestApprove_RefusesWithoutAnInteractiveTerminal(t *testing.T) {
	f, out, errb := approveFactory(t, nil)
	db := filepath.Join(t.TempDir(), "t.db")
	code := Run(context.Background(), f, []string{"approve", "--as", fixtures.DemoUserID, "--db", db})
	if code != ExitNotTTY || out.Len() != 0 || !strings.Contains(errb.String(), "needs an interactive terminal") ||
		!strings.Contains(errb.String(), "there is no --yes") {
		t.Fatalf("code %d, stdout %q, stderr %q", code, out, errb)
	}
	if _, err := os.Stat(db); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the database was touched: %v", err)
	}
	// A pipe is not a terminal either.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if isInteractive(IOStreams{In: r, Out: w}) {
		t.Fatal("a pipe counted as a terminal")
	}
}

// With a terminal: the terminal acts as the passphrase's owner (--as may
// only repeat it), after the passphrase; who it is decides the tenant.
func TestApprove_AsResolvesTheSellerOrRefuses(t *testing.T) {
	const pass = "seller approval passphrase"
	cases := []struct {
		as, tenant string
		typed      string
		noPass     bool
		wantTenant string
		wantErr    string
		wantCode   ExitCode
	}{
		{as: fixtures.DemoUserID, wantTenant: fixtures.DemoTenantID},
		{as: "", wantTenant: fixtures.DemoTenantID}, // the owner, by default
		{as: fixtures.DemoUserID, tenant: fixtures.DemoTenantID, wantTenant: fixtures.DemoTenantID},
		{as: fixtures.CatalogerUserID, wantErr: "--as user_90: this data directory's approval passphrase belongs to user_88", wantCode: ExitUsage},
		{as: fixtures.OtherOwnerUserID, wantErr: "belongs to user_88", wantCode: ExitUsage},
		{as: "user_999", wantErr: "--as user_999: no member of that id in this database (in mock mode the seller is user_88", wantCode: ExitUsage},
		{as: fixtures.DemoUserID, tenant: fixtures.OtherTenantID, wantErr: "--as user_88: not a member of tenant_456", wantCode: ExitUsage},
		{as: fixtures.DemoUserID, typed: "not the passphrase", wantErr: "approve refused: wrong approval passphrase", wantCode: ExitPassphrase},
		{as: fixtures.DemoUserID, typed: "-", wantErr: "approve refused: wrong approval passphrase", wantCode: ExitPassphrase},
		{as: "", noPass: true, wantErr: "trovesnap passphrase set", wantCode: ExitPassphrase},
	}
	for _, c := range cases {
		t.Run(c.as+"/"+c.tenant+"/"+c.typed, func(t *testing.T) {
			f, out, _ := approveFactory(t, map[string]string{"NO_COLOR": "1"})
			db := filepath.Join(t.TempDir(), "t.db")
			if !c.noPass {
				f.IO.In = strings.NewReader(pass + "\n")
				if code := Run(context.Background(), f, []string{"--db", db, "passphrase", "set", "--as", fixtures.DemoUserID, "--passphrase-stdin"}); code != ExitOK {
					t.Fatalf("passphrase set: %d", code)
				}
				out.Reset()
			}
			typed := pass
			switch c.typed {
			case "-":
				typed = "" // enter alone, as replayed keys would send
			case "":
			default:
				typed = c.typed
			}
			var got *tui.Options
			deps := approveDeps{
				interactive: func(IOStreams) bool { return true },
				run: func(_ context.Context, o tui.Options, _ io.Reader, _ io.Writer) error {
					got = &o
					return nil // the seller pressed q
				},
				passphrase: func(string) ([]byte, error) { return []byte(typed), nil },
			}
			err := approveRun(context.Background(), f, &ApproveOptions{As: c.as, Tenant: c.tenant, DB: db}, deps)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) || exitCodeFor(err) != c.wantCode || got != nil {
					t.Fatalf("err %v (exit %d), started %v", err, exitCodeFor(err), got != nil)
				}
				return
			}
			if err != nil || got == nil {
				t.Fatalf("err %v", err)
			}
			if got.TenantID != c.wantTenant || got.ActorID != fixtures.DemoUserID || got.Mode != "mock" || !got.NoColor ||
				got.RiskOf("trove_publish_item") != "high_impact" || got.Backend == nil {
				t.Fatalf("options %+v", got)
			}
			// The terminal acts as the seller (sale assignment) and hides
			// what the seller's role may not see, by the catalog's rule.
			if b, ok := got.Backend.(approveBackend); !ok || b.UserID != fixtures.DemoUserID || got.ChangeVisible == nil ||
				got.ChangeVisible(domain.RoleCataloger, "price_cents") || !got.ChangeVisible(domain.RoleOwner, "price_cents") {
				t.Fatalf("the terminal does not act as the passphrase owner with the role projection: %+v", got)
			}
			if out.Len() != 0 {
				t.Fatalf("stdout %q", out)
			}
		})
	}
}
