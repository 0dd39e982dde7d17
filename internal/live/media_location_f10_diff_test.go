package live_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/triunalabs/trovesnap/internal/ingest"
	"github.com/triunalabs/trovesnap/internal/ingest/locationtest"
	"github.com/triunalabs/trovesnap/internal/live/pgtest"
)

// f10Case is one generated photo with Go's answer.
func f10Case(name string, b []byte) locationCase {
	out, err := ingest.StripLocation(b)
	return locationCase{name, b, err != nil || !bytes.Equal(out, b)}
}

// f10Seed is the table's seed of that name.
func f10Seed(name string) []byte {
	for _, s := range locationtest.Seeds() {
		if s.Name == name {
			return s.Bytes
		}
	}
	panic("no seed " + name)
}

// f10Seg is a JPEG marker segment.
func f10Seg(m byte, payload []byte) []byte {
	n := len(payload) + 2
	return append([]byte{0xFF, m, byte(n >> 8), byte(n)}, payload...)
}

// f10TIFF builds a TIFF structure from raw IFDs placed at given offsets
// (each IFD: count, entries as {tag, typ, count, value}, next), size total
// bytes (zeros elsewhere).
type f10IFD struct {
	off     int
	count   int // the count written (may differ from len(entries))
	entries [][4]uint32
	next    uint32
}

func f10TIFF(bo binary.ByteOrder, first uint32, size int, ifds []f10IFD) []byte {
	t := make([]byte, size)
	if bo == binary.LittleEndian {
		copy(t, "II*\x00")
	} else {
		copy(t, "MM\x00*")
	}
	bo.PutUint32(t[4:], first)
	for _, d := range ifds {
		if d.off+2 > size {
			continue
		}
		bo.PutUint16(t[d.off:], uint16(d.count))
		at := d.off + 2
		for _, e := range d.entries {
			if at+12 > size {
				break
			}
			bo.PutUint16(t[at:], uint16(e[0]))
			bo.PutUint16(t[at+2:], uint16(e[1]))
			bo.PutUint32(t[at+4:], e[2])
			bo.PutUint32(t[at+8:], e[3])
			at += 12
		}
		if at+4 <= size {
			bo.PutUint32(t[at:], d.next)
		}
	}
	return t
}

// f10Cases are photos built by generators other than locationtest's
// Mutants: Exif structures at their bounds, JPEG marker and scan edge
// cases (the walk's windows included), PNG keywords, WebP and GIF edges.
func f10Cases() []locationCase {
	r := rand.New(rand.NewPCG(10, 16))
	var cs []locationCase
	add := func(name string, b []byte) { cs = append(cs, f10Case(name, b)) }
	jpg := f10Seed("jpeg clean")
	sos := bytes.Index(jpg, []byte{0xFF, 0xDA})
	head := jpg[:sos+2+int(jpg[sos+2])<<8|int(jpg[sos+3])]
	withExif := func(hdr string, t []byte) []byte {
		out := append([]byte{}, jpg[:2]...)
		out = append(out, f10Seg(0xE1, append([]byte(hdr), t...))...)
		return append(out, jpg[2:]...)
	}

	// Exif: IFDs at the edges, counts at 1024/1025, chains and pointers.
	for _, bo := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
		for _, size := range []int{8, 9, 13, 14, 15, 26, 27, 28} {
			for off := 0; off <= size+1; off++ {
				for _, cnt := range []int{0, 1} {
					add(fmt.Sprintf("tiff %v size %d ifd at %d count %d", bo, size, off, cnt),
						withExif("Exif\x00\x00", f10TIFF(bo, uint32(off), size, []f10IFD{{off: off, count: cnt, entries: [][4]uint32{{0x0112, 3, 1, 1}}}})))
				}
			}
		}
		for _, cnt := range []int{1023, 1024, 1025} {
			for _, slack := range []int{-1, 0, 1} {
				size := 8 + 2 + 12*cnt + 4 + slack
				es := make([][4]uint32, cnt)
				for i := range es {
					es[i] = [4]uint32{0x0112, 3, 1, 1}
				}
				add(fmt.Sprintf("tiff %v %d entries slack %d", bo, cnt, slack), withExif("Exif\x00\x00", f10TIFF(bo, 8, size, []f10IFD{{off: 8, count: cnt, entries: es}})))
				es[cnt-1] = [4]uint32{0x8825, 4, 1, 0}
				add(fmt.Sprintf("tiff %v %d entries last GPS slack %d", bo, cnt, slack), withExif("Exif\x00\x00", f10TIFF(bo, 8, size, []f10IFD{{off: 8, count: cnt, entries: es}})))
			}
		}
		// 15..18 IFDs reached through chains, Exif and interop pointers
		// (each IFD one entry, 18 bytes), loops back, GPS in the last.
		for _, nIFD := range []int{15, 16, 17, 18} {
			for _, how := range []int{0, 1, 2, 3} {
				for _, gpsLast := range []bool{false, true} {
					var ds []f10IFD
					for k := range nIFD {
						off := 8 + 18*k
						next := uint32(0)
						e := [4]uint32{0x0112, 3, 1, 1}
						if k+1 < nIFD {
							nxt := uint32(8 + 18*(k+1))
							switch (how + k) % 3 {
							case 0:
								next = nxt
							case 1:
								e = [4]uint32{0x8769, 4, 1, nxt}
							case 2:
								e = [4]uint32{0xA005, 4, 1, nxt}
							}
							if how == 3 {
								next = 8 // a loop to IFD0 besides
								e = [4]uint32{0x8769, 4, 1, nxt}
							}
						} else if gpsLast {
							e = [4]uint32{0x8825, 4, 1, 0}
						}
						ds = append(ds, f10IFD{off: off, count: 1, entries: [][4]uint32{e}, next: next})
					}
					add(fmt.Sprintf("tiff %v %d IFDs how %d gps %v", bo, nIFD, how, gpsLast), withExif("Exif\x00\x00", f10TIFF(bo, 8, 8+18*nIFD, ds)))
				}
			}
		}
		// Pointers to offsets 0, 7, 8, the end, beyond it; 0xFFFFFFFF.
		for _, tag := range []uint32{0x8769, 0xA005, 0x8825, 0x02BC, 0x83BB, 0x8649, 0x0112} {
			for _, v := range []uint32{0, 1, 7, 8, 26, 27, 30, 31, 32, 0xFFFFFFFF, 0x7FFFFFFF} {
				for _, typ := range []uint32{0, 1, 4, 5, 7, 13, 14} {
					for _, count := range []uint32{0, 1, 4, 5, 0xFFFFFFFF} {
						add(fmt.Sprintf("tiff %v tag %x typ %d count %d value %d", bo, tag, typ, count, v),
							withExif("Exif\x00\x00", f10TIFF(bo, 8, 32, []f10IFD{{off: 8, count: 1, entries: [][4]uint32{{tag, typ, count, v}}}})))
					}
				}
			}
		}
	}
	// Random IFD graphs: IFDs at random (overlapping, misaligned) offsets,
	// entries of the tags the walk knows pointing to one another, to the
	// edges or anywhere, counts near the bounds, either byte order.
	tags := []uint32{0x0112, 0x8769, 0xA005, 0x8825, 0x02BC, 0x83BB, 0x8649, 0x0001, 0x8769, 0xA005}
	for k := range 3000 {
		bo := binary.ByteOrder(binary.LittleEndian)
		if k%2 == 1 {
			bo = binary.BigEndian
		}
		size := 8 + r.IntN(600)
		if k%50 == 0 {
			size = 8 + 2 + 12*(1020+r.IntN(8)) + 4 + r.IntN(3) - 1
		}
		nIFD := 1 + r.IntN(20)
		offs := make([]int, nIFD)
		for i := range offs {
			offs[i] = 8 + r.IntN(max(1, size-8))
			if r.IntN(3) == 0 {
				offs[i] = 8 + 18*r.IntN(max(1, (size-8)/18))
			}
		}
		pick := func() uint32 {
			switch r.IntN(6) {
			case 0:
				return uint32(r.IntN(size + 4))
			case 1:
				return []uint32{0, 7, 8, uint32(size - 6), uint32(size - 5), uint32(size), 0xFFFFFFFF}[r.IntN(7)]
			default:
				return uint32(offs[r.IntN(nIFD)])
			}
		}
		var ds []f10IFD
		for i := range nIFD {
			n := r.IntN(4)
			if k%50 == 0 && i == 0 {
				n = 1020 + r.IntN(8)
			}
			es := make([][4]uint32, n)
			for e := range es {
				tag := tags[r.IntN(len(tags))]
				if r.IntN(8) == 0 {
					tag = uint32(r.IntN(65536))
				}
				es[e] = [4]uint32{tag, uint32(r.IntN(15)), uint32([]int{0, 1, 2, 4, 5, 100}[r.IntN(6)]), pick()}
			}
			count := n
			if r.IntN(10) == 0 {
				count = []int{0, 1024, 1025, 65535}[r.IntN(4)]
			}
			next := uint32(0)
			if r.IntN(2) == 0 {
				next = pick()
			}
			ds = append(ds, f10IFD{off: offs[i], count: count, entries: es, next: next})
		}
		add(fmt.Sprintf("tiff random %d", k), withExif("Exif\x00\x00", f10TIFF(bo, pick(), size, ds)))
	}
	// Exif headers: case, position, NUL, short payloads.
	for _, hdr := range []string{"Exif\x00\x00", "EXIF\x00", "eXiF\x00\x00", "Exif\x00", "Exif", "Exif ", "xExif\x00\x00", "1234Exif\x00\x00", "12345Exif\x00\x00", "Exi\xc6\x00\x00", "\xc5xif\x00\x00"} {
		for _, t := range [][]byte{nil, []byte("II*\x00"), []byte("II*\x00\x08\x00\x00\x00"), []byte("II*\x00\x08\x00\x00\x00\x00\x00\x00\x00\x00\x00")} {
			add(fmt.Sprintf("exif header %q tiff %d", hdr, len(t)), withExif(hdr, t))
		}
	}

	// JPEG markers: APPn of length 2 and 1, a segment ending at the very
	// end, FF at the end, fill runs, RST outside a scan, several scans.
	for _, m := range []byte{0xE1, 0xE2, 0xE6, 0xED, 0xFE, 0xDA, 0xD0, 0xD9, 0x01, 0xFF, 0x00} {
		for _, tail := range [][]byte{nil, {0xFF}, {0xFF, 0xD9}, {0xFF, 0xFF}, {0x00, 0x02}, {0x00, 0x01}, {0x00, 0x03}, {0x00, 0x02, 0xFF, 0xD9}, {0x00, 0x03, 0xFF, 0xD9}} {
			b := append(append(append([]byte{}, jpg[:2]...), 0xFF, m), tail...)
			add(fmt.Sprintf("jpeg marker %x then % x", m, tail), b)
			add(fmt.Sprintf("jpeg after image marker %x then % x", m, tail), append(append(append([]byte{}, jpg[:len(jpg)-2]...), 0xFF, m), tail...))
		}
	}
	// Scans: generated entropy-coded data, before and after the walk's
	// switch to windows (16384 0xFF bytes), with fill runs and stuffed
	// bytes at and across window edges.
	tok := func(r *rand.Rand) []byte {
		switch r.IntN(12) {
		case 0:
			return []byte{0xFF, 0x00}
		case 1:
			return []byte{0xFF, byte(0xD0 + r.IntN(8))}
		case 2:
			run := bytes.Repeat([]byte{0xFF}, 1+r.IntN(5000))
			return append(run, []byte{0x00, 0xD3, 0xD9, 0xDA, 0xE1, 0x01}[r.IntN(6)])
		case 3:
			return bytes.Repeat([]byte{0xFF, 0xFF, 0x00}, 1+r.IntN(3000))
		case 4:
			return make([]byte, r.IntN(70000))
		case 5:
			return []byte{0xFF, 0xDA, 0x00, 0x02}
		case 6:
			return f10Seg(0xE1, []byte("http://ns.adobe.com/xap/1.0/\x00x"))
		case 7:
			return []byte{0xFF, 0xFE, 0x00, 0x02}
		default:
			b := make([]byte, 1+r.IntN(300))
			for i := range b {
				b[i] = byte(r.IntN(256))
			}
			return b
		}
	}
	for k := range 300 {
		b := append([]byte{}, head...)
		if k%2 == 1 {
			for range 16400 {
				b = append(b, 0xFF, 0x00)
			}
		}
		pad := r.IntN(70000)
		for range pad {
			b = append(b, byte(r.IntN(255)))
		}
		for range 1 + r.IntN(8) {
			b = append(b, tok(r)...)
		}
		switch r.IntN(4) {
		case 0:
			b = append(b, 0xFF, 0xD9)
		case 1:
			b = append(b, 0xFF, 0xD9, 0x00)
		case 2:
			b = append(b, 0xFF)
		}
		add(fmt.Sprintf("jpeg scan %d (%d bytes)", k, len(b)), b)
	}
	// Fill runs ending exactly at, one before and one after each window
	// edge (4 KiB, 8, 16, 32, 64 KiB from where the windows start).
	for _, windows := range []bool{false, true} {
		for _, edge := range []int{4096, 8192, 16384, 32768, 65536, 65536 + 4096, 2 * 65536} {
			for _, d := range []int{-3, -2, -1, 0, 1, 2} {
				for _, after := range []byte{0x00, 0xD5, 0xD9, 0xDA, 0xFF} {
					b := append([]byte{}, head...)
					if windows {
						for range 16384 {
							b = append(b, 0xFF, 0x00)
						}
						b = append(b, 0x01) // the windows start at this byte
					}
					start := len(b)
					for len(b) < start+edge+d-2 {
						b = append(b, 0x11)
					}
					b = append(b, 0xFF, 0xFF, 0xFF, 0xFF, after, 0x22, 0xFF, 0xD9)
					add(fmt.Sprintf("jpeg edge %d%+d windows %v then %x", edge, d, windows, after), b)
				}
			}
		}
	}

	// PNG keywords.
	p := f10Seed("png clean")
	pngChunk := func(typ string, data []byte) []byte {
		out := binary.BigEndian.AppendUint32(nil, uint32(len(data)))
		out = append(out, typ...)
		out = append(out, data...)
		return binary.BigEndian.AppendUint32(out, 0)
	}
	for _, typ := range []string{"tEXt", "iTXt", "zTXt", "TEXT", "eXIf", "exIf"} {
		for _, kw := range []string{"XML:com.adobe.xmp", "XML:com.adobe.xm", "XML:com.adobe.xmpp", "xml:com.adobe.xmp", "raw profile type", "Raw profile typ", "RAW PROFILE TYPE", "raw profile type8bim", "raw profile\x00type", "raw profile typ\x00", "\x00raw profile type", "raw profile type\xe9", "raw\xa0profile type", "raw profile tYpe ", "Raw_profile_type", "raw profile type\x00"} {
			for _, rest := range []string{"", "\x00", "\x00x", "x"} {
				add(fmt.Sprintf("png %s %q %q", typ, kw, rest), append(append(append([]byte{}, p[:33]...), pngChunk(typ, []byte(kw+rest))...), p[33:]...))
			}
		}
	}

	// WebP: RIFF sizes, odd chunks and pads, VP8X flags.
	riff := func(size uint32, body []byte) []byte {
		return append(append(append([]byte("RIFF"), binary.LittleEndian.AppendUint32(nil, size)...), "WEBP"...), body...)
	}
	chunk := func(typ string, n uint32, data []byte) []byte {
		return append(append([]byte(typ), binary.LittleEndian.AppendUint32(nil, n)...), data...)
	}
	for _, body := range [][]byte{
		nil,
		chunk("VP8L", 5, []byte("abcde")),
		chunk("VP8L", 5, []byte("abcde\x00")),
		chunk("VP8L", 4, []byte("abcd")),
		chunk("VP8X", 0, nil),
		chunk("VP8X", 1, []byte{0x08}),
		chunk("VP8X", 1, []byte{0x08, 0}),
		chunk("VP8X", 1, []byte{0x10, 0}),
		chunk("VP8X", 10, make([]byte, 10)),
		chunk("EXIF", 0, nil),
		chunk("XMP ", 1, []byte("x")),
		chunk("exif", 0, nil),
		chunk("VP8L", 0xFFFFFFFF, nil),
		chunk("VP8L", 0xFFFFFFFE, nil),
		append(chunk("VP8L", 3, []byte("abc\x00")), chunk("EXIF", 1, []byte("x"))...),
		append(chunk("VP8L", 3, []byte("abc")), chunk("JUNK", 1, []byte("x"))...),
	} {
		for _, d := range []int{-9, -5, -4, -3, -2, -1, 0, 1, 2} {
			size := 4 + len(body) + d
			if size < 0 {
				size = 0
			}
			add(fmt.Sprintf("webp % x size %d", body, size), riff(uint32(size), body))
			add(fmt.Sprintf("webp % x size %d tail", body, size), append(riff(uint32(size), body), 0))
		}
	}

	// GIF: colour table flags, sub-block edges, application extensions.
	g := f10Seed("gif clean")
	for flags := 0; flags < 256; flags += 5 {
		h := append([]byte{}, g[:13]...)
		h[10] = byte(flags)
		for _, tail := range [][]byte{nil, {0x3B}, make([]byte, 3<<(flags&7+1)), append(make([]byte, 3<<(flags&7+1)), 0x3B), append(make([]byte, 3<<(flags&7+1)), 0x2C, 0, 0, 0, 0, 1, 0, 1, 0, 0x87, 2, 0, 0x3B)} {
			add(fmt.Sprintf("gif flags %x tail %d", flags, len(tail)), append(append([]byte{}, h...), tail...))
		}
	}
	at := 13 + 3<<(g[10]&7+1)
	for _, blk := range [][]byte{
		{0x21}, {0x21, 0xFF}, {0x21, 0xFF, 0}, {0x21, 0xFF, 11}, {0x21, 0xFF, 11, 'X', 'M', 'P', ' ', 'D', 'a', 't', 'a', 'X', 'M', 'P'},
		append([]byte{0x21, 0xFF, 11}, "XMP DataXMP\x00"...),
		append([]byte{0x21, 0xFF, 12}, "XMP DataXMPx\x00"...),
		append([]byte{0x21, 0xFF, 10}, "XMP DataXM\x00"...),
		append([]byte{0x21, 0xFE, 11}, "XMP DataXMP\x00"...),
		append([]byte{0x21, 0xFF, 11}, "MGKIPTC0000\x01x\x00"...),
		append([]byte{0x21, 0xFF, 11}, "MGK8BIM0000\x00"...),
		{0x2C, 0, 0, 0, 0, 1, 0, 1, 0, 0x80, 0, 0, 0, 0, 0, 0, 2, 0},
		{0x2C, 0, 0, 0, 0, 1, 0, 1, 0, 0x80, 0, 0, 0},
		{0x2C, 0, 0, 0, 0, 1, 0, 1, 0, 0x00},
		{0x00}, {0x3B, 0x3B},
	} {
		for _, where := range []int{at, len(g) - 1} {
			b := append(append(append([]byte{}, g[:where]...), blk...), g[where:]...)
			add(fmt.Sprintf("gif block % x at %d", blk, where), b)
			add(fmt.Sprintf("gif block % x at %d cut", blk, where), b[:where+len(blk)])
		}
	}
	return cs
}

// Attack (issue 16 F10): the database and StripLocation disagree on no
// photo of generators other than the table's own mutations.
func TestAttackF10_GeneratedPhotosAgree(t *testing.T) {
	env := pgtest.Need(t)
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	cases := f10Cases()
	wrong, refused := 0, 0
	// Batches of at most ~64 MiB.
	for lo := 0; lo < len(cases); {
		hi, size := lo, 0
		for hi < len(cases) && (hi == lo || size+len(cases[hi].bytes) < 64<<20) {
			size += len(cases[hi].bytes)
			hi++
		}
		photos := make([][]byte, hi-lo)
		for i := range photos {
			photos[i] = cases[lo+i].bytes
		}
		got := mediaLocation(t, conn, photos)
		for i, g := range got {
			c := cases[lo+i]
			if c.want {
				refused++
			}
			if g != c.want {
				wrong++
				if wrong <= 30 {
					t.Errorf("%s (%d bytes): database %v, StripLocation %v", c.name, len(c.bytes), g, c.want)
				}
			}
		}
		lo = hi
	}
	if wrong > 30 {
		t.Errorf("… %d disagreements in all", wrong)
	}
	t.Logf("%d photos, %d carrying location or not walkable", len(cases), refused)
}
