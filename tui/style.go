package tui

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// styles are the few looks the terminal uses. Without colour every one
// still differs by a decoration (bold, faint, reverse), and the selection
// and active tab also carry a marker character, so nothing depends on
// colour to be seen.
type styles struct {
	title, tabOn, tabOff, sel, dim, warn, bad, good, key, desc lipgloss.Style
}

func newStyles(noColor bool) styles {
	b := lipgloss.NewStyle()
	if noColor {
		return styles{
			title: b.Bold(true), tabOn: b.Bold(true).Reverse(true), tabOff: b, sel: b.Bold(true),
			dim: b.Faint(true), warn: b.Bold(true), bad: b.Bold(true), good: b, key: b.Bold(true), desc: b,
		}
	}
	return styles{
		title: b.Bold(true).Foreground(lipgloss.Color("63")),
		tabOn: b.Bold(true).Reverse(true), tabOff: b.Foreground(lipgloss.Color("245")),
		sel:  b.Bold(true).Foreground(lipgloss.Color("212")),
		dim:  b.Faint(true),
		warn: b.Bold(true).Foreground(lipgloss.Color("214")),
		bad:  b.Bold(true).Foreground(lipgloss.Color("203")),
		good: b.Foreground(lipgloss.Color("78")),
		key:  b.Bold(true).Foreground(lipgloss.Color("111")),
		desc: b.Foreground(lipgloss.Color("250")),
	}
}

// fit cuts a (possibly styled) line to w cells.
func fit(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if ansi.StringWidth(s) <= w {
		return s
	}
	return ansi.Truncate(s, w, "…")
}

// left formats the time until t for a countdown: 59m58s, 2h05m, expired.
func left(now, t time.Time) string {
	d := t.Sub(now)
	switch {
	case d <= 0:
		return "expired"
	case d < time.Hour:
		s := int(d.Round(time.Second) / time.Second)
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	default:
		m := int(d.Round(time.Minute) / time.Minute)
		return fmt.Sprintf("%dh%02dm", m/60, m%60)
	}
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") }

// value renders a change's before/after value exactly (JSON), so a string
// "8" and a number 8 look different.
func value(v any) string {
	if v == nil {
		return "∅"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// safe is text from a proposal's body as the detail prints it: a string
// with control or invisible characters (a live proposal's body is its
// client's to write, within what the database checks) is shown Go-quoted,
// so no terminal control sequence reaches the seller's screen.
func safe(s string) string {
	if domain.TextChanged(s, true) {
		return strconv.Quote(s)
	}
	return s
}

func shortHash(h string) string {
	if p, ok := strings.CutPrefix(h, "sha256:"); ok && len(p) > 12 {
		return "sha256:" + p[:12] + "…"
	}
	return h
}

// toolShort drops the common "trove_" prefix where space is tight.
func toolShort(name string) string { return strings.TrimPrefix(name, "trove_") }

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
