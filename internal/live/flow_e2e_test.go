package live_test

import (
	"encoding/json"
	"errors"
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

// A seller session is the whole human approval surface in live mode.
var _ domain.ApprovalAdmin = (*live.Seller)(nil)

// §41 in live mode, end to end: a real MCP client over the live gate and
// Backend on PostgreSQL, the seller approving through the approval service
// under its own JWT. list → candidate → propose promotion → execution
// blocked until a human grant → grant → execution (a draft item with
// provenance) → propose publication of a ready item → grant → publish →
// the buyer's public view.
func TestFlow_ProposeApproveExecuteLive(t *testing.T) {
	env := seeded(t)
	lg := newLiveGate(t, env)
	cs := connect(t, lg.g, contract.CredOwner)
	seller := approval.Service{Admin: sellerAs(t, env, fixtures.DemoUserID), Clock: domain.SystemClock{}, IDs: domain.RandomIDs{}}
	data := func(name string, e map[string]any) map[string]any {
		t.Helper()
		if e["mode"] != "live" || (e["status"] != "succeeded" && e["status"] != "succeeded_with_warnings" && e["status"] != "proposed") {
			t.Fatalf("%s = %s", name, mustJSON(e))
		}
		return e["data"].(map[string]any)
	}
	approve := func(proposalID, hash string) domain.Grant {
		t.Helper()
		g, err := seller.Approve(ctx, approval.ApproveRequest{TenantID: fixtures.DemoTenantID, ProposalID: proposalID,
			ExpectedHash: hash, ActorID: fixtures.DemoUserID})
		if err != nil {
			t.Fatalf("approve %s: %v", proposalID, err)
		}
		return g
	}

	for _, tool := range []string{"trove_list_sales", "trove_list_items"} {
		data(tool, call(t, cs, tool, map[string]any{}))
	}
	cand := data("trove_create_candidate", call(t, cs, "trove_create_candidate", map[string]any{"sale_id": fixtures.PublishedSaleID,
		"title": "Teak bar cart", "category": "furniture.cart", "room": "den", "idempotency_key": "flow-cand-1"}))
	candID := cand["candidate_id"].(string)

	prop := data("trove_propose_candidate_promotion", call(t, cs, "trove_propose_candidate_promotion", map[string]any{
		"candidate_id": candID, "expected_version": 1, "idempotency_key": "flow-prop-1"}))
	promo, promoHash := prop["proposal_id"].(string), prop["proposal_hash"].(string)
	if prop["status"] != domain.ProposalPending || prop["approval"].(map[string]any)["decision"] != "human_approval_required" ||
		!domain.ValidID(domain.PrefixProposal, promo) || !strings.HasPrefix(promoHash, "sha256:") {
		t.Fatalf("proposal = %s", mustJSON(prop))
	}

	// Without a grant: approval_required, and nothing changes.
	before := counts(t, env)
	blocked := call(t, cs, "trove_execute_candidate_promotion", map[string]any{"proposal_id": promo, "idempotency_key": "flow-exec-0"})
	if blocked["status"] != "approval_required" || !strings.Contains(mustJSON(blocked["errors"]), `"approval_required"`) {
		t.Fatalf("execution without a grant = %s", mustJSON(blocked))
	}
	flowUnchanged(t, env, before, "a blocked execution")

	g := approve(promo, promoHash)
	if g.Status != domain.GrantActive || g.ProposalHash != promoHash || !g.SingleUse {
		t.Fatalf("grant = %+v", g)
	}
	execArgs := map[string]any{"proposal_id": promo, "idempotency_key": "flow-exec-1"}
	done := data("trove_execute_candidate_promotion", call(t, cs, "trove_execute_candidate_promotion", execArgs))
	created, _ := done["created_item_ids"].([]any)
	if done["executed"] != true || done["simulated"] != false || done["domain_function"] != "promote_inventory_candidate" || len(created) != 1 ||
		done["approval"].(map[string]any)["approval_id"] != g.ID {
		t.Fatalf("promotion = %s", mustJSON(done))
	}
	newItem := created[0].(string)
	item := data("trove_get_item", call(t, cs, "trove_get_item", map[string]any{"item_id": newItem}))
	if it := item["item"].(map[string]any); it["status"] != domain.ItemDraft || it["title"] != "Teak bar cart" || it["room"] != "den" {
		t.Fatalf("promoted item = %s", mustJSON(item))
	}
	got := data("trove_get_proposal", call(t, cs, "trove_get_proposal", map[string]any{"proposal_id": promo}))
	if got["status"] != domain.ProposalExecuted || got["proposal_hash"] != promoHash {
		t.Fatalf("executed proposal = %s", mustJSON(got))
	}
	// A network retry replays the result and writes nothing.
	before = counts(t, env)
	replay := call(t, cs, "trove_execute_candidate_promotion", execArgs)
	if mustJSON(replay["data"]) != mustJSON(done) {
		t.Fatalf("replay = %s", mustJSON(replay))
	}
	flowUnchanged(t, env, before, "a replayed execution")

	// Publication of a ready item: invisible to buyers until executed.
	hidden := call(t, connect(t, lg.g, ""), "trove_get_public_item", map[string]any{"item_id": "item_1003"})
	if hidden["status"] != "failed" || !strings.Contains(mustJSON(hidden["errors"]), "invalid_reference") {
		t.Fatalf("a ready item seen publicly: %s", mustJSON(hidden))
	}
	pub := data("trove_propose_item_publication", call(t, cs, "trove_propose_item_publication", map[string]any{
		"item_id": "item_1003", "expected_version": 2, "idempotency_key": "flow-pub-1"}))
	pubID := pub["proposal_id"].(string)
	approve(pubID, pub["proposal_hash"].(string))
	published := data("trove_publish_item", call(t, cs, "trove_publish_item", map[string]any{"proposal_id": pubID, "idempotency_key": "flow-pub-exec-1"}))
	results := published["results"].([]any)
	if len(results) != 1 || results[0].(map[string]any)["new_version"] != float64(3) || results[0].(map[string]any)["outcome"] != "applied" {
		t.Fatalf("publication = %s", mustJSON(published))
	}
	view := data("trove_get_public_item", call(t, connect(t, lg.g, ""), "trove_get_public_item", map[string]any{"item_id": "item_1003"}))
	pi := view["item"].(map[string]any)
	if pi["id"] != "item_1003" || pi["status"] != "available" || pi["price_cents"] == nil || len(pi["photos"].([]any)) == 0 {
		t.Fatalf("public item = %s", mustJSON(view))
	}
	for _, k := range []string{"internal_price_guidance_cents", "cost_basis_cents", "staff_notes", "appraisal_flag"} {
		if _, ok := pi[k]; ok {
			t.Fatalf("the public view carries %s: %s", k, mustJSON(pi))
		}
	}
	// The publication is the item's lifecycle history, sourced from the proposal.
	hist := data("trove_list_status_events", call(t, cs, "trove_list_status_events", map[string]any{"item_id": "item_1003"}))
	found := false
	for _, e := range hist["events"].([]any) {
		ev := e.(map[string]any)
		found = found || (ev["to_status"] == domain.ItemPublished && ev["from_status"] == domain.ItemReady &&
			ev["source_type"] == "proposal" && ev["proposal_id"] == pubID && ev["actor_id"] == fixtures.DemoUserID)
	}
	if !found {
		t.Fatalf("status history = %s", mustJSON(hist))
	}

	// Every write's event committed with it, joined by the proposal's
	// correlation: proposal → grant → execution.
	events, err := env.Events(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]domain.Event{}
	var chain []string
	for _, ev := range events {
		byID[ev.ID] = ev
		if slices.Contains(ev.Related.ProposalIDs, promo) && ev.Outcome == domain.OutcomeSuccess {
			chain = append(chain, ev.Action)
		}
	}
	if !slices.Equal(chain, []string{"mcp_tool_called", "approval_granted", "mcp_tool_called"}) {
		t.Fatalf("events of the promotion = %v", chain)
	}
	var exec domain.Event
	for _, ev := range events {
		if ev.Tool.Name == "trove_execute_candidate_promotion" && ev.Outcome == domain.OutcomeSuccess {
			exec = ev
		}
	}
	grantEv := byID[deref(exec.CausationID)]
	if grantEv.Action != "approval_granted" || deref(grantEv.Approval.ApprovalID) != g.ID || byID[deref(grantEv.CausationID)].Tool.Name != "trove_propose_candidate_promotion" {
		t.Fatalf("execution caused by %+v", grantEv)
	}
}

// A policy authorises what it names, once per its daily limit, through the
// gate: the execution records a policy grant and a use; the next proposal
// past the limit needs a human.
func TestFlow_PolicyAuthorisesWithinItsLimitLive(t *testing.T) {
	env := seeded(t)
	lg := newLiveGate(t, env)
	cs := connect(t, lg.g, contract.CredOwner)
	admin := sellerAs(t, env, fixtures.DemoUserID)
	pol, err := admin.CreatePolicy(ctx, domain.Policy{TenantID: fixtures.DemoTenantID, Name: "Promote in the draft sale",
		AllowedTools: []string{"trove_execute_candidate_promotion"}, Scope: domain.PolicyScope{EstateSaleIDs: []string{fixtures.DraftSaleID}},
		Conditions: domain.PolicyConditions{MaxItemsPerRun: 1, PermittedFields: []string{"create_item.sale_id", "create_item.title",
			"create_item.description", "create_item.category", "create_item.room", "create_item.status", "review_status"}},
		Limits: domain.PolicyLimits{MaxDailyActions: 1}, CreatedBy: fixtures.DemoUserID})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.SetPolicyStatus(ctx, pol.ID, domain.PolicyActive, fixtures.DemoUserID); err != nil {
		t.Fatal(err)
	}
	propose := func(candidate string, version int, key string) string {
		t.Helper()
		e := call(t, cs, "trove_propose_candidate_promotion", map[string]any{"candidate_id": candidate, "expected_version": version, "idempotency_key": key})
		if e["status"] != "proposed" {
			t.Fatalf("propose %s: %s", candidate, mustJSON(e))
		}
		return e["data"].(map[string]any)["proposal_id"].(string)
	}
	// Candidates without a supplied price: a promotion that prices its item
	// is a financial change, which no policy runs.
	unpriced := func(title, key string) string {
		t.Helper()
		e := call(t, cs, "trove_create_candidate", map[string]any{"sale_id": fixtures.DraftSaleID, "title": title, "idempotency_key": key})
		id, _ := e["data"].(map[string]any)["candidate_id"].(string)
		if e["status"] != "succeeded" || id == "" {
			t.Fatalf("create candidate: %s", mustJSON(e))
		}
		return id
	}
	first := propose(unpriced("Brass floor lamp", "pol-cand-1"), 1, "pol-prop-1")
	done := call(t, cs, "trove_execute_candidate_promotion", map[string]any{"proposal_id": first, "idempotency_key": "pol-exec-1"})
	d, _ := done["data"].(map[string]any)
	if done["status"] != "succeeded" || d["approval"].(map[string]any)["decision"] != "allowed_by_policy" ||
		d["approval"].(map[string]any)["policy_id"] != pol.ID {
		t.Fatalf("execution by policy = %s", mustJSON(done))
	}
	second := propose(unpriced("Pewter candlestick", "pol-cand-2"), 1, "pol-prop-2")
	before := counts(t, env)
	over := call(t, cs, "trove_execute_candidate_promotion", map[string]any{"proposal_id": second, "idempotency_key": "pol-exec-2"})
	if over["status"] != "approval_required" {
		t.Fatalf("past the policy's daily limit = %s", mustJSON(over))
	}
	flowUnchanged(t, env, before, "an execution past the policy's limit")
	var uses int
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM trovesnap.policy_uses WHERE policy_id = $1 AND proposal_id = $2", pol.ID, first).Scan(&uses); err != nil || uses != 1 {
		t.Fatalf("policy uses = %d, %v", uses, err)
	}
	var body string
	if err := conn.QueryRow(ctx, "SELECT constraints::text FROM trovesnap.approval_grants WHERE proposal_id = $1 AND issuer_type = 'policy'", first).Scan(&body); err != nil {
		t.Fatalf("policy grant: %v", err)
	}
	var c domain.GrantConstraints
	if err := json.Unmarshal([]byte(body), &c); err != nil || c.MaxItems != 1 {
		t.Fatalf("policy grant constraints = %s (%v)", body, err)
	}
}

// A seller session acts only as its own user: a grant (or a revocation)
// naming another actor is refused by the database from the JWT, even when
// that actor could approve, and nothing changes.
func TestSellerGrants_ActOnlyAsTheSignedInUser(t *testing.T) {
	env := seeded(t)
	lg := newLiveGate(t, env)
	cs := connect(t, lg.g, contract.CredOwner)
	e := call(t, cs, "trove_propose_sale_publication", map[string]any{"sale_id": fixtures.DraftSaleID, "expected_version": 2, "idempotency_key": "as-key-0001"})
	if e["status"] != "proposed" {
		t.Fatalf("proposal = %s", mustJSON(e))
	}
	owner := sellerAs(t, env, fixtures.DemoUserID)
	prop, err := owner.GetProposalAdmin(ctx, fixtures.DemoTenantID, e["data"].(map[string]any)["proposal_id"].(string))
	if err != nil {
		t.Fatal(err)
	}
	g := domain.Grant{ID: domain.RandomIDs{}.New(domain.PrefixApproval), TenantID: prop.TenantID, ProposalID: prop.ID, ProposalHash: prop.Hash,
		IssuedBy: domain.GrantIssuer{Type: domain.IssuerHuman, ActorID: fixtures.ManagerUserID, Surface: "test"}, Tool: prop.Tool.Name,
		TargetIDs: prop.TargetIDs, Constraints: domain.GrantConstraints{MaxItems: 1, AllowPublication: true}, Status: domain.GrantActive,
		SingleUse: true, IssuedAt: prop.CreatedAt, ExpiresAt: prop.ExpiresAt}
	before := counts(t, env)
	if _, err := owner.IssueGrant(ctx, g); !errors.Is(err, domain.ErrPermissionDenied) {
		t.Fatalf("the owner's session issuing as the manager: %v", err)
	}
	// A grant outliving its proposal is refused too.
	long := g
	long.IssuedBy.ActorID = fixtures.DemoUserID
	long.ExpiresAt = prop.ExpiresAt.Add(time.Minute)
	if _, err := owner.IssueGrant(ctx, long); !errors.Is(err, domain.ErrInvalidInput) {
		t.Fatalf("a grant outliving its proposal: %v", err)
	}
	flowUnchanged(t, env, before, "a refused grant")
	g.IssuedBy.ActorID = fixtures.DemoUserID
	issued, err := owner.IssueGrant(ctx, g)
	if err != nil {
		t.Fatal(err)
	}
	before = counts(t, env)
	if _, err := owner.RevokeGrant(ctx, fixtures.DemoTenantID, issued.ID, fixtures.ManagerUserID); !errors.Is(err, domain.ErrPermissionDenied) {
		t.Fatalf("the owner's session revoking as the manager: %v", err)
	}
	if _, err := sellerAs(t, env, fixtures.CatalogerUserID).RevokeGrant(ctx, fixtures.DemoTenantID, issued.ID, fixtures.CatalogerUserID); !errors.Is(err, domain.ErrPermissionDenied) {
		t.Fatalf("a cataloger revoking: %v", err)
	}
	if _, err := sellerAs(t, env, fixtures.OtherOwnerUserID).RevokeGrant(ctx, fixtures.OtherTenantID, issued.ID, fixtures.OtherOwnerUserID); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("another tenant's owner revoking: %v", err)
	}
	flowUnchanged(t, env, before, "a refused revocation")
	gs, err := owner.ListGrants(ctx, fixtures.DemoTenantID, "")
	if err != nil || len(gs) != 1 || gs[0].ID != issued.ID || gs[0].Status != domain.GrantActive {
		t.Fatalf("grants after refused revocations = %+v, %v", gs, err)
	}
}

// flowUnchanged fails unless no table but the per-call bookkeeping (rate
// counters, and events, which a refused call records) changed since before.
func flowUnchanged(t *testing.T, env *pgtest.Env, before map[string]int64, what string) {
	t.Helper()
	after := counts(t, env)
	for table, n := range after {
		if table != "rate_counters" && table != "plugin_events" && before[table] != n {
			t.Fatalf("%s changed %s: %d → %d", what, table, before[table], n)
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
