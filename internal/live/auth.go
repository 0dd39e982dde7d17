package live

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// Sign-in errors. Each also matches domain.ErrAuthRequired.
var (
	// ErrNotSignedIn: no usable session is saved (never signed in, signed
	// out, or saved for another project).
	ErrNotSignedIn = errors.New("not signed in")
	// ErrInvalidCredentials: Supabase Auth refused the email and password.
	ErrInvalidCredentials = errors.New("invalid email or password")
	// ErrSessionEnded: the refresh token was refused (the session was
	// revoked, signed out elsewhere or expired): sign in again.
	ErrSessionEnded = errors.New("the session ended")
)

// authError marks a sign-in error as needing authentication.
func authError(msg string, sentinel error) error {
	return fmt.Errorf("live: %s: %w: %w", msg, sentinel, domain.ErrAuthRequired)
}

// Auth is a small client of the project's Supabase Auth (GoTrue) for a
// seller's session: password sign-in, refresh and sign-out. It is a plain
// net/http client rather than auth-go (see docs/live-auth.md): every call
// takes a context, is bounded by a timeout, and its failures are typed —
// refused credentials, an ended session and an unreachable service are
// different errors — while tokens never reach an error, a log or a
// String. It is safe for concurrent use.
type Auth struct {
	project string // the project URL, without a trailing slash
	apiKey  secret // the project's anon (public) key
	hc      *http.Client
	timeout time.Duration
	log     *slog.Logger
	now     func() time.Time
}

// NewAuth builds the Auth client of a project: o.URL is the project URL,
// o.PublicKey its anon key (sent as `apikey`). It does not contact the server.
func NewAuth(o Options) (*Auth, error) {
	if strings.TrimSpace(o.PublicKey) == "" {
		return nil, fmt.Errorf("live: the project's anon key is needed to sign in (set SUPABASE_ANON_KEY): %w", domain.ErrInvalidInput)
	}
	b, err := New(o)
	if err != nil {
		return nil, err
	}
	return &Auth{project: strings.TrimSuffix(b.rpcURL, "/rest/v1/rpc/"), apiKey: b.apiKey, hc: b.hc, timeout: b.timeout,
		log: b.log, now: time.Now}, nil
}

// ProjectURL is the project this client signs in to.
func (a *Auth) ProjectURL() string { return a.project }

// String never shows the key.
func (a *Auth) String() string { return "live.Auth(" + a.project + ")" }

// GoString never shows the key either.
func (a *Auth) GoString() string { return a.String() }

// SignIn signs in with an email and a password (POST
// /auth/v1/token?grant_type=password). Refused credentials are
// ErrInvalidCredentials; the password goes nowhere but the request body.
func (a *Auth) SignIn(ctx context.Context, email, password string) (*Session, error) {
	email = strings.TrimSpace(email)
	if email == "" || !strings.Contains(email, "@") {
		return nil, domain.Invalid("email", "an email address is required")
	}
	if password == "" {
		return nil, domain.Invalid("password", "required")
	}
	s, err := a.token(ctx, "password", map[string]string{"email": email, "password": password})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Refresh exchanges s's refresh token for a new session (POST
// /auth/v1/token?grant_type=refresh_token). Supabase rotates refresh
// tokens: the returned session replaces s and must be saved at once. A
// refused refresh token is ErrSessionEnded.
func (a *Auth) Refresh(ctx context.Context, s *Session) (*Session, error) {
	if s == nil || s.refresh == "" {
		return nil, authError("no refresh token", ErrNotSignedIn)
	}
	if err := a.sameProject(s); err != nil {
		return nil, err
	}
	return a.token(ctx, "refresh_token", map[string]string{"refresh_token": s.refresh.reveal()})
}

// SignOut revokes s on the server (POST /auth/v1/logout?scope=local: this
// session's refresh tokens; other devices stay signed in). An access token
// the server no longer accepts means there is nothing left to revoke with
// it: ErrSessionEnded.
func (a *Auth) SignOut(ctx context.Context, s *Session) error {
	if s == nil || s.access == "" {
		return authError("no session", ErrNotSignedIn)
	}
	if err := a.sameProject(s); err != nil {
		return err
	}
	status, body, err := a.post(ctx, "/auth/v1/logout?scope=local", s.access, nil)
	if err != nil {
		return err
	}
	switch {
	case status >= 200 && status < 300:
		return nil
	case status == http.StatusUnauthorized || status == http.StatusForbidden || status == http.StatusNotFound:
		a.log.Debug("live: auth logout refused", "status", status, "code", decodeAuthError(body).code())
		return authError("sign-out refused the session", ErrSessionEnded)
	}
	return a.failure("logout", status, body)
}

func (a *Auth) sameProject(s *Session) error {
	if !sameProject(s.ProjectURL, a.project) {
		return authError(fmt.Sprintf("the session is for %s, not %s", s.ProjectURL, a.project), ErrNotSignedIn)
	}
	return nil
}

// tokenAnswer is the documented answer of /auth/v1/token.
type tokenAnswer struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int64  `json:"expires_in"`
	ExpiresAt    int64  `json:"expires_at"`
	RefreshToken string `json:"refresh_token"`
	User         struct {
		ID    string `json:"id"`
		Email string `json:"email"`
	} `json:"user"`
}

func (a *Auth) token(ctx context.Context, grant string, body map[string]string) (*Session, error) {
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("live: auth: encode: %w", domain.ErrInvalidInput)
	}
	status, answer, err := a.post(ctx, "/auth/v1/token?grant_type="+grant, "", raw)
	if err != nil {
		return nil, err
	}
	if status < 200 || status >= 300 {
		ae := decodeAuthError(answer)
		code := ae.code()
		switch {
		case grant == "password" && status == http.StatusBadRequest && (code == "invalid_grant" || code == "invalid_credentials"):
			return nil, authError("sign-in refused", ErrInvalidCredentials)
		case grant == "password" && code == "email_not_confirmed":
			return nil, authError("sign-in refused: the email address is not confirmed yet", ErrInvalidCredentials)
		case grant == "refresh_token" && (status == http.StatusBadRequest || status == http.StatusUnauthorized || status == http.StatusForbidden ||
			status == http.StatusNotFound) && code != "" && code != "over_request_rate_limit":
			a.log.Debug("live: auth refresh refused", "status", status, "code", code)
			return nil, authError("the saved session was refused ("+code+"): it expired, was revoked or signed out elsewhere", ErrSessionEnded)
		}
		return nil, a.failure("token "+grant, status, answer)
	}
	var t tokenAnswer
	if err := json.Unmarshal(answer, &t); err != nil {
		return nil, a.unavailable("token "+grant, fmt.Errorf("HTTP %d: undecodable answer", status))
	}
	now := a.now()
	exp := time.Unix(t.ExpiresAt, 0).UTC()
	if t.ExpiresAt <= 0 {
		exp = now.Add(time.Duration(t.ExpiresIn) * time.Second).UTC()
	}
	switch {
	case t.AccessToken == "" || t.RefreshToken == "" || t.User.ID == "":
		return nil, a.unavailable("token "+grant, errors.New("answer without access token, refresh token or user id"))
	case !strings.EqualFold(t.TokenType, "bearer"):
		return nil, a.unavailable("token "+grant, fmt.Errorf("token type %q", authCode(t.TokenType)))
	case t.ExpiresAt <= 0 && t.ExpiresIn <= 0:
		return nil, a.unavailable("token "+grant, errors.New("answer without expiry"))
	}
	return &Session{ProjectURL: a.project, UserID: t.User.ID, Email: t.User.Email, ExpiresAt: exp,
		access: secret(t.AccessToken), refresh: secret(t.RefreshToken)}, nil
}

// post sends one request to the Auth API: apikey always, the bearer only
// when given (logout), a JSON body when given.
func (a *Auth) post(ctx context.Context, path string, bearer secret, body []byte) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	var rd io.Reader = http.NoBody
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.project+path, rd)
	if err != nil {
		return 0, nil, a.unavailable(path, err)
	}
	req.Header.Set("apikey", a.apiKey.reveal())
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer.reveal())
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := a.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return 0, nil, a.unavailable(path, ctx.Err())
		}
		return 0, nil, a.unavailable(path, err)
	}
	defer drain(resp.Body)
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, nil, a.unavailable(path, err)
	}
	return resp.StatusCode, data, nil
}

func (a *Auth) unavailable(what string, cause error) error {
	a.log.Debug("live: auth unavailable", "call", strings.SplitN(what, "?", 2)[0], "err", cause)
	if errors.Is(cause, context.Canceled) || errors.Is(cause, context.DeadlineExceeded) {
		return fmt.Errorf("live: Supabase Auth did not answer: %w: %w", domain.ErrUnavailable, cause)
	}
	return fmt.Errorf("live: Supabase Auth did not answer: %w", domain.ErrUnavailable)
}

// failure is an answer that is neither success nor a refusal we classify:
// rate limits, server errors, a gateway refusing the key.
func (a *Auth) failure(what string, status int, body []byte) error {
	code := decodeAuthError(body).code()
	a.log.Debug("live: auth failed", "call", what, "status", status, "code", code)
	switch {
	case status == http.StatusTooManyRequests || code == "over_request_rate_limit":
		return fmt.Errorf("live: Supabase Auth is rate limiting sign-ins: wait a minute and retry: %w", domain.ErrUnavailable)
	case status == http.StatusUnauthorized && code == "":
		return fmt.Errorf("live: Supabase Auth refused the project key: check SUPABASE_ANON_KEY: %w", domain.ErrUnavailable)
	case status == http.StatusUnprocessableEntity:
		return fmt.Errorf("live: Supabase Auth refused the request (%s): %w", authCodeOr(code), domain.ErrInvalidInput)
	}
	return fmt.Errorf("live: Supabase Auth answered HTTP %d (%s): %w", status, authCodeOr(code), domain.ErrUnavailable)
}

// authErrorBody covers the error shapes GoTrue answers with: the OAuth
// shape {error, error_description} (token grants), its HTTP error shape
// {code: <status>, error_code, msg}, and, with the X-Supabase-Api-Version
// header, {code: "<error code>", message}.
type authErrorBody struct {
	Error       string          `json:"error"`
	Description string          `json:"error_description"`
	Code        json.RawMessage `json:"code"`
	ErrorCode   string          `json:"error_code"`
	Msg         string          `json:"msg"`
	Message     string          `json:"message"`
}

func decodeAuthError(b []byte) authErrorBody {
	var e authErrorBody
	_ = json.Unmarshal(b, &e)
	return e
}

// code is the stable error code of any shape ("" when none), reduced to a
// safe identifier: only codes are ever shown, never a server message.
func (e authErrorBody) code() string {
	var s string
	switch {
	case e.ErrorCode != "":
		s = e.ErrorCode
	case len(e.Code) > 0 && e.Code[0] == '"':
		_ = json.Unmarshal(e.Code, &s)
	case e.Error != "":
		s = e.Error
	}
	return authCode(s)
}

var codeRE = domain.LazyRegexp(`^[a-z0-9_.\-]{1,64}$`)

func authCode(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	if !codeRE().MatchString(s) {
		return ""
	}
	return s
}

func authCodeOr(s string) string {
	if s == "" {
		return "no error code"
	}
	return s
}
