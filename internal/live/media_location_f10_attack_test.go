package live_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"image/jpeg"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/triunalabs/trovesnap/internal/contract"
	"github.com/triunalabs/trovesnap/internal/ingest"
	"github.com/triunalabs/trovesnap/internal/ingest/locationtest"
	"github.com/triunalabs/trovesnap/internal/live/pgtest"
)

// Attack (issue 16 F10, denial of service): media_location passes over a
// JPEG's entropy-coded data by windows (4 KiB, then 64 KiB of hex through
// a regular expression), but every run of fill bytes (FF FF) ends a window.
// Entropy-coded data of "FF FF 00" repeated (each a fill byte then a
// stuffed byte: image/jpeg and StripLocation pass over it) costs one window
// per 3 bytes: an 8 MiB photo holds one request's transaction for minutes.
// The check must stay under a second for any photo within the size bound.
func TestAttackF10_FillStuffedRunsDoNotHoldTheCheck(t *testing.T) {
	env := pgtest.Need(t)
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `SET statement_timeout = '10s'`); err != nil {
		t.Fatal(err)
	}
	photo := bigJPEG(t)
	sos := bytes.Index(photo, []byte{0xFF, 0xDA})
	head := photo[:sos+2+int(photo[sos+2])<<8|int(photo[sos+3])]
	for _, tc := range []struct {
		name    string
		pattern []byte
	}{
		{"FF FF 00", []byte{0xFF, 0xFF, 0x00}},
		{"FF FF D0", []byte{0xFF, 0xFF, 0xD0}},
	} {
		in := append([]byte{}, head...)
		for len(in) < 8<<20-2-len(tc.pattern) {
			in = append(in, tc.pattern...)
		}
		in = append(in, 0xFF, 0xD9)
		out, err := ingest.StripLocation(in)
		want := err != nil || !bytes.Equal(out, in)
		checkTimed(t, conn, tc.name, in, want)
	}
	// Past the walk's switch to 64 KiB windows (16384 0xFF bytes seen),
	// each marker that ends a scan costs a window: 4000 empty scans.
	in := append([]byte{}, head...)
	for range 16400 {
		in = append(in, 0xFF, 0x00)
	}
	for range 4000 {
		in = append(in, 0xFF, 0xDA, 0x00, 0x02)
	}
	in = append(in, make([]byte, 8<<20-2-len(in))...)
	in = append(in, 0xFF, 0xD9)
	out, err := ingest.StripLocation(in)
	checkTimed(t, conn, "empty scans", in, err != nil || !bytes.Equal(out, in))
}

// checkTimed asks the database about one photo, under a statement timeout,
// and fails when its answer is not StripLocation's or it takes over 1 s.
func checkTimed(t *testing.T, conn *pgx.Conn, name string, in []byte, want bool) {
	t.Helper()
	start := time.Now()
	var got bool
	err := conn.QueryRow(ctx, `SELECT trovesnap.media_location($1)`, in).Scan(&got)
	took := time.Since(start)
	t.Logf("%s: %d bytes, %v (StripLocation %v)", name, len(in), took, want)
	switch {
	case err != nil:
		t.Errorf("%s: %d bytes: %v after %v", name, len(in), err, took)
	case got != want:
		t.Errorf("%s: database %v, StripLocation %v", name, got, want)
	case took > time.Second:
		t.Errorf("%s: the check took %v on %d bytes", name, took, len(in))
	}
}

// Attack (issue 16 F10, denial of service): every IFD entry of an Exif
// segment costs the plpgsql walk (media_tiff_entries) a loop iteration of
// several statements, and nothing bounds their total but the photo's size:
// 8 MiB of Exif APP1 segments, each with chained IFDs of 1024 entries
// (none of them location), is some 700k entries. StripLocation walks them
// in milliseconds; the check must stay under a second too, and answer as
// StripLocation does (since the fix, which reads at most maxExifEntries
// in all, StripLocation drops the segments past it).
func TestAttackF10_ManyExifEntriesDoNotHoldTheCheck(t *testing.T) {
	env := pgtest.Need(t)
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `SET statement_timeout = '10s'`); err != nil {
		t.Fatal(err)
	}
	// One segment: 5 chained IFDs of 1024 orientation entries.
	const ifds, entries = 5, 1024
	tiff := []byte("II*\x00\x08\x00\x00\x00")
	for k := range ifds {
		tiff = binary.LittleEndian.AppendUint16(tiff, entries)
		for range entries {
			tiff = binary.LittleEndian.AppendUint16(tiff, 0x0112)
			tiff = binary.LittleEndian.AppendUint16(tiff, 3)
			tiff = binary.LittleEndian.AppendUint32(tiff, 1)
			tiff = binary.LittleEndian.AppendUint32(tiff, 1)
		}
		next := uint32(0)
		if k+1 < ifds {
			next = uint32(len(tiff) + 4)
		}
		tiff = binary.LittleEndian.AppendUint32(tiff, next)
	}
	payload := append([]byte("Exif\x00\x00"), tiff...)
	seg := append([]byte{0xFF, 0xE1, byte((len(payload) + 2) >> 8), byte(len(payload) + 2)}, payload...)
	base := f10Seed("jpeg clean")
	in := append([]byte{}, base[:2]...)
	for len(in)+len(seg)+len(base) < 8<<20 {
		in = append(in, seg...)
	}
	in = append(in, base[2:]...)
	// One segment carries no location: StripLocation leaves it.
	if out, err := ingest.StripLocation(append(append(append([]byte{}, base[:2]...), seg...), base[2:]...)); err != nil || len(out) != len(base)+len(seg) {
		t.Fatalf("StripLocation changes one segment (%v): it should carry no location", err)
	}
	out, err := ingest.StripLocation(in)
	want := err != nil || !bytes.Equal(out, in)
	checkTimed(t, conn, "exif entries", in, want)

	// The most Exif segments a JPEG may have (markers), each of 16 chained
	// IFDs of no entry: 65k IFDs (273 ms before maxExifEntries counted
	// IFDs too; past it now).
	var empty []byte
	empty = append(empty, "II*\x00\x08\x00\x00\x00"...)
	for k := range 16 {
		empty = binary.LittleEndian.AppendUint16(empty, 0)
		next := uint32(0)
		if k < 15 {
			next = uint32(len(empty) + 4)
		}
		empty = binary.LittleEndian.AppendUint32(empty, next)
	}
	payload = append([]byte("Exif\x00\x00"), empty...)
	seg = append([]byte{0xFF, 0xE1, byte((len(payload) + 2) >> 8), byte(len(payload) + 2)}, payload...)
	in = append([]byte{}, base[:2]...)
	for range 4080 {
		in = append(in, seg...)
	}
	in = append(in, base[2:]...)
	out, err = ingest.StripLocation(in)
	checkTimed(t, conn, "empty IFDs", in, err != nil || !bytes.Equal(out, in))

	// Both costs in one photo: those segments, then a scan of "FF FF 00"
	// up to the size bound.
	sos := bytes.Index(base, []byte{0xFF, 0xDA})
	in = append([]byte{}, base[:2]...)
	for range 4080 {
		in = append(in, seg...)
	}
	in = append(in, base[2:sos+2+int(base[sos+2])<<8|int(base[sos+3])]...)
	for len(in) < 8<<20-5 {
		in = append(in, 0xFF, 0xFF, 0x00)
	}
	in = append(in, 0xFF, 0xD9)
	out, err = ingest.StripLocation(in)
	checkTimed(t, conn, "empty IFDs and a scan", in, err != nil || !bytes.Equal(out, in))
}

// Attack (issue 16 F10, a photo with location stored anyway): the check
// walks a JPEG only when it starts "FF D8 FF", and answers "no location"
// for bytes it does not recognise; the database never compares the bytes
// with the mime_type the caller gives. A JPEG whose SOI is followed by an
// extraneous byte before its Exif APP1 ("FF D8 00 FF E1 …") is one that
// image/jpeg, libjpeg and ExifTool read (extraneous bytes are skipped
// before a marker), GPS included; a direct attach with mime_type
// image/jpeg stored it. The database must refuse bytes that are not the
// format their mime_type names (what trovesnap's sniffing guarantees of
// every upload it makes), so every stored photo is one it walked.
func TestAttackF10_DirectAttachOfAPhotoNotStartingAsItsTypeIsRefused(t *testing.T) {
	env := seeded(t)
	marker := []byte{0x2D, 0x1A, 0x2B, 0x3C, 0x0E, 0x5F, 0x60, 0x71}
	gps := jpegCarryingGPS(t, marker)
	shifted := append([]byte{0xFF, 0xD8, 0x00}, gps[2:]...)
	if _, err := jpeg.Decode(bytes.NewReader(shifted)); err != nil {
		t.Fatalf("image/jpeg does not read the shifted photo: %v", err)
	}
	if !bytes.Contains(shifted, marker) {
		t.Fatal("no GPS in the shifted photo")
	}
	tiff := gps[bytes.Index(gps, []byte("II*\x00")) : bytes.Index(gps, marker)+len(marker)]
	for i, tc := range []struct {
		name, mime string
		content    []byte
	}{
		{"a JPEG with an extraneous byte after SOI", "image/jpeg", shifted},
		{"a TIFF carrying GPS named a PNG", "image/png", tiff},
	} {
		sum := sha256.Sum256(tc.content)
		key := fmt.Sprintf("f10-format-%d", i)
		args := map[string]any{"p_tool": toolAttach, "p_tool_major": 1, "p_key": key, "p_fingerprint": "sha256:" + key,
			"p_event": map[string]any{"id": "event_" + key}, "p_started_at": nil,
			"p_media": map[string]any{"candidate_id": "candidate_772", "mime_type": tc.mime, "width": 8, "height": 8,
				"byte_size": len(tc.content), "content_hash": "sha256:" + hex.EncodeToString(sum[:])},
			"p_content": base64.StdEncoding.EncodeToString(tc.content)}
		before := ingCounts(t, env)
		status, body := rpcClient(t, env, contract.CredOwner, "mcp_attach_candidate_media", args)
		if status == http.StatusOK {
			t.Errorf("%s: stored by a direct call, its GPS with it: %v", tc.name, body)
			continue
		}
		if body["message"] != "trovesnap:invalid_input:image_base64" {
			t.Errorf("%s: refusal: %d %v", tc.name, status, body)
		}
		if d := ingDelta(before, ingCounts(t, env)); len(d) != 0 {
			t.Errorf("%s: the refused attach wrote %v", tc.name, d)
		}
	}
}

// Attack (issue 16 F10, denial of service): IFDs may overlap (nothing
// refuses it when there is no location to remove), so one Exif segment of
// 1039 entries holds 16 IFDs of 1023 entries each, IFD k starting 12k
// bytes after IFD0 (its count the top half of an entry's value, its next
// pointer the tag of the entry after its last): 16368 entries walked per
// 12.5 KiB, some ten million in an 8 MiB photo (the check took 9 s).
// StripLocation walks them in milliseconds; the check must stay under a
// second too, and answer as StripLocation does.
func TestAttackF10_OverlappingIFDsDoNotHoldTheCheck(t *testing.T) {
	env := pgtest.Need(t)
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `SET statement_timeout = '10s'`); err != nil {
		t.Fatal(err)
	}
	const ifds, entries = 16, 1023 // 16 + 16×1023: maxExifEntries
	le := binary.LittleEndian
	tiff := []byte("II*\x00\x08\x00\x00\x00")
	tiff = le.AppendUint16(tiff, entries)
	for e := range entries + ifds {
		switch {
		case e < ifds-1: // its value's top half is IFD e+1's count
			tiff = le.AppendUint16(tiff, 0x0112)
			tiff = le.AppendUint16(tiff, 3)
			tiff = le.AppendUint32(tiff, 1)
			tiff = le.AppendUint32(tiff, entries<<16)
		case e >= entries: // IFD e-entries's next pointer: tag and type
			next := uint32(0)
			if k := e - entries; k+1 < ifds {
				next = uint32(8 + 12*(k+1))
			}
			tiff = le.AppendUint32(tiff, next)
			tiff = le.AppendUint32(tiff, 1)
			tiff = le.AppendUint32(tiff, 0)
		default: // an Exif IFD pointer to IFD0 (queued, then passed)
			tiff = le.AppendUint16(tiff, 0x8769)
			tiff = le.AppendUint16(tiff, 4)
			tiff = le.AppendUint32(tiff, 1)
			tiff = le.AppendUint32(tiff, 8)
		}
	}
	tiff = le.AppendUint32(tiff, 0)
	payload := append([]byte("Exif\x00\x00"), tiff...)
	seg := append([]byte{0xFF, 0xE1, byte((len(payload) + 2) >> 8), byte(len(payload) + 2)}, payload...)
	base := f10Seed("jpeg clean")
	in := append([]byte{}, base[:2]...)
	for len(in)+len(seg)+len(base) < 8<<20 {
		in = append(in, seg...)
	}
	in = append(in, base[2:]...)
	// One segment carries no location: StripLocation leaves it.
	if out, err := ingest.StripLocation(append(append(append([]byte{}, base[:2]...), seg...), base[2:]...)); err != nil || len(out) != len(base)+len(seg) {
		t.Fatalf("StripLocation changes one segment (%v): it should carry no location", err)
	}
	out, err := ingest.StripLocation(in)
	want := err != nil || !bytes.Equal(out, in)
	// The segment walks 16 IFDs: one more is refused.
	seg17 := bytes.Clone(seg)
	le.PutUint32(seg17[4+6+8+2+12*(entries+ifds-1):], 8+12*ifds) // IFD15 chained on to a 17th
	if out, err := ingest.StripLocation(append(append(append([]byte{}, base[:2]...), seg17...), base[2:]...)); err == nil && len(out) == len(base)+len(seg17) {
		t.Fatal("a 17th IFD is not refused: the segment does not walk the IFDs it should")
	}
	checkTimed(t, conn, "overlapping IFDs", in, want)
	// Within the bound: one such segment, 16368 entries walked and some
	// 16k IFD pointers queued.
	one := append(append(append([]byte{}, base[:2]...), seg...), base[2:]...)
	checkTimed(t, conn, "overlapping IFDs, one segment", one, false)
}

// Attack (issue 16 F10, denial of service), the other formats at their
// walk's bound: 65536 PNG text chunks whose keyword is 16 bytes (each
// folded and compared), 65536 WebP chunks, a GIF of 65536 one-byte
// sub-blocks; and 4096 JPEG APP1 segments, each an XMP-like header that is
// not one. Each check stays under a second and answers as StripLocation.
func TestAttackF10_OtherFormatsAtTheirBoundDoNotHoldTheCheck(t *testing.T) {
	env := pgtest.Need(t)
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `SET statement_timeout = '10s'`); err != nil {
		t.Fatal(err)
	}
	seeds := map[string][]byte{}
	for _, s := range locationtest.Seeds() {
		seeds[s.Name] = s.Bytes
	}
	inputs := map[string][]byte{}
	p := seeds["png clean"]
	png := append([]byte{}, p[:33]...)
	for range 65530 {
		png = binary.BigEndian.AppendUint32(png, 16)
		png = append(png, "tEXtRaw profile typ_"...)
		png = append(png, 0, 0, 0, 0)
	}
	inputs["png keywords"] = append(png, p[33:]...)
	webp := []byte("RIFF\x00\x00\x00\x00WEBPVP8L\x06\x00\x00\x00\x2f\x00\x00\x00\x00\x07")
	for range 65530 {
		webp = append(webp, "JUNK\x00\x00\x00\x00"...)
	}
	binary.LittleEndian.PutUint32(webp[4:], uint32(len(webp)-8))
	inputs["webp chunks"] = webp
	g := seeds["gif clean"]
	at := 13 + 3<<(g[10]&7+1)
	gif := append(append([]byte{}, g[:at]...), 0x21, 0xFE)
	for range 65520 {
		gif = append(gif, 1, 'x')
	}
	inputs["gif sub-blocks"] = append(append(gif, 0), g[at:]...)
	j := seeds["jpeg clean"]
	jpg := append([]byte{}, j[:2]...)
	for range 4080 {
		jpg = append(jpg, f10Seg(0xE1, []byte("http://ns.adobe.com/xap/1.0/"))...)
	}
	inputs["jpeg APP1s"] = append(jpg, j[2:]...)
	for _, name := range []string{"png keywords", "webp chunks", "gif sub-blocks", "jpeg APP1s"} {
		in := inputs[name]
		out, err := ingest.StripLocation(in)
		checkTimed(t, conn, name, in, err != nil || !bytes.Equal(out, in))
	}
}
