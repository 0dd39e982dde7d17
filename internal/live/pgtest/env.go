package pgtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// Env is a package's shared cluster and endpoint.
type Env struct {
	Cluster  *Cluster
	Endpoint *Endpoint
}

var (
	shared     *Env
	skipReason string
)

// Main runs a test package against one cluster, started before m.Run and
// stopped after it. Without usable PostgreSQL binaries the tests that Need
// it skip — except with CI=true, where Main fails at once: CI must run them.
// A migration that does not apply always fails the run.
func Main(m *testing.M) int {
	ci := os.Getenv("CI") == "true"
	env, started, err := start()
	if err != nil {
		if ci || started {
			// A cluster that started but would not take the migrations (or
			// serve them) is a defect of ours, never a missing install.
			fmt.Fprintf(os.Stderr, "pgtest: the live suite cannot run: %v\n", err)
			return 1
		}
		skipReason = fmt.Sprintf("PostgreSQL 15 binaries not usable (%v): install postgresql-15 (initdb, pg_ctl, postgres on PATH or in /usr/local/bin, or set %s) to run the live suite", err, EnvBinDir)
	}
	shared = env
	code := m.Run()
	if env != nil {
		env.Endpoint.Close()
		if err := env.Cluster.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest: stopping the cluster:", err)
		}
	}
	return code
}

// start starts the cluster, applies the migrations and serves them;
// started reports whether PostgreSQL itself came up.
func start() (env *Env, started bool, err error) {
	c, err := Start()
	if err != nil {
		return nil, false, err
	}
	ctx := context.Background()
	if err := c.Migrate(ctx); err != nil {
		_ = c.Close()
		return nil, true, fmt.Errorf("migrations: %w", err)
	}
	e, err := c.Serve(ctx)
	if err != nil {
		_ = c.Close()
		return nil, true, fmt.Errorf("serve: %w", err)
	}
	return &Env{Cluster: c, Endpoint: e}, true, nil
}

// Need returns the shared environment or skips the test (Main already
// failed the run in CI).
func Need(t testing.TB) *Env {
	t.Helper()
	if shared == nil {
		if skipReason == "" {
			t.Fatal("pgtest: call pgtest.Main from the package's TestMain")
		}
		t.Skip(skipReason)
	}
	return shared
}

// PublicKey mints the project's public (anon) key: the only key a host
// holds. An MCP call's authority is its client token.
func (e *Env) PublicKey() string { return e.Endpoint.Token("anon", time.Hour) }

// RetiredServerKey mints a JWT for the trovesnap_mcp role — the shared
// server key of earlier releases — for tests that prove it is refused.
func (e *Env) RetiredServerKey() string { return e.Endpoint.Token("trovesnap_mcp", time.Hour) }

// Seed empties the database and inserts ds through mcp_seed_fixtures, as
// the development admin role (credential hashes travel apart: the dataset's
// JSON never carries them).
func (e *Env) Seed(ctx context.Context, ds domain.Dataset) error {
	creds := map[string]string{}
	for _, c := range ds.Clients {
		if c.CredentialHash != "" {
			creds[c.ID] = c.CredentialHash
		}
	}
	body, err := json.Marshal(map[string]any{"p_dataset": ds, "p_credentials": creds})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.Endpoint.URL+"/rest/v1/rpc/mcp_seed_fixtures", strings.NewReader(string(body)))
	if err != nil {
		return err
	}
	tok := e.Endpoint.Token("trovesnap_admin", time.Minute)
	req.Header.Set("apikey", tok)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var pe map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&pe)
		return fmt.Errorf("mcp_seed_fixtures: HTTP %d: %v", resp.StatusCode, pe)
	}
	return nil
}

// Events reads every plugin_event body in append order.
func (e *Env) Events(ctx context.Context) ([]domain.Event, error) {
	conn, err := e.Cluster.Super(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT body::text FROM trovesnap.plugin_events ORDER BY seq")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []domain.Event{}
	for rows.Next() {
		var b string
		if err := rows.Scan(&b); err != nil {
			return nil, err
		}
		var ev domain.Event
		if err := json.Unmarshal([]byte(b), &ev); err != nil {
			return nil, err
		}
		out = append(out, ev)
	}
	return out, rows.Err()
}
