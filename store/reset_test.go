package store

import (
	"context"
	"errors"
	"maps"
	"reflect"
	"strings"
	"testing"

	"github.com/triunalabs/trovesnap/internal/domain"
)

func TestReset_RestoresSeedState(t *testing.T) {
	ctx := context.Background()
	used := openTest(t)
	fresh := openTest(t)
	p := principal(t, used, "")

	// Dirty every kind of table: the chain, events, an edited seed row, an
	// extra tenant-wide row.
	for _, k := range []string{"k1", "k2"} {
		if _, _, err := used.CreateCandidate(ctx, p, meta(p, k, "fp", "event_"+k), lamp()); err != nil {
			t.Fatal(err)
		}
	}
	if err := used.AppendEvent(ctx, domain.Event{ID: "event_read", Outcome: domain.OutcomeSuccess}); err != nil {
		t.Fatal(err)
	}
	if _, err := used.w.Exec("UPDATE items SET title = 'edited', version = 9 WHERE id = 'item_a1'"); err != nil {
		t.Fatal(err)
	}
	if _, err := used.w.Exec("UPDATE mcp_clients SET status = 'suspended' WHERE demo = 1"); err != nil {
		t.Fatal(err)
	}

	if _, err := used.Reset(ctx, testDataset(), "tester"); err != nil {
		t.Fatal(err)
	}
	if d := diffKeys(withoutEvents(mustDigest(t, fresh)), withoutEvents(mustDigest(t, used))); len(d) != 0 {
		t.Fatalf("after Reset, tables %v differ from a fresh seeded store", d)
	}
	if evs, _ := used.Events(ctx, EventFilter{}); len(evs) != 1 || evs[0].Action != ResetAction {
		t.Fatalf("after the reset the log holds %d events; want only the reset's own", len(evs))
	}
	principal(t, used, "") // the demo client is active again

	// The append-only guard is back in force.
	if err := used.AppendEvent(ctx, domain.Event{ID: "event_probe", Outcome: domain.OutcomeSuccess}); err != nil {
		t.Fatal(err)
	}
	if _, err := used.w.Exec("DELETE FROM plugin_events"); err == nil || !strings.Contains(err.Error(), "append-only") {
		t.Fatalf("DELETE after reset: err = %v; want the append-only abort", err)
	}
	if err := fresh.AppendEvent(ctx, domain.Event{ID: "event_probe", Outcome: domain.OutcomeSuccess}); err != nil {
		t.Fatal(err)
	}
	// And the two stores keep behaving alike: the same write gives the same
	// ids and the same event seq (sequences were reset too).
	for _, s := range []*Store{used, fresh} {
		q := principal(t, s, "")
		if _, _, err := s.CreateCandidate(ctx, q, meta(q, "after", "fp", "event_after"), lamp()); err != nil {
			t.Fatal(err)
		}
	}
	// SeqIDs live in the process, not the file: `used` minted ids before the
	// reset, so candidate ids differ; compare the tables that carry none.
	du, df := mustDigest(t, used), mustDigest(t, fresh)
	for _, tb := range []string{"items", "estate_sales", "mcp_clients", "demand_signals", "store_meta"} {
		if du[tb] != df[tb] {
			t.Errorf("%s differs after the same write", tb)
		}
	}
	var seq int
	if err := used.r.QueryRow("SELECT seq FROM plugin_events WHERE id = 'event_probe'").Scan(&seq); err != nil || seq != 2 {
		t.Fatalf("first event after the reset's own has seq %d, %v; want 2", seq, err)
	}
}

func TestReset_BadDatasetLeavesDatabaseUnchanged(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	if err := s.AppendEvent(ctx, domain.Event{ID: "event_1", Outcome: domain.OutcomeSuccess}); err != nil {
		t.Fatal(err)
	}
	before := mustDigest(t, s)
	var triggersBefore int
	if err := s.r.QueryRow("SELECT count(*) FROM sqlite_schema WHERE type = 'trigger'").Scan(&triggersBefore); err != nil || triggersBefore < 3 {
		t.Fatalf("triggers = %d, %v", triggersBefore, err)
	}
	bad := testDataset()
	bad.Memberships = append(bad.Memberships, domain.Membership{ID: "membership_x", TenantID: "tenant_missing", UserID: userAlice, Role: domain.RoleOwner})
	_, err := s.Reset(ctx, bad, "tester")
	if !errors.Is(err, domain.ErrInvalidInput) || !strings.Contains(err.Error(), "membership_x") {
		t.Fatalf("err = %v; want an invalid-input error naming membership_x", err)
	}
	if d := diffKeys(before, mustDigest(t, s)); len(d) != 0 {
		t.Fatalf("a failed reset changed %v", d)
	}
	var triggers int
	if err := s.r.QueryRow("SELECT count(*) FROM sqlite_schema WHERE type = 'trigger'").Scan(&triggers); err != nil || triggers != triggersBefore {
		t.Fatalf("triggers after failed reset = %d, %v", triggers, err)
	}
}

func TestReset_RefusedInLiveMode(t *testing.T) {
	s := openTest(t, func(o *Options) { o.Mode = domain.ModeLive })
	before := mustDigest(t, s)
	if _, err := s.Reset(context.Background(), testDataset(), "tester"); !errors.Is(err, domain.ErrPermissionDenied) {
		t.Fatalf("err = %v; want ErrPermissionDenied", err)
	}
	if d := diffKeys(before, mustDigest(t, s)); len(d) != 0 {
		t.Fatalf("changed %v", d)
	}
}

// withoutEvents drops plugin_events from a digest: after a reset the log
// holds the reset's own event, which a fresh store does not.
func withoutEvents(d map[string]string) map[string]string {
	out := maps.Clone(d)
	delete(out, "plugin_events")
	return out
}

// Issue 13, finding 10: a reset no longer leaves an empty, "intact" log. The
// new log starts with one event that records the reset — who, when, how many
// events were discarded and the head of each discarded chain — and it is
// the only event, on a chain of its own that starts at the genesis.
func TestHardening_ResetRecordsWhatItDiscarded(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	p := principal(t, s, "")
	for _, k := range []string{"k1", "k2", "k3"} {
		if _, _, err := s.CreateCandidate(ctx, p, meta(p, k, "fp", "event_"+k), lamp()); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AppendEvent(ctx, domain.Event{ID: "event_untenanted", Outcome: domain.OutcomeSuccess}); err != nil {
		t.Fatal(err)
	}
	heads, err := s.ChainHeads(ctx)
	if err != nil || len(heads) != 2 {
		t.Fatalf("heads before: %v, %v", heads, err)
	}

	res, err := s.Reset(ctx, testDataset(), "paul")
	if err != nil {
		t.Fatal(err)
	}
	if res.DiscardedEvents != 4 || !reflect.DeepEqual(res.OldHeads, heads) || res.EventID == "" {
		t.Fatalf("result = %+v; want 4 events discarded, the old heads %v", res, heads)
	}
	evs, err := s.Events(ctx, EventFilter{})
	if err != nil || len(evs) != 1 {
		t.Fatalf("events after reset: %d, %v; want 1", len(evs), err)
	}
	ev := evs[0]
	sum := ev.Payload.RedactedSummary
	var tenantHead domain.ChainHead
	for _, h := range heads {
		if h.TenantID == p.TenantID {
			tenantHead = h
		}
	}
	if ev.ID != res.EventID || ev.Action != ResetAction || ev.Outcome != domain.OutcomeSuccess || ev.Actor.ID != "paul" ||
		ev.TenantID != "" || ev.OccurredAt.IsZero() || sum["discarded_events"] != "4" || sum["discarded_chains"] != "2" ||
		!strings.Contains(sum["old_head."+p.TenantID], tenantHead.EventHash) || !strings.Contains(sum["old_head._"], "event_untenanted") ||
		sum["old_head_hash"] != heads[0].EventHash && sum["old_head_hash"] != heads[1].EventHash {
		t.Fatalf("reset event = %+v", ev)
	}
	after, err := s.ChainHeads(ctx)
	if err != nil || len(after) != 1 || after[0].Events != 1 || after[0].EventID != ev.ID {
		t.Fatalf("heads after: %v, %v", after, err)
	}
	var prev string
	if err := s.r.QueryRow("SELECT prev_hash FROM plugin_events WHERE id = ?", ev.ID).Scan(&prev); err != nil || prev != domain.ChainGenesis {
		t.Fatalf("the reset event's prev_hash = %q, %v; want the genesis", prev, err)
	}
}
