package live_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/contract"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/live"
	"github.com/triunalabs/trovesnap/internal/live/pgtest"
	"github.com/triunalabs/trovesnap/internal/mcpserver"
)

const liveConnector = "4c1b9f0e-6d2a-4f3b-9a7e-2b5c8d1e0f93"

// oauthServer is `trovesnap mcp serve --http --oauth` over a live gate: its
// issuer the stand-in project's Supabase Auth, its public URL its own.
func oauthServer(t *testing.T, lg *liveGate) *httptest.Server {
	t.Helper()
	var h http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)
	h = mcpserver.NewHTTPHandler(mcpserver.HTTPOptions{Gate: lg.g, Stateless: true, ResourceURL: srv.URL,
		OAuth: &mcpserver.OAuthOptions{Issuer: lg.env.Endpoint.Issuer()}})
	return srv
}

// registerLiveConnector binds a connector for the cataloger, registered by
// the owner through the seller RPC.
func registerLiveConnector(t *testing.T, env *pgtest.Env, resource string) domain.Client {
	t.Helper()
	c, _, err := sellerAs(t, env, fixtures.DemoUserID).RegisterClient(ctx, domain.NewClient{TenantID: fixtures.DemoTenantID,
		ActorID: fixtures.CatalogerUserID, Name: "ChatGPT", ClientType: "chatgpt", Groups: []string{"tenant_read", "candidate_write"},
		OAuthClientID: liveConnector, OAuthResource: resource})
	if err != nil {
		t.Fatalf("register connector: %v", err)
	}
	return c
}

// Issue 17, part 3, live: a connector signs in with an access token the
// project's Supabase Auth issued to its OAuth client (the access token hook
// naming the server), and every call is its bound client's — decided by the
// database from the token, with no server key. A write's event, committed
// in the write's transaction, names the connector's client and actor.
func TestOAuth_LiveConnectorCallsAsItsBoundClient(t *testing.T) {
	env := seeded(t)
	lg := newLiveGate(t, env)
	srv := oauthServer(t, lg)
	c := registerLiveConnector(t, env, srv.URL+mcpserver.PathMCP)
	if c.OAuthClientID != liveConnector {
		t.Fatalf("registered %+v", c)
	}
	at, err := env.Endpoint.OAuthTokenWithHook(ctx, pgtest.AuthSubject(fixtures.CatalogerUserID), liveConnector, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	tr := &mcp.StreamableClientTransport{Endpoint: srv.URL + mcpserver.PathMCP, HTTPClient: &http.Client{Transport: bearerTransport{at}}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "openai-mcp", Version: "1.0"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	res, err := cs.ListTools(ctx, nil)
	if err != nil || len(res.Tools) == 0 {
		t.Fatalf("tools: %v %v", res, err)
	}
	for _, tool := range res.Tools {
		if strings.HasPrefix(tool.Name, "trove_execute") || strings.HasPrefix(tool.Name, "trove_propose") {
			t.Errorf("a tenant_read+candidate_write connector sees %s", tool.Name)
		}
	}
	out := call(t, cs, "trove_create_candidate", map[string]any{"sale_id": fixtures.PublishedSaleID, "title": "Connector lamp",
		"idempotency_key": "oauth-live-0001"})
	if s, _ := out["status"].(string); !strings.HasPrefix(s, "succeeded") {
		t.Fatalf("connector write: %v", out)
	}
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var client, actor string
	if err := conn.QueryRow(ctx, `SELECT body -> 'client' ->> 'id', body -> 'actor' ->> 'id' FROM trovesnap.plugin_events
		WHERE tool_name = 'trove_create_candidate' ORDER BY seq DESC LIMIT 1`).Scan(&client, &actor); err != nil {
		t.Fatal(err)
	}
	if client != c.ID || actor != fixtures.CatalogerUserID {
		t.Fatalf("the write's event names client %s actor %s, want %s %s", client, actor, c.ID, fixtures.CatalogerUserID)
	}
}

// What the database refuses, whoever sends it straight to PostgREST with a
// connector's token or a seller's session (an agent with a shell holds
// both kinds of token): each refusal changes nothing.
func TestOAuth_LiveDatabaseDecidesTheConnector(t *testing.T) {
	env := seeded(t)
	const resource = "https://mcp.example.com/mcp"
	c := registerLiveConnector(t, env, resource)
	pk := env.Endpoint.Token("anon", time.Hour)
	sub := pgtest.AuthSubject(fixtures.CatalogerUserID)
	bearer := func(tok string, extra ...string) http.Header {
		h := http.Header{"Apikey": {pk}, "Authorization": {"Bearer " + tok}}
		for i := 0; i+1 < len(extra); i += 2 {
			h.Set(extra[i], extra[i+1])
		}
		return h
	}
	good := env.Endpoint.OAuthToken(sub, liveConnector, []string{"authenticated", resource}, time.Hour)
	empty := []byte(`{}`)

	// The bound connector's token resolves to its client, whatever client
	// token header comes with it.
	st, out := rawRPC(t, env, bearer(good, live.ClientTokenHeader, contract.CredOwner), "mcp_resolve_principal", empty)
	if st != http.StatusOK || out["client"].(map[string]any)["id"] != c.ID {
		t.Fatalf("connector token + owner's header: HTTP %d %v", st, out)
	}
	// The hook adds the resource for the bound client, and only for it.
	hooked, err := env.Endpoint.OAuthTokenWithHook(ctx, sub, liveConnector, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if st, out := rawRPC(t, env, bearer(hooked), "mcp_resolve_principal", empty); st != http.StatusOK {
		t.Fatalf("hooked token: HTTP %d %v", st, out)
	}
	other, err := env.Endpoint.OAuthTokenWithHook(ctx, sub, "some-dcr-client", time.Hour)
	if err != nil {
		t.Fatal(err)
	}

	before := counts(t, env)
	for name, a := range map[string]struct {
		h    http.Header
		fn   string
		body string
		want string
	}{
		"unbound OAuth client (hook leaves aud)": {bearer(other), "mcp_list_sales", `{}`, "trovesnap:client_not_registered"},
		"unbound OAuth client naming the server": {bearer(env.Endpoint.OAuthToken(sub, "some-dcr-client", []string{resource}, time.Hour)), "mcp_list_sales", `{}`, "trovesnap:client_not_registered"},
		"bound client, no audience for it":       {bearer(env.Endpoint.OAuthToken(sub, liveConnector, []string{"authenticated"}, time.Hour)), "mcp_list_sales", `{}`, "trovesnap:client_not_registered"},
		"bound client, another server":           {bearer(env.Endpoint.OAuthToken(sub, liveConnector, []string{"https://evil.example/mcp"}, time.Hour)), "mcp_list_sales", `{}`, "trovesnap:client_not_registered"},
		"bound client, another member":           {bearer(env.Endpoint.OAuthToken(pgtest.AuthSubject(fixtures.DemoUserID), liveConnector, []string{resource}, time.Hour)), "mcp_list_sales", `{}`, "trovesnap:client_not_registered"},
		"a seller's session on an MCP RPC":       {bearer(env.Endpoint.UserToken(pgtest.AuthSubject(fixtures.DemoUserID), time.Hour), live.ClientTokenHeader, contract.CredOwner), "mcp_list_sales", `{}`, "trovesnap:forbidden"},
		"a seller's session appending an event":  {bearer(env.Endpoint.UserToken(pgtest.AuthSubject(fixtures.DemoUserID), time.Hour)), "mcp_append_event", `{"p_event":{"id":"evt_oauth_x","outcome":"success"}}`, "trovesnap:forbidden"},
		"connector on a seller RPC":              {bearer(good), "seller_list_proposals", `{"p_tenant_id":"` + fixtures.DemoTenantID + `"}`, "trovesnap:forbidden"},
		"connector registering a client":         {bearer(good), "seller_list_clients", `{}`, "trovesnap:forbidden"},
		"connector on the owner's seller RPC": {bearer(env.Endpoint.OAuthToken(pgtest.AuthSubject(fixtures.DemoUserID), liveConnector, []string{resource}, time.Hour)),
			"seller_whoami", `{}`, "trovesnap:forbidden"},
		"connector calling the hook": {bearer(good), "trovesnap_access_token_hook", `{"event":{"user_id":"` + sub + `","claims":{"client_id":"` + liveConnector + `"}}}`, ""},
		"connector with an expired token": {bearer(env.Endpoint.SignES256(map[string]any{"role": "authenticated", "sub": sub, "client_id": liveConnector,
			"aud": resource, "exp": time.Now().Add(-time.Minute).Unix()})), "mcp_list_sales", `{}`, ""},
	} {
		st, out := rawRPC(t, env, a.h, a.fn, []byte(a.body))
		a15Refused(t, name, st, out, a.want)
	}
	sameCounts(t, env, before, "refused connector and session calls")

	// A suspended connector is client_suspended; a connector has no token to
	// rotate.
	seller := sellerAs(t, env, fixtures.DemoUserID)
	if _, _, err := seller.RotateCredential(ctx, c.ID, ""); !errors.Is(err, domain.ErrTransitionInvalid) {
		t.Errorf("rotating a connector: %v", err)
	}
	if _, err := seller.SetClientStatus(ctx, c.ID, domain.ClientSuspended, ""); err != nil {
		t.Fatal(err)
	}
	st, out = rawRPC(t, env, bearer(good), "mcp_list_sales", empty)
	a15Refused(t, "suspended connector", st, out, "trovesnap:client_suspended")
}

// One table of connector bindings, checked by domain.ValidateNewClient and
// by seller_register_client: the database accepts what Go accepts and
// refuses what Go refuses.
func TestOAuth_BindingRuleIsTheSameInGoAndSQL(t *testing.T) {
	env := seeded(t)
	for i, b := range []struct{ id, res string }{
		{"abc", "https://mcp.example.com/mcp"},
		{"abc", "https://mcp.example.com:8443/mcp/"},
		{"abc", "http://localhost:8080/mcp"},
		{"abc", "http://127.0.0.1/mcp"},
		{"abc", "http://[::1]:9/mcp"},
		{"a b", "https://mcp.example.com/mcp"},
		{"", "https://mcp.example.com/mcp"},
		{strings.Repeat("x", 256), "https://mcp.example.com/mcp"},
		{"é", "https://mcp.example.com/mcp"},
		{"abc", ""},
		{"abc", "http://mcp.example.com/mcp"},
		{"abc", "https://u:p@mcp.example.com/mcp"},
		{"abc", "https://mcp.example.com/mcp?x=1"},
		{"abc", "https://mcp.example.com/mcp#f"},
		{"abc", "https://mcp example.com/mcp"},
		{"abc", "ftp://mcp.example.com/mcp"},
		{"abc", "https:///mcp"},
		{"abc", "https://mcp.example.com/" + strings.Repeat("p", 2100)},
		{"abc", "HTTPS://mcp.example.com/mcp"},
		{"abc", "https://mcp.example.com/%zz"},
		{"abc", "https://mcp.example.com/a%2Fb"},
		{"abc", "https://mcp.example.com:abc/mcp"},
		{"abc", "https://[::1/mcp"},
		{"abc", "https://[2001:db8::1]:8443/mcp"},
		{"abc", "https://mcp.example.com/m\u202ecp"},
		{"abc", "https://mcp.example.com/m\u200bcp"},
		{"abc", "https://mcp.exam\u00a0ple.com/mcp"},
	} {
		in := domain.NewClient{TenantID: fixtures.DemoTenantID, ActorID: fixtures.CatalogerUserID, Name: "binding", ClientType: "chatgpt",
			Groups: []string{"tenant_read"}, OAuthClientID: b.id, OAuthResource: b.res}
		if in.OAuthClientID == "abc" {
			in.OAuthClientID = "abc-" + string(rune('a'+i)) // one binding per OAuth client
		}
		goErr := domain.ValidateNewClient(in)
		// The database's own check, past the Go one the Seller applies first.
		st, out := rawRPC(t, env, http.Header{"Apikey": {env.Endpoint.Token("anon", time.Hour)},
			"Authorization": {"Bearer " + env.Endpoint.UserToken(pgtest.AuthSubject(fixtures.DemoUserID), time.Hour)}},
			"seller_register_client", []byte(mustJSON(map[string]any{"p_tenant_id": in.TenantID, "p_actor_id": in.ActorID, "p_name": in.Name,
				"p_client_type": in.ClientType, "p_groups": in.Groups, "p_credential_hash": fmt.Sprintf("%064x", i+1),
				"p_oauth_client_id": in.OAuthClientID, "p_oauth_resource": in.OAuthResource})))
		if (goErr == nil) != (st == http.StatusOK) {
			t.Errorf("%q %q: Go %v, SQL HTTP %d %v", b.id, b.res, goErr, st, out)
		}
	}
}

// The binding's patterns in SQL are domain's, text for text:
// oauth_client_id_ok (the column's check and the registration's) holds
// OAuthClientIDPattern, oauth_resource_ok OAuthResourcePattern and
// MaxOAuthResourceBytes.
func TestOAuth_BindingPatternsAreTheDomains(t *testing.T) {
	env := pgtest.Need(t)
	conn := superConn(t, env)
	var fn, check string
	if err := conn.QueryRow(ctx, `SELECT pg_get_functiondef('trovesnap.oauth_resource_ok(text)'::regprocedure),
		pg_get_functiondef('trovesnap.oauth_client_id_ok(text)'::regprocedure)`).Scan(&fn, &check); err != nil {
		t.Fatal(err)
	}
	sqlLit := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	if !strings.Contains(fn, "p_url ~ "+sqlLit(domain.OAuthResourcePattern)) || !strings.Contains(fn, fmt.Sprintf("octet_length(p_url) <= %d", domain.MaxOAuthResourceBytes)) {
		t.Errorf("oauth_resource_ok is not domain.OAuthResourcePattern:\n%s", fn)
	}
	if !strings.Contains(check, sqlLit(domain.OAuthClientIDPattern)) {
		t.Errorf("oauth_client_id_ok is not domain.OAuthClientIDPattern: %s", check)
	}
}
