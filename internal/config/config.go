// Package config resolves trovesnap's start-up configuration: mode, data
// directory, database path and durability. It is fixed at start-up from
// flags and the environment, never from a tool argument.
package config

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// Environment variable names (documented in the README).
const (
	EnvMode        = "TROVESNAP_MODE"         // mock | live; unset = mock unless live config is present
	EnvDB          = "TROVESNAP_DB"           // database path
	EnvDataDir     = "TROVESNAP_DATA_DIR"     // data directory (default: platform data dir)
	EnvSync        = "TROVESNAP_SYNC"         // normal (default) | full
	EnvClientToken = "TROVESNAP_CLIENT_TOKEN" // the MCP client's credential (stdio)
	EnvSupabaseURL = "SUPABASE_URL"
	// EnvSupabaseAPIKey is the project's public (anon or publishable) key.
	// It is the same for every user of the project and grants nothing by
	// itself: the MCP server's authority is its client token, a seller's
	// their own session.
	EnvSupabaseAPIKey = "SUPABASE_ANON_KEY"
	// EnvRetiredServerKey named a key for the trovesnap_mcp role that every
	// host shared. The database no longer honours it; a host that still
	// sets it is refused at start, so the key is removed from host config.
	EnvRetiredServerKey = "TROVESNAP_SUPABASE_KEY"
)

// ErrLiveUnavailable means live mode was requested or configured but cannot
// run; the server refuses to start rather than silently falling back.
var ErrLiveUnavailable = errors.New("live mode unavailable")

// ErrInvalid marks a configuration value that cannot be used.
var ErrInvalid = errors.New("invalid configuration")

// Config is the resolved start-up configuration. It never holds a secret in
// a field that is printed: the client token is kept apart.
type Config struct {
	Mode         domain.Mode `json:"mode"`
	ModeReason   string      `json:"mode_reason"`
	DataDir      string      `json:"data_dir"`
	DBPath       string      `json:"db_path"`
	DBPathSource string      `json:"db_path_source"` // flag | env | default
	Synchronous  string      `json:"synchronous"`    // NORMAL | FULL
	// SupabaseURL is the project URL in live mode ("" in mock mode).
	SupabaseURL    string `json:"supabase_url,omitempty"`
	clientToken    string
	supabaseAPIKey string
}

// ClientToken returns the MCP client credential from the environment.
func (c Config) ClientToken() string { return c.clientToken }

// SupabaseAPIKey returns the project's public key (sent as `apikey`).
func (c Config) SupabaseAPIKey() string { return c.supabaseAPIKey }

// Load resolves the configuration. getenv is os.Getenv in production; dbFlag
// is the --db flag value ("" when not given).
func Load(getenv func(string) string, dbFlag string) (Config, error) {
	c := Config{Synchronous: "NORMAL", clientToken: strings.TrimSpace(getenv(EnvClientToken))}
	switch s := strings.ToLower(strings.TrimSpace(getenv(EnvSync))); s {
	case "", "normal":
	case "full":
		c.Synchronous = "FULL"
	default:
		return c, fmt.Errorf("%w: %s=%q: want normal or full", ErrInvalid, EnvSync, s)
	}

	// A project is configured by its URL and its public key — the same on
	// the MCP server's host and a seller's machine. What a process may do
	// comes from the client token (mcp serve) or the seller's sign-in.
	if strings.TrimSpace(getenv(EnvRetiredServerKey)) != "" {
		return c, fmt.Errorf("%w: %s is set: this release no longer uses a shared server key — remove it from every host's "+
			"configuration (and rotate it in the project); live mode needs only %s, %s and the client's %s",
			ErrInvalid, EnvRetiredServerKey, EnvSupabaseURL, EnvSupabaseAPIKey, EnvClientToken)
	}
	sbURL, sbAnon := strings.TrimSpace(getenv(EnvSupabaseURL)), strings.TrimSpace(getenv(EnvSupabaseAPIKey))
	liveConfigured := sbURL != "" && sbAnon != ""
	switch m := strings.ToLower(strings.TrimSpace(getenv(EnvMode))); m {
	case "mock":
		c.Mode, c.ModeReason = domain.ModeMock, EnvMode+"=mock"
	case "live":
		if !liveConfigured {
			return c, fmt.Errorf("%w: %s=live needs %s and %s to be set",
				ErrLiveUnavailable, EnvMode, EnvSupabaseURL, EnvSupabaseAPIKey)
		}
		c.Mode, c.ModeReason = domain.ModeLive, EnvMode+"=live"
	case "":
		if liveConfigured {
			c.Mode, c.ModeReason = domain.ModeLive, EnvSupabaseURL+" and "+EnvSupabaseAPIKey+" are set: live mode"
		} else {
			c.Mode, c.ModeReason = domain.ModeMock, "no live configuration ("+EnvSupabaseURL+" or "+EnvSupabaseAPIKey+" unset): mock mode"
		}
	default:
		return c, fmt.Errorf("%w: %s=%q: want mock or live", ErrInvalid, EnvMode, m)
	}
	if c.Mode == domain.ModeLive {
		u, err := url.Parse(sbURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			// The value is not echoed: a misplaced key must not land in a log.
			return c, fmt.Errorf("%w: %s must be the project URL, such as https://<project>.supabase.co", ErrLiveUnavailable, EnvSupabaseURL)
		}
		c.SupabaseURL = strings.TrimRight(u.String(), "/")
		if err := checkPublicKey(sbAnon); err != nil {
			return c, err
		}
		c.supabaseAPIKey = sbAnon
	}

	dir := getenv(EnvDataDir)
	if dir == "" {
		d, err := defaultDataDir(getenv)
		if err != nil {
			return c, err
		}
		dir = d
	}
	c.DataDir = dir
	switch {
	case dbFlag != "":
		c.DBPath, c.DBPathSource = dbFlag, "flag"
	case getenv(EnvDB) != "":
		c.DBPath, c.DBPathSource = getenv(EnvDB), "env"
	case c.Mode == domain.ModeLive:
		// Live mode's file holds the outbox and replay cache of real calls:
		// kept apart from the mock simulation's fixtures.
		c.DBPath, c.DBPathSource = filepath.Join(dir, "trovesnap-live.db"), "default"
	default:
		c.DBPath, c.DBPathSource = filepath.Join(dir, "trovesnap.db"), "default"
	}
	if abs, err := filepath.Abs(c.DBPath); err == nil {
		c.DBPath = abs
	}
	if abs, err := filepath.Abs(c.DataDir); err == nil {
		c.DataDir = abs // the setup guards and doctor compare it with other paths
	}
	return c, nil
}

// CheckClientToken refuses a TROVESNAP_CLIENT_TOKEN that is set but does not
// hold a credential. A host that writes ${TROVESNAP_CLIENT_TOKEN} into its
// config passes an empty string when the variable is unset in its own
// environment; read as "no credential", that would make `mcp serve` the mock
// demo client — the owner, with every tool. So only an unset variable means
// "no credential": a set one must be a well-formed client token (or
// "public", the explicit anonymous buyer). lookup is os.LookupEnv in
// production. The value is never part of the error.
func CheckClientToken(lookup func(string) (string, bool)) error {
	v, set := lookup(EnvClientToken)
	if !set {
		return nil
	}
	t := strings.TrimSpace(v)
	switch {
	case t == "":
		return fmt.Errorf("%w: %s is set but empty: set it to the client token shown at registration, or unset it (mock mode then serves the demo client)",
			ErrInvalid, EnvClientToken)
	case t == domain.PublicCredential, domain.WellFormedToken(t):
		return nil
	default:
		return fmt.Errorf("%w: %s does not hold a client token (%q followed by 52 letters and digits, as shown at registration) or %q",
			ErrInvalid, EnvClientToken, domain.TokenPrefix, domain.PublicCredential)
	}
}

// defaultDataDir is the platform data directory: $XDG_DATA_HOME/trovesnap
// (or ~/.local/share/trovesnap) on Linux, ~/Library/Application
// Support/trovesnap on macOS, %LocalAppData%\trovesnap on Windows.
func defaultDataDir(getenv func(string) string) (string, error) {
	switch runtime.GOOS {
	case "windows":
		if d := getenv("LocalAppData"); d != "" {
			return filepath.Join(d, "trovesnap"), nil
		}
	case "darwin":
		if h, err := os.UserHomeDir(); err == nil {
			return filepath.Join(h, "Library", "Application Support", "trovesnap"), nil
		}
	default:
		if d := getenv("XDG_DATA_HOME"); d != "" && filepath.IsAbs(d) {
			return filepath.Join(d, "trovesnap"), nil
		}
		if h := getenv("HOME"); h != "" {
			return filepath.Join(h, ".local", "share", "trovesnap"), nil
		}
	}
	h, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("%w: no data directory: set %s or %s", ErrInvalid, EnvDataDir, EnvDB)
	}
	return filepath.Join(h, ".local", "share", "trovesnap"), nil
}

// checkPublicKey refuses a key that is not the project's public key: a
// secret key (sb_secret_…) or a JWT whose role is not anon (the service
// role's, or the retired trovesnap_mcp key). Setup previews print this key
// and every host holds it, so a secret pasted here would be handed to every
// agent; the value is never echoed.
func checkPublicKey(k string) error {
	bad := fmt.Errorf("%w: %s is not the project's public (anon or publishable) key — it looks like a secret or service key, "+
		"which must never be on a seller's machine: use the anon/publishable key from the project's API settings", ErrInvalid, EnvSupabaseAPIKey)
	if strings.HasPrefix(k, "sb_secret_") {
		return bad
	}
	parts := strings.Split(k, ".")
	if len(parts) != 3 {
		return nil // a publishable key (sb_publishable_…) or another opaque public key
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return bad
	}
	var claims struct {
		Role string `json:"role"`
	}
	if json.Unmarshal(payload, &claims) != nil || claims.Role != "anon" {
		return bad
	}
	return nil
}
