package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// CountsRateInWrite reports that a write given WriteMeta.RateClass is
// counted in that class inside its own transaction: every persisted write
// goes through idempotentWrite.
func (s *Store) CountsRateInWrite() bool { return true }

// idempotentWrite is THE shape of every persisted write (§24): in one
// IMMEDIATE transaction it
//
//  1. looks up w.Idem: the same fingerprint replays the stored result and
//     writes nothing; another fingerprint is ErrIdempotencyConflict;
//  2. re-checks that the principal's client is still active (a suspension
//     committed after the gate resolved the principal still stops it);
//  3. runs fn, the domain write;
//  4. commits the call's plugin_event naming the records fn reports;
//  5. stores the result for replays.
//
// The lookup runs inside the write lock, so processes racing on one key
// serialise and exactly one executes. fn must use tx only.
func idempotentWrite[T any](ctx context.Context, s *Store, p domain.Principal, w domain.WriteMeta, fn func(tx *sql.Tx, now time.Time) (T, domain.Related, error)) (T, domain.WriteOutcome, error) {
	var (
		res T
		out domain.WriteOutcome
	)
	if err := requireTenant(p); err != nil {
		return res, out, err
	}
	if err := w.Check(p); err != nil {
		return res, out, err
	}
	err := s.withTx(ctx, func(tx *sql.Tx) error {
		if w.RateClass != "" {
			// The call's rate count, in its own write's transaction (issue
			// 18): counted with what it writes, or not at all.
			d, err := s.consumeRate(ctx, tx, p, w.RateClass)
			if err != nil {
				return err
			}
			if !d.Allowed {
				return &domain.RateLimitError{Class: d.Class, Limit: d.Limit, RetryAfterSeconds: d.RetryAfterSeconds}
			}
		}
		now := s.clock.Now()
		stored, found, err := s.lookupIdem(ctx, tx, w.Idem, now)
		if err != nil {
			return err
		}
		if found {
			if stored.fingerprint != w.Idem.Fingerprint {
				return fmt.Errorf("store: %s: key %q: %w", w.Idem.Tool, w.Idem.Key, domain.ErrIdempotencyConflict)
			}
			if err := json.Unmarshal(stored.result.Result, &res); err != nil {
				return s.dbErr(w.Idem.Tool+": stored result", err)
			}
			out = domain.WriteOutcome{Replayed: true, OriginalEventID: stored.result.EventID, Related: stored.result.Related.Normalized()}
			return nil // nothing written: the empty transaction commits
		}
		if err := s.checkClientActive(ctx, tx, p); err != nil {
			return err
		}
		r, related, err := fn(tx, now)
		if err != nil {
			return err
		}
		if err := s.commitWriteEvent(ctx, tx, w, related, now); err != nil {
			return err
		}
		if err := s.storeIdempotency(ctx, tx, w, r, related, now); err != nil {
			return err
		}
		res = r
		out = domain.WriteOutcome{OriginalEventID: w.Event.ID, Related: related.Normalized()}
		return nil
	})
	if err != nil {
		var zero T
		return zero, domain.WriteOutcome{}, err
	}
	return res, out, nil
}
