// Package config resolves trovesnap's start-up configuration: mode, data
// directory, database path and durability. It is fixed at start-up from
// flags and the environment, never from a tool argument.
package config

import (
	"errors"
	"fmt"
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
	EnvSupabaseKey = "TROVESNAP_SUPABASE_KEY" // the dedicated server role's key
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
	clientToken  string
}

// ClientToken returns the MCP client credential from the environment.
func (c Config) ClientToken() string { return c.clientToken }

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

	liveConfigured := getenv(EnvSupabaseURL) != "" && getenv(EnvSupabaseKey) != ""
	switch m := strings.ToLower(strings.TrimSpace(getenv(EnvMode))); m {
	case "mock":
		c.Mode, c.ModeReason = domain.ModeMock, EnvMode+"=mock"
	case "live":
		if !liveConfigured {
			return c, fmt.Errorf("%w: %s=live needs %s and %s to be set", ErrLiveUnavailable, EnvMode, EnvSupabaseURL, EnvSupabaseKey)
		}
		return c, fmt.Errorf("%w: this build does not include the live Supabase backend yet; unset %s or set %s=mock", ErrLiveUnavailable, EnvMode, EnvMode)
	case "":
		if liveConfigured {
			return c, fmt.Errorf("%w: %s and %s are set, which selects live mode, but this build does not include the live Supabase backend yet; set %s=mock to run the embedded simulation", ErrLiveUnavailable, EnvSupabaseURL, EnvSupabaseKey, EnvMode)
		}
		c.Mode, c.ModeReason = domain.ModeMock, "no live configuration ("+EnvSupabaseURL+" and "+EnvSupabaseKey+" unset): mock mode"
	default:
		return c, fmt.Errorf("%w: %s=%q: want mock or live", ErrInvalid, EnvMode, m)
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
	default:
		c.DBPath, c.DBPathSource = filepath.Join(dir, "trovesnap.db"), "default"
	}
	if abs, err := filepath.Abs(c.DBPath); err == nil {
		c.DBPath = abs
	}
	return c, nil
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
