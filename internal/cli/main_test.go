package cli_test

import (
	"os"
	"testing"

	"github.com/zalando/go-keyring"

	"github.com/triunalabs/trovesnap/internal/live/pgtest"
)

// One PostgreSQL 15 cluster for the package's live-mode tests (the seller
// commands against the seller RPCs): started here, stopped after the last
// test. Tests that do not call pgtest.Need never touch it; without the
// PostgreSQL binaries those that do skip (see pgtest.Main for CI).
//
// The OS credential store is go-keyring's in-memory mock: no test reads or
// writes the developer's real Keychain or Secret Service.
func TestMain(m *testing.M) {
	keyring.MockInit()
	os.Exit(pgtest.Main(m))
}
