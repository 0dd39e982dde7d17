package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
)

// Counts reports the number of rows of every table, read in one snapshot.
// Tests use it to prove what a call wrote; doctor to describe a database.
func (s *Store) Counts(ctx context.Context) (map[string]int64, error) {
	out := make(map[string]int64, len(tables))
	err := s.withRead(ctx, func(tx *sql.Tx) error {
		for _, t := range tables {
			var n int64
			if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM "+t.name).Scan(&n); err != nil {
				return s.dbErr("count "+t.name, err)
			}
			out[t.name] = n
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Digest reports, per table, the hex sha256 of all its rows in primary-key
// order, read in one snapshot. Equal digests before and after a call prove
// the call changed nothing in that table (tests assert "a conflict wrote
// nothing" with it). Every value is hashed with its SQLite type and length,
// so NULL, ” and 0 differ and no two rows can run together.
func (s *Store) Digest(ctx context.Context) (map[string]string, error) {
	out := make(map[string]string, len(tables))
	err := s.withRead(ctx, func(tx *sql.Tx) error {
		for _, t := range tables {
			sum, err := s.digestTable(ctx, tx, t)
			if err != nil {
				return err
			}
			out[t.name] = sum
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (s *Store) digestTable(ctx context.Context, tx *sql.Tx, t table) (string, error) {
	rows, err := tx.QueryContext(ctx, "SELECT * FROM "+t.name+" ORDER BY "+t.orderBy)
	if err != nil {
		return "", s.dbErr("digest "+t.name, err)
	}
	defer func() { _ = rows.Close() }()
	cols, err := rows.Columns()
	if err != nil {
		return "", s.dbErr("digest "+t.name, err)
	}
	h := sha256.New()
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var n [8]byte
	writeLen := func(tag byte, l int) {
		h.Write([]byte{tag})
		binary.BigEndian.PutUint64(n[:], uint64(l))
		h.Write(n[:])
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return "", s.dbErr("digest "+t.name, err)
		}
		h.Write([]byte{'R'})
		for _, v := range vals {
			switch x := v.(type) {
			case nil:
				h.Write([]byte{'N'})
			case int64:
				h.Write([]byte{'I'})
				binary.BigEndian.PutUint64(n[:], uint64(x))
				h.Write(n[:])
			case float64:
				h.Write([]byte{'F'})
				binary.BigEndian.PutUint64(n[:], math.Float64bits(x))
				h.Write(n[:])
			case string:
				writeLen('T', len(x))
				h.Write([]byte(x))
			case []byte:
				writeLen('B', len(x))
				h.Write(x)
			default:
				s := fmt.Sprint(x)
				writeLen('?', len(s))
				h.Write([]byte(s))
			}
		}
	}
	if err := rows.Err(); err != nil {
		return "", s.dbErr("digest "+t.name, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
