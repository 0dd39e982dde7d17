package contract

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/domain"
)

// Candidate review (issue 16, part 3): domain.CheckCandidateReview in the
// store and mcp_review_candidate in the live database, held equal by the
// same cases: each action, each refusal (its error, and nothing written:
// no row, no idempotency row, the candidate at the same version and
// status), a replay, the quota on reopen, and a pending promotion made
// stale by a review.

const toolReview = "trove_review_candidate"

// Candidates of the dataset the review cases use.
const (
	revNeeds      = "candidate_772" // needs_review, version 1, sale_221
	revNeeds3     = "candidate_771" // needs_review, version 3, sale_221
	revNeedsDraft = "candidate_775" // needs_review, version 1, sale_222
	revApproved   = "candidate_773" // approved, version 2, sale_221
	revRejected   = "candidate_774" // rejected, version 2, sale_223
	revRejected2  = "candidate_780" // rejected, version 2, sale_222
	revScoped     = "candidate_781" // needs_review, version 1, sale_223 (the scoped cataloger's sale)
	revOther      = "candidate_901" // another tenant's
	revOtherItem  = "item_1290"     // another tenant's
	revDraftItem  = "item_1151"     // draft, sale_222
)

func runCandidateReview(t *testing.T, open func(t *testing.T) Instance) {
	t.Run("ReviewCandidate", func(t *testing.T) { testReviewCandidate(t, open(t)) })
	t.Run("ReviewCandidateRefused", func(t *testing.T) { testReviewCandidateRefused(t, open(t)) })
	t.Run("ReviewCandidateReopenQuota", func(t *testing.T) { testReviewReopenQuota(t, open(t)) })
	t.Run("ReviewCandidateAndPromotion", func(t *testing.T) { testReviewAndPromotion(t, open(t)) })
	t.Run("ReviewCandidateNoChainByOrder", func(t *testing.T) { testReviewNoChainByOrder(t, open(t)) })
	t.Run("ReviewCandidateOriginalNotRejectedUnderItsDuplicates", func(t *testing.T) { testReviewOriginalNotRejected(t, open(t)) })
}

// A duplicate points at the candidate that stands for the piece: after A
// is marked a duplicate of B, B is not marked a duplicate of C (A → B → C,
// the chain the other order refuses), and nothing changes; once A is
// reopened, B may be.
func testReviewNoChainByOrder(t *testing.T, in Instance) {
	b := in.Backend
	p := resolve(t, b, CredOwner)
	const a, orig, other = "candidate_772", fixtures.DemoCandidateID, "candidate_775"
	n := 0
	review := func(r domain.CandidateReview) error {
		n++
		key := fmt.Sprintf("chain-%d", n)
		_, _, err := b.ReviewCandidate(ctx, p, reviewMeta(p, key, "sha256:"+key, "event_chain"+fmt.Sprint(n)), r)
		return err
	}
	if err := review(domain.CandidateReview{CandidateID: a, ExpectedVersion: getCandidate(t, b, p, a).Version,
		Action: domain.ReviewActionMarkDuplicate, DuplicateOfCandidateID: orig, Reason: "same receiver"}); err != nil {
		t.Fatalf("A a duplicate of B: %v", err)
	}
	before, counts := getCandidate(t, b, p, orig), in.Counts(t)
	err := review(domain.CandidateReview{CandidateID: orig, ExpectedVersion: before.Version, Action: domain.ReviewActionMarkDuplicate,
		DuplicateOfCandidateID: other, Reason: "same receiver again"})
	wantErr(t, err, domain.ErrTransitionInvalid, "B, the original of A, marked a duplicate of C")
	if after := getCandidate(t, b, p, orig); after.Version != before.Version || after.ReviewStatus != before.ReviewStatus {
		t.Fatalf("B changed: %+v → %+v", before, after)
	}
	if d := changed(counts, in.Counts(t)); len(d) != 0 {
		t.Fatalf("a refused review changed %v", d)
	}
	if err := review(domain.CandidateReview{CandidateID: a, ExpectedVersion: getCandidate(t, b, p, a).Version, Action: domain.ReviewActionReopen}); err != nil {
		t.Fatalf("reopen A: %v", err)
	}
	if err := review(domain.CandidateReview{CandidateID: orig, ExpectedVersion: before.Version, Action: domain.ReviewActionMarkDuplicate,
		DuplicateOfCandidateID: other, Reason: "same receiver again"}); err != nil {
		t.Fatalf("B marked a duplicate once nothing points at it: %v", err)
	}
}

func reviewMeta(p domain.Principal, key, fingerprint, eventID string) domain.WriteMeta {
	return ingMeta(p, toolReview, key, fingerprint, eventID)
}

func getCandidate(t *testing.T, b domain.Backend, p domain.Principal, id string) domain.Candidate {
	t.Helper()
	c, err := b.GetCandidate(ctx, p, id)
	if err != nil {
		t.Fatalf("GetCandidate %s: %v", id, err)
	}
	return c
}

// wantReviewed fails unless the review's result and the stored candidate
// both show status at version, with the duplicate fields and reason given.
func wantReviewed(t *testing.T, b domain.Backend, p domain.Principal, res domain.CandidateReviewed, id, status string, version int, dupC, dupI, reason string) {
	t.Helper()
	for what, c := range map[string]domain.Candidate{"result": res.Candidate, "stored": getCandidate(t, b, p, id)} {
		if c.ID != id || c.ReviewStatus != status || c.Version != version || c.DuplicateOfCandidateID != dupC ||
			c.DuplicateOfItemID != dupI || c.ReviewReason != reason {
			t.Fatalf("%s candidate = %+v, want %s v%d dup %q/%q reason %q", what, c, status, version, dupC, dupI, reason)
		}
	}
}

func listedIn(t *testing.T, b domain.Backend, p domain.Principal, status, id string) bool {
	t.Helper()
	ids := walk(t, domain.MaxPageSize, func(after *domain.Keyset, limit int) (domain.Page[domain.Candidate], error) {
		return b.ListCandidates(ctx, p, domain.CandidateQuery{ReviewStatus: status, Limit: limit, After: after})
	}, "candidates", cursorsOf(b, p), func(c domain.Candidate) string { return c.ID })
	return slices.Contains(ids, id)
}

func testReviewCandidate(t *testing.T, in Instance) {
	b := in.Backend
	p := resolve(t, b, CredOwner)
	open := openCandidates(t, b, p)
	item := func() domain.Item {
		t.Helper()
		d, err := b.GetItem(ctx, p, revDraftItem, domain.ItemIncludes{})
		if err != nil {
			t.Fatal(err)
		}
		return d.Item
	}
	itemBefore := item()

	// Reject: rejected, version + 1, the reason kept; one idempotency row
	// and one event, no other row.
	before := in.Counts(t)
	rej := domain.CandidateReview{CandidateID: revNeeds, ExpectedVersion: 1, Action: domain.ReviewActionReject, Reason: "a duplicate listing photo, not an item"}
	res, out, err := b.ReviewCandidate(ctx, p, reviewMeta(p, "rev-1", "sha256:v1", "event_v1"), rej)
	if err != nil {
		t.Fatalf("reject: %v", err)
	}
	wantReviewed(t, b, p, res, revNeeds, domain.ReviewRejected, 2, "", "", rej.Reason)
	if res.Action != domain.ReviewActionReject || res.PreviousStatus != domain.ReviewNeedsReview {
		t.Fatalf("result = %+v", res)
	}
	if out.Replayed || out.OriginalEventID != "event_v1" || !slices.Equal(out.Related.CandidateIDs, []string{revNeeds}) || len(out.Related.ItemIDs) != 0 {
		t.Fatalf("outcome = %+v", out)
	}
	after := in.Counts(t)
	if d := changed(before, after); !slices.Equal(d, []string{"idempotency_keys " + itoa(before["idempotency_keys"]) + "→" + itoa(before["idempotency_keys"]+1)}) {
		t.Fatalf("a review wrote %v, want one idempotency row", d)
	}
	if after["plugin_events"] != before["plugin_events"]+1 {
		t.Fatalf("events %d → %d, want one", before["plugin_events"], after["plugin_events"])
	}
	if got := openCandidates(t, b, p); got != open-1 {
		t.Fatalf("open candidates after a rejection = %d, want %d", got, open-1)
	}
	if !listedIn(t, b, p, domain.ReviewRejected, revNeeds) || listedIn(t, b, p, domain.ReviewNeedsReview, revNeeds) {
		t.Fatal("the rejected candidate is not listed under rejected only")
	}

	// Replay: the original result, nothing written; the same key with
	// another input conflicts.
	again, out2, err := b.ReviewCandidate(ctx, p, reviewMeta(p, "rev-1", "sha256:v1", "event_v1b"), rej)
	if err != nil || !out2.Replayed || out2.OriginalEventID != "event_v1" || mustJSON(t, again) != mustJSON(t, res) {
		t.Fatalf("replay = %+v %+v %v", again, out2, err)
	}
	if d := changed(after, in.Counts(t)); len(d) > 0 {
		t.Fatalf("a replay wrote %v", d)
	}
	_, _, err = b.ReviewCandidate(ctx, p, reviewMeta(p, "rev-1", "sha256:v9", "event_v1c"), rej)
	wantErr(t, err, domain.ErrIdempotencyConflict, "the same key, another input")

	// Reopen: awaiting review again, open again.
	res, _, err = b.ReviewCandidate(ctx, p, reviewMeta(p, "rev-2", "sha256:v2", "event_v2"),
		domain.CandidateReview{CandidateID: revNeeds, ExpectedVersion: 2, Action: domain.ReviewActionReopen})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	wantReviewed(t, b, p, res, revNeeds, domain.ReviewNeedsReview, 3, "", "", "")
	if res.PreviousStatus != domain.ReviewRejected || openCandidates(t, b, p) != open {
		t.Fatalf("reopened: %+v, open %d want %d", res, openCandidates(t, b, p), open)
	}

	// A duplicate of another candidate, listed under duplicate.
	res, out, err = b.ReviewCandidate(ctx, p, reviewMeta(p, "rev-3", "sha256:v3", "event_v3"), domain.CandidateReview{
		CandidateID: revNeeds, ExpectedVersion: 3, Action: domain.ReviewActionMarkDuplicate, DuplicateOfCandidateID: revNeeds3, Reason: "same lamp, photographed twice"})
	if err != nil {
		t.Fatalf("duplicate of a candidate: %v", err)
	}
	wantReviewed(t, b, p, res, revNeeds, domain.ReviewDuplicate, 4, revNeeds3, "", "same lamp, photographed twice")
	if !slices.Equal(out.Related.CandidateIDs, []string{revNeeds, revNeeds3}) || !listedIn(t, b, p, domain.ReviewDuplicate, revNeeds) {
		t.Fatalf("duplicate outcome %+v, or not listed under duplicate", out)
	}
	if c := getCandidate(t, b, p, revNeeds3); c.ReviewStatus != domain.ReviewNeedsReview || c.Version != 3 {
		t.Fatalf("the original changed: %+v", c)
	}

	// A duplicate of an item: the item is not touched, and the candidate's
	// import run counts it as a duplicate.
	runCounts := func() domain.ReviewCounts {
		t.Helper()
		d, err := b.GetImportRun(ctx, p, domain.ImportRunDetailQuery{RunID: getCandidate(t, b, p, revNeedsDraft).ImportRunID})
		if err != nil {
			t.Fatalf("GetImportRun: %v", err)
		}
		return d.Candidates
	}
	countsBefore := runCounts()
	res, out, err = b.ReviewCandidate(ctx, p, reviewMeta(p, "rev-4", "sha256:v4", "event_v4"), domain.CandidateReview{
		CandidateID: revNeedsDraft, ExpectedVersion: 1, Action: domain.ReviewActionMarkDuplicate, DuplicateOfItemID: revDraftItem, Reason: "already catalogued"})
	if err != nil {
		t.Fatalf("duplicate of an item: %v", err)
	}
	wantReviewed(t, b, p, res, revNeedsDraft, domain.ReviewDuplicate, 2, "", revDraftItem, "already catalogued")
	if !slices.Equal(out.Related.ItemIDs, []string{revDraftItem}) {
		t.Fatalf("outcome = %+v", out)
	}
	if got, want := runCounts(), (domain.ReviewCounts{NeedsReview: countsBefore.NeedsReview - 1, Approved: countsBefore.Approved,
		Rejected: countsBefore.Rejected, Promoted: countsBefore.Promoted, Duplicate: countsBefore.Duplicate + 1}); got != want {
		t.Fatalf("the run's counts = %+v, want %+v", got, want)
	}
	if it := item(); it.Version != itemBefore.Version || it.Status != itemBefore.Status || it.Title != itemBefore.Title {
		t.Fatalf("the item changed: %+v, was %+v", it, itemBefore)
	}

	// Reopening a duplicate clears what it duplicated.
	res, _, err = b.ReviewCandidate(ctx, p, reviewMeta(p, "rev-5", "sha256:v5", "event_v5"),
		domain.CandidateReview{CandidateID: revNeeds, ExpectedVersion: 4, Action: domain.ReviewActionReopen, Reason: "different lamps after all"})
	if err != nil {
		t.Fatalf("reopen a duplicate: %v", err)
	}
	wantReviewed(t, b, p, res, revNeeds, domain.ReviewNeedsReview, 5, "", "", "different lamps after all")
	if got := openCandidates(t, b, p); got != open-1 { // revNeedsDraft stays a duplicate
		t.Fatalf("open candidates = %d, want %d", got, open-1)
	}

	// The sale-scoped cataloger reviews in its own sale.
	s := resolve(t, b, CredScoped)
	if res, _, err = b.ReviewCandidate(ctx, s, reviewMeta(s, "rev-s1", "sha256:s1", "event_vs1"), domain.CandidateReview{
		CandidateID: revScoped, ExpectedVersion: 1, Action: domain.ReviewActionReject, Reason: "not for sale"}); err != nil {
		t.Fatalf("scoped reject: %v", err)
	}
	wantReviewed(t, b, p, res, revScoped, domain.ReviewRejected, 2, "", "", "not for sale")
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func testReviewCandidateRefused(t *testing.T, in Instance) {
	b := in.Backend
	p := resolve(t, b, CredOwner)
	// A status_update candidate, for the kind rules.
	rep, _, err := b.CreateStatusReport(ctx, p, ingMeta(p, toolStatusReport, "rev-rep", "sha256:rr", "event_vr"), domain.NewStatusReport{
		ItemID: fixtures.DemoItemID, ReportedStatus: domain.ItemSold, EffectiveAt: fixtures.Epoch, Source: domain.ReportSellerConfirmed})
	if err != nil {
		t.Fatalf("status report: %v", err)
	}
	status := rep.CandidateID
	reject := func(id string, v int) domain.CandidateReview {
		return domain.CandidateReview{CandidateID: id, ExpectedVersion: v, Action: domain.ReviewActionReject, Reason: "no"}
	}
	dupOf := func(id string, v int, cand, item string) domain.CandidateReview {
		return domain.CandidateReview{CandidateID: id, ExpectedVersion: v, Action: domain.ReviewActionMarkDuplicate,
			DuplicateOfCandidateID: cand, DuplicateOfItemID: item, Reason: "same"}
	}
	reopen := func(id string, v int) domain.CandidateReview {
		return domain.CandidateReview{CandidateID: id, ExpectedVersion: v, Action: domain.ReviewActionReopen}
	}
	type want struct {
		sentinel error
		field    string // an InputError, or with ref a RefError
		ref      string
		cross    bool
	}
	cases := []struct {
		name  string
		cred  string
		in    domain.CandidateReview
		check string // the candidate that must be unchanged
		want  want
	}{
		{"unknown candidate", CredOwner, reject("candidate_nope1", 1), revNeeds, want{ref: "candidate_id"}},
		{"another tenant's candidate", CredOwner, reject(revOther, 1), revNeeds, want{ref: "candidate_id", cross: true}},
		{"a role that may not write candidates", CredPricer, reject(revNeeds, 1), revNeeds, want{sentinel: domain.ErrPermissionDenied}},
		{"a sale not assigned", CredScoped, reject(revNeeds, 1), revNeeds, want{sentinel: domain.ErrSaleAssignment}},
		{"stale version", CredOwner, reject(revNeeds3, 2), revNeeds3, want{sentinel: domain.ErrStaleVersion}},
		{"approved by a seller", CredOwner, reject(revApproved, 2), revApproved, want{sentinel: domain.ErrTransitionInvalid}},
		{"approved, as a duplicate", CredOwner, dupOf(revApproved, 2, revNeeds, ""), revApproved, want{sentinel: domain.ErrTransitionInvalid}},
		{"rejected again", CredOwner, reject(revRejected, 2), revRejected, want{sentinel: domain.ErrTransitionInvalid}},
		{"reopen awaiting review", CredOwner, reopen(revNeeds, 1), revNeeds, want{sentinel: domain.ErrTransitionInvalid}},
		{"no reason", CredOwner, domain.CandidateReview{CandidateID: revNeeds, ExpectedVersion: 1, Action: domain.ReviewActionReject}, revNeeds, want{field: "reason"}},
		{"two targets", CredOwner, dupOf(revNeeds, 1, revNeeds3, revDraftItem), revNeeds, want{field: "duplicate_of_candidate_id"}},
		{"a target without mark_duplicate", CredOwner, domain.CandidateReview{CandidateID: revNeeds, ExpectedVersion: 1, Action: domain.ReviewActionReject, Reason: "x", DuplicateOfItemID: revDraftItem}, revNeeds, want{field: "duplicate_of_candidate_id"}},
		{"itself", CredOwner, dupOf(revNeeds, 1, revNeeds, ""), revNeeds, want{field: "duplicate_of_candidate_id"}},
		{"unknown target", CredOwner, dupOf(revNeeds, 1, "candidate_nope2", ""), revNeeds, want{ref: "duplicate_of_candidate_id"}},
		{"another tenant's target candidate", CredOwner, dupOf(revNeeds, 1, revOther, ""), revNeeds, want{ref: "duplicate_of_candidate_id", cross: true}},
		{"another tenant's target item", CredOwner, dupOf(revNeeds, 1, "", revOtherItem), revNeeds, want{ref: "duplicate_of_item_id", cross: true}},
		{"a target in a sale not assigned", CredScoped, dupOf(revScoped, 1, "", fixtures.DemoItemID), revScoped, want{sentinel: domain.ErrSaleAssignment}},
		{"a rejected target", CredOwner, dupOf(revNeeds, 1, revRejected2, ""), revNeeds, want{sentinel: domain.ErrTransitionInvalid}},
		{"a target of another kind", CredOwner, dupOf(revNeeds, 1, status, ""), revNeeds, want{sentinel: domain.ErrTransitionInvalid}},
		{"a status report duplicating an item", CredOwner, dupOf(status, 1, "", fixtures.DemoItemID), status, want{sentinel: domain.ErrTransitionInvalid}},
	}
	for i, c := range cases {
		who := resolve(t, b, c.cred)
		before := in.Counts(t)
		was := getCandidate(t, b, p, c.check)
		key := "rev-no-" + itoa(int64(i))
		res, _, err := b.ReviewCandidate(ctx, who, reviewMeta(who, key, "sha256:n"+itoa(int64(i)), "event_vn"+itoa(int64(i))), c.in)
		switch {
		case c.want.ref != "":
			var re *domain.RefError
			if !errors.As(err, &re) || re.Field != c.want.ref || re.CrossTenant != c.want.cross {
				t.Errorf("%s: err = %v, want an unknown %s (cross_tenant %v)", c.name, err, c.want.ref, c.want.cross)
			}
		case c.want.field != "":
			var ie *domain.InputError
			if !errors.As(err, &ie) || ie.Field != c.want.field {
				t.Errorf("%s: err = %v, want invalid %s", c.name, err, c.want.field)
			}
		default:
			if !errors.Is(err, c.want.sentinel) {
				t.Errorf("%s: err = %v, want %v", c.name, err, c.want.sentinel)
			}
		}
		if res.Candidate.ID != "" {
			t.Errorf("%s: a refusal answered %+v", c.name, res)
		}
		if d := changed(before, in.Counts(t)); len(d) > 0 {
			t.Errorf("%s: a refused review wrote %v", c.name, d)
		}
		if now := getCandidate(t, b, p, c.check); now.Version != was.Version || now.ReviewStatus != was.ReviewStatus ||
			now.DuplicateOfCandidateID != was.DuplicateOfCandidateID || now.ReviewReason != was.ReviewReason {
			t.Errorf("%s: the candidate moved: %+v, was %+v", c.name, now, was)
		}
	}
}

func testReviewReopenQuota(t *testing.T, in Instance) {
	b := in.Backend
	p := resolve(t, b, CredOwner)
	used := openCandidates(t, b, p)
	// At the quota: reopening a rejected candidate would take the tenant
	// over it, refused and nothing written.
	setQuota(t, in, used, domain.DefaultMaxCandidateBytes)
	before := in.Counts(t)
	_, _, err := b.ReviewCandidate(ctx, p, reviewMeta(p, "rev-q1", "sha256:q1", "event_vq1"),
		domain.CandidateReview{CandidateID: revRejected2, ExpectedVersion: 2, Action: domain.ReviewActionReopen})
	wantQuota(t, err, "open candidates")
	if d := changed(before, in.Counts(t)); len(d) > 0 {
		t.Fatalf("a refused reopen wrote %v", d)
	}
	if c := getCandidate(t, b, p, revRejected2); c.ReviewStatus != domain.ReviewRejected || c.Version != 2 {
		t.Fatalf("the candidate after a refused reopen: %+v", c)
	}
	// A review at the quota lowers it: never refused.
	if _, _, err := b.ReviewCandidate(ctx, p, reviewMeta(p, "rev-q2", "sha256:q2", "event_vq2"),
		domain.CandidateReview{CandidateID: revNeeds, ExpectedVersion: 1, Action: domain.ReviewActionReject, Reason: "not for sale"}); err != nil {
		t.Fatalf("a rejection at the quota: %v", err)
	}
	if got := openCandidates(t, b, p); got != used-1 {
		t.Fatalf("open candidates = %d, want %d", got, used-1)
	}
	// Now there is room for one: the reopen goes through.
	res, _, err := b.ReviewCandidate(ctx, p, reviewMeta(p, "rev-q3", "sha256:q1", "event_vq3"),
		domain.CandidateReview{CandidateID: revRejected2, ExpectedVersion: 2, Action: domain.ReviewActionReopen})
	if err != nil {
		t.Fatalf("reopen under the quota: %v", err)
	}
	wantReviewed(t, b, p, res, revRejected2, domain.ReviewNeedsReview, 3, "", "", "")
	if got := openCandidates(t, b, p); got != used {
		t.Fatalf("open candidates = %d, want %d", got, used)
	}
}

func testReviewAndPromotion(t *testing.T, in Instance) {
	f := newFlow(t, in)
	b, p := f.b, f.owner
	// A promotion proposed and approved, then the candidate rejected: the
	// review moved its version, so the execution is stale and creates
	// nothing.
	c := getCandidate(t, b, p, revNeeds)
	prop := f.mustPropose(promotionDraft(c.ID, c.Version, nil))
	g := f.approve(prop)
	if _, _, err := b.ReviewCandidate(ctx, p, reviewMeta(p, "rev-p1", "sha256:p1", "event_vp1"),
		domain.CandidateReview{CandidateID: c.ID, ExpectedVersion: c.Version, Action: domain.ReviewActionReject, Reason: "not for sale"}); err != nil {
		t.Fatalf("reject with a promotion pending: %v", err)
	}
	before := in.Counts(t)
	_, _, err := f.execute(b, p, prop, allowed(prop, g.ID))
	wantErr(t, err, domain.ErrStaleVersion, "promoting a candidate rejected after the proposal")
	f.unchanged(before, "a stale promotion")
	// A rejected or duplicate candidate is not open: it cannot be proposed
	// for promotion until it is reopened.
	c = getCandidate(t, b, p, revNeeds)
	before = in.Counts(t)
	_, _, err = f.propose(p, promotionDraft(c.ID, c.Version, nil))
	wantErr(t, err, domain.ErrTransitionInvalid, "proposing the promotion of a rejected candidate")
	f.unchanged(before, "a refused promotion proposal")
	if _, _, err := b.ReviewCandidate(ctx, p, reviewMeta(p, "rev-p0", "sha256:p0", "event_vp0"), domain.CandidateReview{
		CandidateID: revNeedsDraft, ExpectedVersion: 1, Action: domain.ReviewActionMarkDuplicate, DuplicateOfItemID: revDraftItem, Reason: "same"}); err != nil {
		t.Fatal(err)
	}
	_, _, err = f.propose(p, promotionDraft(revNeedsDraft, 2, nil))
	wantErr(t, err, domain.ErrTransitionInvalid, "proposing the promotion of a duplicate")

	// Promoted is final: no review action; a duplicate may point at it.
	c = getCandidate(t, b, p, revNeeds3)
	prop = f.mustPropose(promotionDraft(c.ID, c.Version, nil))
	g = f.approve(prop)
	if _, _, err := f.execute(b, p, prop, allowed(prop, g.ID)); err != nil {
		t.Fatalf("promotion: %v", err)
	}
	c = getCandidate(t, b, p, revNeeds3)
	if c.ReviewStatus != domain.ReviewPromoted {
		t.Fatalf("promoted candidate = %+v", c)
	}
	for i, r := range []domain.CandidateReview{
		{CandidateID: c.ID, ExpectedVersion: c.Version, Action: domain.ReviewActionReject, Reason: "late"},
		{CandidateID: c.ID, ExpectedVersion: c.Version, Action: domain.ReviewActionReopen},
		{CandidateID: c.ID, ExpectedVersion: c.Version, Action: domain.ReviewActionMarkDuplicate, DuplicateOfItemID: revDraftItem, Reason: "late"},
	} {
		before := in.Counts(t)
		_, _, err := b.ReviewCandidate(ctx, p, reviewMeta(p, "rev-pp"+itoa(int64(i)), "sha256:pp"+itoa(int64(i)), "event_vpp"+itoa(int64(i))), r)
		wantErr(t, err, domain.ErrTransitionInvalid, r.Action+" of a promoted candidate")
		f.unchanged(before, r.Action+" of a promoted candidate")
		if now := getCandidate(t, b, p, c.ID); now.Version != c.Version || now.ReviewStatus != domain.ReviewPromoted {
			t.Fatalf("the promoted candidate moved: %+v", now)
		}
	}
	res, _, err := b.ReviewCandidate(ctx, p, reviewMeta(p, "rev-p2", "sha256:p2", "event_vp2"), domain.CandidateReview{
		CandidateID: revScoped, ExpectedVersion: 1, Action: domain.ReviewActionMarkDuplicate, DuplicateOfCandidateID: c.ID, Reason: "already promoted"})
	if err != nil {
		t.Fatalf("a duplicate of a promoted candidate: %v", err)
	}
	wantReviewed(t, b, p, res, revScoped, domain.ReviewDuplicate, 2, c.ID, "", "already promoted")
}

// Attack (F11, the reject order): after A is marked a duplicate of B,
// rejecting B would leave A pointing at a rejected candidate — what marking
// a duplicate of a rejected candidate refuses ("point at the original").
// The original of duplicates is not rejected while they point at it, and
// nothing changes; once A is reopened, B may be.
func testReviewOriginalNotRejected(t *testing.T, in Instance) {
	b := in.Backend
	p := resolve(t, b, CredOwner)
	const a, orig = "candidate_772", fixtures.DemoCandidateID
	n := 0
	review := func(r domain.CandidateReview) error {
		n++
		key := fmt.Sprintf("chain-reject-%d", n)
		_, _, err := b.ReviewCandidate(ctx, p, reviewMeta(p, key, "sha256:"+key, "event_chainrej"+fmt.Sprint(n)), r)
		return err
	}
	if err := review(domain.CandidateReview{CandidateID: a, ExpectedVersion: getCandidate(t, b, p, a).Version,
		Action: domain.ReviewActionMarkDuplicate, DuplicateOfCandidateID: orig, Reason: "same receiver"}); err != nil {
		t.Fatalf("A a duplicate of B: %v", err)
	}
	before, counts := getCandidate(t, b, p, orig), in.Counts(t)
	err := review(domain.CandidateReview{CandidateID: orig, ExpectedVersion: before.Version, Action: domain.ReviewActionReject,
		Reason: "not for sale"})
	wantErr(t, err, domain.ErrTransitionInvalid, "B, the original of A, rejected")
	if after := getCandidate(t, b, p, orig); after.Version != before.Version || after.ReviewStatus != before.ReviewStatus {
		t.Fatalf("B changed: %+v → %+v", before, after)
	}
	if d := changed(counts, in.Counts(t)); len(d) != 0 {
		t.Fatalf("a refused review changed %v", d)
	}
	if err := review(domain.CandidateReview{CandidateID: a, ExpectedVersion: getCandidate(t, b, p, a).Version, Action: domain.ReviewActionReopen}); err != nil {
		t.Fatalf("reopen A: %v", err)
	}
	if err := review(domain.CandidateReview{CandidateID: orig, ExpectedVersion: before.Version, Action: domain.ReviewActionReject,
		Reason: "not for sale"}); err != nil {
		t.Fatalf("B rejected once nothing points at it: %v", err)
	}
}
