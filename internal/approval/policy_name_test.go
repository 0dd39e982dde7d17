package approval

import (
	"errors"
	"strings"
	"testing"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// A policy name is bounded in characters, as live mode's
// seller_validate_policy counts them (PostgreSQL's length): a name of
// MaxPolicyNameLen accented letters is accepted however many bytes it
// takes, one more letter is refused.
func TestValidatePolicy_NameIsBoundedInCharactersLikeLiveMode(t *testing.T) {
	p := policy()
	p.Name = strings.Repeat("é", domain.MaxPolicyNameLen)
	if err := ValidatePolicy(p); err != nil {
		t.Errorf("a name of %d characters (%d bytes): %v", domain.MaxPolicyNameLen, len(p.Name), err)
	}
	p.Name += "é"
	if err := ValidatePolicy(p); !errors.Is(err, domain.ErrInvalidInput) {
		t.Errorf("a name of %d characters: %v", domain.MaxPolicyNameLen+1, err)
	}
}
