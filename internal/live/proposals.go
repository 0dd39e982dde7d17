package live

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// Proposals, approval state and controlled actions (§14–§18) in live mode.
// The rules that build a proposal are domain's, shared with the embedded
// store; the database supplies the state they read (mcp_proposal_state) and
// re-verifies it under the lock that stores the result (mcp_create_proposal).
// Execution — authority, versions, the domain function, the event and the
// idempotency row — is ONE RPC, ONE transaction (mcp_execute_proposal).

// liveActions are the proposal actions whose domain function the live
// database runs (migrations 6 and 10): every action. An action outside it
// would stay mock-only, and the catalog would not offer its tools in live
// mode.
var liveActions = map[string]bool{
	domain.ActionPromoteCandidate: true,
	domain.ActionPublishItem:      true,
	domain.ActionPublishSale:      true,
	domain.ActionStatusTransition: true,
	domain.ActionArchiveItem:      true,
	domain.ActionBulkItemUpdate:   true,
	domain.ActionBindIdentity:     true,
	domain.ActionReleaseIdentity:  true,
	domain.ActionDisposition:      true,
	domain.ActionBuyerNotify:      true,
	domain.ActionExportDelivery:   true,
}

// liveActionTools are the controlled actions that execute liveActions.
var liveActionTools = map[string]bool{
	"trove_execute_candidate_promotion": true,
	"trove_publish_item":                true,
	"trove_publish_sale":                true,
	"trove_update_item_status":          true,
	"trove_archive_item":                true,
	"trove_apply_bulk_item_update":      true,
	"trove_bind_item_identity":          true,
	"trove_release_item_identity":       true,
	"trove_apply_disposition_action":    true,
	"trove_notify_matched_buyers":       true,
	"trove_deliver_export":              true,
}

// proposalState is mcp_proposal_state's answer: a replay of the key, or the
// state the draft's targets are in.
type proposalState struct {
	Replayed       bool              `json:"replayed"`
	Result         *domain.Proposal  `json:"result"`
	Related        domain.Related    `json:"related"`
	EventID        string            `json:"event_id"`
	Now            time.Time         `json:"now"`
	MaxBulkTargets int               `json:"max_bulk_targets"`
	Candidate      *domain.Candidate `json:"candidate"`
	Items          []domain.Item     `json:"items"`
	SaleStatuses   map[string]string `json:"sale_statuses"`
	Sale           *domain.Sale      `json:"sale"`
	// The facts the builders of migration 10's actions read (actions.go).
	StatusCandidate *statusCandidateFacts `json:"status_candidate"`
	Tag             *tagFacts             `json:"tag"`
	Demand          *saleDemand           `json:"demand"`
	Export          *exportFacts          `json:"export"`
}

// writeAnswer is the answer of a persisted write RPC.
type writeAnswer[T any] struct {
	Replayed bool           `json:"replayed"`
	Result   T              `json:"result"`
	Related  domain.Related `json:"related"`
	EventID  string         `json:"event_id"`
}

func (a writeAnswer[T]) outcome() domain.WriteOutcome {
	return domain.WriteOutcome{Replayed: a.Replayed, OriginalEventID: a.EventID, Related: a.Related.Normalized()}
}

// writeArgs are the arguments every persisted write RPC takes.
func writeArgs(h string, w domain.WriteMeta) map[string]any {
	args := map[string]any{
		"p_credential_hash": h,
		"p_tool":            w.Idem.Tool,
		"p_tool_major":      w.Idem.ToolMajor,
		"p_key":             w.Idem.Key,
		"p_fingerprint":     w.Idem.Fingerprint,
		"p_event":           normalizeEvent(w.Event),
		"p_started_at":      nil,
	}
	if !w.Started.IsZero() {
		args["p_started_at"] = w.Started.UTC().Format(time.RFC3339Nano)
	}
	return args
}

// CreateProposal validates a draft against the current state and stores the
// immutable proposal, sealed by seal, as a persisted write. The draft's own
// checks run first; a used key replays its proposal (or conflicts) before
// anything is built; the state comes from the database, the proposal from
// domain's builder, and mcp_create_proposal stores it with its idempotency
// row and event in one transaction, refusing it (stale_version …) if what
// it was built from moved meanwhile.
func (b *Backend) CreateProposal(ctx context.Context, p domain.Principal, w domain.WriteMeta, d domain.ProposalDraft, seal domain.ProposalSealer) (domain.Proposal, domain.WriteOutcome, error) {
	if seal == nil {
		return domain.Proposal{}, domain.WriteOutcome{}, fmt.Errorf("live: proposal without a sealer: %w", domain.ErrInvalidInput)
	}
	h, err := b.hashOf(p)
	if err != nil {
		return domain.Proposal{}, domain.WriteOutcome{}, err
	}
	if err := checkWriteMeta(p, w); err != nil {
		return domain.Proposal{}, domain.WriteOutcome{}, err
	}
	// The draft's own shape (targets, versions, duplicates) needs no state.
	if _, err := domain.StartProposal(p, d, time.Time{}, math.MaxInt); err != nil {
		return domain.Proposal{}, domain.WriteOutcome{}, err
	}
	if !liveActions[d.Action] {
		if domain.DomainFunction(d.Action) != "" {
			return domain.Proposal{}, domain.WriteOutcome{}, notYet("CreateProposal " + d.Action)
		}
		return domain.Proposal{}, domain.WriteOutcome{}, fmt.Errorf("live: action %q: %w", d.Action, domain.ErrInvalidInput)
	}
	args := map[string]any{
		"p_credential_hash": h, "p_tool": w.Idem.Tool, "p_tool_major": w.Idem.ToolMajor, "p_key": w.Idem.Key,
		"p_fingerprint": w.Idem.Fingerprint, "p_action": d.Action, "p_target_ids": nonNil(d.TargetIDs),
		"p_fields": stateFields(d),
	}
	var st proposalState
	if err := b.call(ctx, "mcp_proposal_state", args, &st); err != nil {
		return domain.Proposal{}, domain.WriteOutcome{}, err
	}
	if st.Replayed {
		if st.Result == nil || st.Result.ID == "" {
			return domain.Proposal{}, domain.WriteOutcome{}, b.unavailable("mcp_proposal_state", fmt.Errorf("replay without a proposal"))
		}
		return *st.Result, domain.WriteOutcome{Replayed: true, OriginalEventID: st.EventID, Related: st.Related.Normalized()}, nil
	}
	if st.Now.IsZero() {
		return domain.Proposal{}, domain.WriteOutcome{}, b.unavailable("mcp_proposal_state", fmt.Errorf("answer without the database's time"))
	}
	prop, err := buildProposal(p, d, st)
	if err != nil {
		return domain.Proposal{}, domain.WriteOutcome{}, err
	}
	prop.ID = domain.RandomIDs{}.New(domain.PrefixProposal)
	if prop.Hash, err = seal(prop); err != nil {
		return domain.Proposal{}, domain.WriteOutcome{}, fmt.Errorf("live: seal proposal: %w", domain.ErrInvalidInput)
	}
	wargs := writeArgs(h, w)
	wargs["p_proposal"] = prop
	var a writeAnswer[domain.Proposal]
	if err := b.call(ctx, "mcp_create_proposal", wargs, &a); err != nil {
		return domain.Proposal{}, domain.WriteOutcome{}, err
	}
	if a.Result.ID == "" {
		return domain.Proposal{}, domain.WriteOutcome{}, b.unavailable("mcp_create_proposal", fmt.Errorf("answer without a proposal"))
	}
	return a.Result, a.outcome(), nil
}

// buildProposal runs domain's builder over the state the database answered.
func buildProposal(p domain.Principal, d domain.ProposalDraft, st proposalState) (domain.Proposal, error) {
	prop, err := domain.StartProposal(p, d, st.Now.UTC(), st.MaxBulkTargets)
	if err != nil {
		return prop, err
	}
	missing := func(what string) error {
		return fmt.Errorf("live: mcp_proposal_state: answer without the %s: %w", what, domain.ErrUnavailable)
	}
	switch d.Action {
	case domain.ActionPromoteCandidate:
		if st.Candidate == nil {
			return prop, missing("candidate")
		}
		err = domain.BuildPromotion(p, d, &prop, *st.Candidate)
	case domain.ActionPublishItem:
		if len(st.Items) != len(prop.TargetIDs) {
			return prop, missing("items")
		}
		err = domain.BuildItemPublication(p, &prop, st.Items, st.SaleStatuses)
	case domain.ActionPublishSale:
		if st.Sale == nil {
			return prop, missing("sale")
		}
		err = domain.BuildSalePublication(p, &prop, *st.Sale)
	default:
		err = buildAction(p, d, &prop, st)
	}
	if err != nil {
		return prop, err
	}
	domain.FinishProposal(&prop)
	return prop, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// GetProposal reads a proposal of the principal's tenant as stored (expired
// once past its expiry). Another tenant's is unknown (RefError).
func (b *Backend) GetProposal(ctx context.Context, p domain.Principal, id string) (domain.Proposal, error) {
	h, err := b.hashOf(p)
	if err != nil {
		return domain.Proposal{}, err
	}
	var prop domain.Proposal
	if err := b.call(ctx, "mcp_get_proposal", map[string]any{"p_credential_hash": h, "p_proposal_id": id}, &prop); err != nil {
		return domain.Proposal{}, err
	}
	if prop.ID == "" {
		return domain.Proposal{}, b.unavailable("mcp_get_proposal", fmt.Errorf("answer without a proposal"))
	}
	return prop, nil
}

// ApprovalState returns the grants issued for a proposal of the principal's
// tenant and the tenant's active policies naming tool, with today's usage.
func (b *Backend) ApprovalState(ctx context.Context, p domain.Principal, proposalID, tool string) ([]domain.Grant, []domain.Policy, map[string]domain.PolicyUsage, error) {
	h, err := b.hashOf(p)
	if err != nil {
		return nil, nil, nil, err
	}
	var a struct {
		Grants   []domain.Grant `json:"grants"`
		Policies []struct {
			Policy domain.Policy `json:"policy"`
			Usage  struct {
				ActionsToday int     `json:"actions_today"`
				CostToday    float64 `json:"cost_today"`
			} `json:"usage"`
		} `json:"policies"`
	}
	if err := b.call(ctx, "mcp_approval_state", map[string]any{"p_credential_hash": h, "p_proposal_id": proposalID, "p_tool": tool}, &a); err != nil {
		return nil, nil, nil, err
	}
	var (
		grants   []domain.Grant
		policies []domain.Policy
		usage    = map[string]domain.PolicyUsage{}
	)
	grants = append(grants, a.Grants...)
	for _, x := range a.Policies {
		policies = append(policies, x.Policy)
		usage[x.Policy.ID] = domain.PolicyUsage{ActionsToday: x.Usage.ActionsToday, CostToday: x.Usage.CostToday}
	}
	return grants, policies, usage, nil
}

// ExecuteProposal runs the proposal's ONE domain function under auth in one
// database transaction (mcp_execute_proposal): replay or conflict on the
// key first; the proposal locked and checked against the hash the approval
// step verified; the grant consumed (or the policy's use recorded) under
// that lock; every target at its expected version; the domain function; the
// proposal executed; the event and the idempotency row. Any refusal leaves
// everything as it was.
func (b *Backend) ExecuteProposal(ctx context.Context, p domain.Principal, w domain.WriteMeta, proposalID string, auth domain.Authorization) (domain.ExecutionResult, domain.WriteOutcome, error) {
	h, err := b.hashOf(p)
	if err != nil {
		return domain.ExecutionResult{}, domain.WriteOutcome{}, err
	}
	if err := checkWriteMeta(p, w); err != nil {
		return domain.ExecutionResult{}, domain.WriteOutcome{}, err
	}
	if !liveActionTools[w.Idem.Tool] {
		return domain.ExecutionResult{}, domain.WriteOutcome{}, notYet("ExecuteProposal " + w.Idem.Tool)
	}
	args := writeArgs(h, w)
	args["p_proposal_id"] = proposalID
	args["p_auth"] = map[string]any{
		"decision": auth.Decision, "grant_id": auth.GrantID, "policy_id": auth.PolicyID,
		"policy_version": auth.PolicyVersion, "proposal_hash": auth.ProposalHash,
	}
	var a writeAnswer[domain.ExecutionResult]
	if err := b.call(ctx, "mcp_execute_proposal", args, &a); err != nil {
		return domain.ExecutionResult{}, domain.WriteOutcome{}, err
	}
	if a.Result.ProposalID == "" {
		return domain.ExecutionResult{}, domain.WriteOutcome{}, b.unavailable("mcp_execute_proposal", fmt.Errorf("answer without a result"))
	}
	if a.Result.Results == nil {
		a.Result.Results = []domain.TargetOutcome{}
	}
	return a.Result, a.outcome(), nil
}
