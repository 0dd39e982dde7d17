package contract

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/domain"
)

// runHardeningProposals: sale assignment (§4.3) holds on proposals — every
// read, list and execution of a proposal that touches a sale a sale-scoped
// member is not assigned to answers exactly like a missing proposal, and
// changes nothing (issue 13, finding 2).
func runHardeningProposals(t *testing.T, open func(t *testing.T) Instance) {
	t.Run("Hardening/ScopedMemberNeitherSeesNorExecutesAnotherSalesProposal",
		func(t *testing.T) { testHardeningScopedProposal(t, open(t)) })
}

// wantMissingProposal fails unless err is the answer to a proposal id that
// does not exist: a RefError on proposal_id naming id, with the message a
// missing id gets (the audit may classify it; the caller cannot tell). The
// wrapping a backend adds (the live RPC's name) is not compared.
func wantMissingProposal(t *testing.T, err error, id string, missing error) {
	t.Helper()
	var re *domain.RefError
	if !errors.As(err, &re) || re.Field != "proposal_id" || re.ID != id || !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("err = %v, want the RefError of a missing proposal_id %s", err, id)
	}
	var mre *domain.RefError
	if !errors.As(missing, &mre) {
		t.Fatalf("missing proposal: %v", missing)
	}
	if got, want := strings.ReplaceAll(re.Error(), id, "ID"), strings.ReplaceAll(mre.Error(), "proposal_404", "ID"); got != want || re.Field != mre.Field {
		t.Fatalf("refusal %q differs from a missing id's %q", got, want)
	}
}

func testHardeningScopedProposal(t *testing.T, in Instance) {
	f := newFlow(t, in)
	// The owner's promotion in sale_221, approved by the owner.
	c := f.candidate(fixtures.PublishedSaleID, candReviewed)
	other := f.mustPropose(promotionDraft(c.ID, c.Version, nil))
	g := f.approve(other)
	// And one in sale_223, the scoped cataloger's sale.
	lc := f.candidate(fixtures.LiveSaleID, "candidate_781")
	mine := f.mustPropose(promotionDraft(lc.ID, lc.Version, nil))

	// A client of the sale-scoped cataloger (sale_223 only) that may
	// execute controlled actions.
	_, tok, err := owner(t, in).RegisterClient(ctx, domain.NewClient{TenantID: fixtures.DemoTenantID,
		ActorID: fixtures.ScopedCatalogerUserID, Name: "Scoped executor", ClientType: "custom",
		Groups: []string{"tenant_read", "action_proposal", "controlled_action"}, CreatedBy: fixtures.DemoUserID})
	if err != nil {
		t.Fatalf("RegisterClient: %v", err)
	}
	sp := resolve(t, f.b, tok)
	if !sp.SaleScoped || !slices.Equal(sp.AssignedSaleIDs, []string{fixtures.LiveSaleID}) {
		t.Fatalf("scoped principal = %+v", sp)
	}
	before := in.Counts(t)

	// Read: another sale's proposal is a missing one; its own sale's is read.
	_, missing := f.b.GetProposal(ctx, sp, "proposal_404")
	if !errors.Is(missing, domain.ErrNotFound) {
		t.Fatalf("missing proposal: %v", missing)
	}
	_, err = f.b.GetProposal(ctx, sp, other.ID)
	wantMissingProposal(t, err, other.ID, missing)
	if got, err := f.b.GetProposal(ctx, sp, mine.ID); err != nil || got.Hash != mine.Hash {
		t.Fatalf("the scoped member's own sale's proposal: %+v, %v", got, err)
	}
	// Approval state: no grant of it shows, as for a missing proposal.
	if gs, _, _, err := f.b.ApprovalState(ctx, sp, other.ID, other.Tool.Name); err != nil || len(gs) != 0 {
		t.Fatalf("approval state of another sale's proposal = %+v, %v; want no grant", gs, err)
	}

	// List: the scoped seller's approval surface lists only its sale's.
	list, err := in.Admin(t, fixtures.DemoTenantID, fixtures.ScopedCatalogerUserID).ListProposals(ctx, fixtures.DemoTenantID, "")
	if err != nil {
		t.Fatalf("ListProposals as the scoped seller: %v", err)
	}
	var ids []string
	for _, p := range list {
		ids = append(ids, p.ID)
	}
	if slices.Contains(ids, other.ID) || !slices.Contains(ids, mine.ID) {
		t.Fatalf("the scoped seller lists %v: want %s and never %s", ids, mine.ID, other.ID)
	}
	_, err = in.Admin(t, fixtures.DemoTenantID, fixtures.ScopedCatalogerUserID).GetProposalAdmin(ctx, fixtures.DemoTenantID, other.ID)
	var re *domain.RefError
	if !errors.As(err, &re) || re.ID != other.ID {
		t.Fatalf("the scoped seller reads another sale's proposal: %v", err)
	}
	if all, err := in.Admin(t, fixtures.DemoTenantID, fixtures.DemoUserID).ListProposals(ctx, fixtures.DemoTenantID, ""); err != nil ||
		!slices.ContainsFunc(all, func(p domain.Proposal) bool { return p.ID == other.ID }) {
		t.Fatalf("the owner's list lost %s: %v", other.ID, err)
	}

	// Execution with the owner's grant: refused like a missing proposal;
	// no item created, the grant still unconsumed.
	_, _, err = f.execute(f.b, sp, other, allowed(other, g.ID))
	wantMissingProposal(t, err, other.ID, missing)
	f.unchanged(before, "another sale's proposal executed by a scoped member")
	f.wantGrant(other, g.ID, domain.GrantActive)
	if got := f.proposal(other.ID); got.Status != domain.ProposalApproved {
		t.Fatalf("proposal %s is %s after a refused execution", other.ID, got.Status)
	}
}
