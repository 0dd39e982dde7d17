package tui

import (
	"context"
	"time"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// Backend is what the approval terminal reads and writes. It is the
// approval admin surface plus the few client and audit operations the
// other tabs need; the embedded store satisfies it through a two-line
// adapter (its event filter type belongs to the store package, which this
// package must not import).
type Backend interface {
	domain.ApprovalAdmin
	ListClients(ctx context.Context, tenantID string) ([]domain.Client, error)
	// SetClientStatus suspends, reactivates or revokes a client; the
	// backend refuses an actor without client.manage in its tenant.
	SetClientStatus(ctx context.Context, id, status, by string) (domain.Client, error)
	// EffectiveLimits bounds the grant constraints a seller may set.
	EffectiveLimits(ctx context.Context, tenantID, clientID string) (domain.Limits, error)
	// AuditTrail returns the events of one correlation id (a proposal, its
	// approval and its execution) in append order.
	AuditTrail(ctx context.Context, tenantID, correlationID string) ([]domain.Event, error)
}

// Options configure the terminal. Backend, TenantID and ActorID are
// required; the command resolves them before the terminal starts.
type Options struct {
	Backend  Backend
	TenantID string
	ActorID  string
	// Mode is shown in the title ("mock": nothing reaches TroveSnap).
	Mode string
	// Clock and IDs stamp grants; defaults: the system clock, random ids.
	Clock domain.Clock
	IDs   domain.IDs
	// RiskOf names the §10 risk of an executing tool. The catalog knows it
	// and this package may not import the catalog, so the command passes
	// its lookup in. Nil or "" shows "unknown".
	RiskOf func(tool string) string
	// ChangeVisible says whether a role may see the values of a proposal
	// change on a field: the catalog's item projection (catalog.ChangeVisible),
	// passed in like RiskOf. A change the seller's role may not see (a price,
	// for a role without item.read_pricing) is shown without its values.
	// Nil shows every value.
	ChangeVisible func(role, field string) bool
	// NoColor renders without colour (NO_COLOR); bold and reverse remain,
	// so the selection stays visible.
	NoColor bool
	// Tick is how often the countdowns advance: default 1s. Negative turns
	// the clock off entirely; tests send tickMsg themselves.
	Tick time.Duration
	// Poll is how often the store is re-read: default 2s. A proposal that
	// arrives, changes, expires or executes shows within one poll.
	Poll time.Duration
	// WaitForDB is how long a write keeps retrying while another process
	// (a running MCP server) holds the database: default 2 minutes.
	WaitForDB time.Duration
}

const (
	defaultTick      = time.Second
	defaultPoll      = 2 * time.Second
	defaultWaitForDB = 2 * time.Minute
)

func (o Options) withDefaults() Options {
	if o.Clock == nil {
		o.Clock = domain.SystemClock{}
	}
	if o.IDs == nil {
		o.IDs = domain.RandomIDs{}
	}
	if o.Tick == 0 {
		o.Tick = defaultTick
	}
	if o.Poll == 0 {
		o.Poll = defaultPoll
	}
	if o.WaitForDB == 0 {
		o.WaitForDB = defaultWaitForDB
	}
	return o
}

func (o Options) changeVisible(role, field string) bool {
	return o.ChangeVisible == nil || o.ChangeVisible(role, field)
}

func (o Options) risk(tool string) string {
	if o.RiskOf != nil {
		if r := o.RiskOf(tool); r != "" {
			return r
		}
	}
	return "unknown"
}
