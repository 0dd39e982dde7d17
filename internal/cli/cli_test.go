package cli_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/cli"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/store"
)

type result struct {
	out, err string
	code     cli.ExitCode
}

// run executes a command line with a test factory: env from the map only.
func run(t *testing.T, env map[string]string, argv ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	f := &cli.Factory{
		IO:         cli.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errb},
		Getenv:     func(k string) string { return env[k] },
		Clock:      domain.NewFixedClock(fixtures.Epoch),
		IDs:        domain.RandomIDs{},
		Executable: func() (string, error) { return "/opt/trovesnap/bin/trovesnap", nil },
	}
	code := cli.Run(context.Background(), f, argv)
	return result{out.String(), errb.String(), code}
}

// testPass is the seller's approval passphrase the tests set.
const testPass = "seller approval passphrase"

// runIn is run with stdin.
func runIn(t *testing.T, env map[string]string, stdin string, argv ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	f := &cli.Factory{
		IO:         cli.IOStreams{In: strings.NewReader(stdin), Out: &out, ErrOut: &errb},
		Getenv:     func(k string) string { return env[k] },
		Clock:      domain.NewFixedClock(fixtures.Epoch),
		IDs:        domain.RandomIDs{},
		Executable: func() (string, error) { return "/opt/trovesnap/bin/trovesnap", nil },
	}
	code := cli.Run(context.Background(), f, argv)
	return result{out.String(), errb.String(), code}
}

// setPassphrase sets the demo seller's passphrase on db, once.
func setPassphrase(t *testing.T, env map[string]string, db string) {
	t.Helper()
	var st struct {
		Set bool `json:"set"`
	}
	if r := run(t, env, "--db", db, "passphrase", "status", "--json"); r.code != cli.ExitOK || json.Unmarshal([]byte(r.out), &st) != nil {
		t.Fatalf("passphrase status: %+v", r)
	}
	if st.Set {
		return
	}
	if r := runIn(t, env, testPass+"\n", "--db", db, "passphrase", "set", "--as", fixtures.DemoUserID, "--passphrase-stdin"); r.code != cli.ExitOK {
		t.Fatalf("passphrase set: %+v", r)
	}
}

// runP runs a command that grants or widens authority, giving the
// passphrase on stdin as a provisioning script does.
func runP(t *testing.T, env map[string]string, argv ...string) result {
	t.Helper()
	return runIn(t, env, testPass+"\n", append(argv, "--passphrase-stdin")...)
}

func tempEnv(t *testing.T) (map[string]string, string) {
	dir := t.TempDir()
	return map[string]string{"HOME": dir, "XDG_DATA_HOME": filepath.Join(dir, "data")}, dir
}

func fileHash(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

func TestVersion_Prints(t *testing.T) {
	r := run(t, nil, "version")
	if r.code != cli.ExitOK || !strings.HasPrefix(r.out, "trovesnap ") {
		t.Fatalf("%+v", r)
	}
}

func TestDoctor_DefaultDBInXDGDataDirAndModeReason(t *testing.T) {
	env, dir := tempEnv(t)
	r := run(t, env, "doctor", "--json")
	if r.code != cli.ExitOK {
		t.Fatalf("%+v", r)
	}
	var rep cli.DoctorReport
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
		t.Fatal(err)
	}
	wantDB := filepath.Join(dir, "data", "trovesnap", "trovesnap.db")
	if rep.Mode != "mock" || !strings.Contains(rep.ModeReason, "no live configuration") || rep.DBPath != wantDB || rep.DBPathSource != "default" {
		t.Errorf("report = %+v", rep)
	}
	if rep.SchemaVersion != store.LatestSchemaVersion() || rep.SchemaVersion < 1 {
		t.Errorf("schema version = %d", rep.SchemaVersion)
	}
	if rep.Rows["items"] != int64(len(fixtures.Dataset().Items)) {
		t.Errorf("items = %d: first start did not seed the fixtures", rep.Rows["items"])
	}
	if rep.ClientToken != "unset" {
		t.Errorf("client token = %q", rep.ClientToken)
	}
	// Human output names the same facts.
	h := run(t, env, "doctor")
	for _, want := range []string{"mode:", "mock", wantDB, "schema version:"} {
		if !strings.Contains(h.out, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, h.out)
		}
	}
}

func TestDoctor_DBFromFlagThenEnv(t *testing.T) {
	env, dir := tempEnv(t)
	env["TROVESNAP_DB"] = filepath.Join(dir, "env.db")
	r := run(t, env, "--db", filepath.Join(dir, "flag.db"), "doctor", "--json")
	if r.code != cli.ExitOK || !strings.Contains(r.out, `"db_path_source": "flag"`) || !strings.Contains(r.out, "flag.db") {
		t.Fatalf("%+v", r)
	}
	r = run(t, env, "doctor", "--json")
	if r.code != cli.ExitOK || !strings.Contains(r.out, `"db_path_source": "env"`) || !strings.Contains(r.out, "env.db") {
		t.Fatalf("%+v", r)
	}
}

func TestDoctor_NeverPrintsTheClientToken(t *testing.T) {
	env, _ := tempEnv(t)
	env["TROVESNAP_CLIENT_TOKEN"] = "tsk_secretsecretsecret"
	r := run(t, env, "doctor", "--json")
	if r.code != cli.ExitOK || strings.Contains(r.out+r.err, "tsk_") || !strings.Contains(r.out, `"client_token": "set"`) {
		t.Fatalf("%+v", r)
	}
}

// §8.3: live requested without its configuration refuses to start (exit 3),
// and writes nothing.
func TestMode_LiveWithoutConfigRefusesToStart(t *testing.T) {
	env, dir := tempEnv(t)
	env["TROVESNAP_MODE"] = "live"
	db := filepath.Join(dir, "never.db")
	for _, argv := range [][]string{{"--db", db, "mcp", "serve"}, {"--db", db, "doctor"}} {
		r := run(t, env, argv...)
		if r.code != cli.ExitConfig || !strings.Contains(r.err, "SUPABASE_URL") {
			t.Errorf("%v: %+v", argv, r)
		}
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Error("a refused start created the database")
	}
	env["TROVESNAP_MODE"] = "sideways"
	if r := run(t, env, "--db", db, "doctor"); r.code != cli.ExitConfig {
		t.Errorf("bad mode: %+v", r)
	}
}

// A host is configured by the project URL and its public key only. A host
// that still sets the retired shared server key, or that was given a
// secret key as its "public" key (a service-role JWT, an sb_secret_ key),
// is refused before anything opens (exit 3), naming the variable, never
// the value, and writes nothing.
func TestMode_SharedOrSecretKeysAreRefused(t *testing.T) {
	enc := base64.RawURLEncoding
	jwt := func(role string) string {
		return enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`)) + "." +
			enc.EncodeToString([]byte(`{"role":"`+role+`","iss":"supabase"}`)) + ".c2lnbmF0dXJlLXZhbHVl"
	}
	for name, c := range map[string]struct{ retired, anon, want string }{
		"retired server key":   {jwt("trovesnap_mcp"), jwt("anon"), "TROVESNAP_SUPABASE_KEY is set"},
		"service role as anon": {"", jwt("service_role"), "SUPABASE_ANON_KEY is not the project's public"},
		"secret key as anon":   {"", "sb_secret_abcdefghijklmnop", "SUPABASE_ANON_KEY is not the project's public"},
		"malformed jwt":        {"", "a.%%%.c", "SUPABASE_ANON_KEY is not the project's public"},
	} {
		t.Run(name, func(t *testing.T) {
			env, dir := tempEnv(t)
			env["SUPABASE_URL"] = "http://127.0.0.1:9"
			env["SUPABASE_ANON_KEY"] = c.anon
			if c.retired != "" {
				env["TROVESNAP_SUPABASE_KEY"] = c.retired
			}
			db := filepath.Join(dir, "never.db")
			r := run(t, env, "--db", db, "mcp", "serve")
			if r.code != cli.ExitConfig || !strings.Contains(r.err, c.want) {
				t.Fatalf("%+v", r)
			}
			for _, v := range []string{c.anon, c.retired} {
				if v != "" && strings.Contains(r.out+r.err, v) {
					t.Fatalf("a key value was printed: %+v", r)
				}
			}
			if _, err := os.Stat(db); !os.IsNotExist(err) {
				t.Error("a refused start created the database")
			}
		})
	}
	// The public key alone (no client token) serves: the public tools only.
	env, dir := tempEnv(t)
	env["SUPABASE_URL"] = "http://127.0.0.1:9"
	env["SUPABASE_ANON_KEY"] = jwt("anon")
	if r := run(t, env, "--db", filepath.Join(dir, "x.db"), "doctor", "--json"); strings.Contains(r.err, "SUPABASE_ANON_KEY is not") {
		t.Fatalf("an anon key was refused: %+v", r)
	}
}

func TestOpen_CorruptForeignAndNewerDBRefusedUnchanged(t *testing.T) {
	env, dir := tempEnv(t)
	corrupt := filepath.Join(dir, "corrupt.db")
	if err := os.WriteFile(corrupt, bytes.Repeat([]byte("not a database "), 500), 0o600); err != nil {
		t.Fatal(err)
	}
	foreign := filepath.Join(dir, "foreign.db")
	db, err := sql.Open("sqlite", foreign)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes(body) VALUES ('keep me')`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	newer := filepath.Join(dir, "newer.db")
	if r := run(t, env, "--db", newer, "doctor"); r.code != cli.ExitOK {
		t.Fatal(r)
	}
	db, _ = sql.Open("sqlite", newer)
	if _, err := db.Exec(`PRAGMA user_version = 999`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	for _, path := range []string{corrupt, foreign, newer} {
		before := fileHash(t, path)
		for _, argv := range [][]string{{"--db", path, "doctor"}, {"--db", path, "fixtures", "reset"}} {
			r := run(t, env, argv...)
			if r.code != cli.ExitDatabase || !strings.Contains(r.err, path) {
				t.Errorf("%v: %+v", argv, r)
			}
		}
		if fileHash(t, path) != before {
			t.Errorf("%s was modified", path)
		}
	}
}

func TestFixturesReset_RestoresSeedState(t *testing.T) {
	env, dir := tempEnv(t)
	path := filepath.Join(dir, "reset.db")
	fresh := filepath.Join(dir, "fresh.db")
	for _, p := range []string{path, fresh} {
		if r := run(t, env, "--db", p, "doctor"); r.code != cli.ExitOK {
			t.Fatal(r)
		}
	}
	ctx := context.Background()
	st, err := store.Open(ctx, path, store.Options{Clock: domain.NewFixedClock(fixtures.Epoch), IDs: domain.NewSeqIDs()})
	if err != nil {
		t.Fatal(err)
	}
	p, err := st.ResolvePrincipal(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	ev := domain.Event{ID: "event_x1", TenantID: p.TenantID, Outcome: "success", OccurredAt: fixtures.Epoch}
	if _, _, err := st.CreateCandidate(ctx, p, domain.WriteMeta{Idem: domain.IdempotencyKey{TenantID: p.TenantID, ClientID: p.Client.ID, Tool: "trove_create_candidate", ToolMajor: 1, Key: "reset-key-1", Fingerprint: "sha256:00"}, Event: ev}, domain.NewCandidate{SaleID: fixtures.PublishedSaleID, Title: "Extra"}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	setPassphrase(t, env, path)
	r := runP(t, env, "--db", path, "fixtures", "reset", "--discard-audit-events")
	if r.code != cli.ExitOK || !strings.Contains(r.out, "reset") {
		t.Fatalf("%+v", r)
	}
	digest := func(p string) map[string]string {
		st, err := store.Open(ctx, p, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		d, err := st.Digest(ctx)
		if err != nil {
			t.Fatal(err)
		}
		delete(d, "store_meta")        // records when seeding happened
		delete(d, "plugin_events")     // the reset's own event (TestHardening_FixturesReset…)
		delete(d, "seller_passphrase") // a reset keeps the passphrase (it needs it)
		return d
	}
	a, b := digest(path), digest(fresh)
	for table := range b {
		if a[table] != b[table] {
			t.Errorf("after reset, %s differs from a fresh store", table)
		}
	}
}

func TestUsage_BadFlagsAndArgsExit2(t *testing.T) {
	for _, argv := range [][]string{{"doctor", "--nope"}, {"version", "extra"}, {"mcp", "serve", "--log-level", "loud"}} {
		if r := run(t, nil, argv...); r.code != cli.ExitUsage {
			t.Errorf("%v: %+v", argv, r)
		}
	}
}
