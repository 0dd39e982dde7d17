package ingest

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/png"
	"testing"

	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/ingest/locationtest"
)

// The GPS values the test photos carry: distinctive bytes that must not
// survive anywhere in a stored photo.
var (
	gpsLatitude  = [3][2]uint32{{0x2D1A2B3C, 1}, {0x0E5F6071, 1}, {0x13A4B5C6, 100}}
	gpsLongitude = [3][2]uint32{{0x7A1B2C3D, 1}, {0x2E3F4051, 1}, {0x5A6B7C8D, 100}}
	xmpWithGPS   = []byte(`<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF><rdf:Description exif:GPSLatitude="45,30.5N" exif:GPSLongitude="122,40.1W"/></rdf:RDF></x:xmpmeta>`)
)

// tiffWithGPS builds an Exif TIFF structure: IFD0 with the orientation
// (6), an Exif IFD pointer and a GPS IFD pointer; an Exif IFD with one
// entry; a GPS IFD with its latitude and longitude out of line.
func tiffWithGPS(bo binary.ByteOrder) []byte {
	var b bytes.Buffer
	if bo == binary.LittleEndian {
		b.WriteString("II*\x00")
	} else {
		b.WriteString("MM\x00*")
	}
	w := func(v any) { _ = binary.Write(&b, bo, v) }
	entry := func(tag, typ uint16, count, value uint32) { w(tag); w(typ); w(count); w(value) }
	short := func(tag uint16, v uint16) { // a SHORT value sits left-justified
		w(tag)
		w(uint16(3))
		w(uint32(1))
		w(v)
		w(uint16(0))
	}
	const ifd0 = 8
	const exifIFD = ifd0 + 2 + 3*12 + 4 // 50
	const gpsIFD = exifIFD + 2 + 12 + 4 // 68
	const gpsData = gpsIFD + 2 + 5*12 + 4
	w(uint32(ifd0))
	w(uint16(3))
	short(0x0112, 6)
	entry(tagExifIFD, 4, 1, exifIFD)
	entry(tagGPSIFD, 4, 1, gpsIFD)
	w(uint32(0))
	w(uint16(1))
	short(0xA001, 1) // ColorSpace sRGB
	w(uint32(0))
	w(uint16(5))
	entry(0x0000, 1, 4, 0x00000202) // GPSVersionID 2.2.0.0, inline
	entry(0x0001, 2, 2, 0x0000004E) // "N"
	entry(0x0002, 5, 3, gpsData)
	entry(0x0003, 2, 2, 0x00000057) // "W"
	entry(0x0004, 5, 3, gpsData+24)
	w(uint32(0))
	for _, r := range gpsLatitude {
		w(r)
	}
	for _, r := range gpsLongitude {
		w(r)
	}
	return b.Bytes()
}

// jpegSegment is one APPn segment: marker, length, payload.
func jpegSegment(marker byte, payload []byte) []byte {
	seg := []byte{0xFF, marker, byte((len(payload) + 2) >> 8), byte(len(payload) + 2)}
	return append(seg, payload...)
}

// jpegWith splices segments right after the SOI of a JPEG encoded by
// image/jpeg, and appends trailer after its EOI.
func jpegWith(t testing.TB, w, h int, trailer []byte, segs ...[]byte) []byte {
	base := JPEGBytes(t, w, h)
	out := append([]byte{}, base[:2]...)
	for _, s := range segs {
		out = append(out, s...)
	}
	out = append(out, base[2:]...)
	return append(out, trailer...)
}

func exifSegment(tiff []byte) []byte {
	return jpegSegment(jpegAPP1, append([]byte("Exif\x00\x00"), tiff...))
}

// gpsBytes are the encoded GPS rationals in both byte orders.
func gpsBytes() [][]byte {
	var out [][]byte
	for _, bo := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
		var b bytes.Buffer
		_ = binary.Write(&b, bo, gpsLatitude)
		out = append(out, b.Bytes()[:8])
		b.Reset()
		_ = binary.Write(&b, bo, gpsLongitude)
		out = append(out, b.Bytes()[:8])
	}
	return out
}

// exifOf returns the TIFF data of the first Exif APP1 of a JPEG, or nil.
func exifOf(t *testing.T, jpg []byte) []byte {
	t.Helper()
	for i := 2; i+4 <= len(jpg) && jpg[i] == 0xFF; {
		m, n := jpg[i+1], int(jpg[i+2])<<8|int(jpg[i+3])
		if m == jpegSOS {
			return nil
		}
		if p := jpg[i+4 : i+2+n]; m == jpegAPP1 && bytes.HasPrefix(p, exifHeader) {
			return p[6:]
		}
		i += 2 + n
	}
	return nil
}

// ifd0Tags reads IFD0's tags and their inline SHORT values (a LONG's
// value is not read right: test its presence only).
func ifd0Tags(t *testing.T, tiff []byte) map[uint16]uint16 {
	t.Helper()
	bo := binary.ByteOrder(binary.LittleEndian)
	if tiff[0] == 'M' {
		bo = binary.BigEndian
	}
	o := int(bo.Uint32(tiff[4:]))
	n := int(bo.Uint16(tiff[o:]))
	tags := map[uint16]uint16{}
	for e := range n {
		ent := tiff[o+2+12*e:]
		tags[bo.Uint16(ent)] = bo.Uint16(ent[8:])
	}
	return tags
}

func assertNoGPS(t *testing.T, what string, b []byte) {
	t.Helper()
	for _, g := range gpsBytes() {
		if bytes.Contains(b, g) {
			t.Errorf("%s: a GPS coordinate survived", what)
		}
	}
	if bytes.Contains(b, []byte("GPSLatitude")) || bytes.Contains(b, []byte("Raw profile")) {
		t.Errorf("%s: XMP or a raw profile survived", what)
	}
}

func decodeBounds(t *testing.T, b []byte) image.Rectangle {
	t.Helper()
	img, _, err := image.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("the stripped photo does not decode: %v", err)
	}
	return img.Bounds()
}

func TestStripLocation_JPEGLosesGPSAndXMPButKeepsOrientation(t *testing.T) {
	for _, bo := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
		mpf := jpegSegment(jpegAPP2, []byte("MPF\x00II*\x00\x08\x00\x00\x00"))
		ps := jpegSegment(jpegAPPD, []byte("Photoshop 3.0\x008BIM\x04\x04\x00\x00\x00\x00\x00\x0cCity: Salem."))
		trailer := append([]byte{0xFF, 0xD8}, exifSegment(tiffWithGPS(bo))...) // an MPF image after EOI
		in := jpegWith(t, 64, 48, trailer, exifSegment(tiffWithGPS(bo)), jpegSegment(jpegAPP1, append(bytes.Clone(xmpHeader), xmpWithGPS...)), ps, mpf)
		if _, gps := ifd0Tags(t, exifOf(t, in))[tagGPSIFD]; !gps {
			t.Fatal("the test photo carries no GPS pointer")
		}
		up, err := CheckPhoto("image_base64", in, "image/jpeg")
		if err != nil {
			t.Fatalf("%v: %v", bo, err)
		}
		out := up.Bytes
		assertNoGPS(t, bo.String(), out)
		if bytes.Contains(out, []byte("Photoshop")) || bytes.Contains(out, []byte("MPF\x00")) || bytes.Contains(out, []byte("Salem")) {
			t.Errorf("%v: an APP13 or MPF segment survived", bo)
		}
		tiff := exifOf(t, out)
		if tiff == nil {
			t.Fatalf("%v: the Exif segment was dropped whole; only its GPS IFD should go", bo)
		}
		tags := ifd0Tags(t, tiff)
		_, gps := tags[tagGPSIFD]
		if _, exif := tags[tagExifIFD]; gps || !exif || tags[0x0112] != 6 {
			t.Errorf("%v: IFD0 after stripping: %v (want orientation 6 and the Exif IFD, no GPS)", bo, tags)
		}
		if decodeBounds(t, out) != image.Rect(0, 0, 64, 48) || up.Width != 64 || up.Height != 48 {
			t.Errorf("%v: size changed", bo)
		}
		if up.Size != len(out) || up.ContentHash != domain.OriginalHash(out) || up.ContentHash == domain.OriginalHash(in) || len(out) >= len(in) {
			t.Errorf("%v: size %d hash %s describe other bytes than the %d stored", bo, up.Size, up.ContentHash, len(out))
		}
		if !bytes.HasSuffix(out, []byte{0xFF, 0xD9}) {
			t.Errorf("%v: the bytes after EOI were kept", bo)
		}
		again, err := StripLocation(out)
		if err != nil || !bytes.Equal(again, out) {
			t.Errorf("%v: stripping twice changes the photo again (%v)", bo, err)
		}
	}
}

func TestStripLocation_MalformedExifIsDroppedWhole(t *testing.T) {
	tiff := tiffWithGPS(binary.LittleEndian)
	binary.LittleEndian.PutUint32(tiff[4:], 0xFFFF) // IFD0 out of bounds
	in := jpegWith(t, 16, 16, nil, exifSegment(tiff))
	out, err := StripLocation(in)
	if err != nil {
		t.Fatal(err)
	}
	if exifOf(t, out) != nil || len(out) != len(in)-len(exifSegment(tiff)) {
		t.Fatal("an Exif segment that cannot be parsed was kept")
	}
	assertNoGPS(t, "malformed", out)
	decodeBounds(t, out)

	// A GPS IFD whose values point out of the segment: dropped whole too.
	tiff = tiffWithGPS(binary.BigEndian)
	binary.BigEndian.PutUint32(tiff[68+2+2*12+8:], 0x7FFFFFF0)
	out, err = StripLocation(jpegWith(t, 16, 16, nil, exifSegment(tiff)))
	if err != nil || exifOf(t, out) != nil {
		t.Fatalf("a GPS IFD out of bounds: %v, exif kept %v", err, exifOf(t, out) != nil)
	}
}

func TestStripLocation_NothingToStripReturnsTheSameBytes(t *testing.T) {
	for _, b := range [][]byte{JPEGBytes(t, 20, 10), PNGBytes(t, 5, 5), GIFBytes(t, 4, 4),
		jpegWith(t, 8, 8, nil, exifSegment([]byte("II*\x00\x08\x00\x00\x00\x00\x00\x00\x00\x00\x00")))} {
		out, err := StripLocation(b)
		if err != nil || &out[0] != &b[0] || len(out) != len(b) {
			t.Errorf("a photo without location was copied or changed (%v)", err)
		}
	}
}

// pngChunk encodes one PNG chunk with its CRC (image/png checks it).
func pngChunk(typ string, data []byte) []byte {
	var b bytes.Buffer
	_ = binary.Write(&b, binary.BigEndian, uint32(len(data)))
	b.WriteString(typ)
	b.Write(data)
	_ = binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(append([]byte(typ), data...)))
	return b.Bytes()
}

func TestStripLocation_PNGLosesExifXMPAndRawProfiles(t *testing.T) {
	base := PNGBytes(t, 30, 20)
	ihdrEnd := 8 + 12 + 13
	var in []byte
	in = append(in, base[:ihdrEnd]...)
	in = append(in, pngChunk("eXIf", tiffWithGPS(binary.BigEndian))...)
	in = append(in, pngChunk("iTXt", append([]byte("XML:com.adobe.xmp\x00\x00\x00\x00\x00"), xmpWithGPS...))...)
	in = append(in, pngChunk("zTXt", []byte("Raw profile type exif\x00\x00compressed"))...)
	in = append(in, pngChunk("tEXt", []byte("Comment\x00kept as is"))...)
	in = append(in, base[ihdrEnd:]...)
	in = append(in, "trailing bytes after IEND"...)
	if _, err := png.Decode(bytes.NewReader(in)); err != nil {
		t.Fatalf("the test PNG does not decode: %v", err)
	}
	up, err := CheckPhoto("image_base64", in, "")
	if err != nil {
		t.Fatal(err)
	}
	out := up.Bytes
	assertNoGPS(t, "png", out)
	if bytes.Contains(out, []byte("eXIf")) || bytes.Contains(out, []byte("XML:com.adobe.xmp")) || bytes.Contains(out, []byte("trailing")) {
		t.Error("a location chunk or the trailer survived")
	}
	if !bytes.Contains(out, []byte("kept as is")) {
		t.Error("an unrelated text chunk was dropped")
	}
	if decodeBounds(t, out) != image.Rect(0, 0, 30, 20) || up.Size != len(out) || up.ContentHash != domain.OriginalHash(out) {
		t.Errorf("png: %+v", up)
	}
}

// webpFile builds a RIFF WEBP container of chunks (each padded to even).
func webpFile(chunks ...[2]string) []byte {
	var body bytes.Buffer
	body.WriteString("WEBP")
	for _, c := range chunks {
		body.WriteString(c[0])
		_ = binary.Write(&body, binary.LittleEndian, uint32(len(c[1])))
		body.WriteString(c[1])
		if len(c[1])%2 == 1 {
			body.WriteByte(0)
		}
	}
	var b bytes.Buffer
	b.WriteString("RIFF")
	_ = binary.Write(&b, binary.LittleEndian, uint32(body.Len()))
	b.Write(body.Bytes())
	return b.Bytes()
}

func TestStripLocation_WebPLosesExifAndXMPWithFlagsAndSizeFixed(t *testing.T) {
	vp8x := string([]byte{0x2C, 0, 0, 0, 9, 0, 0, 9, 0, 0}) // ICC|EXIF|XMP, 10×10
	in := webpFile([2]string{"VP8X", vp8x}, [2]string{"ICCP", "icc"}, [2]string{"VP8L", "pixels"},
		[2]string{"EXIF", string(tiffWithGPS(binary.LittleEndian))}, [2]string{"XMP ", string(xmpWithGPS) + "x"})
	in = append(in, "trailer"...)
	out, err := StripLocation(in)
	if err != nil {
		t.Fatal(err)
	}
	want := webpFile([2]string{"VP8X", string([]byte{0x20, 0, 0, 0, 9, 0, 0, 9, 0, 0})}, [2]string{"ICCP", "icc"}, [2]string{"VP8L", "pixels"})
	if !bytes.Equal(out, want) {
		t.Fatalf("stripped WebP\n got %q\nwant %q", out, want)
	}
	assertNoGPS(t, "webp", out)
	// An EXIF chunk before VP8X (misplaced, but possible): the flags are
	// still cleared at VP8X's new place.
	in = webpFile([2]string{"EXIF", "gps"}, [2]string{"VP8X", vp8x}, [2]string{"VP8L", "pixels"})
	if out, err = StripLocation(in); err != nil || !bytes.Equal(out, webpFile([2]string{"VP8X", string([]byte{0x20, 0, 0, 0, 9, 0, 0, 9, 0, 0})}, [2]string{"VP8L", "pixels"})) {
		t.Fatalf("misplaced EXIF: %q, %v", out, err)
	}
	if _, err := StripLocation(in[:len(in)-3]); err == nil {
		t.Fatal("a truncated WebP was walked")
	}
}

func TestCheckPhoto_MalformedContainerThatDecodesIsRefused(t *testing.T) {
	// image/png reads nothing after IEND and image/jpeg nothing after EOI, so
	// a file that only StripLocation cannot walk does not decode either; a
	// truncated file is refused with the decoder's reason.
	jpg := jpegWith(t, 16, 16, nil, exifSegment(tiffWithGPS(binary.LittleEndian)))
	_, err := CheckPhoto("image_base64", jpg[:len(jpg)-2], "")
	wantInvalid(t, err, "image_base64", "could not be decoded")
}

// FuzzStripLocation: whatever the bytes, stripping never panics; a photo
// the decoders accept is always walked, still decodes to the same size
// afterwards, and a second strip changes nothing.
func FuzzStripLocation(f *testing.F) {
	f.Add(jpegWith(f, 8, 8, []byte("tail"), exifSegment(tiffWithGPS(binary.LittleEndian)), jpegSegment(jpegAPP1, append(bytes.Clone(xmpHeader), 'x'))))
	f.Add(jpegWith(f, 9, 7, nil, exifSegment(tiffWithGPS(binary.BigEndian))))
	f.Add(jpegWith(f, 9, 7, nil, exifSegment(tiffWithEmbeddedXMP(binary.LittleEndian))))
	png := PNGBytes(f, 6, 4)
	f.Add(append(append(bytes.Clone(png[:33]), pngChunk("eXIf", tiffWithGPS(binary.BigEndian))...), png[33:]...))
	f.Add(webpFile([2]string{"VP8X", "\x0c\x00\x00\x00\x01\x00\x00\x01\x00\x00"}, [2]string{"EXIF", "x"}))
	f.Add(GIFBytes(f, 3, 3))
	if g := GIFBytes(f, 3, 3); len(g) > 13 && g[10]&0x80 != 0 {
		at := 13 + 3<<(g[10]&7+1)
		f.Add(append(append(bytes.Clone(g[:at]), append([]byte("\x21\xff\x0bXMP DataXMP\x03abc\x00"), g[at:]...)...), "tail"...))
	}
	for _, s := range locationtest.Seeds() {
		f.Add(s.Bytes)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		in := bytes.Clone(data)
		out, err := StripLocation(data)
		if !bytes.Equal(in, data) {
			t.Fatal("StripLocation modified its input")
		}
		// Only small images: the fuzzer must not spend its time (or the
		// host's memory) decoding a declared huge canvas.
		if cfg, _, err := image.DecodeConfig(bytes.NewReader(data)); err != nil || int64(cfg.Width)*int64(cfg.Height) > 1<<16 {
			return
		}
		img, _, decErr := image.Decode(bytes.NewReader(data))
		if decErr != nil {
			return
		}
		if err != nil {
			t.Fatalf("a photo that decodes could not be walked: %v", err)
		}
		img2, _, err := image.Decode(bytes.NewReader(out))
		if err != nil || img2.Bounds() != img.Bounds() {
			t.Fatalf("stripped photo: %v, bounds %v want %v", err, img2, img.Bounds())
		}
		again, err := StripLocation(out)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("a second strip changed the photo: %v", err)
		}
	})
}

// The decode budget lets decodes run side by side while their costs fit,
// and a decode at the bound of one alone (issue 13's peak holds).
func TestDecodeBudget_SideBySideWhileTheyFitAloneAtTheBound(t *testing.T) {
	b := newByteBudget(10)
	a := b.acquire(4)
	c := b.acquire(6) // fits beside the first
	got := make(chan int64)
	go func() { got <- b.acquire(100) }() // clamped to the whole budget: waits for both
	b.release(a)
	select {
	case <-got:
		t.Fatal("a decode at the bound ran beside another")
	default:
	}
	b.release(c)
	if n := <-got; n != 10 {
		t.Fatalf("held %d, want the whole budget", n)
	}
	b.release(10)
	if b.used != 0 {
		t.Fatalf("used %d after every release", b.used)
	}
}

// The same bytes checked twice are decoded once; the result is the same.
func TestCheckPhoto_SameBytesTwiceGiveTheSameUpload(t *testing.T) {
	jpg := jpegWith(t, 24, 16, nil, exifSegment(tiffWithGPS(binary.LittleEndian)))
	a, err1 := CheckPhoto("image_base64", jpg, "")
	b, err2 := CheckPhoto("image_base64", jpg, "")
	if err1 != nil || err2 != nil || a.ContentHash != b.ContentHash || !bytes.Equal(a.Bytes, b.Bytes) || !decoded.has(a.ContentHash) {
		t.Fatalf("%v %v %+v %+v", err1, err2, a.ContentHash, b.ContentHash)
	}
}
