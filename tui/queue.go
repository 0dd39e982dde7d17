package tui

import (
	"fmt"
	"slices"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// cursor is a list selection that follows its record, not its row: when a
// poll inserts a new proposal above it, the selection stays on the one the
// seller was looking at, so `a` never lands on a different proposal.
type cursor struct {
	id  string
	idx int
}

func (c cursor) resolve(ids []string) int {
	if len(ids) == 0 {
		return -1
	}
	if i := slices.Index(ids, c.id); c.id != "" && i >= 0 {
		return i
	}
	return min(max(c.idx, 0), len(ids)-1)
}

func (c cursor) move(ids []string, d int) cursor {
	i := c.resolve(ids)
	if i < 0 {
		return cursor{}
	}
	i = min(max(i+d, 0), len(ids)-1)
	return cursor{id: ids[i], idx: i}
}

func (c cursor) selected(ids []string) string {
	if i := c.resolve(ids); i >= 0 {
		return ids[i]
	}
	return ""
}

// window returns the rows [from, to) of a list of n rows, each per lines
// tall, that fit in h lines with row sel visible.
func window(n, sel, per, h int) (int, int) {
	vis := max(h/per, 1)
	from := 0
	if sel >= vis {
		from = sel - vis + 1
	}
	return from, min(n, from+vis)
}

// marker is the selection mark: a character, so the selection is visible
// without colour too.
func marker(st styles, on bool, s string) string {
	if on {
		return st.sel.Render("▸ " + s)
	}
	return "  " + s
}

// filters narrow the queue; "" is all.
type filters struct{ sale, tool, risk string }

func (f filters) any() bool { return f != filters{} }

var filterNames = []string{"sale", "tool", "risk"}

func (f filters) get(i int) string { return [...]string{f.sale, f.tool, f.risk}[i] }

func (f filters) set(i int, v string) filters {
	switch i {
	case 0:
		f.sale = v
	case 1:
		f.tool = v
	default:
		f.risk = v
	}
	return f
}

func (f filters) match(s *state, p domain.Proposal) bool {
	return (f.sale == "" || slices.Contains(p.SaleIDs, f.sale)) &&
		(f.tool == "" || p.Tool.Name == f.tool) &&
		(f.risk == "" || s.risk(p.Tool.Name) == f.risk)
}

// options are the values a filter cycles through: all, then the values
// the pending proposals actually have.
func options(s *state, dim int) []string {
	var vs []string
	for _, p := range s.proposals {
		switch dim {
		case 0:
			vs = append(vs, p.SaleIDs...)
		case 1:
			vs = append(vs, p.Tool.Name)
		default:
			vs = append(vs, s.risk(p.Tool.Name))
		}
	}
	slices.Sort(vs)
	return append([]string{""}, slices.Compact(vs)...)
}

// queueScreen lists the pending proposals of the tenant, newest first,
// with a filter line above them (↑ from the first row reaches it, enter
// opens its panel, enter there cycles a filter's value).
type queueScreen struct {
	cur      cursor
	onFilter bool
	panel    bool
	fcur     int
	f        filters
}

func (q queueScreen) visible(s *state) []domain.Proposal {
	var out []domain.Proposal
	for _, p := range s.proposals {
		if q.f.match(s, p) {
			out = append(out, p)
		}
	}
	return out
}

func ids[T any](xs []T, id func(T) string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = id(x)
	}
	return out
}

func proposalID(p domain.Proposal) string { return p.ID }

func (q queueScreen) key(k tea.KeyPressMsg, s *state) (screen, Action) {
	list := ids(q.visible(s), proposalID)
	switch {
	case q.panel:
		switch {
		case is(k, keys.Up):
			q.fcur = max(q.fcur-1, 0)
		case is(k, keys.Down):
			q.fcur = min(q.fcur+1, len(filterNames)-1)
		case is(k, keys.Enter):
			opts := options(s, q.fcur)
			i := slices.Index(opts, q.f.get(q.fcur)) // -1 (a value gone) cycles to all
			q.f = q.f.set(q.fcur, opts[(i+1)%len(opts)])
			q.cur = cursor{}
		case is(k, keys.Back):
			q.panel = false
		case is(k, keys.Approve), is(k, keys.Deny):
			return q, Notice{Text: "close the filters (esc) and choose a proposal first", Err: true}
		}
		return q, nil
	case q.onFilter:
		switch {
		case is(k, keys.Down):
			q.onFilter, q.cur = false, cursor{}.move(list, 0)
		case is(k, keys.Enter):
			q.panel = true
		case is(k, keys.Back):
			q.f = filters{}
		case is(k, keys.Approve), is(k, keys.Deny):
			return q, Notice{Text: "choose a proposal first (↓)", Err: true}
		}
		return q, nil
	}
	i := q.cur.resolve(list)
	switch {
	case is(k, keys.Up):
		if i <= 0 {
			q.onFilter = true
		} else {
			q.cur = q.cur.move(list, -1)
		}
	case is(k, keys.Down):
		q.cur = q.cur.move(list, 1)
	case is(k, keys.Back):
		q.f = filters{} // nothing to go back to at the top: esc clears the filters
	case i < 0 && (is(k, keys.Enter) || is(k, keys.Approve) || is(k, keys.Deny)):
		return q, Notice{Text: "no pending proposal here", Err: true}
	case is(k, keys.Enter):
		return q, OpenProposal{ID: list[i]}
	case is(k, keys.Approve):
		return q, StartApprove{ID: list[i]}
	case is(k, keys.Deny):
		return q, StartDeny{ID: list[i]}
	case is(k, keys.Confirm):
		return q, Notice{Text: "nothing to confirm: press a or d on a proposal first", Err: true}
	}
	return q, nil
}

func (q queueScreen) hints(s *state) hints {
	switch {
	case q.panel:
		return hints{enter: "cycle"}
	case q.onFilter:
		return hints{enter: "filters"}
	case len(q.visible(s)) == 0:
		return hints{}
	}
	decide := s.can(domain.PermApprovalGrant)
	h := hints{enter: "open"}
	if decide {
		h.approve, h.deny = "approve", "deny"
	}
	return h
}

func (queueScreen) editing() bool         { return false }
func (queueScreen) watch() (string, bool) { return "", false }

func (q queueScreen) view(s *state, w, h int) []string {
	st := s.st
	var out []string
	if q.panel {
		for i, n := range filterNames {
			v := q.f.get(i)
			if v == "" {
				v = "all"
			}
			line := fmt.Sprintf("%-5s %s", n, v)
			if i == q.fcur {
				out = append(out, marker(st, true, line)+st.dim.Render("   enter cycles · esc closes"))
			} else {
				out = append(out, marker(st, false, line))
			}
		}
	} else {
		out = append(out, marker(st, q.onFilter, q.filterLine(st)))
	}
	if !s.loaded {
		return append(out, "", "  loading…")
	}
	ps := q.visible(s)
	if len(ps) == 0 {
		if q.f.any() {
			return append(out, "", "  No pending proposal matches the filters (esc clears them).")
		}
		return append(out, "",
			"  No pending proposals.",
			st.dim.Render(fmt.Sprintf("  A proposal an agent makes appears here within %s.", s.poll)))
	}
	if w >= 60 {
		out = append(out, st.dim.Render("  left     risk              action × targets · id · tool · client (actor)"))
	}
	sel := -1
	if !q.onFilter && !q.panel {
		sel = q.cur.resolve(ids(ps, proposalID))
	}
	from, to := window(len(ps), max(sel, 0), 2, h-len(out))
	for i := from; i < to; i++ {
		p := ps[i]
		lt := left(s.now, p.ExpiresAt)
		if lt == "expired" {
			lt = st.bad.Render(fmt.Sprintf("%-7s", lt))
		} else {
			lt = fmt.Sprintf("%-7s", lt)
		}
		client := p.RequestedBy.ClientID
		if n := s.clientName(client); n != "" {
			client += " " + n
		}
		line1 := fmt.Sprintf("%s  %-16s  %s ×%d", lt, s.risk(p.Tool.Name), p.Action, len(p.TargetIDs))
		line2 := fmt.Sprintf("  %s · %s · %s (%s)", p.ID, toolShort(p.Tool.Name), client, p.RequestedBy.ActorID)
		if w < 60 { // narrow: what and how long first, the rest on the second line
			line1 = fmt.Sprintf("%s %s ×%d", lt, p.Action, len(p.TargetIDs))
			line2 = fmt.Sprintf("  %s · %s · %s", p.ID, s.risk(p.Tool.Name), client)
		}
		if len(p.SaleIDs) > 0 {
			line2 += " · " + strings.Join(p.SaleIDs, ",")
		}
		out = append(out, marker(st, i == sel, line1), st.dim.Render("  "+line2))
	}
	return out
}

func (q queueScreen) filterLine(st styles) string {
	parts := make([]string, len(filterNames))
	for i, n := range filterNames {
		v := q.f.get(i)
		if v == "" {
			v = "all"
		} else {
			v = st.warn.Render(v)
		}
		parts[i] = n + " " + v
	}
	return "filters: " + strings.Join(parts, " · ")
}
