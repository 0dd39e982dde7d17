package live

import (
	"context"
	"errors"
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
	// CandidatePhotos are the candidate's asset ids in position order.
	CandidatePhotos []string `json:"candidate_photos"`
	// CandidateItem is the item an attach_media candidate names.
	CandidateItem *domain.Item      `json:"candidate_item"`
	Items         []domain.Item     `json:"items"`
	SaleStatuses  map[string]string `json:"sale_statuses"`
	Sale          *domain.Sale      `json:"sale"`
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

// persist calls the persisted write RPC fn and answers its result and
// outcome. written says whether an answer carries its result: one without
// it is a backend fault, and missing says what it lacks.
func persist[T any](ctx context.Context, b *Backend, tok secret, fn string, args map[string]any, written func(T) bool, missing string) (T, domain.WriteOutcome, error) {
	var a writeAnswer[T]
	if err := b.callClient(ctx, tok, fn, args, &a); err != nil {
		var zero T
		return zero, domain.WriteOutcome{}, err
	}
	if !written(a.Result) {
		var zero T
		return zero, domain.WriteOutcome{}, b.unavailable(fn, errors.New(missing))
	}
	return a.Result, a.outcome(), nil
}

// keyArgs name the caller and the idempotency key of the write w: a read
// that prepares a write takes them (a used key replays or conflicts there
// already), and so does every persisted write RPC (writeArgs).
func keyArgs(w domain.WriteMeta) map[string]any {
	return map[string]any{"p_tool": w.Idem.Tool, "p_tool_major": w.Idem.ToolMajor,
		"p_key": w.Idem.Key, "p_fingerprint": w.Idem.Fingerprint}
}

// writeArgs are the arguments every persisted write RPC takes.
func writeArgs(w domain.WriteMeta) map[string]any {
	args := keyArgs(w)
	args["p_event"], args["p_started_at"] = normalizeEvent(w.Event), nil
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
	tok, err := b.writeToken(p, w)
	if err != nil {
		return domain.Proposal{}, domain.WriteOutcome{}, err
	}
	// The draft's own shape (targets, versions, duplicates) needs no state.
	if _, err := domain.StartProposal(p, d, time.Time{}, math.MaxInt); err != nil {
		return domain.Proposal{}, domain.WriteOutcome{}, err
	}
	// The live database runs every action of the registry (migrations 6
	// and 10); anything else is not a controlled action.
	if _, ok := domain.ActionOf(d.Action); !ok {
		return domain.Proposal{}, domain.WriteOutcome{}, fmt.Errorf("live: action %q: %w", d.Action, domain.ErrInvalidInput)
	}
	args := keyArgs(w)
	args["p_action"], args["p_target_ids"], args["p_fields"] = d.Action, nonNil(d.TargetIDs), stateFields(d)
	var st proposalState
	if err := b.callClient(ctx, tok, "mcp_proposal_state", args, &st); err != nil {
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
	wargs := writeArgs(w)
	wargs["p_proposal"] = prop
	return persist(ctx, b, tok, "mcp_create_proposal", wargs, func(r domain.Proposal) bool { return r.ID != "" }, "answer without a proposal")
}

// buildProposal runs domain's builder of the draft's action (liveActions)
// over the state the database answered.
func buildProposal(p domain.Principal, d domain.ProposalDraft, st proposalState) (domain.Proposal, error) {
	prop, err := domain.StartProposal(p, d, st.Now.UTC(), st.MaxBulkTargets)
	if err != nil {
		return prop, err
	}
	rules, ok := liveActions[d.Action]
	if !ok {
		return prop, fmt.Errorf("live: action %q: %w", d.Action, domain.ErrInvalidInput)
	}
	if err := rules.build(p, d, &prop, st); err != nil {
		return prop, err
	}
	domain.FinishProposal(&prop)
	return prop, nil
}

func buildPromotion(p domain.Principal, d domain.ProposalDraft, prop *domain.Proposal, st proposalState) error {
	if st.Candidate == nil {
		return missingState("candidate")
	}
	if st.Candidate.Kind == domain.CandidateAttachMedia && st.CandidateItem == nil {
		return missingState("candidate_item")
	}
	return domain.BuildPromotion(p, d, prop, *st.Candidate, st.CandidatePhotos, st.CandidateItem)
}

func buildItemPublication(p domain.Principal, d domain.ProposalDraft, prop *domain.Proposal, st proposalState) error {
	if len(st.Items) != len(prop.TargetIDs) {
		return missingState("items")
	}
	return domain.BuildItemPublication(p, d, prop, st.Items, st.SaleStatuses)
}

func buildSalePublication(p domain.Principal, _ domain.ProposalDraft, prop *domain.Proposal, st proposalState) error {
	if st.Sale == nil {
		return missingState("sale")
	}
	return domain.BuildSalePublication(p, prop, *st.Sale)
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
	tok, err := b.tokenOf(p)
	if err != nil {
		return domain.Proposal{}, err
	}
	var prop domain.Proposal
	if err := b.callClient(ctx, tok, "mcp_get_proposal", map[string]any{"p_proposal_id": id}, &prop); err != nil {
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
	tok, err := b.tokenOf(p)
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
	if err := b.callClient(ctx, tok, "mcp_approval_state", map[string]any{"p_proposal_id": proposalID, "p_tool": tool}, &a); err != nil {
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
	tok, err := b.writeToken(p, w)
	if err != nil {
		return domain.ExecutionResult{}, domain.WriteOutcome{}, err
	}
	if _, ok := domain.ActionByTool(w.Idem.Tool); !ok {
		return domain.ExecutionResult{}, domain.WriteOutcome{}, fmt.Errorf("live: %q is not a controlled action: %w", w.Idem.Tool, domain.ErrInvalidInput)
	}
	args := writeArgs(w)
	args["p_proposal_id"] = proposalID
	args["p_auth"] = map[string]any{
		"decision": auth.Decision, "grant_id": auth.GrantID, "policy_id": auth.PolicyID,
		"policy_version": auth.PolicyVersion, "proposal_hash": auth.ProposalHash,
	}
	res, out, err := persist(ctx, b, tok, "mcp_execute_proposal", args,
		func(r domain.ExecutionResult) bool { return r.ProposalID != "" }, "answer without a result")
	if err == nil && res.Results == nil {
		res.Results = []domain.TargetOutcome{}
	}
	return res, out, err
}
