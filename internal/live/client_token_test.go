package live_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/contract"
	"github.com/triunalabs/trovesnap/internal/live"
	"github.com/triunalabs/trovesnap/internal/live/pgtest"
)

// countEvents is how many plugin_events have id.
func countEvents(t *testing.T, env *pgtest.Env, id string) int {
	t.Helper()
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM trovesnap.plugin_events WHERE id = $1", id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// eventBody is the stored body of event id.
func eventBody(t *testing.T, env *pgtest.Env, id string) map[string]any {
	t.Helper()
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var raw []byte
	if err := conn.QueryRow(ctx, "SELECT body::text FROM trovesnap.plugin_events WHERE id = $1", id).Scan(&raw); err != nil {
		t.Fatalf("event %s: %v", id, err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// Finding 4 of issue 15: the stored value was the wire value. Now the wire
// carries the token and the table only its sha256, which is no credential:
// sent as the token it is an unknown client; the old argument is gone from
// every RPC; and the retired shared key of the trovesnap_mcp role is
// refused by every RPC — state unchanged throughout.
func TestClientToken_StoredHashIsNoCredential(t *testing.T) {
	env := seeded(t)
	if status, body := rpcClient(t, env, contract.CredOwner, "mcp_list_sales", map[string]any{}); status != http.StatusOK {
		t.Fatalf("the token itself: %d %v", status, body)
	}
	before := counts(t, env) // after the accepted call, which counted itself (rate_counters)
	for name, c := range map[string]struct {
		tok  string
		args map[string]any
		want string
	}{
		"stored hash as the token":     {contract.Hash(contract.CredOwner), map[string]any{}, "trovesnap:client_not_registered"},
		"prefixed hash as the token":   {"sha256:" + contract.Hash(contract.CredOwner), map[string]any{}, "trovesnap:client_not_registered"},
		"no token":                     {"", map[string]any{}, "trovesnap:client_not_registered"},
		"revoked client's token":       {contract.CredRevoked, map[string]any{}, "trovesnap:client_not_registered"},
		"suspended client's token":     {contract.CredSuspended, map[string]any{}, "trovesnap:client_suspended"},
		"an overlong token":            {contract.CredOwner + string(bytes.Repeat([]byte("x"), 300)), map[string]any{}, "trovesnap:client_not_registered"},
		"the hash as the old argument": {"", map[string]any{"p_credential_hash": contract.Hash(contract.CredOwner)}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			status, body := rpcClient(t, env, c.tok, "mcp_list_sales", c.args)
			if c.want == "" {
				if status != http.StatusNotFound || body["code"] != "PGRST202" {
					t.Fatalf("HTTP %d %v, want no such function", status, body)
				}
				return
			}
			if status != http.StatusBadRequest || body["message"] != c.want {
				t.Fatalf("HTTP %d %v, want %s", status, body, c.want)
			}
		})
	}
	// The retired shared key, as bearer, reaches nothing: not the MCP RPCs
	// (even with a valid client token beside it), not the seller RPCs.
	for _, fn := range []string{"mcp_list_sales", "mcp_append_event", "mcp_schema_version", "seller_whoami"} {
		body := []byte(`{}`)
		if fn == "mcp_append_event" {
			body = []byte(`{"p_event":{"id":"event_retired_key","outcome":"success"}}`)
		}
		req, _ := http.NewRequest(http.MethodPost, env.Endpoint.URL+"/rest/v1/rpc/"+fn, bytes.NewReader(body))
		req.Header.Set("apikey", env.PublicKey())
		req.Header.Set("Authorization", "Bearer "+env.RetiredServerKey())
		req.Header.Set(live.ClientTokenHeader, contract.CredOwner)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if resp.StatusCode < 400 || (out["code"] != "42501" && out["message"] != "trovesnap:forbidden") {
			t.Errorf("%s with the retired key: HTTP %d %v", fn, resp.StatusCode, out)
		}
	}
	sameCounts(t, env, before, "a refused credential")

	// No API role may execute the moved bodies, which take a hash; the
	// public MCP RPCs are anon's (a client token) and authenticated's (a
	// connector's access token: migration 49), the same set for both.
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var exposed []string
	if err := conn.QueryRow(ctx, `SELECT coalesce(array_agg(p.proname || ' by ' || r.rolname ORDER BY 1), '{}')
		FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
		CROSS JOIN (SELECT rolname FROM pg_roles WHERE rolname IN ('anon', 'authenticated', 'service_role', 'trovesnap_mcp')) r
		WHERE (n.nspname = 'trovesnap' AND p.proname LIKE 'mcp\_%' AND has_function_privilege(r.rolname, p.oid, 'EXECUTE'))
		   OR (n.nspname = 'public' AND p.proname LIKE 'mcp\_%' AND r.rolname NOT IN ('anon', 'authenticated')
		       AND has_function_privilege(r.rolname, p.oid, 'EXECUTE'))
		   OR (n.nspname = 'public' AND p.proname LIKE 'mcp\_%' AND r.rolname = 'authenticated'
		       AND has_function_privilege('authenticated', p.oid, 'EXECUTE') <> has_function_privilege('anon', p.oid, 'EXECUTE'))
		   OR (n.nspname = 'public' AND 'p_credential_hash' = ANY (coalesce(p.proargnames, '{}'))
		       AND p.proname LIKE 'mcp\_%')`).Scan(&exposed); err != nil {
		t.Fatal(err)
	}
	if len(exposed) != 0 {
		t.Fatalf("exposed: %v", exposed)
	}
}

// Finding 1 of issue 15: mcp_append_event recorded any body in any tenant.
// Now the token decides whose event it is: without one an event naming a
// tenant or a client is refused; with one, an event naming another client
// is refused, and tenant, client and actor are the token's whatever the
// body claims; nothing is written by a refusal.
func TestAppendEvent_IdentityComesFromTheToken(t *testing.T) {
	env := seeded(t)
	forged := func(id string) map[string]any {
		return map[string]any{"id": id, "outcome": "success", "action": "approval_granted", "tenant_id": fixtures.OtherTenantID,
			"client":   map[string]any{"id": "mcp_client_90", "name": "Other owner"},
			"actor":    map[string]any{"id": "user_forged", "type": "seller", "role": "owner"},
			"approval": map[string]any{"decision": "approved", "issued_by": map[string]any{"type": "human", "id": "user_forged"}}}
	}
	before := counts(t, env)
	for name, c := range map[string]struct {
		tok  string
		ev   map[string]any
		want string
	}{
		"no token, another tenant":     {"", forged("event_forged_1"), "trovesnap:invalid_input:event"},
		"owner token, another client":  {contract.CredOwner, forged("event_forged_2"), "trovesnap:invalid_input:event"},
		"unknown token":                {contract.CredUnknown, forged("event_forged_3"), "trovesnap:client_not_registered"},
		"the stored hash as the token": {contract.Hash(contract.CredOther), forged("event_forged_4"), "trovesnap:client_not_registered"},
		"not an object":                {contract.CredOwner, nil, "trovesnap:invalid_input:event"},
	} {
		t.Run(name, func(t *testing.T) {
			var ev any = c.ev
			if c.ev == nil {
				ev = []string{"x"}
			}
			status, body := rpcClient(t, env, c.tok, "mcp_append_event", map[string]any{"p_event": ev})
			if status != http.StatusBadRequest || body["message"] != c.want {
				t.Fatalf("HTTP %d %v, want %s", status, body, c.want)
			}
		})
	}
	sameCounts(t, env, before, "a refused append")

	// The owner's token with a body claiming another tenant and actor: the
	// event is the owner client's, in its tenant, by its actor.
	ev := forged("event_claims_1")
	delete(ev, "client")
	if status, body := rpcClient(t, env, contract.CredOwner, "mcp_append_event", map[string]any{"p_event": ev}); status != http.StatusOK || body["recorded"] != true {
		t.Fatalf("own event: %d %v", status, body)
	}
	got := eventBody(t, env, "event_claims_1")
	client, _ := got["client"].(map[string]any)
	actor, _ := got["actor"].(map[string]any)
	if got["tenant_id"] != fixtures.DemoTenantID || client["id"] != fixtures.DemoClientID || actor["id"] == "user_forged" ||
		actor["id"] == "" || got["mode"] != "live" {
		t.Fatalf("stored event = %v", got)
	}
	// An anonymous event (a public call) is recorded in no tenant, by nobody.
	anon := map[string]any{"id": "event_anon_1", "outcome": "success", "tool": map[string]any{"name": "trove_search_marketplace"}}
	if status, body := rpcClient(t, env, "", "mcp_append_event", map[string]any{"p_event": anon}); status != http.StatusOK || body["recorded"] != true {
		t.Fatalf("anonymous event: %d %v", status, body)
	}
	got = eventBody(t, env, "event_anon_1")
	actor, _ = got["actor"].(map[string]any)
	if got["tenant_id"] != "" || actor["type"] != "anonymous" {
		t.Fatalf("anonymous event stored as %v", got)
	}
}

// The public key cannot flood the audit: anonymous events count in the
// public bucket's rejected class, and past it they are refused (the outbox
// retries them later) with nothing written. The bucket is filled for this
// minute and the next, so the case cannot straddle a window.
func TestAppendEvent_AnonymousEventsAreRateLimited(t *testing.T) {
	env := seeded(t)
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `INSERT INTO trovesnap.rate_counters (bucket, class, window_start, count, tenant_id)
		SELECT 'public', 'rejected', w, 120, NULL
		FROM (SELECT floor(extract(epoch FROM now()))::bigint AS s) n, LATERAL (VALUES (n.s - n.s % 60), (n.s - n.s % 60 + 60)) v(w)
		ON CONFLICT (bucket, class, window_start) DO UPDATE SET count = 120`); err != nil {
		t.Fatal(err)
	}
	before := counts(t, env)
	status, body := rpcClient(t, env, "", "mcp_append_event", map[string]any{"p_event": map[string]any{"id": "event_flood_1", "outcome": "success"}})
	if status != http.StatusBadRequest || body["message"] != "trovesnap:rate_limited" {
		t.Fatalf("an anonymous event over the limit: %d %v", status, body)
	}
	sameCounts(t, env, before, "a refused anonymous event")
	// A client's own events do not count there.
	if status, body := rpcClient(t, env, contract.CredOwner, "mcp_append_event", map[string]any{"p_event": map[string]any{"id": "event_flood_2", "outcome": "success"}}); status != http.StatusOK {
		t.Fatalf("a client's event: %d %v", status, body)
	}
}
