package mcpserver_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/catalog"
)

// Issue 16, part 3, through a real go-sdk client and the gate on the real
// store: an agent rejects a candidate, marks one a duplicate of an item and
// reopens; the list and the read show the review state; a replay answers
// the original; refusals are the gate's codes and change nothing but the
// bookkeeping; a role that may not write candidates does not see the tool.
func TestReview_RejectDuplicateReopenThroughTheGate(t *testing.T) {
	e := newEnv(t)
	res, err := e.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(res.Tools, func(tl *mcp.Tool) bool { return tl.Name == "trove_review_candidate" })
	if i < 0 {
		t.Fatal("the owner's session does not list trove_review_candidate")
	}
	if a := res.Tools[i].Annotations; a == nil || a.ReadOnlyHint || (a.DestructiveHint != nil && *a.DestructiveHint) || !a.IdempotentHint {
		t.Fatalf("annotations = %+v: a candidate write is idempotent and not destructive", a)
	}

	rejectArgs := map[string]any{"candidate_id": "candidate_772", "expected_version": 1, "action": "reject",
		"reason": "a second photo of the same\u200b lamp", "idempotency_key": "review-0001"}
	env := e.call("trove_review_candidate", rejectArgs)
	if !strings.HasPrefix(env.Status, "succeeded") || env.isError {
		t.Fatalf("reject: %s", env.raw)
	}
	out := dataAs[catalog.ReviewCandidateResult](t, env)
	if c := out.Candidate; c.ReviewStatus != "rejected" || c.Version != 2 || c.ReviewReason != "a second photo of the same lamp" ||
		out.PreviousStatus != "needs_review" || out.CanonicalItemChanged || !c.Untrusted {
		t.Fatalf("result = %+v", out)
	}
	if !slices.Contains(env.Related.CandidateIDs, "candidate_772") || env.Audit.PluginEventID == "" {
		t.Fatalf("related %+v audit %+v", env.Related, env.Audit)
	}
	if n := e.query("SELECT count(*) FROM plugin_events WHERE id = ? AND body LIKE '%trove_review_candidate%'", env.Audit.PluginEventID); n != 1 {
		t.Fatalf("the review's event is not recorded (%d)", n)
	}
	after := e.digest()
	again := e.call("trove_review_candidate", rejectArgs)
	if !again.Audit.Replayed || string(again.Data) != string(env.Data) {
		t.Fatalf("replay: %s", again.raw)
	}
	assertOnlyEventsChanged(t, after, e.digest())

	// Listed under rejected with its reason.
	list := dataAs[catalog.ListCandidatesOutput](t, e.call("trove_list_candidates", map[string]any{"review_status": "rejected", "limit": 100}))
	if !slices.ContainsFunc(list.Candidates, func(c catalog.CandidateSummary) bool { return c.ID == "candidate_772" }) {
		t.Fatalf("rejected list: %+v", list.Candidates)
	}
	if c := dataAs[catalog.GetCandidateOutput](t, e.call("trove_get_candidate", map[string]any{"candidate_id": "candidate_772"})).Candidate; c.ReviewReason == "" {
		t.Fatalf("rejected candidate read back without its reason: %+v", c)
	}

	// A duplicate of an item, then read back.
	env = e.call("trove_review_candidate", map[string]any{"candidate_id": "candidate_775", "expected_version": 1, "action": "mark_duplicate",
		"duplicate_of_item_id": "item_1151", "reason": "already catalogued", "idempotency_key": "review-0002"})
	if !strings.HasPrefix(env.Status, "succeeded") {
		t.Fatalf("duplicate: %s", env.raw)
	}
	got := dataAs[catalog.GetCandidateOutput](t, e.call("trove_get_candidate", map[string]any{"candidate_id": "candidate_775"}))
	if c := got.Candidate; c.ReviewStatus != "duplicate" || c.DuplicateOfItemID != "item_1151" || c.DuplicateOfCandidateID != "" || c.Version != 2 {
		t.Fatalf("read back = %+v", c)
	}
	dups := dataAs[catalog.ListCandidatesOutput](t, e.call("trove_list_candidates", map[string]any{"review_status": "duplicate"}))
	if len(dups.Candidates) != 1 || dups.Candidates[0].ID != "candidate_775" {
		t.Fatalf("duplicate list: %+v", dups.Candidates)
	}

	// Reopen: awaiting review again, the duplicate's target cleared.
	env = e.call("trove_review_candidate", map[string]any{"candidate_id": "candidate_775", "expected_version": 2, "action": "reopen",
		"idempotency_key": "review-0003"})
	if out := dataAs[catalog.ReviewCandidateResult](t, env); out.Candidate.ReviewStatus != "needs_review" || out.Candidate.DuplicateOfItemID != "" || out.Candidate.Version != 3 {
		t.Fatalf("reopen: %s", env.raw)
	}

	// Refusals: the gate's codes, nothing but bookkeeping changes.
	for _, c := range []struct {
		args         map[string]any
		status, code string
	}{
		{map[string]any{"candidate_id": "candidate_773", "expected_version": 2, "action": "reject", "reason": "no"}, "failed", "domain_transition_invalid"},
		{map[string]any{"candidate_id": "candidate_771", "expected_version": 1, "action": "reject", "reason": "no"}, "failed", "stale_target_version"},
		{map[string]any{"candidate_id": "candidate_771", "expected_version": 3, "action": "approve", "reason": "no"}, "failed", "invalid_input"},
		{map[string]any{"candidate_id": "candidate_771", "expected_version": 3, "action": "reject"}, "failed", "invalid_input"},
		{map[string]any{"candidate_id": "candidate_771", "expected_version": 3, "action": "mark_duplicate", "duplicate_of_item_id": "item_1290", "reason": "x"}, "failed", "invalid_reference"},
		{map[string]any{"candidate_id": "candidate_901", "expected_version": 1, "action": "reject", "reason": "x"}, "failed", "invalid_reference"},
	} {
		c.args["idempotency_key"] = "review-refused-" + c.args["action"].(string) + "-" + c.args["candidate_id"].(string)
		before := e.digest()
		r := e.call("trove_review_candidate", c.args)
		if r.Status != c.status || len(r.Errors) != 1 || r.Errors[0].Code != c.code || !r.isError {
			t.Errorf("%v: %s/%+v, want %s/%s\n%s", c.args, r.Status, r.Errors, c.status, c.code, r.raw)
		}
		assertOnlyEventsChanged(t, before, e.digest())
	}

	// A pricer does not write candidates: the tool is not listed, and a
	// call is blocked before it reaches the store.
	_, tok := e.register(fixtures.DemoTenantID, fixtures.PricerUserID)
	cs := connect(t, e.gate, tok)
	if slices.Contains(listNames(t, cs), "trove_review_candidate") {
		t.Fatal("a pricer's session lists trove_review_candidate")
	}
	before := e.digest()
	wantCode(t, callOn(t, cs, "trove_review_candidate", map[string]any{"candidate_id": "candidate_771", "expected_version": 3,
		"action": "reject", "reason": "no", "idempotency_key": "review-pricer-01"}, nil), "blocked", "tool_not_available")
	assertOnlyEventsChanged(t, before, e.digest())
}
