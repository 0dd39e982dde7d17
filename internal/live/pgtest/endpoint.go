package pgtest

import (
	"context"
	"crypto/ecdsa"
	"crypto/hmac"
	"crypto/md5"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Endpoint is a PostgREST-compatible RPC server for tests: POST
// /rest/v1/rpc/{fn} with JSON named arguments and `Authorization: Bearer
// <JWT>` (HS256, verified with the endpoint's secret, or ES256 signed by the
// endpoint's asymmetric signing key, whose JWKS the Auth stand-in serves:
// jwks.go). Each request runs in
// one transaction as the authenticator login role: SET LOCAL ROLE to the
// JWT's role claim (anon without a JWT), request.jwt.claims and
// request.headers set (PostgREST's JSON object of the request headers,
// names in lower case, one value each), then the function. Errors come back as PostgREST's {code, message, details, hint}.
type Endpoint struct {
	URL    string
	secret []byte
	srv    *httptest.Server
	pool   *pgxpool.Pool

	// The project's asymmetric JWT signing key (ES256, P-256) and its key
	// id, as a Supabase project with JWT signing keys has (jwks.go).
	signKey *ecdsa.PrivateKey
	kid     string
	// superDSN connects as the cluster's bootstrap superuser, through which
	// the Custom Access Token Hook runs (OAuthTokenWithHook); empty for an
	// endpoint without a cluster.
	superDSN string

	mu   sync.Mutex
	args map[string][]fnArg
	// raw holds the functions returning json, whose text PostgREST sends
	// as it is (jsonb and scalars go through to_jsonb).
	raw map[string]bool
}

type fnArg struct{ name, typ string }

// Serve starts an endpoint over the cluster.
func (c *Cluster) Serve(ctx context.Context) (*Endpoint, error) {
	cfg, err := pgxpool.ParseConfig(c.DSN("authenticator"))
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = 8
	e, err := newEndpoint()
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	e.pool, e.superDSN = pool, c.DSN("postgres")
	e.srv = httptest.NewServer(http.HandlerFunc(e.serve))
	e.URL = e.srv.URL
	return e, nil
}

// newEndpoint is an endpoint's keys and state, without a server or a
// database (Serve adds them; the tests of jwks.go use it alone).
func newEndpoint() (*Endpoint, error) {
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	key, kid, err := newSigningKey()
	if err != nil {
		return nil, err
	}
	return &Endpoint{secret: secret, signKey: key, kid: kid, args: map[string][]fnArg{}, raw: map[string]bool{}}, nil
}

// Close stops the endpoint.
func (e *Endpoint) Close() {
	e.srv.Close()
	e.pool.Close()
}

// Token mints an HS256 JWT for role, valid for ttl.
func (e *Endpoint) Token(role string, ttl time.Duration) string {
	now := time.Now()
	return e.sign(map[string]any{"role": role, "iss": "trovesnap-pgtest", "iat": now.Unix(), "exp": now.Add(ttl).Unix()})
}

// UserToken mints the access token of a signed-in Supabase Auth user: role
// authenticated, sub the user's auth subject (see AuthSubject), valid for ttl.
func (e *Endpoint) UserToken(subject string, ttl time.Duration) string {
	now := time.Now()
	return e.sign(map[string]any{"role": "authenticated", "sub": subject, "aud": "authenticated", "iss": "trovesnap-pgtest",
		"iat": now.Unix(), "exp": now.Add(ttl).Unix()})
}

// AuthSubject is the Supabase Auth user id (the JWT sub) the development
// seed links to a TroveSnap user: a UUID derived from the user id, exactly
// as mcp_seed_fixtures computes it.
func AuthSubject(userID string) string {
	sum := md5.Sum([]byte("trovesnap-user:" + userID))
	h := hex.EncodeToString(sum[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

func (e *Endpoint) sign(claims map[string]any) string {
	enc := base64.RawURLEncoding
	h := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))
	c, _ := json.Marshal(claims)
	msg := h + "." + enc.EncodeToString(c)
	mac := hmac.New(sha256.New, e.secret)
	mac.Write([]byte(msg))
	return msg + "." + enc.EncodeToString(mac.Sum(nil))
}

// verify checks a JWT — HS256 with the secret, or ES256 signed by the
// signing key (its kid, the 64-byte r||s signature); any other algorithm
// is refused — and returns its claims.
func (e *Endpoint) verify(tok string) (map[string]any, error) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return nil, errors.New("malformed")
	}
	enc := base64.RawURLEncoding
	var hdr struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
	}
	hb, err := enc.DecodeString(parts[0])
	if err != nil || json.Unmarshal(hb, &hdr) != nil || (hdr.Alg != "HS256" && hdr.Alg != "ES256") {
		return nil, errors.New("bad header")
	}
	sig, err := enc.DecodeString(parts[2])
	if err != nil {
		return nil, errors.New("bad signature")
	}
	msg := parts[0] + "." + parts[1]
	if hdr.Alg == "ES256" {
		if !e.verifyES256(hdr.Kid, msg, sig) {
			return nil, errors.New("bad signature")
		}
	} else {
		mac := hmac.New(sha256.New, e.secret)
		mac.Write([]byte(msg))
		if !hmac.Equal(sig, mac.Sum(nil)) {
			return nil, errors.New("bad signature")
		}
	}
	cb, err := enc.DecodeString(parts[1])
	if err != nil {
		return nil, errors.New("bad claims")
	}
	var claims map[string]any
	if err := json.Unmarshal(cb, &claims); err != nil {
		return nil, errors.New("bad claims")
	}
	if exp, ok := claims["exp"].(float64); ok && time.Now().Unix() >= int64(exp) {
		return nil, errors.New("expired")
	}
	return claims, nil
}

type pgrstError struct {
	Code    string  `json:"code"`
	Message string  `json:"message"`
	Details *string `json:"details"`
	Hint    *string `json:"hint"`
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func writeErr(w http.ResponseWriter, status int, e pgrstError) {
	b, _ := json.Marshal(e)
	writeJSON(w, status, b)
}

var fnName = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

func (e *Endpoint) serve(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/auth/v1/") {
		e.serveAuth(w, r) // the Supabase Auth stand-in (auth.go)
		return
	}
	fn, ok := strings.CutPrefix(r.URL.Path, "/rest/v1/rpc/")
	if !ok || !fnName.MatchString(fn) {
		writeErr(w, http.StatusNotFound, pgrstError{Code: "PGRST202", Message: "Could not find the function"})
		return
	}
	if r.Method != http.MethodPost {
		writeErr(w, http.StatusMethodNotAllowed, pgrstError{Code: "PGRST101", Message: "Only POST is supported here"})
		return
	}
	if r.Header.Get("apikey") == "" {
		writeErr(w, http.StatusUnauthorized, pgrstError{Message: "No API key found in request"})
		return
	}
	role, claims := "anon", map[string]any{"role": "anon"}
	if auth := r.Header.Get("Authorization"); auth != "" {
		tok, ok := strings.CutPrefix(auth, "Bearer ")
		c, err := e.verify(tok)
		if !ok || err != nil {
			writeErr(w, http.StatusUnauthorized, pgrstError{Code: "PGRST301", Message: "JWT invalid"})
			return
		}
		r, _ := c["role"].(string)
		if r == "" {
			writeErr(w, http.StatusUnauthorized, pgrstError{Code: "PGRST301", Message: "JWT has no role"})
			return
		}
		role, claims = r, c
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		writeErr(w, http.StatusBadRequest, pgrstError{Code: "PGRST102", Message: "Could not read the body"})
		return
	}
	var in map[string]json.RawMessage
	if len(strings.TrimSpace(string(body))) == 0 {
		in = map[string]json.RawMessage{}
	} else if err := json.Unmarshal(body, &in); err != nil {
		writeErr(w, http.StatusBadRequest, pgrstError{Code: "PGRST102", Message: "Invalid JSON body"})
		return
	}
	headers := map[string]string{}
	for name, vs := range r.Header {
		if len(vs) > 0 {
			headers[strings.ToLower(name)] = vs[0]
		}
	}
	out, err := e.exec(r.Context(), role, claims, headers, fn, body, in)
	if err != nil {
		status, pe := errorFor(role, err)
		writeErr(w, status, pe)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// signature reads a public function's argument names and types.
func (e *Endpoint) signature(ctx context.Context, fn string) ([]fnArg, error) {
	e.mu.Lock()
	a, ok := e.args[fn]
	e.mu.Unlock()
	if ok {
		return a, nil
	}
	var names, types []string
	var raw bool
	err := e.pool.QueryRow(ctx, `SELECT coalesce(p.proargnames, '{}'), array(SELECT format_type(t, NULL) FROM unnest(p.proargtypes) t),
		p.prorettype = 'json'::regtype
		FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'public' AND p.proname = $1`, fn).Scan(&names, &types, &raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errNoFunction
	}
	if err != nil {
		return nil, err
	}
	for i, t := range types {
		if i < len(names) {
			a = append(a, fnArg{names[i], t})
		}
	}
	e.mu.Lock()
	e.args[fn] = a
	e.raw[fn] = raw
	e.mu.Unlock()
	return a, nil
}

var errNoFunction = errors.New("no such function")

func (e *Endpoint) exec(ctx context.Context, role string, claims map[string]any, headers map[string]string, fn string, body []byte, in map[string]json.RawMessage) ([]byte, error) {
	sig, err := e.signature(ctx, fn)
	if err != nil {
		return nil, err
	}
	var named, cols []string
	for _, a := range sig {
		if _, ok := in[a.name]; ok {
			named = append(named, fmt.Sprintf("%s => r.%s", pgx.Identifier{a.name}.Sanitize(), pgx.Identifier{a.name}.Sanitize()))
			cols = append(cols, pgx.Identifier{a.name}.Sanitize()+" "+a.typ)
		}
	}
	if len(named) != len(in) {
		return nil, errNoFunction // an argument the function does not have: PostgREST finds no such function
	}
	e.mu.Lock()
	open, closing := "to_jsonb(", ")::text"
	if e.raw[fn] {
		open, closing = "(", ")::text"
	}
	e.mu.Unlock()
	q := "SELECT " + open + "public." + pgx.Identifier{fn}.Sanitize() + "()" + closing
	if len(cols) > 0 {
		q = "SELECT " + open + "public." + pgx.Identifier{fn}.Sanitize() + "(" + strings.Join(named, ", ") + ")" + closing + " FROM jsonb_to_record($1::jsonb) AS r(" + strings.Join(cols, ", ") + ")"
	}
	cj, _ := json.Marshal(claims)
	hj, _ := json.Marshal(headers)
	var out []byte // nil for NULL; read once, not copied again (a page of the audit chain is 10 MB)
	err = pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL ROLE "+pgx.Identifier{role}.Sanitize()); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "SELECT set_config('request.jwt.claims', $1, true), set_config('request.headers', $2, true)", string(cj), string(hj)); err != nil {
			return err
		}
		if len(cols) > 0 {
			return tx.QueryRow(ctx, q, string(body)).Scan(&out)
		}
		return tx.QueryRow(ctx, q).Scan(&out)
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		return []byte("null"), nil
	}
	return out, nil
}

// errorFor maps an error the way PostgREST does (the subset our RPCs meet).
func errorFor(role string, err error) (int, pgrstError) {
	if errors.Is(err, errNoFunction) {
		return http.StatusNotFound, pgrstError{Code: "PGRST202", Message: "Could not find the function in the schema cache"}
	}
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return http.StatusServiceUnavailable, pgrstError{Code: "PGRST000", Message: "Database connection error"}
	}
	str := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	e := pgrstError{Code: pe.Code, Message: pe.Message, Details: str(pe.Detail), Hint: str(pe.Hint)}
	switch {
	case pe.Code == "P0001":
		return http.StatusBadRequest, e
	case pe.Code == "42501" && role == "anon":
		return http.StatusUnauthorized, e
	case pe.Code == "42501":
		return http.StatusForbidden, e
	case pe.Code == "42883":
		return http.StatusNotFound, e
	case strings.HasPrefix(pe.Code, "23"):
		return http.StatusConflict, e
	case strings.HasPrefix(pe.Code, "22"):
		return http.StatusBadRequest, e
	case strings.HasPrefix(pe.Code, "08"), strings.HasPrefix(pe.Code, "53"), strings.HasPrefix(pe.Code, "57"):
		return http.StatusServiceUnavailable, e
	}
	return http.StatusInternalServerError, e
}
