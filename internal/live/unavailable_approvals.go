package live

import (
	"context"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// Proposals, approval state and controlled actions (§14–§18).

func (b *Backend) CreateProposal(context.Context, domain.Principal, domain.WriteMeta, domain.ProposalDraft, domain.ProposalSealer) (domain.Proposal, domain.WriteOutcome, error) {
	return domain.Proposal{}, domain.WriteOutcome{}, notYet("CreateProposal")
}

func (b *Backend) GetProposal(context.Context, domain.Principal, string) (domain.Proposal, error) {
	return domain.Proposal{}, notYet("GetProposal")
}

func (b *Backend) ApprovalState(context.Context, domain.Principal, string, string) ([]domain.Grant, []domain.Policy, map[string]domain.PolicyUsage, error) {
	return nil, nil, nil, notYet("ApprovalState")
}

func (b *Backend) ExecuteProposal(context.Context, domain.Principal, domain.WriteMeta, string, domain.Authorization) (domain.ExecutionResult, domain.WriteOutcome, error) {
	return domain.ExecutionResult{}, domain.WriteOutcome{}, notYet("ExecuteProposal")
}
