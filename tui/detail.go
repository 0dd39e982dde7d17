package tui

import (
	"fmt"
	"slices"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// detailScreen shows one proposal with everything the seller needs to
// decide and nothing hidden: every target with its expected and current
// version, every change before → after, impact, warnings, hash, requester
// and requirement. It scrolls; enter opens the audit trail and full hash.
type detailScreen struct {
	id  string
	off int
}

func (d detailScreen) key(k tea.KeyPressMsg, s *state) (screen, Action) {
	switch {
	case is(k, keys.Up):
		d.off = max(d.off-1, 0)
	case is(k, keys.Down):
		d.off = min(d.off+1, max(len(d.lines(s))-s.bodyH, 0))
	case is(k, keys.Enter):
		return d, OpenTrail{ProposalID: d.id}
	case is(k, keys.Approve):
		if why := d.problem(s); why != "" {
			return d, Notice{Text: "cannot approve: " + why, Err: true}
		}
		return d, StartApprove{ID: d.id}
	case is(k, keys.Deny):
		return d, StartDeny{ID: d.id}
	case is(k, keys.Back):
		return d, Back{}
	case is(k, keys.Confirm):
		return d, Notice{Text: "nothing to confirm: press a or d first", Err: true}
	}
	return d, nil
}

func (d detailScreen) problem(s *state) string {
	r, ok := s.reviews[d.id]
	if !ok {
		return "still loading"
	}
	return problem(r, s.now)
}

func (d detailScreen) hints(s *state) hints {
	h := hints{enter: "trail"}
	if s.can(domain.PermApprovalGrant) && d.problem(s) == "" {
		h.approve, h.deny = "approve", "deny"
	}
	return h
}

func (detailScreen) editing() bool           { return false }
func (d detailScreen) watch() (string, bool) { return d.id, false }

func (d detailScreen) view(s *state, w, h int) []string {
	lines := d.lines(s)
	off := min(d.off, max(len(lines)-h, 0))
	lines = lines[off:]
	if off > 0 && len(lines) > 0 {
		lines[0] = s.st.dim.Render(fmt.Sprintf("  ↑ %d more", off))
	}
	if len(lines) > h && h > 1 {
		lines = append(lines[:h-1:h-1], s.st.dim.Render(fmt.Sprintf("  ↓ %d more (j/↓ scrolls)", len(lines)-h+1)))
	}
	return lines
}

// lines renders the proposal unwrapped, one fact per line, so its length
// does not depend on the width (scrolling stays stable on resize).
func (d detailScreen) lines(s *state) []string {
	st := s.st
	r, ok := s.reviews[d.id]
	switch {
	case !ok:
		return []string{"  loading " + d.id + "…"}
	case r.err != nil:
		return []string{st.bad.Render("  " + d.id + ": " + r.err.Error())}
	}
	p := r.Proposal
	var out []string
	add := func(f string, a ...any) { out = append(out, fmt.Sprintf(f, a...)) }
	status := p.Status
	if why := problem(r, s.now); why != "" && p.Status == domain.ProposalPending {
		out = append(out, st.bad.Render("✗ cannot be approved: "+why))
	} else if p.Status != domain.ProposalPending {
		out = append(out, st.warn.Render("● "+d.id+" is "+statusWord(status)))
	}
	out = append(out, st.title.Render(fmt.Sprintf("%s  %s  [%s]", p.ID, p.Action, status)))
	add("tool       %s v%s · risk %s", safe(p.Tool.Name), safe(p.Tool.Version), s.risk(p.Tool.Name))
	client := p.RequestedBy.ClientID
	if n := s.clientName(client); n != "" {
		client += " (" + n + ")"
	}
	add("requested  by %s for %s", client, p.RequestedBy.ActorID)
	add("created    %s", stamp(p.CreatedAt))
	add("expires    %s · %s left", stamp(p.ExpiresAt), left(s.now, p.ExpiresAt))
	add("approval   %s", requirement(p.Requirement))
	if hashHidden(s, p) {
		add("hash       %s   (enter: audit trail)", hashWithheld)
	} else {
		add("hash       %s   (enter: full hash and audit trail)", shortHash(p.Hash))
	}
	if len(p.SaleIDs) > 0 {
		add("sales      %s", strings.Join(p.SaleIDs, ", "))
	}

	out = append(out, "", st.title.Render(fmt.Sprintf("Targets (%d): expected → current version", len(p.TargetIDs))))
	expected := map[string]int{}
	for _, ev := range p.ExpectedVersions {
		expected[ev.ID] = ev.Version
	}
	for _, id := range p.TargetIDs {
		ev, has := expected[id]
		if !has {
			add("  %s  (no version bound)", id)
			continue
		}
		cur := r.CurrentVersions[id]
		line := fmt.Sprintf("  %-16s v%d → v%d", id, ev, cur)
		if slices.Contains(r.Stale, id) {
			line += "  " + st.bad.Render("STALE")
		}
		out = append(out, line)
	}

	out = append(out, "", st.title.Render(fmt.Sprintf("Changes (%d): before → after", len(p.Changes))))
	if len(p.Changes) == 0 {
		out = append(out, "  (no field changes)")
	}
	for _, c := range p.Changes {
		if !s.changeVisible(s.role, c.Field) {
			add("  %s %s: (hidden from your role, %s)", c.TargetID, c.Field, roleOrNone(s.role))
			continue
		}
		add("  %s %s: %s → %s", c.TargetID, c.Field, value(c.From), value(c.To))
	}

	i := p.Impact
	out = append(out, "", st.title.Render("Impact"))
	add("  canonical items created %d · items changed %d · public records changed %d", i.CanonicalItemsCreated, i.ItemsChanged, i.PublicRecordsChanged)
	add("  notifications %d · external deliveries %d · estimated cost $%.2f", i.NotificationsSent, i.ExternalDeliveries, i.EstimatedCostUSD)
	if n := p.Notification; n != nil {
		out = append(out, "", st.title.Render("Notification plan"))
		add("  audience %d · suppressed %d · channels %s · at most %d/hour", n.AudienceSize, n.SuppressedCount, safe(strings.Join(n.Channels, ",")), n.RateLimitPerHour)
		add("  selected by %s", safe(n.SelectionBasis))
		add("  preview: %q", n.MessagePreview)
	}

	v := p.Validation
	out = append(out, "", st.title.Render("Validation: "+v.Status))
	for _, w := range v.Warnings {
		out = append(out, st.warn.Render("  ! "+safe(w)))
	}
	for _, e := range v.Errors {
		out = append(out, st.bad.Render("  ✗ "+safe(e)))
	}
	if len(v.Warnings)+len(v.Errors) == 0 {
		out = append(out, "  no warnings")
	}
	return out
}

func requirement(r string) string {
	switch r {
	case domain.RequireExplicitHuman:
		return "a person must approve; no automation policy can (explicit_human)"
	case domain.RequireHumanOrPolicy:
		return "a person, or an enabled automation policy (human_or_policy)"
	}
	return r
}

// hashWithheld stands in for a proposal's hash where the viewer's role may
// not see one of its changes.
const hashWithheld = "hash withheld: a change is hidden from your role"

// hashHidden says whether the viewer's role may not see some change of p.
// Then its hash is not shown, short or full: it covers the hidden values,
// and a price (a small number) is found again by hashing guesses until one
// matches. Over MCP the proposal's hash is withheld in the same case
// (catalog's proposalView).
func hashHidden(s *state, p domain.Proposal) bool {
	for _, c := range p.Changes {
		if !s.changeVisible(s.role, c.Field) {
			return true
		}
	}
	return false
}
