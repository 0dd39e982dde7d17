package live

import (
	"context"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// ReviewCandidate rejects, marks a duplicate or reopens a candidate through
// mcp_review_candidate (migration 39), which runs domain.CheckCandidateReview's
// checks in its order under the candidate's row lock and writes the review,
// its idempotency row and its plugin_event in one transaction. The shape is
// checked here first, for the same error before any call; the database
// checks it again.
func (b *Backend) ReviewCandidate(ctx context.Context, p domain.Principal, w domain.WriteMeta, in domain.CandidateReview) (domain.CandidateReviewed, domain.WriteOutcome, error) {
	if err := in.Validate(); err != nil {
		return domain.CandidateReviewed{}, domain.WriteOutcome{}, err
	}
	tok, err := b.writeToken(p, w)
	if err != nil {
		return domain.CandidateReviewed{}, domain.WriteOutcome{}, err
	}
	args := writeArgs(w)
	args["p_review"] = in
	return persist(ctx, b, tok, "mcp_review_candidate", args,
		func(r domain.CandidateReviewed) bool { return r.Candidate.ID != "" }, "answer without the candidate")
}
