package mcpserver_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/gate"
	"github.com/triunalabs/trovesnap/internal/mcpserver"
)

// idp is a locally generated authorization server: an EC P-256 key (kid
// "ec1") and an RSA key (kid "rsa1") published as a JWKS, shaped as
// Supabase Auth publishes its signing keys, and tokens minted with them.
type idp struct {
	srv     *httptest.Server
	ec      *ecdsa.PrivateKey
	rsa     *rsa.PrivateKey
	fetches atomic.Int32
	down    atomic.Bool
}

func newIdP(t testing.TB) *idp {
	t.Helper()
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	p := &idp{ec: ec, rsa: rk}
	b64 := base64.RawURLEncoding.EncodeToString
	ecPub, err := ec.PublicKey.Bytes() // 0x04 || x || y
	if err != nil {
		t.Fatal(err)
	}
	jwks, _ := json.Marshal(map[string]any{"keys": []map[string]any{
		{"kty": "EC", "crv": "P-256", "x": b64(ecPub[1:33]), "y": b64(ecPub[33:]), "kid": "ec1", "alg": "ES256", "use": "sig", "key_ops": []string{"verify"}},
		{"kty": "RSA", "n": b64(rk.N.Bytes()), "e": b64(big.NewInt(int64(rk.E)).Bytes()), "kid": "rsa1", "alg": "RS256", "use": "sig"},
		// An HMAC key in the set is never usable to verify (its k would be public).
		{"kty": "oct", "k": b64([]byte("a shared secret")), "kid": "hs1", "alg": "HS256"},
	}})
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/auth/v1/.well-known/jwks.json" {
			http.NotFound(w, r)
			return
		}
		p.fetches.Add(1)
		if p.down.Load() {
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(jwks)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *idp) issuer() string { return p.srv.URL + "/auth/v1" }

// claims are a Supabase OAuth access token's claims for subject and client,
// naming aud.
func (p *idp) claims(subject, client string, aud any) jwt.MapClaims {
	now := time.Now()
	c := jwt.MapClaims{"iss": p.issuer(), "sub": subject, "aud": aud, "exp": now.Add(time.Hour).Unix(), "iat": now.Unix(),
		"role": "authenticated", "aal": "aal1", "session_id": "5f2d1c2e-0000-4000-8000-000000000001", "user_id": subject}
	if client != "" {
		c["client_id"] = client
	}
	return c
}

func (p *idp) sign(t testing.TB, method jwt.SigningMethod, kid string, c jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, c)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	var key any = p.ec
	switch method.Alg() {
	case "RS256":
		key = p.rsa
	case "HS256":
		key = []byte("a shared secret")
	case "none":
		key = jwt.UnsafeAllowNoneSignatureType
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// serveOAuth serves the handler with OAuth on, its public URL the test
// server's own.
func serveOAuth(t testing.TB, g *gate.Gate, p *idp) *httptest.Server {
	t.Helper()
	var h http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)
	h = mcpserver.NewHTTPHandler(mcpserver.HTTPOptions{Gate: g, ResourceURL: srv.URL, OAuth: &mcpserver.OAuthOptions{Issuer: p.issuer()}})
	return srv
}

const connectorID = "9a8b7c6d-5e4f-3a2b-1c0d-9e8f7a6b5c4d"

// registerConnector binds a client of actor to the OAuth client id for the
// server at url.
func (e *env) registerConnector(actor, oauthClient, url string, groups ...string) domain.Client {
	e.t.Helper()
	if len(groups) == 0 {
		groups = allGroups
	}
	c, _, err := e.st.RegisterClient(context.Background(), domain.NewClient{TenantID: fixtures.DemoTenantID, ActorID: actor,
		Name: "ChatGPT", ClientType: "chatgpt", Groups: groups, OAuthClientID: oauthClient, OAuthResource: url + mcpserver.PathMCP})
	if err != nil {
		e.t.Fatalf("register connector: %v", err)
	}
	return c
}

// A connector signs in with an access token of its OAuth client for the
// seller, naming this server: it sees exactly what a token client of the
// same actor and groups sees, and its calls are its bound client's.
func TestOAuth_ConnectorActsAsItsBoundClient(t *testing.T) {
	e := newEnv(t)
	p := newIdP(t)
	srv := serveOAuth(t, e.gate, p)
	c := e.registerConnector(fixtures.CatalogerUserID, connectorID, srv.URL)
	_, tok := e.register(fixtures.DemoTenantID, fixtures.CatalogerUserID)

	for _, alg := range []struct {
		m   jwt.SigningMethod
		kid string
	}{{jwt.SigningMethodES256, "ec1"}, {jwt.SigningMethodRS256, "rsa1"}} {
		// Supabase's aud is "authenticated"; the project's hook adds the
		// server's resource (an array then).
		at := p.sign(t, alg.m, alg.kid, p.claims(fixtures.CatalogerUserID, connectorID, []string{"authenticated", srv.URL + mcpserver.PathMCP}))
		cs, err := connectHTTP(t, srv.URL, at)
		if err != nil {
			t.Fatalf("%s: %v", alg.m.Alg(), err)
		}
		got, want := listNames(t, cs), listNames(t, connect(t, e.gate, tok))
		if len(got) == 0 || !slices.Equal(got, want) {
			t.Fatalf("%s: connector sees %v, a token client of the same actor %v", alg.m.Alg(), got, want)
		}
		n := len(e.allEvents())
		if env := callOn(t, cs, "trove_list_sales", map[string]any{}, nil); env.Status != "succeeded" {
			t.Fatal(env.raw)
		}
		evs := e.allEvents()
		if len(evs) != n+1 || evs[n].Client.ID != c.ID || evs[n].Actor.ID != fixtures.CatalogerUserID {
			t.Fatalf("event of the connector's call: %+v", evs[len(evs)-1])
		}
	}
	// The client token of another client still works beside OAuth.
	if cs, err := connectHTTP(t, srv.URL, tok); err != nil || len(listNames(t, cs)) == 0 {
		t.Fatalf("a client token beside OAuth: %v", err)
	}
	// The protected-resource metadata names the authorization server.
	resp, err := http.Get(srv.URL + mcpserver.PathPRM + mcpserver.PathMCP)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var md struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&md); err != nil || md.Resource != srv.URL+mcpserver.PathMCP || !slices.Equal(md.AuthorizationServers, []string{p.issuer()}) {
		t.Fatalf("metadata %+v (%v)", md, err)
	}
}

// T12 for OAuth: every token that is not a valid access token of a bound
// connector, for this server, is a 401 naming the metadata, and nothing is
// written.
func TestOAuth_InvalidTokensAre401AndWriteNothing(t *testing.T) {
	e := newEnv(t)
	p := newIdP(t)
	srv := serveOAuth(t, e.gate, p)
	e.registerConnector(fixtures.CatalogerUserID, connectorID, srv.URL)
	resource := srv.URL + mcpserver.PathMCP
	good := func() jwt.MapClaims { return p.claims(fixtures.CatalogerUserID, connectorID, resource) }
	with := func(k string, v any) jwt.MapClaims {
		c := good()
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
		return c
	}
	es := func(c jwt.MapClaims) string { return p.sign(t, jwt.SigningMethodES256, "ec1", c) }
	other, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	forged := jwt.NewWithClaims(jwt.SigningMethodES256, good())
	forged.Header["kid"] = "ec1"
	forgedTok, _ := forged.SignedString(other)
	valid := es(good())
	parts := strings.Split(valid, ".")
	tampered := parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"`+fixtures.DemoUserID+`"}`)) + "." + parts[2]
	ecAsRSA := p.sign(t, jwt.SigningMethodRS256, "ec1", good())

	cases := map[string]string{
		"another issuer":            es(with("iss", "https://evil.example/auth/v1")),
		"another resource":          es(with("aud", "https://other.example/mcp")),
		"supabase default audience": es(with("aud", "authenticated")),
		"no audience":               es(with("aud", nil)),
		"expired":                   es(with("exp", time.Now().Add(-time.Hour).Unix())),
		"no expiry":                 es(with("exp", nil)),
		"not valid yet":             es(with("nbf", time.Now().Add(time.Hour).Unix())),
		"issued in the future":      es(with("iat", time.Now().Add(time.Hour).Unix())),
		"a seller's own session":    es(with("client_id", nil)),
		"unbound OAuth client":      es(with("client_id", "some-dcr-client")),
		"another member":            es(with("sub", fixtures.DemoUserID)),
		"no subject":                es(with("sub", nil)),
		"alg none":                  p.sign(t, jwt.SigningMethodNone, "ec1", good()),
		"HS256":                     p.sign(t, jwt.SigningMethodHS256, "hs1", good()),
		"unknown key":               forgedTok,
		"unknown kid":               p.sign(t, jwt.SigningMethodES256, "nope", good()),
		"EC key as RS256":           ecAsRSA,
		"tampered payload":          tampered,
		"oversize":                  "eyJ" + strings.Repeat("a", 9000) + ".e30.x",
	}
	before := e.digest()
	for name, tok := range cases {
		resp, body := post(t, srv.URL, map[string]string{"Authorization": "Bearer " + tok})
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "resource_metadata=") {
			t.Errorf("%s: status %d, WWW-Authenticate %q, body %s", name, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body)
		}
		if strings.Contains(body, fixtures.CatalogerUserID) || strings.Contains(body, connectorID) {
			t.Errorf("%s: the refusal quotes the token's claims: %s", name, body)
		}
	}
	if after := e.digest(); !equalDigest(before, after) {
		t.Errorf("refused tokens changed the store")
	}
	// The same valid token is accepted (the cases above fail for their own
	// reason, not the fixture's).
	if resp, body := post(t, srv.URL, map[string]string{"Authorization": "Bearer " + valid}); resp.StatusCode != http.StatusOK {
		t.Fatalf("valid token: %d %s", resp.StatusCode, body)
	}
	// Invented kids do not make the server fetch the JWKS on every request.
	if n := p.fetches.Load(); n > 3 {
		t.Errorf("the JWKS was fetched %d times for %d requests", n, len(cases)+1)
	}
}

func equalDigest(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// A suspended connector sees no tools and its calls are client_suspended
// (§23), on its next request; a revoked one is 401. The token itself stays
// valid throughout: the binding decides, afresh on each request.
func TestOAuth_SuspensionAndRevocationApplyOnTheNextRequest(t *testing.T) {
	e := newEnv(t)
	p := newIdP(t)
	srv := serveOAuth(t, e.gate, p)
	c := e.registerConnector(fixtures.CatalogerUserID, connectorID, srv.URL)
	at := p.sign(t, jwt.SigningMethodES256, "ec1", p.claims(fixtures.CatalogerUserID, connectorID, srv.URL+mcpserver.PathMCP))
	cs, err := connectHTTP(t, srv.URL, at)
	if err != nil {
		t.Fatal(err)
	}
	if len(listNames(t, cs)) == 0 {
		t.Fatal("an active connector sees no tools")
	}
	ctx := context.Background()
	if _, err := e.st.SetClientStatus(ctx, c.ID, domain.ClientSuspended, fixtures.DemoUserID); err != nil {
		t.Fatal(err)
	}
	if got := listNames(t, cs); len(got) != 0 {
		t.Fatalf("a suspended connector sees %v", got)
	}
	before := e.digestExcept("plugin_events", "client_activity", "rate_buckets")
	wantCode(t, callOn(t, cs, "trove_list_sales", map[string]any{}, nil), "blocked", "client_suspended")
	if after := e.digestExcept("plugin_events", "client_activity", "rate_buckets"); !equalDigest(before, after) {
		t.Error("a suspended connector's call changed the store")
	}
	if _, err := e.st.SetClientStatus(ctx, c.ID, domain.ClientRevoked, fixtures.DemoUserID); err != nil {
		t.Fatal(err)
	}
	if resp, _ := post(t, srv.URL, map[string]string{"Authorization": "Bearer " + at}); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a revoked connector: %d", resp.StatusCode)
	}
}

// The issuer's keys cannot be read: OAuth requests fail closed (500, no
// call runs), client tokens are unaffected.
func TestOAuth_UnreadableJWKSFailsClosed(t *testing.T) {
	e := newEnv(t)
	p := newIdP(t)
	p.down.Store(true)
	srv := serveOAuth(t, e.gate, p)
	e.registerConnector(fixtures.CatalogerUserID, connectorID, srv.URL)
	_, tok := e.register(fixtures.DemoTenantID, fixtures.CatalogerUserID)
	at := p.sign(t, jwt.SigningMethodES256, "ec1", p.claims(fixtures.CatalogerUserID, connectorID, srv.URL+mcpserver.PathMCP))
	before := e.digest()
	resp, body := post(t, srv.URL, map[string]string{"Authorization": "Bearer " + at})
	if resp.StatusCode != http.StatusInternalServerError || strings.Contains(body, "eyJ") {
		t.Fatalf("JWKS down: %d %s", resp.StatusCode, body)
	}
	if !equalDigest(before, e.digest()) {
		t.Error("a request while the JWKS is down changed the store")
	}
	if resp, _ := post(t, srv.URL, map[string]string{"Authorization": "Bearer " + tok}); resp.StatusCode != http.StatusOK {
		t.Fatalf("a client token while the JWKS is down: %d", resp.StatusCode)
	}
}

// Registration: a connector binding is checked (client id, resource), one
// OAuth client binds one client, and a connector has no token to rotate.
// Each refusal writes nothing.
func TestOAuth_ConnectorRegistration(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	c := e.registerConnector(fixtures.CatalogerUserID, connectorID, "https://mcp.example.com")
	if c.OAuthClientID != connectorID {
		t.Fatalf("registered %+v", c)
	}
	before := e.digest()
	base := domain.NewClient{TenantID: fixtures.DemoTenantID, ActorID: fixtures.DemoUserID, Name: "x", ClientType: "chatgpt", Groups: []string{"tenant_read"}}
	for name, mod := range map[string]func(*domain.NewClient){
		"taken": func(n *domain.NewClient) {
			n.OAuthClientID, n.OAuthResource = connectorID, "https://mcp.example.com/mcp"
		},
		"no resource":  func(n *domain.NewClient) { n.OAuthClientID = "other" },
		"no client id": func(n *domain.NewClient) { n.OAuthResource = "https://mcp.example.com/mcp" },
		"space in id":  func(n *domain.NewClient) { n.OAuthClientID, n.OAuthResource = "a b", "https://mcp.example.com/mcp" },
		"plain http":   func(n *domain.NewClient) { n.OAuthClientID, n.OAuthResource = "other", "http://mcp.example.com/mcp" },
		"query in url": func(n *domain.NewClient) {
			n.OAuthClientID, n.OAuthResource = "other", "https://mcp.example.com/mcp?x=1"
		},
		"credentials in url": func(n *domain.NewClient) {
			n.OAuthClientID, n.OAuthResource = "other", "https://u:p@mcp.example.com/mcp"
		},
	} {
		in := base
		mod(&in)
		_, _, err := e.st.RegisterClient(ctx, in)
		var ie *domain.InputError
		if !errors.As(err, &ie) || !strings.HasPrefix(ie.Field, "oauth_") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, _, err := e.st.RotateCredential(ctx, c.ID, fixtures.DemoUserID); !errors.Is(err, domain.ErrTransitionInvalid) {
		t.Errorf("rotating a connector: %v", err)
	}
	if !equalDigest(before, e.digest()) {
		t.Error("refused registrations changed the store")
	}
}
