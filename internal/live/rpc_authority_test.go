package live_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/contract"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/live/pgtest"
)

// Issue 15: the database is the authority for every call it serves. These
// tests call the RPCs directly with a client token and the public key —
// what an agent with a shell on the host can send — and expect the refusal
// the gate would give, with nothing changed.

// superTx runs f as the owner role in system context (to write rows no RPC
// would write, as a superuser can).
func superTx(t *testing.T, env *pgtest.Env, f func(tx pgx.Tx) error) {
	t.Helper()
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		for _, q := range []string{"SET LOCAL ROLE trovesnap_owner", "SELECT set_config('trovesnap.system', 'on', true)"} {
			if _, err := tx.Exec(ctx, q); err != nil {
				return err
			}
		}
		return f(tx)
	}); err != nil {
		t.Fatal(err)
	}
}

// authorityClient registers an active client of actor in the demo tenant
// with the tool groups given, as a superuser, and returns its id and token.
func authorityClient(t *testing.T, env *pgtest.Env, actor string, groups ...string) (string, string) {
	t.Helper()
	id, tok := "mcp_client_a"+randHex(6), domain.TokenPrefix+randHex(26)
	superTx(t, env, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO trovesnap.mcp_clients (id, tenant_id, name, client_type, status, actor_id, created_at,
			credential_hash, allowed_tool_groups) VALUES ($1, $2, $1, 'custom', 'active', $3, now(), $4, $5)`,
			id, fixtures.DemoTenantID, actor, contract.Hash(tok), groups)
		return err
	})
	return id, tok
}

// humanGrant stores an active human grant for prop, bound to client/actor.
func humanGrant(t *testing.T, env *pgtest.Env, prop domain.Proposal, client, actor string) string {
	t.Helper()
	id := "approval_" + randHex(8)
	superTx(t, env, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO trovesnap.approval_grants (id, tenant_id, proposal_id, proposal_hash, issuer_type,
			issuer_actor, issuer_surface, tool, target_ids, constraints, status, single_use, issued_at, expires_at, bound_client, bound_actor)
			VALUES ($1, $2, $3, $4, 'human', $5, 'cli', $6, $7, '{"maximum_items": 1, "maximum_cost_usd": 0}', 'active', true,
			now(), now() + interval '1 hour', $8, $9)`,
			id, prop.TenantID, prop.ID, prop.Hash, fixtures.DemoUserID, prop.Tool.Name, prop.TargetIDs, client, actor)
		return err
	})
	return id
}

func grantStatus(t *testing.T, env *pgtest.Env, id string) string {
	t.Helper()
	var s string
	superTx(t, env, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, "SELECT status FROM trovesnap.approval_grants WHERE id = $1", id).Scan(&s)
	})
	return s
}

// writeArgs are the idempotency and event arguments of a write RPC.
func writeArgs(tool string, extra map[string]any) map[string]any {
	k := randHex(8)
	a := map[string]any{"p_tool": tool, "p_tool_major": 1, "p_key": "authority-" + k, "p_fingerprint": "sha256:" + k,
		"p_event": map[string]any{"id": "event_" + k}, "p_started_at": time.Now().UTC().Format(time.RFC3339Nano)}
	for n, v := range extra {
		a[n] = v
	}
	return a
}

func executeArgs(prop domain.Proposal, auth map[string]any) map[string]any {
	auth["proposal_hash"] = prop.Hash
	return writeArgs(prop.Tool.Name, map[string]any{"p_proposal_id": prop.ID, "p_auth": auth})
}

// wantRefused asserts a 400 whose message is trovesnap:<code> (and whose
// details contain detail, when set).
func wantRefused(t *testing.T, what string, status int, out map[string]any, code, detail string) {
	t.Helper()
	d, _ := out["details"].(string)
	if status != 400 || out["message"] != "trovesnap:"+code || !strings.Contains(d, detail) {
		t.Fatalf("%s = %d %v; want 400 trovesnap:%s with %q", what, status, out, code, detail)
	}
}

// Finding 1: a sale-scoped member's client, calling mcp_get_proposal and
// mcp_execute_proposal itself, learns of another sale's proposal exactly
// what it learns of a missing one — invalid_reference, cross_tenant false —
// and the execution changes nothing (the owner's grant stays active).
func TestAuthority_ScopedClientGetsAnotherSalesProposalAsAMissingOne(t *testing.T) {
	env := seeded(t)
	prop, _ := pendingProposal(t, env, fixtures.DemoTenantID) // sale_221
	g := humanGrant(t, env, prop, fixtures.DemoClientID, fixtures.DemoUserID)
	_, scoped := authorityClient(t, env, fixtures.ScopedCatalogerUserID, "tenant_read", "action_proposal", "controlled_action")
	before := counts(t, env)

	same := func(what string, hidden, missing map[string]any) {
		t.Helper()
		h, _ := hidden["details"].(string)
		m, _ := missing["details"].(string)
		if hidden["message"] != missing["message"] || strings.ReplaceAll(h, prop.ID, "ID") != strings.ReplaceAll(m, "proposal_404", "ID") {
			t.Fatalf("%s: another sale's proposal answers %v, a missing one %v", what, hidden, missing)
		}
	}
	for _, tok := range []string{contract.CredScoped, scoped} {
		st, hidden := rpcClient(t, env, tok, "mcp_get_proposal", map[string]any{"p_proposal_id": prop.ID})
		wantRefused(t, "get another sale's proposal", st, hidden, "invalid_reference:proposal_id", `"cross_tenant": false`)
		_, missing := rpcClient(t, env, tok, "mcp_get_proposal", map[string]any{"p_proposal_id": "proposal_404"})
		same("mcp_get_proposal", hidden, missing)
	}
	st, hidden := rpcClient(t, env, scoped, "mcp_execute_proposal", executeArgs(prop, map[string]any{"decision": "allowed", "grant_id": g}))
	wantRefused(t, "execute another sale's proposal", st, hidden, "invalid_reference:proposal_id", `"cross_tenant": false`)
	missingProp := prop
	missingProp.ID = "proposal_404"
	_, missing := rpcClient(t, env, scoped, "mcp_execute_proposal", executeArgs(missingProp, map[string]any{"decision": "allowed", "grant_id": g}))
	same("mcp_execute_proposal", hidden, missing)
	sameCounts(t, env, before, "a scoped client's reads and execution of another sale's proposal")
	if s := grantStatus(t, env, g); s != domain.GrantActive {
		t.Fatalf("the owner's grant is %s after a refused execution", s)
	}
	// Another tenant's proposal is still told apart for the audit.
	theirs, _ := pendingProposal(t, env, fixtures.OtherTenantID)
	st, out := rpcClient(t, env, contract.CredOwner, "mcp_get_proposal", map[string]any{"p_proposal_id": theirs.ID})
	wantRefused(t, "get another tenant's proposal", st, out, "invalid_reference:proposal_id", `"cross_tenant": true`)
}

// Finding 2: a human grant approves what one client asked for, acting for
// one actor. Another client of the same actor, holding controlled_action
// and every permission, cannot use it; and a grant bound to another client
// is refused even to the proposal's requester. Nothing changes.
func TestAuthority_GrantIsBoundToTheRequestingClientAndActor(t *testing.T) {
	env := seeded(t)
	prop, _ := pendingProposal(t, env, fixtures.DemoTenantID)
	g := humanGrant(t, env, prop, fixtures.DemoClientID, fixtures.DemoUserID)
	_, twin := authorityClient(t, env, fixtures.DemoUserID, "tenant_read", "action_proposal", "controlled_action")
	before := counts(t, env)
	st, out := rpcClient(t, env, twin, "mcp_execute_proposal", executeArgs(prop, map[string]any{"decision": "allowed", "grant_id": g}))
	wantRefused(t, "another client's execution", st, out, "approval_invalid", "requested by another client")
	sameCounts(t, env, before, "another client's execution with the requester's grant")

	prop2, _ := pendingProposal(t, env, fixtures.DemoTenantID)
	twinID, _ := authorityClient(t, env, fixtures.DemoUserID, "controlled_action")
	foreign := humanGrant(t, env, prop2, twinID, fixtures.DemoUserID)
	before = counts(t, env)
	st, out = rpcClient(t, env, contract.CredOwner, "mcp_execute_proposal", executeArgs(prop2, map[string]any{"decision": "allowed", "grant_id": foreign}))
	wantRefused(t, "a grant bound to another client", st, out, "approval_invalid", "bound to another client")
	sameCounts(t, env, before, "an execution with a grant bound to another client")
	for _, id := range []string{g, foreign} {
		if s := grantStatus(t, env, id); s != domain.GrantActive {
			t.Fatalf("grant %s is %s after a refused execution", id, s)
		}
	}
}

// Finding 4: a policy whose maximum_items_per_run is fractional (only a
// superuser can store it: the seller RPCs refuse it) is refused as
// approval_required with a reason, not an error of the database.
func TestAuthority_FractionalItemsPerRunIsAReasonedRefusal(t *testing.T) {
	env := seeded(t)
	admin := sellerAs(t, env, fixtures.DemoUserID)
	pol, err := admin.CreatePolicy(ctx, domain.Policy{TenantID: fixtures.DemoTenantID, Name: "fractional",
		AllowedTools: []string{"trove_execute_candidate_promotion"}, Scope: domain.PolicyScope{EstateSaleIDs: []string{fixtures.PublishedSaleID}},
		Conditions: domain.PolicyConditions{MaxItemsPerRun: 1, PermittedFields: []string{"create_item.title"}},
		Limits:     domain.PolicyLimits{MaxDailyActions: 50}, CreatedBy: fixtures.DemoUserID})
	if err != nil {
		t.Fatal(err)
	}
	if pol, err = admin.SetPolicyStatus(ctx, pol.ID, domain.PolicyActive, fixtures.DemoUserID); err != nil {
		t.Fatal(err)
	}
	prop := insertProposal(t, env, func(*domain.Proposal) {})
	auth := map[string]any{"decision": "allowed_by_policy", "policy_id": pol.ID, "policy_version": pol.Version}
	for _, v := range []string{"0.5", "1.5", "1e12"} {
		superTx(t, env, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `UPDATE trovesnap.automation_policies SET body = jsonb_set(body, '{conditions,maximum_items_per_run}', $2::jsonb)
				WHERE id = $1`, pol.ID, v)
			return err
		})
		before := counts(t, env)
		st, out := rpcClient(t, env, contract.CredOwner, "mcp_execute_proposal", executeArgs(prop, auth))
		wantRefused(t, "maximum_items_per_run "+v, st, out, "approval_required", "is not a whole number")
		sameCounts(t, env, before, "an execution under a malformed policy")
	}
	// Malformed daily limits are refused the same way.
	superTx(t, env, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE trovesnap.automation_policies SET body = jsonb_set(jsonb_set(body, '{conditions,maximum_items_per_run}', '1'),
			'{limits,maximum_daily_actions}', '"many"') WHERE id = $1`, pol.ID)
		return err
	})
	before := counts(t, env)
	st, out := rpcClient(t, env, contract.CredOwner, "mcp_execute_proposal", executeArgs(prop, auth))
	wantRefused(t, "non-numeric daily limit", st, out, "approval_required", "daily limits are not numbers")
	sameCounts(t, env, before, "an execution under malformed daily limits")
	// The whole number 1.0 is a whole number: the proposal runs, once.
	superTx(t, env, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE trovesnap.automation_policies SET body = jsonb_set(jsonb_set(body, '{conditions,maximum_items_per_run}', '1.0'),
			'{limits,maximum_daily_actions}', '50') WHERE id = $1`, pol.ID)
		return err
	})
	args := executeArgs(prop, auth)
	st, out = rpcClient(t, env, contract.CredOwner, "mcp_execute_proposal", args)
	if st != 200 || out["replayed"] != false {
		t.Fatalf("execution under a well-formed policy = %d %v", st, out)
	}
	// Its key replays for the active client; once the client is suspended,
	// the database refuses it before any idempotency check, as the gate does.
	if st, out = rpcClient(t, env, contract.CredOwner, "mcp_execute_proposal", args); st != 200 || out["replayed"] != true {
		t.Fatalf("replay = %d %v", st, out)
	}
	superTx(t, env, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "UPDATE trovesnap.mcp_clients SET status = 'suspended' WHERE id = $1", fixtures.DemoClientID)
		return err
	})
	before = counts(t, env)
	st, out = rpcClient(t, env, contract.CredOwner, "mcp_execute_proposal", args)
	wantRefused(t, "a suspended client's replay", st, out, "client_suspended", "")
	sameCounts(t, env, before, "a suspended client's replay")
}

// Finding 5: every tenant RPC checks the client's tool group for the tool
// it serves. A client of the owner (every permission) whose groups lack
// exactly that RPC's group is refused permission_denied:<group>, with
// nothing changed.
func TestAuthority_EveryTenantRPCChecksItsToolGroup(t *testing.T) {
	env := seeded(t)
	prop, _ := pendingProposal(t, env, fixtures.DemoTenantID)
	all := []string{"tenant_read", "candidate_write", "action_proposal", "controlled_action"}
	item := map[string]any{"p_item_id": fixtures.DemoItemID, "p_include_photos": false, "p_include_price_history": false}
	page := map[string]any{"p_limit": 10, "p_after_key": nil, "p_after_id": nil}
	with := func(a, b map[string]any) map[string]any {
		out := map[string]any{}
		for k, v := range a {
			out[k] = v
		}
		for k, v := range b {
			out[k] = v
		}
		return out
	}
	sale := fixtures.PublishedSaleID
	cases := []struct {
		fn    string
		lacks []string // the groups the refused client does not hold
		code  string
		args  map[string]any
	}{
		{"mcp_list_sales", []string{"tenant_read"}, "tenant_read", with(page, map[string]any{"p_status": nil})},
		{"mcp_get_sale", []string{"tenant_read"}, "tenant_read", map[string]any{"p_sale_id": sale}},
		{"mcp_list_items", []string{"tenant_read"}, "tenant_read", with(page, map[string]any{"p_sale_id": sale, "p_status": nil, "p_room": nil,
			"p_category": nil, "p_include_photos": false, "p_include_price_history": false})},
		{"mcp_get_item", []string{"tenant_read"}, "tenant_read", item},
		{"mcp_list_candidates", []string{"tenant_read"}, "tenant_read", with(page, map[string]any{"p_sale_id": sale, "p_review_status": nil})},
		{"mcp_get_candidate", []string{"tenant_read"}, "tenant_read", map[string]any{"p_candidate_id": fixtures.DemoCandidateID}},
		{"mcp_demand_signals", []string{"tenant_read"}, "tenant_read", map[string]any{"p_sale_id": sale, "p_category": nil}},
		{"mcp_disposition_queue", []string{"tenant_read"}, "tenant_read", with(page, map[string]any{"p_sale_id": sale, "p_room": nil,
			"p_include_photos": false, "p_include_price_history": false})},
		{"mcp_get_import_run", []string{"tenant_read"}, "tenant_read", map[string]any{"p_run_id": "import_404", "p_limit": 10, "p_after_ordinal": 0}},
		{"mcp_list_import_runs", []string{"tenant_read"}, "tenant_read", with(page, map[string]any{"p_sale_id": sale})},
		{"mcp_list_label_batches", []string{"tenant_read"}, "tenant_read", with(page, map[string]any{"p_sale_id": sale, "p_status": nil})},
		{"mcp_list_status_events", []string{"tenant_read"}, "tenant_read", with(page, map[string]any{"p_item_id": nil, "p_sale_id": sale, "p_to_status": nil})},
		{"mcp_cursor_seal", []string{"tenant_read"}, "tenant_read", map[string]any{"p_kind": "items", "p_key": "k", "p_id": "item_1"}},
		{"mcp_cursor_open", []string{"tenant_read"}, "tenant_read", map[string]any{"p_kind": "items", "p_cursor": "c2.a.b.c"}},
		{"mcp_get_proposal", []string{"tenant_read", "controlled_action"}, "tenant_read", map[string]any{"p_proposal_id": prop.ID}},
		{"mcp_approval_state", []string{"tenant_read", "controlled_action"}, "tenant_read", map[string]any{"p_proposal_id": prop.ID, "p_tool": prop.Tool.Name}},
		{"mcp_create_inventory_candidate", []string{"candidate_write"}, "candidate_write", writeArgs("trove_create_inventory_candidate",
			map[string]any{"p_input": map[string]any{"sale_id": sale, "title": "Lamp"}})},
		{"mcp_create_media_candidate", []string{"candidate_write"}, "candidate_write", writeArgs("trove_create_media_candidate",
			map[string]any{"p_media": map[string]any{"asset_id": "asset_404", "item_id": fixtures.DemoItemID}, "p_content": ""})},
		{"mcp_attach_candidate_media", []string{"candidate_write"}, "candidate_write", writeArgs("trove_attach_candidate_media",
			map[string]any{"p_media": map[string]any{"asset_id": "asset_404", "candidate_id": fixtures.DemoCandidateID}, "p_content": ""})},
		{"mcp_create_status_report", []string{"candidate_write"}, "candidate_write", writeArgs("trove_report_item_status",
			map[string]any{"p_report": map[string]any{"item_id": fixtures.DemoItemID, "reported_status": domain.ItemSold,
				"effective_at": time.Now().UTC().Format(time.RFC3339), "source": "pos", "payload": "{}"}})},
		{"mcp_draft_facts", []string{"candidate_write"}, "candidate_write", map[string]any{"p_tool": "trove_draft_listing_copy", "p_tool_major": 1,
			"p_key": "k-facts", "p_fingerprint": "sha256:f", "p_candidate_id": fixtures.DemoCandidateID, "p_item_id": nil}},
		{"mcp_draft_listing_copy", []string{"candidate_write"}, "candidate_write", writeArgs("trove_draft_listing_copy",
			map[string]any{"p_draft": map[string]any{"candidate_id": fixtures.DemoCandidateID, "tone": "plain",
				"copy": map[string]any{"title": "t", "description": "d", "segments": []any{}, "unverified_claims": []any{}}}})},
		{"mcp_export_state", []string{"candidate_write"}, "candidate_write", map[string]any{"p_tool": "trove_stage_export", "p_tool_major": 1,
			"p_key": "k-export", "p_fingerprint": "sha256:e", "p_item_ids": []string{fixtures.DemoItemID}}},
		{"mcp_import_targets", []string{"candidate_write"}, "candidate_write", map[string]any{"p_sale_id": sale, "p_item_ids": []string{},
			"p_tool": "trove_run_import", "p_tool_major": 1, "p_key": "k-import", "p_fingerprint": "sha256:i"}},
		{"mcp_run_import", []string{"candidate_write"}, "candidate_write", writeArgs("trove_run_import", map[string]any{"p_import": map[string]any{"kind": "manual", "sale_id": sale,
			"rows": []any{map[string]any{"row": "1", "valid": true, "payload": "{}", "kind": "new_item", "candidate": map[string]any{"title": "Lamp"}}}}})},
		{"mcp_stage_export", []string{"candidate_write"}, "candidate_write", writeArgs("trove_stage_export", map[string]any{"p_export": map[string]any{"channel": "csv_file",
			"item_ids": []string{fixtures.DemoItemID}, "listings": []any{map[string]any{"valid": true, "warnings": []any{}}}, "warnings": []any{}}})},
		{"mcp_create_proposal", []string{"action_proposal"}, "action_proposal", writeArgs("trove_propose_candidate_promotion",
			map[string]any{"p_proposal": map[string]any{}})},
		{"mcp_proposal_state", []string{"action_proposal", "tenant_read"}, "action_proposal", map[string]any{"p_tool": "trove_propose_candidate_promotion",
			"p_tool_major": 1, "p_key": "k-state", "p_fingerprint": "sha256:s", "p_action": "promote_candidate",
			"p_target_ids": []string{fixtures.DemoCandidateID}, "p_fields": []string{}}},
		{"mcp_execute_proposal", []string{"controlled_action"}, "controlled_action", executeArgs(prop, map[string]any{"decision": "allowed", "grant_id": "approval_404"})},
	}
	for _, c := range cases {
		t.Run(c.fn, func(t *testing.T) {
			var groups []string
			for _, g := range all {
				if !contains(c.lacks, g) {
					groups = append(groups, g)
				}
			}
			_, tok := authorityClient(t, env, fixtures.DemoUserID, groups...)
			before := counts(t, env)
			st, out := rpcClient(t, env, tok, c.fn, c.args)
			wantRefused(t, c.fn+" without "+strings.Join(c.lacks, ", "), st, out, "permission_denied:"+c.code, "")
			sameCounts(t, env, before, c.fn+" refused")
		})
	}
}

// A permission the role lacks is refused too: a checkout's client (which
// holds tenant_read and controlled_action, but not proposal.read nor the
// promotion's permissions) reads no proposal and no approval state.
func TestAuthority_ProposalReadsNeedTheToolsPermission(t *testing.T) {
	env := seeded(t)
	prop, _ := pendingProposal(t, env, fixtures.DemoTenantID)
	checkout := checkoutUser(t)
	_, tok := authorityClient(t, env, checkout, "tenant_read", "controlled_action")
	before := counts(t, env)
	st, out := rpcClient(t, env, tok, "mcp_get_proposal", map[string]any{"p_proposal_id": prop.ID})
	wantRefused(t, "a checkout reads a proposal", st, out, "permission_denied:proposal.read", "")
	st, out = rpcClient(t, env, tok, "mcp_approval_state", map[string]any{"p_proposal_id": prop.ID, "p_tool": prop.Tool.Name})
	wantRefused(t, "a checkout reads an approval state", st, out, "permission_denied:proposal.read", "")
	sameCounts(t, env, before, "a checkout's proposal reads")
	// The owner's controlled-action-only client reads it for the tool it executes.
	_, exec := authorityClient(t, env, fixtures.DemoUserID, "controlled_action")
	if st, out := rpcClient(t, env, exec, "mcp_get_proposal", map[string]any{"p_proposal_id": prop.ID}); st != 200 || out["id"] != prop.ID {
		t.Fatalf("a controlled_action client reads the proposal it executes: %d %v", st, out)
	}
}

func checkoutUser(t *testing.T) string {
	t.Helper()
	for _, m := range contract.Dataset().Memberships {
		if m.TenantID == fixtures.DemoTenantID && m.Role == domain.RoleCheckout {
			return m.UserID
		}
	}
	t.Skip("the dataset has no checkout member")
	return ""
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// mcp_get_item gives a promoted item's provenance to exactly the roles
// domain.ProvenancePermission names (not checkout), whatever the caller
// asks: the database decides (#16), by the same rule as the store.
func TestRPCAuthority_ItemProvenanceFollowsTheRule(t *testing.T) {
	env := seeded(t)
	be := newBackend(t, env)
	p, err := be.ResolvePrincipal(ctx, contract.CredOwner)
	if err != nil {
		t.Fatal(err)
	}
	candidate, proposal, item := promoteOne(t, be, sellerAs(t, env, fixtures.DemoUserID), p, "prov-")
	roles := map[string]bool{}
	for _, m := range contract.Dataset().Memberships {
		if m.TenantID != fixtures.DemoTenantID || roles[m.Role] {
			continue
		}
		_, tok := authorityClient(t, env, m.UserID, "tenant_read")
		st, out := rpcClient(t, env, tok, "mcp_get_item", map[string]any{"p_item_id": item})
		if st == 403 && strings.Contains(fmt.Sprint(out), "sale_assignment") {
			continue // a member scoped to other sales: refused before any provenance
		}
		roles[m.Role] = true
		pv, has := out["provenance"].(map[string]any)
		want := slices.Contains(domain.RolePermissions(m.Role), domain.ProvenancePermission)
		rec, _ := pv["source_record_id"].(string)
		switch {
		case st != 200 || out["id"] != item:
			t.Errorf("%s reads the item: %d %v", m.Role, st, out)
		case has != want:
			t.Errorf("%s: provenance %v, want it %v", m.Role, out["provenance"], want)
		case want && (pv["candidate_id"] != candidate || pv["proposal_id"] != proposal || !strings.HasPrefix(rec, "record_")):
			t.Errorf("%s: provenance %v", m.Role, pv)
		}
	}
	if !roles[domain.RoleCheckout] || !roles[domain.RoleCataloger] {
		t.Fatalf("the dataset lacks a checkout or cataloger member: %v", roles)
	}
}
