package store

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Migrations are embedded so the binary carries its schema: there is no file
// to forget at install time. They are numbered NNNN_name.sql from 0001 with
// no gaps; migration N leaves PRAGMA user_version = N.
//
//go:embed migrations/*.sql
var migrationsFS embed.FS

type migration struct {
	version int
	name    string
}

// migrations are read from the embedded files on first use: their SQL
// (~160 KB) is needed only when a file is created or upgraded, and reading
// it at package initialisation cost every start of every command (issue 18).
var migrations = sync.OnceValue(loadMigrations)

func loadMigrations() []migration {
	names, err := fs.Glob(migrationsFS, "migrations/*.sql")
	if err != nil {
		panic(err)
	}
	sort.Strings(names)
	out := make([]migration, 0, len(names))
	for i, name := range names {
		base := strings.TrimPrefix(name, "migrations/")
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v != i+1 {
			// A build-time mistake, caught by every test that opens a store.
			panic(fmt.Sprintf("store: migration %s: want %04d_<name>.sql", name, i+1))
		}
		out = append(out, migration{version: v, name: base})
	}
	return out
}

// LatestSchemaVersion is the newest migration this release embeds.
func LatestSchemaVersion() int { return len(migrations()) }

// migrate applies the pending migrations, each in its own IMMEDIATE
// transaction. user_version is re-read inside the transaction, after the
// write lock is held: when two processes open a fresh file at once, the
// second waits (busy_timeout), then sees the first one's version and skips.
//
// A file already at this release's version (every start but the first after
// an upgrade) is settled by one read of the header, without taking the write
// lock once per migration (~1.2 ms of a start). The version only ever grows,
// so a file read at the latest version has nothing left to apply here.
func (s *Store) migrate(ctx context.Context) error {
	var cur int
	if err := s.w.QueryRowContext(ctx, "PRAGMA user_version").Scan(&cur); err == nil && cur == LatestSchemaVersion() {
		return nil
	}
	for _, m := range migrations() {
		if err := s.applyMigration(ctx, m); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) applyMigration(ctx context.Context, m migration) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return s.openErr("migrate: begin", err)
	}
	defer func() { _ = tx.Rollback() }() // no-op after Commit
	var cur int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&cur); err != nil {
		return s.openErr("migrate: read version", err)
	}
	if latest := LatestSchemaVersion(); cur > latest {
		// A newer release migrated the file between our probe and now.
		return fmt.Errorf("store: open %s: schema version %d, this release knows up to %d: %w", s.path, cur, latest, ErrNewerSchema)
	}
	if cur >= m.version {
		return nil
	}
	body, err := migrationsFS.ReadFile("migrations/" + m.name)
	if err != nil {
		return s.openErr("migrate "+m.name, err)
	}
	if _, err := tx.ExecContext(ctx, string(body)); err != nil {
		return s.openErr("migrate "+m.name, err)
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", m.version)); err != nil {
		return s.openErr("migrate "+m.name+": set version", err)
	}
	if err := tx.Commit(); err != nil {
		return s.openErr("migrate "+m.name+": commit", err)
	}
	s.log.Debug("store: migrated", "path", s.path, "version", m.version)
	return nil
}
