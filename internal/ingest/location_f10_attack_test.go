package ingest_test

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"testing"

	"github.com/triunalabs/trovesnap/internal/ingest"
)

// Attack (issue 16 F10, a photo stored with location by trovesnap itself):
// StripLocation removes a PNG's eXIf chunk, but ExifTool also reads Exif
// from a chunk whose type is any case of "eXIf" or "zxIf" (PNG.pm's
// %stdCase: "exIf" is read as eXIf, with a warning) and XMP from a "tXMP"
// chunk (a 2001 XMP draft's place). Each is ancillary, so image/png and
// browsers decode the photo; CheckPhoto stored it with its GPS. The
// database walks PNG chunks the same way, so a direct call stored it too.
func TestAttackF10_PNGChunksExifToolReadsAreRemoved(t *testing.T) {
	img := image.NewNRGBA(image.Rect(0, 0, 4, 4))
	for i := range img.Pix {
		img.Pix[i] = byte(i * 13)
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	p := b.Bytes()
	chunk := func(typ string, data []byte) []byte {
		out := binary.BigEndian.AppendUint32(nil, uint32(len(data)))
		out = append(out, typ...)
		out = append(out, data...)
		return binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(append([]byte(typ), data...)))
	}
	// A TIFF with a GPS IFD: latitude 40/1 44/1 12/1 (the marker).
	marker := []byte{0, 0, 0, 40, 0, 0, 0, 1, 0, 0, 0, 44, 0, 0, 0, 1, 0, 0, 0, 12, 0, 0, 0, 1}
	tiff := []byte("MM\x00*\x00\x00\x00\x08")
	tiff = append(tiff, 0, 1, 0x88, 0x25, 0, 4, 0, 0, 0, 1, 0, 0, 0, 26, 0, 0, 0, 0)
	tiff = append(tiff, 0, 1, 0, 2, 0, 5, 0, 0, 0, 3, 0, 0, 0, 44, 0, 0, 0, 0)
	tiff = append(tiff, marker...)
	xmp := []byte(`<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description xmlns:exif="http://ns.adobe.com/exif/1.0/" exif:GPSLatitude="40,44.2N"/></rdf:RDF></x:xmpmeta>`)
	for _, tc := range []struct {
		typ  string
		data []byte
		mark []byte
	}{
		{"exIf", tiff, marker},
		{"exif", tiff, marker},
		{"zxIf", tiff, marker}, // (ExifTool inflates it first; stored raw here, the chunk is what matters)
		{"zXIf", tiff, marker},
		{"tXMP", xmp, []byte("GPSLatitude")},
	} {
		photo := append(append(append([]byte{}, p[:33]...), chunk(tc.typ, tc.data)...), p[33:]...)
		if _, err := png.Decode(bytes.NewReader(photo)); err != nil {
			t.Fatalf("%s: image/png does not decode the photo: %v", tc.typ, err)
		}
		up, err := ingest.CheckPhoto("image_base64", photo, "")
		if err != nil {
			t.Fatalf("%s: CheckPhoto: %v", tc.typ, err)
		}
		if bytes.Contains(up.Bytes, tc.mark) {
			t.Errorf("%s: the photo trovesnap stores keeps the chunk, its location with it", tc.typ)
		}
	}
}

// The same for a WebP's "XMP\0" chunk, from which ExifTool reads XMP (a
// writer's error): trovesnap has no WebP decoder, but a direct call with
// mime_type image/webp stored it (the database walks WebP as StripLocation).
func TestAttackF10_WebPXMPNulChunkIsRemoved(t *testing.T) {
	xmp := "<x:xmpmeta GPSLatitude='40,44.2N'/>"
	body := append([]byte("VP8L\x06\x00\x00\x00\x2f\x00\x00\x00\x00\x07XMP\x00"), binary.LittleEndian.AppendUint32(nil, uint32(len(xmp)))...)
	body = append(body, xmp...)
	if len(xmp)%2 == 1 {
		body = append(body, 0)
	}
	photo := append(append([]byte("RIFF"), binary.LittleEndian.AppendUint32(nil, uint32(4+len(body)))...), "WEBP"...)
	photo = append(photo, body...)
	out, err := ingest.StripLocation(photo)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(out, []byte("GPSLatitude")) {
		t.Error(`StripLocation keeps the "XMP\0" chunk, its location with it`)
	}
}

// Attack (issue 16 F10, a photo stored with location by trovesnap itself):
// StripLocation removed an APP1 segment only when it starts with the XMP
// header exactly, but ExifTool reads as XMP an APP1 whose payload starts
// "http" or holds "<exif:" (ExifTool.pm: "Hmmm. Could be XMP, let's see"),
// GPS included. CheckPhoto stored it; the database, walking the same way,
// let a direct call store it.
func TestAttackF10_APP1ThatExifToolReadsAsXMPIsRemoved(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 8, 8))
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, nil); err != nil {
		t.Fatal(err)
	}
	jpg := b.Bytes()
	for _, payload := range []string{
		`http://ns.adobe.com/xap/1.0/ <x:xmpmeta><rdf:Description exif:GPSLatitude="40,44.2N"/></x:xmpmeta>`,
		`XMP` + "\x00" + `<x:xmpmeta><rdf:Description exif:GPSLatitude="40,44.2N"/></x:xmpmeta>`,
		`<?xpacket?><x:xmpmeta><rdf:Description><exif:GPSLatitude>40,44.2N</exif:GPSLatitude></rdf:Description></x:xmpmeta>`,
	} {
		n := len(payload) + 2
		seg := append([]byte{0xFF, 0xE1, byte(n >> 8), byte(n)}, payload...)
		photo := append(append(append([]byte{}, jpg[:2]...), seg...), jpg[2:]...)
		up, err := ingest.CheckPhoto("image_base64", photo, "")
		if err != nil {
			t.Fatalf("%.20q: CheckPhoto: %v", payload, err)
		}
		if bytes.Contains(up.Bytes, []byte("GPSLatitude")) {
			t.Errorf("%.20q: the photo trovesnap stores keeps the APP1, its location with it", payload)
		}
	}
}

// Attack (issue 16 F10): ImageMagick reads a GIF's IPTC and 8BIM
// application extensions by identifier in any case (LocaleNCompare), and
// IPTC holds the city and sublocation; StripLocation removed them only
// under the exact identifier.
func TestAttackF10_GIFApplicationIdentifiersInAnyCaseAreRemoved(t *testing.T) {
	img := image.NewPaletted(image.Rect(0, 0, 2, 2), color.Palette{color.Black, color.White})
	var b bytes.Buffer
	if err := gif.Encode(&b, img, nil); err != nil {
		t.Fatal(err)
	}
	g := b.Bytes()
	at := 13 + 3<<(g[10]&7+1)
	iptc := "\x1c\x02\x5a\x00\x06Lisbon" // 2:90 City
	for _, id := range []string{"mgkiptc0000", "MgkIptc0000", "mgk8bim0000", "xmp dataXMP"} {
		ext := append([]byte{0x21, 0xFF, 11}, id...)
		ext = append(append(append(ext, byte(len(iptc))), iptc...), 0)
		photo := append(append(append([]byte{}, g[:at]...), ext...), g[at:]...)
		out, err := ingest.StripLocation(photo)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(out, []byte("Lisbon")) {
			t.Errorf("%s: StripLocation keeps the extension, its location with it", id)
		}
	}
}
