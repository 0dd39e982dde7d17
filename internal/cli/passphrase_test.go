package cli_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/cli"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/store"
)

// guardedCase is one command that grants or widens authority, on a store
// prepared with a disabled policy and a suspended client.
type guardedCase struct {
	name string
	argv []string
}

// guardedFixture prepares db (passphrase set) and returns the guarded
// command lines: each would change something if it ran.
func guardedFixture(t *testing.T, env map[string]string, dir, db string) []guardedCase {
	t.Helper()
	setPassphrase(t, env, db)
	file := filepath.Join(dir, "tags.yaml")
	if err := os.WriteFile(file, []byte(policyYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := runP(t, env, "--db", db, "policy", "create", "--file", file); r.code != cli.ExitOK {
		t.Fatalf("policy create: %+v", r)
	}
	var ps []domain.Policy
	_ = json.Unmarshal([]byte(run(t, env, "--db", db, "policy", "list", "--tenant", fixtures.DemoTenantID, "--json").out), &ps)
	reg := registerJSON(t, env, db)
	if r := run(t, env, "--db", db, "client", "suspend", reg.ClientID); r.code != cli.ExitOK {
		t.Fatalf("suspend: %+v", r)
	}
	return []guardedCase{
		{"policy create", []string{"policy", "create", "--file", file}},
		{"policy enable", []string{"policy", "enable", ps[0].ID}},
		{"client register", []string{"client", "register", "--name", "Agent's own", "--type", "custom", "--tenant", fixtures.DemoTenantID,
			"--actor", fixtures.DemoUserID, "--groups", "tenant_read,action_proposal,controlled_action"}},
		{"client reactivate", []string{"client", "reactivate", reg.ClientID}},
		{"client rotate", []string{"client", "rotate", reg.ClientID}},
		{"limits set raising", []string{"limits", "set", "--tenant", fixtures.DemoTenantID, "--controlled-actions", "1000"}},
	}
}

func openDigest(t *testing.T, db string) (map[string]string, []domain.Event) {
	t.Helper()
	st, err := store.Open(context.Background(), db, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	d, err := st.Digest(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	evs, err := st.Events(context.Background(), store.EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	return d, evs
}

func changed(a, b map[string]string) []string {
	var out []string
	for k, v := range b {
		if a[k] != v {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// Without the passphrase — none given, a wrong one, or one in a flag or
// an environment variable — every command that grants or widens authority
// is refused (exit 8) and changes nothing but its audit.
func TestHardening_GrantingCommandsNeedThePassphrase(t *testing.T) {
	env, dir := tempEnv(t)
	db := filepath.Join(dir, "g.db")
	cases := guardedFixture(t, env, dir, db)
	env["TROVESNAP_PASSPHRASE"] = testPass // never read
	for _, c := range cases {
		before, evBefore := openDigest(t, db)
		argv := append([]string{"--db", db}, c.argv...)
		// No terminal, no --passphrase-stdin (the passphrase in stdin is not read without it).
		if r := runIn(t, env, testPass+"\n", argv...); r.code != cli.ExitPassphrase || !strings.Contains(r.err, "--passphrase-stdin") ||
			!strings.Contains(r.err, "never an argument or an environment variable") {
			t.Errorf("%s without the passphrase: %+v", c.name, r)
		}
		// A flag value is no way either.
		if r := run(t, env, append(argv, "--passphrase", testPass)...); r.code != cli.ExitUsage {
			t.Errorf("%s --passphrase VALUE: %+v", c.name, r)
		}
		if d := changed(before, mustDigestOf(t, db)); len(d) != 0 {
			t.Errorf("%s without the passphrase changed %v", c.name, d)
		}
		// A wrong one: refused, audited, nothing else changed.
		r := runIn(t, env, "a wrong passphrase\n", append(argv, "--passphrase-stdin")...)
		if r.code != cli.ExitPassphrase || !strings.Contains(r.err, "wrong approval passphrase") || !strings.Contains(r.err, "nothing was changed") {
			t.Errorf("%s with a wrong passphrase: %+v", c.name, r)
		}
		after, evAfter := openDigest(t, db)
		if d := changed(before, after); !slices.Equal(d, []string{"plugin_events", "seller_passphrase"}) {
			t.Errorf("%s with a wrong passphrase changed %v", c.name, d)
		}
		last := evAfter[len(evAfter)-1]
		if len(evAfter) != len(evBefore)+1 || last.Action != "seller_passphrase_refused" || last.Outcome != domain.OutcomeBlocked ||
			last.TenantID != fixtures.DemoTenantID || !strings.HasPrefix(last.Payload.RedactedSummary["command"], strings.Fields(c.name)[0]) {
			t.Errorf("%s: refusal event %+v", c.name, last)
		}
		if strings.Contains(string(mustJSON(t, last)), "wrong passphrase") {
			t.Errorf("%s: the event carries what was typed", c.name)
		}
		// The right one, given on stdin: the command runs.
		if r := runP(t, env, argv...); r.code != cli.ExitOK {
			t.Errorf("%s with the passphrase: %+v", c.name, r)
		}
	}
	// The refusals are links of the tenant's chain like any other event.
	if r := run(t, env, "--db", db, "audit", "verify"); r.code != cli.ExitOK {
		t.Fatalf("audit verify after the refusals: %+v", r)
	}
}

// With no passphrase set, each refuses and says how to set one.
func TestHardening_GrantingCommandsRefuseUntilAPassphraseIsSet(t *testing.T) {
	env, dir := tempEnv(t)
	db := filepath.Join(dir, "g.db")
	cases := guardedFixture(t, env, dir, db)
	// A fresh store with the same rows, but no passphrase.
	db2 := filepath.Join(dir, "g2.db")
	if r := run(t, env, "--db", db2, "passphrase", "status"); r.code != cli.ExitOK || !strings.Contains(r.out, "No approval passphrase") {
		t.Fatalf("status: %+v", r)
	}
	for _, c := range cases {
		argv := append([]string{"--db", db2}, c.argv...)
		if c.name == "policy enable" || c.name == "client reactivate" || c.name == "client rotate" {
			continue // their ids exist only in db
		}
		before := mustDigestOf(t, db2)
		r := runP(t, env, argv...)
		if r.code != cli.ExitPassphrase || !strings.Contains(r.err, "no approval passphrase is set") || !strings.Contains(r.err, "trovesnap passphrase set") {
			t.Errorf("%s: %+v", c.name, r)
		}
		if d := changed(before, mustDigestOf(t, db2)); len(d) != 0 {
			t.Errorf("%s changed %v", c.name, d)
		}
	}
}

// `--by`, `--created-by` and a policy file's created_by are no longer taken
// on trust: in mock mode the command acts as the passphrase's owner, and a
// claim naming anyone else is refused before the passphrase is asked.
func TestHardening_ActorIsThePassphraseOwner(t *testing.T) {
	env, dir := tempEnv(t)
	db := filepath.Join(dir, "g.db")
	cases := guardedFixture(t, env, dir, db)
	other := filepath.Join(dir, "other.yaml")
	if err := os.WriteFile(other, []byte(strings.Replace(policyYAML, "created_by: user_88", "created_by: user_89", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	before := mustDigestOf(t, db)
	for _, argv := range [][]string{
		{"policy", "enable", cases[1].argv[2], "--by", fixtures.ManagerUserID},
		{"policy", "create", "--file", other},
		{"client", "rotate", cases[4].argv[2], "--by", fixtures.ManagerUserID},
		{"client", "reactivate", cases[3].argv[2], "--by", fixtures.ManagerUserID},
		append(slices.Clone(cases[2].argv), "--created-by", fixtures.ManagerUserID),
	} {
		r := runP(t, env, append([]string{"--db", db}, argv...)...)
		if r.code != cli.ExitUsage || !strings.Contains(r.err, "belongs to user_88") {
			t.Errorf("%v: %+v", argv, r)
		}
	}
	if d := changed(before, mustDigestOf(t, db)); len(d) != 0 {
		t.Fatalf("refused claims changed %v", d)
	}
	// Without --by the owner acts, and the audit says so.
	if r := runP(t, env, "--db", db, "policy", "enable", cases[1].argv[2]); r.code != cli.ExitOK {
		t.Fatalf("enable: %+v", r)
	}
	_, evs := openDigest(t, db)
	last := evs[len(evs)-1]
	if last.Actor.ID != fixtures.DemoUserID {
		t.Fatalf("policy enabled by %q, want the passphrase's owner: %+v", last.Actor.ID, last)
	}
}

// Lowering a limit needs no passphrase; raising one does.
func TestHardening_RaisingALimitNeedsThePassphraseLoweringDoesNot(t *testing.T) {
	env, dir := tempEnv(t)
	db := filepath.Join(dir, "l.db")
	setPassphrase(t, env, db)
	if r := run(t, env, "--db", db, "limits", "set", "--tenant", fixtures.DemoTenantID, "--reads", "7"); r.code != cli.ExitOK {
		t.Fatalf("lowering: %+v", r)
	}
	before := mustDigestOf(t, db)
	for _, argv := range [][]string{{"--reads", "8"}, {"--reads", "1", "--bulk-targets", "51"}, {"--paid-usd-per-day", "0.5"}} {
		r := run(t, env, append([]string{"--db", db, "limits", "set", "--tenant", fixtures.DemoTenantID}, argv...)...)
		if r.code != cli.ExitPassphrase {
			t.Errorf("raising %v without the passphrase: %+v", argv, r)
		}
	}
	if d := changed(before, mustDigestOf(t, db)); len(d) != 0 {
		t.Fatalf("refused raises changed %v", d)
	}
	if r := runP(t, env, "--db", db, "limits", "set", "--tenant", fixtures.DemoTenantID, "--reads", "8"); r.code != cli.ExitOK {
		t.Fatalf("raising with the passphrase: %+v", r)
	}
	var l domain.Limits
	_ = json.Unmarshal([]byte(run(t, env, "--db", db, "limits", "show", "--tenant", fixtures.DemoTenantID, "--json").out), &l)
	if l.ReadsPerMinute != 8 {
		t.Fatalf("limits %+v", l)
	}
}

// Inside a known agent's shell each of them refuses (exit 7), names the
// marker, is audited, and changes nothing else — even with the right
// passphrase. A blank marker counts as unset.
func TestHardening_AgentShellMarkersRefuseTheHumanCommands(t *testing.T) {
	env, dir := tempEnv(t)
	db := filepath.Join(dir, "a.db")
	cases := append(guardedFixture(t, env, dir, db), guardedCase{"passphrase change", []string{"passphrase", "change"}})
	for _, marker := range cli.AgentShellMarkers() {
		env[marker] = "1"
		for _, c := range cases {
			before, evBefore := openDigest(t, db)
			r := runP(t, env, append([]string{"--db", db}, c.argv...)...)
			if r.code != cli.ExitAgentShell || !strings.Contains(r.err, marker+" is set") || !strings.Contains(r.err, "agent's shell") {
				t.Errorf("%s under %s: %+v", c.name, marker, r)
			}
			after, evAfter := openDigest(t, db)
			if d := changed(before, after); !slices.Equal(d, []string{"plugin_events"}) {
				t.Errorf("%s under %s changed %v", c.name, marker, d)
			}
			if last := evAfter[len(evAfter)-1]; len(evAfter) != len(evBefore)+1 || last.Action != "agent_shell_refused" ||
				last.Payload.RedactedSummary["marker"] != marker || last.Outcome != domain.OutcomeBlocked {
				t.Errorf("%s under %s: event %+v", c.name, marker, last)
			}
		}
		env[marker] = " "
		if r := runP(t, env, "--db", db, "limits", "set", "--tenant", fixtures.DemoTenantID, "--reads", "121"); r.code != cli.ExitOK {
			t.Errorf("blank %s refused: %+v", marker, r)
		}
		delete(env, marker)
	}
	// The approve terminal too (before any terminal check would let it start).
	env["CLAUDECODE"] = "1"
	if r := run(t, env, "--db", db, "passphrase", "set", "--as", fixtures.DemoUserID, "--passphrase-stdin"); r.code != cli.ExitAgentShell {
		t.Errorf("passphrase set in an agent shell: %+v", r)
	}
}

// passphrase set: needs --as (an approver), refuses empty and short ones,
// never twice; change needs the old one.
func TestHardening_PassphraseSetAndChange(t *testing.T) {
	env, dir := tempEnv(t)
	db := filepath.Join(dir, "s.db")
	for _, c := range []struct {
		stdin string
		argv  []string
		want  string
	}{
		{testPass + "\n", []string{"--passphrase-stdin"}, "--as USER is required"},
		{"\n", []string{"--as", fixtures.DemoUserID, "--passphrase-stdin"}, "no passphrase"},
		{"short one\n", []string{"--as", fixtures.DemoUserID, "--passphrase-stdin"}, "shorter than 12 characters"},
		{"            \n", []string{"--as", fixtures.DemoUserID, "--passphrase-stdin"}, "empty"},
		{testPass + "\n", []string{"--as", fixtures.CatalogerUserID, "--passphrase-stdin"}, "may not approve"},
		{testPass + "\n", []string{"--as", fixtures.DemoUserID}, "--passphrase-stdin"},
	} {
		r := runIn(t, env, c.stdin, append([]string{"--db", db, "passphrase", "set"}, c.argv...)...)
		if r.code == cli.ExitOK || !strings.Contains(r.err, c.want) {
			t.Errorf("set %v: %+v", c.argv, r)
		}
	}
	if r := run(t, env, "--db", db, "passphrase", "status"); !strings.Contains(r.out, "No approval passphrase is set") {
		t.Fatalf("status: %+v", r)
	}
	setPassphrase(t, env, db)
	if r := runIn(t, env, "another good passphrase\n", "--db", db, "passphrase", "set", "--as", fixtures.DemoUserID, "--passphrase-stdin"); r.code != cli.ExitUsage ||
		!strings.Contains(r.err, "trovesnap passphrase change") {
		t.Fatalf("second set: %+v", r)
	}
	if r := runIn(t, env, "not the current one\nanother good passphrase\n", "--db", db, "passphrase", "change", "--passphrase-stdin"); r.code != cli.ExitPassphrase {
		t.Fatalf("change with a wrong old one: %+v", r)
	}
	if r := runIn(t, env, testPass+"\nanother good passphrase\n", "--db", db, "passphrase", "change", "--passphrase-stdin"); r.code != cli.ExitOK {
		t.Fatalf("change: %+v", r)
	}
	if r := runP(t, env, "--db", db, "limits", "set", "--tenant", fixtures.DemoTenantID, "--reads", "500"); r.code != cli.ExitPassphrase {
		t.Fatalf("the old passphrase still works: %+v", r)
	}
	if r := runIn(t, env, "another good passphrase\n", "--db", db, "limits", "set", "--tenant", fixtures.DemoTenantID, "--reads", "500", "--passphrase-stdin"); r.code != cli.ExitOK {
		t.Fatalf("the new passphrase: %+v", r)
	}
	if r := run(t, env, "--db", db, "passphrase", "status"); !strings.Contains(r.out, "set for user_88") {
		t.Fatalf("status: %+v", r)
	}
}

func mustDigestOf(t *testing.T, db string) map[string]string {
	t.Helper()
	d, _ := openDigest(t, db)
	return d
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
