package domain

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Imported text is data (spec §28): CSV cells, notes, titles, captions. Before
// it is stored or returned it is normalised so that nothing hidden rides
// along with it — no control characters a terminal or spreadsheet would act
// on, no invisible or bidirectional formatting that makes a reader (human or
// model) see something other than what is stored — and it is bounded. The
// original bytes are kept only as a hash (OriginalHash), so a reviewer can
// prove what arrived without the store keeping the payload that carried it.
//
// Both the catalog (before a Backend call) and the store (inside it) apply
// these functions; they are idempotent, so doing both is harmless and a
// second Backend implementation cannot forget them.

// maxCombiningRun bounds consecutive combining marks after one base
// character: real scripts need a few, "Zalgo" text stacks hundreds to
// overflow a reviewer's screen.
const maxCombiningRun = 4

// CleanText normalises multi-line imported text: invalid UTF-8 becomes
// U+FFFD; CR LF and lone CR become LF; LINE/PARAGRAPH SEPARATOR become LF;
// NUL and every other control character except LF and TAB are removed, as
// are invisible and bidirectional format characters (Unicode Cf: zero-width
// spaces and joiners, LRO/RLO/LRI/PDI …, the tag block), private-use code
// points, noncharacters and variation selectors; runs of combining marks are
// bounded; surrounding white space is trimmed.
func CleanText(s string) string { return clean(s, false) }

// CleanLine is CleanText for one-line fields (titles, labels, column names):
// line breaks and tabs become single spaces and runs of spaces collapse.
func CleanLine(s string) string { return clean(s, true) }

// TextChanged reports whether CleanText (or CleanLine, when line is true)
// would change s: the caller can record that an import was normalised.
func TextChanged(s string, line bool) bool { return clean(s, line) != s }

// OriginalHash is "sha256:" + hex of the original bytes of imported content,
// before any normalisation.
func OriginalHash(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// RuneLen is the length a bound on text is measured in: code points, as the
// JSON schemas' maxLength counts them.
func RuneLen(s string) int { return utf8.RuneCountInString(s) }

// Truncate bounds s to max code points without splitting one.
func Truncate(s string, max int) string {
	if max <= 0 {
		return ""
	}
	n := 0
	for i := range s {
		if n == max {
			return s[:i]
		}
		n++
	}
	return s
}

func clean(s string, line bool) string {
	if isPlain(s, line) {
		return strings.TrimSpace(s)
	}
	var b strings.Builder
	b.Grow(len(s))
	marks := 0
	lastSpace := false
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if r == utf8.RuneError && size == 1 {
			r = unicode.ReplacementChar
		}
		switch {
		case r == '\r':
			if i < len(s) && s[i] == '\n' {
				continue // CR LF: the LF that follows is kept
			}
			r = '\n'
		case r == '\u2028' || r == '\u2029':
			r = '\n'
		}
		if r == '\n' || r == '\t' {
			if line {
				r = ' '
			}
		} else if dropRune(r) {
			continue
		}
		if unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Me, r) {
			marks++
			if marks > maxCombiningRun {
				continue
			}
		} else {
			marks = 0
		}
		if line && r == ' ' {
			if lastSpace {
				continue
			}
			lastSpace = true
		} else {
			lastSpace = false
		}
		b.WriteRune(r)
	}
	return strings.TrimSpace(b.String())
}

// isPlain is the fast path: printable ASCII (plus LF and TAB in multi-line
// text, and single spaces in one-line text) needs no change but trimming.
func isPlain(s string, line bool) bool {
	prevSpace := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 0x21 && c < 0x7f:
			prevSpace = false
		case c == ' ':
			if line && prevSpace {
				return false
			}
			prevSpace = true
		case (c == '\n' || c == '\t') && !line:
			prevSpace = false
		default:
			return false
		}
	}
	return true
}

// dropRune reports the code points imported text never keeps.
func dropRune(r rune) bool {
	switch {
	case unicode.IsControl(r): // C0, DEL, C1 (LF and TAB are handled by the caller)
		return true
	case unicode.Is(unicode.Cf, r): // zero-width, bidi controls, soft hyphen, BOM, tags
		return true
	case unicode.Is(unicode.Co, r): // private use
		return true
	case r >= 0xFE00 && r <= 0xFE0F, r >= 0xE0100 && r <= 0xE01EF: // variation selectors (used to smuggle bytes)
		return true
	case r >= 0xFDD0 && r <= 0xFDEF, r&0xFFFE == 0xFFFE: // noncharacters
		return true
	case r == '\u115F' || r == '\u1160' || r == '\u3164' || r == '\uFFA0' || r == '\u034F' || r == '\u180E':
		// Hangul fillers, the combining grapheme joiner and the Mongolian
		// vowel separator render as nothing but are not Cf.
		return true
	}
	return false
}

// LooksLikeFormula reports text a spreadsheet would evaluate when the cell is
// opened (CSV/formula injection): it starts with = + - @, or with a TAB or
// CR that some spreadsheets skip before one. Such text is kept as text and
// flagged; a file written for a spreadsheet must escape it.
func LooksLikeFormula(s string) bool {
	if s == "" {
		return false
	}
	switch s[0] {
	case '=', '+', '-', '@', '\t', '\r':
		return true
	}
	return false
}
