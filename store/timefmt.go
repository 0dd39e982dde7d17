package store

import (
	"database/sql"
	"fmt"
	"time"
)

// tsLayout is RFC 3339 in UTC with exactly nine fractional digits. Unlike
// time.RFC3339Nano, which drops trailing zeros, it has a fixed width, so the
// text order of two stamps is their time order: keyset cursors, expiry
// checks and ORDER BY compare the text directly.
const tsLayout = "2006-01-02T15:04:05.000000000Z07:00"

// ts formats t for storage.
func ts(t time.Time) string { return t.UTC().Format(tsLayout) }

// tsPtr formats an optional instant; nil is NULL.
func tsPtr(t *time.Time) sql.NullString {
	if t == nil {
		return sql.NullString{}
	}
	return sql.NullString{String: ts(*t), Valid: true}
}

// parseTS reads a stored stamp. Any RFC 3339 text is accepted so rows written
// by hand (tests, a future import) still read back.
func parseTS(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("bad timestamp %q: %w", s, err)
	}
	return t.UTC(), nil
}

// nullStr maps "" to NULL: optional references are NULL in the schema, so a
// composite foreign key with an absent id is not checked.
func nullStr(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

// nullInt maps an optional amount.
func nullInt(p *int64) sql.NullInt64 {
	if p == nil {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: *p, Valid: true}
}

// intPtr is the inverse of nullInt.
func intPtr(n sql.NullInt64) *int64 {
	if !n.Valid {
		return nil
	}
	v := n.Int64
	return &v
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// timeScanner scans a stamp column into a time.Time, collecting the first
// parse error so row scanners can stay linear.
type timeScanner struct{ err error }

func (p *timeScanner) at(s string) time.Time {
	t, err := parseTS(s)
	if err != nil && p.err == nil {
		p.err = err
	}
	return t
}

func (p *timeScanner) ptr(s sql.NullString) *time.Time {
	if !s.Valid {
		return nil
	}
	t := p.at(s.String)
	return &t
}
