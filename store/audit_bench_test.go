package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/triunalabs/trovesnap/internal/audit"
	"github.com/triunalabs/trovesnap/internal/domain"
)

// benchEvent is a realistic event: a candidate write with every §35 field.
func benchEvent(i int, tenant string) domain.Event {
	return domain.Event{
		ID: fmt.Sprintf("event_b%07d", i), TenantID: tenant, CorrelationID: fmt.Sprintf("corr_b%07d", i), RequestID: "req-1",
		ServerRequestID: fmt.Sprintf("mcp_req_b%07d", i), Mode: domain.ModeMock,
		Plugin: domain.PluginRef{Type: "mcp", ID: "trovesnap", Version: "1.0.0"}, Client: domain.ClientRef{ID: "mcp_client_81", Name: "Paul Claude Code", Type: "claude_code"},
		Tool: domain.ToolRef{Name: "trove_create_candidate", Version: "1.0.0", InputSchemaHash: "sha256:90a939e69d2c2eac7956a30ec922e5d44fce6b1172cd6786f7ad8a163da07746",
			Tier: "candidate_write", Risk: "low_write"},
		Actor: domain.ActorRef{ID: "user_88", Type: "seller", Role: "owner"}, Action: "mcp_tool_called", Outcome: domain.OutcomeSuccess,
		Related:  domain.Related{CandidateIDs: []string{"candidate_771"}, SourceImportRunIDs: []string{"run_844"}, SourceImportRecordIDs: []string{"record_991"}},
		Payload:  domain.EventPayload{InputHash: "sha256:8dc6f9c72abf987266fbe5cf863c421564383dab59575995575433ae9ca09d44", RedactedSummary: map[string]string{"sale_id": "sale_221"}},
		Approval: domain.EventApproval{Decision: "not_required", Requirement: "none"}, Metrics: domain.EventMetrics{LatencyMS: 1.234},
		Impact: domain.EventImpact{Type: "candidate_created", Material: true}, Permissions: []string{"item.create_candidate"},
		Domain: &domain.EventDomain{Service: "ingestion", Operation: "create_inventory_candidate"}, OccurredAt: epoch.Add(time.Duration(i) * time.Millisecond),
		TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", SpanID: "00f067aa0ba902b7",
	}
}

func benchStore(b *testing.B) *Store {
	b.Helper()
	ds := testDataset()
	s, err := Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"), Options{Clock: domain.NewFixedClock(epoch), IDs: domain.NewSeqIDs(), Seed: &ds})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}

// BenchmarkAuditVerify100k: `audit verify` over 100,000 events in 3 tenant
// chains (goal ≤ 1 s per op). The events go in through insertEvent — the
// chain's real write path — in one transaction, to build the file fast.
func BenchmarkAuditVerify100k(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	tenants := []string{tenantA, "tenant_b", ""}
	if err := s.withTx(ctx, func(tx *sql.Tx) error {
		for i := range 100_000 {
			if err := s.insertEvent(ctx, tx, benchEvent(i, tenants[i%len(tenants)])); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		rep, err := audit.Verify(ctx, s, audit.VerifyOptions{})
		if err != nil || !rep.Intact || rep.Events != 100_000 {
			b.Fatalf("%v %+v", err, rep.First)
		}
	}
}

// BenchmarkInsertEvent measures recording one event in its own write
// transaction (as every call does), with the chain (what insertEvent does)
// and without it (the pre-0006 statements). The difference is the cost the
// chain adds to a write (goal ≤ 20 µs): canonical JSON, SHA-256 and the
// head lookup.
func BenchmarkInsertEvent(b *testing.B) {
	ctx := context.Background()
	for _, mode := range []string{"chained", "unchained"} {
		b.Run(mode, func(b *testing.B) {
			s := benchStore(b)
			i := 0
			for b.Loop() {
				i++
				e := benchEvent(i, tenantA)
				err := s.withTx(ctx, func(tx *sql.Tx) error {
					if mode == "chained" {
						return s.insertEvent(ctx, tx, e)
					}
					return insertUnchained(ctx, tx, e)
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// insertUnchained is insertEvent as it was before the chain: the same
// statements, without the canonical form, the hash and the head lookup.
func insertUnchained(ctx context.Context, tx *sql.Tx, e domain.Event) error {
	e.Related = e.Related.Normalized()
	e.OccurredAt = e.OccurredAt.UTC()
	body, err := json.Marshal(e)
	if err != nil {
		return err
	}
	if _, err = tx.ExecContext(ctx, `INSERT INTO plugin_events (id, tenant_id, correlation_id, request_id, server_request_id,
		tool_name, outcome, occurred_at, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		e.ID, e.TenantID, e.CorrelationID, e.RequestID, e.ServerRequestID, e.Tool.Name, e.Outcome, ts(e.OccurredAt), string(body)); err != nil {
		return err
	}
	// The client's last use, as insertEvent does for every call.
	_, err = tx.ExecContext(ctx, `INSERT INTO client_activity (client_id, last_seen_at)
		SELECT ?, ? WHERE EXISTS (SELECT 1 FROM mcp_clients WHERE id = ?)
		ON CONFLICT (client_id) DO UPDATE SET last_seen_at = excluded.last_seen_at
		WHERE client_activity.last_seen_at < ?`,
		e.Client.ID, ts(e.OccurredAt), e.Client.ID, ts(e.OccurredAt.Add(-time.Minute)))
	return err
}

// BenchmarkChainCost isolates the chain's own work on one event: canonical
// JSON, SHA-256, and the head lookup on a table of 10,000 events.
func BenchmarkChainCost(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	for i := range 10_000 {
		if err := s.insertEvent(ctx, tx, benchEvent(i, tenantA)); err != nil {
			b.Fatal(err)
		}
	}
	raw, _ := json.Marshal(benchEvent(1, tenantA))
	b.Run("canonical+sha256", func(b *testing.B) {
		for b.Loop() {
			c, err := domain.CanonicalJSON(raw)
			if err != nil {
				b.Fatal(err)
			}
			_ = domain.ChainHash(c, "sha256:0000")
		}
	})
	b.Run("head_lookup", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.chainHead(ctx, tx, tenantA); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// The chain written by insertEvent verifies, across tenants and with causes.
func TestAuditChain_InsertEventBuildsVerifiableChains(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	for i := range 30 {
		if err := s.AppendEvent(ctx, benchEvent(i, []string{tenantA, "tenant_b", ""}[i%3])); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := audit.Verify(ctx, s, audit.VerifyOptions{})
	if err != nil || !rep.Intact || rep.Events != 30 || len(rep.Chains) != 3 {
		t.Fatalf("%v %+v", err, rep)
	}
	heads, err := s.ChainHeads(ctx)
	if err != nil || len(heads) != 3 || heads[0].TenantID != "" || heads[1].Events != 10 {
		t.Fatalf("heads %+v %v", heads, err)
	}
	// A fork (two events naming the same predecessor) is a bad link.
	db := rawDB(t, s.Path())
	if _, err := db.ExecContext(ctx, `INSERT INTO plugin_events (id, tenant_id, outcome, occurred_at, body, prev_hash, event_hash)
		SELECT 'event_fork', tenant_id, outcome, occurred_at, body, prev_hash, event_hash
		FROM plugin_events WHERE tenant_id = ? ORDER BY seq DESC LIMIT 1`, tenantA); err != nil {
		t.Fatal(err)
	}
	if rep, err := audit.Verify(ctx, s, audit.VerifyOptions{}); err != nil || rep.Intact || rep.First.EventID != "event_fork" {
		t.Errorf("fork: %v %+v", err, rep.First)
	}
}
