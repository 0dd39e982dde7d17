package pgtest

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// The endpoint as a Supabase project with asymmetric JWT signing keys and
// the OAuth 2.1 server enabled: an ES256 (P-256) signing key whose public
// half is the project's JWKS, the OAuth server's RFC 8414 metadata, and
// OAuth access tokens minted with Supabase's claims — directly (OAuthToken)
// or through the Custom Access Token Hook (OAuthTokenWithHook). The
// PostgREST side accepts those tokens (verify) besides the HS256 ones.
//
//	GET {URL}/auth/v1/.well-known/jwks.json
//	    {"keys":[{"kty":"EC","crv":"P-256","x","y","kid","alg":"ES256","use":"sig","key_ops":["verify"]}]}
//	GET {URL}/auth/v1/.well-known/oauth-authorization-server
//	    {issuer, authorization_endpoint, token_endpoint, jwks_uri, registration_endpoint, …}
//
// Both are public (no apikey); the authorize and token endpoints they name
// are not served.

// newSigningKey generates a P-256 signing key and its key id (a random
// UUID, as Supabase's are).
func newSigningKey() (*ecdsa.PrivateKey, string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, "", err
	}
	return key, randomUUID(), nil
}

// randomUUID is a random (version 4) UUID.
func randomUUID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// Issuer is the project's Auth issuer, {URL}/auth/v1: the iss of the
// tokens OAuthToken mints and of the OAuth server's metadata.
func (e *Endpoint) Issuer() string { return e.URL + "/auth/v1" }

// JWKSURL is where the project's JWKS is served.
func (e *Endpoint) JWKSURL() string { return e.Issuer() + "/.well-known/jwks.json" }

// SignES256 signs claims, as they are, with the project's signing key
// (header {"alg":"ES256","kid":…,"typ":"JWT"}), for tests that need claims
// OAuthToken does not mint (a missing client_id, a wrong iss, …).
func (e *Endpoint) SignES256(claims map[string]any) string {
	enc := base64.RawURLEncoding
	h, _ := json.Marshal(struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
		Typ string `json:"typ"`
	}{"ES256", e.kid, "JWT"})
	c, err := json.Marshal(claims)
	if err != nil {
		panic(fmt.Sprintf("pgtest: SignES256: claims: %v", err))
	}
	msg := enc.EncodeToString(h) + "." + enc.EncodeToString(c)
	sum := sha256.Sum256([]byte(msg))
	r, s, err := ecdsa.Sign(rand.Reader, e.signKey, sum[:])
	if err != nil {
		panic(fmt.Sprintf("pgtest: SignES256: %v", err))
	}
	sig := make([]byte, 64) // JWS: r||s, 32 bytes each (RFC 7518 §3.4)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return msg + "." + enc.EncodeToString(sig)
}

// verifyES256 checks an ES256 signature (the 64-byte r||s form, never
// ASN.1 DER) over msg by the key kid names, which must be the project's.
func (e *Endpoint) verifyES256(kid, msg string, sig []byte) bool {
	if e.signKey == nil || kid == "" || kid != e.kid || len(sig) != 64 {
		return false
	}
	r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
	sum := sha256.Sum256([]byte(msg))
	return ecdsa.Verify(&e.signKey.PublicKey, sum[:], r, s)
}

// OAuthToken mints an OAuth access token as the project's OAuth 2.1 server
// issues it to clientID for the user subject: ES256, valid for ttl, with
// Supabase's claims — aud a string when aud has one value, an array
// otherwise; role authenticated, aal1, a fresh session_id, client_id.
func (e *Endpoint) OAuthToken(subject, clientID string, aud []string, ttl time.Duration) string {
	return e.SignES256(e.oauthClaims(subject, clientID, aud, ttl))
}

func (e *Endpoint) oauthClaims(subject, clientID string, aud []string, ttl time.Duration) map[string]any {
	now := time.Now()
	iat := now.Unix()
	var a any = append([]string{}, aud...)
	if len(aud) == 1 {
		a = aud[0]
	}
	return map[string]any{
		"iss": e.Issuer(), "sub": subject, "aud": a, "exp": now.Add(ttl).Unix(), "iat": iat,
		"role": "authenticated", "aal": "aal1", "amr": []any{map[string]any{"method": "password", "timestamp": iat}},
		"session_id": randomUUID(), "email": "", "phone": "", "is_anonymous": false,
		"client_id": clientID, "user_id": subject,
	}
}

// AccessTokenHook is the Custom Access Token Hook OAuthTokenWithHook calls.
const AccessTokenHook = "public.trovesnap_access_token_hook"

// HookError is the error a Custom Access Token Hook returned ({"error":
// {"http_code", "message"}}), which Supabase Auth answers the token request
// with.
type HookError struct {
	HTTPCode int
	Message  string
}

func (h *HookError) Error() string {
	return fmt.Sprintf("access token hook: HTTP %d: %s", h.HTTPCode, h.Message)
}

// OAuthTokenWithHook mints an OAuth access token as a project with the
// Custom Access Token Hook configured does: OAuthToken's claims (aud
// "authenticated") go to public.trovesnap_access_token_hook(event jsonb) as
// the event {"user_id", "claims", "authentication_method":
// "oauth_provider/authorization_code"}, run as supabase_auth_admin (search
// path auth, 2 s statement timeout, as Supabase Auth's connection) — as the
// cluster's superuser when the cluster has no such role — and the claims it
// returns are signed, once they have the claims Supabase Auth requires. An
// error the hook returns is a *HookError; a hook that fails (or does not
// exist) is the database's error.
func (e *Endpoint) OAuthTokenWithHook(ctx context.Context, subject, clientID string, ttl time.Duration) (string, error) {
	if e.superDSN == "" {
		return "", errors.New("pgtest: OAuthTokenWithHook: the endpoint has no database")
	}
	event, err := json.Marshal(map[string]any{"user_id": subject, "claims": e.oauthClaims(subject, clientID, []string{"authenticated"}, ttl),
		"authentication_method": "oauth_provider/authorization_code"})
	if err != nil {
		return "", err
	}
	conn, err := pgx.Connect(ctx, e.superDSN)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	var out *string
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		var authAdmin bool
		if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'supabase_auth_admin')").Scan(&authAdmin); err != nil {
			return err
		}
		if authAdmin {
			if _, err := tx.Exec(ctx, "SET LOCAL ROLE supabase_auth_admin; SET LOCAL search_path = auth"); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, "SET LOCAL statement_timeout = '2s'"); err != nil {
			return err
		}
		return tx.QueryRow(ctx, "SELECT "+AccessTokenHook+"($1::jsonb)::text", string(event)).Scan(&out)
	})
	if err != nil {
		return "", err
	}
	if out == nil {
		return "", errors.New("access token hook: returned NULL")
	}
	claims, err := hookClaims([]byte(*out))
	if err != nil {
		return "", err
	}
	return e.SignES256(claims), nil
}

// hookClaims reads a Custom Access Token Hook's output: its error, or its
// claims, which must have every claim Supabase Auth requires of an access
// token (iss, aud, exp, iat, sub, role, aal, session_id, email, phone,
// is_anonymous) with its type. Numbers stay as the hook wrote them.
func hookClaims(out []byte) (map[string]any, error) {
	var o struct {
		Claims map[string]any `json:"claims"`
		Error  *struct {
			HTTPCode int    `json:"http_code"`
			Message  string `json:"message"`
		} `json:"error"`
	}
	d := json.NewDecoder(bytes.NewReader(out))
	d.UseNumber()
	if err := d.Decode(&o); err != nil {
		return nil, fmt.Errorf("access token hook: output is not a JSON object: %v", err)
	}
	if o.Error != nil && (o.Error.HTTPCode != 0 || o.Error.Message != "") {
		return nil, &HookError{HTTPCode: o.Error.HTTPCode, Message: o.Error.Message}
	}
	if o.Claims == nil {
		return nil, errors.New("access token hook: output has no claims")
	}
	isInt := func(v any) bool {
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		_, err := strconv.ParseInt(n.String(), 10, 64)
		return err == nil
	}
	isString := func(v any) bool { _, ok := v.(string); return ok }
	isAud := func(v any) bool {
		if isString(v) {
			return true
		}
		l, ok := v.([]any)
		for _, x := range l {
			ok = ok && isString(x)
		}
		return ok
	}
	isBool := func(v any) bool { _, ok := v.(bool); return ok }
	for _, req := range []struct {
		name string
		ok   func(any) bool
	}{{"iss", isString}, {"aud", isAud}, {"exp", isInt}, {"iat", isInt}, {"sub", isString}, {"role", isString},
		{"aal", isString}, {"session_id", isString}, {"email", isString}, {"phone", isString}, {"is_anonymous", isBool}} {
		v, present := o.Claims[req.name]
		if !present || !req.ok(v) {
			return nil, fmt.Errorf("access token hook: output claims do not conform to the expected schema: %s missing or of the wrong type", req.name)
		}
	}
	return o.Claims, nil
}

// jwk is the JSON Web Key of the signing key, as Supabase serves it.
func (e *Endpoint) jwk() map[string]any {
	pub, err := e.signKey.PublicKey.Bytes() // 0x04 || X || Y
	if err != nil || len(pub) != 65 {
		panic(fmt.Sprintf("pgtest: the signing key: %v", err))
	}
	enc := base64.RawURLEncoding
	return map[string]any{"kty": "EC", "crv": "P-256", "x": enc.EncodeToString(pub[1:33]), "y": enc.EncodeToString(pub[33:65]),
		"kid": e.kid, "alg": "ES256", "use": "sig", "key_ops": []string{"verify"}}
}

func writeDiscovery(w http.ResponseWriter, v any) {
	body, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=600")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

func (e *Endpoint) serveJWKS(w http.ResponseWriter) {
	writeDiscovery(w, map[string]any{"keys": []any{e.jwk()}})
}

func (e *Endpoint) serveOAuthMetadata(w http.ResponseWriter) {
	iss := e.Issuer()
	writeDiscovery(w, map[string]any{
		"issuer":                                iss,
		"authorization_endpoint":                iss + "/oauth/authorize",
		"token_endpoint":                        iss + "/oauth/token",
		"jwks_uri":                              e.JWKSURL(),
		"registration_endpoint":                 iss + "/oauth/clients/register",
		"response_types_supported":              []string{"code"},
		"grant_types_supported":                 []string{"authorization_code", "refresh_token"},
		"code_challenge_methods_supported":      []string{"S256"},
		"token_endpoint_auth_methods_supported": []string{"none", "client_secret_basic", "client_secret_post"},
	})
}
