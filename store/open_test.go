package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/triunalabs/trovesnap/internal/domain"
)

func TestOpen_MigratesAndReopens(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "nested", "dir", "trovesnap.db")
	s := openAt(t, path)

	v, err := s.SchemaVersion(ctx)
	if err != nil || v != LatestSchemaVersion() || v < 1 {
		t.Fatalf("SchemaVersion = %d, %v; want %d", v, err, LatestSchemaVersion())
	}
	if s.Path() != path || s.Mode() != domain.ModeMock {
		t.Fatalf("Path/Mode = %q/%q", s.Path(), s.Mode())
	}
	if fi, err := os.Stat(filepath.Dir(path)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("parent dir mode = %v, %v; want 0700", fi.Mode().Perm(), err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("db file mode = %v, %v; want 0600 (it holds credential hashes)", fi.Mode().Perm(), err)
	}
	var appID int
	if err := s.r.QueryRowContext(ctx, "PRAGMA application_id").Scan(&appID); err != nil || appID != ApplicationID {
		t.Fatalf("application_id = %#x, %v", appID, err)
	}
	ds := testDataset()
	c := mustCounts(t, s)
	if c["tenants"] != int64(len(ds.Tenants)) || c["items"] != int64(len(ds.Items)) || c["item_photos"] != 7 ||
		c["inventory_candidates"] != 1 || c["demand_signals"] != 4 || c["plugin_events"] != 0 {
		t.Fatalf("seeded counts = %v", c)
	}
	var digest string
	if err := s.r.QueryRowContext(ctx, "SELECT value FROM store_meta WHERE key = 'seed_digest'").Scan(&digest); err != nil ||
		digest != DatasetDigest(ds) {
		t.Fatalf("seed_digest = %q, %v; want %q", digest, err, DatasetDigest(ds))
	}
	before := mustDigest(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// Reopening migrates nothing and seeds nothing, even with another seed.
	other := domain.Dataset{Tenants: []domain.Tenant{{ID: "tenant_z", Name: "Z"}}}
	s2 := openAt(t, path, func(o *Options) { o.Seed = &other })
	if v, _ := s2.SchemaVersion(ctx); v != LatestSchemaVersion() {
		t.Fatalf("reopened version = %d", v)
	}
	if d := diffKeys(before, mustDigest(t, s2)); len(d) != 0 {
		t.Fatalf("reopen changed tables %v", d)
	}
}

func TestOpen_PragmasOfWriterAndReaders(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		sync string
		want int
	}{{"", 1}, {"normal", 1}, {"FULL", 2}} {
		t.Run("sync="+tc.sync, func(t *testing.T) {
			s := openTest(t, func(o *Options) { o.Synchronous = tc.sync })
			var (
				mode                   string
				fk, busy, syncN, qOnly int
			)
			if err := s.w.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
				t.Errorf("journal_mode = %q, %v", mode, err)
			}
			if err := s.w.QueryRowContext(ctx, "PRAGMA foreign_keys").Scan(&fk); err != nil || fk != 1 {
				t.Errorf("foreign_keys = %d, %v", fk, err)
			}
			if err := s.w.QueryRowContext(ctx, "PRAGMA busy_timeout").Scan(&busy); err != nil || busy != busyTimeoutMS {
				t.Errorf("busy_timeout = %d, %v", busy, err)
			}
			if err := s.w.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&syncN); err != nil || syncN != tc.want {
				t.Errorf("synchronous = %d, %v; want %d", syncN, err, tc.want)
			}
			var temp, cache, readerCache int
			if err := s.w.QueryRowContext(ctx, "PRAGMA temp_store").Scan(&temp); err != nil || temp != 2 {
				t.Errorf("temp_store = %d, %v; want 2 (memory)", temp, err)
			}
			if err := s.w.QueryRowContext(ctx, "PRAGMA cache_size").Scan(&cache); err != nil || cache != writerCacheKiB {
				t.Errorf("writer cache_size = %d, %v; want %d", cache, err, writerCacheKiB)
			}
			if err := s.r.QueryRowContext(ctx, "PRAGMA cache_size").Scan(&readerCache); err != nil || readerCache != readerCacheKiB {
				t.Errorf("reader cache_size = %d, %v; want %d", readerCache, err, readerCacheKiB)
			}
			if err := s.r.QueryRowContext(ctx, "PRAGMA query_only").Scan(&qOnly); err != nil || qOnly != 1 {
				t.Errorf("reader query_only = %d, %v", qOnly, err)
			}
			if _, err := s.r.ExecContext(ctx, "INSERT INTO tenants (id, name) VALUES ('tenant_x', 'x')"); err == nil {
				t.Errorf("a reader connection wrote")
			}
		})
	}
}

func TestOpen_RejectsBadOptions(t *testing.T) {
	dir := t.TempDir()
	for name, opts := range map[string]Options{
		"sync OFF":     {Synchronous: "OFF"},
		"unknown mode": {Mode: "staging"},
	} {
		if _, err := Open(context.Background(), filepath.Join(dir, "x.db"), opts); !errors.Is(err, domain.ErrInvalidInput) {
			t.Errorf("%s: err = %v; want ErrInvalidInput", name, err)
		}
	}
	for _, p := range []string{"", ":memory:", "file:x.db"} {
		if _, err := Open(context.Background(), p, Options{}); !errors.Is(err, domain.ErrInvalidInput) {
			t.Errorf("path %q: err = %v; want ErrInvalidInput", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "x.db")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("rejected options still created the file")
	}
}

// makeForeign writes a SQLite file that is not ours with a plain connection.
func makeForeign(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// assertRejected opens path, expects want, and checks the file is byte-for-byte
// what it was.
func assertRejected(t *testing.T, path string, want error) error {
	t.Helper()
	before := readFile(t, path)
	ds := testDataset()
	s, err := Open(context.Background(), path, Options{Seed: &ds})
	if err == nil {
		_ = s.Close()
		t.Fatalf("Open accepted the file; want %v", want)
	}
	if !errors.Is(err, want) {
		t.Fatalf("Open err = %v; want %v", err, want)
	}
	if !strings.Contains(err.Error(), path) {
		t.Errorf("error %q does not name the path", err)
	}
	if !bytes.Equal(before, readFile(t, path)) {
		t.Fatalf("the rejected file was modified")
	}
	return err
}

func TestOpen_RejectsForeignDB_FileUnchanged(t *testing.T) {
	dir := t.TempDir()
	t.Run("has a table", func(t *testing.T) {
		p := filepath.Join(dir, "notes.db")
		makeForeign(t, p, "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)", "INSERT INTO notes (body) VALUES ('keep me')")
		assertRejected(t, p, ErrForeignDB)
	})
	t.Run("other application id", func(t *testing.T) {
		p := filepath.Join(dir, "other.db")
		makeForeign(t, p, "PRAGMA application_id = 1234", "CREATE TABLE t (x)")
		assertRejected(t, p, ErrForeignDB)
	})
	t.Run("user_version only", func(t *testing.T) {
		p := filepath.Join(dir, "versioned.db")
		makeForeign(t, p, "PRAGMA user_version = 7")
		assertRejected(t, p, ErrForeignDB)
	})
	t.Run("wal mode", func(t *testing.T) {
		p := filepath.Join(dir, "wal.db")
		makeForeign(t, p, "PRAGMA journal_mode = WAL", "CREATE TABLE t (x)", "INSERT INTO t VALUES (1)")
		assertRejected(t, p, ErrForeignDB)
	})
}

func TestOpen_AdoptsEmptySQLiteFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "empty.db")
	makeForeign(t, p, "CREATE TABLE scratch (x)", "DROP TABLE scratch") // a SQLite file with no table, version 0
	if fi, err := os.Stat(p); err != nil || fi.Size() == 0 {
		t.Fatalf("setup: want a non-empty file: %v", err)
	}
	s := openAt(t, p)
	if v, _ := s.SchemaVersion(context.Background()); v != LatestSchemaVersion() {
		t.Fatalf("version = %d", v)
	}
}

func TestOpen_RejectsCorruptFile_FileUnchanged(t *testing.T) {
	dir := t.TempDir()
	cases := map[string][]byte{
		"text":          []byte("name,price\nlamp,12\n"),
		"short header":  []byte("SQLite format 3\x00\x10\x00"),
		"garbage pages": append([]byte("SQLite format 3\x00"), bytes.Repeat([]byte{0xff}, 4080)...),
	}
	for name, content := range cases {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".db")
			if err := os.WriteFile(p, content, 0o600); err != nil {
				t.Fatal(err)
			}
			assertRejected(t, p, ErrCorruptDB)
			if _, err := os.Stat(p + "-wal"); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a -wal file appeared beside a corrupt file")
			}
		})
	}
}

func TestOpen_RejectsNewerSchema_FileUnchanged(t *testing.T) {
	p := filepath.Join(t.TempDir(), "trovesnap.db")
	s := openAt(t, p)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	newer := LatestSchemaVersion() + 5
	db := rawDB(t, p)
	if _, err := db.Exec(fmt.Sprintf("PRAGMA user_version = %d", newer)); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil { // checkpoints: the version is in the main file
		t.Fatal(err)
	}
	err := assertRejected(t, p, ErrNewerSchema)
	for _, v := range []int{newer, LatestSchemaVersion()} {
		if !strings.Contains(err.Error(), fmt.Sprint(v)) {
			t.Errorf("error %q does not name version %d", err, v)
		}
	}
}

// Two processes opening a brand-new file at the same moment must migrate and
// seed it exactly once. Separate *Store values stand in for the processes:
// each has its own connections, so they contend on SQLite's file locks.
func TestOpen_ConcurrentFirstOpenSeedsOnce(t *testing.T) {
	p := filepath.Join(t.TempDir(), "race", "trovesnap.db")
	const n = 6
	stores := make([]*Store, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ds := testDataset()
			<-start
			stores[i], errs[i] = Open(context.Background(), p, Options{Clock: domain.NewFixedClock(epoch), Seed: &ds})
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("store %d: %v", i, err)
		}
		defer func() { _ = stores[i].Close() }()
	}
	ds := testDataset()
	c := mustCounts(t, stores[0])
	if c["tenants"] != int64(len(ds.Tenants)) || c["items"] != int64(len(ds.Items)) || c["store_meta"] != 3 {
		t.Fatalf("counts after concurrent first open = %v", c)
	}
	for i := 1; i < n; i++ {
		if v, _ := stores[i].SchemaVersion(context.Background()); v != LatestSchemaVersion() {
			t.Fatalf("store %d version %d", i, v)
		}
	}
}

func TestSchema_TableListCoversEveryTable(t *testing.T) {
	s := openTest(t)
	rows, err := s.r.Query("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rows.Close() }()
	var inSchema []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		inSchema = append(inSchema, n)
	}
	var listed []string
	for _, tb := range tables {
		listed = append(listed, tb.name)
	}
	listed = append(listed, unlistedTables...)
	slices.Sort(listed)
	if !slices.Equal(inSchema, listed) {
		t.Fatalf("schema tables %v\nstore.tables  %v\n(add new tables to seed.go's list: Counts, Digest and Reset use it)", inSchema, listed)
	}
}

func TestSchema_RefusesCrossTenantReferences(t *testing.T) {
	s := openTest(t)
	// An item of tenant B in a sale of tenant A: the composite foreign key
	// refuses it even though both ids exist.
	_, err := s.w.Exec(`INSERT INTO items (id, tenant_id, sale_id, title, status, created_at, updated_at)
		VALUES ('item_x', 'tenant_b', 'sale_a1', 'x', 'draft', '2026-01-01T00:00:00.000000000Z', '2026-01-01T00:00:00.000000000Z')`)
	if err == nil || !strings.Contains(err.Error(), "FOREIGN KEY") {
		t.Fatalf("cross-tenant item insert: err = %v; want a foreign key failure", err)
	}
}

func TestFileURI_EscapesDelimiters(t *testing.T) {
	p := filepath.Join(t.TempDir(), "odd ?#% name", "db")
	s := openAt(t, p)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("database not at %q: %v", p, err)
	}
	if c := mustCounts(t, s); c["tenants"] != 2 {
		t.Fatalf("counts %v", c)
	}
}

// A database deleted under a running store does not come back: no
// connection the store opens later (a reader the pool adds, the first
// reader warming up) creates the file, which would be empty, readable by
// others, and adopted by the next Open.
func TestOpen_DeletedFileIsNotRecreated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trovesnap.db")
	s := openAt(t, path)
	<-s.warm
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	// More readers than the pool keeps: new connections are opened.
	ctx := context.Background()
	conns := make([]*sql.Conn, readerConns)
	for i := range conns {
		c, err := s.r.Conn(ctx)
		if err == nil {
			var n int
			_ = c.QueryRowContext(ctx, "SELECT count(*) FROM tenants").Scan(&n)
			conns[i] = c
		}
	}
	for _, c := range conns {
		if c != nil {
			_ = c.Close()
		}
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if _, err := os.Stat(p); err == nil {
			t.Fatalf("%s was re-created after it was deleted", filepath.Base(p))
		}
	}
}

// A file that carries our application id and a current schema version but
// whose schema is damaged: the probe does not parse the schema of such a
// file (issue 18: ~3 ms of every start), so the writer's first statement
// finds the damage. It must be refused the same way, with the main file and
// its WAL unchanged: the damage checkpointed into the main file, or only in
// the WAL, or in the main file with later commits still in the WAL (the
// attack review found the writer's close checkpointing the WAL of a refused
// file and deleting it).
func TestOpen_RejectsOurFileWithDamagedSchema_FilesUnchanged(t *testing.T) {
	for _, tc := range []struct {
		name       string
		checkpoint bool     // the damage copied into the main file
		later      []string // commits left in the WAL after it
	}{
		{name: "in the main file", checkpoint: true},
		{name: "only in the WAL"},
		{name: "in the main file, later commits in the WAL", checkpoint: true,
			later: []string{"DELETE FROM rate_counters", "INSERT INTO rate_counters (bucket, class, window_start, count) VALUES ('b', 'read', 1, 1)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			src := filepath.Join(dir, "src.db")
			if err := openAt(t, src).Close(); err != nil {
				t.Fatal(err)
			}
			db := rawDB(t, src)
			db.SetMaxOpenConns(1)
			stmts := []string{"PRAGMA writable_schema = ON", "UPDATE sqlite_schema SET sql = 'CREATE TABLE broken(' WHERE name = 'mcp_limits'"}
			if tc.checkpoint {
				stmts = append(stmts, "PRAGMA wal_checkpoint(TRUNCATE)", "PRAGMA writable_schema = OFF")
			}
			for _, q := range append(stmts, tc.later...) {
				if _, err := db.Exec(q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			// Copied while the raw connection is open: the WAL is kept.
			victim := filepath.Join(dir, "trovesnap.db")
			for _, suffix := range []string{"", "-wal"} {
				b, err := os.ReadFile(src + suffix)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(victim+suffix, b, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if got := binary.BigEndian.Uint32(readFile(t, victim)[68:72]); got != ApplicationID {
				t.Fatalf("setup: application id %#x", got)
			}
			wal := readFile(t, victim+"-wal")
			if (len(wal) == 0) == (!tc.checkpoint || len(tc.later) > 0) {
				t.Fatalf("setup: a WAL of %d bytes", len(wal))
			}
			assertRejected(t, victim, ErrCorruptDB)
			if !bytes.Equal(wal, readFile(t, victim+"-wal")) {
				t.Fatalf("the refused file's WAL was changed (%d -> %d bytes)", len(wal), len(readFile(t, victim+"-wal")))
			}
		})
	}
}
