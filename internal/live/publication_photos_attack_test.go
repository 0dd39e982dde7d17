package live_test

import (
	"testing"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/domain"
)

// Attack (held): a publication body sent to mcp_create_proposal directly
// names, as the photos to approve, a photo of another item (its own tenant)
// or one of another tenant, or forges the From list: the database refuses
// each and stores nothing.
func TestAttack_PublicationNamingPhotosNotTheItemsIsRefused(t *testing.T) {
	a := newAuthority(t)
	pubd, err := a.b.GetItem(ctx, a.p, "item_1003", domain.ItemIncludes{Photos: true})
	if err != nil || len(pubd.Photos) < 2 {
		t.Fatalf("item_1003: %+v, %v", pubd.Photos, err)
	}
	honest, err := a.propose(authorityDraft(domain.ActionPublishItem, map[string]any{"photo_ids": []string{pubd.Photos[0].ID}}, a.at("item_1003")))
	if err != nil {
		t.Fatal(err)
	}
	other := ""
	for _, id := range []string{fixtures.DemoItemID, "item_1002", "item_1018", "item_1042", "item_1150", "item_1151"} {
		if it, err := a.b.GetItem(ctx, a.p, id, domain.ItemIncludes{Photos: true}); err == nil && len(it.Photos) > 0 && id != "item_1003" {
			other = it.Photos[0].ID
			break
		}
	}
	if other == "" {
		t.Fatal("no other item with a photo in the dataset")
	}
	set := func(to any) func(*domain.Proposal) {
		return func(x *domain.Proposal) {
			for i, c := range x.Changes {
				if c.Field == "public_photo_ids" {
					x.Changes[i].To = to
				}
			}
		}
	}
	a.forge(honest, set([]string{other}), "transition_invalid", "not ready")
	a.forge(honest, set([]string{pubd.Photos[0].ID, other}), "transition_invalid", "not ready")
	a.forge(honest, set([]string{"photo_9001"}), "transition_invalid", "not ready")
	a.forge(honest, func(x *domain.Proposal) {
		for i, c := range x.Changes {
			if c.Field == "public_photo_ids" {
				x.Changes[i].From = []string{}
			}
		}
	}, "invalid_input:proposal", "changes")
	a.accept(honest)
}
