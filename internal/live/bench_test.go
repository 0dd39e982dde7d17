package live_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/approval"
	"github.com/triunalabs/trovesnap/internal/contract"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/live"
)

// benchMeta is the write metadata the gate would send for one call.
func benchMeta(p domain.Principal, tool, key string) domain.WriteMeta {
	return domain.WriteMeta{
		Idem: domain.IdempotencyKey{TenantID: p.TenantID, ClientID: p.Client.ID, Tool: tool, ToolMajor: 1, Key: key, Fingerprint: "sha256:" + key},
		Event: domain.Event{ID: "event_" + key, TenantID: p.TenantID, CorrelationID: "corr_" + key, Mode: domain.ModeLive, Client: p.Client,
			Tool: domain.ToolRef{Name: tool, Version: "1.0.0"}, Actor: domain.ActorRef{ID: p.ActorID, Type: p.ActorType}, Action: "mcp_tool_called"},
		Started: time.Now(),
	}
}

// BenchmarkLive_GetItemRoundTrip measures one scoped read (HTTP → RPC →
// projection in SQL) on the local cluster.
func BenchmarkLive_GetItemRoundTrip(b *testing.B) {
	env := seeded(b)
	be := newBackend(b, env)
	p, err := be.ResolvePrincipal(ctx, contract.CredOwner)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := be.GetItem(ctx, p, fixtures.DemoItemID, domain.ItemIncludes{Photos: true}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLive_PromotionCycle measures the §41 promotion on the local
// cluster, per op: a candidate, its promotion proposal (state RPC + store
// RPC), the seller's grant under the user's JWT, and the execution (one
// transaction: grant consumed, item created with provenance, event,
// idempotency row) — five round trips.
func BenchmarkLive_PromotionCycle(b *testing.B) {
	env := seeded(b)
	be := newBackend(b, env)
	p, err := be.ResolvePrincipal(ctx, contract.CredOwner)
	if err != nil {
		b.Fatal(err)
	}
	seller := sellerAs(b, env, fixtures.DemoUserID)
	for i := 0; b.Loop(); i++ {
		promoteOne(b, be, seller, p, fmt.Sprintf("bp%d", i))
	}
}

// promoteOne runs one promotion cycle as the owner's client: a candidate,
// its promotion proposal, the seller's grant, the execution. It returns the
// candidate, the proposal and the created item; keys are prefixed with k.
func promoteOne(tb testing.TB, be *live.Backend, seller *live.Seller, p domain.Principal, k string) (candidateID, proposalID, itemID string) {
	tb.Helper()
	c, _, err := be.CreateCandidate(ctx, p, benchMeta(p, "trove_create_candidate", k+"c"),
		domain.NewCandidate{SaleID: fixtures.PublishedSaleID, Title: "Bench lamp", Category: "lighting.lamps"})
	if err != nil {
		tb.Fatal(err)
	}
	draft := domain.ProposalDraft{Action: domain.ActionPromoteCandidate, Tool: domain.ExecutingTool{Name: "trove_execute_candidate_promotion", Version: "1.0.0"},
		Requirement: "human_or_policy", TargetIDs: []string{c.CandidateID}, ExpectedVersions: []domain.TargetVersion{{ID: c.CandidateID, Version: 1}}}
	prop, _, err := be.CreateProposal(ctx, p, benchMeta(p, "trove_propose_candidate_promotion", k+"p"), draft, approval.Hash)
	if err != nil {
		tb.Fatal(err)
	}
	g, err := seller.IssueGrant(ctx, domain.Grant{ID: domain.RandomIDs{}.New(domain.PrefixApproval), TenantID: prop.TenantID,
		ProposalID: prop.ID, ProposalHash: prop.Hash, IssuedBy: domain.GrantIssuer{Type: domain.IssuerHuman, ActorID: fixtures.DemoUserID, Surface: "bench"},
		Tool: prop.Tool.Name, TargetIDs: prop.TargetIDs, Constraints: approval.DefaultConstraints(prop), Status: domain.GrantActive,
		SingleUse: true, IssuedAt: time.Now(), ExpiresAt: prop.ExpiresAt})
	if err != nil {
		tb.Fatal(err)
	}
	w := benchMeta(p, prop.Tool.Name, k+"x")
	res, _, err := be.ExecuteProposal(ctx, p, w, prop.ID, domain.Authorization{Decision: "allowed", GrantID: g.ID, ProposalHash: prop.Hash})
	if err != nil || len(res.CreatedItemIDs) != 1 {
		tb.Fatalf("promotion: %+v, %v", res, err)
	}
	return c.CandidateID, prop.ID, res.CreatedItemIDs[0]
}
