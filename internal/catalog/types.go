package catalog

import (
	"context"
	"encoding/json"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// Tier is the authority class of a tool (spec §10); it doubles as the tool
// group a client may be allowed.
type Tier string

// Tiers, named as the spec's tool groups.
const (
	TierPublicRead       Tier = "public_read"
	TierTenantRead       Tier = "tenant_read"
	TierCandidateWrite   Tier = "candidate_write"
	TierActionProposal   Tier = "action_proposal"
	TierControlledAction Tier = "controlled_action"
)

// LimitClass is the §38 limit class a call of a tool of this tier counts
// in. The gate counts by it; in live mode the RPCs count by the same map
// (internal/live rpcRateClass, held to it by a test).
func (t Tier) LimitClass() string {
	switch t {
	case TierCandidateWrite:
		return domain.LimitCandidateWrites
	case TierActionProposal:
		return domain.LimitProposals
	case TierControlledAction:
		return domain.LimitControlledActions
	default:
		return domain.LimitReads
	}
}

// Risk is the §10 tool_risk enum.
type Risk string

// Risks.
const (
	RiskPublicRead      Risk = "public_read"
	RiskTenantRead      Risk = "tenant_read"
	RiskLowWrite        Risk = "low_write"
	RiskControlledWrite Risk = "controlled_write"
	RiskHighImpact      Risk = "high_impact"
	RiskProhibited      Risk = "prohibited"
)

// Status is the §10 tool_status enum.
type Status string

// Statuses.
const (
	StatusExperimental Status = "experimental"
	StatusActive       Status = "active"
	StatusDeprecated   Status = "deprecated"
	StatusSuspended    Status = "suspended"
	StatusRetired      Status = "retired"
)

// Approval is a tool's approval requirement.
type Approval string

// Approval requirements: none (not a controlled action), or one of the
// registry's (domain.Requirement), which controlled tools take from it.
const (
	ApprovalNone          Approval = "none"
	ApprovalExplicitHuman          = Approval(domain.RequireExplicitHuman)
	ApprovalHumanOrPolicy          = Approval(domain.RequireHumanOrPolicy)
)

// DomainMapping names the P5/P6 domain function a tool reaches.
type DomainMapping struct {
	Service   string `json:"service"`
	Operation string `json:"operation"`
}

// Definition is the §9 tool_definition minus schemas and handler.
type Definition struct {
	Name        string        `json:"name"`
	Version     string        `json:"version"`
	Title       string        `json:"title"`
	Description string        `json:"description"`
	Tier        Tier          `json:"tier"`
	Risk        Risk          `json:"risk"`
	Permissions []string      `json:"required_permissions"`
	Modes       []domain.Mode `json:"allowed_modes"`
	Idempotent  bool          `json:"idempotent"`
	Persists    bool          `json:"persists"` // a persisted write: requires idempotency_key
	Approval    Approval      `json:"approval_requirement"`
	Domain      DomainMapping `json:"domain_mapping"`
	Status      Status        `json:"status"`
	// DeprecatedMajors are older major versions still answered, with a
	// warning, during their compatibility window (§25).
	DeprecatedMajors []int  `json:"deprecated_majors,omitempty"`
	CompatFor        string `json:"compat_for,omitempty"` // a compatibility name of another tool (§12.1)
	// MaxArgumentBytes raises the whole-arguments limit for a tool that takes
	// a file body (CSV text, a base64 image); 0 means MaxArgumentBytes.
	MaxArgumentBytes int `json:"max_argument_bytes,omitempty"`
	// Impact is what a successful call does (spec §36); the gate records it
	// in the call's plugin_event, including events committed with a write.
	Impact domain.EventImpact `json:"impact"`
	// AnyPermissions, when set, additionally requires at least one of its
	// permissions: a read that serves several roles through different
	// projections (item.read for staff, item.read_checkout for checkout).
	AnyPermissions []string `json:"any_of_permissions,omitempty"`
}

// Env is what a handler may use: the Backend, the resolved principal and, for
// persisted writes, the write metadata the gate prepared.
type Env struct {
	Backend   domain.Backend
	Principal domain.Principal
	Write     domain.WriteMeta
	Mode      domain.Mode
	// Progress reports rows done of a long call (a no-op when the caller
	// asked for no progress). Never nil.
	Progress func(done, total int, message string)
	// Seal hashes a proposal (set by the gate from the approval package).
	Seal domain.ProposalSealer
	// Authorization is what the gate's approval step decided for a
	// controlled action; the Backend re-checks and consumes it.
	Authorization domain.Authorization
}

// Effects is what a handler reports besides its data.
type Effects struct {
	Related  domain.Related
	Outcome  domain.WriteOutcome // Replayed and the event it replays, for persisted writes
	Warnings []Warning
}

// Warning is a non-fatal note for the caller.
type Warning struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Tool is a catalog entry: its definition, schemas and handler.
type Tool struct {
	Definition
	// InputSchemaJSON is the input schema encoded, as tools/list sends it:
	// generated at build time (inputschemas_gen.go), never encoded by a
	// running server.
	InputSchemaJSON json.RawMessage

	// lazy holds what a server does not need to start: the schemas
	// (reflection) and their hashes (canonical JSON and SHA-256), built on
	// first use. They were ~3/4 of `mcp serve`'s start-up CPU.
	lazy *lazySchemas

	decode func(raw json.RawMessage) (any, error)
	handle func(ctx context.Context, env Env, in any) (any, Effects, error)
}

type lazySchemas struct {
	input      func() *jsonschema.Schema
	inputHash  func() string
	output     func() *jsonschema.Schema
	outputHash func() string
}

// InputSchema is the schema that validates the tool's arguments (strict:
// no unknown property at any level).
func (t *Tool) InputSchema() *jsonschema.Schema { return t.lazy.input() }

// InputSchemaHash is "sha256:" + hex of the canonical JSON of the input
// schema, recorded in every call's event.
func (t *Tool) InputSchemaHash() string { return t.lazy.inputHash() }

// OutputSchema is the schema of the tool's data.
func (t *Tool) OutputSchema() *jsonschema.Schema { return t.lazy.output() }

// OutputSchemaHash is the hash of OutputSchema, as InputSchemaHash.
func (t *Tool) OutputSchemaHash() string { return t.lazy.outputHash() }

// HasHandler reports whether the tool's capability exists yet.
func (t *Tool) HasHandler() bool { return t.handle != nil }

// Decode validates raw arguments against the tool's strict schema and decodes
// them into the tool's input type. Errors are *domain.InputError.
func (t *Tool) Decode(raw json.RawMessage) (any, error) { return t.decode(raw) }

// Handle runs the tool's handler on decoded input.
func (t *Tool) Handle(ctx context.Context, env Env, in any) (any, Effects, error) {
	return t.handle(ctx, env, in)
}

// Major returns the major version number of the tool.
func (t *Tool) Major() int { return majorOf(t.Version) }
