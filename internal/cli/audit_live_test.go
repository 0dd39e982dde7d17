package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/audit"
	"github.com/triunalabs/trovesnap/internal/cli"
	"github.com/triunalabs/trovesnap/internal/contract"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/live"
)

// `trovesnap audit` in live mode reads the project's chain as the signed-in
// seller: the local file holds no live events.
func TestAuditLive_VerifyReportsTheProjectsEvents(t *testing.T) {
	env, newSeller := lcEnv(t)
	ctx := context.Background()
	b, err := live.New(live.Options{URL: env.Endpoint.URL, PublicKey: env.PublicKey()})
	if err != nil {
		t.Fatal(err)
	}
	// Each event goes with its own client's token, which decides its tenant.
	for _, cred := range []string{contract.CredOwner, contract.CredOther} {
		if _, err := b.ResolvePrincipal(ctx, cred); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 {
		tenant := fixtures.DemoTenantID
		if i == 4 {
			tenant = fixtures.OtherTenantID // not the signed-in seller's
		}
		ev := domain.Event{ID: fmt.Sprintf("event_cli%d", i), TenantID: tenant, CorrelationID: fmt.Sprintf("corr_cli%d", i),
			Mode: domain.ModeLive, Tool: domain.ToolRef{Name: "trove_get_item", Version: "1.0.0"}, Action: "mcp_tool_called",
			Client: domain.ClientRef{ID: fixtures.DemoClientID}, Outcome: domain.OutcomeSuccess, OccurredAt: time.Now()}
		if tenant == fixtures.OtherTenantID {
			ev.Client.ID = fixtures.OtherClientID
		}
		if err := b.SendEvent(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	s := lcLogin(t, env, newSeller, fixtures.DemoUserID)

	r := s.exec(t, "", "audit", "verify", "--json")
	var rep audit.Report
	if r.code != cli.ExitOK || json.Unmarshal([]byte(r.out), &rep) != nil {
		t.Fatalf("audit verify --json: %+v", r)
	}
	if !rep.Intact || rep.Events != 4 || len(rep.Chains) != 1 || rep.Chains[0].TenantID != fixtures.DemoTenantID {
		t.Fatalf("report %+v", rep)
	}
	if r := s.exec(t, "", "audit", "verify"); r.code != cli.ExitOK || !strings.Contains(r.out, "4 events verified in 1 chain(s).") {
		t.Fatalf("audit verify: %+v", r)
	}
	if r := s.exec(t, "", "audit", "show", "event_cli2", "--json"); r.code != cli.ExitOK || !strings.Contains(r.out, `"event_matches_hash": true`) {
		t.Fatalf("audit show: %+v", r)
	}
	if r := s.exec(t, "", "audit", "trace", "corr_cli1"); r.code != cli.ExitOK || !strings.Contains(r.out, "event_cli1") || strings.Contains(r.out, "event_cli2") {
		t.Fatalf("audit trace: %+v", r)
	}
	// Another tenant's event is not the signed-in seller's to read.
	if r := s.exec(t, "", "audit", "show", "event_cli4"); r.code == cli.ExitOK || strings.Contains(r.out, "event_cli4") {
		t.Fatalf("audit show of another tenant's event: %+v", r)
	}
	if r := s.exec(t, "", "audit", "tail", "-n", "2"); r.code != cli.ExitOK || !strings.Contains(r.out, "event_cli3") || strings.Contains(r.out, "event_cli1") {
		t.Fatalf("audit tail: %+v", r)
	}

	// A head kept elsewhere detects the removal of the newest event.
	head := s.exec(t, "", "audit", "head", "--json")
	if head.code != cli.ExitOK || !strings.Contains(head.out, "event_cli3") {
		t.Fatalf("audit head --json: %+v", head)
	}
	saved := filepath.Join(t.TempDir(), "heads.json")
	if err := os.WriteFile(saved, []byte(head.out), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := s.exec(t, "", "audit", "verify", "--against", saved); r.code != cli.ExitOK || !strings.Contains(r.out, "1 saved head(s) still in place") {
		t.Fatalf("verify --against before: %+v", r)
	}
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "ALTER TABLE trovesnap.plugin_events DISABLE TRIGGER plugin_events_append_only; "+
		"DELETE FROM trovesnap.plugin_events WHERE id = 'event_cli3'; "+
		"ALTER TABLE trovesnap.plugin_events ENABLE TRIGGER plugin_events_append_only"); err != nil {
		t.Fatal(err)
	}
	if r := s.exec(t, "", "audit", "verify", "--against", saved); r.code != cli.ExitAuditBroken || !strings.Contains(r.out, "truncated") {
		t.Fatalf("verify --against after removing the head: %+v", r)
	}
}
