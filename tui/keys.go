package tui

import (
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// keyMap is THE key map: the issue documents exactly these keys and
// scripts rely on them, so no screen binds anything else. Field editing
// (typing a number or a reason after enter) is text input, not a binding.
type keyMap struct {
	Up, Down, Enter, Approve, Deny, Confirm, Back, Tab, Quit key.Binding
}

var keys = keyMap{
	// One help entry for both directions; the arrows say what they do,
	// which keeps all eight keys on one line at 80 columns.
	Up:      key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/↓ j/k", "")),
	Down:    key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↑/↓ j/k", "")),
	Enter:   key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "open")),
	Approve: key.NewBinding(key.WithKeys("a"), key.WithHelp("a", "approve")),
	Deny:    key.NewBinding(key.WithKeys("d"), key.WithHelp("d", "deny")),
	Confirm: key.NewBinding(key.WithKeys("y"), key.WithHelp("y", "confirm")),
	Back:    key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back")),
	Tab:     key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "tabs")),
	// ctrl+c is the terminal's universal way out; it is not advertised.
	Quit: key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),
}

// hints say what enter, a and d mean on a screen ("" = not available
// there). The help bar always lists all eight keys; only these three
// descriptions change, so the bar reads the same everywhere.
type hints struct {
	enter, approve, deny string
	confirm              bool
}

type helpItem struct {
	key, desc string
	off       bool
}

func helpItems(h hints) []helpItem {
	item := func(b key.Binding, desc string, on bool) helpItem {
		if !on || desc == "" {
			desc = b.Help().Desc
		}
		return helpItem{key: b.Help().Key, desc: desc, off: !on}
	}
	return []helpItem{
		item(keys.Up, "", true),
		item(keys.Enter, h.enter, h.enter != ""),
		item(keys.Approve, h.approve, h.approve != ""),
		item(keys.Deny, h.deny, h.deny != ""),
		item(keys.Confirm, "", h.confirm),
		item(keys.Back, "", true),
		item(keys.Tab, "", true),
		item(keys.Quit, "", true),
	}
}

// helpBar lays the items out in as many lines of width w as they need
// (never truncating: a key the seller cannot see is a key they cannot use).
func helpBar(st styles, h hints, w int) []string {
	var lines []string
	var cur strings.Builder
	curW := 0
	for _, it := range helpItems(h) {
		desc := st.desc.Render(it.desc)
		if it.off {
			desc = st.dim.Render(it.desc)
		}
		s := st.key.Render(it.key)
		if it.desc != "" {
			s += " " + desc
		}
		sw := ansi.StringWidth(s)
		if curW > 0 && curW+2+sw > w {
			lines = append(lines, cur.String())
			cur.Reset()
			curW = 0
		}
		if curW > 0 {
			cur.WriteString("  ")
			curW += 2
		}
		cur.WriteString(s)
		curW += sw
	}
	return append(lines, cur.String())
}

// is reports whether a key press matches a binding.
func is(k tea.KeyPressMsg, b key.Binding) bool { return key.Matches(k, b) }
