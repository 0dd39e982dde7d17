package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// Outbox states.
const (
	OutboxPending  = "pending"
	OutboxSent     = "sent"
	OutboxRejected = "rejected"
)

// Outbox timing: the first retry after a second, doubling up to five
// minutes; a claimed event is leased for a minute; delivered events are
// kept a day for `sync status`.
const (
	outboxBaseBackoff = time.Second
	outboxMaxBackoff  = 5 * time.Minute
	outboxLease       = time.Minute
	outboxKeepSent    = 24 * time.Hour
)

// EnqueueEvent queues the plugin_event of a call that wrote nothing for
// delivery to Supabase (live mode). It commits locally before the call
// answers, so the event survives a Supabase outage and a restart. An event
// id is queued once: enqueueing it again changes nothing.
func (s *Store) EnqueueEvent(ctx context.Context, e domain.Event) error {
	if e.ID == "" {
		return fmt.Errorf("store: event without id: %w", domain.ErrInvalidInput)
	}
	if e.OccurredAt.IsZero() {
		e.OccurredAt = s.clock.Now()
	}
	e.Related = e.Related.Normalized()
	e.OccurredAt = e.OccurredAt.UTC()
	body, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("store: event %s: encode: %w", e.ID, domain.ErrInvalidInput)
	}
	return s.withTx(ctx, func(tx *sql.Tx) error {
		now := ts(s.clock.Now())
		if _, err := tx.ExecContext(ctx, `INSERT INTO event_outbox (event_id, body, enqueued_at, next_attempt_at)
			VALUES (?, ?, ?, ?) ON CONFLICT (event_id) DO NOTHING`, e.ID, string(body), now, now); err != nil {
			return s.dbErr("outbox enqueue", err)
		}
		return nil
	})
}

// EventSink delivers one event; the live backend's SendEvent is one. It
// must be idempotent by event id. An error matching domain.ErrInvalidInput
// means the event was refused for good; any other error is retried.
type EventSink interface {
	SendEvent(ctx context.Context, e domain.Event) error
}

// FlushResult counts what one flush did.
type FlushResult struct {
	Sent     int
	Retry    int
	Rejected int
}

type outboxRow struct {
	seq      int64
	id       string
	body     string
	attempts int
}

// FlushOutbox delivers up to max due events (pending, next attempt reached,
// not leased by another process), oldest first. Each delivered event is
// marked sent; a refused one rejected; any other failure schedules the next
// attempt with exponential backoff. It stops at the first unavailable
// answer — the others would fail alike — and leaves them due.
func (s *Store) FlushOutbox(ctx context.Context, sink EventSink, max int) (FlushResult, error) {
	var res FlushResult
	if max <= 0 {
		max = 100
	}
	rows, err := s.claimOutbox(ctx, max)
	if err != nil {
		return res, err
	}
	for i, r := range rows {
		var e domain.Event
		if err := json.Unmarshal([]byte(r.body), &e); err != nil {
			if err := s.settle(ctx, r, OutboxRejected, "undecodable event"); err != nil {
				return res, err
			}
			res.Rejected++
			continue
		}
		err := sink.SendEvent(ctx, e)
		switch {
		case err == nil:
			if err := s.settle(ctx, r, OutboxSent, ""); err != nil {
				return res, err
			}
			res.Sent++
		case errors.Is(err, domain.ErrInvalidInput):
			if err := s.settle(ctx, r, OutboxRejected, "refused as invalid"); err != nil {
				return res, err
			}
			res.Rejected++
		default:
			// Unavailable: back off this one and release the rest of the
			// claim, so the next flush starts again from the oldest.
			if err := s.retryLater(ctx, r, "unavailable"); err != nil {
				return res, err
			}
			res.Retry++
			if err := s.release(ctx, rows[i+1:]); err != nil {
				return res, err
			}
			return res, fmt.Errorf("store: outbox flush: %w", domain.ErrUnavailable)
		}
	}
	return res, nil
}

// claimOutbox leases the next due events to this process.
func (s *Store) claimOutbox(ctx context.Context, max int) ([]outboxRow, error) {
	var out []outboxRow
	err := s.withTx(ctx, func(tx *sql.Tx) error {
		now := s.clock.Now()
		rows, err := tx.QueryContext(ctx, `SELECT seq, event_id, body, attempts FROM event_outbox
			WHERE state = 'pending' AND next_attempt_at <= ? AND (lease_until IS NULL OR lease_until <= ?)
			ORDER BY seq LIMIT ?`, ts(now), ts(now), max)
		if err != nil {
			return s.dbErr("outbox claim", err)
		}
		for rows.Next() {
			var r outboxRow
			if err := rows.Scan(&r.seq, &r.id, &r.body, &r.attempts); err != nil {
				_ = rows.Close()
				return s.dbErr("outbox claim", err)
			}
			out = append(out, r)
		}
		if err := rows.Close(); err != nil {
			return s.dbErr("outbox claim", err)
		}
		for _, r := range out {
			if _, err := tx.ExecContext(ctx, "UPDATE event_outbox SET lease_until = ? WHERE seq = ?", ts(now.Add(outboxLease)), r.seq); err != nil {
				return s.dbErr("outbox lease", err)
			}
		}
		// Delivered events older than a day are dropped: Supabase has them.
		if _, err := tx.ExecContext(ctx, "DELETE FROM event_outbox WHERE state = 'sent' AND sent_at < ?", ts(now.Add(-outboxKeepSent))); err != nil {
			return s.dbErr("outbox prune", err)
		}
		return nil
	})
	return out, err
}

func (s *Store) settle(ctx context.Context, r outboxRow, state, reason string) error {
	return s.withTx(ctx, func(tx *sql.Tx) error {
		now := ts(s.clock.Now())
		var sent any
		if state == OutboxSent {
			sent = now
		}
		if _, err := tx.ExecContext(ctx, `UPDATE event_outbox SET state = ?, attempts = attempts + 1, lease_until = NULL,
			last_error = ?, sent_at = ? WHERE seq = ?`, state, reason, sent, r.seq); err != nil {
			return s.dbErr("outbox settle", err)
		}
		return nil
	})
}

// backoff is the wait before attempt n+1 after n failed attempts.
func backoff(attempts int) time.Duration {
	d := outboxBaseBackoff
	for i := 0; i < attempts && d < outboxMaxBackoff; i++ {
		d *= 2
	}
	return min(d, outboxMaxBackoff)
}

func (s *Store) retryLater(ctx context.Context, r outboxRow, reason string) error {
	return s.withTx(ctx, func(tx *sql.Tx) error {
		next := s.clock.Now().Add(backoff(r.attempts))
		if _, err := tx.ExecContext(ctx, `UPDATE event_outbox SET attempts = attempts + 1, lease_until = NULL, last_error = ?,
			next_attempt_at = ? WHERE seq = ?`, reason, ts(next), r.seq); err != nil {
			return s.dbErr("outbox retry", err)
		}
		return nil
	})
}

func (s *Store) release(ctx context.Context, rows []outboxRow) error {
	if len(rows) == 0 {
		return nil
	}
	return s.withTx(ctx, func(tx *sql.Tx) error {
		for _, r := range rows {
			if _, err := tx.ExecContext(ctx, "UPDATE event_outbox SET lease_until = NULL WHERE seq = ?", r.seq); err != nil {
				return s.dbErr("outbox release", err)
			}
		}
		return nil
	})
}

// OutboxStatus is the backlog `trovesnap sync status` shows.
type OutboxStatus struct {
	Pending       int        `json:"pending"`
	Rejected      int        `json:"rejected"`
	SentLastDay   int        `json:"sent_last_day"`
	OldestPending *time.Time `json:"oldest_pending"`
	NextAttempt   *time.Time `json:"next_attempt"`
	MaxAttempts   int        `json:"max_attempts"`
	LastError     string     `json:"last_error"`
}

// OutboxStatus reads the backlog.
func (s *Store) OutboxStatus(ctx context.Context) (OutboxStatus, error) {
	var (
		st             OutboxStatus
		oldest, next   sql.NullString
		lastErr        sql.NullString
		maxAttempts    sql.NullInt64
		tsc            timeScanner
		pending, rejct int
		sent           int
	)
	err := s.r.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM event_outbox WHERE state = 'pending'),
		(SELECT count(*) FROM event_outbox WHERE state = 'rejected'),
		(SELECT count(*) FROM event_outbox WHERE state = 'sent'),
		(SELECT min(enqueued_at) FROM event_outbox WHERE state = 'pending'),
		(SELECT min(next_attempt_at) FROM event_outbox WHERE state = 'pending'),
		(SELECT max(attempts) FROM event_outbox WHERE state = 'pending'),
		(SELECT last_error FROM event_outbox WHERE state <> 'sent' AND last_error <> '' ORDER BY seq DESC LIMIT 1)`).
		Scan(&pending, &rejct, &sent, &oldest, &next, &maxAttempts, &lastErr)
	if err != nil {
		return st, s.dbErr("outbox status", err)
	}
	st.Pending, st.Rejected, st.SentLastDay = pending, rejct, sent
	st.OldestPending, st.NextAttempt = tsc.ptr(oldest), tsc.ptr(next)
	st.MaxAttempts, st.LastError = int(maxAttempts.Int64), lastErr.String
	return st, tsc.err
}
