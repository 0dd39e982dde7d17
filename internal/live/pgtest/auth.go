package pgtest

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// The stand-in for Supabase Auth (GoTrue) at {URL}/auth/v1: the three
// endpoints a seller's session uses, answering with GoTrue's documented
// shapes. It is the outer edge of the live tests — a test registers users
// (AddAuthUser), the stand-in signs them in with access tokens minted by
// UserToken(AuthSubject(userID)) (plus GoTrue's session claims), so the PostgREST stand-in and the seller
// RPCs accept them exactly as a real project would.
//
//	POST /auth/v1/token?grant_type=password      {"email","password"}
//	POST /auth/v1/token?grant_type=refresh_token {"refresh_token"}
//	    200 {access_token, token_type:"bearer", expires_in, expires_at,
//	         refresh_token, user:{id, aud, role, email, …}}
//	    400 {"error":"invalid_grant","error_description":"Invalid login credentials"}
//	    400 {"code":400,"error_code":"refresh_token_not_found"|"refresh_token_already_used","msg":…}
//	POST /auth/v1/logout?scope=global|local|others  (Bearer access token)
//	    204; 401 {"code":401,"error_code":"bad_jwt"|"no_authorization","msg":…}
//
//	GET /auth/v1/.well-known/jwks.json, /.well-known/oauth-authorization-server
//	    the signing key's JWKS and the OAuth 2.1 server's metadata (jwks.go)
//
// Refresh tokens rotate as GoTrue's do: each is single-use, and a used or
// revoked one is refused. Every request but the two discovery documents
// needs an apikey header, as the API gateway requires.

// authUser is a registered test user.
type authUser struct {
	email, password, subject string
	created                  time.Time
}

// authSession is one signed-in session: its current refresh token and the
// access tokens minted for it.
type authSession struct {
	id, subject, email string
	refresh            string
	revoked            bool
}

type authState struct {
	mu       sync.Mutex
	ttl      time.Duration
	users    map[string]*authUser    // by lower-case email
	sessions map[string]*authSession // by id
	refresh  map[string]string       // current refresh token → session id
	used     map[string]bool         // rotated refresh tokens
	access   map[string]string       // access token → session id
	requests map[string]int          // "METHOD path" → count, for tests
	issued   []string                // every token minted, for tests (AuthTokens)
}

// auths holds each endpoint's Auth state (kept apart from Endpoint so the
// PostgREST side stays as it is).
var auths sync.Map // *Endpoint → *authState

func (e *Endpoint) auth() *authState {
	if v, ok := auths.Load(e); ok {
		return v.(*authState)
	}
	v, _ := auths.LoadOrStore(e, &authState{ttl: time.Hour, users: map[string]*authUser{}, sessions: map[string]*authSession{},
		refresh: map[string]string{}, used: map[string]bool{}, access: map[string]string{}, requests: map[string]int{}})
	return v.(*authState)
}

// AddAuthUser registers (or replaces) a Supabase Auth user of the stand-in:
// it signs in with email and password as the auth subject of the dataset
// user userID (AuthSubject), which the development seed links to it. A
// userID the dataset does not have gives an account linked to no user.
func (e *Endpoint) AddAuthUser(email, password, userID string) {
	a := e.auth()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.users[strings.ToLower(email)] = &authUser{email: email, password: password, subject: AuthSubject(userID), created: time.Now().UTC()}
}

// SetAuthTokenTTL sets the lifetime of the access tokens the stand-in mints
// (default an hour, as GoTrue's default JWT expiry).
func (e *Endpoint) SetAuthTokenTTL(d time.Duration) {
	a := e.auth()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ttl = d
}

// AuthRequests counts the requests the stand-in answered per "METHOD
// /path" (without the query).
func (e *Endpoint) AuthRequests() map[string]int {
	a := e.auth()
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string]int, len(a.requests))
	for k, v := range a.requests {
		out[k] = v
	}
	return out
}

// AuthTokens are every access and refresh token the stand-in has issued
// (current, rotated and revoked), for tests that look for them where they
// must not be: files, output, errors.
func (e *Endpoint) AuthTokens() []string {
	a := e.auth()
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.issued...)
}

// oauthError is GoTrue's OAuth-shaped error (token grants).
func oauthError(w http.ResponseWriter, status int, code, desc string) {
	b, _ := json.Marshal(map[string]string{"error": code, "error_description": desc})
	writeJSON(w, status, b)
}

// httpError is GoTrue's HTTP error shape.
func httpError(w http.ResponseWriter, status int, code, msg string) {
	b, _ := json.Marshal(map[string]any{"code": status, "error_code": code, "msg": msg})
	writeJSON(w, status, b)
}

func randomToken(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// serveAuth answers /auth/v1/*.
func (e *Endpoint) serveAuth(w http.ResponseWriter, r *http.Request) {
	a := e.auth()
	path := strings.TrimPrefix(r.URL.Path, "/auth/v1")
	a.mu.Lock()
	a.requests[r.Method+" /auth/v1"+path]++
	a.mu.Unlock()
	if r.Method == http.MethodGet {
		switch path { // the public discovery documents need no apikey (jwks.go)
		case "/.well-known/jwks.json":
			e.serveJWKS(w)
			return
		case "/.well-known/oauth-authorization-server":
			e.serveOAuthMetadata(w)
			return
		}
	}
	if r.Header.Get("apikey") == "" {
		b, _ := json.Marshal(map[string]string{"message": "No API key found in request",
			"hint": "No `apikey` request header or url param was found."})
		writeJSON(w, http.StatusUnauthorized, b)
		return
	}
	if r.Method != http.MethodPost {
		httpError(w, http.StatusMethodNotAllowed, "method_not_allowed", "Method not allowed")
		return
	}
	switch path {
	case "/token":
		e.authToken(w, r, a)
	case "/logout":
		e.authLogout(w, r, a)
	default:
		httpError(w, http.StatusNotFound, "not_found", "Not Found")
	}
}

func (e *Endpoint) authToken(w http.ResponseWriter, r *http.Request, a *authState) {
	var in struct {
		Email        string `json:"email"`
		Password     string `json:"password"`
		RefreshToken string `json:"refresh_token"`
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err := json.Unmarshal(body, &in); err != nil {
		httpError(w, http.StatusBadRequest, "bad_json", "Could not parse request body as JSON")
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var s *authSession
	switch r.URL.Query().Get("grant_type") {
	case "password":
		if in.Email == "" || in.Password == "" {
			oauthError(w, http.StatusBadRequest, "invalid_grant", "missing email or phone")
			return
		}
		u, ok := a.users[strings.ToLower(in.Email)]
		if !ok || u.password != in.Password {
			oauthError(w, http.StatusBadRequest, "invalid_grant", "Invalid login credentials")
			return
		}
		s = &authSession{id: randomToken(12), subject: u.subject, email: u.email}
		a.sessions[s.id] = s
	case "refresh_token":
		if in.RefreshToken == "" {
			httpError(w, http.StatusBadRequest, "validation_failed", "Refresh Token is required")
			return
		}
		if a.used[in.RefreshToken] {
			httpError(w, http.StatusBadRequest, "refresh_token_already_used", "Invalid Refresh Token: Already Used")
			return
		}
		id, ok := a.refresh[in.RefreshToken]
		if !ok || a.sessions[id] == nil || a.sessions[id].revoked {
			httpError(w, http.StatusBadRequest, "refresh_token_not_found", "Invalid Refresh Token: Refresh Token Not Found")
			return
		}
		s = a.sessions[id]
		delete(a.refresh, in.RefreshToken)
		a.used[in.RefreshToken] = true
	default:
		httpError(w, http.StatusBadRequest, "validation_failed", "unsupported_grant_type")
		return
	}
	s.refresh = randomToken(16)
	a.refresh[s.refresh] = s.id
	access := e.sessionToken(s, a.ttl)
	a.access[access] = s.id
	a.issued = append(a.issued, s.refresh, access)
	now := time.Now().UTC()
	out, _ := json.Marshal(map[string]any{
		"access_token":  access,
		"token_type":    "bearer",
		"expires_in":    int64(a.ttl / time.Second),
		"expires_at":    now.Add(a.ttl).Unix(),
		"refresh_token": s.refresh,
		"user": map[string]any{
			"id": s.subject, "aud": "authenticated", "role": "authenticated", "email": s.email,
			"email_confirmed_at": now.Format(time.RFC3339Nano), "phone": "", "confirmed_at": now.Format(time.RFC3339Nano),
			"last_sign_in_at": now.Format(time.RFC3339Nano),
			"app_metadata":    map[string]any{"provider": "email", "providers": []string{"email"}},
			"user_metadata":   map[string]any{}, "identities": []any{},
			"created_at": now.Format(time.RFC3339Nano), "updated_at": now.Format(time.RFC3339Nano), "is_anonymous": false,
		},
	})
	writeJSON(w, http.StatusOK, out)
}

// sessionToken is UserToken's access token with the claims GoTrue adds
// for a session (session_id, email): two sessions of one user never share
// a token.
func (e *Endpoint) sessionToken(s *authSession, ttl time.Duration) string {
	now := time.Now()
	return e.sign(map[string]any{"role": "authenticated", "sub": s.subject, "aud": "authenticated", "iss": "trovesnap-pgtest",
		"iat": now.Unix(), "exp": now.Add(ttl).Unix(), "session_id": s.id, "email": s.email})
}

func (e *Endpoint) authLogout(w http.ResponseWriter, r *http.Request, a *authState) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || tok == "" {
		httpError(w, http.StatusUnauthorized, "no_authorization", "This endpoint requires a Bearer token")
		return
	}
	claims, err := e.verify(tok)
	if err != nil || claims["role"] != "authenticated" {
		httpError(w, http.StatusUnauthorized, "bad_jwt", "invalid JWT: unable to parse or verify signature")
		return
	}
	sub, _ := claims["sub"].(string)
	a.mu.Lock()
	defer a.mu.Unlock()
	this := a.access[tok]
	scope := r.URL.Query().Get("scope")
	for _, s := range a.sessions {
		if s.subject != sub {
			continue
		}
		switch {
		case scope == "local" && s.id != this, scope == "others" && s.id == this:
			continue
		}
		s.revoked = true
		delete(a.refresh, s.refresh)
	}
	w.WriteHeader(http.StatusNoContent)
}
