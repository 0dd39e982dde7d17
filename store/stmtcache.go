package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"strings"

	"modernc.org/sqlite"
)

// A bounded prepared-statement cache per connection (issue 18). Every
// query of the store is one of a fixed set of texts, yet database/sql with
// the sqlite driver prepares each call's statements afresh: parsing and
// planning was a quarter of a read's CPU. Each connection keeps its
// prepared statements by text (at most stmtCacheSize, the oldest closed
// first) and runs a query or an exec on the cached one; SQLite re-prepares
// a statement itself when the schema changed under it.
//
// A statement is used by one caller at a time: while its rows are open
// (a loop over one query that runs the same query inside), the same text
// runs unprepared, as before. Statements that are not one plain DML or
// SELECT (a migration script, DDL, PRAGMA, transaction control) are never
// cached.

const stmtCacheSize = 256

// cachingConnector opens sqlite connections that cache their statements.
type cachingConnector struct {
	dsn string
	drv *sqlite.Driver
}

func newCachingConnector(dsn string) cachingConnector {
	return cachingConnector{dsn: dsn, drv: &sqlite.Driver{}}
}

func (c cachingConnector) Connect(context.Context) (driver.Conn, error) {
	conn, err := c.drv.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	inner, ok := conn.(sqliteConn)
	if !ok {
		_ = conn.Close()
		return nil, errors.New("store: the sqlite driver's connection lacks the context methods")
	}
	return &cachedConn{sqliteConn: inner, stmts: map[string]*cachedStmt{}}, nil
}

func (c cachingConnector) Driver() driver.Driver { return c.drv }

// sqliteConn is what the sqlite driver's connection offers and database/sql
// uses.
type sqliteConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

type cachedStmt struct {
	st   driver.Stmt
	text string
	busy bool // its rows are open
}

// cachedConn is a connection with its statement cache. database/sql uses a
// connection from one goroutine at a time, so it needs no lock.
type cachedConn struct {
	sqliteConn
	stmts map[string]*cachedStmt
	order []*cachedStmt // oldest first
}

// cacheable reports whether a query text is one plain statement worth
// keeping prepared.
func cacheable(q string) bool {
	t := strings.TrimSpace(q)
	if strings.Contains(strings.TrimRight(t, ";"), ";") {
		return false // several statements (or a ';' in a literal): unprepared
	}
	head := t
	if i := strings.IndexAny(t, " \t\n\r("); i > 0 {
		head = t[:i]
	}
	switch strings.ToUpper(head) {
	case "SELECT", "INSERT", "UPDATE", "DELETE", "WITH", "REPLACE":
		return true
	}
	return false
}

// stmt returns the free cached statement of q, preparing it when absent;
// nil when q is not cached or its statement is in use.
func (c *cachedConn) stmt(ctx context.Context, q string) (*cachedStmt, error) {
	if !cacheable(q) {
		return nil, nil
	}
	if s, ok := c.stmts[q]; ok {
		if s.busy {
			return nil, nil
		}
		return s, nil
	}
	st, err := c.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	s := &cachedStmt{st: st, text: q}
	c.stmts[q] = s
	c.order = append(c.order, s)
	for i := 0; len(c.stmts) > stmtCacheSize && i < len(c.order); {
		if old := c.order[i]; !old.busy {
			delete(c.stmts, old.text)
			c.order = append(c.order[:i], c.order[i+1:]...)
			_ = old.st.Close()
			continue
		}
		i++
	}
	return s, nil
}

func (c *cachedConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	s, err := c.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return c.sqliteConn.QueryContext(ctx, q, args)
	}
	rows, err := s.st.(driver.StmtQueryContext).QueryContext(ctx, args)
	if err != nil {
		return nil, err
	}
	s.busy = true
	return &cachedRows{Rows: rows, s: s}, nil
}

func (c *cachedConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	s, err := c.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return c.sqliteConn.ExecContext(ctx, q, args)
	}
	return s.st.(driver.StmtExecContext).ExecContext(ctx, args)
}

func (c *cachedConn) Close() error {
	for _, s := range c.order {
		_ = s.st.Close()
	}
	c.stmts, c.order = nil, nil
	return c.sqliteConn.Close()
}

// cachedRows frees its statement for the next caller when closed.
type cachedRows struct {
	driver.Rows
	s *cachedStmt
}

func (r *cachedRows) Close() error {
	err := r.Rows.Close()
	r.s.busy = false
	return err
}

// The column type details database/sql asks rows for, passed through.
func (r *cachedRows) ColumnTypeDatabaseTypeName(i int) string {
	if t, ok := r.Rows.(driver.RowsColumnTypeDatabaseTypeName); ok {
		return t.ColumnTypeDatabaseTypeName(i)
	}
	return ""
}
