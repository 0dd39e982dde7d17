package mcpserver_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/store"
)

// Seeding the fixtures is the dearest part of a test server (under the race
// detector about 9 s, against 0.4 s without: the SQLite engine is Go code
// and every access is instrumented). They are therefore seeded once per
// test process and mode, by the real store.Open, into a template file, and
// each server gets its own copy: the same bytes a fresh Open writes, opened
// by the real Open, which finds the database initialized and leaves it as
// it is. A copy shares the template's per-database cursor secret; a test
// about that secret asks for a fresh file (withFreshSeed).
var templates struct {
	sync.Mutex
	dir   string
	files map[domain.Mode]string
}

// seededCopy writes the seeded fixtures for mode at path.
func seededCopy(t testing.TB, path string, mode domain.Mode) {
	t.Helper()
	templates.Lock()
	defer templates.Unlock()
	src, ok := templates.files[mode]
	if !ok {
		if templates.dir == "" {
			dir, err := os.MkdirTemp("", "trovesnap-mcpserver-templates-")
			if err != nil {
				t.Fatal(err)
			}
			templates.dir, templates.files = dir, map[domain.Mode]string{}
		}
		src = filepath.Join(templates.dir, string(mode)+".db")
		seed := fixtures.Dataset()
		st, err := store.Open(context.Background(), src, store.Options{Mode: mode, Clock: domain.NewFixedClock(fixtures.Epoch), IDs: domain.NewSeqIDs(), Seed: &seed})
		if err != nil {
			t.Fatalf("seed template: %v", err)
		}
		if err := st.Close(); err != nil {
			t.Fatalf("close template: %v", err)
		}
		if _, err := os.Stat(src + "-wal"); err == nil {
			t.Fatalf("the template %s kept a WAL after close", src)
		}
		templates.files[mode] = src
	}
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// withFreshSeed makes newEnv seed its own file rather than copy the
// template: for a test of what differs between two databases.
func withFreshSeed() envOpt { return func(o *envConfig) { o.fresh = true } }

// TestMain removes the templates when the package's tests end.
func TestMain(m *testing.M) {
	code := m.Run()
	if templates.dir != "" {
		_ = os.RemoveAll(templates.dir)
	}
	os.Exit(code)
}
