package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/triunalabs/trovesnap/internal/domain"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// The Store implements the Backend contract; this fails the build if it drifts.
var _ domain.Backend = (*Store)(nil)

// ApplicationID is written to the SQLite header (PRAGMA application_id) by the
// first migration: 0x54524F56, "TROV". It is how Open tells a trovesnap file
// from a foreign one without changing either.
const ApplicationID = 0x54524F56

// Pool sizes. One writer is the point (see doc.go); four readers cover the
// concurrent reads of one server process.
const (
	readerConns    = 4
	readerCacheKiB = -512  // PRAGMA cache_size: negative is KiB
	writerCacheKiB = -2000 // SQLite's default
	bigWriteKiB    = -8192 // a large import's transaction (raiseWriteCache)
	busyTimeoutMS  = 5000
	defaultSyncMod = "NORMAL"
)

// Options configures Open. The zero value is a mock-mode store with the wall
// clock, random ids, no seed, synchronous=NORMAL and no logging.
type Options struct {
	// Mode is mock (default) or live. It only changes what an empty
	// credential resolves to and whether Reset is allowed.
	Mode domain.Mode
	// Clock stamps every row the store writes. Default domain.SystemClock.
	Clock domain.Clock
	// IDs mints new record ids. Default domain.RandomIDs. SeqIDs are for a
	// single process only: two processes with SeqIDs mint the same ids.
	IDs domain.IDs
	// Seed is inserted once, when the database is created.
	Seed *domain.Dataset
	// SeedFunc, when Seed is nil, supplies the seed only if the database
	// needs one, so opening an existing database never pays for it.
	SeedFunc func() domain.Dataset
	// Synchronous is "NORMAL" (default) or "FULL"; see doc.go.
	Synchronous string
	// Logger receives driver errors at debug level. Default: discard. The
	// store never writes to stdout (it belongs to the MCP wire in stdio mode).
	Logger *slog.Logger
}

// Store is the embedded SQLite Backend. It is safe for concurrent use.
type Store struct {
	path  string
	mode  domain.Mode
	clock domain.Clock
	ids   domain.IDs
	log   *slog.Logger

	// cursors seals list cursors with this database's secret (cursors.go).
	cursors *domain.CursorCodec

	w *sql.DB // exactly one connection, BEGIN IMMEDIATE
	r *sql.DB // query_only readers

	group groupCommit   // concurrent write transactions, committed together
	warm  chan struct{} // closed when the first reader connection is open (or failed)
}

// Open opens (creating and migrating if needed) the store at path.
//
// An existing non-empty file is first probed read-only: a file that is not
// SQLite fails with ErrCorruptDB, another application's database with
// ErrForeignDB, a trovesnap database from a newer release with
// ErrNewerSchema; in each case the file is left exactly as it was. When the
// database is created and opts.Seed is set, the dataset is inserted in the
// same start-up.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	if path == "" || strings.HasPrefix(path, ":") || strings.HasPrefix(path, "file:") {
		// Several connections must share the data, so it must be a real file.
		return nil, fmt.Errorf("store: open %q: a database file path is required: %w", path, domain.ErrInvalidInput)
	}
	s := &Store{path: path, mode: opts.Mode, clock: opts.Clock, ids: opts.IDs, log: opts.Logger}
	switch s.mode {
	case "":
		s.mode = domain.ModeMock
	case domain.ModeMock, domain.ModeLive:
	default:
		return nil, fmt.Errorf("store: open %s: unknown mode %q: %w", path, opts.Mode, domain.ErrInvalidInput)
	}
	if s.clock == nil {
		s.clock = domain.SystemClock{}
	}
	if s.ids == nil {
		s.ids = domain.RandomIDs{}
	}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	syncMode := strings.ToUpper(opts.Synchronous)
	switch syncMode {
	case "":
		syncMode = defaultSyncMod
	case "NORMAL", "FULL":
	default:
		return nil, fmt.Errorf("store: open %s: synchronous must be NORMAL or FULL, not %q: %w", path, opts.Synchronous, domain.ErrInvalidInput)
	}

	release, err := probe(ctx, path)
	if err != nil {
		return nil, err
	}
	// Released once the writer has started, or has been closed after a
	// failed start (probe: the writer must not be the file's last
	// connection when it closes on a damaged file).
	defer release()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("store: open %s: create directory: %w", path, err)
	}
	// Create the file ourselves so that it (and the -wal/-shm files SQLite
	// derives from it) is private to the user: it holds credential hashes.
	// O_EXCL: if another process just created it, use theirs.
	if f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
		_ = f.Close()
	} else if !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("store: open %s: create file: %w", path, err)
	}

	// Connections that keep their prepared statements (stmtcache.go).
	s.w = sql.OpenDB(newCachingConnector(dsn(path, syncMode, false)))
	// One connection, never recycled: SQLite serialises writers anyway, and a
	// single connection makes BEGIN IMMEDIATE the only lock we take.
	s.w.SetMaxOpenConns(1)
	s.w.SetMaxIdleConns(1)
	s.w.SetConnMaxLifetime(0)
	s.w.SetConnMaxIdleTime(0)
	if err := pingWithRetry(ctx, s.w); err != nil {
		_ = s.w.Close()
		return nil, s.openErr("connect writer", err)
	}
	if err := s.migrate(ctx); err != nil {
		_ = s.w.Close()
		return nil, err
	}
	if err := s.initialize(ctx, opts.Seed, opts.SeedFunc); err != nil {
		_ = s.w.Close()
		return nil, err
	}
	if err := s.loadCursorKey(ctx); err != nil {
		_ = s.w.Close()
		return nil, err
	}
	s.r = sql.OpenDB(newCachingConnector(dsn(path, syncMode, true)))
	s.r.SetMaxOpenConns(readerConns)
	s.r.SetMaxIdleConns(readerConns)
	// The first reader connection parses the whole schema (~3 ms). It is
	// opened in the background, so that a server's start (which has the
	// MCP server to build meanwhile) does not wait for it: the first read
	// finds it ready, or opens one itself. A reader that cannot connect
	// fails that read, as any later reader would.
	s.warm = make(chan struct{})
	go func() {
		defer close(s.warm)
		if err := pingWithRetry(context.WithoutCancel(ctx), s.r); err != nil {
			s.log.Debug("store: first reader connection", "err", err)
		}
	}()
	return s, nil
}

// openErr is the error of a start-up step. Start-up errors go to the
// operator (CLI, doctor), never through the gate, so they keep the driver
// text: it is what tells an operator that the disk is full.
//
// A damaged file is ErrCorruptDB, as when the probe finds it: the probe does
// not parse the schema of a file carrying our application id, so the
// writer's first statement is what finds a damaged one.
func (s *Store) openErr(step string, err error) error {
	if damaged(err) {
		return fmt.Errorf("store: open %s: %s: %w: %v", s.path, step, ErrCorruptDB, err)
	}
	return fmt.Errorf("store: open %s: %s: %w: %v", s.path, step, domain.ErrUnavailable, err)
}

// dsn builds the modernc DSN. The writer gets every pragma that shapes the
// file (WAL, synchronous) plus _txlock=immediate; readers get busy_timeout
// and query_only, which the driver applies last so no other pragma can
// override it.
func dsn(path, syncMode string, reader bool) string {
	q := url.Values{}
	// Never create the file: Open creates it (private, O_EXCL) before the
	// first connection, and a connection opened later — a reader the pool
	// adds, the first reader warming up — must not bring a database deleted
	// under a running server back empty and world-readable, to be adopted
	// by the next Open (found by the attack review of issue 18).
	q.Set("mode", "rw")
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeoutMS))
	q.Add("_pragma", "foreign_keys(1)")
	if reader {
		q.Set("_query_only", "1")
		// Readers' page caches: 512 KiB each (2 MiB by default). A call's
		// reads touch a few index and table pages; four full default
		// caches were ~6 MB of a server's resident memory (issue 18).
		q.Add("_pragma", fmt.Sprintf("cache_size(%d)", readerCacheKiB))
	} else {
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "synchronous("+syncMode+")")
		// A statement's journal (SQLite keeps one per statement inside a
		// transaction, to undo that statement alone) in memory rather than
		// a temporary file: an import of 10,000 rows wrote ~0.4 s of it
		// with pwrite. The writer keeps SQLite's default 2 MiB page cache;
		// a large import raises it for its own transaction (raiseWriteCache)
		// so that it does not spill dirty pages to the WAL before its
		// commit (~0.3 s on 10,000 rows).
		q.Add("_pragma", "temp_store(2)")
		q.Add("_pragma", fmt.Sprintf("cache_size(%d)", writerCacheKiB))
		q.Set("_txlock", "immediate")
	}
	return fileURI(path) + "?" + q.Encode()
}

// fileURI turns a path into a SQLite "file:" URI. The characters that a URI
// would read as delimiters are percent-encoded (SQLite decodes %HH in the
// path), so any file name works.
func fileURI(path string) string {
	p := filepath.ToSlash(path)
	if len(p) >= 2 && p[1] == ':' { // Windows drive letter: file:/C:/...
		p = "/" + p
	}
	p = strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(p)
	return "file:" + p
}

// Close closes both pools. The last connection to close checkpoints the WAL.
func (s *Store) Close() error {
	var errR error
	if s.warm != nil {
		<-s.warm
	}
	if s.r != nil {
		errR = s.r.Close()
	}
	return errors.Join(errR, s.w.Close())
}

// Path is the database file.
func (s *Store) Path() string { return s.path }

// Ping reports whether the database answers a read (an HTTP server's
// readiness).
func (s *Store) Ping(ctx context.Context) error {
	var one int
	return s.r.QueryRowContext(ctx, "PRAGMA user_version").Scan(&one)
}

// Mode is the mode the store was opened in.
func (s *Store) Mode() domain.Mode { return s.mode }

// SchemaVersion is the migration version of the open database.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	if err := s.r.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return 0, s.dbErr("schema version", err)
	}
	return v, nil
}

// dbErr turns a driver error into the domain's ErrUnavailable. The driver
// text (which may quote SQL) goes to the debug log only. A cancelled context
// stays recognisable with errors.Is.
func (s *Store) dbErr(op string, err error) error {
	if q := quotaError(err); q != nil {
		return q // a quota trigger refused the write (quota.go)
	}
	s.log.Debug("store: database error", "op", op, "err", err)
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("store: %s: %w: %w", op, domain.ErrUnavailable, err)
	}
	return fmt.Errorf("store: %s: %w", op, domain.ErrUnavailable)
}

// withTx runs fn in one IMMEDIATE transaction on the writer: it holds the
// database write lock from its first statement, so a read inside fn sees
// exactly what the commit will build on, across processes. fn must use tx
// only: the writer has one connection, and s.w inside fn would deadlock.
// Errors fn returns are returned as they are (fn wraps its own driver
// errors with dbErr); what fn wrote is rolled back.
//
// Concurrent calls are committed in groups (group.go): fn may share its
// transaction with other callers' functions, each inside its own savepoint,
// and withTx returns only after the shared COMMIT. Its effect is that of
// the calls running one after another: fn sees what the functions before it
// wrote, and a failing fn leaves no trace. So fn must never commit or roll
// back tx itself, and must run its statements on the ctx it was given only
// (and return at its first error): after SQLite ends a shared transaction
// under it, a statement on another context would run in autocommit (both
// found by the attack review; no store function does either).
func (s *Store) withTx(ctx context.Context, fn func(*sql.Tx) error) error {
	return s.group.run(s, ctx, fn)
}

// withSoloTx runs fn alone in one IMMEDIATE transaction. The group's
// leader uses it for a single job; start-up steps use it directly.
func (s *Store) withSoloTx(ctx context.Context, fn func(*sql.Tx) error) (err error) {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return s.dbErr("begin", err)
	}
	defer func() {
		if p := recover(); p != nil {
			_ = tx.Rollback()
			panic(p)
		}
	}()
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return s.dbErr("commit", err)
	}
	return nil
}

// raiseWriteCache raises the writer's page cache inside tx (a large import),
// so that its dirty pages stay in memory until the commit; the caller puts
// it back with resetWriteCache once the transaction has ended.
func (s *Store) raiseWriteCache(ctx context.Context, tx *sql.Tx) error {
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA cache_size = %d", bigWriteKiB)); err != nil {
		return s.dbErr("raise cache", err)
	}
	return nil
}

// resetWriteCache puts the writer's page cache back to its default, between
// transactions (the writer's one connection is free again).
func (s *Store) resetWriteCache(ctx context.Context) {
	if _, err := s.w.ExecContext(context.WithoutCancel(ctx), fmt.Sprintf("PRAGMA cache_size = %d", writerCacheKiB)); err != nil {
		s.log.Debug("store: reset the writer's page cache", "err", err)
	}
}

// withRead runs fn in one read transaction on the reader pool, so that the
// queries of one call (a page and its photos, a ref check and its rows) see
// one snapshot.
func (s *Store) withRead(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return s.dbErr("begin read", err)
	}
	defer func() { _ = tx.Rollback() }() // read-only: nothing to commit
	return fn(tx)
}

// pingWithRetry opens the first connection. Switching a fresh file to WAL
// needs a moment of exclusive access, and SQLite answers SQLITE_BUSY at once
// (without the busy handler) when another process is doing the same, so a
// few short retries cover servers that start together on a new file.
func pingWithRetry(ctx context.Context, db *sql.DB) error {
	var err error
	for attempt := 0; attempt < 50; attempt++ {
		if err = db.PingContext(ctx); err == nil || !strings.Contains(err.Error(), "SQLITE_BUSY") {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(attempt+1) * 5 * time.Millisecond):
		}
	}
	return err
}
