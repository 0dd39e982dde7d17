package cli_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/cli"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/store"
)

// dirtyDB creates a mock database at path with a few audit events on the
// demo tenant's chain, and returns the chain heads.
func dirtyDB(t *testing.T, env map[string]string, path string) []domain.ChainHead {
	t.Helper()
	if r := run(t, env, "--db", path, "doctor"); r.code != cli.ExitOK {
		t.Fatal(r)
	}
	ctx := context.Background()
	st, err := store.Open(ctx, path, store.Options{Clock: domain.NewFixedClock(fixtures.Epoch), IDs: domain.NewSeqIDs()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	p, err := st.ResolvePrincipal(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b", "c"} {
		ev := domain.Event{ID: "event_dirty_" + k, TenantID: p.TenantID, Outcome: "success", OccurredAt: fixtures.Epoch}
		if _, _, err := st.CreateCandidate(ctx, p, domain.WriteMeta{Idem: domain.IdempotencyKey{TenantID: p.TenantID, ClientID: p.Client.ID,
			Tool: "trove_create_candidate", ToolMajor: 1, Key: "dirty-" + k, Fingerprint: "sha256:00"}, Event: ev},
			domain.NewCandidate{SaleID: fixtures.PublishedSaleID, Title: "Extra " + k}); err != nil {
			t.Fatal(err)
		}
	}
	heads, err := st.ChainHeads(ctx)
	if err != nil || len(heads) != 1 || heads[0].Events != 3 {
		t.Fatalf("heads = %v, %v", heads, err)
	}
	return heads
}

func digestOf(t *testing.T, path string) map[string]string {
	t.Helper()
	st, err := store.Open(context.Background(), path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	d, err := st.Digest(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// Issue 13, finding 10: without a terminal and without the flag that names
// what is lost, `fixtures reset` refuses (exit 2) and changes nothing — even
// when "reset" arrives on a pipe.
func TestHardening_FixturesResetRefusesWithoutConfirmation(t *testing.T) {
	env, dir := tempEnv(t)
	path := filepath.Join(dir, "t.db")
	dirtyDB(t, env, path)
	setPassphrase(t, env, path)
	before := digestOf(t, path)
	var out, errb strings.Builder
	f := &cli.Factory{
		IO:     cli.IOStreams{In: strings.NewReader(testPass + "\nreset\n"), Out: &out, ErrOut: &errb},
		Getenv: func(k string) string { return env[k] },
		Clock:  domain.NewFixedClock(fixtures.Epoch), IDs: domain.RandomIDs{},
	}
	code := cli.Run(context.Background(), f, []string{"--db", path, "fixtures", "reset", "--passphrase-stdin"})
	if code != cli.ExitUsage || !strings.Contains(errb.String(), "--discard-audit-events") || !strings.Contains(errb.String(), "3 audit event(s)") {
		t.Fatalf("code %d, stderr %q; want exit 2 naming the flag and the 3 events at stake", code, errb.String())
	}
	after := digestOf(t, path)
	for table, sum := range before {
		if after[table] != sum {
			t.Errorf("a refused reset changed %s", table)
		}
	}
}

// With --discard-audit-events the reset runs and the new log is one event,
// intact, that records the reset and names the discarded chain's head.
func TestHardening_FixturesResetRecordsTheDiscardedChain(t *testing.T) {
	env, dir := tempEnv(t)
	path := filepath.Join(dir, "t.db")
	heads := dirtyDB(t, env, path)
	setPassphrase(t, env, path)

	r := runP(t, env, "--db", path, "fixtures", "reset", "--discard-audit-events")
	if r.code != cli.ExitOK || !strings.Contains(r.out, "discarded 3 audit event(s) in 1 chain(s)") {
		t.Fatalf("%+v", r)
	}
	v := run(t, env, "--db", path, "audit", "verify", "--json")
	var rep struct {
		Intact bool  `json:"intact"`
		Events int64 `json:"events"`
	}
	if err := json.Unmarshal([]byte(v.out), &rep); err != nil || v.code != cli.ExitOK || !rep.Intact || rep.Events != 1 {
		t.Fatalf("audit verify after reset: %+v (%v); want 1 event, intact", v, err)
	}
	st, err := store.Open(context.Background(), path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	evs, err := st.Events(context.Background(), store.EventFilter{})
	if err != nil || len(evs) != 1 {
		t.Fatalf("events: %d, %v", len(evs), err)
	}
	sum := evs[0].Payload.RedactedSummary
	if evs[0].Action != store.ResetAction || evs[0].Actor.ID == "" || sum["discarded_events"] != "3" ||
		sum["old_head_hash"] != heads[0].EventHash || !strings.Contains(sum["old_head."+heads[0].TenantID], heads[0].EventID) {
		t.Fatalf("reset event = %+v; want it to record 3 discarded events and the old head %+v", evs[0], heads[0])
	}
}

// Attack on the hardening: a reset reactivates a revoked client and undoes a
// lowered limit, so it widens authority — without the passphrase, or inside
// an agent's shell, it refuses and changes nothing.
func TestHardening_FixturesResetNeedsThePassphraseAndRefusesInAnAgentShell(t *testing.T) {
	env, dir := tempEnv(t)
	path := filepath.Join(dir, "t.db")
	dirtyDB(t, env, path)
	setPassphrase(t, env, path)
	if r := run(t, env, "--db", path, "client", "revoke", fixtures.DemoClientID); r.code != cli.ExitOK {
		t.Fatalf("revoke: %+v", r)
	}
	before := digestOf(t, path)
	for _, c := range []struct {
		name  string
		env   map[string]string
		stdin string
		want  cli.ExitCode
	}{
		{"no passphrase given", env, "", cli.ExitPassphrase},
		{"wrong passphrase", env, "not the passphrase at all\n", cli.ExitPassphrase},
		{"agent shell", withEnv(env, "CLAUDECODE", "1"), testPass + "\n", cli.ExitAgentShell},
	} {
		r := runIn(t, c.env, c.stdin, "--db", path, "fixtures", "reset", "--discard-audit-events", "--passphrase-stdin")
		if r.code != c.want {
			t.Fatalf("%s: %+v; want exit %d", c.name, r, c.want)
		}
		after := digestOf(t, path)
		for _, table := range []string{"mcp_clients", "mcp_limits", "inventory_candidates"} {
			if after[table] != before[table] {
				t.Fatalf("%s: a refused reset changed %s", c.name, table)
			}
		}
	}
	if r := runP(t, env, "--db", path, "fixtures", "reset", "--discard-audit-events"); r.code != cli.ExitOK {
		t.Fatalf("with the passphrase: %+v", r)
	}
}

func withEnv(env map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for key, val := range env {
		out[key] = val
	}
	return out
}
