package store

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
)

// The statement cache answers exactly as unprepared statements do: a
// query run again inside a loop over its own rows (the cached statement is
// busy, so the inner one runs unprepared), more texts than the cache holds
// (the oldest closed), a multi-statement script (never cached), and a
// statement whose table changed shape after it was prepared (SQLite
// re-prepares it).
func TestStmtCache_SameAnswersAsUnprepared(t *testing.T) {
	ctx := context.Background()
	db := sql.OpenDB(newCachingConnector("file:" + filepath.Join(t.TempDir(), "c.db") + "?_pragma=journal_mode(WAL)"))
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t (v) VALUES ('a'), ('b'), ('c');"); err != nil {
		t.Fatal(err)
	}
	// One connection: a query inside a loop over the same query's rows
	// runs in the loop's transaction, on the same connection.
	const q = "SELECT v FROM t WHERE id >= ? ORDER BY id"
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := tx.QueryContext(ctx, q, 1)
	if err != nil {
		t.Fatal(err)
	}
	var outer, inner []string
	for rows.Next() {
		var v, w string
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		if err := tx.QueryRowContext(ctx, q, 2).Scan(&w); err != nil {
			t.Fatal(err)
		}
		outer, inner = append(outer, v), append(inner, w)
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(outer) != "[a b c]" || fmt.Sprint(inner) != "[b b b]" {
		t.Fatalf("nested: outer %v inner %v", outer, inner)
	}

	// More texts than the cache holds: each still answers.
	for i := range stmtCacheSize + 20 {
		var n int
		if err := db.QueryRowContext(ctx, fmt.Sprintf("SELECT count(*) + %d FROM t", i)).Scan(&n); err != nil || n != 3+i {
			t.Fatalf("text %d: %d %v", i, n, err)
		}
	}
	// The table changes shape under a cached statement.
	var before int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM t WHERE v = ?", "a").Scan(&before); err != nil || before != 1 {
		t.Fatal(before, err)
	}
	if _, err := db.ExecContext(ctx, "ALTER TABLE t ADD COLUMN w TEXT NOT NULL DEFAULT 'x'"); err != nil {
		t.Fatal(err)
	}
	var w string
	if err := db.QueryRowContext(ctx, "SELECT * FROM t WHERE id = ?", 1).Scan(new(int), new(string), &w); err != nil || w != "x" {
		t.Fatalf("after ALTER: %q %v", w, err)
	}
	if _, err := db.ExecContext(ctx, "INSERT INTO t (v) VALUES (?)", "d"); err != nil {
		t.Fatal(err)
	}
	var after int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM t WHERE v = ?", "d").Scan(&after); err != nil || after != 1 {
		t.Fatal(after, err)
	}
	if !cacheable("SELECT 1") || cacheable("CREATE TABLE x (a)") || cacheable("SELECT 1; SELECT 2") || cacheable("PRAGMA user_version") || !cacheable("  with x as (select 1) select * from x;") {
		t.Error("cacheable judges wrongly")
	}
}
