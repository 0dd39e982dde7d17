package live_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"net/http"
	"strings"
	"testing"

	"github.com/triunalabs/trovesnap/internal/contract"
	"github.com/triunalabs/trovesnap/internal/ingest"
)

// jpegCarryingGPS is an 8×8 JPEG with an Exif APP1 whose GPS IFD holds a
// latitude (marker, 8 bytes).
func jpegCarryingGPS(t *testing.T, marker []byte) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 8, 8))
	img.Set(2, 2, color.RGBA{200, 10, 10, 255})
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, nil); err != nil {
		t.Fatal(err)
	}
	var tiff bytes.Buffer
	put := func(vs ...any) {
		for _, v := range vs {
			if err := binary.Write(&tiff, binary.LittleEndian, v); err != nil {
				t.Fatal(err)
			}
		}
	}
	tiff.WriteString("II*\x00")
	put(uint32(8))
	put(uint16(1))
	put(uint16(0x8825), uint16(4), uint32(1), uint32(8+2+12+4))
	put(uint32(0))
	put(uint16(1))
	put(uint16(0x0002), uint16(5), uint32(1), uint32(26+2+12+4))
	put(uint32(0))
	tiff.Write(marker)
	payload := append([]byte("Exif\x00\x00"), tiff.Bytes()...)
	seg := append([]byte{0xFF, 0xE1, byte((len(payload) + 2) >> 8), byte(len(payload) + 2)}, payload...)
	jpg := b.Bytes()
	return append(append(append([]byte{}, jpg[:2]...), seg...), jpg[2:]...)
}

// Attack (issue 16, location stripping; DESIGN "the database is the
// authority"): the client token's holder calls mcp_attach_candidate_media
// itself with the original bytes of a photo — its Exif GPS intact — and
// their true size and hash. The database checks only that the bytes match
// the size and hash the caller gives, so the photo is stored with the
// seller's location; since issue 16 a promotion makes the asset an item
// photo and a publication makes that photo public. The database must
// refuse a photo that still carries location metadata (or not depend on
// the caller having stripped it), storing nothing. (Fixed by migration
// media_location: the asset guard walks the photo as StripLocation does.)
func TestAttack_DirectAttachOfAPhotoWithGPSIsRefused(t *testing.T) {
	env := seeded(t)
	marker := []byte{0x2D, 0x1A, 0x2B, 0x3C, 0x0E, 0x5F, 0x60, 0x71}
	raw := jpegCarryingGPS(t, marker)
	sum := sha256.Sum256(raw)
	args := map[string]any{"p_tool": toolAttach, "p_tool_major": 1, "p_key": "gps-1", "p_fingerprint": "sha256:gps-1",
		"p_event": map[string]any{"id": "event_gps-1"}, "p_started_at": nil,
		"p_media": map[string]any{"candidate_id": "candidate_772", "mime_type": "image/jpeg", "width": 8, "height": 8,
			"byte_size": len(raw), "content_hash": "sha256:" + hex.EncodeToString(sum[:])},
		"p_content": base64.StdEncoding.EncodeToString(raw)}
	before := ingCounts(t, env)
	status, body := rpcClient(t, env, contract.CredOwner, "mcp_attach_candidate_media", args)
	if status == http.StatusOK {
		t.Fatalf("a photo carrying its Exif GPS was stored by a direct call: %v", body)
	}
	if body["message"] != "trovesnap:invalid_input:image_base64" || !strings.Contains(fmt.Sprint(body["details"]), "location") {
		t.Fatalf("refusal: %d %v", status, body)
	}
	if d := ingDelta(before, ingCounts(t, env)); len(d) != 0 {
		t.Fatalf("the refused attach wrote %v", d)
	}
	// The same photo as trovesnap uploads it (StripLocation's output: the
	// GPS IFD zeroed in place, the rest of Exif kept) is stored.
	clean, err := ingest.StripLocation(raw)
	if err != nil || bytes.Equal(clean, raw) || bytes.Contains(clean, marker) {
		t.Fatalf("StripLocation: %v", err)
	}
	sum = sha256.Sum256(clean)
	args["p_key"], args["p_fingerprint"], args["p_event"] = "gps-2", "sha256:gps-2", map[string]any{"id": "event_gps-2"}
	args["p_media"].(map[string]any)["byte_size"] = len(clean)
	args["p_media"].(map[string]any)["content_hash"] = "sha256:" + hex.EncodeToString(sum[:])
	args["p_content"] = base64.StdEncoding.EncodeToString(clean)
	if status, body := rpcClient(t, env, contract.CredOwner, "mcp_attach_candidate_media", args); status != http.StatusOK {
		t.Fatalf("the stripped photo was refused: %d %v", status, body)
	}
	if d := ingDelta(before, ingCounts(t, env)); d["source_assets"] != 1 || d["candidate_media"] != 1 {
		t.Fatalf("the stripped photo's attach wrote %v", d)
	}
}
