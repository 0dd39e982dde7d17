package pgtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/jackc/pgx/v5"
)

// EnvSupabaseCLI overrides where the Supabase CLI is looked for (default:
// the repository's node_modules/.bin/supabase, installed from package.json).
const EnvSupabaseCLI = "TROVESNAP_SUPABASE_CLI"

// SupabaseCLIInstall is the command that installs the pinned CLI (see
// docs/supabase-cli.md for why it is not `npm ci`).
const SupabaseCLIInstall = "npm install --no-save --ignore-scripts --no-audit --no-fund"

// PinnedSupabaseCLI is the CLI version package.json pins (exactly, no range).
func PinnedSupabaseCLI() (string, error) {
	body, err := os.ReadFile(filepath.Join(RepoDir(), "package.json"))
	if err != nil {
		return "", err
	}
	var pkg struct {
		DevDependencies map[string]string `json:"devDependencies"`
	}
	if err := json.Unmarshal(body, &pkg); err != nil {
		return "", fmt.Errorf("package.json: %w", err)
	}
	v := pkg.DevDependencies["supabase"]
	if v == "" || strings.ContainsAny(v, "^~<>=*x| ") {
		return "", fmt.Errorf("package.json must pin devDependencies.supabase to one exact version, has %q", v)
	}
	return v, nil
}

// SupabaseCLI finds the Supabase CLI and checks that it is the pinned
// version: the path, or why it is not usable.
func SupabaseCLI(ctx context.Context) (string, error) {
	want, err := PinnedSupabaseCLI()
	if err != nil {
		return "", err
	}
	bin := os.Getenv(EnvSupabaseCLI)
	if bin == "" {
		bin = filepath.Join(RepoDir(), "node_modules", ".bin", "supabase")
	}
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("the Supabase CLI %s is not installed (%v): run `%s` at the repository root (scripts/test does)", want, err, SupabaseCLIInstall)
	}
	out, err := SupabaseCmd(ctx, bin, "", "--version").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s --version: %v: %s", bin, err, out)
	}
	if got := strings.TrimSpace(string(out)); got != want {
		return "", fmt.Errorf("%s is version %s, package.json pins %s: run `%s`", bin, got, want, SupabaseCLIInstall)
	}
	return bin, nil
}

// SupabaseCmd is the CLI run in workdir with telemetry off.
func SupabaseCmd(ctx context.Context, bin, workdir string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = workdir
	cmd.Env = append(os.Environ(), "SUPABASE_TELEMETRY_DISABLED=1", "DO_NOT_TRACK=1")
	return cmd
}

// DBURL is the postgres:// URL of a role on the unix socket, as
// `supabase db push --db-url` takes it (percent-encoded; the server has no
// TLS).
func (c *Cluster) DBURL(role string) string {
	q := url.Values{"host": {c.sock}, "port": {"5432"}, "sslmode": {"disable"}}
	return (&url.URL{Scheme: "postgres", User: url.User(role), Host: "localhost", Path: "/postgres", RawQuery: q.Encode()}).String()
}

// Exec runs sql as the bootstrap superuser.
func (c *Cluster) Exec(ctx context.Context, sql string) error {
	conn, err := c.Super(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

// Schema is a fingerprint of what the migrations create — one line per
// role, schema, relation, column, constraint, index, trigger, policy and
// function (its full definition hashed), with owners and privileges — so
// that two clusters can be compared. Objects named in skip (supabase/dev's
// functions) are left out.
func (c *Cluster) Schema(ctx context.Context, skip ...string) ([]string, error) {
	conn, err := c.Super(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	if skip == nil {
		skip = []string{}
	}
	rows, err := conn.Query(ctx, schemaFingerprint, skip)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New("empty schema")
	}
	return out, nil
}

const schemaFingerprint = `
WITH ns AS (SELECT oid, nspname FROM pg_namespace WHERE nspname IN ('public', 'trovesnap'))
SELECT 'role ' || rolname || ' super=' || rolsuper || ' inherit=' || rolinherit || ' login=' || rolcanlogin
       || ' bypassrls=' || rolbypassrls || ' createrole=' || rolcreaterole || ' createdb=' || rolcreatedb
       || ' member_of=' || coalesce((SELECT string_agg(g.rolname, ',' ORDER BY g.rolname) FROM pg_auth_members m
                                      JOIN pg_roles g ON g.oid = m.roleid WHERE m.member = r.oid), '')
  FROM pg_roles r WHERE rolname LIKE 'trovesnap%' OR rolname IN ('anon', 'authenticated', 'service_role', 'authenticator')
UNION ALL
SELECT 'schema ' || nspname || ' owner=' || pg_get_userbyid(nspowner) || ' acl=' || coalesce(nspacl::text, '')
  FROM pg_namespace WHERE oid IN (SELECT oid FROM ns)
UNION ALL
SELECT 'rel ' || c.oid::regclass || ' kind=' || c.relkind::text || ' owner=' || pg_get_userbyid(c.relowner)
       || ' rls=' || c.relrowsecurity || ' force=' || c.relforcerowsecurity || ' acl=' || coalesce(c.relacl::text, '')
  FROM pg_class c WHERE c.relnamespace IN (SELECT oid FROM ns)
UNION ALL
SELECT 'col ' || a.attrelid::regclass || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
       || ' notnull=' || a.attnotnull || ' default=' || coalesce(pg_get_expr(d.adbin, d.adrelid), '')
  FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
  LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
 WHERE c.relnamespace IN (SELECT oid FROM ns) AND a.attnum > 0 AND NOT a.attisdropped
UNION ALL
SELECT 'con ' || conrelid::regclass || ' ' || conname || ' ' || pg_get_constraintdef(oid) || ' validated=' || convalidated
  FROM pg_constraint WHERE connamespace IN (SELECT oid FROM ns)
UNION ALL
SELECT 'idx ' || indexdef FROM pg_indexes WHERE schemaname IN (SELECT nspname FROM ns)
UNION ALL
SELECT 'trg ' || pg_get_triggerdef(oid) || ' enabled=' || tgenabled::text FROM pg_trigger
 WHERE NOT tgisinternal AND tgrelid IN (SELECT oid FROM pg_class WHERE relnamespace IN (SELECT oid FROM ns))
UNION ALL
SELECT 'pol ' || schemaname || '.' || tablename || ' ' || policyname || ' ' || permissive || ' ' || cmd || ' ' || roles::text
       || ' using=' || coalesce(qual, '') || ' check=' || coalesce(with_check, '')
  FROM pg_policies WHERE schemaname IN (SELECT nspname FROM ns)
UNION ALL
SELECT 'fn ' || p.oid::regprocedure || ' owner=' || pg_get_userbyid(p.proowner) || ' acl=' || coalesce(p.proacl::text, '')
       || ' def=' || md5(pg_get_functiondef(p.oid))
  FROM pg_proc p WHERE p.pronamespace IN (SELECT oid FROM ns) AND p.prokind <> 'a' AND NOT p.proname = ANY($1::text[])
UNION ALL
SELECT 'defacl ' || pg_get_userbyid(defaclrole) || ' ' || coalesce(defaclnamespace::regnamespace::text, '-') || ' '
       || defaclobjtype::text || ' ' || defaclacl::text FROM pg_default_acl
ORDER BY 1`
