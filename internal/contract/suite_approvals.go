package contract

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/domain"
)

// runApprovals runs the contract cases of proposals, approval state and
// controlled actions (§14–§18), with grants issued by a human surface
// (Instance.Grants: the store, or a live seller session under the user's
// own JWT). Only the actions both backends execute are exercised:
// candidate promotion, item publication and sale publication.
func runApprovals(t *testing.T, open func(t *testing.T) Instance) {
	t.Run("Approvals/CreateProposal", func(t *testing.T) { testCreateProposal(t, open(t)) })
	t.Run("Approvals/CreateProposalRefused", func(t *testing.T) { testCreateProposalRefused(t, open(t)) })
	t.Run("Approvals/GetProposalAndState", func(t *testing.T) { testGetProposal(t, open(t)) })
	t.Run("Approvals/ExecutePromotion", func(t *testing.T) { testExecutePromotion(t, open(t)) })
	t.Run("Approvals/GrantRefusals", func(t *testing.T) { testGrantRefusals(t, open(t)) })
	t.Run("Approvals/StaleAfterApproval", func(t *testing.T) { testStaleAfterApproval(t, open(t)) })
	t.Run("Approvals/PublishItem", func(t *testing.T) { testPublishItem(t, open(t)) })
	t.Run("Approvals/PublishSale", func(t *testing.T) { testPublishSale(t, open(t)) })
	t.Run("Approvals/OneGrantRacedFromTwoBackends", func(t *testing.T) { testGrantRace(t, open(t)) })
	t.Run("Approvals/IssueGrantRefused", func(t *testing.T) { testIssueGrantRefused(t, open(t)) })
	t.Run("Approvals/ExecuteByPolicy", func(t *testing.T) { testExecuteByPolicy(t, open(t)) })
}

// Executing tools, their proposal tools and approval requirements, as the
// catalog defines them.
const (
	toolPromote     = "trove_execute_candidate_promotion"
	toolPublishItem = "trove_publish_item"
	toolPublishSale = "trove_publish_sale"
)

var proposingTool = map[string]string{
	toolPromote:     "trove_propose_candidate_promotion",
	toolPublishItem: "trove_propose_item_publication",
	toolPublishSale: "trove_propose_sale_publication",
}

func promotionDraft(id string, version int, fields map[string]any) domain.ProposalDraft {
	return domain.ProposalDraft{Action: domain.ActionPromoteCandidate, Tool: domain.ExecutingTool{Name: toolPromote, Version: "1.0.0"},
		Requirement: "human_or_policy", TargetIDs: []string{id}, ExpectedVersions: []domain.TargetVersion{{ID: id, Version: version}}, Fields: fields}
}

func itemPublicationDraft(id string, version int) domain.ProposalDraft {
	return domain.ProposalDraft{Action: domain.ActionPublishItem, Tool: domain.ExecutingTool{Name: toolPublishItem, Version: "1.0.0"},
		Requirement: "explicit_human", TargetIDs: []string{id}, ExpectedVersions: []domain.TargetVersion{{ID: id, Version: version}}}
}

func salePublicationDraft(id string, version int) domain.ProposalDraft {
	return domain.ProposalDraft{Action: domain.ActionPublishSale, Tool: domain.ExecutingTool{Name: toolPublishSale, Version: "1.0.0"},
		Requirement: "explicit_human", TargetIDs: []string{id}, ExpectedVersions: []domain.TargetVersion{{ID: id, Version: version}}}
}

// seal is the suite's ProposalSealer (the contract cannot import
// internal/approval): sha256 of the proposal's JSON without what is not
// content. Backends store whatever a sealer returns; resealing a proposal
// read back proves its content is what was sealed.
func seal(p domain.Proposal) (string, error) {
	p.ID, p.Hash, p.Status, p.CorrelationID, p.CreatedAt = "", "", "", "", time.Time{}
	p.ExpiresAt = p.ExpiresAt.UTC()
	b, err := json.Marshal(p)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// flow holds one instance and the owner's principal, and mints the write
// metadata the gate would send.
type flow struct {
	t     *testing.T
	in    Instance
	b     domain.Backend
	owner domain.Principal
	n     int
}

func newFlow(t *testing.T, in Instance) *flow {
	return &flow{t: t, in: in, b: in.Backend, owner: resolve(t, in.Backend, CredOwner)}
}

// writeMeta is the metadata of one call of tool: a fresh key, fingerprint
// and event id unless key is given (then the fingerprint is fp).
func (f *flow) writeMeta(p domain.Principal, tool, tier, key, fp string) domain.WriteMeta {
	f.n++
	if key == "" {
		key, fp = fmt.Sprintf("k%d", f.n), fmt.Sprintf("sha256:%02d", f.n)
	}
	ev := fmt.Sprintf("event_w%d", f.n)
	return domain.WriteMeta{
		Idem: domain.IdempotencyKey{TenantID: p.TenantID, ClientID: p.Client.ID, Tool: tool, ToolMajor: 1, Key: key, Fingerprint: fp},
		Event: domain.Event{ID: ev, TenantID: p.TenantID, CorrelationID: "corr_" + key, RequestID: "req_" + ev,
			ServerRequestID: "mcp_req_" + ev, Mode: f.b.Mode(), Client: p.Client,
			Tool:  domain.ToolRef{Name: tool, Version: "1.0.0", Tier: tier},
			Actor: domain.ActorRef{ID: p.ActorID, Type: p.ActorType}, Action: "mcp_tool_called", OccurredAt: fixtures.Epoch},
		Started: time.Now(),
	}
}

func (f *flow) propose(p domain.Principal, d domain.ProposalDraft) (domain.Proposal, domain.WriteOutcome, error) {
	return f.proposeKey(p, d, "", "")
}

func (f *flow) proposeKey(p domain.Principal, d domain.ProposalDraft, key, fp string) (domain.Proposal, domain.WriteOutcome, error) {
	return f.b.CreateProposal(ctx, p, f.writeMeta(p, proposingTool[d.Tool.Name], "action_proposal", key, fp), d, seal)
}

func (f *flow) mustPropose(d domain.ProposalDraft) domain.Proposal {
	f.t.Helper()
	prop, _, err := f.propose(f.owner, d)
	if err != nil {
		f.t.Fatalf("CreateProposal %s %v: %v", d.Action, d.TargetIDs, err)
	}
	return prop
}

// execMeta is the metadata the gate sends with an execution: the
// proposal's correlation and, for a grant, its id.
func (f *flow) execMeta(p domain.Principal, prop domain.Proposal, grantID, key, fp string) domain.WriteMeta {
	w := f.writeMeta(p, prop.Tool.Name, "controlled_action", key, fp)
	pid := prop.ID
	w.Event.CorrelationID = prop.CorrelationID
	w.Event.Approval = domain.EventApproval{ProposalID: &pid, Decision: "allowed", ProposalHash: prop.Hash}
	if grantID != "" {
		gid := grantID
		w.Event.Approval.ApprovalID = &gid
	}
	return w
}

func (f *flow) execute(b domain.Backend, p domain.Principal, prop domain.Proposal, auth domain.Authorization) (domain.ExecutionResult, domain.WriteOutcome, error) {
	return b.ExecuteProposal(ctx, p, f.execMeta(p, prop, auth.GrantID, "", ""), prop.ID, auth)
}

func allowed(prop domain.Proposal, grantID string) domain.Authorization {
	return domain.Authorization{Decision: "allowed", GrantID: grantID, ProposalHash: prop.Hash}
}

// grantFor is the human grant a seller's approval would issue for prop.
func grantFor(prop domain.Proposal, actorID string) domain.Grant {
	return domain.Grant{
		ID: domain.RandomIDs{}.New(domain.PrefixApproval), TenantID: prop.TenantID, ProposalID: prop.ID, ProposalHash: prop.Hash,
		IssuedBy: domain.GrantIssuer{Type: domain.IssuerHuman, ActorID: actorID, Surface: "contract"},
		Tool:     prop.Tool.Name, TargetIDs: slices.Clone(prop.TargetIDs),
		Constraints: domain.GrantConstraints{MaxItems: len(prop.TargetIDs), MaxCostUSD: prop.Impact.EstimatedCostUSD,
			AllowPublication: prop.Impact.PublicRecordsChanged > 0, AllowNotifications: prop.Impact.NotificationsSent > 0},
		Status: domain.GrantActive, SingleUse: true, IssuedAt: prop.CreatedAt, ExpiresAt: prop.ExpiresAt,
	}
}

// approve issues the owner's grant for prop.
func (f *flow) approve(prop domain.Proposal) domain.Grant {
	f.t.Helper()
	g, err := f.in.Grants(f.t, prop.TenantID, fixtures.DemoUserID).IssueGrant(ctx, grantFor(prop, fixtures.DemoUserID))
	if err != nil {
		f.t.Fatalf("IssueGrant for %s: %v", prop.ID, err)
	}
	return g
}

// unchanged fails unless no table but the bookkeeping ones changed since before.
func (f *flow) unchanged(before map[string]int64, what string) {
	f.t.Helper()
	if d := changed(before, f.in.Counts(f.t)); len(d) > 0 {
		f.t.Fatalf("%s wrote: %v", what, d)
	}
}

func (f *flow) grew(before map[string]int64, want map[string]int64) map[string]int64 {
	f.t.Helper()
	after := f.in.Counts(f.t)
	for table, n := range want {
		if d := after[table] - before[table]; d != n {
			f.t.Errorf("%s grew by %d, want %d", table, d, n)
		}
	}
	return after
}

func (f *flow) proposal(id string) domain.Proposal {
	f.t.Helper()
	prop, err := f.b.GetProposal(ctx, f.owner, id)
	if err != nil {
		f.t.Fatalf("GetProposal %s: %v", id, err)
	}
	return prop
}

func (f *flow) grants(prop domain.Proposal) []domain.Grant {
	f.t.Helper()
	g, _, _, err := f.b.ApprovalState(ctx, f.owner, prop.ID, prop.Tool.Name)
	if err != nil {
		f.t.Fatalf("ApprovalState %s: %v", prop.ID, err)
	}
	return g
}

// wantGrant fails unless prop's grants are exactly one, id, with status.
func (f *flow) wantGrant(prop domain.Proposal, id, status string) {
	f.t.Helper()
	gs := f.grants(prop)
	if len(gs) != 1 || gs[0].ID != id || gs[0].Status != status {
		f.t.Fatalf("grants of %s = %+v, want %s %s", prop.ID, gs, id, status)
	}
}

// unpricedCandidate creates a new-item candidate without a supplied price
// in saleID: its promotion sets no price, so a policy may run it (a price
// is a financial change, which no policy authorises).
func (f *flow) unpricedCandidate(saleID, title string) domain.Candidate {
	f.t.Helper()
	f.n++
	key := fmt.Sprintf("unpriced-%d", f.n)
	res, _, err := f.b.CreateCandidate(ctx, f.owner, meta(f.owner, key, "sha256:"+key, "event_"+strings.ReplaceAll(key, "-", "")),
		domain.NewCandidate{SaleID: saleID, Title: title, Category: "decor.lighting.lamp", Room: "den"})
	if err != nil {
		f.t.Fatalf("create an unpriced candidate: %v", err)
	}
	return f.candidate(saleID, res.CandidateID)
}

func (f *flow) candidate(saleID, id string) domain.Candidate {
	f.t.Helper()
	page, err := f.b.ListCandidates(ctx, f.owner, domain.CandidateQuery{SaleID: saleID, Limit: 100})
	if err != nil {
		f.t.Fatal(err)
	}
	for _, c := range page.Rows {
		if c.ID == id {
			return c
		}
	}
	f.t.Fatalf("candidate %s not listed in %s", id, saleID)
	return domain.Candidate{}
}

// item finds an item of the owner's tenant by walking ListItems q.
func (f *flow) item(q domain.ItemQuery, id string) (domain.Item, bool) {
	f.t.Helper()
	q.Limit = 100
	for pages := 0; pages < 100; pages++ {
		page, err := f.b.ListItems(ctx, f.owner, q)
		if err != nil {
			f.t.Fatal(err)
		}
		for _, it := range page.Rows {
			if it.ID == id {
				return it, true
			}
		}
		if page.NextCursor == "" {
			return domain.Item{}, false
		}
		if q.After, err = f.b.OpenCursor(ctx, f.owner, "items", page.NextCursor); err != nil {
			f.t.Fatal(err)
		}
	}
	f.t.Fatal("item pages do not end")
	return domain.Item{}, false
}

func (f *flow) mustItem(q domain.ItemQuery, id string) domain.Item {
	f.t.Helper()
	it, ok := f.item(q, id)
	if !ok {
		f.t.Fatalf("item %s not listed by %+v", id, q)
	}
	return it
}

func (f *flow) sale(id string) domain.Sale {
	f.t.Helper()
	page, err := f.b.ListSales(ctx, f.owner, domain.SaleQuery{Limit: 100})
	if err != nil {
		f.t.Fatal(err)
	}
	for _, s := range page.Rows {
		if s.ID == id {
			return s
		}
	}
	f.t.Fatalf("sale %s not listed", id)
	return domain.Sale{}
}

// lastEvent is the newest recorded plugin_event.
func (f *flow) lastEvent() domain.Event {
	f.t.Helper()
	ev := f.in.Events(f.t)
	if len(ev) == 0 {
		f.t.Fatal("no events")
	}
	return ev[len(ev)-1]
}

// outcome is what an applied target reports: simulated in mock mode.
func outcome(b domain.Backend) string {
	if b.Mode() == domain.ModeMock {
		return "simulated"
	}
	return "applied"
}

func wantErr(t *testing.T, err, sentinel error, what string) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Fatalf("%s: err = %v, want %v", what, err, sentinel)
	}
}

// sameContent fails unless got is want as stored: every field of the
// content, the hash, and a reseal that still matches it.
func sameContent(t *testing.T, got, want domain.Proposal) {
	t.Helper()
	g, w := got, want
	g.Status, w.Status = "", ""
	gj, _ := json.Marshal(g)
	wj, _ := json.Marshal(w)
	if string(gj) != string(wj) {
		t.Fatalf("proposal read back differs:\n got %s\nwant %s", gj, wj)
	}
	if h, err := seal(got); err != nil || h != got.Hash {
		t.Fatalf("resealed proposal %s = %s, %v; stored hash %s", got.ID, h, err, got.Hash)
	}
}

var (
	// Promotable candidates of the demo tenant (fixtures).
	candReviewed   = "candidate_773" // approved, version 2, sale_221
	candUnreviewed = fixtures.DemoCandidateID
	candDraftSale  = "candidate_776" // approved, version 2, sale_222
	candOther      = "candidate_777" // approved, version 2, sale_222
	candRejected   = "candidate_774" // rejected, version 2, sale_223
	candForeign    = "candidate_901" // tenant_456
	readyItem      = "item_1003"     // ready, version 2, sale_221 (published): title, category, price, published photos
	readyDraftSale = "item_1150"     // ready, version 2, in the draft sale_222
)

func testCreateProposal(t *testing.T, in Instance) {
	f := newFlow(t, in)
	c := f.candidate(fixtures.PublishedSaleID, candReviewed)
	before := in.Counts(t)
	prop, out, err := f.proposeKey(f.owner, promotionDraft(c.ID, c.Version, nil), "prop-1", "sha256:p1")
	if err != nil {
		t.Fatalf("CreateProposal: %v", err)
	}
	after := f.grew(before, map[string]int64{"proposals": 1, "idempotency_keys": 1, "plugin_events": 1, "items": 0, "approval_grants": 0})
	if !domain.ValidID(domain.PrefixProposal, prop.ID) || !strings.HasPrefix(prop.Hash, "sha256:") ||
		prop.Status != domain.ProposalPending || prop.TenantID != fixtures.DemoTenantID || prop.Action != domain.ActionPromoteCandidate ||
		prop.Tool.Name != toolPromote || prop.Requirement != "human_or_policy" || prop.TargetKind != "candidate" ||
		prop.RequestedBy != (domain.Requester{ClientID: fixtures.DemoClientID, ActorID: fixtures.DemoUserID}) ||
		prop.CorrelationID != "corr_prop-1" || !slices.Equal(prop.TargetIDs, []string{c.ID}) ||
		!slices.Equal(prop.ExpectedVersions, []domain.TargetVersion{{ID: c.ID, Version: c.Version}}) ||
		!slices.Equal(prop.SaleIDs, []string{c.SaleID}) || prop.ExpiresAt.Sub(prop.CreatedAt) != domain.DefaultProposalTTL {
		t.Fatalf("proposal = %+v", prop)
	}
	if h, err := seal(prop); err != nil || h != prop.Hash {
		t.Fatalf("the proposal is not sealed as returned: %s vs %s (%v)", h, prop.Hash, err)
	}
	wantChanges := []domain.FieldChange{
		{TargetID: c.ID, Field: "create_item.sale_id", To: c.SaleID}, {TargetID: c.ID, Field: "create_item.title", To: c.Title},
		{TargetID: c.ID, Field: "create_item.description", To: c.Description}, {TargetID: c.ID, Field: "create_item.category", To: c.Category},
		{TargetID: c.ID, Field: "create_item.room", To: c.Room}, {TargetID: c.ID, Field: "create_item.price_cents", To: *c.SuppliedPriceCents},
		{TargetID: c.ID, Field: "create_item.status", To: domain.ItemDraft},
		{TargetID: c.ID, Field: "review_status", From: domain.ReviewApproved, To: domain.ReviewPromoted},
	}
	if !slices.EqualFunc(prop.Changes, wantChanges, func(a, b domain.FieldChange) bool { return fmt.Sprint(a) == fmt.Sprint(b) }) {
		t.Fatalf("changes = %+v, want %+v", prop.Changes, wantChanges)
	}
	if prop.Impact != (domain.ProposalImpact{CanonicalItemsCreated: 1}) || prop.Validation.Status != "valid" || len(prop.Validation.Warnings) != 0 {
		t.Fatalf("impact %+v, validation %+v", prop.Impact, prop.Validation)
	}
	if out.Replayed || out.OriginalEventID == "" || !slices.Equal(out.Related.ProposalIDs, []string{prop.ID}) ||
		!slices.Equal(out.Related.CandidateIDs, []string{c.ID}) || out.Related.ItemIDs == nil {
		t.Fatalf("outcome = %+v", out)
	}
	ev := f.lastEvent()
	if ev.ID != out.OriginalEventID || ev.Outcome != domain.OutcomeSuccess || ev.TenantID != fixtures.DemoTenantID ||
		!slices.Equal(ev.Related.ProposalIDs, []string{prop.ID}) || ev.Approval.ProposalID == nil || *ev.Approval.ProposalID != prop.ID ||
		ev.CorrelationID != prop.CorrelationID || ev.CausationID != nil {
		t.Fatalf("creation event = %+v", ev)
	}
	// Stored immutably: read back exactly as created.
	sameContent(t, f.proposal(prop.ID), prop)
	if c2 := f.candidate(fixtures.PublishedSaleID, c.ID); c2.Version != c.Version || c2.ReviewStatus != c.ReviewStatus {
		t.Fatalf("a proposal changed its candidate: %+v", c2)
	}

	// Replay: the same key and input answer the stored proposal, write nothing.
	again, out2, err := f.proposeKey(f.owner, promotionDraft(c.ID, c.Version, nil), "prop-1", "sha256:p1")
	if err != nil || !out2.Replayed || out2.OriginalEventID != out.OriginalEventID {
		t.Fatalf("replay: %+v %v", out2, err)
	}
	sameContent(t, again, prop)
	f.unchanged(after, "a replayed proposal")
	// Conflict: the same key with other input.
	_, _, err = f.proposeKey(f.owner, promotionDraft(c.ID, c.Version, nil), "prop-1", "sha256:p2")
	wantErr(t, err, domain.ErrIdempotencyConflict, "reused key")
	f.unchanged(after, "a conflicting proposal")

	// Corrections and warnings: an unreviewed candidate, a new title.
	u := f.candidate(fixtures.PublishedSaleID, candUnreviewed)
	p2, _, err := f.propose(f.owner, promotionDraft(u.ID, u.Version, map[string]any{"title": "Marantz 2230 receiver"}))
	if err != nil {
		t.Fatal(err)
	}
	if p2.Changes[1].To != "Marantz 2230 receiver" || p2.Validation.Status != "valid_with_warnings" ||
		!slices.Equal(p2.Validation.Warnings, []string{"candidate_not_reviewed"}) {
		t.Fatalf("corrected proposal = %+v", p2)
	}
	// category_missing is judged on the item the promotion creates: a
	// candidate without a category warns, whether or not the draft names
	// an empty one; a category the draft gives clears it.
	nc, _, err := f.b.CreateCandidate(ctx, f.owner, meta(f.owner, "prop-nocat", "sha256:nocat", "event_nocat"),
		domain.NewCandidate{SaleID: fixtures.PublishedSaleID, Title: "Mantel clock"})
	if err != nil {
		t.Fatal(err)
	}
	for _, fields := range []map[string]any{nil, {"category": ""}, {"category": "decor.clock.mantel"}} {
		pc, _, err := f.propose(f.owner, promotionDraft(nc.CandidateID, 1, fields))
		want := []string{"category_missing", "candidate_not_reviewed"}
		if fields["category"] == "decor.clock.mantel" {
			want = want[1:]
		}
		if err != nil || !slices.Equal(pc.Validation.Warnings, want) {
			t.Fatalf("promotion of a candidate without a category, draft %v: %+v, %v; want %q", fields, pc.Validation, err, want)
		}
	}
	// Item publication: in a draft sale it is valid with a warning.
	it := f.mustItem(domain.ItemQuery{SaleID: fixtures.DraftSaleID, Status: domain.ItemReady}, readyDraftSale)
	p3, _, err := f.propose(f.owner, itemPublicationDraft(it.ID, it.Version))
	if err != nil {
		t.Fatal(err)
	}
	if p3.TargetKind != "item" || p3.Validation.Status != "valid_with_warnings" || len(p3.Validation.Warnings) != 1 ||
		!strings.HasPrefix(p3.Validation.Warnings[0], "sale_not_published") || p3.Impact != (domain.ProposalImpact{ItemsChanged: 1, PublicRecordsChanged: 1}) ||
		!slices.Equal(p3.SaleIDs, []string{fixtures.DraftSaleID}) {
		t.Fatalf("publication in a draft sale = %+v", p3)
	}
}

func testCreateProposalRefused(t *testing.T, in Instance) {
	f := newFlow(t, in)
	c := f.candidate(fixtures.PublishedSaleID, candReviewed)
	before := in.Counts(t)

	// A version that moved: stale, naming both versions.
	_, _, err := f.propose(f.owner, promotionDraft(c.ID, c.Version-1, nil))
	wantErr(t, err, domain.ErrStaleVersion, "stale candidate")
	if !strings.Contains(err.Error(), fmt.Sprintf("%s is at version %d, the proposal expected %d", c.ID, c.Version, c.Version-1)) {
		t.Fatalf("stale reason: %v", err)
	}
	// Another tenant's candidate fails exactly like a missing one.
	_, _, err = f.propose(f.owner, promotionDraft(candForeign, 1, nil))
	wantRef(t, err, "candidate_id", candForeign, true)
	_, _, err = f.propose(f.owner, promotionDraft("candidate_404", 1, nil))
	wantRef(t, err, "candidate_id", "candidate_404", false)
	_, _, err = f.propose(f.owner, itemPublicationDraft("item_1301", 2))
	wantRef(t, err, "item_id", "item_1301", true)
	_, _, err = f.propose(f.owner, salePublicationDraft(fixtures.OtherDraftSaleID, 1))
	wantRef(t, err, "sale_id", fixtures.OtherDraftSaleID, true)
	// A sale-scoped member proposes nothing outside its assigned sale.
	scoped := resolve(t, f.b, CredScoped)
	_, _, err = f.propose(scoped, promotionDraft("candidate_772", 1, nil))
	wantErr(t, err, domain.ErrSaleAssignment, "scoped member, candidate of an unassigned sale")
	_, _, err = f.propose(scoped, itemPublicationDraft(readyItem, 2))
	wantErr(t, err, domain.ErrSaleAssignment, "scoped member, item of an unassigned sale")
	// What the domain refuses: a rejected candidate, an item that is not ready, a sale that is not a draft.
	_, _, err = f.propose(f.owner, promotionDraft(candRejected, 2, nil))
	wantErr(t, err, domain.ErrTransitionInvalid, "rejected candidate")
	drafts, err := f.b.ListItems(ctx, f.owner, domain.ItemQuery{SaleID: fixtures.PublishedSaleID, Status: domain.ItemDraft, Limit: 1})
	if err != nil || len(drafts.Rows) != 1 {
		t.Fatalf("a draft item: %v %v", drafts.Rows, err)
	}
	_, _, err = f.propose(f.owner, itemPublicationDraft(drafts.Rows[0].ID, drafts.Rows[0].Version))
	wantErr(t, err, domain.ErrTransitionInvalid, "publishing a draft item")
	pub := f.sale(fixtures.PublishedSaleID)
	_, _, err = f.propose(f.owner, salePublicationDraft(pub.ID, pub.Version))
	wantErr(t, err, domain.ErrTransitionInvalid, "publishing a published sale")
	// The draft's own shape.
	d := promotionDraft(c.ID, c.Version, nil)
	d.TargetIDs, d.ExpectedVersions = nil, nil
	_, _, err = f.propose(f.owner, d)
	wantInput(t, err, "targets")
	d = promotionDraft(c.ID, c.Version, nil)
	d.ExpectedVersions = []domain.TargetVersion{{ID: "candidate_772", Version: 1}}
	_, _, err = f.propose(f.owner, d)
	wantInput(t, err, "expected_versions")
	f.unchanged(before, "a refused proposal")
}

func testGetProposal(t *testing.T, in Instance) {
	f := newFlow(t, in)
	c := f.candidate(fixtures.PublishedSaleID, candReviewed)
	prop := f.mustPropose(promotionDraft(c.ID, c.Version, nil))
	sameContent(t, f.proposal(prop.ID), prop)
	// Another tenant's client: the proposal does not exist for it.
	_, err := f.b.GetProposal(ctx, resolve(t, f.b, CredOther), prop.ID)
	wantRef(t, err, "proposal_id", prop.ID, true)
	_, err = f.b.GetProposal(ctx, f.owner, "proposal_404")
	wantRef(t, err, "proposal_id", "proposal_404", false)

	// Approval state: nothing, then the grant bound to exactly this proposal.
	gs, pols, usage, err := f.b.ApprovalState(ctx, f.owner, prop.ID, prop.Tool.Name)
	if err != nil || len(gs) != 0 || len(pols) != 0 || len(usage) != 0 {
		t.Fatalf("state before approval: %v %v %v %v", gs, pols, usage, err)
	}
	before := in.Counts(t)
	g := f.approve(prop)
	f.grew(before, map[string]int64{"approval_grants": 1, "plugin_events": 1, "proposals": 0})
	if g.Status != domain.GrantActive || g.ProposalHash != prop.Hash || g.ProposalID != prop.ID || !g.SingleUse ||
		!g.ExpiresAt.Equal(prop.ExpiresAt) || g.IssuedBy.ActorID != fixtures.DemoUserID {
		t.Fatalf("issued grant = %+v", g)
	}
	gs = f.grants(prop)
	if len(gs) != 1 || gs[0].ID != g.ID || gs[0].Status != domain.GrantActive || gs[0].ProposalHash != prop.Hash ||
		gs[0].Tool != prop.Tool.Name || !slices.Equal(gs[0].TargetIDs, prop.TargetIDs) || gs[0].IssuedBy != g.IssuedBy ||
		gs[0].Constraints != g.Constraints || !gs[0].ExpiresAt.Equal(g.ExpiresAt) || gs[0].ConsumedAt != nil {
		t.Fatalf("grants = %+v, want %+v", gs, g)
	}
	if got := f.proposal(prop.ID); got.Status != domain.ProposalApproved {
		t.Fatalf("approved proposal status = %s", got.Status)
	}
	// The other tenant's client sees no grant of it.
	if og, _, _, err := f.b.ApprovalState(ctx, resolve(t, f.b, CredOther), prop.ID, prop.Tool.Name); err != nil || len(og) != 0 {
		t.Fatalf("other tenant's approval state = %v %v", og, err)
	}
	// The approval decision is an event under the proposal's correlation.
	ev := f.lastEvent()
	if ev.Action != "approval_granted" || ev.CorrelationID != prop.CorrelationID || ev.Approval.ApprovalID == nil ||
		*ev.Approval.ApprovalID != g.ID || ev.Actor.ID != fixtures.DemoUserID || ev.Actor.Role != domain.RoleOwner ||
		ev.Approval.ProposalHash != prop.Hash || ev.CausationID == nil {
		t.Fatalf("grant event = %+v", ev)
	}
}

func testExecutePromotion(t *testing.T, in Instance) {
	f := newFlow(t, in)
	// A candidate awaiting review (photos are attached only then) with a
	// supplied price, and two photos, which the item gets (in this order).
	c := f.candidate(fixtures.PublishedSaleID, candUnreviewed)
	var assets []string
	for k, up := range []domain.PhotoUpload{medPNG(t, 4, 3, 21), medPNG(t, 3, 4, 22)} {
		m, _, err := f.b.AttachCandidateMedia(ctx, f.owner, ingMeta(f.owner, toolAttachPhoto, fmt.Sprintf("promo-photo-%d", k),
			fmt.Sprintf("sha256:pp%d", k), fmt.Sprintf("event_pp%d", k)), domain.NewCandidateMedia{CandidateID: c.ID, Upload: &up})
		if err != nil {
			t.Fatalf("attach a photo to the candidate: %v", err)
		}
		assets = append(assets, m.AssetID)
	}
	c = f.candidate(fixtures.PublishedSaleID, candUnreviewed)
	prop := f.mustPropose(promotionDraft(c.ID, c.Version, map[string]any{"room": "den"}))
	var listed []string
	var priced any
	for _, ch := range prop.Changes {
		switch ch.Field {
		case "create_item.photos":
			listed = domain.StringList(ch.To)
		case "create_item.price_cents":
			priced = ch.To
		}
	}
	if !slices.Equal(listed, assets) || fmt.Sprint(priced) != fmt.Sprint(*c.SuppliedPriceCents) {
		t.Fatalf("the promotion lists photos %v and price %v; want the candidate's %v and %d", listed, priced, assets, *c.SuppliedPriceCents)
	}
	before := in.Counts(t)

	// No authority: the store's answer, and nothing changes.
	_, _, err := f.execute(f.b, f.owner, prop, domain.Authorization{Decision: "allowed", ProposalHash: prop.Hash})
	wantErr(t, err, domain.ErrApprovalRequired, "execution without a grant")
	_, _, err = f.execute(f.b, f.owner, prop, domain.Authorization{})
	wantErr(t, err, domain.ErrProposalChanged, "execution without the proposal's hash")
	f.unchanged(before, "a refused execution")

	g := f.approve(prop)
	before = in.Counts(t)
	w := f.execMeta(f.owner, prop, g.ID, "exec-1", "sha256:e1")
	res, out, err := f.b.ExecuteProposal(ctx, f.owner, w, prop.ID, allowed(prop, g.ID))
	if err != nil {
		t.Fatalf("ExecuteProposal: %v", err)
	}
	after := f.grew(before, map[string]int64{"items": 1, "item_provenance": 1, "idempotency_keys": 1, "plugin_events": 1,
		"proposals": 0, "approval_grants": 0, "inventory_candidates": 0, "item_photos": 2, "item_price_history": 1, "source_assets": 0})
	if len(res.CreatedItemIDs) != 1 || !domain.ValidID(domain.PrefixItem, res.CreatedItemIDs[0]) {
		t.Fatalf("result = %+v", res)
	}
	newItem := res.CreatedItemIDs[0]
	one := 1
	wantRes := domain.ExecutionResult{ProposalID: prop.ID, Executed: true, Simulated: f.b.Mode() == domain.ModeMock,
		DomainFunction: "promote_inventory_candidate", CreatedItemIDs: []string{newItem},
		Results:  []domain.TargetOutcome{{TargetID: c.ID, Outcome: outcome(f.b)}, {TargetID: newItem, Outcome: outcome(f.b), NewVersion: &one}},
		Approval: domain.ExecutionApproval{Decision: "allowed", ApprovalID: &g.ID}}
	if rj, wj := mustJSON(t, res), mustJSON(t, wantRes); rj != wj {
		t.Fatalf("result = %s\nwant %s", rj, wj)
	}
	if out.Replayed || out.OriginalEventID != w.Event.ID || !slices.Equal(out.Related.ItemIDs, []string{newItem}) ||
		!slices.Equal(out.Related.CandidateIDs, []string{c.ID}) || !slices.Equal(out.Related.ProposalIDs, []string{prop.ID}) {
		t.Fatalf("outcome = %+v", out)
	}
	// The state: a draft item with the proposal's values, the candidate
	// promoted, the grant consumed, the proposal executed.
	// The item is a complete draft: the candidate's price and its photos,
	// private, in the candidate's order.
	it := f.mustItem(domain.ItemQuery{SaleID: c.SaleID, Status: domain.ItemDraft}, newItem)
	if it.Title != c.Title || it.Category != c.Category || it.Room != "den" || it.Version != 1 || it.PriceCents == nil ||
		*it.PriceCents != *c.SuppliedPriceCents || len(it.Photos) != 2 {
		t.Fatalf("promoted item = %+v", it)
	}
	for k, ph := range it.Photos {
		if ph.Published || ph.Position != k+1 || !domain.ValidID(domain.PrefixPhoto, ph.ID) || ph.ItemID != newItem {
			t.Fatalf("photo %d of the promoted item = %+v", k, ph)
		}
	}
	if it.Photos[0].Width != 4 || it.Photos[0].Height != 3 || it.Photos[1].Width != 3 || it.Photos[1].Height != 4 {
		t.Fatalf("the item's photos are not the candidate's, in order: %+v", it.Photos)
	}
	if c2 := f.candidate(c.SaleID, c.ID); c2.ReviewStatus != domain.ReviewPromoted || c2.Version != c.Version+1 {
		t.Fatalf("candidate after promotion = %+v", c2)
	}
	// Its provenance, as trove_get_item reads it: the candidate, its
	// source, the proposal. None unless asked for, and none for an item
	// that was not promoted.
	d, err := f.b.GetItem(ctx, f.owner, newItem, domain.ItemIncludes{Provenance: true})
	if err != nil || d.Provenance == nil || d.Provenance.CandidateID != c.ID || d.Provenance.SourceRecordID != c.SourceRecordID ||
		d.Provenance.ImportRunID != c.ImportRunID || d.Provenance.ProposalID != prop.ID || d.Provenance.PromotedAt.IsZero() {
		t.Fatalf("provenance of the promoted item = %+v, %v", d.Provenance, err)
	}
	if d, err := f.b.GetItem(ctx, f.owner, newItem, domain.ItemIncludes{}); err != nil || d.Provenance != nil {
		t.Fatalf("provenance not asked for = %+v, %v", d.Provenance, err)
	}
	if d, err := f.b.GetItem(ctx, f.owner, fixtures.DemoItemID, domain.ItemIncludes{Provenance: true}); err != nil || d.Provenance != nil {
		t.Fatalf("provenance of an item entered by hand = %+v, %v", d.Provenance, err)
	}
	f.wantGrant(prop, g.ID, domain.GrantConsumed)
	executed := f.proposal(prop.ID)
	if executed.Status != domain.ProposalExecuted {
		t.Fatalf("proposal status = %s", executed.Status)
	}
	executed.Status = prop.Status
	sameContent(t, executed, prop) // execution changed the status only
	ev := f.lastEvent()
	if ev.ID != w.Event.ID || ev.Outcome != domain.OutcomeSuccess || !slices.Equal(ev.Related.ItemIDs, []string{newItem}) ||
		ev.CorrelationID != prop.CorrelationID || ev.CausationID == nil {
		t.Fatalf("execution event = %+v", ev)
	}
	if cause := eventByID(t, in, *ev.CausationID); cause.Action != "approval_granted" || cause.Approval.ApprovalID == nil || *cause.Approval.ApprovalID != g.ID {
		t.Fatalf("the execution's cause is %+v, want the grant's event", cause)
	}

	// Replay: the original result, nothing written.
	res2, out2, err := f.b.ExecuteProposal(ctx, f.owner, f.execMeta(f.owner, prop, g.ID, "exec-1", "sha256:e1"), prop.ID, allowed(prop, g.ID))
	if err != nil || !out2.Replayed || out2.OriginalEventID != w.Event.ID || mustJSON(t, res2) != mustJSON(t, res) {
		t.Fatalf("replay = %+v %+v %v", res2, out2, err)
	}
	f.unchanged(after, "a replayed execution")
	// The grant is used up: executing again under a new key is refused.
	_, _, err = f.execute(f.b, f.owner, prop, allowed(prop, g.ID))
	wantErr(t, err, domain.ErrApprovalConsumed, "a second execution")
	f.unchanged(after, "a second execution")
	if c3 := f.candidate(c.SaleID, c.ID); c3.Version != c.Version+1 {
		t.Fatalf("a refused execution moved the candidate to %d", c3.Version)
	}
}

func testGrantRefusals(t *testing.T, in Instance) {
	f := newFlow(t, in)
	grants := in.Grants(t, fixtures.DemoTenantID, fixtures.DemoUserID)
	propose := func(sale, id string) domain.Proposal {
		c := f.candidate(sale, id)
		return f.mustPropose(promotionDraft(c.ID, c.Version, nil))
	}
	// Each refusal must leave every row, the grant and the proposal as they were.
	refused := func(prop domain.Proposal, auth domain.Authorization, sentinel error, what string, grantID, grantStatus, propStatus string) {
		t.Helper()
		before := in.Counts(t)
		_, _, err := f.execute(f.b, f.owner, prop, auth)
		wantErr(t, err, sentinel, what)
		f.unchanged(before, what)
		if grantID != "" {
			f.wantGrant(prop, grantID, grantStatus)
		}
		if got := f.proposal(prop.ID); got.Status != propStatus {
			t.Fatalf("%s: proposal status %s, want %s", what, got.Status, propStatus)
		}
	}

	// Revoked: the proposal is pending again, the grant can never authorise.
	revoked := propose(fixtures.PublishedSaleID, candReviewed)
	g := f.approve(revoked)
	rg, err := grants.RevokeGrant(ctx, fixtures.DemoTenantID, g.ID, fixtures.DemoUserID)
	if err != nil || rg.Status != domain.GrantRevoked || rg.RevokedAt == nil || rg.ID != g.ID {
		t.Fatalf("RevokeGrant: %+v %v", rg, err)
	}
	if _, err := grants.RevokeGrant(ctx, fixtures.DemoTenantID, g.ID, fixtures.DemoUserID); !errors.Is(err, domain.ErrTransitionInvalid) {
		t.Fatalf("revoking twice: %v", err)
	}
	refused(revoked, allowed(revoked, g.ID), domain.ErrApprovalRevoked, "a revoked grant", g.ID, domain.GrantRevoked, domain.ProposalPending)

	// Expired: issued already past its expiry.
	expired := propose(fixtures.DraftSaleID, candDraftSale)
	eg := grantFor(expired, fixtures.DemoUserID)
	eg.IssuedAt, eg.ExpiresAt = expired.CreatedAt.Add(-2*time.Minute), expired.CreatedAt.Add(-time.Minute)
	if eg, err = grants.IssueGrant(ctx, eg); err != nil {
		t.Fatalf("IssueGrant (expired): %v", err)
	}
	refused(expired, allowed(expired, eg.ID), domain.ErrApprovalExpired, "an expired grant", eg.ID, domain.GrantActive, domain.ProposalApproved)

	// For another proposal: the grant of one does not execute the other.
	mine := propose(fixtures.DraftSaleID, candOther)
	other := propose(fixtures.PublishedSaleID, candUnreviewed)
	og := f.approve(other)
	refused(mine, allowed(mine, og.ID), domain.ErrApprovalInvalid, "another proposal's grant", "", "", domain.ProposalPending)
	if gs := f.grants(mine); len(gs) != 0 {
		t.Fatalf("grants of %s = %+v", mine.ID, gs)
	}
	f.wantGrant(other, og.ID, domain.GrantActive)
	// For a changed hash: the authority was decided for other content.
	changedHash := allowed(other, og.ID)
	changedHash.ProposalHash = "sha256:" + strings.Repeat("0", 64)
	refused(other, changedHash, domain.ErrProposalChanged, "a grant decided for another hash", og.ID, domain.GrantActive, domain.ProposalApproved)
	// A grant is issued only for the hash the seller reviewed.
	bad := grantFor(mine, fixtures.DemoUserID)
	bad.ProposalHash = "sha256:" + strings.Repeat("1", 64)
	before := in.Counts(t)
	_, err = grants.IssueGrant(ctx, bad)
	wantErr(t, err, domain.ErrProposalChanged, "a grant for another hash")
	// And once: an approved proposal is no longer pending.
	_, err = grants.IssueGrant(ctx, grantFor(other, fixtures.DemoUserID))
	wantErr(t, err, domain.ErrTransitionInvalid, "a second grant")
	f.unchanged(before, "a refused grant")
}

func testStaleAfterApproval(t *testing.T, in Instance) {
	f := newFlow(t, in)
	c := f.candidate(fixtures.PublishedSaleID, candReviewed)
	first := f.mustPropose(promotionDraft(c.ID, c.Version, nil))
	second := f.mustPropose(promotionDraft(c.ID, c.Version, map[string]any{"title": "Brass lamp"}))
	g1, g2 := f.approve(first), f.approve(second)
	if _, _, err := f.execute(f.b, f.owner, first, allowed(first, g1.ID)); err != nil {
		t.Fatalf("first execution: %v", err)
	}
	// The candidate moved after the second was approved: refused, and the
	// grant is not consumed (the whole execution rolled back).
	before := in.Counts(t)
	_, _, err := f.execute(f.b, f.owner, second, allowed(second, g2.ID))
	wantErr(t, err, domain.ErrStaleVersion, "a stale target")
	if !strings.Contains(err.Error(), fmt.Sprintf("%s is at version %d, the proposal expected %d", c.ID, c.Version+1, c.Version)) {
		t.Fatalf("stale reason: %v", err)
	}
	f.unchanged(before, "a stale execution")
	f.wantGrant(second, g2.ID, domain.GrantActive)
	if got := f.proposal(second.ID); got.Status != domain.ProposalApproved {
		t.Fatalf("stale proposal status = %s", got.Status)
	}
}

func testPublishItem(t *testing.T, in Instance) {
	f := newFlow(t, in)
	q := domain.ItemQuery{SaleID: fixtures.PublishedSaleID, Status: domain.ItemReady}
	it := f.mustItem(q, readyItem)
	prop := f.mustPropose(itemPublicationDraft(it.ID, it.Version))
	if prop.TargetKind != "item" || prop.Validation.Status != "valid" || prop.Requirement != "explicit_human" ||
		len(prop.Changes) != 1 || fmt.Sprint(prop.Changes[0]) != fmt.Sprint(domain.FieldChange{TargetID: it.ID, Field: "status", From: domain.ItemReady, To: domain.ItemPublished}) {
		t.Fatalf("publication proposal = %+v", prop)
	}
	g := f.approve(prop)
	before := in.Counts(t)
	res, out, err := f.execute(f.b, f.owner, prop, allowed(prop, g.ID))
	if err != nil {
		t.Fatalf("publish: %v", err)
	}
	f.grew(before, map[string]int64{"item_status_events": 1, "items": 0, "idempotency_keys": 1})
	v := it.Version + 1
	if res.DomainFunction != "publish_item" || len(res.Results) != 1 || res.Results[0].TargetID != it.ID ||
		res.Results[0].Outcome != outcome(f.b) || res.Results[0].NewVersion == nil || *res.Results[0].NewVersion != v ||
		len(res.CreatedItemIDs) != 0 || !slices.Equal(out.Related.ItemIDs, []string{it.ID}) {
		t.Fatalf("result = %+v, outcome %+v", res, out)
	}
	pub := f.mustItem(domain.ItemQuery{SaleID: fixtures.PublishedSaleID, Status: domain.ItemPublished, Category: it.Category}, it.ID)
	if pub.Version != v || pub.Title != it.Title || !eqPtr(pub.PriceCents, it.PriceCents) {
		t.Fatalf("published item = %+v", pub)
	}
	f.wantGrant(prop, g.ID, domain.GrantConsumed)
	// Publishing it again is refused before anything is proposed.
	before = in.Counts(t)
	_, _, err = f.propose(f.owner, itemPublicationDraft(it.ID, v))
	wantErr(t, err, domain.ErrTransitionInvalid, "publishing a published item")
	f.unchanged(before, "a refused publication")
}

func testPublishSale(t *testing.T, in Instance) {
	f := newFlow(t, in)
	s := f.sale(fixtures.DraftSaleID)
	prop := f.mustPropose(salePublicationDraft(s.ID, s.Version))
	if prop.TargetKind != "sale" || len(prop.Changes) != 3 || prop.Impact != (domain.ProposalImpact{PublicRecordsChanged: 1}) ||
		!slices.Equal(prop.SaleIDs, []string{s.ID}) {
		t.Fatalf("sale publication proposal = %+v", prop)
	}
	// Not executable without its explicit grant.
	before := in.Counts(t)
	_, _, err := f.execute(f.b, f.owner, prop, domain.Authorization{Decision: "allowed", ProposalHash: prop.Hash})
	wantErr(t, err, domain.ErrApprovalRequired, "publishing a sale without a grant")
	f.unchanged(before, "an unapproved sale publication")
	g := f.approve(prop)
	res, _, err := f.execute(f.b, f.owner, prop, allowed(prop, g.ID))
	if err != nil {
		t.Fatalf("publish sale: %v", err)
	}
	v := s.Version + 1
	if res.DomainFunction != "publish_sale" || len(res.Results) != 1 || res.Results[0].NewVersion == nil || *res.Results[0].NewVersion != v {
		t.Fatalf("result = %+v", res)
	}
	got := f.sale(s.ID)
	if got.Status != domain.SalePublished || got.Visibility != "public" || got.Version != v || got.AddressPolicy != s.AddressPolicy {
		t.Fatalf("published sale = %+v", got)
	}
}

func testGrantRace(t *testing.T, in Instance) {
	f := newFlow(t, in)
	c := f.candidate(fixtures.DraftSaleID, candDraftSale)
	prop := f.mustPropose(promotionDraft(c.ID, c.Version, nil))
	g := f.approve(prop)
	second := in.Second(t)
	backends := []domain.Backend{f.b, second}
	principals := []domain.Principal{f.owner, resolve(t, second, CredOwner)}
	metas := []domain.WriteMeta{f.execMeta(principals[0], prop, g.ID, "race-a", "sha256:ra"), f.execMeta(principals[1], prop, g.ID, "race-b", "sha256:rb")}
	before := in.Counts(t)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range backends {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_, _, errs[i] = backends[i].ExecuteProposal(ctx, principals[i], metas[i], prop.ID, allowed(prop, g.ID))
		}(i)
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, domain.ErrApprovalConsumed):
			t.Fatalf("the losing execution: %v, want ErrApprovalConsumed", err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d executions succeeded (%v), want exactly one", ok, errs)
	}
	f.grew(before, map[string]int64{"items": 1, "item_provenance": 1, "idempotency_keys": 1})
	f.wantGrant(prop, g.ID, domain.GrantConsumed)
}

func testIssueGrantRefused(t *testing.T, in Instance) {
	f := newFlow(t, in)
	c := f.candidate(fixtures.PublishedSaleID, candReviewed)
	prop := f.mustPropose(promotionDraft(c.ID, c.Version, nil))
	before := in.Counts(t)
	// A cataloger may propose but not approve.
	_, err := in.Grants(t, fixtures.DemoTenantID, fixtures.CatalogerUserID).IssueGrant(ctx, grantFor(prop, fixtures.CatalogerUserID))
	wantErr(t, err, domain.ErrPermissionDenied, "a cataloger's grant")
	// The owner of another tenant is no member of this one.
	_, err = in.Grants(t, fixtures.OtherTenantID, fixtures.OtherOwnerUserID).IssueGrant(ctx, grantFor(prop, fixtures.OtherOwnerUserID))
	wantErr(t, err, domain.ErrPermissionDenied, "another tenant's owner's grant")
	// A grant names its human issuer and surface.
	anon := grantFor(prop, fixtures.DemoUserID)
	anon.IssuedBy.Surface = ""
	_, err = in.Grants(t, fixtures.DemoTenantID, fixtures.DemoUserID).IssueGrant(ctx, anon)
	wantInput(t, err, "issued_by")
	f.unchanged(before, "a refused grant")
	if got := f.proposal(prop.ID); got.Status != domain.ProposalPending || len(f.grants(prop)) != 0 {
		t.Fatalf("after refused grants: %s, %v", got.Status, f.grants(prop))
	}
	// A manager may approve.
	g, err := in.Grants(t, fixtures.DemoTenantID, fixtures.ManagerUserID).IssueGrant(ctx, grantFor(prop, fixtures.ManagerUserID))
	if err != nil || g.IssuedBy.ActorID != fixtures.ManagerUserID {
		t.Fatalf("a manager's grant: %+v %v", g, err)
	}
	f.wantGrant(prop, g.ID, domain.GrantActive)
}

func testExecuteByPolicy(t *testing.T, in Instance) {
	f := newFlow(t, in)
	admin := in.Admin(t, fixtures.DemoTenantID, fixtures.DemoUserID)
	pol, err := admin.CreatePolicy(ctx, domain.Policy{TenantID: fixtures.DemoTenantID, Name: "Promote reviewed draft-sale candidates",
		AllowedTools: []string{toolPromote}, Scope: domain.PolicyScope{EstateSaleIDs: []string{fixtures.DraftSaleID}},
		Conditions: domain.PolicyConditions{MaxItemsPerRun: 1, PermittedFields: []string{"create_item.sale_id", "create_item.title",
			"create_item.description", "create_item.category", "create_item.room", "create_item.status", "review_status"}},
		Limits: domain.PolicyLimits{MaxDailyActions: 1}, CreatedBy: fixtures.DemoUserID})
	if err != nil {
		t.Fatalf("CreatePolicy: %v", err)
	}
	if pol, err = admin.SetPolicyStatus(ctx, pol.ID, domain.PolicyActive, fixtures.DemoUserID); err != nil {
		t.Fatalf("enable policy: %v", err)
	}
	// A promotion that prices its item is a financial change: no policy
	// runs it, whatever its permitted fields.
	priced := f.candidate(fixtures.DraftSaleID, candDraftSale)
	pp := f.mustPropose(promotionDraft(priced.ID, priced.Version, nil))
	before := in.Counts(t)
	_, _, err = f.execute(f.b, f.owner, pp, domain.Authorization{Decision: "allowed_by_policy", PolicyID: pol.ID, PolicyVersion: pol.Version, ProposalHash: pp.Hash})
	wantErr(t, err, domain.ErrApprovalRequired, "a policy run of a priced promotion")
	if !strings.Contains(err.Error(), "financial") {
		t.Fatalf("a priced promotion under a policy: %v, want the financial refusal", err)
	}
	f.unchanged(before, "a policy run of a priced promotion")

	c := f.unpricedCandidate(fixtures.DraftSaleID, "Brass floor lamp")
	prop := f.mustPropose(promotionDraft(c.ID, c.Version, nil))
	gs, pols, usage, err := f.b.ApprovalState(ctx, f.owner, prop.ID, prop.Tool.Name)
	if err != nil || len(gs) != 0 || len(pols) != 1 || pols[0].ID != pol.ID || pols[0].Version != pol.Version ||
		pols[0].Status != domain.PolicyActive || usage[pol.ID] != (domain.PolicyUsage{}) {
		t.Fatalf("approval state = %v %v %v %v", gs, pols, usage, err)
	}
	if _, p2, _, err := f.b.ApprovalState(ctx, f.owner, prop.ID, toolPublishItem); err != nil || len(p2) != 0 {
		t.Fatalf("policies naming another tool = %v %v", p2, err)
	}
	byPolicy := domain.Authorization{Decision: "allowed_by_policy", PolicyID: pol.ID, PolicyVersion: pol.Version, ProposalHash: prop.Hash}

	// An authorisation decided under an older version is refused.
	stale := byPolicy
	stale.PolicyVersion--
	before = in.Counts(t)
	_, _, err = f.execute(f.b, f.owner, prop, stale)
	wantErr(t, err, domain.ErrApprovalRevoked, "a policy decision of an older version")
	f.unchanged(before, "a refused policy execution")

	res, out, err := f.execute(f.b, f.owner, prop, byPolicy)
	if err != nil {
		t.Fatalf("execute by policy: %v", err)
	}
	after := f.grew(before, map[string]int64{"approval_grants": 1, "policy_uses": 1, "items": 1, "item_provenance": 1})
	if res.Approval.Decision != "allowed_by_policy" || res.Approval.PolicyID == nil || *res.Approval.PolicyID != pol.ID ||
		res.Approval.ApprovalID == nil || !domain.ValidID(domain.PrefixApproval, *res.Approval.ApprovalID) || len(out.Related.ItemIDs) != 1 {
		t.Fatalf("result = %+v", res)
	}
	// The policy's authorisation is a distinguishable grant, consumed at once.
	gs, _, usage, err = f.b.ApprovalState(ctx, f.owner, prop.ID, prop.Tool.Name)
	if err != nil || len(gs) != 1 || gs[0].ID != *res.Approval.ApprovalID || gs[0].Status != domain.GrantConsumed ||
		gs[0].IssuedBy.Type != domain.IssuerPolicy || gs[0].IssuedBy.PolicyID != pol.ID || gs[0].IssuedBy.PolicyVersion != pol.Version ||
		gs[0].ProposalHash != prop.Hash || gs[0].Constraints.MaxItems != 1 || usage[pol.ID].ActionsToday != 1 {
		t.Fatalf("after the policy's use: %+v %+v %v", gs, usage, err)
	}
	if ev := f.lastEvent(); ev.Approval.ApprovalID == nil || *ev.Approval.ApprovalID != gs[0].ID || ev.CausationID == nil {
		t.Fatalf("policy execution event = %+v", ev)
	}
	// Its daily limit (1) is spent: the next proposal needs a human.
	c2 := f.unpricedCandidate(fixtures.DraftSaleID, "Pewter candlestick")
	next := f.mustPropose(promotionDraft(c2.ID, c2.Version, nil))
	after = in.Counts(t)
	_, _, err = f.execute(f.b, f.owner, next, domain.Authorization{Decision: "allowed_by_policy", PolicyID: pol.ID, PolicyVersion: pol.Version, ProposalHash: next.Hash})
	wantErr(t, err, domain.ErrApprovalRequired, "a policy past its daily limit")
	f.unchanged(after, "a policy past its daily limit")
	// A disabled policy authorises nothing.
	if _, err := admin.SetPolicyStatus(ctx, pol.ID, domain.PolicyDisabled, fixtures.DemoUserID); err != nil {
		t.Fatal(err)
	}
	after = in.Counts(t)
	_, _, err = f.execute(f.b, f.owner, next, domain.Authorization{Decision: "allowed_by_policy", PolicyID: pol.ID, PolicyVersion: pol.Version, ProposalHash: next.Hash})
	wantErr(t, err, domain.ErrApprovalRevoked, "a disabled policy")
	f.unchanged(after, "a disabled policy")
	if c3 := f.candidate(fixtures.DraftSaleID, c2.ID); c3.Version != c2.Version || c3.ReviewStatus != c2.ReviewStatus {
		t.Fatalf("a refused policy execution changed %+v", c3)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func eventByID(t *testing.T, in Instance, id string) domain.Event {
	t.Helper()
	for _, ev := range in.Events(t) {
		if ev.ID == id {
			return ev
		}
	}
	t.Fatalf("no event %s", id)
	return domain.Event{}
}
