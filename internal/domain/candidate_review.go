package domain

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// Candidate review actions (§4.7: a candidate is rejected, not deleted).
// They are candidate-tier writes: they change the candidate's review state
// only, never a canonical item, and need no approval.
const (
	ReviewActionReject        = "reject"
	ReviewActionMarkDuplicate = "mark_duplicate"
	ReviewActionReopen        = "reopen"
)

// CandidateReviewActions lists the review actions in a fixed order.
func CandidateReviewActions() []string {
	return []string{ReviewActionReject, ReviewActionMarkDuplicate, ReviewActionReopen}
}

// MaxReviewReason bounds a review's reason, in characters.
const MaxReviewReason = 1000

// ReviewStep is one review action a candidate in review status From may
// take, and the status it leaves the candidate in.
type ReviewStep struct {
	Action, From, To string
}

// candidateReviewSteps is THE table of what review may do. Only a candidate
// awaiting review is rejected or marked a duplicate; only a rejected or
// duplicate one is reopened (it awaits review again, and counts against
// the open-candidate quota again). Approved is a seller's decision (an
// approved status import may back a status transition) that a
// candidate-tier write does not undo; promoted is final (the item exists).
// A pending promotion of a candidate awaiting review is not looked up:
// the review moves the candidate's version, so that proposal is stale at
// execution.
var candidateReviewSteps = []ReviewStep{
	{ReviewActionReject, ReviewNeedsReview, ReviewRejected},
	{ReviewActionMarkDuplicate, ReviewNeedsReview, ReviewDuplicate},
	{ReviewActionReopen, ReviewRejected, ReviewNeedsReview},
	{ReviewActionReopen, ReviewDuplicate, ReviewNeedsReview},
}

// CandidateReviewSteps lists every allowed review step (a copy).
func CandidateReviewSteps() []ReviewStep { return slices.Clone(candidateReviewSteps) }

// ReviewStepTo is the status action leaves a candidate in review status
// from; "" when the action is not allowed from there.
func ReviewStepTo(action, from string) string {
	for _, s := range candidateReviewSteps {
		if s.Action == action && s.From == from {
			return s.To
		}
	}
	return ""
}

// CandidateReview is the input of ReviewCandidate.
type CandidateReview struct {
	CandidateID     string `json:"candidate_id"`
	ExpectedVersion int    `json:"expected_version"`
	Action          string `json:"action"`
	// Exactly one of the two, and only with mark_duplicate.
	DuplicateOfCandidateID string `json:"duplicate_of_candidate_id,omitempty"`
	DuplicateOfItemID      string `json:"duplicate_of_item_id,omitempty"`
	// Reason is required to reject or mark a duplicate; kept as data.
	Reason string `json:"reason,omitempty"`
}

// Validate checks the shape of a review before any storage is touched.
func (in CandidateReview) Validate() error {
	switch {
	case strings.TrimSpace(in.CandidateID) == "":
		return Invalid("candidate_id", "required")
	case in.ExpectedVersion < 1:
		return Invalid("expected_version", "required: the candidate's current version (trove_get_candidate)")
	case !slices.Contains(CandidateReviewActions(), in.Action):
		return Invalid("action", "must be one of "+strings.Join(CandidateReviewActions(), ", "))
	case utf8.RuneCountInString(in.Reason) > MaxReviewReason:
		return Invalid("reason", fmt.Sprintf("longer than %d characters", MaxReviewReason))
	}
	dupC, dupI := in.DuplicateOfCandidateID != "", in.DuplicateOfItemID != ""
	if in.Action == ReviewActionMarkDuplicate {
		if dupC == dupI {
			return Invalid("duplicate_of_candidate_id", "mark_duplicate needs exactly one of duplicate_of_candidate_id or duplicate_of_item_id")
		}
	} else if dupC || dupI {
		return Invalid("duplicate_of_candidate_id", "only mark_duplicate names what the candidate duplicates")
	}
	if in.Action != ReviewActionReopen && strings.TrimSpace(in.Reason) == "" {
		return Invalid("reason", "required to "+strings.ReplaceAll(in.Action, "_", " ")+": say why, for the seller")
	}
	if dupC && in.DuplicateOfCandidateID == in.CandidateID {
		return Invalid("duplicate_of_candidate_id", "a candidate cannot duplicate itself")
	}
	return nil
}

// ReviewRef is what a backend found for the record a duplicate points at:
// Found false for an id no record has. A record of another tenant is found
// with its TenantID, and refused exactly like a missing one.
type ReviewRef struct {
	Found    bool
	TenantID string
	SaleID   string
	// A candidate's kind and review status; empty for an item.
	Kind         string
	ReviewStatus string
}

// CandidateReviewed is the result of ReviewCandidate: the candidate after
// the review.
type CandidateReviewed struct {
	Candidate      Candidate `json:"candidate"`
	Action         string    `json:"action"`
	PreviousStatus string    `json:"previous_status"`
}

// CheckCandidateReview is THE rule of a candidate review (the store runs it
// in its write transaction; the live RPC mcp_review_candidate runs the same
// checks in the same order, held equal by the contract suite's review
// cases, internal/contract/suite_review.go). c is the candidate as stored,
// already found in p's tenant; target is what the duplicate points at
// (ignored unless mark_duplicate). It returns the candidate's new status.
//
// In order: the principal may write candidates (the same permission as
// creating one); the candidate's sale is one p may see; the candidate is
// at in.ExpectedVersion; the step is in the table above; a duplicate's
// target is in p's tenant and a sale p may see, and
//   - a candidate of the same kind that is not itself closed by review
//     (rejected or a duplicate: no chains, point at the original), or
//   - an item, for a new_item candidate only (the other kinds already
//     name their item).
//
// duplicatedBy counts the candidates marked duplicates of c: a candidate
// others point at as their original is not marked a duplicate itself (the
// other order of a chain; mark them duplicates of its original instead).
// Nor is it rejected: its duplicates would point at a rejected candidate,
// which marking a duplicate refuses (reopen them first).
func CheckCandidateReview(p Principal, c Candidate, in CandidateReview, target ReviewRef, duplicatedBy int) (string, error) {
	if err := in.Validate(); err != nil {
		return "", err
	}
	if err := CheckCandidateReviewer(p); err != nil {
		return "", err
	}
	if !p.MaySeeSale(c.SaleID) {
		return "", SaleAssignmentError("candidate", c.ID)
	}
	if c.Version != in.ExpectedVersion {
		return "", Because(ErrStaleVersion, "candidate %s is at version %d, the review expected %d: read it again", c.ID, c.Version, in.ExpectedVersion)
	}
	to := ReviewStepTo(in.Action, c.ReviewStatus)
	if to == "" {
		return "", Because(ErrTransitionInvalid, "candidate %s is %s: %s", c.ID, c.ReviewStatus, reviewRefusal(in.Action, c.ReviewStatus))
	}
	if in.Action == ReviewActionReject && duplicatedBy > 0 {
		return "", Because(ErrTransitionInvalid, "candidate %s is the original of %d duplicates: reopen them first (a duplicate points at the original, never at a rejected candidate)",
			c.ID, duplicatedBy)
	}
	if in.Action != ReviewActionMarkDuplicate {
		return to, nil
	}
	if duplicatedBy > 0 {
		return "", Because(ErrTransitionInvalid, "candidate %s is the original of %d duplicates: mark them duplicates of what it duplicates, or reopen them, first",
			c.ID, duplicatedBy)
	}
	field, id := "duplicate_of_candidate_id", in.DuplicateOfCandidateID
	if id == "" {
		field, id = "duplicate_of_item_id", in.DuplicateOfItemID
	}
	if !target.Found || target.TenantID != p.TenantID {
		return "", UnknownRef(field, id, target.Found)
	}
	if !p.MaySeeSale(target.SaleID) {
		return "", SaleAssignmentError(strings.TrimSuffix(strings.TrimPrefix(field, "duplicate_of_"), "_id"), id)
	}
	if field == "duplicate_of_item_id" {
		if c.Kind != CandidateNewItem {
			return "", Because(ErrTransitionInvalid, "candidate %s is a %s candidate, which already names its item: only a new_item candidate duplicates an item", c.ID, c.Kind)
		}
		return to, nil
	}
	if target.Kind != c.Kind {
		return "", Because(ErrTransitionInvalid, "candidate %s is a %s candidate and %s a %s candidate: a duplicate is of the same kind", c.ID, c.Kind, id, target.Kind)
	}
	if ReviewStepTo(ReviewActionReopen, target.ReviewStatus) != "" { // closed by review itself
		return "", Because(ErrTransitionInvalid, "candidate %s is %s: mark %s a duplicate of the candidate or item it stands for", id, target.ReviewStatus, c.ID)
	}
	return to, nil
}

// CheckCandidateReviewer is the first check of a review after its shape:
// the principal may write candidates (the permission that creates them).
// A backend runs it before it looks the candidate up.
func CheckCandidateReviewer(p Principal) error {
	if !p.Has(PermItemCreateCandidate) {
		return Because(ErrPermissionDenied, "role %s may not review candidates (%s)", p.Role, PermItemCreateCandidate)
	}
	return nil
}

// reviewRefusal says why action is not allowed from status, for a model.
func reviewRefusal(action, status string) string {
	switch {
	case status == ReviewPromoted:
		return "promotion is final, its item exists"
	case status == ReviewApproved:
		return "a seller approved it; review does not undo that"
	case action == ReviewActionReopen:
		return "only a rejected or duplicate candidate is reopened"
	default:
		return "reopen it first"
	}
}
