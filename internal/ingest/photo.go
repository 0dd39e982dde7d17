package ingest

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"image"
	_ "image/gif" // decoders for the accepted types
	_ "image/jpeg"
	_ "image/png"
	"net/http"
	"regexp"
	"strings"

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
	t = strings.Map(func(r rune) rune {
		if r == ' ' || r == '\n' || r == '\r' || r == '\t' {
			return -1
		}
		return r
	}, t)
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
	windowsPath = regexp.MustCompile(`^[A-Za-z]:[\\/]`)
	urlScheme   = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.\-]{1,15}):`)
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
	if m := urlScheme.FindStringSubmatch(t); m != nil && !windowsPath.MatchString(t) {
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
		strings.HasPrefix(t, `\\`), strings.HasPrefix(t, `.\`), windowsPath.MatchString(t),
		strings.HasPrefix(t, "/") && (!base64Chars(t) || hasUnixRoot(t)),
		strings.ContainsAny(t, `/\`) && looksLikeFileName(strings.ToLower(t[max(0, len(t)-8):])):
		return "a local file path is readable only on your machine; the server never reads client paths." + send
	}
	return ""
}

// base64Chars reports whether s holds only characters of the standard and
// URL-safe base64 alphabets, padding and white space.
func base64Chars(s string) bool {
	for _, r := range s {
		if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || strings.ContainsRune("+/=-_ \n\r\t", r)) {
			return false
		}
	}
	return true
}

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
// image is refused; finally its sha256. field names the argument in errors.
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
	if err := fullDecode(data); err != nil {
		return up, domain.Invalid(field, fmt.Sprintf("the %s could not be decoded: the file is corrupt or truncated", sniffed))
	}
	return domain.PhotoUpload{Bytes: data, MimeType: sniffed, Ext: ext, Width: cfg.Width, Height: cfg.Height, Size: len(data),
		ContentHash: domain.OriginalHash(data)}, nil
}

// fullDecode decodes the whole image. The standard decoders return errors
// for bad input; recover is a last line so that no upload can crash a server.
func fullDecode(data []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("decoder panic: %v", r)
		}
	}()
	_, _, err = image.Decode(bytes.NewReader(data))
	return err
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
