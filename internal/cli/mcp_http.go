package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/netutil"

	"github.com/triunalabs/trovesnap/internal/gate"
	"github.com/triunalabs/trovesnap/internal/live"
	"github.com/triunalabs/trovesnap/internal/mcpserver"
)

// HTTPServeOptions are the options of `trovesnap mcp serve --http` (issue
// 17): Streamable HTTP for remote hosts, every request authenticated by
// its own client token.
type HTTPServeOptions struct {
	Addr           string
	TLSCert        string
	TLSKey         string
	BehindProxy    bool
	Stateless      bool
	PublicURL      string
	AllowedHosts   []string
	AllowedOrigins []string
	// PublicPerMinute bounds each remote address on the public path.
	PublicPerMinute int
	// AuthFailuresPerMinute bounds each remote address's 401s on /mcp.
	AuthFailuresPerMinute int
	// OAuth takes connectors' OAuth access tokens too (ChatGPT, Claude's
	// connectors), issued by OAuthIssuer (default in live mode: the
	// project's Supabase Auth, SUPABASE_URL/auth/v1).
	OAuth        bool
	OAuthIssuer  string
	OAuthJWKSURL string
	// MaxConnections bounds the open connections; past it new ones wait in
	// the listen backlog until one closes.
	MaxConnections int
	// grace is how long a drain waits for running requests (default
	// shutdownGrace; tests shorten it).
	grace time.Duration
}

// HTTP server bounds. No write timeout: a call may stream progress for as
// long as it runs (the gate bounds the calls themselves); a drain waits
// for running calls up to shutdownGrace.
const (
	readHeaderTimeout = 10 * time.Second
	readTimeout       = 60 * time.Second
	idleTimeout       = 120 * time.Second
	maxHeaderBytes    = 64 << 10
	shutdownGrace     = 30 * time.Second
	// cutGrace is how long requests still running when the grace ends may
	// take to return once their connections are closed: the store closes
	// only after them, so no call's bookkeeping meets a closed store.
	cutGrace = 10 * time.Second
	// DefaultMaxConnections is --max-connections' default: each connection
	// holds a goroutine and its buffers (a few KiB idle).
	DefaultMaxConnections = 1024
	// httpMemoryLimit is the soft memory limit of an HTTP server (many
	// clients at once; stdio keeps serveMemoryLimit).
	httpMemoryLimit = 256 << 20
)

// loopbackHost reports whether a listen address's host is loopback only.
func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// check validates the options and returns the hosts to serve: loopback by
// default; any other address needs TLS or --behind-proxy (TLS terminated by
// the proxy) and the name clients use (--public-url or --allowed-host).
func (o *HTTPServeOptions) check() (hosts []string, err error) {
	host, _, err := net.SplitHostPort(o.Addr)
	if err != nil {
		return nil, usageError{fmt.Errorf("--http %q: want host:port (127.0.0.1:8080)", o.Addr)}
	}
	if (o.TLSCert == "") != (o.TLSKey == "") {
		return nil, usageError{errors.New("--tls-cert and --tls-key go together")}
	}
	loopback := loopbackHost(host)
	if !loopback && o.TLSCert == "" && !o.BehindProxy {
		return nil, usageError{fmt.Errorf("--http %s listens beyond this machine: give --tls-cert and --tls-key, or --behind-proxy when a reverse proxy terminates TLS in front of it", o.Addr)}
	}
	hosts = append(hosts, o.AllowedHosts...)
	if o.PublicURL != "" {
		u, err := url.Parse(o.PublicURL)
		if err != nil || u.Host == "" || (u.Scheme != "https" && !(u.Scheme == "http" && loopback)) || u.Path != "" && u.Path != "/" || u.RawQuery != "" {
			return nil, usageError{fmt.Errorf("--public-url %q: want the server's base URL, https://host[:port] (http only on loopback)", o.PublicURL)}
		}
		hosts = append(hosts, u.Host)
	}
	if !loopback && len(hosts) == 0 {
		return nil, usageError{errors.New("name the host clients reach this server by: --public-url https://mcp.example.com (or --allowed-host)")}
	}
	if o.OAuthIssuer != "" || o.OAuthJWKSURL != "" {
		o.OAuth = true
	}
	if o.OAuth {
		if o.PublicURL == "" {
			return nil, usageError{errors.New("--oauth needs --public-url: every access token must name this server's URL as its audience")}
		}
		for flag, v := range map[string]string{"--oauth-issuer": o.OAuthIssuer, "--oauth-jwks-url": o.OAuthJWKSURL} {
			if v == "" {
				continue
			}
			u, err := url.Parse(v)
			if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" ||
				(u.Scheme != "https" && !(u.Scheme == "http" && loopbackHost(u.Hostname()))) {
				return nil, usageError{fmt.Errorf("%s %q: want an https URL (http only on loopback)", flag, v)}
			}
		}
	}
	return hosts, nil
}

// oauthOptions are the resource server's options: the issuer named, else
// in live mode the project's Supabase Auth; nil when OAuth is off.
func (o *HTTPServeOptions) oauthOptions(supabaseURL string) (*mcpserver.OAuthOptions, error) {
	if !o.OAuth {
		return nil, nil
	}
	issuer := o.OAuthIssuer
	if issuer == "" {
		if supabaseURL == "" {
			return nil, usageError{errors.New("--oauth in mock mode needs --oauth-issuer (live mode uses the project's Supabase Auth)")}
		}
		issuer = strings.TrimSuffix(supabaseURL, "/") + "/auth/v1"
	}
	return &mcpserver.OAuthOptions{Issuer: strings.TrimSuffix(issuer, "/"), JWKSURL: o.OAuthJWKSURL}, nil
}

// serveHTTP runs the HTTP server until ctx ends (SIGINT, SIGTERM), then
// drains: no new connection, running calls finish (up to shutdownGrace).
func serveHTTP(ctx context.Context, o *HTTPServeOptions, g *gate.Gate, ready func(context.Context) error, outputSchemas bool, supabaseURL string, logger *slog.Logger) error {
	hosts, err := o.check()
	if err != nil {
		return err
	}
	oauth, err := o.oauthOptions(supabaseURL)
	if err != nil {
		return err
	}
	h := mcpserver.NewHTTPHandler(mcpserver.HTTPOptions{Gate: g, Logger: logger, Stateless: o.Stateless, OAuth: oauth,
		AllowedHosts: hosts, AllowedOrigins: o.AllowedOrigins, ResourceURL: o.PublicURL, Ready: ready, OutputSchemas: outputSchemas,
		PublicPerMinute: o.PublicPerMinute, TrustProxy: o.BehindProxy, AuthFailuresPerMinute: o.AuthFailuresPerMinute})
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return fmt.Errorf("--http %s: %w", o.Addr, err)
	}
	maxConns := o.MaxConnections
	if maxConns <= 0 {
		maxConns = DefaultMaxConnections
	}
	ln = netutil.LimitListener(ln, maxConns)
	// Every request is counted until its handler returns: a drain that
	// ends its grace cuts the connections left and still waits for their
	// handlers (bounded by cutGrace), so the caller closes the store after
	// every call's bookkeeping.
	running := &inflight{}
	inner := h
	h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		running.add()
		defer running.done()
		inner.ServeHTTP(w, r)
	})
	// A session's standing GET (its stream of server notifications) never
	// ends by itself: a drain ends those at once, while calls (POSTs) run
	// to their end.
	streams, stopStreams := context.WithCancel(context.Background())
	defer stopStreams()
	h = endStreams(streams, h)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: readHeaderTimeout, ReadTimeout: readTimeout, IdleTimeout: idleTimeout,
		MaxHeaderBytes: maxHeaderBytes, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) }}
	grace := o.grace
	if grace <= 0 {
		grace = shutdownGrace
	}
	done := make(chan error, 1)
	go func() {
		<-ctx.Done()
		logger.Info("trovesnap mcp serve: draining")
		stopStreams()
		sctx, cancel := context.WithTimeout(context.Background(), grace)
		defer cancel()
		err := srv.Shutdown(sctx)
		if err == nil {
			done <- nil
			return
		}
		// Past the grace: cut what is left (their requests are cancelled)
		// and wait for the handlers to return.
		logger.Warn("trovesnap mcp serve: requests still running after the grace are cut", "grace", grace)
		_ = srv.Close()
		select {
		case <-running.idle():
		case <-time.After(cutGrace):
			logger.Error("trovesnap mcp serve: requests still running after they were cut", "wait", cutGrace)
		}
		done <- err
	}()
	scheme := "http"
	if o.TLSCert != "" {
		scheme = "https"
	}
	logger.Info("trovesnap mcp serve: listening", "url", scheme+"://"+ln.Addr().String()+mcpserver.PathMCP, "stateless", o.Stateless,
		"behind_proxy", o.BehindProxy, "oauth", oauth != nil)
	if o.TLSCert != "" {
		err = srv.ServeTLS(ln, o.TLSCert, o.TLSKey)
	} else {
		err = srv.Serve(ln)
	}
	if !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving MCP over HTTP: %w", err)
	}
	if err := <-done; err != nil {
		return fmt.Errorf("draining: %w", err)
	}
	logger.Info("trovesnap mcp serve stopped")
	return nil
}

// inflight counts the requests in their handlers.
type inflight struct {
	mu   sync.Mutex
	n    int
	zero chan struct{} // closed when n reaches 0 after idle was asked
}

func (f *inflight) add() {
	f.mu.Lock()
	f.n++
	f.mu.Unlock()
}

func (f *inflight) done() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n--; f.n == 0 && f.zero != nil {
		close(f.zero)
		f.zero = nil
	}
}

// idle is closed once no request is in its handler.
func (f *inflight) idle() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := make(chan struct{})
	if f.n == 0 {
		close(c)
		return c
	}
	if f.zero == nil {
		f.zero = c
	}
	return f.zero
}

// endStreams cancels every GET request's context when streams ends.
func endStreams(streams context.Context, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			ctx, cancel := context.WithCancel(r.Context())
			defer cancel()
			defer context.AfterFunc(streams, cancel)()
			r = r.WithContext(ctx)
		}
		next.ServeHTTP(w, r)
	})
}

// readiness is /readyz: the local store answers, and in live mode the
// database answers at the migration version this release expects.
func readiness(conn *backendConn) func(context.Context) error {
	return func(ctx context.Context) error {
		if err := conn.st.Ping(ctx); err != nil {
			return err
		}
		if b, ok := conn.backend.(*live.Backend); ok {
			v, err := b.RemoteSchemaVersion(ctx)
			if err != nil {
				return err
			}
			if v != live.SchemaVersion {
				return fmt.Errorf("migration version %d, this release expects %d", v, live.SchemaVersion)
			}
		}
		return nil
	}
}
