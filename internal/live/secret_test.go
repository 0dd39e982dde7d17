package live_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/cli"
	"github.com/triunalabs/trovesnap/internal/contract"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/gate"
	"github.com/triunalabs/trovesnap/internal/live"
)

// The client token — the one secret a live host holds — and the hash the
// database stores of it appear in no output, envelope, event (in Postgres
// or in the local outbox file), log line, error or CLI output — while
// things work and while PostgreSQL is down.
func TestClientToken_AbsentFromEveryOutput(t *testing.T) {
	env := seeded(t)
	lg := newLiveGate(t, env)
	key := contract.CredOwner
	var seen bytes.Buffer
	record := func(v any) { b, _ := json.Marshal(v); seen.Write(b); seen.WriteByte('\n') }

	cs := connect(t, lg.g, contract.CredOwner)
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"trove_list_sales", map[string]any{}},
		{"trove_list_items", map[string]any{"sale_id": fixtures.OtherPublishedSaleID}},
		{"trove_create_candidate", map[string]any{"sale_id": fixtures.PublishedSaleID, "title": "Vase", "idempotency_key": "k1"}},
		{"trove_create_candidate", map[string]any{"sale_id": fixtures.PublishedSaleID, "title": "Other", "idempotency_key": "k1"}},
	} {
		record(call(t, cs, c.tool, c.args))
	}
	record(call(t, connect(t, lg.g, ""), "trove_list_sales", map[string]any{}))

	// A backend with this key, printed every way.
	fmt.Fprintf(&seen, "%v %+v %#v %s\n", lg.b, lg.b, lg.b, lg.b)
	record(live.Options{URL: env.Endpoint.URL})

	// Errors and envelopes while PostgreSQL is down.
	if err := env.Cluster.StopServer(); err != nil {
		t.Fatal(err)
	}
	record(lg.g.Invoke(ctx, gate.Call{Tool: "trove_list_sales", Arguments: []byte(`{}`), Credential: contract.CredOwner}))
	_, err := lg.b.ListSales(ctx, domain.Principal{TenantID: fixtures.DemoTenantID, Client: domain.ClientRef{ID: fixtures.DemoClientID}}, domain.SaleQuery{})
	fmt.Fprintln(&seen, err)
	_, err = lg.b.ResolvePrincipal(ctx, contract.CredOwner)
	fmt.Fprintln(&seen, err)
	if err := env.Cluster.StartServer(); err != nil {
		t.Fatal(err)
	}
	// A token the database refuses: its error and logs.
	_, err = lg.b.ResolvePrincipal(ctx, key+"x")
	fmt.Fprintln(&seen, err)

	lg.clock.Advance(time.Hour)
	if _, err := lg.st.FlushOutbox(ctx, lg.b, 100); err != nil {
		t.Fatal(err)
	}
	events, _ := env.Events(ctx)
	record(events)

	// The CLI in live mode: doctor (text and JSON) and sync status.
	dir := t.TempDir()
	vars := map[string]string{"SUPABASE_URL": env.Endpoint.URL, "SUPABASE_ANON_KEY": env.PublicKey(), "TROVESNAP_CLIENT_TOKEN": key,
		"TROVESNAP_DB": filepath.Join(dir, "live.db"), "TROVESNAP_DATA_DIR": dir, "HOME": dir}
	for _, argv := range [][]string{{"doctor"}, {"doctor", "--json"}, {"sync", "status"}, {"sync", "status", "--json"}} {
		var out, errb bytes.Buffer
		f := &cli.Factory{IO: cli.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errb},
			Getenv: func(k string) string { return vars[k] }, Clock: domain.SystemClock{}, IDs: domain.RandomIDs{},
			Executable: func() (string, error) { return "/usr/local/bin/trovesnap", nil }}
		code := cli.Run(ctx, f, argv)
		if code != cli.ExitOK {
			t.Fatalf("%v: exit %d\n%s%s", argv, code, out.String(), errb.String())
		}
		if argv[0] == "doctor" && (!strings.Contains(out.String(), "reachable") || strings.Contains(out.String(), "PROBLEM") || !(strings.Contains(out.String(), "public role:     anon") || strings.Contains(out.String(), `"role": "anon"`))) {
			t.Fatalf("doctor in live mode:\n%s", out.String())
		}
		seen.Write(out.Bytes())
		seen.Write(errb.Bytes())
	}

	seen.Write(lg.logs.Bytes())
	for _, suffix := range []string{"", "-wal"} {
		b, _ := os.ReadFile(lg.st.Path() + suffix)
		seen.Write(b)
	}
	sig := contract.Hash(key) // stored, never sent, never shown
	if seen.Len() < 2000 {
		t.Fatalf("scanned only %d bytes: the scan proves nothing", seen.Len())
	}
	for _, needle := range []string{key, sig} {
		if bytes.Contains(seen.Bytes(), []byte(needle)) {
			i := bytes.Index(seen.Bytes(), []byte(needle))
			t.Fatalf("the client token or its hash leaked near: %q", seen.Bytes()[max(0, i-200):i])
		}
	}
	if !bytes.Contains(seen.Bytes(), []byte("service_unavailable")) || !bytes.Contains(seen.Bytes(), []byte("live.Backend(")) {
		t.Fatal("the scan did not cover the outage and the printed backend")
	}
}

// benchCandidateWriter returns one trove_create_candidate write under a
// fresh key, on a seeded project whose write limit is raised so that a
// long benchmark loop is not refused after 20 calls (the RPC counts its own
// rate since migration 34; harmless before, the limits table predates it),
// after 20 warm-up writes that compile every pooled session's plans. With
// asGate, the write is preceded by the rate count the gate makes itself
// when the backend does not count inside the call (CountsRateInCall).
func benchCandidateWriter(b *testing.B, asGate bool) func(key string) {
	env := seeded(b)
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `INSERT INTO trovesnap.mcp_limits (tenant_id, client_id, read_calls_per_minute,
		candidate_writes_per_minute, proposals_per_minute, controlled_actions_per_minute, maximum_bulk_targets,
		maximum_daily_paid_cost_usd, updated_at) VALUES ($1, '', 1000000, 1000000, 1000000, 1000000, 50, 0, now())
		ON CONFLICT (tenant_id, client_id) DO UPDATE SET read_calls_per_minute = 1000000, candidate_writes_per_minute = 1000000`,
		fixtures.DemoTenantID); err != nil {
		b.Fatal(err)
	}
	be := newBackend(b, env)
	p, err := be.ResolvePrincipal(ctx, contract.CredOwner)
	if err != nil {
		b.Fatal(err)
	}
	countFirst := asGate
	if cc, ok := any(be).(interface{ CountsRateInCall(tool, class string) bool }); ok && cc.CountsRateInCall("trove_create_candidate", "candidate_writes") {
		countFirst = false
	}
	write := func(key string) {
		if countFirst {
			if d, err := be.ConsumeRate(ctx, p, "candidate_writes"); err != nil || !d.Allowed {
				b.Fatalf("rate: %+v, %v", d, err)
			}
		}
		w := domain.WriteMeta{
			Idem:  domain.IdempotencyKey{TenantID: p.TenantID, ClientID: p.Client.ID, Tool: "trove_create_candidate", ToolMajor: 1, Key: key, Fingerprint: "sha256:" + key},
			Event: domain.Event{ID: "event_" + key, TenantID: p.TenantID, Mode: domain.ModeLive, Client: p.Client, Tool: domain.ToolRef{Name: "trove_create_candidate"}, Action: "mcp_tool_called"},
		}
		if _, _, err := be.CreateCandidate(ctx, p, w, domain.NewCandidate{SaleID: fixtures.PublishedSaleID, Title: "Bench lamp"}); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 20 {
		write(fmt.Sprintf("warm-%d", i))
	}
	return write
}

// BenchmarkLive_CandidateWriteRoundTrip measures one trove_create_candidate
// Backend call (HTTP → RPC → one Postgres transaction) on the local cluster,
// in steady state.
func BenchmarkLive_CandidateWriteRoundTrip(b *testing.B) {
	write := benchCandidateWriter(b, false)
	for i := 0; b.Loop(); i++ {
		write(fmt.Sprintf("bench-%d", i))
	}
}

// BenchmarkLive_GateCandidateWrite measures the database work the gate
// waits for on one trove_create_candidate: counting the call in its limit
// class and the write. A backend that counts inside the write (the RPCs
// since migration 34) makes one round trip; before, the gate made a
// ConsumeRate call first.
func BenchmarkLive_GateCandidateWrite(b *testing.B) {
	write := benchCandidateWriter(b, true)
	for i := 0; b.Loop(); i++ {
		write(fmt.Sprintf("bench-%d", i))
	}
}
