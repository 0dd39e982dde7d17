package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/zalando/go-keyring"
)

// KeyringService is the service name under which the OS credential store
// keeps seller sessions; the account is the project URL, so sessions of two
// projects do not collide.
const KeyringService = "trovesnap"

// LegacySessionFileName is the session file of releases that kept the
// session in the data directory. It is never read as a session any more:
// login and logout delete it.
const LegacySessionFileName = "seller-session.json"

// maxStoredSession bounds what is written to the credential store. Windows
// Credential Manager takes at most 2,560 bytes and the macOS Keychain about
// 3,000 with the names: the stored JSON keeps only the refresh token, the
// user id and the email (the access token is re-derived by a refresh).
const maxStoredSession = 2048

// RefreshMargin is how long before its expiry an access token is
// refreshed: a call must not start with a token that dies on the way.
const RefreshMargin = 2 * time.Minute

// Session is a signed-in seller's Supabase Auth session. The tokens are
// unexported and of type secret: printing, logging or JSON-encoding a
// Session never shows them; only the OS credential store holds the refresh
// token, and only this process's memory the access token.
type Session struct {
	// ProjectURL is the project the session belongs to (SUPABASE_URL).
	ProjectURL string `json:"project_url"`
	// UserID is the Supabase Auth user id: the JWT `sub` the database links
	// to a TroveSnap user.
	UserID    string    `json:"user_id"`
	Email     string    `json:"email"`
	ExpiresAt time.Time `json:"expires_at"`
	access    secret
	refresh   secret
}

// Expired reports whether the access token must be refreshed before use:
// it expires within RefreshMargin of now (or there is none: a session read
// from the credential store has only its refresh token).
func (s *Session) Expired(now time.Time) bool {
	return s.access == "" || !now.Add(RefreshMargin).Before(s.ExpiresAt)
}

// Seller connects to the project as this session's user: o.URL the
// project URL, o.Key the anon key.
func (s *Session) Seller(o Options) (*Seller, error) {
	if !sameProject(s.ProjectURL, o.URL) {
		return nil, authError(fmt.Sprintf("the session is for %s, not %s", s.ProjectURL, strings.TrimRight(o.URL, "/")), ErrNotSignedIn)
	}
	if s.access == "" {
		return nil, authError("the session has no access token yet", ErrNotSignedIn)
	}
	return NewSeller(o, s.access.reveal())
}

// String names the session, never its tokens.
func (s *Session) String() string {
	return fmt.Sprintf("session of %s on %s until %s", s.Email, s.ProjectURL, s.ExpiresAt.Format(time.RFC3339))
}

// GoString never shows the tokens either.
func (s *Session) GoString() string { return s.String() }

// Sessions keeps the seller sessions of this process: always in memory
// (the access token lives nowhere else), and in the OS credential store
// (macOS Keychain, Windows Credential Manager, Secret Service on Linux)
// when there is one, so that the next process finds the session. Where
// there is none the session lasts as long as the process: each seller
// command signs in on its own. No session is ever written to a file, which
// any process of the same OS user — an agent's shell included — could read.
// It is safe for concurrent use.
type Sessions struct {
	mu      sync.Mutex
	keyring bool   // the OS credential store keeps the sessions
	why     string // memory only: why
	mem     map[string]*Session
}

// MemorySessions keeps sessions in this process's memory only; why says
// why (for messages).
func MemorySessions(why string) *Sessions {
	return &Sessions{why: why, mem: map[string]*Session{}}
}

// OpenSessions uses the OS credential store when it answers, and this
// process's memory otherwise (Persistent is then false and Why says what
// the store answered).
func OpenSessions() *Sessions {
	// A read of an entry that need not exist: it answers "not found" when
	// the store works, an error when there is none (no Secret Service on
	// the D-Bus session bus, no D-Bus at all, …).
	if _, err := keyring.Get(KeyringService, "availability probe"); err != nil && !errors.Is(err, keyring.ErrNotFound) {
		return MemorySessions("no OS credential store answered: " + oneLine(err.Error()))
	}
	return &Sessions{keyring: true, mem: map[string]*Session{}}
}

// Persistent reports whether sessions outlive this process (the OS
// credential store keeps them).
func (ss *Sessions) Persistent() bool { return ss.keyring }

// Why says why sessions are kept in memory only ("" when they are not).
func (ss *Sessions) Why() string { return ss.why }

// Where names where sessions are kept, for messages.
func (ss *Sessions) Where() string {
	if ss.keyring {
		return fmt.Sprintf("the OS credential store (service %q)", KeyringService)
	}
	return "this process's memory"
}

// SessionAccount is the credential store's account of project's session
// (under KeyringService): the project URL as the server compares it.
func SessionAccount(project string) string { return projectKey(project) }

// storedSession is what the credential store holds: as little as lets the
// next process refresh (see maxStoredSession).
type storedSession struct {
	Version      int    `json:"v"`
	UserID       string `json:"user_id"`
	Email        string `json:"email,omitempty"`
	RefreshToken string `json:"refresh_token"`
}

// Load is the session of project. Not signed in (nothing kept, or signed
// out by another process) is ErrNotSignedIn. A session another process
// refreshed since this one read it is taken from the store: its rotated
// refresh token is the live one.
func (ss *Sessions) Load(project string) (*Session, error) {
	key := projectKey(project)
	ss.mu.Lock()
	defer ss.mu.Unlock()
	cached := ss.mem[key]
	if !ss.keyring {
		if cached == nil {
			return nil, authError("no session in this process (no credential store keeps one)", ErrNotSignedIn)
		}
		c := *cached
		return &c, nil
	}
	raw, err := keyring.Get(KeyringService, key)
	switch {
	case errors.Is(err, keyring.ErrNotFound):
		delete(ss.mem, key)
		return nil, authError("no saved session for "+strings.TrimRight(project, "/"), ErrNotSignedIn)
	case err != nil && cached != nil:
		c := *cached // the store is unreachable for a moment: this process's copy still holds
		return &c, nil
	case err != nil:
		return nil, fmt.Errorf("live: reading the session from the credential store: %s", oneLine(err.Error()))
	}
	var st storedSession
	if err := json.Unmarshal([]byte(raw), &st); err != nil || st.Version != 2 || st.RefreshToken == "" || st.UserID == "" {
		return nil, authError("the session in the credential store is unreadable: sign in again", ErrNotSignedIn)
	}
	if cached != nil && cached.refresh.reveal() == st.RefreshToken {
		c := *cached
		return &c, nil
	}
	s := &Session{ProjectURL: strings.TrimRight(project, "/"), UserID: st.UserID, Email: st.Email, refresh: secret(st.RefreshToken)}
	ss.mem[key] = s
	c := *s
	return &c, nil
}

// Save keeps s: in memory, and in the credential store when there is one.
// A store that refuses it leaves the session in memory for this process
// and says so.
func (ss *Sessions) Save(s *Session) error {
	if s == nil || s.refresh == "" || s.ProjectURL == "" {
		return errors.New("live: no session to save")
	}
	key := projectKey(s.ProjectURL)
	c := *s
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.mem[key] = &c
	if !ss.keyring {
		return nil
	}
	body, err := json.Marshal(storedSession{Version: 2, UserID: s.UserID, Email: s.Email, RefreshToken: s.refresh.reveal()})
	if err != nil {
		return fmt.Errorf("live: encode the session: %w", err)
	}
	if len(body) > maxStoredSession {
		return fmt.Errorf("live: the session (%d bytes) is too large for the credential store (at most %d): it is kept in memory for this process only",
			len(body), maxStoredSession)
	}
	if err := keyring.Set(KeyringService, key, string(body)); err != nil {
		// The store's own words, without anything that was being stored.
		msg := strings.ReplaceAll(oneLine(err.Error()), s.refresh.reveal(), redacted)
		return fmt.Errorf("live: the credential store refused the session (%s): it is kept in memory for this process only", msg)
	}
	return nil
}

// Remove forgets the session of project, in memory and in the credential
// store; it reports whether there was one.
func (ss *Sessions) Remove(project string) (bool, error) {
	key := projectKey(project)
	ss.mu.Lock()
	defer ss.mu.Unlock()
	_, had := ss.mem[key]
	delete(ss.mem, key)
	if !ss.keyring {
		return had, nil
	}
	err := keyring.Delete(KeyringService, key)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, keyring.ErrNotFound):
		return had, nil
	}
	return had, fmt.Errorf("live: deleting the session from the credential store: %s", oneLine(err.Error()))
}

// RemoveLegacySessionFile deletes the session file an older release left
// in dataDir, unread; it returns its path and whether there was one.
func RemoveLegacySessionFile(dataDir string) (string, bool, error) {
	path := filepath.Join(dataDir, LegacySessionFileName)
	err := os.Remove(path)
	switch {
	case err == nil:
		return path, true, nil
	case errors.Is(err, fs.ErrNotExist):
		return path, false, nil
	}
	return path, false, fmt.Errorf("live: deleting the old session file: %w", err)
}

// Current is the session of this client's project, refreshed (and saved
// again) when its access token expires within RefreshMargin of now. Not
// signed in is ErrNotSignedIn; a session the server no longer refreshes is
// ErrSessionEnded (it stays kept: `trovesnap logout` or a new sign-in
// replaces it).
func (a *Auth) Current(ctx context.Context, ss *Sessions, now time.Time) (*Session, error) {
	return a.CurrentUntil(ctx, ss, now.Add(RefreshMargin))
}

// CurrentUntil is Current for a caller that will use the access token
// until the given instant (a long-running terminal): the session is
// refreshed unless its token outlives it.
func (a *Auth) CurrentUntil(ctx context.Context, ss *Sessions, until time.Time) (*Session, error) {
	s, err := ss.Load(a.project)
	if err != nil {
		return nil, err
	}
	if s.access != "" && until.Before(s.ExpiresAt) {
		return s, nil
	}
	fresh, err := a.Refresh(ctx, s)
	if err != nil {
		return nil, err
	}
	// Refresh tokens rotate: the old one is spent, so the new session is
	// saved before anything uses it.
	if err := ss.Save(fresh); err != nil {
		return nil, err
	}
	return fresh, nil
}

// Source is the token source of a long-lived Seller over the kept session:
// every call takes the current session, refreshing (and saving) it when
// its token is about to expire. Calls are serialised, because a refresh
// token is single-use: two refreshes racing would end the session.
func (a *Auth) Source(ss *Sessions, now func() time.Time) TokenSource {
	var mu sync.Mutex
	return func(ctx context.Context) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		s, err := a.Current(ctx, ss, now())
		if err != nil {
			return "", err
		}
		return s.access.reveal(), nil
	}
}

// oneLine keeps the first line of a message from outside (a credential
// store's error), bounded.
func oneLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// projectKey is a project URL as the server would compare it: scheme and
// host case-insensitively, the path exactly, a trailing slash ignored. It
// is the credential store's account of the project's session.
func projectKey(s string) string {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || u.Host == "" {
		return strings.TrimRight(strings.TrimSpace(s), "/")
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host) + strings.TrimRight(u.Path, "/")
}

// sameProject compares two project URLs as the server would.
func sameProject(a, b string) bool {
	ka, kb := projectKey(a), projectKey(b)
	return ka != "" && ka == kb
}
