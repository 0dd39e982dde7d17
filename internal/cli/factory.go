package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/config"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/live"
	"github.com/triunalabs/trovesnap/store"
)

// IOStreams are the process streams; tests swap them for buffers.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// Factory carries what commands need; tests build one with a temp dir,
// buffers, a fixed clock and sequential ids.
type Factory struct {
	IO     IOStreams
	Getenv func(string) string
	Clock  domain.Clock
	IDs    domain.IDs
	// Executable is the absolute path of the installed binary, for setup
	// previews.
	Executable func() (string, error)
	// HTTPClient is the live backend's HTTP client (nil: a default client;
	// each RPC is bounded by its own timeout).
	HTTPClient *http.Client
	// LookupEnv tells a variable set to "" from an unset one (os.LookupEnv);
	// nil: a variable is set when Getenv returns a non-empty value.
	LookupEnv func(string) (string, bool)

	// sessions keeps the seller session for the life of the process (see
	// sessionStore).
	sessions *live.Sessions
}

// DefaultFactory is the production factory.
func DefaultFactory() *Factory {
	return &Factory{
		IO:     IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr},
		Getenv: os.Getenv,
		Clock:  domain.SystemClock{},
		IDs:    domain.RandomIDs{},
		Executable: func() (string, error) {
			p, err := os.Executable()
			if err != nil {
				return "", err
			}
			return filepath.EvalSymlinks(p)
		},
		LookupEnv: os.LookupEnv,
	}
}

// Config resolves the configuration with the --db flag value.
func (f *Factory) Config(dbFlag string) (config.Config, error) {
	return config.Load(f.Getenv, dbFlag)
}

// OpenStore opens (creating if new) the embedded store: in mock mode the
// simulation, seeded from fixtures; in live mode the local outbox and replay
// cache, which holds no fixture data.
func (f *Factory) OpenStore(ctx context.Context, cfg config.Config, logger *slog.Logger) (*store.Store, error) {
	var seed func() domain.Dataset
	if cfg.Mode != domain.ModeLive {
		seed = fixtures.Dataset // parsed only when a new database needs it
	}
	st, err := store.Open(ctx, cfg.DBPath, store.Options{
		Mode:        cfg.Mode,
		Clock:       f.Clock,
		IDs:         f.IDs,
		SeedFunc:    seed,
		Synchronous: cfg.Synchronous,
		Logger:      logger,
	})
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", cfg.DBPath, err)
	}
	return st, nil
}
