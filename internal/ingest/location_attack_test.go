package ingest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"image"
	"image/gif"
	"testing"
)

// gifSubBlocks frames data as GIF data sub-blocks (at most 255 bytes each)
// ending with the zero-length terminator.
func gifSubBlocks(data []byte) []byte {
	var b bytes.Buffer
	for len(data) > 0 {
		n := min(len(data), 255)
		b.WriteByte(byte(n))
		b.Write(data[:n])
		data = data[n:]
	}
	b.WriteByte(0)
	return b.Bytes()
}

// gifWithBlocks inserts extension blocks right after a GIF's logical
// screen descriptor and global colour table.
func gifWithBlocks(t *testing.T, blocks ...[]byte) []byte {
	t.Helper()
	base := GIFBytes(t, 24, 16)
	at := 13
	if flags := base[10]; flags&0x80 != 0 {
		at += 3 << ((flags & 7) + 1)
	}
	var in []byte
	in = append(in, base[:at]...)
	for _, b := range blocks {
		in = append(in, b...)
	}
	in = append(in, base[at:]...)
	return in
}

// Attack (issue 16, location stripping): GIF is an accepted photo type, and
// a GIF carries XMP in an application extension ("XMP DataXMP", the block
// ExifTool, Photoshop and Lightroom read and write). Its GPS must not reach
// the stored bytes any more than a JPEG's or a PNG's.
func TestAttack_CheckPhoto_GIFXMPLocationIsStripped(t *testing.T) {
	xmpExt := append([]byte{0x21, 0xFF, 11}, "XMP DataXMP"...)
	xmpExt = append(xmpExt, gifSubBlocks(xmpWithGPS)...)
	in := gifWithBlocks(t, xmpExt)
	in = append(in, "trailing bytes after the trailer"...)
	if _, err := gif.Decode(bytes.NewReader(in)); err != nil {
		t.Fatalf("the test GIF does not decode: %v", err)
	}
	up, err := CheckPhoto("image_base64", in, "")
	if err != nil {
		t.Fatal(err)
	}
	assertNoGPS(t, "gif", up.Bytes)
	if bytes.Contains(up.Bytes, []byte("trailing")) {
		t.Error("gif: bytes after the trailer survived")
	}
	if decodeBounds(t, up.Bytes) != image.Rect(0, 0, 24, 16) {
		t.Error("gif: the stripped photo changed size")
	}
}

// tiffWithEmbeddedXMP builds an Exif TIFF structure whose IFD0 holds the
// orientation and an XMP packet in tag 0x02BC (XMLPacket, which ExifTool
// reads in a JPEG's Exif as "ApplicationNotes" and parses as XMP) and an
// IPTC-NAA record in tag 0x83BB — no GPS IFD at all.
func tiffWithEmbeddedXMP(bo binary.ByteOrder) []byte {
	var b bytes.Buffer
	if bo == binary.LittleEndian {
		b.WriteString("II*\x00")
	} else {
		b.WriteString("MM\x00*")
	}
	w := func(v any) { _ = binary.Write(&b, bo, v) }
	iptc := []byte("\x1c\x02\x5a\x00\x0cGPSLatitude!") // 2:90 City, as a marker
	const ifd0 = 8
	const xmpAt = ifd0 + 2 + 3*12 + 4
	iptcAt := xmpAt + uint32(len(xmpWithGPS))
	w(uint32(ifd0))
	w(uint16(3))
	w(uint16(0x0112))
	w(uint16(3))
	w(uint32(1))
	w(uint16(6))
	w(uint16(0))
	w(uint16(0x02BC))
	w(uint16(1))
	w(uint32(len(xmpWithGPS)))
	w(uint32(xmpAt))
	w(uint16(0x83BB))
	w(uint16(7))
	w(uint32(len(iptc)))
	w(iptcAt)
	w(uint32(0))
	b.Write(xmpWithGPS)
	b.Write(iptc)
	return b.Bytes()
}

// Attack: GPS need not sit in the GPS IFD. An Exif segment's IFD0 may carry
// a whole XMP packet (tag 0x02BC) or an IPTC record (0x83BB, 0x8649
// Photoshop), which readers parse for their location fields; stripping the
// GPS IFD alone leaves them in the stored JPEG.
func TestAttack_CheckPhoto_XMPInsideExifIsStripped(t *testing.T) {
	for _, bo := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
		in := jpegWith(t, 16, 16, nil, exifSegment(tiffWithEmbeddedXMP(bo)))
		up, err := CheckPhoto("image_base64", in, "")
		if err != nil {
			t.Fatal(err)
		}
		assertNoGPS(t, fmt.Sprint(bo), up.Bytes)
		// The orientation stays.
		if tiff := exifOf(t, up.Bytes); tiff == nil || ifd0Tags(t, tiff)[0x0112] != 6 {
			t.Errorf("%v: the orientation was lost with the XMP", bo)
		}
		if decodeBounds(t, up.Bytes) != image.Rect(0, 0, 16, 16) {
			t.Errorf("%v: the stripped photo changed size", bo)
		}
	}
}

// Attack: ExifTool reads an APP1 segment as Exif when "Exif\0" appears, in
// any case, within its first bytes (/^(.{0,4})Exif\0/is: Kodak's missing
// second NUL, a doubled header). A segment headed "EXIF\0\0", "exif\0\0" or
// with a few bytes before the header keeps its GPS through a case- and
// offset-exact match.
func TestAttack_CheckPhoto_ExifHeaderVariantsAreStripped(t *testing.T) {
	tiff := tiffWithGPS(binary.LittleEndian)
	for _, hdr := range []string{"EXIF\x00\x00", "exif\x00\x00", "\x00\x00\x00\x00Exif\x00\x00", "ab Exif\x00\x00"} {
		in := jpegWith(t, 16, 16, nil, jpegSegment(jpegAPP1, append([]byte(hdr), tiff...)))
		up, err := CheckPhoto("image_base64", in, "")
		if err != nil {
			t.Fatalf("%q: %v", hdr, err)
		}
		assertNoGPS(t, fmt.Sprintf("%q", hdr), up.Bytes)
		if decodeBounds(t, up.Bytes) != image.Rect(0, 0, 16, 16) {
			t.Errorf("%q: the stripped photo changed size", hdr)
		}
	}
}

// Attack: a GoPro photo keeps its GPS track (GPMF "GPS5"/"GPS9" streams) in
// an APP6 segment headed "GoPro\0", which ExifTool reads as GPS; stripping
// Exif and XMP leaves it.
func TestAttack_CheckPhoto_GoProGPMFIsStripped(t *testing.T) {
	gpmf := append([]byte("GoPro\x00DEVC\x00\x01\x00\x00STRM\x00\x01\x00\x00GPS5l\x04\x00\x02"), bytes.Join(gpsBytes(), nil)...)
	in := jpegWith(t, 16, 16, nil, jpegSegment(0xE6, gpmf))
	up, err := CheckPhoto("image_base64", in, "")
	if err != nil {
		t.Fatal(err)
	}
	assertNoGPS(t, "gopro", up.Bytes)
	if bytes.Contains(up.Bytes, []byte("GPS5")) {
		t.Error("gopro: the GPMF segment survived")
	}
}
