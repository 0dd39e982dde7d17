package live_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/approval"
	"github.com/triunalabs/trovesnap/internal/contract"
	"github.com/triunalabs/trovesnap/internal/domain"
)

// A holder of the server key cannot smuggle a second create_item.sale_id
// into a promotion (the item would land in another sale than the one the
// proposal — and a policy's scope — names): mcp_create_proposal refuses a
// duplicated create_item field, and the promotion creates the item in the
// candidate's own sale whatever the body says.
func TestHardening_PromotionCannotRetargetItsSale(t *testing.T) {
	env := seeded(t)
	b := newBackend(t, env)
	p, err := b.ResolvePrincipal(ctx, contract.CredOwner)
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := b.CreateCandidate(ctx, p, benchMeta(p, "trove_create_candidate", "hard-c1"),
		domain.NewCandidate{SaleID: fixtures.PublishedSaleID, Title: "Mantel clock"})
	if err != nil {
		t.Fatal(err)
	}
	var built domain.Proposal
	capture := func(pr domain.Proposal) (string, error) { built = pr; return approval.Hash(pr) }
	draft := domain.ProposalDraft{Action: domain.ActionPromoteCandidate, Tool: domain.ExecutingTool{Name: "trove_execute_candidate_promotion", Version: "1.0.0"},
		Requirement: "human_or_policy", TargetIDs: []string{c.CandidateID}, ExpectedVersions: []domain.TargetVersion{{ID: c.CandidateID, Version: 1}}}
	if _, _, err := b.CreateProposal(ctx, p, benchMeta(p, "trove_propose_candidate_promotion", "hard-p1"), draft, capture); err != nil {
		t.Fatal(err)
	}
	before := counts(t, env)

	tampered := built
	tampered.ID = domain.RandomIDs{}.New(domain.PrefixProposal)
	tampered.Changes = append(slices.Clone(built.Changes), domain.FieldChange{TargetID: c.CandidateID, Field: "create_item.sale_id", To: fixtures.LiveSaleID})
	if tampered.Hash, err = approval.Hash(tampered); err != nil {
		t.Fatal(err)
	}
	w := benchMeta(p, "trove_propose_candidate_promotion", "hard-p2")
	status, out := rpcClient(t, env, contract.CredOwner, "mcp_create_proposal", map[string]any{"p_tool": w.Idem.Tool, "p_tool_major": 1, "p_key": w.Idem.Key, "p_fingerprint": w.Idem.Fingerprint,
		"p_event": w.Event, "p_started_at": time.Now().UTC().Format(time.RFC3339Nano), "p_proposal": tampered})
	if status != http.StatusBadRequest || !strings.HasPrefix(fmt.Sprint(out["message"]), "trovesnap:invalid_input:changes") {
		b, _ := json.Marshal(out)
		t.Fatalf("a proposal with two sales for its item: HTTP %d %s", status, b)
	}
	flowUnchanged(t, env, before, "a refused tampered proposal")
}

// A member who may not decide learns nothing from a denial attempt (not
// even whether the proposal exists), and a member without client.manage
// reads only their own role.
func TestHardening_SellerProbesLearnNothing(t *testing.T) {
	env := seeded(t)
	cat := sellerAs(t, env, fixtures.CatalogerUserID)
	for _, id := range []string{"proposal_doesnotexist0000000000", "proposal_other"} {
		err := cat.DenyProposal(ctx, fixtures.DemoTenantID, id, fixtures.CatalogerUserID, "test", "no")
		if !errors.Is(err, domain.ErrPermissionDenied) {
			t.Fatalf("a cataloger denying %s: %v", id, err)
		}
	}
	if role, err := cat.MemberRole(ctx, fixtures.DemoTenantID, fixtures.CatalogerUserID); err != nil || role != domain.RoleCataloger {
		t.Fatalf("own role = %q, %v", role, err)
	}
	if _, err := cat.MemberRole(ctx, fixtures.DemoTenantID, fixtures.DemoUserID); !errors.Is(err, domain.ErrPermissionDenied) {
		t.Fatalf("a cataloger reading the owner's role: %v", err)
	}
	if role, err := sellerAs(t, env, fixtures.DemoUserID).MemberRole(ctx, fixtures.DemoTenantID, fixtures.CatalogerUserID); err != nil || role != domain.RoleCataloger {
		t.Fatalf("the owner reading a member's role = %q, %v", role, err)
	}
}

// One credential, one client: the prefixed and the bare notation of the
// same hash cannot both be registered (lookups accept either).
func TestHardening_CredentialHashUniqueInEitherNotation(t *testing.T) {
	env := seeded(t)
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// The other tenant's client is stored as "sha256:<hex>" by the dataset.
	for _, q := range []string{"SET ROLE trovesnap_owner", "SELECT set_config('trovesnap.system', 'on', false)"} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	_, err = conn.Exec(ctx, `INSERT INTO trovesnap.mcp_clients (id, tenant_id, name, client_type, status, actor_id, created_at, credential_hash)
		VALUES ('mcp_client_dup', $1, 'dup', 'custom', 'active', $2, now(), $3)`, fixtures.DemoTenantID, fixtures.DemoUserID, contract.Hash(contract.CredOther))
	if err == nil || !strings.Contains(err.Error(), "mcp_clients_credential_norm") {
		t.Fatalf("the bare form of a prefixed credential hash was accepted: %v", err)
	}
}
