package live

import (
	"fmt"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// notYet is the answer of a Backend call the live database cannot serve:
// a proposal or an execution for an action that has no live domain
// function (proposals.go). The catalog does not offer such tools in live
// mode, so the gate never reaches them; a direct caller gets
// ErrUnavailable. Every Backend method itself is implemented: the two
// media writes, the last to join, store their bytes in Postgres (media.go,
// docs/live-media.md).
func notYet(method string) error {
	return fmt.Errorf("live: %s is not available in live mode yet: %w", method, domain.ErrUnavailable)
}
