package cli_test

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/cli"
	"github.com/triunalabs/trovesnap/internal/domain"
)

func showLimits(t *testing.T, env map[string]string, db string, extra ...string) domain.Limits {
	t.Helper()
	r := run(t, env, append([]string{"--db", db, "limits", "show", "--tenant", fixtures.DemoTenantID, "--json"}, extra...)...)
	var l domain.Limits
	if err := json.Unmarshal([]byte(r.out), &l); err != nil {
		t.Fatalf("limits show: %+v, %v", r, err)
	}
	return l
}

// --rejected 0 means the default, 120: from 5 that is a raise, and needs
// the passphrase like any other. Without it nothing changes, and the
// seller's real lowering afterwards (to 1) is a lowering.
func TestHardening_LimitsRejectedZeroIsARaiseToTheDefault(t *testing.T) {
	env, dir := tempEnv(t)
	db := filepath.Join(dir, "r.db")
	setPassphrase(t, env, db)
	if r := run(t, env, "--db", db, "limits", "set", "--tenant", fixtures.DemoTenantID, "--rejected", "5"); r.code != cli.ExitOK {
		t.Fatalf("lowering the rejected budget to 5: %+v", r)
	}
	before := mustDigestOf(t, db)
	if r := run(t, env, "--db", db, "limits", "set", "--tenant", fixtures.DemoTenantID, "--rejected", "0"); r.code != cli.ExitPassphrase {
		t.Fatalf("--rejected 0 (the default, 120) without the passphrase: %+v", r)
	}
	if d := changed(before, mustDigestOf(t, db)); len(d) != 0 {
		t.Fatalf("the refused raise changed %v", d)
	}
	if l := showLimits(t, env, db); l.PerMinute(domain.LimitRejected) != 5 {
		t.Fatalf("after the refused raise: %+v", l)
	}
	if r := run(t, env, "--db", db, "limits", "set", "--tenant", fixtures.DemoTenantID, "--rejected", "1"); r.code != cli.ExitOK {
		t.Fatalf("lowering to 1: %+v", r)
	}
	if l := showLimits(t, env, db); l.PerMinute(domain.LimitRejected) != 1 {
		t.Fatalf("after lowering to 1: %+v", l)
	}
	// With the passphrase, 0 restores the default.
	if r := runP(t, env, "--db", db, "limits", "set", "--tenant", fixtures.DemoTenantID, "--rejected", "0"); r.code != cli.ExitOK {
		t.Fatalf("--rejected 0 with the passphrase: %+v", r)
	}
	if l := showLimits(t, env, db); l.PerMinute(domain.LimitRejected) != domain.DefaultRejectedPerMinute {
		t.Fatalf("after restoring the default: %+v", l)
	}
}

// An agent "lowers" one field of its own client (no passphrase needed),
// which writes a client row with the tenant's current values. The seller's
// later tenant-level lowering still binds that client: a client's limits
// narrow its tenant's.
func TestHardening_LimitsAClientRowCannotPinTheTenantsLimits(t *testing.T) {
	env, dir := tempEnv(t)
	db := filepath.Join(dir, "p.db")
	if r := run(t, env, "--db", db, "limits", "set", "--tenant", fixtures.DemoTenantID, "--client", fixtures.DemoClientID,
		"--bulk-targets", "49"); r.code != cli.ExitOK {
		t.Fatalf("the client's lowering: %+v", r)
	}
	if r := run(t, env, "--db", db, "limits", "set", "--tenant", fixtures.DemoTenantID, "--reads", "1", "--rejected", "3"); r.code != cli.ExitOK {
		t.Fatalf("the tenant's lowering: %+v", r)
	}
	l := showLimits(t, env, db, "--client", fixtures.DemoClientID)
	if l.ReadsPerMinute != 1 || l.PerMinute(domain.LimitRejected) != 3 || l.MaxBulkTargets != 49 {
		t.Fatalf("the client's effective limits = %+v; want reads 1, rejected 3 (the tenant's), bulk 49 (its own)", l)
	}
}
