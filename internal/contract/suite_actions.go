package contract

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/domain"
)

// runActions runs the contract cases of the controlled actions beyond
// promotion and publication: status transitions and archiving, bulk item
// updates, QR identity binding and release, dispositions, buyer
// notifications and export delivery. Each goes proposal → human grant (Instance.Grants) →
// execution, and asserts the result AND the state it left; a refusal
// asserts the error AND that nothing changed. Both backends answer alike,
// except what mode decides: an applied target is "simulated" in mock mode,
// and a buyer notification is recorded as a simulated delivery in mock
// mode but queued as an outbound request in live mode (never "sent"), and
// so is an export delivery.
func runActions(t *testing.T, open func(t *testing.T) Instance) {
	t.Run("Actions/StatusTransition", func(t *testing.T) { testStatusTransition(t, open(t)) })
	t.Run("Actions/StatusTransitionRefused", func(t *testing.T) { testStatusTransitionRefused(t, open(t)) })
	t.Run("Actions/ArchiveItem", func(t *testing.T) { testArchiveItem(t, open(t)) })
	t.Run("Actions/StatusByPolicy", func(t *testing.T) { testStatusByPolicy(t, open(t)) })
	t.Run("Actions/PolicyConditionsAtExecution", func(t *testing.T) { testPolicyConditionsAtExecution(t, open(t)) })
	t.Run("Actions/BulkUpdate", func(t *testing.T) { testBulkUpdate(t, open(t)) })
	t.Run("Actions/BulkUpdateRefused", func(t *testing.T) { testBulkUpdateRefused(t, open(t)) })
	t.Run("Actions/BindIdentity", func(t *testing.T) { testBindIdentity(t, open(t)) })
	t.Run("Actions/ReleaseIdentity", func(t *testing.T) { testReleaseIdentity(t, open(t)) })
	t.Run("Actions/IdentityRefused", func(t *testing.T) { testIdentityRefused(t, open(t)) })
	t.Run("Actions/Disposition", func(t *testing.T) { testDisposition(t, open(t)) })
	t.Run("Actions/DispositionRefused", func(t *testing.T) { testDispositionRefused(t, open(t)) })
	t.Run("Actions/BuyerNotification", func(t *testing.T) { testBuyerNotification(t, open(t)) })
	t.Run("Actions/BuyerNotificationRefused", func(t *testing.T) { testBuyerNotificationRefused(t, open(t)) })
	t.Run("Actions/ExportDelivery", func(t *testing.T) { testExportDelivery(t, open(t)) })
	t.Run("Actions/ExportDeliveryStale", func(t *testing.T) { testExportDeliveryStale(t, open(t)) })
}

// Executing tools of the actions, as the catalog defines them.
const (
	toolUpdateStatus = "trove_update_item_status"
	toolArchive      = "trove_archive_item"
	toolBulkUpdate   = "trove_apply_bulk_item_update"
	toolBind         = "trove_bind_item_identity"
	toolRelease      = "trove_release_item_identity"
	toolDisposition  = "trove_apply_disposition_action"
	toolNotify       = "trove_notify_matched_buyers"
	toolDeliver      = "trove_deliver_export"
)

func init() {
	for exec, prop := range map[string]string{
		toolUpdateStatus: "trove_propose_status_transition", toolArchive: "trove_propose_status_transition",
		toolBulkUpdate: "trove_propose_bulk_item_update", toolBind: "trove_propose_identity_binding",
		toolRelease: "trove_propose_identity_binding", toolDisposition: "trove_propose_disposition_action",
		toolNotify: "trove_propose_buyer_notification", toolDeliver: "trove_propose_export_delivery",
	} {
		proposingTool[exec] = prop
	}
}

func actOne(id string, version int) ([]string, []domain.TargetVersion) {
	return []string{id}, []domain.TargetVersion{{ID: id, Version: version}}
}

func actMany(items ...domain.Item) ([]string, []domain.TargetVersion) {
	var ids []string
	var evs []domain.TargetVersion
	for _, it := range items {
		ids = append(ids, it.ID)
		evs = append(evs, domain.TargetVersion{ID: it.ID, Version: it.Version})
	}
	return ids, evs
}

// statusDraft is what trove_propose_status_transition drafts: archive_item
// (explicit human) when the new status is archived.
func statusDraft(id string, version int, to, effectiveAt, statusCandidate string) domain.ProposalDraft {
	action, tool, req := domain.ActionStatusTransition, toolUpdateStatus, "human_or_policy"
	if to == domain.ItemArchived {
		action, tool, req = domain.ActionArchiveItem, toolArchive, "explicit_human"
	}
	t, v := actOne(id, version)
	return domain.ProposalDraft{Action: action, Tool: domain.ExecutingTool{Name: tool, Version: "1.0.0"}, Requirement: req,
		TargetIDs: t, ExpectedVersions: v, StatusCandidateID: statusCandidate,
		Fields: map[string]any{"to_status": to, "effective_at": effectiveAt}}
}

func bulkDraft(changes map[string]any, items ...domain.Item) domain.ProposalDraft {
	t, v := actMany(items...)
	return domain.ProposalDraft{Action: domain.ActionBulkItemUpdate, Tool: domain.ExecutingTool{Name: toolBulkUpdate, Version: "1.0.0"},
		Requirement: "human_or_policy", TargetIDs: t, ExpectedVersions: v, Fields: map[string]any{"changes": changes}}
}

func identityDraft(release bool, it domain.Item, code string) domain.ProposalDraft {
	action, tool, req := domain.ActionBindIdentity, toolBind, "human_or_policy"
	if release {
		action, tool, req = domain.ActionReleaseIdentity, toolRelease, "explicit_human"
	}
	t, v := actOne(it.ID, it.Version)
	return domain.ProposalDraft{Action: action, Tool: domain.ExecutingTool{Name: tool, Version: "1.0.0"}, Requirement: req,
		TargetIDs: t, ExpectedVersions: v, Fields: map[string]any{"qr_code": code}}
}

func dispositionDraft(action, counterparty string, offer any, items ...domain.Item) domain.ProposalDraft {
	t, v := actMany(items...)
	f := map[string]any{"action": action}
	if counterparty != "" {
		f["counterparty"] = counterparty
	}
	if offer != nil {
		f["offer_cents"] = offer
	}
	return domain.ProposalDraft{Action: domain.ActionDisposition, Tool: domain.ExecutingTool{Name: toolDisposition, Version: "1.0.0"},
		Requirement: "explicit_human", TargetIDs: t, ExpectedVersions: v, Fields: f}
}

func notifyDraft(id string, version int, audience string, channels []string, template string) domain.ProposalDraft {
	t, v := actOne(id, version)
	return domain.ProposalDraft{Action: domain.ActionBuyerNotify, Tool: domain.ExecutingTool{Name: toolNotify, Version: "1.0.0"},
		Requirement: "explicit_human", TargetIDs: t, ExpectedVersions: v,
		Fields: map[string]any{"audience": audience, "channels": channels, "message_template": template}}
}

// now is an item of the owner's tenant as the backend has it now.
func (f *flow) itemNow(id string) domain.Item {
	f.t.Helper()
	d, err := f.b.GetItem(ctx, f.owner, id, domain.ItemIncludes{})
	if err != nil {
		f.t.Fatalf("GetItem %s: %v", id, err)
	}
	return d.Item
}

// same fails unless the item is exactly as before (a refusal moved nothing).
func (f *flow) sameItem(before domain.Item, what string) {
	f.t.Helper()
	if got := f.itemNow(before.ID); mustJSON(f.t, got) != mustJSON(f.t, before) {
		f.t.Fatalf("%s changed %s:\n got %+v\nwant %+v", what, before.ID, got, before)
	}
}

// statusEvent is the status history entry an executed proposal recorded
// for an item.
func (f *flow) statusEventOf(itemID, proposalID string) domain.StatusEvent {
	f.t.Helper()
	page, err := f.b.ListStatusEvents(ctx, f.owner, domain.StatusEventQuery{ItemID: itemID, Limit: 100})
	if err != nil {
		f.t.Fatalf("ListStatusEvents %s: %v", itemID, err)
	}
	var out []domain.StatusEvent
	for _, ev := range page.Rows {
		if ev.ProposalID == proposalID {
			out = append(out, ev)
		}
	}
	if len(out) != 1 {
		f.t.Fatalf("status events of %s by %s = %+v, want exactly one", itemID, proposalID, out)
	}
	return out[0]
}

// wantDomainFunction is the domain function an execution of action
// reports in both backends: the registry's operation (live mode's SQL is
// generated from it).
func wantDomainFunction(_ domain.Backend, action string) string {
	spec, _ := domain.ActionOf(action)
	return spec.Operation
}

// runExecution executes prop under its grant with a fixed key and checks
// what every successful execution shares: the result's frame, one event
// and one idempotency row, the grant consumed and the proposal executed.
// It replays the key at once: the original result, nothing written.
func (f *flow) runExecution(prop domain.Proposal, g domain.Grant, key string, grew map[string]int64) (domain.ExecutionResult, domain.WriteOutcome) {
	f.t.Helper()
	before := f.in.Counts(f.t)
	w := f.execMeta(f.owner, prop, g.ID, key, "sha256:"+key)
	res, out, err := f.b.ExecuteProposal(ctx, f.owner, w, prop.ID, allowed(prop, g.ID))
	if err != nil {
		f.t.Fatalf("execute %s (%s): %v", prop.ID, prop.Action, err)
	}
	want := map[string]int64{"idempotency_keys": 1, "plugin_events": 1, "proposals": 0, "approval_grants": 0}
	for k, v := range grew {
		want[k] = v
	}
	after := f.grew(before, want)
	if res.ProposalID != prop.ID || !res.Executed || res.Simulated != (f.b.Mode() == domain.ModeMock) ||
		res.DomainFunction != wantDomainFunction(f.b, prop.Action) || res.Approval.Decision != "allowed" ||
		res.Approval.ApprovalID == nil || *res.Approval.ApprovalID != g.ID || res.Approval.PolicyID != nil || len(res.CreatedItemIDs) != 0 {
		f.t.Fatalf("result = %s", mustJSON(f.t, res))
	}
	if out.Replayed || out.OriginalEventID != w.Event.ID || !slices.Equal(out.Related.ProposalIDs, []string{prop.ID}) {
		f.t.Fatalf("outcome = %+v", out)
	}
	if ev := f.lastEvent(); ev.ID != w.Event.ID || ev.Outcome != domain.OutcomeSuccess || ev.CorrelationID != prop.CorrelationID ||
		ev.CausationID == nil || !slices.Equal(ev.Related.ItemIDs, out.Related.ItemIDs) {
		f.t.Fatalf("execution event = %+v", ev)
	}
	f.wantGrant(prop, g.ID, domain.GrantConsumed)
	if got := f.proposal(prop.ID); got.Status != domain.ProposalExecuted {
		f.t.Fatalf("proposal %s is %s after execution", prop.ID, got.Status)
	}
	// Replay: the original result, nothing written.
	res2, out2, err := f.b.ExecuteProposal(ctx, f.owner, f.execMeta(f.owner, prop, g.ID, key, "sha256:"+key), prop.ID, allowed(prop, g.ID))
	if err != nil || !out2.Replayed || out2.OriginalEventID != w.Event.ID || mustJSON(f.t, res2) != mustJSON(f.t, res) {
		f.t.Fatalf("replay = %+v %+v %v", res2, out2, err)
	}
	f.unchanged(after, "a replayed execution")
	// The grant is used up: a new key cannot run it again.
	_, _, err = f.execute(f.b, f.owner, prop, allowed(prop, g.ID))
	wantErr(f.t, err, domain.ErrApprovalConsumed, "a second execution")
	f.unchanged(after, "a second execution")
	return res, out
}

// refusedExecution fails unless executing prop under g is refused with
// sentinel and leaves every row, the grant and the proposal as they were.
func (f *flow) refusedExecution(prop domain.Proposal, g domain.Grant, sentinel error, what string) error {
	f.t.Helper()
	before := f.in.Counts(f.t)
	_, _, err := f.execute(f.b, f.owner, prop, allowed(prop, g.ID))
	wantErr(f.t, err, sentinel, what)
	f.unchanged(before, what)
	f.wantGrant(prop, g.ID, domain.GrantActive)
	if got := f.proposal(prop.ID); got.Status != domain.ProposalApproved {
		f.t.Fatalf("%s: proposal %s is %s, want approved", what, prop.ID, got.Status)
	}
	return err
}

// actApplied is the outcome list of targets each moved to its next version.
func actApplied(b domain.Backend, items ...domain.Item) []domain.TargetOutcome {
	out := []domain.TargetOutcome{}
	for _, it := range items {
		v := it.Version + 1
		out = append(out, domain.TargetOutcome{TargetID: it.ID, Outcome: outcome(b), NewVersion: &v})
	}
	return out
}

func actSameChanges(t *testing.T, got, want []domain.FieldChange) {
	t.Helper()
	if !slices.EqualFunc(got, want, func(a, b domain.FieldChange) bool { return fmt.Sprint(a) == fmt.Sprint(b) }) {
		t.Fatalf("changes = %+v\nwant %+v", got, want)
	}
}

func actWantStale(t *testing.T, err error, id string, got, want int) {
	t.Helper()
	wantErr(t, err, domain.ErrStaleVersion, "a stale target")
	if !strings.Contains(err.Error(), fmt.Sprintf("%s is at version %d, the proposal expected %d", id, got, want)) {
		t.Fatalf("stale reason: %v", err)
	}
}

const actEffectiveAt = "2026-06-20T15:04:05Z"

// Targets (fixtures): items of the demo tenant.
const (
	actSofa        = "item_1001" // published, sale_221, tag QR-221-0002
	actRug         = "item_1002" // published, sale_221, tag QR-221-0003
	actPyrex       = "item_1003" // ready, sale_221, no tag
	actTable       = "item_1027" // ready, sale_221, no tag
	actGlass       = "item_1073" // ready, sale_221, no tag
	actVase        = "item_1015" // draft, sale_221
	actSoldBooks   = "item_1018" // sold, sale_221
	actWithdrawn   = "item_1009" // withdrawn, sale_221
	actScopedItem  = "item_1172" // published, the live sale_223 (the scoped member's)
	actDishes      = "item_1251" // published, the closed sale_224
	actBakeware    = "item_1252" // published, sale_224
	actCabinet     = "item_1253" // published, sale_224
	actSideTable   = "item_1254" // withdrawn, sale_224
	actClosedSold  = "item_1257" // sold, sale_224
	actForeignItem = "item_1301" // tenant_456
)

func testStatusTransition(t *testing.T, in Instance) {
	f := newFlow(t, in)
	it := f.itemNow(actSofa)
	prop := f.mustPropose(statusDraft(it.ID, it.Version, domain.ItemOnHold, actEffectiveAt, ""))
	if prop.TargetKind != "item" || prop.Action != domain.ActionStatusTransition || prop.Tool.Name != toolUpdateStatus ||
		prop.Requirement != "human_or_policy" || !slices.Equal(prop.SaleIDs, []string{it.SaleID}) ||
		prop.Impact != (domain.ProposalImpact{ItemsChanged: 1, PublicRecordsChanged: 1}) || prop.Validation.Status != "valid" {
		t.Fatalf("status proposal = %+v", prop)
	}
	actSameChanges(t, prop.Changes, []domain.FieldChange{
		{TargetID: it.ID, Field: "status", From: domain.ItemPublished, To: domain.ItemOnHold},
		{TargetID: it.ID, Field: "effective_at", To: actEffectiveAt}})
	sameContent(t, f.proposal(prop.ID), prop)
	// A second plan for the same item at the same version goes stale once
	// the first runs.
	other := f.mustPropose(statusDraft(it.ID, it.Version, domain.ItemWithdrawn, actEffectiveAt, ""))
	g, g2 := f.approve(prop), f.approve(other)

	res, out := f.runExecution(prop, g, "status-exec-1", map[string]int64{"item_status_events": 1, "items": 0, "item_change_history": 0})
	if mustJSON(t, res.Results) != mustJSON(t, actApplied(f.b, it)) || res.DomainFunction != "append_inventory_status_event" ||
		!slices.Equal(out.Related.ItemIDs, []string{it.ID}) {
		t.Fatalf("result = %s, outcome %+v", mustJSON(t, res), out)
	}
	// The state: the item on hold at its next version, nothing else of it
	// changed; the lifecycle history names the proposal, never a payment.
	got := f.itemNow(it.ID)
	want := it
	want.Status, want.Version, want.UpdatedAt = domain.ItemOnHold, it.Version+1, got.UpdatedAt
	if mustJSON(t, got) != mustJSON(t, want) {
		t.Fatalf("item after the transition:\n got %+v\nwant %+v", got, want)
	}
	f.mustItem(domain.ItemQuery{SaleID: it.SaleID, Status: domain.ItemOnHold}, it.ID)
	ev := f.statusEventOf(it.ID, prop.ID)
	if ev.FromStatus != domain.ItemPublished || ev.ToStatus != domain.ItemOnHold || ev.SaleID != it.SaleID ||
		ev.EffectiveAt.UTC().Format("2006-01-02T15:04:05Z") != actEffectiveAt || ev.SourceType != domain.StatusSourceProposal ||
		ev.ActorID != fixtures.DemoUserID || ev.TenantID != fixtures.DemoTenantID {
		t.Fatalf("status event = %+v", ev)
	}

	// The other plan was decided for the item as it was: stale, and its
	// grant stays usable for nothing else.
	err := f.refusedExecution(other, g2, domain.ErrStaleVersion, "a transition of a moved item")
	actWantStale(t, err, it.ID, it.Version+1, it.Version)
	f.sameItem(got, "a stale transition")
}

func testStatusTransitionRefused(t *testing.T, in Instance) {
	f := newFlow(t, in)
	sofa, draft, ready := f.itemNow(actSofa), f.itemNow(actVase), f.itemNow(actPyrex)
	before := in.Counts(t)
	// What the lifecycle does not allow.
	_, _, err := f.propose(f.owner, statusDraft(draft.ID, draft.Version, domain.ItemSold, actEffectiveAt, ""))
	wantErr(t, err, domain.ErrTransitionInvalid, "draft → sold")
	_, _, err = f.propose(f.owner, statusDraft(sofa.ID, sofa.Version, domain.ItemDraft, actEffectiveAt, ""))
	wantErr(t, err, domain.ErrTransitionInvalid, "published → draft")
	// Publication has its own proposal.
	_, _, err = f.propose(f.owner, statusDraft(ready.ID, ready.Version, domain.ItemPublished, actEffectiveAt, ""))
	wantInput(t, err, "to_status")
	// A version that moved.
	_, _, err = f.propose(f.owner, statusDraft(sofa.ID, sofa.Version-1, domain.ItemOnHold, actEffectiveAt, ""))
	actWantStale(t, err, sofa.ID, sofa.Version, sofa.Version-1)
	// References: unknown and another tenant's items alike; a sale-scoped
	// member only in its assigned sale.
	_, _, err = f.propose(f.owner, statusDraft("item_404", 1, domain.ItemOnHold, actEffectiveAt, ""))
	wantRef(t, err, "item_id", "item_404", false)
	_, _, err = f.propose(f.owner, statusDraft(actForeignItem, 1, domain.ItemOnHold, actEffectiveAt, ""))
	wantRef(t, err, "item_id", actForeignItem, true)
	_, _, err = f.propose(resolve(t, f.b, CredScoped), statusDraft(sofa.ID, sofa.Version, domain.ItemOnHold, actEffectiveAt, ""))
	wantErr(t, err, domain.ErrSaleAssignment, "scoped member, item of an unassigned sale")
	// An imported status must be an approved status_update candidate of the
	// tenant: unknown (or another tenant's) is unknown, a new-item candidate
	// is not one.
	_, _, err = f.propose(f.owner, statusDraft(sofa.ID, sofa.Version, domain.ItemOnHold, actEffectiveAt, "candidate_404"))
	wantRef(t, err, "status_candidate_id", "candidate_404", false)
	_, _, err = f.propose(f.owner, statusDraft(sofa.ID, sofa.Version, domain.ItemOnHold, actEffectiveAt, candForeign))
	wantRef(t, err, "status_candidate_id", candForeign, false)
	_, _, err = f.propose(f.owner, statusDraft(sofa.ID, sofa.Version, domain.ItemOnHold, actEffectiveAt, candReviewed))
	wantErr(t, err, domain.ErrCandidateRequired, "a new-item candidate as an imported status")
	f.unchanged(before, "a refused status proposal")
	f.sameItem(sofa, "a refused status proposal")
}

func testArchiveItem(t *testing.T, in Instance) {
	f := newFlow(t, in)
	it := f.itemNow(actWithdrawn)
	prop := f.mustPropose(statusDraft(it.ID, it.Version, domain.ItemArchived, actEffectiveAt, ""))
	if prop.Action != domain.ActionArchiveItem || prop.Tool.Name != toolArchive || prop.Requirement != "explicit_human" ||
		prop.Impact != (domain.ProposalImpact{ItemsChanged: 1}) {
		t.Fatalf("archive proposal = %+v", prop)
	}
	// Explicit human approval only: nothing runs without the grant.
	before := in.Counts(t)
	_, _, err := f.execute(f.b, f.owner, prop, domain.Authorization{Decision: "allowed", ProposalHash: prop.Hash})
	wantErr(t, err, domain.ErrApprovalRequired, "archiving without a grant")
	f.unchanged(before, "an unapproved archive")
	f.sameItem(it, "an unapproved archive")

	g := f.approve(prop)
	res, _ := f.runExecution(prop, g, "archive-exec-1", map[string]int64{"item_status_events": 1, "items": 0})
	if mustJSON(t, res.Results) != mustJSON(t, actApplied(f.b, it)) {
		t.Fatalf("result = %s", mustJSON(t, res))
	}
	// Archived, never deleted: the item and its history are kept.
	got := f.mustItem(domain.ItemQuery{SaleID: it.SaleID, Status: domain.ItemArchived}, it.ID)
	if got.Version != it.Version+1 || got.Title != it.Title || !eqPtr(got.PriceCents, it.PriceCents) {
		t.Fatalf("archived item = %+v", got)
	}
	if ev := f.statusEventOf(it.ID, prop.ID); ev.FromStatus != domain.ItemWithdrawn || ev.ToStatus != domain.ItemArchived {
		t.Fatalf("archive event = %+v", ev)
	}
	// An archived item goes nowhere.
	before = in.Counts(t)
	_, _, err = f.propose(f.owner, statusDraft(it.ID, it.Version+1, domain.ItemReady, actEffectiveAt, ""))
	wantErr(t, err, domain.ErrTransitionInvalid, "archived → ready")
	f.unchanged(before, "a transition of an archived item")
}

func testStatusByPolicy(t *testing.T, in Instance) {
	f := newFlow(t, in)
	admin := in.Admin(t, fixtures.DemoTenantID, fixtures.DemoUserID)
	pol, err := admin.CreatePolicy(ctx, domain.Policy{TenantID: fixtures.DemoTenantID, Name: "Hold published items",
		AllowedTools: []string{toolUpdateStatus}, Scope: domain.PolicyScope{EstateSaleIDs: []string{fixtures.PublishedSaleID}},
		Conditions: domain.PolicyConditions{MaxItemsPerRun: 1, PermittedFields: []string{"status", "effective_at"}},
		Limits:     domain.PolicyLimits{MaxDailyActions: 5}, CreatedBy: fixtures.DemoUserID})
	if err != nil {
		t.Fatalf("CreatePolicy: %v", err)
	}
	if pol, err = admin.SetPolicyStatus(ctx, pol.ID, domain.PolicyActive, fixtures.DemoUserID); err != nil {
		t.Fatalf("enable policy: %v", err)
	}
	it := f.itemNow(actRug)
	prop := f.mustPropose(statusDraft(it.ID, it.Version, domain.ItemOnHold, actEffectiveAt, ""))
	byPolicy := domain.Authorization{Decision: "allowed_by_policy", PolicyID: pol.ID, PolicyVersion: pol.Version, ProposalHash: prop.Hash}
	before := in.Counts(t)
	res, _, err := f.execute(f.b, f.owner, prop, byPolicy)
	if err != nil {
		t.Fatalf("execute by policy: %v", err)
	}
	f.grew(before, map[string]int64{"approval_grants": 1, "policy_uses": 1, "item_status_events": 1, "items": 0})
	if res.Approval.Decision != "allowed_by_policy" || res.Approval.PolicyID == nil || *res.Approval.PolicyID != pol.ID ||
		mustJSON(t, res.Results) != mustJSON(t, actApplied(f.b, it)) {
		t.Fatalf("result = %s", mustJSON(t, res))
	}
	if got := f.itemNow(it.ID); got.Status != domain.ItemOnHold || got.Version != it.Version+1 {
		t.Fatalf("item after a policy execution = %+v", got)
	}
	// Archiving needs an explicit human: no policy can name its tool.
	arch := f.itemNow(actWithdrawn)
	ap := f.mustPropose(statusDraft(arch.ID, arch.Version, domain.ItemArchived, actEffectiveAt, ""))
	before = in.Counts(t)
	_, _, err = f.execute(f.b, f.owner, ap, domain.Authorization{Decision: "allowed_by_policy", PolicyID: pol.ID, PolicyVersion: pol.Version, ProposalHash: ap.Hash})
	wantErr(t, err, domain.ErrApprovalInvalid, "a policy that does not name the archive tool")
	f.unchanged(before, "a policy authorising an archive")
	f.sameItem(arch, "a policy authorising an archive")
}

// A caller naming a policy directly gets no more than the gate would give
// it: ExecuteProposal itself refuses what the policy's scope, items per
// run and fields do not cover, and sale completion (issue 15, finding 2),
// with nothing changed.
func testPolicyConditionsAtExecution(t *testing.T, in Instance) {
	f := newFlow(t, in)
	admin := in.Admin(t, fixtures.DemoTenantID, fixtures.DemoUserID)
	policy := func(name string, sales, fields []string) domain.Policy {
		pol, err := admin.CreatePolicy(ctx, domain.Policy{TenantID: fixtures.DemoTenantID, Name: name,
			AllowedTools: []string{toolUpdateStatus, toolBulkUpdate}, Scope: domain.PolicyScope{EstateSaleIDs: sales},
			Conditions: domain.PolicyConditions{MaxItemsPerRun: 1, PermittedFields: fields},
			Limits:     domain.PolicyLimits{MaxDailyActions: 5}, CreatedBy: fixtures.DemoUserID})
		if err != nil {
			t.Fatalf("CreatePolicy: %v", err)
		}
		if pol, err = admin.SetPolicyStatus(ctx, pol.ID, domain.PolicyActive, fixtures.DemoUserID); err != nil {
			t.Fatalf("enable policy: %v", err)
		}
		return pol
	}
	draftOnly := policy("Draft sale rooms", []string{fixtures.DraftSaleID}, []string{"room", "status", "effective_at"})
	rooms := policy("Published sale rooms", []string{fixtures.PublishedSaleID}, []string{"room", "status", "effective_at"})
	rug, sofa := f.itemNow(actRug), f.itemNow(actSofa)
	for _, c := range []struct {
		what, reason string // reason: the refusal's words, the same in both backends
		pol          domain.Policy
		d            domain.ProposalDraft
	}{
		{"a hold outside the policy's sales", "target outside the policy's sales", draftOnly, statusDraft(rug.ID, rug.Version, domain.ItemOnHold, actEffectiveAt, "")},
		{"a sale completion in scope", "sale completion is never authorised by a policy", rooms, statusDraft(rug.ID, rug.Version, domain.ItemSold, actEffectiveAt, "")},
		{"a field the policy does not permit", "field not permitted by the policy: title", rooms, bulkDraft(map[string]any{"title": "Rug"}, rug)},
		{"more items than per run", "2 targets exceed the policy's 1 per run", rooms, bulkDraft(map[string]any{"room": "garage"}, rug, sofa)},
	} {
		prop := f.mustPropose(c.d)
		before := in.Counts(t)
		_, _, err := f.execute(f.b, f.owner, prop, domain.Authorization{Decision: "allowed_by_policy", PolicyID: c.pol.ID,
			PolicyVersion: c.pol.Version, ProposalHash: prop.Hash})
		wantErr(t, err, domain.ErrApprovalRequired, c.what)
		if !strings.Contains(err.Error(), c.reason) {
			t.Fatalf("%s: refused with %q, want the reason %q", c.what, err, c.reason)
		}
		f.unchanged(before, c.what)
		f.sameItem(rug, c.what)
		f.sameItem(sofa, c.what)
	}
	// The control: what the policy does allow runs under it, so the
	// refusals above are the conditions', not the policy path's.
	prop := f.mustPropose(bulkDraft(map[string]any{"room": "garage"}, rug))
	res, _, err := f.execute(f.b, f.owner, prop, domain.Authorization{Decision: "allowed_by_policy", PolicyID: rooms.ID,
		PolicyVersion: rooms.Version, ProposalHash: prop.Hash})
	if err != nil || res.Approval.Decision != "allowed_by_policy" || res.Approval.PolicyID == nil || *res.Approval.PolicyID != rooms.ID {
		t.Fatalf("a room change within the policy: %+v, %v", res, err)
	}
	if got := f.itemNow(rug.ID); got.Room != "garage" || got.Version != rug.Version+1 {
		t.Fatalf("the rug after the permitted change: room %q, version %d (was %d)", got.Room, got.Version, rug.Version)
	}
	f.sameItem(sofa, "the permitted change")
}

func testBulkUpdate(t *testing.T, in Instance) {
	f := newFlow(t, in)
	pyrex, table, sofa, glass := f.itemNow(actPyrex), f.itemNow(actTable), f.itemNow(actSofa), f.itemNow(actGlass)
	changes := map[string]any{"room": "garage", "price_cents": float64(2500)}
	prop := f.mustPropose(bulkDraft(changes, pyrex, table, sofa))
	var wantCh []domain.FieldChange
	for _, it := range []domain.Item{pyrex, table, sofa} {
		wantCh = append(wantCh, domain.FieldChange{TargetID: it.ID, Field: "price_cents", From: float64(*it.PriceCents), To: float64(2500)},
			domain.FieldChange{TargetID: it.ID, Field: "room", From: it.Room, To: "garage"})
	}
	actSameChanges(t, prop.Changes, wantCh)
	if prop.TargetKind != "item" || prop.Requirement != "human_or_policy" || prop.Tool.Name != toolBulkUpdate ||
		prop.Impact != (domain.ProposalImpact{ItemsChanged: 3, PublicRecordsChanged: 1}) ||
		!slices.Equal(prop.SaleIDs, []string{fixtures.PublishedSaleID}) {
		t.Fatalf("bulk proposal = %+v", prop)
	}
	sameContent(t, f.proposal(prop.ID), prop)
	// An overlapping plan, approved too: it goes stale when this one runs.
	overlap := f.mustPropose(bulkDraft(map[string]any{"title": "Crystal stemware lot"}, glass, pyrex))
	g, g2 := f.approve(prop), f.approve(overlap)

	res, out := f.runExecution(prop, g, "bulk-exec-1", map[string]int64{"item_change_history": 6, "item_price_history": 3,
		"items": 0, "item_status_events": 0})
	if mustJSON(t, res.Results) != mustJSON(t, actApplied(f.b, pyrex, table, sofa)) || res.DomainFunction != wantDomainFunction(f.b, domain.ActionBulkItemUpdate) ||
		!slices.Equal(out.Related.ItemIDs, []string{pyrex.ID, table.ID, sofa.ID}) {
		t.Fatalf("result = %s, outcome %+v", mustJSON(t, res), out)
	}
	// Exactly the changes, on exactly the targets: status and everything
	// else as it was; the pricing history names the proposal.
	ds := Dataset()
	for _, it := range []domain.Item{pyrex, table, sofa} {
		got := f.itemNow(it.ID)
		want := it
		price := int64(2500)
		want.Room, want.PriceCents, want.Version, want.UpdatedAt = "garage", &price, it.Version+1, got.UpdatedAt
		if mustJSON(t, got) != mustJSON(t, want) {
			t.Fatalf("item after the bulk update:\n got %+v\nwant %+v", got, want)
		}
		det, err := f.b.GetItem(ctx, f.owner, it.ID, domain.ItemIncludes{PriceHistory: true})
		if err != nil {
			t.Fatal(err)
		}
		var mine []domain.PriceChange
		for _, pc := range det.PriceHistory {
			if pc.ProposalID == prop.ID {
				mine = append(mine, pc)
			}
		}
		var guidance *int64
		for _, x := range ds.Items {
			if x.ID == it.ID {
				guidance = x.InternalPriceGuidanceCents
			}
		}
		if len(mine) != 1 || mine[0].PriceCents == nil || *mine[0].PriceCents != 2500 || mine[0].Reason != "approved proposal" ||
			mine[0].ActorID != fixtures.DemoUserID || !eqPtr(mine[0].InternalPriceGuidanceCents, guidance) {
			t.Fatalf("price history of %s by the proposal = %+v", it.ID, mine)
		}
	}
	// The overlapping plan: stale on the item that moved, and nothing of
	// it applied — not even to the target that did not move.
	err := f.refusedExecution(overlap, g2, domain.ErrStaleVersion, "a bulk update over a moved item")
	actWantStale(t, err, pyrex.ID, pyrex.Version+1, pyrex.Version)
	if strings.Contains(err.Error(), glass.ID) {
		t.Fatalf("the stale reason names an unmoved target: %v", err)
	}
	f.sameItem(glass, "a stale bulk update")
}

func testBulkUpdateRefused(t *testing.T, in Instance) {
	f := newFlow(t, in)
	pyrex, sold, flat := f.itemNow(actPyrex), f.itemNow(actSoldBooks), f.itemNow(actScopedItem)
	scoped := resolve(t, f.b, CredScoped)
	before := in.Counts(t)
	_, _, err := f.propose(f.owner, bulkDraft(map[string]any{}, pyrex))
	wantInput(t, err, "changes")
	_, _, err = f.propose(f.owner, bulkDraft(map[string]any{"status": domain.ItemSold}, pyrex))
	wantInput(t, err, "changes")
	// Field-level permission: a cataloger may re-room but not re-price,
	// and a bulk plan cannot bypass that.
	_, _, err = f.propose(scoped, bulkDraft(map[string]any{"room": "garage", "price_cents": float64(100)}, flat))
	wantErr(t, err, domain.ErrPermissionDenied, "a cataloger's price change")
	_, _, err = f.propose(scoped, bulkDraft(map[string]any{"room": "garage"}, pyrex))
	wantErr(t, err, domain.ErrSaleAssignment, "scoped member, item of an unassigned sale")
	// A sold item is never changed.
	_, _, err = f.propose(f.owner, bulkDraft(map[string]any{"room": "garage"}, pyrex, sold))
	wantErr(t, err, domain.ErrTransitionInvalid, "a bulk update of a sold item")
	// Every target at its version; no target twice.
	stale := pyrex
	stale.Version--
	_, _, err = f.propose(f.owner, bulkDraft(map[string]any{"room": "garage"}, stale))
	actWantStale(t, err, pyrex.ID, pyrex.Version, pyrex.Version-1)
	_, _, err = f.propose(f.owner, bulkDraft(map[string]any{"room": "garage"}, pyrex, pyrex))
	wantInput(t, err, "item_ids")
	f.unchanged(before, "a refused bulk proposal")
	f.sameItem(pyrex, "a refused bulk proposal")
	f.sameItem(flat, "a refused bulk proposal")
}

// actFreeLabel is a printed label of the sale's batches that no item carries.
func actFreeLabel(t *testing.T, saleID string) (code, batchID string) {
	t.Helper()
	ds := Dataset()
	bound := map[string]bool{}
	for _, it := range ds.Items {
		if it.QRCode != "" {
			bound[it.QRCode] = true
		}
	}
	for _, b := range ds.LabelBatches {
		if b.TenantID != fixtures.DemoTenantID || b.SaleID != saleID {
			continue
		}
		for _, c := range b.Codes {
			if !bound[c] {
				return c, b.ID
			}
		}
	}
	t.Fatalf("no free label in %s", saleID)
	return "", ""
}

func actBatchOf(t *testing.T, code string) string {
	t.Helper()
	for _, b := range Dataset().LabelBatches {
		if slices.Contains(b.Codes, code) {
			return b.ID
		}
	}
	t.Fatalf("no batch prints %s", code)
	return ""
}

// boundLabels is how many of a batch's labels are bound now.
func (f *flow) boundLabels(saleID, batchID string) int {
	f.t.Helper()
	page, err := f.b.ListLabelBatches(ctx, f.owner, domain.LabelBatchQuery{SaleID: saleID, Limit: 100})
	if err != nil {
		f.t.Fatal(err)
	}
	for _, b := range page.Rows {
		if b.ID == batchID {
			return b.BoundCount
		}
	}
	f.t.Fatalf("batch %s not listed", batchID)
	return 0
}

func testBindIdentity(t *testing.T, in Instance) {
	f := newFlow(t, in)
	code, batch := actFreeLabel(t, fixtures.PublishedSaleID)
	pyrex, table := f.itemNow(actPyrex), f.itemNow(actTable)
	boundBefore := f.boundLabels(fixtures.PublishedSaleID, batch)
	prop := f.mustPropose(identityDraft(false, pyrex, code))
	if prop.Action != domain.ActionBindIdentity || prop.Tool.Name != toolBind || prop.Requirement != "human_or_policy" ||
		prop.Impact != (domain.ProposalImpact{ItemsChanged: 1}) {
		t.Fatalf("bind proposal = %+v", prop)
	}
	actSameChanges(t, prop.Changes, []domain.FieldChange{{TargetID: pyrex.ID, Field: "qr_code", From: "", To: code}})
	// A rival plan binds the same free tag to another item: both are valid
	// plans, only one can execute.
	rival := f.mustPropose(identityDraft(false, table, code))
	g, g2 := f.approve(prop), f.approve(rival)

	res, out := f.runExecution(prop, g, "bind-exec-1", map[string]int64{"item_change_history": 1, "items": 0, "qr_labels": 0})
	if mustJSON(t, res.Results) != mustJSON(t, actApplied(f.b, pyrex)) || res.DomainFunction != "bind_item_identity" ||
		!slices.Equal(out.Related.ItemIDs, []string{pyrex.ID}) {
		t.Fatalf("result = %s", mustJSON(t, res))
	}
	got := f.itemNow(pyrex.ID)
	want := pyrex
	want.QRCode, want.Version, want.UpdatedAt = code, pyrex.Version+1, got.UpdatedAt
	if mustJSON(t, got) != mustJSON(t, want) {
		t.Fatalf("item after binding:\n got %+v\nwant %+v", got, want)
	}
	if n := f.boundLabels(fixtures.PublishedSaleID, batch); n != boundBefore+1 {
		t.Fatalf("batch %s has %d bound labels, want %d", batch, n, boundBefore+1)
	}
	// The rival's item did not move, but its tag did: the domain function
	// refuses it at execution, and nothing of it happens.
	f.refusedExecution(rival, g2, domain.ErrTransitionInvalid, "binding a tag another item now carries")
	f.sameItem(table, "a refused binding")
	if n := f.boundLabels(fixtures.PublishedSaleID, batch); n != boundBefore+1 {
		t.Fatalf("a refused binding moved the batch's bound count to %d", n)
	}
}

func testReleaseIdentity(t *testing.T, in Instance) {
	f := newFlow(t, in)
	sofa := f.itemNow(actSofa)
	code := sofa.QRCode
	batch := actBatchOf(t, code)
	boundBefore := f.boundLabels(sofa.SaleID, batch)
	if pub, err := f.b.ResolvePublicQR(ctx, code); err != nil || pub.ID != sofa.ID {
		t.Fatalf("ResolvePublicQR(%s) before the release = %+v, %v", code, pub, err)
	}
	prop := f.mustPropose(identityDraft(true, sofa, code))
	if prop.Action != domain.ActionReleaseIdentity || prop.Tool.Name != toolRelease || prop.Requirement != "explicit_human" {
		t.Fatalf("release proposal = %+v", prop)
	}
	actSameChanges(t, prop.Changes, []domain.FieldChange{{TargetID: sofa.ID, Field: "qr_code", From: code, To: ""}})
	g := f.approve(prop)
	res, _ := f.runExecution(prop, g, "release-exec-1", map[string]int64{"item_change_history": 1, "items": 0})
	if mustJSON(t, res.Results) != mustJSON(t, actApplied(f.b, sofa)) || res.DomainFunction != "release_item_identity" {
		t.Fatalf("result = %s", mustJSON(t, res))
	}
	if got := f.itemNow(sofa.ID); got.QRCode != "" || got.Version != sofa.Version+1 || got.Status != sofa.Status {
		t.Fatalf("item after the release = %+v", got)
	}
	// A released tag resolves to nothing, like any unbound code.
	_, err := f.b.ResolvePublicQR(ctx, code)
	if !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("ResolvePublicQR(%s) after the release: %v", code, err)
	}
	if n := f.boundLabels(sofa.SaleID, batch); n != boundBefore-1 {
		t.Fatalf("batch %s has %d bound labels, want %d", batch, n, boundBefore-1)
	}
}

func testIdentityRefused(t *testing.T, in Instance) {
	f := newFlow(t, in)
	code, _ := actFreeLabel(t, fixtures.PublishedSaleID)
	table, rug := f.itemNow(actTable), f.itemNow(actRug)
	before := in.Counts(t)
	// Not one of the tenant's labels (another tenant's printed tag).
	_, _, err := f.propose(f.owner, identityDraft(false, table, "QR-310-0001"))
	wantErr(t, err, domain.ErrTransitionInvalid, "binding another tenant's tag")
	// Bound to another item.
	_, _, err = f.propose(f.owner, identityDraft(false, table, rug.QRCode))
	wantErr(t, err, domain.ErrTransitionInvalid, "binding a tag another item carries")
	// The item carries a tag: release it first; the same tag again.
	_, _, err = f.propose(f.owner, identityDraft(false, rug, code))
	wantErr(t, err, domain.ErrTransitionInvalid, "binding a second tag")
	_, _, err = f.propose(f.owner, identityDraft(false, rug, rug.QRCode))
	wantErr(t, err, domain.ErrTransitionInvalid, "binding the tag the item carries")
	// Releasing a tag the item does not carry.
	_, _, err = f.propose(f.owner, identityDraft(true, rug, code))
	wantErr(t, err, domain.ErrTransitionInvalid, "releasing another tag")
	_, _, err = f.propose(f.owner, identityDraft(true, table, ""))
	wantErr(t, err, domain.ErrTransitionInvalid, "releasing from an item without a tag")
	// A version that moved.
	stale := table
	stale.Version++
	_, _, err = f.propose(f.owner, identityDraft(false, stale, code))
	actWantStale(t, err, table.ID, table.Version, table.Version+1)
	f.unchanged(before, "a refused identity proposal")
	f.sameItem(table, "a refused identity proposal")
	f.sameItem(rug, "a refused identity proposal")
}

func testDisposition(t *testing.T, in Instance) {
	f := newFlow(t, in)
	dishes, bakes, table := f.itemNow(actDishes), f.itemNow(actBakeware), f.itemNow(actSideTable)
	queue := func() []string {
		page, err := f.b.DispositionQueue(ctx, f.owner, domain.DispositionQuery{SaleID: fixtures.ClosedSaleID, Limit: 100}, domain.ItemIncludes{})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, e := range page.Rows {
			ids = append(ids, e.ID)
		}
		return ids
	}
	if q := queue(); !slices.Contains(q, dishes.ID) || !slices.Contains(q, bakes.ID) {
		t.Fatalf("disposition queue %v lacks %s, %s", q, dishes.ID, bakes.ID)
	}
	const shop = "Main Street Consignment"
	prop := f.mustPropose(dispositionDraft("consign", shop, nil, dishes, bakes))
	if prop.Action != domain.ActionDisposition || prop.Tool.Name != toolDisposition || prop.Requirement != "explicit_human" ||
		prop.Impact != (domain.ProposalImpact{ItemsChanged: 2, PublicRecordsChanged: 2}) ||
		!slices.Equal(prop.SaleIDs, []string{fixtures.ClosedSaleID}) {
		t.Fatalf("disposition proposal = %+v", prop)
	}
	actSameChanges(t, prop.Changes, []domain.FieldChange{
		{TargetID: dishes.ID, Field: "disposition", To: "consign"},
		{TargetID: dishes.ID, Field: "status", From: domain.ItemPublished, To: domain.ItemWithdrawn},
		{TargetID: bakes.ID, Field: "disposition", To: "consign"},
		{TargetID: bakes.ID, Field: "status", From: domain.ItemPublished, To: domain.ItemWithdrawn},
		{TargetID: dishes.ID, Field: "counterparty", To: shop}})
	g := f.approve(prop)
	res, out := f.runExecution(prop, g, "dispose-exec-1", map[string]int64{"item_dispositions": 2, "item_status_events": 2, "items": 0})
	if mustJSON(t, res.Results) != mustJSON(t, actApplied(f.b, dishes, bakes)) || res.DomainFunction != "apply_disposition_action" ||
		!slices.Equal(out.Related.ItemIDs, []string{dishes.ID, bakes.ID}) {
		t.Fatalf("result = %s", mustJSON(t, res))
	}
	for _, it := range []domain.Item{dishes, bakes} {
		got := f.itemNow(it.ID)
		if got.Status != domain.ItemWithdrawn || got.Version != it.Version+1 || !eqPtr(got.PriceCents, it.PriceCents) || got.QRCode != it.QRCode {
			t.Fatalf("item after consigning = %+v", got)
		}
		if ev := f.statusEventOf(it.ID, prop.ID); ev.FromStatus != domain.ItemPublished || ev.ToStatus != domain.ItemWithdrawn ||
			ev.SourceType != domain.StatusSourceProposal {
			t.Fatalf("disposition status event = %+v", ev)
		}
	}
	if q := queue(); slices.Contains(q, dishes.ID) || slices.Contains(q, bakes.ID) {
		t.Fatalf("disposed items still queued: %v", q)
	}

	// A withdrawn item is donated: archived.
	donate := f.mustPropose(dispositionDraft("donate", "", nil, table))
	g2 := f.approve(donate)
	res, _ = f.runExecution(donate, g2, "dispose-exec-2", map[string]int64{"item_dispositions": 1, "item_status_events": 1})
	if mustJSON(t, res.Results) != mustJSON(t, actApplied(f.b, table)) {
		t.Fatalf("donation result = %s", mustJSON(t, res))
	}
	if got := f.itemNow(table.ID); got.Status != domain.ItemArchived || got.Version != table.Version+1 {
		t.Fatalf("donated item = %+v", got)
	}

	// A published item donated is withdrawn from sale, then archived
	// (domain.DispositionSteps): two lifecycle events, one disposition.
	cab := f.itemNow(actCabinet)
	pub := f.mustPropose(dispositionDraft("donate", "", nil, cab))
	g3 := f.approve(pub)
	res, _ = f.runExecution(pub, g3, "dispose-exec-3", map[string]int64{"item_dispositions": 1, "item_status_events": 2})
	if got := f.itemNow(cab.ID); got.Status != domain.ItemArchived || got.Version != cab.Version+2 || len(res.Results) != 1 ||
		res.Results[0].NewVersion == nil || *res.Results[0].NewVersion != cab.Version+2 {
		t.Fatalf("donated published item = %+v, result %s", got, mustJSON(t, res))
	}

	// An item has one disposition: a consigned item cannot get a second.
	again := f.itemNow(dishes.ID)
	second := f.mustPropose(dispositionDraft("donate", "", nil, again))
	g4 := f.approve(second)
	err := f.refusedExecution(second, g4, domain.ErrTransitionInvalid, "a second disposition")
	if !strings.Contains(err.Error(), "already has a disposition") {
		t.Fatalf("refusal reason: %v", err)
	}
	f.sameItem(again, "a refused second disposition")
}

func testDispositionRefused(t *testing.T, in Instance) {
	f := newFlow(t, in)
	cab, sold, dishes := f.itemNow(actCabinet), f.itemNow(actClosedSold), f.itemNow(actDishes)
	before := in.Counts(t)
	// Only unsold items get a disposition.
	_, _, err := f.propose(f.owner, dispositionDraft("donate", "", nil, dishes, sold))
	wantErr(t, err, domain.ErrTransitionInvalid, "a disposition of a sold item")
	// An offer only with a buy-out.
	_, _, err = f.propose(f.owner, dispositionDraft("donate", "", float64(5000), dishes))
	wantInput(t, err, "offer_cents")
	stale := dishes
	stale.Version--
	_, _, err = f.propose(f.owner, dispositionDraft("consign", "", nil, stale))
	actWantStale(t, err, dishes.ID, dishes.Version, dishes.Version-1)
	f.unchanged(before, "a refused disposition proposal")
	_ = cab
}

// actNotifyOutcome is what a notification's target reports: simulated in mock
// mode; queued for an external worker in live mode, never sent.
func actNotifyOutcome(b domain.Backend) string {
	if b.Mode() == domain.ModeMock {
		return "simulated"
	}
	return "queued"
}

// actAudience sums the dataset's demand for a sale, narrowed to a top-level
// category when one is given (what BuildNotification sizes from).
func actAudience(saleID, top string) (saves, follows int) {
	for _, d := range Dataset().DemandSignals {
		if d.TenantID != fixtures.DemoTenantID || d.SaleID != saleID {
			continue
		}
		if top != "" && d.Category != top && !strings.HasPrefix(d.Category, top+".") {
			continue
		}
		saves += d.Saves
		follows += d.Follows
	}
	return saves, follows
}

func testBuyerNotification(t *testing.T, in Instance) {
	f := newFlow(t, in)
	s := f.sale(fixtures.PublishedSaleID)
	prop := f.mustPropose(notifyDraft(s.ID, s.Version, "followed_sale", []string{"email"}, "{{sale_title}} opens soon"))
	_, follows := actAudience(s.ID, "")
	sent := follows - follows/10
	wantPlan := domain.NotificationPlan{AudienceSize: follows, SelectionBasis: "followed_sale", Channels: []string{"email"},
		MessagePreview: s.Title + " opens soon", SuppressedCount: follows / 10, RateLimitPerHour: 500}
	if follows == 0 || prop.Notification == nil || mustJSON(t, *prop.Notification) != mustJSON(t, wantPlan) ||
		prop.Impact != (domain.ProposalImpact{NotificationsSent: sent}) || prop.TargetKind != "sale" ||
		prop.Requirement != "explicit_human" || !slices.Equal(prop.SaleIDs, []string{s.ID}) {
		t.Fatalf("notification proposal = %s", mustJSON(t, prop))
	}
	actSameChanges(t, prop.Changes, []domain.FieldChange{{TargetID: s.ID, Field: "notification", To: fmt.Sprintf("%d buyers via email", sent)}})
	if strings.Contains(mustJSON(t, prop), "@") {
		t.Fatalf("the plan names a buyer: %s", mustJSON(t, prop))
	}
	sameContent(t, f.proposal(prop.ID), prop)

	// An item's notification to buyers interested in its category, by SMS:
	// the audience of its top-level category, and its cost (within a $5/day
	// budget: under the default $0 it is refused, suite_hardening_grants.go).
	f.setPaidBudget("", 5)
	sofa := f.itemNow(actSofa)
	top, _, _ := strings.Cut(sofa.Category, ".")
	_, catFollows := actAudience(sofa.SaleID, top)
	ip := f.mustPropose(notifyDraft(sofa.ID, sofa.Version, "category_interest", []string{"sms"}, "{{item_title}} is still available"))
	catSent := catFollows - catFollows/10
	if ip.TargetKind != "item" || ip.Notification == nil || ip.Notification.AudienceSize != catFollows ||
		ip.Notification.MessagePreview != sofa.Title+" is still available" || ip.Impact.NotificationsSent != catSent ||
		ip.Impact.EstimatedCostUSD != float64(int(float64(catSent)*0.0075*100+0.5))/100 || !slices.Equal(ip.SaleIDs, []string{sofa.SaleID}) {
		t.Fatalf("item notification proposal = %s", mustJSON(t, ip))
	}

	g := f.approve(prop)
	grew := map[string]int64{"items": 0, "estate_sales": 0, "simulated_deliveries": 0, "outbound_requests": 0}
	if f.b.Mode() == domain.ModeMock {
		grew["simulated_deliveries"] = 1
	} else {
		grew["outbound_requests"] = 1
	}
	res, out := f.runExecution(prop, g, "notify-exec-1", grew)
	wantRes := []domain.TargetOutcome{{TargetID: s.ID, Outcome: actNotifyOutcome(f.b)}}
	if mustJSON(t, res.Results) != mustJSON(t, wantRes) || res.DomainFunction != "notify_matched_buyers" ||
		len(out.Related.ItemIDs) != 0 || strings.Contains(mustJSON(t, res), "@") {
		t.Fatalf("result = %s, outcome %+v", mustJSON(t, res), out)
	}
	// Nothing canonical changed: the sale is as it was.
	if got := f.sale(s.ID); mustJSON(t, got) != mustJSON(t, s) {
		t.Fatalf("a notification changed its sale: %+v", got)
	}
}

func testBuyerNotificationRefused(t *testing.T, in Instance) {
	f := newFlow(t, in)
	draftSale, pub, ready := f.sale(fixtures.DraftSaleID), f.sale(fixtures.PublishedSaleID), f.itemNow(actPyrex)
	before := in.Counts(t)
	_, _, err := f.propose(f.owner, notifyDraft(draftSale.ID, draftSale.Version, "followed_sale", []string{"email"}, "Soon"))
	wantErr(t, err, domain.ErrTransitionInvalid, "announcing a draft sale")
	_, _, err = f.propose(f.owner, notifyDraft(ready.ID, ready.Version, "saved_item", []string{"email"}, "Soon"))
	wantErr(t, err, domain.ErrTransitionInvalid, "announcing an unpublished item")
	_, _, err = f.propose(f.owner, notifyDraft(pub.ID, pub.Version-1, "followed_sale", []string{"email"}, "Soon"))
	actWantStale(t, err, pub.ID, pub.Version, pub.Version-1)
	_, _, err = f.propose(f.owner, notifyDraft(fixtures.OtherPublishedSaleID, 1, "followed_sale", []string{"email"}, "Soon"))
	wantRef(t, err, "sale_id", fixtures.OtherPublishedSaleID, true)
	_, _, err = f.propose(f.owner, notifyDraft(actForeignItem, 1, "followed_sale", []string{"email"}, "Soon"))
	wantRef(t, err, "item_id", actForeignItem, true)
	// §4.3: a sale-scoped member announces only its assigned sales (the
	// proposal would otherwise show it the unassigned sale and its demand).
	_, _, err = f.propose(resolve(t, f.b, CredScoped), notifyDraft(pub.ID, pub.Version, "followed_sale", []string{"email"}, "Soon"))
	wantErr(t, err, domain.ErrSaleAssignment, "a scoped member announcing an unassigned sale")
	f.unchanged(before, "a refused notification proposal")
}

// stage stages an export of items for channel (the ingestion step that
// precedes a delivery proposal).
func (f *flow) stage(channel string, ids ...string) domain.ExportDraft {
	f.t.Helper()
	w := f.writeMeta(f.owner, "trove_stage_export", "candidate_write", "", "")
	res, _, err := f.b.StageExport(ctx, f.owner, w, domain.NewExport{Channel: channel, ItemIDs: ids})
	if err != nil {
		f.t.Fatalf("StageExport %v: %v", ids, err)
	}
	return res
}

func deliveryDraft(exportID string) domain.ProposalDraft {
	t, v := actOne(exportID, domain.ExportVersion)
	return domain.ProposalDraft{Action: domain.ActionExportDelivery, Tool: domain.ExecutingTool{Name: toolDeliver, Version: "1.0.0"},
		Requirement: "explicit_human", TargetIDs: t, ExpectedVersions: v}
}

// testExportDelivery: a staged export's delivery is bound to the snapshot
// AND to each valid item at the version it was staged at. Executed, it is
// recorded as a simulated delivery in mock mode and queued as ONE outbound
// request in live mode — every target "queued", nothing claimed delivered —
// and it can never be delivered twice.
func testExportDelivery(t *testing.T, in Instance) {
	f := newFlow(t, in)
	sofa, rug := f.itemNow(actSofa), f.itemNow(actRug)
	ex := f.stage(domain.ChannelEbay, sofa.ID, rug.ID, actVase)
	evs := []domain.TargetVersion{{ID: ex.ExportID, Version: domain.ExportVersion}}
	var valid, invalid []string
	var changes []domain.FieldChange
	for _, l := range ex.Listings {
		if !l.Valid {
			invalid = append(invalid, l.ItemID)
			continue
		}
		valid = append(valid, l.ItemID)
		evs = append(evs, domain.TargetVersion{ID: l.ItemID, Version: l.Version})
		changes = append(changes, domain.FieldChange{TargetID: l.ItemID, Field: "external_listing." + domain.ChannelEbay, To: "listed"})
	}
	if !slices.Equal(valid, []string{sofa.ID, rug.ID}) || !slices.Equal(invalid, []string{actVase}) {
		t.Fatalf("the case needs two valid listings and an invalid one: %+v", ex.Listings)
	}
	changes = append(changes, domain.FieldChange{TargetID: ex.ExportID, Field: "status", From: domain.ExportStaged, To: "delivered"})

	// What the approval step compares the proposal's targets with: the
	// export is at its one version while it can be delivered.
	admin := in.Admin(t, fixtures.DemoTenantID, fixtures.DemoUserID)
	if vs, err := admin.CurrentVersions(ctx, fixtures.DemoTenantID, []string{ex.ExportID, sofa.ID}); err != nil ||
		len(vs) != 2 || vs[ex.ExportID] != domain.ExportVersion || vs[sofa.ID] != sofa.Version {
		t.Fatalf("CurrentVersions = %v, %v", vs, err)
	}
	prop := f.mustPropose(deliveryDraft(ex.ExportID))
	if prop.TargetKind != "export" || prop.Tool.Name != toolDeliver || prop.Requirement != "explicit_human" ||
		!slices.Equal(prop.TargetIDs, []string{ex.ExportID}) || !slices.Equal(prop.ExpectedVersions, evs) ||
		!slices.Equal(prop.SaleIDs, []string{fixtures.PublishedSaleID}) ||
		prop.Impact != (domain.ProposalImpact{ExternalDeliveries: 1, PublicRecordsChanged: 2}) ||
		prop.Validation.Status != "valid_with_warnings" || len(prop.Validation.Warnings) != 1 {
		t.Fatalf("delivery proposal = %s", mustJSON(t, prop))
	}
	actSameChanges(t, prop.Changes, changes)
	sameContent(t, f.proposal(prop.ID), prop)
	// A second plan for the same export: only one delivery can ever run.
	twice := f.mustPropose(deliveryDraft(ex.ExportID))
	g, g2 := f.approve(prop), f.approve(twice)

	grew := map[string]int64{"items": 0, "export_drafts": 0, "simulated_deliveries": 0, "outbound_requests": 0}
	if f.b.Mode() == domain.ModeMock {
		grew["simulated_deliveries"] = 1
	} else {
		grew["outbound_requests"] = 1
	}
	res, out := f.runExecution(prop, g, "deliver-exec-1", grew)
	want := []domain.TargetOutcome{}
	for _, ev := range evs {
		want = append(want, domain.TargetOutcome{TargetID: ev.ID, Outcome: actNotifyOutcome(f.b)})
	}
	if mustJSON(t, res.Results) != mustJSON(t, want) || res.DomainFunction != "deliver_export" ||
		!slices.Equal(out.Related.ItemIDs, valid) {
		t.Fatalf("result = %s, outcome %+v", mustJSON(t, res), out)
	}
	// Delivery changes no item.
	f.sameItem(sofa, "an export delivery")
	f.sameItem(rug, "an export delivery")
	// Never twice: the export has no deliverable version any more, so the
	// other plan is refused, and so is a new one.
	if vs, err := admin.CurrentVersions(ctx, fixtures.DemoTenantID, []string{ex.ExportID}); err != nil || len(vs) != 0 {
		t.Fatalf("CurrentVersions after the delivery = %v, %v", vs, err)
	}
	f.refusedExecution(twice, g2, domain.ErrNotFound, "delivering an export twice")
	before := in.Counts(t)
	_, _, err := f.propose(f.owner, deliveryDraft(ex.ExportID))
	wantErr(t, err, domain.ErrTransitionInvalid, "proposing a delivered export")
	f.unchanged(before, "a refused delivery proposal")
}

// testExportDeliveryStale: an item changed since staging makes the
// delivery stale, before and after approval, and nothing is delivered.
func testExportDeliveryStale(t *testing.T, in Instance) {
	f := newFlow(t, in)
	rug := f.itemNow(actRug)
	ex := f.stage(domain.ChannelEtsy, rug.ID)
	if len(ex.Listings) != 1 || !ex.Listings[0].Valid {
		t.Fatalf("staged = %+v", ex)
	}
	prop := f.mustPropose(deliveryDraft(ex.ExportID))
	g := f.approve(prop)
	// The rug changes after staging (an approved status change).
	hold := f.mustPropose(statusDraft(rug.ID, rug.Version, domain.ItemOnHold, actEffectiveAt, ""))
	if _, _, err := f.execute(f.b, f.owner, hold, allowed(hold, f.approve(hold).ID)); err != nil {
		t.Fatalf("status change: %v", err)
	}
	err := f.refusedExecution(prop, g, domain.ErrStaleVersion, "delivering a changed item")
	actWantStale(t, err, rug.ID, rug.Version+1, rug.Version)
	before := in.Counts(t)
	_, _, err = f.propose(f.owner, deliveryDraft(ex.ExportID))
	actWantStale(t, err, rug.ID, rug.Version+1, rug.Version)
	// Other tenants' exports and unknown ones are alike unknown.
	_, _, err = f.propose(f.owner, deliveryDraft("export_404"))
	wantRef(t, err, "export_id", "export_404", false)
	f.unchanged(before, "a refused delivery proposal")
}
