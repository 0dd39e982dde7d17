package mcpserver_test

// OAuth attacker review (issue 17, part 3), mock mode over HTTP: an agent
// with a shell as the seller's user holds a connector's access token,
// crafts JWTs (without the issuer's key), replays and sends odd headers.
// Every test asserts the SECURE behaviour (refused and nothing changed);
// a failing test is a finding (see the review report).

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/mcpserver"
)

// rawJWT assembles a compact JWS from a header and claims (any JSON text)
// and a signature of its own.
func rawJWT(header, claims string, sig []byte) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(header)) + "." + enc([]byte(claims)) + "." + enc(sig)
}

// hmacJWT signs header.claims with HS256 and key.
func hmacJWT(t *testing.T, header map[string]any, c jwt.MapClaims, key []byte) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodHS256, c)
	for k, v := range header {
		tok.Header[k] = v
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// signWith signs c with any method and key, header fields added.
func signWith(t *testing.T, m jwt.SigningMethod, key any, header map[string]any, c jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(m, c)
	for k, v := range header {
		tok.Header[k] = v
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Attempts: algorithm confusion and header tricks with the attacker's own
// keys (it cannot sign with the issuer's), and claim shapes the issuer
// would have to sign (aud, sub, client_id of odd types and sizes). Each is
// a 401, nothing is written, and no URL a token names is fetched.
func TestAttackOAuth_AlgorithmConfusionAndHeaderTricks(t *testing.T) {
	e := newEnv(t)
	p := newIdP(t)
	srv := serveOAuthBudget(t, e, p, 10000) // many attempts from one address
	e.registerConnector(fixtures.CatalogerUserID, connectorID, srv.URL)
	resource := srv.URL + mcpserver.PathMCP
	good := func() jwt.MapClaims { return p.claims(fixtures.CatalogerUserID, connectorID, resource) }
	with := func(kv ...any) jwt.MapClaims {
		c := good()
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] == nil {
				delete(c, kv[i].(string))
			} else {
				c[kv[i].(string)] = kv[i+1]
			}
		}
		return c
	}

	// The attacker's own keys, and a JWKS of its own at a URL it controls.
	atkEC, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	atkP384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	var atkFetches atomic.Int32
	atk := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		atkFetches.Add(1)
		b, _ := atkEC.PublicKey.Bytes()
		enc := base64.RawURLEncoding.EncodeToString
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": []map[string]any{{"kty": "EC", "crv": "P-256", "kid": "ec1",
			"x": enc(b[1:33]), "y": enc(b[33:])}}})
	}))
	defer atk.Close()

	// The issuer's public keys, as an attacker reads them from the JWKS:
	// used as HMAC secrets (the classic RS256→HS256 confusion).
	ecPub, _ := p.ec.PublicKey.Bytes()
	ecDER, _ := x509.MarshalPKIXPublicKey(&p.ec.PublicKey)
	rsaDER, _ := x509.MarshalPKIXPublicKey(&p.rsa.PublicKey)
	rsaPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: rsaDER})
	ecPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: ecDER})
	jwksBody, _ := json.Marshal(map[string]any{"x": base64.RawURLEncoding.EncodeToString(ecPub[1:33])})

	valid := p.sign(t, jwt.SigningMethodES256, "ec1", good())
	parts := strings.Split(valid, ".")
	hdr, _ := base64.RawURLEncoding.DecodeString(parts[0])
	pay, _ := base64.RawURLEncoding.DecodeString(parts[1])
	sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
	enc := base64.RawURLEncoding.EncodeToString

	// An ASN.1 (DER) ES256 signature by the issuer's own key over the same
	// input: not the JWS r||s form.
	h := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	der, _ := ecdsa.SignASN1(rand.Reader, p.ec, h[:])
	// A nested JWT: the valid token as the payload of one the attacker signs.
	nested := signWith(t, jwt.SigningMethodES256, atkEC, map[string]any{"kid": "ec1", "cty": "JWT"}, jwt.MapClaims{"jwt": valid})

	cases := map[string]string{
		// alg none, with and without a signature, any case.
		"alg none, empty signature":  rawJWT(`{"alg":"none","typ":"JWT","kid":"ec1"}`, string(pay), nil),
		"alg None":                   rawJWT(`{"alg":"None","kid":"ec1"}`, string(pay), nil),
		"alg none, valid signature":  rawJWT(`{"alg":"none","kid":"ec1"}`, string(pay), sig),
		"alg empty":                  rawJWT(`{"alg":"","kid":"ec1"}`, string(pay), sig),
		"alg missing":                rawJWT(`{"kid":"ec1"}`, string(pay), sig),
		"alg as array":               rawJWT(`{"alg":["ES256"],"kid":"ec1"}`, string(pay), sig),
		"HS256 with EC point as key": hmacJWT(t, map[string]any{"kid": "ec1"}, good(), ecPub),
		"HS256 with EC PEM as key":   hmacJWT(t, map[string]any{"kid": "ec1"}, good(), ecPEM),
		"HS256 with EC DER as key":   hmacJWT(t, map[string]any{"kid": "ec1"}, good(), ecDER),
		"HS256 with RSA PEM as key":  hmacJWT(t, map[string]any{"kid": "rsa1"}, good(), rsaPEM),
		"HS256 with RSA DER as key":  hmacJWT(t, map[string]any{"kid": "rsa1"}, good(), rsaDER),
		"HS256 with the JWKS x":      hmacJWT(t, map[string]any{"kid": "ec1"}, good(), jwksBody),
		"HS256 with the hs1 key":     hmacJWT(t, map[string]any{"kid": "hs1"}, good(), []byte("a shared secret")),
		"HS256 with empty key":       hmacJWT(t, map[string]any{"kid": "ec1"}, good(), []byte{}),
		"HS256 no kid":               hmacJWT(t, nil, good(), ecPub),
		"PS256 by the issuer's RSA":  signWith(t, jwt.SigningMethodPS256, p.rsa, map[string]any{"kid": "rsa1"}, good()),
		"RS512 by the issuer's RSA":  signWith(t, jwt.SigningMethodRS512, p.rsa, map[string]any{"kid": "rsa1"}, good()),
		"ES256 naming the RSA kid":   signWith(t, jwt.SigningMethodES256, p.ec, map[string]any{"kid": "rsa1"}, good()),
		"ES384 attacker P-384":       signWith(t, jwt.SigningMethodES384, atkP384, map[string]any{"kid": "ec1"}, good()),
		"DER ES256 signature":        parts[0] + "." + parts[1] + "." + enc(der),
		"signature with padding":     valid + "==",
		"signature truncated":        parts[0] + "." + parts[1] + "." + enc(sig[:63]),
		"signature doubled":          parts[0] + "." + parts[1] + "." + enc(append(append([]byte{}, sig...), sig...)),
		"valid signature, other hdr": enc(bytes.Replace(hdr, []byte(`"ES256"`), []byte(`"ES256","x":1`), 1)) + "." + parts[1] + "." + parts[2],
		// kid tricks, the attacker's key.
		"kid path traversal":   signWith(t, jwt.SigningMethodES256, atkEC, map[string]any{"kid": "../../.well-known/ec1"}, good()),
		"kid NUL suffix":       signWith(t, jwt.SigningMethodES256, atkEC, map[string]any{"kid": "ec1\x00"}, good()),
		"kid other case":       signWith(t, jwt.SigningMethodES256, atkEC, map[string]any{"kid": "EC1"}, good()),
		"kid as number":        signWith(t, jwt.SigningMethodES256, atkEC, map[string]any{"kid": 1}, good()),
		"kid empty":            signWith(t, jwt.SigningMethodES256, atkEC, map[string]any{"kid": ""}, good()),
		"kid SQL":              signWith(t, jwt.SigningMethodES256, atkEC, map[string]any{"kid": "' OR 1=1 --"}, good()),
		"jku to attacker JWKS": signWith(t, jwt.SigningMethodES256, atkEC, map[string]any{"kid": "ec1", "jku": atk.URL}, good()),
		"x5u to attacker":      signWith(t, jwt.SigningMethodES256, atkEC, map[string]any{"kid": "ec1", "x5u": atk.URL}, good()),
		"embedded jwk":         signWith(t, jwt.SigningMethodES256, atkEC, map[string]any{"kid": "ec1", "jwk": map[string]any{"kty": "EC", "crv": "P-256", "x": enc(ecPub[1:33]), "y": enc(ecPub[33:])}}, good()),
		"nested JWT":           nested,
		// Duplicate JSON keys in a header the attacker re-encodes (the
		// signature no longer covers it).
		"duplicate alg in header": rawJWT(`{"alg":"none","alg":"ES256","kid":"ec1"}`, string(pay), sig),
		"duplicate sub in claims": rawJWT(string(hdr), strings.Replace(string(pay), `{`, `{"sub":"`+fixtures.DemoUserID+`",`, 1), sig),
		// Claim shapes only the issuer could sign: refused all the same.
		"aud as number":           p.sign(t, jwt.SigningMethodES256, "ec1", with("aud", 1)),
		"aud as object":           p.sign(t, jwt.SigningMethodES256, "ec1", with("aud", map[string]any{"0": resource})),
		"aud with a number":       p.sign(t, jwt.SigningMethodES256, "ec1", with("aud", []any{resource, 1})),
		"aud prefix of resource":  p.sign(t, jwt.SigningMethodES256, "ec1", with("aud", srv.URL)),
		"aud resource + suffix":   p.sign(t, jwt.SigningMethodES256, "ec1", with("aud", resource+"x")),
		"aud resource two slash":  p.sign(t, jwt.SigningMethodES256, "ec1", with("aud", resource+"//")),
		"aud resource upper":      p.sign(t, jwt.SigningMethodES256, "ec1", with("aud", strings.ToUpper(resource))),
		"aud public path":         p.sign(t, jwt.SigningMethodES256, "ec1", with("aud", srv.URL+"/public/mcp")),
		"sub as number":           p.sign(t, jwt.SigningMethodES256, "ec1", with("sub", 90)),
		"sub as array":            p.sign(t, jwt.SigningMethodES256, "ec1", with("sub", []string{fixtures.CatalogerUserID})),
		"sub unicode lookalike":   p.sign(t, jwt.SigningMethodES256, "ec1", with("sub", "user_９0")),
		"sub zero-width":          p.sign(t, jwt.SigningMethodES256, "ec1", with("sub", fixtures.CatalogerUserID+"\u200b")),
		"sub 300 bytes":           p.sign(t, jwt.SigningMethodES256, "ec1", with("sub", fixtures.CatalogerUserID+strings.Repeat("x", 293))),
		"sub SQL":                 p.sign(t, jwt.SigningMethodES256, "ec1", with("sub", "' OR actor_id <> '")),
		"client_id as number":     p.sign(t, jwt.SigningMethodES256, "ec1", with("client_id", 9)),
		"client_id as array":      p.sign(t, jwt.SigningMethodES256, "ec1", with("client_id", []string{connectorID})),
		"client_id empty":         p.sign(t, jwt.SigningMethodES256, "ec1", with("client_id", "")),
		"client_id unicode":       p.sign(t, jwt.SigningMethodES256, "ec1", with("client_id", connectorID+"é")),
		"client_id with space":    p.sign(t, jwt.SigningMethodES256, "ec1", with("client_id", connectorID+" ")),
		"client_id upper":         p.sign(t, jwt.SigningMethodES256, "ec1", with("client_id", strings.ToUpper(connectorID))),
		"client_id 300 bytes":     p.sign(t, jwt.SigningMethodES256, "ec1", with("client_id", connectorID+strings.Repeat("x", 264))),
		"client_id SQL":           p.sign(t, jwt.SigningMethodES256, "ec1", with("client_id", "' OR '1'='1")),
		"iss trailing slash":      p.sign(t, jwt.SigningMethodES256, "ec1", with("iss", p.issuer()+"/")),
		"iss as array":            p.sign(t, jwt.SigningMethodES256, "ec1", with("iss", []string{p.issuer()})),
		"exp far past, nbf":       p.sign(t, jwt.SigningMethodES256, "ec1", with("exp", 1, "nbf", 0)),
		"exp beyond leeway":       p.sign(t, jwt.SigningMethodES256, "ec1", with("exp", time.Now().Add(-45*time.Second).Unix())),
		"seller session + azp":    p.sign(t, jwt.SigningMethodES256, "ec1", with("client_id", nil, "azp", connectorID)),
		"nested claims object":    p.sign(t, jwt.SigningMethodES256, "ec1", jwt.MapClaims{"claims": good()}),
		"JWT with four parts":     valid + ".x",
		"JWT-looking, bad base64": "eyJ!!!.eyJ!!!.x",
	}
	before := e.digest()
	for name, tok := range cases {
		resp, body := post(t, srv.URL, map[string]string{"Authorization": "Bearer " + tok})
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("ATTEMPT %s: HTTP %d %s; want 401", name, resp.StatusCode, body)
		}
		if strings.Contains(body, "eyJ") {
			t.Errorf("ATTEMPT %s: the refusal quotes a token: %s", name, body)
		}
	}
	if !equalDigest(before, e.digest()) {
		t.Error("refused tokens changed the store")
	}
	if n := atkFetches.Load(); n != 0 {
		t.Errorf("the server fetched a URL a token named (jku/x5u) %d times", n)
	}
	// The fixture itself is good.
	if resp, body := post(t, srv.URL, map[string]string{"Authorization": "Bearer " + valid}); resp.StatusCode != http.StatusOK {
		t.Fatalf("valid token: %d %s", resp.StatusCode, body)
	}
}

// Attempt: a connector's token together with another client's token in
// x-trovesnap-client-token, or two Authorization headers: each request is
// exactly one caller, and the connector's calls are its bound client's.
func TestAttackOAuth_ConnectorTokenMixedWithClientTokens(t *testing.T) {
	e := newEnv(t)
	p := newIdP(t)
	srv := serveOAuth(t, e.gate, p)
	conn := e.registerConnector(fixtures.CatalogerUserID, connectorID, srv.URL, "tenant_read")
	owner, ownerTok := e.register(fixtures.DemoTenantID, fixtures.DemoUserID)
	at := p.sign(t, jwt.SigningMethodES256, "ec1", p.claims(fixtures.CatalogerUserID, connectorID, srv.URL+mcpserver.PathMCP))

	hdr := http.Header{}
	hdr.Set("Authorization", "Bearer "+at)
	hdr.Set("X-Trovesnap-Client-Token", ownerTok)
	hdr.Set("X-Trovesnap-Client", owner.ID)
	cs := connectWith(t, srv.URL, hdr)
	for _, name := range listNames(t, cs) {
		if strings.HasPrefix(name, "trove_create") || strings.HasPrefix(name, "trove_propose") || strings.HasPrefix(name, "trove_execute") {
			t.Errorf("a tenant_read connector with the owner's token header sees %s", name)
		}
	}
	n := len(e.allEvents())
	if env := callOn(t, cs, "trove_list_sales", map[string]any{}, nil); env.Status != "succeeded" {
		t.Fatal(env.raw)
	}
	evs := e.allEvents()
	if len(evs) != n+1 || evs[n].Client.ID != conn.ID {
		t.Fatalf("the call's event names client %s, want the connector's %s", evs[len(evs)-1].Client.ID, conn.ID)
	}
	before := e.digest()
	env := callOn(t, cs, "trove_create_candidate", map[string]any{"sale_id": fixtures.PublishedSaleID, "title": "mixed", "idempotency_key": "attack-oauth-mix-1"}, nil)
	if env.Status == "succeeded" {
		t.Errorf("a tenant_read connector with the owner's token header wrote: %s", env.raw)
	}
	assertOnlyEventsChanged(t, before, e.digest())

	// Two Authorization headers, either order: one caller (the first), never
	// the union, and never the owner when the connector came first.
	for _, order := range [][2]string{{at, ownerTok}, {ownerTok, at}} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+mcpserver.PathMCP, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Add("Authorization", "Bearer "+order[0])
		req.Header.Add("Authorization", "Bearer "+order[1])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusBadRequest {
			t.Errorf("two Authorization headers: HTTP %d", resp.StatusCode)
		}
	}
	// A comma-joined pair in one header is no bearer token.
	if resp, _ := post(t, srv.URL, map[string]string{"Authorization": "Bearer " + at + "," + ownerTok}); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("comma-joined tokens: HTTP %d", resp.StatusCode)
	}
}

// serveOAuthBudget is serveOAuth with a per-address 401 budget.
func serveOAuthBudget(t *testing.T, e *env, p *idp, failures int) *httptest.Server {
	t.Helper()
	var h http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)
	h = mcpserver.NewHTTPHandler(mcpserver.HTTPOptions{Gate: e.gate, ResourceURL: srv.URL, AuthFailuresPerMinute: failures,
		OAuth: &mcpserver.OAuthOptions{Issuer: p.issuer()}})
	return srv
}

// connectWith connects a go-sdk client sending hdr on every request.
func connectWith(t *testing.T, url string, hdr http.Header) *mcp.ClientSession {
	t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: url + mcpserver.PathMCP, HTTPClient: &http.Client{Transport: headerTransport{http.DefaultTransport, hdr}}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "chatgpt", Version: "1.0"}, nil).Connect(context.Background(), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// initSession opens a stateful session with token and returns its id.
func initSession(t *testing.T, url, token string) string {
	t.Helper()
	resp, body := post(t, url, map[string]string{"Authorization": "Bearer " + token})
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d %q %s", resp.StatusCode, id, body)
	}
	return id
}

// sessionCall sends one JSON-RPC request on a session with token.
func sessionCall(t *testing.T, url, token, session, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+mcpserver.PathMCP, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Attempt: session hijack across kinds of caller. A stateful session is
// pinned to its caller (TokenInfo.UserID): a client token cannot continue
// a connector's session, a connector cannot continue a token client's or
// another connector's, and a refused request runs nothing.
func TestAttackOAuth_SessionsArePinnedAcrossCallerKinds(t *testing.T) {
	e := newEnv(t)
	p := newIdP(t)
	srv := serveOAuth(t, e.gate, p)
	resource := srv.URL + mcpserver.PathMCP
	e.registerConnector(fixtures.CatalogerUserID, connectorID, srv.URL)
	const otherConnector = "0f0e0d0c-0b0a-4908-8706-050403020100"
	e.registerConnector(fixtures.DemoUserID, otherConnector, srv.URL)
	_, ownerTok := e.register(fixtures.DemoTenantID, fixtures.DemoUserID)
	at := p.sign(t, jwt.SigningMethodES256, "ec1", p.claims(fixtures.CatalogerUserID, connectorID, resource))
	at2 := p.sign(t, jwt.SigningMethodRS256, "rsa1", p.claims(fixtures.CatalogerUserID, connectorID, resource)) // same connector, refreshed
	other := p.sign(t, jwt.SigningMethodES256, "ec1", p.claims(fixtures.DemoUserID, otherConnector, resource))

	connSession := initSession(t, srv.URL, at)
	ownerSession := initSession(t, srv.URL, ownerTok)
	otherSession := initSession(t, srv.URL, other)
	notify := `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	for _, s := range []struct{ tok, id string }{{at, connSession}, {ownerTok, ownerSession}, {other, otherSession}} {
		sessionCall(t, srv.URL, s.tok, s.id, notify)
	}
	call := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"trove_create_candidate","arguments":{"sale_id":"` +
		fixtures.PublishedSaleID + `","title":"hijack","idempotency_key":"attack-oauth-hijack-1"}}}`
	before := e.digest()
	for name, a := range map[string]struct{ tok, id string }{
		"client token on a connector's session":      {ownerTok, connSession},
		"connector on a client token's session":      {at, ownerSession},
		"connector on another connector's session":   {at, otherSession},
		"other connector on the connector's session": {other, connSession},
		"no token on a connector's session":          {"", connSession},
	} {
		st, body := sessionCall(t, srv.URL, a.tok, a.id, call)
		if st == http.StatusOK {
			t.Errorf("ATTEMPT %s: HTTP 200 %s", name, body)
		}
	}
	if !equalDigest(before, e.digest()) {
		t.Error("hijack attempts changed the store")
	}
	// The same connector's refreshed token continues its session (by design).
	if st, body := sessionCall(t, srv.URL, at2, connSession, `{"jsonrpc":"2.0","id":8,"method":"ping"}`); st != http.StatusOK {
		t.Errorf("refreshed token on its own session: %d %s", st, body)
	}
}

// Attempt: spend the per-address 401 budget with OAuth failures, then keep
// trying: the bound applies to connector tokens like client tokens.
func TestAttackOAuth_FailedAccessTokensSpendThe401Budget(t *testing.T) {
	e := newEnv(t)
	p := newIdP(t)
	var h http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	defer srv.Close()
	h = mcpserver.NewHTTPHandler(mcpserver.HTTPOptions{Gate: e.gate, ResourceURL: srv.URL, AuthFailuresPerMinute: 3,
		OAuth: &mcpserver.OAuthOptions{Issuer: p.issuer()}})
	e.registerConnector(fixtures.CatalogerUserID, connectorID, srv.URL)
	bad := p.sign(t, jwt.SigningMethodES256, "ec1", p.claims(fixtures.CatalogerUserID, "some-dcr-client", srv.URL+mcpserver.PathMCP))
	var codes []int
	for i := 0; i < 6; i++ {
		resp, _ := post(t, srv.URL, map[string]string{"Authorization": "Bearer " + bad})
		codes = append(codes, resp.StatusCode)
	}
	if codes[5] != http.StatusTooManyRequests {
		t.Errorf("unbound-client tokens past the budget: %v", codes)
	}
}

// Attempt: while the issuer's JWKS does not answer and nothing is cached
// (the server just started), flood JWT-shaped tokens with invented kids:
// the answers are 500 (fail closed), which the 401 budget does not count,
// so every request makes the server fetch the JWKS again.
func TestAttackOAuth_JWKSDownFloodIsBounded(t *testing.T) {
	e := newEnv(t)
	p := newIdP(t)
	p.down.Store(true)
	var h http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	defer srv.Close()
	h = mcpserver.NewHTTPHandler(mcpserver.HTTPOptions{Gate: e.gate, ResourceURL: srv.URL, AuthFailuresPerMinute: 3,
		OAuth: &mcpserver.OAuthOptions{Issuer: p.issuer()}})
	atk, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	before := e.digest()
	limited := false
	for i := 0; i < 30; i++ {
		tok := signWith(t, jwt.SigningMethodES256, atk, map[string]any{"kid": fmt.Sprintf("k%d", i)}, jwt.MapClaims{"sub": "x"})
		resp, _ := post(t, srv.URL, map[string]string{"Authorization": "Bearer " + tok})
		if resp.StatusCode == http.StatusTooManyRequests {
			limited = true
		}
	}
	if n := p.fetches.Load(); n > 5 {
		t.Errorf("BROKEN: 30 unauthenticated requests made %d JWKS fetches while it was down (limited by the 401 budget: %v)", n, limited)
	}
	if !equalDigest(before, e.digest()) {
		t.Error("the flood changed the store")
	}
}

// Attempt: find a connector's access token in what the server logs or
// answers: good and bad tokens, an unbound client, a revoked binding, the
// JWKS down.
func TestAttackOAuth_NoAccessTokenInLogsOrAnswers(t *testing.T) {
	e := newEnv(t)
	p := newIdP(t)
	var logs bytes.Buffer
	var h http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h = mcpserver.NewHTTPHandler(mcpserver.HTTPOptions{Gate: e.gate, ResourceURL: srv.URL, Logger: logger,
		OAuth: &mcpserver.OAuthOptions{Issuer: p.issuer()}})
	c := e.registerConnector(fixtures.CatalogerUserID, connectorID, srv.URL)
	resource := srv.URL + mcpserver.PathMCP
	good := p.sign(t, jwt.SigningMethodES256, "ec1", p.claims(fixtures.CatalogerUserID, connectorID, resource))
	toks := []string{good,
		p.sign(t, jwt.SigningMethodES256, "ec1", p.claims(fixtures.CatalogerUserID, "some-dcr-client", resource)),
		p.sign(t, jwt.SigningMethodES256, "ec1", p.claims(fixtures.CatalogerUserID, connectorID, "https://other.example/mcp")),
		p.sign(t, jwt.SigningMethodES256, "nope", p.claims(fixtures.CatalogerUserID, connectorID, resource)),
	}
	var answers strings.Builder
	cs, err := connectHTTP(t, srv.URL, good)
	if err != nil {
		t.Fatal(err)
	}
	env := callOn(t, cs, "trove_list_sales", map[string]any{"limit": "x"}, nil)
	answers.WriteString(env.raw)
	for _, tok := range toks {
		_, body := post(t, srv.URL, map[string]string{"Authorization": "Bearer " + tok})
		answers.WriteString(body)
	}
	if _, err := e.st.SetClientStatus(context.Background(), c.ID, domain.ClientRevoked, fixtures.DemoUserID); err != nil {
		t.Fatal(err)
	}
	_, body := post(t, srv.URL, map[string]string{"Authorization": "Bearer " + good})
	answers.WriteString(body)
	p.down.Store(true)
	for _, tok := range toks {
		_, body := post(t, srv.URL, map[string]string{"Authorization": "Bearer " + tok})
		answers.WriteString(body)
	}
	for _, tok := range toks {
		sig := tok[strings.LastIndex(tok, ".")+1:]
		payload := strings.Split(tok, ".")[1]
		for where, text := range map[string]string{"logs": logs.String(), "answers": answers.String()} {
			if strings.Contains(text, sig) || strings.Contains(text, payload) {
				t.Errorf("an access token appears in the %s", where)
			}
		}
	}
	// A validly signed token's OAuth client id is no secret: the log names
	// an unbound one (the id a seller would bind), the answers never do.
	if text := answers.String(); strings.Contains(text, connectorID) || strings.Contains(text, "some-dcr-client") {
		t.Errorf("a token's client_id appears in the answers")
	}
	// The events record the call, never the token.
	for _, ev := range e.allEvents() {
		b, _ := json.Marshal(ev)
		if strings.Contains(string(b), "eyJ") {
			t.Errorf("an event holds a JWT: %s", b)
		}
	}
}

// Attempt: the live backend's "oauth-bearer " marker from outside. Over
// HTTP a bearer token cannot carry the space; over stdio (a client token
// from TROVESNAP_CLIENT_TOKEN) the marker with a connector's token is no
// caller (mock mode: the marker is nothing).
func TestAttackOAuth_MarkerPrefixFromOutside(t *testing.T) {
	e := newEnv(t)
	p := newIdP(t)
	srv := serveOAuth(t, e.gate, p)
	e.registerConnector(fixtures.CatalogerUserID, connectorID, srv.URL)
	at := p.sign(t, jwt.SigningMethodES256, "ec1", p.claims(fixtures.CatalogerUserID, connectorID, srv.URL+mcpserver.PathMCP))
	for _, v := range []string{"Bearer oauth-bearer " + at, "oauth-bearer " + at, "Bearer oauth-bearer%20" + at, "Bearer\toauth-bearer\t" + at} {
		if resp, _ := post(t, srv.URL, map[string]string{"Authorization": v}); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("Authorization %.30q…: HTTP %d", v, resp.StatusCode)
		}
	}
	before := e.digest()
	for _, cred := range []string{"oauth-bearer " + at, at} {
		cs := connect(t, e.gate, cred)
		if names := listNames(t, cs); len(names) != 0 {
			t.Errorf("stdio credential %.20q…: tools %v", cred, names)
		}
		env := callOn(t, cs, "trove_list_sales", map[string]any{}, nil)
		if env.Status == "succeeded" {
			t.Errorf("stdio credential %.20q…: a call ran", cred)
		}
	}
	assertOnlyEventsChanged(t, before, e.digest())
}

// Attempt: rebind an OAuth client: register the connector's OAuth client
// id again (for another member, after revoking its client, with another
// case), bind a member of another tenant, or get a client token for a
// connector by rotating it. Each refusal writes nothing.
func TestAttackOAuth_RebindingAndTokensForConnectors(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	c := e.registerConnector(fixtures.CatalogerUserID, connectorID, "https://mcp.example.com")
	if _, err := e.st.SetClientStatus(ctx, c.ID, domain.ClientRevoked, fixtures.DemoUserID); err != nil {
		t.Fatal(err)
	}
	before := e.digest()
	base := domain.NewClient{TenantID: fixtures.DemoTenantID, ActorID: fixtures.DemoUserID, Name: "rebind", ClientType: "chatgpt",
		Groups: []string{"tenant_read"}, OAuthClientID: connectorID, OAuthResource: "https://mcp.example.com/mcp"}
	for name, mod := range map[string]func(*domain.NewClient){
		"same id after revoke, owner": func(*domain.NewClient) {},
		"same id, other tenant's owner": func(n *domain.NewClient) {
			n.TenantID, n.ActorID = fixtures.OtherTenantID, fixtures.OtherOwnerUserID
		},
		"actor of another tenant": func(n *domain.NewClient) {
			n.OAuthClientID, n.ActorID = "fresh-client", fixtures.OtherOwnerUserID
		},
		"id with a newline": func(n *domain.NewClient) { n.OAuthClientID = "fresh\nclient" },
		"id with ESC":       func(n *domain.NewClient) { n.OAuthClientID = "fresh\x1b[2Jclient" },
		"resource with NUL": func(n *domain.NewClient) {
			n.OAuthClientID, n.OAuthResource = "fresh-3", "https://mcp.example.com/mcp\x00"
		},
		"resource javascript": func(n *domain.NewClient) {
			n.OAuthClientID, n.OAuthResource = "fresh-4", "javascript://mcp.example.com/%0aalert(1)"
		},
	} {
		in := base
		mod(&in)
		if in.TenantID == fixtures.OtherTenantID {
			in.CreatedBy = fixtures.OtherOwnerUserID
		}
		if got, _, err := e.st.RegisterClient(ctx, in); err == nil {
			t.Errorf("ATTEMPT %s: registered %s (%q for %q)", name, got.ID, got.OAuthClientID, in.OAuthResource)
		}
	}
	if _, _, err := e.st.RotateCredential(ctx, c.ID, fixtures.DemoUserID); err == nil {
		t.Error("a revoked connector got a token")
	}
	if !equalDigest(before, e.digest()) {
		t.Error("refused rebinding changed the store")
	}
	// A suspended then reinstated connector still has no token to rotate.
	d := e.registerConnector(fixtures.CatalogerUserID, "second-connector", "https://mcp.example.com")
	for _, s := range []string{domain.ClientSuspended, domain.ClientActive} {
		if _, err := e.st.SetClientStatus(ctx, d.ID, s, fixtures.DemoUserID); err != nil {
			t.Fatal(err)
		}
	}
	if _, tok, err := e.st.RotateCredential(ctx, d.ID, fixtures.DemoUserID); !errors.Is(err, domain.ErrTransitionInvalid) || tok != "" {
		t.Errorf("a reinstated connector got a token: %v", err)
	}
}

// Attempt: OAuth off, or on without a public URL: a connector's valid token
// is no caller at all (never the demo client, never a client token).
func TestAttackOAuth_TokensWithoutOAuthOrPublicURL(t *testing.T) {
	e := newEnv(t)
	p := newIdP(t)
	noOAuth := serveHTTP(t, e.gate, mcpserver.HTTPOptions{})
	var h http.Handler
	noURL := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	defer noURL.Close()
	h = mcpserver.NewHTTPHandler(mcpserver.HTTPOptions{Gate: e.gate, OAuth: &mcpserver.OAuthOptions{Issuer: p.issuer()}})
	for _, srv := range []*httptest.Server{noOAuth, noURL} {
		e.registerConnector(fixtures.CatalogerUserID, "c-"+srv.URL[len(srv.URL)-5:], srv.URL)
		at := p.sign(t, jwt.SigningMethodES256, "ec1", p.claims(fixtures.CatalogerUserID, "c-"+srv.URL[len(srv.URL)-5:], srv.URL+mcpserver.PathMCP))
		if resp, body := post(t, srv.URL, map[string]string{"Authorization": "Bearer " + at}); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s: HTTP %d %s", srv.URL, resp.StatusCode, body)
		}
	}
}

// Attempt: a binding's resource with invisible or direction-changing
// Unicode (CheckOAuthResource refuses ASCII white space only): it is shown
// to the seller ("Bound to the OAuth client … for <resource>") and becomes
// an audience the hook adds, reading as another URL than it is.
func TestAttackOAuth_ResourceWithInvisibleUnicodeIsRefused(t *testing.T) {
	e := newEnv(t)
	before := e.digest()
	for i, res := range []string{
		"https://mcp.example.com/mcp\u202e",         // right-to-left override
		"https://mcp.example.com/\u200bmcp",         // zero-width space
		"https://mcp.example.com/mcp\u2028x",        // line separator
		"https://mcp.example.com/mcp\u00a0",         // no-break space
		"https://mcp.example.com/mcp\u2066/x\u2069", // isolates
	} {
		in := domain.NewClient{TenantID: fixtures.DemoTenantID, ActorID: fixtures.DemoUserID, Name: "bidi", ClientType: "chatgpt",
			Groups: []string{"tenant_read"}, OAuthClientID: fmt.Sprintf("bidi-%d", i), OAuthResource: res}
		if c, _, err := e.st.RegisterClient(context.Background(), in); err == nil {
			t.Errorf("ATTEMPT resource %q: registered %s", res, c.ID)
		}
	}
	if !equalDigest(before, e.digest()) {
		t.Error("LOW: registrations with invisible Unicode in the resource changed the store")
	}
}
