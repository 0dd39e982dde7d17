package ingest

import (
	"bytes"
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
