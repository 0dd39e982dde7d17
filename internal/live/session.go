package live

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"
)

// SessionFileName is the seller session's file in the data directory.
const SessionFileName = "seller-session.json"

// RefreshMargin is how long before its expiry an access token is
// refreshed: a call must not start with a token that dies on the way.
const RefreshMargin = 2 * time.Minute

// Session is a signed-in seller's Supabase Auth session. The tokens are
// unexported and of type secret: printing, logging or JSON-encoding a
// Session never shows them; only the session file holds them.
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
// it expires within RefreshMargin of now.
func (s *Session) Expired(now time.Time) bool { return !now.Add(RefreshMargin).Before(s.ExpiresAt) }

// Seller connects to the project as this session's user: o.URL the
// project URL, o.Key the anon key.
func (s *Session) Seller(o Options) (*Seller, error) {
	if !sameProject(s.ProjectURL, o.URL) {
		return nil, authError(fmt.Sprintf("the session is for %s, not %s", s.ProjectURL, strings.TrimRight(o.URL, "/")), ErrNotSignedIn)
	}
	return NewSeller(o, s.access.reveal())
}

// String names the session, never its tokens.
func (s *Session) String() string {
	return fmt.Sprintf("session of %s on %s until %s", s.Email, s.ProjectURL, s.ExpiresAt.Format(time.RFC3339))
}

// GoString never shows the tokens either.
func (s *Session) GoString() string { return s.String() }

// SessionPath is where the seller session of a data directory is saved.
func SessionPath(dataDir string) string { return filepath.Join(dataDir, SessionFileName) }

// sessionFile is the file's JSON: the only place the tokens are written.
type sessionFile struct {
	Version      int       `json:"version"`
	ProjectURL   string    `json:"project_url"`
	UserID       string    `json:"user_id"`
	Email        string    `json:"email"`
	ExpiresAt    time.Time `json:"expires_at"`
	AccessToken  string    `json:"access_token"`
	RefreshToken string    `json:"refresh_token"`
}

// SaveSession writes s to path with mode 0600, atomically: a new file
// created exclusively (O_EXCL, so no other file or link is written through)
// in the same directory, synced, then renamed over path. A reader sees the
// old session or the new one, never half of one. The directory is created
// 0700 when missing.
func SaveSession(path string, s *Session) error {
	if s == nil || s.access == "" || s.refresh == "" {
		return errors.New("live: no session to save")
	}
	body, err := json.MarshalIndent(sessionFile{Version: 1, ProjectURL: s.ProjectURL, UserID: s.UserID, Email: s.Email,
		ExpiresAt: s.ExpiresAt.UTC(), AccessToken: s.access.reveal(), RefreshToken: s.refresh.reveal()}, "", "  ")
	if err != nil {
		return fmt.Errorf("live: encode the session: %w", err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("live: session directory: %w", err)
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := filepath.Join(dir, "."+filepath.Base(path)+"."+hex.EncodeToString(rnd[:])+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("live: write the session: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	// The umask can only remove bits; this makes 0600 exact whatever it is.
	if err := f.Chmod(0o600); err != nil && runtime.GOOS != "windows" {
		return fmt.Errorf("live: write the session: %w", err)
	}
	if _, err := f.Write(append(body, '\n')); err != nil {
		return fmt.Errorf("live: write the session: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("live: write the session: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("live: write the session: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("live: write the session: %w", err)
	}
	ok = true
	return nil
}

// LoadSession reads the session saved at path. No file is ErrNotSignedIn.
// A file that is not a regular file, or (outside Windows) that its group
// or others may access, is refused: tokens another account could have read
// are not used.
func LoadSession(path string) (*Session, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, authError("no saved session", ErrNotSignedIn)
	}
	if err != nil {
		return nil, fmt.Errorf("live: session file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("live: the session file %s is not a regular file: refusing it; delete it and sign in again", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("live: session file: %w", err)
	}
	defer f.Close()
	// The mode of what was opened, not of what the name pointed to a moment ago.
	if fi, err = f.Stat(); err != nil {
		return nil, fmt.Errorf("live: session file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("live: the session file %s is not a regular file: refusing it; delete it and sign in again", path)
	}
	if perm := fi.Mode().Perm(); runtime.GOOS != "windows" && perm&0o077 != 0 {
		return nil, fmt.Errorf("live: the session file %s is accessible by group or others (mode %#o): refusing it; "+
			"delete it and sign in again (trovesnap writes it 0600)", path, perm)
	}
	raw, err := io.ReadAll(io.LimitReader(f, 64<<10))
	if err != nil {
		return nil, fmt.Errorf("live: session file: %w", err)
	}
	var sf sessionFile
	if err := json.Unmarshal(raw, &sf); err != nil || sf.Version != 1 || sf.AccessToken == "" || sf.RefreshToken == "" ||
		sf.ProjectURL == "" || sf.UserID == "" {
		return nil, authError("the session file "+path+" is unreadable: sign in again", ErrNotSignedIn)
	}
	return &Session{ProjectURL: sf.ProjectURL, UserID: sf.UserID, Email: sf.Email, ExpiresAt: sf.ExpiresAt,
		access: secret(sf.AccessToken), refresh: secret(sf.RefreshToken)}, nil
}

// RemoveSession deletes the session file; it reports whether there was one.
func RemoveSession(path string) (bool, error) {
	err := os.Remove(path)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, fmt.Errorf("live: delete the session: %w", err)
}

// Current is the session saved at path, for this client's project,
// refreshed (and saved again) when its access token expires within
// RefreshMargin of now. A session of another project is ErrNotSignedIn; one
// the server no longer refreshes is ErrSessionEnded (the file stays: `trovesnap
// logout` or a new sign-in replaces it).
func (a *Auth) Current(ctx context.Context, path string, now time.Time) (*Session, error) {
	return a.CurrentUntil(ctx, path, now.Add(RefreshMargin))
}

// CurrentUntil is Current for a caller that will use the access token
// until the given instant (a long-running terminal): the session is
// refreshed unless its token outlives it.
func (a *Auth) CurrentUntil(ctx context.Context, path string, until time.Time) (*Session, error) {
	s, err := LoadSession(path)
	if err != nil {
		return nil, err
	}
	if !sameProject(s.ProjectURL, a.project) {
		return nil, authError(fmt.Sprintf("the saved session is for %s, but SUPABASE_URL is %s", s.ProjectURL, a.project), ErrNotSignedIn)
	}
	if until.Before(s.ExpiresAt) {
		return s, nil
	}
	fresh, err := a.Refresh(ctx, s)
	if err != nil {
		return nil, err
	}
	// Refresh tokens rotate: the old one is spent, so the new session is
	// saved before anything uses it.
	if err := SaveSession(path, fresh); err != nil {
		return nil, err
	}
	return fresh, nil
}

// Source is the token source of a long-lived Seller over the session saved
// at path: every call reads the current session, refreshing (and saving) it
// when its token is about to expire. Calls are serialised, because a
// refresh token is single-use: two refreshes racing would end the session.
func (a *Auth) Source(path string, now func() time.Time) TokenSource {
	var mu sync.Mutex
	return func(ctx context.Context) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		s, err := a.Current(ctx, path, now())
		if err != nil {
			return "", err
		}
		return s.access.reveal(), nil
	}
}

// sameProject compares two project URLs as the server would: scheme and
// host case-insensitively, the path exactly, a trailing slash ignored.
func sameProject(a, b string) bool {
	norm := func(s string) string {
		u, err := url.Parse(strings.TrimSpace(s))
		if err != nil || u.Host == "" {
			return "\x00" + s
		}
		return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host) + strings.TrimRight(u.Path, "/")
	}
	return norm(a) == norm(b)
}
