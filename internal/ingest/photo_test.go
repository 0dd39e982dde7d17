package ingest

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"strings"
	"testing"

	"github.com/triunalabs/trovesnap/internal/domain"
)

func testImage(w, h int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{uint8(x * 7), uint8(y * 11), 90, 255})
		}
	}
	return img
}

// PNGBytes, JPEGBytes and GIFBytes encode a small test picture.
func PNGBytes(t testing.TB, w, h int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, testImage(w, h)); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func JPEGBytes(t testing.TB, w, h int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := jpeg.Encode(&b, testImage(w, h), nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func GIFBytes(t testing.TB, w, h int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := gif.Encode(&b, testImage(w, h), nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// pngHeaderOnly is a PNG whose IHDR declares w×h pixels and whose data is
// absent: what a decompression bomb looks like before it is inflated.
func pngHeaderOnly(w, h uint32) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	chunk := func(typ string, data []byte) {
		_ = binary.Write(&b, binary.BigEndian, uint32(len(data)))
		b.WriteString(typ)
		b.Write(data)
		_ = binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(append([]byte(typ), data...)))
	}
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 2 // 8-bit RGB
	chunk("IHDR", ihdr)
	chunk("IDAT", []byte{0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01}) // an empty zlib stream
	chunk("IEND", nil)
	return b.Bytes()
}

func wantInvalid(t *testing.T, err error, field, substr string) {
	t.Helper()
	var ie *domain.InputError
	if !errors.As(err, &ie) || ie.Field != field || !strings.Contains(ie.Reason, substr) {
		t.Errorf("err = %v, want invalid %s mentioning %q", err, field, substr)
	}
}

func TestCheckPhoto_AcceptsDecodableJPEGPNGGIF(t *testing.T) {
	for _, c := range []struct {
		data       []byte
		mime, ext  string
		claim      string
		wantW, wnH int
	}{
		{JPEGBytes(t, 40, 30), "image/jpeg", "jpg", "image/jpeg", 40, 30},
		{PNGBytes(t, 12, 9), "image/png", "png", "", 12, 9},
		{GIFBytes(t, 8, 8), "image/gif", "gif", "image/gif", 8, 8},
	} {
		up, err := CheckPhoto("image_base64", c.data, c.claim)
		if err != nil {
			t.Fatalf("%s: %v", c.mime, err)
		}
		if up.MimeType != c.mime || up.Ext != c.ext || up.Width != c.wantW || up.Height != c.wnH || up.Size != len(c.data) ||
			up.ContentHash != domain.OriginalHash(c.data) || !bytes.Equal(up.Bytes, c.data) {
			t.Errorf("%s: %+v", c.mime, up)
		}
	}
}

func TestCheckPhoto_RefusesLiesBombsAndJunk(t *testing.T) {
	pngb := PNGBytes(t, 4, 4)
	jpg := JPEGBytes(t, 16, 16)
	cases := []struct {
		name  string
		data  []byte
		claim string
		field string
		want  string
	}{
		{"empty", nil, "", "image_base64", "empty"},
		{"too large", append(cloneBytes(jpg), make([]byte, domain.MaxPhotoBytes)...), "", "image_base64", "larger than"},
		{"png claimed jpeg", pngb, "image/jpeg", "mime_type", "bytes are image/png"},
		{"text claimed png", []byte("just some text, honest"), "image/png", "image_base64", "text"},
		{"html", []byte("<html><script>alert(1)</script></html>"), "", "image_base64", "not an accepted image"},
		{"pdf", []byte("%PDF-1.4\n1 0 obj<<>>endobj"), "", "image_base64", "application/pdf"},
		{"jpeg magic then junk", append([]byte{0xFF, 0xD8, 0xFF, 0xE0}, bytes.Repeat([]byte("junk"), 50)...), "", "image_base64", "corrupt"},
		{"truncated png", pngb[:len(pngb)-20], "", "image_base64", "could not be decoded"},
		{"decompression bomb 50000x50000", pngHeaderOnly(50000, 50000), "", "image_base64", "50000×50000"},
		{"too many pixels 8000x8000", pngHeaderOnly(8000, 8000), "", "image_base64", "refused before decoding"},
		{"zero pixels", pngHeaderOnly(0, 10), "", "image_base64", ""},
		{"heic", append([]byte{0, 0, 0, 0x18}, []byte("ftypheic\x00\x00\x00\x00mif1heic")...), "image/heic", "image_base64", "HEIC"},
		{"webp without decoder", append([]byte("RIFF\x24\x00\x00\x00WEBPVP8 "), make([]byte, 40)...), "", "image_base64", "no decoder"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := CheckPhoto("image_base64", c.data, c.claim)
			wantInvalid(t, err, c.field, c.want)
		})
	}
}

func cloneBytes(b []byte) []byte { return append([]byte(nil), b...) }

func TestDecodeImageBase64_BytesOnlyNeverPathsOrURLs(t *testing.T) {
	jpg := JPEGBytes(t, 8, 8)
	b64 := base64.StdEncoding.EncodeToString(jpg)
	if !strings.HasPrefix(b64, "/9j/") {
		t.Fatalf("a JPEG's base64 starts with /9j/: %q", b64[:8])
	}
	wrapped := ""
	for i := 0; i < len(b64); i += 76 {
		wrapped += b64[i:min(i+76, len(b64))] + "\r\n"
	}
	for name, in := range map[string]string{
		"plain":      b64,
		"data url":   "data:image/jpeg;base64," + b64,
		"wrapped":    wrapped,
		"unpadded":   strings.TrimRight(b64, "="),
		"url-safe":   base64.URLEncoding.EncodeToString(jpg),
		"whitespace": "  " + b64 + "\n",
	} {
		got, err := DecodeImageBase64("image_base64", in)
		if err != nil || !bytes.Equal(got, jpg) {
			t.Errorf("%s: %v", name, err)
		}
	}
	refusals := map[string]string{
		"/Users/paul/Pictures/lamp.jpg":                            "local file path",
		"/home/paul/lamp":                                          "local file path",
		"~/Desktop/lamp.png":                                       "local file path",
		`C:\Users\Paul\Pictures\lamp.jpg`:                          "local file path",
		"C:/photos/lamp.jpg":                                       "local file path",
		`\\nas\photos\lamp.jpg`:                                    "local file path",
		"../secrets/lamp.jpg":                                      "local file path",
		"photos/2026/lamp.HEIC":                                    "local file path",
		"file:///Users/paul/lamp.jpg":                              "file: URL",
		"FILE://C:/lamp.jpg":                                       "file: URL",
		"https://drive.google.com/file/d/1x":                       "expiring or private share link",
		"https://lh3.googleusercontent.com/pw/AP1GczN=w2400-h1600": "expiring or private share link",
		"https://1drv.ms/i/s!AkX":                                  "expiring or private share link",
		"https://bucket.s3.amazonaws.com/lamp.jpg?X-Amz-Signature=abc&X-Amz-Expires=300": "expiring or private share link",
		"https://example.com/lamp.jpg":             "never fetches URLs",
		"http://169.254.169.254/latest/meta-data/": "never fetches URLs",
		"content://media/external/images/1":        "content: reference",
		"ph://8F1A-43B2":                           "ph: reference",
		"data:image/png,rawbytes":                  "must carry base64",
		"not base64!":                              "not valid base64",
		"":                                         "empty",
	}
	for in, want := range refusals {
		_, err := DecodeImageBase64("image_base64", in)
		wantInvalid(t, err, "image_base64", want)
		if err != nil && strings.Contains(err.Error(), in) && in != "" {
			t.Errorf("%q: the reason echoes the input: %v", in, err)
		}
	}
}
