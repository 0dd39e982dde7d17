// Package supabasecli_test pushes supabase/migrations with the real
// Supabase CLI. It is a package of its own (not internal/live's) so that it
// has its own cluster and test timeout, and runs beside the live suite.
package supabasecli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/triunalabs/trovesnap/internal/live/pgtest"
	"github.com/triunalabs/trovesnap/supabase"
)

// One cluster with the migrations applied by pgtest.Migrate, to compare
// with (see pgtest.Main for CI and skipping).
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// TestSupabaseCLI_DBPush pushes supabase/migrations with the real Supabase
// CLI (the version package.json pins) to a fresh PostgreSQL 15 cluster that
// has only the roles a Supabase project starts with: every file applies, the
// CLI's history table lists every file, a second push applies nothing, and
// the schema is the one the live suite tests (pgtest.Migrate, which applies
// each file whole, where the CLI splits it into statements). Without the CLI
// it skips — except with CI=true: scripts/test installs it, CI must run it.
// scripts/supabase-push-check runs the same push from a shell.
func TestSupabaseCLI_DBPush(t *testing.T) {
	env := pgtest.Need(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin, err := pgtest.SupabaseCLI(ctx)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}

	c, err := pgtest.Start()
	if err != nil {
		t.Fatalf("second cluster: %v", err)
	}
	defer c.Close()
	if err := c.Exec(ctx, pgtest.Bootstrap); err != nil {
		t.Fatalf("bootstrap roles: %v", err)
	}

	// The CLI reads <workdir>/supabase/migrations and writes
	// <workdir>/supabase/.temp: push a copy, never the checkout.
	files, err := pgtest.MigrationFiles()
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	migDir := filepath.Join(work, "supabase", "migrations")
	if err := os.MkdirAll(migDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(migDir, filepath.Base(f)), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	push := func() string {
		t.Helper()
		start := time.Now()
		defer func() { t.Logf("supabase db push: %v", time.Since(start).Round(time.Millisecond)) }()
		out, err := pgtest.SupabaseCmd(ctx, bin, work, "db", "push", "--db-url", c.DBURL("postgres"),
			"--include-all", "--yes", "--workdir", work).CombinedOutput()
		if err != nil {
			t.Fatalf("supabase db push: %v\n%s", err, out)
		}
		return string(out)
	}

	out := push()
	for _, f := range files {
		if !strings.Contains(out, "Applying migration "+filepath.Base(f)) {
			t.Errorf("first push did not apply %s:\n%s", filepath.Base(f), out)
		}
	}

	history := func() []string {
		t.Helper()
		conn, err := c.Super(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		rows, err := conn.Query(ctx, `SELECT version || '_' || name || '.sql' FROM supabase_migrations.schema_migrations ORDER BY version`)
		if err != nil {
			t.Fatalf("supabase_migrations.schema_migrations: %v", err)
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	got := history()
	if len(got) != len(files) {
		t.Fatalf("history lists %d migrations, supabase/migrations has %d: %v", len(got), len(files), got)
	}
	for i, f := range files {
		if got[i] != filepath.Base(f) {
			t.Errorf("history[%d] = %s, want %s", i, got[i], filepath.Base(f))
		}
	}
	conn, err := c.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var version int
	err = conn.QueryRow(ctx, `SELECT max(version) FROM trovesnap.schema_migrations`).Scan(&version)
	conn.Close(ctx)
	if err != nil || version != supabase.SchemaVersion() {
		t.Errorf("trovesnap.schema_migrations: version %d (%v), want %d", version, err, supabase.SchemaVersion())
	}

	if out := push(); !strings.Contains(out, "Remote database is up to date.") || strings.Contains(out, "Applying migration") {
		t.Errorf("second push was not a no-op:\n%s", out)
	}
	if again := history(); strings.Join(again, "\n") != strings.Join(got, "\n") {
		t.Errorf("second push changed the history: %v", again)
	}

	// Same schema as the live suite's cluster (minus supabase/dev's loader).
	pushed, err := c.Schema(ctx, "mcp_seed_fixtures")
	if err != nil {
		t.Fatal(err)
	}
	tested, err := env.Cluster.Schema(ctx, "mcp_seed_fixtures")
	if err != nil {
		t.Fatal(err)
	}
	if a, b := strings.Join(pushed, "\n"), strings.Join(tested, "\n"); a != b {
		t.Errorf("the schema the CLI pushed differs from pgtest.Migrate's:\n%s", lineDiff(tested, pushed))
	}
}

// lineDiff lists the lines only in want (-) or only in got (+).
func lineDiff(want, got []string) string {
	in := func(s []string) map[string]bool {
		m := map[string]bool{}
		for _, l := range s {
			m[l] = true
		}
		return m
	}
	w, g := in(want), in(got)
	var b strings.Builder
	for _, l := range want {
		if !g[l] {
			b.WriteString("- " + l + "\n")
		}
	}
	for _, l := range got {
		if !w[l] {
			b.WriteString("+ " + l + "\n")
		}
	}
	return b.String()
}
