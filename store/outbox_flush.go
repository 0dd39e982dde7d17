package store

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// Flusher delivers the outbox in the background while a live server runs:
// it flushes every Interval, and while the sink is unavailable it waits
// longer each time (doubling up to MaxWait), so an outage costs one probe
// per wait, never a busy loop. Each event also keeps its own backoff (see
// FlushOutbox).
type Flusher struct {
	Store    *Store
	Sink     EventSink
	Interval time.Duration // default 1s
	MaxWait  time.Duration // default 1m
	Logger   *slog.Logger
}

// Run flushes until ctx is done, then makes one last attempt (bounded by a
// few seconds) so a server stopping cleanly leaves no avoidable backlog.
func (f *Flusher) Run(ctx context.Context) {
	interval, maxWait := f.Interval, f.MaxWait
	if interval <= 0 {
		interval = time.Second
	}
	if maxWait <= 0 {
		maxWait = time.Minute
	}
	log := f.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	wait := interval
	for {
		select {
		case <-ctx.Done():
			final, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			_, _ = f.Store.FlushOutbox(final, f.Sink, 500)
			cancel()
			return
		case <-time.After(wait):
		}
		res, err := f.Store.FlushOutbox(ctx, f.Sink, 500)
		switch {
		case errors.Is(err, domain.ErrUnavailable):
			if wait == interval {
				log.Warn("live: Supabase unavailable; events stay queued locally", "retry_in", wait*2)
			}
			wait = min(wait*2, maxWait)
		case err != nil:
			log.Error("live: outbox flush failed", "err", err)
			wait = min(wait*2, maxWait)
		default:
			if wait != interval {
				log.Info("live: Supabase reachable again; outbox flushing", "sent", res.Sent)
			}
			wait = interval
		}
		if res.Rejected > 0 {
			log.Error("live: Supabase refused events as invalid; they stay in the outbox (trovesnap sync status)", "rejected", res.Rejected)
		}
	}
}
