package domain

import (
	"context"
	"errors"
	"math"
	"time"
)

// Approval errors (§23). The Backend returns them from the execution
// transaction, where grant state is re-checked under the write lock.
var (
	ErrApprovalRequired  = errors.New("approval required")
	ErrApprovalInvalid   = errors.New("approval does not match the proposal")
	ErrApprovalExpired   = errors.New("approval or proposal expired")
	ErrApprovalRevoked   = errors.New("approval revoked")
	ErrApprovalConsumed  = errors.New("approval already consumed")
	ErrProposalChanged   = errors.New("proposal does not match its hash")
	ErrCandidateRequired = errors.New("a reviewed candidate is required")
	// ErrCostLimit: the cost would take the client's or the tenant's daily
	// paid budget (§38 maximum_daily_paid_cost_usd) past its limit.
	ErrCostLimit = errors.New("daily cost budget exceeded")
)

// Proposal statuses.
const (
	ProposalPending  = "pending_approval"
	ProposalApproved = "approved"
	ProposalDenied   = "rejected"
	ProposalExpired  = "expired"
	ProposalExecuted = "executed"
)

// ExecutingTool names the controlled action that executes a proposal.
type ExecutingTool struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Requester is who asked for a proposal: a client acting for an actor.
type Requester struct {
	ClientID string `json:"client_id"`
	ActorID  string `json:"actor_id"`
}

// TargetVersion is a target and the version the proposal is bound to.
type TargetVersion struct {
	ID      string `json:"id"`
	Version int    `json:"version"`
}

// FieldChange is one exact change a proposal would make (before → after).
type FieldChange struct {
	TargetID string `json:"target_id"`
	Field    string `json:"field"`
	From     any    `json:"from"`
	To       any    `json:"to"`
}

// ProposalImpact is the estimated effect of executing a proposal.
type ProposalImpact struct {
	CanonicalItemsCreated int     `json:"canonical_items_created"`
	ItemsChanged          int     `json:"items_changed"`
	PublicRecordsChanged  int     `json:"public_records_changed"`
	NotificationsSent     int     `json:"notifications_sent"`
	ExternalDeliveries    int     `json:"external_deliveries"`
	EstimatedCostUSD      float64 `json:"estimated_cost_usd"`
}

// ProposalValidation is the domain's verdict on a proposal when it was made.
type ProposalValidation struct {
	Status   string   `json:"status" jsonschema:"valid, valid_with_warnings or invalid"`
	Warnings []string `json:"warnings"`
	Errors   []string `json:"errors"`
}

// NotificationPlan is the reviewable plan of a buyer notification. It never
// names a buyer: the notification service resolves recipients.
type NotificationPlan struct {
	AudienceSize     int      `json:"audience_size"`
	SelectionBasis   string   `json:"selection_basis"`
	Channels         []string `json:"channels"`
	MessagePreview   string   `json:"message_preview"`
	SuppressedCount  int      `json:"suppressed_count" jsonschema:"buyers excluded by opt-out, frequency caps or privacy checks"`
	RateLimitPerHour int      `json:"rate_limit_per_hour"`
}

// Proposal is an immutable action proposal (§15). Everything but Status is
// content: bound by Hash and never updated (a store trigger enforces it).
type Proposal struct {
	ID               string             `json:"id"`
	TenantID         string             `json:"tenant_id"`
	Tool             ExecutingTool      `json:"tool"`
	RequestedBy      Requester          `json:"requested_by"`
	Action           string             `json:"action"`
	TargetKind       string             `json:"target_kind"` // candidate | item | sale | export
	TargetIDs        []string           `json:"target_ids"`
	ExpectedVersions []TargetVersion    `json:"expected_versions"`
	Changes          []FieldChange      `json:"changes"`
	Impact           ProposalImpact     `json:"impact"`
	Validation       ProposalValidation `json:"validation"`
	Requirement      string             `json:"approval_requirement"` // explicit_human | human_or_policy
	Notification     *NotificationPlan  `json:"notification,omitempty"`
	SaleIDs          []string           `json:"sale_ids"` // sales the targets belong to (policy scope)
	Hash             string             `json:"proposal_hash"`
	CreatedAt        time.Time          `json:"created_at"`
	ExpiresAt        time.Time          `json:"expires_at"`
	Status           string             `json:"status"`
	// CorrelationID joins the proposal's, its approval's and its
	// execution's events; it is not content (not hashed).
	CorrelationID string `json:"correlation_id"`
}

// ProposalDraft is what a proposal tool asks for; the Backend validates it
// against current state and builds the Proposal.
type ProposalDraft struct {
	Action            string
	Tool              ExecutingTool
	Requirement       string
	TargetIDs         []string
	ExpectedVersions  []TargetVersion
	Fields            map[string]any // action-specific exact values (title, to_status, qr_code, changes …)
	StatusCandidateID string
	TTL               time.Duration
}

// ProposalSealer computes a proposal's hash. The approval package provides
// it, so the canonical form lives in one place whichever Backend stores it.
type ProposalSealer func(Proposal) (string, error)

// Grant issuers.
const (
	IssuerHuman  = "human"
	IssuerPolicy = "policy"
)

// Grant statuses.
const (
	GrantActive   = "active"
	GrantConsumed = "consumed"
	GrantRevoked  = "revoked"
	GrantExpired  = "expired"
)

// GrantIssuer says who authorised: a human on a surface, or a policy version.
type GrantIssuer struct {
	Type          string `json:"type"`
	ActorID       string `json:"actor_id,omitempty"`
	Surface       string `json:"surface,omitempty"`
	PolicyID      string `json:"policy_id,omitempty"`
	PolicyVersion int    `json:"policy_version,omitempty"`
}

// GrantConstraints bound what a grant may authorise.
type GrantConstraints struct {
	MaxItems           int     `json:"maximum_items"`
	MaxCostUSD         float64 `json:"maximum_cost_usd"`
	AllowPublication   bool    `json:"allow_publication"`
	AllowNotifications bool    `json:"allow_notifications"`
}

// Grant is an approval grant (§17): bound to one proposal and its hash, a
// tool and targets; single-use by default; expiring; revocable.
type Grant struct {
	ID           string           `json:"id"`
	TenantID     string           `json:"tenant_id"`
	ProposalID   string           `json:"proposal_id"`
	ProposalHash string           `json:"proposal_hash"`
	IssuedBy     GrantIssuer      `json:"issued_by"`
	Tool         string           `json:"tool"`
	TargetIDs    []string         `json:"target_ids"`
	Constraints  GrantConstraints `json:"constraints"`
	// BoundTo is the client and actor whose proposal the grant approves
	// (§17.1 actor-bound): only that client, acting for that actor, can
	// consume it. It is always the proposal's RequestedBy.
	BoundTo    Requester  `json:"bound_to"`
	Status     string     `json:"status"`
	SingleUse  bool       `json:"single_use"`
	IssuedAt   time.Time  `json:"issued_at"`
	ExpiresAt  time.Time  `json:"expires_at"`
	ConsumedAt *time.Time `json:"consumed_at"`
	RevokedAt  *time.Time `json:"revoked_at"`
}

// Policy statuses. New policies are disabled.
const (
	PolicyDisabled = "disabled"
	PolicyActive   = "active"
	PolicyRevoked  = "revoked"
)

// BroadBulkLimit is the largest target set a policy may authorise at once,
// and so the most items per run a policy may allow; anything broader is a
// broad bulk change and stays human-only (§18.2).
const BroadBulkLimit = 20

// MaxPolicyNameLen bounds the name of an automation policy, in characters.
const MaxPolicyNameLen = 100

// PolicyScope narrows a policy to sales.
type PolicyScope struct {
	EstateSaleIDs []string `json:"estate_sale_ids"`
}

// PolicyConditions bound each authorised run.
type PolicyConditions struct {
	MaxItemsPerRun     int      `json:"maximum_items_per_run"`
	PermittedFields    []string `json:"permitted_fields"`
	RequireNoConflicts bool     `json:"require_no_conflicts"`
	// CheckoutScans are the checkout scans a policy naming
	// trove_record_checkout_scan authorises (only "hold" may be listed:
	// CheckoutPolicyRefusal); empty for any other policy.
	CheckoutScans []string `json:"checkout_scans,omitempty"`
}

// PolicyLimits bound a policy per day.
type PolicyLimits struct {
	MaxDailyActions  int     `json:"maximum_daily_actions"`
	MaxCostUSDPerDay float64 `json:"maximum_cost_usd_per_day"`
}

// Policy is a tenant automation policy (§18): created by a seller, disabled
// by default, versioned, narrowly scoped, revocable.
type Policy struct {
	ID           string           `json:"id"`
	TenantID     string           `json:"tenant_id"`
	Name         string           `json:"name"`
	Version      int              `json:"version"`
	Status       string           `json:"status"`
	AllowedTools []string         `json:"allowed_tools"`
	Scope        PolicyScope      `json:"scope"`
	Conditions   PolicyConditions `json:"conditions"`
	Limits       PolicyLimits     `json:"limits"`
	CreatedBy    string           `json:"created_by"`
	CreatedAt    time.Time        `json:"created_at"`
	UpdatedAt    time.Time        `json:"updated_at"`
}

// RequireRequester refuses an execution of prop by any principal but the
// client that proposed it, acting for the same actor. A grant approves what
// one agent asked for, so only that agent's execution may use it; a policy
// covers proposals, not other clients, so the same rule holds for a
// policy-authorised execution (the strict rule: no policy names other
// clients). Another client of the tenant, even one whose role holds the
// tool's permission, gets ErrApprovalInvalid.
func RequireRequester(p Principal, prop Proposal) error {
	if p.Client.ID == "" || p.Client.ID != prop.RequestedBy.ClientID || p.ActorID != prop.RequestedBy.ActorID {
		return Because(ErrApprovalInvalid, "proposal %s was requested by another client: only the client that proposed it can execute it",
			prop.ID)
	}
	return nil
}

// Cost budget scopes.
const (
	BudgetClient = "client"
	BudgetTenant = "tenant"
)

// CostBudget is one daily paid budget (§38 maximum_daily_paid_cost_usd, of
// a client or of its tenant) and what was spent against it today: the
// estimated cost of the executions that succeeded since the start of the
// UTC day.
type CostBudget struct {
	Scope    string
	LimitUSD float64
	SpentUSD float64
}

// usdMicros compares amounts in millionths of a dollar, so float sums of
// cents never refuse or admit by a rounding error.
func usdMicros(v float64) int64 { return int64(math.Round(v * 1e6)) }

// CheckCost refuses a cost that would take any budget past its limit
// (spent today + cost > limit). Free work is never refused.
func CheckCost(cost float64, budgets ...CostBudget) error {
	if usdMicros(cost) <= 0 {
		return nil
	}
	for _, b := range budgets {
		if usdMicros(b.SpentUSD)+usdMicros(cost) > usdMicros(b.LimitUSD) {
			return Because(ErrCostLimit, "$%.2f would exceed the %s's daily paid budget of $%.2f ($%.2f already spent today), only the seller can raise it",
				cost, b.Scope, b.LimitUSD, b.SpentUSD)
		}
	}
	return nil
}

// CheckGrantCost refuses a grant whose maximum cost exceeds any daily
// budget: a grant never authorises more than the seller's own limits allow.
func CheckGrantCost(maxCost float64, budgets ...CostBudget) error {
	for _, b := range budgets {
		if usdMicros(maxCost) > usdMicros(b.LimitUSD) {
			return Because(ErrCostLimit, "a grant of up to $%.2f exceeds the %s's daily paid budget of $%.2f: raise the budget with `trovesnap limits set --paid-usd-per-day` first, or deny the proposal",
				maxCost, b.Scope, b.LimitUSD)
		}
	}
	return nil
}

// DayStart is the start of now's UTC day: daily budgets and policy limits
// count from it.
func DayStart(now time.Time) time.Time { return now.UTC().Truncate(24 * time.Hour) }

// PolicyUsage is what a policy authorised today (for its daily limits).
type PolicyUsage struct {
	ActionsToday int
	CostToday    float64
}

// Authorization is the approval decision the gate reached, carried into the
// execution transaction, which re-checks it under the write lock (the grant
// is still active and unconsumed, or the policy still active at that version
// and under its daily limits) and consumes it with the domain write.
type Authorization struct {
	Decision      string // allowed | allowed_by_policy
	GrantID       string
	PolicyID      string
	PolicyVersion int
	ProposalHash  string
}

// TargetOutcome is what execution did to one target.
type TargetOutcome struct {
	TargetID   string `json:"target_id"`
	Outcome    string `json:"outcome" jsonschema:"applied; simulated (mock mode: nothing left this machine); queued (live: a notification or export handed to the delivery worker, not yet sent); conflict (stale version), rejected (invalid transition) or skipped"`
	NewVersion *int   `json:"new_version"`
}

// ExecutionApproval is the authority an execution used.
type ExecutionApproval struct {
	Decision   string  `json:"decision" jsonschema:"allowed (a human grant) or allowed_by_policy; on a block the envelope carries the error"`
	ApprovalID *string `json:"approval_id"`
	PolicyID   *string `json:"policy_id"`
}

// ExecutionResult is the result of a controlled action.
type ExecutionResult struct {
	ProposalID     string            `json:"proposal_id"`
	Executed       bool              `json:"executed"`
	Simulated      bool              `json:"simulated" jsonschema:"true in mock mode: the local simulation ran, nothing reached TroveSnap"`
	DomainFunction string            `json:"domain_function"`
	Results        []TargetOutcome   `json:"results"`
	Approval       ExecutionApproval `json:"approval"`
	CreatedItemIDs []string          `json:"created_item_ids,omitempty"`
}

// ApprovalBackend holds proposals, grants, automation policies and the
// controlled domain functions (§14–§18).
type ApprovalBackend interface {
	// CreateProposal validates a draft against current state and stores the
	// immutable proposal, sealed by seal, as a persisted write.
	CreateProposal(ctx context.Context, p Principal, w WriteMeta, d ProposalDraft, seal ProposalSealer) (Proposal, WriteOutcome, error)
	// GetProposal reads a proposal of the principal's tenant as stored.
	GetProposal(ctx context.Context, p Principal, id string) (Proposal, error)
	// ApprovalState returns what could authorise a proposal: its grants and
	// the tenant's active policies that name tool, with today's usage.
	ApprovalState(ctx context.Context, p Principal, proposalID, tool string) ([]Grant, []Policy, map[string]PolicyUsage, error)
	// ExecuteProposal runs the proposal's ONE domain function under auth:
	// grant consumption or policy use, target version checks, domain rules,
	// the domain write, the event and the idempotency row in one transaction.
	ExecuteProposal(ctx context.Context, p Principal, w WriteMeta, proposalID string, auth Authorization) (ExecutionResult, WriteOutcome, error)
}

// ApprovalAdmin is the human side of approval: the approval terminal and the
// CLI use it; no MCP tool can.
type ApprovalAdmin interface {
	ListProposals(ctx context.Context, tenantID, status string) ([]Proposal, error)
	// GetProposalAdmin reads any proposal of a tenant (no client principal).
	GetProposalAdmin(ctx context.Context, tenantID, id string) (Proposal, error)
	// IssueGrant records a human grant for a pending proposal whose current
	// hash is expectedHash; the actor must hold approval.grant.
	IssueGrant(ctx context.Context, g Grant) (Grant, error)
	DenyProposal(ctx context.Context, tenantID, proposalID, actorID, surface, reason string) error
	ListGrants(ctx context.Context, tenantID, status string) ([]Grant, error)
	RevokeGrant(ctx context.Context, tenantID, grantID, actorID string) (Grant, error)
	CreatePolicy(ctx context.Context, pol Policy) (Policy, error)
	ListPolicies(ctx context.Context, tenantID string) ([]Policy, error)
	GetPolicy(ctx context.Context, id string) (Policy, error)
	SetPolicyStatus(ctx context.Context, id, status, actorID string) (Policy, error)
	// MemberRole returns the role of a user in a tenant ("" if none).
	MemberRole(ctx context.Context, tenantID, userID string) (string, error)
	// CurrentVersions returns the current version of each target id.
	CurrentVersions(ctx context.Context, tenantID string, ids []string) (map[string]int, error)
}
