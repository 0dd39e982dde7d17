package live_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/contract"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/live/pgtest"
)

// candidateState is a candidate's review state as stored.
func candidateState(t *testing.T, env *pgtest.Env, id string) string {
	t.Helper()
	var s string
	superTx(t, env, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `SELECT review_status || ' v' || version || ' ' || coalesce(duplicate_of_candidate_id, '-') || ' '
			|| coalesce(duplicate_of_item_id, '-') || ' ' || review_reason FROM trovesnap.inventory_candidates WHERE id = $1`, id).Scan(&s)
	})
	return s
}

// mcp_review_candidate called directly — with a client token and the
// public key, past the Go gate — decides by itself what the gate and
// domain.CheckCandidateReview decide: a role without item.create_candidate,
// a client without the candidate_write group, every malformed review the
// Go side refuses before calling, and another tenant's duplicate target
// are refused with the gate's codes, and nothing changes (row counts, the
// candidate's state). The owner's well-formed call goes through.
func TestAuthority_ReviewCandidateRPCDecidesItself(t *testing.T) {
	env := seeded(t)
	const cand = "candidate_772" // needs_review, version 1
	review := func(r map[string]any) map[string]any {
		return writeArgs("trove_review_candidate", map[string]any{"p_review": r})
	}
	reject := map[string]any{"candidate_id": cand, "expected_version": 1, "action": "reject", "reason": "not for sale"}
	with := func(k string, v any) map[string]any {
		m := maps.Clone(reject)
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	_, noGroup := authorityClient(t, env, fixtures.CatalogerUserID, "tenant_read", "action_proposal")
	// A pricer's client that holds the group: its role still lacks the permission.
	_, pricer := authorityClient(t, env, fixtures.PricerUserID, "tenant_read", "candidate_write")
	cases := []struct {
		name, tok string
		args      map[string]any
		code      string
		detail    string
	}{
		{"a pricer's client without candidate_write", contract.CredPricer, review(reject), "permission_denied:candidate_write", ""},
		{"a pricer (no item.create_candidate) with the group", pricer, review(reject), "permission_denied:item.create_candidate", ""},
		{"a cataloger's client without candidate_write", noGroup, review(reject), "permission_denied:candidate_write", ""},
		{"an action that is not a review", contract.CredOwner, review(with("action", "approve")), "invalid_input:action", ""},
		{"no expected version", contract.CredOwner, review(with("expected_version", nil)), "invalid_input:expected_version", ""},
		{"a version that is not a number", contract.CredOwner, review(with("expected_version", "1")), "invalid_input:expected_version", ""},
		{"no reason", contract.CredOwner, review(with("reason", " ")), "invalid_input:reason", ""},
		{"a reason too long", contract.CredOwner, review(with("reason", strings.Repeat("x", 1001))), "invalid_input:reason", ""},
		{"a duplicate naming nothing", contract.CredOwner, review(with("action", "mark_duplicate")), "invalid_input:duplicate_of_candidate_id", ""},
		{"a rejection naming a target", contract.CredOwner, review(with("duplicate_of_item_id", fixtures.DemoItemID)), "invalid_input:duplicate_of_candidate_id", ""},
		{"a duplicate of itself", contract.CredOwner, review(map[string]any{"candidate_id": cand, "expected_version": 1, "action": "mark_duplicate",
			"duplicate_of_candidate_id": cand, "reason": "same"}), "invalid_input:duplicate_of_candidate_id", ""},
		{"another tenant's item as the target", contract.CredOwner, review(map[string]any{"candidate_id": cand, "expected_version": 1,
			"action": "mark_duplicate", "duplicate_of_item_id": "item_1290", "reason": "same"}), "invalid_reference:duplicate_of_item_id", `"cross_tenant": true`},
		{"another tenant's candidate", contract.CredOwner, review(with("candidate_id", "candidate_901")), "invalid_reference:candidate_id", `"cross_tenant": true`},
		{"a stale version", contract.CredOwner, review(with("expected_version", 7)), "stale_version", "candidate_772 is at version 1"},
		{"a seller's approval", contract.CredOwner, review(map[string]any{"candidate_id": "candidate_773", "expected_version": 2,
			"action": "reject", "reason": "no"}), "transition_invalid", "a seller approved it"},
	}
	stable := func() map[string]int64 {
		c := counts(t, env)
		delete(c, "rate_counters")
		return c
	}
	for _, c := range cases {
		before, was := stable(), candidateState(t, env, cand)
		st, out := rpcClient(t, env, c.tok, "mcp_review_candidate", c.args)
		wantRefused(t, c.name, st, out, c.code, c.detail)
		if after := stable(); !maps.Equal(before, after) {
			t.Fatalf("%s changed row counts: %v → %v", c.name, before, after)
		}
		if now := candidateState(t, env, cand); now != was {
			t.Fatalf("%s moved the candidate: %q → %q", c.name, was, now)
		}
	}

	st, out := rpcClient(t, env, contract.CredOwner, "mcp_review_candidate", review(reject))
	res, _ := out["result"].(map[string]any)
	c, _ := res["candidate"].(map[string]any)
	if st != 200 || c["review_status"] != "rejected" || c["version"] != float64(2) || c["review_reason"] != "not for sale" {
		t.Fatalf("the owner's review = %d %v", st, out)
	}
	if got := candidateState(t, env, cand); got != "rejected v2 - - not for sale" {
		t.Fatalf("stored = %q", got)
	}
}

// The generated review lookups answer as the domain for every action and
// every status (and for values that are neither).
func TestGeneratedRules_CandidateReviewAnswersAsTheDomain(t *testing.T) {
	conn := superConn(t, pgtest.Need(t))
	var acts []string
	if err := conn.QueryRow(ctx, "SELECT trovesnap.candidate_review_actions()").Scan(&acts); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(acts, domain.CandidateReviewActions()) {
		t.Fatalf("candidate_review_actions() = %v, domain %v", acts, domain.CandidateReviewActions())
	}
	for _, a := range append(domain.CandidateReviewActions(), "approve", "") {
		for _, from := range append(domain.ReviewStatuses(), "deleted", "") {
			var got *string
			if err := conn.QueryRow(ctx, "SELECT trovesnap.candidate_review_to($1, $2)", a, from).Scan(&got); err != nil {
				t.Fatal(err)
			}
			want := domain.ReviewStepTo(a, from)
			if (got == nil) != (want == "") || got != nil && *got != want {
				t.Errorf("candidate_review_to(%q, %q) = %v, domain %q", a, from, got, want)
			}
		}
	}
}
