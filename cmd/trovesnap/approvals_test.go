package main_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/approval"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/store"
)

// Two server processes × 50 attempts each on one single-use grant, at the
// same time: exactly one execution; every other attempt is refused.
func TestStdio_TwoProcessesRaceOneGrantExactlyOneExecution(t *testing.T) {
	db := filepath.Join(t.TempDir(), "trovesnap.db")
	cli(t, db, "doctor")
	provision(t, db, "limits", "set", "--tenant", "tenant_123", "--controlled-actions", "1000", "--proposals", "1000")
	a, b := connectBinary(t, db), connectBinary(t, db)
	res, err := a.CallTool(context.Background(), &mcp.CallToolParams{Name: "trove_propose_candidate_promotion", Arguments: map[string]any{
		"candidate_id": fixtures.DemoCandidateID, "expected_version": 3, "idempotency_key": "race-prop-0001"}})
	if err != nil {
		t.Fatal(err)
	}
	m := structured(t, res)
	pid := m["data"].(map[string]any)["proposal_id"].(string)

	// The seller approves in another process (as `trovesnap approve` would).
	ctx := context.Background()
	st, err := store.Open(ctx, db, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	svc := &approval.Service{Admin: st, Clock: domain.SystemClock{}, IDs: domain.RandomIDs{}}
	if _, err := svc.Approve(ctx, approval.ApproveRequest{TenantID: fixtures.DemoTenantID, ProposalID: pid, ActorID: fixtures.DemoUserID}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	var executed, refused atomic.Int64
	var wg sync.WaitGroup
	for p, cs := range []*mcp.ClientSession{a, b} {
		for w := 0; w < 5; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 10; i++ {
					st, code := callStatus(t, cs, "trove_execute_candidate_promotion", map[string]any{
						"proposal_id": pid, "idempotency_key": fmt.Sprintf("race-exec-%d-%d-%02d", p, w, i)})
					switch {
					case st == "succeeded_with_warnings" || st == "succeeded":
						executed.Add(1)
					case code == "approval_already_consumed":
						refused.Add(1)
					default:
						t.Errorf("unexpected %s/%s", st, code)
					}
				}
			}()
		}
	}
	wg.Wait()
	if executed.Load() != 1 || refused.Load() != 99 {
		t.Fatalf("executed %d, refused %d", executed.Load(), refused.Load())
	}
	st, err = store.Open(ctx, db, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c, err := st.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c["item_provenance"] != 1 || c["items"] != int64(len(fixtures.Dataset().Items)+1) {
		t.Errorf("items %d, promotions %d", c["items"], c["item_provenance"])
	}
}
