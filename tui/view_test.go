package tui

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/domain"
)

// screens builds a store with something on every tab and returns the
// model on each screen, in a fixed order, at 80×24.
func screens(t *testing.T) (*harness, []struct {
	name string
	m    Model
}) {
	h := newHarness(t)
	ctx := context.Background()
	if _, err := h.st.CreatePolicy(ctx, domain.Policy{
		Name: "Bind printed tags", TenantID: fixtures.DemoTenantID, CreatedBy: fixtures.DemoUserID,
		AllowedTools: []string{"trove_bind_item_identity"}, Scope: domain.PolicyScope{EstateSaleIDs: []string{fixtures.PublishedSaleID}},
		Conditions: domain.PolicyConditions{MaxItemsPerRun: 5, PermittedFields: []string{"qr_code"}}, Limits: domain.PolicyLimits{MaxDailyActions: 10},
	}); err != nil {
		t.Fatal(err)
	}
	done := h.proposePromotion()
	h.execute(execPromotion, done) // blocked: in the trail
	m := h.open(fixtures.DemoUserID)
	m = h.press(m, "a", "y")
	h.execute(execPromotion, done)
	it := readyItem(t)
	h.propose("trove_propose_item_publication", map[string]any{"item_id": it.ID, "expected_version": it.Version})
	m = h.tick(m, 2*time.Second)

	var out []struct {
		name string
		m    Model
	}
	add := func(name string, m Model) {
		out = append(out, struct {
			name string
			m    Model
		}{name, m})
	}
	add("queue", m)
	add("detail", h.press(m, "enter"))
	add("approve", h.press(m, "a"))
	add("deny", h.press(m, "d"))
	add("filters", h.press(m, "k", "enter"))
	grants := h.press(m, "tab")
	add("grants", grants)
	add("trail", h.press(grants, "enter", "enter"))
	add("revoke", h.press(grants, "j", "d")) // consumed: refused, with the reason
	add("policies", h.press(m, "tab", "tab"))
	add("clients", h.press(m, "tab", "tab", "tab"))
	return h, out
}

// Golden views at 80×24, without styling (`go test ./tui -update`
// rewrites them; a missing golden fails).
func TestView_Golden80x24(t *testing.T) {
	_, all := screens(t)
	for _, s := range all {
		t.Run(s.name, func(t *testing.T) {
			golden.RequireEqual(t, plain(s.m))
		})
	}
}

// Every screen renders at 40×10 and even 20×5 without panicking, never
// wider or taller than the terminal, and keeps the help bar; resizing
// follows the terminal.
func TestView_SmallTerminalsAndResize(t *testing.T) {
	h, all := screens(t)
	for _, s := range all {
		for _, size := range [][2]int{{40, 10}, {20, 5}, {1, 1}, {120, 40}} {
			m := h.update(s.m, tea.WindowSizeMsg{Width: size[0], Height: size[1]})
			lines := strings.Split(plain(m), "\n")
			if len(lines) > size[1] {
				t.Errorf("%s at %v: %d lines", s.name, size, len(lines))
			}
			for _, l := range lines {
				if w := ansi.StringWidth(l); w > size[0] {
					t.Errorf("%s at %v: line of %d cells: %q", s.name, size, w, l)
				}
			}
			if size[0] >= 40 && !strings.Contains(plain(m), "q quit") {
				t.Errorf("%s at %v: no help bar:\n%s", s.name, size, plain(m))
			}
			if size == [2]int{120, 40} && len(lines) != 40 {
				t.Errorf("%s at 120×40: %d lines", s.name, len(lines))
			}
		}
	}
	// At 40×10 the queue still shows a proposal and what a does.
	m := h.update(all[0].m, tea.WindowSizeMsg{Width: 40, Height: 10})
	mustContain(t, m, "publish_item ×1", "proposal_s0002 · high_impact", "a approve", "[Queue]")
	// and the approval form keeps its fields and its prompt.
	m = h.update(all[2].m, tea.WindowSizeMsg{Width: 40, Height: 10})
	mustContain(t, m, "▸ maximum items", "expires in (minutes)", "Approve proposal_s0002? y approves")
}

var sgr = regexp.MustCompile(`\x1b\[([0-9;:]*)m`)

// hasColour reports whether any SGR sequence sets a foreground or
// background colour (30–38, 40–48, 90–97, 100–107).
func hasColour(s string) bool {
	for _, m := range sgr.FindAllStringSubmatch(s, -1) {
		for _, p := range strings.FieldsFunc(m[1], func(r rune) bool { return r == ';' || r == ':' }) {
			if n, err := strconv.Atoi(p); err == nil && (n >= 30 && n <= 38 || n >= 40 && n <= 48 || n >= 90 && n <= 97 || n >= 100 && n <= 107) {
				return true
			}
		}
	}
	return false
}

// NO_COLOR: no colour escape at all, while the selection stays visible.
func TestView_NoColorHasNoColourButKeepsTheSelection(t *testing.T) {
	h := newHarness(t)
	h.proposePromotion()
	opts := h.options(fixtures.DemoUserID)
	for _, noColor := range []bool{false, true} {
		opts.NoColor = noColor
		m := New(context.Background(), opts)
		m = h.run(m, m.Init())
		v := m.View().Content
		if got := hasColour(v); got == noColor {
			t.Errorf("NoColor=%v: colour escapes present=%v", noColor, got)
		}
		if !strings.Contains(ansi.Strip(v), "▸ 1h00m") {
			t.Errorf("NoColor=%v: no selection marker:\n%s", noColor, ansi.Strip(v))
		}
	}
}

// teatest: the whole program, as Bubble Tea runs it, approves a proposal.
func TestTeatest_FullApproveFlow(t *testing.T) {
	h := newHarness(t)
	pid := h.proposePromotion()
	tm := teatest.NewTestModel(t, New(context.Background(), h.options(fixtures.DemoUserID)), teatest.WithInitialTermSize(80, 24))
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte(pid)) },
		teatest.WithDuration(5*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
	tm.Send(kp("enter"))
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte("Targets (1)")) },
		teatest.WithDuration(5*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
	tm.Send(kp("a"))
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte("Approve "+pid)) },
		teatest.WithDuration(5*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
	tm.Send(kp("y"))
	deadline := time.Now().Add(10 * time.Second)
	for len(h.grants(domain.GrantActive)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no grant after y")
		}
		time.Sleep(10 * time.Millisecond) // polling the store, not waiting for time
	}
	tm.Send(kp("q"))
	fm := tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second)).(Model)
	if !strings.Contains(fm.notice.Text, "approved "+pid) || fm.notice.Err {
		t.Fatalf("final notice %+v", fm.notice)
	}
	g := h.grants(domain.GrantActive)[0]
	if g.ProposalID != pid || g.IssuedBy.ActorID != fixtures.DemoUserID || g.IssuedBy.Type != domain.IssuerHuman {
		t.Fatalf("grant %+v", g)
	}
}
