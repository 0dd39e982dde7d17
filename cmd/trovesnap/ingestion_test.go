package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/store"
)

// Eight server processes on one database file, 25 concurrent callers each,
// all sending the same 50 idempotency keys (each caller in its own order):
// exactly one import per key — 50 runs, 50 records, 50 candidates and 50
// success events — and every other call a replay of the same result. The
// key row, the domain rows and the event commit in one BEGIN IMMEDIATE
// transaction whose key lookup runs under the write lock, so no process can
// see a key half-written.
func TestStdio_EightProcessesSameKeysOneImportPerKey(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process race")
	}
	const procs, workers, keys = 8, 25, 50
	db := filepath.Join(t.TempDir(), "trovesnap.db")
	if out, err := exec.Command(binary(t), "--db", db, "doctor").CombinedOutput(); err != nil {
		t.Fatalf("doctor: %v\n%s", err, out)
	}
	// 10,000 candidate writes in well under a minute: lift the tenant's
	// limit so the race, not the limiter, is tested.
	provision(t, db, "limits", "set", "--tenant", "tenant_123", "--candidate-writes", "100000")
	sessions := make([]*mcp.ClientSession, procs)
	var wg sync.WaitGroup
	for p := range sessions {
		wg.Add(1)
		go func() { defer wg.Done(); sessions[p] = connectBinary(t, db) }()
	}
	wg.Wait()
	if t.Failed() { // a connect failed (and said why) in its goroutine
		t.FailNow()
	}

	var mu sync.Mutex
	runs := map[int]string{}       // key → import run id
	candidates := map[int]string{} // key → candidate id
	for p, cs := range sessions {
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range keys {
					k := (i + w*7 + p*3) % keys // every caller its own order: collisions on every key
					res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "trove_run_manual_import", Arguments: map[string]any{
						"sale_id": fixtures.PublishedSaleID, "idempotency_key": fmt.Sprintf("proc-race-%04d", k),
						"rows": []map[string]any{{"title": fmt.Sprintf("Race lot %d", k)}},
					}})
					if err != nil {
						t.Error(err)
						return
					}
					m := structured(t, res)
					data, _ := m["data"].(map[string]any)
					if res.IsError || data == nil {
						t.Errorf("call failed: %v", m)
						return
					}
					ids, _ := data["candidate_ids"].([]any)
					if len(ids) != 1 {
						t.Errorf("candidate_ids = %v", data["candidate_ids"])
						return
					}
					run, cand := data["import_run_id"].(string), ids[0].(string)
					mu.Lock()
					if runs[k] == "" {
						runs[k], candidates[k] = run, cand
					} else if runs[k] != run || candidates[k] != cand {
						t.Errorf("key %d: two results (%s %s) and (%s %s)", k, runs[k], candidates[k], run, cand)
					}
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for _, cs := range sessions {
		_ = cs.Close()
	}

	out, err := exec.Command(binary(t), "--db", db, "doctor", "--json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var rep struct{ Rows map[string]int64 }
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatal(err)
	}
	seed := fixtures.Dataset()
	for table, want := range map[string]int64{
		"idempotency_keys":     keys,
		"import_runs":          int64(len(seed.ImportRuns) + keys),
		"source_records":       int64(len(seed.SourceRecords) + keys),
		"inventory_candidates": int64(len(seed.Candidates) + keys),
		"import_run_details":   keys,
	} {
		if rep.Rows[table] != want {
			t.Errorf("%s = %d, want %d", table, rep.Rows[table], want)
		}
	}
	st, err := store.Open(context.Background(), db, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	evs, err := st.Events(context.Background(), store.EventFilter{Tool: "trove_run_manual_import"})
	if err != nil {
		t.Fatal(err)
	}
	outcomes := map[string]int{}
	for _, ev := range evs {
		outcomes[ev.Outcome]++
	}
	if outcomes["success"] != keys || outcomes["replayed"] != procs*workers*keys-keys || len(outcomes) != 2 {
		t.Errorf("events by outcome = %v, want %d success and %d replayed", outcomes, keys, procs*workers*keys-keys)
	}
}
