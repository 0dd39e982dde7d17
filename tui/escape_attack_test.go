package tui

import (
	"strings"
	"testing"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/approval"
	"github.com/triunalabs/trovesnap/internal/domain"
)

// Attack (DESIGN "the agent's shell"; live mode): a client token's holder
// sends mcp_create_proposal a body of its own. The database holds every
// derived field to what it derives, but some fields it only bounds or takes
// from the body as they are: the executing tool's version (non-empty), a
// notification's channels and selection basis (strings). The seller's
// approval screen prints them: terminal control sequences in them (clear
// the screen, move the cursor over the warnings, OSC 52 to the clipboard)
// must not reach the seller's terminal raw.
func TestAttack_DetailPrintsNoControlCharactersOfAProposalBody(t *testing.T) {
	h := newHarness(t)
	m := h.open(fixtures.DemoUserID)
	const evil = "\x1b[2J\x1b[H\x1b]52;c;cm0gLXJmIH4=\x07\rvalid"
	p := domain.Proposal{ID: "proposal_evil1", TenantID: fixtures.DemoTenantID, Action: domain.ActionBuyerNotify,
		Tool:        domain.ExecutingTool{Name: "trove_send_buyer_notification", Version: "1.0.0" + evil},
		RequestedBy: domain.Requester{ClientID: fixtures.DemoClientID, ActorID: fixtures.DemoUserID},
		TargetKind:  "sale", TargetIDs: []string{fixtures.PublishedSaleID}, Status: domain.ProposalPending,
		CreatedAt: h.clock.Now(), ExpiresAt: h.clock.Now().Add(domain.DefaultProposalTTL),
		Notification: &domain.NotificationPlan{AudienceSize: 3, SelectionBasis: "followed_sale" + evil,
			Channels: []string{"email" + evil}, MessagePreview: "hi"},
		Validation: domain.ProposalValidation{Status: "valid"}}
	m.s.reviews = map[string]reviewResult{p.ID: {Review: approval.Review{Proposal: p}}}
	lines := detailScreen{id: p.ID}.lines(&m.s)
	for _, l := range lines {
		for _, c := range []string{"\x1b[2J", "\x1b]52", "\x07", "\r"} {
			if strings.Contains(l, c) {
				t.Errorf("the detail prints %q raw: %q", c, l)
			}
		}
	}
}
