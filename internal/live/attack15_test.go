package live_test

// Issue 15, attacker review: an agent with a shell as the seller's OS user
// holds the host's client token and the public key and calls the RPCs
// itself. Every test asserts the SECURE behaviour; a failing test is a
// finding (see the report of the review).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/contract"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/live"
	"github.com/triunalabs/trovesnap/internal/live/pgtest"
)

// rawRPC posts body to fn with exactly the headers given (apikey included
// only if set in h).
func rawRPC(t *testing.T, env *pgtest.Env, h http.Header, fn string, body []byte) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, env.Endpoint.URL+"/rest/v1/rpc/"+fn, bytes.NewReader(body))
	for k, vs := range h {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func a15Msg(out map[string]any) string { s, _ := out["message"].(string); return s }

// a15Refused requires a non-200 answer whose message is want (when set).
func a15Refused(t *testing.T, what string, status int, out map[string]any, want string) {
	t.Helper()
	if status == http.StatusOK || (want != "" && a15Msg(out) != want) {
		t.Errorf("ATTEMPT %s: HTTP %d %v; want refusal %q", what, status, out, want)
	}
}

func a15Super(t *testing.T, env *pgtest.Env, q string, args ...any) {
	t.Helper()
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// Attempts 1–11: header and schema tricks.
func TestAttack15_HeaderTricks(t *testing.T) {
	env := seeded(t)
	before := counts(t, env)
	list := []byte(`{}`)
	hdr := func(kv ...string) http.Header {
		h := http.Header{}
		for i := 0; i+1 < len(kv); i += 2 {
			h.Add(kv[i], kv[i+1])
		}
		return h
	}
	pk := env.PublicKey()
	// 1: the client token as the Authorization bearer.
	st, out := rawRPC(t, env, hdr("apikey", pk, "Authorization", "Bearer "+contract.CredOwner), "mcp_list_sales", list)
	a15Refused(t, "token as Authorization bearer", st, out, "JWT invalid")
	// 2: the client token as apikey, no token header.
	st, out = rawRPC(t, env, hdr("apikey", contract.CredOwner), "mcp_list_sales", list)
	a15Refused(t, "token as apikey", st, out, "trovesnap:client_not_registered")
	// 3: the stored hash (hex and sha256:-prefixed) as the token.
	for _, h := range []string{contract.Hash(contract.CredOwner), "sha256:" + contract.Hash(contract.CredOwner)} {
		st, out = rawRPC(t, env, hdr("apikey", pk, live.ClientTokenHeader, h), "mcp_list_sales", list)
		a15Refused(t, "stored hash as token", st, out, "trovesnap:client_not_registered")
	}
	// 4: two token headers, an unknown one first.
	st, out = rawRPC(t, env, hdr("apikey", pk, live.ClientTokenHeader, contract.CredUnknown, live.ClientTokenHeader, contract.CredOwner), "mcp_list_sales", list)
	a15Refused(t, "two token headers", st, out, "trovesnap:client_not_registered")
	// 5: an overlong token (the owner's, padded past 256).
	st, out = rawRPC(t, env, hdr("apikey", pk, live.ClientTokenHeader, contract.CredOwner+strings.Repeat("a", 300)), "mcp_list_sales", list)
	a15Refused(t, "overlong token", st, out, "trovesnap:client_not_registered")
	// 6: the revoked and suspended tokens.
	st, out = rawRPC(t, env, hdr("apikey", pk, live.ClientTokenHeader, contract.CredRevoked), "mcp_list_sales", list)
	a15Refused(t, "revoked token", st, out, "")
	// 7: the retired shared key (role trovesnap_mcp) with the owner's token.
	st, out = rawRPC(t, env, hdr("apikey", pk, "Authorization", "Bearer "+env.Endpoint.Token("trovesnap_mcp", time.Hour),
		live.ClientTokenHeader, contract.CredOwner), "mcp_list_sales", list)
	a15Refused(t, "retired trovesnap_mcp key + token", st, out, "")
	// 8: a seller's session (authenticated) with the owner's token.
	st, out = rawRPC(t, env, hdr("apikey", pk, "Authorization", "Bearer "+env.Endpoint.UserToken(pgtest.AuthSubject(fixtures.DemoUserID), time.Hour),
		live.ClientTokenHeader, contract.CredOwner), "mcp_list_sales", list)
	a15Refused(t, "seller session + token on an MCP RPC", st, out, "")
	// 9: naming the private schema's function in the path, and passing the
	// moved argument p_credential_hash to the public wrapper.
	st, out = rawRPC(t, env, hdr("apikey", pk, "Content-Profile", "trovesnap", "Accept-Profile", "trovesnap"), "trovesnap.mcp_list_sales", list)
	a15Refused(t, "schema-qualified name", st, out, "")
	st, out = rawRPC(t, env, hdr("apikey", pk), "mcp_list_sales", []byte(`{"p_credential_hash":"`+contract.Hash(contract.CredOwner)+`"}`))
	a15Refused(t, "p_credential_hash to the wrapper", st, out, "")
	// 10: as anon in SQL, the moved body and the helpers are not executable.
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, q := range []string{
		"SELECT trovesnap.mcp_list_sales('" + contract.Hash(contract.CredOwner) + "')",
		"SELECT trovesnap.lookup_client('" + contract.Hash(contract.CredOwner) + "')",
		"SELECT trovesnap.record_event('{\"id\":\"e\",\"outcome\":\"success\"}')",
	} {
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "SET LOCAL ROLE anon"); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, q)
			return err
		})
		if err == nil || !strings.Contains(err.Error(), "42501") {
			t.Errorf("ATTEMPT as anon %q: %v; want 42501", q, err)
		}
	}
	// 11: seller RPCs with the public key and a client token.
	for fn, args := range map[string]map[string]any{
		"seller_list_sales":    {"p_tenant_id": fixtures.DemoTenantID},
		"seller_create_sale":   {"p_tenant_id": fixtures.DemoTenantID, "p_name": "x", "p_starts_at": "2027-01-01T00:00:00Z", "p_ends_at": "2027-01-02T00:00:00Z"},
		"seller_audit_chain":   {"p_tenant_id": fixtures.DemoTenantID},
		"seller_set_limits":    {"p_tenant_id": fixtures.DemoTenantID, "p_client_id": fixtures.DemoClientID, "p_read_calls_per_minute": 100000, "p_candidate_writes_per_minute": 100000, "p_proposals_per_minute": 100000, "p_controlled_actions_per_minute": 100000, "p_maximum_bulk_targets": 1000, "p_maximum_daily_paid_cost_usd": 1e6},
		"seller_create_policy": {"p_tenant_id": fixtures.DemoTenantID, "p_policy": map[string]any{"name": "x"}},
		"seller_issue_grant":   {"p_tenant_id": fixtures.DemoTenantID, "p_actor_id": fixtures.DemoUserID, "p_grant": map[string]any{}},
	} {
		st, out := rpcClient(t, env, contract.CredOwner, fn, args)
		a15Refused(t, "anon+token "+fn, st, out, "")
	}
	sameCounts(t, env, before, "header tricks")
}

// Attempts 12–18: forging and hiding events.
func TestAttack15_EventForgery(t *testing.T) {
	env := seeded(t)
	before := counts(t, env)
	ev := func(id string, extra map[string]any) map[string]any {
		e := map[string]any{"id": id, "outcome": "blocked", "tool": map[string]any{"name": "trove_get_item"}, "occurred_at": time.Now().UTC().Format(time.RFC3339Nano)}
		for k, v := range extra {
			e[k] = v
		}
		return map[string]any{"p_event": e}
	}
	// 12: anonymous, naming a tenant; 13: anonymous, naming a client.
	st, out := rpc(t, env, "mcp_append_event", ev("event_a15_12", map[string]any{"tenant_id": fixtures.DemoTenantID}))
	a15Refused(t, "anonymous event with tenant", st, out, "trovesnap:invalid_input:event")
	st, out = rpc(t, env, "mcp_append_event", ev("event_a15_13", map[string]any{"client": map[string]any{"id": fixtures.DemoClientID}}))
	a15Refused(t, "anonymous event with client", st, out, "trovesnap:invalid_input:event")
	// 14: the owner's token, the other tenant's client in the body.
	st, out = rpcClient(t, env, contract.CredOwner, "mcp_append_event", ev("event_a15_14", map[string]any{"client": map[string]any{"id": fixtures.OtherClientID}}))
	a15Refused(t, "event naming another client", st, out, "trovesnap:invalid_input:event")
	sameCounts(t, env, before, "refused events")
	// 15: the owner's token, another tenant and another actor in the body:
	// the identity is the token's.
	st, out = rpcClient(t, env, contract.CredOwner, "mcp_append_event", ev("event_a15_15", map[string]any{"tenant_id": fixtures.OtherTenantID,
		"actor": map[string]any{"id": fixtures.OtherOwnerUserID, "type": "seller", "role": "owner"}, "mode": "mock",
		"prev_hash": "sha256:00", "event_hash": "sha256:ff"}))
	if st != http.StatusOK {
		t.Fatalf("owner's event = %d %v", st, out)
	}
	b := eventBody(t, env, "event_a15_15")
	actor, _ := b["actor"].(map[string]any)
	if b["tenant_id"] != fixtures.DemoTenantID || actor["id"] != fixtures.DemoUserID || b["mode"] != "live" {
		t.Errorf("ATTEMPT identity in body: stored %v", b)
	}
	// 16: chain fields in the body do not reach the columns.
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var ok bool
	if err := conn.QueryRow(ctx, `SELECT e.event_hash = trovesnap.audit_chain_hash(e.body, e.prev_hash)
		AND e.prev_hash = coalesce((SELECT p.event_hash FROM trovesnap.plugin_events p WHERE p.tenant_id = e.tenant_id AND p.seq < e.seq ORDER BY p.seq DESC LIMIT 1), '')
		FROM trovesnap.plugin_events e WHERE e.id = 'event_a15_15'`).Scan(&ok); err != nil || !ok {
		t.Errorf("ATTEMPT chain fields in body: columns not the chain's (%v)", err)
	}
	// 17: pre-empting another client's event id: an anonymous event takes
	// the id the owner's client will flush (read from the local outbox);
	// the owner's blocked event must not vanish.
	st, out = rpc(t, env, "mcp_append_event", ev("event_a15_victim", map[string]any{"outcome": "success"}))
	if st != http.StatusOK {
		t.Fatalf("anonymous event = %d %v", st, out)
	}
	st, out = rpcClient(t, env, contract.CredOwner, "mcp_append_event", ev("event_a15_victim", nil))
	if stored := eventBody(t, env, "event_a15_victim"); st == http.StatusOK && out["recorded"] == false && stored["tenant_id"] != fixtures.DemoTenantID {
		t.Errorf("FINDING A (event id pre-emption): the owner's event was answered %v and is not in its tenant's chain: the stored event is the anonymous one %v", out, stored)
	}
	// 18: a write whose event id is an existing event's: the write must not
	// happen without its event.
	before = counts(t, env)
	args := writeArgs("trove_create_inventory_candidate", map[string]any{"p_input": map[string]any{"sale_id": fixtures.PublishedSaleID, "title": "Unaudited lamp"}})
	args["p_event"] = map[string]any{"id": "event_a15_15"}
	st, out = rpcClient(t, env, contract.CredOwner, "mcp_create_inventory_candidate", args)
	after := counts(t, env)
	if st == http.StatusOK && after["plugin_events"] == before["plugin_events"] {
		t.Errorf("FINDING B (write without audit event): HTTP %d %v; candidates %d → %d, plugin_events %d → %d",
			st, out, before["inventory_candidates"], after["inventory_candidates"], before["plugin_events"], after["plugin_events"])
	}
}

// Attempts 19–21: the chain's canonical form on crafted bodies, deep
// nesting, and floods of appends by a token holder.
func TestAttack15_ChainAndFlood(t *testing.T) {
	env := seeded(t)
	// 19: values where JSON canonicalisation differs between engines.
	st, out := rpcClient(t, env, contract.CredOwner, "mcp_append_event", map[string]any{"p_event": json.RawMessage(`{"id":"event_a15_19","outcome":"blocked",
		"x":{"big":123456789012345678901234567890,"e21":1e21,"e20":1e20,"tiny":1e-7,"small":0.000001,"min":5e-324,"neg":-0,"f":0.1,
		"s":"\u2028\u2029\u007f\u001f<>&","\ud83d\ude00k":1,"\uffffk":2,"arr":[1.0,2.50,1E2]}}`)})
	if st != http.StatusOK {
		t.Logf("crafted numbers refused: %d %v", st, out)
	}
	// 20: deep nesting.
	deep := strings.Repeat("[", 3000) + strings.Repeat("]", 3000)
	st, out = rpcClient(t, env, contract.CredOwner, "mcp_append_event", map[string]any{"p_event": json.RawMessage(`{"id":"event_a15_20","outcome":"blocked","x":` + deep + `}`)})
	t.Logf("deep nesting: %d %v", st, a15Msg(out))
	if _, err := newBackend(t, env).ResolvePrincipal(ctx, contract.CredOwner); err != nil {
		t.Fatal(err)
	}
	rep := verifyAs(t, env, fixtures.DemoUserID, fixtures.DemoTenantID, nil)
	if !rep.Intact {
		t.Errorf("FINDING C (chain broken by crafted body): report %+v", rep)
	}
	// 21: a token holder appends far past every per-minute limit, with big
	// bodies: the limits the client's rows set must bound it.
	l := domain.DefaultLimits()
	l.ReadsPerMinute, l.RejectedPerMinute = 5, 5
	if err := sellerAs(t, env, fixtures.DemoUserID).SetLimits(ctx, fixtures.DemoTenantID, fixtures.DemoClientID, l); err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("x", 1<<20)
	accepted := 0
	for i := range 40 {
		st, _ := rpcClient(t, env, contract.CredOwner, "mcp_append_event", map[string]any{"p_event": map[string]any{
			"id": fmt.Sprintf("event_a15_flood_%d", i), "outcome": "blocked", "pad": pad}})
		if st == http.StatusOK {
			accepted++
		}
	}
	if accepted > 10 {
		t.Errorf("FINDING D (unlimited event appends): %d of 40 appends of 1 MiB each accepted in one minute with reads/rejected limits of 5", accepted)
	}
}

// Attempt 22: failing calls are free — their rate count rolls back.
func TestAttack15_FailedCallsAreFree(t *testing.T) {
	// Deferred, and said so in issue 15's closing note: a refused RPC's
	// count rolls back with its error, so a direct caller's failing calls
	// are not counted (through the gate they are: the rejected budget).
	// Keeping the count needs the wrappers to answer errors without raising
	// (PostgREST's response.status), a change to every RPC's error path.
	t.Skip("deferred: failing direct calls are not counted (issue 15 closing note)")
	env := seeded(t)
	l := domain.DefaultLimits()
	l.ReadsPerMinute, l.RejectedPerMinute = 5, 5
	if err := sellerAs(t, env, fixtures.DemoUserID).SetLimits(ctx, fixtures.DemoTenantID, fixtures.DemoClientID, l); err != nil {
		t.Fatal(err)
	}
	through, limited := 0, 0
	start := time.Now()
	for i := range 200 {
		st, out := rpcClient(t, env, contract.CredOwner, "mcp_get_item", map[string]any{"p_item_id": fmt.Sprintf("item_%06d", 500000+i)})
		switch {
		case a15Msg(out) == "trovesnap:rate_limited":
			limited++
		case st != http.StatusOK:
			through++
		}
	}
	t.Logf("failing reads answered by the body: %d, rate limited: %d, in %s; counts now %v", through, limited, time.Since(start), rateCounts(t, env, ownerClient))
	if through > 10 {
		t.Errorf("FINDING E (failed calls are free): %d of 200 failing direct reads ran their body with a read limit of 5/min and a rejected limit of 5/min", through)
	}
}

// Attempts 23–30: controlled actions with forged authority.
func TestAttack15_ExecuteForgedAuth(t *testing.T) {
	env := seeded(t)
	a, _ := pendingProposal(t, env, fixtures.DemoTenantID)
	b, _ := pendingProposal(t, env, fixtures.DemoTenantID)
	other, _ := pendingProposal(t, env, fixtures.OtherTenantID)
	gb := humanGrant(t, env, b, fixtures.DemoClientID, fixtures.DemoUserID)
	ga := humanGrant(t, env, a, fixtures.DemoClientID, fixtures.DemoUserID)
	gOther := humanGrant(t, env, a, fixtures.OtherClientID, fixtures.OtherOwnerUserID)
	a15Super(t, env, "UPDATE trovesnap.approval_grants SET status = 'consumed', consumed_at = now() WHERE id = $1", ga)
	before := counts(t, env)
	exec := func(what string, prop, hashOf domain.Proposal, auth map[string]any, want string) {
		t.Helper()
		args := executeArgs(hashOf, auth)
		args["p_proposal_id"] = prop.ID
		args["p_tool"] = prop.Tool.Name
		st, out := rpcClient(t, env, contract.CredOwner, "mcp_execute_proposal", args)
		a15Refused(t, what, st, out, want)
	}
	exec("another proposal's grant", a, a, map[string]any{"grant_id": gb}, "trovesnap:approval_invalid")
	exec("the hash of another proposal", a, b, map[string]any{"grant_id": gb}, "trovesnap:proposal_changed")
	exec("a consumed grant", a, a, map[string]any{"grant_id": ga}, "trovesnap:approval_consumed")
	exec("a grant bound to another tenant's client", a, a, map[string]any{"grant_id": gOther}, "trovesnap:approval_invalid")
	exec("no authority", a, a, map[string]any{}, "trovesnap:approval_required")
	exec("an unknown policy", a, a, map[string]any{"policy_id": "policy_a15", "policy_version": 1}, "trovesnap:approval_invalid")
	exec("another tenant's proposal", other, other, map[string]any{"grant_id": gb}, "trovesnap:invalid_reference:proposal_id")
	exec("decision claimed without grant", a, a, map[string]any{"decision": "approved", "approved_by": fixtures.DemoUserID}, "trovesnap:approval_required")
	sameCounts(t, env, before, "forged authorities")
	if s := grantStatus(t, env, gb); s != "active" {
		t.Errorf("grant %s is %s after the attempts", gb, s)
	}
	// Seller audit of another tenant, and as a sale-scoped member.
	if _, err := sellerAs(t, env, fixtures.DemoUserID).Audit(fixtures.OtherTenantID).ChainHeads(ctx); err == nil {
		t.Errorf("ATTEMPT seller_audit_head of another tenant answered")
	}
	if _, err := sellerAs(t, env, fixtures.ScopedCatalogerUserID).Audit(fixtures.DemoTenantID).ChainHeads(ctx); err == nil {
		t.Errorf("ATTEMPT seller_audit_head as a sale-scoped member answered")
	}
}

// a15Policy stores an active policy of tenant as a superuser could (the
// seller RPCs refuse malformed limits), covering pendingProposal's shape.
func a15Policy(t *testing.T, env *pgtest.Env, tenant string, maxItems, maxDaily any) string {
	t.Helper()
	id := "policy_a15" + randHex(6)
	body, _ := json.Marshal(map[string]any{"allowed_tools": []string{"trove_execute_candidate_promotion"},
		"scope":      map[string]any{"estate_sale_ids": []string{fixtures.PublishedSaleID}},
		"conditions": map[string]any{"maximum_items_per_run": maxItems, "permitted_fields": []string{"create_item.title", "create_item.quantity"}, "require_no_conflicts": false},
		"limits":     map[string]any{"maximum_daily_actions": maxDaily, "maximum_cost_usd_per_day": 0}})
	superTx(t, env, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO trovesnap.automation_policies (id, tenant_id, name, version, status, body, created_by, created_at, updated_at)
			VALUES ($1, $2, $1, 1, 'active', $3, 'user_88', now(), now())`, id, tenant, string(body))
		return err
	})
	return id
}

// Attempts 31–36: policies with malformed limits, another tenant's policy,
// and a revoked client's events.
func TestAttack15_PolicyLimits(t *testing.T) {
	env := seeded(t)
	a, _ := pendingProposal(t, env, fixtures.DemoTenantID)
	pols := map[string]string{}
	for name, lim := range map[string][3]any{
		"frac": {fixtures.DemoTenantID, 1.5, 10}, "huge": {fixtures.DemoTenantID, 1e12, 10}, "neg": {fixtures.DemoTenantID, -1, 10},
		"fracday": {fixtures.DemoTenantID, 1, 0.5}, "negday": {fixtures.DemoTenantID, 1, -5}, "strday": {fixtures.DemoTenantID, 1, "1000"},
		"other": {fixtures.OtherTenantID, 1, 10}, "ok": {fixtures.DemoTenantID, 1, 10},
	} {
		pols[name] = a15Policy(t, env, lim[0].(string), lim[1], lim[2])
	}
	before := counts(t, env)
	exec := func(what, pol string, version any, want, detail string) {
		t.Helper()
		st, out := rpcClient(t, env, contract.CredOwner, "mcp_execute_proposal", executeArgs(a, map[string]any{"policy_id": pol, "policy_version": version}))
		a15Refused(t, what, st, out, want)
		if d, _ := out["details"].(string); !strings.Contains(d, detail) {
			t.Errorf("ATTEMPT %s: details %q, want %q", what, d, detail)
		}
	}
	exec("fractional items per run", pols["frac"], 1, "trovesnap:approval_required", "not a whole number")
	exec("huge items per run", pols["huge"], 1, "trovesnap:approval_required", "not a whole number")
	exec("negative items per run", pols["neg"], 1, "trovesnap:approval_required", "per run")
	exec("fractional daily actions", pols["fracday"], 1, "trovesnap:approval_required", "daily limit")
	exec("negative daily actions", pols["negday"], 1, "trovesnap:approval_required", "daily limit")
	exec("string daily actions", pols["strday"], 1, "trovesnap:approval_required", "malformed")
	exec("another tenant's policy", pols["other"], 1, "trovesnap:approval_invalid", "policy")
	exec("a policy version from the future", pols["ok"], 2, "trovesnap:approval_revoked", "changed")
	exec("a non-integer policy version", pols["ok"], "1 OR 1=1", "", "")
	sameCounts(t, env, before, "policy executions refused")
	// 36: a revoked client still writes into its former tenant's chain.
	st, out := rpcClient(t, env, contract.CredRevoked, "mcp_append_event", map[string]any{"p_event": map[string]any{"id": "event_a15_revoked", "outcome": "success",
		"tool": map[string]any{"name": "trove_execute_item_publication"}}})
	if st == http.StatusOK {
		t.Errorf("FINDING D2 (revoked token appends to the tenant's audit chain): %d %v, stored %v", st, out, eventBody(t, env, "event_a15_revoked")["tenant_id"])
	}
}

// Attempts 37–39: idempotency keys and cursors across clients and tenants;
// a sale-scoped client proposing on another sale.
func TestAttack15_CrossClientState(t *testing.T) {
	env := seeded(t)
	// 37: the same tool, key and fingerprint from a second client of the
	// same tenant must not replay the owner's stored result.
	args := writeArgs("trove_create_inventory_candidate", map[string]any{"p_input": map[string]any{"sale_id": fixtures.PublishedSaleID, "title": "Key lamp"}})
	st, first := rpcClient(t, env, contract.CredOwner, "mcp_create_inventory_candidate", args)
	if st != http.StatusOK {
		t.Fatalf("owner write = %d %v", st, first)
	}
	_, tok := authorityClient(t, env, fixtures.DemoUserID, "candidate_write")
	args["p_event"] = map[string]any{"id": "event_" + randHex(8)}
	st, second := rpcClient(t, env, tok, "mcp_create_inventory_candidate", args)
	if st == http.StatusOK && second["replayed"] == true {
		t.Errorf("ATTEMPT idempotency key of another client replayed its result: %v", second)
	}
	// 38: a cursor sealed by the other tenant's client, opened by the owner.
	var sealed string
	{
		body, _ := json.Marshal(map[string]any{"p_kind": "items", "p_key": "k", "p_id": "item_1"})
		req, _ := http.NewRequest(http.MethodPost, env.Endpoint.URL+"/rest/v1/rpc/mcp_cursor_seal", bytes.NewReader(body))
		req.Header.Set("apikey", env.PublicKey())
		req.Header.Set(live.ClientTokenHeader, contract.CredOther)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = json.NewDecoder(resp.Body).Decode(&sealed)
		resp.Body.Close()
	}
	if sealed == "" {
		t.Logf("seal as other: no cursor")
	} else {
		st, out := rpcClient(t, env, contract.CredOwner, "mcp_cursor_open", map[string]any{"p_kind": "items", "p_cursor": sealed})
		if st == http.StatusOK {
			t.Errorf("ATTEMPT another tenant's cursor opened: %v", out)
		}
	}
	// 39: the sale-scoped cataloger proposes on a sale it is not assigned.
	before := counts(t, env)
	w := writeArgs("trove_propose_candidate_promotion", map[string]any{"p_proposal": map[string]any{"action": domain.ActionPromoteCandidate,
		"tool": map[string]any{"name": "trove_execute_candidate_promotion", "version": "1.0.0"}, "target_ids": []string{fixtures.DemoCandidateID},
		"expected_versions": []map[string]any{{"id": fixtures.DemoCandidateID, "version": 3}}, "sale_ids": []string{fixtures.LiveSaleID}}})
	st, out := rpcClient(t, env, contract.CredScoped, "mcp_create_proposal", w)
	a15Refused(t, "scoped client proposing on another sale's candidate", st, out, "")
	st, out = rpcClient(t, env, contract.CredOwner, "mcp_create_proposal", writeArgs("trove_propose_item_publication", map[string]any{"p_proposal": map[string]any{
		"action": "publish_item", "target_ids": []string{"item_other"}, "sale_ids": []string{fixtures.OtherPublishedSaleID}}}))
	a15Refused(t, "owner proposing on the other tenant's sale", st, out, "")
	sameCounts(t, env, before, "refused proposals")
}

// Attempt 40: a controlled action executed with a valid grant, whose event
// body claims another approval: the audit must name the grant used.
func TestAttack15_ExecuteEventNamesTheGrantUsed(t *testing.T) {
	env := seeded(t)
	a, _ := pendingProposal(t, env, fixtures.DemoTenantID)
	g := humanGrant(t, env, a, fixtures.DemoClientID, fixtures.DemoUserID)
	args := executeArgs(a, map[string]any{"grant_id": g, "decision": "approved_by_policy"})
	evID := "event_a15_" + randHex(6)
	args["p_event"] = map[string]any{"id": evID, "approval": map[string]any{"approval_id": "approval_forged", "decision": "policy",
		"policy_id": "policy_forged", "approved_by": fixtures.OtherOwnerUserID}}
	st, out := rpcClient(t, env, contract.CredOwner, "mcp_execute_proposal", args)
	if st != http.StatusOK {
		t.Fatalf("execution with a valid grant = %d %v", st, out)
	}
	body := eventBody(t, env, evID)
	appr, _ := body["approval"].(map[string]any)
	if appr["approval_id"] != g || appr["policy_id"] != nil || appr["approved_by"] != nil {
		t.Errorf("FINDING F (forged approval in the audit event): executed with grant %s, the event records approval %v", g, appr)
	}
	if tool, _ := body["tool"].(map[string]any); tool["name"] != a.Tool.Name || body["outcome"] != "success" {
		t.Errorf("FINDING F2 (the execution's event names no/another tool): tool %v, outcome %v; want %s", body["tool"], body["outcome"], a.Tool.Name)
	}
}
