package gate

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/triunalabs/trovesnap/internal/audit"
	"github.com/triunalabs/trovesnap/internal/catalog"
	"github.com/triunalabs/trovesnap/internal/domain"
)

// telemetry is the gate's OpenTelemetry plumbing (§37): one
// trovesnap.mcp.tool_call span per call, one child span per gate step, and
// the §37 instruments recorded from the call's final plugin_event. Without
// a provider nothing is built: no span, no attribute, no metric facts (a
// caller's trace context is still read, so its event records the trace).
type telemetry struct {
	tracer  trace.Tracer
	metrics *audit.Metrics
	tracing bool // a TracerProvider was given
	metered bool // a MeterProvider was given
}

func newTelemetry(tp trace.TracerProvider, mp metric.MeterProvider, log *slog.Logger) *telemetry {
	tracing := tp != nil
	if tp == nil {
		tp = tracenoop.NewTracerProvider()
	}
	metered := mp != nil
	m, err := audit.NewMetrics(mp)
	if err != nil {
		log.Error("telemetry instruments unavailable; metrics off", "err", err)
		m, _ = audit.NewMetrics(nil)
		metered = false
	}
	return &telemetry{tracer: tp.Tracer(audit.InstrumentationName), metrics: m, tracing: tracing, metered: metered}
}

// callSpans is one call's span tree, carried in the call's context so that
// run can mark its steps without changing its signature.
type callSpans struct {
	tel     *telemetry
	root    trace.Span
	rootCtx context.Context
	step    trace.Span
}

type callSpansKey struct{}

// propagator reads a caller's W3C trace context. It is not the global one:
// the gate's behaviour must not depend on process-wide state.
var propagator = propagation.TraceContext{}

// startCall starts the tool_call span, continuing the caller's trace when
// the request's `_meta` carries a W3C traceparent.
func (t *telemetry) startCall(ctx context.Context, c Call, serverRequestID, eventID string, mode domain.Mode) context.Context {
	carrier := propagation.MapCarrier{}
	for _, k := range []string{audit.MetaTraceparent, audit.MetaTracestate} {
		if v, ok := c.Meta[k].(string); ok && len(v) <= 512 {
			carrier[k] = v
		}
	}
	if len(carrier) > 0 {
		ctx = propagator.Extract(ctx, carrier)
	}
	if !t.tracing {
		return ctx
	}
	tool := "unknown" // the requested name is caller text until the catalog knows it
	if _, ok := catalog.Lookup(c.Tool); ok {
		tool = c.Tool
	}
	ctx, root := t.tracer.Start(ctx, audit.SpanToolCall, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(
		attribute.String(audit.AttrMCPMethod, "tools/call"), audit.SafeAttr(audit.AttrGenAITool, tool), audit.SafeAttr(audit.AttrTool, tool),
		audit.SafeAttr(audit.AttrTransport, c.Transport), audit.SafeAttr(audit.AttrMode, string(mode)),
		audit.SafeAttr(audit.AttrServerRequest, serverRequestID), audit.SafeAttr(audit.AttrEventID, eventID)))
	cs := &callSpans{tel: t, root: root}
	cs.rootCtx = context.WithValue(ctx, callSpansKey{}, cs)
	return cs.rootCtx
}

// StartHTTPSpan starts the span of one HTTP request (a server span,
// continuing the W3C trace context of its headers), with the gate's tracer
// so that the calls it carries join it (ContextWithHTTPSpan). end records
// the response's status.
func (g *Gate) StartHTTPSpan(ctx context.Context, header http.Header, method, route string) (context.Context, func(status int)) {
	ctx = propagator.Extract(ctx, propagation.HeaderCarrier(header))
	ctx, span := g.tel.tracer.Start(ctx, audit.SpanHTTPRequest, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(
		audit.SafeAttr("http.request.method", method), attribute.String("http.route", route)))
	return ctx, func(status int) {
		span.SetAttributes(attribute.Int("http.response.status_code", status))
		if status >= 500 {
			span.SetStatus(otelcodes.Error, http.StatusText(status))
		}
		span.End()
	}
}

// ContextWithHTTPSpan makes the HTTP request span sc the parent of a call's
// spans (the SDK hands a call a session's context, not its request's).
func ContextWithHTTPSpan(ctx context.Context, sc trace.SpanContext) context.Context {
	if !sc.IsValid() {
		return ctx
	}
	return trace.ContextWithSpanContext(ctx, sc)
}

// traceIDs are the ids an event records: the trace (the caller's when it
// sent one), and our tool_call span when it is being recorded.
func traceIDs(ctx context.Context) (traceID, spanID string) {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.HasTraceID() {
		return "", ""
	}
	if trace.SpanFromContext(ctx).IsRecording() {
		return sc.TraceID().String(), sc.SpanID().String()
	}
	return sc.TraceID().String(), ""
}

// step ends the current step's span and starts the named one as a child of
// the call's root; the returned context carries it (so a Backend that
// traces its own work nests under it).
func step(ctx context.Context, name string, attrs ...attribute.KeyValue) context.Context {
	cs, _ := ctx.Value(callSpansKey{}).(*callSpans)
	if cs == nil {
		return ctx
	}
	if cs.step != nil {
		cs.step.End()
	}
	var sp trace.Span
	ctx, sp = cs.tel.tracer.Start(cs.rootCtx, name, trace.WithAttributes(attrs...))
	cs.step = sp
	return ctx
}

// finish ends the call's spans and records its metrics, from the call's
// final event (outcome, codes, impact) and envelope status.
func (t *telemetry) finish(ctx context.Context, ev domain.Event, env *Envelope, started time.Time) {
	cs, _ := ctx.Value(callSpansKey{}).(*callSpans)
	if cs == nil && !t.metered {
		return
	}
	latency := ms(time.Since(started))
	tool, known := catalog.Lookup(ev.Tool.Name)
	facts := audit.CallFacts{
		Tool: "unknown", ToolVersion: ev.Tool.Version, ClientID: ev.Client.ID, Mode: string(ev.Mode), Outcome: ev.Outcome,
		Status: string(env.Status), ErrorCode: ev.ErrorCode, AuditCode: ev.AuditCode, Tier: ev.Tool.Tier,
		ImpactType: ev.Impact.Type, Decision: ev.Approval.Decision, Deprecated: ev.Tool.Deprecated,
		CanonicalChanged: ev.Impact.CanonicalStateChanged, Public: ev.Impact.PublicStateChanged,
		LatencyMS: latency, CostUSD: ev.Metrics.EstimatedCostUSD, At: ev.OccurredAt,
		CrossTenant: ev.ErrorCode == string(CodeCrossTenantReference) || ev.AuditCode == string(CodeCrossTenantReference),
		AuthzDenial: slices.Contains(authzCodes, Code(ev.ErrorCode)),
	}
	if known {
		facts.Tool = tool.Name
		facts.Destructive = catalog.HintsFor(tool).Destructive
		notify, _ := domain.ActionOf(domain.ActionBuyerNotify)
		facts.NotificationProposal = tool.Name == notify.ProposalTool
	}
	if t.metered {
		t.metrics.Record(ctx, facts)
	}
	if cs == nil {
		return
	}
	if cs.step != nil {
		cs.step.End()
	}
	attrs := []attribute.KeyValue{
		audit.SafeAttr(audit.AttrTool, facts.Tool), audit.SafeAttr(audit.AttrToolVersion, ev.Tool.Version),
		audit.SafeAttr(audit.AttrClient, ev.Client.ID), audit.SafeAttr(audit.AttrTenant, ev.TenantID),
		audit.SafeAttr(audit.AttrActor, ev.Actor.ID), audit.SafeAttr(audit.AttrOutcome, ev.Outcome),
		audit.SafeAttr(audit.AttrStatus, string(env.Status)), audit.SafeAttr(audit.AttrCorrelation, ev.CorrelationID),
		audit.SafeAttr(audit.AttrImpact, ev.Impact.Type), audit.SafeAttr(audit.AttrDecision, ev.Approval.Decision),
		attribute.Bool(audit.AttrReplayed, ev.Outcome == domain.OutcomeReplayed), attribute.Bool(audit.AttrDeprecated, ev.Tool.Deprecated),
	}
	if ev.ErrorCode != "" {
		attrs = append(attrs, audit.SafeAttr(audit.AttrErrorCode, ev.ErrorCode))
	}
	if ev.AuditCode != "" {
		attrs = append(attrs, audit.SafeAttr(audit.AttrAuditCode, ev.AuditCode))
	}
	if ev.Approval.ProposalID != nil {
		attrs = append(attrs, audit.SafeAttr(audit.AttrProposal, *ev.Approval.ProposalID))
	}
	if ev.Approval.ApprovalID != nil {
		attrs = append(attrs, audit.SafeAttr(audit.AttrApproval, *ev.Approval.ApprovalID))
	}
	cs.root.SetAttributes(attrs...)
	if ev.Outcome == domain.OutcomeFailed {
		// Blocked calls are the policy working, not errors of the server.
		cs.root.SetStatus(otelcodes.Error, safeCode(ev.ErrorCode))
	}
	cs.root.End()
}

// authzCodes are the refusals §37 counts as authorization denials.
var authzCodes = []Code{CodeAuthenticationRequired, CodeClientNotRegistered, CodeClientSuspended, CodeTenantScopeRequired,
	CodePermissionDenied, CodeSaleAssignmentRequired, CodeToolNotAvailable, CodeCrossTenantReference}

func safeCode(c string) string {
	if audit.SafeAttributeValue(c) {
		return c
	}
	return "redacted"
}

// permissionsUsed are the permissions that let p call t: all of the tool's
// required ones and those of its any-of set that p holds.
func permissionsUsed(t *catalog.Tool, p domain.Principal) []string {
	out := slices.Clone(t.Permissions)
	for _, perm := range t.AnyPermissions {
		if p.Has(perm) {
			out = append(out, perm)
		}
	}
	return out
}

// issuerOf is who issued the authority the approval step found: the human
// grant's issuer as recorded on the grant, or the policy at its version.
func issuerOf(auth domain.Authorization, grants []domain.Grant) *domain.GrantIssuer {
	switch {
	case auth.GrantID != "":
		for _, g := range grants {
			if g.ID == auth.GrantID {
				iss := g.IssuedBy
				return &iss
			}
		}
	case auth.PolicyID != "":
		return &domain.GrantIssuer{Type: domain.IssuerPolicy, PolicyID: auth.PolicyID, PolicyVersion: auth.PolicyVersion}
	}
	return nil
}
