package live_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/approval"
	"github.com/triunalabs/trovesnap/internal/contract"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/live/pgtest"
)

// insertProposal seals and stores a promotion proposal of the demo client
// (as storedProposal does), changed by edit first, with its creation event.
func insertProposal(t *testing.T, env *pgtest.Env, edit func(*domain.Proposal)) domain.Proposal {
	t.Helper()
	now := time.Now().UTC().Truncate(time.Microsecond)
	target := fixtures.DemoCandidateID
	p := domain.Proposal{TenantID: fixtures.DemoTenantID, Tool: domain.ExecutingTool{Name: "trove_execute_candidate_promotion", Version: "1.0.0"},
		RequestedBy: domain.Requester{ClientID: fixtures.DemoClientID, ActorID: fixtures.DemoUserID}, Action: domain.ActionPromoteCandidate,
		TargetKind: "candidate", TargetIDs: []string{target}, ExpectedVersions: []domain.TargetVersion{{ID: target, Version: 3}},
		Changes:     []domain.FieldChange{{TargetID: target, Field: "create_item.title", From: nil, To: "Oak chair"}},
		Impact:      domain.ProposalImpact{CanonicalItemsCreated: 1},
		Validation:  domain.ProposalValidation{Status: "valid", Warnings: []string{}, Errors: []string{}},
		Requirement: "human_or_policy", SaleIDs: []string{fixtures.PublishedSaleID}, CreatedAt: now.Add(-time.Minute), ExpiresAt: now.Add(time.Hour)}
	edit(&p)
	var err error
	if p.Hash, err = approval.Hash(p); err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(p)
	p.ID, p.CorrelationID, p.Status = "proposal_"+randHex(8), "corr_"+randHex(8), domain.ProposalPending
	evID := "event_" + randHex(8)
	ev, _ := json.Marshal(domain.Event{ID: evID, TenantID: p.TenantID, CorrelationID: p.CorrelationID, Mode: domain.ModeLive,
		Client: domain.ClientRef{ID: fixtures.DemoClientID}, Tool: domain.ToolRef{Name: "trove_propose_candidate_promotion", Version: "1.0.0", Tier: "action_proposal"},
		Actor: domain.ActorRef{ID: fixtures.DemoUserID, Type: "seller"}, Action: "mcp_tool_called", Outcome: domain.OutcomeSuccess,
		Related: domain.Related{ProposalIDs: []string{p.ID}}.Normalized(), OccurredAt: p.CreatedAt})
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `INSERT INTO trovesnap.proposals (id, tenant_id, tool_name, action, requested_by_client,
		requested_by_actor, correlation_id, body, proposal_hash, created_at, expires_at, status)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
		p.ID, p.TenantID, p.Tool.Name, p.Action, fixtures.DemoClientID, fixtures.DemoUserID, p.CorrelationID, string(body), p.Hash,
		p.CreatedAt, p.ExpiresAt, p.Status); err != nil {
		t.Fatalf("insert proposal: %v", err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO trovesnap.plugin_events (id, tenant_id, correlation_id, tool_name, outcome, occurred_at, body, body_jcs)
		VALUES ($1, $2, $3, $4, 'success', $5, trovesnap.audit_jcs($6::jsonb)::jsonb, trovesnap.audit_jcs($6::jsonb)::json)`, evID, p.TenantID, p.CorrelationID, "trove_propose_candidate_promotion", p.CreatedAt, string(ev)); err != nil {
		t.Fatalf("insert event: %v", err)
	}
	return p
}

// Issue 15, finding 2 (attack 14): an agent holding its client credential
// calls mcp_execute_proposal itself, naming a narrow policy. The database
// must re-check every condition the gate checks (approval.EvaluatePolicy:
// sale scope, items per run, permitted fields, require_no_conflicts, the
// proposal not expired, and the §18.2 categories judged on the content),
// refusing as the gate does, with nothing changed; and a proposal that
// meets them all still runs under the policy.
func TestPolicyPath_DatabaseRechecksEveryCondition(t *testing.T) {
	env := seeded(t)
	lg := newLiveGate(t, env)
	cs := connect(t, lg.g, contract.CredOwner)
	admin := sellerAs(t, env, fixtures.DemoUserID)
	p, err := lg.b.ResolvePrincipal(ctx, contract.CredOwner)
	if err != nil {
		t.Fatal(err)
	}
	policy := func(name string, tools, sales []string, perRun int, fields []string, noConflicts bool) domain.Policy {
		t.Helper()
		pol, err := admin.CreatePolicy(ctx, domain.Policy{TenantID: fixtures.DemoTenantID, Name: name, AllowedTools: tools,
			Scope:      domain.PolicyScope{EstateSaleIDs: sales},
			Conditions: domain.PolicyConditions{MaxItemsPerRun: perRun, PermittedFields: fields, RequireNoConflicts: noConflicts},
			Limits:     domain.PolicyLimits{MaxDailyActions: 50}, CreatedBy: fixtures.DemoUserID})
		if err != nil {
			t.Fatalf("create policy %s: %v", name, err)
		}
		if pol, err = admin.SetPolicyStatus(ctx, pol.ID, domain.PolicyActive, fixtures.DemoUserID); err != nil {
			t.Fatalf("activate policy %s: %v", name, err)
		}
		return pol
	}
	itemTools := []string{"trove_update_item_status", "trove_apply_bulk_item_update"}
	// The attack's policy: the DRAFT sale only, one item, the field room.
	narrow := policy("narrow", itemTools, []string{fixtures.DraftSaleID}, 1, []string{"room"}, true)
	// The published sale, one item, the field room, no conflicts.
	rooms := policy("rooms", itemTools, []string{fixtures.PublishedSaleID}, 1, []string{"room"}, true)
	promo := policy("promo", []string{"trove_execute_candidate_promotion"}, []string{fixtures.PublishedSaleID}, 1,
		[]string{"create_item.title"}, true)

	item := func(t *testing.T, id string) domain.ItemDetail {
		t.Helper()
		it, err := lg.b.GetItem(ctx, p, id, domain.ItemIncludes{})
		if err != nil {
			t.Fatal(err)
		}
		return it
	}
	n := 0
	propose := func(t *testing.T, tool string, args map[string]any) domain.Proposal {
		t.Helper()
		n++
		args["idempotency_key"] = fmt.Sprintf("pol-recheck-propose-%d", n)
		e := call(t, cs, tool, args)
		if e["status"] != "proposed" {
			t.Fatalf("%s: %s", tool, mustJSON(e))
		}
		prop, err := lg.b.GetProposal(ctx, p, e["data"].(map[string]any)["proposal_id"].(string))
		if err != nil {
			t.Fatal(err)
		}
		return prop
	}
	execute := func(pol domain.Policy, prop domain.Proposal) (domain.ExecutionResult, error) {
		n++
		res, _, err := lg.b.ExecuteProposal(ctx, p, benchMeta(p, prop.Tool.Name, fmt.Sprintf("pol-recheck-exec-%d", n)), prop.ID,
			domain.Authorization{Decision: "allowed_by_policy", PolicyID: pol.ID, PolicyVersion: pol.Version, ProposalHash: prop.Hash})
		return res, err
	}
	refused := func(t *testing.T, pol domain.Policy, prop domain.Proposal, want error, reason string) {
		t.Helper()
		before, it := counts(t, env), item(t, fixtures.DemoItemID)
		res, err := execute(pol, prop)
		if !errors.Is(err, want) || !strings.Contains(err.Error(), reason) {
			t.Fatalf("policy %s, proposal %s: got %+v, %v; want %v with %q", pol.ID, prop.ID, res, err, want, reason)
		}
		sameCounts(t, env, before, "a refused policy execution")
		if after := item(t, fixtures.DemoItemID); after.Status != domain.ItemPublished || after.Version != it.Version ||
			*after.PriceCents != *it.PriceCents || after.Room != it.Room || after.Title != it.Title {
			t.Fatalf("item %s changed: %+v → %+v", it.ID, it, after)
		}
		if got, err := lg.b.GetProposal(ctx, p, prop.ID); err != nil || got.Status == domain.ProposalExecuted {
			t.Fatalf("proposal %s: %s, %v", prop.ID, got.Status, err)
		}
	}

	it := item(t, fixtures.DemoItemID)
	if it.SaleID != fixtures.PublishedSaleID || it.Status != domain.ItemPublished {
		t.Fatalf("fixture item %s: sale %s, %s", it.ID, it.SaleID, it.Status)
	}
	bulk := func(t *testing.T, ids []string, changes map[string]any) domain.Proposal {
		t.Helper()
		var evs []map[string]any
		for _, id := range ids {
			evs = append(evs, map[string]any{"id": id, "version": item(t, id).Version})
		}
		return propose(t, "trove_propose_bulk_item_update", map[string]any{"item_ids": ids, "expected_versions": evs, "changes": changes})
	}

	t.Run("sale completion outside the scope (the attack)", func(t *testing.T) {
		prop := propose(t, "trove_propose_status_transition", map[string]any{"item_id": it.ID, "expected_version": it.Version,
			"to_status": "sold", "effective_at": time.Now().UTC().Format(time.RFC3339)})
		refused(t, narrow, prop, domain.ErrApprovalRequired, "sale completion is never authorised by a policy")
		refused(t, rooms, prop, domain.ErrApprovalRequired, "sale completion is never authorised by a policy")
	})
	t.Run("financial change", func(t *testing.T) {
		prop := bulk(t, []string{it.ID}, map[string]any{"price_cents": 1})
		refused(t, rooms, prop, domain.ErrApprovalRequired, "financial changes are never authorised by a policy")
	})
	t.Run("target outside the policy's sales", func(t *testing.T) {
		prop := bulk(t, []string{it.ID}, map[string]any{"room": "attic"})
		refused(t, narrow, prop, domain.ErrApprovalRequired, "target outside the policy's sales: "+fixtures.PublishedSaleID)
	})
	t.Run("field not permitted", func(t *testing.T) {
		prop := bulk(t, []string{it.ID}, map[string]any{"title": "Renamed"})
		refused(t, rooms, prop, domain.ErrApprovalRequired, "field not permitted by the policy: title")
	})
	t.Run("more items than per run", func(t *testing.T) {
		items, err := lg.b.ListItems(ctx, p, domain.ItemQuery{SaleID: fixtures.PublishedSaleID, Status: domain.ItemPublished})
		if err != nil {
			t.Fatal(err)
		}
		ids := []string{it.ID}
		for _, x := range items.Rows {
			if x.ID != it.ID && len(ids) < 2 {
				ids = append(ids, x.ID)
			}
		}
		if len(ids) < 2 {
			t.Fatalf("no second published item in %s", fixtures.PublishedSaleID)
		}
		prop := bulk(t, ids, map[string]any{"room": "attic"})
		refused(t, rooms, prop, domain.ErrApprovalRequired, "2 targets exceed the policy's 1 per run")
	})
	t.Run("conflicts or warnings", func(t *testing.T) {
		prop := insertProposal(t, env, func(x *domain.Proposal) {
			x.Validation = domain.ProposalValidation{Status: "valid_with_warnings", Warnings: []string{"candidate_not_reviewed"}, Errors: []string{}}
		})
		refused(t, promo, prop, domain.ErrApprovalRequired, "policy requires a proposal without conflicts or warnings")
	})
	t.Run("paid work", func(t *testing.T) {
		// A paid budget, so the proposal may be stored at all.
		l := domain.DefaultLimits()
		l.MaxDailyPaidCostUSD = 5
		for _, client := range []string{"", fixtures.DemoClientID} {
			if err := admin.SetLimits(ctx, fixtures.DemoTenantID, client, l); err != nil {
				t.Fatal(err)
			}
		}
		prop := insertProposal(t, env, func(x *domain.Proposal) { x.Impact.EstimatedCostUSD = 0.25 })
		refused(t, promo, prop, domain.ErrApprovalRequired, "paid work is never authorised by a policy")
	})
	t.Run("broad bulk", func(t *testing.T) {
		prop := insertProposal(t, env, func(x *domain.Proposal) {
			for i := len(x.TargetIDs); i <= domain.BroadBulkLimit; i++ {
				x.TargetIDs = append(x.TargetIDs, fmt.Sprintf("candidate_bulk%d", i))
			}
		})
		refused(t, promo, prop, domain.ErrApprovalRequired, fmt.Sprintf("more than %d targets is a broad bulk change", domain.BroadBulkLimit))
	})
	t.Run("proposal without a sale", func(t *testing.T) {
		prop := insertProposal(t, env, func(x *domain.Proposal) { x.SaleIDs = []string{} })
		refused(t, promo, prop, domain.ErrApprovalRequired, "proposal targets no sale")
	})
	t.Run("policy without a scope", func(t *testing.T) {
		unscoped := policy("unscoped", []string{"trove_execute_candidate_promotion"}, []string{fixtures.PublishedSaleID}, 1,
			[]string{"create_item.title"}, false)
		// No RPC stores such a policy (seller_validate_policy refuses it);
		// the execution must not trust that either.
		conn, err := env.Cluster.Super(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `UPDATE trovesnap.automation_policies SET body = jsonb_set(body, '{scope,estate_sale_ids}', '[]')
			WHERE id = $1`, unscoped.ID); err != nil {
			t.Fatal(err)
		}
		prop := insertProposal(t, env, func(*domain.Proposal) {})
		refused(t, unscoped, prop, domain.ErrApprovalRequired, "policy has no sale scope")
	})
	t.Run("expired proposal", func(t *testing.T) {
		prop := insertProposal(t, env, func(x *domain.Proposal) {
			x.CreatedAt, x.ExpiresAt = x.CreatedAt.Add(-2*time.Hour), x.CreatedAt.Add(-time.Hour)
		})
		refused(t, promo, prop, domain.ErrApprovalExpired, "expired")
	})

	// Every condition met: the policy authorises the change, once.
	prop := bulk(t, []string{it.ID}, map[string]any{"room": "sunroom"})
	res, err := execute(rooms, prop)
	if err != nil || !res.Executed || res.Approval.PolicyID == nil || *res.Approval.PolicyID != rooms.ID {
		t.Fatalf("a proposal meeting every condition of %s: %+v, %v", rooms.ID, res, err)
	}
	if after := item(t, it.ID); after.Room != "sunroom" || after.Status != domain.ItemPublished {
		t.Fatalf("item after the authorised run: room %q, %s", after.Room, after.Status)
	}
}
