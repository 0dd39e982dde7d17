package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/triunalabs/trovesnap/internal/audit"
	"github.com/triunalabs/trovesnap/internal/buildinfo"
	"github.com/triunalabs/trovesnap/internal/catalog"
	"github.com/triunalabs/trovesnap/internal/config"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/gate"
	"github.com/triunalabs/trovesnap/internal/mcpserver"
	"github.com/triunalabs/trovesnap/store"
)

// ServeOptions are the options of `trovesnap mcp serve`.
type ServeOptions struct {
	DB       string
	LogFile  string
	LogLevel string
	// Transport is what the server speaks; tests pass an in-memory one.
	Transport mcp.Transport
	// HTTP, when its Addr is set, serves Streamable HTTP instead of stdio.
	HTTP HTTPServeOptions
}

// serveMemoryLimit is the soft memory limit of `mcp serve` unless GOMEMLIMIT
// is set (issue 13: peak RSS under 100 MB whatever one client sends).
const serveMemoryLimit = 40 << 20

func newMCPCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "mcp", Short: "The MCP server"}
	opts := &ServeOptions{}
	serve := &cobra.Command{
		Use:   "serve",
		Short: "Serve MCP over stdio (stdout carries JSON-RPC only; logs go to stderr), or over HTTP with --http",
		Long: `Serve MCP over stdio: stdout carries JSON-RPC only, logs go to stderr.

With --http ADDR, serve Streamable HTTP at /mcp instead, for remote hosts
(ChatGPT, Claude connectors, agents on other machines). Every request
carries its client token (Authorization: Bearer tsk_...), resolved afresh:
no token or a wrong one is a 401, a suspended client sees no tools. The
address is loopback by default; another needs --tls-cert/--tls-key, or
--behind-proxy when a reverse proxy terminates TLS, and --public-url.
/healthz and /readyz answer probes.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.DB = dbFlag(cmd)
			if opts.Transport == nil && os.Getenv("GOMEMLIMIT") == "" {
				// A soft limit makes the GC work before RSS grows: a client
				// sending big arguments costs CPU, not the host's memory.
				limit := int64(serveMemoryLimit)
				if opts.HTTP.Addr != "" {
					limit = httpMemoryLimit
				}
				debug.SetMemoryLimit(limit)
			}
			return serveRun(cmd.Context(), f, opts)
		},
	}
	serve.Flags().StringVar(&opts.LogFile, "log-file", "", "write logs to this file instead of stderr")
	serve.Flags().StringVar(&opts.LogLevel, "log-level", "info", "debug | info | warn | error")
	fl := serve.Flags()
	fl.StringVar(&opts.HTTP.Addr, "http", "", "serve Streamable HTTP at ADDR (host:port, loopback unless TLS or --behind-proxy) instead of stdio")
	fl.StringVar(&opts.HTTP.TLSCert, "tls-cert", "", "TLS certificate file (with --tls-key)")
	fl.StringVar(&opts.HTTP.TLSKey, "tls-key", "", "TLS private key file (with --tls-cert)")
	fl.BoolVar(&opts.HTTP.BehindProxy, "behind-proxy", false, "a reverse proxy terminates TLS in front of this server (docs/remote.md)")
	fl.BoolVar(&opts.HTTP.Stateless, "stateless", false, "no sessions: any replica answers any request (server-to-client requests are lost; progress within a request stays)")
	fl.StringVar(&opts.HTTP.PublicURL, "public-url", "", "the base URL clients reach this server by (https://mcp.example.com); its host is allowed")
	fl.StringSliceVar(&opts.HTTP.AllowedHosts, "allowed-host", nil, "a Host header value to serve (repeatable; default: loopback names)")
	fl.StringSliceVar(&opts.HTTP.AllowedOrigins, "allowed-origin", nil, "a browser origin allowed to call (repeatable; default: none)")
	fl.BoolVar(&opts.HTTP.OAuth, "oauth", false, "also take connectors' OAuth access tokens (ChatGPT, Claude connectors), issued by the project's Supabase Auth in live mode (docs/remote.md); needs --public-url")
	fl.StringVar(&opts.HTTP.OAuthIssuer, "oauth-issuer", "", "the OAuth authorization server's issuer (implies --oauth; default in live mode: SUPABASE_URL/auth/v1)")
	fl.StringVar(&opts.HTTP.OAuthJWKSURL, "oauth-jwks-url", "", "where the issuer's signing keys are (default: ISSUER/.well-known/jwks.json)")
	fl.IntVar(&opts.HTTP.MaxConnections, "max-connections", DefaultMaxConnections, "open connections at most; more wait until one closes")
	fl.IntVar(&opts.HTTP.AuthFailuresPerMinute, "auth-failures-per-minute", mcpserver.DefaultAuthFailuresPerMinute, "failed authentications (401) a remote address may have on /mcp in a minute before its requests are refused (429)")
	fl.IntVar(&opts.HTTP.PublicPerMinute, "public-per-minute", mcpserver.DefaultPublicPerMinute, "requests a remote address may send to the public path (/public/mcp, no token) in a minute")
	cmd.AddCommand(serve)
	return cmd
}

func serveRun(ctx context.Context, f *Factory, opts *ServeOptions) error {
	// The catalog (51 tools) is built on another core while the store opens
	// (SQLite parses the schema, ~3 ms): the gate needs it next, and a cold
	// start waited ~0.3 ms for it there (issue 18).
	go catalog.All()
	logger, closeLog, err := newLogger(f.IO.ErrOut, opts.LogFile, opts.LogLevel)
	if err != nil {
		return err
	}
	defer closeLog()
	conn, err := f.openBackend(ctx, opts.DB, logger)
	if err != nil {
		return err
	}
	defer conn.close()
	cfg, st := conn.cfg, conn.st
	// OpenTelemetry (§37): OTLP/HTTP when OTEL_EXPORTER_OTLP_* is set, no-op
	// otherwise; never stdout, which is the JSON-RPC wire.
	tel, err := audit.SetupOTel(ctx, f.Getenv, buildinfo.Version, logger)
	if err != nil {
		return fmt.Errorf("%w: %w", errConfig, err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := tel.Shutdown(sctx); err != nil {
			logger.Warn("opentelemetry shutdown", "err", err)
		}
	}()
	if tel.Enabled {
		if _, err := audit.ObserveApprovals(tel.Meter, st.ApprovalCounts); err != nil {
			logger.Warn("approval metrics unavailable", "err", err)
		}
	}
	g := f.newGate(conn, logger, &tel)
	if opts.HTTP.Addr != "" {
		logger.Info("trovesnap mcp serve", "version", buildinfo.Version, "mode", cfg.Mode, "db", cfg.DBPath, "mode_reason", cfg.ModeReason, "transport", "http")
		return serveHTTP(ctx, &opts.HTTP, g, readiness(conn), f.Getenv("TROVESNAP_OUTPUT_SCHEMAS") == "1", cfg.SupabaseURL, logger)
	}
	// Over real stdio, the guard admits every tools/call on its raw line
	// (size limit, in-flight budget) before the SDK decodes it.
	var adm *mcpserver.Admitter
	transport := opts.Transport
	if transport == nil {
		adm = mcpserver.NewAdmitter(g)
		transport = adm.StdioTransport(f.IO.In, f.IO.Out)
	}
	s := mcpserver.New(mcpserver.Options{Gate: g, Credential: cfg.ClientToken(), Transport: "stdio", Logger: logger,
		OutputSchemas: f.Getenv("TROVESNAP_OUTPUT_SCHEMAS") == "1", Admitter: adm})
	logger.Info("trovesnap mcp serve", "version", buildinfo.Version, "mode", cfg.Mode, "db", cfg.DBPath, "mode_reason", cfg.ModeReason)
	err = s.Run(ctx, transport)
	switch {
	case err == nil, errors.Is(err, io.EOF), errors.Is(err, context.Canceled):
		logger.Info("trovesnap mcp serve stopped")
		return nil
	default:
		return fmt.Errorf("serving MCP: %w", err)
	}
}

// backendConn is what a gate runs on: the configuration, the embedded store
// (the Backend in mock mode; the outbox and replay cache in live mode) and
// the Backend. close stops the live flusher and closes the store.
type backendConn struct {
	cfg     config.Config
	st      *store.Store
	backend domain.Backend
	close   func()
}

// openBackend opens what `mcp serve` and the local commands that call tools
// (`media add`, `import csv`) run on, the same way for both.
func (f *Factory) openBackend(ctx context.Context, db string, logger *slog.Logger) (*backendConn, error) {
	cfg, err := f.Config(db)
	if err != nil {
		return nil, err
	}
	// A set but empty or malformed credential is refused before anything
	// opens: it must never fall back to the demo client (issue 13, finding 7).
	if err := config.CheckClientToken(f.lookupEnv); err != nil {
		return nil, err
	}
	st, err := f.OpenStore(ctx, cfg, logger)
	if err != nil {
		return nil, err
	}
	// Mock: the store is the Backend. Live: Supabase RPCs, with st as the
	// outbox of events for calls that wrote nothing, flushed in the background.
	backend, stopLive, err := f.ServeBackend(ctx, cfg, st, logger)
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	return &backendConn{cfg: cfg, st: st, backend: backend, close: func() { stopLive(); _ = st.Close() }}, nil
}

// newGate builds the gate over conn; tel may be nil (no telemetry). The
// providers are given only when an exporter is configured: without them
// the gate builds no span, attribute or metric for a call.
func (f *Factory) newGate(conn *backendConn, logger *slog.Logger, tel *audit.Providers) *gate.Gate {
	o := gate.Options{Backend: conn.backend, Mode: conn.cfg.Mode, Clock: f.Clock, IDs: f.IDs, ServerVersion: buildinfo.Version, Logger: logger}
	if tel != nil && tel.Enabled {
		o.TracerProvider, o.MeterProvider = tel.Tracer, tel.Meter
	}
	return gate.New(o)
}

// toolSession runs tool calls from a local command through the gate, as the
// registered client of TROVESNAP_CLIENT_TOKEN or, in mock mode with no
// token, the demo client (domain.Backend.ResolvePrincipal's contract): the
// same principal, checks, rate limits, idempotency and events as an MCP
// call over stdio.
type toolSession struct {
	conn *backendConn
	gate *gate.Gate
}

// openGate opens a toolSession; close it when done.
func (f *Factory) openGate(ctx context.Context, db string, logger *slog.Logger) (*toolSession, error) {
	conn, err := f.openBackend(ctx, db, logger)
	if err != nil {
		return nil, err
	}
	return &toolSession{conn: conn, gate: f.newGate(conn, logger, nil)}, nil
}

func (s *toolSession) close() { s.conn.close() }

// errNotCandidateTier refuses a local command's call to a tool outside the
// candidate tier: the commands that call tools are candidate-tier only (they
// never publish and never touch canonical items).
var errNotCandidateTier = errors.New("not a candidate-tier tool")

// rateLimitWaits bounds how many times one call waits out a rate limit.
const rateLimitWaits = 5

// call runs one tools/call through the gate with the session's credential.
// It refuses a tool that is not in the candidate tier before anything runs.
// A call refused as rate_limited is retried after the wait the envelope
// names (told through note), one refused as service_unavailable after a
// short pause, a few times at most; the envelope of the last try is
// returned.
func (s *toolSession) call(ctx context.Context, note func(format string, a ...any), tool string, args json.RawMessage, progress func(done, total int, msg string)) (*gate.Envelope, error) {
	t, ok := catalog.Lookup(tool)
	if !ok || t.Tier != catalog.TierCandidateWrite {
		return nil, fmt.Errorf("%w: %s", errNotCandidateTier, tool)
	}
	for try := 0; ; try++ {
		env := s.gate.Invoke(ctx, gate.Call{Tool: tool, Arguments: args, Credential: s.conn.cfg.ClientToken(), Transport: "cli", Progress: progress})
		if len(env.Errors) == 0 || try == rateLimitWaits {
			return env, nil
		}
		var wait time.Duration
		switch e := env.Errors[0]; e.Code {
		case gate.CodeRateLimited:
			wait = time.Duration(max(e.RetryAfterSeconds, 1)) * time.Second
			note("trovesnap: %s; waiting %s (a seller raises the rate with `trovesnap limits set --candidate-writes N`)",
				strings.TrimSuffix(e.Message, "."), wait)
		case gate.CodeServiceUnavailable:
			// Retryable and brief: the same key still running (two files
			// of the same bytes in one batch), a busy store.
			wait = time.Duration(try+1) * 250 * time.Millisecond
		default:
			return env, nil
		}
		select {
		case <-ctx.Done():
			return env, ctx.Err()
		case <-time.After(wait):
		}
	}
}

// lookupEnv is f.LookupEnv, or Getenv where a test factory sets only that.
func (f *Factory) lookupEnv(k string) (string, bool) {
	if f.LookupEnv != nil {
		return f.LookupEnv(k)
	}
	v := f.Getenv(k)
	return v, v != ""
}

// newLogger logs to stderr (or a file) — never to stdout, which is the wire.
func newLogger(stderr io.Writer, file, level string) (*slog.Logger, func(), error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, nil, usageError{fmt.Errorf("--log-level %q: want debug, info, warn or error", level)}
	}
	w, closeFn := stderr, func() {}
	if file != "" {
		fh, err := os.OpenFile(file, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, nil, fmt.Errorf("--log-file: %w", err)
		}
		w, closeFn = fh, func() { _ = fh.Close() }
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: lv})), closeFn, nil
}
