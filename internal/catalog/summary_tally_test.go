package catalog

import (
	"reflect"
	"testing"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// A list row built from a photo tally (summaryIncludes) is the row built
// from the photos themselves, for every role and every readiness case.
func TestSummarizeItem_TallyEqualsPhotos(t *testing.T) {
	price := int64(1200)
	base := domain.Item{ID: "item_1", SaleID: "sale_1", Title: "Oak dresser", Category: "furniture.dresser", Room: "bedroom",
		Status: domain.ItemPublished, Version: 3, PriceCents: &price, QRCode: "QR1"}
	photos := map[string][]domain.Photo{
		"none":      nil,
		"private":   {{ID: "ph_1", ItemID: "item_1"}},
		"published": {{ID: "ph_1", ItemID: "item_1"}, {ID: "ph_2", ItemID: "item_1", Published: true}},
	}
	untitled := base
	untitled.Title = "   "
	unpriced := base
	unpriced.PriceCents = nil
	checked := 0
	for _, role := range domain.Roles() {
		if !summaryIncludes(role).PhotoTally && itemIncludes(role).Photos {
			t.Fatalf("%s: a list row reads photos instead of tallying them", role)
		}
		for _, it := range []domain.Item{base, untitled, unpriced} {
			for name, ph := range photos {
				read := it
				read.Photos = ph
				tally := domain.TallyPhotos(ph)
				fromPhotos := summarizeItem(role, domain.ItemDetail{Item: read})
				fromTally := summarizeItem(role, domain.ItemDetail{Item: it, PhotoTally: &tally})
				if !reflect.DeepEqual(fromPhotos, fromTally) {
					t.Errorf("%s, %q, photos %s: from photos %+v, from tally %+v", role, it.Title, name, fromPhotos, fromTally)
				}
				if fromTally.Ready != nil {
					checked++
					if *fromTally.Ready != (name == "published" && it.PriceCents != nil && it.Title == base.Title) {
						t.Errorf("%s, %q, photos %s: ready = %v", role, it.Title, name, *fromTally.Ready)
					}
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no role sees readiness: the case proves nothing")
	}
}
