package store

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/triunalabs/trovesnap/internal/domain"
)

func TestPluginEvents_AppendOnly(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	if err := s.AppendEvent(ctx, domain.Event{ID: "event_1", TenantID: tenantA, Outcome: domain.OutcomeSuccess}); err != nil {
		t.Fatal(err)
	}
	before := mustDigest(t, s)
	// Straight SQL on the writer and on an independent connection: the
	// guard is in the database, not in the store's API.
	other := rawDB(t, s.Path())
	for name, q := range map[string]string{
		"update":         "UPDATE plugin_events SET outcome = 'failed'",
		"delete":         "DELETE FROM plugin_events",
		"replace by id":  `INSERT OR REPLACE INTO plugin_events (id, outcome, occurred_at, body) VALUES ('event_1', 'failed', 'x', '{}')`,
		"replace by seq": `INSERT OR REPLACE INTO plugin_events (seq, id, outcome, occurred_at, body) VALUES (1, 'event_9', 'failed', 'x', '{}')`,
	} {
		for conn, exec := range map[string]func(string) error{
			"writer": func(q string) error { _, err := s.w.ExecContext(ctx, q); return err },
			"other":  func(q string) error { _, err := other.ExecContext(ctx, q); return err },
		} {
			err := exec(q)
			if err == nil || !strings.Contains(err.Error(), "plugin_events is append-only") {
				t.Errorf("%s via %s: err = %v; want the append-only abort", name, conn, err)
			}
		}
	}
	if d := diffKeys(before, mustDigest(t, s)); len(d) != 0 {
		t.Fatalf("plugin_events changed: %v", d)
	}
}

func TestAppendEvent_RoundTripsAndFilters(t *testing.T) {
	ctx := context.Background()
	clock := domain.NewFixedClock(epoch)
	s := openTest(t, func(o *Options) { o.Clock = clock })
	cause := "event_1"
	when := time.Date(2026, 11, 29, 11, 30, 0, 123456789, time.FixedZone("PST", -8*3600))
	in := []domain.Event{
		{ID: "event_1", TenantID: tenantA, CorrelationID: "corr_1", RequestID: "r1", ServerRequestID: "mcp_req_1",
			Mode: domain.ModeMock, Tool: domain.ToolRef{Name: "list_items", Version: "1.0.0"}, Outcome: domain.OutcomeSuccess,
			Payload:    domain.EventPayload{InputHash: "sha256:ab", RedactedSummary: map[string]string{"sale_id": saleA1}},
			OccurredAt: when},
		{ID: "event_2", TenantID: tenantA, CorrelationID: "corr_1", CausationID: &cause, RequestID: "r2", ServerRequestID: "mcp_req_2",
			Tool: domain.ToolRef{Name: "create_inventory_candidate"}, Outcome: domain.OutcomeBlocked, ErrorCode: "invalid_reference",
			AuditCode: "cross_tenant_reference"},
		{ID: "event_3", Outcome: domain.OutcomeFailed, Tool: domain.ToolRef{Name: "list_items"}},
	}
	for _, e := range in {
		if err := s.AppendEvent(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	all, err := s.Events(ctx, EventFilter{})
	if err != nil || len(all) != 3 {
		t.Fatalf("all = %d, %v", len(all), err)
	}
	if !all[0].OccurredAt.Equal(when) || all[0].OccurredAt.Location() != time.UTC || all[0].Payload.RedactedSummary["sale_id"] != saleA1 {
		t.Fatalf("event_1 = %+v", all[0])
	}
	if !all[1].OccurredAt.Equal(epoch) || *all[1].CausationID != "event_1" || all[1].AuditCode != "cross_tenant_reference" {
		t.Fatalf("event_2 = %+v (a zero instant takes the store clock)", all[1])
	}
	if all[2].Related.CandidateIDs == nil || all[2].Related.EventIDs == nil {
		t.Fatalf("related lists must be [] not null: %+v", all[2].Related)
	}
	ids := func(f EventFilter) []string {
		evs, err := s.Events(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range evs {
			out = append(out, e.ID)
		}
		return out
	}
	for _, tc := range []struct {
		f    EventFilter
		want []string
	}{
		{EventFilter{CorrelationID: "corr_1"}, []string{"event_1", "event_2"}},
		{EventFilter{RequestID: "r2"}, []string{"event_2"}},
		{EventFilter{ServerRequestID: "mcp_req_1"}, []string{"event_1"}},
		{EventFilter{Tool: "list_items"}, []string{"event_1", "event_3"}},
		{EventFilter{Tool: "list_items", TenantID: tenantA}, []string{"event_1"}},
		{EventFilter{RequestID: "nope"}, nil},
	} {
		if got := ids(tc.f); !slices.Equal(got, tc.want) {
			t.Errorf("%+v: %v; want %v", tc.f, got, tc.want)
		}
	}
	for name, e := range map[string]domain.Event{
		"no id":       {Outcome: domain.OutcomeSuccess},
		"bad outcome": {ID: "event_9", Outcome: "maybe"},
	} {
		if err := s.AppendEvent(ctx, e); !errors.Is(err, domain.ErrInvalidInput) {
			t.Errorf("%s: err = %v; want ErrInvalidInput", name, err)
		}
	}
	if err := s.AppendEvent(ctx, in[0]); !errors.Is(err, domain.ErrUnavailable) {
		t.Errorf("duplicate id: err = %v; want refusal", err)
	}
}
