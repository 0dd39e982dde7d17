package live

import (
	"context"
	"fmt"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// notYet is the answer of a Backend method whose RPC is not written yet.
// The catalog does not offer the tools that need these in live mode, so
// the gate never reaches them; a direct caller gets ErrUnavailable.
func notYet(method string) error {
	return fmt.Errorf("live: %s is not available in live mode yet: %w", method, domain.ErrUnavailable)
}

// Public reads (§11).

func (b *Backend) SearchMarketplace(context.Context, domain.MarketplaceQuery) (domain.Page[domain.MarketplaceHit], error) {
	return domain.Page[domain.MarketplaceHit]{}, notYet("SearchMarketplace")
}

func (b *Backend) PublicSale(context.Context, string) (domain.PublicSale, error) {
	return domain.PublicSale{}, notYet("PublicSale")
}

func (b *Backend) PublicItem(context.Context, string) (domain.PublicItem, error) {
	return domain.PublicItem{}, notYet("PublicItem")
}

func (b *Backend) ResolvePublicQR(context.Context, string) (domain.PublicItem, error) {
	return domain.PublicItem{}, notYet("ResolvePublicQR")
}

// Scoped reads (§12) beyond the four lists.

func (b *Backend) GetSale(context.Context, domain.Principal, string) (domain.Sale, error) {
	return domain.Sale{}, notYet("GetSale")
}

func (b *Backend) GetItem(context.Context, domain.Principal, string, domain.ItemIncludes) (domain.ItemDetail, error) {
	return domain.ItemDetail{}, notYet("GetItem")
}

func (b *Backend) GetCandidate(context.Context, domain.Principal, string) (domain.Candidate, error) {
	return domain.Candidate{}, notYet("GetCandidate")
}

func (b *Backend) ListImportRuns(context.Context, domain.Principal, domain.ImportRunQuery) (domain.Page[domain.ImportRunSummary], error) {
	return domain.Page[domain.ImportRunSummary]{}, notYet("ListImportRuns")
}

func (b *Backend) GetImportRun(context.Context, domain.Principal, domain.ImportRunDetailQuery) (domain.ImportRunDetail, error) {
	return domain.ImportRunDetail{}, notYet("GetImportRun")
}

func (b *Backend) ListStatusEvents(context.Context, domain.Principal, domain.StatusEventQuery) (domain.Page[domain.StatusEvent], error) {
	return domain.Page[domain.StatusEvent]{}, notYet("ListStatusEvents")
}

func (b *Backend) ListLabelBatches(context.Context, domain.Principal, domain.LabelBatchQuery) (domain.Page[domain.LabelBatchSummary], error) {
	return domain.Page[domain.LabelBatchSummary]{}, notYet("ListLabelBatches")
}

func (b *Backend) DispositionQueue(context.Context, domain.Principal, domain.DispositionQuery, domain.ItemIncludes) (domain.Page[domain.DispositionEntry], error) {
	return domain.Page[domain.DispositionEntry]{}, notYet("DispositionQueue")
}

// Ingestion writes (§13) beyond CreateCandidate.

func (b *Backend) RunImport(context.Context, domain.Principal, domain.WriteMeta, domain.NewImport) (domain.ImportCreated, domain.WriteOutcome, error) {
	return domain.ImportCreated{}, domain.WriteOutcome{}, notYet("RunImport")
}

func (b *Backend) CreateStatusReport(context.Context, domain.Principal, domain.WriteMeta, domain.NewStatusReport) (domain.StatusReportCreated, domain.WriteOutcome, error) {
	return domain.StatusReportCreated{}, domain.WriteOutcome{}, notYet("CreateStatusReport")
}

func (b *Backend) AttachCandidateMedia(context.Context, domain.Principal, domain.WriteMeta, domain.NewCandidateMedia) (domain.CandidateMediaCreated, domain.WriteOutcome, error) {
	return domain.CandidateMediaCreated{}, domain.WriteOutcome{}, notYet("AttachCandidateMedia")
}

func (b *Backend) CreateMediaCandidate(context.Context, domain.Principal, domain.WriteMeta, domain.NewCandidateMedia) (domain.CandidateMediaCreated, domain.WriteOutcome, error) {
	return domain.CandidateMediaCreated{}, domain.WriteOutcome{}, notYet("CreateMediaCandidate")
}

func (b *Backend) ImportTargets(context.Context, domain.Principal, string, []string) (domain.ImportTargets, error) {
	return domain.ImportTargets{}, notYet("ImportTargets")
}

func (b *Backend) DraftListingCopy(context.Context, domain.Principal, domain.WriteMeta, domain.DraftRequest) (domain.DraftCreated, domain.WriteOutcome, error) {
	return domain.DraftCreated{}, domain.WriteOutcome{}, notYet("DraftListingCopy")
}

func (b *Backend) StageExport(context.Context, domain.Principal, domain.WriteMeta, domain.NewExport) (domain.ExportDraft, domain.WriteOutcome, error) {
	return domain.ExportDraft{}, domain.WriteOutcome{}, notYet("StageExport")
}

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
