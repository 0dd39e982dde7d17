package domain

import "time"

// Event outcomes.
const (
	OutcomeSuccess  = "success"
	OutcomeReplayed = "replayed"
	OutcomeBlocked  = "blocked"
	OutcomeFailed   = "failed"
)

// Outcomes lists every event outcome.
func Outcomes() []string {
	return []string{OutcomeSuccess, OutcomeReplayed, OutcomeBlocked, OutcomeFailed}
}

// Related lists the records a call touched or referenced. Every list is
// always present (never null) in envelopes and events.
type Related struct {
	SourceImportRunIDs    []string `json:"source_import_run_ids"`
	SourceImportRecordIDs []string `json:"source_import_record_ids"`
	CandidateIDs          []string `json:"candidate_ids"`
	ItemIDs               []string `json:"item_ids"`
	ProposalIDs           []string `json:"proposal_ids"`
	EventIDs              []string `json:"event_ids"`
}

// Normalized returns r with nil lists replaced by empty ones.
func (r Related) Normalized() Related {
	for _, p := range []*[]string{&r.SourceImportRunIDs, &r.SourceImportRecordIDs, &r.CandidateIDs, &r.ItemIDs, &r.ProposalIDs, &r.EventIDs} {
		if *p == nil {
			*p = []string{}
		}
	}
	return r
}

// PluginRef identifies the emitter of an event.
type PluginRef struct {
	Type    string `json:"type"`
	ID      string `json:"id"`
	Version string `json:"version"`
}

// ToolRef names a tool and the version a call ran.
type ToolRef struct {
	Name            string `json:"name"`
	Version         string `json:"version"`
	InputSchemaHash string `json:"input_schema_hash,omitempty"`
	// Deprecated marks use of a deprecated tool or version (counted, §25).
	Deprecated bool `json:"deprecated,omitempty"`
	// Tier and Risk are the tool's authority class and risk (§10), so the
	// audit can say whether a call was a read, a candidate write, a
	// proposal or a canonical change without the catalog of the day.
	Tier string `json:"tier,omitempty"`
	Risk string `json:"risk,omitempty"`
}

// ActorRef names the actor of a call.
type ActorRef struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	// Role is the actor's role in the tenant when the call ran (§45 "which
	// permission allowed access" is answered by Role and Event.Permissions).
	Role string `json:"role,omitempty"`
}

// EventPayload holds what an event may say about a call's input: its hash and
// an allow-listed summary of ids. Never the raw input.
type EventPayload struct {
	InputHash       string            `json:"input_hash"`
	RedactedSummary map[string]string `json:"redacted_summary"`
}

// EventApproval records the approval state of a call.
type EventApproval struct {
	ProposalID *string `json:"proposal_id"`
	ApprovalID *string `json:"approval_id"`
	Decision   string  `json:"decision"`
	// Requirement is the tool's approval requirement (none, explicit_human,
	// human_or_policy): whether approval was required at all.
	Requirement string `json:"requirement,omitempty"`
	// ProposalHash is the hash of the proposal the authority was bound to,
	// recorded so the event alone shows the grant covered exactly it.
	ProposalHash string `json:"proposal_hash,omitempty"`
	// IssuedBy is who or which policy issued the authority used or decided.
	IssuedBy *GrantIssuer `json:"issued_by,omitempty"`
}

// EventMetrics are measured, not domain, values.
type EventMetrics struct {
	LatencyMS        float64 `json:"latency_ms"`
	EstimatedCostUSD float64 `json:"estimated_cost_usd"`
}

// EventDomain names the P5/P6 domain function a call reached (§16).
type EventDomain struct {
	Service   string `json:"service"`
	Operation string `json:"operation"`
}

// EventImpact says what a call changed (spec §36).
type EventImpact struct {
	Type                  string `json:"type"`
	Material              bool   `json:"material"`
	CanonicalStateChanged bool   `json:"canonical_state_changed"`
	PublicStateChanged    bool   `json:"public_state_changed"`
}

// Event is a plugin_event: the append-only record of one invocation.
type Event struct {
	ID              string        `json:"id"`
	TenantID        string        `json:"tenant_id"`
	CorrelationID   string        `json:"correlation_id"`
	CausationID     *string       `json:"causation_id"`
	RequestID       string        `json:"request_id"`
	ServerRequestID string        `json:"server_request_id"`
	Mode            Mode          `json:"mode"`
	Plugin          PluginRef     `json:"plugin"`
	Client          ClientRef     `json:"client"`
	Tool            ToolRef       `json:"tool"`
	Actor           ActorRef      `json:"actor"`
	Action          string        `json:"action"`
	Outcome         string        `json:"outcome"`
	ErrorCode       string        `json:"error_code,omitempty"`
	AuditCode       string        `json:"audit_code,omitempty"` // e.g. cross_tenant_reference behind an invalid_reference answer
	Related         Related       `json:"related"`
	Payload         EventPayload  `json:"payload"`
	Approval        EventApproval `json:"approval"`
	Metrics         EventMetrics  `json:"metrics"`
	Impact          EventImpact   `json:"impact"`
	OccurredAt      time.Time     `json:"occurred_at"`
	// Permissions are the permissions that allowed the call: the tool's
	// required permissions, all held by the actor's role.
	Permissions []string `json:"permissions,omitempty"`
	// Domain is the domain function the tool maps to.
	Domain *EventDomain `json:"domain,omitempty"`
	// TraceID and SpanID join the event to its OpenTelemetry trace (the
	// caller's, when it sent a traceparent); empty when nothing traced.
	TraceID string `json:"trace_id,omitempty"`
	SpanID  string `json:"span_id,omitempty"`
}
