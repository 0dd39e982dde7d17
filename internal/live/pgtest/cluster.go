// Package pgtest runs the live backend's tests against a real PostgreSQL 15:
// a throwaway cluster in a temp dir (initdb, pg_ctl and postgres from PATH,
// listening on a unix socket only), the supabase migrations applied as the
// bootstrap superuser, and Endpoint, a small PostgREST-compatible HTTP
// server for the RPCs. It is test support only: no production code imports
// it.
//
// pgx is used (instead of the psql binary) because the endpoint must run
// each request as PostgREST does — one transaction, `SET LOCAL ROLE` to the
// JWT's role, `request.jwt.claims`, then the function — which needs a
// driver, and the same connection applies the migrations.
package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5"
)

// EnvBinDir overrides where the PostgreSQL binaries are looked for.
const EnvBinDir = "TROVESNAP_PG_BINDIR"

// Binaries finds initdb, pg_ctl and postgres: in $TROVESNAP_PG_BINDIR, on
// PATH, or in /usr/local/bin.
func Binaries() (initdb, pgctl string, err error) {
	find := func(name string) (string, error) {
		if d := os.Getenv(EnvBinDir); d != "" {
			p := filepath.Join(d, name)
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
		}
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
		p := filepath.Join("/usr/local/bin", name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		return "", fmt.Errorf("%s not found (looked in $%s, PATH and /usr/local/bin)", name, EnvBinDir)
	}
	if initdb, err = find("initdb"); err != nil {
		return "", "", err
	}
	if pgctl, err = find("pg_ctl"); err != nil {
		return "", "", err
	}
	if _, err = find("postgres"); err != nil {
		return "", "", err
	}
	return initdb, pgctl, nil
}

// Cluster is one running test cluster.
type Cluster struct {
	dir     string
	data    string
	sock    string
	logFile string
	pgctl   string
	cred    *syscall.Credential
}

// Start creates a cluster in a new temp dir and starts it on a unix socket.
// PostgreSQL refuses to run as root, so as root the server runs as the
// "postgres" (or "nobody") user, which owns the temp dir.
func Start() (*Cluster, error) {
	initdb, pgctl, err := Binaries()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "trovesnap-pg-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir, data: filepath.Join(dir, "data"), sock: filepath.Join(dir, "sock"), logFile: filepath.Join(dir, "postgres.log"), pgctl: pgctl}
	if err := os.Mkdir(c.sock, 0o700); err != nil {
		return nil, c.fail(err)
	}
	if os.Geteuid() == 0 {
		if c.cred, err = unprivileged(); err != nil {
			return nil, c.fail(err)
		}
		for _, p := range []string{dir, c.sock} {
			if err := os.Chown(p, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
				return nil, c.fail(err)
			}
		}
	}
	if out, err := c.run(initdb, "-D", c.data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-locale", "--no-sync"); err != nil {
		return nil, c.fail(fmt.Errorf("initdb: %v: %s", err, out))
	}
	if err := c.StartServer(); err != nil {
		return nil, c.fail(err)
	}
	return c, nil
}

func unprivileged() (*syscall.Credential, error) {
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
	}
	return nil, errors.New("running as root and no postgres or nobody user to run PostgreSQL as")
}

func (c *Cluster) run(bin string, args ...string) (string, error) {
	cmd := exec.Command(bin, args...)
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C", "TZ=UTC")
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return strings.TrimSpace(out.String()), err
}

func (c *Cluster) fail(err error) error {
	_ = os.RemoveAll(c.dir)
	return err
}

// StartServer starts (or restarts after StopServer) the postmaster and
// waits until it accepts connections.
func (c *Cluster) StartServer() error {
	opts := "-c listen_addresses='' -k " + c.sock + " -c fsync=off -c synchronous_commit=off -c full_page_writes=off" +
		" -c max_connections=40 -c timezone=UTC"
	if out, err := c.run(c.pgctl, "start", "-w", "-t", "60", "-D", c.data, "-l", c.logFile, "-o", opts); err != nil {
		log, _ := os.ReadFile(c.logFile)
		return fmt.Errorf("pg_ctl start: %v: %s\n%s", err, out, log)
	}
	return nil
}

// StopServer stops the postmaster (fast shutdown: connections are cut), as
// an outage would.
func (c *Cluster) StopServer() error {
	if out, err := c.run(c.pgctl, "stop", "-w", "-t", "60", "-m", "fast", "-D", c.data); err != nil {
		return fmt.Errorf("pg_ctl stop: %v: %s", err, out)
	}
	return nil
}

// Close stops the server and removes the cluster.
func (c *Cluster) Close() error {
	err := c.StopServer()
	return errors.Join(err, os.RemoveAll(c.dir))
}

// DSN is the connection string of a role on the unix socket.
func (c *Cluster) DSN(role string) string {
	return fmt.Sprintf("host=%s port=5432 user=%s dbname=postgres sslmode=disable", c.sock, role)
}

// Super connects as the bootstrap superuser (tests inspect tables with it;
// superusers bypass row level security).
func (c *Cluster) Super(ctx context.Context) (*pgx.Conn, error) {
	return pgx.Connect(ctx, c.DSN("postgres"))
}

// RepoDir is the repository root (this file's ../../..).
func RepoDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
}

// MigrationFiles lists supabase/migrations/*.sql in order.
func MigrationFiles() ([]string, error) {
	files, err := filepath.Glob(filepath.Join(RepoDir(), "supabase", "migrations", "*.sql"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	if len(files) == 0 {
		return nil, errors.New("no supabase migrations found")
	}
	return files, nil
}

// Bootstrap creates what a Supabase project has before any migration: the
// PostgREST login role (authenticator, NOINHERIT), the API roles, and
// Supabase Auth's role (supabase_auth_admin, which runs the auth hooks; no
// login here: Endpoint.OAuthTokenWithHook becomes it with SET ROLE).
const Bootstrap = `
CREATE ROLE anon NOLOGIN NOINHERIT;
CREATE ROLE authenticated NOLOGIN NOINHERIT;
CREATE ROLE service_role NOLOGIN NOINHERIT BYPASSRLS;
CREATE ROLE authenticator LOGIN NOINHERIT;
GRANT anon, authenticated, service_role TO authenticator;
CREATE ROLE supabase_auth_admin NOLOGIN NOINHERIT;
`

// Migrate bootstraps the Supabase roles and applies every migration, each
// file in one transaction like `supabase db push`, then the development
// files (supabase/dev) the tests need.
func (c *Cluster) Migrate(ctx context.Context) error {
	conn, err := c.Super(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, Bootstrap); err != nil {
		return fmt.Errorf("bootstrap roles: %w", err)
	}
	files, err := MigrationFiles()
	if err != nil {
		return err
	}
	dev, err := filepath.Glob(filepath.Join(RepoDir(), "supabase", "dev", "*.sql"))
	if err != nil {
		return err
	}
	sort.Strings(dev)
	for _, f := range append(files, dev...) {
		body, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		if err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, string(body))
			return err
		}); err != nil {
			return fmt.Errorf("%s: %w", filepath.Base(f), err)
		}
	}
	return nil
}

// Counts returns the row count of every trovesnap table.
func (c *Cluster) Counts(ctx context.Context) (map[string]int64, error) {
	conn, err := c.Super(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'trovesnap' AND c.relkind = 'r' ORDER BY 1`)
	if err != nil {
		return nil, err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, n := range names {
		var k int64
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM trovesnap."+pgx.Identifier{n}.Sanitize()).Scan(&k); err != nil {
			return nil, err
		}
		out[n] = k
	}
	return out, nil
}

// Tables lists the trovesnap tables.
func (c *Cluster) Tables(ctx context.Context) ([]string, error) {
	counts, err := c.Counts(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(counts))
	for k := range counts {
		out = append(out, k)
	}
	sort.Strings(out)
	return out, nil
}
