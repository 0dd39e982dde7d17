package live

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// CreateCandidate runs the P5 candidate chain in ONE database transaction
// (mcp_create_inventory_candidate): replay or conflict on the idempotency
// key first, then the client's status, membership and permission, the sale
// in the client's tenant, the descriptor → run → record → candidate chain,
// the call's plugin_event and the idempotency row. It never touches items.
func (b *Backend) CreateCandidate(ctx context.Context, p domain.Principal, w domain.WriteMeta, in domain.NewCandidate) (domain.CandidateCreated, domain.WriteOutcome, error) {
	var (
		res domain.CandidateCreated
		out domain.WriteOutcome
	)
	if err := in.Validate(); err != nil {
		return res, out, err
	}
	tok, err := b.writeToken(p, w)
	if err != nil {
		return res, out, err
	}
	args := writeArgs(w)
	args["p_input"] = in
	return persist(ctx, b, tok, "mcp_create_inventory_candidate", args,
		func(r domain.CandidateCreated) bool { return r.CandidateID != "" }, "answer without a candidate")
}

// writeToken is the client token a persisted write is made with, once its
// metadata is found to be the principal's (WriteMeta.Check).
func (b *Backend) writeToken(p domain.Principal, w domain.WriteMeta) (secret, error) {
	tok, err := b.tokenOf(p)
	if err != nil {
		return "", err
	}
	if err := w.Check(p); err != nil {
		return "", err
	}
	return tok, nil
}

// normalizeEvent gives an event the shape both backends store: lists never
// null, the instant in UTC (now when unset).
func normalizeEvent(e domain.Event) domain.Event {
	e.Related = e.Related.Normalized()
	if e.OccurredAt.IsZero() {
		e.OccurredAt = time.Now()
	}
	e.OccurredAt = e.OccurredAt.UTC()
	return e
}

func validateEvent(e domain.Event) error {
	if e.ID == "" {
		return fmt.Errorf("live: event without id: %w", domain.ErrInvalidInput)
	}
	if !slices.Contains(domain.Outcomes(), e.Outcome) {
		return fmt.Errorf("live: event %s: outcome %q: %w", e.ID, e.Outcome, domain.ErrInvalidInput)
	}
	return nil
}

// AppendEvent records the plugin_event of a call that wrote nothing. With
// an outbox it is queued locally (and delivered by SendEvent later), so
// reads and blocks keep answering while Supabase is unreachable; without
// one it is sent now.
func (b *Backend) AppendEvent(ctx context.Context, e domain.Event) error {
	if err := validateEvent(e); err != nil {
		return err
	}
	e = normalizeEvent(e)
	if b.outbox != nil {
		return b.outbox.EnqueueEvent(ctx, e)
	}
	return b.SendEvent(ctx, e)
}

// SendEvent delivers one event to mcp_append_event, as its own client: the
// event of a client goes with that client's token, and the database takes
// the event's tenant, client and actor from the token; the event of a call
// no client made goes without one and is recorded as anonymous, in no
// tenant. An event whose client this process has not authenticated (queued
// before a restart) waits as ErrUnavailable until it has. It is idempotent
// by event id: delivering an event twice records it once. A refused event
// is ErrInvalidInput (retrying cannot help); anything else ErrUnavailable.
func (b *Backend) SendEvent(ctx context.Context, e domain.Event) error {
	if err := validateEvent(e); err != nil {
		return err
	}
	var tok secret
	if e.Client.ID != "" {
		t, err := b.tokenOfClient(e.Client.ID)
		if err != nil {
			return fmt.Errorf("live: event %s waits until its client calls again: %w", e.ID, domain.ErrUnavailable)
		}
		tok = t
	}
	return b.callClient(ctx, tok, "mcp_append_event", map[string]any{"p_event": normalizeEvent(e)}, nil)
}

// CheckIdempotency says whether a key of the principal's client was used,
// with the same input or not (an expired key is unused).
func (b *Backend) CheckIdempotency(ctx context.Context, k domain.IdempotencyKey) (domain.IdemState, error) {
	tok, err := b.tokenOfClient(k.ClientID)
	if err != nil {
		return domain.IdemUnused, err
	}
	var state string
	if err := b.callClient(ctx, tok, "mcp_check_idempotency", map[string]any{"p_tool": k.Tool,
		"p_tool_major": k.ToolMajor, "p_key": k.Key, "p_fingerprint": k.Fingerprint}, &state); err != nil {
		return domain.IdemUnused, err
	}
	switch state {
	case "unused":
		return domain.IdemUnused, nil
	case "replay":
		return domain.IdemReplay, nil
	case "conflict":
		return domain.IdemConflict, nil
	}
	return domain.IdemUnused, b.unavailable("mcp_check_idempotency", fmt.Errorf("unknown state %q", state))
}

// ConsumeRate counts one call of class for the principal's client in the
// current one-minute window, in the database, so every server sharing the
// project shares the limit. Anonymous calls share the bucket "public".
// The gate asks it only for what no RPC counts itself — the rejected
// class and the tools that make no counted RPC: every RPC that serves a
// tool counts its own call (CountsRateInCall, migration 34).
func (b *Backend) ConsumeRate(ctx context.Context, p domain.Principal, class string) (domain.RateDecision, error) {
	d := domain.RateDecision{Class: class}
	switch class {
	case domain.LimitReads, domain.LimitCandidateWrites, domain.LimitProposals, domain.LimitControlledActions, domain.LimitRejected:
	default:
		return d, fmt.Errorf("live: unknown limit class %q: %w", class, domain.ErrInvalidInput)
	}
	var tok secret // "" (no client): the shared public bucket
	if !p.Public && p.Client.ID != "" {
		t, err := b.tokenOfClient(p.Client.ID)
		if err != nil {
			return d, err
		}
		tok = t
	}
	var a struct {
		Allowed bool   `json:"allowed"`
		Class   string `json:"class"`
		Limit   int    `json:"limit"`
		Retry   int    `json:"retry_after_seconds"`
	}
	if err := b.callClient(ctx, tok, "mcp_consume_rate", map[string]any{"p_class": class}, &a); err != nil {
		return d, err
	}
	return domain.RateDecision{Allowed: a.Allowed, Class: class, Limit: a.Limit, RetryAfterSeconds: a.Retry}, nil
}
