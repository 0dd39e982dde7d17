package live_test

// OAuth attacker review (issue 17, part 3), live: an agent with a shell as
// the seller's user holds a connector's access token (for the cataloger
// and for the owner), the public key and a seller's session, and calls
// PostgREST and SQL itself. Every test asserts the SECURE behaviour
// (refused, nothing changed); a failing test is a finding.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/contract"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/live"
	"github.com/triunalabs/trovesnap/internal/live/pgtest"
	"github.com/triunalabs/trovesnap/internal/mcpserver"
)

const ownerConnector = "7d6c5b4a-3928-4716-a5b4-c3d2e1f00011"

// publicArgs are plausible named arguments for a function's signature: the
// demo tenant, ids of the demo data, one tool group.
func publicArgs(t *testing.T, env *pgtest.Env, fn string) []byte {
	t.Helper()
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var names, types []string
	if err := conn.QueryRow(ctx, `SELECT coalesce(p.proargnames, '{}'), array(SELECT format_type(x, NULL) FROM unnest(p.proargtypes) x)
		FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'public' AND p.proname = $1`, fn).Scan(&names, &types); err != nil {
		t.Fatal(err)
	}
	args := map[string]any{}
	for i, ty := range types {
		if i >= len(names) {
			break
		}
		n := names[i]
		switch {
		case n == "p_tenant_id":
			args[n] = fixtures.DemoTenantID
		case n == "p_actor_id" || n == "p_by" || n == "p_created_by" || n == "p_user_id":
			args[n] = fixtures.DemoUserID
		case strings.Contains(n, "client_id") && !strings.Contains(n, "oauth"):
			args[n] = "mcp_client_x"
		case n == "p_oauth_client_id":
			args[n] = "attack-oauth-new"
		case n == "p_oauth_resource":
			args[n] = "https://evil.example/mcp"
		case n == "p_status":
			args[n] = "active"
		case n == "p_grant":
			// A grant that passes the checks made before the caller is known.
			args[n] = map[string]any{"tenant_id": fixtures.DemoTenantID, "proposal_id": "proposal_x", "tool": "trove_execute_proposal",
				"issued_by": map[string]any{"type": "human", "actor_id": fixtures.DemoUserID, "surface": "cli"}}
		case n == "p_credential_hash":
			args[n] = strings.Repeat("ab", 32)
		case ty == "text[]":
			args[n] = []string{"tenant_read"}
		case ty == "jsonb" || ty == "json":
			args[n] = map[string]any{}
		case ty == "integer" || ty == "bigint" || ty == "numeric":
			args[n] = 1
		case ty == "boolean":
			args[n] = false
		default:
			args[n] = "x"
		}
	}
	b, _ := json.Marshal(args)
	return b
}

// fnsLike lists the public functions named like pattern that role may call.
func fnsLike(t *testing.T, env *pgtest.Env, role, pattern string) []string {
	t.Helper()
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
		WHERE n.nspname = 'public' AND p.proname LIKE $1 AND has_function_privilege($2, p.oid, 'EXECUTE') ORDER BY 1`, pattern, role)
	if err != nil {
		t.Fatal(err)
	}
	fns, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return fns
}

// Attempt: a connector's token (the owner's own connector included, whose
// actor may manage clients, approve and grant) on every seller RPC the
// role authenticated may execute: each is forbidden before it reads or
// writes anything.
func TestAttackOAuth_LiveConnectorOnEverySellerRPC(t *testing.T) {
	env := seeded(t)
	const resource = "https://mcp.example.com/mcp"
	registerLiveConnector(t, env, resource)
	if _, _, err := sellerAs(t, env, fixtures.DemoUserID).RegisterClient(ctx, domain.NewClient{TenantID: fixtures.DemoTenantID,
		ActorID: fixtures.DemoUserID, Name: "Claude", ClientType: "custom", Groups: []string{"tenant_read", "controlled_action"},
		OAuthClientID: ownerConnector, OAuthResource: resource}); err != nil {
		t.Fatal(err)
	}
	pk := env.Endpoint.Token("anon", time.Hour)
	tokens := map[string]string{
		"cataloger connector": env.Endpoint.OAuthToken(pgtest.AuthSubject(fixtures.CatalogerUserID), liveConnector, []string{"authenticated", resource}, time.Hour),
		"owner connector":     env.Endpoint.OAuthToken(pgtest.AuthSubject(fixtures.DemoUserID), ownerConnector, []string{"authenticated", resource}, time.Hour),
		"owner, unbound DCR":  env.Endpoint.OAuthToken(pgtest.AuthSubject(fixtures.DemoUserID), "some-dcr-client", []string{"authenticated"}, time.Hour),
	}
	fns := fnsLike(t, env, "authenticated", `seller\_%`)
	if len(fns) < 10 {
		t.Fatalf("seller RPCs: %v", fns)
	}
	before := counts(t, env)
	for who, tok := range tokens {
		for _, fn := range fns {
			st, out := rawRPC(t, env, http.Header{"Apikey": {pk}, "Authorization": {"Bearer " + tok},
				live.ClientTokenHeader: {contract.CredOwner}}, fn, publicArgs(t, env, fn))
			a15Refused(t, who+" → "+fn, st, out, "trovesnap:forbidden")
		}
	}
	sameCounts(t, env, before, "connector tokens on seller RPCs")
}

// Attempt: a seller's own session (no client_id) on every MCP RPC, with
// and without the owner's client token: nothing but the public reads
// answers, and nothing is written.
func TestAttackOAuth_LiveSellerSessionOnEveryMCPRPC(t *testing.T) {
	env := seeded(t)
	pk := env.Endpoint.Token("anon", time.Hour)
	session := env.Endpoint.UserToken(pgtest.AuthSubject(fixtures.DemoUserID), time.Hour)
	public := map[string]bool{"mcp_public_item": true, "mcp_public_sale": true, "mcp_resolve_public_qr": true,
		"mcp_search_marketplace": true, "mcp_schema_version": true, "mcp_role_check": true}
	before := counts(t, env)
	for _, fn := range fnsLike(t, env, "authenticated", `mcp\_%`) {
		if public[fn] {
			continue
		}
		for _, h := range []http.Header{
			{"Apikey": {pk}, "Authorization": {"Bearer " + session}},
			{"Apikey": {pk}, "Authorization": {"Bearer " + session}, live.ClientTokenHeader: {contract.CredOwner}},
		} {
			st, out := rawRPC(t, env, h, fn, publicArgs(t, env, fn))
			a15Refused(t, "seller session → "+fn, st, out, "")
		}
	}
	sameCounts(t, env, before, "a seller session on MCP RPCs")
}

// Attempt: the SQL helpers of migration 49 called directly, as anon and as
// authenticated with a connector's claims: none is executable, and the
// tables stay unreadable.
func TestAttackOAuth_LiveSQLHelpersAreNotCallable(t *testing.T) {
	env := seeded(t)
	const resource = "https://mcp.example.com/mcp"
	c := registerLiveConnector(t, env, resource)
	claims, _ := json.Marshal(map[string]any{"role": "authenticated", "sub": pgtest.AuthSubject(fixtures.CatalogerUserID),
		"client_id": liveConnector, "aud": []string{"authenticated", resource}})
	before := counts(t, env)
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, role := range []string{"anon", "authenticated"} {
		for _, q := range []string{
			`SELECT trovesnap.connector_credential_hash('` + string(claims) + `'::jsonb)`,
			`SELECT trovesnap.aud_names('"x"'::jsonb, 'x')`,
			`SELECT trovesnap.request_credential_hash()`,
			`SELECT trovesnap.oauth_resource_ok('https://x/mcp')`,
			`SELECT trovesnap.jwt_claims()::text`,
			`SELECT public.trovesnap_access_token_hook('{"user_id":"` + pgtest.AuthSubject(fixtures.CatalogerUserID) + `","claims":{"client_id":"` + liveConnector + `"}}'::jsonb)::text`,
			`SELECT credential_hash FROM trovesnap.mcp_clients WHERE id = '` + c.ID + `'`,
			`SELECT count(*)::text FROM trovesnap.jwt_tenants()`,
			`UPDATE trovesnap.mcp_clients SET oauth_client_id = 'x' WHERE id = '` + c.ID + `' RETURNING id`,
		} {
			var got *string
			err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
				if _, err := tx.Exec(ctx, "SET LOCAL ROLE "+role); err != nil {
					return err
				}
				if _, err := tx.Exec(ctx, "SELECT set_config('request.jwt.claims', $1, true)", string(claims)); err != nil {
					return err
				}
				return tx.QueryRow(ctx, q).Scan(&got)
			})
			if err == nil {
				v := "<null>"
				if got != nil {
					v = *got
				}
				t.Errorf("ATTEMPT %s: %s answered %q", role, q, v)
			}
		}
	}
	sameCounts(t, env, before, "direct SQL calls")
}

// Attempt: the access token hook with crafted events (as Supabase Auth's
// role, which runs it): it adds the bound resource only for the bound
// OAuth client and its actor, whatever else the event says, writes
// nothing, and leaves trovesnap.system as it was.
func TestAttackOAuth_LiveHookOnCraftedEvents(t *testing.T) {
	env := seeded(t)
	const resource = "https://mcp.example.com/mcp"
	registerLiveConnector(t, env, resource)
	cat, owner := pgtest.AuthSubject(fixtures.CatalogerUserID), pgtest.AuthSubject(fixtures.DemoUserID)
	before := counts(t, env)
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	hook := func(event string) (string, string) {
		var out, sys *string
		if err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "SET LOCAL ROLE supabase_auth_admin; SET LOCAL search_path = auth"); err != nil {
				return err
			}
			if err := tx.QueryRow(ctx, "SELECT public.trovesnap_access_token_hook($1::jsonb)::text", event).Scan(&out); err != nil {
				return err
			}
			return tx.QueryRow(ctx, "SELECT current_setting('trovesnap.system', true)").Scan(&sys)
		}); err != nil {
			return "error: " + err.Error(), ""
		}
		s := ""
		if sys != nil {
			s = *sys
		}
		if out == nil {
			return "<null>", s
		}
		return *out, s
	}
	ev := func(user string, claims map[string]any) string {
		b, _ := json.Marshal(map[string]any{"user_id": user, "claims": claims})
		return string(b)
	}
	for name, event := range map[string]string{
		"another member":            ev(owner, map[string]any{"client_id": liveConnector, "sub": owner, "aud": "authenticated"}),
		"unbound client":            ev(cat, map[string]any{"client_id": "some-dcr-client", "sub": cat, "aud": "authenticated"}),
		"no client":                 ev(cat, map[string]any{"sub": cat, "aud": "authenticated"}),
		"client_id as object":       ev(cat, map[string]any{"client_id": map[string]any{"x": liveConnector}, "sub": cat}),
		"client_id SQL":             ev(cat, map[string]any{"client_id": "' OR '1'='1", "sub": cat}),
		"user_id missing":           `{"claims":{"client_id":"` + liveConnector + `","sub":"` + cat + `"}}`,
		"user_id as array":          `{"user_id":["` + cat + `"],"claims":{"client_id":"` + liveConnector + `"}}`,
		"claims as array":           `{"user_id":"` + cat + `","claims":[{"client_id":"` + liveConnector + `"}]}`,
		"client_id outside claims":  `{"user_id":"` + cat + `","client_id":"` + liveConnector + `","claims":{"sub":"` + cat + `"}}`,
		"user_id upper-cased":       ev(strings.ToUpper(cat), map[string]any{"client_id": liveConnector, "sub": cat}),
		"client_id with whitespace": ev(cat, map[string]any{"client_id": " " + liveConnector, "sub": cat}),
	} {
		out, sys := hook(event)
		if strings.Contains(out, resource) {
			t.Errorf("ATTEMPT %s: the hook added the resource: %s", name, out)
		}
		if sys == "on" {
			t.Errorf("ATTEMPT %s: the hook left trovesnap.system on", name)
		}
	}
	// The bound event gains the resource once, keeps what aud named.
	out, sys := hook(ev(cat, map[string]any{"client_id": liveConnector, "sub": cat, "aud": []string{"authenticated", resource}}))
	if strings.Count(out, resource) != 1 || sys == "on" {
		t.Errorf("bound event: %s (system %q)", out, sys)
	}
	sameCounts(t, env, before, "crafted hook events")
}

// Attempt: the live backend's "oauth-bearer " marker reached from outside,
// as a stdio client token (TROVESNAP_CLIENT_TOKEN): with a seller's
// session, the public key or a connector token for another server, no
// tool is visible and no call runs; nothing is written. (With the bound
// connector's own valid token the marker lists that connector's tools —
// the database decided — but no call runs.)
func TestAttackOAuth_LiveMarkerAsStdioCredential(t *testing.T) {
	env := seeded(t)
	const resource = "https://mcp.example.com/mcp"
	registerLiveConnector(t, env, resource)
	lg := newLiveGate(t, env)
	cat := pgtest.AuthSubject(fixtures.CatalogerUserID)
	before := counts(t, env)
	for name, tok := range map[string]string{
		"seller session":     env.Endpoint.UserToken(pgtest.AuthSubject(fixtures.DemoUserID), time.Hour),
		"public key":         env.Endpoint.Token("anon", time.Hour),
		"retired server key": env.Endpoint.Token("trovesnap_mcp", time.Hour),
		"service_role":       env.Endpoint.Token("service_role", time.Hour),
		"another server":     env.Endpoint.OAuthToken(cat, liveConnector, []string{"https://evil.example/mcp"}, time.Hour),
		"unbound client":     env.Endpoint.OAuthToken(cat, "some-dcr-client", []string{resource}, time.Hour),
	} {
		cs := connect(t, lg.g, "oauth-bearer "+tok)
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Tools) != 0 {
			t.Errorf("ATTEMPT marker + %s: %d tools visible", name, len(res.Tools))
		}
		out := call(t, cs, "trove_list_sales", map[string]any{})
		if s, _ := out["status"].(string); s == "succeeded" {
			t.Errorf("ATTEMPT marker + %s: a call ran", name)
		}
	}
	good := env.Endpoint.OAuthToken(cat, liveConnector, []string{"authenticated", resource}, time.Hour)
	cs := connect(t, lg.g, "oauth-bearer "+good)
	out := call(t, cs, "trove_create_candidate", map[string]any{"sale_id": fixtures.PublishedSaleID, "title": "marker", "idempotency_key": "attack-oauth-marker-1"})
	if s, _ := out["status"].(string); s == "succeeded" {
		t.Errorf("ATTEMPT marker + the connector's own token: a write ran over stdio")
	}
	after := counts(t, env)
	delete(before, "plugin_events")
	delete(after, "plugin_events")
	for k, v := range before {
		if after[k] != v && k != "rate_counters" {
			t.Errorf("table %s: %d → %d", k, v, after[k])
		}
	}
	// The live backend's logs never hold an access token.
	sig := good[strings.LastIndex(good, ".")+1:]
	if strings.Contains(lg.logs.String(), sig) {
		t.Error("the live backend logged a connector's access token")
	}
}

// Attempt: through the HTTP server, a connector's token for the bound
// client, with the owner's client token header and an expired/other
// variants, over a live gate: the calls are the connector's, and the
// server's logs never hold the token.
func TestAttackOAuth_LiveHTTPConnectorIsItsClientOnly(t *testing.T) {
	env := seeded(t)
	lg := newLiveGate(t, env)
	srv := oauthServer(t, lg)
	resource := srv.URL + mcpserver.PathMCP
	c := registerLiveConnector(t, env, resource)
	cat := pgtest.AuthSubject(fixtures.CatalogerUserID)
	at, err := env.Endpoint.OAuthTokenWithHook(ctx, cat, liveConnector, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	hdr := http.Header{}
	hdr.Set("Authorization", "Bearer "+at)
	hdr.Set(live.ClientTokenHeader, contract.CredOwner)
	tr := &mcp.StreamableClientTransport{Endpoint: resource, HTTPClient: &http.Client{Transport: liveHeaderTransport{hdr}}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "openai-mcp", Version: "1.0"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		if strings.HasPrefix(tool.Name, "trove_execute") || strings.HasPrefix(tool.Name, "trove_propose") {
			t.Errorf("the connector with the owner's header sees %s", tool.Name)
		}
	}
	out := call(t, cs, "trove_create_candidate", map[string]any{"sale_id": fixtures.PublishedSaleID, "title": "mixed live", "idempotency_key": "attack-oauth-live-mix"})
	if s, _ := out["status"].(string); !strings.HasPrefix(s, "succeeded") {
		t.Fatalf("connector write: %v", out)
	}
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var client string
	if err := conn.QueryRow(ctx, `SELECT body -> 'client' ->> 'id' FROM trovesnap.plugin_events WHERE tool_name = 'trove_create_candidate'
		ORDER BY seq DESC LIMIT 1`).Scan(&client); err != nil {
		t.Fatal(err)
	}
	if client != c.ID {
		t.Errorf("the write names client %s, want the connector's %s", client, c.ID)
	}
	// A token naming another server, or an unbound client, naming this one:
	// 401 before any call.
	before := counts(t, env)
	for name, tok := range map[string]string{
		"another server":   env.Endpoint.OAuthToken(cat, liveConnector, []string{"https://evil.example/mcp"}, time.Hour),
		"unbound client":   env.Endpoint.OAuthToken(cat, "some-dcr-client", []string{resource}, time.Hour),
		"another member":   env.Endpoint.OAuthToken(pgtest.AuthSubject(fixtures.DemoUserID), liveConnector, []string{resource}, time.Hour),
		"seller session":   env.Endpoint.UserToken(cat, time.Hour),
		"other issuer iss": signIss(env, cat, resource),
	} {
		req, _ := http.NewRequest(http.MethodPost, resource, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"p","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("ATTEMPT %s: HTTP %d", name, resp.StatusCode)
		}
	}
	sameCounts(t, env, before, "refused connector tokens over HTTP")
	if sig := at[strings.LastIndex(at, ".")+1:]; strings.Contains(lg.logs.String(), sig) {
		t.Error("the server logged a connector's access token")
	}
}

// signIss is a correctly signed connector token whose iss is not the
// project's issuer.
func signIss(env *pgtest.Env, sub, resource string) string {
	now := time.Now()
	return env.Endpoint.SignES256(map[string]any{"iss": "https://evil.example/auth/v1", "sub": sub, "aud": resource, "role": "authenticated",
		"client_id": liveConnector, "exp": now.Add(time.Hour).Unix(), "iat": now.Unix()})
}

type liveHeaderTransport struct{ hdr http.Header }

func (h liveHeaderTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.hdr {
		r.Header[k] = v
	}
	return http.DefaultTransport.RoundTrip(r)
}

// Attempt: binding resources Go and SQL judge differently (the table test
// of the change, extended): a seller calling seller_register_client
// directly must not bind what the CLI refuses, nor the reverse.
func TestAttackOAuth_LiveBindingRuleEdgeCases(t *testing.T) {
	env := seeded(t)
	for i, res := range []string{
		"HTTPS://mcp.example.com/mcp",
		"https://MCP.EXAMPLE.COM/mcp",
		"https://mcp.example.com/mcp\u202e",
		"https://mcp.example.com/%zz",
		"https://mcp.example.com:99999/mcp",
		"https://mcp.example.com:abc/mcp",
		"https://[::1/mcp",
		"https://mcp.example.com\\@evil.example/mcp",
		"http://localhost.evil.example/mcp",
		"http://127.0.0.1.evil.example/mcp",
		"http://LOCALHOST/mcp",
		"https://mcp.example.com/mcp\u00a0",
	} {
		in := domain.NewClient{TenantID: fixtures.DemoTenantID, ActorID: fixtures.CatalogerUserID, Name: "edge", ClientType: "chatgpt",
			Groups: []string{"tenant_read"}, OAuthClientID: fmt.Sprintf("edge-%d", i), OAuthResource: res}
		goErr := domain.ValidateNewClient(in)
		st, out := rawRPC(t, env, http.Header{"Apikey": {env.Endpoint.Token("anon", time.Hour)},
			"Authorization": {"Bearer " + env.Endpoint.UserToken(pgtest.AuthSubject(fixtures.DemoUserID), time.Hour)}},
			"seller_register_client", []byte(mustJSON(map[string]any{"p_tenant_id": in.TenantID, "p_actor_id": in.ActorID, "p_name": in.Name,
				"p_client_type": in.ClientType, "p_groups": in.Groups, "p_credential_hash": fmt.Sprintf("%064x", 1000+i),
				"p_oauth_client_id": in.OAuthClientID, "p_oauth_resource": in.OAuthResource})))
		if (goErr == nil) != (st == http.StatusOK) {
			t.Errorf("LOW: resource %q: Go %v, SQL HTTP %d %v", res, goErr, st, a15Msg(out))
		}
	}
}
