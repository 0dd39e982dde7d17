package trovesnap_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/triunalabs/trovesnap/"

// allowedImports is DESIGN.md's package table: which of our packages each
// package may import in non-test code. internal/domain may be imported by
// every package ("every other package may depend on it") and imports nothing
// of ours. A package missing from the table fails the test, so new packages
// must be placed in it deliberately.
var allowedImports = map[string][]string{
	"cmd/trovesnap":                {"internal/cli"},
	"bench/floor":                  {}, // bench-only: the floor server the benchmark suite measures against (scripts/bench)
	"internal/cli":                 {"*"},
	"internal/config":              {},
	"internal/domain":              {},
	"internal/buildinfo":           {},
	"internal/setup":               {},
	"internal/catalog":             {"internal/ingest"},
	"internal/ingest":              {},
	"internal/ingest/locationtest": {}, // test support: the one table of photos holding the database's location check to ingest.StripLocation
	"internal/gate":                {"internal/catalog", "internal/approval", "internal/audit"},
	"internal/approval":            {},
	"internal/audit":               {},
	"internal/mcpserver":           {"internal/gate", "internal/catalog"},
	"internal/live":                {"supabase"},
	"internal/live/pgtest":         {},                  // test support: a PostgreSQL cluster and a PostgREST-like endpoint
	"internal/contract":            {"fixtures"},        // test support: the one Backend contract suite
	"internal/sqlgen":              {},                  // the SQL of the domain rules, generated for supabase/migrations
	"internal/sqlgen/cmd/sqlgen":   {"internal/sqlgen"}, // go generate ./internal/sqlgen
	"store":                        {},
	"supabase":                     {}, // the record of the live migrations (migrations.sum), embedded
	"tui":                          {"internal/approval"},
	"fixtures":                     {},
	"fixtures/internal/build":      {},
	"fixtures/internal/gen":        {"fixtures/internal/build"},
}

func TestDeps_PackageTableOfDesignHolds(t *testing.T) {
	fset := token.NewFileSet()
	seen := map[string]bool{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") && path != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		pkg := filepath.ToSlash(filepath.Dir(path))
		allowed, ok := allowedImports[pkg]
		if !ok {
			t.Errorf("%s: package %s is not in the package table (deps_test.go / DESIGN.md)", path, pkg)
			return nil
		}
		seen[pkg] = true
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			ours, isOurs := strings.CutPrefix(p, module)
			if !isOurs {
				continue
			}
			if ours == "internal/domain" && pkg != "internal/domain" {
				continue
			}
			if ours == "internal/cli" && pkg != "cmd/trovesnap" {
				t.Errorf("%s imports internal/cli: nothing imports cli", path)
				continue
			}
			if !slices.Contains(allowed, "*") && !slices.Contains(allowed, ours) {
				t.Errorf("%s imports %s: not allowed by the package table (allowed: %v)", path, ours, allowed)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, must := range []string{"cmd/trovesnap", "internal/cli", "internal/domain", "internal/catalog", "internal/gate", "internal/mcpserver", "store", "fixtures"} {
		if !seen[must] {
			t.Errorf("package %s not found: the walk is broken", must)
		}
	}
}

// README's Layout names every package of the table, so a new package cannot
// leave it stale.
func TestDeps_ReadmeLayoutListsEveryPackage(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, layout, ok := strings.Cut(string(b), "\n## Layout\n")
	if !ok {
		t.Fatal("README.md has no Layout section")
	}
	if end := strings.Index(layout, "\n## "); end >= 0 {
		layout = layout[:end]
	}
	for pkg := range allowedImports {
		if !strings.Contains(layout, "| `"+pkg+"` |") {
			t.Errorf("README Layout does not list %s", pkg)
		}
	}
}
