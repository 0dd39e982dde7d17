package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/contract"
	"github.com/triunalabs/trovesnap/internal/domain"
)

// The embedded store's side of the review of the daily paid budget: a
// grant's maximum cost is an amount, and what was spent today never goes
// below 0 (the live SQL does the same: migration 20).

// rcStore opens a store seeded with the contract dataset (which has the
// buyers a notification plan is built from) and proposes a free e-mail
// notification of the published sale as the owner's client.
func rcStore(t *testing.T) (*Store, domain.Principal, domain.Proposal) {
	t.Helper()
	ds := contract.Dataset()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "trovesnap.db"),
		Options{Clock: domain.NewFixedClock(fixtures.Epoch), IDs: domain.NewSeqIDs(), Seed: &ds})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	p := principal(t, s, contract.CredOwner)
	sale, err := s.GetSale(context.Background(), p, fixtures.PublishedSaleID)
	if err != nil {
		t.Fatal(err)
	}
	seal := func(pr domain.Proposal) (string, error) {
		b, err := json.Marshal(pr)
		sum := sha256.Sum256(b)
		return "sha256:" + hex.EncodeToString(sum[:]), err
	}
	d := domain.ProposalDraft{Action: domain.ActionBuyerNotify, Tool: domain.ExecutingTool{Name: "trove_notify_matched_buyers", Version: "1.0.0"},
		Requirement: "explicit_human", TargetIDs: []string{sale.ID}, ExpectedVersions: []domain.TargetVersion{{ID: sale.ID, Version: sale.Version}},
		Fields: map[string]any{"audience": "followed_sale", "channels": []string{"email"}, "message_template": "{{sale_title}} opens soon"}}
	prop, _, err := s.CreateProposal(context.Background(), p, meta(p, "rc-1", "sha256:rc1", "event_rc1"), d, seal)
	if err != nil {
		t.Fatalf("CreateProposal: %v", err)
	}
	return s, p, prop
}

// A grant whose maximum cost is negative, NaN or infinite is refused
// (invalid_input) and nothing changes; before, -500 passed every budget
// check. A grant of $0 is then issued.
func TestReviewCost_IssueGrantRefusesAMaximumCostThatIsNotAnAmount(t *testing.T) {
	s, _, prop := rcStore(t)
	grant := func(maxCost float64) domain.Grant {
		return domain.Grant{ID: "approval_rc", TenantID: prop.TenantID, ProposalID: prop.ID, ProposalHash: prop.Hash,
			IssuedBy: domain.GrantIssuer{Type: domain.IssuerHuman, ActorID: fixtures.DemoUserID, Surface: "test"},
			Tool:     prop.Tool.Name, TargetIDs: prop.TargetIDs, Constraints: domain.GrantConstraints{MaxItems: 1, MaxCostUSD: maxCost, AllowNotifications: true},
			Status: domain.GrantActive, SingleUse: true, IssuedAt: fixtures.Epoch, ExpiresAt: fixtures.Epoch.Add(30 * time.Minute)}
	}
	seller := s.AsSeller(fixtures.DemoUserID)
	before := mustDigest(t, s)
	for _, v := range []float64{-500, -0.01, math.NaN(), math.Inf(1), math.Inf(-1)} {
		_, err := seller.IssueGrant(context.Background(), grant(v))
		var ie *domain.InputError
		if !errors.As(err, &ie) || ie.Field != "maximum_cost_usd" {
			t.Fatalf("a grant of up to %v: %v, want invalid_input on maximum_cost_usd", v, err)
		}
		if d := diffKeys(before, mustDigest(t, s)); len(d) != 0 {
			t.Fatalf("a refused grant of up to %v changed %v", v, d)
		}
	}
	if _, err := seller.IssueGrant(context.Background(), grant(0)); err != nil {
		t.Fatalf("a grant of up to $0: %v", err)
	}
}

// An executed proposal whose stored cost is negative (the store builds its
// own proposals, but its file can be written by anything with the user's
// rights) counts as $0 spent: an honest $2.38 still exceeds a $0 budget.
func TestReviewCost_SpentTodayNeverGoesNegative(t *testing.T) {
	s, p, prop := rcStore(t)
	ctx := context.Background()
	now := s.clock.Now()
	err := s.withTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO proposals (id, tenant_id, tool_name, action, requested_by_client, requested_by_actor,
			correlation_id, body, proposal_hash, created_at, expires_at, status, executed_at)
			SELECT 'proposal_rcneg', tenant_id, tool_name, action, requested_by_client, requested_by_actor, correlation_id,
			       json_set(body, '$.impact.estimated_cost_usd', -500), proposal_hash, created_at, expires_at, 'executed', ?
			FROM proposals WHERE id = ?`, ts(now), prop.ID)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	err = s.withTx(ctx, func(tx *sql.Tx) error {
		b, err := s.costBudgets(ctx, tx, p.TenantID, p.Client.ID, now)
		if err != nil {
			return err
		}
		for _, x := range b {
			if x.SpentUSD != 0 {
				t.Errorf("%s spent today with an executed -$500 proposal = %v, want 0", x.Scope, x.SpentUSD)
			}
		}
		if err := s.checkCostBudget(ctx, tx, p.TenantID, p.Client.ID, 2.38, now); !errors.Is(err, domain.ErrCostLimit) {
			t.Errorf("$2.38 under a $0 budget after a -$500 execution: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
