package sqlgen_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/triunalabs/trovesnap/internal/sqlgen"
)

const (
	migrations = "../../supabase/migrations"
	sumFile    = "../../supabase/migrations.sum"
)

// The newest generated migration holds exactly today's Go rules: a change
// of the rules without `go generate` fails here, without PostgreSQL.
func TestGenerated_NewestMigrationIsRender(t *testing.T) {
	ms, err := sqlgen.List(migrations)
	if err != nil {
		t.Fatal(err)
	}
	m, ok := sqlgen.NewestGenerated(ms)
	if !ok {
		t.Fatal("no generated migration in supabase/migrations: run `go generate ./internal/sqlgen`")
	}
	got, err := os.ReadFile(filepath.Join(migrations, m.Name))
	if err != nil {
		t.Fatal(err)
	}
	want, err := sqlgen.File(m.Version, m.Base())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is not what internal/domain declares today: run `go generate ./internal/sqlgen` "+
			"(it writes a new migration; never edit this one)", m.Name)
	}
	body, _ := sqlgen.Render()
	for _, f := range sqlgen.Functions {
		if !bytes.Contains(body, []byte("FUNCTION trovesnap."+f+"(")) {
			t.Errorf("Render defines no %s", f)
		}
	}
}

// Applied migrations are append-only: every file's sha256 is recorded in
// supabase/migrations.sum, and a recorded file that changed or vanished,
// or a file nobody recorded, fails.
func TestMigrations_AppliedFilesNeverChange(t *testing.T) {
	problems, err := sqlgen.Verify(migrations, sumFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// copyMigrations copies the real migrations and sums into a temp dir.
func copyMigrations(t *testing.T) (dir, sums string) {
	t.Helper()
	root := t.TempDir()
	dir, sums = filepath.Join(root, "migrations"), filepath.Join(root, "migrations.sum")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ms, err := sqlgen.List(migrations)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		b, err := os.ReadFile(filepath.Join(migrations, m.Name))
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, m.Name), b, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(sumFile)
	if err == nil {
		err = os.WriteFile(sums, b, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
	return dir, sums
}

// Generating with unchanged rules writes nothing; when the newest
// generated migration no longer matches (the rules changed), a new file is
// written after the newest migration with the next version, and the
// changed file itself is left alone.
func TestGenerate_WritesANewMigrationOnlyWhenTheRulesChanged(t *testing.T) {
	dir, _ := copyMigrations(t)
	before, _ := sqlgen.List(dir)
	if name, err := sqlgen.Generate(dir); err != nil || name != "" {
		t.Fatalf("Generate on current rules = %q, %v; want nothing written", name, err)
	}

	// Stand in for a rules change: the newest generated file says
	// something else than Render now does.
	m, _ := sqlgen.NewestGenerated(before)
	old := filepath.Join(dir, m.Name)
	stale := []byte(sqlgen.GeneratedHeader + "\n-- yesterday's rules\n")
	if err := os.WriteFile(old, stale, 0o644); err != nil {
		t.Fatal(err)
	}
	name, err := sqlgen.Generate(dir)
	if err != nil || name == "" {
		t.Fatalf("Generate after a change = %q, %v", name, err)
	}
	after, _ := sqlgen.List(dir)
	last := after[len(after)-1]
	if last.Name != name || !last.Generated || last.Version != len(before)+1 || !strings.HasSuffix(name, sqlgen.GeneratedSuffix) {
		t.Fatalf("wrote %s; newest is now %+v (before: %d files)", name, last, len(before))
	}
	if got, _ := os.ReadFile(old); !bytes.Equal(got, stale) {
		t.Error("Generate rewrote an applied migration")
	}
	if ok, err := sqlgen.Current(dir); !ok || err != nil {
		t.Errorf("Current after Generate = %v, %v", ok, err)
	}
}

// Record appends only unrecorded files and never rewrites a recorded line,
// so an edited applied file stays caught by Verify.
func TestRecord_AppendsNewFilesAndKeepsRecordedSums(t *testing.T) {
	dir, sums := copyMigrations(t)
	ms, _ := sqlgen.List(dir)
	first := filepath.Join(dir, ms[0].Name)
	if err := os.WriteFile(first, []byte("-- edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	added := filepath.Join(dir, "29991231235900_trovesnap_later.sql")
	if err := os.WriteFile(added, []byte("-- later\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	problems, _ := sqlgen.Verify(dir, sums)
	if len(problems) != 2 || !strings.Contains(problems[0], ms[0].Name+": changed") || !strings.Contains(problems[1], "later.sql: not recorded") {
		t.Fatalf("problems = %q", problems)
	}
	got, err := sqlgen.Record(dir, sums)
	if err != nil || len(got) != 1 || got[0] != filepath.Base(added) {
		t.Fatalf("Record = %v, %v", got, err)
	}
	problems, _ = sqlgen.Verify(dir, sums)
	if len(problems) != 1 || !strings.Contains(problems[0], ms[0].Name+": changed") {
		t.Fatalf("after Record, problems = %q", problems)
	}
	if err := os.Remove(added); err != nil {
		t.Fatal(err)
	}
	problems, _ = sqlgen.Verify(dir, sums)
	if len(problems) != 2 || !strings.Contains(problems[1], "later.sql: recorded but gone") {
		t.Fatalf("after removal, problems = %q", problems)
	}
}
