package live

import (
	"context"

	"github.com/triunalabs/trovesnap/internal/domain"
)

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
