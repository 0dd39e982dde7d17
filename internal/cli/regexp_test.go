package cli_test

import (
	"testing"

	_ "github.com/triunalabs/trovesnap/internal/cli" // links every package of the binary
	"github.com/triunalabs/trovesnap/internal/domain"
)

// Every pattern the binary compiles lazily (domain.LazyRegexp) compiles: a
// bad one would otherwise panic at its first use, not at start.
func TestLazyRegexps_AllCompile(t *testing.T) {
	// 25 when this test was written: a drop means a package stopped being
	// linked here, or its patterns stopped going through LazyRegexp.
	if n := domain.MustCompileAll(); n < 25 {
		t.Fatalf("%d lazy patterns linked; want at least 25", n)
	}
}
