package tui

import (
	"context"
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/triunalabs/trovesnap/internal/approval"
	"github.com/triunalabs/trovesnap/internal/domain"
)

// screen is one view of the terminal. It turns a key into at most one
// Action and renders body lines; it never does I/O and never changes the
// state it reads.
type screen interface {
	key(k tea.KeyPressMsg, s *state) (screen, Action)
	view(s *state, w, h int) []string
	hints(s *state) hints
	// editing is true while a text field has the keyboard: then q, tab
	// and the letters are text, and only ctrl+c still quits.
	editing() bool
	// watch names the proposal the screen shows ("" for none) and whether
	// it shows its audit trail, so each poll re-reads exactly those.
	watch() (proposalID string, trail bool)
}

const (
	tabQueue = iota
	tabGrants
	tabPolicies
	tabClients
)

// Model is the one root model: it owns the data (state), the four tabs and
// the stack of screens opened over them, and is the only place Actions
// become commands.
type Model struct {
	ctx      context.Context
	opts     Options
	svc      *approval.Service
	s        state
	w, h     int
	tab      int
	tabs     [4]screen
	stack    []screen
	notice   Notice
	working  string // a write in flight: further decisions wait for it
	polling  bool
	lastPoll time.Time
	issued   int // loads started
	applied  int // the newest load applied
	lastErr  string
}

// New builds the terminal's model. ctx bounds every command (quitting the
// program cancels it through the caller).
func New(ctx context.Context, opts Options) Model {
	opts = opts.withDefaults()
	now := opts.Clock.Now()
	return Model{
		ctx:  ctx,
		opts: opts,
		svc:  &approval.Service{Admin: opts.Backend, Clock: opts.Clock, IDs: opts.IDs},
		s: state{
			tenant: opts.TenantID, actor: opts.ActorID, mode: opts.Mode, risk: opts.risk, changeVisible: opts.changeVisible, now: now, poll: opts.Poll,
			reviews: map[string]reviewResult{}, trails: map[string]trailResult{}, st: newStyles(opts.NoColor),
		},
		w: 80, h: 24,
		tabs:    [4]screen{queueScreen{}, grantsScreen{}, policiesScreen{}, clientsScreen{}},
		polling: true, lastPoll: now, issued: 1, // Init's load
	}
}

// Init loads the data and starts the clock. New counted this first load.
func (m Model) Init() tea.Cmd { return tea.Batch(m.loadCmd(), m.tickCmd()) }

// load starts a reload; each carries a number, so that an older one that
// arrives after a newer one is dropped.
func (m Model) load() (Model, tea.Cmd) {
	m.polling, m.lastPoll = true, m.s.now
	m.issued++
	return m, m.loadCmd()
}

// Update applies one message.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.w, m.h = msg.Width, msg.Height
		return m, nil
	case tickMsg:
		cmds := []tea.Cmd{m.tickCmd()}
		// Poll on the clock's own time, so a test that advances its fixed
		// clock by one poll interval sees exactly one reload.
		m.s.now = msg.at
		if !m.polling && msg.at.Sub(m.lastPoll) >= m.opts.Poll {
			var load tea.Cmd
			m, load = m.load()
			cmds = append(cmds, load)
		}
		return m, tea.Batch(cmds...)
	case snapshotMsg:
		if msg.seq < m.applied {
			return m, nil // an older load overtaken by a newer one
		}
		m.applied = msg.seq
		m.polling = false
		if msg.err != nil {
			// Keep showing the last good data; the next poll retries.
			m.lastErr = humanError(msg.err, m.opts.WaitForDB).Error()
			return m, nil
		}
		m.lastErr = ""
		m.s.loaded = true
		m.s.role, m.s.proposals, m.s.policies, m.s.clients = msg.role, msg.proposals, msg.policies, msg.clients
		m.s.grants = grantOrder(msg.grants)
		// A screen opened while this load ran has its own fresh review:
		// keep it rather than blank the screen until the next poll.
		m.s.reviews, m.s.trails = keep(msg.reviews, m.s.reviews), keep(msg.trails, m.s.trails)
		return m, nil
	case reviewMsg:
		m.s.reviews = withEntry(m.s.reviews, msg.id, msg.r)
		if !msg.approve {
			return m, nil
		}
		m.working = ""
		if why := problem(msg.r, m.s.now); why != "" {
			m.notice = Notice{Text: "cannot approve " + msg.id + ": " + why, Err: true}
			return m, nil
		}
		m.push(newApproveScreen(msg.r, m.s.now))
		return m, nil
	case trailMsg:
		m.s.reviews = withEntry(m.s.reviews, msg.id, msg.r)
		m.s.trails = withEntry(m.s.trails, msg.id, msg.t)
		return m, nil
	case doneMsg:
		m.working = ""
		switch {
		case msg.err != nil:
			m.notice = Notice{Text: msg.err.Error(), Err: true}
			m.popConfirmation() // the proposal stays on screen, with why
		case msg.decision:
			m.notice = Notice{Text: msg.text}
			m.stack = nil // decided: back to the queue
		default:
			m.notice = Notice{Text: msg.text}
			m.popConfirmation()
		}
		return m.load()
	case tea.KeyPressMsg:
		return m.key(msg)
	}
	return m, nil
}

// keep adds to fresh the entries of old that fresh lacks.
func keep[V any](fresh, old map[string]V) map[string]V {
	for k, v := range old {
		if _, ok := fresh[k]; !ok {
			fresh[k] = v
		}
	}
	return fresh
}

func withEntry[V any](mp map[string]V, k string, v V) map[string]V {
	out := make(map[string]V, len(mp)+1)
	for kk, vv := range mp {
		out[kk] = vv
	}
	out[k] = v
	return out
}

func (m *Model) top() screen {
	if n := len(m.stack); n > 0 {
		return m.stack[n-1]
	}
	return m.tabs[m.tab]
}

func (m *Model) setTop(s screen) {
	if n := len(m.stack); n > 0 {
		m.stack[n-1] = s
		return
	}
	m.tabs[m.tab] = s
}

func (m *Model) push(s screen) {
	m.stack = append(m.stack[:len(m.stack):len(m.stack)], s)
}

// popConfirmation closes the confirmation a write came from, if it is
// still on top (the seller may have left it while the write waited).
func (m *Model) popConfirmation() {
	switch m.top().(type) {
	case approveScreen, denyScreen, adminScreen:
		m.pop()
	}
}

func (m *Model) pop() {
	if n := len(m.stack); n > 0 {
		m.stack = m.stack[: n-1 : n-1]
	}
}

// key routes a key press: the global keys first (unless a field is being
// typed into), then the screen on top.
func (m Model) key(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	top := m.top()
	if k.String() == "ctrl+c" {
		return m.do(Quit{})
	}
	if !top.editing() {
		switch {
		case is(k, keys.Quit):
			return m.do(Quit{})
		case is(k, keys.Tab):
			return m.do(NextTab{})
		}
	}
	m.notice = Notice{}
	m.s.bodyH = m.bodyHeight(top)
	next, act := top.key(k, &m.s)
	m.setTop(next)
	return m.do(act)
}

// do turns an Action into state changes and commands. Every refusal that
// the service would also make is made here first, with a message that
// says why, so a key never silently does nothing.
func (m Model) do(a Action) (tea.Model, tea.Cmd) {
	switch a := a.(type) {
	case nil:
		return m, nil
	case Quit:
		return m, tea.Quit
	case NextTab:
		m.stack = nil // nothing on a stacked screen is written without y
		m.tab = (m.tab + 1) % len(m.tabs)
		m.notice = Notice{}
		return m, nil
	case Back:
		m.pop()
		return m, nil
	case Notice:
		m.notice = a
		return m, nil
	case OpenProposal:
		m.push(detailScreen{id: a.ID})
		return m, m.reviewCmd(a.ID, false)
	case OpenTrail:
		m.push(trailScreen{id: a.ProposalID})
		return m, m.trailCmd(a.ProposalID)
	case StartApprove:
		if why := m.mayDecide(); why != "" {
			return m.do(Notice{Text: why, Err: true})
		}
		if m.working != "" {
			return m, nil
		}
		m.working = "checking " + a.ID + " once more"
		return m, m.reviewCmd(a.ID, true)
	case StartDeny:
		if why := m.mayDecide(); why != "" {
			return m.do(Notice{Text: why, Err: true})
		}
		p, ok := m.s.proposal(a.ID)
		if !ok || p.Status != domain.ProposalPending {
			return m.do(Notice{Text: a.ID + " is not pending: there is nothing to deny", Err: true})
		}
		m.push(denyScreen{id: a.ID})
		return m, nil
	case Approve:
		if why := m.mayDecide(); why != "" {
			return m.do(Notice{Text: why, Err: true})
		}
		if r, ok := m.s.reviews[a.ProposalID]; ok {
			if why := problem(r, m.s.now); why != "" {
				return m.do(Notice{Text: "cannot approve: " + why, Err: true})
			}
		}
		if m.working != "" {
			return m, nil
		}
		m.working = "approving " + a.ProposalID
		return m, m.approveCmd(a)
	case Deny:
		if why := m.mayDecide(); why != "" {
			return m.do(Notice{Text: why, Err: true})
		}
		if m.working != "" {
			return m, nil
		}
		m.working = "denying " + a.ProposalID
		return m, m.denyCmd(a)
	case AskAdmin:
		if why := m.mayAdmin(a.Kind); why != "" {
			return m.do(Notice{Text: why, Err: true})
		}
		m.push(adminScreen{kind: a.Kind, id: a.ID, choices: a.Choices})
		return m, nil
	case RevokeGrant:
		return m.write(adminGrant, "revoking "+a.GrantID, m.revokeCmd(a))
	case SetPolicyStatus:
		return m.write(adminPolicy, "setting "+a.PolicyID+" "+a.Status, m.policyCmd(a))
	case SetClientStatus:
		return m.write(adminClient, "setting "+a.ClientID+" "+a.Status, m.clientCmd(a))
	}
	return m, nil
}

func (m Model) write(kind adminKind, what string, cmd tea.Cmd) (tea.Model, tea.Cmd) {
	if why := m.mayAdmin(kind); why != "" {
		return m.do(Notice{Text: why, Err: true})
	}
	if m.working != "" {
		return m, nil
	}
	m.working = what
	return m, cmd
}

// mayDecide refuses a member without approval.grant: they may browse
// everything, but every approve and deny is refused with this message
// (the service and the store refuse it again).
func (m Model) mayDecide() string {
	if m.s.can(domain.PermApprovalGrant) {
		return ""
	}
	return fmt.Sprintf("%s (%s) may browse but not decide: approving and denying need approval.grant (owner or manager)", m.s.actor, roleOrNone(m.s.role))
}

func (m Model) mayAdmin(k adminKind) string {
	perm, what := domain.PermApprovalGrant, "revoke grants"
	switch k {
	case adminPolicy:
		perm, what = domain.PermPolicyManage, "manage automation policies"
	case adminClient:
		perm, what = domain.PermClientManage, "manage clients"
	}
	if m.s.can(perm) {
		return ""
	}
	return fmt.Sprintf("%s (%s) may not %s: that needs %s", m.s.actor, roleOrNone(m.s.role), what, perm)
}

// watched lists the proposals open on the stack and those whose trail is
// shown, for the poll to re-read.
func (m Model) watched() (ids, trails []string) {
	for _, s := range m.stack {
		if id, trail := s.watch(); id != "" {
			ids = append(ids, id)
			if trail {
				trails = append(trails, id)
			}
		}
	}
	return ids, trails
}

// View renders the whole terminal: title, tabs, the top screen's body, a
// status line and the help bar, every line cut to the width and the whole
// cut to the height, so any size renders without wrapping or panicking.
func (m Model) View() tea.View {
	w, h := max(m.w, 1), max(m.h, 1)
	st := m.s.st
	top := m.top()
	var head []string
	if h >= 12 {
		head = append(head, st.title.Render("trovesnap approve")+st.dim.Render(" · "+m.who()))
	}
	head = append(head, m.tabLine(w))
	help := helpBar(st, top.hints(&m.s), w)
	bodyH := max(h-len(head)-len(help)-1, 1)
	m.s.bodyH = bodyH // this copy only: screens scroll to keep their cursor in view
	body := top.view(&m.s, w, bodyH)
	if len(body) > bodyH {
		body = body[:bodyH]
	}
	for len(body) < bodyH {
		body = append(body, "")
	}
	lines := append(append(append(head, body...), m.statusLine()), help...)
	if len(lines) > h {
		// Too small for everything: keep the help bar, drop body lines.
		lines = append(lines[:max(h-len(help), 0)], help...)
		if len(lines) > h {
			lines = lines[len(lines)-h:]
		}
	}
	for i := range lines {
		lines[i] = fit(lines[i], w)
	}
	v := tea.NewView(strings.Join(lines, "\n"))
	v.AltScreen = true
	v.WindowTitle = "trovesnap approve"
	return v
}

// bodyHeight is the body's height as View lays it out, for screens that
// scroll by pages of it.
func (m Model) bodyHeight(top screen) int {
	h, head := max(m.h, 1), 1
	if h >= 12 {
		head = 2
	}
	return max(h-head-len(helpBar(m.s.st, top.hints(&m.s), max(m.w, 1)))-1, 1)
}

func (m Model) who() string {
	role := m.s.role
	if role == "" {
		role = "…"
	}
	s := fmt.Sprintf("%s · %s (%s)", m.s.tenant, m.s.actor, role)
	if m.s.mode != "" {
		s += " · " + m.s.mode
	}
	return s
}

// tabLine names the tabs with their counts (pending proposals, and all
// grants, policies and clients); below 50 columns the counts go, so the
// four names still fit.
func (m Model) tabLine(w int) string {
	names := []string{"Queue", "Grants", "Policies", "Clients"}
	if w >= 50 {
		for i, n := range []int{len(m.s.proposals), len(m.s.grants), len(m.s.policies), len(m.s.clients)} {
			names[i] = fmt.Sprintf("%s %d", names[i], n)
		}
	}
	st := m.s.st
	var b strings.Builder
	for i, n := range names {
		if i == m.tab {
			b.WriteString(st.tabOn.Render("[" + n + "]"))
		} else {
			b.WriteString(st.tabOff.Render(" " + n + " "))
		}
	}
	return b.String()
}

func (m Model) statusLine() string {
	st := m.s.st
	switch {
	case m.working != "":
		return st.warn.Render("… " + m.working + " (waits while another process writes)")
	case m.notice.Text != "" && m.notice.Err:
		return st.bad.Render("✗ " + m.notice.Text)
	case m.notice.Text != "":
		return st.good.Render("✓ " + m.notice.Text)
	case m.lastErr != "":
		return st.warn.Render("! " + m.lastErr)
	case !m.s.loaded:
		return st.dim.Render("loading…")
	case !m.s.can(domain.PermApprovalGrant):
		return st.warn.Render(fmt.Sprintf("read-only: %s (%s) may browse; approving needs owner or manager", m.s.actor, roleOrNone(m.s.role)))
	}
	return st.dim.Render(fmt.Sprintf("refreshes every %s · now %s", m.opts.Poll, stamp(m.s.now)))
}
