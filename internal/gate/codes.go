package gate

// Code is one of the §23 mcp_error codes.
type Code string

// The §23 taxonomy, exactly.
const (
	CodeAuthenticationRequired  Code = "authentication_required"
	CodeClientNotRegistered     Code = "client_not_registered"
	CodeClientSuspended         Code = "client_suspended"
	CodeTenantScopeRequired     Code = "tenant_scope_required"
	CodePermissionDenied        Code = "permission_denied"
	CodeSaleAssignmentRequired  Code = "sale_assignment_required"
	CodeToolNotAvailable        Code = "tool_not_available"
	CodeToolVersionUnsupported  Code = "tool_version_unsupported"
	CodeInvalidInput            Code = "invalid_input"
	CodeInvalidReference        Code = "invalid_reference"
	CodeCrossTenantReference    Code = "cross_tenant_reference"
	CodeCandidateRequired       Code = "candidate_required"
	CodeApprovalRequired        Code = "approval_required"
	CodeApprovalInvalid         Code = "approval_invalid"
	CodeApprovalExpired         Code = "approval_expired"
	CodeApprovalRevoked         Code = "approval_revoked"
	CodeApprovalAlreadyConsumed Code = "approval_already_consumed"
	CodeProposalChanged         Code = "proposal_changed"
	CodeStaleTargetVersion      Code = "stale_target_version"
	CodeIdempotencyConflict     Code = "idempotency_conflict"
	CodeRateLimited             Code = "rate_limited"
	CodeCostLimitExceeded       Code = "cost_limit_exceeded"
	CodeDomainTransitionInvalid Code = "domain_transition_invalid"
	CodeMockModeNoPersistence   Code = "mock_mode_no_persistence"
	CodeServiceUnavailable      Code = "service_unavailable"
)

type codeInfo struct {
	message   string // safe to show a model: no SQL, stack or provider text
	blocked   bool   // policy said no (status blocked) vs the call failed (status failed)
	retryable bool
}

// codes is the one table of every code's default message and class.
var codes = map[Code]codeInfo{
	CodeAuthenticationRequired:  {"This tool needs a registered client credential (TROVESNAP_CLIENT_TOKEN).", true, false},
	CodeClientNotRegistered:     {"The client credential is not registered or was revoked: register a client with `trovesnap client register`.", true, false},
	CodeClientSuspended:         {"This client is suspended by the seller; no tool can be called until it is reactivated.", true, false},
	CodeTenantScopeRequired:     {"This call needs a tenant scope that the client's actor belongs to.", true, false},
	CodePermissionDenied:        {"The acting user's role does not grant the permission this tool needs.", true, false},
	CodeSaleAssignmentRequired:  {"The acting user is not assigned to this sale.", true, false},
	CodeToolNotAvailable:        {"No such tool is available to this client.", true, false},
	CodeToolVersionUnsupported:  {"The requested tool version is not supported: omit the version or use a supported major.", false, false},
	CodeInvalidInput:            {"The arguments do not match the tool's input schema.", false, false},
	CodeInvalidReference:        {"A referenced record does not exist or is not visible to you.", false, false},
	CodeCrossTenantReference:    {"The tenant named in the request is not the tenant this client acts for.", true, false},
	CodeCandidateRequired:       {"This action needs a reviewed candidate, not a canonical record.", false, false},
	CodeApprovalRequired:        {"This action needs a proposal approved by the seller before it can run.", true, false},
	CodeApprovalInvalid:         {"The approval does not match this proposal, tool, tenant or targets.", true, false},
	CodeApprovalExpired:         {"The approval has expired: ask the seller to approve again.", true, false},
	CodeApprovalRevoked:         {"The approval was revoked by the seller.", true, false},
	CodeApprovalAlreadyConsumed: {"The approval was already used; approvals are single-use.", true, false},
	CodeProposalChanged:         {"The proposal no longer matches its approved hash: make a new proposal.", true, false},
	CodeStaleTargetVersion:      {"A target changed since it was proposed: read it again and make a new proposal.", false, false},
	CodeIdempotencyConflict:     {"This idempotency_key was already used with different input: use a new key for a new write.", false, false},
	CodeRateLimited:             {"Rate limit reached for this client: retry later.", true, true},
	CodeCostLimitExceeded:       {"This call would exceed the cost budget.", true, false},
	CodeDomainTransitionInvalid: {"The domain does not allow this change in the record's current state.", false, false},
	CodeMockModeNoPersistence:   {"Mock mode: the write went to the local simulation only; nothing reached TroveSnap.", false, false},
	CodeServiceUnavailable:      {"The service is temporarily unavailable: retry later.", false, true},
}

// Codes lists the taxonomy in a fixed order (for docs and tests).
func Codes() []Code {
	return []Code{
		CodeAuthenticationRequired, CodeClientNotRegistered, CodeClientSuspended, CodeTenantScopeRequired,
		CodePermissionDenied, CodeSaleAssignmentRequired, CodeToolNotAvailable, CodeToolVersionUnsupported,
		CodeInvalidInput, CodeInvalidReference, CodeCrossTenantReference, CodeCandidateRequired,
		CodeApprovalRequired, CodeApprovalInvalid, CodeApprovalExpired, CodeApprovalRevoked,
		CodeApprovalAlreadyConsumed, CodeProposalChanged, CodeStaleTargetVersion, CodeIdempotencyConflict,
		CodeRateLimited, CodeCostLimitExceeded, CodeDomainTransitionInvalid, CodeMockModeNoPersistence,
		CodeServiceUnavailable,
	}
}

// Message returns the default model-safe message of a code.
func (c Code) Message() string { return codes[c].message }
