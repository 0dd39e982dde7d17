package ingest

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
	"sync"
	"testing"

	"github.com/triunalabs/trovesnap/internal/domain"
)

var deepPNG struct {
	once sync.Once
	b    []byte
}

// deepPNGBytes is a real, fully decodable PNG of 6300×6300 16-bit RGBA
// (39.7 MP, under the pixel cap) whose pixels are all zero: about 400 KB
// on the wire, 318 MB once decoded. It is written row by row, so making it
// never holds the image in memory.
func deepPNGBytes(t testing.TB) []byte {
	t.Helper()
	deepPNG.once.Do(func() {
		const side = 6300
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
		row := make([]byte, 1+side*8) // filter byte 0, then zero pixels
		for range side {
			_, _ = zw.Write(row)
		}
		_ = zw.Close()
		chunk("IDAT", z.Bytes())
		chunk("IEND", nil)
		deepPNG.b = b.Bytes()
	})
	if len(deepPNG.b) > domain.MaxPhotoBytes {
		t.Fatalf("test PNG is %d bytes, over the upload limit", len(deepPNG.b))
	}
	return deepPNG.b
}

// The decoded form's bytes per pixel, as the budget counts them.
func TestHardening_PhotoBytesPerPixelTable(t *testing.T) {
	for _, c := range []struct {
		name  string
		model color.Model
		want  int64
	}{
		{"YCbCr", color.YCbCrModel, 3},
		{"Gray", color.GrayModel, 1},
		{"Gray16", color.Gray16Model, 2},
		{"RGBA", color.RGBAModel, 4},
		{"NRGBA", color.NRGBAModel, 4},
		{"CMYK", color.CMYKModel, 4},
		{"RGBA64", color.RGBA64Model, 8},
		{"NRGBA64", color.NRGBA64Model, 8},
		{"palette", color.Palette{color.Black, color.White}, 1},
		{"unknown", color.ModelFunc(func(c color.Color) color.Color { return c }), 8},
	} {
		if got := bytesPerPixel(c.model); got != c.want {
			t.Errorf("%s: %d bytes a pixel, want %d", c.name, got, c.want)
		}
	}
}

// issue 13 finding 6: a small PNG under the pixel cap but 8 bytes a pixel
// is refused from its header, before a 318 MB decode.
func TestHardening_PhotoDecodeBudgetRefusesDeepPNG(t *testing.T) {
	data := deepPNGBytes(t)
	t.Logf("deep PNG: %d bytes", len(data))
	_, err := CheckPhoto("image_base64", data, "image/png")
	wantInvalid(t, err, "image_base64", "over the limit of 32 MiB")
	wantInvalid(t, err, "image_base64", "refused before decoding")
}

// A 12 MP phone-sized JPEG (4:2:0, ~18 MB decoded) is still accepted, and a
// 16-bit PNG within the budget too.
func TestHardening_PhotoDecodeBudgetKeepsNormalPhotos(t *testing.T) {
	img := image.NewYCbCr(image.Rect(0, 0, 4000, 3000), image.YCbCrSubsampleRatio420)
	var jb bytes.Buffer
	if err := jpeg.Encode(&jb, img, &jpeg.Options{Quality: 80}); err != nil {
		t.Fatal(err)
	}
	up, err := CheckPhoto("image_base64", jb.Bytes(), "image/jpeg")
	if err != nil || up.Width != 4000 || up.Height != 3000 || up.MimeType != "image/jpeg" {
		t.Fatalf("12 MP JPEG: %+v, %v", up, err)
	}
	cfg, format, err := image.DecodeConfig(bytes.NewReader(jb.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	// Whole 16×16 MCUs: Y 4000×3008, Cb and Cr 2000×1504 each.
	if got, want := photoDecodeCost(format, cfg, jb.Bytes()), int64(4000*3008+2*2000*1504); got != want {
		t.Errorf("12 MP 4:2:0 JPEG counted %d bytes, want %d", got, want)
	}
	up, err = CheckPhoto("image_base64", PNGBytes(t, 40, 30), "")
	if err != nil || up.Width != 40 {
		t.Fatalf("small PNG: %+v, %v", up, err)
	}
}

// The decoders' working buffers count too: a progressive JPEG keeps every
// coefficient block (4 bytes a sample) besides its planes, and an interlaced
// PNG decodes its passes into images of their own before merging them.
func TestHardening_PhotoDecodeBudgetCountsDecoderBuffers(t *testing.T) {
	img := image.NewYCbCr(image.Rect(0, 0, 4000, 3000), image.YCbCrSubsampleRatio420)
	var jb bytes.Buffer
	if err := jpeg.Encode(&jb, img, &jpeg.Options{Quality: 80}); err != nil {
		t.Fatal(err)
	}
	prog := bytes.Replace(jb.Bytes(), []byte{0xFF, 0xC0}, []byte{0xFF, 0xC2}, 1) // SOF0 → SOF2
	cfg, format, err := image.DecodeConfig(bytes.NewReader(prog))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := photoDecodeCost(format, cfg, prog), int64(5*(4000*3008+2*2000*1504)); got != want {
		t.Errorf("progressive 12 MP JPEG counted %d bytes, want %d", got, want)
	}
	_, err = CheckPhoto("image_base64", prog, "")
	wantInvalid(t, err, "image_base64", "over the limit of 32 MiB")

	plain, laced := pngHeaderOnly(2000, 2000), pngHeaderOnly(2000, 2000)
	laced[28] = 1                                                            // IHDR interlace method: Adam7
	binary.BigEndian.PutUint32(laced[29:], crc32.ChecksumIEEE(laced[12:29])) // the chunk's CRC
	for _, c := range []struct {
		data []byte
		want int64
	}{{plain, 2000 * 2000 * 4}, {laced, 2 * 2000 * 2000 * 4}} {
		cfg, format, err := image.DecodeConfig(bytes.NewReader(c.data))
		if err != nil {
			t.Fatal(err)
		}
		if got := photoDecodeCost(format, cfg, c.data); got != c.want {
			t.Errorf("PNG interlace %d: counted %d bytes, want %d", c.data[28], got, c.want)
		}
	}
}
