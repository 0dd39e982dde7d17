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
