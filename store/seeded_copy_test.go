package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// Seeding a dataset is the dearest part of opening a test store (under the
// race detector about 9 s, against 0.4 s without: the SQLite engine is Go
// code and every access is instrumented). Each dataset is therefore seeded
// once per test process, by the real Open, into a template file, and each
// test gets its own copy of that file: the same bytes a fresh Open writes,
// opened by the real Open, which finds the database initialized and leaves
// it as it is. A copy shares the template's per-database cursor secret;
// a test about that secret opens a fresh file instead.
var templates struct {
	sync.Mutex
	dir   string
	files map[string]string // DatasetDigest → template path
}

// seededCopy writes a seeded database for ds at path, with clock as the
// seeding clock of the template.
func seededCopy(t testing.TB, path string, ds domain.Dataset, clock domain.Clock) {
	t.Helper()
	key := DatasetDigest(ds) + "@" + clock.Now().UTC().Format(time.RFC3339Nano) // the seed and its seeding time
	templates.Lock()
	defer templates.Unlock()
	src, ok := templates.files[key]
	if !ok {
		if templates.dir == "" {
			dir, err := os.MkdirTemp("", "trovesnap-store-templates-")
			if err != nil {
				t.Fatal(err)
			}
			templates.dir, templates.files = dir, map[string]string{}
		}
		src = filepath.Join(templates.dir, fmt.Sprintf("%d.db", len(templates.files)))
		s, err := Open(context.Background(), src, Options{Clock: clock, Seed: &ds})
		if err != nil {
			t.Fatalf("seed template: %v", err)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("close template: %v", err)
		}
		if _, err := os.Stat(src + "-wal"); err == nil {
			t.Fatalf("the template %s kept a WAL after close", src)
		}
		templates.files[key] = src
	}
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestMain removes the templates when the package's tests end.
func TestMain(m *testing.M) {
	code := m.Run()
	if templates.dir != "" {
		_ = os.RemoveAll(templates.dir)
	}
	os.Exit(code)
}

// freshlySeeded makes openAt seed its file itself rather than copy the
// template: for a test of what differs between two databases (a copy
// shares the template's cursor secret).
func freshlySeeded(*Options) {}
