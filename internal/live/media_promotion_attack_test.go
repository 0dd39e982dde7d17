package live_test

import (
	"errors"
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
	up := authorityPNG(t, 77)
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

	sale, err := a.env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer sale.Close(ctx)
	watch, err := a.env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close(ctx)
	photos := func() (n int) {
		if err := watch.QueryRow(ctx, "SELECT count(*) FROM trovesnap.item_photos WHERE item_id = $1", item).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := photos()

	// The sale of the item, in flight: it holds the item's row.
	tx, err := sale.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "UPDATE trovesnap.items SET status = 'sold', version = version + 1 WHERE id = $1", item); err != nil {
		t.Fatal(err)
	}
	type outcome struct {
		res domain.ExecutionResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, _, err := a.b.ExecuteProposal(ctx, a.p, a.meta(prop.Tool.Name), prop.ID,
			domain.Authorization{Decision: "allowed", GrantID: g.ID, ProposalHash: prop.Hash})
		done <- outcome{res, err}
	}()
	// The execution waits for the item's lock, then the sale commits.
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
	if !errors.Is(o.err, domain.ErrTransitionInvalid) {
		t.Fatalf("a photo promoted onto an item sold while the execution waited: %+v, %v", o.res, o.err)
	}
	if n := photos(); n != before {
		t.Fatalf("the sold item has %d photos, had %d", n, before)
	}
	var review string
	if err := watch.QueryRow(ctx, "SELECT review_status FROM trovesnap.inventory_candidates WHERE id = $1", mc.CandidateID).Scan(&review); err != nil {
		t.Fatal(err)
	}
	if review != domain.ReviewNeedsReview {
		t.Fatalf("candidate is %s after a refused promotion", review)
	}
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
