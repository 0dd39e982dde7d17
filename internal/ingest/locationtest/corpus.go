// Package locationtest is the one table of photos that holds the database's
// location check (live migration media_location) to ingest.StripLocation:
// clean photos of each format, photos carrying location in every place
// StripLocation looks, containers it cannot walk, and deterministic
// mutations of each. The test that uses it asks Go for the answer (does
// StripLocation change the bytes, or fail?) and the database for its own.
// It builds bytes only and imports nothing of trovesnap, so any package's
// tests may use it.
package locationtest

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"math/rand/v2"
)

// Sample is one photo of the table.
type Sample struct {
	Name  string
	Bytes []byte
}

// Exif tags.
const (
	tagOrientation = 0x0112
	tagXMLPacket   = 0x02BC
	tagIPTCNAA     = 0x83BB
	tagPhotoshop   = 0x8649
	tagExifIFD     = 0x8769
	tagGPSIFD      = 0x8825
	tagInteropIFD  = 0xA005
)

// entry is one IFD entry: tag, type, count, value (or offset).
type entry struct {
	tag, typ    uint16
	count, val  uint32
	pointsToIFD int // index of the IFD its value points to, or -1
}

// tiff builds a TIFF structure of the given IFDs (each a list of entries,
// chained when chain is set), laid out one after the other, with tail
// bytes appended (values that point past the IFDs point into it).
func tiff(bo binary.ByteOrder, chain bool, ifds [][]entry, tail []byte) []byte {
	offs := make([]uint32, len(ifds))
	at := uint32(8)
	for i, d := range ifds {
		offs[i] = at
		at += uint32(2 + 12*len(d) + 4)
	}
	var b bytes.Buffer
	if bo == binary.LittleEndian {
		b.WriteString("II*\x00")
	} else {
		b.WriteString("MM\x00*")
	}
	put := func(vs ...any) {
		for _, v := range vs {
			if err := binary.Write(&b, bo, v); err != nil {
				panic(err)
			}
		}
	}
	put(uint32(8))
	for i, d := range ifds {
		put(uint16(len(d)))
		for _, e := range d {
			v := e.val
			if e.pointsToIFD >= 0 {
				v = offs[e.pointsToIFD]
			} else if e.count*typeSize(e.typ) > 4 {
				v += at // an offset into the tail
			}
			put(e.tag, e.typ, e.count, v)
		}
		next := uint32(0)
		if chain && i+1 < len(ifds) {
			next = offs[i+1]
		}
		put(next)
	}
	b.Write(tail)
	return b.Bytes()
}

func typeSize(typ uint16) uint32 {
	switch typ {
	case 3, 8:
		return 2
	case 4, 9, 11, 13:
		return 4
	case 5, 10, 12:
		return 8
	}
	return 1
}

func ent(tag, typ uint16, count, val uint32) entry { return entry{tag, typ, count, val, -1} }
func ptr(tag uint16, ifd int) entry                { return entry{tag, 4, 1, 0, ifd} }

// gpsIFD is a GPS IFD: a latitude reference and a latitude (3 rationals in
// the tail at offset 0).
func gpsIFD() []entry {
	return []entry{ent(0x0001, 2, 2, 'N'), ent(0x0002, 5, 3, 0)}
}

var latitude = []byte{0, 0, 0, 40, 0, 0, 0, 1, 0, 0, 0, 44, 0, 0, 0, 1, 0, 0, 0, 12, 0, 0, 0, 1}

// segment is a JPEG marker segment.
func segment(marker byte, payload []byte) []byte {
	n := len(payload) + 2
	return append([]byte{0xFF, marker, byte(n >> 8), byte(n)}, payload...)
}

func exif(header string, t []byte) []byte { return segment(0xE1, append([]byte(header), t...)) }

// baseJPEG is a small JPEG from image/jpeg (its own APP0-less markers).
func baseJPEG(w, h int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = byte(r.IntN(256))
	}
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 90}); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// withSegments puts segments right after SOI, and tail after the image.
func withSegments(jpg, tail []byte, segs ...[]byte) []byte {
	out := append([]byte{}, jpg[:2]...)
	for _, s := range segs {
		out = append(out, s...)
	}
	out = append(out, jpg[2:]...)
	return append(out, tail...)
}

func basePNG(w, h int) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = byte(i * 7)
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		panic(err)
	}
	return b.Bytes()
}

func pngChunk(typ string, data []byte) []byte {
	out := binary.BigEndian.AppendUint32(nil, uint32(len(data)))
	out = append(out, typ...)
	out = append(out, data...)
	return binary.BigEndian.AppendUint32(out, 0) // the CRC is not checked by the walk
}

// pngWith puts chunks after IHDR (signature 8 bytes, IHDR 25).
func pngWith(p []byte, tail []byte, chunks ...[]byte) []byte {
	out := append([]byte{}, p[:33]...)
	for _, c := range chunks {
		out = append(out, c...)
	}
	out = append(out, p[33:]...)
	return append(out, tail...)
}

func baseGIF(w, h int) []byte {
	pal := color.Palette{color.Black, color.White, color.RGBA{200, 10, 10, 255}, color.RGBA{10, 200, 10, 255}}
	img := image.NewPaletted(image.Rect(0, 0, w, h), pal)
	for i := range img.Pix {
		img.Pix[i] = byte(i % 4)
	}
	var b bytes.Buffer
	if err := gif.Encode(&b, img, nil); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// gifApp is an application extension: 11 bytes of identifier, then data.
func gifApp(id string, data []byte) []byte {
	out := append([]byte{0x21, 0xFF, 11}, id...)
	for len(data) > 0 {
		n := min(len(data), 255)
		out = append(out, byte(n))
		out = append(out, data[:n]...)
		data = data[n:]
	}
	return append(out, 0)
}

// gifWith puts blocks right after the global colour table.
func gifWith(g []byte, tail []byte, blocks ...[]byte) []byte {
	at := 13
	if g[10]&0x80 != 0 {
		at += 3 << (g[10]&7 + 1)
	}
	out := append([]byte{}, g[:at]...)
	for _, b := range blocks {
		out = append(out, b...)
	}
	out = append(out, g[at:]...)
	return append(out, tail...)
}

// webp builds a RIFF WebP of the given chunks (type, data), each padded to
// an even length, and tail bytes past the RIFF's end.
func webp(tail []byte, chunks ...[2]string) []byte {
	var body []byte
	for _, c := range chunks {
		body = append(body, c[0]...)
		body = binary.LittleEndian.AppendUint32(body, uint32(len(c[1])))
		body = append(body, c[1]...)
		if len(c[1])%2 == 1 {
			body = append(body, 0)
		}
	}
	out := append([]byte("RIFF"), binary.LittleEndian.AppendUint32(nil, uint32(4+len(body)))...)
	out = append(out, "WEBP"...)
	out = append(out, body...)
	return append(out, tail...)
}

// Seeds is the table's hand-made part: each a clean photo or one place
// location can hide.
func Seeds() []Sample {
	le, be := binary.LittleEndian, binary.BigEndian
	jpg := baseJPEG(16, 16, 1)
	orientation := []entry{ent(tagOrientation, 3, 1, 6)}
	var s []Sample
	add := func(name string, b []byte) { s = append(s, Sample{name, b}) }

	add("jpeg clean", jpg)
	add("jpeg exif orientation only", withSegments(jpg, nil, exif("Exif\x00\x00", tiff(le, false, [][]entry{orientation}, nil))))
	add("jpeg exif GPS little-endian", withSegments(jpg, nil, exif("Exif\x00\x00", tiff(le, false, [][]entry{{ent(tagOrientation, 3, 1, 6), ptr(tagGPSIFD, 1)}, gpsIFD()}, latitude))))
	add("jpeg exif GPS big-endian", withSegments(jpg, nil, exif("Exif\x00\x00", tiff(be, false, [][]entry{{ptr(tagGPSIFD, 1)}, gpsIFD()}, latitude))))
	add("jpeg exif GPS in chained IFD1", withSegments(jpg, nil, exif("Exif\x00\x00", tiff(le, true, [][]entry{orientation, {ptr(tagGPSIFD, 2)}, gpsIFD()}, latitude))))
	add("jpeg exif XMP in Exif IFD", withSegments(jpg, nil, exif("Exif\x00\x00", tiff(le, false, [][]entry{{ptr(tagExifIFD, 1)}, {ent(tagXMLPacket, 1, 12, 0)}}, []byte("<x:xmpmeta/>")))))
	add("jpeg exif IPTC in interop IFD", withSegments(jpg, nil, exif("Exif\x00\x00", tiff(be, false, [][]entry{{ptr(tagExifIFD, 1)}, {ptr(tagInteropIFD, 2)}, {ent(tagIPTCNAA, 7, 3, 0x1C0250)}}, nil))))
	add("jpeg exif Photoshop in IFD0", withSegments(jpg, nil, exif("Exif\x00\x00", tiff(le, false, [][]entry{{ent(tagPhotoshop, 7, 8, 0)}}, []byte("8BIM\x04\x04\x00\x00")))))
	add("jpeg exif clean Exif and interop IFDs", withSegments(jpg, nil, exif("Exif\x00\x00", tiff(le, true, [][]entry{{ent(tagOrientation, 3, 1, 1), ptr(tagExifIFD, 1)}, {ptr(tagInteropIFD, 2)}, {ent(0x0001, 2, 4, 0x00383952)}}, nil))))
	add("jpeg exif lower-case header", withSegments(jpg, nil, exif("exif\x00\x00", tiff(le, false, [][]entry{{ptr(tagGPSIFD, 1)}, gpsIFD()}, latitude))))
	add("jpeg exif header after 4 bytes", withSegments(jpg, nil, exif("\x00\x00\x00\x00EXIF\x00\x00", tiff(le, false, [][]entry{{ptr(tagGPSIFD, 1)}, gpsIFD()}, latitude))))
	add("jpeg exif header after 5 bytes (no Exif)", withSegments(jpg, nil, exif("\x00\x00\x00\x00\x00Exif\x00\x00", tiff(le, false, [][]entry{{ptr(tagGPSIFD, 1)}, gpsIFD()}, latitude))))
	add("jpeg exif header without its pad", withSegments(jpg, nil, segment(0xE1, []byte("Exif\x00"))))
	add("jpeg exif unknown byte order", withSegments(jpg, nil, exif("Exif\x00\x00", []byte("XX*\x00\x08\x00\x00\x00\x00\x00\x00\x00\x00\x00"))))
	add("jpeg exif IFD out of bounds", withSegments(jpg, nil, exif("Exif\x00\x00", []byte("II*\x00\xff\x00\x00\x00\x00\x00"))))
	var many [][]entry
	for i := range 17 {
		_ = i
		many = append(many, orientation)
	}
	add("jpeg exif 17 chained IFDs", withSegments(jpg, nil, exif("Exif\x00\x00", tiff(le, true, many, nil))))
	add("jpeg exif 16 chained IFDs", withSegments(jpg, nil, exif("Exif\x00\x00", tiff(le, true, many[:16], nil))))
	add("jpeg exif IFD loop", withSegments(jpg, nil, exif("Exif\x00\x00", []byte("II*\x00\x08\x00\x00\x00\x00\x00\x08\x00\x00\x00"))))
	add("jpeg XMP", withSegments(jpg, nil, segment(0xE1, []byte("http://ns.adobe.com/xap/1.0/\x00<x:xmpmeta/>"))))
	add("jpeg extended XMP", withSegments(jpg, nil, segment(0xE1, []byte("http://ns.adobe.com/xmp/extension/\x00ABCDEF"))))
	add("jpeg APP1 other", withSegments(jpg, nil, segment(0xE1, []byte("http://ns.example/other\x00"))))
	add("jpeg Photoshop APP13", withSegments(jpg, nil, segment(0xED, []byte("Photoshop 3.0\x008BIM\x04\x04\x00\x00\x00\x00\x00\x00"))))
	add("jpeg MPF APP2", withSegments(jpg, nil, segment(0xE2, []byte("MPF\x00II*\x00"))))
	add("jpeg ICC APP2", withSegments(jpg, nil, segment(0xE2, []byte("ICC_PROFILE\x00\x01\x01"))))
	add("jpeg GoPro APP6", withSegments(jpg, nil, segment(0xE6, []byte("GoPro\x00GPS5"))))
	add("jpeg comment", withSegments(jpg, nil, segment(0xFE, []byte("a comment"))))
	add("jpeg bytes after EOI", withSegments(jpg, []byte("\xff\xd8\xff\xe1motion photo")))
	add("jpeg fill bytes and extraneous bytes", withSegments(jpg, nil, []byte("junk\xff\xff\xff"), segment(0xFE, []byte("c"))))
	add("jpeg truncated", jpg[:len(jpg)/2])
	add("jpeg larger", baseJPEG(64, 48, 2))

	p := basePNG(6, 4)
	add("png clean", p)
	add("png eXIf", pngWith(p, nil, pngChunk("eXIf", tiff(be, false, [][]entry{{ptr(tagGPSIFD, 1)}, gpsIFD()}, latitude))))
	add("png XMP iTXt", pngWith(p, nil, pngChunk("iTXt", []byte("XML:com.adobe.xmp\x00\x00\x00\x00\x00<x:xmpmeta/>"))))
	add("png XMP keyword alone", pngWith(p, nil, pngChunk("tEXt", []byte("XML:com.adobe.xmp"))))
	add("png XMP keyword longer", pngWith(p, nil, pngChunk("tEXt", []byte("XML:com.adobe.xmpX\x00v"))))
	add("png raw profile", pngWith(p, nil, pngChunk("zTXt", []byte("Raw profile type exif\x00\x00xyz"))))
	add("png raw profile upper case", pngWith(p, nil, pngChunk("tEXt", []byte("RAW PROFILE TYPE iptc\x00v"))))
	add("png raw profile non-ASCII", pngWith(p, nil, pngChunk("tEXt", []byte("raw prof\xc4\xb0le type\x00v"))))
	add("png text other", pngWith(p, nil, pngChunk("tEXt", []byte("Comment\x00hello"))))
	add("png exIf (eXIf in another case)", pngWith(p, nil, pngChunk("exIf", tiff(be, false, [][]entry{{ptr(tagGPSIFD, 1)}, gpsIFD()}, latitude))))
	add("png zxIf", pngWith(p, nil, pngChunk("zxIf", []byte("compressed"))))
	add("png ZXIF", pngWith(p, nil, pngChunk("ZXIF", nil)))
	add("png tXMP", pngWith(p, nil, pngChunk("tXMP", []byte("<x:xmpmeta/>"))))
	add("png txmp (not tXMP)", pngWith(p, nil, pngChunk("txmp", []byte("<x:xmpmeta/>"))))
	add("png exi\xc6 (not exif)", pngWith(p, nil, pngChunk("exi\xc6", nil)))
	add("png bytes after IEND", pngWith(p, []byte("tail")))
	add("png truncated", p[:len(p)-5])

	g := baseGIF(5, 3)
	add("gif clean", g)
	add("gif XMP", gifWith(g, nil, gifApp("XMP DataXMP", []byte("<x:xmpmeta/>"))))
	add("gif IPTC", gifWith(g, nil, gifApp("MGKIPTC0000", []byte("\x1c\x02\x5a"))))
	add("gif 8BIM", gifWith(g, nil, gifApp("MGK8BIM0000", []byte("8BIM"))))
	add("gif mgkiptc0000 (lower case)", gifWith(g, nil, gifApp("mgkiptc0000", []byte("\x1c\x02\x5a"))))
	add("gif xmp DataXMP (mixed case)", gifWith(g, nil, gifApp("xmp DataXMP", []byte("<x/>"))))
	add("gif MGKIPTC000\xb0 (not IPTC)", gifWith(g, nil, gifApp("MGKIPTC000\xb0", []byte("x"))))
	add("gif NETSCAPE", gifWith(g, nil, gifApp("NETSCAPE2.0", []byte("\x01\x00\x00"))))
	add("gif bytes after trailer", gifWith(g, []byte("tail")))
	add("gif no trailer", g[:len(g)-1])
	add("gif header only", g[:13])

	vp8l := [2]string{"VP8L", "\x2f\x00\x00\x00\x00\x07"}
	add("webp clean", webp(nil, vp8l))
	add("webp VP8X without metadata", webp(nil, [2]string{"VP8X", "\x10\x00\x00\x00\x00\x00\x00\x00\x00\x00"}, vp8l))
	add("webp EXIF", webp(nil, [2]string{"VP8X", "\x08\x00\x00\x00\x00\x00\x00\x00\x00\x00"}, vp8l, [2]string{"EXIF", "II*\x00"}))
	add("webp XMP", webp(nil, vp8l, [2]string{"XMP ", "<x/>"}))
	add("webp XMP\\0", webp(nil, vp8l, [2]string{"XMP\x00", "<x/>"}))
	add("webp xmp (not XMP)", webp(nil, vp8l, [2]string{"xmp ", "<x/>"}))
	add("webp XMP flag alone", webp(nil, [2]string{"VP8X", "\x04\x00\x00\x00\x00\x00\x00\x00\x00\x00"}, vp8l))
	add("webp odd last chunk without pad", webp(nil, vp8l, [2]string{"ICCP", "abc"})[:12+8+6+8+3])
	add("webp bytes after RIFF", webp([]byte("tail"), vp8l))

	add("not an image", []byte("hello, world"))
	add("empty", nil)
	return s
}

// Mutants returns n deterministic mutations of b: bytes changed (to 0xFF,
// 0x00 or anything), cut, inserted or removed, and marker bytes put in.
func Mutants(b []byte, n int, seed uint64) [][]byte {
	r := rand.New(rand.NewPCG(seed, uint64(len(b))))
	var out [][]byte
	for range n {
		m := bytes.Clone(b)
		for range 1 + r.IntN(3) {
			if len(m) == 0 {
				m = append(m, 0xFF)
				continue
			}
			i := r.IntN(len(m))
			switch r.IntN(8) {
			case 0:
				m[i] = byte(r.IntN(256))
			case 1:
				m[i] = 0xFF
			case 2:
				m[i] = 0
			case 3:
				m = m[:i]
			case 4:
				m = append(m[:i:i], append([]byte{byte(r.IntN(256))}, m[i:]...)...)
			case 5:
				m = append(m[:i:i], m[min(len(m), i+1+r.IntN(4)):]...)
			case 6:
				m[i] ^= 1 << r.IntN(8)
			case 7:
				marker := [][]byte{{0xFF, 0xD9}, {0xFF, 0xDA}, {0xFF, 0x00}, {0xFF, 0xE1}, {0xFF, 0xD0}, []byte("IEND"), {0x3B}, {0x21, 0xFF, 0x0B}}[r.IntN(8)]
				m = append(m[:i:i], append(bytes.Clone(marker), m[i:]...)...)
			}
		}
		out = append(out, m)
	}
	return out
}

// Limits is the table's part at the walk's bounds (ingest's maxJPEGMarkers
// and maxChunks): for each format, photos from a few steps under the bound
// to a few over it, named "<format> steps <n>", so the bound the database
// keeps is held to Go's.
func Limits() []Sample {
	var s []Sample
	jpg := baseJPEG(8, 8, 3)
	for c := 4086; c <= 4096; c++ {
		segs := make([][]byte, c)
		for i := range segs {
			segs[i] = []byte{0xFF, 0xFE, 0x00, 0x02} // an empty comment
		}
		s = append(s, Sample{"jpeg steps " + itoa(c), withSegments(jpg, nil, segs...)})
	}
	// IFDs and IFD entries in all of a JPEG's Exif segments (ingest's
	// maxExifEntries, 16384): 16 segments of an IFD of 1000 entries (1001
	// each), then one of c entries.
	seg := func(n int) []byte {
		ifd := make([]entry, n)
		for i := range ifd {
			ifd[i] = ent(tagOrientation, 3, 1, 1)
		}
		return exif("Exif\x00\x00", tiff(binary.LittleEndian, false, [][]entry{ifd}, nil))
	}
	thousand := seg(1000)
	for c := 363; c <= 371; c++ {
		segs := make([][]byte, 0, 17)
		for range 16 {
			segs = append(segs, thousand)
		}
		s = append(s, Sample{"jpeg exif entries " + itoa(16016+1+c), withSegments(jpg, nil, append(segs, seg(c))...)})
	}
	p := basePNG(2, 2)
	for c := 65528; c <= 65536; c++ {
		chunks := make([][]byte, c)
		for i := range chunks {
			chunks[i] = pngChunk("teST", nil)
		}
		s = append(s, Sample{"png steps " + itoa(c), pngWith(p, nil, chunks...)})
	}
	vp8l := [2]string{"VP8L", "\x2f\x00\x00\x00\x00\x07"}
	for c := 65530; c <= 65537; c++ {
		chunks := make([][2]string, c+1)
		chunks[0] = vp8l
		for i := 1; i <= c; i++ {
			chunks[i] = [2]string{"JUNK", ""}
		}
		s = append(s, Sample{"webp steps " + itoa(c), webp(nil, chunks...)})
	}
	g := baseGIF(5, 3)
	for c := 65522; c <= 65534; c++ {
		ext := make([]byte, 0, 2+2*c+1)
		ext = append(ext, 0x21, 0xFE) // a comment in 1-byte sub-blocks
		for range c {
			ext = append(ext, 1, 'x')
		}
		s = append(s, Sample{"gif steps " + itoa(c), gifWith(g, nil, append(ext, 0))})
	}
	return s
}

func itoa(n int) string {
	var b []byte
	for {
		b = append([]byte{byte('0' + n%10)}, b...)
		if n /= 10; n == 0 {
			return string(b)
		}
	}
}
