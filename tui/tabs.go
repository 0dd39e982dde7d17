package tui

import (
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// listKeys is the movement every tab list shares.
func listKeys(c cursor, list []string, k tea.KeyPressMsg) (cursor, bool) {
	switch {
	case is(k, keys.Up):
		return c.move(list, -1), true
	case is(k, keys.Down):
		return c.move(list, 1), true
	}
	return c, false
}

func listView[T any](s *state, rows []T, c cursor, id func(T) string, render func(T) (string, string), empty string, h int) []string {
	if !s.loaded {
		return []string{"  loading…"}
	}
	if len(rows) == 0 {
		return []string{"  " + empty}
	}
	sel := c.resolve(ids(rows, id))
	from, to := window(len(rows), sel, 2, h)
	var out []string
	for i := from; i < to; i++ {
		l1, l2 := render(rows[i])
		out = append(out, marker(s.st, i == sel, l1), s.st.dim.Render("    "+l2))
	}
	return out
}

// grantsScreen lists the tenant's grants: active, consumed, expired,
// revoked. d revokes an active one; enter opens its proposal (and from
// there its audit trail).
type grantsScreen struct{ cur cursor }

func grantID(g domain.Grant) string { return g.ID }

func (g grantsScreen) key(k tea.KeyPressMsg, s *state) (screen, Action) {
	list := ids(s.grants, grantID)
	if c, ok := listKeys(g.cur, list, k); ok {
		g.cur = c
		return g, nil
	}
	i := g.cur.resolve(list)
	if i < 0 {
		return g, nil
	}
	gr := s.grants[i]
	switch {
	case is(k, keys.Enter):
		return g, OpenProposal{ID: gr.ProposalID}
	case is(k, keys.Deny):
		if gr.Status != domain.GrantActive {
			return g, Notice{Text: gr.ID + " is " + gr.Status + ": only an active grant can be revoked", Err: true}
		}
		return g, AskAdmin{Kind: adminGrant, ID: gr.ID, Choices: []string{domain.GrantRevoked}}
	case is(k, keys.Approve):
		return g, Notice{Text: "grants are issued from the queue: a approves a proposal there", Err: true}
	}
	return g, nil
}

func (g grantsScreen) hints(s *state) hints {
	h := hints{enter: "open"}
	if s.can(domain.PermApprovalGrant) {
		h.deny = "revoke"
	}
	return h
}

func (grantsScreen) editing() bool         { return false }
func (grantsScreen) watch() (string, bool) { return "", false }

func (g grantsScreen) view(s *state, w, h int) []string {
	return listView(s, s.grants, g.cur, grantID, func(gr domain.Grant) (string, string) {
		when := "expires in " + left(s.now, gr.ExpiresAt)
		switch {
		case gr.ConsumedAt != nil:
			when = "used " + stamp(*gr.ConsumedAt)
		case gr.RevokedAt != nil:
			when = "revoked " + stamp(*gr.RevokedAt)
		case gr.Status == domain.GrantExpired:
			when = "expired " + stamp(gr.ExpiresAt)
		}
		by := gr.IssuedBy.ActorID + " via " + gr.IssuedBy.Surface
		if gr.IssuedBy.Type == domain.IssuerPolicy {
			by = fmt.Sprintf("%s v%d", gr.IssuedBy.PolicyID, gr.IssuedBy.PolicyVersion)
		}
		return fmt.Sprintf("%-9s %s  %s · %s", gr.Status, gr.ID, gr.IssuedBy.Type, when),
			fmt.Sprintf("%s · %s · %s", gr.ProposalID, by, toolShort(gr.Tool))
	}, "No grants yet: approving a proposal issues one.", h)
}

// policiesScreen lists the tenant's automation policies: a enables a
// disabled one, d offers disable and revoke.
type policiesScreen struct{ cur cursor }

func policyID(p domain.Policy) string { return p.ID }

func (p policiesScreen) key(k tea.KeyPressMsg, s *state) (screen, Action) {
	list := ids(s.policies, policyID)
	if c, ok := listKeys(p.cur, list, k); ok {
		p.cur = c
		return p, nil
	}
	i := p.cur.resolve(list)
	if i < 0 {
		return p, nil
	}
	pol := s.policies[i]
	switch {
	case is(k, keys.Approve):
		if pol.Status != domain.PolicyDisabled {
			return p, Notice{Text: pol.ID + " is " + pol.Status + ": only a disabled policy can be enabled", Err: true}
		}
		return p, AskAdmin{Kind: adminPolicy, ID: pol.ID, Choices: []string{domain.PolicyActive}}
	case is(k, keys.Deny):
		switch pol.Status {
		case domain.PolicyActive:
			return p, AskAdmin{Kind: adminPolicy, ID: pol.ID, Choices: []string{domain.PolicyDisabled, domain.PolicyRevoked}}
		case domain.PolicyDisabled:
			return p, AskAdmin{Kind: adminPolicy, ID: pol.ID, Choices: []string{domain.PolicyRevoked}}
		}
		return p, Notice{Text: pol.ID + " is revoked: that is final", Err: true}
	case is(k, keys.Enter):
		return p, Notice{Text: "policies are created with `trovesnap policy create`; here they are enabled, disabled or revoked"}
	}
	return p, nil
}

func (p policiesScreen) hints(s *state) hints {
	if s.can(domain.PermPolicyManage) {
		return hints{approve: "enable", deny: "disable/revoke"}
	}
	return hints{}
}

func (policiesScreen) editing() bool         { return false }
func (policiesScreen) watch() (string, bool) { return "", false }

func (p policiesScreen) view(s *state, w, h int) []string {
	return listView(s, s.policies, p.cur, policyID, func(pol domain.Policy) (string, string) {
		sales := "all sales"
		if len(pol.Scope.EstateSaleIDs) > 0 {
			sales = strings.Join(pol.Scope.EstateSaleIDs, ",")
		}
		return fmt.Sprintf("%-8s %s %q v%d", pol.Status, pol.ID, pol.Name, pol.Version),
			fmt.Sprintf("%s · %s · ≤%d items/run · ≤%d actions/day", strings.Join(mapSlice(pol.AllowedTools, toolShort), ","), sales,
				pol.Conditions.MaxItemsPerRun, pol.Limits.MaxDailyActions)
	}, "No automation policies (`trovesnap policy create` makes one, disabled).", h)
}

// clientsScreen lists the tenant's MCP clients: d offers suspend and
// revoke, a reactivates a suspended one.
type clientsScreen struct{ cur cursor }

func clientID(c domain.Client) string { return c.ID }

func (c clientsScreen) key(k tea.KeyPressMsg, s *state) (screen, Action) {
	list := ids(s.clients, clientID)
	if cc, ok := listKeys(c.cur, list, k); ok {
		c.cur = cc
		return c, nil
	}
	i := c.cur.resolve(list)
	if i < 0 {
		return c, nil
	}
	cl := s.clients[i]
	switch {
	case is(k, keys.Approve):
		if cl.Status != domain.ClientSuspended {
			return c, Notice{Text: cl.ID + " is " + cl.Status + ": only a suspended client can be reactivated", Err: true}
		}
		return c, AskAdmin{Kind: adminClient, ID: cl.ID, Choices: []string{domain.ClientActive}}
	case is(k, keys.Deny):
		switch cl.Status {
		case domain.ClientActive:
			return c, AskAdmin{Kind: adminClient, ID: cl.ID, Choices: []string{domain.ClientSuspended, domain.ClientRevoked}}
		case domain.ClientSuspended:
			return c, AskAdmin{Kind: adminClient, ID: cl.ID, Choices: []string{domain.ClientRevoked}}
		}
		return c, Notice{Text: cl.ID + " is revoked: that is final", Err: true}
	case is(k, keys.Enter):
		return c, Notice{Text: "clients are registered with `trovesnap client register`; here they are suspended or revoked"}
	}
	return c, nil
}

func (c clientsScreen) hints(s *state) hints {
	if s.can(domain.PermClientManage) {
		return hints{approve: "reactivate", deny: "suspend/revoke"}
	}
	return hints{}
}

func (clientsScreen) editing() bool         { return false }
func (clientsScreen) watch() (string, bool) { return "", false }

func (c clientsScreen) view(s *state, w, h int) []string {
	return listView(s, s.clients, c.cur, clientID, func(cl domain.Client) (string, string) {
		demo := ""
		if cl.Demo {
			demo = " · mock demo client"
		}
		return fmt.Sprintf("%-9s %s %q", cl.Status, cl.ID, cl.Name),
			fmt.Sprintf("%s · for %s · %s%s", cl.ClientType, cl.ActorID, strings.Join(cl.AllowedToolGroups, ","), demo)
	}, "No clients registered (`trovesnap client register`).", h)
}

func mapSlice(xs []string, f func(string) string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}

// trailScreen is a proposal's audit trail: the events of its correlation
// id (proposal, blocked executions, approval or denial, execution), and
// its full hash.
type trailScreen struct {
	id  string
	off int
}

func (t trailScreen) key(k tea.KeyPressMsg, s *state) (screen, Action) {
	switch {
	case is(k, keys.Up):
		t.off = max(t.off-1, 0)
	case is(k, keys.Down):
		t.off = min(t.off+1, max(len(t.lines(s))-s.bodyH, 0))
	case is(k, keys.Back):
		return t, Back{}
	}
	return t, nil
}

func (trailScreen) hints(*state) hints      { return hints{} }
func (trailScreen) editing() bool           { return false }
func (t trailScreen) watch() (string, bool) { return t.id, true }

func (t trailScreen) view(s *state, w, h int) []string {
	lines := t.lines(s)
	off := min(t.off, max(len(lines)-h, 0))
	return lines[off:]
}

func (t trailScreen) lines(s *state) []string {
	st := s.st
	out := []string{st.title.Render("Audit trail of " + t.id)}
	r, ok := s.reviews[t.id]
	if ok && r.err == nil {
		hash := r.Proposal.Hash
		if hashHidden(s, r.Proposal) {
			hash = hashWithheld
		}
		out = append(out, "  status       "+r.Proposal.Status, "  correlation  "+r.Proposal.CorrelationID, "  hash", "  "+hash)
	}
	tr, ok := s.trails[t.id]
	switch {
	case !ok:
		return append(out, "", "  loading…")
	case tr.err != nil:
		return append(out, "", st.bad.Render("  "+tr.err.Error()))
	case len(tr.events) == 0:
		return append(out, "", "  no events")
	}
	out = append(out, "")
	for _, e := range tr.events {
		who := e.Actor.ID
		if e.Client.ID != "" {
			who = e.Client.ID + " for " + e.Actor.ID
		}
		outcome := e.Outcome
		if e.ErrorCode != "" {
			outcome += " " + e.ErrorCode
		}
		out = append(out,
			fmt.Sprintf("  %s  %s  %s · %s", e.OccurredAt.UTC().Format("15:04:05"), e.Action, outcome, e.Approval.Decision),
			st.dim.Render(fmt.Sprintf("            %s · %s · %s", toolShort(e.Tool.Name), who, e.ID)))
	}
	return out
}
