package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// sink stands in for Supabase's mcp_append_event: it records deliveries by
// event id (idempotent, like the RPC) and fails while down.
type sink struct {
	down     bool
	refuse   string
	received map[string]int
}

func (k *sink) SendEvent(_ context.Context, e domain.Event) error {
	if k.down {
		return fmt.Errorf("sink: %w", domain.ErrUnavailable)
	}
	if e.ID == k.refuse {
		return domain.Invalid("event", "refused")
	}
	k.received[e.ID]++
	return nil
}

func outboxEvent(id string) domain.Event {
	return domain.Event{ID: id, TenantID: tenantA, Outcome: domain.OutcomeSuccess, Tool: domain.ToolRef{Name: "trove_list_sales"}}
}

func TestOutbox_QueuesOnceRetriesWithBackoffAndDeliversExactlyOnce(t *testing.T) {
	clock := domain.NewFixedClock(epoch)
	s := openTest(t, func(o *Options) { o.Clock = clock; o.Mode = domain.ModeLive })
	ctx := context.Background()
	for _, id := range []string{"event_1", "event_2", "event_1", "event_3"} {
		if err := s.EnqueueEvent(ctx, outboxEvent(id)); err != nil {
			t.Fatal(err)
		}
	}
	st, err := s.OutboxStatus(ctx)
	if err != nil || st.Pending != 3 || st.OldestPending == nil || !st.OldestPending.Equal(epoch) {
		t.Fatalf("status = %+v, %v; want 3 pending (an event id queues once)", st, err)
	}

	k := &sink{down: true, refuse: "event_3", received: map[string]int{}}
	res, err := s.FlushOutbox(ctx, k, 10)
	if !errors.Is(err, domain.ErrUnavailable) || res.Retry != 1 || res.Sent != 0 {
		t.Fatalf("flush while down = %+v, %v", res, err)
	}
	st, _ = s.OutboxStatus(ctx)
	if st.Pending != 3 || st.NextAttempt == nil || !st.NextAttempt.Equal(epoch) || st.LastError != "unavailable" {
		t.Fatalf("after an outage = %+v: the failed event waits, the others stay due", st)
	}
	// The failed event backs off: 1s after its first failure, 2s after its second.
	_, _ = s.FlushOutbox(ctx, k, 10) // event_2 fails now
	_, _ = s.FlushOutbox(ctx, k, 10) // event_3 fails now
	clock.Advance(time.Second)
	_, _ = s.FlushOutbox(ctx, k, 10) // event_1 again: second failure
	var next string
	if err := s.r.QueryRowContext(ctx, "SELECT next_attempt_at FROM event_outbox WHERE event_id = 'event_1'").Scan(&next); err != nil {
		t.Fatal(err)
	}
	if want := ts(epoch.Add(3 * time.Second)); next != want {
		t.Fatalf("event_1 next attempt = %s, want %s (1s then 2s)", next, want)
	}

	// Reopened (a restart), the backlog is still there; back up, it drains.
	path := s.Path()
	_ = s.Close()
	s2 := openAt(t, path, func(o *Options) { o.Clock = clock; o.Mode = domain.ModeLive })
	k.down = false
	clock.Advance(time.Hour)
	res, err = s2.FlushOutbox(ctx, k, 10)
	if err != nil || res.Sent != 2 || res.Rejected != 1 {
		t.Fatalf("flush when back = %+v, %v", res, err)
	}
	if k.received["event_1"] != 1 || k.received["event_2"] != 1 || len(k.received) != 2 {
		t.Fatalf("received %v, want event_1 and event_2 once", k.received)
	}
	res, err = s2.FlushOutbox(ctx, k, 10)
	if err != nil || res != (FlushResult{}) {
		t.Fatalf("a second flush = %+v, %v; want nothing to do", res, err)
	}
	st, _ = s2.OutboxStatus(ctx)
	if st.Pending != 0 || st.Rejected != 1 || st.SentLastDay != 2 || st.LastError != "refused as invalid" {
		t.Fatalf("final status = %+v", st)
	}
}
