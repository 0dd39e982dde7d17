package ingest

import (
	"bytes"
	"encoding/binary"
	"errors"
)

// Location metadata (issue 16, spec §29.3 "EXIF location stripped"). A
// phone photo carries where it was taken: the seller's home, usually. Before
// a photo is hashed and stored, StripLocation removes what can hold it:
//
//   - JPEG: the GPS IFD of an Exif APP1 segment (the pointer to it is taken
//     out of its IFD and its bytes are zeroed; the rest of Exif, such as the
//     orientation, stays), and likewise the XMP, IPTC and Photoshop blocks
//     an Exif IFD can hold (tags 0x02BC, 0x83BB, 0x8649); an Exif segment that cannot be parsed safely is
//     dropped whole. Every other APP1 segment (XMP, standard and extended,
//     and what readers take for XMP or GPS records without its header), Photoshop
//     APP13 segments (IPTC and XMP inside, city and sublocation among them),
//     MPF APP2 indexes and GoPro APP6 segments (GPMF, a GPS track) are
//     dropped, and so is anything after the End Of
//     Image marker (the images an MPF index points to, or a motion photo's
//     video, each with metadata of its own).
//   - PNG: eXIf chunks (and "zxIf", in any ASCII case), XMP (iTXt
//     "XML:com.adobe.xmp", or a "tXMP" chunk) and the "Raw profile type …"
//     text chunks in which tools keep Exif, IPTC and XMP; anything after
//     IEND.
//   - WebP: the EXIF and "XMP " (or "XMP\0") chunks, with the VP8X flags
//     and the RIFF size
//     fixed; anything after the RIFF's declared end.
//
//   - GIF: the application extensions that carry XMP ("XMP DataXMP") and
//     IPTC ("MGK8BIM0000", "MGKIPTC0000", ImageMagick's); anything after
//     the trailer.
//
// The pixels are never touched. Other formats are returned unchanged.
//
// The database walks every photo it stores the same way (live migration
// media_location: trovesnap.media_location) and refuses one StripLocation
// would change or cannot walk, so a caller that skips this function stores
// no location either. The two are held to one table of photos
// (ingest/locationtest) by internal/live's
// TestMediaLocation_AgreesWithStripLocation: a change here needs the same
// change there.

// errMalformed is StripLocation's error for a container it cannot walk.
var errMalformed = errors.New("malformed image container")

// Bounds of a walk. A photo that needs more steps is none a camera or an
// editor writes (a JPEG has tens of markers outside its entropy-coded data;
// an 8 MiB GIF in full sub-blocks has 33k), and it is not walked: the
// database walks every photo again in plpgsql (media_location, which holds
// the same numbers), where a step costs microseconds, so an unbounded walk
// would let one request hold it for seconds.
const (
	maxJPEGMarkers = 4096  // markers read outside entropy-coded data
	maxChunks      = 65536 // PNG or WebP chunks; GIF blocks and sub-blocks
	// maxExifEntries bounds the IFDs and IFD entries read in all of a
	// JPEG's Exif segments, each IFD counting 1 and each entry 1 (a camera
	// writes a hundred or two): IFDs may overlap, so without it one 12 KiB
	// segment walks 16 IFDs of 1024 entries, and an 8 MiB photo ten
	// million. An Exif segment that would pass it is not walked: it is
	// dropped whole, like any Exif it cannot parse safely.
	maxExifEntries = 16384
)

// StripLocation returns data without its location metadata (see above). It
// returns data itself when there is nothing to remove, and a new slice
// otherwise; data is never modified. An error means the container could not
// be walked (a truncated or malformed file): the caller must not store such
// a file unless it also refuses to decode.
func StripLocation(data []byte) ([]byte, error) {
	switch {
	case len(data) >= 3 && data[0] == 0xFF && data[1] == 0xD8 && data[2] == 0xFF:
		return stripJPEG(data)
	case bytes.HasPrefix(data, []byte(pngSignature)):
		return stripPNG(data)
	case len(data) >= 12 && string(data[0:4]) == "RIFF" && string(data[8:12]) == "WEBP":
		return stripWebP(data)
	case len(data) >= 6 && (string(data[:6]) == "GIF87a" || string(data[:6]) == "GIF89a"):
		return stripGIF(data)
	}
	return data, nil
}

// span is a byte range of the input and what to put there instead: nil
// drops it.
type span struct {
	start, end int
	repl       []byte
}

// splice builds data with each span (in order, not overlapping) replaced,
// cut at end. With no span and end == len(data) it returns data itself.
func splice(data []byte, spans []span, end int) []byte {
	if len(spans) == 0 && end == len(data) {
		return data
	}
	n := end
	for _, s := range spans {
		n += len(s.repl) - (s.end - s.start)
	}
	out := make([]byte, 0, n)
	at := 0
	for _, s := range spans {
		out = append(out, data[at:s.start]...)
		out = append(out, s.repl...)
		at = s.end
	}
	return append(out, data[at:end]...)
}

// JPEG markers.
const (
	jpegSOS  = 0xDA
	jpegEOI  = 0xD9
	jpegRST0 = 0xD0
	jpegRST7 = 0xD7
	jpegAPP1 = 0xE1
	jpegAPP2 = 0xE2
	jpegAPP6 = 0xE6
	jpegAPPD = 0xED
)

var (
	exifHeader      = []byte("Exif\x00")
	xmpHeader       = []byte("http://ns.adobe.com/xap/1.0/\x00")
	photoshopHeader = []byte("Photoshop 3.0\x00")
	mpfHeader       = []byte("MPF\x00")
	goProHeader     = []byte("GoPro\x00")
)

// stripJPEG walks the JPEG's markers the way image/jpeg's decoder does
// (extraneous bytes and fill bytes skipped, a lone RST ignored, entropy-
// coded data passed over up to the next marker), so it sees every segment
// the decoder sees, and stops at EOI. A file that ends before EOI is
// malformed: image/jpeg refuses it too.
func stripJPEG(data []byte) ([]byte, error) {
	var spans []span
	i := 2
	entries := 0 // IFDs and IFD entries read so far (maxExifEntries)
	scan := -1   // where the entropy-coded data before this marker starts
	for steps := 1; ; steps++ {
		if steps > maxJPEGMarkers {
			return nil, errMalformed
		}
		// Find the next marker: extraneous bytes up to an 0xFF, "\xff\x00"
		// and fill bytes skipped, as image/jpeg does.
		for i < len(data) && data[i] != 0xFF {
			i++
		}
		if i+1 >= len(data) {
			return nil, errMalformed
		}
		start := i
		// A segment removed takes the fill bytes before it with it (in
		// entropy-coded data the walk's marker is the last 0xFF of a run):
		// an 0xFF left behind would join what follows the segment ("FF D9"
		// from a fill byte and an extraneous byte), and the output would
		// not be a fixed point of this walk.
		cut := start
		for scan >= 0 && cut > scan && data[cut-1] == 0xFF {
			cut--
		}
		scan = -1
		m := data[i+1]
		i += 2
		if m == 0x00 {
			continue
		}
		for m == 0xFF {
			if i >= len(data) {
				return nil, errMalformed
			}
			m = data[i]
			i++
		}
		if m == jpegEOI {
			return splice(data, spans, i), nil
		}
		if m >= jpegRST0 && m <= jpegRST7 {
			continue
		}
		if i+2 > len(data) {
			return nil, errMalformed
		}
		n := int(data[i])<<8 | int(data[i+1])
		if n < 2 || i+n > len(data) {
			return nil, errMalformed
		}
		payload := data[i+2 : i+n]
		end := i + n
		i = end
		switch {
		case m == jpegAPP1 && exifHeaderAt(payload) >= 0:
			if repl, changed := stripExifSegment(data[start:end], len(data[start:end])-len(payload)+exifHeaderAt(payload), &entries); changed && repl != nil {
				spans = append(spans, span{start, end, repl})
			} else if changed {
				spans = append(spans, span{cut, end, nil})
			}
		case m == jpegAPP1:
			// Any other APP1: XMP, and what ExifTool also reads as XMP (a
			// payload that starts "http" or holds "<exif:"), FLIR's or
			// Parrot's records with GPS, ...: none holds pixels.
			spans = append(spans, span{cut, end, nil})
		case m == jpegAPPD && bytes.HasPrefix(payload, photoshopHeader),
			m == jpegAPP2 && bytes.HasPrefix(payload, mpfHeader),
			m == jpegAPP6 && bytes.HasPrefix(payload, goProHeader):
			spans = append(spans, span{cut, end, nil})
		case m == jpegSOS:
			scan = i
			i = skipEntropyData(data, i)
		}
	}
}

// exifHeaderAt is where an APP1 payload's Exif header starts, or -1: as
// ExifTool finds it, "Exif\0" in any case after at most 4 other bytes
// (Kodak's header without its second NUL, a doubled header).
func exifHeaderAt(payload []byte) int {
	for k := 0; k <= 4 && k+len(exifHeader) <= len(payload); k++ {
		if bytes.EqualFold(payload[k:k+len(exifHeader)], exifHeader) {
			return k
		}
	}
	return -1
}

// skipEntropyData returns the index of the marker that ends the entropy-
// coded data starting at i ("\xff\x00" is a stuffed byte, RST markers stay
// inside the data), or len(data).
func skipEntropyData(data []byte, i int) int {
	for {
		j := bytes.IndexByte(data[i:], 0xFF)
		if j < 0 {
			return len(data)
		}
		j += i
		if j+1 >= len(data) {
			return j
		}
		switch c := data[j+1]; {
		case c == 0x00 || c >= jpegRST0 && c <= jpegRST7:
			i = j + 2
		case c == 0xFF:
			i = j + 1
		default:
			return j
		}
	}
}

// stripExifSegment takes out the GPS IFD of an Exif APP1 segment (seg,
// marker included; its TIFF data starts at hdr+6). It returns the new
// segment, of the same length, and whether anything changed; a segment that
// cannot be parsed safely is dropped whole (nil, true). entries counts the
// IFDs and IFD entries read (maxExifEntries).
func stripExifSegment(seg []byte, hdr int, entries *int) ([]byte, bool) {
	if len(seg) < hdr+6 {
		return nil, true
	}
	out := bytes.Clone(seg)
	changed, ok := stripTIFFLocation(out[hdr+6:], entries)
	switch {
	case !ok:
		return nil, true
	case !changed:
		return nil, false
	}
	return out, true
}

// Exif tags that point to IFDs.
const (
	tagExifIFD    = 0x8769
	tagGPSIFD     = 0x8825
	tagInteropIFD = 0xA005
	maxIFDs       = 16
	maxIFDEntries = 1024
)

// Exif tags whose value is a whole metadata block of its own, which
// readers (ExifTool among them) parse for location as they would the
// block in its usual place: XMP (XMLPacket), IPTC-NAA and Photoshop's
// image resources (IPTC inside). They go with the GPS IFD.
const (
	tagXMLPacket = 0x02BC
	tagIPTCNAA   = 0x83BB
	tagPhotoshop = 0x8649
)

// locationTag reports an IFD entry stripTIFFLocation removes.
func locationTag(tag uint16) bool {
	return tag == tagGPSIFD || tag == tagXMLPacket || tag == tagIPTCNAA || tag == tagPhotoshop
}

// tiffTypeSize is the size of one value of each TIFF field type.
var tiffTypeSize = map[uint16]int{1: 1, 2: 1, 3: 2, 4: 4, 5: 8, 6: 1, 7: 1, 8: 2, 9: 4, 10: 8, 11: 4, 12: 8, 13: 4}

// stripTIFFLocation removes, in place, every GPS IFD pointer of the TIFF
// structure t (IFD0, the IFDs chained after it, the Exif and interoperability
// IFDs) and zeroes the GPS IFDs they pointed to with their values; and
// removes the entries holding XMP, IPTC or Photoshop blocks (locationTag),
// zeroing their values. Nothing
// moves, so every other offset stays valid. ok is false when the structure
// is not one it can change safely: out of bounds, or IFDs and GPS values
// that overlap (a change to one would change another), or IFDs that
// would take *entries, the count of IFDs and entries read, past
// maxExifEntries.
func stripTIFFLocation(t []byte, entries *int) (changed, ok bool) {
	if len(t) < 8 {
		return false, false
	}
	var bo binary.ByteOrder
	switch string(t[:4]) {
	case "II*\x00":
		bo = binary.LittleEndian
	case "MM\x00*":
		bo = binary.BigEndian
	default:
		return false, false
	}
	// Read every IFD first, change nothing until all are known.
	type ifd struct{ off, n int }
	var ifds []ifd
	// The header (byte order, IFD0's offset) is kept like the IFDs: a
	// value zeroed over it would leave a segment that cannot be parsed, so
	// the output would not be a fixed point (StripLocation would drop it
	// next time, and the database refuses what StripLocation changes).
	regions := [][2]int{{0, 8}}
	changedBlock := false
	var gps []uint32
	var zero [][2]int
	queue := []uint32{bo.Uint32(t[4:])}
	seen := map[uint32]bool{}
	for len(queue) > 0 {
		off := queue[0]
		queue = queue[1:]
		if off == 0 || seen[off] {
			continue
		}
		if len(seen) == maxIFDs {
			return false, false
		}
		seen[off] = true
		o, n, ok := readIFD(t, bo, off)
		if !ok || *entries+1+n > maxExifEntries {
			return false, false
		}
		*entries += 1 + n
		ifds = append(ifds, ifd{o, n})
		regions = append(regions, [2]int{o, o + 2 + 12*n + 4})
		for e := range n {
			ent := t[o+2+12*e:]
			switch bo.Uint16(ent) {
			case tagGPSIFD:
				gps = append(gps, bo.Uint32(ent[8:]))
			case tagXMLPacket, tagIPTCNAA, tagPhotoshop:
				// The block's bytes, when out of line, are zeroed too.
				r, ok := valueRange(t, bo, ent)
				if !ok {
					return false, false
				}
				if r[1] > r[0] {
					zero = append(zero, r)
				}
				changedBlock = true
			case tagExifIFD, tagInteropIFD:
				queue = append(queue, bo.Uint32(ent[8:]))
			}
		}
		queue = append(queue, bo.Uint32(t[o+2+12*n:]))
	}
	if len(gps) == 0 && !changedBlock {
		return false, true
	}
	// The GPS IFDs and their values, to be zeroed: none may touch an IFD
	// that stays.
	for _, off := range gps {
		r, ok := gpsRanges(t, bo, off)
		if !ok {
			return false, false
		}
		zero = append(zero, r...)
	}
	for i, a := range regions {
		for _, b := range regions[i+1:] {
			if a[0] < b[1] && b[0] < a[1] {
				return false, false
			}
		}
		for _, z := range zero {
			if a[0] < z[1] && z[0] < a[1] {
				return false, false
			}
		}
	}
	// Rewrite each IFD that points to GPS without that entry: the count,
	// the entries kept (still in tag order), the next-IFD offset, zeros
	// where the removed entries were.
	for _, d := range ifds {
		kept := make([]byte, 0, 12*d.n)
		for e := range d.n {
			ent := t[d.off+2+12*e : d.off+2+12*e+12]
			if !locationTag(bo.Uint16(ent)) {
				kept = append(kept, ent...)
			}
		}
		if len(kept) == 12*d.n {
			continue
		}
		next := bo.Uint32(t[d.off+2+12*d.n:])
		region := t[d.off : d.off+2+12*d.n+4]
		clear(region)
		bo.PutUint16(region, uint16(len(kept)/12))
		copy(region[2:], kept)
		bo.PutUint32(region[2+len(kept):], next)
	}
	for _, z := range zero {
		clear(t[z[0]:z[1]])
	}
	return true, true
}

// readIFD bounds the IFD at off: its start and entry count.
func readIFD(t []byte, bo binary.ByteOrder, off uint32) (o, n int, ok bool) {
	if off < 8 || uint64(off)+2 > uint64(len(t)) {
		return 0, 0, false
	}
	o = int(off)
	n = int(bo.Uint16(t[o:]))
	if n > maxIFDEntries || o+2+12*n+4 > len(t) {
		return 0, 0, false
	}
	return o, n, true
}

// valueRange is the byte range of an IFD entry's value stored out of line
// (empty when it fits in the entry); ok is false when its type is unknown
// or it is out of bounds.
func valueRange(t []byte, bo binary.ByteOrder, ent []byte) (r [2]int, ok bool) {
	size, known := tiffTypeSize[bo.Uint16(ent[2:])]
	if !known {
		return r, false
	}
	total := uint64(size) * uint64(bo.Uint32(ent[4:]))
	if total <= 4 {
		return r, true
	}
	at := uint64(bo.Uint32(ent[8:]))
	if at+total > uint64(len(t)) {
		return r, false
	}
	return [2]int{int(at), int(at + total)}, true
}

// gpsRanges lists the byte ranges of the GPS IFD at off: the IFD and every
// value stored out of line. ok is false when any is out of bounds.
func gpsRanges(t []byte, bo binary.ByteOrder, off uint32) (r [][2]int, ok bool) {
	o, n, ok := readIFD(t, bo, off)
	if !ok {
		return nil, false
	}
	r = append(r, [2]int{o, o + 2 + 12*n + 4})
	for e := range n {
		ent := t[o+2+12*e : o+2+12*e+12]
		size, known := tiffTypeSize[bo.Uint16(ent[2:])]
		if !known {
			return nil, false
		}
		total := uint64(size) * uint64(bo.Uint32(ent[4:]))
		if total <= 4 {
			continue
		}
		at := uint64(bo.Uint32(ent[8:]))
		if at+total > uint64(len(t)) {
			return nil, false
		}
		r = append(r, [2]int{int(at), int(at + total)})
	}
	return r, true
}

const pngSignature = "\x89PNG\r\n\x1a\n"

// stripPNG drops the chunks that can hold location and cuts after IEND. A
// file that ends before IEND is malformed: image/png refuses it too.
func stripPNG(data []byte) ([]byte, error) {
	var spans []span
	i := len(pngSignature)
	for steps := 1; ; steps++ {
		if steps > maxChunks || i+12 > len(data) {
			return nil, errMalformed
		}
		n := binary.BigEndian.Uint32(data[i:])
		if n > 0x7FFFFFFF || uint64(i)+12+uint64(n) > uint64(len(data)) {
			return nil, errMalformed
		}
		typ := string(data[i+4 : i+8])
		body := data[i+8 : i+8+int(n)]
		end := i + 12 + int(n)
		if locationChunk(typ, body) {
			spans = append(spans, span{i, end, nil})
		}
		i = end
		if typ == "IEND" {
			return splice(data, spans, i), nil
		}
	}
}

// locationChunk reports a PNG chunk that may hold location metadata:
// Exif (eXIf, and any ASCII case of "eXIf" or "zxIf", which ExifTool reads
// as Exif too), XMP (in a text chunk, or "tXMP", a 2001 draft's place
// ExifTool reads) and the raw profiles.
func locationChunk(typ string, body []byte) bool {
	if len(typ) == 4 && (hasPrefixFoldASCII([]byte(typ), "exif") || hasPrefixFoldASCII([]byte(typ), "zxif")) {
		return true
	}
	switch typ {
	case "tXMP":
		return true
	case "iTXt", "tEXt", "zTXt":
		kw, _, _ := bytes.Cut(body, []byte{0})
		return string(kw) == "XML:com.adobe.xmp" || hasPrefixFoldASCII(kw, "raw profile type")
	}
	return false
}

// hasPrefixFoldASCII reports whether b starts with the lower-case ASCII
// prefix, ASCII letters in any case. A PNG keyword is Latin-1: readers
// (ExifTool among them) fold only ASCII, and so does the database's check
// (media_location, held to this function).
func hasPrefixFoldASCII(b []byte, prefix string) bool {
	if len(b) < len(prefix) {
		return false
	}
	for i := range len(prefix) {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != prefix[i] {
			return false
		}
	}
	return true
}

// VP8X flags of the metadata chunks.
const (
	webpFlagEXIF = 0x08
	webpFlagXMP  = 0x04
)

// stripWebP drops the EXIF and "XMP " chunks of a WebP, clears their VP8X
// flags and fixes the RIFF size; anything after the RIFF's declared end is
// cut.
func stripWebP(data []byte) ([]byte, error) {
	riffEnd := uint64(binary.LittleEndian.Uint32(data[4:])) + 8
	if riffEnd > uint64(len(data)) || riffEnd < 12 {
		return nil, errMalformed
	}
	end := int(riffEnd)
	var spans []span
	vp8x := -1
	for i, steps := 12, 1; i < end; steps++ {
		if steps > maxChunks || i+8 > end {
			return nil, errMalformed
		}
		n := uint64(binary.LittleEndian.Uint32(data[i+4:]))
		next := uint64(i) + 8 + n + n&1
		if next > uint64(end) {
			// An odd last chunk may go without its pad byte.
			if next-1 != uint64(end) || n&1 == 0 {
				return nil, errMalformed
			}
			next = uint64(end)
		}
		switch string(data[i : i+4]) {
		case "EXIF", "XMP ", "XMP\x00": // (ExifTool reads XMP from "XMP\0", a writer's error)
			spans = append(spans, span{i, int(next), nil})
		case "VP8X":
			if n >= 1 && data[i+8]&(webpFlagEXIF|webpFlagXMP) != 0 {
				vp8x = i
			}
		}
		i = int(next)
	}
	if len(spans) == 0 && vp8x < 0 && end == len(data) {
		return data, nil
	}
	out := splice(data, spans, end)
	if &out[0] == &data[0] {
		out = bytes.Clone(out)
	}
	binary.LittleEndian.PutUint32(out[4:], uint32(len(out)-8))
	if vp8x >= 0 {
		at := vp8x
		for _, s := range spans {
			if s.start < vp8x {
				at -= s.end - s.start
			}
		}
		out[at+8] &^= webpFlagEXIF | webpFlagXMP
	}
	return out, nil
}

// gifLocationApps are the application extension identifiers (8 bytes of
// name and 3 of authentication code) whose data can hold location: XMP,
// and the Photoshop/IPTC profiles ImageMagick writes, in lower case: they
// are matched in any ASCII case, as ImageMagick reads them (LocaleNCompare).
var gifLocationApps = []string{"xmp dataxmp", "mgk8bim0000", "mgkiptc0000"}

// stripGIF drops the GIF application extensions that can hold location
// and cuts after the trailer. image/gif reads no further than the first
// image, so what follows it and cannot be walked (bytes that are no block,
// a block cut short, no trailer) is cut, and a trailer put in its place:
// no reader then finds metadata there. A file that cannot be walked up to
// its first image is malformed: image/gif refuses it too.
func stripGIF(data []byte) ([]byte, error) {
	if len(data) < 13 {
		return nil, errMalformed
	}
	i := 13
	if flags := data[10]; flags&0x80 != 0 {
		i += 3 << (flags&7 + 1)
	}
	// steps counts blocks and sub-blocks: past maxChunks the GIF is
	// malformed, wherever that is.
	steps := 0
	// subBlocks returns the end of the data sub-blocks starting at j.
	subBlocks := func(j int) (int, bool) {
		for {
			if steps++; j >= len(data) || steps > maxChunks {
				return 0, false
			}
			n := int(data[j])
			j++
			if n == 0 {
				return j, true
			}
			j += n
		}
	}
	var spans []span
	images := 0
	// unwalkable ends the walk at i: malformed before the first image,
	// else cut there with a trailer.
	unwalkable := func(i int) ([]byte, error) {
		if images == 0 || steps > maxChunks {
			return nil, errMalformed
		}
		out := bytes.Clone(splice(data, spans, i))
		return append(out, 0x3B), nil
	}
	for {
		if steps++; i >= len(data) || steps > maxChunks {
			return unwalkable(i)
		}
		switch data[i] {
		case 0x3B: // trailer
			return splice(data, spans, i+1), nil
		case 0x21: // extension: label, then sub-blocks
			if i+2 > len(data) {
				return unwalkable(i)
			}
			end, ok := subBlocks(i + 2)
			if !ok {
				return unwalkable(i)
			}
			if data[i+1] == 0xFF && i+3+11 <= len(data) && data[i+2] == 11 {
				id := data[i+3 : i+3+11]
				for _, app := range gifLocationApps {
					if hasPrefixFoldASCII(id, app) {
						spans = append(spans, span{i, end, nil})
					}
				}
			}
			i = end
		case 0x2C: // image: descriptor, local colour table, LZW code size, sub-blocks
			if i+10 > len(data) {
				return unwalkable(i)
			}
			j := i + 10
			if flags := data[i+9]; flags&0x80 != 0 {
				j += 3 << (flags&7 + 1)
			}
			end, ok := subBlocks(j + 1)
			if !ok {
				return unwalkable(i)
			}
			i = end
			images++
		default:
			return unwalkable(i)
		}
	}
}
