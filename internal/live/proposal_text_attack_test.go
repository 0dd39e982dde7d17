package live_test

import (
	"fmt"
	"strings"
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

// A notification's selection basis and channels are the builder's lists
// (domain.NotificationAudiences, NotificationChannels, generated for
// derive_proposal): anything else in a body is refused, nothing stored.
func TestAttack_ProposalNotificationTextTheDatabaseDoesNotDerive(t *testing.T) {
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
	}, "invalid_input:proposal", "notification")
	for name, chans := range map[string][]string{"a channel with control sequences": {"email" + evil}, "an unknown channel": {"fax"},
		"a channel twice": {"email", "email"}, "no channel": {}} {
		a.t.Logf("forging %s", name)
		a.forge(note, func(x *domain.Proposal) {
			n := *x.Notification
			n.Channels = chans
			x.Notification = &n
			// The change's text names the channels too: forged alike, so
			// only the lists can refuse it.
			x.Changes[0].To = strings.Replace(fmt.Sprint(x.Changes[0].To), "via email", "via "+strings.Join(chans, ","), 1)
		}, "invalid_input:proposal", "is not what the current state of the targets gives")
	}
}
