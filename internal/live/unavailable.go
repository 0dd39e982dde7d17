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

// Ingestion writes (§13) beyond CreateCandidate: the imports, status
// reports, drafts and exports are in ingestion.go. The two media writes
// stay here, unavailable in live mode (their tools are mock-only):
//
// A source asset is bytes plus metadata, and the store keeps the bytes in a
// content-addressed directory next to its database, written before the
// row commits (store/assets.go). The live equivalent is the metadata in
// Postgres and the bytes in a private Supabase Storage bucket, uploaded
// (content-addressed, upsert) before the RPC that commits the row. That
// needs more than an RPC: a bucket and storage.objects policies for the
// server's role (or a second, storage-only key in the configuration), and
// a quota check that runs before the upload so a tenant over its quota
// cannot leave orphaned bytes behind. None of it can be exercised against
// a real Storage service here, and a stand-in alone would prove only
// itself, so these stay unavailable rather than half-done.

func (b *Backend) AttachCandidateMedia(context.Context, domain.Principal, domain.WriteMeta, domain.NewCandidateMedia) (domain.CandidateMediaCreated, domain.WriteOutcome, error) {
	return domain.CandidateMediaCreated{}, domain.WriteOutcome{}, notYet("AttachCandidateMedia")
}

func (b *Backend) CreateMediaCandidate(context.Context, domain.Principal, domain.WriteMeta, domain.NewCandidateMedia) (domain.CandidateMediaCreated, domain.WriteOutcome, error) {
	return domain.CandidateMediaCreated{}, domain.WriteOutcome{}, notYet("CreateMediaCandidate")
}
