package ingest

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/color"
	_ "image/gif" // decoders for the accepted types
	_ "image/jpeg"
	_ "image/png"
	"net/http"
	"runtime"
	"strings"
	"sync"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// Accepted image types and the file extension the server stores each under.
// WebP is accepted only when a decoder for it is linked into the binary
// (image.RegisterFormat): a photo is stored only after a real decode, and
// the standard library has no WebP decoder.
var photoTypes = map[string]string{"image/jpeg": "jpg", "image/png": "png", "image/gif": "gif", "image/webp": "webp"}

// decoderFormat is the image package's name of each accepted type.
var decoderFormat = map[string]string{"image/jpeg": "jpeg", "image/png": "png", "image/gif": "gif", "image/webp": "webp"}

// DecodeImageBase64 turns the image_base64 argument into bytes. A local path,
// a file: URL or any other URL is refused with the reason (the server never
// reads a client's files and never fetches URLs, §29.1); a base64 data: URL
// is accepted, and so is base64 wrapped over several lines.
func DecodeImageBase64(field, s string) ([]byte, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return nil, domain.Invalid(field, "empty: send the image bytes, base64-encoded")
	}
	if reason := ReferenceReason(t); reason != "" {
		return nil, domain.Invalid(field, reason)
	}
	if rest, ok := cutPrefixFold(t, "data:"); ok {
		meta, payload, found := strings.Cut(rest, ",")
		if !found || !strings.HasSuffix(strings.ToLower(meta), ";base64") {
			return nil, domain.Invalid(field, "a data: URL must carry base64 bytes (data:image/jpeg;base64,…)")
		}
		t = payload
	}
	if strings.ContainsAny(t, " \n\r\t") {
		t = strings.Map(func(r rune) rune {
			if r == ' ' || r == '\n' || r == '\r' || r == '\t' {
				return -1
			}
			return r
		}, t)
	}
	if base64.StdEncoding.DecodedLen(len(t)) > domain.MaxPhotoBytes+3 {
		return nil, domain.Invalid(field, fmt.Sprintf("the image is larger than %d bytes", domain.MaxPhotoBytes))
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(t); err == nil {
			return b, nil
		}
	}
	return nil, domain.Invalid(field, "not valid base64: send the image file's bytes base64-encoded")
}

var (
	windowsPath = domain.LazyRegexp(`^[A-Za-z]:[\\/]`)
	urlScheme   = domain.LazyRegexp(`^([A-Za-z][A-Za-z0-9+.\-]{1,15}):`)
	// Markers of share links and signed URLs that expire or need the
	// owner's session: they cannot become durable media (§29.2).
	expiringMarkers = []string{
		"x-amz-signature", "x-amz-expires", "x-amz-credential", "x-goog-signature", "x-goog-expires", "googleaccessid",
		"signature=", "expires=", "sig=", "se=", "token=", "access_token=",
		"drive.google.com", "docs.google.com", "photos.google.com", "photos.app.goo.gl", "googleusercontent.com",
		"lh3.google", "1drv.ms", "onedrive.live.com", "sharepoint.com", "dropbox.com", "dropboxusercontent.com",
		"icloud.com", "box.com/s/", "we.tl", "wetransfer.com",
	}
)

// ReferenceReason says why s is a reference to a file rather than the file's
// bytes — a client-local path, a file: URL, an expiring share link or any
// URL — or "" when it is not one.
func ReferenceReason(s string) string {
	t := strings.TrimSpace(s)
	send := " Send the image's bytes, base64-encoded, in image_base64."
	if m := urlScheme().FindStringSubmatch(t); m != nil && !windowsPath().MatchString(t) {
		scheme := strings.ToLower(m[1])
		switch scheme {
		case "data":
			return ""
		case "file":
			return "a file: URL names a file on your machine, which the server cannot and never will read." + send
		case "http", "https":
			lower := strings.ToLower(t)
			for _, mk := range expiringMarkers {
				if strings.Contains(lower, mk) {
					return "an expiring or private share link (Google Drive or Photos, OneDrive, Dropbox, iCloud or a signed storage URL) stops working and cannot become durable media; the server never fetches URLs." + send
				}
			}
			return "the server never fetches URLs: a link is not a durable asset." + send
		default:
			return fmt.Sprintf("a %s: reference is not readable by the server (it reads no client files and fetches nothing).", scheme) + send
		}
	}
	// Base64 may itself start with "/" (every JPEG's does: "/9j/"), so a
	// leading slash is a path only with a character base64 never holds or
	// a well-known root directory.
	switch {
	case strings.HasPrefix(t, "~"), strings.HasPrefix(t, "./"), strings.HasPrefix(t, "../"),
		strings.HasPrefix(t, `\\`), strings.HasPrefix(t, `.\`), windowsPath().MatchString(t),
		strings.HasPrefix(t, "/") && (!base64Chars(t) || hasUnixRoot(t)),
		strings.ContainsAny(t, `/\`) && looksLikeFileName(strings.ToLower(t[max(0, len(t)-8):])):
		return "a local file path is readable only on your machine; the server never reads client paths." + send
	}
	return ""
}

// base64Chars reports whether s holds only characters of the standard and
// URL-safe base64 alphabets, padding and white space. (A byte scan: a
// photo's base64 runs to megabytes.)
func base64Chars(s string) bool {
	for i := 0; i < len(s); i++ {
		if !base64Char[s[i]] {
			return false
		}
	}
	return true
}

// base64Char marks the bytes base64Chars allows.
var base64Char = func() (t [256]bool) {
	for _, c := range []byte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=-_ \n\r\t") {
		t[c] = true
	}
	return t
}()

func hasUnixRoot(s string) bool {
	for _, root := range []string{"/Users/", "/home/", "/tmp/", "/var/", "/private/", "/Volumes/", "/mnt/", "/media/", "/opt/", "/etc/", "/root/", "/sdcard/", "/storage/", "/data/"} {
		if strings.HasPrefix(s, root) {
			return true
		}
	}
	return false
}

func looksLikeFileName(lower string) bool {
	for _, ext := range []string{".jpg", ".jpeg", ".png", ".gif", ".webp", ".heic", ".heif", ".tif", ".tiff", ".bmp", ".raw", ".dng"} {
		if strings.HasSuffix(lower, ext) {
			return true
		}
	}
	return false
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return s, false
}

// CheckPhoto checks uploaded image bytes before anything is stored (§29.3):
// size; the type sniffed from the bytes (http.DetectContentType — never the
// client's claim, which must agree when given); the declared dimensions
// read by image.DecodeConfig and bounded BEFORE decoding, so a small file
// declaring a huge canvas (a decompression bomb) is refused without
// allocating it; then a full decode, so a file that only starts like an
// image is refused; finally its sha256. Location metadata is removed first
// (StripLocation): up.Bytes, Size and ContentHash are those of the stripped
// bytes, which may differ from data. field names the argument in errors.
func CheckPhoto(field string, data []byte, claimed string) (up domain.PhotoUpload, err error) {
	switch {
	case len(data) == 0:
		return up, domain.Invalid(field, "the image is empty (0 bytes)")
	case len(data) > domain.MaxPhotoBytes:
		return up, domain.Invalid(field, fmt.Sprintf("the image is larger than %d bytes", domain.MaxPhotoBytes))
	}
	sniffed, _, _ := strings.Cut(http.DetectContentType(data), ";")
	if isHEIF(data) {
		return up, domain.Invalid(field, "HEIC/HEIF photos are not accepted: export the photo as JPEG")
	}
	ext, ok := photoTypes[sniffed]
	if !ok {
		return up, domain.Invalid(field, fmt.Sprintf("the bytes are %s, not an accepted image (JPEG, PNG, GIF)", describeType(sniffed)))
	}
	if claimed != "" && !strings.EqualFold(claimed, sniffed) {
		return up, domain.Invalid("mime_type", fmt.Sprintf("mime_type says %s but the bytes are %s: the server goes by the bytes; send the right type or omit mime_type", domain.Truncate(domain.CleanLine(claimed), 40), sniffed))
	}
	// Location metadata goes before any other check, so every check, the
	// hash and the size describe the bytes that are stored. A container
	// that cannot be walked is checked as it came: the decoder refuses it
	// below, or the photo is refused at the end.
	stripped, stripErr := StripLocation(data)
	if stripErr == nil {
		data = stripped
	}
	cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
	switch {
	case errors.Is(err, image.ErrFormat):
		return up, domain.Invalid(field, fmt.Sprintf("this server has no decoder for %s, so it cannot check the image: send JPEG, PNG or GIF", sniffed))
	case err != nil:
		return up, domain.Invalid(field, fmt.Sprintf("the %s header is corrupt or truncated", sniffed))
	case format != decoderFormat[sniffed]:
		return up, domain.Invalid(field, fmt.Sprintf("the bytes start like %s but decode as %s", sniffed, format))
	case cfg.Width <= 0 || cfg.Height <= 0:
		return up, domain.Invalid(field, "the image declares no pixels")
	case cfg.Width > domain.MaxPhotoSide || cfg.Height > domain.MaxPhotoSide || int64(cfg.Width)*int64(cfg.Height) > domain.MaxPhotoPixels:
		return up, domain.Invalid(field, fmt.Sprintf("the image declares %d×%d pixels, over the limit of %d megapixels and %d pixels a side: refused before decoding",
			cfg.Width, cfg.Height, domain.MaxPhotoPixels/1_000_000, domain.MaxPhotoSide))
	}
	cost := photoDecodeCost(format, cfg, data)
	if cost > domain.MaxPhotoDecodeBytes {
		return up, domain.Invalid(field, fmt.Sprintf("the image (%d×%d, %s) would take %d MiB of memory to decode, over the limit of %d MiB: refused before decoding; send a smaller or 8-bit image",
			cfg.Width, cfg.Height, sniffed, (cost+1<<20-1)>>20, domain.MaxPhotoDecodeBytes>>20))
	}
	hash := domain.OriginalHash(data)
	if !decoded.has(hash) {
		if err := fullDecode(data, cost); err != nil {
			return up, domain.Invalid(field, fmt.Sprintf("the %s could not be decoded: the file is corrupt or truncated", sniffed))
		}
		decoded.add(hash)
	}
	if stripErr != nil {
		return up, domain.Invalid(field, fmt.Sprintf("the %s decodes, but its structure is malformed, so its location metadata could not be removed: re-save the photo and send it again", sniffed))
	}
	return domain.PhotoUpload{Bytes: data, MimeType: sniffed, Ext: ext, Width: cfg.Width, Height: cfg.Height, Size: len(data),
		ContentHash: hash}, nil
}

// decoded remembers the hashes of the last bytes a full decode accepted in
// this process, so the same bytes checked twice are decoded once: `media
// add --new-candidates` checks a photo before creating its candidate, then
// the attach checks it again, and a retried upload arrives again. The
// decoders are deterministic, so bytes of a remembered sha256 decode as
// before. Only hashes are kept, at most decodedMemoSize.
var decoded decodedMemo

const decodedMemoSize = 64

type decodedMemo struct {
	mu   sync.Mutex
	ring [decodedMemoSize]string
	next int
}

func (m *decodedMemo) has(hash string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, h := range m.ring {
		if h == hash {
			return true
		}
	}
	return false
}

func (m *decodedMemo) add(hash string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ring[m.next] = hash
	m.next = (m.next + 1) % decodedMemoSize
}

// decodeBudget bounds the memory of the full decodes running at once in
// the process by the bound of one (domain.MaxPhotoDecodeBytes): a decode
// near that bound runs alone, as before, while photos of ordinary size
// (a 6-megapixel JPEG costs about 9 MiB) decode side by side on several
// cores. Pipelined uploads must not multiply the bound (issue 13: three
// concurrent decodes peaked at 880 MB).
var decodeBudget = newByteBudget(domain.MaxPhotoDecodeBytes)

// byteBudget is a counting semaphore of bytes.
type byteBudget struct {
	mu   sync.Mutex
	cond *sync.Cond
	max  int64
	used int64
}

func newByteBudget(n int64) *byteBudget {
	b := &byteBudget{max: n}
	b.cond = sync.NewCond(&b.mu)
	return b
}

// acquire waits until n bytes fit (n is clamped to the whole budget, so
// one acquisition always fits in an idle budget).
func (b *byteBudget) acquire(n int64) int64 {
	n = max(1, min(n, b.max))
	b.mu.Lock()
	for b.used+n > b.max {
		b.cond.Wait()
	}
	b.used += n
	b.mu.Unlock()
	return n
}

func (b *byteBudget) release(n int64) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
	b.cond.Broadcast()
}

// fullDecode decodes the whole image within decodeBudget, holding cost (the
// decode's photoDecodeCost). The standard decoders have no bounded or
// streaming form, so the bound is photoDecodeCost, checked before. They
// return errors for bad input; recover is a last line so that no upload
// can crash a server.
func fullDecode(data []byte, cost int64) error {
	held := decodeBudget.acquire(cost)
	defer decodeBudget.release(held)
	err := decodeOnce(data)
	// The decoded image is garbage now. Collect it before the next decode
	// starts, so that decode reuses its memory instead of growing the heap
	// while the garbage collector lags (three pipelined decodes at the
	// budget otherwise peaked at ~101 MiB RSS, serialised or not).
	runtime.GC()
	return err
}

func decodeOnce(data []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("decoder panic: %v", r)
		}
	}()
	_, _, err = image.Decode(bytes.NewReader(data))
	return err
}

// pngGrayTransparent reports a grayscale PNG (colour type 0) with a tRNS
// chunk before its first IDAT.
func pngGrayTransparent(data []byte) bool {
	if len(data) < 33 || data[25] != 0 {
		return false
	}
	for i := 8; i+8 <= len(data); {
		n := uint64(binary.BigEndian.Uint32(data[i:]))
		switch string(data[i+4 : i+8]) {
		case "tRNS":
			return true
		case "IDAT", "IEND":
			return false
		}
		next := uint64(i) + 12 + n
		if next > uint64(len(data)) {
			return false
		}
		i = int(next)
	}
	return false
}

// bytesPerPixel is the size of one pixel of the image a decoder returns for
// a color model, as image.DecodeConfig reports it. Unknown models count as
// the largest standard form (8 bytes, 16-bit RGBA).
func bytesPerPixel(m color.Model) int64 {
	if _, ok := m.(color.Palette); ok {
		return 1
	}
	switch m {
	case color.GrayModel, color.AlphaModel:
		return 1
	case color.Gray16Model, color.Alpha16Model:
		return 2
	case color.YCbCrModel:
		return 3
	case color.RGBAModel, color.NRGBAModel, color.CMYKModel, color.NYCbCrAModel:
		return 4
	case color.RGBA64Model, color.NRGBA64Model:
		return 8
	}
	return 8
}

// photoDecodeCost estimates, from the header only, the bytes a full decode
// of the image allocates: the decoded image and the decoder's large
// working buffers. It errs on the high side.
//   - PNG: width × height × bytes per pixel; an interlaced PNG decodes each
//     pass into its own image before merging, so it counts twice. A
//     grayscale PNG with a tRNS chunk decodes into NRGBA (4 bytes a pixel,
//     8 at 16 bits), whatever DecodeConfig's model says.
//   - JPEG: the component planes the decoder allocates, from the frame
//     header's sampling factors (a 4:2:0 photo is 1.5 bytes a pixel); a
//     progressive JPEG also keeps every coefficient block (4 bytes a
//     sample); an RGB or CMYK JPEG is converted into a second, 4-byte
//     image. A frame header that cannot be read counts 15 bytes a pixel.
//   - GIF and anything else: width × height × bytes per pixel.
func photoDecodeCost(format string, cfg image.Config, data []byte) int64 {
	px := int64(cfg.Width) * int64(cfg.Height)
	base := px * bytesPerPixel(cfg.ColorModel)
	switch format {
	case "png":
		if pngGrayTransparent(data) {
			// image/png decodes a grayscale PNG with a tRNS chunk into
			// NRGBA (NRGBA64 at 16 bits), not the Gray DecodeConfig names.
			base = px * 4
			if cfg.ColorModel == color.Gray16Model {
				base = px * 8
			}
		}
		if len(data) > 28 && data[28] != 0 { // IHDR interlace method
			return 2 * base
		}
		return base
	case "jpeg":
		samples, progressive, ok := jpegPlanes(data)
		if !ok {
			return 15 * px
		}
		cost := samples
		if progressive {
			cost += 4 * samples
		}
		if cfg.ColorModel != color.YCbCrModel && cfg.ColorModel != color.GrayModel {
			cost += base
		}
		return cost
	}
	return base
}

// jpegPlanes reads a JPEG's frame header: the samples of every component
// plane as image/jpeg allocates them (whole MCUs) and whether the frame is
// progressive. ok is false when no frame header image/jpeg decodes is found.
func jpegPlanes(b []byte) (samples int64, progressive, ok bool) {
	i := 2 // after SOI
	for i+4 <= len(b) {
		if b[i] != 0xFF {
			return 0, false, false
		}
		m := b[i+1]
		switch {
		case m == 0xFF: // fill byte
			i++
			continue
		case m == 0x01 || m >= 0xD0 && m <= 0xD8: // no length
			i += 2
			continue
		case m == 0xDA || m == 0xD9: // scan or end before any frame
			return 0, false, false
		}
		n := int(b[i+2])<<8 | int(b[i+3])
		if n < 2 {
			return 0, false, false
		}
		if m == 0xC0 || m == 0xC1 || m == 0xC2 {
			seg := b[i+4 : min(len(b), i+2+n)]
			if len(seg) < 6 {
				return 0, false, false
			}
			h, w, nc := int64(seg[1])<<8|int64(seg[2]), int64(seg[3])<<8|int64(seg[4]), int(seg[5])
			if nc < 1 || len(seg) < 6+3*nc {
				return 0, false, false
			}
			var hmax, vmax int64 = 1, 1
			for c := range nc {
				f := seg[6+3*c+1]
				hmax, vmax = max(hmax, int64(f>>4)), max(vmax, int64(f&15))
			}
			mxx, myy := (w+8*hmax-1)/(8*hmax), (h+8*vmax-1)/(8*vmax)
			for c := range nc {
				f := seg[6+3*c+1]
				samples += mxx * int64(f>>4) * 8 * myy * int64(f&15) * 8
			}
			return samples, m == 0xC2, true
		}
		if m >= 0xC3 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC {
			return 0, false, false // a frame type image/jpeg does not decode
		}
		i += 2 + n
	}
	return 0, false, false
}

// isHEIF spots an ISO-BMFF file of the HEIF family (iPhone photos), which
// DetectContentType does not name.
func isHEIF(b []byte) bool {
	if len(b) < 12 || string(b[4:8]) != "ftyp" {
		return false
	}
	switch string(b[8:12]) {
	case "heic", "heix", "hevc", "hevx", "heim", "heis", "mif1", "msf1", "avif":
		return true
	}
	return false
}

func describeType(mt string) string {
	switch {
	case mt == "application/octet-stream":
		return "unrecognised binary data"
	case strings.HasPrefix(mt, "text/"):
		return "text (" + mt + ")"
	}
	return mt
}
