package store

// The idempotency keys of persisted writes (§24), in one place: the scope
// check of a write's key, the replay lookup inside the write transaction,
// the row that keeps a first result, the gate's pre-check and the prune.
// idempotentWrite (write.go) strings them together around each domain write.

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// IdempotencyTTL is how long a persisted write's key is honoured: a retry
// within 24 hours of the first execution replays it; after that the key
// starts a new execution and PruneIdempotency may delete the old row.
const IdempotencyTTL = 24 * time.Hour

type idemRow struct {
	fingerprint string
	result      domain.StoredResult
}

// lookupIdem finds the live idempotency row of k. An expired row is deleted
// here, inside the write transaction, so the key can start afresh.
func (s *Store) lookupIdem(ctx context.Context, tx *sql.Tx, k domain.IdempotencyKey, now time.Time) (idemRow, bool, error) {
	var (
		row            idemRow
		result, expiry string
	)
	err := tx.QueryRowContext(ctx, `SELECT fingerprint, result, expires_at FROM idempotency_keys
		WHERE tenant_id = ? AND client_id = ? AND tool = ? AND tool_major = ? AND key = ?`,
		k.TenantID, k.ClientID, k.Tool, k.ToolMajor, k.Key).Scan(&row.fingerprint, &result, &expiry)
	if errors.Is(err, sql.ErrNoRows) {
		return row, false, nil
	}
	if err != nil {
		return row, false, s.dbErr("idempotency lookup", err)
	}
	if expiry <= ts(now) {
		if _, err := tx.ExecContext(ctx, `DELETE FROM idempotency_keys
			WHERE tenant_id = ? AND client_id = ? AND tool = ? AND tool_major = ? AND key = ?`,
			k.TenantID, k.ClientID, k.Tool, k.ToolMajor, k.Key); err != nil {
			return row, false, s.dbErr("idempotency expire", err)
		}
		return row, false, nil
	}
	if err := json.Unmarshal([]byte(result), &row.result); err != nil {
		return row, false, s.dbErr("idempotency decode", err)
	}
	return row, true, nil
}

// storeIdempotency records the first result of a persisted write under its
// idempotency scope, in the write's own transaction, so a retry replays it.
func (s *Store) storeIdempotency(ctx context.Context, tx *sql.Tx, w domain.WriteMeta, result any, related domain.Related, now time.Time) error {
	resJSON, err := json.Marshal(result)
	if err != nil {
		return s.dbErr("idempotency: encode result", err)
	}
	stored, err := json.Marshal(domain.StoredResult{Result: resJSON, Related: related.Normalized(), EventID: w.Event.ID})
	if err != nil {
		return s.dbErr("idempotency: encode result", err)
	}
	k := w.Idem
	if _, err := tx.ExecContext(ctx, `INSERT INTO idempotency_keys (tenant_id, client_id, tool, tool_major, key, fingerprint,
		result, event_id, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		k.TenantID, k.ClientID, k.Tool, k.ToolMajor, k.Key, k.Fingerprint, string(stored), w.Event.ID,
		ts(now), ts(now.Add(IdempotencyTTL))); err != nil {
		return s.dbErr("idempotency: insert row", err)
	}
	return nil
}

// PruneIdempotency deletes the idempotency rows that expired at or before
// now and reports how many.
func (s *Store) PruneIdempotency(ctx context.Context, now time.Time) (int64, error) {
	var n int64
	err := s.withTx(ctx, func(tx *sql.Tx) error {
		r, err := tx.ExecContext(ctx, "DELETE FROM idempotency_keys WHERE expires_at <= ?", ts(now))
		if err != nil {
			return s.dbErr("prune idempotency", err)
		}
		n, _ = r.RowsAffected()
		return nil
	})
	return n, err
}

// CheckIdempotency reports whether k was used, with the same input or not.
func (s *Store) CheckIdempotency(ctx context.Context, k domain.IdempotencyKey) (domain.IdemState, error) {
	var fp, expiry string
	err := s.r.QueryRowContext(ctx, `SELECT fingerprint, expires_at FROM idempotency_keys
		WHERE tenant_id = ? AND client_id = ? AND tool = ? AND tool_major = ? AND key = ?`,
		k.TenantID, k.ClientID, k.Tool, k.ToolMajor, k.Key).Scan(&fp, &expiry)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return domain.IdemUnused, nil
	case err != nil:
		return domain.IdemUnused, s.dbErr("check idempotency", err)
	case expiry <= ts(s.clock.Now()):
		return domain.IdemUnused, nil
	case fp == k.Fingerprint:
		return domain.IdemReplay, nil
	}
	return domain.IdemConflict, nil
}
