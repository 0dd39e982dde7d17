package live_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/approval"
	"github.com/triunalabs/trovesnap/internal/domain"
)

// Attack (issue 16, media promotion, migration 43): promote_media_candidate
// read the item, then locked it, then judged the status it had read before
// the lock. An item sold by a transaction that commits while the execution
// waits for the item's lock (a checkout in flight) took the approved photo
// anyway, though "a sold, pending-pickup or archived item takes no photo",
// and the execution answered a version the item never had. The status must
// be judged on the row as locked: refused with transition_invalid, the
// sold item left without a new photo and the candidate open.
func TestAttack_MediaPromotionOntoAnItemSoldWhileWaiting(t *testing.T) {
	a := newAuthority(t)
	const item = "item_1003"
	prop, grant, cand := grantedMediaPromotion(t, a, item, 77)
	before := itemPhotoCount(t, a, item)
	res, err := executeWhileItemHeld(t, a, prop, grant, item, "UPDATE trovesnap.items SET status = 'sold', version = version + 1 WHERE id = $1")
	if !errors.Is(err, domain.ErrTransitionInvalid) {
		t.Fatalf("a photo promoted onto an item sold while the execution waited: %+v, %v", res, err)
	}
	if n := itemPhotoCount(t, a, item); n != before {
		t.Fatalf("the sold item has %d photos, had %d", n, before)
	}
	c, err := a.b.GetCandidate(ctx, a.p, cand)
	if err != nil || c.ReviewStatus != domain.ReviewNeedsReview || c.Version != 1 {
		t.Fatalf("candidate after a refused promotion = %+v, %v", c, err)
	}
}

// The same race where the other transaction only moves the item's version
// (another change of the item, committed while the execution waited): the
// execution answers the version the item now has, not one computed from
// the row read before the lock.
func TestAttack_MediaPromotionAnswersTheItemsVersionAfterAConcurrentChange(t *testing.T) {
	a := newAuthority(t)
	const item = "item_1003"
	prop, grant, _ := grantedMediaPromotion(t, a, item, 76)
	res, err := executeWhileItemHeld(t, a, prop, grant, item, "UPDATE trovesnap.items SET version = version + 1 WHERE id = $1")
	if err != nil || len(res.Results) != 2 || res.Results[1].NewVersion == nil {
		t.Fatalf("media promotion: %+v, %v", res, err)
	}
	if now := a.item(item).Version; *res.Results[1].NewVersion != now {
		t.Fatalf("the execution answered item version %d; the item is at %d", *res.Results[1].NewVersion, now)
	}
}

// grantedMediaPromotion proposes a photo for item, its promotion, and a
// seller's grant for it.
func grantedMediaPromotion(t *testing.T, a *authority, item string, seed uint8) (domain.Proposal, string, string) {
	t.Helper()
	up := authorityPNG(t, seed)
	mc, _, err := a.b.CreateMediaCandidate(ctx, a.p, a.meta("trove_create_media_attachment_candidate"),
		domain.NewCandidateMedia{ItemID: item, Upload: &up})
	if err != nil {
		t.Fatal(err)
	}
	prop, err := a.propose(authorityDraft(domain.ActionPromoteCandidate, nil, domain.TargetVersion{ID: mc.CandidateID, Version: 1}))
	if err != nil {
		t.Fatal(err)
	}
	g, err := sellerAs(t, a.env, fixtures.DemoUserID).IssueGrant(ctx, domain.Grant{ID: domain.RandomIDs{}.New(domain.PrefixApproval),
		TenantID: prop.TenantID, ProposalID: prop.ID, ProposalHash: prop.Hash,
		IssuedBy: domain.GrantIssuer{Type: domain.IssuerHuman, ActorID: fixtures.DemoUserID, Surface: "attack"},
		Tool:     prop.Tool.Name, TargetIDs: prop.TargetIDs, Constraints: approval.DefaultConstraints(prop), Status: domain.GrantActive,
		SingleUse: true, IssuedAt: time.Now(), ExpiresAt: prop.ExpiresAt})
	if err != nil {
		t.Fatal(err)
	}
	return prop, g.ID, mc.CandidateID
}

func itemPhotoCount(t *testing.T, a *authority, item string) int {
	t.Helper()
	full, err := a.b.GetItem(ctx, a.p, item, domain.ItemIncludes{Photos: true})
	if err != nil {
		t.Fatal(err)
	}
	return len(full.Photos)
}

// executeWhileItemHeld runs stmt on the item in a transaction of its own
// (a concurrent change in flight, holding the item's row), executes the
// proposal under the grant, waits until the execution waits for a lock,
// commits the change, and answers the execution.
func executeWhileItemHeld(t *testing.T, a *authority, prop domain.Proposal, grant, item, stmt string) (domain.ExecutionResult, error) {
	t.Helper()
	other, err := a.env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	watch, err := a.env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close(ctx)
	tx, err := other.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, stmt, item); err != nil {
		t.Fatal(err)
	}
	type outcome struct {
		res domain.ExecutionResult
		err error
	}
	done := make(chan outcome, 1)
	w := a.meta(prop.Tool.Name)
	go func() {
		res, _, err := a.b.ExecuteProposal(ctx, a.p, w, prop.ID, domain.Authorization{Decision: "allowed", GrantID: grant, ProposalHash: prop.Hash})
		done <- outcome{res, err}
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var waiting int
		if err := watch.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'
			AND query ILIKE '%mcp_execute_proposal%'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		select {
		case o := <-done:
			_ = tx.Rollback(ctx)
			t.Fatalf("the execution did not wait for the item's lock: %+v, %v", o.res, o.err)
		default:
		}
		if time.Now().After(deadline) {
			_ = tx.Rollback(ctx)
			t.Fatal("the execution never waited for the item's lock")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	o := <-done
	return o.res, o.err
}

// Attack (held): a token holder forges the media promotion sent to
// mcp_create_proposal — the photos added to another item, another
// candidate's photo, its own photo twice, a change naming another field —
// and each is refused as not what the database derives, nothing stored.
func TestAttack_MediaPromotionForgedBodiesRefused(t *testing.T) {
	a := newAuthority(t)
	up, other := authorityPNG(t, 78), authorityPNG(t, 79)
	mc, _, err := a.b.CreateMediaCandidate(ctx, a.p, a.meta("trove_create_media_attachment_candidate"),
		domain.NewCandidateMedia{ItemID: "item_1003", Upload: &up})
	if err != nil {
		t.Fatal(err)
	}
	oc, _, err := a.b.CreateMediaCandidate(ctx, a.p, a.meta("trove_create_media_attachment_candidate"),
		domain.NewCandidateMedia{ItemID: "item_1001", Upload: &other})
	if err != nil {
		t.Fatal(err)
	}
	prop, err := a.propose(authorityDraft(domain.ActionPromoteCandidate, nil, domain.TargetVersion{ID: mc.CandidateID, Version: 1}))
	if err != nil {
		t.Fatal(err)
	}
	set := func(field string, to any) func(*domain.Proposal) {
		return func(x *domain.Proposal) {
			for i := range x.Changes {
				if x.Changes[i].Field == field {
					x.Changes[i].To = to
				}
			}
		}
	}
	a.forge(prop, set(domain.FieldAddPhotosItem, "item_1001"), "invalid_input:proposal", "changes")
	a.forge(prop, set(domain.FieldAddPhotosAssets, []string{oc.AssetID}), "invalid_input:proposal", "changes")
	a.forge(prop, set(domain.FieldAddPhotosAssets, []string{mc.AssetID, mc.AssetID}), "invalid_input:proposal", "changes")
	a.forge(prop, set(domain.FieldAddPhotosAssets, []string{mc.AssetID, oc.AssetID}), "invalid_input:proposal", "changes")
	a.forge(prop, func(x *domain.Proposal) {
		x.Changes = append(x.Changes, domain.FieldChange{TargetID: mc.CandidateID, Field: "create_item.price_cents", To: 100})
	}, "invalid_input:proposal", "changes")
	a.forge(prop, func(x *domain.Proposal) { x.SaleIDs = []string{fixtures.DraftSaleID} }, "invalid_input:sale_ids", "sales")
}

// Attack (held): a media promotion runs under a policy only when the
// policy names its fields (add_photos.item_id, add_photos.asset_ids,
// review_status) and its item's sale: a policy written for new-item
// promotions, or scoped to another sale, is refused with nothing changed;
// the policy that names them adds the photo privately.
func TestAttack_MediaPromotionUnderAPolicyNeedsItsFields(t *testing.T) {
	a := newAuthority(t)
	admin := sellerAs(t, a.env, fixtures.DemoUserID)
	const item = "item_1003"
	up := authorityPNG(t, 80)
	mc, _, err := a.b.CreateMediaCandidate(ctx, a.p, a.meta("trove_create_media_attachment_candidate"),
		domain.NewCandidateMedia{ItemID: item, Upload: &up})
	if err != nil {
		t.Fatal(err)
	}
	prop, err := a.propose(authorityDraft(domain.ActionPromoteCandidate, nil, domain.TargetVersion{ID: mc.CandidateID, Version: 1}))
	if err != nil {
		t.Fatal(err)
	}
	it := a.item(item)
	policy := func(name string, sale string, fields ...string) domain.Policy {
		pol, err := admin.CreatePolicy(ctx, domain.Policy{TenantID: fixtures.DemoTenantID, Name: name,
			AllowedTools: []string{"trove_execute_candidate_promotion"}, Scope: domain.PolicyScope{EstateSaleIDs: []string{sale}},
			Conditions: domain.PolicyConditions{MaxItemsPerRun: 1, PermittedFields: fields},
			Limits:     domain.PolicyLimits{MaxDailyActions: 50}, CreatedBy: fixtures.DemoUserID})
		if err != nil {
			t.Fatal(err)
		}
		if pol, err = admin.SetPolicyStatus(ctx, pol.ID, domain.PolicyActive, fixtures.DemoUserID); err != nil {
			t.Fatal(err)
		}
		return pol
	}
	run := func(pol domain.Policy) (domain.ExecutionResult, error) {
		res, _, err := a.b.ExecuteProposal(ctx, a.p, a.meta(prop.Tool.Name), prop.ID, domain.Authorization{Decision: "allowed_by_policy",
			PolicyID: pol.ID, PolicyVersion: pol.Version, ProposalHash: prop.Hash})
		return res, err
	}
	newItem := policy("promote-new-items", it.SaleID, "create_item.sale_id", "create_item.title", "create_item.description",
		"create_item.category", "create_item.room", "create_item.photos", "create_item.status", "review_status")
	elsewhere := policy("other-sale", fixtures.DraftSaleID, domain.FieldAddPhotosItem, domain.FieldAddPhotosAssets, "review_status")
	for _, tc := range []struct {
		pol    domain.Policy
		reason string
	}{{newItem, "field not permitted by the policy: " + domain.FieldAddPhotosItem}, {elsewhere, "outside the policy's sales"}} {
		before := counts(t, a.env)
		res, err := run(tc.pol)
		if !errors.Is(err, domain.ErrApprovalRequired) || !strings.Contains(err.Error(), tc.reason) {
			t.Fatalf("media promotion under %s: %+v, %v; want approval_required (%s)", tc.pol.Name, res, err, tc.reason)
		}
		sameCounts(t, a.env, before, "a refused policy execution")
	}
	if after := a.item(item); after.Version != it.Version {
		t.Fatalf("item moved to v%d under a refused policy", after.Version)
	}
	res, err := run(policy("add-photos", it.SaleID, domain.FieldAddPhotosItem, domain.FieldAddPhotosAssets, "review_status"))
	if err != nil || len(res.Results) != 2 || res.Results[1].TargetID != item || len(res.CreatedItemIDs) != 0 {
		t.Fatalf("media promotion under a policy naming its fields: %+v, %v", res, err)
	}
	full, err := a.b.GetItem(ctx, a.p, item, domain.ItemIncludes{Photos: true})
	if err != nil {
		t.Fatal(err)
	}
	if last := full.Photos[len(full.Photos)-1]; last.Published {
		t.Fatalf("the photo a policy added is public: %+v", last)
	}
}

// Attack (held): the media promotion replayed under its key answers the
// first result and adds no second photo; sent again under a new key it is
// refused as executed.
func TestAttack_MediaPromotionReplayAddsOnePhoto(t *testing.T) {
	a := newAuthority(t)
	const item = "item_1003"
	up := authorityPNG(t, 81)
	mc, _, err := a.b.CreateMediaCandidate(ctx, a.p, a.meta("trove_create_media_attachment_candidate"),
		domain.NewCandidateMedia{ItemID: item, Upload: &up})
	if err != nil {
		t.Fatal(err)
	}
	prop, err := a.propose(authorityDraft(domain.ActionPromoteCandidate, nil, domain.TargetVersion{ID: mc.CandidateID, Version: 1}))
	if err != nil {
		t.Fatal(err)
	}
	g, err := sellerAs(t, a.env, fixtures.DemoUserID).IssueGrant(ctx, domain.Grant{ID: domain.RandomIDs{}.New(domain.PrefixApproval),
		TenantID: prop.TenantID, ProposalID: prop.ID, ProposalHash: prop.Hash,
		IssuedBy: domain.GrantIssuer{Type: domain.IssuerHuman, ActorID: fixtures.DemoUserID, Surface: "attack"},
		Tool:     prop.Tool.Name, TargetIDs: prop.TargetIDs, Constraints: approval.DefaultConstraints(prop), Status: domain.GrantActive,
		SingleUse: true, IssuedAt: time.Now(), ExpiresAt: prop.ExpiresAt})
	if err != nil {
		t.Fatal(err)
	}
	photos := func() int {
		full, err := a.b.GetItem(ctx, a.p, item, domain.ItemIncludes{Photos: true})
		if err != nil {
			t.Fatal(err)
		}
		return len(full.Photos)
	}
	n0 := photos()
	auth := domain.Authorization{Decision: "allowed", GrantID: g.ID, ProposalHash: prop.Hash}
	w := a.meta(prop.Tool.Name)
	first, _, err := a.b.ExecuteProposal(ctx, a.p, w, prop.ID, auth)
	if err != nil {
		t.Fatal(err)
	}
	again, out, err := a.b.ExecuteProposal(ctx, a.p, w, prop.ID, auth)
	if err != nil || !out.Replayed || len(again.Results) != 2 || *again.Results[1].NewVersion != *first.Results[1].NewVersion {
		t.Fatalf("replay: %+v %+v, %v", again, out, err)
	}
	if _, _, err := a.b.ExecuteProposal(ctx, a.p, a.meta(prop.Tool.Name), prop.ID, auth); !errors.Is(err, domain.ErrApprovalConsumed) {
		t.Fatalf("executed again under a new key: %v", err)
	}
	if n := photos(); n != n0+1 {
		t.Fatalf("item has %d photos, had %d: want one more", n, n0)
	}
}
