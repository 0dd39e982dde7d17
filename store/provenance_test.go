package store

import (
	"context"
	"testing"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// Provenance goes with GetItem only, to a role that reads the catalogue, as
// live mode's mcp_get_item gives it: not to checkout, and on no list, even
// when asked (from the attack review, where a list gave checkout the ids).
func TestGetItem_ProvenanceIsOneItemsForCatalogueRoles(t *testing.T) {
	ctx := context.Background()
	s, _ := openReads(t)
	if _, err := s.w.ExecContext(ctx, `INSERT INTO item_provenance (item_id, tenant_id, candidate_id, source_record_id, import_run_id, proposal_id, created_at)
		VALUES ('item_a1', ?, 'candidate_secret', 'record_secret', 'run_secret', 'proposal_secret', '2026-11-29T10:00:00.000000000Z')`, tenantA); err != nil {
		t.Fatal(err)
	}
	checkout := domain.Principal{TenantID: tenantA, Role: domain.RoleCheckout, ActorID: userAlice, ActorType: "seller"}
	inc := domain.ItemIncludes{Provenance: true}
	if d, err := s.GetItem(ctx, checkout, "item_a1", inc); err != nil || d.Provenance != nil {
		t.Fatalf("GetItem as checkout: %+v, %v", d.Provenance, err)
	}
	page, err := s.ListItemDetails(ctx, checkout, domain.ItemQuery{Limit: 100}, inc)
	if err != nil {
		t.Fatal(err)
	}
	owner := checkout
	owner.Role = domain.RoleOwner
	ownPage, err := s.ListItemDetails(ctx, owner, domain.ItemQuery{Limit: 100}, inc)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Rows) == 0 || len(ownPage.Rows) == 0 {
		t.Fatal("no items listed")
	}
	for _, it := range append(page.Rows, ownPage.Rows...) {
		if it.Provenance != nil {
			t.Errorf("a list carries the provenance of %s: %+v", it.ID, *it.Provenance)
		}
	}
	if d, err := s.GetItem(ctx, owner, "item_a1", inc); err != nil || d.Provenance == nil || d.Provenance.CandidateID != "candidate_secret" ||
		d.Provenance.SourceRecordID != "record_secret" || d.Provenance.ImportRunID != "run_secret" || d.Provenance.ProposalID != "proposal_secret" {
		t.Fatalf("GetItem as owner: %+v, %v", d.Provenance, err)
	}
}
