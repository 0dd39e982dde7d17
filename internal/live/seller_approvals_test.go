package live_test

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/approval"
	"github.com/triunalabs/trovesnap/internal/contract"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/live"
	"github.com/triunalabs/trovesnap/internal/live/pgtest"
)

// The seller RPCs (migration 7) on their own, under real user tokens.
// Proposals and grants are written here straight into the tables, as the
// MCP side's RPCs store them (body = the sealed domain.Proposal without id,
// hash, status and correlation id), so these tests do not depend on them.

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// storedProposal inserts a sealed promotion proposal of tenant tenantID
// with its creation event, created at created and expiring at expires.
func storedProposal(t *testing.T, env *pgtest.Env, tenantID string, created, expires time.Time, status string) (domain.Proposal, string) {
	t.Helper()
	created, expires = created.UTC().Truncate(time.Microsecond), expires.UTC().Truncate(time.Microsecond)
	target, client, actor := fixtures.DemoCandidateID, fixtures.DemoClientID, fixtures.DemoUserID
	if tenantID == fixtures.OtherTenantID {
		target, client, actor = "candidate_x"+randHex(4), fixtures.OtherClientID, fixtures.OtherOwnerUserID
	}
	p := domain.Proposal{TenantID: tenantID, Tool: domain.ExecutingTool{Name: "trove_execute_candidate_promotion", Version: "1.0.0"},
		RequestedBy: domain.Requester{ClientID: client, ActorID: actor}, Action: domain.ActionPromoteCandidate, TargetKind: "candidate",
		TargetIDs: []string{target}, ExpectedVersions: []domain.TargetVersion{{ID: target, Version: 3}},
		Changes:     []domain.FieldChange{{TargetID: target, Field: "create_item.title", From: nil, To: "Oak chair"}, {TargetID: target, Field: "create_item.quantity", From: nil, To: 2.0}},
		Impact:      domain.ProposalImpact{CanonicalItemsCreated: 1},
		Validation:  domain.ProposalValidation{Status: "valid_with_warnings", Warnings: []string{"candidate_not_reviewed"}, Errors: []string{}},
		Requirement: "human_or_policy", SaleIDs: []string{fixtures.PublishedSaleID}, CreatedAt: created, ExpiresAt: expires}
	var err error
	if p.Hash, err = approval.Hash(p); err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(p)
	p.ID, p.CorrelationID, p.Status = "proposal_"+randHex(8), "corr_"+randHex(8), status
	eventID := "event_" + randHex(8)
	ev, _ := json.Marshal(domain.Event{ID: eventID, TenantID: tenantID, CorrelationID: p.CorrelationID, Mode: domain.ModeLive,
		Client: domain.ClientRef{ID: client}, Tool: domain.ToolRef{Name: "trove_propose_candidate_promotion", Version: "1.0.0", Tier: "action_proposal"},
		Actor: domain.ActorRef{ID: actor, Type: "seller"}, Action: "mcp_tool_called", Outcome: domain.OutcomeSuccess,
		Related: domain.Related{ProposalIDs: []string{p.ID}}.Normalized(), OccurredAt: created})
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `INSERT INTO trovesnap.proposals (id, tenant_id, tool_name, action, requested_by_client,
		requested_by_actor, correlation_id, body, proposal_hash, created_at, expires_at, status)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
		p.ID, tenantID, p.Tool.Name, p.Action, client, actor, p.CorrelationID, string(body), p.Hash, created, expires, status); err != nil {
		t.Fatalf("insert proposal: %v", err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO trovesnap.plugin_events (id, tenant_id, correlation_id, tool_name, outcome, occurred_at, body, body_jcs)
		VALUES ($1, $2, $3, $4, 'success', $5, trovesnap.audit_jcs($6::jsonb)::jsonb, trovesnap.audit_jcs($6::jsonb)::json)`, eventID, tenantID, p.CorrelationID, "trove_propose_candidate_promotion", created, string(ev)); err != nil {
		t.Fatalf("insert event: %v", err)
	}
	return p, eventID
}

func pendingProposal(t *testing.T, env *pgtest.Env, tenantID string) (domain.Proposal, string) {
	now := time.Now()
	return storedProposal(t, env, tenantID, now.Add(-time.Minute), now.Add(time.Hour), domain.ProposalPending)
}

func counts(t *testing.T, env *pgtest.Env) map[string]int64 {
	t.Helper()
	c, err := env.Cluster.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func sameCounts(t *testing.T, env *pgtest.Env, before map[string]int64, what string) {
	t.Helper()
	if after := counts(t, env); !maps.Equal(before, after) {
		t.Fatalf("%s changed row counts: %v → %v", what, before, after)
	}
}

// What a seller reviews is exactly what was sealed: the hash recomputes
// from the proposal as the RPC returns it (the approval terminal refuses
// one whose hash does not).
func TestSeller_ProposalReadsBackAsSealed(t *testing.T) {
	env := seeded(t)
	p, _ := pendingProposal(t, env, fixtures.DemoTenantID)
	got, err := sellerAs(t, env, fixtures.DemoUserID).GetProposalAdmin(ctx, fixtures.DemoTenantID, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if h, err := approval.Hash(got); err != nil || h != p.Hash || got.Hash != p.Hash {
		t.Fatalf("hash of the proposal read = %s (%v); sealed %s, returned %s", h, err, p.Hash, got.Hash)
	}
	if got.ID != p.ID || got.Status != domain.ProposalPending || got.CorrelationID != p.CorrelationID || got.TenantID != p.TenantID ||
		!got.CreatedAt.Equal(p.CreatedAt) || !got.ExpiresAt.Equal(p.ExpiresAt) || got.Validation.Status != "valid_with_warnings" {
		t.Fatalf("read %+v\nwant %+v", got, p)
	}
	list, err := sellerAs(t, env, fixtures.ManagerUserID).ListProposals(ctx, fixtures.DemoTenantID, domain.ProposalPending)
	if err != nil || len(list) != 1 || list[0].ID != p.ID || list[0].Hash != p.Hash {
		t.Fatalf("the manager's queue = %+v, %v", list, err)
	}
}

// Expiry is applied as the store applies it: a pending proposal past its
// expiry reads expired, leaves the pending queue and is listed as expired,
// while its stored status is untouched.
func TestSeller_ExpiryAppliedLikeTheStore(t *testing.T) {
	env := seeded(t)
	now := time.Now()
	old, _ := storedProposal(t, env, fixtures.DemoTenantID, now.Add(-3*time.Hour), now.Add(-time.Hour), domain.ProposalPending)
	fresh, _ := pendingProposal(t, env, fixtures.DemoTenantID)
	s := sellerAs(t, env, fixtures.DemoUserID)
	if got, err := s.GetProposalAdmin(ctx, fixtures.DemoTenantID, old.ID); err != nil || got.Status != domain.ProposalExpired {
		t.Fatalf("expired proposal reads %s, %v", got.Status, err)
	}
	for status, want := range map[string][]string{
		domain.ProposalPending: {fresh.ID}, domain.ProposalExpired: {old.ID}, "": {fresh.ID, old.ID}, domain.ProposalDenied: {},
	} {
		ps, err := s.ListProposals(ctx, fixtures.DemoTenantID, status)
		if got := proposalIDsOf(ps); err != nil || !slices.Equal(got, want) {
			t.Errorf("ListProposals(%q) = %v, %v; want %v", status, got, err, want)
		}
	}
	if _, err := s.ListProposals(ctx, fixtures.DemoTenantID, "maybe"); !errors.Is(err, domain.ErrInvalidInput) {
		t.Fatalf("unknown status filter: %v", err)
	}
	conn, _ := env.Cluster.Super(ctx)
	defer conn.Close(ctx)
	var stored string
	if err := conn.QueryRow(ctx, "SELECT status FROM trovesnap.proposals WHERE id = $1", old.ID).Scan(&stored); err != nil || stored != domain.ProposalPending {
		t.Fatalf("stored status = %s, %v", stored, err)
	}
}

func proposalIDsOf(ps []domain.Proposal) []string {
	out := []string{}
	for _, p := range ps {
		out = append(out, p.ID)
	}
	return out
}

// A denial is recorded in the row (status, who, why) and as an event
// caused by the proposal's creation; refusals change nothing.
func TestSeller_DenyRecordsDecisionOrChangesNothing(t *testing.T) {
	env := seeded(t)
	p, created := pendingProposal(t, env, fixtures.DemoTenantID)
	before := counts(t, env)
	for _, c := range []struct {
		user, tenant, actor string
		want                error
	}{
		{fixtures.CatalogerUserID, fixtures.DemoTenantID, fixtures.CatalogerUserID, domain.ErrPermissionDenied},
		{fixtures.CheckoutUserID, fixtures.DemoTenantID, "", domain.ErrPermissionDenied},
		{fixtures.DemoUserID, fixtures.DemoTenantID, fixtures.ManagerUserID, domain.ErrPermissionDenied}, // acting as someone else
		{fixtures.OtherOwnerUserID, fixtures.DemoTenantID, fixtures.OtherOwnerUserID, domain.ErrPermissionDenied},
		{fixtures.OtherOwnerUserID, fixtures.OtherTenantID, "", domain.ErrNotFound},
	} {
		err := sellerAs(t, env, c.user).DenyProposal(ctx, c.tenant, p.ID, c.actor, approval.SurfaceApproveTUI, "no")
		if !errors.Is(err, c.want) {
			t.Errorf("%s denying in %s as %q: %v; want %v", c.user, c.tenant, c.actor, err, c.want)
		}
	}
	sameCounts(t, env, before, "refused denials")

	if err := sellerAs(t, env, fixtures.ManagerUserID).DenyProposal(ctx, fixtures.DemoTenantID, p.ID, "", approval.SurfaceApproveTUI, "photos first"); err != nil {
		t.Fatalf("the manager's denial: %v", err)
	}
	conn, _ := env.Cluster.Super(ctx)
	defer conn.Close(ctx)
	var status, reason, by string
	if err := conn.QueryRow(ctx, "SELECT status, status_reason, decided_by FROM trovesnap.proposals WHERE id = $1", p.ID).Scan(&status, &reason, &by); err != nil ||
		status != domain.ProposalDenied || reason != "photos first" || by != fixtures.ManagerUserID {
		t.Fatalf("row after denial: %s %q %s %v", status, reason, by, err)
	}
	events, _ := env.Events(ctx)
	ev := events[len(events)-1]
	if ev.Action != "approval_denied" || ev.CausationID == nil || *ev.CausationID != created || ev.Actor.Role != domain.RoleManager ||
		ev.Client.Name == "" || ev.Mode != domain.ModeLive || ev.Approval.Decision != "blocked" || ev.Domain == nil || ev.Domain.Service != "approval" {
		t.Fatalf("denial event = %+v", ev)
	}
	trail, err := sellerAs(t, env, fixtures.CatalogerUserID).AuditTrail(ctx, fixtures.DemoTenantID, p.CorrelationID)
	if err != nil || len(trail) != 2 || trail[0].ID != created || trail[1].ID != ev.ID {
		t.Fatalf("trail = %+v, %v", trail, err)
	}
}

// The tenant argument must be one of the signed-in user's tenants: every
// read of another tenant is refused, whatever it names.
func TestSeller_AnotherTenantIsRefused(t *testing.T) {
	env := seeded(t)
	p, _ := pendingProposal(t, env, fixtures.DemoTenantID)
	other := sellerAs(t, env, fixtures.OtherOwnerUserID)
	checks := map[string]error{}
	_, checks["ListProposals"] = other.ListProposals(ctx, fixtures.DemoTenantID, "")
	_, checks["GetProposalAdmin"] = other.GetProposalAdmin(ctx, fixtures.DemoTenantID, p.ID)
	_, checks["ListGrants"] = other.ListGrants(ctx, fixtures.DemoTenantID, "")
	_, checks["ListPolicies"] = other.ListPolicies(ctx, fixtures.DemoTenantID)
	_, checks["MemberRole"] = other.MemberRole(ctx, fixtures.DemoTenantID, fixtures.DemoUserID)
	_, checks["CurrentVersions"] = other.CurrentVersions(ctx, fixtures.DemoTenantID, []string{fixtures.DemoItemID})
	_, checks["AuditTrail"] = other.AuditTrail(ctx, fixtures.DemoTenantID, p.CorrelationID)
	for name, err := range checks {
		if !errors.Is(err, domain.ErrPermissionDenied) {
			t.Errorf("%s of another tenant: %v; want permission denied", name, err)
		}
	}
	// Its own tenant shows nothing of the demo tenant.
	if ps, err := other.ListProposals(ctx, fixtures.OtherTenantID, ""); err != nil || len(ps) != 0 {
		t.Fatalf("other tenant's queue = %v, %v", proposalIDsOf(ps), err)
	}
	if _, err := other.GetProposalAdmin(ctx, fixtures.OtherTenantID, p.ID); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("the demo proposal through the other tenant: %v", err)
	}
	// A member without proposal.read does not read the queue.
	if _, err := sellerAs(t, env, fixtures.CheckoutUserID).ListProposals(ctx, fixtures.DemoTenantID, ""); !errors.Is(err, domain.ErrPermissionDenied) {
		t.Fatalf("checkout reads proposals: %v", err)
	}
}

// An active grant past its expiry is listed as expired.
func TestSeller_GrantsListedWithExpiry(t *testing.T) {
	env := seeded(t)
	p, _ := pendingProposal(t, env, fixtures.DemoTenantID)
	conn, _ := env.Cluster.Super(ctx)
	defer conn.Close(ctx)
	now := time.Now().UTC()
	for _, g := range []struct {
		id       string
		from, to time.Time
	}{{"approval_live", now.Add(-time.Minute), now.Add(time.Hour)}, {"approval_old", now.Add(-2 * time.Hour), now.Add(-time.Hour)}} {
		if _, err := conn.Exec(ctx, `INSERT INTO trovesnap.approval_grants (id, tenant_id, proposal_id, proposal_hash, issuer_type, issuer_actor,
			issuer_surface, tool, target_ids, constraints, status, single_use, issued_at, expires_at)
			VALUES ($1, $2, $3, $4, 'human', $5, 'trovesnap_approve', $6, $7, '{"maximum_items":1}', 'active', true, $8, $9)`,
			g.id, fixtures.DemoTenantID, p.ID, p.Hash, fixtures.DemoUserID, p.Tool.Name, p.TargetIDs, g.from, g.to); err != nil {
			t.Fatal(err)
		}
	}
	s := sellerAs(t, env, fixtures.PricerUserID)
	for status, want := range map[string][]string{"": {"approval_live", "approval_old"}, domain.GrantActive: {"approval_live"},
		domain.GrantExpired: {"approval_old"}, domain.GrantRevoked: {}} {
		gs, err := s.ListGrants(ctx, fixtures.DemoTenantID, status)
		var ids []string
		for _, g := range gs {
			ids = append(ids, g.ID)
			if g.IssuedBy.Type != domain.IssuerHuman || g.IssuedBy.ActorID != fixtures.DemoUserID || g.Constraints.MaxItems != 1 || g.ProposalHash != p.Hash {
				t.Errorf("grant %+v", g)
			}
		}
		if err != nil || !slices.Equal(append([]string{}, ids...), want) {
			t.Errorf("ListGrants(%q) = %v, %v; want %v", status, ids, err, want)
		}
	}
}

// The database validates a policy as approval.ValidatePolicy does (the RPC
// is the boundary: a seller can call it without the CLI), and the creator
// is the signed-in user.
func TestSeller_PolicyValidatedByTheDatabase(t *testing.T) {
	env := seeded(t)
	s := sellerAs(t, env, fixtures.DemoUserID)
	good := domain.Policy{Name: "Tags", TenantID: fixtures.DemoTenantID, AllowedTools: []string{"trove_bind_item_identity"},
		Scope:      domain.PolicyScope{EstateSaleIDs: []string{fixtures.PublishedSaleID}},
		Conditions: domain.PolicyConditions{MaxItemsPerRun: 5, PermittedFields: []string{"qr_code"}},
		Limits:     domain.PolicyLimits{MaxDailyActions: 10}}
	before := counts(t, env)
	for field, mutate := range map[string]func(p *domain.Policy){
		"allowed_tools":                    func(p *domain.Policy) { p.AllowedTools = []string{"trove_publish_item"} },
		"scope.estate_sale_ids":            func(p *domain.Policy) { p.Scope.EstateSaleIDs = nil },
		"conditions.maximum_items_per_run": func(p *domain.Policy) { p.Conditions.MaxItemsPerRun = 50 },
		"conditions.permitted_fields":      func(p *domain.Policy) { p.Conditions.PermittedFields = nil },
		"limits.maximum_daily_actions":     func(p *domain.Policy) { p.Limits.MaxDailyActions = 0 },
		"limits.maximum_cost_usd_per_day":  func(p *domain.Policy) { p.Limits.MaxCostUSDPerDay = 5 },
		"name":                             func(p *domain.Policy) { p.Name = "" },
	} {
		p := good
		mutate(&p)
		_, err := s.CreatePolicy(ctx, p)
		var ie *domain.InputError
		if !errors.As(err, &ie) || ie.Field != field {
			t.Errorf("%s: %v", field, err)
		}
		if approval.ValidatePolicy(p) == nil {
			t.Errorf("%s: approval.ValidatePolicy accepts what the database refuses", field)
		}
	}
	bad := good
	bad.CreatedBy = fixtures.ManagerUserID
	if _, err := s.CreatePolicy(ctx, bad); !errors.Is(err, domain.ErrPermissionDenied) {
		t.Errorf("a policy created in another user's name: %v", err)
	}
	sameCounts(t, env, before, "refused policies")
	p, err := s.CreatePolicy(ctx, good)
	if err != nil || p.CreatedBy != fixtures.DemoUserID || p.Status != domain.PolicyDisabled {
		t.Fatalf("a valid policy: %+v, %v", p, err)
	}
	if _, err := s.SetPolicyStatus(ctx, p.ID, domain.PolicyActive, fixtures.ManagerUserID); !errors.Is(err, domain.ErrPermissionDenied) {
		t.Fatalf("enabled in another user's name: %v", err)
	}
	if _, err := sellerAs(t, env, fixtures.OtherOwnerUserID).GetPolicy(ctx, p.ID); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("another tenant read the policy: %v", err)
	}
	conn, _ := env.Cluster.Super(ctx)
	defer conn.Close(ctx)
	var versions int
	_ = conn.QueryRow(ctx, "SELECT count(*) FROM trovesnap.automation_policy_versions WHERE policy_id = $1", p.ID).Scan(&versions)
	if versions != 1 {
		t.Fatalf("versions kept = %d", versions)
	}
}

// WhoAmI names the user and its memberships; an Auth account linked to no
// TroveSnap user is signed in but acts nowhere.
func TestSeller_WhoAmIAndUnlinkedAccounts(t *testing.T) {
	env := seeded(t)
	who, err := sellerAs(t, env, fixtures.DemoUserID).WhoAmI(ctx)
	if err != nil || !who.Linked || who.UserID != fixtures.DemoUserID || who.Email == "" || len(who.Memberships) != 1 {
		t.Fatalf("whoami = %+v, %v", who, err)
	}
	m := who.Memberships[0]
	if m.TenantID != fixtures.DemoTenantID || m.Role != domain.RoleOwner || m.MembershipID != fixtures.DemoMembershipID || m.TenantName == "" ||
		!slices.Equal(m.Permissions, domain.RolePermissions(domain.RoleOwner)) {
		t.Fatalf("membership = %+v", m)
	}
	if got, err := who.Membership(""); err != nil || got.TenantID != fixtures.DemoTenantID {
		t.Fatalf("default membership = %+v, %v", got, err)
	}
	if _, err := who.Membership(fixtures.OtherTenantID); !errors.Is(err, domain.ErrPermissionDenied) {
		t.Fatalf("membership of another tenant: %v", err)
	}

	stranger := sellerAs(t, env, "user_unlinked")
	who, err = stranger.WhoAmI(ctx)
	if err != nil || who.Linked || who.UserID != "" || len(who.Memberships) != 0 {
		t.Fatalf("unlinked whoami = %+v, %v", who, err)
	}
	if _, err := stranger.ListProposals(ctx, fixtures.DemoTenantID, ""); !errors.Is(err, domain.ErrPermissionDenied) {
		t.Fatalf("an unlinked account read proposals: %v", err)
	}
}

// Only a signed-in user's role may call the seller RPCs: the MCP server's
// key and the anonymous role are refused by the database's grants.
func TestSeller_RPCsGrantedToAuthenticatedOnly(t *testing.T) {
	env := seeded(t)
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT p.oid::regprocedure::text, n.nspname,
			has_function_privilege('authenticated', p.oid, 'EXECUTE'), has_function_privilege('anon', p.oid, 'EXECUTE'),
			has_function_privilege('trovesnap_mcp', p.oid, 'EXECUTE'), has_function_privilege('service_role', p.oid, 'EXECUTE')
		FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
		WHERE p.proowner = 'trovesnap_owner'::regrole AND p.proname IN ('seller_whoami', 'seller_list_proposals', 'seller_get_proposal',
			'seller_deny_proposal', 'seller_list_grants', 'seller_create_policy', 'seller_list_policies', 'seller_get_policy',
			'seller_set_policy_status', 'seller_member_role', 'seller_current_versions', 'seller_audit_trail', 'seller_enter',
			'seller_user', 'seller_approval_event', 'seller_validate_policy')`)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		var fn, schema string
		var authed, anon, mcp, service bool
		if err := rows.Scan(&fn, &schema, &authed, &anon, &mcp, &service); err != nil {
			t.Fatal(err)
		}
		n++
		if authed != (schema == "public") || anon || mcp || service {
			t.Errorf("%s: authenticated %v, anon %v, trovesnap_mcp %v, service_role %v", fn, authed, anon, mcp, service)
		}
	}
	if n != 16 {
		t.Fatalf("found %d of the 16 functions", n)
	}
	for _, tok := range []string{env.RetiredServerKey(), ""} {
		req, _ := http.NewRequest(http.MethodPost, env.Endpoint.URL+"/rest/v1/rpc/seller_list_proposals",
			bytes.NewReader([]byte(`{"p_tenant_id":"`+fixtures.DemoTenantID+`"}`)))
		req.Header.Set("apikey", env.Endpoint.Token("anon", time.Minute))
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusUnauthorized || body["code"] != "42501" {
			t.Errorf("seller_list_proposals with token %.10q: HTTP %d %v", tok, resp.StatusCode, body)
		}
	}
}

// A seller's session cannot be used on the MCP RPCs, not even with a valid
// client token beside it: an authenticated caller of an MCP RPC must be a
// connector (its token names an OAuth client; migration 49), and a
// seller's session names none.
func TestSeller_TokenCannotCallTheServerRPCs(t *testing.T) {
	env := seeded(t)
	user := env.Endpoint.UserToken(pgtest.AuthSubject(fixtures.DemoUserID), time.Hour)
	for _, fn := range []string{"mcp_list_sales", "mcp_resolve_principal", "mcp_append_event"} {
		body := []byte(`{}`)
		if fn == "mcp_append_event" {
			body = []byte(`{"p_event":{"id":"event_seller_forged","outcome":"success"}}`)
		}
		req, _ := http.NewRequest(http.MethodPost, env.Endpoint.URL+"/rest/v1/rpc/"+fn, bytes.NewReader(body))
		req.Header.Set("apikey", env.PublicKey())
		req.Header.Set("Authorization", "Bearer "+user)
		req.Header.Set(live.ClientTokenHeader, contract.CredOwner)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if resp.StatusCode < 400 || out["message"] != "trovesnap:forbidden" {
			t.Errorf("%s under a seller session: HTTP %d %v", fn, resp.StatusCode, out)
		}
	}
	if n := countEvents(t, env, "event_seller_forged"); n != 0 {
		t.Fatalf("the forged event was recorded %d times", n)
	}
}
