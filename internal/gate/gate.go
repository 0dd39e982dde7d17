package gate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/triunalabs/trovesnap/internal/catalog"
	"github.com/triunalabs/trovesnap/internal/domain"
)

// MetaToolVersion is the `_meta` key a caller uses to pin a tool version
// ("1", "1.0" or "1.0.0"; only the major is binding).
const MetaToolVersion = "trovesnap/tool_version"

// MetaTenantHint is the `_meta` key of a client-sent tenant hint. Hints never
// choose a tenant: one that differs from the client's own is refused.
const MetaTenantHint = "trovesnap/tenant_id"

// Options configure a Gate. Backend, Mode and ServerVersion are required.
type Options struct {
	Backend       domain.Backend
	Mode          domain.Mode
	Clock         domain.Clock // event time; default SystemClock
	IDs           domain.IDs   // request, correlation and event ids; default RandomIDs
	ServerVersion string
	Logger        *slog.Logger // diagnostics (stderr); default discard
	// TracerProvider and MeterProvider receive the §37 spans and metrics;
	// nil means no-op, the default: telemetry is off unless configured.
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
	// ArgumentBytesInFlight bounds the argument bytes of all calls being
	// parsed or run at once (default DefaultArgumentBytesInFlight).
	ArgumentBytesInFlight int
}

// DefaultArgumentBytesInFlight is the gate-wide budget of argument bytes in
// flight: the largest arguments any tool accepts
// (catalog.MaxToolArgumentBytes, 12 MiB). Decoding, validating and
// canonicalising arguments costs a few times their size (an 11 MB photo
// call peaks near 60 MB of live heap), so one call of the largest tools
// runs at a time while small calls share the rest: peak memory stays
// bounded whatever arrives.
func DefaultArgumentBytesInFlight() int { return catalog.MaxToolArgumentBytes() }

// argumentWait is how long a call may wait for its argument bytes before it
// is refused as service_unavailable (retryable).
const argumentWait = 5 * time.Second

// Gate runs tool calls. It is safe for concurrent use.
type Gate struct {
	b       domain.Backend
	mode    domain.Mode
	clock   domain.Clock
	ids     domain.IDs
	version string
	log     *slog.Logger
	tel     *telemetry
	argMem  *byteBudget
	unres   unresolvedLimiter
	full    fullWindows // limit windows seen full (ratefold.go)
}

// New builds a Gate.
func New(o Options) *Gate {
	g := &Gate{b: o.Backend, mode: o.Mode, clock: o.Clock, ids: o.IDs, version: o.ServerVersion, log: o.Logger}
	if g.clock == nil {
		g.clock = domain.SystemClock{}
	}
	if g.ids == nil {
		g.ids = domain.RandomIDs{}
	}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	g.tel = newTelemetry(o.TracerProvider, o.MeterProvider, g.log)
	budget := o.ArgumentBytesInFlight
	if budget <= 0 {
		budget = DefaultArgumentBytesInFlight()
	}
	g.argMem = newByteBudget(budget)
	return g
}

// Mode is the server mode fixed at start-up.
func (g *Gate) Mode() domain.Mode { return g.mode }

// Call is one tools/call as the transport received it.
type Call struct {
	Tool       string
	Arguments  json.RawMessage
	Meta       map[string]any
	Credential string // from TROVESNAP_CLIENT_TOKEN (stdio) or a bearer token (HTTP)
	// Connector, when set, is the caller instead of Credential: signed in
	// through OAuth, its access token verified by the HTTP server.
	Connector *domain.Connector
	Transport string
	// Progress reports progress of a long call when the caller sent an MCP
	// progressToken; nil otherwise.
	Progress func(done, total int, message string)
	// Admission is the verdict of a transport that decided the raw
	// arguments before decoding the call (Admit's admission, whose bytes
	// the transport releases itself, or a refusal); nil means the gate
	// applies Admit itself.
	Admission *Admission
}

// VisibleTools returns the tools the credential's principal may see, in
// catalog order. A credential that does not resolve (unknown, suspended,
// revoked, store unreadable) sees nothing: discovery fails closed.
func (g *Gate) VisibleTools(ctx context.Context, credential string) []*catalog.Tool {
	return g.VisibleToolsOf(ctx, credential, nil)
}

// VisibleToolsOf is VisibleTools of a call's caller: the connector when
// there is one, else the credential.
func (g *Gate) VisibleToolsOf(ctx context.Context, credential string, conn *domain.Connector) []*catalog.Tool {
	if conn == nil && credential != "" && credential != domain.PublicCredential && !domain.WellFormedToken(credential) {
		return nil // malformed: never looked up, as in a call's first step
	}
	p, err := g.resolve(ctx, credential, conn)
	if err != nil {
		return nil
	}
	var out []*catalog.Tool
	for i := range catalog.All() {
		t := &catalog.All()[i]
		if catalog.Decide(t, g.mode, p).Visible {
			out = append(out, t)
		}
	}
	return out
}

// Authenticate resolves a credential as a call's first step does, for a
// transport that answers before any call (HTTP: 401 for a token that is no
// registered client). nil for an active client; domain.ErrClientSuspended,
// ErrClientNotRegistered (also for a malformed token, which never reaches
// the store) or ErrAuthRequired; any other error means the store did not
// answer. Each call still resolves its credential again.
func (g *Gate) Authenticate(ctx context.Context, credential string) error {
	switch {
	case credential == "" || credential == domain.PublicCredential:
		return domain.ErrAuthRequired
	case !domain.WellFormedToken(credential):
		return domain.ErrClientNotRegistered
	}
	_, err := g.b.ResolvePrincipal(ctx, credential)
	return err
}

// AuthenticateConnector is Authenticate of a caller signed in through
// OAuth: its bound client must be active (or suspended, reported as such).
func (g *Gate) AuthenticateConnector(ctx context.Context, conn domain.Connector) error {
	_, err := g.b.ResolveConnector(ctx, conn)
	return err
}

// resolve resolves a caller: the connector when there is one, else the
// credential.
func (g *Gate) resolve(ctx context.Context, credential string, conn *domain.Connector) (domain.Principal, error) {
	if conn != nil {
		return g.b.ResolveConnector(ctx, *conn)
	}
	return g.b.ResolvePrincipal(ctx, credential)
}

// failure is a gate-level rejection: the envelope code, an optional field,
// a message overriding the default, and an audit-only code.
type failure struct {
	code       Code
	field      string
	message    string
	auditCode  string
	retryAfter int
	// eventStored: the call's event was already committed (with a write
	// whose answer was lost); finishing must not record a second one.
	eventStored bool
}

func fail(code Code) *failure { return &failure{code: code} }

// Invoke runs one call through every step of the gate (road.go) and returns
// its envelope. It never panics and always records exactly one plugin_event
// (committed with the write for persisted writes, appended otherwise). The
// request's cancellation (notifications/cancelled, a disconnect) does not
// skip the call's bookkeeping: see call.
func (g *Gate) Invoke(ctx context.Context, in Call) (env *Envelope) {
	c := g.newCall(ctx, in)
	release := c.admitArguments()
	defer release()
	defer c.releaseFold()
	defer c.recoverPanic(&env)
	if f := c.run(); f != nil {
		return c.refuse(f)
	}
	c.project()
	return c.record()
}

// auditTimeout bounds one plugin_event write. The write is detached from the
// request's cancellation (a cancelled or disconnected call is still
// recorded) and bounded by this instead, so a stuck store cannot hold a call
// forever. It is generous: under load the write waits for the single writer
// connection behind other calls' writes (each bounded by SQLite's 5 s
// busy_timeout), and a call whose event cannot be written fails closed.
const auditTimeout = 30 * time.Second

// appendEvent records a call's event detached from the request's cancellation.
func (g *Gate) appendEvent(ctx context.Context, ev domain.Event) error {
	ctx, cancel := auditContext(ctx)
	defer cancel()
	return g.b.AppendEvent(ctx, ev)
}

// auditContext is the context of an event write: detached from the
// request's cancellation, bounded by auditTimeout.
func auditContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), auditTimeout)
}

// unresolved counts a call whose credential reaches no active client in the
// process's own budget; over it the refusal becomes rate_limited (its one
// event is still written, with the original refusal as audit code).
func (g *Gate) unresolved(credential string, f *failure) *failure {
	ok, retry := g.unres.allow(credential, g.clock.Now())
	if ok {
		return f
	}
	return &failure{code: CodeRateLimited, retryAfter: retry, auditCode: "unresolved_" + string(f.code),
		message: fmt.Sprintf("Too many calls with a credential that is not an active client (%d a minute at most): retry in %d s.", unresolvedPerMinute, retry)}
}

// principalFailure maps a credential resolution error.
func principalFailure(err error) *failure {
	switch {
	case errors.Is(err, domain.ErrClientSuspended):
		return fail(CodeClientSuspended)
	case errors.Is(err, domain.ErrClientNotRegistered):
		return fail(CodeClientNotRegistered)
	case errors.Is(err, domain.ErrAuthRequired):
		return fail(CodeAuthenticationRequired)
	default:
		return fail(CodeServiceUnavailable) // fail closed: an unreadable store grants nothing
	}
}

// domainFailure maps a Backend or handler error to the taxonomy, in one table.
func (g *Gate) domainFailure(err error) *failure {
	var ie *domain.InputError
	var re *domain.RefError
	var rl *domain.RateLimitError
	switch {
	case errors.As(err, &ie):
		return &failure{code: CodeInvalidInput, field: ie.Field, message: fmt.Sprintf("Invalid %s: %s.", ie.Field, ie.Reason)}
	case errors.As(err, &re):
		f := &failure{code: CodeInvalidReference, field: re.Field, message: fmt.Sprintf("%s %s does not exist or is not visible to you.", re.Field, re.ID)}
		if re.CrossTenant {
			f.auditCode = string(CodeCrossTenantReference)
		}
		return f
	case errors.Is(err, domain.ErrIdempotencyConflict):
		return fail(CodeIdempotencyConflict)
	case errors.Is(err, domain.ErrIdempotencyInFlight):
		return &failure{code: CodeServiceUnavailable, message: "A request with this idempotency_key is still running: retry shortly."}
	case errors.Is(err, domain.ErrStaleVersion):
		return detailed(CodeStaleTargetVersion, err, domain.ErrStaleVersion)
	case errors.Is(err, domain.ErrTransitionInvalid):
		return detailed(CodeDomainTransitionInvalid, err, domain.ErrTransitionInvalid)
	case errors.Is(err, domain.ErrPermissionDenied):
		return detailed(CodePermissionDenied, err, domain.ErrPermissionDenied)
	case errors.Is(err, domain.ErrSaleAssignment):
		return fail(CodeSaleAssignmentRequired)
	case errors.Is(err, domain.ErrApprovalRequired):
		return detailed(CodeApprovalRequired, err, domain.ErrApprovalRequired)
	case errors.Is(err, domain.ErrApprovalInvalid):
		return detailed(CodeApprovalInvalid, err, domain.ErrApprovalInvalid)
	case errors.Is(err, domain.ErrApprovalExpired):
		return detailed(CodeApprovalExpired, err, domain.ErrApprovalExpired)
	case errors.Is(err, domain.ErrApprovalRevoked):
		return detailed(CodeApprovalRevoked, err, domain.ErrApprovalRevoked)
	case errors.Is(err, domain.ErrApprovalConsumed):
		return detailed(CodeApprovalAlreadyConsumed, err, domain.ErrApprovalConsumed)
	case errors.Is(err, domain.ErrProposalChanged):
		return detailed(CodeProposalChanged, err, domain.ErrProposalChanged)
	case errors.Is(err, domain.ErrCostLimit):
		return detailed(CodeCostLimitExceeded, err, domain.ErrCostLimit)
	case errors.Is(err, domain.ErrCandidateRequired):
		return detailed(CodeCandidateRequired, err, domain.ErrCandidateRequired)
	case errors.As(err, &rl):
		return rateLimitedIn(rl.Class, rl.Limit, rl.RetryAfterSeconds)
	case errors.Is(err, domain.ErrRateLimited):
		return fail(CodeRateLimited)
	case errors.Is(err, domain.ErrInvalidInput):
		return fail(CodeInvalidInput)
	case errors.Is(err, domain.ErrNotFound):
		return fail(CodeInvalidReference)
	default:
		g.log.Error("backend call failed", "err", err)
		return fail(CodeServiceUnavailable)
	}
}

// detailed adds the domain's own reason (written for a model: ids, versions
// and states, never storage internals) to a code's message. Only a typed
// reason (domain.Because) is shown; an error that gives none, or gives it
// only as text (fmt.Errorf around the sentinel), gets the code's generic
// message alone: an error's text is for the logs and is never taken apart
// for a model.
func detailed(code Code, err, sentinel error) *failure {
	reason := reasonOf(err, sentinel)
	if reason == "" {
		return fail(code)
	}
	return &failure{code: code, message: codes[code].message + " (" + reason + ")"}
}

// reasonOf is the model-visible reason err gives for sentinel: the Reason
// of a domain.ReasonError for it, read by type; "" when there is none.
// Context wrapped around one ("store: ", "consuming grant g: ") is for logs
// and is not shown.
func reasonOf(err, sentinel error) string {
	var re *domain.ReasonError
	if errors.As(err, &re) && re.Sentinel == sentinel {
		return re.Reason
	}
	return ""
}

// tenantHint refuses a tenant hint (in _meta or as a tenant_id argument) that
// differs from the principal's tenant.
func tenantHint(meta map[string]any, args map[string]json.RawMessage, p domain.Principal) *failure {
	var hints []string
	if v, ok := meta[MetaTenantHint].(string); ok {
		hints = append(hints, v)
	}
	if raw, ok := args["tenant_id"]; ok {
		var v string
		if json.Unmarshal(raw, &v) != nil {
			return &failure{code: CodeInvalidInput, field: "tenant_id", message: "tenant_id must be a string (it is a hint only)."}
		}
		hints = append(hints, v)
	}
	for _, h := range hints {
		if h != p.TenantID {
			return &failure{code: CodeCrossTenantReference, field: "tenant_id", auditCode: string(CodeCrossTenantReference)}
		}
	}
	return nil
}

// checkVersion applies the §25 rule: no pin or the current major runs; a
// deprecated major (still supported) runs with a warning; anything else is
// tool_version_unsupported. A deprecated tool is deprecated at any version.
func checkVersion(meta map[string]any, t *catalog.Tool) (deprecated bool, f *failure) {
	deprecated = t.Status == catalog.StatusDeprecated
	v, ok := meta[MetaToolVersion]
	if !ok {
		return deprecated, nil
	}
	s, ok := v.(string)
	if !ok {
		return false, &failure{code: CodeToolVersionUnsupported, message: "trovesnap/tool_version must be a string such as \"1\"."}
	}
	maj, _, _ := strings.Cut(strings.TrimPrefix(s, "v"), ".")
	n, err := strconv.Atoi(maj)
	switch {
	case err == nil && n == t.Major():
		return deprecated, nil
	case err == nil && slices.Contains(t.DeprecatedMajors, n):
		return true, nil
	}
	return false, &failure{code: CodeToolVersionUnsupported, message: fmt.Sprintf("%s supports major version %d (current %s).", t.Name, t.Major(), t.Version)}
}

// chargeable reports whether a refusal counts against the rejected budget:
// the caller's own doing, not the server's (service_unavailable) nor an
// unresolved credential's.
func chargeable(c Code) bool {
	switch c {
	case CodeInvalidInput, CodeToolNotAvailable, CodeToolVersionUnsupported, CodeCrossTenantReference,
		CodeAuthenticationRequired, CodeInvalidReference, CodePermissionDenied:
		return true
	}
	return false
}

// chargeRefusal counts a refusal in the rejected class; over the budget the
// refusal becomes rate_limited (the audit code keeps what was refused).
func (g *Gate) chargeRefusal(ctx context.Context, p domain.Principal, f *failure) *failure {
	rd, err := g.b.ConsumeRate(ctx, p, domain.LimitRejected)
	if err != nil {
		return g.domainFailure(err)
	}
	if rd.Allowed {
		return f
	}
	return &failure{code: CodeRateLimited, retryAfter: rd.RetryAfterSeconds, auditCode: "rejected_" + string(f.code),
		message: fmt.Sprintf("Rate limit of %d refused calls per minute reached for this client: fix the calls and retry in %d s.", rd.Limit, rd.RetryAfterSeconds)}
}

// limitClass maps a tier to its §38 limit class.
func limitClass(t catalog.Tier) string { return t.LimitClass() }

// callCounter is a Backend that counts a tool's call in its limit class
// inside the call itself (live mode: the RPC's wrapper counts, so a caller
// who calls the RPC directly is counted too) and refuses it over the limit
// with domain.ErrRateLimited. The gate does not count such a call again.
type callCounter interface {
	CountsRateInCall(tool, class string) bool
}

// countsInCall reports whether the Backend counts a call of t itself.
func (g *Gate) countsInCall(t *catalog.Tool) bool {
	cc, ok := g.b.(callCounter)
	return ok && cc.CountsRateInCall(t.Name, limitClass(t.Tier))
}

// rawHash is the audit input hash of arguments that were never parsed:
// sha256 of the bytes as received.
func rawHash(raw []byte) string {
	sum := sha256.Sum256(raw)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// arguments is a call's arguments as the gate reads them before strict
// validation (step 5): the raw bytes and their top-level members. Invalid
// says the raw bytes are not a JSON object (nor empty, nor null); members is
// then empty and step 5 reports the error. The flag lives beside the map,
// not in it, so no key a caller could send stands for it.
type arguments struct {
	raw     json.RawMessage
	members map[string]json.RawMessage
	invalid bool
}

// parseArgs reads the arguments object leniently (strict validation is step
// 5). The members are slices of raw, not copies: an 11 MB photo is not
// duplicated to find its idempotency_key. It answers as json.Unmarshal into
// a map would, its error as invalid (TestParseArgs_SameAsUnmarshal holds it
// to that).
func parseArgs(raw json.RawMessage) arguments {
	a := arguments{raw: raw, members: map[string]json.RawMessage{}}
	bad := arguments{raw: raw, members: map[string]json.RawMessage{}, invalid: true}
	if len(raw) == 0 {
		return a
	}
	if !json.Valid(raw) {
		return bad
	}
	i := skipWS(raw, 0)
	if bytes.HasPrefix(raw[i:], []byte("null")) {
		return a
	}
	if raw[i] != '{' {
		return bad
	}
	i = skipWS(raw, i+1)
	for i < len(raw) && raw[i] != '}' {
		kEnd := valueEnd(raw, i)
		var k string
		if json.Unmarshal(raw[i:kEnd], &k) != nil {
			return bad
		}
		i = skipWS(raw, kEnd) + 1 // the colon
		i = skipWS(raw, i)
		vEnd := valueEnd(raw, i)
		a.members[k] = raw[i:vEnd:vEnd]
		i = skipWS(raw, vEnd)
		if i < len(raw) && raw[i] == ',' {
			i = skipWS(raw, i+1)
		}
	}
	return a
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// valueEnd returns the end of the JSON value starting at b[i]; b is valid
// JSON, so only strings and nesting need care.
func valueEnd(b []byte, i int) int {
	depth := 0
	for j := i; j < len(b); j++ {
		switch c := b[j]; c {
		case '"':
			for j++; j < len(b) && b[j] != '"'; j++ {
				if b[j] == '\\' {
					j++
				}
			}
			if depth == 0 {
				return j + 1
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return j // the end of a scalar before its container closes
			}
			depth--
			if depth == 0 {
				return j + 1
			}
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return j
			}
		}
	}
	return len(b)
}

// requestID returns the caller's request_id when it is well formed.
func requestID(args map[string]json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(args["request_id"], &s) != nil || s == "" || len(s) > 128 {
		return "", false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._:-", r)) {
			return "", false
		}
	}
	return s, true
}

// inputHash is the idempotency fingerprint and the audit input hash: sha256
// of the RFC 8785 canonical input without idempotency_key and request_id.
//
// It streams the canonical object into the hash member by member instead of
// re-encoding and canonicalising the whole input: a member that is a plain
// JSON string (no escapes, no control bytes, valid UTF-8: a base64 image,
// most text) is already canonical and is hashed as it is, so an 11 MB photo
// costs no copy. Any member that does not canonicalise falls back to
// inputHashWhole, the reference form the fingerprints were defined by;
// TestInputHash_StreamEqualsWhole holds the two to the same result.
func inputHash(a arguments) string {
	if a.invalid {
		return inputHashWhole(a)
	}
	keys := make([]string, 0, len(a.members))
	for k := range a.members {
		if k != "idempotency_key" && k != "request_id" {
			keys = append(keys, k)
		}
	}
	u16 := make(map[string][]uint16, len(keys))
	for _, k := range keys {
		u16[k] = utf16.Encode([]rune(k))
	}
	slices.SortFunc(keys, func(a, b string) int { return slices.Compare(u16[a], u16[b]) })
	h := sha256.New()
	h.Write([]byte{'{'})
	for i, k := range keys {
		kb, _ := json.Marshal(k)
		ck, err := domain.CanonicalJSON(kb)
		if err != nil {
			return inputHashWhole(a)
		}
		if i > 0 {
			h.Write([]byte{','})
		}
		h.Write(ck)
		h.Write([]byte{':'})
		v := a.members[k]
		if plainString(v) {
			h.Write(v)
			continue
		}
		// Wrapped in an array so nesting depth counts as inside the object.
		wrapped := make([]byte, 0, len(v)+2)
		wrapped = append(append(append(wrapped, '['), v...), ']')
		cv, err := domain.CanonicalJSON(wrapped)
		if err != nil || len(cv) < 2 {
			return inputHashWhole(a)
		}
		h.Write(cv[1 : len(cv)-1])
	}
	h.Write([]byte{'}'})
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// plainString reports whether v is a JSON string that RFC 8785 leaves
// unchanged: quotes around valid UTF-8 with no escape and no control byte.
func plainString(v []byte) bool {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return false
	}
	in := v[1 : len(v)-1]
	ascii := true
	for _, c := range in {
		if c < 0x20 || c == '"' || c == '\\' {
			return false
		}
		if c >= utf8.RuneSelf {
			ascii = false
		}
	}
	return ascii || utf8.Valid(in)
}

// inputHashWhole is the reference form of inputHash: the whole input
// re-encoded and canonicalised at once.
func inputHashWhole(a arguments) string {
	body := a.raw
	if !a.invalid {
		m := make(map[string]json.RawMessage, len(a.members))
		for k, v := range a.members {
			if k != "idempotency_key" && k != "request_id" {
				m[k] = v
			}
		}
		body, _ = json.Marshal(m)
	}
	if c, err := domain.CanonicalJSON(body); err == nil {
		body = c
	}
	sum := sha256.Sum256(body)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
