package pgtest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"
)

// These tests need no PostgreSQL: the endpoint's keys, verify and the
// Auth stand-in's discovery documents never touch the database.

// keyEndpoint is an endpoint without a database, served (the auth
// stand-in and the PostgREST side's JWT check answer without one).
func keyEndpoint(t *testing.T) *Endpoint {
	t.Helper()
	e, err := newEndpoint()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(e.serve))
	t.Cleanup(srv.Close)
	e.URL = srv.URL
	return e
}

var b64 = base64.RawURLEncoding

func jwtParts(t *testing.T, tok string) (hdr, claims map[string]any, sig []byte) {
	t.Helper()
	p := strings.Split(tok, ".")
	if len(p) != 3 {
		t.Fatalf("not a JWS: %q", tok)
	}
	hb, err1 := b64.DecodeString(p[0])
	cb, err2 := b64.DecodeString(p[1])
	sig, err3 := b64.DecodeString(p[2])
	if err := errors.Join(err1, err2, err3, json.Unmarshal(hb, &hdr), json.Unmarshal(cb, &claims)); err != nil {
		t.Fatalf("%q: %v", tok, err)
	}
	return hdr, claims, sig
}

// jws signs header.claims with sign (which gets the signing input).
func jws(t *testing.T, hdr, claims any, sign func(msg []byte) []byte) string {
	t.Helper()
	h, err1 := json.Marshal(hdr)
	c, err2 := json.Marshal(claims)
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	msg := b64.EncodeToString(h) + "." + b64.EncodeToString(c)
	return msg + "." + b64.EncodeToString(sign([]byte(msg)))
}

func es256(key *ecdsa.PrivateKey) func([]byte) []byte {
	return func(msg []byte) []byte {
		sum := sha256.Sum256(msg)
		r, s, err := ecdsa.Sign(rand.Reader, key, sum[:])
		if err != nil {
			panic(err)
		}
		sig := make([]byte, 64)
		r.FillBytes(sig[:32])
		s.FillBytes(sig[32:])
		return sig
	}
}

func hs256(secret []byte) func([]byte) []byte {
	return func(msg []byte) []byte {
		m := hmac.New(sha256.New, secret)
		m.Write(msg)
		return m.Sum(nil)
	}
}

// rpcStatus posts to the PostgREST side with tok as the bearer token; a
// token refused never reaches the database.
func rpcStatus(t *testing.T, e *Endpoint, tok string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.URL+"/rest/v1/rpc/anything", strings.NewReader("{}"))
	req.Header.Set("apikey", "k")
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body
}

func TestOAuthToken_RoundTrips(t *testing.T) {
	e := keyEndpoint(t)
	tok := e.OAuthToken("8ccaa7af-909f-44e7-84cb-67cdccb56be6", "client-1", []string{"https://mcp.example/mcp"}, time.Hour)
	hdr, _, sig := jwtParts(t, tok)
	if !reflect.DeepEqual(hdr, map[string]any{"alg": "ES256", "kid": e.kid, "typ": "JWT"}) || len(sig) != 64 {
		t.Fatalf("header %v, signature of %d bytes", hdr, len(sig))
	}
	claims, err := e.verify(tok)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	iat := claims["iat"].(float64)
	if claims["exp"].(float64)-iat != 3600 || time.Now().Unix()-int64(iat) > 5 {
		t.Errorf("iat %v exp %v", claims["iat"], claims["exp"])
	}
	sid, _ := claims["session_id"].(string)
	if len(sid) != 36 || strings.Count(sid, "-") != 4 {
		t.Errorf("session_id %q", sid)
	}
	for _, k := range []string{"iat", "exp", "session_id"} {
		delete(claims, k)
	}
	want := map[string]any{"iss": e.URL + "/auth/v1", "sub": "8ccaa7af-909f-44e7-84cb-67cdccb56be6", "aud": "https://mcp.example/mcp",
		"role": "authenticated", "aal": "aal1", "amr": []any{map[string]any{"method": "password", "timestamp": iat}},
		"email": "", "phone": "", "is_anonymous": false, "client_id": "client-1", "user_id": "8ccaa7af-909f-44e7-84cb-67cdccb56be6"}
	if !reflect.DeepEqual(claims, want) {
		t.Errorf("claims\n got %v\nwant %v", claims, want)
	}
	if e.Issuer() != e.URL+"/auth/v1" || e.JWKSURL() != e.URL+"/auth/v1/.well-known/jwks.json" {
		t.Errorf("Issuer %q JWKSURL %q", e.Issuer(), e.JWKSURL())
	}

	// aud: an array unless it has one value.
	for _, aud := range [][]string{{"a", "b"}, {}} {
		c, err := e.verify(e.OAuthToken("s", "c", aud, time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := json.Marshal(c["aud"]); string(got) != map[int]string{0: `[]`, 2: `["a","b"]`}[len(aud)] {
			t.Errorf("aud %v: %s", aud, got)
		}
	}
	// Two tokens never share a session.
	_, c1, _ := jwtParts(t, e.OAuthToken("s", "c", nil, time.Hour))
	_, c2, _ := jwtParts(t, e.OAuthToken("s", "c", nil, time.Hour))
	if c1["session_id"] == c2["session_id"] {
		t.Error("two tokens, one session_id")
	}

	// SignES256 signs any claims; the HS256 tokens still verify.
	if c, err := e.verify(e.SignES256(map[string]any{"role": "authenticated", "iss": "elsewhere"})); err != nil || c["iss"] != "elsewhere" {
		t.Errorf("SignES256: %v %v", c, err)
	}
	for _, tok := range []string{e.Token("anon", time.Hour), e.UserToken("s", time.Hour)} {
		if _, err := e.verify(tok); err != nil {
			t.Errorf("HS256 %q: %v", tok, err)
		}
	}
}

func TestVerify_RefusesForgedES256(t *testing.T) {
	e := keyEndpoint(t)
	claims := e.oauthClaims("s", "c", []string{"authenticated"}, time.Hour)
	good := e.SignES256(claims)
	p := strings.Split(good, ".")
	es := map[string]any{"alg": "ES256", "kid": e.kid, "typ": "JWT"}
	pub, err := e.signKey.PublicKey.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	jwks, _ := json.Marshal(map[string]any{"keys": []any{e.jwk()}})
	other, _, err := newSigningKey()
	if err != nil {
		t.Fatal(err)
	}
	tampered := map[string]any{}
	for k, v := range claims {
		tampered[k] = v
	}
	tampered["role"] = "service_role"
	expired := map[string]any{}
	for k, v := range claims {
		expired[k] = v
	}
	expired["exp"] = time.Now().Add(-time.Second).Unix()
	with := func(h map[string]any, k string, v any) map[string]any {
		out := map[string]any{}
		for k, v := range h {
			out[k] = v
		}
		if v == nil {
			delete(out, k)
		} else {
			out[k] = v
		}
		return out
	}
	der := func(msg []byte) []byte {
		sum := sha256.Sum256(msg)
		sig, err := ecdsa.SignASN1(rand.Reader, e.signKey, sum[:])
		if err != nil {
			t.Fatal(err)
		}
		return sig
	}
	cases := map[string]string{
		"tampered payload":                 p[0] + "." + b64.EncodeToString(mustJSON(t, tampered)) + "." + p[2],
		"signature of another token":       p[0] + "." + p[1] + "." + strings.Split(e.SignES256(tampered), ".")[2],
		"alg none, no signature":           b64.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + p[1] + ".",
		"alg none, the ES256 signature":    b64.EncodeToString([]byte(`{"alg":"none","kid":"`+e.kid+`"}`)) + "." + p[1] + "." + p[2],
		"HS256 keyed by the public point":  jws(t, with(es, "alg", "HS256"), claims, hs256(pub)),
		"HS256 keyed by x||y":              jws(t, with(es, "alg", "HS256"), claims, hs256(pub[1:])),
		"HS256 keyed by the JWKS":          jws(t, with(es, "alg", "HS256"), claims, hs256(jwks)),
		"HS256 with a wrong secret":        jws(t, map[string]any{"alg": "HS256", "typ": "JWT"}, claims, hs256([]byte("not the secret"))),
		"RS256 header, ES256 signature":    jws(t, with(es, "alg", "RS256"), claims, es256(e.signKey)),
		"ES384 header, ES256 signature":    jws(t, with(es, "alg", "ES384"), claims, es256(e.signKey)),
		"lower-case alg":                   jws(t, with(es, "alg", "es256"), claims, es256(e.signKey)),
		"unknown kid":                      jws(t, with(es, "kid", randomUUID()), claims, es256(e.signKey)),
		"no kid":                           jws(t, with(es, "kid", nil), claims, es256(e.signKey)),
		"another key with the project kid": jws(t, es, claims, es256(other)),
		"DER signature":                    jws(t, es, claims, der),
		"signature one byte short":         jws(t, es, claims, func(m []byte) []byte { return es256(e.signKey)(m)[:63] }),
		"signature zero":                   jws(t, es, claims, func([]byte) []byte { return make([]byte, 64) }),
		"expired":                          jws(t, es, expired, es256(e.signKey)),
		"expired (SignES256)":              e.SignES256(expired),
	}
	if _, err := e.verify(good); err != nil {
		t.Fatalf("the good token: %v", err)
	}
	if jws(t, es, claims, der) == "" || len(der([]byte("x"))) == 64 {
		t.Fatal("a DER signature of 64 bytes would not test the form")
	}
	for name, tok := range cases {
		if c, err := e.verify(tok); err == nil {
			t.Errorf("%s: verified: %v", name, c)
		}
		if status, body := rpcStatus(t, e, tok); status != http.StatusUnauthorized || body["code"] != "PGRST301" {
			t.Errorf("%s: HTTP %d %v, want 401 PGRST301", name, status, body)
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestJWKS_VerifiesTheTokens(t *testing.T) {
	e := keyEndpoint(t)
	resp, err := http.Get(e.JWKSURL()) // no apikey: a public document
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" ||
		resp.Header.Get("Cache-Control") != "public, max-age=600" {
		t.Fatalf("HTTP %d %v", resp.StatusCode, resp.Header)
	}
	var set struct {
		Keys []map[string]any `json:"keys"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&set); err != nil || len(set.Keys) != 1 {
		t.Fatalf("%v %v", set, err)
	}
	k := set.Keys[0]
	x, errX := b64.DecodeString(k["x"].(string))
	y, errY := b64.DecodeString(k["y"].(string))
	if errX != nil || errY != nil || len(x) != 32 || len(y) != 32 {
		t.Fatalf("x %q y %q: %v %v", k["x"], k["y"], errX, errY)
	}
	delete(k, "x")
	delete(k, "y")
	if want := map[string]any{"kty": "EC", "crv": "P-256", "kid": e.kid, "alg": "ES256", "use": "sig", "key_ops": []any{"verify"}}; !reflect.DeepEqual(k, want) {
		t.Fatalf("key %v, want %v (and x, y)", k, want)
	}
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
	if err != nil {
		t.Fatal(err)
	}

	// A verifier holding only the JWKS accepts the token and its kid.
	tok := e.OAuthToken("s", "c", []string{"authenticated"}, time.Hour)
	hdr, _, sig := jwtParts(t, tok)
	if hdr["kid"] != e.kid {
		t.Fatalf("kid %v, JWKS %v", hdr["kid"], e.kid)
	}
	msg := tok[:strings.LastIndex(tok, ".")]
	sum := sha256.Sum256([]byte(msg))
	if !ecdsa.Verify(pub, sum[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		t.Fatal("the JWKS key does not verify the token")
	}
	other := keyEndpoint(t)
	_, _, sig2 := jwtParts(t, other.OAuthToken("s", "c", nil, time.Hour))
	if ecdsa.Verify(pub, sum[:], new(big.Int).SetBytes(sig2[:32]), new(big.Int).SetBytes(sig2[32:])) || other.kid == e.kid {
		t.Fatal("two endpoints share a key")
	}
}

func TestOAuthServerMetadata(t *testing.T) {
	e := keyEndpoint(t)
	resp, err := http.Get(e.URL + "/auth/v1/.well-known/oauth-authorization-server")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("HTTP %d %v: %v", resp.StatusCode, resp.Header, err)
	}
	iss := e.URL + "/auth/v1"
	want := map[string]any{
		"issuer":                                iss,
		"authorization_endpoint":                iss + "/oauth/authorize",
		"token_endpoint":                        iss + "/oauth/token",
		"jwks_uri":                              iss + "/.well-known/jwks.json",
		"registration_endpoint":                 iss + "/oauth/clients/register",
		"response_types_supported":              []any{"code"},
		"grant_types_supported":                 []any{"authorization_code", "refresh_token"},
		"code_challenge_methods_supported":      []any{"S256"},
		"token_endpoint_auth_methods_supported": []any{"none", "client_secret_basic", "client_secret_post"},
	}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("metadata\n got %v\nwant %v", m, want)
	}
}

// Only the two discovery GETs are public: the rest of Auth and PostgREST
// still need the apikey.
func TestDiscovery_OnlyTheGETsArePublic(t *testing.T) {
	e := keyEndpoint(t)
	for _, c := range []struct{ method, path string }{
		{http.MethodPost, "/auth/v1/.well-known/jwks.json"},
		{http.MethodPost, "/auth/v1/.well-known/oauth-authorization-server"},
		{http.MethodPost, "/auth/v1/token?grant_type=password"},
		{http.MethodGet, "/auth/v1/.well-known/openid-configuration"},
		{http.MethodGet, "/auth/v1/oauth/authorize"},
		{http.MethodPost, "/rest/v1/rpc/anything"},
	} {
		req, _ := http.NewRequest(c.method, e.URL+c.path, strings.NewReader("{}"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s %s without apikey: HTTP %d", c.method, c.path, resp.StatusCode)
		}
	}
}

func TestHookClaims(t *testing.T) {
	e := keyEndpoint(t)
	claims := mustJSON(t, e.oauthClaims("s", "c", []string{"authenticated"}, time.Hour))

	// The hook's claims are signed as they come, numbers as written.
	got, err := hookClaims([]byte(`{"claims":` + strings.Replace(string(claims), `"aal":"aal1"`, `"aal":"aal1","trovesnap_user":"u1"`, 1) + `}`))
	if err != nil {
		t.Fatal(err)
	}
	c, err := e.verify(e.SignES256(got))
	if err != nil || c["trovesnap_user"] != "u1" || c["client_id"] != "c" {
		t.Fatalf("%v %v", c, err)
	}
	var orig map[string]any
	_ = json.Unmarshal(claims, &orig)
	if c["exp"] != orig["exp"] || c["iat"] != orig["iat"] {
		t.Errorf("exp/iat %v %v, hook had %v %v", c["exp"], c["iat"], orig["exp"], orig["iat"])
	}

	// The hook's error comes back as it.
	_, err = hookClaims([]byte(`{"error":{"http_code":403,"message":"client not allowed"}}`))
	var he *HookError
	if !errors.As(err, &he) || he.HTTPCode != 403 || he.Message != "client not allowed" {
		t.Errorf("error object: %v", err)
	}

	// Claims Supabase Auth requires cannot go.
	for _, drop := range []string{"iss", "aud", "exp", "iat", "sub", "role", "aal", "session_id", "email", "phone", "is_anonymous"} {
		var m map[string]any
		_ = json.Unmarshal(claims, &m)
		delete(m, drop)
		if _, err := hookClaims(mustJSON(t, map[string]any{"claims": m})); err == nil {
			t.Errorf("without %s: accepted", drop)
		}
	}
	for _, bad := range []string{`null`, `[]`, `{}`, `{"claims":null}`, `{"claims":{"exp":"soon"}}`} {
		if _, err := hookClaims([]byte(bad)); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
	var m map[string]any
	_ = json.Unmarshal(claims, &m)
	m["exp"] = 1.5
	if _, err := hookClaims(mustJSON(t, map[string]any{"claims": m})); err == nil {
		t.Error("a fractional exp: accepted")
	}

	// Without a database there is no hook to call.
	if _, err := e.OAuthTokenWithHook(context.Background(), "s", "c", time.Hour); err == nil {
		t.Error("OAuthTokenWithHook without a database succeeded")
	}
}
