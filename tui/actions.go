package tui

import (
	"time"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// Action is what a screen asks the root model to do after a key press.
// Screens return Actions instead of acting, so they hold no I/O and a test
// can assert exactly what a key asked for.
type Action interface{ action() }

// Navigation.
type (
	// Back leaves the current screen (esc). Leaving a proposal undecided is
	// how a seller skips it: it stays pending.
	Back struct{}
	// NextTab switches to the next tab (tab).
	NextTab struct{}
	// Quit ends the program (q).
	Quit struct{}
	// OpenProposal shows one proposal with everything needed to decide.
	OpenProposal struct{ ID string }
	// OpenTrail shows a proposal's audit trail and full hash.
	OpenTrail struct{ ProposalID string }
	// Notice shows a message in the status line (a refusal, a hint).
	Notice struct {
		Text string
		Err  bool
	}
)

// Decisions on proposals: Start* open a confirmation, which returns the
// matching write action only when the seller presses y.
type (
	StartApprove struct{ ID string }
	StartDeny    struct{ ID string }
	// Approve issues a human grant for the proposal whose hash the seller
	// reviewed; a proposal that changed since is refused.
	Approve struct {
		ProposalID  string
		Hash        string
		Constraints domain.GrantConstraints
		TTL         time.Duration
	}
	// Deny rejects a pending proposal with an optional reason (recorded).
	Deny struct {
		ProposalID string
		Reason     string
	}
)

// Administration of grants, automation policies and clients. Ask* opens a
// confirmation offering the Choices; the confirmation returns the write.
type (
	AskAdmin struct {
		Kind    adminKind
		ID      string
		Choices []string // target statuses, e.g. suspended, revoked
	}
	RevokeGrant     struct{ GrantID string }
	SetPolicyStatus struct{ PolicyID, Status string }
	SetClientStatus struct{ ClientID, Status string }
)

type adminKind int

const (
	adminGrant adminKind = iota
	adminPolicy
	adminClient
)

func (Back) action()            {}
func (NextTab) action()         {}
func (Quit) action()            {}
func (OpenProposal) action()    {}
func (OpenTrail) action()       {}
func (Notice) action()          {}
func (StartApprove) action()    {}
func (StartDeny) action()       {}
func (Approve) action()         {}
func (Deny) action()            {}
func (AskAdmin) action()        {}
func (RevokeGrant) action()     {}
func (SetPolicyStatus) action() {}
func (SetClientStatus) action() {}
