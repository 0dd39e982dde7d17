package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// TraceSource is what Trace reads (store.Store).
type TraceSource interface {
	AuditEvents(ctx context.Context, q domain.EventQuery) ([]domain.ChainRecord, error)
	ProposalCorrelation(ctx context.Context, id string) (string, error)
	GetProposalAdmin(ctx context.Context, tenantID, id string) (domain.Proposal, error)
	GetGrant(ctx context.Context, id string) (domain.Grant, error)
	GetClient(ctx context.Context, id string) (domain.Client, error)
	GetPolicy(ctx context.Context, id string) (domain.Policy, error)
}

// ErrNoTrace is returned when an id matches no recorded event.
var ErrNoTrace = errors.New("no recorded event matches this id")

// TraceResult is the reconstruction of one request or proposal: every event of
// the correlations the id belongs to, plus the events they caused (such as
// idempotent replays), in the order they were recorded, each answering the
// §45 questions.
type TraceResult struct {
	Query          string          `json:"query"`
	MatchedBy      string          `json:"matched_by"` // proposal_id | correlation_id | event_id | request_id | server_request_id
	CorrelationIDs []string        `json:"correlation_ids"`
	Proposals      []ProposalTrace `json:"proposals"`
	Steps          []Step          `json:"steps"`
	// ChainIntact says every event in the trace still matches its own hash
	// (run `audit verify` for the chains as a whole).
	ChainIntact bool `json:"events_match_their_hashes"`
}

// ProposalTrace summarises a proposal the trace is about.
type ProposalTrace struct {
	ID          string    `json:"id"`
	Tool        string    `json:"executing_tool"`
	Action      string    `json:"action"`
	Hash        string    `json:"proposal_hash"`
	Status      string    `json:"status_now"`
	Requirement string    `json:"approval_requirement"`
	TargetIDs   []string  `json:"target_ids"`
	CreatedAt   time.Time `json:"created_at"`
	ExpiresAt   time.Time `json:"expires_at"`
	// Flow is the proposal's life as recorded: proposed → approved → executed.
	CreatedByEvent  string `json:"created_by_event,omitempty"`
	ApprovedByEvent string `json:"approved_by_event,omitempty"`
	ExecutedByEvent string `json:"executed_by_event,omitempty"`
}

// Step answers the §45 questions for one recorded invocation or decision.
type Step struct {
	Seq           int64     `json:"seq"`
	EventID       string    `json:"plugin_event_id"`
	OccurredAt    time.Time `json:"occurred_at"`
	CorrelationID string    `json:"correlation_id"`
	CausationID   string    `json:"causation_id,omitempty"`
	TraceID       string    `json:"trace_id,omitempty"`
	SpanID        string    `json:"span_id,omitempty"`
	EventHash     string    `json:"event_hash"`
	HashValid     bool      `json:"event_matches_hash"`
	RequestID     string    `json:"request_id,omitempty"`
	ServerReqID   string    `json:"server_request_id,omitempty"`

	Action    string `json:"action"`
	Outcome   string `json:"outcome"`
	ErrorCode string `json:"error_code,omitempty"`
	AuditCode string `json:"audit_code,omitempty"`

	Client      ClientAnswer `json:"client"`
	Tool        ToolAnswer   `json:"tool"`
	Actor       ActorAnswer  `json:"actor"`
	TenantID    string       `json:"tenant_id"`
	Permissions []string     `json:"permissions_used"`
	Mode        string       `json:"mode"`
	// Change is what the invocation did: read, candidate, proposal,
	// canonical, approval, admin, or none (blocked, failed, replayed).
	Change         string          `json:"change"`
	DomainFunction string          `json:"domain_function,omitempty"`
	Approval       ApprovalAnswer  `json:"approval"`
	RecordsChanged domain.Related  `json:"records"`
	Replayed       bool            `json:"idempotent_replay"`
	ReplayOf       string          `json:"replay_of,omitempty"`
	CostUSD        float64         `json:"estimated_cost_usd"`
	LatencyMS      float64         `json:"latency_ms"`
	Public         bool            `json:"public_visibility_changed"`
	BuyerContact   bool            `json:"buyer_communication"`
	Impact         json.RawMessage `json:"impact"`
}

// ClientAnswer: which client, and can it be stopped now.
type ClientAnswer struct {
	ID             string `json:"id,omitempty"`
	Name           string `json:"name,omitempty"`
	Type           string `json:"type,omitempty"`
	StatusNow      string `json:"status_now,omitempty"`
	CanSuspend     bool   `json:"can_be_suspended"`
	CanRevoke      bool   `json:"can_be_revoked"`
	SuspendCommand string `json:"suspend_command,omitempty"`
}

// ToolAnswer: which tool and schema version.
type ToolAnswer struct {
	Name            string `json:"name,omitempty"`
	Version         string `json:"version,omitempty"`
	InputSchemaHash string `json:"input_schema_hash,omitempty"`
	Tier            string `json:"tier,omitempty"`
	Risk            string `json:"risk,omitempty"`
	Deprecated      bool   `json:"deprecated"`
}

// ActorAnswer: which authenticated actor.
type ActorAnswer struct {
	ID   string `json:"id,omitempty"`
	Type string `json:"type"`
	Role string `json:"role,omitempty"`
}

// ApprovalAnswer: was approval required, who or which policy issued it, was
// it bound to the exact proposal, and can it still be revoked.
type ApprovalAnswer struct {
	Required     bool                `json:"required"`
	Requirement  string              `json:"requirement,omitempty"`
	Decision     string              `json:"decision"`
	ProposalID   string              `json:"proposal_id,omitempty"`
	ApprovalID   string              `json:"approval_id,omitempty"`
	IssuedBy     *domain.GrantIssuer `json:"issued_by,omitempty"`
	ProposalHash string              `json:"proposal_hash,omitempty"`
	// BoundToExactProposal: the grant names this proposal and the hash the
	// proposal has, and the event recorded that same hash.
	BoundToExactProposal bool   `json:"bound_to_exact_proposal"`
	GrantStatusNow       string `json:"grant_status_now,omitempty"`
	PolicyStatusNow      string `json:"policy_status_now,omitempty"`
	Revocable            bool   `json:"can_be_revoked"`
}

// Trace reconstructs what happened for id: a proposal id, a correlation id,
// an event id, or a request id (the caller's request_id or the server's
// server_request_id).
func Trace(ctx context.Context, src TraceSource, id string) (TraceResult, error) {
	tr := TraceResult{Query: id, CorrelationIDs: []string{}, Proposals: []ProposalTrace{}, Steps: []Step{}, ChainIntact: true}
	var seeds []domain.ChainRecord
	switch {
	case domain.ValidID(domain.PrefixProposal, id):
		corr, err := src.ProposalCorrelation(ctx, id)
		if err != nil {
			if errors.Is(err, domain.ErrNotFound) {
				return tr, fmt.Errorf("%w: %s", ErrNoTrace, id)
			}
			return tr, err
		}
		tr.MatchedBy = "proposal_id"
		tr.CorrelationIDs = []string{corr}
	case domain.ValidID(domain.PrefixCorr, id):
		tr.MatchedBy = "correlation_id"
		tr.CorrelationIDs = []string{id}
	default:
		for _, m := range []struct {
			by string
			q  domain.EventQuery
		}{
			{"event_id", domain.EventQuery{ID: id}},
			{"server_request_id", domain.EventQuery{ServerRequestID: id}},
			{"request_id", domain.EventQuery{RequestID: id}},
		} {
			recs, err := src.AuditEvents(ctx, m.q)
			if err != nil {
				return tr, err
			}
			if len(recs) > 0 {
				tr.MatchedBy, seeds = m.by, recs
				break
			}
		}
		for _, r := range seeds {
			if r.CorrelationID != "" && !slices.Contains(tr.CorrelationIDs, r.CorrelationID) {
				tr.CorrelationIDs = append(tr.CorrelationIDs, r.CorrelationID)
			}
		}
	}
	// The events of those correlations, then whatever they caused, to a
	// fixed point (a replay is caused by the event it replays).
	byID := map[string]domain.ChainRecord{}
	add := func(recs []domain.ChainRecord) []string {
		var fresh []string
		for _, r := range recs {
			if _, ok := byID[r.ID]; !ok {
				byID[r.ID] = r
				fresh = append(fresh, r.ID)
			}
		}
		return fresh
	}
	add(seeds)
	frontier := []string{}
	for _, r := range seeds {
		frontier = append(frontier, r.ID)
	}
	for _, corr := range tr.CorrelationIDs {
		recs, err := src.AuditEvents(ctx, domain.EventQuery{CorrelationID: corr})
		if err != nil {
			return tr, err
		}
		frontier = append(frontier, add(recs)...)
	}
	for steps := 0; len(frontier) > 0 && steps < 16; steps++ {
		var next []string
		for _, id := range frontier {
			recs, err := src.AuditEvents(ctx, domain.EventQuery{CausationID: id})
			if err != nil {
				return tr, err
			}
			next = append(next, add(recs)...)
		}
		frontier = next
	}
	if len(byID) == 0 {
		return tr, fmt.Errorf("%w: %s", ErrNoTrace, id)
	}
	recs := make([]domain.ChainRecord, 0, len(byID))
	for _, r := range byID {
		recs = append(recs, r)
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].Seq < recs[j].Seq })

	a := answerer{ctx: ctx, src: src, clients: map[string]*domain.Client{}, grants: map[string]*domain.Grant{}, policies: map[string]*domain.Policy{}, proposals: map[string]*domain.Proposal{}}
	for _, r := range recs {
		st, ev, err := a.step(r)
		if err != nil {
			return tr, err
		}
		tr.ChainIntact = tr.ChainIntact && st.HashValid
		tr.Steps = append(tr.Steps, st)
		a.noteProposal(&tr, ev, st)
	}
	return tr, nil
}

type answerer struct {
	ctx       context.Context
	src       TraceSource
	clients   map[string]*domain.Client
	grants    map[string]*domain.Grant
	policies  map[string]*domain.Policy
	proposals map[string]*domain.Proposal
}

// step builds the §45 answers for one stored event.
func (a *answerer) step(r domain.ChainRecord) (Step, domain.Event, error) {
	var ev domain.Event
	if err := json.Unmarshal(r.Body, &ev); err != nil {
		return Step{}, ev, fmt.Errorf("event %s: unreadable body: %w", r.ID, err)
	}
	h, _ := domain.EventHash(r.Body, r.PrevHash)
	st := Step{
		Seq: r.Seq, EventID: ev.ID, OccurredAt: ev.OccurredAt, CorrelationID: ev.CorrelationID, TraceID: ev.TraceID, SpanID: ev.SpanID,
		EventHash: r.EventHash, HashValid: r.EventHash != "" && h == r.EventHash, RequestID: ev.RequestID, ServerReqID: ev.ServerRequestID,
		Action: ev.Action, Outcome: ev.Outcome, ErrorCode: ev.ErrorCode, AuditCode: ev.AuditCode,
		Tool:     ToolAnswer{Name: ev.Tool.Name, Version: ev.Tool.Version, InputSchemaHash: ev.Tool.InputSchemaHash, Tier: ev.Tool.Tier, Risk: ev.Tool.Risk, Deprecated: ev.Tool.Deprecated},
		Actor:    ActorAnswer{ID: ev.Actor.ID, Type: ev.Actor.Type, Role: ev.Actor.Role},
		TenantID: ev.TenantID, Permissions: ev.Permissions, Mode: string(ev.Mode),
		RecordsChanged: ev.Related.Normalized(), Replayed: ev.Outcome == domain.OutcomeReplayed,
		CostUSD: ev.Metrics.EstimatedCostUSD, LatencyMS: ev.Metrics.LatencyMS,
	}
	if st.Permissions == nil {
		st.Permissions = []string{}
	}
	if ev.CausationID != nil {
		st.CausationID = *ev.CausationID
	}
	st.Impact, _ = json.Marshal(ev.Impact)
	if ev.Domain != nil {
		st.DomainFunction = ev.Domain.Service + "." + ev.Domain.Operation
	}
	if st.Replayed && len(ev.Related.EventIDs) > 0 {
		st.ReplayOf = ev.Related.EventIDs[len(ev.Related.EventIDs)-1]
	}
	st.Change = change(ev)
	ok := ev.Outcome == domain.OutcomeSuccess
	st.Public = ok && ev.Impact.PublicStateChanged
	st.BuyerContact = ok && ev.Impact.Type == "notification"
	if !ok {
		// A blocked or failed call changed nothing; a replay wrote nothing
		// again (its records are the original's, kept for the answer).
		if !st.Replayed {
			st.RecordsChanged = domain.Related{}.Normalized()
		}
	}
	if err := a.client(&st, ev); err != nil {
		return st, ev, err
	}
	if err := a.approval(&st, ev); err != nil {
		return st, ev, err
	}
	return st, ev, nil
}

// change classifies what an event did, from its tool tier and outcome.
func change(ev domain.Event) string {
	if ev.Action != "mcp_tool_called" {
		if strings.HasPrefix(ev.Action, "approval_") {
			return "approval"
		}
		return "admin"
	}
	if ev.Outcome != domain.OutcomeSuccess {
		return "none"
	}
	switch ev.Tool.Tier {
	case "public_read", "tenant_read":
		return "read"
	case "candidate_write":
		return "candidate"
	case "action_proposal":
		return "proposal"
	case "controlled_action":
		if ev.Impact.CanonicalStateChanged {
			return "canonical"
		}
		return "controlled" // an approved action that changes no canonical record (a simulated notification)
	}
	if ev.Impact.CanonicalStateChanged {
		return "canonical"
	}
	return ev.Impact.Type
}

func (a *answerer) client(st *Step, ev domain.Event) error {
	st.Client = ClientAnswer{ID: ev.Client.ID, Name: ev.Client.Name, Type: ev.Client.Type}
	if ev.Client.ID == "" {
		return nil
	}
	c, ok := a.clients[ev.Client.ID]
	if !ok {
		got, err := a.src.GetClient(a.ctx, ev.Client.ID)
		switch {
		case err == nil:
			c = &got
		case !errors.Is(err, domain.ErrNotFound):
			return err
		}
		a.clients[ev.Client.ID] = c
	}
	if c == nil {
		st.Client.StatusNow = "unknown"
		return nil
	}
	st.Client.StatusNow = c.Status
	st.Client.CanSuspend = c.Status == domain.ClientActive || c.Status == domain.ClientPending
	st.Client.CanRevoke = c.Status != domain.ClientRevoked
	if st.Client.CanSuspend {
		st.Client.SuspendCommand = "trovesnap client suspend " + c.ID
	}
	if st.Client.Name == "" {
		st.Client.Name, st.Client.Type = c.Name, c.ClientType
	}
	return nil
}

func (a *answerer) approval(st *Step, ev domain.Event) error {
	ap := ApprovalAnswer{Requirement: ev.Approval.Requirement, Decision: ev.Approval.Decision, IssuedBy: ev.Approval.IssuedBy, ProposalHash: ev.Approval.ProposalHash}
	ap.Required = ap.Requirement != "" && ap.Requirement != "none"
	if ev.Approval.ProposalID != nil {
		ap.ProposalID = *ev.Approval.ProposalID
	}
	if ev.Approval.ApprovalID != nil {
		ap.ApprovalID = *ev.Approval.ApprovalID
	}
	st.Approval = ap
	if ap.ApprovalID == "" {
		return nil
	}
	g, ok := a.grants[ap.ApprovalID]
	if !ok {
		got, err := a.src.GetGrant(a.ctx, ap.ApprovalID)
		switch {
		case err == nil:
			g = &got
		case !errors.Is(err, domain.ErrNotFound):
			return err
		}
		a.grants[ap.ApprovalID] = g
	}
	if g == nil {
		return nil
	}
	if st.Approval.IssuedBy == nil {
		iss := g.IssuedBy
		st.Approval.IssuedBy = &iss
	}
	st.Approval.GrantStatusNow = g.Status
	prop, err := a.proposal(ev.TenantID, g.ProposalID)
	if err != nil {
		return err
	}
	st.Approval.BoundToExactProposal = prop != nil && g.ProposalID == ap.ProposalID && g.ProposalHash == prop.Hash &&
		(ap.ProposalHash == "" || ap.ProposalHash == g.ProposalHash)
	switch g.IssuedBy.Type {
	case domain.IssuerPolicy:
		pol, ok := a.policies[g.IssuedBy.PolicyID]
		if !ok {
			got, err := a.src.GetPolicy(a.ctx, g.IssuedBy.PolicyID)
			switch {
			case err == nil:
				pol = &got
			case !errors.Is(err, domain.ErrNotFound):
				return err
			}
			a.policies[g.IssuedBy.PolicyID] = pol
		}
		if pol != nil {
			st.Approval.PolicyStatusNow = pol.Status
			st.Approval.Revocable = pol.Status != domain.PolicyRevoked
		}
	default:
		st.Approval.Revocable = g.Status == domain.GrantActive
	}
	return nil
}

func (a *answerer) proposal(tenantID, id string) (*domain.Proposal, error) {
	if p, ok := a.proposals[id]; ok {
		return p, nil
	}
	var out *domain.Proposal
	p, err := a.src.GetProposalAdmin(a.ctx, tenantID, id)
	switch {
	case err == nil:
		out = &p
	case !errors.Is(err, domain.ErrNotFound):
		return nil, err
	}
	a.proposals[id] = out
	return out, nil
}

// noteProposal records the proposals the trace touches and which events
// created, approved and executed them.
func (a *answerer) noteProposal(tr *TraceResult, ev domain.Event, st Step) {
	pid := st.Approval.ProposalID
	if pid == "" && st.Change == "proposal" && len(ev.Related.ProposalIDs) == 1 {
		pid = ev.Related.ProposalIDs[0]
	}
	if pid == "" {
		return
	}
	i := slices.IndexFunc(tr.Proposals, func(p ProposalTrace) bool { return p.ID == pid })
	if i < 0 {
		pt := ProposalTrace{ID: pid, TargetIDs: []string{}}
		if p, _ := a.proposal(ev.TenantID, pid); p != nil {
			pt = ProposalTrace{ID: p.ID, Tool: p.Tool.Name, Action: p.Action, Hash: p.Hash, Status: p.Status, Requirement: p.Requirement,
				TargetIDs: p.TargetIDs, CreatedAt: p.CreatedAt, ExpiresAt: p.ExpiresAt}
		}
		tr.Proposals = append(tr.Proposals, pt)
		i = len(tr.Proposals) - 1
	}
	p := &tr.Proposals[i]
	switch {
	case st.Change == "proposal" && p.CreatedByEvent == "":
		p.CreatedByEvent = st.EventID
	case ev.Action == "approval_granted":
		p.ApprovedByEvent = st.EventID
	case st.Change == "canonical" || st.Change == "controlled":
		p.ExecutedByEvent = st.EventID
		if st.Approval.Decision == "allowed_by_policy" && p.ApprovedByEvent == "" {
			p.ApprovedByEvent = st.EventID // the policy decision is recorded in the execution event itself
		}
	}
}
