package ingest

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// domain.CleanText / CleanLine are the text rules every import path applies
// (they live in domain so the store applies them too); they are tested here
// beside their main user.
func TestCleanText_RemovesHiddenAndControlCharacters(t *testing.T) {
	cases := []struct{ in, text, line string }{
		{"plain title", "plain title", "plain title"},
		{"  padded \n", "padded", "padded"},
		{"two\r\nlines\rthree", "two\nlines\nthree", "two lines three"},
		{"nul\x00byte", "nulbyte", "nulbyte"},
		{"esc\x1b[2Jclear", "esc[2Jclear", "esc[2Jclear"},
		{"bell\a del\x7f c1\u0085", "bell del c1", "bell del c1"},
		{"zero\u200bwidth\u200c\u200d\u2060joiners\ufeff", "zerowidthjoiners", "zerowidthjoiners"},
		{"bidi \u202eevil\u202c \u2066iso\u2069 \u200e\u200f\u061c", "bidi evil iso", "bidi evil iso"},
		{"tags \U000E0041\U000E0042\U000E007F", "tags", "tags"},
		{"selector \ufe0f\U000E0100x", "selector x", "selector x"},
		{"private \ue000use", "private use", "private use"},
		{"soft\u00adhyphen", "softhyphen", "softhyphen"},
		{"hangul\u3164filler", "hangulfiller", "hangulfiller"},
		{"line\u2028sep\u2029para", "line\nsep\npara", "line sep para"},
		{"tab\tand  spaces", "tab\tand  spaces", "tab and spaces"},
		{"bad \xff\xfe utf8", "bad \uFFFD\uFFFD utf8", "bad \uFFFD\uFFFD utf8"},
		{"zalgo e\u0301\u0302\u0303\u0304\u0305\u0306\u0307", "zalgo e\u0301\u0302\u0303\u0304", "zalgo e\u0301\u0302\u0303\u0304"},
		{"café naïve 日本 ❤", "café naïve 日本 ❤", "café naïve 日本 ❤"},
	}
	for _, c := range cases {
		if got := domain.CleanText(c.in); got != c.text {
			t.Errorf("CleanText(%q) = %q, want %q", c.in, got, c.text)
		}
		if got := domain.CleanLine(c.in); got != c.line {
			t.Errorf("CleanLine(%q) = %q, want %q", c.in, got, c.line)
		}
		// Idempotent: the store re-applies it.
		if again := domain.CleanText(domain.CleanText(c.in)); again != domain.CleanText(c.in) {
			t.Errorf("CleanText not idempotent on %q", c.in)
		}
	}
}

func TestCleanText_OutputHasNoHiddenRunes(t *testing.T) {
	var b strings.Builder
	for r := rune(0); r < 0x30000; r++ {
		b.WriteRune(r)
	}
	b.WriteString("\U000E0001\U000E0020\U000E007F\U000F0000\U0010FFFD")
	out := domain.CleanText(b.String())
	for _, r := range out {
		if (unicode.IsControl(r) && r != '\n' && r != '\t') || unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Co, r) {
			t.Fatalf("CleanText kept %U", r)
		}
	}
	if !utf8.ValidString(out) {
		t.Fatal("invalid UTF-8 out")
	}
}

func TestTruncateAndLooksLikeFormula(t *testing.T) {
	if got := domain.Truncate("日本語テキスト", 3); got != "日本語" {
		t.Errorf("Truncate = %q", got)
	}
	for s, want := range map[string]bool{"=1+1": true, "+1 555": true, "-5": true, "@SUM(A1)": true, "\tx": true, "\rx": true,
		"ok": false, "": false, " =x": false, "a=b": false} {
		if domain.LooksLikeFormula(s) != want {
			t.Errorf("LooksLikeFormula(%q) != %v", s, want)
		}
	}
}
