package contract

import (
	"errors"
	"testing"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/domain"
)

// runAuthority: issue 15, the database is the authority for every call it
// serves — what each Backend answers when called directly, as an agent
// holding its client token can call the live RPCs without the gate.
func runAuthority(t *testing.T, open func(t *testing.T) Instance) {
	t.Run("Authority/AnotherSalesProposalIsUnknownNotAnotherTenants",
		func(t *testing.T) { testAuthorityHiddenProposal(t, open(t)) })
}

// A sale-scoped member's client that may execute controlled actions asks
// for, and tries to execute with the owner's grant, a proposal of a sale it
// is not assigned: the refusal is a missing proposal's in every field — the
// reference is not classified as another tenant's (that would tell the
// client the id exists) — and nothing changes.
func testAuthorityHiddenProposal(t *testing.T, in Instance) {
	f := newFlow(t, in)
	c := f.candidate(fixtures.PublishedSaleID, candReviewed)
	other := f.mustPropose(promotionDraft(c.ID, c.Version, nil))
	g := f.approve(other)
	_, tok, err := owner(t, in).RegisterClient(ctx, domain.NewClient{TenantID: fixtures.DemoTenantID,
		ActorID: fixtures.ScopedCatalogerUserID, Name: "Scoped executor", ClientType: "custom",
		Groups: []string{"tenant_read", "action_proposal", "controlled_action"}, CreatedBy: fixtures.DemoUserID})
	if err != nil {
		t.Fatalf("RegisterClient: %v", err)
	}
	sp := resolve(t, f.b, tok)
	before := in.Counts(t)

	wantUnknown := func(what string, err error) {
		t.Helper()
		var re *domain.RefError
		if !errors.As(err, &re) || re.Field != "proposal_id" || re.CrossTenant || !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("%s: err = %v (%+v), want the RefError of a missing proposal_id, not another tenant's", what, err, re)
		}
	}
	_, missing := f.b.GetProposal(ctx, sp, "proposal_404")
	wantUnknown("GetProposal of a missing id", missing)
	_, err = f.b.GetProposal(ctx, sp, other.ID)
	wantUnknown("GetProposal of another sale's proposal", err)
	wantMissingProposal(t, err, other.ID, missing)

	_, _, err = f.execute(f.b, sp, other, allowed(other, g.ID))
	wantUnknown("ExecuteProposal of another sale's proposal", err)
	wantMissingProposal(t, err, other.ID, missing)
	f.unchanged(before, "a scoped member's read and execution of another sale's proposal")
	f.wantGrant(other, g.ID, domain.GrantActive)
	if got := f.proposal(other.ID); got.Status != domain.ProposalApproved {
		t.Fatalf("proposal %s is %s after a refused execution", other.ID, got.Status)
	}
}
