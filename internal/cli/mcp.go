package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/triunalabs/trovesnap/internal/audit"
	"github.com/triunalabs/trovesnap/internal/buildinfo"
	"github.com/triunalabs/trovesnap/internal/config"
	"github.com/triunalabs/trovesnap/internal/gate"
	"github.com/triunalabs/trovesnap/internal/mcpserver"
)

// ServeOptions are the options of `trovesnap mcp serve`.
type ServeOptions struct {
	DB       string
	LogFile  string
	LogLevel string
	// Transport is what the server speaks; tests pass an in-memory one.
	Transport mcp.Transport
}

// serveMemoryLimit is the soft memory limit of `mcp serve` unless GOMEMLIMIT
// is set (issue 13: peak RSS under 100 MB whatever one client sends).
const serveMemoryLimit = 40 << 20

func newMCPCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "mcp", Short: "The MCP server"}
	opts := &ServeOptions{}
	serve := &cobra.Command{
		Use:   "serve",
		Short: "Serve MCP over stdio (stdout carries JSON-RPC only; logs go to stderr)",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.DB = dbFlag(cmd)
			if opts.Transport == nil && os.Getenv("GOMEMLIMIT") == "" {
				// A soft limit makes the GC work before RSS grows: a client
				// sending big arguments costs CPU, not the host's memory.
				debug.SetMemoryLimit(serveMemoryLimit)
			}
			return serveRun(cmd.Context(), f, opts)
		},
	}
	serve.Flags().StringVar(&opts.LogFile, "log-file", "", "write logs to this file instead of stderr")
	serve.Flags().StringVar(&opts.LogLevel, "log-level", "info", "debug | info | warn | error")
	cmd.AddCommand(serve)
	return cmd
}

func serveRun(ctx context.Context, f *Factory, opts *ServeOptions) error {
	logger, closeLog, err := newLogger(f.IO.ErrOut, opts.LogFile, opts.LogLevel)
	if err != nil {
		return err
	}
	defer closeLog()
	cfg, err := f.Config(opts.DB)
	if err != nil {
		return err
	}
	// A set but empty or malformed credential is refused before anything
	// opens: it must never fall back to the demo client (issue 13, finding 7).
	if err := config.CheckClientToken(f.lookupEnv); err != nil {
		return err
	}
	st, err := f.OpenStore(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer st.Close()
	// Mock: the store is the Backend. Live: Supabase RPCs, with st as the
	// outbox of events for calls that wrote nothing, flushed in the background.
	backend, stopLive, err := f.ServeBackend(ctx, cfg, st, logger)
	if err != nil {
		return err
	}
	defer stopLive()
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
	g := gate.New(gate.Options{Backend: backend, Mode: cfg.Mode, Clock: f.Clock, IDs: f.IDs, ServerVersion: buildinfo.Version, Logger: logger,
		TracerProvider: tel.Tracer, MeterProvider: tel.Meter})
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
