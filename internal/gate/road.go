package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/triunalabs/trovesnap/internal/approval"
	"github.com/triunalabs/trovesnap/internal/audit"
	"github.com/triunalabs/trovesnap/internal/catalog"
	"github.com/triunalabs/trovesnap/internal/domain"
)

// call is one tool call on its way along the gate's road: what the steps
// have learned so far, and the envelope and event they fill in. It lives
// for one Invoke and is never shared.
type call struct {
	g       *Gate
	in      Call
	started time.Time
	// ctx is detached from the request's cancellation, so the gate's own
	// steps (the rate count, the write, the plugin_event) always finish,
	// and carries the current step's span. reqCtx is the request's own
	// context: the admission wait and a handler that persists nothing
	// still stop on it.
	ctx, reqCtx context.Context
	env         *Envelope
	ev          domain.Event

	args arguments
	pre  *failure // decided on the raw arguments; reported once the client is known

	p       domain.Principal
	counted bool // counted in its tool's limit class: a refusal is not charged again
	// countAtEvent: the count is taken with the call's event (ratefold.go).
	countAtEvent bool
	foldKey      string // its place on that path, given back when the call ends
	countInWrite bool   // a persisted write counted in its own transaction (ratefold.go)
	tool         *catalog.Tool
	input        any               // the strictly decoded input
	warnings     []catalog.Warning // gathered before the domain call
	write        domain.WriteMeta  // a persisted write's idempotency key
	replay       bool              // the key was used before with the same input
	auth         domain.Authorization
	data         any
	eff          catalog.Effects
	stored       bool // the Backend committed the call's event with its write
}

// newCall starts a call: its envelope and its event, anonymous until the
// client is known, and its trace.
func (g *Gate) newCall(ctx context.Context, in Call) *call {
	c := &call{g: g, in: in, started: time.Now(), reqCtx: ctx}
	c.env = &Envelope{
		ServerRequestID: g.ids.New(domain.PrefixRequest),
		Mode:            g.mode,
		Tool:            ToolID{Name: in.Tool},
		Warnings:        []catalog.Warning{},
		Errors:          []Error{},
		Related:         domain.Related{}.Normalized(),
	}
	c.ev = domain.Event{
		ID:              g.ids.New(domain.PrefixEvent),
		CorrelationID:   g.ids.New(domain.PrefixCorr),
		ServerRequestID: c.env.ServerRequestID,
		Mode:            g.mode,
		Plugin:          domain.PluginRef{Type: "mcp", ID: "trovesnap", Version: g.version},
		Tool:            domain.ToolRef{Name: in.Tool},
		Actor:           domain.ActorRef{Type: "anonymous"},
		Action:          "mcp_tool_called",
		Approval:        domain.EventApproval{Decision: "not_required"},
		Impact:          domain.EventImpact{Type: "none"},
		Related:         domain.Related{}.Normalized(),
		OccurredAt:      g.clock.Now(),
	}
	c.env.Audit.PluginEventID = c.ev.ID
	c.ctx = g.tel.startCall(context.WithoutCancel(ctx), in, c.env.ServerRequestID, c.ev.ID, g.mode)
	c.ev.TraceID, c.ev.SpanID = traceIDs(c.ctx)
	return c
}

// admitArguments applies the size limit to the raw bytes, before anything
// parses them: an oversize call costs one hash pass, not a parse of
// millions of keys. Within the limit, the call takes its bytes from the
// gate-wide budget for as long as it runs, so concurrent big calls cannot
// add up; release gives them back. A transport that admitted the call
// itself (Admit, before decoding it) passes its verdict and holds the
// bytes until it has answered. Admitted arguments are read (leniently) for
// the event's input hash and request_id; a refusal waits in pre.
func (c *call) admitArguments() (release func()) {
	release = func() {}
	raw := c.in.Arguments
	adm := c.in.Admission
	if adm == nil {
		adm = c.g.Admit(c.reqCtx, c.in.Tool, len(raw), "")
		release = adm.Release
	} else if limit := catalog.ArgumentLimit(c.in.Tool); !adm.Refused() && len(raw) > limit {
		adm = &Admission{refusal: oversize(limit)} // the transport measured other bytes
	}
	if !adm.Refused() && catalog.TooManyValues(raw) {
		// Within the size limit but too many values to decode generically
		// (hashing and validation would): refused on the raw bytes too.
		adm = &Admission{refusal: &failure{code: CodeInvalidInput, field: "arguments",
			message: fmt.Sprintf("Invalid arguments: more than %d JSON values.", catalog.MaxArgumentValues)}}
	}
	if adm.Refused() {
		c.pre = adm.refusal
		c.args = arguments{raw: raw, members: map[string]json.RawMessage{}}
		hash := adm.hash
		if hash == "" {
			hash = rawHash(raw)
		}
		c.ev.Payload = domain.EventPayload{InputHash: hash, RedactedSummary: audit.RedactedSummary(c.args.members)}
		return release
	}
	c.args = parseArgs(raw)
	if rid, ok := requestID(c.args.members); ok {
		c.env.RequestID = &rid
		c.ev.RequestID = rid
	}
	c.ev.Payload = domain.EventPayload{InputHash: inputHash(c.args), RedactedSummary: audit.RedactedSummary(c.args.members)}
	return release
}

// recoverPanic, deferred, turns a panic anywhere on the road into
// service_unavailable with the call's one event (not a second one when the
// write already committed it).
func (c *call) recoverPanic(env **Envelope) {
	if r := recover(); r != nil {
		c.g.log.Error("tool call panicked", "tool", c.in.Tool, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		*env = c.refuse(&failure{code: CodeServiceUnavailable, eventStored: c.stored})
	}
}

// run takes the call along the road up to its one domain call, a step at a
// time; the first refusal ends it. A refusal once the client is known and
// before the tool's limit class has counted the call counts against the
// client's rejected budget (chargeRefused): refusals are not free.
func (c *call) run() (f *failure) {
	if f = c.resolveClient(); f != nil {
		return f // no client to charge
	}
	c.resolveActor()
	defer func() { f = c.chargeRefused(f) }()
	for _, next := range []func() *failure{
		c.refusedArguments,
		c.checkTenantHint,
		c.authorizeTool,
		c.checkToolVersion,
		c.validateInput,
		c.applyLimits,
		c.checkIdempotency,
		c.resolveApproval,
		c.execute,
	} {
		if f = next(); f != nil {
			return f
		}
	}
	return nil
}

// resolveClient (step 1) resolves the credential to its client, afresh on
// every call so a suspension is seen by the very next request. A
// credential that reaches no active client is counted in the process's
// unresolved budget, there being no client to charge.
func (c *call) resolveClient() *failure {
	c.ctx = step(c.ctx, audit.SpanClientResolve)
	cred, conn := c.in.Credential, c.in.Connector
	if conn != nil {
		// The unresolved budget's key: the OAuth client and subject.
		cred = "oauth:" + conn.ClientID + "\x00" + conn.Subject
	} else if cred != "" && cred != domain.PublicCredential && !domain.WellFormedToken(cred) {
		return c.g.unresolved(cred, &failure{code: CodeClientNotRegistered, auditCode: "malformed_credential"})
	}
	p, err := c.g.resolve(c.ctx, c.in.Credential, conn)
	if err != nil {
		f := principalFailure(err)
		if f.code != CodeServiceUnavailable { // an unreadable store is not the caller's doing
			f = c.g.unresolved(cred, f)
		}
		return f
	}
	c.p = p
	return nil
}

// resolveActor (step 2) names the tenant, the client and the actor the
// credential resolved to in the event: from here on a refusal is theirs.
func (c *call) resolveActor() {
	c.ctx = step(c.ctx, audit.SpanActorResolve)
	c.ev.TenantID = c.p.TenantID
	c.ev.Client = c.p.Client
	if c.p.ActorID != "" {
		c.ev.Actor = domain.ActorRef{ID: c.p.ActorID, Type: c.p.ActorType, Role: c.p.Role}
	}
}

// chargeRefused counts a refusal of the caller's own doing, made before
// the call was counted in its tool's limit class, in the client's rejected
// budget; over it the answer is rate_limited (its one event still written).
func (c *call) chargeRefused(f *failure) *failure {
	if f == nil || c.counted || !chargeable(f.code) {
		return f
	}
	return c.g.chargeRefusal(c.ctx, c.p, f)
}

// refusedArguments (step 2) reports the refusal decided on the raw
// arguments, now that the event names the client it is charged to.
func (c *call) refusedArguments() *failure { return c.pre }

// checkTenantHint (step 2) refuses a client-sent tenant hint that is not
// the client's own tenant: hints never choose a tenant.
func (c *call) checkTenantHint() *failure { return tenantHint(c.in.Meta, c.args.members, c.p) }

// authorizeTool (step 3) finds the tool and checks that this principal may
// see it in this mode; an invisible tool gets the same answer as an
// unknown one, except that a public caller is told to authenticate.
func (c *call) authorizeTool() *failure {
	c.ctx = step(c.ctx, audit.SpanToolAuthorize)
	t, ok := catalog.Lookup(c.in.Tool)
	if !ok {
		return fail(CodeToolNotAvailable)
	}
	c.tool = t
	c.env.Tool = ToolID{Name: t.Name, Version: t.Version}
	c.ev.Impact = t.Impact
	c.ev.Tool = domain.ToolRef{Name: t.Name, Version: t.Version, InputSchemaHash: t.InputSchemaHash(), Tier: string(t.Tier), Risk: string(t.Risk)}
	c.ev.Domain = &domain.EventDomain{Service: t.Domain.Service, Operation: t.Domain.Operation}
	c.ev.Approval.Requirement = string(t.Approval)
	if d := catalog.Decide(t, c.g.mode, c.p); !d.Visible {
		if c.p.Public && t.Tier != catalog.TierPublicRead && t.HasHandler() {
			return fail(CodeAuthenticationRequired)
		}
		return &failure{code: CodeToolNotAvailable, auditCode: "tool_not_visible"}
	}
	c.ev.Permissions = permissionsUsed(t, c.p)
	return nil
}

// checkToolVersion (step 4) applies the caller's version pin. Deprecated
// tools and versions still answer, with a warning, and the event marks the
// use so it can be counted.
func (c *call) checkToolVersion() *failure {
	deprecated, f := checkVersion(c.in.Meta, c.tool)
	if f != nil {
		return f
	}
	if deprecated {
		t := c.tool
		c.ev.Tool.Deprecated = true
		msg := fmt.Sprintf("%s %s is deprecated and will be retired after its compatibility window.", t.Name, t.Version)
		if t.CompatFor != "" {
			msg = fmt.Sprintf("%s is a compatibility name: use %s.", t.Name, t.CompatFor)
		}
		c.warnings = append(c.warnings, catalog.Warning{Code: "tool_deprecated", Message: msg})
	}
	return nil
}

// validateInput (step 5) decodes the arguments strictly against the tool's
// input schema.
func (c *call) validateInput() *failure {
	c.ctx = step(c.ctx, audit.SpanInputValidate)
	raw := c.args.raw
	if _, hint := c.args.members["tenant_id"]; hint {
		// An equal tenant hint was accepted in step 2; it is not tool
		// input. Re-encoding only then spares a big call another copy of
		// itself.
		delete(c.args.members, "tenant_id")
		raw, _ = json.Marshal(c.args.members)
	}
	in, err := c.tool.Decode(raw)
	if err != nil {
		return c.g.domainFailure(err)
	}
	c.input = in
	return nil
}

// applyLimits (step 6) counts the call in its client's limit class (per
// client × class, across processes); over the limit it is rate_limited.
// A Backend that counts the call in the call itself (callCounter: live
// mode, where the RPC counts) is not asked here: its refusal comes back
// from the domain call as domain.ErrRateLimited. The call stays uncounted
// for chargeRefused: a refused RPC rolls its own count back, so a
// refusal of the caller's own doing is charged to the rejected budget.
func (c *call) applyLimits() *failure {
	c.ctx = step(c.ctx, audit.SpanPolicyEvaluate)
	if c.g.countsInCall(c.tool) {
		return nil
	}
	if c.countsWithEvent() {
		c.counted, c.countAtEvent = true, true
		return nil
	}
	if c.countsInWrite() {
		// Counted in the write's transaction; if the call ends before it
		// commits, with its refusal event.
		c.counted, c.countAtEvent, c.countInWrite = true, true, true
		return nil
	}
	class := limitClass(c.tool.Tier)
	rd, err := c.g.b.ConsumeRate(c.ctx, c.p, class)
	if err != nil {
		return c.g.domainFailure(err)
	}
	c.counted = true
	if !rd.Allowed {
		c.g.full.mark(fullKey(c.p, class), c.g.clock.Now(), rd.RetryAfterSeconds)
		return rateLimited(rd)
	}
	return nil
}

// checkIdempotency (step 7) checks a persisted write's idempotency_key. A
// replay goes on to the Backend, which returns the original result inside
// its transaction; a key reused with other input stops here.
func (c *call) checkIdempotency() *failure {
	t := c.tool
	if !t.Persists {
		return nil
	}
	var key string
	_ = json.Unmarshal(c.args.members["idempotency_key"], &key)
	if key == "" {
		return &failure{code: CodeInvalidInput, field: "idempotency_key", message: "idempotency_key is required on every persisted write."}
	}
	idem := domain.IdempotencyKey{TenantID: c.p.TenantID, ClientID: c.p.Client.ID, Tool: t.Name, ToolMajor: t.Major(), Key: key, Fingerprint: c.ev.Payload.InputHash}
	state, err := c.g.b.CheckIdempotency(c.ctx, idem)
	if err != nil {
		return c.g.domainFailure(err)
	}
	if state == domain.IdemConflict {
		return fail(CodeIdempotencyConflict)
	}
	c.replay = state == domain.IdemReplay
	c.write = domain.WriteMeta{Idem: idem, Started: c.started}
	if c.countInWrite {
		c.write.RateClass = limitClass(t.Tier)
	}
	if c.g.mode == domain.ModeMock {
		c.warnings = append(c.warnings, catalog.Warning{Code: string(CodeMockModeNoPersistence), Message: CodeMockModeNoPersistence.Message()})
	}
	return nil
}

// resolveApproval (step 8) finds the authority for a controlled action: its
// proposal (hash recomputed), then a grant bound to it or a policy that
// covers it. Arguments carry no authority: only the proposal id is read
// from them. A replay needs none: it writes nothing.
func (c *call) resolveApproval() *failure {
	c.ctx = step(c.ctx, audit.SpanApprovalResolve)
	if c.tool.Tier != catalog.TierControlledAction || c.replay {
		return nil
	}
	var pid string
	_ = json.Unmarshal(c.args.members["proposal_id"], &pid)
	prop, err := c.g.b.GetProposal(c.ctx, c.p, pid)
	if err != nil {
		return c.g.domainFailure(err)
	}
	c.ev.CorrelationID = prop.CorrelationID
	c.ev.Approval.ProposalID = &pid
	c.ev.Approval.ProposalHash = prop.Hash
	c.ev.Metrics.EstimatedCostUSD = prop.Impact.EstimatedCostUSD
	grants, policies, usage, err := c.g.b.ApprovalState(c.ctx, c.p, pid, c.tool.Name)
	if err != nil {
		return c.g.domainFailure(err)
	}
	dec := approval.Resolve(c.g.clock.Now(), c.tool.Name, c.p, prop, grants, policies, usage)
	c.ev.Approval.Decision = dec.Decision
	if dec.Err != nil {
		return c.g.domainFailure(dec.Err)
	}
	if dec.Auth.GrantID != "" {
		gid := dec.Auth.GrantID
		c.ev.Approval.ApprovalID = &gid
	}
	c.ev.Approval.IssuedBy = issuerOf(dec.Auth, grants)
	c.auth = dec.Auth
	return nil
}

// execute (step 9) makes the call's ONE domain call, through the tool's
// handler. Nothing to commit: a cancelled read may stop early (its failure
// event still records it). A persisted write runs to its own end instead,
// so it either commits with its event or fails without one — a cancel can
// never leave the outcome unknown.
func (c *call) execute() *failure {
	c.ctx = step(c.ctx, audit.SpanDomainExecute)
	hctx := c.ctx
	if !c.tool.Persists {
		var stop context.CancelFunc
		hctx, stop = context.WithCancel(c.ctx)
		defer stop()
		defer context.AfterFunc(c.reqCtx, stop)()
	}
	data, eff, err := c.tool.Handle(hctx, c.handlerEnv(), c.input)
	if c.countInWrite && (err == nil || errors.Is(err, domain.ErrRateLimited)) {
		// The write's transaction counted the call (or refused it as over
		// the limit): its event is not counted again.
		c.countAtEvent = false
	}
	if err != nil {
		return c.handlerFailure(err)
	}
	eff.Warnings = append(c.warnings, eff.Warnings...)
	c.data, c.eff = data, eff
	c.stored = c.tool.Persists && !eff.Outcome.Replayed
	return nil
}

// handlerEnv is what the handler is given: the Backend, the principal and
// what the gate decided (a write's idempotency key and event, a controlled
// action's authority), which the Backend re-checks and consumes.
func (c *call) handlerEnv() catalog.Env {
	env := catalog.Env{Backend: c.g.b, Principal: c.p, Mode: c.g.mode, Progress: c.in.Progress, Seal: approval.Seal,
		Write: c.write, Authorization: c.auth}
	if env.Progress == nil {
		env.Progress = func(int, int, string) {}
	}
	if c.tool.Persists {
		wev := c.ev
		wev.Outcome = domain.OutcomeSuccess
		env.Write.Event = wev
	}
	return env
}

// handlerFailure maps the domain call's error. An error on the way back
// from a persisted write (a timeout after the commit) may hide a committed
// write, whose event is then already recorded: the key is asked, so the
// call has exactly one event either way.
func (c *call) handlerFailure(err error) *failure {
	f := c.g.domainFailure(err)
	if c.reqCtx.Err() != nil && f.code == CodeServiceUnavailable {
		f.auditCode = "request_cancelled"
	}
	if c.tool.Persists && !c.replay && f.code == CodeServiceUnavailable && !errors.Is(err, domain.ErrIdempotencyInFlight) &&
		c.committedWithWrite() {
		f.eventStored = true
		f.message = "The write may have completed: retry with the same idempotency_key to get its result."
	}
	return f
}

// eventLookup is a Backend that can say whether an event id is recorded.
type eventLookup interface {
	EventRecorded(ctx context.Context, id string) (bool, error)
}

// committedWithWrite reports whether this call's write committed (with its
// event) although the call failed on the way back. With an eventLookup the
// call's own event is looked up: the key alone cannot tell this call's
// commit from another call's with the same key (the attack review of issue
// 18 had a replay fail on a busy database and be taken for committed, left
// with no event). Without one (live), the key is asked, as before; a call
// that was a replay from the start never committed anything of its own.
func (c *call) committedWithWrite() bool {
	if el, ok := c.g.b.(eventLookup); ok {
		found, err := el.EventRecorded(c.ctx, c.ev.ID)
		return err == nil && found
	}
	state, err := c.g.b.CheckIdempotency(c.ctx, c.write.Idem)
	return err == nil && state == domain.IdemReplay
}

// project (step 10) puts the domain call's projection in the envelope, with
// its related records and warnings, and sets the outcome: a replay answers
// with what the original call did, a proposal is proposed, not a change
// (§19).
func (c *call) project() {
	c.ctx = step(c.ctx, audit.SpanResultProject)
	c.env.Data = c.data
	c.env.Related = c.eff.Related.Normalized()
	c.env.Warnings = append(c.env.Warnings, c.eff.Warnings...)
	c.ev.Related = c.env.Related
	if c.eff.Outcome.Replayed {
		c.env.Audit.Replayed = true
		c.env.Warnings = append(c.env.Warnings, catalog.Warning{Code: "idempotent_replay", Message: "This idempotency_key was already used with the same input: this is the original result; nothing was written again."})
		c.ev.Outcome = domain.OutcomeReplayed
		c.ev.Related.EventIDs = append(c.ev.Related.EventIDs, c.eff.Outcome.OriginalEventID)
		c.ev.Impact = domain.EventImpact{Type: "idempotent_replay"}
		if orig := c.eff.Outcome.OriginalEventID; orig != "" {
			c.ev.CausationID = &orig
		}
		c.stored = false
	} else {
		c.ev.Outcome = domain.OutcomeSuccess
	}
	c.env.Status = StatusSucceeded
	if len(c.env.Warnings) > 0 {
		c.env.Status = StatusSucceededWithWarnings
	}
	if c.tool.Tier == catalog.TierActionProposal {
		c.env.Status = StatusProposed
	}
}

// record (step 11) writes the call's one plugin_event, unless the Backend
// committed it with the write, and returns the envelope. It fails closed:
// a call whose audit cannot be written returns no data.
func (c *call) record() *Envelope {
	c.ctx = step(c.ctx, audit.SpanPluginEvent, attribute.Bool(audit.AttrEventStored, c.stored))
	if !c.stored {
		c.ev.Metrics.LatencyMS = ms(time.Since(c.started))
		var err error
		if c.countAtEvent {
			var f *failure
			if f, err = c.appendCounted(c.ctx, c.ev); f != nil {
				return c.refuse(f) // over the limit: the read's data is withheld
			}
		} else {
			err = c.g.appendEvent(c.ctx, c.ev)
		}
		if err != nil {
			c.g.log.Error("recording plugin_event failed", "tool", c.in.Tool, "err", err)
			c.env.Data, c.env.Related = nil, domain.Related{}.Normalized()
			c.env.Warnings = []catalog.Warning{}
			c.env.Status = StatusFailed
			c.env.Errors = []Error{{Code: CodeServiceUnavailable, Message: CodeServiceUnavailable.Message(), Retryable: true}}
		}
	}
	c.g.tel.finish(c.ctx, c.ev, c.env, c.started)
	return c.env
}

// refuse ends a call that a step refused: the envelope carries the one
// error and no data, and the event records the refusal (once: not when the
// write already committed it) with no impact and no cost.
func (c *call) refuse(f *failure) *Envelope {
	env, ev := c.env, c.ev
	info := codes[f.code]
	msg := f.message
	if msg == "" {
		msg = info.message
	}
	env.Data = nil
	env.Related = domain.Related{}.Normalized()
	env.Warnings = []catalog.Warning{}
	env.Errors = []Error{{Code: f.code, Message: msg, Field: f.field, Retryable: info.retryable, RetryAfterSeconds: f.retryAfter}}
	switch {
	case f.code == CodeApprovalRequired:
		env.Status = StatusApprovalRequired
	case info.blocked:
		env.Status = StatusBlocked
	default:
		env.Status = StatusFailed
	}
	ev.Outcome = domain.OutcomeFailed
	if info.blocked {
		ev.Outcome = domain.OutcomeBlocked
	}
	ev.ErrorCode = string(f.code)
	ev.AuditCode = f.auditCode
	ev.Impact = domain.EventImpact{Type: "none"}
	ev.Related = domain.Related{}.Normalized()
	ev.Metrics.LatencyMS = ms(time.Since(c.started))
	ev.Metrics.EstimatedCostUSD = 0 // nothing ran, nothing was consumed
	ctx := step(c.ctx, audit.SpanPluginEvent, attribute.Bool(audit.AttrEventStored, f.eventStored))
	if !f.eventStored {
		var err error
		if c.countAtEvent {
			var over *failure
			if over, err = c.appendCounted(ctx, ev); over != nil {
				return c.refuse(over) // counted with its refusal, and over the limit
			}
		} else {
			err = c.g.appendEvent(ctx, ev)
		}
		if err != nil {
			c.g.log.Error("recording plugin_event failed", "tool", ev.Tool.Name, "err", err)
		}
	}
	c.g.tel.finish(ctx, ev, env, c.started)
	return env
}
