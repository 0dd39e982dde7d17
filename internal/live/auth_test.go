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
			dir := t.TempDir()
			writeSession(t, a, dir, srv.URL)
			s, err = a.Current(ctx, live.SessionPath(dir), time.Now())
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

// writeSession saves an expired session of project url, signed in through
// the documented token answer of a one-shot server.
func writeSession(t *testing.T, a *live.Auth, dir, url string) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, strings.Replace(documentedToken, "1893456000", fmt.Sprint(time.Now().Add(-time.Hour).Unix()), 1))
	}))
	defer srv.Close()
	s, err := newAuth(t, srv.URL, "anon-key", nil).SignIn(ctx, "seller@example.com", "pw")
	if err != nil {
		t.Fatal(err)
	}
	// The same session, as if it had been made on url.
	raw, _ := json.Marshal(s)
	var moved map[string]any
	_ = json.Unmarshal(raw, &moved)
	path := live.SessionPath(dir)
	if err := live.SaveSession(path, s); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if err := os.WriteFile(path, bytes.Replace(b, []byte(srv.URL), []byte(url), 1), 0o600); err != nil {
		t.Fatal(err)
	}
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
// a fresh one is used as saved; another project's is refused.
func TestAuth_CurrentRefreshesAndSaves(t *testing.T) {
	env := seeded(t)
	env.Endpoint.AddAuthUser("mgr@heritage.test", "pw-manager", fixtures.ManagerUserID)
	a := newAuth(t, env.Endpoint.URL, anonKey(env), nil)
	s, err := a.SignIn(ctx, "mgr@heritage.test", "pw-manager")
	if err != nil {
		t.Fatal(err)
	}
	path := live.SessionPath(t.TempDir())
	if _, err := a.Current(ctx, path, time.Now()); !errors.Is(err, live.ErrNotSignedIn) {
		t.Fatalf("no session file: %v", err)
	}
	if err := live.SaveSession(path, s); err != nil {
		t.Fatal(err)
	}
	saved, _ := os.ReadFile(path)
	got, err := a.Current(ctx, path, time.Now())
	if err != nil || !got.ExpiresAt.Equal(s.ExpiresAt) {
		t.Fatalf("a fresh session: %+v, %v", got, err)
	}
	if now, _ := os.ReadFile(path); !bytes.Equal(now, saved) {
		t.Fatal("a fresh session was rewritten")
	}
	before := env.Endpoint.AuthRequests()["POST /auth/v1/token"]
	got, err = a.Current(ctx, path, s.ExpiresAt.Add(-time.Minute)) // within RefreshMargin
	if err != nil || got.UserID != s.UserID {
		t.Fatalf("an expiring session: %+v, %v", got, err)
	}
	if n := env.Endpoint.AuthRequests()["POST /auth/v1/token"]; n != before+1 {
		t.Fatalf("token requests %d → %d: no refresh", before, n)
	}
	rotated, _ := os.ReadFile(path)
	if bytes.Equal(rotated, saved) {
		t.Fatal("the rotated session was not saved")
	}
	// The old refresh token is spent; the saved one works.
	if _, err := a.Refresh(ctx, s); !errors.Is(err, live.ErrSessionEnded) {
		t.Fatalf("old refresh token: %v", err)
	}
	if _, err := a.Current(ctx, path, time.Now().Add(2*time.Hour)); err != nil {
		t.Fatalf("refresh with the saved token: %v", err)
	}
	// A caller that needs the token for longer than it lasts gets a fresh one.
	saved, _ = os.ReadFile(path)
	if _, err := a.CurrentUntil(ctx, path, time.Now().Add(30*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if now, _ := os.ReadFile(path); !bytes.Equal(now, saved) {
		t.Fatal("a token lasting long enough was refreshed")
	}
	if s, err := a.CurrentUntil(ctx, path, time.Now().Add(90*time.Minute)); err != nil || !s.ExpiresAt.After(time.Now().Add(50*time.Minute)) {
		t.Fatalf("CurrentUntil beyond the token's life: %+v, %v", s, err)
	}
	if now, _ := os.ReadFile(path); bytes.Equal(now, saved) {
		t.Fatal("a token not lasting long enough was not refreshed")
	}
	if _, err := newAuth(t, "https://other.supabase.co", "k", nil).Current(ctx, path, time.Now()); !errors.Is(err, live.ErrNotSignedIn) ||
		!strings.Contains(err.Error(), env.Endpoint.URL) {
		t.Fatalf("a session of another project: %v", err)
	}
}

// The session file is written 0600 through an exclusive temp file and a
// rename, and a file others could read is refused.
func TestSession_FileModeAndRefusals(t *testing.T) {
	env := pgtest.Need(t)
	env.Endpoint.AddAuthUser("file@heritage.test", "pw-file", fixtures.DemoUserID)
	a := newAuth(t, env.Endpoint.URL, anonKey(env), nil)
	s, err := a.SignIn(ctx, "file@heritage.test", "pw-file")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "data")
	path := live.SessionPath(dir)
	for i := 0; i < 2; i++ { // a new file, then a replaced one
		if err := live.SaveSession(path, s); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(path)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("session file mode = %v, %v", fi.Mode(), err)
		}
	}
	if di, _ := os.Stat(dir); di.Mode().Perm() != 0o700 {
		t.Fatalf("created data dir mode = %v", di.Mode())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("files left in the data dir: %v", entries)
	}
	got, err := live.LoadSession(path)
	if err != nil || got.UserID != s.UserID || got.Email != s.Email || !got.ExpiresAt.Equal(s.ExpiresAt) {
		t.Fatalf("loaded %+v, %v", got, err)
	}

	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := live.LoadSession(path); err == nil || !strings.Contains(err.Error(), "group or others") {
		t.Fatalf("a group-readable session: %v", err)
	}
	if _, err := a.Current(ctx, path, time.Now()); err == nil {
		t.Fatal("Current used a group-readable session")
	}
	_ = os.Chmod(path, 0o600)
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	if _, err := live.LoadSession(link); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("a symlinked session: %v", err)
	}
	garbage := filepath.Join(dir, "garbage.json")
	_ = os.WriteFile(garbage, []byte(`{"version":1}`), 0o600)
	if _, err := live.LoadSession(garbage); !errors.Is(err, live.ErrNotSignedIn) {
		t.Fatalf("an incomplete session file: %v", err)
	}
	if removed, err := live.RemoveSession(path); !removed || err != nil {
		t.Fatalf("remove: %v %v", removed, err)
	}
	if removed, err := live.RemoveSession(path); removed || err != nil {
		t.Fatalf("remove again: %v %v", removed, err)
	}
	if _, err := live.LoadSession(path); !errors.Is(err, live.ErrNotSignedIn) {
		t.Fatalf("after removal: %v", err)
	}
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
	path := live.SessionPath(t.TempDir())
	if err := live.SaveSession(path, s); err != nil {
		t.Fatal(err)
	}
	var file struct {
		AccessToken  string `json:"access_token"`
		RefreshToken string `json:"refresh_token"`
	}
	raw, _ := os.ReadFile(path)
	_ = json.Unmarshal(raw, &file)
	if file.AccessToken == "" || file.RefreshToken == "" {
		t.Fatal("the session file lacks its tokens")
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
