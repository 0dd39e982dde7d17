package tui

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/triunalabs/trovesnap/fixtures"
)

// Issue 16: the seller reviews a promotion as the complete draft it
// creates — the candidate's photos that become the item's (by asset id, in
// order) and its supplied price — and a role without pricing sees the
// photos but not the price.
func TestDetail_PromotionShowsTheItemsPhotosAndPrice(t *testing.T) {
	h := newHarness(t)
	var assets []string
	for _, seed := range []uint8{5, 6} {
		img := image.NewRGBA(image.Rect(0, 0, 8, 6))
		img.Set(2, 2, color.RGBA{seed, 1, 2, 255})
		var b bytes.Buffer
		if err := png.Encode(&b, img); err != nil {
			t.Fatal(err)
		}
		e := h.call("trove_attach_candidate_photo", map[string]any{"candidate_id": fixtures.DemoCandidateID,
			"image_base64": base64.StdEncoding.EncodeToString(b.Bytes()), "idempotency_key": h.nextKey("photo")})
		var v struct {
			AssetID string `json:"asset_id"`
		}
		if err := json.Unmarshal(e.Data, &v); err != nil || v.AssetID == "" {
			t.Fatalf("attach: %s", e.raw)
		}
		assets = append(assets, v.AssetID)
	}
	h.proposePromotion()
	photos := fixtures.DemoCandidateID + " create_item.photos: ∅ → [\"" + strings.Join(assets, "\",\"") + "\"]"
	price := fixtures.DemoCandidateID + " create_item.price_cents: ∅ → 18500"

	owner := h.update(h.press(h.open(fixtures.DemoUserID), "enter"), tea.WindowSizeMsg{Width: 200, Height: 60})
	mustContain(t, owner, photos, price)

	cat := h.update(h.press(h.open(fixtures.CatalogerUserID), "enter"), tea.WindowSizeMsg{Width: 200, Height: 60})
	mustContain(t, cat, photos, fixtures.DemoCandidateID+" create_item.price_cents: (hidden from your role, cataloger)")
	if strings.Contains(plain(cat), "18500") {
		t.Fatalf("the cataloger's detail shows the price:\n%s", plain(cat))
	}
}
