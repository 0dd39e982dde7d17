package tui

import (
	"context"
	"database/sql"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/approval"
	"github.com/triunalabs/trovesnap/internal/domain"
)

const execPromotion = "trove_execute_candidate_promotion"

func wantAction(t *testing.T, m Model, k string, want Action) {
	t.Helper()
	if got := act(m, k); !reflect.DeepEqual(got, want) {
		t.Fatalf("key %q: action %#v, want %#v", k, got, want)
	}
}

// field is a line of the approval confirmation's grant form.
func field(label, v string) string { return fmt.Sprintf("%-22s %s", label, v) }

func succeeded(e envelope) bool { return strings.HasPrefix(e.Status, "succeeded") }

// The proof: the agent's execution is approval_required until the
// seller approves in the terminal (enter, a, y), and then succeeds in the
// same store; the grant records the human, the actor and the surface.
func TestApprove_EnterAYGrantsAndTheAgentsExecutionSucceeds(t *testing.T) {
	h := newHarness(t)
	pid := h.proposePromotion()
	if e := h.execute(execPromotion, pid); e.Status != "approval_required" {
		t.Fatalf("before approval: %s", e.raw)
	}

	m := h.open(fixtures.DemoUserID)
	mustContain(t, m, pid, "promote_candidate ×1", "controlled_write", "1h00m")
	wantAction(t, m, "enter", OpenProposal{ID: pid})
	m = h.press(m, "enter")
	mustContain(t, m, "Targets (1): expected → current version", "candidate_771", "v3 → v3", "trove_execute_candidate_promotion")
	m = h.press(m, "j", "j", "j", "j", "j", "j", "j", "j", "j", "j")
	mustContain(t, m, "Impact", "canonical items created 1")
	m = h.press(m, "k", "k", "k", "k", "k", "k", "k", "k", "k", "k")
	wantAction(t, m, "a", StartApprove{ID: pid})
	m = h.press(m, "a")
	p := h.proposal(pid)
	mustContain(t, m, "Approve "+pid+"?", "bound to exactly this proposal and to the agent that asked for it,",
		p.RequestedBy.ClientID+" acting for "+p.RequestedBy.ActorID+"; the proposal's hash is", p.Hash)

	wantAction(t, m, "y", Approve{ProposalID: pid, Hash: p.Hash, Constraints: approval.DefaultConstraints(p), TTL: 30 * time.Minute})
	if n := len(h.grants("")); n != 0 {
		t.Fatalf("%d grants before y", n)
	}
	m = h.press(m, "y")
	gs := h.grants(domain.GrantActive)
	if len(gs) != 1 {
		t.Fatalf("grants after y: %+v", h.grants(""))
	}
	g := gs[0]
	if g.IssuedBy != (domain.GrantIssuer{Type: domain.IssuerHuman, ActorID: fixtures.DemoUserID, Surface: approval.SurfaceApproveTUI}) ||
		g.ProposalID != pid || g.ProposalHash != p.Hash || !g.SingleUse || !g.ExpiresAt.Equal(fixtures.Epoch.Add(30*time.Minute)) {
		t.Fatalf("grant %+v", g)
	}
	mustContain(t, m, "✓ approved "+pid, "[Queue 0]")
	if len(m.stack) != 0 {
		t.Fatalf("after approving, the queue should show; stack %d", len(m.stack))
	}

	if e := h.execute(execPromotion, pid); !succeeded(e) {
		t.Fatalf("execution after approval: %s", e.raw)
	}
	if g := h.grants(""); g[0].Status != domain.GrantConsumed {
		t.Fatalf("grant after execution %+v", g[0])
	}
}

// Nothing but a y on the confirmation authorises: backing out, a member
// without approval.grant, and a denial all leave the execution refused,
// and none writes a grant.
func TestApprove_NothingElseLetsTheExecutionSucceed(t *testing.T) {
	h := newHarness(t)
	pid := h.proposePromotion()

	m := h.open(fixtures.DemoUserID)
	m = h.press(m, "a", "esc", "enter", "a", "esc", "esc", "j", "tab", "tab", "tab", "tab")
	if e := h.execute(execPromotion, pid); e.Status != "approval_required" {
		t.Fatalf("after backing out: %s", e.raw)
	}

	cat := h.open(fixtures.CatalogerUserID)
	mustContain(t, cat, pid, "read-only: user_90 (cataloger) may browse")
	before := h.digest()
	cat = h.press(cat, "a")
	mustContain(t, cat, "✗ user_90 (cataloger) may browse but not decide")
	cat = h.press(cat, "enter", "a", "d", "y")
	if len(cat.stack) != 1 {
		t.Fatalf("a cataloger reached a confirmation: %d screens", len(cat.stack))
	}
	// The service refuses it too, whatever the terminal shows.
	svc := &approval.Service{Admin: h.st, Clock: h.clock, IDs: h.ids}
	if _, err := svc.Approve(context.Background(), approval.ApproveRequest{TenantID: fixtures.DemoTenantID, ProposalID: pid, ActorID: fixtures.CatalogerUserID}); err == nil {
		t.Fatal("the service let a cataloger approve")
	}
	if after := h.digest(); !reflect.DeepEqual(before, after) {
		t.Fatal("a refused decision changed the store")
	}
	if e := h.execute(execPromotion, pid); e.Status != "approval_required" {
		t.Fatalf("after a cataloger's attempts: %s", e.raw)
	}

	m = h.press(m, "d", "y")
	if got := h.proposal(pid).Status; got != domain.ProposalDenied {
		t.Fatalf("after d y: %s", got)
	}
	if e := h.execute(execPromotion, pid); succeeded(e) || e.Status == "approval_required" {
		t.Fatalf("a denied proposal: %s", e.raw)
	}
	if n := len(h.grants("")); n != 0 {
		t.Fatalf("%d grants", n)
	}
}

// The grant's constraints and expiry are editable within bounds: never
// below what the proposal needs, never above the tenant's limits or the
// proposal's life.
func TestApprove_ConstraintsAndExpiryEditableWithinBounds(t *testing.T) {
	h := newHarness(t)
	it := readyItem(t)
	pid := h.propose("trove_propose_item_publication", map[string]any{"item_id": it.ID, "expected_version": it.Version})
	m := h.open(fixtures.DemoUserID)
	m = h.press(m, "a")
	mustContain(t, m, "Approve "+pid, field("publication", "allowed"), "(1–50)")

	m = h.press(m, "down", "down", "enter") // publication: needed by this proposal
	mustContain(t, m, "needed: this proposal changes public records", field("publication", "allowed"))
	m = h.press(m, "k", "k", "enter")
	m = h.typeText(m, "0")
	m = h.press(m, "enter")
	mustContain(t, m, "maximum items must be between 1")
	m = h.press(m, "enter")
	m = h.typeText(m, "51")
	m = h.press(m, "enter")
	mustContain(t, m, "maximum items must be between 1 (the proposal's targets) and 50")
	m = h.press(m, "enter")
	m = h.typeText(m, "3")
	m = h.press(m, "enter")
	mustContain(t, m, field("maximum items", "3"))

	m = h.press(m, "j", "j", "j", "j", "enter")
	m = h.typeText(m, "61") // the proposal has 60 minutes left
	m = h.press(m, "enter")
	mustContain(t, m, "expiry must be between 1 and 60 minutes")
	// While typing, q and y are text, not quit and confirm.
	m = h.press(m, "enter", "q", "y", "backspace", "5", "enter")
	if h.quit {
		t.Fatal("q quit while a field was being edited")
	}
	m = h.press(m, "y")
	gs := h.grants(domain.GrantActive)
	if len(gs) != 1 {
		t.Fatalf("grants %+v; screen:\n%s", h.grants(""), plain(m))
	}
	want := domain.GrantConstraints{MaxItems: 3, MaxCostUSD: 0, AllowPublication: true}
	if gs[0].Constraints != want || !gs[0].ExpiresAt.Equal(fixtures.Epoch.Add(5*time.Minute)) {
		t.Fatalf("grant %+v", gs[0])
	}
}

// A proposal whose target moved while it is on screen cannot be approved:
// the poll re-reviews it, the screen says so, y is refused, nothing is
// written.
func TestApprove_StaleWhileOnScreenCannotBeApproved(t *testing.T) {
	h := newHarness(t)
	// Two proposals to promote the same candidate at version 3: when one
	// runs, the candidate moves to version 4 and the other goes stale.
	p1, p2 := h.proposePromotion(), h.proposePromotion()

	m := h.open(fixtures.DemoUserID)
	m = h.press(m, "j") // newest first: p2, then p1
	wantAction(t, m, "a", StartApprove{ID: p1})
	m = h.press(m, "a")
	mustContain(t, m, "Approve "+p1+"?")

	// Meanwhile the other proposal on the same item is approved and runs.
	svc := &approval.Service{Admin: h.st, Clock: h.clock, IDs: h.ids}
	if _, err := svc.Approve(context.Background(), approval.ApproveRequest{TenantID: fixtures.DemoTenantID, ProposalID: p2, ActorID: fixtures.DemoUserID}); err != nil {
		t.Fatal(err)
	}
	if e := h.execute(execPromotion, p2); !succeeded(e) {
		t.Fatalf("execute p2: %s", e.raw)
	}
	m = h.tick(m, 2*time.Second)
	mustContain(t, m, "✗ cannot be approved: stale: ["+fixtures.DemoCandidateID+"] changed")
	before := len(h.grants(""))
	m = h.press(m, "y")
	mustContain(t, m, "✗ cannot approve: stale")
	m = h.press(m, "esc", "enter")
	mustContain(t, m, "STALE")
	if len(h.grants("")) != before || h.proposal(p1).Status != domain.ProposalPending {
		t.Fatal("a stale proposal was approved")
	}
}

// A proposal that expires, or that is executed elsewhere, while the seller
// looks at it cannot be approved.
func TestApprove_ExpiredOrExecutedWhileViewedCannotBeApproved(t *testing.T) {
	h := newHarness(t)
	pid := h.proposePromotion()
	m := h.open(fixtures.DemoUserID)
	m = h.press(m, "a")
	mustContain(t, m, "(1–60) →")
	m = h.tick(m, 60*time.Minute)
	mustContain(t, m, "✗ cannot be approved: the proposal expired")
	m = h.press(m, "y")
	mustContain(t, m, "✗ cannot approve: the proposal expired")
	if n := len(h.grants("")); n != 0 {
		t.Fatalf("%d grants for an expired proposal", n)
	}

	h2 := newHarness(t)
	pid = h2.proposePromotion()
	m = h2.open(fixtures.DemoUserID)
	m = h2.press(m, "enter")
	svc := &approval.Service{Admin: h2.st, Clock: h2.clock, IDs: h2.ids}
	if _, err := svc.Approve(context.Background(), approval.ApproveRequest{TenantID: fixtures.DemoTenantID, ProposalID: pid, ActorID: fixtures.ManagerUserID}); err != nil {
		t.Fatal(err)
	}
	if e := h2.execute(execPromotion, pid); !succeeded(e) {
		t.Fatal(e.raw)
	}
	m = h2.tick(m, 2*time.Second)
	mustContain(t, m, "● "+pid+" is executed", "[executed]")
	m = h2.press(m, "a")
	mustContain(t, m, "✗ cannot approve: the proposal is executed: there is nothing to decide")
	m = h2.press(m, "d")
	mustContain(t, m, "is not pending: there is nothing to deny")
}

// d, a reason, y: the proposal is rejected, the reason and the decider are
// recorded, and the denial is in the proposal's audit trail.
func TestDeny_ReasonIsRecordedAndTheProposalRejected(t *testing.T) {
	h := newHarness(t)
	pid := h.proposePromotion()
	m := h.open(fixtures.DemoUserID)
	wantAction(t, m, "d", StartDeny{ID: pid})
	m = h.press(m, "d", "enter")
	m = h.typeText(m, "wrong candidate, try item_991 yes")
	m = h.press(m, "enter")
	wantAction(t, m, "y", Deny{ProposalID: pid, Reason: "wrong candidate, try item_991 yes"})
	m = h.press(m, "y")
	mustContain(t, m, "✓ denied "+pid)

	db, err := sql.Open("sqlite", "file:"+h.path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var status, reason, by string
	if err := db.QueryRow("SELECT status, status_reason, decided_by FROM proposals WHERE id = ?", pid).Scan(&status, &reason, &by); err != nil {
		t.Fatal(err)
	}
	if status != domain.ProposalDenied || reason != "wrong candidate, try item_991 yes" || by != fixtures.DemoUserID {
		t.Fatalf("%s %q %s", status, reason, by)
	}
	trail, err := storeBackend{h.st.AsSeller(fixtures.DemoUserID)}.AuditTrail(context.Background(), fixtures.DemoTenantID, h.proposal(pid).CorrelationID)
	if err != nil || len(trail) == 0 || trail[len(trail)-1].Action != "approval_denied" {
		t.Fatalf("trail %+v %v", trail, err)
	}
}

// Grants tab: d on an active grant asks, y revokes; the execution it
// would have authorised is refused afterwards.
func TestGrants_RevokeAfterConfirmation(t *testing.T) {
	h := newHarness(t)
	pid := h.proposePromotion()
	m := h.open(fixtures.DemoUserID)
	m = h.press(m, "a", "y", "tab")
	g := h.grants(domain.GrantActive)[0]
	mustContain(t, m, "[Grants 1]", "active    "+g.ID+"  human · expires in 30m00s", pid+" · user_88 via trovesnap_approve")
	wantAction(t, m, "d", AskAdmin{Kind: adminGrant, ID: g.ID, Choices: []string{domain.GrantRevoked}})
	m = h.press(m, "d")
	mustContain(t, m, "Change grant "+g.ID+"?", "revoke: it can never authorise")
	if h.grants(domain.GrantActive)[0].Status != domain.GrantActive {
		t.Fatal("revoked before y")
	}
	m = h.press(m, "y")
	mustContain(t, m, "✓ revoked "+g.ID, "revoked   "+g.ID)
	if gs := h.grants(domain.GrantRevoked); len(gs) != 1 {
		t.Fatalf("grants %+v", h.grants(""))
	}
	if e := h.execute(execPromotion, pid); succeeded(e) {
		t.Fatalf("a revoked grant authorised: %s", e.raw)
	}
	m = h.press(m, "d")
	mustContain(t, m, "only an active grant can be revoked")
}

// Policies tab: a enables a disabled policy, d offers disable or revoke,
// each after y; a revoked policy stays revoked.
func TestPolicies_EnableDisableRevoke(t *testing.T) {
	h := newHarness(t)
	pol, err := h.st.CreatePolicy(context.Background(), domain.Policy{
		Name: "Bind printed tags", TenantID: fixtures.DemoTenantID, CreatedBy: fixtures.DemoUserID,
		AllowedTools: []string{"trove_bind_item_identity"}, Scope: domain.PolicyScope{EstateSaleIDs: []string{fixtures.PublishedSaleID}},
		Conditions: domain.PolicyConditions{MaxItemsPerRun: 5, PermittedFields: []string{"qr_code"}}, Limits: domain.PolicyLimits{MaxDailyActions: 10},
	})
	if err != nil {
		t.Fatal(err)
	}
	status := func() (string, int) {
		p, err := h.st.GetPolicy(context.Background(), pol.ID)
		if err != nil {
			t.Fatal(err)
		}
		return p.Status, p.Version
	}
	mgr := h.open(fixtures.ManagerUserID) // approval.grant but not policy.manage
	mgr = h.press(mgr, "tab", "tab", "a")
	mustContain(t, mgr, "user_89 (manager) may not manage automation policies")

	m := h.open(fixtures.DemoUserID)
	m = h.press(m, "tab", "tab")
	mustContain(t, m, "[Policies 1]", "disabled "+pol.ID+` "Bind printed tags" v1`)
	wantAction(t, m, "a", AskAdmin{Kind: adminPolicy, ID: pol.ID, Choices: []string{domain.PolicyActive}})
	m = h.press(m, "a", "y")
	if s, v := status(); s != domain.PolicyActive || v != 2 {
		t.Fatalf("after enable: %s v%d", s, v)
	}
	wantAction(t, m, "d", AskAdmin{Kind: adminPolicy, ID: pol.ID, Choices: []string{domain.PolicyDisabled, domain.PolicyRevoked}})
	m = h.press(m, "d", "y")
	if s, v := status(); s != domain.PolicyDisabled || v != 3 {
		t.Fatalf("after disable: %s v%d", s, v)
	}
	m = h.press(m, "d", "y")
	if s, _ := status(); s != domain.PolicyRevoked {
		t.Fatalf("after revoke: %s", s)
	}
	m = h.press(m, "a")
	mustContain(t, m, "only a disabled policy can be enabled", "revoked  "+pol.ID)
}

// Clients tab: d offers suspend or revoke, a reactivates, each after y;
// only a member with client.manage may.
func TestClients_SuspendReactivateRevoke(t *testing.T) {
	h := newHarness(t)
	c, _, err := h.st.RegisterClient(context.Background(), domain.NewClient{TenantID: fixtures.DemoTenantID, ActorID: fixtures.ManagerUserID,
		Name: "Denise laptop", ClientType: "claude_desktop", Groups: []string{"tenant_read"}, CreatedBy: fixtures.DemoUserID})
	if err != nil {
		t.Fatal(err)
	}
	status := func() string {
		got, err := h.st.GetClient(context.Background(), c.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got.Status
	}
	m := h.open(fixtures.DemoUserID)
	m = h.press(m, "tab", "tab", "tab")
	mustContain(t, m, "[Clients 2]", c.ID, "Denise laptop")
	// Select the new client, wherever the store lists it.
	for i := 0; i < 2 && m.top().(clientsScreen).cur.selected(ids(m.s.clients, clientID)) != c.ID; i++ {
		m = h.press(m, "j")
	}
	wantAction(t, m, "d", AskAdmin{Kind: adminClient, ID: c.ID, Choices: []string{domain.ClientSuspended, domain.ClientRevoked}})
	m = h.press(m, "d", "y")
	if s := status(); s != domain.ClientSuspended {
		t.Fatalf("after suspend: %s", s)
	}
	m = h.press(m, "a", "y")
	if s := status(); s != domain.ClientActive {
		t.Fatalf("after reactivate: %s", s)
	}
	m = h.press(m, "d", "j", "y")
	if s := status(); s != domain.ClientRevoked {
		t.Fatalf("after revoke: %s", s)
	}
	mustContain(t, m, "✓ client "+c.ID+" is revoked")

	mgr := h.open(fixtures.ManagerUserID)
	mgr = h.press(mgr, "tab", "tab", "tab", "d")
	mustContain(t, mgr, "user_89 (manager) may not manage clients")
}

// A proposal's audit trail shows proposal → blocked execution → approval →
// execution under one correlation id, with the full hash.
func TestTrail_ProposalApprovalExecution(t *testing.T) {
	h := newHarness(t)
	pid := h.proposePromotion()
	h.execute(execPromotion, pid)
	m := h.open(fixtures.DemoUserID)
	m = h.press(m, "a", "y")
	if e := h.execute(execPromotion, pid); !succeeded(e) {
		t.Fatal(e.raw)
	}
	m = h.press(m, "tab")
	wantAction(t, m, "enter", OpenProposal{ID: pid})
	m = h.press(m, "enter")
	mustContain(t, m, "[executed]")
	wantAction(t, m, "enter", OpenTrail{ProposalID: pid})
	m = h.press(m, "enter")
	p := h.proposal(pid)
	mustContain(t, m, "Audit trail of "+pid, p.Hash, p.CorrelationID,
		"mcp_tool_called  success · not_required", "mcp_tool_called  blocked approval_required · human_approval_required",
		"approval_granted  success · allowed", "mcp_tool_called  success · allowed")
	m = h.tick(m, 2*time.Second)
	m = h.press(m, "esc", "esc")
	mustContain(t, m, "[Grants 1]", "consumed  ")
}

// The queue polls: a proposal made while the terminal is open appears
// within one poll, and the countdown runs with the clock.
func TestQueue_NewProposalAppearsOnPollAndCountdownRuns(t *testing.T) {
	h := newHarness(t)
	m := h.open(fixtures.DemoUserID)
	mustContain(t, m, "No pending proposals.", "[Queue 0]")
	pid := h.proposePromotion()
	m = h.tick(m, time.Second)
	if strings.Contains(plain(m), pid) {
		t.Fatal("shown before a poll")
	}
	m = h.tick(m, time.Second)
	mustContain(t, m, pid, "[Queue 1]", "59m58s")
	m = h.tick(m, 90*time.Second)
	mustContain(t, m, "58m28s")
}

// Filters narrow the queue by sale, tool and risk; esc clears them.
func TestQueue_FiltersBySaleToolAndRisk(t *testing.T) {
	h := newHarness(t)
	promo := h.proposePromotion()
	it := readyItem(t)
	pub := h.propose("trove_propose_item_publication", map[string]any{"item_id": it.ID, "expected_version": it.Version})
	m := h.open(fixtures.DemoUserID)
	mustContain(t, m, promo, pub)
	shows := func(m Model, in, out string) {
		t.Helper()
		s := plain(m)
		if !strings.Contains(s, in) || strings.Contains(s, out) {
			t.Fatalf("want %s and not %s:\n%s", in, out, s)
		}
	}
	m = h.press(m, "k")
	wantAction(t, m, "enter", nil)
	m = h.press(m, "enter", "j", "j", "enter") // risk: controlled_write first
	shows(m, promo, pub)
	m = h.press(m, "enter") // high_impact
	shows(m, pub, promo)
	m = h.press(m, "enter", "k", "enter") // risk all; tool: first tool name
	shows(m, promo, pub)                  // trove_execute_candidate_promotion < trove_publish_item
	m = h.press(m, "enter", "enter", "k", "enter")
	pubSale := h.proposal(pub).SaleIDs[0]
	mustContain(t, m, "sale  "+pubSale)
	if !strings.Contains(plain(m), pub) {
		t.Fatalf("sale filter hides the item's proposal:\n%s", plain(m))
	}
	m = h.press(m, "esc", "esc")
	mustContain(t, m, "filters: sale all · tool all · risk all", promo, pub)
}

// A write waits for a database another process holds, and then succeeds:
// a running server must never make the seller's decision fail.
func TestApprove_WaitsForADatabaseHeldByAServer(t *testing.T) {
	h := newHarness(t)
	pid := h.proposePromotion()
	m := h.open(fixtures.DemoUserID)
	m = h.press(m, "a")

	db, err := sql.Open("sqlite", "file:"+h.path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	_, cmd := m.Update(kp("y"))
	done := make(chan any, 1)
	go func() { done <- cmd() }()
	select {
	case msg := <-done:
		t.Fatalf("the approval returned while the database was held: %#v", msg)
	case <-time.After(300 * time.Millisecond):
	}
	if _, err := conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	select {
	case msg := <-done:
		if d, ok := msg.(doneMsg); !ok || d.err != nil {
			t.Fatalf("after the lock: %#v", msg)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the approval never finished")
	}
	if gs := h.grants(domain.GrantActive); len(gs) != 1 || gs[0].ProposalID != pid {
		t.Fatalf("grants %+v", gs)
	}
}
