package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"modernc.org/sqlite"
)

// Errors of Open for a file the store refuses to touch. Each is returned
// wrapped with the path; the file is left unchanged.
var (
	// ErrCorruptDB: the file is not a SQLite database (or is damaged).
	ErrCorruptDB = errors.New("not a SQLite database or damaged")
	// ErrForeignDB: the file is another application's SQLite database.
	ErrForeignDB = errors.New("database belongs to another application")
	// ErrNewerSchema: the file was written by a newer trovesnap.
	ErrNewerSchema = errors.New("database schema is newer than this release")
)

// sqliteMagic opens every SQLite 3 database file.
var sqliteMagic = []byte("SQLite format 3\x00")

// SQLite primary result codes the probe distinguishes.
const (
	sqliteCorrupt = 11
	sqliteNotADB  = 26
)

// probe inspects an existing database without changing it. It runs before
// the writer connects because the writer's own DSN already writes (it turns
// on WAL), and a foreign or damaged file must stay exactly as it was.
//
// First the header bytes are read with plain file I/O, so a file that is not
// SQLite at all is rejected without SQLite ever opening it. Then a separate
// mode=ro connection with no pragmas reads application_id, user_version and
// whether any table exists. mode=ro makes SQLite itself refuse every write;
// at most it creates the -wal/-shm side files of a WAL database, which is
// what any reader does and never changes the database file.
//
// A file that passes is held open by the probe's connection until release is
// called: Open calls it once the writer has started, or has been closed after
// a failed start. The probe does not parse the schema of a file carrying our
// application id (~3 ms of a start); the writer's first statement does, and
// refuses a damaged one. Held, the read-only connection keeps the writer
// from being the file's last connection when it closes on that refusal, so
// the writer's close does not checkpoint a WAL into the refused file (found
// by the attack review of issue 18); a read-only connection never
// checkpoints when it closes.
func probe(ctx context.Context, path string) (release func(), err error) {
	nothing := func() {}
	main, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nothing, nil // a new database
	}
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	if !main.Mode().IsRegular() {
		return nil, fmt.Errorf("store: open %s: not a regular file: %w", path, ErrCorruptDB)
	}
	if main.Size() == 0 {
		// An empty main file is a new database, unless a WAL beside it holds
		// pages never checkpointed: then it is a database whose content
		// lives in the WAL, and it must be probed like any other.
		if wal, err := os.Stat(path + "-wal"); err != nil || wal.Size() == 0 {
			return nothing, nil
		}
	} else if err := checkHeader(path); err != nil {
		return nil, err
	}

	db, err := sql.Open("sqlite", fileURI(path)+"?mode=ro")
	if err != nil {
		return nil, fmt.Errorf("store: open %s: probe: %w", path, err)
	}
	held := false
	defer func() {
		if !held {
			_ = db.Close()
		}
	}()
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)

	var appID, userVersion, tables int
	// The three values are read in one read transaction, so from one
	// snapshot: read one by one, another process's first migration could
	// commit between them, and its tables would be counted beside the
	// application_id of the empty file before it (found by a concurrent
	// first open).
	read := func() error {
		tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback() }()
		err = tx.QueryRowContext(ctx, "PRAGMA application_id").Scan(&appID)
		if err == nil {
			err = tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&userVersion)
		}
		// Counting tables makes SQLite parse the whole schema (~3 ms of
		// a server's start on ours). The count only tells an empty foreign
		// file (adopted) from a used one (refused), so a file that carries
		// our application id is not counted: its schema is parsed by the
		// writer next, in the same way and with the same refusals
		// (openErr maps SQLITE_CORRUPT and SQLITE_NOTADB to ErrCorruptDB).
		if err == nil && appID != ApplicationID {
			err = tx.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema WHERE type = 'table'").Scan(&tables)
		}
		return err
	}
	// Another process creating the same new file holds it exclusively for
	// a moment (the switch to WAL, the first migration): SQLite answers
	// SQLITE_BUSY at once then, so the probe waits and reads again, like
	// the first connection does (pingWithRetry).
	err = read()
	for attempt := 0; attempt < 50 && err != nil && strings.Contains(err.Error(), "SQLITE_BUSY"); attempt++ {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Duration(attempt+1) * 5 * time.Millisecond):
		}
		err = read()
	}
	if err != nil {
		if damaged(err) {
			return nil, fmt.Errorf("store: open %s: %w", path, ErrCorruptDB)
		}
		return nil, fmt.Errorf("store: open %s: probe: %w", path, err)
	}

	if appID != ApplicationID {
		// An empty SQLite file (no table, version 0) is harmless to adopt:
		// the first migration stamps our application id on it.
		if tables > 0 || userVersion != 0 {
			return nil, fmt.Errorf("store: open %s: application_id %#x, %d tables: %w", path, appID, tables, ErrForeignDB)
		}
		return nothing, nil
	}
	if latest := LatestSchemaVersion(); userVersion > latest {
		return nil, fmt.Errorf("store: open %s: schema version %d, this release knows up to %d: %w", path, userVersion, latest, ErrNewerSchema)
	}
	held = true
	return func() { _ = db.Close() }, nil
}

// damaged reports whether err is SQLite finding the file not a database or
// damaged.
func damaged(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && (se.Code()&0xff == sqliteNotADB || se.Code()&0xff == sqliteCorrupt)
}

// checkHeader reads the 100-byte database header with plain file I/O.
func checkHeader(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("store: open %s: %w", path, err)
	}
	defer func() { _ = f.Close() }()
	hdr := make([]byte, 100)
	if _, err := io.ReadFull(f, hdr); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return fmt.Errorf("store: open %s: shorter than a SQLite header: %w", path, ErrCorruptDB)
		}
		return fmt.Errorf("store: open %s: %w", path, err)
	}
	if !bytes.Equal(hdr[:len(sqliteMagic)], sqliteMagic) {
		return fmt.Errorf("store: open %s: %w", path, ErrCorruptDB)
	}
	return nil
}
