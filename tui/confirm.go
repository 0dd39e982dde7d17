package tui

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/triunalabs/trovesnap/internal/approval"
	"github.com/triunalabs/trovesnap/internal/domain"
)

// approveScreen is the confirmation of an approval. It repeats what will
// happen, lets the seller tighten or loosen the grant within bounds, and
// returns Approve only on y. The hash it carries is the one the seller was
// shown: if the proposal changes meanwhile, the approval is refused.
type approveScreen struct {
	id, hash string
	c        domain.GrantConstraints
	minutes  int
	b        grantBounds
	cur      int
	edit     bool
	buf      string
	err      string
}

const (
	fieldItems = iota
	fieldCost
	fieldPublication
	fieldNotifications
	fieldExpiry
	fieldCount
)

func newApproveScreen(r reviewResult, now time.Time) approveScreen {
	b := boundsFor(r, now)
	return approveScreen{
		id: r.Proposal.ID, hash: r.Proposal.Hash, c: approval.DefaultConstraints(r.Proposal),
		minutes: min(int(approval.DefaultGrantTTL/time.Minute), b.maxMinutes), b: b,
	}
}

func (a approveScreen) editing() bool         { return a.edit }
func (a approveScreen) watch() (string, bool) { return a.id, false }

func (a approveScreen) key(k tea.KeyPressMsg, s *state) (screen, Action) {
	if a.edit {
		switch {
		case k.Code == tea.KeyEnter:
			a = a.commit()
		case k.Code == tea.KeyEscape:
			a.edit, a.buf, a.err = false, "", ""
		case k.Code == tea.KeyBackspace:
			if a.buf != "" {
				a.buf = a.buf[:len(a.buf)-1]
			}
		case len(k.Text) == 1 && (k.Text[0] >= '0' && k.Text[0] <= '9' || k.Text == "." && a.cur == fieldCost):
			if len(a.buf) < 10 {
				a.buf += k.Text
			}
		}
		return a, nil
	}
	a.err = ""
	switch {
	case is(k, keys.Up):
		a.cur = max(a.cur-1, 0)
	case is(k, keys.Down):
		a.cur = min(a.cur+1, fieldCount-1)
	case is(k, keys.Enter):
		switch a.cur {
		case fieldPublication:
			if a.c.AllowPublication && a.b.needPub {
				a.err = "needed: this proposal changes public records"
			} else {
				a.c.AllowPublication = !a.c.AllowPublication
			}
		case fieldNotifications:
			if a.c.AllowNotifications && a.b.needNotif {
				a.err = "needed: this proposal notifies buyers"
			} else {
				a.c.AllowNotifications = !a.c.AllowNotifications
			}
		default:
			a.edit, a.buf = true, ""
		}
	case is(k, keys.Confirm):
		r, ok := s.reviews[a.id]
		if ok {
			if why := problem(r, s.now); why != "" {
				return a, Notice{Text: "cannot approve: " + why, Err: true}
			}
			if r.Proposal.Hash != a.hash {
				return a, Notice{Text: "the proposal changed since you reviewed it: esc and review it again", Err: true}
			}
		}
		if err := approval.CoveredBy(r.Proposal, a.c); ok && err != nil {
			return a, Notice{Text: err.Error(), Err: true}
		}
		return a, Approve{ProposalID: a.id, Hash: a.hash, Constraints: a.c, TTL: time.Duration(a.minutes) * time.Minute}
	case is(k, keys.Approve):
		return a, Notice{Text: "press y to confirm the approval, esc to go back"}
	case is(k, keys.Back):
		return a, Back{}
	}
	return a, nil
}

// commit applies the typed value if it is within bounds; otherwise the
// field keeps its value and the bounds are shown.
func (a approveScreen) commit() approveScreen {
	a.edit = false
	buf := a.buf
	a.buf = ""
	if buf == "" {
		return a
	}
	switch a.cur {
	case fieldItems:
		n, err := strconv.Atoi(buf)
		if err != nil || n < a.b.minItems || n > a.b.maxItems {
			a.err = fmt.Sprintf("maximum items must be between %d (the proposal's targets) and %d (the tenant's bulk limit)", a.b.minItems, a.b.maxItems)
			return a
		}
		a.c.MaxItems = n
	case fieldCost:
		f, err := strconv.ParseFloat(buf, 64)
		if err != nil || f < a.b.minCost || f > a.b.maxCost {
			a.err = fmt.Sprintf("maximum cost must be between $%.2f (the proposal's estimate) and $%.2f (the daily paid budget)", a.b.minCost, a.b.maxCost)
			return a
		}
		a.c.MaxCostUSD = f
	case fieldExpiry:
		n, err := strconv.Atoi(buf)
		if err != nil || n < 1 || n > a.b.maxMinutes {
			a.err = fmt.Sprintf("expiry must be between 1 and %d minutes (a grant never outlives its proposal, nor %s)", a.b.maxMinutes, approval.MaxGrantTTL)
			return a
		}
		a.minutes = n
	}
	return a
}

func (a approveScreen) hints(*state) hints {
	if a.edit {
		return hints{enter: "set"}
	}
	switch a.cur {
	case fieldPublication, fieldNotifications:
		return hints{enter: "toggle", confirm: true}
	}
	return hints{enter: "edit", confirm: true}
}

func (a approveScreen) view(s *state, w, h int) []string {
	st := s.st
	r := s.reviews[a.id]
	p := r.Proposal
	head := []string{st.title.Render("Approve " + a.id + "?")}
	if why := problem(r, s.now); why != "" {
		head = append(head, st.bad.Render("✗ cannot be approved: "+why))
	}
	hash := p.Hash
	if hashHidden(s, p) {
		hash = hashWithheld
	}
	summary := []string{
		fmt.Sprintf("  %s runs %s on %s:", p.Tool.Name, p.Action, plural(len(p.TargetIDs), "target", "targets")),
		"  " + strings.Join(p.TargetIDs, ", "),
		fmt.Sprintf("  creates %d canonical items · changes %d items and %d public records",
			p.Impact.CanonicalItemsCreated, p.Impact.ItemsChanged, p.Impact.PublicRecordsChanged),
		fmt.Sprintf("  notifies %d buyers · %d external deliveries · costs $%.2f", p.Impact.NotificationsSent, p.Impact.ExternalDeliveries, p.Impact.EstimatedCostUSD),
		"  bound to exactly this proposal and to the agent that asked for it,",
		fmt.Sprintf("  %s acting for %s; the proposal's hash is", p.RequestedBy.ClientID, p.RequestedBy.ActorID),
		"  " + hash,
		"",
		st.title.Render("The grant (single use; only the agent's execution of this proposal can use it)"),
	}
	var form []string
	field := func(i int, label, v string) {
		if a.edit && a.cur == i {
			v = st.warn.Render("[" + a.buf + "▏]")
		}
		form = append(form, marker(st, a.cur == i, fmt.Sprintf("%-22s %s", label, v)))
	}
	onOff := func(b bool) string {
		if b {
			return "allowed"
		}
		return "not allowed"
	}
	field(fieldItems, "maximum items", fmt.Sprintf("%d   (%d–%d)", a.c.MaxItems, a.b.minItems, a.b.maxItems))
	field(fieldCost, "maximum cost", fmt.Sprintf("$%.2f   ($%.2f–$%.2f)", a.c.MaxCostUSD, a.b.minCost, a.b.maxCost))
	field(fieldPublication, "publication", onOff(a.c.AllowPublication))
	field(fieldNotifications, "buyer notifications", onOff(a.c.AllowNotifications))
	exp := s.now.Add(time.Duration(a.minutes) * time.Minute)
	if exp.After(p.ExpiresAt) {
		exp = p.ExpiresAt
	}
	field(fieldExpiry, "expires in (minutes)", fmt.Sprintf("%d   (1–%d) → %s", a.minutes, a.b.maxMinutes, stamp(exp)))
	tail := []string{""}
	if a.err != "" {
		tail = append(tail, st.bad.Render("  "+a.err))
	}
	tail = append(tail, st.warn.Render("  y approves as "+s.actor+" · esc goes back without approving"))
	// On a short terminal the form matters most: the summary gives way
	// first (the detail screen has all of it), then the prompt, which the
	// title takes over.
	room := h - len(head) - len(form)
	if room < len(tail) {
		head[0] = st.title.Render("Approve " + a.id + "? y approves, esc goes back")
		if a.err != "" {
			head[0] = st.bad.Render(a.err)
		}
		tail = nil
	}
	summary = summary[:min(max(room-len(tail), 0), len(summary))]
	return append(append(append(head, summary...), form...), tail...)
}

// denyScreen is the confirmation of a denial, with an optional reason
// (enter starts and ends typing it; it is recorded with the decision).
type denyScreen struct {
	id     string
	reason string
	edit   bool
}

const maxReason = 500

func (d denyScreen) editing() bool         { return d.edit }
func (d denyScreen) watch() (string, bool) { return d.id, false }

func (d denyScreen) key(k tea.KeyPressMsg, s *state) (screen, Action) {
	if d.edit {
		switch {
		case k.Code == tea.KeyEnter, k.Code == tea.KeyEscape:
			d.edit = false
		case k.Code == tea.KeyBackspace:
			if r := []rune(d.reason); len(r) > 0 {
				d.reason = string(r[:len(r)-1])
			}
		case k.Text != "":
			if len(d.reason)+len(k.Text) <= maxReason {
				d.reason += k.Text
			}
		}
		return d, nil
	}
	switch {
	case is(k, keys.Enter):
		d.edit = true
	case is(k, keys.Confirm):
		return d, Deny{ProposalID: d.id, Reason: strings.TrimSpace(d.reason)}
	case is(k, keys.Back):
		return d, Back{}
	case is(k, keys.Deny):
		return d, Notice{Text: "press y to confirm the denial, esc to go back"}
	}
	return d, nil
}

func (d denyScreen) hints(*state) hints {
	if d.edit {
		return hints{enter: "done"}
	}
	return hints{enter: "reason", confirm: true}
}

func (d denyScreen) view(s *state, w, h int) []string {
	st := s.st
	p, _ := s.proposal(d.id)
	reason := d.reason
	if d.edit {
		reason = st.warn.Render("[" + reason + "▏]")
	} else if reason == "" {
		reason = st.dim.Render("(none; enter to type one)")
	}
	return []string{
		st.title.Render("Deny " + d.id + "?"),
		fmt.Sprintf("  %s on %s, asked by %s for %s", p.Action, plural(len(p.TargetIDs), "target", "targets"), p.RequestedBy.ClientID, p.RequestedBy.ActorID),
		"  The proposal is rejected for good: the agent cannot execute it and must ask again.",
		"",
		marker(st, true, "reason: "+reason),
		"",
		st.warn.Render("  y denies as " + s.actor + " · esc goes back without denying"),
	}
}

// adminScreen confirms a change to a grant, a policy or a client. Where
// there is more than one way (disable or revoke a policy; suspend or
// revoke a client) the seller picks with ↑/↓ and confirms with y.
type adminScreen struct {
	kind    adminKind
	id      string
	choices []string
	cur     int
}

func (a adminScreen) editing() bool       { return false }
func (adminScreen) watch() (string, bool) { return "", false }

func (a adminScreen) key(k tea.KeyPressMsg, _ *state) (screen, Action) {
	switch {
	case is(k, keys.Up):
		a.cur = max(a.cur-1, 0)
	case is(k, keys.Down):
		a.cur = min(a.cur+1, len(a.choices)-1)
	case is(k, keys.Confirm):
		to := a.choices[a.cur]
		switch a.kind {
		case adminGrant:
			return a, RevokeGrant{GrantID: a.id}
		case adminPolicy:
			return a, SetPolicyStatus{PolicyID: a.id, Status: to}
		default:
			return a, SetClientStatus{ClientID: a.id, Status: to}
		}
	case is(k, keys.Back):
		return a, Back{}
	}
	return a, nil
}

func (adminScreen) hints(*state) hints { return hints{confirm: true} }

var choiceText = map[adminKind]map[string]string{
	adminGrant: {
		domain.GrantRevoked: "revoke: it can never authorise; the proposal is pending again",
	},
	adminPolicy: {
		domain.PolicyActive:   "enable: it may authorise matching proposals (a new version)",
		domain.PolicyDisabled: "disable: it stops authorising until enabled (a new version)",
		domain.PolicyRevoked:  "revoke: it can never authorise again (final)",
	},
	adminClient: {
		domain.ClientActive:    "reactivate: its credential works again",
		domain.ClientSuspended: "suspend: every call is refused until reactivated",
		domain.ClientRevoked:   "revoke: its credential is destroyed (final)",
	},
}

func (a adminScreen) view(s *state, w, h int) []string {
	st := s.st
	what := map[adminKind]string{adminGrant: "grant", adminPolicy: "policy", adminClient: "client"}[a.kind]
	out := []string{st.title.Render("Change " + what + " " + a.id + "?"), ""}
	for i, c := range a.choices {
		out = append(out, marker(st, i == a.cur, choiceText[a.kind][c]))
	}
	return append(out, "", st.warn.Render("  y confirms as "+s.actor+" · esc goes back without changing anything"))
}
