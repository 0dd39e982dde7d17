package mcpserver_test

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"hash/crc32"
	"strings"
	"testing"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/catalog"
	"github.com/triunalabs/trovesnap/internal/domain"
)

// hardDeepPNG is a real, decodable PNG of side×side 16-bit RGBA with zero
// pixels, written row by row (the test never holds the image): 6300×6300
// is ~400 KB on the wire, under the 40 MP cap, and 318 MB once decoded.
func hardDeepPNG(t testing.TB, side uint32) []byte {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	chunk := func(typ string, data []byte) {
		_ = binary.Write(&b, binary.BigEndian, uint32(len(data)))
		b.WriteString(typ)
		b.Write(data)
		_ = binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(append([]byte(typ), data...)))
	}
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], side)
	binary.BigEndian.PutUint32(ihdr[4:], side)
	ihdr[8], ihdr[9] = 16, 6 // 16-bit RGBA, not interlaced
	chunk("IHDR", ihdr)
	var z bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&z, zlib.BestSpeed)
	row := make([]byte, 1+side*8)
	for range side {
		_, _ = zw.Write(row)
	}
	_ = zw.Close()
	chunk("IDAT", z.Bytes())
	chunk("IEND", nil)
	if b.Len() > domain.MaxPhotoBytes {
		t.Fatalf("test PNG is %d bytes, over the upload limit", b.Len())
	}
	return b.Bytes()
}

// issue 13 finding 6: a small 16-bit PNG under the pixel cap is refused by
// trove_attach_candidate_photo from its header (it would decode to 318 MB),
// with invalid_input naming the limit, and writes no row and no file; a
// normal photo is still attached.
func TestHardening_PhotoDecodeBudgetRefusesDeepPNGOverMCP(t *testing.T) {
	e := ingEnv(t)
	start, counts := e.digest(), e.counts()
	env := e.call("trove_attach_candidate_photo", map[string]any{"candidate_id": fixtures.DemoCandidateID,
		"image_base64": b64(hardDeepPNG(t, 6300)), "idempotency_key": "deep-png-0001"})
	wantCode(t, env, "failed", "invalid_input")
	if f := env.Errors[0]; f.Field != "image_base64" || !strings.Contains(f.Message, "over the limit of 32 MiB") {
		t.Errorf("error = %+v, want image_base64 naming the 32 MiB decode limit", f)
	}
	ingAssertOnlyEventsCounted(t, counts, e.counts())
	assertOnlyEventsChanged(t, start, e.digest())
	if files := ingAssetFiles(t, e); len(files) != 0 {
		t.Errorf("files left: %v", files)
	}

	// A 16-bit PNG within the budget (1500×1500×8 = 18 MB) and a photo-sized
	// JPEG are still accepted and stored.
	for i, img := range [][]byte{hardDeepPNG(t, 1500), ingJPEG(t, 2000, 1500)} {
		env := e.call("trove_attach_candidate_photo", map[string]any{"candidate_id": fixtures.DemoCandidateID,
			"image_base64": b64(img), "idempotency_key": "normal-photo-000" + string(rune('1'+i))})
		if env.isError {
			t.Fatalf("photo %d refused: %s", i, env.raw)
		}
		if r := dataAs[catalog.CandidateMediaResult](t, env); r.ContentHash != domain.OriginalHash(img) || r.Width != []int{1500, 2000}[i] {
			t.Errorf("photo %d: %+v", i, r)
		}
	}
	if files := ingAssetFiles(t, e); len(files) != 2 {
		t.Errorf("files = %v, want the two accepted photos", files)
	}
}
