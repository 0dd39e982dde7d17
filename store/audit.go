package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// The audit side of plugin_events: the tenant hash chains (0006), the
// causation links filled when an event is recorded, and the reads the
// `trovesnap audit` commands run. Nothing here is reachable from a tool.

// tierActionProposal is catalog.TierActionProposal as recorded in events
// (the store does not import the catalog).
const tierActionProposal = "action_proposal"

// chainHead returns the event_hash of the newest event of tenantID's chain
// ("" when the chain is empty or its newest rows predate the chain), read
// inside the write transaction that will append to it.
func (s *Store) chainHead(ctx context.Context, tx *sql.Tx, tenantID string) (string, error) {
	var h string
	err := tx.QueryRowContext(ctx, "SELECT event_hash FROM plugin_events WHERE tenant_id = ? ORDER BY seq DESC LIMIT 1", tenantID).Scan(&h)
	if errors.Is(err, sql.ErrNoRows) {
		return domain.ChainGenesis, nil
	}
	if err != nil {
		return "", s.dbErr("audit chain head", err)
	}
	return h, nil
}

// fillCausation sets e.CausationID to the event that caused e, looked up in
// e's correlation (the proposal's), inside the write transaction:
//
//   - an event that used or revoked a grant was caused by the event that
//     granted it (approval_granted naming that approval id);
//   - otherwise an event about a proposal (an approval decision, an
//     execution authorised by a policy, a blocked execution attempt) was
//     caused by the proposal's creation event.
//
// Events with neither stay without a cause; the lookup reads only the few
// events of one correlation, by index.
func (s *Store) fillCausation(ctx context.Context, tx *sql.Tx, e *domain.Event) error {
	// Only events about an existing proposal can have a recorded cause; a
	// proposal's own creation event (which names the proposal it creates)
	// is the first of its correlation. Every other event skips the lookup.
	if e.CorrelationID == "" || (e.Approval.ApprovalID == nil && (e.Approval.ProposalID == nil || e.Tool.Tier == tierActionProposal)) {
		return nil
	}
	var id string
	if e.Approval.ApprovalID != nil && e.Action != "approval_granted" {
		err := tx.QueryRowContext(ctx, `SELECT id FROM plugin_events WHERE correlation_id = ?
			AND json_extract(body, '$.action') = 'approval_granted' AND json_extract(body, '$.approval.approval_id') = ?
			ORDER BY seq LIMIT 1`, e.CorrelationID, *e.Approval.ApprovalID).Scan(&id)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return s.dbErr("audit causation: grant event", err)
		}
	}
	if id == "" && e.Approval.ProposalID != nil {
		err := tx.QueryRowContext(ctx, `SELECT id FROM plugin_events WHERE correlation_id = ? AND outcome = 'success'
			AND json_extract(body, '$.action') = 'mcp_tool_called'
			AND EXISTS (SELECT 1 FROM json_each(body, '$.related.proposal_ids') WHERE value = ?)
			ORDER BY seq LIMIT 1`, e.CorrelationID, *e.Approval.ProposalID).Scan(&id)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return s.dbErr("audit causation: proposal event", err)
		}
	}
	if id != "" && id != e.ID {
		e.CausationID = &id
	}
	return nil
}

const chainCols = `seq, id, tenant_id, correlation_id, causation_id, request_id, server_request_id, tool_name, outcome,
	occurred_at, body, prev_hash, event_hash`

// ScanChain calls fn for every plugin_event after afterSeq in seq order,
// from one read snapshot. rec.Body is only valid during the call (it is the
// driver's buffer: verifying 100,000 events copies no bodies).
func (s *Store) ScanChain(ctx context.Context, afterSeq int64, fn func(rec domain.ChainRecord) error) error {
	return s.withRead(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, "SELECT "+chainCols+" FROM plugin_events WHERE seq > ? ORDER BY seq", afterSeq)
		if err != nil {
			return s.dbErr("audit scan", err)
		}
		defer func() { _ = rows.Close() }()
		var body sql.RawBytes
		for rows.Next() {
			var r domain.ChainRecord
			if err := rows.Scan(&r.Seq, &r.ID, &r.TenantID, &r.CorrelationID, &r.CausationID, &r.RequestID, &r.ServerRequestID,
				&r.ToolName, &r.Outcome, &r.OccurredAt, &body, &r.PrevHash, &r.EventHash); err != nil {
				return s.dbErr("audit scan", err)
			}
			r.Body = body
			if err := fn(r); err != nil {
				return err
			}
		}
		if err := rows.Err(); err != nil {
			return s.dbErr("audit scan", err)
		}
		return nil
	})
}

// ChainHeads returns the newest event of every tenant chain, by tenant.
func (s *Store) ChainHeads(ctx context.Context) ([]domain.ChainHead, error) {
	var out []domain.ChainHead
	err := s.withRead(ctx, func(tx *sql.Tx) error {
		var err error
		if out, err = chainHeads(ctx, tx); err != nil {
			return s.dbErr("audit heads", err)
		}
		return nil
	})
	return out, err
}

// chainHeads reads the head of every tenant chain inside tx.
func chainHeads(ctx context.Context, tx *sql.Tx) ([]domain.ChainHead, error) {
	out := []domain.ChainHead{}
	rows, err := tx.QueryContext(ctx, `SELECT c.tenant_id, c.n, p.seq, p.id, p.event_hash
		FROM (SELECT tenant_id, count(*) AS n, max(seq) AS m FROM plugin_events GROUP BY tenant_id) c
		JOIN plugin_events p ON p.seq = c.m ORDER BY c.tenant_id`)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		var h domain.ChainHead
		if err := rows.Scan(&h.TenantID, &h.Events, &h.Seq, &h.EventID, &h.EventHash); err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, rows.Err()
}

// AuditEvents returns the stored events matching q, in seq order, with their
// chain columns (Body is a copy).
func (s *Store) AuditEvents(ctx context.Context, q domain.EventQuery) ([]domain.ChainRecord, error) {
	var w where
	w.add("seq > ?", q.AfterSeq)
	for _, c := range []struct{ col, v string }{
		{"id", q.ID}, {"tenant_id", q.TenantID}, {"request_id", q.RequestID}, {"server_request_id", q.ServerRequestID},
		{"correlation_id", q.CorrelationID}, {"causation_id", q.CausationID},
	} {
		if c.v != "" {
			w.add(c.col+" = ?", c.v)
		}
	}
	order := " ORDER BY seq"
	if q.Newest {
		order = " ORDER BY seq DESC"
	}
	limit := ""
	if q.Limit > 0 {
		limit = fmt.Sprintf(" LIMIT %d", q.Limit)
	}
	rows, err := s.r.QueryContext(ctx, "SELECT "+chainCols+" FROM plugin_events"+w.sql()+order+limit, w.args...)
	if err != nil {
		return nil, s.dbErr("audit events", err)
	}
	defer func() { _ = rows.Close() }()
	out := []domain.ChainRecord{}
	for rows.Next() {
		var r domain.ChainRecord
		if err := rows.Scan(&r.Seq, &r.ID, &r.TenantID, &r.CorrelationID, &r.CausationID, &r.RequestID, &r.ServerRequestID,
			&r.ToolName, &r.Outcome, &r.OccurredAt, &r.Body, &r.PrevHash, &r.EventHash); err != nil {
			return nil, s.dbErr("audit events", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, s.dbErr("audit events", err)
	}
	if q.Newest {
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	return out, nil
}

// GetGrant returns one grant (human or policy) by id, for the audit trace.
func (s *Store) GetGrant(ctx context.Context, id string) (domain.Grant, error) {
	g, err := scanGrant(s.r.QueryRowContext(ctx, "SELECT "+grantCols+" FROM approval_grants WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return g, domain.UnknownRef("approval_id", id, false)
	}
	if err != nil {
		return g, s.dbErr("get grant", err)
	}
	if g.Status == domain.GrantActive && !s.clock.Now().Before(g.ExpiresAt) {
		g.Status = domain.GrantExpired
	}
	return g, nil
}

// ApprovalCounts are the store's running totals of approval outcomes, for
// the §37 approval metrics. They come from the database, not from one
// process, because grants are issued by another process (`trovesnap
// approve`) than the one serving MCP.
func (s *Store) ApprovalCounts(ctx context.Context) (map[string]int64, error) {
	out := map[string]int64{}
	now := ts(s.clock.Now())
	err := s.withRead(ctx, func(tx *sql.Tx) error {
		for key, q := range map[string]string{
			"requested":      "SELECT count(*) FROM proposals",
			"granted_human":  "SELECT count(*) FROM approval_grants WHERE issuer_type = 'human'",
			"granted_policy": "SELECT count(*) FROM approval_grants WHERE issuer_type = 'policy'",
			"denied":         "SELECT count(*) FROM proposals WHERE status = 'rejected'",
			"revoked":        "SELECT count(*) FROM approval_grants WHERE status = 'revoked'",
			"expired":        "SELECT count(*) FROM approval_grants WHERE status = 'active' AND expires_at <= ?",
		} {
			var n int64
			var args []any
			if strings.Contains(q, "?") {
				args = append(args, now)
			}
			if err := tx.QueryRowContext(ctx, q, args...).Scan(&n); err != nil {
				return s.dbErr("approval counts", err)
			}
			out[key] = n
		}
		return nil
	})
	return out, err
}

// completeSellerEvent fills the §35 fields of an event recorded for a
// seller's own action (an approval decision, a client or policy change):
// the actor's role, the permission the action needs and the domain
// operation it was. These events come from human surfaces, not from a tool.
func (s *Store) completeSellerEvent(ctx context.Context, tx *sql.Tx, ev *domain.Event, service, perm string) error {
	if ev.Actor.ID != "" && ev.Actor.Role == "" {
		role, err := s.roleIn(ctx, tx, ev.TenantID, ev.Actor.ID)
		if err != nil {
			return err
		}
		ev.Actor.Role = role
	}
	if perm != "" && len(ev.Permissions) == 0 {
		ev.Permissions = []string{perm}
	}
	if ev.Domain == nil {
		ev.Domain = &domain.EventDomain{Service: service, Operation: ev.Action}
	}
	return nil
}

// completeApprovalEvent fills an approval decision event (§35 approval
// {proposal_id, approval_id, decision} and who issued it): the client that
// requested the proposal by name, the proposal's requirement and hash, and
// the issuer as the grant row records it, so the event alone shows that the
// grant was bound to exactly this proposal.
func (s *Store) completeApprovalEvent(ctx context.Context, tx *sql.Tx, ev *domain.Event, prop domain.Proposal) error {
	if ev.Client.ID != "" && ev.Client.Name == "" {
		err := tx.QueryRowContext(ctx, "SELECT name, client_type FROM mcp_clients WHERE id = ?", ev.Client.ID).Scan(&ev.Client.Name, &ev.Client.Type)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return s.dbErr("approval event: client", err)
		}
	}
	ev.Approval.Requirement = prop.Requirement
	ev.Approval.ProposalHash = prop.Hash
	ev.Metrics.EstimatedCostUSD = 0 // a decision consumes nothing; the execution records the cost
	switch {
	case ev.Approval.ApprovalID != nil:
		g, err := scanGrant(tx.QueryRowContext(ctx, "SELECT "+grantCols+" FROM approval_grants WHERE id = ?", *ev.Approval.ApprovalID))
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return s.dbErr("approval event: grant", err)
		}
		if err == nil {
			iss := g.IssuedBy
			ev.Approval.IssuedBy = &iss
			ev.Approval.ProposalHash = g.ProposalHash
		}
	case ev.Actor.ID != "":
		ev.Approval.IssuedBy = &domain.GrantIssuer{Type: domain.IssuerHuman, ActorID: ev.Actor.ID}
	}
	return s.completeSellerEvent(ctx, tx, ev, "approval", domain.PermApprovalGrant)
}
