package cli

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/triunalabs/trovesnap/internal/config"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/live"
	"github.com/triunalabs/trovesnap/store"
)

// OpenLive builds the live backend from the configuration. With outbox set,
// AppendEvent queues events there instead of sending them.
func (f *Factory) OpenLive(cfg config.Config, outbox live.EventQueue, logger *slog.Logger) (*live.Backend, error) {
	b, err := live.New(live.Options{URL: cfg.SupabaseURL, PublicKey: cfg.SupabaseAPIKey(),
		HTTPClient: f.HTTPClient, Outbox: outbox, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", config.ErrLiveUnavailable, err)
	}
	return b, nil
}

// ServeBackend is the Backend `mcp serve` hands the gate. In mock mode it is
// st itself. In live mode it is the Supabase backend, st keeps the outbox of
// events for calls that wrote nothing, and a flusher delivers it until stop
// is called (one last flush then, bounded by a few seconds).
func (f *Factory) ServeBackend(ctx context.Context, cfg config.Config, st *store.Store, logger *slog.Logger) (domain.Backend, func(), error) {
	if cfg.Mode != domain.ModeLive {
		return st, func() {}, nil
	}
	b, err := f.OpenLive(cfg, st, logger)
	if err != nil {
		return nil, nil, err
	}
	fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	fl := &store.Flusher{Store: st, Sink: b, Logger: logger}
	go func() {
		defer close(done)
		fl.Run(fctx)
	}()
	logger.Info("live mode: Supabase RPCs; events of calls that write nothing go through the local outbox", "supabase_url", cfg.SupabaseURL, "outbox", cfg.DBPath)
	return b, func() { cancel(); <-done }, nil
}
