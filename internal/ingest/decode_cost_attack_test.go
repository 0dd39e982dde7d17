package ingest

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"runtime"
	"testing"
)

// grayPNG encodes a w×h grayscale PNG (8 or 16 bits) and, with trns,
// gives it a tRNS chunk (one transparent gray level) after IHDR.
func grayPNG(t *testing.T, w, h int, sixteen, trns bool) []byte {
	t.Helper()
	var img image.Image
	if sixteen {
		g := image.NewGray16(image.Rect(0, 0, w, h))
		g.SetGray16(1, 1, color.Gray16{Y: 0x1234})
		img = g
	} else {
		g := image.NewGray(image.Rect(0, 0, w, h))
		g.SetGray(1, 1, color.Gray{Y: 7})
		img = g
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	out := b.Bytes()
	if !trns {
		return out
	}
	ihdrEnd := 8 + 12 + 13
	return append(append(bytes.Clone(out[:ihdrEnd]), pngChunk("tRNS", []byte{0, 7})...), out[ihdrEnd:]...)
}

// allocated is what one decode of data allocates.
func allocated(t *testing.T, data []byte) int64 {
	t.Helper()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if err := decodeOnce(data); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	return int64(after.TotalAlloc - before.TotalAlloc)
}

// Attack (issue 16, decode budget): photoDecodeCost is what the decode
// budget holds for a decode, and the bound (domain.MaxPhotoDecodeBytes)
// refuses a photo before decoding. image.DecodeConfig reports a grayscale
// PNG as Gray (1 byte a pixel) even when a tRNS chunk makes image/png
// decode it into NRGBA (4 bytes; 16-bit: Gray16 → NRGBA64, 8 bytes): a
// 1-bit PNG of a few kilobytes then allocates four times what the budget
// counts, up to 128 MiB for one photo the bound admits, and several such
// decode side by side. The estimate must cover what the decode allocates
// (a fixed allowance for the decoder's small buffers).
func TestAttack_DecodeCostCoversAGrayPNGWithTransparency(t *testing.T) {
	const slack = 1 << 20
	for _, c := range []struct {
		name          string
		sixteen, trns bool
	}{{"gray8", false, false}, {"gray8+tRNS", false, true}, {"gray16+tRNS", true, true}} {
		data := grayPNG(t, 1000, 1000, c.sixteen, c.trns)
		cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		cost := photoDecodeCost(format, cfg, data)
		if got := allocated(t, data); got > cost+slack {
			t.Errorf("%s (%d bytes of file): a decode allocates %d bytes, the budget counts %d", c.name, len(data), got, cost)
		}
	}
}
