package approval

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/triunalabs/trovesnap/internal/domain"
)

var now = time.Date(2026, 6, 20, 12, 0, 0, 0, time.UTC)

// requester is the principal of the client that asked for proposal(t).
var requester = domain.Principal{Client: domain.ClientRef{ID: "mcp_client_81"}, ActorID: "user_88", TenantID: "tenant_123", Role: domain.RoleOwner}

func proposal(t *testing.T) domain.Proposal {
	t.Helper()
	p := domain.Proposal{
		ID: "proposal_1", TenantID: "tenant_123", Tool: domain.ExecutingTool{Name: "trove_bind_item_identity", Version: "1.0.0"},
		RequestedBy: domain.Requester{ClientID: "mcp_client_81", ActorID: "user_88"}, Action: domain.ActionBindIdentity,
		TargetKind: "item", TargetIDs: []string{"item_1"}, ExpectedVersions: []domain.TargetVersion{{ID: "item_1", Version: 4}},
		Changes: []domain.FieldChange{{TargetID: "item_1", Field: "qr_code", From: "", To: "QR-1"}},
		Impact:  domain.ProposalImpact{ItemsChanged: 1}, Validation: domain.ProposalValidation{Status: "valid"},
		Requirement: "human_or_policy", SaleIDs: []string{"sale_221"}, CreatedAt: now.Add(-time.Minute), ExpiresAt: now.Add(time.Hour),
		Status: domain.ProposalPending,
	}
	h, err := Hash(p)
	if err != nil {
		t.Fatal(err)
	}
	p.Hash = h
	return p
}

func grant(p domain.Proposal) domain.Grant {
	return domain.Grant{ID: "approval_1", TenantID: p.TenantID, ProposalID: p.ID, ProposalHash: p.Hash,
		IssuedBy: domain.GrantIssuer{Type: domain.IssuerHuman, ActorID: "user_88", Surface: SurfaceApproveTUI},
		Tool:     p.Tool.Name, TargetIDs: p.TargetIDs, Constraints: DefaultConstraints(p), Status: domain.GrantActive,
		SingleUse: true, IssuedAt: now.Add(-time.Minute), ExpiresAt: now.Add(30 * time.Minute)}
}

func policy() domain.Policy {
	return domain.Policy{ID: "policy_1", TenantID: "tenant_123", Name: "tags", Version: 2, Status: domain.PolicyActive,
		AllowedTools: []string{"trove_bind_item_identity"}, Scope: domain.PolicyScope{EstateSaleIDs: []string{"sale_221"}},
		Conditions: domain.PolicyConditions{MaxItemsPerRun: 5, PermittedFields: []string{"qr_code"}, RequireNoConflicts: true},
		Limits:     domain.PolicyLimits{MaxDailyActions: 3}}
}

// The hash covers every content field and nothing else.
func TestHash_CoversContentOnly(t *testing.T) {
	base := proposal(t)
	mutations := map[string]func(*domain.Proposal){
		"tenant":      func(p *domain.Proposal) { p.TenantID = "tenant_456" },
		"tool":        func(p *domain.Proposal) { p.Tool.Version = "2.0.0" },
		"action":      func(p *domain.Proposal) { p.Action = domain.ActionReleaseIdentity },
		"target":      func(p *domain.Proposal) { p.TargetIDs = []string{"item_2"} },
		"version":     func(p *domain.Proposal) { p.ExpectedVersions[0].Version = 5 },
		"change":      func(p *domain.Proposal) { p.Changes[0].To = "QR-2" },
		"impact":      func(p *domain.Proposal) { p.Impact.ItemsChanged = 2 },
		"expiry":      func(p *domain.Proposal) { p.ExpiresAt = p.ExpiresAt.Add(time.Second) },
		"requester":   func(p *domain.Proposal) { p.RequestedBy.ActorID = "user_90" },
		"requirement": func(p *domain.Proposal) { p.Requirement = "explicit_human" },
	}
	for name, m := range mutations {
		p := proposal(t)
		p.ExpectedVersions = []domain.TargetVersion{{ID: "item_1", Version: 4}}
		p.Changes = []domain.FieldChange{{TargetID: "item_1", Field: "qr_code", From: "", To: "QR-1"}}
		m(&p)
		if h, _ := Hash(p); h == base.Hash {
			t.Errorf("%s: hash unchanged", name)
		}
	}
	p := proposal(t)
	p.Status, p.CorrelationID = domain.ProposalExecuted, "corr_x"
	if h, _ := Hash(p); h != base.Hash {
		t.Error("status or correlation changed the hash")
	}
	if len(base.Hash) != 71 || base.Hash[:7] != "sha256:" {
		t.Errorf("hash %q", base.Hash)
	}
}

func TestResolve_Grants(t *testing.T) {
	p := proposal(t)
	tool := p.Tool.Name
	cases := []struct {
		name  string
		prop  func(*domain.Proposal)
		grant func(*domain.Grant)
		tool  string
		want  error
		dec   string
	}{
		{name: "valid grant", dec: DecisionAllowed},
		{name: "other tool", tool: "trove_publish_item", want: domain.ErrApprovalInvalid},
		{name: "tampered content", prop: func(p *domain.Proposal) { p.Changes[0].To = "QR-evil" }, want: domain.ErrProposalChanged},
		{name: "executed", prop: func(p *domain.Proposal) { p.Status = domain.ProposalExecuted }, want: domain.ErrApprovalConsumed},
		{name: "rejected", prop: func(p *domain.Proposal) { p.Status = domain.ProposalDenied }, want: domain.ErrApprovalInvalid},
		{name: "proposal expired", prop: func(p *domain.Proposal) { p.ExpiresAt = now; p.Hash, _ = Hash(*p) }, want: domain.ErrApprovalExpired},
		{name: "grant expired", grant: func(g *domain.Grant) { g.ExpiresAt = now }, want: domain.ErrApprovalExpired},
		{name: "grant revoked", grant: func(g *domain.Grant) { g.Status = domain.GrantRevoked }, want: domain.ErrApprovalRevoked},
		{name: "grant consumed", grant: func(g *domain.Grant) { g.Status = domain.GrantConsumed }, want: domain.ErrApprovalConsumed},
		{name: "grant for another proposal", grant: func(g *domain.Grant) { g.ProposalID = "proposal_2" }, want: domain.ErrApprovalInvalid},
		{name: "grant for another hash", grant: func(g *domain.Grant) { g.ProposalHash = "sha256:00" }, want: domain.ErrProposalChanged},
		{name: "grant for another tool", grant: func(g *domain.Grant) { g.Tool = "trove_publish_item" }, want: domain.ErrApprovalInvalid},
		{name: "grant for other targets", grant: func(g *domain.Grant) { g.TargetIDs = []string{"item_1", "item_2"} }, want: domain.ErrApprovalInvalid},
		{name: "grant of another tenant", grant: func(g *domain.Grant) { g.TenantID = "tenant_456" }, want: domain.ErrApprovalInvalid},
		{name: "constraints too narrow", grant: func(g *domain.Grant) { g.Constraints.MaxItems = 0 }, want: domain.ErrApprovalInvalid},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pp := proposal(t)
			pp.Changes = []domain.FieldChange{{TargetID: "item_1", Field: "qr_code", From: "", To: "QR-1"}}
			if c.prop != nil {
				c.prop(&pp)
			}
			g := grant(p)
			if c.grant != nil {
				c.grant(&g)
			}
			tl := tool
			if c.tool != "" {
				tl = c.tool
			}
			d := Resolve(now, tl, requester, pp, []domain.Grant{g}, nil, nil)
			if c.want == nil {
				if d.Err != nil || d.Decision != c.dec || d.Auth.GrantID != g.ID || d.Auth.ProposalHash != p.Hash {
					t.Fatalf("decision %+v", d)
				}
				return
			}
			if !errors.Is(d.Err, c.want) || d.Auth.GrantID != "" {
				t.Fatalf("want %v, got %+v", c.want, d)
			}
		})
	}
	if d := Resolve(now, tool, requester, p, nil, nil, nil); !errors.Is(d.Err, domain.ErrApprovalRequired) || d.Decision != DecisionHumanRequired {
		t.Errorf("no grant: %+v", d)
	}
}

// Mutation-style policy tests: the base case is authorised; every clause of
// the evaluator has a case violating only that clause, which must be
// refused. Removing or negating any clause makes one of these fail.
func TestEvaluatePolicy_EachClauseMatters(t *testing.T) {
	base := proposal(t)
	if ok, reason := EvaluatePolicy(policy(), base, base.Tool.Name, domain.PolicyUsage{}, now); !ok {
		t.Fatalf("base case refused: %s", reason)
	}
	cases := map[string]struct {
		pol   func(*domain.Policy)
		prop  func(*domain.Proposal)
		usage domain.PolicyUsage
		tool  string
	}{
		"policy disabled":        {pol: func(p *domain.Policy) { p.Status = domain.PolicyDisabled }},
		"policy revoked":         {pol: func(p *domain.Policy) { p.Status = domain.PolicyRevoked }},
		"another tenant":         {pol: func(p *domain.Policy) { p.TenantID = "tenant_456" }},
		"tool not allowed":       {tool: "trove_update_item_status"},
		"proposal expired":       {prop: func(p *domain.Proposal) { p.ExpiresAt = now }},
		"human-only action":      {prop: func(p *domain.Proposal) { p.Action = domain.ActionPublishItem }},
		"explicit human tool":    {prop: func(p *domain.Proposal) { p.Requirement = "explicit_human" }},
		"paid work":              {prop: func(p *domain.Proposal) { p.Impact.EstimatedCostUSD = 0.5 }},
		"broad bulk":             {prop: func(p *domain.Proposal) { p.TargetIDs = make([]string, domain.BroadBulkLimit+1) }},
		"financial change":       {prop: func(p *domain.Proposal) { p.Changes = []domain.FieldChange{{Field: "price_cents", To: 100.0}} }},
		"sale completion":        {prop: func(p *domain.Proposal) { p.Changes = []domain.FieldChange{{Field: "status", To: domain.ItemSold}} }},
		"no sale scope":          {pol: func(p *domain.Policy) { p.Scope.EstateSaleIDs = nil }},
		"proposal without sale":  {prop: func(p *domain.Proposal) { p.SaleIDs = nil }},
		"sale outside scope":     {prop: func(p *domain.Proposal) { p.SaleIDs = []string{"sale_222"} }},
		"too many items per run": {pol: func(p *domain.Policy) { p.Conditions.MaxItemsPerRun = 0 }},
		"field not permitted":    {pol: func(p *domain.Policy) { p.Conditions.PermittedFields = []string{"room"} }},
		"conflicts not allowed":  {prop: func(p *domain.Proposal) { p.Validation.Warnings = []string{"release_from_sold"} }},
		"invalid proposal":       {prop: func(p *domain.Proposal) { p.Validation.Status = "invalid" }},
		"daily action limit":     {usage: domain.PolicyUsage{ActionsToday: 3}},
		"daily cost limit":       {pol: func(p *domain.Policy) { p.Limits.MaxCostUSDPerDay = -1 }},
	}
	for name, c := range cases {
		pol, prop := policy(), proposal(t)
		prop.Changes = []domain.FieldChange{{TargetID: "item_1", Field: "qr_code", From: "", To: "QR-1"}}
		if c.pol != nil {
			c.pol(&pol)
		}
		if c.prop != nil {
			c.prop(&prop)
		}
		tool := prop.Tool.Name
		if c.tool != "" {
			tool = c.tool
		}
		if ok, _ := EvaluatePolicy(pol, prop, tool, c.usage, now); ok {
			t.Errorf("%s: authorised", name)
		}
	}
	// Through Resolve: a policy decision carries the policy and its version.
	d := Resolve(now, base.Tool.Name, requester, base, nil, []domain.Policy{policy()}, nil)
	if d.Err != nil || d.Decision != DecisionAllowedByPolicy || d.Auth.PolicyID != "policy_1" || d.Auth.PolicyVersion != 2 {
		t.Errorf("policy decision %+v", d)
	}
}

func TestValidatePolicy_NarrowAndNeverHumanOnly(t *testing.T) {
	if err := ValidatePolicy(policy()); err != nil {
		t.Fatalf("valid policy refused: %v", err)
	}
	bad := map[string]func(*domain.Policy){
		"no name":        func(p *domain.Policy) { p.Name = "" },
		"no tools":       func(p *domain.Policy) { p.AllowedTools = nil },
		"publication":    func(p *domain.Policy) { p.AllowedTools = []string{"trove_publish_item"} },
		"notifications":  func(p *domain.Policy) { p.AllowedTools = []string{"trove_notify_matched_buyers"} },
		"unscoped":       func(p *domain.Policy) { p.Scope.EstateSaleIDs = nil },
		"bad sale id":    func(p *domain.Policy) { p.Scope.EstateSaleIDs = []string{"221"} },
		"broad bulk":     func(p *domain.Policy) { p.Conditions.MaxItemsPerRun = domain.BroadBulkLimit + 1 },
		"no fields":      func(p *domain.Policy) { p.Conditions.PermittedFields = nil },
		"no daily limit": func(p *domain.Policy) { p.Limits.MaxDailyActions = 0 },
		"paid":           func(p *domain.Policy) { p.Limits.MaxCostUSDPerDay = 5 },
	}
	for name, m := range bad {
		p := policy()
		m(&p)
		if err := ValidatePolicy(p); !errors.Is(err, domain.ErrInvalidInput) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// A grant approves what one client asked for: another client of the same
// tenant, whose role holds the tool's permission, cannot use it, and no
// policy stands in for it either (finding 4 of issue 13).
func TestHardening_ResolveRefusesAnotherClientsGrantAndPolicy(t *testing.T) {
	p := proposal(t)
	g := grant(p)
	g.BoundTo = p.RequestedBy
	others := map[string]domain.Principal{
		"another client, same actor":  {Client: domain.ClientRef{ID: "mcp_client_82"}, ActorID: "user_88", TenantID: "tenant_123", Role: domain.RoleOwner},
		"same client id, other actor": {Client: domain.ClientRef{ID: "mcp_client_81"}, ActorID: "user_89", TenantID: "tenant_123", Role: domain.RoleManager},
		"no client":                   {ActorID: "user_88", TenantID: "tenant_123", Role: domain.RoleOwner},
	}
	for name, other := range others {
		d := Resolve(now, p.Tool.Name, other, p, []domain.Grant{g}, []domain.Policy{policy()}, nil)
		if !errors.Is(d.Err, domain.ErrApprovalInvalid) || d.Decision != DecisionBlocked || d.Auth != (domain.Authorization{}) {
			t.Errorf("%s: %+v", name, d)
		}
	}
	if d := Resolve(now, p.Tool.Name, requester, p, []domain.Grant{g}, nil, nil); d.Err != nil || d.Auth.GrantID != g.ID {
		t.Errorf("the requesting client: %+v", d)
	}
}

// A policy may name exactly the tools of the registry's policy-authorisable
// actions, and no policy authorises a proposal of any other action: the
// §18.2 categories and explicit_human come from the registry, one entry per
// action.
func TestPolicy_RegistryDecidesWhatAPolicyMayAuthorise(t *testing.T) {
	want := []string{"trove_execute_candidate_promotion", "trove_update_item_status", "trove_apply_bulk_item_update", "trove_bind_item_identity",
		"trove_record_checkout_scan"}
	if got := PolicyAuthorisableTools(); !slices.Equal(got, want) {
		t.Errorf("PolicyAuthorisableTools() = %v, want %v", got, want)
	}
	for _, a := range domain.Actions() {
		pol := policy()
		pol.AllowedTools = []string{a.Tool}
		if a.Tool == domain.CheckoutScanTool { // bounded to the scans a policy may authorise
			pol.Conditions.CheckoutScans = domain.PolicyCheckoutScans()
		}
		if err := ValidatePolicy(pol); (err == nil) != a.PolicyMay() {
			t.Errorf("%s: a policy naming %s: %v", a.Action, a.Tool, err)
		}
		p := proposal(t)
		p.Action, p.Tool.Name, p.Requirement = a.Action, a.Tool, a.Requirement
		if r := PolicyHumanOnlyReason(p); (r == "") != a.PolicyMay() {
			t.Errorf("%s: human-only reason %q", a.Action, r)
		}
	}
}
