package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// SetLimits stores the limits of a tenant (clientID "") or of one client.
func (s *Store) SetLimits(ctx context.Context, tenantID, clientID string, l domain.Limits) error {
	if err := l.Validate(); err != nil {
		return err
	}
	// The candidate quota is the tenant's: a client's row leaves it NULL,
	// and so does 0 (the default: see domain.Limits).
	var quotaCands, quotaBytes any
	if clientID == "" {
		if l.MaxOpenCandidates > 0 {
			quotaCands = l.MaxOpenCandidates
		}
		if l.MaxCandidateBytes > 0 {
			quotaBytes = l.MaxCandidateBytes
		}
	}
	return s.withTx(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM tenants WHERE id = ?", tenantID).Scan(&n); err != nil {
			return s.dbErr("set limits", err)
		}
		if n == 0 {
			return domain.UnknownRef("tenant", tenantID, false)
		}
		if clientID != "" {
			if err := s.checkRef(ctx, tx, "mcp_clients", "client", clientID, tenantID); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO mcp_limits (tenant_id, client_id, read_calls_per_minute, candidate_writes_per_minute,
			proposals_per_minute, controlled_actions_per_minute, maximum_bulk_targets, maximum_daily_paid_cost_usd,
			rejected_calls_per_minute, maximum_open_candidates, maximum_candidate_bytes, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (tenant_id, client_id) DO UPDATE SET read_calls_per_minute = excluded.read_calls_per_minute,
			candidate_writes_per_minute = excluded.candidate_writes_per_minute, proposals_per_minute = excluded.proposals_per_minute,
			controlled_actions_per_minute = excluded.controlled_actions_per_minute, maximum_bulk_targets = excluded.maximum_bulk_targets,
			maximum_daily_paid_cost_usd = excluded.maximum_daily_paid_cost_usd,
			rejected_calls_per_minute = excluded.rejected_calls_per_minute,
			maximum_open_candidates = excluded.maximum_open_candidates, maximum_candidate_bytes = excluded.maximum_candidate_bytes,
			updated_at = excluded.updated_at`,
			tenantID, clientID, l.ReadsPerMinute, l.CandidateWritesPerMinute, l.ProposalsPerMinute, l.ControlledActionsPerMinute,
			l.MaxBulkTargets, l.MaxDailyPaidCostUSD, l.RejectedPerMinute, quotaCands, quotaBytes, ts(s.clock.Now()))
		if err != nil {
			return s.dbErr("set limits", err)
		}
		return nil
	})
}

// EffectiveLimits: the tenant's row (the defaults where it is absent),
// narrowed per class by the client's own row where it has one
// (domain.Narrow), with the tenant's candidate quota. Zeros that mean a default come back as that
// default (domain.Limits.Effective).
func (s *Store) EffectiveLimits(ctx context.Context, tenantID, clientID string) (domain.Limits, error) {
	return s.effectiveLimits(ctx, s.r, tenantID, clientID)
}

type queryRower interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}

func (s *Store) effectiveLimits(ctx context.Context, q queryRower, tenantID, clientID string) (domain.Limits, error) {
	if tenantID == "" {
		return domain.DefaultLimits(), nil
	}
	// The tenant's row (client_id '') and the client's own, in one
	// statement: every counted call reads them (issue 18).
	tl := domain.DefaultLimits()
	var (
		cl    domain.Limits
		found bool
	)
	err := queryRows(ctx, q, func(r *sql.Rows) error {
		l := domain.DefaultLimits()
		var (
			id           string
			cands, bytes sql.NullInt64
		)
		if err := r.Scan(&id, &l.ReadsPerMinute, &l.CandidateWritesPerMinute, &l.ProposalsPerMinute, &l.ControlledActionsPerMinute,
			&l.MaxBulkTargets, &l.MaxDailyPaidCostUSD, &l.RejectedPerMinute, &cands, &bytes); err != nil {
			return err
		}
		if id != "" {
			cl, found = l, true
			return nil
		}
		// The quota columns are read from the tenant's row only (NULL:
		// default).
		if cands.Valid {
			l.MaxOpenCandidates = int(cands.Int64)
		}
		if bytes.Valid {
			l.MaxCandidateBytes = bytes.Int64
		}
		tl = l
		return nil
	}, `SELECT client_id, read_calls_per_minute, candidate_writes_per_minute, proposals_per_minute,
		controlled_actions_per_minute, maximum_bulk_targets, maximum_daily_paid_cost_usd, rejected_calls_per_minute,
		maximum_open_candidates, maximum_candidate_bytes FROM mcp_limits
		WHERE tenant_id = ? AND client_id IN ('', ?)`, tenantID, clientID)
	if err != nil {
		return tl.Effective(), s.dbErr("limits", err)
	}
	if clientID == "" || !found {
		return tl.Effective(), nil // no row of its own: the tenant's
	}
	return domain.Narrow(tl, cl), nil
}

// ConsumeRate counts one call of class for the principal's client in the
// current one-minute window, unless the window is full. Check and count are
// one statement under the write lock, so processes sharing the file cannot
// together exceed the limit. Anonymous calls share the bucket "public".
func (s *Store) ConsumeRate(ctx context.Context, p domain.Principal, class string) (domain.RateDecision, error) {
	var d domain.RateDecision
	err := s.withTx(ctx, func(tx *sql.Tx) error {
		var err error
		d, err = s.consumeRate(ctx, tx, p, class)
		return err
	})
	return d, err
}

// AppendEventCounted counts a read in its limit class and records its
// event in the same transaction (issue 18: one commit per read instead of
// two). Over the limit nothing is written and the decision is returned
// with Allowed false: the gate then answers rate_limited, withholds the
// read's data and records the refusal. Counting after the read keeps the
// limit exact across processes, because count and event commit together.
func (s *Store) AppendEventCounted(ctx context.Context, e domain.Event, p domain.Principal, class string) (domain.RateDecision, error) {
	var d domain.RateDecision
	err := s.withTx(ctx, func(tx *sql.Tx) error {
		var err error
		if d, err = s.consumeRate(ctx, tx, p, class); err != nil || !d.Allowed {
			return err
		}
		if e.OccurredAt.IsZero() {
			e.OccurredAt = s.clock.Now()
		}
		return s.insertEvent(ctx, tx, e)
	})
	if err != nil {
		d.Allowed = false
	}
	return d, err
}

// consumeRate is ConsumeRate inside tx.
func (s *Store) consumeRate(ctx context.Context, tx *sql.Tx, p domain.Principal, class string) (domain.RateDecision, error) {
	d := domain.RateDecision{Class: class}
	if !slices.Contains(domain.LimitClasses(), class) {
		return d, fmt.Errorf("store: unknown limit class %q: %w", class, domain.ErrInvalidInput)
	}
	l, err := s.effectiveLimits(ctx, tx, p.TenantID, p.Client.ID)
	if err != nil {
		return d, err
	}
	d.Limit = l.PerMinute(class)
	bucket := domain.RateBucket(p)
	now := s.clock.Now()
	window := now.Unix() - now.Unix()%60
	d.RetryAfterSeconds = int(window + 60 - now.Unix())
	if d.Limit == 0 {
		return d, nil // a limit of 0 admits nothing
	}
	var count int64
	err = tx.QueryRowContext(ctx, `INSERT INTO rate_counters (bucket, class, window_start, count) VALUES (?, ?, ?, 1)
		ON CONFLICT (bucket, class, window_start) DO UPDATE SET count = count + 1 WHERE count < ?
		RETURNING count`, bucket, class, window, d.Limit).Scan(&count)
	if errors.Is(err, sql.ErrNoRows) {
		return d, nil // the window is full: nothing counted
	}
	if err != nil {
		return d, s.dbErr("rate count", err)
	}
	if count == 1 {
		// This call opened its window: the older windows of its bucket and
		// class are dropped, so the table stays tiny. (Only then: deleting
		// on every call was one statement more per call; issue 18.)
		if _, err := tx.ExecContext(ctx, "DELETE FROM rate_counters WHERE bucket = ? AND class = ? AND window_start < ?", bucket, class, window); err != nil {
			return d, s.dbErr("rate window", err)
		}
	}
	d.Allowed = true
	return d, nil
}
