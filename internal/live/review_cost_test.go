package live_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/approval"
	"github.com/triunalabs/trovesnap/internal/contract"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/live"
	"github.com/triunalabs/trovesnap/internal/live/pgtest"
)

// The daily paid budget against a holder of the server key (migration 20,
// review: cost): a proposal's cost, a grant's maximum cost and a budget
// are amounts — finite, at least 0 — and what was spent today never goes
// below 0.

// rcNotification proposes (through the live backend, as the gate would) a
// free e-mail notification of the published sale and returns the proposal
// the shared builder sealed, with the principal that asked.
func rcNotification(t *testing.T, b *live.Backend, key string, channels ...string) (domain.Principal, domain.Proposal, error) {
	t.Helper()
	p, err := b.ResolvePrincipal(ctx, contract.CredOwner)
	if err != nil {
		t.Fatal(err)
	}
	s, err := b.GetSale(ctx, p, fixtures.PublishedSaleID)
	if err != nil {
		t.Fatal(err)
	}
	var built domain.Proposal
	capture := func(pr domain.Proposal) (string, error) { built = pr; return approval.Hash(pr) }
	d := domain.ProposalDraft{Action: domain.ActionBuyerNotify, Tool: domain.ExecutingTool{Name: "trove_notify_matched_buyers", Version: "1.0.0"},
		Requirement: "explicit_human", TargetIDs: []string{s.ID}, ExpectedVersions: []domain.TargetVersion{{ID: s.ID, Version: s.Version}},
		Fields: map[string]any{"audience": "followed_sale", "channels": channels, "message_template": "{{sale_title}} opens soon"}}
	prop, _, err := b.CreateProposal(ctx, p, benchMeta(p, "trove_propose_buyer_notification", key), d, capture)
	if err == nil {
		built.ID, built.Hash = prop.ID, prop.Hash
	}
	return p, built, err
}

// rcTampered is what an attacker sends mcp_create_proposal: the honest
// plan under a new id, with edit applied to its JSON form (the hash is
// recomputed where the proposal is still a domain.Proposal).
func rcTampered(t *testing.T, honest domain.Proposal, cost float64, edit func(map[string]any)) map[string]any {
	t.Helper()
	tp := honest
	tp.ID = domain.RandomIDs{}.New(domain.PrefixProposal)
	tp.CreatedAt = time.Now().UTC()
	tp.ExpiresAt = tp.CreatedAt.Add(time.Hour)
	tp.Impact.EstimatedCostUSD = cost
	n := *honest.Notification
	n.AudienceSize = 5_000_000
	tp.Notification = &n
	var err error
	if tp.Hash, err = approval.Hash(tp); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(tp)
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(m)
	}
	return m
}

// rcSend calls mcp_create_proposal directly with the server key.
func rcSend(t *testing.T, env *pgtest.Env, p domain.Principal, key string, proposal map[string]any) (int, map[string]any) {
	t.Helper()
	w := benchMeta(p, "trove_propose_buyer_notification", key)
	return rpcClient(t, env, contract.CredOwner, "mcp_create_proposal", map[string]any{"p_tool": w.Idem.Tool, "p_tool_major": 1, "p_key": w.Idem.Key, "p_fingerprint": w.Idem.Fingerprint,
		"p_event": w.Event, "p_started_at": time.Now().UTC().Format(time.RFC3339Nano), "p_proposal": proposal})
}

// rcSellerRPC calls a seller RPC directly as the signed-in user userID.
func rcSellerRPC(t *testing.T, env *pgtest.Env, userID, fn string, args map[string]any) (int, map[string]any) {
	t.Helper()
	body, _ := json.Marshal(args)
	req, _ := http.NewRequest(http.MethodPost, env.Endpoint.URL+"/rest/v1/rpc/"+fn, bytes.NewReader(body))
	req.Header.Set("apikey", env.Endpoint.Token("anon", time.Hour))
	req.Header.Set("Authorization", "Bearer "+env.Endpoint.UserToken(pgtest.AuthSubject(userID), time.Hour))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// rcSuper runs one statement as the superuser (a row stored before this
// migration, a check of a SQL function).
func rcSuper(t *testing.T, env *pgtest.Env, q string, args ...any) {
	t.Helper()
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// rcStoredBeforeTheFix stores a tampered proposal as mcp_create_proposal
// did before migration 20: with the cost check of the proposals trigger
// off (and without migration 32's derivation, which refuses any plan the
// current state does not give). It returns the proposal's id and hash.
func rcStoredBeforeTheFix(t *testing.T, env *pgtest.Env, p domain.Principal, honest domain.Proposal, cost float64) (string, string) {
	t.Helper()
	m := rcTampered(t, honest, cost, nil)
	rcSuper(t, env, "ALTER TABLE trovesnap.proposals DISABLE TRIGGER proposals_cost_budget")
	defer rcSuper(t, env, "ALTER TABLE trovesnap.proposals ENABLE TRIGGER proposals_cost_budget")
	rcWithoutDerivation(t, env, func() {
		if status, out := rcSend(t, env, p, "rc-old-"+randHex(4), m); status != http.StatusOK {
			t.Fatalf("storing the pre-fix proposal: HTTP %d %v", status, out)
		}
	})
	return m["id"].(string), m["proposal_hash"].(string)
}

// rcWithoutDerivation runs fn with mcp_create_proposal as it was before
// migration 32: trovesnap.derive_proposal answering the body itself, so
// every derived field is taken as sent. The function is restored after.
func rcWithoutDerivation(t *testing.T, env *pgtest.Env, fn func()) {
	t.Helper()
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var def string
	if err := conn.QueryRow(ctx, "SELECT pg_get_functiondef('trovesnap.derive_proposal(jsonb)'::regprocedure)").Scan(&def); err != nil {
		t.Fatal(err)
	}
	rcSuper(t, env, "CREATE OR REPLACE FUNCTION trovesnap.derive_proposal(p_body jsonb) RETURNS jsonb LANGUAGE sql STABLE AS $$ SELECT p_body $$")
	defer rcSuper(t, env, def)
	fn()
}

func rcSpentToday(t *testing.T, env *pgtest.Env, clientID string) float64 {
	t.Helper()
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var spent float64
	if err := conn.QueryRow(ctx, "SELECT trovesnap.paid_spent_today($1, $2)::float8", fixtures.DemoTenantID, clientID).Scan(&spent); err != nil {
		t.Fatal(err)
	}
	return spent
}

func rcWantInvalid(t *testing.T, what string, status int, out map[string]any, field string) {
	t.Helper()
	if status != http.StatusBadRequest || fmt.Sprint(out["message"]) != "trovesnap:invalid_input:"+field {
		b, _ := json.Marshal(out)
		t.Fatalf("%s: HTTP %d %s, want invalid_input:%s", what, status, b, field)
	}
}

// A buyer notification whose body claims a negative, missing, NaN or
// infinite cost (re-hashed, sent straight to mcp_create_proposal with the
// server key) is refused with invalid_input and nothing is stored; the
// honest plan itself is accepted. Since migration 32 the RPC refuses the
// body first (its impact and plan are not what the state gives:
// invalid_input:proposal); without that derivation, the proposals
// trigger still refuses the cost (invalid_input:estimated_cost_usd).
func TestReviewCost_ProposalCostMustBeAnAmount(t *testing.T) {
	env := seeded(t)
	b := newBackend(t, env)
	p, honest, err := rcNotification(t, b, "rc-honest", "email")
	if err != nil {
		t.Fatalf("the honest e-mail notification: %v", err)
	}
	cases := map[string]map[string]any{
		"a cost of -500":  rcTampered(t, honest, -500, nil),
		"a cost of -0.01": rcTampered(t, honest, -0.01, nil),
		"no cost":         rcTampered(t, honest, 0, func(m map[string]any) { delete(m["impact"].(map[string]any), "estimated_cost_usd") }),
		"a cost of NaN":   rcTampered(t, honest, 0, func(m map[string]any) { m["impact"].(map[string]any)["estimated_cost_usd"] = "NaN" }),
		"an infinite cost": rcTampered(t, honest, 0, func(m map[string]any) {
			m["impact"].(map[string]any)["estimated_cost_usd"] = "Infinity"
		}),
		"a cost as text": rcTampered(t, honest, 0, func(m map[string]any) { m["impact"].(map[string]any)["estimated_cost_usd"] = "0" }),
	}
	for name, m := range cases {
		before := counts(t, env)
		status, out := rcSend(t, env, p, "rc-"+randHex(4), m)
		rcWantInvalid(t, name, status, out, "proposal")
		flowUnchanged(t, env, before, name)
	}
	rcWithoutDerivation(t, env, func() {
		for name, m := range cases {
			before := counts(t, env)
			status, out := rcSend(t, env, p, "rc-"+randHex(4), m)
			rcWantInvalid(t, name+" (without the derivation)", status, out, "estimated_cost_usd")
			flowUnchanged(t, env, before, name)
		}
		// The same plan with its own cost (0) is stored by the trigger.
		if status, out := rcSend(t, env, p, "rc-ok0", rcTampered(t, honest, 0, nil)); status != http.StatusOK {
			t.Fatalf("the plan with a cost of 0 under a new id: HTTP %d %v", status, out)
		}
	})
	// The honest plan under a new id is stored.
	ok := honest
	ok.ID, ok.CreatedAt = domain.RandomIDs{}.New(domain.PrefixProposal), time.Now().UTC()
	ok.ExpiresAt = ok.CreatedAt.Add(time.Hour)
	if ok.Hash, err = approval.Hash(ok); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(ok)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	if status, out := rcSend(t, env, p, "rc-ok", m); status != http.StatusOK {
		t.Fatalf("the honest plan under a new id: HTTP %d %v", status, out)
	}
}

// A seller's grant whose maximum cost is negative, NaN or infinite is
// refused (invalid_input) and nothing changes: the proposal stays pending.
func TestReviewCost_GrantMaximumCostMustBeAnAmount(t *testing.T) {
	env := seeded(t)
	b := newBackend(t, env)
	_, prop, err := rcNotification(t, b, "rc-g", "email")
	if err != nil {
		t.Fatal(err)
	}
	owner := sellerAs(t, env, fixtures.DemoUserID)
	grant := func(maxCost float64) domain.Grant {
		now := time.Now().UTC()
		return domain.Grant{ID: domain.RandomIDs{}.New(domain.PrefixApproval), TenantID: prop.TenantID, ProposalID: prop.ID,
			ProposalHash: prop.Hash, IssuedBy: domain.GrantIssuer{Type: domain.IssuerHuman, ActorID: fixtures.DemoUserID, Surface: "review_cost_test"},
			Tool: prop.Tool.Name, TargetIDs: prop.TargetIDs, Constraints: domain.GrantConstraints{MaxItems: 1, MaxCostUSD: maxCost, AllowNotifications: true},
			Status: domain.GrantActive, SingleUse: true, IssuedAt: now, ExpiresAt: now.Add(30 * time.Minute)}
	}
	before := counts(t, env)
	if _, err := owner.IssueGrant(ctx, grant(-500)); !errors.Is(err, domain.ErrInvalidInput) {
		t.Fatalf("a grant of up to -$500: %v", err)
	}
	sameCounts(t, env, before, "a grant of up to -$500")
	for _, v := range []string{"NaN", "Infinity"} {
		g := grant(0)
		raw, _ := json.Marshal(g)
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		m["constraints"].(map[string]any)["maximum_cost_usd"] = v
		status, out := rcSellerRPC(t, env, fixtures.DemoUserID, "seller_issue_grant",
			map[string]any{"p_tenant_id": prop.TenantID, "p_actor_id": fixtures.DemoUserID, "p_grant": m})
		rcWantInvalid(t, "a grant of up to "+v, status, out, "maximum_cost_usd")
		sameCounts(t, env, before, "a grant of up to "+v)
	}
	got, err := owner.GetProposalAdmin(ctx, prop.TenantID, prop.ID)
	if err != nil || got.Status != domain.ProposalPending {
		t.Fatalf("after refused grants the proposal is %q, %v", got.Status, err)
	}
	// An amount is accepted.
	if _, err := owner.IssueGrant(ctx, grant(0)); err != nil {
		t.Fatalf("a grant of up to $0: %v", err)
	}
}

// seller_set_limits refuses a NaN or infinite paid budget (NaN compared
// false with every cost: no budget at all), directly and through the Go
// client, and the effective limits stay as they were.
func TestReviewCost_PaidBudgetMustBeFinite(t *testing.T) {
	env := seeded(t)
	owner := sellerAs(t, env, fixtures.DemoUserID)
	was, err := owner.EffectiveLimits(ctx, fixtures.DemoTenantID, "")
	if err != nil {
		t.Fatal(err)
	}
	before := counts(t, env)
	for _, v := range []string{"NaN", "Infinity"} {
		status, out := rcSellerRPC(t, env, fixtures.DemoUserID, "seller_set_limits", map[string]any{"p_tenant_id": fixtures.DemoTenantID,
			"p_client_id": "", "p_read_calls_per_minute": 120, "p_candidate_writes_per_minute": 20, "p_proposals_per_minute": 20,
			"p_controlled_actions_per_minute": 10, "p_maximum_bulk_targets": 50, "p_maximum_daily_paid_cost_usd": v})
		rcWantInvalid(t, "a paid budget of "+v, status, out, "limits")
		sameCounts(t, env, before, "a paid budget of "+v)
	}
	for _, v := range []float64{math.NaN(), math.Inf(1), -1} {
		l := domain.DefaultLimits()
		l.MaxDailyPaidCostUSD = v
		if err := owner.SetLimits(ctx, fixtures.DemoTenantID, "", l); !errors.Is(err, domain.ErrInvalidInput) {
			t.Fatalf("Seller.SetLimits with a paid budget of %v: %v", v, err)
		}
	}
	sameCounts(t, env, before, "refused paid budgets")
	if now, err := owner.EffectiveLimits(ctx, fixtures.DemoTenantID, ""); err != nil || now != was {
		t.Fatalf("limits after refusals = %+v, %v; were %+v", now, err, was)
	}
}

// A proposal stored with a negative cost before the fix and executed
// cannot drive what was spent today below 0: an honest paid notification
// is still refused under the $0 default budget, and nothing is stored.
func TestReviewCost_SpentTodayNeverGoesNegative(t *testing.T) {
	env := seeded(t)
	b := newBackend(t, env)
	p, honest, err := rcNotification(t, b, "rc-s", "email")
	if err != nil {
		t.Fatal(err)
	}
	id, _ := rcStoredBeforeTheFix(t, env, p, honest, -500)
	rcSuper(t, env, "UPDATE trovesnap.proposals SET status = 'executed', executed_at = now() WHERE id = $1", id)
	if s, c := rcSpentToday(t, env, ""), rcSpentToday(t, env, p.Client.ID); s != 0 || c != 0 {
		t.Fatalf("spent today with an executed -$500 proposal: tenant %v, client %v; want 0", s, c)
	}
	before := counts(t, env)
	if _, _, err := rcNotification(t, b, "rc-sms", "sms"); !errors.Is(err, domain.ErrCostLimit) {
		t.Fatalf("a paid SMS notification under a $0 budget after a -$500 execution: %v", err)
	}
	flowUnchanged(t, env, before, "a paid notification over budget")
}

// A proposal stored with a negative cost before the fix, approved with an
// honest $0 grant, is not executed (invalid_input): nothing changes, the
// grant stays active.
func TestReviewCost_StoredNegativeCostIsNotExecuted(t *testing.T) {
	env := seeded(t)
	b := newBackend(t, env)
	p, honest, err := rcNotification(t, b, "rc-x", "email")
	if err != nil {
		t.Fatal(err)
	}
	id, hash := rcStoredBeforeTheFix(t, env, p, honest, -500)
	now := time.Now().UTC()
	g, err := sellerAs(t, env, fixtures.DemoUserID).IssueGrant(ctx, domain.Grant{ID: domain.RandomIDs{}.New(domain.PrefixApproval),
		TenantID: p.TenantID, ProposalID: id, ProposalHash: hash,
		IssuedBy: domain.GrantIssuer{Type: domain.IssuerHuman, ActorID: fixtures.DemoUserID, Surface: "review_cost_test"},
		Tool:     honest.Tool.Name, TargetIDs: honest.TargetIDs, Constraints: domain.GrantConstraints{MaxItems: 1, AllowNotifications: true},
		Status: domain.GrantActive, SingleUse: true, IssuedAt: now, ExpiresAt: now.Add(30 * time.Minute)})
	if err != nil {
		t.Fatalf("a $0 grant: %v", err)
	}
	w := benchMeta(p, honest.Tool.Name, "rc-exec")
	w.Event.Tool.Tier = "controlled_action"
	w.Event.Approval = domain.EventApproval{ProposalID: &id, Decision: "allowed", ProposalHash: hash, ApprovalID: &g.ID}
	before := counts(t, env)
	_, _, err = b.ExecuteProposal(ctx, p, w, id, domain.Authorization{Decision: "allowed", GrantID: g.ID, ProposalHash: hash})
	if !errors.Is(err, domain.ErrInvalidInput) || !strings.Contains(err.Error(), "estimated_cost_usd") {
		t.Fatalf("executing a -$500 notification: %v", err)
	}
	flowUnchanged(t, env, before, "a refused execution")
	active, err := sellerAs(t, env, fixtures.DemoUserID).ListGrants(ctx, p.TenantID, domain.GrantActive)
	if err != nil || !slices.ContainsFunc(active, func(a domain.Grant) bool { return a.ID == g.ID }) {
		t.Fatalf("active grants after the refusal = %+v, %v; want %s among them", active, err, g.ID)
	}
}
