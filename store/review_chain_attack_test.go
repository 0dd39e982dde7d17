package store

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/domain"
)

// Attack (issue 16, candidate review): a duplicate names a candidate that
// stands for the piece, never one closed by review itself (no chains,
// domain.CheckCandidateReview). Marking A a duplicate of B and then B a
// duplicate of C builds the chain A → B → C the first order refuses: A's
// record now points at a closed duplicate. The second review must be
// refused while another duplicate names B, and change
// nothing.
func TestAttack_ReviewDuplicateChainByOrder(t *testing.T) {
	ctx := context.Background()
	ds := fixtures.Dataset()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "trovesnap.db"), Options{Clock: domain.NewFixedClock(epoch), Seed: &ds})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	p, err := s.ResolvePrincipal(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	const a, b, c = "candidate_772", fixtures.DemoCandidateID, "candidate_775"
	get := func(id string) domain.Candidate {
		t.Helper()
		cd, err := s.GetCandidate(ctx, p, id)
		if err != nil {
			t.Fatal(err)
		}
		return cd
	}
	n := 0
	review := func(in domain.CandidateReview) error {
		n++
		key := "chain-" + string(rune('a'+n))
		_, _, err := s.ReviewCandidate(ctx, p, metaFor(p, "trove_review_candidate", key, "sha256:"+key, "event_"+key), in)
		return err
	}
	// A duplicate of B, allowed.
	if err := review(domain.CandidateReview{CandidateID: a, ExpectedVersion: get(a).Version, Action: domain.ReviewActionMarkDuplicate,
		DuplicateOfCandidateID: b, Reason: "same receiver"}); err != nil {
		t.Fatalf("A duplicate of B: %v", err)
	}
	before := get(b)
	err = review(domain.CandidateReview{CandidateID: b, ExpectedVersion: before.Version, Action: domain.ReviewActionMarkDuplicate,
		DuplicateOfCandidateID: c, Reason: "same receiver again"})
	if !errors.Is(err, domain.ErrTransitionInvalid) {
		t.Fatalf("B (the target of A) marked a duplicate of C: err = %v, review status now %s: A → B → C is a chain", err, get(b).ReviewStatus)
	}
	if after := get(b); after.Version != before.Version || after.ReviewStatus != before.ReviewStatus {
		t.Fatalf("B changed: %+v → %+v", before, after)
	}
}
