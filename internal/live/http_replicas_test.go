package live_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/approval"
	"github.com/triunalabs/trovesnap/internal/contract"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/mcpserver"
)

type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// replica is one HTTP server (stateless) over its own live gate: its own
// Backend and local outbox store, as a second process would have.
func replica(t *testing.T, lg *liveGate, token string) *mcp.ClientSession {
	t.Helper()
	srv := httptest.NewServer(mcpserver.NewHTTPHandler(mcpserver.HTTPOptions{Gate: lg.g, Stateless: true}))
	t.Cleanup(srv.Close)
	tr := &mcp.StreamableClientTransport{Endpoint: srv.URL + mcpserver.PathMCP, HTTPClient: &http.Client{Transport: bearerTransport{token}}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "chatgpt", Version: "1.0"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// Issue 17: two replicas (two HTTP servers, each with its own gate,
// Backend and local store) on one live database. A write retried on the
// other replica with the same key replays instead of writing twice; one
// single-use grant executes its proposal once when both replicas are asked
// to execute it at the same moment.
func TestHTTP_TwoReplicasOnOneLiveDatabase(t *testing.T) {
	env := seeded(t)
	a, b := newLiveGate(t, env), newLiveGate(t, env)
	csA, csB := replica(t, a, contract.CredOwner), replica(t, b, contract.CredOwner)

	write := map[string]any{"sale_id": fixtures.PublishedSaleID, "title": "Replica lamp", "idempotency_key": "replica-live-0001"}
	first := call(t, csA, "trove_create_candidate", write)
	if s, _ := first["status"].(string); !strings.HasPrefix(s, "succeeded") {
		t.Fatalf("write on replica A: %v", first)
	}
	n := counts(t, env)["inventory_candidates"]
	again := call(t, csB, "trove_create_candidate", write)
	firstData, _ := first["data"].(map[string]any)
	againData, _ := again["data"].(map[string]any)
	if audit, _ := again["audit"].(map[string]any); againData["candidate_id"] != firstData["candidate_id"] || audit["idempotent_replay"] != true {
		t.Fatalf("the retry on replica B: %v", again)
	}
	if got := counts(t, env)["inventory_candidates"]; got != n {
		t.Fatalf("candidates %d → %d: the retry on the other replica wrote again", n, got)
	}

	// A proposal with one single-use grant, executed by both replicas at once.
	p, err := a.b.ResolvePrincipal(ctx, contract.CredOwner)
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := a.b.CreateCandidate(ctx, p, benchMeta(p, "trove_create_candidate", "replica-c"),
		domain.NewCandidate{SaleID: fixtures.PublishedSaleID, Title: "Replica clock", Category: "decor.clocks"})
	if err != nil {
		t.Fatal(err)
	}
	draft := domain.ProposalDraft{Action: domain.ActionPromoteCandidate, Tool: domain.ExecutingTool{Name: "trove_execute_candidate_promotion", Version: "1.0.0"},
		Requirement: "human_or_policy", TargetIDs: []string{c.CandidateID}, ExpectedVersions: []domain.TargetVersion{{ID: c.CandidateID, Version: 1}}}
	prop, _, err := a.b.CreateProposal(ctx, p, benchMeta(p, "trove_propose_candidate_promotion", "replica-p"), draft, approval.Hash)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sellerAs(t, env, fixtures.DemoUserID).IssueGrant(ctx, domain.Grant{ID: domain.RandomIDs{}.New(domain.PrefixApproval), TenantID: prop.TenantID,
		ProposalID: prop.ID, ProposalHash: prop.Hash, IssuedBy: domain.GrantIssuer{Type: domain.IssuerHuman, ActorID: fixtures.DemoUserID, Surface: "replica_test"},
		Tool: prop.Tool.Name, TargetIDs: prop.TargetIDs, Constraints: approval.DefaultConstraints(prop), Status: domain.GrantActive,
		SingleUse: true, IssuedAt: time.Now(), ExpiresAt: prop.ExpiresAt}); err != nil {
		t.Fatal(err)
	}
	items := counts(t, env)["items"]
	var wg sync.WaitGroup
	results := make([]map[string]any, 2)
	for i, cs := range []*mcp.ClientSession{csA, csB} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "trove_execute_candidate_promotion",
				Arguments: map[string]any{"proposal_id": prop.ID, "idempotency_key": fmt.Sprintf("replica-x-%d", i)}})
			if err != nil {
				t.Error(err)
				return
			}
			results[i], _ = res.StructuredContent.(map[string]any)
		}()
	}
	wg.Wait()
	executed := 0
	for i, r := range results {
		s, _ := r["status"].(string)
		switch {
		case strings.HasPrefix(s, "succeeded"):
			executed++
		case s == "blocked" || s == "approval_required" || s == "failed":
		default:
			t.Errorf("replica %d: %v", i, r)
		}
	}
	if executed != 1 {
		t.Errorf("%d executions of one single-use grant: %v", executed, results)
	}
	if got := counts(t, env)["items"]; got != items+1 {
		t.Errorf("items %d → %d", items, got)
	}
}
