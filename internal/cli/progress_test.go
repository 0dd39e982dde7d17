package cli

import (
	"bytes"
	"strings"
	"testing"
)

// The bar draws on a terminal only; drawn, it rewrites one line and clears
// it at the end, so what follows on stderr starts clean.
func TestProgressBar_DrawsInPlaceAndClears(t *testing.T) {
	if newProgressBar(&bytes.Buffer{}) != nil {
		t.Fatal("a bar on a writer that is no terminal")
	}
	var nilBar *progressBar
	nilBar.set(1, 2, "photos") // a nil bar draws nothing and does not panic
	nilBar.done()

	var b bytes.Buffer
	p := newProgressBarOn(&b)
	p.set(0, 4, "photos")
	p.set(1, 4, "photos") // within the redraw interval: skipped
	p.set(4, 4, "photos") // the end is always drawn
	out := b.String()
	if strings.Count(out, "\r\x1b[2K") != 2 || !strings.Contains(out, "0/4 photos") || strings.Contains(out, "1/4") ||
		!strings.Contains(out, "4/4 photos") || !strings.Contains(out, "100%") || strings.Contains(out, "\n") {
		t.Fatalf("bar output %q", out)
	}
	p.done()
	if !strings.HasSuffix(b.String(), "\r\x1b[2K") {
		t.Fatal("the bar's line is not cleared at the end")
	}
}
