package cli_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/audit"
	"github.com/triunalabs/trovesnap/internal/cli"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/store"
)

// auditDB creates a store with events in two tenant chains and one
// anonymous chain: tenant_123 holds event_a1..a4, tenant_456 event_b1..b2.
func auditDB(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.db")
	seed := fixtures.Dataset()
	st, err := store.Open(context.Background(), path, store.Options{Clock: domain.NewFixedClock(fixtures.Epoch), IDs: domain.NewSeqIDs(), Seed: &seed})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for i, x := range []struct{ id, tenant string }{
		{"event_a1", fixtures.DemoTenantID}, {"event_b1", fixtures.OtherTenantID}, {"event_a2", fixtures.DemoTenantID},
		{"event_a3", fixtures.DemoTenantID}, {"event_z1", ""}, {"event_b2", fixtures.OtherTenantID}, {"event_a4", fixtures.DemoTenantID},
	} {
		if err := st.AppendEvent(context.Background(), domain.Event{ID: x.id, TenantID: x.tenant, CorrelationID: fmt.Sprintf("corr_%d", i),
			ServerRequestID: fmt.Sprintf("mcp_req_%d", i), Tool: domain.ToolRef{Name: "trove_list_sales", Version: "1.0.0"}, Outcome: domain.OutcomeSuccess}); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// tamper runs SQL as someone with write access to the file: the append-only
// triggers dropped first.
func tamper(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range append([]string{"DROP TRIGGER plugin_events_no_update", "DROP TRIGGER plugin_events_no_delete",
		"DROP TRIGGER plugin_events_no_replace"}, stmts...) {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

func rowOf(t *testing.T, path, id string) (seq int64, body, hash string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.QueryRow("SELECT seq, body, event_hash FROM plugin_events WHERE id = ?", id).Scan(&seq, &body, &hash); err != nil {
		t.Fatal(err)
	}
	return seq, body, hash
}

func TestAuditVerify_IntactChainsExitZero(t *testing.T) {
	path := auditDB(t)
	r := run(t, nil, "audit", "verify", "--db", path)
	if r.code != cli.ExitOK || !strings.Contains(r.out, "7 events verified in 3 chain(s)") || !strings.Contains(r.out, "(no tenant)") {
		t.Fatalf("%+v", r)
	}
	r = run(t, nil, "audit", "verify", "--json", "--db", path)
	var rep audit.Report
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil || r.code != cli.ExitOK || !rep.Intact || len(rep.Chains) != 3 {
		t.Fatalf("%+v %v", r, err)
	}
}

// Every kind of tampering: `audit verify` exits 6 and names the first bad
// event on stderr (and in the report).
func TestAuditVerify_TamperingExitsNonZeroNamingTheEvent(t *testing.T) {
	for name, tc := range map[string]struct {
		stmts    func(path string) []string
		kind, id string
	}{
		"flip a byte of a body": {func(string) []string {
			return []string{"UPDATE plugin_events SET body = replace(body, 'mcp_req_2', 'mcp_req_X') WHERE id = 'event_a2'"}
		}, audit.ProblemModified, "event_a2"},
		"delete a row": {func(string) []string { return []string{"DELETE FROM plugin_events WHERE id = 'event_a2'"} }, audit.ProblemDeleted, "event_a3"},
		"reorder two rows' seq": {func(p string) []string {
			s2, _, _ := rowOf(t, p, "event_a2")
			s3, _, _ := rowOf(t, p, "event_a3")
			return []string{fmt.Sprintf("UPDATE plugin_events SET seq = -1 WHERE seq = %d", s2), fmt.Sprintf("UPDATE plugin_events SET seq = %d WHERE seq = %d", s2, s3),
				fmt.Sprintf("UPDATE plugin_events SET seq = %d WHERE seq = -1", s3)}
		}, audit.ProblemReordered, "event_a3"},
		"duplicate a row": {func(string) []string {
			return []string{`INSERT INTO plugin_events (id, tenant_id, correlation_id, causation_id, request_id, server_request_id, tool_name, outcome, occurred_at, body, prev_hash, event_hash)
				SELECT 'event_dup', tenant_id, correlation_id, causation_id, request_id, server_request_id, tool_name, outcome, occurred_at, body, prev_hash, event_hash
				FROM plugin_events WHERE id = 'event_a2'`}
		}, audit.ProblemDuplicated, "event_dup"},
		"insert a forged row": {func(p string) []string {
			s2, _, h2 := rowOf(t, p, "event_a2")
			forged := domain.Event{ID: "event_forged", TenantID: fixtures.DemoTenantID, Outcome: domain.OutcomeSuccess, OccurredAt: fixtures.Epoch,
				Related: domain.Related{}.Normalized(), Action: "approval_granted"}
			raw, _ := json.Marshal(forged)
			body, _ := domain.CanonicalJSON(raw)
			return []string{
				fmt.Sprintf("UPDATE plugin_events SET seq = seq + 1000 WHERE seq > %d", s2),
				fmt.Sprintf(`INSERT INTO plugin_events (seq, id, tenant_id, outcome, occurred_at, body, prev_hash, event_hash)
					VALUES (%d, 'event_forged', '%s', 'success', '%s', '%s', '%s', '%s')`, s2+1, fixtures.DemoTenantID,
					fixtures.Epoch.UTC().Format("2006-01-02T15:04:05.000000000Z"), body, h2, domain.ChainHash(body, h2)),
			}
		}, audit.ProblemInserted, "event_forged"},
		"hide an event from its correlation": {func(string) []string {
			return []string{"UPDATE plugin_events SET correlation_id = 'corr_elsewhere' WHERE id = 'event_b2'"}
		}, audit.ProblemModified, "event_b2"},
	} {
		t.Run(name, func(t *testing.T) {
			path := auditDB(t)
			tamper(t, path, tc.stmts(path)...)
			r := run(t, nil, "audit", "verify", "--db", path)
			if r.code != cli.ExitAuditBroken || !strings.Contains(r.err, "audit chain broken") || !strings.Contains(r.err, tc.id) ||
				!strings.Contains(r.err, tc.kind) || !strings.Contains(r.out, "BAD LINK") {
				t.Fatalf("want exit %d naming %s (%s); got %+v", cli.ExitAuditBroken, tc.id, tc.kind, r)
			}
			r = run(t, nil, "audit", "verify", "--json", "--db", path)
			var rep audit.Report
			if err := json.Unmarshal([]byte(r.out), &rep); err != nil || r.code != cli.ExitAuditBroken || rep.First == nil || rep.First.EventID != tc.id || rep.First.Kind != tc.kind {
				t.Fatalf("json: %+v %v", r, err)
			}
		})
	}
}

// The triggers refuse UPDATE and DELETE of events, chain columns included.
func TestAuditChain_TriggersRefuseUpdateAndDelete(t *testing.T) {
	path := auditDB(t)
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{"UPDATE plugin_events SET event_hash = prev_hash", "UPDATE plugin_events SET body = '{}' WHERE id = 'event_a1'",
		"DELETE FROM plugin_events WHERE id = 'event_a4'"} {
		if _, err := db.Exec(q); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: %v", q, err)
		}
	}
	if r := run(t, nil, "audit", "verify", "--db", path); r.code != cli.ExitOK {
		t.Errorf("%+v", r)
	}
}

// `audit head --json` kept elsewhere detects what verify alone cannot: the
// newest event removed, or the tail rewritten with recomputed hashes.
func TestAuditHead_SavedHeadDetectsTruncationAndRewrite(t *testing.T) {
	path := auditDB(t)
	r := run(t, nil, "audit", "head", "--json", "--db", path)
	var hf cli.HeadsFile
	if err := json.Unmarshal([]byte(r.out), &hf); err != nil || r.code != cli.ExitOK || len(hf.Heads) != 3 || hf.RecordedAt.IsZero() {
		t.Fatalf("%+v %v", r, err)
	}
	headsFile := filepath.Join(t.TempDir(), "heads.json")
	if err := os.WriteFile(headsFile, []byte(r.out), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := run(t, nil, "audit", "head", "--db", path); r.code != cli.ExitOK || !strings.Contains(r.out, "event_a4") {
		t.Errorf("%+v", r)
	}
	if r := run(t, nil, "audit", "verify", "--against", headsFile, "--db", path); r.code != cli.ExitOK || !strings.Contains(r.out, "3 saved head(s) still in place") {
		t.Fatalf("%+v", r)
	}
	// Truncation: the newest event of tenant_123 removed.
	trunc := auditDB(t)
	tamper(t, trunc, "DELETE FROM plugin_events WHERE id = 'event_a4'")
	if r := run(t, nil, "audit", "verify", "--db", trunc); r.code != cli.ExitOK {
		t.Fatalf("truncation alone verifies (documented limit): %+v", r)
	}
	if r := run(t, nil, "audit", "verify", "--against", headsFile, "--db", trunc); r.code != cli.ExitAuditBroken || !strings.Contains(r.err, "truncated") || !strings.Contains(r.err, "event_a4") {
		t.Errorf("truncation against the saved head: %+v", r)
	}
	// Rewrite: the last event replaced, hash recomputed onto the same prev.
	rewr := auditDB(t)
	_, body, _ := rowOf(t, rewr, "event_a4")
	var prev string
	db, _ := sql.Open("sqlite", "file:"+rewr+"?mode=ro")
	_ = db.QueryRow("SELECT prev_hash FROM plugin_events WHERE id = 'event_a4'").Scan(&prev)
	db.Close()
	newBody := strings.Replace(body, `"outcome":"success"`, `"outcome":"replayed"`, 1)
	tamper(t, rewr, fmt.Sprintf("UPDATE plugin_events SET outcome = 'replayed', body = '%s', event_hash = '%s' WHERE id = 'event_a4'", newBody, domain.ChainHash([]byte(newBody), prev)))
	if r := run(t, nil, "audit", "verify", "--db", rewr); r.code != cli.ExitOK {
		t.Fatalf("a rewritten tail verifies on its own (documented limit): %+v", r)
	}
	if r := run(t, nil, "audit", "verify", "--against", headsFile, "--db", rewr); r.code != cli.ExitAuditBroken || !strings.Contains(r.err, "rewritten") {
		t.Errorf("rewrite against the saved head: %+v", r)
	}
	if r := run(t, nil, "audit", "verify", "--against", filepath.Join(t.TempDir(), "none.json"), "--db", path); r.code != cli.ExitUsage {
		t.Errorf("missing heads file: %+v", r)
	}
}

func TestAuditShowAndTail(t *testing.T) {
	path := auditDB(t)
	r := run(t, nil, "audit", "show", "event_a2", "--json", "--db", path)
	var show cli.ShowOutput
	var shown domain.Event
	if err := json.Unmarshal([]byte(r.out), &show); err != nil || r.code != cli.ExitOK || !show.HashValid || show.PrevHash == "" ||
		json.Unmarshal(show.Event, &shown) != nil || shown.ID != "event_a2" {
		t.Fatalf("%+v %v", r, err)
	}
	if r := run(t, nil, "audit", "show", "event_a2", "--db", path); r.code != cli.ExitOK || !strings.Contains(r.out, "matches its hash") {
		t.Errorf("%+v", r)
	}
	if r := run(t, nil, "audit", "show", "event_nope", "--db", path); r.code != cli.ExitError || !strings.Contains(r.err, "event_nope") {
		t.Errorf("%+v", r)
	}
	r = run(t, nil, "audit", "tail", "-n", "3", "--json", "--db", path)
	lines := strings.Split(strings.TrimSpace(r.out), "\n")
	if r.code != cli.ExitOK || len(lines) != 3 || !strings.Contains(lines[2], `"id":"event_a4"`) {
		t.Fatalf("%+v", r)
	}
	if r := run(t, nil, "audit", "tail", "--tenant", fixtures.OtherTenantID, "--db", path); r.code != cli.ExitOK || strings.Count(r.out, "\n") != 2 || strings.Contains(r.out, "event_a") {
		t.Errorf("tenant tail: %+v", r)
	}
}

// signalWriter is a goroutine-safe buffer that reports each write.
type signalWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	wrote chan struct{}
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.buf.Write(p)
	select {
	case w.wrote <- struct{}{}:
	default:
	}
	return n, err
}

func (w *signalWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// `audit tail --follow` prints events appended by another connection and
// ends cleanly when its context is cancelled (SIGINT).
func TestAuditTail_FollowPrintsNewEventsUntilInterrupted(t *testing.T) {
	path := auditDB(t)
	out := &signalWriter{wrote: make(chan struct{}, 1)}
	f := &cli.Factory{IO: cli.IOStreams{In: strings.NewReader(""), Out: out, ErrOut: &bytes.Buffer{}}, Getenv: func(string) string { return "" },
		Clock: domain.NewFixedClock(fixtures.Epoch), IDs: domain.RandomIDs{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan cli.ExitCode, 1)
	go func() {
		done <- cli.Run(ctx, f, []string{"audit", "tail", "--follow", "-n", "1", "--json", "--interval", "5ms", "--db", path})
	}()
	waitFor := func(id string) {
		t.Helper()
		deadline := time.After(30 * time.Second)
		for !strings.Contains(out.String(), id) {
			select {
			case <-out.wrote:
			case <-deadline:
				t.Fatalf("tail --follow did not print %s: %q", id, out.String())
			}
		}
	}
	waitFor("event_a4") // the newest event: tail is running and past its first read

	st, err := store.Open(context.Background(), path, store.Options{Clock: domain.NewFixedClock(fixtures.Epoch), IDs: domain.NewSeqIDs()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.AppendEvent(context.Background(), domain.Event{ID: "event_new", TenantID: fixtures.DemoTenantID, Outcome: domain.OutcomeSuccess}); err != nil {
		t.Fatal(err)
	}
	waitFor("event_new")
	cancel()
	if code := <-done; code != cli.ExitOK {
		t.Errorf("exit %d after interrupt", code)
	}
	if strings.Contains(out.String(), "event_a3") || strings.Count(out.String(), "\n") != 2 {
		t.Errorf("-n 1 then one new event: %q", out.String())
	}
}
