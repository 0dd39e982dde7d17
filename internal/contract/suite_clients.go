package contract

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/domain"
)

// runClients runs the contract cases of client administration (domain.ClientAdmin).
//
// Every case acts as the demo tenant's owner (fixtures.DemoUserID), who
// holds client.manage. The refusals only a live seller session can make —
// a member without client.manage, a user of another tenant — are the store
// CLI's or terminal's to make in mock mode, so internal/live asserts them
// in its own tests (seller_clients_test.go).
func runClients(t *testing.T, open func(t *testing.T) Instance) {
	t.Run("Clients/RegisterResolveAndValidate", func(t *testing.T) { testClientRegister(t, open(t)) })
	t.Run("Clients/ListAndGet", func(t *testing.T) { testClientListGet(t, open(t)) })
	t.Run("Clients/Lifecycle", func(t *testing.T) { testClientLifecycle(t, open(t)) })
	t.Run("Clients/PrincipalForClient", func(t *testing.T) { testClientPrincipal(t, open(t)) })
	t.Run("Clients/Limits", func(t *testing.T) { testClientLimits(t, open(t)) })
}

// owner is the client administration surface of the demo tenant's owner.
func owner(t *testing.T, in Instance) domain.ClientAdmin {
	return in.Clients(t, fixtures.DemoTenantID, fixtures.DemoUserID)
}

// unchanged fails when any table's row count moved (events included: a
// refused administration call records nothing).
func unchanged(t *testing.T, what string, before, after map[string]int64) {
	t.Helper()
	var d []string
	for _, k := range slices.Sorted(maps.Keys(after)) {
		if before[k] != after[k] {
			d = append(d, fmt.Sprintf("%s %d→%d", k, before[k], after[k]))
		}
	}
	if len(d) > 0 {
		t.Fatalf("%s changed rows: %v", what, d)
	}
}

// grew checks the row count deltas of the named tables; every other table
// must be unchanged.
func grew(t *testing.T, what string, before, after map[string]int64, want map[string]int64) {
	t.Helper()
	for _, k := range slices.Sorted(maps.Keys(after)) {
		if d := after[k] - before[k]; d != want[k] {
			t.Errorf("%s: %s grew by %d, want %d", what, k, d, want[k])
		}
	}
}

// lastAdminEvent checks the newest plugin_event: a seller's action on
// client c by the demo owner.
func lastAdminEvent(t *testing.T, in Instance, c domain.Client, action string) {
	t.Helper()
	evs := in.Events(t)
	if len(evs) == 0 {
		t.Fatalf("no event recorded for %s", action)
	}
	ev := evs[len(evs)-1]
	if ev.Action != action || ev.Outcome != domain.OutcomeSuccess || ev.TenantID != c.TenantID || ev.Mode != in.Backend.Mode() ||
		ev.Client.ID != c.ID || ev.Client.Name != c.Name || ev.Client.Type != c.ClientType ||
		ev.Actor.ID != fixtures.DemoUserID || ev.Actor.Type != "seller" || ev.Actor.Role != domain.RoleOwner ||
		!slices.Equal(ev.Permissions, []string{domain.PermClientManage}) || ev.Domain == nil ||
		ev.Domain.Service != "clients" || ev.Domain.Operation != action || ev.Payload.RedactedSummary["client_id"] != c.ID ||
		ev.Approval.Decision != "not_required" || !ev.Impact.Material || ev.Impact.Type != action ||
		!domain.ValidID(domain.PrefixEvent, ev.ID) || ev.Related.CandidateIDs == nil {
		t.Fatalf("%s event = %+v", action, ev)
	}
}

// noSecretIn fails when a token appears in any recorded event.
func noSecretIn(t *testing.T, in Instance, tokens ...string) {
	t.Helper()
	b, err := json.Marshal(in.Events(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range tokens {
		if strings.Contains(string(b), tok) || strings.Contains(string(b), Hash(tok)) {
			t.Fatal("a credential (or its hash) was written into the audit log")
		}
	}
}

func testClientRegister(t *testing.T, in Instance) {
	b, a := in.Backend, owner(t, in)
	before := in.Counts(t)
	c, tok, err := a.RegisterClient(ctx, domain.NewClient{TenantID: fixtures.DemoTenantID, ActorID: fixtures.CatalogerUserID,
		Name: "Contract laptop", ClientType: "claude_code", Groups: []string{"tenant_read", "candidate_write", "tenant_read"},
		CreatedBy: fixtures.DemoUserID})
	if err != nil {
		t.Fatalf("RegisterClient: %v", err)
	}
	after := in.Counts(t)
	if !domain.WellFormedToken(tok) {
		t.Fatal("the registration's token is not a well-formed tsk_ credential")
	}
	if !domain.ValidID(domain.PrefixClient, c.ID) || c.TenantID != fixtures.DemoTenantID || c.ActorID != fixtures.CatalogerUserID ||
		c.Name != "Contract laptop" || c.ClientType != "claude_code" || c.Status != domain.ClientActive ||
		!slices.Equal(c.AllowedToolGroups, []string{"candidate_write", "tenant_read"}) || c.TrustLevel != "standard_client" ||
		c.RiskClass != "standard" || c.Demo || c.CreatedBy != fixtures.DemoUserID || c.CreatedAt.IsZero() ||
		!c.HasCredential || c.CredentialHash != "" || c.LastSeenAt != nil || !domain.ValidID(domain.PrefixConn, c.SourceConnectionID) {
		t.Fatalf("registered client = %+v", c)
	}
	grew(t, "registration", before, after, map[string]int64{"mcp_clients": 1, "plugin_events": 1})
	lastAdminEvent(t, in, c, "client_registered")
	noSecretIn(t, in, tok)

	// The token is the new client's credential, at once, on the gate's path.
	p := resolve(t, b, tok)
	if p.Client.ID != c.ID || p.TenantID != fixtures.DemoTenantID || p.ActorID != fixtures.CatalogerUserID ||
		p.Role != domain.RoleCataloger || p.ClientStatus != domain.ClientActive ||
		!slices.Equal(p.AllowedToolGroups, c.AllowedToolGroups) || p.Public {
		t.Fatalf("the new client resolves to %+v", p)
	}
	// Explicit trust and risk are kept.
	c2, tok2, err := a.RegisterClient(ctx, domain.NewClient{TenantID: fixtures.DemoTenantID, ActorID: fixtures.DemoUserID,
		Name: "Automation", ClientType: "internal_automation", Groups: []string{"action_proposal"},
		TrustLevel: "untrusted_client", RiskClass: "restricted"})
	if err != nil || c2.TrustLevel != "untrusted_client" || c2.RiskClass != "restricted" || c2.CreatedBy != fixtures.DemoUserID ||
		c2.ID == c.ID || tok2 == tok {
		t.Fatalf("second registration = %+v, %v", c2, err)
	}

	// Refusals: each names its field and writes nothing.
	valid := domain.NewClient{TenantID: fixtures.DemoTenantID, ActorID: fixtures.DemoUserID, Name: "x", ClientType: "custom",
		Groups: []string{"tenant_read"}, CreatedBy: fixtures.DemoUserID}
	before = in.Counts(t)
	for _, c := range []struct {
		field string
		mod   func(*domain.NewClient)
	}{
		{"name", func(n *domain.NewClient) { n.Name = " \t" }},
		{"name", func(n *domain.NewClient) { n.Name = strings.Repeat("n", 101) }},
		{"type", func(n *domain.NewClient) { n.ClientType = "toaster" }},
		{"groups", func(n *domain.NewClient) { n.Groups = nil }},
		{"groups", func(n *domain.NewClient) { n.Groups = []string{"tenant_read", "everything"} }},
		{"trust", func(n *domain.NewClient) { n.TrustLevel = "blind" }},
		{"risk_class", func(n *domain.NewClient) { n.RiskClass = "yolo" }},
		{"actor", func(n *domain.NewClient) { n.ActorID = fixtures.OtherOwnerUserID }},
		{"actor", func(n *domain.NewClient) { n.ActorID = "user_404" }},
		{"created_by", func(n *domain.NewClient) { n.CreatedBy = fixtures.OtherOwnerUserID }},
	} {
		n := valid
		c.mod(&n)
		_, tok, err := a.RegisterClient(ctx, n)
		wantInput(t, err, c.field)
		if tok != "" {
			t.Fatalf("a refused registration (%s) returned a token", c.field)
		}
	}
	n := valid
	n.TenantID = "tenant_404"
	_, _, err = a.RegisterClient(ctx, n)
	wantRef(t, err, "tenant", "tenant_404", false)
	unchanged(t, "refused registrations", before, in.Counts(t))
}

func testClientListGet(t *testing.T, in Instance) {
	a := owner(t, in)
	c, _, err := a.RegisterClient(ctx, domain.NewClient{TenantID: fixtures.DemoTenantID, ActorID: fixtures.PricerUserID,
		Name: "Pricing desk", ClientType: "claude_desktop", Groups: []string{"tenant_read"}, CreatedBy: fixtures.DemoUserID})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, dc := range Dataset().Clients {
		if dc.TenantID == fixtures.DemoTenantID {
			want = append(want, dc.ID)
		}
	}
	want = append(want, c.ID)
	slices.Sort(want)
	list, err := a.ListClients(ctx, fixtures.DemoTenantID)
	if err != nil {
		t.Fatalf("ListClients: %v", err)
	}
	var got []string
	for _, l := range list {
		if l.TenantID != fixtures.DemoTenantID {
			t.Fatalf("the demo tenant's list holds %s of %s", l.ID, l.TenantID)
		}
		if l.CredentialHash != "" {
			t.Fatalf("%s: a listed client carries its credential hash", l.ID)
		}
		got = append(got, l.ID)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("clients = %v, want %v (by id)", got, want)
	}
	byID := map[string]domain.Client{}
	for _, l := range list {
		byID[l.ID] = l
	}
	if s := byID[SuspendedClientID]; s.Status != domain.ClientSuspended || s.ActorID != fixtures.CatalogerUserID || !s.HasCredential {
		t.Fatalf("listed suspended client = %+v", s)
	}
	if r := byID[RevokedClientID]; r.Status != domain.ClientRevoked {
		t.Fatalf("listed revoked client = %+v", r)
	}
	if d := byID[fixtures.DemoClientID]; !d.Demo {
		t.Fatalf("listed demo client = %+v", d)
	}

	g, err := a.GetClient(ctx, c.ID)
	if err != nil || g.ID != c.ID || g.Name != c.Name || g.Status != c.Status || g.ActorID != c.ActorID ||
		!slices.Equal(g.AllowedToolGroups, c.AllowedToolGroups) || !g.CreatedAt.Equal(c.CreatedAt) || !g.HasCredential ||
		g.SourceConnectionID != c.SourceConnectionID || g.CreatedBy != c.CreatedBy {
		t.Fatalf("GetClient = %+v, %v; registered %+v", g, err, c)
	}
	_, err = a.GetClient(ctx, "mcp_client_404")
	wantRef(t, err, "client", "mcp_client_404", false)
}

func testClientLifecycle(t *testing.T, in Instance) {
	b, a := in.Backend, owner(t, in)
	c, tok, err := a.RegisterClient(ctx, domain.NewClient{TenantID: fixtures.DemoTenantID, ActorID: fixtures.DemoUserID,
		Name: "Lifecycle", ClientType: "local_agent", Groups: []string{"tenant_read"}})
	if err != nil {
		t.Fatal(err)
	}
	by := fixtures.DemoUserID
	state := func(want string, cred bool) {
		t.Helper()
		g, err := a.GetClient(ctx, c.ID)
		if err != nil || g.Status != want || g.HasCredential != cred {
			t.Fatalf("client = %+v, %v; want %s, credential %v", g, err, want, cred)
		}
	}

	// Suspend: the very next resolution is refused as suspended.
	before := in.Counts(t)
	s, err := a.SetClientStatus(ctx, c.ID, domain.ClientSuspended, by)
	if err != nil || s.Status != domain.ClientSuspended || s.ID != c.ID || !s.HasCredential {
		t.Fatalf("suspend = %+v, %v", s, err)
	}
	grew(t, "suspension", before, in.Counts(t), map[string]int64{"plugin_events": 1})
	lastAdminEvent(t, in, s, "client_suspended")
	if _, err := b.ResolvePrincipal(ctx, tok); !errors.Is(err, domain.ErrClientSuspended) {
		t.Fatalf("a suspended client resolves: %v", err)
	}
	state(domain.ClientSuspended, true)
	before = in.Counts(t)
	if _, err := a.SetClientStatus(ctx, c.ID, domain.ClientSuspended, by); !errors.Is(err, domain.ErrTransitionInvalid) {
		t.Fatalf("suspending twice: %v, want ErrTransitionInvalid", err)
	}
	if _, err := a.SetClientStatus(ctx, c.ID, "bogus", by); !errors.Is(err, domain.ErrTransitionInvalid) {
		t.Fatalf("an unknown status: %v, want ErrTransitionInvalid", err)
	}
	_, err = a.SetClientStatus(ctx, "mcp_client_404", domain.ClientSuspended, by)
	wantRef(t, err, "client", "mcp_client_404", false)
	unchanged(t, "refused status changes", before, in.Counts(t))
	state(domain.ClientSuspended, true)

	// Only a member holding client.manage in the client's tenant changes it:
	// a cataloger is refused; another tenant's owner finds no such client.
	cat := in.Clients(t, fixtures.DemoTenantID, fixtures.CatalogerUserID)
	if _, err := cat.SetClientStatus(ctx, c.ID, domain.ClientActive, fixtures.CatalogerUserID); !errors.Is(err, domain.ErrPermissionDenied) {
		t.Fatalf("a cataloger reactivating: %v, want ErrPermissionDenied", err)
	}
	if _, _, err := cat.RotateCredential(ctx, c.ID, fixtures.CatalogerUserID); !errors.Is(err, domain.ErrPermissionDenied) {
		t.Fatalf("a cataloger rotating: %v, want ErrPermissionDenied", err)
	}
	stranger := in.Clients(t, fixtures.OtherTenantID, fixtures.OtherOwnerUserID)
	if _, err := stranger.SetClientStatus(ctx, c.ID, domain.ClientActive, fixtures.OtherOwnerUserID); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("another tenant's owner reactivating: %v, want an unknown client", err)
	}
	unchanged(t, "changes by members who may not make them", before, in.Counts(t))
	state(domain.ClientSuspended, true)

	// Reactivate.
	r, err := a.SetClientStatus(ctx, c.ID, domain.ClientActive, by)
	if err != nil || r.Status != domain.ClientActive {
		t.Fatalf("reactivate = %+v, %v", r, err)
	}
	lastAdminEvent(t, in, r, "client_reactivated")
	if p := resolve(t, b, tok); p.Client.ID != c.ID {
		t.Fatalf("reactivated client resolves to %+v", p)
	}

	// Rotate: the old token stops working, the new one works.
	before = in.Counts(t)
	rc, tok2, err := a.RotateCredential(ctx, c.ID, by)
	if err != nil || rc.ID != c.ID || !rc.HasCredential || rc.Status != domain.ClientActive {
		t.Fatalf("rotate = %+v, %v", rc, err)
	}
	if !domain.WellFormedToken(tok2) || tok2 == tok {
		t.Fatal("rotation did not issue a new well-formed token")
	}
	grew(t, "rotation", before, in.Counts(t), map[string]int64{"plugin_events": 1})
	lastAdminEvent(t, in, rc, "client_credential_rotated")
	if _, err := b.ResolvePrincipal(ctx, tok); !errors.Is(err, domain.ErrClientNotRegistered) {
		t.Fatalf("the rotated-out token: %v, want ErrClientNotRegistered", err)
	}
	if p := resolve(t, b, tok2); p.Client.ID != c.ID || p.ClientStatus != domain.ClientActive {
		t.Fatalf("the new token resolves to %+v", p)
	}
	noSecretIn(t, in, tok, tok2)
	before = in.Counts(t)
	if _, tok, err := a.RotateCredential(ctx, fixtures.DemoClientID, by); !errors.Is(err, domain.ErrTransitionInvalid) || tok != "" {
		t.Fatalf("rotating the mock demo client: %v, want ErrTransitionInvalid and no token", err)
	}
	_, _, err = a.RotateCredential(ctx, "mcp_client_404", by)
	wantRef(t, err, "client", "mcp_client_404", false)
	unchanged(t, "refused rotations", before, in.Counts(t))
	if p := resolve(t, b, CredOwner); p.Client.ID != fixtures.DemoClientID {
		t.Fatalf("the demo client's credential changed: %+v", p)
	}

	// Revoke: final, and the credential is gone.
	v, err := a.SetClientStatus(ctx, c.ID, domain.ClientRevoked, by)
	if err != nil || v.Status != domain.ClientRevoked || v.HasCredential {
		t.Fatalf("revoke = %+v, %v", v, err)
	}
	lastAdminEvent(t, in, v, "client_revoked")
	if _, err := b.ResolvePrincipal(ctx, tok2); !errors.Is(err, domain.ErrClientNotRegistered) {
		t.Fatalf("a revoked client's token: %v, want ErrClientNotRegistered", err)
	}
	before = in.Counts(t)
	for _, st := range []string{domain.ClientActive, domain.ClientSuspended, domain.ClientRevoked} {
		if _, err := a.SetClientStatus(ctx, c.ID, st, by); !errors.Is(err, domain.ErrTransitionInvalid) {
			t.Fatalf("revoked → %s: %v, want ErrTransitionInvalid", st, err)
		}
	}
	if _, tok, err := a.RotateCredential(ctx, c.ID, by); !errors.Is(err, domain.ErrTransitionInvalid) || tok != "" {
		t.Fatalf("rotating a revoked client: %v, want ErrTransitionInvalid and no token", err)
	}
	unchanged(t, "changes to a revoked client", before, in.Counts(t))
	state(domain.ClientRevoked, false)
	if _, err := b.ResolvePrincipal(ctx, tok2); !errors.Is(err, domain.ErrClientNotRegistered) {
		t.Fatalf("a revoked client came back: %v", err)
	}
}

func testClientPrincipal(t *testing.T, in Instance) {
	a := owner(t, in)
	s, err := a.PrincipalForClient(ctx, SuspendedClientID)
	if err != nil || s.Client.ID != SuspendedClientID || s.Client.Name != "Contract "+SuspendedClientID || s.Client.Type != "custom" ||
		s.ClientStatus != domain.ClientSuspended || s.ActorID != fixtures.CatalogerUserID || s.ActorType != "seller" ||
		s.TenantID != fixtures.DemoTenantID || s.Role != domain.RoleCataloger || s.MembershipID == "" || s.Public || s.SaleScoped ||
		!slices.Equal(slices.Sorted(slices.Values(s.AllowedToolGroups)), []string{"candidate_write", "tenant_read"}) {
		t.Fatalf("principal of a suspended client = %+v, %v", s, err)
	}
	r, err := a.PrincipalForClient(ctx, RevokedClientID)
	if err != nil || r.ClientStatus != domain.ClientRevoked || r.Role != domain.RoleCataloger {
		t.Fatalf("principal of a revoked client = %+v, %v", r, err)
	}
	sc, err := a.PrincipalForClient(ctx, ScopedClientID)
	if err != nil || !sc.SaleScoped || !slices.Equal(sc.AssignedSaleIDs, []string{fixtures.LiveSaleID}) ||
		sc.ActorID != fixtures.ScopedCatalogerUserID {
		t.Fatalf("principal of the sale-scoped client = %+v, %v", sc, err)
	}
	o, err := a.PrincipalForClient(ctx, fixtures.DemoClientID)
	if err != nil || o.Role != domain.RoleOwner || o.MembershipID != fixtures.DemoMembershipID || o.SaleScoped || o.AssignedSaleIDs != nil {
		t.Fatalf("principal of the demo client = %+v, %v", o, err)
	}
	_, err = a.PrincipalForClient(ctx, "mcp_client_404")
	wantRef(t, err, "client", "mcp_client_404", false)
}

func testClientLimits(t *testing.T, in Instance) {
	b, a := in.Backend, owner(t, in)
	eff := func(client string, want domain.Limits) {
		t.Helper()
		got, err := a.EffectiveLimits(ctx, fixtures.DemoTenantID, client)
		if err != nil || got != want.Effective() { // a 0 that means a default reads as that default
			t.Fatalf("effective limits of %q = %+v, %v; want %+v", client, got, err, want.Effective())
		}
	}
	eff("", domain.DefaultLimits())
	eff(PricerClientID, domain.DefaultLimits())
	if l, err := a.EffectiveLimits(ctx, "", ""); err != nil || l != domain.DefaultLimits() {
		t.Fatalf("no tenant: %+v, %v; want the defaults", l, err)
	}

	tenant := domain.Limits{ReadsPerMinute: 60, CandidateWritesPerMinute: 5, ProposalsPerMinute: 4, ControlledActionsPerMinute: 3,
		MaxBulkTargets: 25, MaxDailyPaidCostUSD: 2.5, MaxOpenCandidates: 500, MaxCandidateBytes: 1 << 20}
	before := in.Counts(t)
	if err := a.SetLimits(ctx, fixtures.DemoTenantID, "", tenant); err != nil {
		t.Fatalf("SetLimits(tenant): %v", err)
	}
	grew(t, "tenant limits", before, in.Counts(t), map[string]int64{"mcp_limits": 1})
	eff("", tenant)
	eff(PricerClientID, tenant) // no row of its own: the tenant's

	client := domain.Limits{ReadsPerMinute: 7, CandidateWritesPerMinute: 0, ProposalsPerMinute: 1, ControlledActionsPerMinute: 2,
		MaxBulkTargets: 3, MaxDailyPaidCostUSD: 0.75, MaxOpenCandidates: 500, MaxCandidateBytes: 1 << 20} // the quota is the tenant's
	if err := a.SetLimits(ctx, fixtures.DemoTenantID, PricerClientID, client); err != nil {
		t.Fatalf("SetLimits(client): %v", err)
	}
	eff(PricerClientID, client)
	eff(fixtures.DemoClientID, tenant)
	// The gate's rate limit reads the same row.
	d, err := b.ConsumeRate(ctx, resolve(t, b, CredPricer), domain.LimitControlledActions)
	if err != nil || d.Limit != client.ControlledActionsPerMinute {
		t.Fatalf("the pricer client's controlled-action limit = %+v, %v; want %d", d, err, client.ControlledActionsPerMinute)
	}
	// Setting again replaces the row (no second one).
	client.ReadsPerMinute = 9
	before = in.Counts(t)
	if err := a.SetLimits(ctx, fixtures.DemoTenantID, PricerClientID, client); err != nil {
		t.Fatal(err)
	}
	unchanged(t, "replacing a client's limits", before, in.Counts(t))
	eff(PricerClientID, client)

	// Refusals write nothing and leave the limits as they were.
	bad := tenant
	bad.ProposalsPerMinute = -1
	err = a.SetLimits(ctx, fixtures.DemoTenantID, "", bad)
	wantInput(t, err, "limits")
	bad = tenant
	bad.MaxDailyPaidCostUSD = -0.01
	err = a.SetLimits(ctx, fixtures.DemoTenantID, "", bad)
	wantInput(t, err, "limits")
	err = a.SetLimits(ctx, fixtures.DemoTenantID, "mcp_client_404", tenant)
	wantRef(t, err, "client", "mcp_client_404", false)
	err = a.SetLimits(ctx, "tenant_404", "", tenant)
	wantRef(t, err, "tenant", "tenant_404", false)
	// Another tenant's client is not a client of this tenant (whether the
	// answer says cross_tenant is each backend's audit matter).
	err = a.SetLimits(ctx, fixtures.DemoTenantID, fixtures.OtherClientID, tenant)
	var re *domain.RefError
	if !errors.As(err, &re) || re.Field != "client" || re.ID != fixtures.OtherClientID {
		t.Fatalf("limits for another tenant's client: %v, want a RefError on client", err)
	}
	unchanged(t, "refused limits", before, in.Counts(t))
	eff("", tenant)
	eff(PricerClientID, client)
}
