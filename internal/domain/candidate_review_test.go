package domain

import (
	"errors"
	"testing"
)

// CheckCandidateReview, case by case: every step of the table and every
// refusal, with the error it answers.
func TestCheckCandidateReview_StepsAndRefusals(t *testing.T) {
	owner := Principal{TenantID: "tenant_a", Role: RoleOwner}
	scoped := Principal{TenantID: "tenant_a", Role: RoleCataloger, SaleScoped: true, AssignedSaleIDs: []string{"sale_1"}}
	cand := func(status, kind string) Candidate {
		return Candidate{ID: "candidate_1", TenantID: "tenant_a", SaleID: "sale_1", Kind: kind, ReviewStatus: status, Version: 3}
	}
	reject := CandidateReview{CandidateID: "candidate_1", ExpectedVersion: 3, Action: ReviewActionReject, Reason: "not for sale"}
	dupC := CandidateReview{CandidateID: "candidate_1", ExpectedVersion: 3, Action: ReviewActionMarkDuplicate, DuplicateOfCandidateID: "candidate_2", Reason: "same lamp"}
	dupI := CandidateReview{CandidateID: "candidate_1", ExpectedVersion: 3, Action: ReviewActionMarkDuplicate, DuplicateOfItemID: "item_9", Reason: "already an item"}
	reopen := CandidateReview{CandidateID: "candidate_1", ExpectedVersion: 3, Action: ReviewActionReopen}
	tc := ReviewRef{Found: true, TenantID: "tenant_a", SaleID: "sale_1", Kind: CandidateNewItem, ReviewStatus: ReviewNeedsReview}
	ti := ReviewRef{Found: true, TenantID: "tenant_a", SaleID: "sale_1"}
	with := func(r ReviewRef, f func(*ReviewRef)) ReviewRef { f(&r); return r }
	edit := func(in CandidateReview, f func(*CandidateReview)) CandidateReview { f(&in); return in }

	cases := []struct {
		name   string
		p      Principal
		c      Candidate
		in     CandidateReview
		target ReviewRef
		to     string
		err    error
		field  string
	}{
		{"reject", owner, cand(ReviewNeedsReview, CandidateNewItem), reject, ReviewRef{}, ReviewRejected, nil, ""},
		{"duplicate of a candidate", owner, cand(ReviewNeedsReview, CandidateNewItem), dupC, tc, ReviewDuplicate, nil, ""},
		{"duplicate of a promoted candidate", owner, cand(ReviewNeedsReview, CandidateNewItem), dupC, with(tc, func(r *ReviewRef) { r.ReviewStatus = ReviewPromoted }), ReviewDuplicate, nil, ""},
		{"duplicate of an item", owner, cand(ReviewNeedsReview, CandidateNewItem), dupI, ti, ReviewDuplicate, nil, ""},
		{"reopen rejected", owner, cand(ReviewRejected, CandidateNewItem), reopen, ReviewRef{}, ReviewNeedsReview, nil, ""},
		{"reopen duplicate", owner, cand(ReviewDuplicate, CandidateNewItem), reopen, ReviewRef{}, ReviewNeedsReview, nil, ""},
		{"scoped reviewer in its sale", scoped, cand(ReviewNeedsReview, CandidateNewItem), reject, ReviewRef{}, ReviewRejected, nil, ""},

		{"no reason", owner, cand(ReviewNeedsReview, CandidateNewItem), edit(reject, func(in *CandidateReview) { in.Reason = "  " }), ReviewRef{}, "", ErrInvalidInput, "reason"},
		{"reason too long", owner, cand(ReviewNeedsReview, CandidateNewItem), edit(reject, func(in *CandidateReview) { in.Reason = string(make([]rune, MaxReviewReason+1)) }), ReviewRef{}, "", ErrInvalidInput, "reason"},
		{"unknown action", owner, cand(ReviewNeedsReview, CandidateNewItem), edit(reject, func(in *CandidateReview) { in.Action = "approve" }), ReviewRef{}, "", ErrInvalidInput, "action"},
		{"no expected version", owner, cand(ReviewNeedsReview, CandidateNewItem), edit(reject, func(in *CandidateReview) { in.ExpectedVersion = 0 }), ReviewRef{}, "", ErrInvalidInput, "expected_version"},
		{"duplicate naming both", owner, cand(ReviewNeedsReview, CandidateNewItem), edit(dupC, func(in *CandidateReview) { in.DuplicateOfItemID = "item_9" }), tc, "", ErrInvalidInput, "duplicate_of_candidate_id"},
		{"duplicate naming none", owner, cand(ReviewNeedsReview, CandidateNewItem), edit(dupC, func(in *CandidateReview) { in.DuplicateOfCandidateID = "" }), tc, "", ErrInvalidInput, "duplicate_of_candidate_id"},
		{"reject naming a duplicate", owner, cand(ReviewNeedsReview, CandidateNewItem), edit(reject, func(in *CandidateReview) { in.DuplicateOfItemID = "item_9" }), ti, "", ErrInvalidInput, "duplicate_of_candidate_id"},
		{"duplicate of itself", owner, cand(ReviewNeedsReview, CandidateNewItem), edit(dupC, func(in *CandidateReview) { in.DuplicateOfCandidateID = "candidate_1" }), tc, "", ErrInvalidInput, "duplicate_of_candidate_id"},
		{"role without candidate writes", Principal{TenantID: "tenant_a", Role: RolePricer}, cand(ReviewNeedsReview, CandidateNewItem), reject, ReviewRef{}, "", ErrPermissionDenied, ""},
		{"candidate in another sale", scoped, Candidate{ID: "candidate_1", TenantID: "tenant_a", SaleID: "sale_2", Kind: CandidateNewItem, ReviewStatus: ReviewNeedsReview, Version: 3}, reject, ReviewRef{}, "", ErrSaleAssignment, ""},
		{"stale", owner, cand(ReviewNeedsReview, CandidateNewItem), edit(reject, func(in *CandidateReview) { in.ExpectedVersion = 2 }), ReviewRef{}, "", ErrStaleVersion, ""},
		{"reject promoted", owner, cand(ReviewPromoted, CandidateNewItem), reject, ReviewRef{}, "", ErrTransitionInvalid, ""},
		{"reopen promoted", owner, cand(ReviewPromoted, CandidateNewItem), reopen, ReviewRef{}, "", ErrTransitionInvalid, ""},
		{"reject approved", owner, cand(ReviewApproved, CandidateNewItem), reject, ReviewRef{}, "", ErrTransitionInvalid, ""},
		{"duplicate approved", owner, cand(ReviewApproved, CandidateNewItem), dupC, tc, "", ErrTransitionInvalid, ""},
		{"reject rejected", owner, cand(ReviewRejected, CandidateNewItem), reject, ReviewRef{}, "", ErrTransitionInvalid, ""},
		{"duplicate a duplicate again", owner, cand(ReviewDuplicate, CandidateNewItem), dupC, tc, "", ErrTransitionInvalid, ""},
		{"reopen awaiting review", owner, cand(ReviewNeedsReview, CandidateNewItem), reopen, ReviewRef{}, "", ErrTransitionInvalid, ""},
		{"target missing", owner, cand(ReviewNeedsReview, CandidateNewItem), dupC, ReviewRef{}, "", nil, "duplicate_of_candidate_id"},
		{"target of another tenant", owner, cand(ReviewNeedsReview, CandidateNewItem), dupI, with(ti, func(r *ReviewRef) { r.TenantID = "tenant_b" }), "", nil, "duplicate_of_item_id"},
		{"target in a sale not assigned", scoped, cand(ReviewNeedsReview, CandidateNewItem), dupI, with(ti, func(r *ReviewRef) { r.SaleID = "sale_2" }), "", ErrSaleAssignment, ""},
		{"target a duplicate (no chains)", owner, cand(ReviewNeedsReview, CandidateNewItem), dupC, with(tc, func(r *ReviewRef) { r.ReviewStatus = ReviewDuplicate }), "", ErrTransitionInvalid, ""},
		{"target rejected", owner, cand(ReviewNeedsReview, CandidateNewItem), dupC, with(tc, func(r *ReviewRef) { r.ReviewStatus = ReviewRejected }), "", ErrTransitionInvalid, ""},
		{"target of another kind", owner, cand(ReviewNeedsReview, CandidateNewItem), dupC, with(tc, func(r *ReviewRef) { r.Kind = CandidateStatusUpdate }), "", ErrTransitionInvalid, ""},
		{"status report duplicating an item", owner, cand(ReviewNeedsReview, CandidateStatusUpdate), dupI, ti, "", ErrTransitionInvalid, ""},
	}
	for _, c := range cases {
		to, err := CheckCandidateReview(c.p, c.c, c.in, c.target, 0)
		var ie *InputError
		var re *RefError
		switch {
		case c.err == nil && c.field == "":
			if err != nil || to != c.to {
				t.Errorf("%s: %q, %v; want %q", c.name, to, err, c.to)
			}
		case c.err == nil: // an unknown reference
			if !errors.As(err, &re) || re.Field != c.field || to != "" {
				t.Errorf("%s: %q, %v; want an unknown %s", c.name, to, err, c.field)
			}
		case c.field != "":
			if !errors.As(err, &ie) || ie.Field != c.field || to != "" {
				t.Errorf("%s: %q, %v; want invalid %s", c.name, to, err, c.field)
			}
		default:
			if !errors.Is(err, c.err) || to != "" {
				t.Errorf("%s: %q, %v; want %v", c.name, to, err, c.err)
			}
		}
	}
}

// A rejected or duplicate candidate is not open (it leaves the quota);
// every status a review leads to is a review status.
func TestCandidateReview_StatusesAndQuota(t *testing.T) {
	for _, s := range CandidateReviewSteps() {
		open := s.To == ReviewNeedsReview
		if got := contains(OpenReviewStatuses(), s.To); got != open {
			t.Errorf("%s → %s: open %v, want %v", s.Action, s.To, got, open)
		}
		if !contains(ReviewStatuses(), s.From) || !contains(ReviewStatuses(), s.To) {
			t.Errorf("%+v: not a review status", s)
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
