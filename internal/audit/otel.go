package audit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// InstrumentationName names the tracer and meter of every trovesnap span
// and instrument.
const InstrumentationName = "github.com/triunalabs/trovesnap"

// Span names, exactly the §37 tree: one tool_call per invocation with one
// child per gate step.
const (
	SpanToolCall        = "trovesnap.mcp.tool_call"
	SpanClientResolve   = "trovesnap.mcp.client_resolve"
	SpanActorResolve    = "trovesnap.mcp.actor_resolve"
	SpanToolAuthorize   = "trovesnap.mcp.tool_authorize"
	SpanInputValidate   = "trovesnap.mcp.input_validate"
	SpanPolicyEvaluate  = "trovesnap.mcp.policy_evaluate"
	SpanApprovalResolve = "trovesnap.mcp.approval_resolve"
	SpanDomainExecute   = "trovesnap.domain.execute"
	SpanResultProject   = "trovesnap.mcp.result_project"
	SpanPluginEvent     = "trovesnap.plugin.event"
)

// SpanHTTPRequest is the span of one HTTP request to the remote server
// (mcp serve --http); the tool_call spans of the calls it carries are its
// children.
const SpanHTTPRequest = "trovesnap.http.request"

// SpanNames lists the tree in order (root first).
func SpanNames() []string {
	return []string{SpanToolCall, SpanClientResolve, SpanActorResolve, SpanToolAuthorize, SpanInputValidate,
		SpanPolicyEvaluate, SpanApprovalResolve, SpanDomainExecute, SpanResultProject, SpanPluginEvent}
}

// MetaTraceparent and MetaTracestate are the `_meta` keys of a request that
// carry the caller's W3C trace context (MCP semantic conventions).
const (
	MetaTraceparent = "traceparent"
	MetaTracestate  = "tracestate"
)

// Attribute keys. Values are ids, names, codes and numbers only: never
// arguments, titles, notes, messages, credentials or buyer data.
const (
	AttrTool          = "trovesnap.tool.name"
	AttrToolVersion   = "trovesnap.tool.version"
	AttrClient        = "trovesnap.client.id"
	AttrTenant        = "trovesnap.tenant.id"
	AttrActor         = "trovesnap.actor.id"
	AttrMode          = "trovesnap.mode"
	AttrTransport     = "trovesnap.transport"
	AttrOutcome       = "trovesnap.outcome"
	AttrStatus        = "trovesnap.status"
	AttrErrorCode     = "trovesnap.error.code"
	AttrAuditCode     = "trovesnap.audit.code"
	AttrEventID       = "trovesnap.plugin_event.id"
	AttrEventStored   = "trovesnap.plugin_event.committed_with_write"
	AttrCorrelation   = "trovesnap.correlation.id"
	AttrServerRequest = "trovesnap.server_request.id"
	AttrProposal      = "trovesnap.proposal.id"
	AttrApproval      = "trovesnap.approval.id"
	AttrDecision      = "trovesnap.approval.decision"
	AttrImpact        = "trovesnap.impact.type"
	AttrReplayed      = "trovesnap.idempotent_replay"
	AttrDeprecated    = "trovesnap.tool.deprecated"
	AttrSimulated     = "trovesnap.simulated"
	AttrMCPMethod     = "mcp.method.name"  // MCP semantic conventions
	AttrGenAITool     = "gen_ai.tool.name" // MCP semantic conventions
)

// Metric names (§37), one instrument per listed measure. "Mock vs live" is
// the trovesnap.mode attribute every call counter carries.
const (
	MetricCalls                 = "trovesnap.mcp.calls"
	MetricErrors                = "trovesnap.mcp.errors"
	MetricLatency               = "trovesnap.mcp.latency"
	MetricCost                  = "trovesnap.mcp.cost"
	MetricAuthzDenials          = "trovesnap.mcp.authorization.denials"
	MetricCrossTenant           = "trovesnap.mcp.cross_tenant.attempts"
	MetricProposalsCreated      = "trovesnap.mcp.proposals.created"
	MetricApprovalsRequired     = "trovesnap.mcp.approvals.required"
	MetricPolicyAuthorized      = "trovesnap.mcp.policy.authorized_actions"
	MetricCandidatesCreated     = "trovesnap.mcp.candidates.created"
	MetricCanonicalExecuted     = "trovesnap.mcp.canonical_actions.executed"
	MetricReplays               = "trovesnap.mcp.idempotent_replays"
	MetricStaleVersion          = "trovesnap.mcp.stale_version.failures"
	MetricNotificationsProposed = "trovesnap.mcp.notifications.proposed"
	MetricNotificationsSent     = "trovesnap.mcp.notifications.sent"
	MetricPublicActions         = "trovesnap.mcp.public_actions"
	MetricDestructiveBlocked    = "trovesnap.mcp.destructive.blocked"
	MetricClientLastUsed        = "trovesnap.mcp.client.last_used"
	MetricDeprecatedCalls       = "trovesnap.mcp.deprecated_tool.calls"
	// The approval decisions themselves are taken in another process (the
	// seller's `trovesnap approve`), so they are observed from the store.
	MetricApprovalsRequested = "trovesnap.approvals.requested"
	MetricApprovalsGranted   = "trovesnap.approvals.granted"
	MetricApprovalsDenied    = "trovesnap.approvals.denied"
	MetricApprovalsExpired   = "trovesnap.approvals.expired"
	MetricApprovalsRevoked   = "trovesnap.approvals.revoked"
)

// Metrics holds the §37 instruments the gate records on every call.
type Metrics struct {
	calls, errors, authz, crossTenant, proposals, approvalsRequired, policyAuthorized,
	candidates, canonical, replays, stale, notifProposed, notifSent, public, destructive, deprecated metric.Int64Counter
	latency  metric.Float64Histogram
	cost     metric.Float64Counter
	lastUsed metric.Float64Gauge
}

// NewMetrics creates the instruments on mp (nil: no-op).
func NewMetrics(mp metric.MeterProvider) (*Metrics, error) {
	if mp == nil {
		mp = metricnoop.NewMeterProvider()
	}
	m := mp.Meter(InstrumentationName)
	var (
		out  Metrics
		errs []error
	)
	counter := func(name, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithDescription(desc), metric.WithUnit("{call}"))
		errs = append(errs, err)
		return c
	}
	out.calls = counter(MetricCalls, "Tool calls, by tool, client, mode (mock or live) and outcome.")
	out.errors = counter(MetricErrors, "Tool calls that were blocked or failed, by error code.")
	out.authz = counter(MetricAuthzDenials, "Calls refused for authentication, client status, visibility, permission or sale assignment.")
	out.crossTenant = counter(MetricCrossTenant, "Calls that referenced another tenant's records or sent another tenant's id.")
	out.proposals = counter(MetricProposalsCreated, "Action proposals created.")
	out.approvalsRequired = counter(MetricApprovalsRequired, "Controlled-action calls answered approval_required (the seller's approval was requested).")
	out.policyAuthorized = counter(MetricPolicyAuthorized, "Controlled actions executed under an automation policy.")
	out.candidates = counter(MetricCandidatesCreated, "Candidate writes that created or changed a candidate.")
	out.canonical = counter(MetricCanonicalExecuted, "Controlled actions executed (canonical domain functions run).")
	out.replays = counter(MetricReplays, "Persisted writes answered from the idempotency record.")
	out.stale = counter(MetricStaleVersion, "Calls refused because a target moved past its expected version.")
	out.notifProposed = counter(MetricNotificationsProposed, "Buyer-notification proposals created.")
	out.notifSent = counter(MetricNotificationsSent, "Buyer notifications executed (simulated in mock mode).")
	out.public = counter(MetricPublicActions, "Executions that changed public visibility.")
	out.destructive = counter(MetricDestructiveBlocked, "Blocked calls to tools that change canonical or public state.")
	out.deprecated = counter(MetricDeprecatedCalls, "Calls of a deprecated tool or tool version.")
	var err error
	out.latency, err = m.Float64Histogram(MetricLatency, metric.WithDescription("Tool call latency."), metric.WithUnit("ms"))
	errs = append(errs, err)
	out.cost, err = m.Float64Counter(MetricCost, metric.WithDescription("Estimated cost of executed actions (paid resources)."), metric.WithUnit("USD"))
	errs = append(errs, err)
	out.lastUsed, err = m.Float64Gauge(MetricClientLastUsed, metric.WithDescription("When a client last made a call (Unix time)."), metric.WithUnit("s"))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("audit: creating instruments: %w", err)
	}
	return &out, nil
}

// CallFacts is what one finished call contributes to the metrics: ids,
// names, codes and numbers only.
type CallFacts struct {
	Tool, ToolVersion, ClientID, Mode, Outcome, Status string
	ErrorCode, AuditCode, Tier, ImpactType, Decision   string
	AuthzDenial, CrossTenant, Destructive, Deprecated  bool
	NotificationProposal, CanonicalChanged, Public     bool
	LatencyMS, CostUSD                                 float64
	At                                                 time.Time
}

// Record adds one call to the instruments.
func (m *Metrics) Record(ctx context.Context, f CallFacts) {
	tool := attribute.String(AttrTool, safe(f.Tool))
	client := attribute.String(AttrClient, safe(f.ClientID))
	base := metric.WithAttributes(tool, client)
	m.calls.Add(ctx, 1, metric.WithAttributes(tool, client, attribute.String(AttrMode, safe(f.Mode)), attribute.String(AttrOutcome, safe(f.Outcome))))
	m.latency.Record(ctx, f.LatencyMS, metric.WithAttributes(tool, attribute.String(AttrOutcome, safe(f.Outcome))))
	if f.ClientID != "" {
		m.lastUsed.Record(ctx, float64(f.At.UnixNano())/1e9, metric.WithAttributes(client))
	}
	if f.Deprecated {
		m.deprecated.Add(ctx, 1, metric.WithAttributes(tool, attribute.String(AttrToolVersion, safe(f.ToolVersion))))
	}
	if f.CrossTenant {
		m.crossTenant.Add(ctx, 1, base)
	}
	ok := f.Outcome == "success"
	if f.Outcome == "blocked" || f.Outcome == "failed" {
		code := metric.WithAttributes(tool, client, attribute.String(AttrErrorCode, safe(f.ErrorCode)))
		m.errors.Add(ctx, 1, code)
		if f.AuthzDenial {
			m.authz.Add(ctx, 1, code)
		}
		if f.ErrorCode == "approval_required" {
			m.approvalsRequired.Add(ctx, 1, base)
		}
		if f.ErrorCode == "stale_target_version" {
			m.stale.Add(ctx, 1, base)
		}
		if f.Destructive && f.Outcome == "blocked" {
			m.destructive.Add(ctx, 1, code)
		}
	}
	if f.Outcome == "replayed" {
		m.replays.Add(ctx, 1, base)
	}
	if !ok {
		return
	}
	switch f.Tier {
	case "action_proposal":
		m.proposals.Add(ctx, 1, base)
		if f.NotificationProposal {
			m.notifProposed.Add(ctx, 1, base)
		}
	case "candidate_write":
		if f.ImpactType == "candidate_created" || f.ImpactType == "candidate_media_attached" {
			m.candidates.Add(ctx, 1, base)
		}
	case "controlled_action":
		m.canonical.Add(ctx, 1, base)
		if f.Decision == "allowed_by_policy" {
			m.policyAuthorized.Add(ctx, 1, base)
		}
		if f.ImpactType == "notification" {
			m.notifSent.Add(ctx, 1, metric.WithAttributes(tool, client, attribute.Bool(AttrSimulated, f.Mode == "mock")))
		}
		if f.CostUSD > 0 {
			m.cost.Add(ctx, f.CostUSD, base)
		}
	}
	if f.Public {
		m.public.Add(ctx, 1, base)
	}
}

// safe returns v if it may be an attribute value, and "redacted" otherwise.
func safe(v string) string {
	if SafeAttributeValue(v) {
		return v
	}
	return "redacted"
}

// SafeAttr builds a string attribute, replacing a value that is not an id,
// name or code with "redacted".
func SafeAttr(k, v string) attribute.KeyValue { return attribute.String(k, safe(v)) }

// ApprovalCounter reads the store's running approval totals (store.Store's
// ApprovalCounts): requested, granted_human, granted_policy, denied,
// revoked, expired.
type ApprovalCounter func(ctx context.Context) (map[string]int64, error)

// ObserveApprovals registers the approval instruments as asynchronous
// counters read from the store at each collection.
func ObserveApprovals(mp metric.MeterProvider, counts ApprovalCounter) (metric.Registration, error) {
	if mp == nil {
		mp = metricnoop.NewMeterProvider()
	}
	m := mp.Meter(InstrumentationName)
	var (
		ins  = map[string]metric.Int64ObservableCounter{}
		errs []error
	)
	for name, desc := range map[string]string{
		MetricApprovalsRequested: "Proposals created, each awaiting a seller's or policy's decision.",
		MetricApprovalsGranted:   "Approval grants issued, by issuer (human or policy).",
		MetricApprovalsDenied:    "Proposals the seller rejected.",
		MetricApprovalsExpired:   "Grants that expired unused.",
		MetricApprovalsRevoked:   "Grants revoked.",
	} {
		c, err := m.Int64ObservableCounter(name, metric.WithDescription(desc), metric.WithUnit("{approval}"))
		errs = append(errs, err)
		ins[name] = c
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("audit: approval instruments: %w", err)
	}
	list := make([]metric.Observable, 0, len(ins))
	for _, c := range ins {
		list = append(list, c)
	}
	return m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		n, err := counts(ctx)
		if err != nil {
			return err
		}
		issuer := func(v string) metric.ObserveOption {
			return metric.WithAttributes(attribute.String("trovesnap.approval.issuer", v))
		}
		o.ObserveInt64(ins[MetricApprovalsRequested], n["requested"])
		o.ObserveInt64(ins[MetricApprovalsGranted], n["granted_human"], issuer("human"))
		o.ObserveInt64(ins[MetricApprovalsGranted], n["granted_policy"], issuer("policy"))
		o.ObserveInt64(ins[MetricApprovalsDenied], n["denied"])
		o.ObserveInt64(ins[MetricApprovalsExpired], n["expired"])
		o.ObserveInt64(ins[MetricApprovalsRevoked], n["revoked"])
		return nil
	}, list...)
}

// Providers are the telemetry providers of a process.
type Providers struct {
	Tracer trace.TracerProvider
	Meter  metric.MeterProvider
	// Enabled says an exporter is configured; otherwise both are no-ops.
	Enabled  bool
	Shutdown func(context.Context) error
}

// SetupOTel builds the providers from the standard environment: OTLP over
// HTTP when OTEL_EXPORTER_OTLP_ENDPOINT (or the traces / metrics specific
// variant) is set and OTEL_SDK_DISABLED is not "true"; no-op providers
// otherwise, so nothing is collected and nothing is sent. The exporters read
// the other OTEL_EXPORTER_OTLP_* variables (headers, timeout, protocol
// details) themselves. Nothing is ever written to stdout — in `mcp serve`
// stdout is the JSON-RPC wire — and exporter errors go to logger. Globals
// are left alone: the providers are passed to the gate explicitly.
func SetupOTel(ctx context.Context, getenv func(string) string, version string, logger *slog.Logger) (Providers, error) {
	off := Providers{Tracer: tracenoop.NewTracerProvider(), Meter: metricnoop.NewMeterProvider(), Shutdown: func(context.Context) error { return nil }}
	traces := getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
	metrics := getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") != ""
	if getenv("OTEL_SDK_DISABLED") == "true" || (!traces && !metrics) {
		return off, nil
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { logger.Warn("opentelemetry", "err", err) }))
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(
		attribute.String("service.name", "trovesnap"), attribute.String("service.version", version)))
	if err != nil {
		res = resource.Default()
	}
	out := off
	out.Enabled = true
	var shutdowns []func(context.Context) error
	if traces {
		te, err := otlptracehttp.New(ctx)
		if err != nil {
			return off, fmt.Errorf("opentelemetry: trace exporter: %w", err)
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(te), sdktrace.WithResource(res))
		out.Tracer = tp
		shutdowns = append(shutdowns, tp.Shutdown)
	}
	if metrics {
		me, err := otlpmetrichttp.New(ctx)
		if err != nil {
			return off, fmt.Errorf("opentelemetry: metric exporter: %w", err)
		}
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(me)), sdkmetric.WithResource(res))
		out.Meter = mp
		shutdowns = append(shutdowns, mp.Shutdown)
	}
	out.Shutdown = func(ctx context.Context) error {
		var errs []error
		for _, s := range shutdowns {
			errs = append(errs, s(ctx))
		}
		return errors.Join(errs...)
	}
	return out, nil
}
