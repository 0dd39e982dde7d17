package live_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"image"
	_ "image/gif"
	_ "image/jpeg"
	_ "image/png"
	"net/http"
	"testing"

	"github.com/triunalabs/trovesnap/internal/contract"
	"github.com/triunalabs/trovesnap/internal/ingest"
	"github.com/triunalabs/trovesnap/internal/ingest/locationtest"
)

// Attack (issue 16 F10, a legitimate upload refused): trovesnap uploads
// StripLocation's output, and the database refuses any photo StripLocation
// would change. So StripLocation's output must be a fixed point of it:
// the table's photos, many mutations of each and the generated ones.
// It was not: an XMP, IPTC or Photoshop entry whose value lies over the
// TIFF header had the header zeroed, and a second walk drops the segment;
// a segment removed after a fill byte in entropy-coded data left the 0xFF
// to join what followed ("FF" + "D9": an EOI, and the rest cut next time).
func TestAttackF10_StripLocationOutputIsAFixedPoint(t *testing.T) {
	var all [][]byte
	for i, s := range locationtest.Seeds() {
		all = append(all, s.Bytes)
		all = append(all, locationtest.Mutants(s.Bytes, 3000, uint64(i)+77)...)
	}
	for _, c := range f10Cases() {
		all = append(all, c.bytes)
	}
	// A segment removed after a fill byte (the walk's marker is the last
	// 0xFF of a run): what follows it joins the 0xFF left behind.
	jpg := f10Seed("jpeg clean")
	mpf := []byte{0xFF, 0xE2, 0x00, 0x06, 'M', 'P', 'F', 0x00}
	for x := range 256 {
		for _, at := range []int{2, len(jpg) - 2} {
			b := append(append([]byte{}, jpg[:at]...), 0xFF)
			b = append(append(append(b, mpf...), byte(x), 0x00, 0x04, 0x11, 0x22), jpg[at:]...)
			all = append(all, b)
		}
	}
	bad := 0
	for _, x := range all {
		y, err := ingest.StripLocation(x)
		if err != nil {
			continue
		}
		z, err := ingest.StripLocation(y)
		if err != nil || !bytes.Equal(z, y) {
			_, _, derr := image.Decode(bytes.NewReader(y))
			if bad++; bad <= 10 {
				t.Errorf("output not a fixed point (%d bytes in, decodes: %v): %v; input starts % x", len(x), derr, err, x[:min(len(x), 48)])
			}
		}
	}
	t.Logf("%d photos, %d outputs not fixed points", len(all), bad)
}

// The same through the RPC: a decodable JPEG whose Exif IFD0 holds an XMP
// packet (5 bytes at offset 0: over the TIFF header) is stripped by
// trovesnap and its output attached: the database must store it.
func TestAttackF10_StrippedPhotoWithAValueOverTheHeaderIsStored(t *testing.T) {
	env := seeded(t)
	jpg := f10Seed("jpeg clean")
	tiff := []byte("II*\x00\x08\x00\x00\x00")
	tiff = binary.LittleEndian.AppendUint16(tiff, 1)
	tiff = binary.LittleEndian.AppendUint16(tiff, 0x02BC) // XMLPacket
	tiff = binary.LittleEndian.AppendUint16(tiff, 1)
	tiff = binary.LittleEndian.AppendUint32(tiff, 5)
	tiff = binary.LittleEndian.AppendUint32(tiff, 0)
	tiff = binary.LittleEndian.AppendUint32(tiff, 0)
	payload := append([]byte("Exif\x00\x00"), tiff...)
	seg := append([]byte{0xFF, 0xE1, byte((len(payload) + 2) >> 8), byte(len(payload) + 2)}, payload...)
	raw := append(append(append([]byte{}, jpg[:2]...), seg...), jpg[2:]...)
	up, err := ingest.CheckPhoto("image_base64", raw, "")
	if err != nil {
		t.Fatalf("trovesnap refuses the photo: %v", err)
	}
	sum := sha256.Sum256(up.Bytes)
	args := map[string]any{"p_tool": toolAttach, "p_tool_major": 1, "p_key": "f10-fixed", "p_fingerprint": "sha256:f10-fixed",
		"p_event": map[string]any{"id": "event_f10-fixed"}, "p_started_at": nil,
		"p_media": map[string]any{"candidate_id": "candidate_772", "mime_type": up.MimeType, "width": up.Width, "height": up.Height,
			"byte_size": len(up.Bytes), "content_hash": "sha256:" + hex.EncodeToString(sum[:])},
		"p_content": base64.StdEncoding.EncodeToString(up.Bytes)}
	if status, body := rpcClient(t, env, contract.CredOwner, "mcp_attach_candidate_media", args); status != http.StatusOK {
		t.Fatalf("trovesnap's own upload of the stripped photo was refused: %d %v", status, body)
	}
}
