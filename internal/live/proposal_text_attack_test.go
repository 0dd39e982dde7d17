package live_test

import (
	"testing"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/domain"
)

// Attack (live, the seller's approval screen): the fields of a proposal
// body the database does not derive are only bounded — the executing
// tool's version must be non-empty, a notification's channels strings, its
// selection basis a string — so a token holder stores terminal control
// sequences the seller's terminal then shows (tui's detail now quotes
// them; the database should refuse them: a version is the catalog's, a
// channel and a selection basis are the builder's enums).
func TestAttack_ProposalBodyTextTheDatabaseDoesNotDerive(t *testing.T) {
	a := newAuthority(t)
	note, err := a.propose(authorityDraft(domain.ActionBuyerNotify, map[string]any{"audience": "followed_sale",
		"channels": []string{"email"}, "message_template": "Doors open"}, domain.TargetVersion{ID: fixtures.PublishedSaleID, Version: 4}))
	if err != nil {
		t.Fatal(err)
	}
	const evil = "\x1b[2J\x1b]52;c;cm0gLXJmIH4=\x07"
	a.forge(note, func(x *domain.Proposal) { x.Tool.Version = "1.0.0" + evil }, "invalid_input:tool", "")
	a.forge(note, func(x *domain.Proposal) { x.Tool.Version = "1.0" }, "invalid_input:tool", "")
	a.accept(note)
}

// Not fixed here (a generated enum list is the fix): a notification's
// selection basis and channels are taken from the body as they are.
func TestAttack_ProposalNotificationTextTheDatabaseDoesNotDerive(t *testing.T) {
	t.Skip("open finding F9 of #16's attack (closing note): the audience and channel lists go into internal/domain and are generated for mcp_create_proposal")
	a := newAuthority(t)
	note, err := a.propose(authorityDraft(domain.ActionBuyerNotify, map[string]any{"audience": "followed_sale",
		"channels": []string{"email"}, "message_template": "Doors open"}, domain.TargetVersion{ID: fixtures.PublishedSaleID, Version: 4}))
	if err != nil {
		t.Fatal(err)
	}
	const evil = "\x1b[2J\x1b]52;c;cm0gLXJmIH4=\x07"
	a.forge(note, func(x *domain.Proposal) {
		n := *x.Notification
		n.SelectionBasis = "followed_sale" + evil
		x.Notification = &n
	}, "invalid_input:notification", "")
}
