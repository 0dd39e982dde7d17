package tui

import (
	"context"
	"errors"
	"fmt"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/triunalabs/trovesnap/internal/approval"
	"github.com/triunalabs/trovesnap/internal/domain"
)

// Messages: the results of commands. Each carries everything the root
// model needs, so applying one is a pure state change.
type (
	tickMsg     struct{ at time.Time }
	snapshotMsg struct {
		seq       int
		role      string
		proposals []domain.Proposal
		grants    []domain.Grant
		policies  []domain.Policy
		clients   []domain.Client
		reviews   map[string]reviewResult
		trails    map[string]trailResult
		err       error
	}
	// reviewMsg answers an open or a start-approve with a fresh review.
	reviewMsg struct {
		id      string
		approve bool
		r       reviewResult
	}
	// trailMsg answers an OpenTrail with the proposal and its events.
	trailMsg struct {
		id string
		r  reviewResult
		t  trailResult
	}
	// doneMsg is the end of a write: what happened, or why not.
	doneMsg struct {
		decision bool // approve or deny (else an admin change)
		text     string
		err      error
	}
)

// env is everything a command needs, copied out of the model so that a
// command running on its own goroutine shares nothing with Update.
type env struct {
	ctx            context.Context
	b              Backend
	svc            *approval.Service
	clock          domain.Clock
	tenant, actor  string
	wait           time.Duration
	watch, trailOf []string
}

func (m Model) env() env {
	return env{ctx: m.ctx, b: m.opts.Backend, svc: m.svc, clock: m.opts.Clock, tenant: m.opts.TenantID,
		actor: m.opts.ActorID, wait: m.opts.WaitForDB}
}

func (m Model) tickCmd() tea.Cmd {
	if m.opts.Tick < 0 {
		return nil
	}
	clock := m.opts.Clock
	return tea.Tick(m.opts.Tick, func(time.Time) tea.Msg { return tickMsg{at: clock.Now()} })
}

// loadCmd reads everything the screens show, plus a fresh review of every
// proposal open on the screen stack: that is how a proposal that changed,
// went stale, expired or was executed while the seller looks at it is
// noticed within one poll.
func (m Model) loadCmd() tea.Cmd {
	x := m.env()
	x.watch, x.trailOf = m.watched()
	seq := m.issued
	return func() tea.Msg {
		s := x.load()
		s.seq = seq
		return s
	}
}

func (x env) load() snapshotMsg {
	var (
		s   snapshotMsg
		err error
	)
	fail := func(what string, err error) snapshotMsg {
		return snapshotMsg{err: fmt.Errorf("reading %s: %w", what, err)}
	}
	if s.role, err = x.b.MemberRole(x.ctx, x.tenant, x.actor); err != nil {
		return fail("membership", err)
	}
	if s.proposals, err = x.b.ListProposals(x.ctx, x.tenant, domain.ProposalPending); err != nil {
		return fail("proposals", err)
	}
	if s.grants, err = x.b.ListGrants(x.ctx, x.tenant, ""); err != nil {
		return fail("grants", err)
	}
	if s.policies, err = x.b.ListPolicies(x.ctx, x.tenant); err != nil {
		return fail("policies", err)
	}
	if s.clients, err = x.b.ListClients(x.ctx, x.tenant); err != nil {
		return fail("clients", err)
	}
	s.reviews = map[string]reviewResult{}
	for _, id := range x.watch {
		s.reviews[id] = x.review(id)
	}
	s.trails = map[string]trailResult{}
	for _, id := range x.trailOf {
		s.trails[id] = x.trail(s.reviews[id])
	}
	return s
}

func (x env) review(id string) reviewResult {
	r, err := x.svc.Review(x.ctx, x.tenant, id)
	if err != nil {
		return reviewResult{err: humanError(err, x.wait)}
	}
	out := reviewResult{Review: r}
	// The client's effective limits are narrowed by the tenant's: one read.
	if out.limits, err = x.b.EffectiveLimits(x.ctx, x.tenant, r.Proposal.RequestedBy.ClientID); err != nil {
		out.limits = domain.DefaultLimits() // the bounds fall back to the spec's defaults: no paid grant
	}
	return out
}

func (x env) trail(r reviewResult) trailResult {
	if r.err != nil {
		return trailResult{err: r.err}
	}
	evs, err := x.b.AuditTrail(x.ctx, x.tenant, r.Proposal.CorrelationID)
	return trailResult{events: evs, err: err}
}

func (m Model) trailCmd(id string) tea.Cmd {
	x := m.env()
	return func() tea.Msg {
		r := x.review(id)
		return trailMsg{id: id, r: r, t: x.trail(r)}
	}
}

func (m Model) reviewCmd(id string, approve bool) tea.Cmd {
	x := m.env()
	return func() tea.Msg { return reviewMsg{id: id, approve: approve, r: x.review(id)} }
}

// approveCmd reviews the proposal once more right before granting: the
// hash must still be the one the seller saw, no target may have moved, it
// must be pending and unexpired. The service and the store's transaction
// check the same again, so the last look cannot be raced.
func (m Model) approveCmd(a Approve) tea.Cmd {
	x := m.env()
	return func() tea.Msg {
		var g domain.Grant
		err := x.patiently(func() error {
			r := x.review(a.ProposalID)
			if why := problem(r, x.clock.Now()); why != "" {
				return errors.New(why)
			}
			if r.Proposal.Hash != a.Hash {
				return errors.New("the proposal changed since you reviewed it: review it again")
			}
			var err error
			g, err = x.svc.Approve(x.ctx, approval.ApproveRequest{
				TenantID: x.tenant, ProposalID: a.ProposalID, ExpectedHash: a.Hash, ActorID: x.actor,
				Surface: approval.SurfaceApproveTUI, Constraints: &a.Constraints, TTL: a.TTL,
			})
			return err
		})
		if err != nil {
			return doneMsg{decision: true, err: fmt.Errorf("not approved: %w", humanError(err, x.wait))}
		}
		return doneMsg{decision: true, text: fmt.Sprintf("approved %s · single-use grant %s until %s",
			a.ProposalID, g.ID, g.ExpiresAt.UTC().Format("15:04 MST"))}
	}
}

func (m Model) denyCmd(d Deny) tea.Cmd {
	x := m.env()
	return func() tea.Msg {
		err := x.patiently(func() error {
			return x.svc.Deny(x.ctx, x.tenant, d.ProposalID, x.actor, approval.SurfaceApproveTUI, d.Reason)
		})
		if err != nil {
			return doneMsg{decision: true, err: fmt.Errorf("not denied: %w", humanError(err, x.wait))}
		}
		return doneMsg{decision: true, text: "denied " + d.ProposalID + " (recorded with your reason)"}
	}
}

func (m Model) revokeCmd(r RevokeGrant) tea.Cmd {
	x := m.env()
	return func() tea.Msg {
		err := x.patiently(func() error {
			_, err := x.svc.Revoke(x.ctx, x.tenant, r.GrantID, x.actor)
			return err
		})
		if err != nil {
			return doneMsg{err: fmt.Errorf("not revoked: %w", humanError(err, x.wait))}
		}
		return doneMsg{text: "revoked " + r.GrantID + ": it can never authorise; the proposal is pending again"}
	}
}

func (m Model) policyCmd(p SetPolicyStatus) tea.Cmd {
	x := m.env()
	return func() tea.Msg {
		var pol domain.Policy
		err := x.patiently(func() error {
			// The store checks policy.manage, but not the tenant: the
			// policy must be one of this seller's.
			cur, err := x.b.GetPolicy(x.ctx, p.PolicyID)
			if err != nil {
				return err
			}
			if cur.TenantID != x.tenant {
				return domain.UnknownRef("policy", p.PolicyID, true)
			}
			pol, err = x.b.SetPolicyStatus(x.ctx, p.PolicyID, p.Status, x.actor)
			return err
		})
		if err != nil {
			return doneMsg{err: fmt.Errorf("policy unchanged: %w", humanError(err, x.wait))}
		}
		return doneMsg{text: fmt.Sprintf("policy %s is %s (version %d)", pol.ID, pol.Status, pol.Version)}
	}
}

func (m Model) clientCmd(c SetClientStatus) tea.Cmd {
	x := m.env()
	return func() tea.Msg {
		var cl domain.Client
		err := x.patiently(func() error {
			// The backend decides: the actor needs client.manage in the
			// client's tenant (the store checks the membership as it is
			// now; live, the RPC under the seller's JWT).
			var err error
			cl, err = x.b.SetClientStatus(x.ctx, c.ClientID, c.Status, x.actor)
			return err
		})
		if err != nil {
			return doneMsg{err: fmt.Errorf("client unchanged: %w", humanError(err, x.wait))}
		}
		return doneMsg{text: fmt.Sprintf("client %s is %s", cl.ID, cl.Status)}
	}
}

// patiently runs a write, retrying while the database is unavailable: a
// running MCP server may hold the write lock (the store already waits
// busy_timeout per attempt), and a seller's decision must wait for it,
// not fail. A decision that did commit is not repeated: the retry finds
// the proposal decided and says so.
func (x env) patiently(fn func() error) error {
	deadline := time.Now().Add(x.wait)
	delay := 50 * time.Millisecond
	for {
		err := fn()
		if err == nil || !errors.Is(err, domain.ErrUnavailable) || x.ctx.Err() != nil || time.Now().After(deadline) {
			return err
		}
		select {
		case <-x.ctx.Done():
			return err
		case <-time.After(delay):
		}
		delay = min(2*delay, time.Second)
	}
}

// humanError keeps the domain's own wording (it names the proposal, the
// actor and the reason) and replaces the store's opaque unavailability
// with what the seller can do about it.
func humanError(err error, waited time.Duration) error {
	if errors.Is(err, domain.ErrUnavailable) {
		return fmt.Errorf("the database stayed busy or unreadable for %s; try again (is another process holding it?)", waited)
	}
	return err
}

func roleOrNone(r string) string {
	if r == "" {
		return "not a member"
	}
	return r
}
