package contract

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/domain"
)

// runReviewScope: sale assignment (§4.3) holds on the whole human approval
// surface, not only on proposals — a sale-scoped approver neither lists
// nor revokes the grant of another sale's proposal, nor reads its audit
// trail; and a proposal that touches an unassigned sale beside an assigned
// one is another sale's proposal.
func runReviewScope(t *testing.T, open func(t *testing.T) Instance) {
	t.Run("Review/ScopedApproverNeitherListsNorRevokesAnotherSalesGrant",
		func(t *testing.T) { testReviewScopedGrants(t, open(t)) })
	t.Run("Review/ScopedApproverReadsNoOtherSalesAuditTrail",
		func(t *testing.T) { testReviewScopedAuditTrail(t, open(t)) })
	t.Run("Review/ProposalAcrossTwoSalesHiddenFromAMemberAssignedOne",
		func(t *testing.T) { testReviewProposalAcrossSales(t, open(t)) })
}

// scopedPair makes two approved promotions: other in sale_221, approved by
// the owner, and mine in sale_223, approved by the sale-scoped manager
// (assigned sale_223 only) — so what the manager is refused below is the
// scope, not its role.
func scopedPair(t *testing.T, in Instance, f *flow) (other, mine domain.Proposal, gOther, gMine domain.Grant) {
	t.Helper()
	c := f.candidate(fixtures.PublishedSaleID, candReviewed)
	other = f.mustPropose(promotionDraft(c.ID, c.Version, nil))
	gOther = f.approve(other)
	lc := f.candidate(fixtures.LiveSaleID, "candidate_781")
	mine = f.mustPropose(promotionDraft(lc.ID, lc.Version, nil))
	gMine, err := in.Grants(t, fixtures.DemoTenantID, ScopedManagerUserID).IssueGrant(ctx, grantFor(mine, ScopedManagerUserID))
	if err != nil {
		t.Fatalf("the scoped manager approves its own sale's proposal: %v", err)
	}
	return other, mine, gOther, gMine
}

func grantIDs(gs []domain.Grant) []string {
	ids := []string{}
	for _, g := range gs {
		ids = append(ids, g.ID)
	}
	return ids
}

func testReviewScopedGrants(t *testing.T, in Instance) {
	f := newFlow(t, in)
	other, mine, gOther, gMine := scopedPair(t, in, f)
	admin := in.Admin(t, fixtures.DemoTenantID, ScopedManagerUserID)

	// List: only the grant of its own sale's proposal, whatever the status
	// filter; the owner still lists both.
	for _, status := range []string{"", domain.GrantActive} {
		gs, err := admin.ListGrants(ctx, fixtures.DemoTenantID, status)
		if err != nil {
			t.Fatalf("ListGrants(%q) as the scoped manager: %v", status, err)
		}
		if ids := grantIDs(gs); slices.Contains(ids, gOther.ID) || !slices.Contains(ids, gMine.ID) {
			t.Fatalf("the scoped manager lists grants %v (status %q): want %s and never %s", ids, status, gMine.ID, gOther.ID)
		}
	}
	all, err := in.Admin(t, fixtures.DemoTenantID, fixtures.DemoUserID).ListGrants(ctx, fixtures.DemoTenantID, "")
	if err != nil {
		t.Fatalf("ListGrants as the owner: %v", err)
	}
	if ids := grantIDs(all); !slices.Contains(ids, gOther.ID) || !slices.Contains(ids, gMine.ID) {
		t.Fatalf("the owner lists grants %v: want %s and %s", ids, gOther.ID, gMine.ID)
	}

	// Revoke: another sale's grant is refused exactly like a missing grant,
	// and nothing changes — the grant stays active, its proposal approved.
	_, missing := admin.RevokeGrant(ctx, fixtures.DemoTenantID, "approval_404", ScopedManagerUserID)
	var mre *domain.RefError
	if !errors.As(missing, &mre) || mre.Field != "grant" {
		t.Fatalf("revoking a missing grant: %v", missing)
	}
	before := in.Counts(t)
	_, err = admin.RevokeGrant(ctx, fixtures.DemoTenantID, gOther.ID, ScopedManagerUserID)
	var re *domain.RefError
	if !errors.As(err, &re) || re.Field != "grant" || re.ID != gOther.ID || re.CrossTenant || !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("revoking another sale's grant: err = %v, want the RefError of a missing grant", err)
	}
	if got, want := strings.ReplaceAll(re.Error(), gOther.ID, "ID"), strings.ReplaceAll(mre.Error(), "approval_404", "ID"); got != want {
		t.Fatalf("refusal %q differs from a missing grant's %q", got, want)
	}
	f.unchanged(before, "a scoped manager's revocation of another sale's grant")
	f.wantGrant(other, gOther.ID, domain.GrantActive)
	if got := f.proposal(other.ID); got.Status != domain.ProposalApproved {
		t.Fatalf("proposal %s is %s after a refused revocation", other.ID, got.Status)
	}

	// Its own sale's grant it revokes.
	if g, err := admin.RevokeGrant(ctx, fixtures.DemoTenantID, gMine.ID, ScopedManagerUserID); err != nil || g.Status != domain.GrantRevoked {
		t.Fatalf("the scoped manager revokes its own sale's grant: %+v, %v", g, err)
	}
	f.wantGrant(mine, gMine.ID, domain.GrantRevoked)
}

func testReviewScopedAuditTrail(t *testing.T, in Instance) {
	f := newFlow(t, in)
	other, mine, _, _ := scopedPair(t, in, f)
	trail := func(user, corr string) []domain.Event {
		t.Helper()
		a, ok := in.Admin(t, fixtures.DemoTenantID, user).(auditTrailer)
		if !ok {
			t.Fatalf("the approval surface of %s reads no audit trail", user)
		}
		ev, err := a.AuditTrail(ctx, fixtures.DemoTenantID, corr)
		if err != nil {
			t.Fatalf("AuditTrail(%s) as %s: %v", corr, user, err)
		}
		return ev
	}
	// The owner reads both trails: the proposal and its approval at least.
	for _, p := range []domain.Proposal{other, mine} {
		if ev := trail(fixtures.DemoUserID, p.CorrelationID); len(ev) < 2 {
			t.Fatalf("the owner's audit trail of %s = %d events, want the proposal and its approval", p.ID, len(ev))
		}
	}
	// The scoped manager reads its own sale's, and of another sale's as
	// much as of a correlation that does not exist: nothing.
	if ev := trail(ScopedManagerUserID, mine.CorrelationID); len(ev) < 2 {
		t.Fatalf("the scoped manager's audit trail of its own sale's %s = %d events", mine.ID, len(ev))
	}
	if ev := trail(ScopedManagerUserID, "corr_404"); len(ev) != 0 {
		t.Fatalf("an unknown correlation has %d events", len(ev))
	}
	if ev := trail(ScopedManagerUserID, other.CorrelationID); len(ev) != 0 {
		t.Fatalf("the scoped manager reads %d events of another sale's proposal %s", len(ev), other.ID)
	}
}

func testReviewProposalAcrossSales(t *testing.T, in Instance) {
	f := newFlow(t, in)
	// One bulk plan over an item of sale_221 and one of sale_223.
	pyrex, flat := f.itemNow(actPyrex), f.itemNow(actScopedItem)
	bulk := f.mustPropose(bulkDraft(map[string]any{"room": "garage"}, pyrex, flat))
	if !slices.Equal(slices.Sorted(slices.Values(bulk.SaleIDs)), []string{fixtures.PublishedSaleID, fixtures.LiveSaleID}) {
		t.Fatalf("the bulk proposal names sales %v, want both", bulk.SaleIDs)
	}
	// The owner (unscoped) approves it first, so the grant hidden below
	// from the scoped member is a real grant, which the owner sees.
	g := f.approve(bulk)
	f.wantGrant(bulk, g.ID, domain.GrantActive)
	before := in.Counts(t)

	// A client of the scoped cataloger (sale_223 only): get refused like a
	// missing proposal, and its grant does not show — the approval state
	// answers as for a proposal that does not exist.
	sp := resolve(t, f.b, CredScoped)
	if !sp.SaleScoped || !slices.Equal(sp.AssignedSaleIDs, []string{fixtures.LiveSaleID}) {
		t.Fatalf("scoped principal = %+v", sp)
	}
	_, missing := f.b.GetProposal(ctx, sp, "proposal_404")
	_, err := f.b.GetProposal(ctx, sp, bulk.ID)
	wantMissingProposal(t, err, bulk.ID, missing)
	if gs, _, _, err := f.b.ApprovalState(ctx, sp, "proposal_404", bulk.Tool.Name); err != nil || len(gs) != 0 {
		t.Fatalf("approval state of a missing proposal = %+v, %v; want no grant", gs, err)
	}
	if gs, _, _, err := f.b.ApprovalState(ctx, sp, bulk.ID, bulk.Tool.Name); err != nil || len(gs) != 0 {
		t.Fatalf("approval state of the two-sale proposal = %+v, %v; want no grant, as for a missing proposal (the owner sees %s)", gs, err, g.ID)
	}

	// The scoped manager's approval surface (sale_223 only): not listed,
	// read like a missing proposal, and approving it is refused so.
	admin := in.Admin(t, fixtures.DemoTenantID, ScopedManagerUserID)
	list, err := admin.ListProposals(ctx, fixtures.DemoTenantID, "")
	if err != nil {
		t.Fatalf("ListProposals as the scoped manager: %v", err)
	}
	if slices.ContainsFunc(list, func(p domain.Proposal) bool { return p.ID == bulk.ID }) {
		t.Fatalf("the scoped manager lists the two-sale proposal %s", bulk.ID)
	}
	_, missing = admin.GetProposalAdmin(ctx, fixtures.DemoTenantID, "proposal_404")
	_, err = admin.GetProposalAdmin(ctx, fixtures.DemoTenantID, bulk.ID)
	wantMissingProposal(t, err, bulk.ID, missing)
	_, err = in.Grants(t, fixtures.DemoTenantID, ScopedManagerUserID).IssueGrant(ctx, grantFor(bulk, ScopedManagerUserID))
	wantMissingProposal(t, err, bulk.ID, missing)
	f.unchanged(before, "a scoped member's reads and approval of a two-sale proposal")
	f.wantGrant(bulk, g.ID, domain.GrantActive)

	// The owner (unscoped) lists and reads it, approved by its grant alone.
	all, err := in.Admin(t, fixtures.DemoTenantID, fixtures.DemoUserID).ListProposals(ctx, fixtures.DemoTenantID, "")
	if err != nil || !slices.ContainsFunc(all, func(p domain.Proposal) bool { return p.ID == bulk.ID }) {
		t.Fatalf("the owner's list lacks %s: %v", bulk.ID, err)
	}
	if got := f.proposal(bulk.ID); got.Hash != bulk.Hash || got.Status != domain.ProposalApproved {
		t.Fatalf("the owner reads %+v", got)
	}
}
