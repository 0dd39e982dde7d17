package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// SellerAudit is one tenant's plugin_event hash chain read through the
// seller_audit_* RPCs (migration 29) under the signed-in seller's token:
// what `trovesnap audit` verifies, traces and follows in live mode. The
// chain is computed by the database as each event is recorded; this side
// only reads it, so internal/audit.Verify checks the project's chain with
// the same code that checks the embedded store's.
type SellerAudit struct {
	s      *Seller
	tenant string
	// PageSize is how many events one seller_audit_chain call returns
	// (the RPC caps it at 20000).
	PageSize int
}

// chainPage is the RPCs' page size when none is set: large pages keep a
// verification of 100,000 events to a handful of calls, well under the
// answer cap.
const chainPage = 10000

// maxChainPage is seller_audit_chain's cap on a page.
const maxChainPage = 20000

// eventsPage is seller_audit_events' cap per call.
const eventsPage = 1000

// Audit returns the audit log of tenantID as the seller sees it. The RPCs
// refuse a non-member (permission_denied), a member without proposal.read
// (permission_denied) and a sale-scoped member (sale_assignment).
func (s *Seller) Audit(tenantID string) *SellerAudit {
	return &SellerAudit{s: s, tenant: tenantID, PageSize: chainPage}
}

// TenantID is the tenant whose chain a reads.
func (a *SellerAudit) TenantID() string { return a.tenant }

// chainRow is one event as the RPCs return it (domain.ChainRecord's fields
// and the stored body).
type chainRow struct {
	Seq             int64           `json:"seq"`
	ID              string          `json:"id"`
	TenantID        string          `json:"tenant_id"`
	CorrelationID   string          `json:"correlation_id"`
	RequestID       string          `json:"request_id"`
	CausationID     string          `json:"causation_id"` // seller_audit_events only
	ServerRequestID string          `json:"server_request_id"`
	ToolName        string          `json:"tool_name"`
	Outcome         string          `json:"outcome"`
	OccurredAt      string          `json:"occurred_at"`
	PrevHash        string          `json:"prev_hash"`
	EventHash       string          `json:"event_hash"`
	Body            json.RawMessage `json:"body"`
}

func (r chainRow) record() domain.ChainRecord {
	return domain.ChainRecord{Seq: r.Seq, ID: r.ID, TenantID: r.TenantID, CorrelationID: r.CorrelationID, CausationID: r.CausationID,
		RequestID: r.RequestID, ServerRequestID: r.ServerRequestID, ToolName: r.ToolName, Outcome: r.Outcome, OccurredAt: r.OccurredAt,
		Body: r.Body, PrevHash: r.PrevHash, EventHash: r.EventHash}
}

// BodyOnlyColumns names the record fields the database keeps in the body
// only: plugin_events has no causation_id column, so seller_audit_chain
// sends none and the verifier has no column to compare.
func (a *SellerAudit) BodyOnlyColumns() []string { return []string{"causation_id"} }

// ExactBodies: seller_audit_chain sends each body as the text its hash
// covers (migration 36; rows from before it canonicalised in SQL), so a
// body that does not hash as sent is modified.
func (a *SellerAudit) ExactBodies() bool { return true }

// chainFetchers is how many pages ScanChain reads at once: the database
// builds pages while the verifier hashes one (3 was fastest on two cores
// with the database on the same machine; 4 gained nothing).
const chainFetchers = 3

// ScanChain calls fn for every event of the tenant after afterSeq, in seq
// order, a page per call. Within a tenant seq order is commit order (the
// database serialises a tenant's appends), so paging by seq skips nothing
// that was committed before the page was read. seller_audit_chain_marks
// says first where the pages start, so that they are read chainFetchers at
// a time; a page that does not end where the next begins (events deleted
// meanwhile) ends that plan, and the scan goes on from the page's last
// event one page at a time, as it does after the last mark.
func (a *SellerAudit) ScanChain(ctx context.Context, afterSeq int64, fn func(rec domain.ChainRecord) error) error {
	// A page is full at the size the RPC answers: it caps p_limit.
	size := min(a.PageSize, maxChainPage)
	if size <= 0 {
		size = chainPage
	}
	fetch := func(ctx context.Context, after int64) ([]chainRow, error) {
		var raw rawAnswer
		if err := a.s.call(ctx, "seller_audit_chain", map[string]any{"p_tenant_id": a.tenant, "p_after_seq": after, "p_limit": size}, &raw); err != nil {
			return nil, err
		}
		page, err := parseChainPage(raw)
		if err != nil {
			return nil, fmt.Errorf("live: seller_audit_chain: %v: %w", err, domain.ErrUnavailable)
		}
		return page, nil
	}
	type result struct {
		page []chainRow
		err  error
	}
	plan, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stop(); wg.Wait() }()
	// The first page does not wait for the marks (which count the tenant's
	// events in the index): both are read at once.
	first := make(chan result, 1)
	wg.Add(1)
	go func(from int64) {
		defer wg.Done()
		p, err := fetch(plan, from)
		first <- result{p, err}
	}(afterSeq)
	var marks []int64
	if err := a.s.call(ctx, "seller_audit_chain_marks", map[string]any{"p_tenant_id": a.tenant, "p_after_seq": afterSeq, "p_every": size}, &marks); err != nil {
		return err
	}
	emit := func(page []chainRow) error {
		for _, r := range page {
			if r.Seq <= afterSeq {
				return fmt.Errorf("live: seller_audit_chain: page out of order at seq %d: %w", r.Seq, domain.ErrUnavailable)
			}
			afterSeq = r.Seq
			if err := fn(r.record()); err != nil {
				return err
			}
		}
		return nil
	}
	// The planned pages start at afterSeq and at each mark. Each is read
	// into its own channel, at most chainFetchers at once (the first holds
	// a slot already), and verified in order; leaving stops the reads still
	// planned and waits for those under way.
	starts := append([]int64{afterSeq}, marks...)
	results := make([]chan result, len(starts))
	results[0] = first
	for i := 1; i < len(results); i++ {
		results[i] = make(chan result, 1)
	}
	slots := make(chan struct{}, chainFetchers)
	slots <- struct{}{}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 1; i < len(starts); i++ {
			select {
			case slots <- struct{}{}:
			case <-plan.Done():
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				p, err := fetch(plan, starts[i])
				results[i] <- result{p, err}
			}()
		}
	}()
	done := false // every event read
	for i := range starts {
		// A cancelled scan stops at the next page: the planner stops
		// launching reads then, so the next page's may never come.
		if err := ctx.Err(); err != nil {
			return err
		}
		var res result
		select {
		case res = <-results[i]:
		case <-ctx.Done():
			return ctx.Err()
		}
		<-slots
		if res.err != nil {
			return res.err
		}
		if err := emit(res.page); err != nil {
			return err
		}
		full := len(res.page) == size
		if i == len(starts)-1 {
			done = !full // a full last page: events came after the marks
			break
		}
		if !full || afterSeq != starts[i+1] {
			break // the plan no longer holds: go on one page at a time
		}
	}
	stop()
	if done {
		return nil
	}
	for {
		page, err := fetch(ctx, afterSeq)
		if err != nil {
			return err
		}
		if err := emit(page); err != nil {
			return err
		}
		if len(page) < size {
			return nil
		}
	}
}

// ChainHeads returns the head of the tenant's chain (none when it is
// empty).
func (a *SellerAudit) ChainHeads(ctx context.Context) ([]domain.ChainHead, error) {
	var out []domain.ChainHead
	if err := a.s.call(ctx, "seller_audit_head", map[string]any{"p_tenant_id": a.tenant}, &out); err != nil {
		return nil, err
	}
	return sellerList(out), nil
}

// AuditEvents returns the tenant's events matching q, in seq order. A
// query naming another tenant matches nothing.
func (a *SellerAudit) AuditEvents(ctx context.Context, q domain.EventQuery) ([]domain.ChainRecord, error) {
	out := []domain.ChainRecord{}
	if q.TenantID != "" && q.TenantID != a.tenant {
		return out, nil
	}
	after := q.AfterSeq
	for {
		limit := eventsPage
		if q.Limit > 0 && q.Limit-len(out) < limit {
			limit = q.Limit - len(out)
		}
		var page []chainRow
		err := a.s.call(ctx, "seller_audit_events", map[string]any{"p_tenant_id": a.tenant, "p_id": q.ID, "p_request_id": q.RequestID,
			"p_server_request_id": q.ServerRequestID, "p_correlation_id": q.CorrelationID, "p_causation_id": q.CausationID,
			"p_after_seq": after, "p_limit": limit, "p_newest": q.Newest}, &page)
		if err != nil {
			return nil, err
		}
		for _, r := range page {
			out = append(out, r.record())
		}
		// The newest events come in one call (at most a page of them).
		if q.Newest || len(page) < limit || (q.Limit > 0 && len(out) >= q.Limit) {
			return out, nil
		}
		after = page[len(page)-1].Seq
	}
}

// ProposalCorrelation returns the correlation id of one of the tenant's
// proposals (for `audit trace PROPOSAL_ID`).
func (a *SellerAudit) ProposalCorrelation(ctx context.Context, id string) (string, error) {
	p, err := a.s.GetProposalAdmin(ctx, a.tenant, id)
	if err != nil {
		return "", err
	}
	return p.CorrelationID, nil
}

// GetProposalAdmin reads one proposal as the seller.
func (a *SellerAudit) GetProposalAdmin(ctx context.Context, tenantID, id string) (domain.Proposal, error) {
	return a.s.GetProposalAdmin(ctx, tenantID, id)
}

// GetGrant finds one of the tenant's grants (the seller RPCs list them;
// a trace looks up the few its events name).
func (a *SellerAudit) GetGrant(ctx context.Context, id string) (domain.Grant, error) {
	gs, err := a.s.ListGrants(ctx, a.tenant, "")
	if err != nil {
		return domain.Grant{}, err
	}
	for _, g := range gs {
		if g.ID == id {
			return g, nil
		}
	}
	return domain.Grant{}, fmt.Errorf("live: grant %s: %w", id, domain.ErrNotFound)
}

// GetClient reads one client as the seller.
func (a *SellerAudit) GetClient(ctx context.Context, id string) (domain.Client, error) {
	c, err := a.s.GetClient(ctx, id)
	if err != nil && errors.Is(err, domain.ErrPermissionDenied) {
		// A seller who may read the log but not manage clients still
		// gets the trace, without the client's current state.
		return domain.Client{}, fmt.Errorf("live: client %s: %w", id, domain.ErrNotFound)
	}
	return c, err
}

// GetPolicy reads one policy as the seller.
func (a *SellerAudit) GetPolicy(ctx context.Context, id string) (domain.Policy, error) {
	return a.s.GetPolicy(ctx, id)
}
