package mcpserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"go.opentelemetry.io/otel/trace"

	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/gate"
)

// Remote MCP (issue 17): the same server over Streamable HTTP, for hosts
// that reach only remote servers (ChatGPT, Claude's connectors) and for
// several machines sharing one live database. Every request carries its
// client token (Authorization: Bearer …), resolved fresh: a client
// suspended or revoked is so on its next request. The server keeps nothing
// between requests but the SDK's session table (none in stateless mode), so
// any number of replicas serve the same tenants.

// Paths of the HTTP server.
const (
	PathMCP       = "/mcp"
	PathPublicMCP = "/public/mcp"
	PathHealthz   = "/healthz"
	PathReadyz    = "/readyz"
	PathPRM       = "/.well-known/oauth-protected-resource"
	transportHTTP = "http"
)

// HTTPOptions configure the HTTP handler.
type HTTPOptions struct {
	Gate   *gate.Gate
	Logger *slog.Logger // access log and diagnostics (stderr); never a token
	// Stateless serves every request with a temporary session (no
	// Mcp-Session-Id): any replica answers any request. What a session
	// loses: server→client requests (none of our tools makes one); progress
	// notifications within a request still reach the caller.
	Stateless bool
	// AllowedHosts are the Host header values served (a host, or
	// host:port); a request naming another is refused 403 (DNS rebinding).
	// Empty: the loopback names only.
	AllowedHosts []string
	// AllowedOrigins are the browser origins (scheme://host[:port]) whose
	// requests are served; any other cross-origin request is refused 403.
	AllowedOrigins []string
	// ResourceURL is the server's public base URL (https://host), named in
	// the protected-resource metadata and in WWW-Authenticate. Empty: the
	// request's own scheme and host.
	ResourceURL string
	// Ready reports whether the store or database answers (/readyz).
	Ready func(context.Context) error
	// OutputSchemas as in Options.
	OutputSchemas bool
	// PublicPerMinute bounds the requests one remote address may send to
	// the public path (/public/mcp) in a minute; 0 means
	// DefaultPublicPerMinute.
	PublicPerMinute int
	// TrustProxy takes a request's remote address from the last
	// X-Forwarded-For entry (the one the reverse proxy in front of this
	// server appended); without it, from the connection.
	TrustProxy bool
	// AuthFailuresPerMinute bounds the failed authentications (401s) of
	// one remote address on /mcp in a minute; past it the address's
	// requests are 429 until the window turns, before any token lookup.
	// 0 means DefaultAuthFailuresPerMinute.
	AuthFailuresPerMinute int
	// OAuth, when set, also takes connectors' OAuth access tokens (the MCP
	// authorization spec's resource server; oauth.go). It needs ResourceURL:
	// the audience every token must name is ResourceURL + PathMCP.
	OAuth *OAuthOptions
	// BodyBytesInFlight bounds the request body bytes of all /mcp requests
	// being read, decoded or run at once (default DefaultBodyBytesInFlight);
	// a request over it is refused 503 with Retry-After.
	BodyBytesInFlight int64
}

// DefaultBodyBytesInFlight is the default HTTPOptions.BodyBytesInFlight:
// two of the largest requests. The SDK reads and decodes a body whole
// before the gate's argument budget sees it, and that costs several times
// the body (about 80 MiB of heap for one 11 MiB call).
func DefaultBodyBytesInFlight() int64 { return 2 * int64(MaxFrameBytes()) }

// smallBodyBytes is the largest body that needs nothing from the budget.
const smallBodyBytes = 64 << 10

// bodyBudget refuses a request whose body would take the body bytes in
// flight over total (a body of unknown length counts as the largest; one
// of at most smallBodyBytes counts nothing).
func bodyBudget(total int64, next http.Handler) http.Handler {
	var (
		mu   sync.Mutex
		used int64
	)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := r.ContentLength
		if r.Body == nil || r.Body == http.NoBody {
			n = 0
		} else if n < 0 || n > int64(MaxFrameBytes()) {
			n = int64(MaxFrameBytes()) // the SDK refuses anything longer (413)
		}
		n = min(n, total)
		// A small body (declared: Go reads no more than Content-Length)
		// takes nothing, so that clients trickling large bodies can hold
		// back other large requests but never the ordinary small ones.
		if r.ContentLength >= 0 && r.ContentLength <= smallBodyBytes {
			n = 0
		}
		if n > 0 {
			mu.Lock()
			if used+n > total {
				mu.Unlock()
				w.Header().Set("Retry-After", "1")
				http.Error(w, "the server is busy with other large requests: retry shortly", http.StatusServiceUnavailable)
				return
			}
			used += n
			mu.Unlock()
			defer func() {
				mu.Lock()
				used -= n
				mu.Unlock()
			}()
		}
		next.ServeHTTP(w, r)
	})
}

// DefaultPublicPerMinute is the public path's default per-address bound.
const DefaultPublicPerMinute = 120

// DefaultAuthFailuresPerMinute is the default per-address bound of failed
// authentications: each costs a lookup (an RPC in live mode), and a client
// with a good token fails none.
const DefaultAuthFailuresPerMinute = 60

// authFailureBound answers 429 to an address past its failed
// authentications of the minute, before the token is looked up, and
// counts each 401 it sees.
func authFailureBound(l *addrLimiter, trustProxy bool, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		addr := remoteAddr(r, trustProxy)
		if over, retry := l.exceeded(addr, time.Now()); over {
			w.Header().Set("Retry-After", fmt.Sprint(retry))
			http.Error(w, "too many failed authentications from this address", http.StatusTooManyRequests)
			return
		}
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		if sw.status == http.StatusUnauthorized {
			l.allow(addr, time.Now())
		}
	})
}

// noRequestToken is the HTTP server's own credential: never a client's.
const noRequestToken = "no-request-token"

// credentialKey holds a request's bearer token in its TokenInfo, for the
// gate (in process only: it is never logged or sent).
const credentialKey = "trovesnap_credential"

// connectorKey holds the connector a request's OAuth access token was
// verified as (a *domain.Connector) in its TokenInfo.
const connectorKey = "trovesnap_connector"

// spanKey holds the request's HTTP span context in its TokenInfo.
const spanKey = "trovesnap_http_span"

// httpSpan wraps a path in the HTTP request's span (gate.StartHTTPSpan).
func httpSpan(g *gate.Gate, route string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, end := g.StartHTTPSpan(r.Context(), r.Header, r.Method, route)
		sw := &statusWriter{ResponseWriter: w}
		defer func() { end(sw.status) }()
		next.ServeHTTP(sw, r.WithContext(ctx))
	})
}

// callContext is a call's context with its request's HTTP span as the
// parent of the call's spans, when there is one.
func callContext(ctx context.Context, req mcp.Request) context.Context {
	if extra := req.GetExtra(); extra != nil && extra.TokenInfo != nil {
		if sc, ok := extra.TokenInfo.Extra[spanKey].(trace.SpanContext); ok {
			return gate.ContextWithHTTPSpan(ctx, sc)
		}
	}
	return ctx
}

// NewHTTPHandler returns the HTTP server's handler: /mcp (authenticated
// Streamable HTTP), the protected-resource metadata, /healthz and /readyz.
func NewHTTPHandler(o HTTPOptions) http.Handler {
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	// One server for every principal: the middleware takes each call's
	// caller from its request (callerOf).
	// Its own credential is one no client has (malformed: refused before
	// any lookup): a call that somehow reached it without a request token
	// fails closed instead of being the mock demo client ("").
	so := Options{Gate: o.Gate, Credential: noRequestToken, Transport: transportHTTP, Logger: logger, OutputSchemas: o.OutputSchemas, noListChanged: true}
	if !o.Stateless {
		so.sessions = &sessionLimiter{max: MaxSessionsPerToken, byUser: map[string][]*mcp.ServerSession{}}
	}
	s := New(so)
	stream := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{
		Stateless: o.Stateless,
		// A session nobody uses ends: a client that went away without a
		// DELETE does not hold its session (a goroutine and its state)
		// for ever. A client whose session ended gets 404 and initializes
		// again.
		SessionTimeout:      SessionIdleTimeout,
		Logger:              logger,
		MaxRequestBodyBytes: int64(MaxFrameBytes()),
		// Requests of the 2026-07-28 protocol: a disconnect cancels the call
		// (its bookkeeping still runs: the gate detaches the audit write).
		PropagateRequestCancellation: true,
		// Named hosts replace the loopback names: hostCheck judges every
		// request's Host, and the SDK's own check (loopback connections
		// must name a loopback host) would refuse a proxy's.
		DisableLocalhostProtection: len(o.AllowedHosts) > 0,
	})
	var ov *oauthVerifier
	if o.OAuth != nil {
		resource := ""
		if o.ResourceURL != "" {
			resource = strings.TrimSuffix(o.ResourceURL, "/") + PathMCP
		} else {
			logger.Warn("oauth: no public URL, so no access token can name this server: every OAuth token is refused")
		}
		oo := *o.OAuth
		if oo.Logger == nil {
			oo.Logger = logger
		}
		ov = newOAuthVerifier(oo, resource)
	}
	bearer := auth.RequireBearerToken(verifier(o.Gate, ov), &auth.RequireBearerTokenOptions{
		ResourceMetadataURL:    strings.TrimSuffix(o.ResourceURL, "/") + PathPRM + PathMCP,
		AllowMissingExpiration: true, // client tokens are opaque; each request resolves its own
	})
	if o.ResourceURL == "" {
		bearer = func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				auth.RequireBearerToken(verifier(o.Gate, ov), &auth.RequireBearerTokenOptions{
					ResourceMetadataURL: requestBase(r) + PathPRM + PathMCP, AllowMissingExpiration: true,
				})(h).ServeHTTP(w, r)
			})
		}
	}
	cop := http.NewCrossOriginProtection()
	for _, origin := range o.AllowedOrigins {
		if err := cop.AddTrustedOrigin(origin); err != nil {
			logger.Warn("allowed origin ignored", "origin", origin, "err", err)
		}
	}
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "cross-origin request refused", http.StatusForbidden)
	}))
	mux := http.NewServeMux()
	bodies := o.BodyBytesInFlight
	if bodies <= 0 {
		bodies = DefaultBodyBytesInFlight()
	}
	loopbackOnly := len(o.AllowedOrigins) == 0 && len(o.AllowedHosts) == 0
	failures := o.AuthFailuresPerMinute
	if failures <= 0 {
		failures = DefaultAuthFailuresPerMinute
	}
	// Host, Origin, the address's failed authentications, then the token
	// (it reads no body): only a client's token can take from the body
	// budget.
	mux.Handle(PathMCP, httpSpan(o.Gate, PathMCP, originCheck(o.AllowedOrigins, loopbackOnly, cop,
		authFailureBound(newAddrLimiter(failures), o.TrustProxy, bearer(bodyBudget(bodies, stream))))))
	// The public path (§11): buyers' agents without a token reach the
	// public tools only. Its server's credential is the anonymous one,
	// whatever a request carries (an Authorization header is ignored, never
	// upgraded), so it sees what an anonymous principal sees; requests are
	// bounded per remote address before any reaches the gate, and a body to
	// smallBodyBytes (the public tools take a few ids and a query).
	public := New(Options{Gate: o.Gate, Credential: domain.PublicCredential, Transport: transportHTTP + "-public", Logger: logger, noListChanged: true})
	publicStream := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return public }, &mcp.StreamableHTTPOptions{
		Stateless: true, Logger: logger, MaxRequestBodyBytes: smallBodyBytes,
		PropagateRequestCancellation: true, DisableLocalhostProtection: len(o.AllowedHosts) > 0,
	})
	perMinute := o.PublicPerMinute
	if perMinute <= 0 {
		perMinute = DefaultPublicPerMinute
	}
	limiter := newAddrLimiter(perMinute)
	mux.Handle(PathPublicMCP, httpSpan(o.Gate, PathPublicMCP, originCheck(o.AllowedOrigins, loopbackOnly, cop, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ok, retry := limiter.allow(remoteAddr(r, o.TrustProxy), time.Now()); !ok {
			w.Header().Set("Retry-After", fmt.Sprint(retry))
			http.Error(w, "too many requests from this address", http.StatusTooManyRequests)
			return
		}
		r.Header.Del("Authorization")
		publicStream.ServeHTTP(w, r)
	}))))
	prm := func(w http.ResponseWriter, r *http.Request) {
		base := strings.TrimSuffix(o.ResourceURL, "/")
		if base == "" {
			base = requestBase(r)
		}
		md := &oauthex.ProtectedResourceMetadata{
			Resource:               base + PathMCP,
			ResourceName:           ServerTitle,
			BearerMethodsSupported: []string{"header"},
		}
		if o.OAuth != nil {
			// Connectors sign in at the project's authorization server.
			md.AuthorizationServers = []string{o.OAuth.Issuer}
		}
		auth.ProtectedResourceMetadataHandler(md).ServeHTTP(w, r)
	}
	mux.HandleFunc(PathPRM, prm)
	mux.HandleFunc(PathPRM+PathMCP, prm)
	mux.HandleFunc(PathHealthz, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc(PathReadyz, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if o.Ready != nil {
			ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
			defer cancel()
			if err := o.Ready(ctx); err != nil {
				logger.Warn("not ready", "err", err)
				http.Error(w, "not ready: the store or database does not answer", http.StatusServiceUnavailable)
				return
			}
		}
		_, _ = w.Write([]byte("ready\n"))
	})
	return accessLog(logger, hostCheck(o.AllowedHosts, mux))
}

// Session bounds (stateful HTTP). Each session holds a goroutine and its
// state until it ends; without a bound one token could open sessions until
// the process runs out of memory.
const (
	// MaxSessionsPerToken is how many sessions one bearer token keeps: its
	// next initialize ends its oldest session (only that token's own).
	MaxSessionsPerToken = 16
	// SessionIdleTimeout ends a session without a request for this long.
	SessionIdleTimeout = 30 * time.Minute
)

// sessionLimiter keeps at most max sessions per token (TokenInfo.UserID),
// ending the oldest of a token that opens one more.
type sessionLimiter struct {
	max    int
	mu     sync.Mutex
	byUser map[string][]*mcp.ServerSession
}

// opened records the session of a successful initialize and ends the
// oldest sessions of its token beyond the bound.
func (l *sessionLimiter) opened(req mcp.Request) {
	ss, ok := req.GetSession().(*mcp.ServerSession)
	extra := req.GetExtra()
	if !ok || ss == nil || extra == nil || extra.TokenInfo == nil || ss.ID() == "" {
		return
	}
	user := extra.TokenInfo.UserID
	l.mu.Lock()
	list := append(l.byUser[user], ss)
	var evict []*mcp.ServerSession
	if n := len(list) - l.max; n > 0 {
		evict = slices.Clone(list[:n])
		list = slices.Delete(list, 0, n)
	}
	l.byUser[user] = list
	l.mu.Unlock()
	for _, old := range evict {
		go func() { _ = old.Close() }() // waits for the old session's running calls
	}
	go func() {
		_ = ss.Wait()
		l.mu.Lock()
		defer l.mu.Unlock()
		if list := slices.DeleteFunc(l.byUser[user], func(s *mcp.ServerSession) bool { return s == ss }); len(list) > 0 {
			l.byUser[user] = list
		} else {
			delete(l.byUser, user)
		}
	}()
}

// verifier resolves a bearer token to a registered client, fresh on every
// request. Unknown and revoked tokens are 401; a suspended client's
// requests pass, so that tools/list shows it nothing and tools/call answers
// client_suspended (§23) in a tool result; a store that cannot answer is a
// 500 (fail closed). Errors name no token.
func verifier(g *gate.Gate, ov *oauthVerifier) auth.TokenVerifier {
	return func(ctx context.Context, token string, r *http.Request) (*auth.TokenInfo, error) {
		if ov != nil && looksLikeJWT(token) {
			return connectorInfo(ctx, g, ov, token, r)
		}
		switch err := g.Authenticate(ctx, token); {
		case err == nil, errors.Is(err, domain.ErrClientSuspended):
		case errors.Is(err, domain.ErrClientNotRegistered), errors.Is(err, domain.ErrAuthRequired):
			return nil, fmt.Errorf("%w: not an active client token", auth.ErrInvalidToken)
		default:
			return nil, errors.New("the client registry does not answer")
		}
		// The SDK pins a session to its UserID: one token, one session.
		sum := sha256.Sum256([]byte(token))
		return &auth.TokenInfo{UserID: "token:" + hex.EncodeToString(sum[:8]), Extra: map[string]any{credentialKey: token,
			// The request's HTTP span: its calls' spans join it.
			spanKey: trace.SpanContextFromContext(r.Context())}}, nil
	}
}

// connectorInfo verifies a connector's OAuth access token (oauth.go) and
// resolves the client bound to it, fresh on every request like a client
// token: unbound or revoked → 401; suspended → passes (no tools, §23 code
// on calls). The TokenInfo carries the token's expiry, which the SDK
// enforces again.
func connectorInfo(ctx context.Context, g *gate.Gate, ov *oauthVerifier, token string, r *http.Request) (*auth.TokenInfo, error) {
	conn, exp, err := ov.verify(ctx, token)
	if err != nil {
		return nil, err
	}
	switch err := g.AuthenticateConnector(ctx, *conn); {
	case err == nil, errors.Is(err, domain.ErrClientSuspended):
	case errors.Is(err, domain.ErrClientNotRegistered), errors.Is(err, domain.ErrAuthRequired):
		// The OAuth client id is no secret: the operator learns which one a
		// seller would bind (client register --oauth-client-id).
		ov.keys.log.Info("oauth: a valid access token of an OAuth client bound to no client of its account", "oauth_client_id", conn.ClientID)
		return nil, fmt.Errorf("%w: no client is bound to this connector", auth.ErrInvalidToken)
	default:
		return nil, errors.New("the client registry does not answer")
	}
	return &auth.TokenInfo{UserID: connectorUserID(conn), Expiration: exp, Extra: map[string]any{connectorKey: conn,
		spanKey: trace.SpanContextFromContext(r.Context())}}, nil
}

// callerOf is the caller of one request: over HTTP its bearer token, or
// the connector its OAuth access token was verified as; else the server's
// own credential (stdio, in-memory).
func callerOf(o Options, req mcp.Request) (string, *domain.Connector) {
	if extra := req.GetExtra(); extra != nil && extra.TokenInfo != nil {
		if c, ok := extra.TokenInfo.Extra[connectorKey].(*domain.Connector); ok && c != nil {
			return o.Credential, c
		}
		if c, ok := extra.TokenInfo.Extra[credentialKey].(string); ok {
			return c, nil
		}
	}
	return o.Credential, nil
}

// remoteAddr is a request's client address: the connection's, or behind a
// trusted proxy the last X-Forwarded-For entry (the proxy's own append;
// earlier entries are the client's say and can be forged).
func remoteAddr(r *http.Request, trustProxy bool) string {
	if trustProxy {
		if xff := r.Header.Values("X-Forwarded-For"); len(xff) > 0 {
			parts := strings.Split(xff[len(xff)-1], ",")
			if a := strings.TrimSpace(parts[len(parts)-1]); a != "" {
				return a
			}
		}
	}
	if h, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return h
	}
	return r.RemoteAddr
}

// addrLimiter is a per-address fixed window of a minute, bounded in size:
// past maxAddrs addresses in one window, new ones share one budget (a flood
// from many addresses is bounded as a whole).
type addrLimiter struct {
	mu        sync.Mutex
	perMinute int
	window    int64
	counts    map[string]int
}

const maxAddrs = 8192

func newAddrLimiter(perMinute int) *addrLimiter {
	return &addrLimiter{perMinute: perMinute, counts: map[string]int{}}
}

// allow counts one request of addr at now; when over the bound, the
// seconds until the window turns.
func (l *addrLimiter) allow(addr string, now time.Time) (bool, int) {
	w := now.Unix() / 60
	l.mu.Lock()
	defer l.mu.Unlock()
	if w != l.window {
		l.window, l.counts = w, map[string]int{}
	}
	if _, ok := l.counts[addr]; !ok && len(l.counts) >= maxAddrs {
		addr = "" // the shared budget of the addresses past the bound
	}
	if l.counts[addr] >= l.perMinute {
		return false, int(60 - now.Unix()%60)
	}
	l.counts[addr]++
	return true, 0
}

// exceeded reports whether addr has used its bound in the window of now
// (counting nothing), and the seconds until the window turns.
func (l *addrLimiter) exceeded(addr string, now time.Time) (bool, int) {
	w := now.Unix() / 60
	l.mu.Lock()
	defer l.mu.Unlock()
	if w != l.window {
		return false, 0
	}
	if _, ok := l.counts[addr]; !ok && len(l.counts) >= maxAddrs {
		addr = ""
	}
	if l.counts[addr] >= l.perMinute {
		return true, int(60 - now.Unix()%60)
	}
	return false, 0
}

// requestBase is the scheme and host a request was sent to.
func requestBase(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// hostCheck refuses a request whose Host is not allowed (DNS rebinding: a
// page on another site whose name resolves to this address). The SDK's own
// check covers loopback connections; this one covers every listener.
func hostCheck(allowed []string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Probes (a load balancer's, by IP) are served whatever the Host:
		// they disclose nothing and change nothing.
		if p := r.URL.Path; !HostAllowed(allowed, r.Host) && p != PathHealthz && p != PathReadyz {
			http.Error(w, "host not allowed", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// HostAllowed reports whether a Host header value is served: one of
// allowed (a host matches any port; host:port exactly), or a loopback name
// when allowed is empty.
func HostAllowed(allowed []string, host string) bool {
	name := host
	if h, port, err := net.SplitHostPort(host); err == nil {
		if strings.Trim(port, "0123456789") != "" {
			return false // a port is digits: "localhost:evil.com" is no loopback name
		}
		name = h
	}
	name = strings.Trim(name, "[]")
	if len(allowed) == 0 {
		return name == "localhost" || name == "127.0.0.1" || name == "::1"
	}
	for _, a := range allowed {
		if strings.EqualFold(a, host) || strings.EqualFold(strings.Trim(a, "[]"), name) {
			return true
		}
	}
	return false
}

// originCheck refuses a request that carries an Origin not allowed:
// http.CrossOriginProtection lets a same-origin browser request through and
// does not judge GET, and no browser page of any origin should reach /mcp
// unless it was allowed. A loopback server (no host named) with no origin
// named also takes loopback origins, as the SDKs' DNS-rebinding protection
// does: a page there could only send what any local process can.
//
// A request with an Origin is judged here alone; one without goes through
// cop, which refuses what the browser's Sec-Fetch-Site says is cross-site.
func originCheck(allowed []string, loopback bool, cop *http.CrossOriginProtection, next http.Handler) http.Handler {
	guarded := cop.Handler(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		switch {
		case origin == "":
			guarded.ServeHTTP(w, r)
		case slices.ContainsFunc(allowed, func(a string) bool { return strings.EqualFold(strings.TrimSuffix(a, "/"), origin) }),
			loopback && loopbackOrigin(origin):
			// CORS for an origin allowed: a browser host reads the answer
			// and the headers MCP needs, and its preflight (which carries
			// no token) is answered here, before authentication. No
			// credentials mode: the token is a header the page sends.
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			h.Add("Vary", "Origin")
			h.Set("Access-Control-Expose-Headers", "Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate")
			if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
				h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE")
				h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Accept, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID")
				h.Set("Access-Control-Max-Age", "600")
				w.WriteHeader(http.StatusNoContent)
				return
			}
			next.ServeHTTP(w, r)
		default:
			http.Error(w, "origin not allowed", http.StatusForbidden)
		}
	})
}

// loopbackOrigin reports an http(s) origin on a loopback name.
func loopbackOrigin(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Path != "" {
		return false
	}
	return HostAllowed(nil, u.Host)
}

// statusWriter records a response's status for the access log.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// accessLog writes one line per request to the logger: method, path, status,
// duration, remote address. Never a header, a query or a body, so no token.
func accessLog(logger *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		path := r.URL.Path
		if u, err := url.PathUnescape(path); err == nil {
			path = u
		}
		logger.Info("http", "method", r.Method, "path", sanitizeLogText(path), "status", sw.status,
			"ms", time.Since(start).Milliseconds(), "remote", r.RemoteAddr)
	})
}

// sanitizeLogText bounds a client-chosen string for a log line: printable
// ASCII only, at most 200 bytes.
func sanitizeLogText(s string) string {
	b := make([]byte, 0, min(len(s), 200))
	for i := 0; i < len(s) && len(b) < 200; i++ {
		if c := s[i]; c >= 0x20 && c < 0x7F {
			b = append(b, c)
		} else {
			b = append(b, '?')
		}
	}
	return string(b)
}
