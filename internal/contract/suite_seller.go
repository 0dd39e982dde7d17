package contract

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/domain"
)

// runSeller runs the contract cases of the human approval surface (domain.ApprovalAdmin).
//
// Admin acts as one user: the store itself (which takes the actor from the
// arguments) or a live seller session of that user (where the database
// takes it from the user's token). Refusals are therefore asserted where
// both agree — a member without the permission, another tenant's user —
// and always with nothing changed.
func runSeller(t *testing.T, open func(t *testing.T) Instance) {
	t.Run("SellerProposalsListAndGet", func(t *testing.T) { testSellerProposals(t, open(t)) })
	t.Run("SellerDenyByOwner", func(t *testing.T) { testSellerDeny(t, open(t)) })
	t.Run("SellerDenyRefused", func(t *testing.T) { testSellerDenyRefused(t, open(t)) })
	t.Run("SellerGrantsList", func(t *testing.T) { testSellerGrants(t, open(t)) })
	t.Run("SellerPolicyLifecycle", func(t *testing.T) { testSellerPolicies(t, open(t)) })
	t.Run("SellerPolicyRefused", func(t *testing.T) { testSellerPolicyRefused(t, open(t)) })
	t.Run("SellerMemberRole", func(t *testing.T) { testSellerMemberRole(t, open(t)) })
	t.Run("SellerCurrentVersions", func(t *testing.T) { testSellerCurrentVersions(t, open(t)) })
	t.Run("SellerAuditTrailIsolation", func(t *testing.T) { testSellerAuditTrail(t, open(t)) })
}

// surfaceApprove is approval.SurfaceApproveTUI, the approval terminal.
const surfaceApprove = "trovesnap_approve"

// sellerProposal is a pending proposal made through the Backend as the
// demo owner's client would make it: a promotion of fixtures.DemoCandidateID
// (needs_review, version 3), sealed by the suite's sealer (seal, in
// suite_approvals.go: the contract may not import internal/approval; the
// live tests check approval.Hash on the proposals the RPCs return).
type sellerProposal struct {
	domain.Proposal
	eventID string // the event of its creation
}

func proposeForSeller(t *testing.T, in Instance, key string) sellerProposal {
	t.Helper()
	b := in.Backend
	p := resolve(t, b, CredOwner)
	w := meta(p, key, "sha256:"+key, "event_"+key)
	w.Idem.Tool = "trove_propose_candidate_promotion"
	w.Event.Tool = domain.ToolRef{Name: "trove_propose_candidate_promotion", Version: "1.0.0", Tier: "action_proposal"}
	d := domain.ProposalDraft{Action: domain.ActionPromoteCandidate,
		Tool:        domain.ExecutingTool{Name: "trove_execute_candidate_promotion", Version: "1.0.0"},
		Requirement: "human_or_policy", TargetIDs: []string{fixtures.DemoCandidateID},
		ExpectedVersions: []domain.TargetVersion{{ID: fixtures.DemoCandidateID, Version: 3}},
		Fields:           map[string]any{"category": "furniture.tables"}}
	prop, _, err := b.CreateProposal(ctx, p, w, d, seal)
	if err != nil {
		t.Fatalf("CreateProposal (the seller cases need a proposal made through the Backend): %v", err)
	}
	if prop.Status != domain.ProposalPending || prop.CorrelationID != w.Event.CorrelationID || prop.Hash == "" {
		t.Fatalf("new proposal = %+v", prop)
	}
	return sellerProposal{Proposal: prop, eventID: w.Event.ID}
}

func proposalIDs(ps []domain.Proposal) []string {
	out := []string{}
	for _, p := range ps {
		out = append(out, p.ID)
	}
	return out
}

// sellerUnchanged fails unless every table has the row count it had in before.
func sellerUnchanged(t *testing.T, in Instance, before map[string]int64, what string) {
	t.Helper()
	if after := in.Counts(t); !maps.Equal(before, after) {
		t.Fatalf("%s wrote: %v", what, changed(before, after))
	}
}

func testSellerProposals(t *testing.T, in Instance) {
	prop := proposeForSeller(t, in, "seller-list")
	owner := in.Admin(t, fixtures.DemoTenantID, fixtures.DemoUserID)

	all, err := owner.ListProposals(ctx, fixtures.DemoTenantID, "")
	if err != nil || !slices.Contains(proposalIDs(all), prop.ID) {
		t.Fatalf("ListProposals(all) = %v, %v; want it to hold %s", proposalIDs(all), err, prop.ID)
	}
	pending, err := owner.ListProposals(ctx, fixtures.DemoTenantID, domain.ProposalPending)
	if err != nil || !slices.Contains(proposalIDs(pending), prop.ID) {
		t.Fatalf("ListProposals(pending) = %v, %v", proposalIDs(pending), err)
	}
	for _, p := range pending {
		if p.Status != domain.ProposalPending || p.TenantID != fixtures.DemoTenantID {
			t.Fatalf("a pending list holds %s (%s, tenant %s)", p.ID, p.Status, p.TenantID)
		}
	}
	for _, st := range []string{domain.ProposalDenied, domain.ProposalExecuted, domain.ProposalExpired} {
		ps, err := owner.ListProposals(ctx, fixtures.DemoTenantID, st)
		if err != nil || slices.Contains(proposalIDs(ps), prop.ID) {
			t.Fatalf("ListProposals(%s) = %v, %v; a pending proposal is not listed there", st, proposalIDs(ps), err)
		}
	}

	got, err := owner.GetProposalAdmin(ctx, fixtures.DemoTenantID, prop.ID)
	if err != nil {
		t.Fatalf("GetProposalAdmin: %v", err)
	}
	if got.ID != prop.ID || got.Hash != prop.Hash || got.Status != domain.ProposalPending || got.CorrelationID != prop.CorrelationID ||
		got.TenantID != fixtures.DemoTenantID || !slices.Equal(got.TargetIDs, []string{fixtures.DemoCandidateID}) ||
		got.Action != domain.ActionPromoteCandidate || got.RequestedBy != prop.RequestedBy || !got.ExpiresAt.Equal(prop.ExpiresAt) {
		t.Fatalf("GetProposalAdmin = %+v\nwant %+v", got, prop.Proposal)
	}
	// What the seller reviews is what was sealed: the approval terminal
	// recomputes the hash from it and refuses a proposal whose hash differs.
	if h, err := seal(got); err != nil || h != got.Hash {
		t.Fatalf("the hash of the proposal as read = %s, %v; stored %s", h, err, got.Hash)
	}
	// A cataloger (proposal.read) follows the queue too.
	cat := in.Admin(t, fixtures.DemoTenantID, fixtures.CatalogerUserID)
	if ps, err := cat.ListProposals(ctx, fixtures.DemoTenantID, domain.ProposalPending); err != nil || !slices.Contains(proposalIDs(ps), prop.ID) {
		t.Fatalf("cataloger's queue = %v, %v", proposalIDs(ps), err)
	}

	// Unknown ids and another tenant's proposals answer alike: not found.
	if _, err := owner.GetProposalAdmin(ctx, fixtures.DemoTenantID, "proposal_nope"); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("unknown proposal: %v", err)
	}
	other := in.Admin(t, fixtures.OtherTenantID, fixtures.OtherOwnerUserID)
	if _, err := other.GetProposalAdmin(ctx, fixtures.OtherTenantID, prop.ID); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("another tenant's owner read the proposal: %v", err)
	}
	if ps, err := other.ListProposals(ctx, fixtures.OtherTenantID, ""); err != nil || slices.Contains(proposalIDs(ps), prop.ID) {
		t.Fatalf("another tenant's list = %v, %v", proposalIDs(ps), err)
	}
}

func testSellerDeny(t *testing.T, in Instance) {
	prop := proposeForSeller(t, in, "seller-deny")
	owner := in.Admin(t, fixtures.DemoTenantID, fixtures.DemoUserID)
	before := in.Counts(t)
	if err := owner.DenyProposal(ctx, fixtures.DemoTenantID, prop.ID, fixtures.DemoUserID, surfaceApprove, "photos first"); err != nil {
		t.Fatalf("DenyProposal by the owner: %v", err)
	}
	after := in.Counts(t)
	if d := changed(before, after); len(d) > 0 {
		t.Fatalf("a denial changed row counts: %v (only its event is new)", d)
	}
	if n := after["plugin_events"] - before["plugin_events"]; n != 1 {
		t.Fatalf("a denial recorded %d events, want 1", n)
	}
	got, err := owner.GetProposalAdmin(ctx, fixtures.DemoTenantID, prop.ID)
	if err != nil || got.Status != domain.ProposalDenied || got.Hash != prop.Hash {
		t.Fatalf("after the denial: %+v, %v", got, err)
	}
	if ps, _ := owner.ListProposals(ctx, fixtures.DemoTenantID, domain.ProposalPending); slices.Contains(proposalIDs(ps), prop.ID) {
		t.Fatal("a denied proposal is still in the queue")
	}
	if ps, _ := owner.ListProposals(ctx, fixtures.DemoTenantID, domain.ProposalDenied); !slices.Contains(proposalIDs(ps), prop.ID) {
		t.Fatal("the denied proposal is not listed as rejected")
	}
	events := in.Events(t)
	ev := events[len(events)-1]
	if ev.Action != "approval_denied" || ev.Outcome != domain.OutcomeSuccess || ev.TenantID != fixtures.DemoTenantID ||
		ev.CorrelationID != prop.CorrelationID || ev.Actor.ID != fixtures.DemoUserID || ev.Actor.Role != domain.RoleOwner ||
		ev.Approval.ProposalID == nil || *ev.Approval.ProposalID != prop.ID || ev.Approval.Decision != "blocked" ||
		ev.Approval.ApprovalID != nil || ev.Approval.ProposalHash != prop.Hash || ev.Approval.Requirement != "human_or_policy" ||
		ev.Approval.IssuedBy == nil || ev.Approval.IssuedBy.ActorID != fixtures.DemoUserID ||
		!slices.Equal(ev.Related.ProposalIDs, []string{prop.ID}) || !slices.Equal(ev.Permissions, []string{domain.PermApprovalGrant}) ||
		ev.Client.ID != prop.RequestedBy.ClientID || ev.Tool.Name != prop.Tool.Name {
		t.Fatalf("denial event = %+v", ev)
	}
	if ev.CausationID == nil || *ev.CausationID != prop.eventID {
		t.Fatalf("the denial's cause = %v, want the proposal's creation event %s", ev.CausationID, prop.eventID)
	}
	// Only a pending proposal can be denied; a second denial changes nothing.
	before = in.Counts(t)
	if err := owner.DenyProposal(ctx, fixtures.DemoTenantID, prop.ID, fixtures.DemoUserID, surfaceApprove, "again"); !errors.Is(err, domain.ErrTransitionInvalid) {
		t.Fatalf("second denial: %v", err)
	}
	sellerUnchanged(t, in, before, "a second denial")
}

func testSellerDenyRefused(t *testing.T, in Instance) {
	prop := proposeForSeller(t, in, "seller-deny-refused")
	before := in.Counts(t)
	// A member without approval.grant.
	cat := in.Admin(t, fixtures.DemoTenantID, fixtures.CatalogerUserID)
	if err := cat.DenyProposal(ctx, fixtures.DemoTenantID, prop.ID, fixtures.CatalogerUserID, surfaceApprove, "no"); !errors.Is(err, domain.ErrPermissionDenied) {
		t.Fatalf("a cataloger denied: %v", err)
	}
	// Another tenant's owner, naming its own tenant: the proposal is not there.
	other := in.Admin(t, fixtures.OtherTenantID, fixtures.OtherOwnerUserID)
	if err := other.DenyProposal(ctx, fixtures.OtherTenantID, prop.ID, fixtures.OtherOwnerUserID, surfaceApprove, "no"); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("another tenant's owner denied in its tenant: %v", err)
	}
	// … and naming the proposal's tenant: not a member there.
	if err := other.DenyProposal(ctx, fixtures.DemoTenantID, prop.ID, fixtures.OtherOwnerUserID, surfaceApprove, "no"); !errors.Is(err, domain.ErrPermissionDenied) {
		t.Fatalf("another tenant's owner denied in the proposal's tenant: %v", err)
	}
	sellerUnchanged(t, in, before, "a refused denial")
	owner := in.Admin(t, fixtures.DemoTenantID, fixtures.DemoUserID)
	if got, err := owner.GetProposalAdmin(ctx, fixtures.DemoTenantID, prop.ID); err != nil || got.Status != domain.ProposalPending {
		t.Fatalf("after refused denials: %+v, %v", got, err)
	}
}

func testSellerGrants(t *testing.T, in Instance) {
	prop := proposeForSeller(t, in, "seller-grants")
	owner := in.Admin(t, fixtures.DemoTenantID, fixtures.DemoUserID)
	// As the approval terminal issues it (approval.Service.Approve): bound
	// to the proposal's hash, tool and targets, single use, expiring.
	g, err := owner.IssueGrant(ctx, domain.Grant{ID: "approval_seller1", TenantID: fixtures.DemoTenantID, ProposalID: prop.ID,
		ProposalHash: prop.Hash, IssuedBy: domain.GrantIssuer{Type: domain.IssuerHuman, ActorID: fixtures.DemoUserID, Surface: surfaceApprove},
		Tool: prop.Tool.Name, TargetIDs: prop.TargetIDs, Constraints: domain.GrantConstraints{MaxItems: 1}, Status: domain.GrantActive,
		SingleUse: true, IssuedAt: prop.CreatedAt, ExpiresAt: prop.CreatedAt.Add(30 * time.Minute)})
	if err != nil {
		t.Fatalf("IssueGrant: %v", err)
	}
	for _, st := range []string{"", domain.GrantActive} {
		gs, err := owner.ListGrants(ctx, fixtures.DemoTenantID, st)
		if err != nil {
			t.Fatalf("ListGrants(%q): %v", st, err)
		}
		i := slices.IndexFunc(gs, func(x domain.Grant) bool { return x.ID == g.ID })
		if i < 0 {
			t.Fatalf("ListGrants(%q) lacks the new grant %s", st, g.ID)
		}
		got := gs[i]
		if got.ProposalID != prop.ID || got.ProposalHash != prop.Hash || got.Status != domain.GrantActive || got.TenantID != fixtures.DemoTenantID ||
			got.IssuedBy.Type != domain.IssuerHuman || got.IssuedBy.ActorID != fixtures.DemoUserID || got.Tool != prop.Tool.Name ||
			!slices.Equal(got.TargetIDs, prop.TargetIDs) || !got.SingleUse || got.ConsumedAt != nil || got.RevokedAt != nil {
			t.Fatalf("listed grant = %+v", got)
		}
	}
	for _, st := range []string{domain.GrantRevoked, domain.GrantConsumed, domain.GrantExpired} {
		if gs, err := owner.ListGrants(ctx, fixtures.DemoTenantID, st); err != nil || slices.ContainsFunc(gs, func(x domain.Grant) bool { return x.ID == g.ID }) {
			t.Fatalf("ListGrants(%s) = %+v, %v", st, gs, err)
		}
	}
	other := in.Admin(t, fixtures.OtherTenantID, fixtures.OtherOwnerUserID)
	if gs, err := other.ListGrants(ctx, fixtures.OtherTenantID, ""); err != nil || slices.ContainsFunc(gs, func(x domain.Grant) bool { return x.ID == g.ID }) {
		t.Fatalf("another tenant lists %+v, %v", gs, err)
	}
	if got, err := owner.GetProposalAdmin(ctx, fixtures.DemoTenantID, prop.ID); err != nil || got.Status != domain.ProposalApproved {
		t.Fatalf("an approved proposal reads %+v, %v", got, err)
	}
}

func sellerPolicy(tenant, by string, sales ...string) domain.Policy {
	return domain.Policy{Name: "Bind printed tags", TenantID: tenant, CreatedBy: by,
		AllowedTools: []string{"trove_bind_item_identity"}, Scope: domain.PolicyScope{EstateSaleIDs: sales},
		Conditions: domain.PolicyConditions{MaxItemsPerRun: 5, PermittedFields: []string{"qr_code"}, RequireNoConflicts: true},
		Limits:     domain.PolicyLimits{MaxDailyActions: 100}}
}

func testSellerPolicies(t *testing.T, in Instance) {
	owner := in.Admin(t, fixtures.DemoTenantID, fixtures.DemoUserID)
	want := sellerPolicy(fixtures.DemoTenantID, fixtures.DemoUserID, fixtures.PublishedSaleID)
	before := in.Counts(t)
	p, err := owner.CreatePolicy(ctx, want)
	if err != nil {
		t.Fatalf("CreatePolicy: %v", err)
	}
	if !domain.ValidID(domain.PrefixPolicy, p.ID) || p.Version != 1 || p.Status != domain.PolicyDisabled || p.TenantID != fixtures.DemoTenantID ||
		p.CreatedBy != fixtures.DemoUserID || p.Name != want.Name || !slices.Equal(p.AllowedTools, want.AllowedTools) ||
		!slices.Equal(p.Scope.EstateSaleIDs, want.Scope.EstateSaleIDs) || p.Conditions.MaxItemsPerRun != 5 ||
		!slices.Equal(p.Conditions.PermittedFields, []string{"qr_code"}) || !p.Conditions.RequireNoConflicts ||
		p.Limits.MaxDailyActions != 100 || p.Limits.MaxCostUSDPerDay != 0 || p.CreatedAt.IsZero() {
		t.Fatalf("created policy = %+v", p)
	}
	after := in.Counts(t)
	for table, n := range map[string]int64{"automation_policies": 1, "automation_policy_versions": 1, "plugin_events": 1} {
		if d := after[table] - before[table]; d != n {
			t.Errorf("%s grew by %d, want %d", table, d, n)
		}
	}
	events := in.Events(t)
	if ev := events[len(events)-1]; ev.Action != "policy_created" || ev.TenantID != fixtures.DemoTenantID || ev.Actor.ID != fixtures.DemoUserID ||
		ev.Actor.Role != domain.RoleOwner || ev.Payload.RedactedSummary["policy_id"] != p.ID || ev.Payload.RedactedSummary["policy_version"] != "1" ||
		!slices.Equal(ev.Permissions, []string{domain.PermPolicyManage}) || ev.Outcome != domain.OutcomeSuccess {
		t.Fatalf("policy event = %+v", ev)
	}
	ps, err := owner.ListPolicies(ctx, fixtures.DemoTenantID)
	if err != nil || !slices.ContainsFunc(ps, func(x domain.Policy) bool { return x.ID == p.ID && x.Status == domain.PolicyDisabled }) {
		t.Fatalf("ListPolicies = %+v, %v", ps, err)
	}
	if got, err := owner.GetPolicy(ctx, p.ID); err != nil || got.ID != p.ID || got.Version != 1 || got.Name != p.Name {
		t.Fatalf("GetPolicy = %+v, %v", got, err)
	}
	if ps, err := in.Admin(t, fixtures.OtherTenantID, fixtures.OtherOwnerUserID).ListPolicies(ctx, fixtures.OtherTenantID); err != nil ||
		slices.ContainsFunc(ps, func(x domain.Policy) bool { return x.ID == p.ID }) {
		t.Fatalf("another tenant lists %+v, %v", ps, err)
	}

	// Every change is a new version; revoked is final.
	for i, st := range []string{domain.PolicyActive, domain.PolicyDisabled, domain.PolicyActive, domain.PolicyRevoked} {
		before := in.Counts(t)
		got, err := owner.SetPolicyStatus(ctx, p.ID, st, fixtures.DemoUserID)
		if err != nil || got.Status != st || got.Version != i+2 || got.ID != p.ID {
			t.Fatalf("SetPolicyStatus(%s) = %+v, %v", st, got, err)
		}
		if d := in.Counts(t)["automation_policy_versions"] - before["automation_policy_versions"]; d != 1 {
			t.Fatalf("SetPolicyStatus(%s) kept %d versions", st, d)
		}
		if g, err := owner.GetPolicy(ctx, p.ID); err != nil || g.Status != st || g.Version != i+2 {
			t.Fatalf("after %s: %+v, %v", st, g, err)
		}
	}
	before = in.Counts(t)
	for _, st := range []string{domain.PolicyActive, domain.PolicyDisabled, domain.PolicyRevoked} {
		if _, err := owner.SetPolicyStatus(ctx, p.ID, st, fixtures.DemoUserID); !errors.Is(err, domain.ErrTransitionInvalid) {
			t.Fatalf("a revoked policy became %s: %v", st, err)
		}
	}
	sellerUnchanged(t, in, before, "a change of a revoked policy")
	if _, err := owner.GetPolicy(ctx, "policy_nope"); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("unknown policy: %v", err)
	}
}

func testSellerPolicyRefused(t *testing.T, in Instance) {
	owner := in.Admin(t, fixtures.DemoTenantID, fixtures.DemoUserID)
	p, err := owner.CreatePolicy(ctx, sellerPolicy(fixtures.DemoTenantID, fixtures.DemoUserID, fixtures.PublishedSaleID))
	if err != nil {
		t.Fatalf("CreatePolicy: %v", err)
	}
	before := in.Counts(t)
	// A manager and a cataloger hold no policy.manage.
	for _, user := range []string{fixtures.ManagerUserID, fixtures.CatalogerUserID} {
		a := in.Admin(t, fixtures.DemoTenantID, user)
		if _, err := a.CreatePolicy(ctx, sellerPolicy(fixtures.DemoTenantID, user, fixtures.PublishedSaleID)); !errors.Is(err, domain.ErrPermissionDenied) {
			t.Fatalf("%s created a policy: %v", user, err)
		}
		if _, err := a.SetPolicyStatus(ctx, p.ID, domain.PolicyActive, user); !errors.Is(err, domain.ErrPermissionDenied) {
			t.Fatalf("%s enabled a policy: %v", user, err)
		}
	}
	// Another tenant's owner: no policy in the demo tenant, and the demo
	// policy cannot be enabled (refused as not permitted or as unknown —
	// the live database does not reveal that it exists).
	other := in.Admin(t, fixtures.OtherTenantID, fixtures.OtherOwnerUserID)
	if _, err := other.CreatePolicy(ctx, sellerPolicy(fixtures.DemoTenantID, fixtures.OtherOwnerUserID, fixtures.PublishedSaleID)); !errors.Is(err, domain.ErrPermissionDenied) {
		t.Fatalf("another tenant's owner created a policy in the demo tenant: %v", err)
	}
	if _, err := other.SetPolicyStatus(ctx, p.ID, domain.PolicyActive, fixtures.OtherOwnerUserID); !errors.Is(err, domain.ErrPermissionDenied) && !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("another tenant's owner enabled the demo policy: %v", err)
	}
	// A policy scoped to another tenant's sale: an unknown reference.
	_, err = owner.CreatePolicy(ctx, sellerPolicy(fixtures.DemoTenantID, fixtures.DemoUserID, fixtures.OtherPublishedSaleID))
	wantRef(t, err, "scope.estate_sale_ids", fixtures.OtherPublishedSaleID, true)
	sellerUnchanged(t, in, before, "a refused policy change")
	if got, err := owner.GetPolicy(ctx, p.ID); err != nil || got.Status != domain.PolicyDisabled || got.Version != 1 {
		t.Fatalf("after refusals: %+v, %v", got, err)
	}
}

func testSellerMemberRole(t *testing.T, in Instance) {
	owner := in.Admin(t, fixtures.DemoTenantID, fixtures.DemoUserID)
	for user, want := range map[string]string{
		fixtures.DemoUserID: domain.RoleOwner, fixtures.ManagerUserID: domain.RoleManager, fixtures.CatalogerUserID: domain.RoleCataloger,
		fixtures.PricerUserID: domain.RolePricer, fixtures.CheckoutUserID: domain.RoleCheckout, fixtures.OtherOwnerUserID: "", "user_nope": "",
	} {
		if got, err := owner.MemberRole(ctx, fixtures.DemoTenantID, user); err != nil || got != want {
			t.Errorf("MemberRole(%s) = %q, %v; want %q", user, got, err, want)
		}
	}
	if got, err := in.Admin(t, fixtures.DemoTenantID, fixtures.CatalogerUserID).MemberRole(ctx, fixtures.DemoTenantID, fixtures.CatalogerUserID); err != nil || got != domain.RoleCataloger {
		t.Errorf("the cataloger's own role = %q, %v", got, err)
	}
	if got, err := in.Admin(t, fixtures.OtherTenantID, fixtures.OtherOwnerUserID).MemberRole(ctx, fixtures.OtherTenantID, fixtures.DemoUserID); err != nil || got != "" {
		t.Errorf("the demo owner's role in the other tenant = %q, %v", got, err)
	}
}

func testSellerCurrentVersions(t *testing.T, in Instance) {
	want := map[string]int{}
	ds := Dataset()
	for _, it := range ds.Items {
		if it.ID == fixtures.DemoItemID {
			want[it.ID] = max(it.Version, 1)
		}
	}
	for _, s := range ds.Sales {
		if s.ID == fixtures.PublishedSaleID {
			want[s.ID] = max(s.Version, 1)
		}
	}
	want[fixtures.DemoCandidateID] = 3
	if want[fixtures.DemoItemID] != 8 || len(want) != 3 {
		t.Fatalf("fixture versions = %v", want)
	}
	owner := in.Admin(t, fixtures.DemoTenantID, fixtures.DemoUserID)
	got, err := owner.CurrentVersions(ctx, fixtures.DemoTenantID, []string{fixtures.DemoItemID, fixtures.PublishedSaleID,
		fixtures.DemoCandidateID, fixtures.OtherPublishedSaleID, "item_nope", "nonsense"})
	if err != nil || !maps.Equal(got, want) {
		t.Fatalf("CurrentVersions = %v, %v; want %v (another tenant's and unknown ids absent)", got, err, want)
	}
	if got, err := owner.CurrentVersions(ctx, fixtures.DemoTenantID, nil); err != nil || len(got) != 0 {
		t.Fatalf("CurrentVersions(none) = %v, %v", got, err)
	}
}

func testSellerAuditTrail(t *testing.T, in Instance) {
	prop := proposeForSeller(t, in, "seller-audit")
	owner := in.Admin(t, fixtures.DemoTenantID, fixtures.DemoUserID)
	if err := owner.DenyProposal(ctx, fixtures.DemoTenantID, prop.ID, fixtures.DemoUserID, surfaceApprove, "not now"); err != nil {
		t.Fatal(err)
	}
	// The reference: every recorded event of the tenant and correlation.
	want := []string{}
	for _, ev := range in.Events(t) {
		if ev.TenantID == fixtures.DemoTenantID && ev.CorrelationID == prop.CorrelationID {
			want = append(want, ev.ID)
		}
	}
	if len(want) != 2 || want[0] != prop.eventID {
		t.Fatalf("recorded trail = %v; want the proposal's creation %s then its denial", want, prop.eventID)
	}
	trail := trailOf(t, owner, fixtures.DemoTenantID, prop.CorrelationID)
	if trail == nil {
		return // a surface without an audit read
	}
	if ids := eventIDs(trail); !slices.Equal(ids, want) || trail[1].Action != "approval_denied" {
		t.Fatalf("AuditTrail = %v; want %v", ids, want)
	}
	for _, ev := range trail {
		if ev.TenantID != fixtures.DemoTenantID || ev.CorrelationID != prop.CorrelationID {
			t.Fatalf("trail event %+v", ev)
		}
	}
	// Another tenant's seller asking for the same correlation id in its own
	// tenant finds nothing.
	other := in.Admin(t, fixtures.OtherTenantID, fixtures.OtherOwnerUserID)
	if got := trailOf(t, other, fixtures.OtherTenantID, prop.CorrelationID); len(got) != 0 {
		t.Fatalf("another tenant's trail = %v", eventIDs(got))
	}
	if got := trailOf(t, owner, fixtures.DemoTenantID, ""); len(got) != 0 {
		t.Fatalf("the trail of no correlation = %v", eventIDs(got))
	}
}

// auditTrailer is the approval terminal's audit read (tui.Backend): the
// live Seller and the store's SellerView have it.
type auditTrailer interface {
	AuditTrail(ctx context.Context, tenantID, correlationID string) ([]domain.Event, error)
}

// trailOf is a's AuditTrail, or nil when a has none; an error fails.
func trailOf(t *testing.T, a domain.ApprovalAdmin, tenantID, correlationID string) []domain.Event {
	t.Helper()
	at, ok := a.(auditTrailer)
	if !ok {
		return nil
	}
	evs, err := at.AuditTrail(ctx, tenantID, correlationID)
	if err != nil {
		t.Fatalf("AuditTrail(%s, %s): %v", tenantID, correlationID, err)
	}
	if evs == nil {
		evs = []domain.Event{}
	}
	return evs
}

func eventIDs(evs []domain.Event) []string {
	out := []string{}
	for _, ev := range evs {
		out = append(out, ev.ID)
	}
	return out
}
