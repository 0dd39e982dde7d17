package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/triunalabs/trovesnap/internal/domain"
)

var outcomes = []string{domain.OutcomeSuccess, domain.OutcomeReplayed, domain.OutcomeBlocked, domain.OutcomeFailed}

// AppendEvent records the plugin_event of a call that wrote nothing (a read,
// a block, a failure, a replay). Events are append-only: the table's
// triggers refuse UPDATE and DELETE, and an event id can be recorded once.
func (s *Store) AppendEvent(ctx context.Context, e domain.Event) error {
	return s.withTx(ctx, func(tx *sql.Tx) error {
		if e.OccurredAt.IsZero() {
			e.OccurredAt = s.clock.Now()
		}
		return s.insertEvent(ctx, tx, e)
	})
}

// EventRecorded reports whether the event id is recorded (the gate asks it
// of a write that failed on its way back, to know whether its own event
// committed with it).
func (s *Store) EventRecorded(ctx context.Context, id string) (bool, error) {
	var n int
	if err := s.r.QueryRowContext(ctx, "SELECT count(*) FROM plugin_events WHERE id = ?", id).Scan(&n); err != nil {
		return false, s.dbErr("event recorded", err)
	}
	return n > 0, nil
}

// commitWriteEvent inserts the event of a persisted write inside its
// transaction: outcome success, the records it wrote, and the latency from
// the gate's start to this commit.
func (s *Store) commitWriteEvent(ctx context.Context, tx *sql.Tx, w domain.WriteMeta, related domain.Related, now time.Time) error {
	ev := w.Event
	ev.Outcome = domain.OutcomeSuccess
	ev.Related = related.Normalized()
	if ev.Approval.ProposalID == nil && ev.Tool.Tier == tierActionProposal && len(ev.Related.ProposalIDs) == 1 {
		// A proposal's own creation event names it in approval.proposal_id
		// (§35): it is the approval request that later events answer.
		pid := ev.Related.ProposalIDs[0]
		ev.Approval.ProposalID = &pid
	}
	if ev.OccurredAt.IsZero() {
		ev.OccurredAt = now
	}
	if !w.Started.IsZero() {
		ev.Metrics.LatencyMS = float64(time.Since(w.Started).Microseconds()) / 1000
	}
	return s.insertEvent(ctx, tx, ev)
}

// insertEvent writes e inside tx. Related lists are normalised to [] (events
// never carry null lists) and the instant to UTC before the body is encoded,
// so the indexed columns and the body always agree.
func (s *Store) insertEvent(ctx context.Context, tx *sql.Tx, e domain.Event) error {
	if e.ID == "" {
		return fmt.Errorf("store: event without id: %w", domain.ErrInvalidInput)
	}
	if !slices.Contains(outcomes, e.Outcome) {
		return fmt.Errorf("store: event %s: outcome %q: %w", e.ID, e.Outcome, domain.ErrInvalidInput)
	}
	e.Related = e.Related.Normalized()
	e.OccurredAt = e.OccurredAt.UTC()
	if e.CausationID == nil {
		if err := s.fillCausation(ctx, tx, &e); err != nil {
			return err
		}
	}
	body, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("store: event %s: encode: %w", e.ID, domain.ErrInvalidInput)
	}
	// The body is stored in its RFC 8785 form and hashed onto the head of
	// the tenant's chain, all inside this write transaction (BEGIN
	// IMMEDIATE serialises writers across processes, so the head read here
	// is still the head at commit).
	if body, err = domain.CanonicalJSON(body); err != nil {
		return fmt.Errorf("store: event %s: canonicalise: %w", e.ID, domain.ErrInvalidInput)
	}
	prev, err := s.chainHead(ctx, tx, e.TenantID)
	if err != nil {
		return err
	}
	var causation string
	if e.CausationID != nil {
		causation = *e.CausationID
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO plugin_events (id, tenant_id, correlation_id, causation_id, request_id,
		server_request_id, tool_name, outcome, occurred_at, body, prev_hash, event_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		e.ID, e.TenantID, e.CorrelationID, causation, e.RequestID, e.ServerRequestID, e.Tool.Name, e.Outcome,
		ts(e.OccurredAt), string(body), prev, domain.ChainHash(body, prev)); err != nil {
		return s.dbErr("append event", err)
	}
	if e.Action == "mcp_tool_called" && e.Client.ID != "" && e.Outcome != domain.OutcomeBlocked {
		// Last use, at most one write a minute per client (spec §37 "client last-used time").
		if _, err := tx.ExecContext(ctx, `INSERT INTO client_activity (client_id, last_seen_at)
			SELECT ?, ? WHERE EXISTS (SELECT 1 FROM mcp_clients WHERE id = ?)
			ON CONFLICT (client_id) DO UPDATE SET last_seen_at = excluded.last_seen_at
			WHERE client_activity.last_seen_at < ?`,
			e.Client.ID, ts(e.OccurredAt), e.Client.ID, ts(e.OccurredAt.Add(-time.Minute))); err != nil {
			return s.dbErr("client activity", err)
		}
	}
	return nil
}

// EventFilter selects plugin_events; empty fields match everything, set
// fields must all match.
type EventFilter struct {
	TenantID        string
	RequestID       string
	ServerRequestID string
	CorrelationID   string
	Tool            string
}

// Events returns the plugin_events matching f in append (seq) order. It is
// for tests and operators (doctor, the TUI's history), not for tools.
func (s *Store) Events(ctx context.Context, f EventFilter) ([]domain.Event, error) {
	var w where
	w.add("1 = 1")
	for _, c := range []struct{ col, v string }{
		{"tenant_id", f.TenantID}, {"request_id", f.RequestID}, {"server_request_id", f.ServerRequestID},
		{"correlation_id", f.CorrelationID}, {"tool_name", f.Tool},
	} {
		if c.v != "" {
			w.add(c.col+" = ?", c.v)
		}
	}
	rows, err := s.r.QueryContext(ctx, "SELECT body FROM plugin_events"+w.sql()+" ORDER BY seq", w.args...)
	if err != nil {
		return nil, s.dbErr("events", err)
	}
	defer func() { _ = rows.Close() }()
	out := []domain.Event{}
	for rows.Next() {
		var body string
		if err := rows.Scan(&body); err != nil {
			return nil, s.dbErr("events: scan", err)
		}
		var e domain.Event
		if err := json.Unmarshal([]byte(body), &e); err != nil {
			return nil, s.dbErr("events: decode", err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, s.dbErr("events", err)
	}
	return out, nil
}
