package live_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zalando/go-keyring"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/live"
	"github.com/triunalabs/trovesnap/internal/live/pgtest"
)

// documentedToken is the answer of POST /auth/v1/token as GoTrue documents
// it (supabase/auth README, "POST /token"): the fields a client relies on.
const documentedToken = `{
  "access_token": "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxIn0.c2ln",
  "token_type": "bearer",
  "expires_in": 3600,
  "expires_at": 1893456000,
  "refresh_token": "a-refresh-token",
  "user": {
    "id": "11111111-2222-3333-4444-555555555555",
    "aud": "authenticated",
    "role": "authenticated",
    "email": "seller@example.com"
  }
}`

// The error shapes GoTrue answers with: the OAuth shape of the token
// grants, its HTTP error shape, and the shape with the
// X-Supabase-Api-Version header.
const (
	documentedBadLogin       = `{"error":"invalid_grant","error_description":"Invalid login credentials"}`
	documentedBadLoginHTTP   = `{"code":400,"error_code":"invalid_credentials","msg":"Invalid login credentials"}`
	documentedBadLoginAPIVer = `{"code":"invalid_credentials","message":"Invalid login credentials"}`
	documentedBadRefresh     = `{"code":400,"error_code":"refresh_token_not_found","msg":"Invalid Refresh Token: Refresh Token Not Found"}`
	documentedBadRefreshAuth = `{"error":"invalid_grant","error_description":"Invalid Refresh Token: Already Used"}`
)

func anonKey(env *pgtest.Env) string { return env.Endpoint.Token("anon", time.Hour) }

func newAuth(t *testing.T, url, key string, logs io.Writer) *live.Auth {
	t.Helper()
	o := live.Options{URL: url, PublicKey: key, Timeout: 5 * time.Second}
	if logs != nil {
		o.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	a, err := live.NewAuth(o)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func postJSON(t *testing.T, url, apikey, bearer, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if apikey != "" {
		req.Header.Set("apikey", apikey)
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
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

// sameShape fails unless got has every key of want with the same JSON type
// (objects recursively).
func sameShape(t *testing.T, path string, want, got map[string]any) {
	t.Helper()
	for k, wv := range want {
		gv, ok := got[k]
		if !ok {
			t.Errorf("%s%s: missing", path, k)
			continue
		}
		if fmt.Sprintf("%T", wv) != fmt.Sprintf("%T", gv) {
			t.Errorf("%s%s: %T, documented %T", path, k, gv, wv)
			continue
		}
		if wm, ok := wv.(map[string]any); ok {
			sameShape(t, path+k+".", wm, gv.(map[string]any))
		}
	}
}

// The stand-in answers in GoTrue's documented shapes, and our client reads
// the documented answers (sampled from the documentation, not from the
// stand-in) the same way it reads the stand-in's.
func TestAuthStandIn_AgreesWithTheDocumentedShapes(t *testing.T) {
	env := pgtest.Need(t)
	env.Endpoint.AddAuthUser("shape@heritage.test", "correct horse", fixtures.DemoUserID)
	base := env.Endpoint.URL + "/auth/v1"
	var doc map[string]any
	if err := json.Unmarshal([]byte(documentedToken), &doc); err != nil {
		t.Fatal(err)
	}

	status, tok := postJSON(t, base+"/token?grant_type=password", anonKey(env), "", `{"email":"shape@heritage.test","password":"correct horse"}`)
	if status != http.StatusOK {
		t.Fatalf("password grant: %d %v", status, tok)
	}
	sameShape(t, "", doc, tok)
	if tok["token_type"] != "bearer" || tok["user"].(map[string]any)["id"] != pgtest.AuthSubject(fixtures.DemoUserID) {
		t.Fatalf("token answer = %v", tok)
	}
	status, again := postJSON(t, base+"/token?grant_type=refresh_token", anonKey(env), "", `{"refresh_token":"`+tok["refresh_token"].(string)+`"}`)
	if status != http.StatusOK || again["refresh_token"] == tok["refresh_token"] {
		t.Fatalf("refresh grant: %d %v", status, again)
	}
	sameShape(t, "", doc, again)

	for _, c := range []struct {
		name, path, apikey, bearer, body string
		status                           int
		want                             string
	}{
		{"bad password", "/token?grant_type=password", anonKey(env), "", `{"email":"shape@heritage.test","password":"wrong"}`, 400, documentedBadLogin},
		{"unknown user", "/token?grant_type=password", anonKey(env), "", `{"email":"nobody@heritage.test","password":"x"}`, 400, documentedBadLogin},
		{"spent refresh token", "/token?grant_type=refresh_token", anonKey(env), "", `{"refresh_token":"` + tok["refresh_token"].(string) + `"}`, 400,
			`{"code":400,"error_code":"refresh_token_already_used","msg":"Invalid Refresh Token: Already Used"}`},
		{"unknown refresh token", "/token?grant_type=refresh_token", anonKey(env), "", `{"refresh_token":"nope"}`, 400, documentedBadRefresh},
		{"logout without a token", "/logout", anonKey(env), "", ``, 401, `{"code":401,"error_code":"no_authorization","msg":"This endpoint requires a Bearer token"}`},
	} {
		status, got := postJSON(t, base+c.path, c.apikey, c.bearer, c.body)
		var want map[string]any
		_ = json.Unmarshal([]byte(c.want), &want)
		if status != c.status || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: %d %v; want %d %v", c.name, status, got, c.status, want)
		}
	}
	if status, _ := postJSON(t, base+"/token?grant_type=password", "", "", `{}`); status != http.StatusUnauthorized {
		t.Errorf("no apikey: HTTP %d", status)
	}
	if status, _ := postJSON(t, base+"/logout?scope=local", anonKey(env), again["access_token"].(string), ``); status != http.StatusNoContent {
		t.Errorf("logout: HTTP %d", status)
	}

	// Our client on the documented answers, served verbatim.
	for _, c := range []struct {
		name, grant, body string
		status            int
		want              error
	}{
		{"documented token", "password", documentedToken, 200, nil},
		{"documented bad login", "password", documentedBadLogin, 400, live.ErrInvalidCredentials},
		{"documented bad login (HTTP shape)", "password", documentedBadLoginHTTP, 400, live.ErrInvalidCredentials},
		{"documented bad login (API version shape)", "password", documentedBadLoginAPIVer, 400, live.ErrInvalidCredentials},
		{"documented bad refresh", "refresh_token", documentedBadRefresh, 400, live.ErrSessionEnded},
		{"documented bad refresh (OAuth shape)", "refresh_token", documentedBadRefreshAuth, 400, live.ErrSessionEnded},
		{"rate limited", "password", `{"code":429,"error_code":"over_request_rate_limit","msg":"Request rate limit reached"}`, 429, domain.ErrUnavailable},
		{"server error", "refresh_token", `{"code":500,"error_code":"unexpected_failure","msg":"Database error"}`, 500, domain.ErrUnavailable},
		{"not GoTrue at all", "password", `<html>bad gateway</html>`, 502, domain.ErrUnavailable},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/auth/v1/token" || r.URL.Query().Get("grant_type") != c.grant || r.Header.Get("apikey") != "anon-key" {
				http.Error(w, "unexpected request "+r.URL.String(), http.StatusTeapot)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(c.status)
			_, _ = io.WriteString(w, c.body)
		}))
		a := newAuth(t, srv.URL, "anon-key", nil)
		var (
			s   *live.Session
			err error
		)
		if c.grant == "password" {
			s, err = a.SignIn(ctx, "seller@example.com", "pw")
		} else {
			keyring.MockInit()
			keepSession(t, srv.URL)
			s, err = a.Current(ctx, live.OpenSessions(), time.Now())
		}
		srv.Close()
		switch {
		case c.want == nil:
			if err != nil || s.UserID != "11111111-2222-3333-4444-555555555555" || s.Email != "seller@example.com" ||
				!s.ExpiresAt.Equal(time.Unix(1893456000, 0)) {
				t.Errorf("%s: %+v, %v", c.name, s, err)
			}
		case !errors.Is(err, c.want):
			t.Errorf("%s: %v; want %v", c.name, err, c.want)
		case c.want != domain.ErrUnavailable && !errors.Is(err, domain.ErrAuthRequired):
			t.Errorf("%s: %v does not say authentication is required", c.name, err)
		}
	}
}

// keepSession puts a session of project url in the (mock) credential
// store, as a previous process would have left it: the refresh token of
// the documented token answer, no access token.
func keepSession(t *testing.T, url string) {
	t.Helper()
	if err := keyring.Set(live.KeyringService, live.SessionAccount(url),
		`{"v":2,"user_id":"11111111-2222-3333-4444-555555555555","email":"seller@example.com","refresh_token":"a-refresh-token"}`); err != nil {
		t.Fatal(err)
	}
}

// stored is the credential store's entry of project url ("" when none).
func stored(t *testing.T, url string) string {
	t.Helper()
	v, err := keyring.Get(live.KeyringService, live.SessionAccount(url))
	if err != nil && !errors.Is(err, keyring.ErrNotFound) {
		t.Fatal(err)
	}
	return v
}

// Sign in, refresh and sign out against the stand-in: the session works
// with the seller RPCs, refresh tokens rotate (a spent one is refused), and
// after sign-out the session cannot be refreshed.
func TestAuth_SignInRefreshSignOut(t *testing.T) {
	env := seeded(t)
	env.Endpoint.AddAuthUser("paul@heritage.test", "s3cret-pass", fixtures.DemoUserID)
	a := newAuth(t, env.Endpoint.URL, anonKey(env), nil)

	if _, err := a.SignIn(ctx, "paul@heritage.test", "wrong"); !errors.Is(err, live.ErrInvalidCredentials) || !errors.Is(err, domain.ErrAuthRequired) {
		t.Fatalf("wrong password: %v", err)
	}
	if _, err := a.SignIn(ctx, "not-an-email", "x"); !errors.Is(err, domain.ErrInvalidInput) {
		t.Fatalf("no email: %v", err)
	}
	s, err := a.SignIn(ctx, "Paul@heritage.test", "s3cret-pass")
	if err != nil {
		t.Fatalf("SignIn: %v", err)
	}
	if s.UserID != pgtest.AuthSubject(fixtures.DemoUserID) || s.Email != "paul@heritage.test" || s.ProjectURL != env.Endpoint.URL ||
		s.Expired(time.Now()) || !s.Expired(time.Now().Add(time.Hour)) {
		t.Fatalf("session = %+v", s)
	}
	seller, err := s.Seller(live.Options{URL: env.Endpoint.URL, PublicKey: anonKey(env)})
	if err != nil {
		t.Fatal(err)
	}
	if who, err := seller.WhoAmI(ctx); err != nil || who.UserID != fixtures.DemoUserID {
		t.Fatalf("whoami with the signed-in session = %+v, %v", who, err)
	}
	if _, err := s.Seller(live.Options{URL: "https://other.supabase.co", PublicKey: anonKey(env)}); !errors.Is(err, live.ErrNotSignedIn) {
		t.Fatalf("a session used for another project: %v", err)
	}

	fresh, err := a.Refresh(ctx, s)
	if err != nil || fresh.UserID != s.UserID {
		t.Fatalf("Refresh: %+v, %v", fresh, err)
	}
	if _, err := a.Refresh(ctx, s); !errors.Is(err, live.ErrSessionEnded) {
		t.Fatalf("a spent refresh token: %v", err)
	}
	before := env.Endpoint.AuthRequests()["POST /auth/v1/logout"]
	if err := a.SignOut(ctx, fresh); err != nil {
		t.Fatalf("SignOut: %v", err)
	}
	if n := env.Endpoint.AuthRequests()["POST /auth/v1/logout"]; n != before+1 {
		t.Fatalf("logout requests %d → %d", before, n)
	}
	if _, err := a.Refresh(ctx, fresh); !errors.Is(err, live.ErrSessionEnded) {
		t.Fatalf("refresh after sign-out: %v", err)
	}
	other := newAuth(t, "https://other.supabase.co", "k", nil)
	if err := other.SignOut(ctx, fresh); !errors.Is(err, live.ErrNotSignedIn) {
		t.Fatalf("sign-out on another project: %v", err)
	}
}

// Current refreshes an expiring session and saves the rotated one at once;
// a fresh one is used as kept; another project's is not there; a new
// process (new Sessions) refreshes from the kept refresh token.
func TestAuth_CurrentRefreshesAndSaves(t *testing.T) {
	keyring.MockInit()
	env := seeded(t)
	env.Endpoint.AddAuthUser("mgr@heritage.test", "pw-manager", fixtures.ManagerUserID)
	a := newAuth(t, env.Endpoint.URL, anonKey(env), nil)
	s, err := a.SignIn(ctx, "mgr@heritage.test", "pw-manager")
	if err != nil {
		t.Fatal(err)
	}
	sessions := live.OpenSessions()
	if !sessions.Persistent() {
		t.Fatalf("the mock credential store was not used: %s", sessions.Why())
	}
	if _, err := a.Current(ctx, sessions, time.Now()); !errors.Is(err, live.ErrNotSignedIn) {
		t.Fatalf("no session kept: %v", err)
	}
	if err := sessions.Save(s); err != nil {
		t.Fatal(err)
	}
	saved := stored(t, env.Endpoint.URL)
	before := env.Endpoint.AuthRequests()["POST /auth/v1/token"]
	got, err := a.Current(ctx, sessions, time.Now())
	if err != nil || !got.ExpiresAt.Equal(s.ExpiresAt) {
		t.Fatalf("a fresh session: %+v, %v", got, err)
	}
	if stored(t, env.Endpoint.URL) != saved || env.Endpoint.AuthRequests()["POST /auth/v1/token"] != before {
		t.Fatal("a fresh session was refreshed or rewritten")
	}
	got, err = a.Current(ctx, sessions, s.ExpiresAt.Add(-time.Minute)) // within RefreshMargin
	if err != nil || got.UserID != s.UserID {
		t.Fatalf("an expiring session: %+v, %v", got, err)
	}
	if n := env.Endpoint.AuthRequests()["POST /auth/v1/token"]; n != before+1 {
		t.Fatalf("token requests %d → %d: no refresh", before, n)
	}
	if stored(t, env.Endpoint.URL) == saved {
		t.Fatal("the rotated session was not saved")
	}
	// The old refresh token is spent; the kept one works.
	if _, err := a.Refresh(ctx, s); !errors.Is(err, live.ErrSessionEnded) {
		t.Fatalf("old refresh token: %v", err)
	}
	if _, err := a.Current(ctx, sessions, time.Now().Add(2*time.Hour)); err != nil {
		t.Fatalf("refresh with the kept token: %v", err)
	}
	// A caller that needs the token for longer than it lasts gets a fresh one.
	saved = stored(t, env.Endpoint.URL)
	if _, err := a.CurrentUntil(ctx, sessions, time.Now().Add(30*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if stored(t, env.Endpoint.URL) != saved {
		t.Fatal("a token lasting long enough was refreshed")
	}
	if s, err := a.CurrentUntil(ctx, sessions, time.Now().Add(90*time.Minute)); err != nil || !s.ExpiresAt.After(time.Now().Add(50*time.Minute)) {
		t.Fatalf("CurrentUntil beyond the token's life: %+v, %v", s, err)
	}
	if stored(t, env.Endpoint.URL) == saved {
		t.Fatal("a token not lasting long enough was not refreshed")
	}
	// Another process: it finds only the refresh token, and refreshes once.
	before = env.Endpoint.AuthRequests()["POST /auth/v1/token"]
	next := live.OpenSessions()
	if got, err := a.Current(ctx, next, time.Now()); err != nil || got.UserID != s.UserID {
		t.Fatalf("the next process: %+v, %v", got, err)
	}
	if n := env.Endpoint.AuthRequests()["POST /auth/v1/token"]; n != before+1 {
		t.Fatalf("the next process: token requests %d → %d", before, n)
	}
	// The first process sees that the kept session moved on, and follows it
	// rather than spending its own (now revoked) refresh token.
	if _, err := a.CurrentUntil(ctx, sessions, time.Now().Add(90*time.Minute)); err != nil {
		t.Fatalf("the first process after the next one refreshed: %v", err)
	}
	if _, err := newAuth(t, "https://other.supabase.co", "k", nil).Current(ctx, sessions, time.Now()); !errors.Is(err, live.ErrNotSignedIn) ||
		!strings.Contains(err.Error(), "https://other.supabase.co") {
		t.Fatalf("a session of another project: %v", err)
	}
}

// The credential store holds only what the next process needs — the
// refresh token, the user id and the email, well under the smallest
// platform limit — and nothing is written to a file. An unreadable entry
// is "sign in again"; Remove deletes it; a store that does not answer
// leaves sessions in memory, with the reason.
func TestSessions_KeptInTheCredentialStoreNeverAFile(t *testing.T) {
	keyring.MockInit()
	env := pgtest.Need(t)
	env.Endpoint.AddAuthUser("file@heritage.test", "pw-file", fixtures.DemoUserID)
	home := t.TempDir()
	t.Setenv("HOME", home)
	a := newAuth(t, env.Endpoint.URL, anonKey(env), nil)
	s, err := a.SignIn(ctx, "file@heritage.test", "pw-file")
	if err != nil {
		t.Fatal(err)
	}
	access, refresh := live.SessionTokens(s)
	sessions := live.OpenSessions()
	if err := sessions.Save(s); err != nil {
		t.Fatal(err)
	}
	var entry map[string]any
	raw := stored(t, env.Endpoint.URL+"/") // the account ignores a trailing slash
	if err := json.Unmarshal([]byte(raw), &entry); err != nil || entry["refresh_token"] != refresh || entry["user_id"] != s.UserID ||
		len(entry) != 4 || len(raw) > 512 || strings.Contains(raw, access) {
		t.Fatalf("the credential store's entry (%d bytes): %v %v", len(raw), entry, err)
	}
	noTokenInFiles(t, home, access, refresh)
	if got, err := live.OpenSessions().Load(env.Endpoint.URL); err != nil || got.UserID != s.UserID || got.Email != s.Email ||
		!got.Expired(time.Now()) {
		t.Fatalf("loaded by another process: %+v, %v", got, err)
	}

	if err := keyring.Set(live.KeyringService, live.SessionAccount(env.Endpoint.URL), `{"v":2}`); err != nil {
		t.Fatal(err)
	}
	if _, err := live.OpenSessions().Load(env.Endpoint.URL); !errors.Is(err, live.ErrNotSignedIn) || !strings.Contains(err.Error(), "unreadable") {
		t.Fatalf("an unreadable entry: %v", err)
	}
	if removed, err := sessions.Remove(env.Endpoint.URL); !removed || err != nil {
		t.Fatalf("remove: %v %v", removed, err)
	}
	if removed, err := sessions.Remove(env.Endpoint.URL); removed || err != nil {
		t.Fatalf("remove again: %v %v", removed, err)
	}
	if _, err := sessions.Load(env.Endpoint.URL); !errors.Is(err, live.ErrNotSignedIn) || stored(t, env.Endpoint.URL) != "" {
		t.Fatalf("after removal: %v", err)
	}

	// No credential store: memory only, for this Sessions alone.
	keyring.MockInitWithError(errors.New("the name org.freedesktop.secrets was not provided by any .service files"))
	t.Cleanup(keyring.MockInit)
	mem := live.OpenSessions()
	if mem.Persistent() || !strings.Contains(mem.Why(), "org.freedesktop.secrets") {
		t.Fatalf("a failing store: persistent %v, why %q", mem.Persistent(), mem.Why())
	}
	if err := mem.Save(s); err != nil {
		t.Fatal(err)
	}
	if got, err := mem.Load(env.Endpoint.URL); err != nil || got.UserID != s.UserID || got.Expired(time.Now()) {
		t.Fatalf("memory: %+v, %v", got, err)
	}
	if _, err := live.MemorySessions("test").Load(env.Endpoint.URL); !errors.Is(err, live.ErrNotSignedIn) {
		t.Fatalf("another process's memory: %v", err)
	}
	noTokenInFiles(t, home, access, refresh)
}

// noTokenInFiles fails when a file under dir holds a token.
func noTokenInFiles(t *testing.T, dir string, tokens ...string) {
	t.Helper()
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		b, _ := os.ReadFile(p)
		for _, tok := range tokens {
			if tok != "" && bytes.Contains(b, []byte(tok)) {
				t.Errorf("%s holds a token", p)
			}
		}
		return nil
	})
}

// Tokens and the password appear in no String, %#v, JSON, error or debug
// log line — while things work and when they fail.
func TestSession_TokensNeverPrinted(t *testing.T) {
	env := seeded(t)
	env.Endpoint.AddAuthUser("leak@heritage.test", "pw-do-not-print", fixtures.DemoUserID)
	var seen, logs bytes.Buffer
	a := newAuth(t, env.Endpoint.URL, anonKey(env), &logs)
	s, err := a.SignIn(ctx, "leak@heritage.test", "pw-do-not-print")
	if err != nil {
		t.Fatal(err)
	}
	var file struct{ AccessToken, RefreshToken string }
	file.AccessToken, file.RefreshToken = live.SessionTokens(s)
	if file.AccessToken == "" || file.RefreshToken == "" {
		t.Fatal("the session lacks its tokens")
	}
	if err := live.MemorySessions("test").Save(s); err != nil {
		t.Fatal(err)
	}
	j, _ := json.Marshal(s)
	fmt.Fprintf(&seen, "%v %+v %#v %s %s\n", s, s, s, s, j)
	fmt.Fprintf(&seen, "%v %+v %#v\n", a, a, a)
	seller, _ := s.Seller(live.Options{URL: env.Endpoint.URL, PublicKey: anonKey(env)})
	fmt.Fprintf(&seen, "%v %+v %#v\n", seller, seller, seller)
	_, err = a.SignIn(ctx, "leak@heritage.test", "pw-do-not-print-wrong")
	fmt.Fprintln(&seen, err)
	fresh, err := a.Refresh(ctx, s)
	fmt.Fprintln(&seen, fresh, err)
	_, err = a.Refresh(ctx, s) // spent
	fmt.Fprintln(&seen, err)
	fmt.Fprintln(&seen, a.SignOut(ctx, fresh))
	fmt.Fprintln(&seen, a.SignOut(ctx, fresh)) // the access token outlives the session: GoTrue accepts it again
	// While the project is unreachable.
	down := newAuth(t, "http://127.0.0.1:1", anonKey(env), &logs)
	_, err = down.SignIn(ctx, "leak@heritage.test", "pw-do-not-print")
	fmt.Fprintln(&seen, err)
	seen.Write(logs.Bytes())
	if !errors.Is(err, domain.ErrUnavailable) || logs.Len() == 0 {
		t.Fatalf("the outage was not exercised: %v (%d log bytes)", err, logs.Len())
	}
	for _, secret := range []string{file.AccessToken, file.RefreshToken, "pw-do-not-print", anonKey(env)} {
		if bytes.Contains(seen.Bytes(), []byte(secret)) {
			i := bytes.Index(seen.Bytes(), []byte(secret))
			t.Fatalf("a secret leaked near %q", seen.Bytes()[max(0, i-120):i])
		}
	}
	if !strings.Contains(seen.String(), "leak@heritage.test") || !strings.Contains(seen.String(), "refresh_token_already_used") ||
		!strings.Contains(seen.String(), "live.Auth(") {
		t.Fatalf("the scan saw nothing useful:\n%s", seen.String())
	}
}
