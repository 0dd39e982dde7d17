package live_test

import (
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/domain"
)

// Attack (issue 16, F11 in live mode): two reviews racing to build a chain
// of duplicates on two connections — A duplicate of B while B is being
// marked a duplicate of C, in either order. The other review is held open
// on a second connection (a superuser transaction doing exactly what
// mcp_review_candidate writes and locks) while the RPC runs; the RPC must
// wait for it and then refuse on the committed state, so no chain forms.
// Held: the candidate is locked FOR UPDATE and its target FOR SHARE. The
// third case (B rejected while A becomes its duplicate) holds with
// migration 47.
func TestAttack_ReviewChainRaceOnTwoConnections(t *testing.T) {
	a := newAuthority(t)
	newCand := func(title string) string {
		c, _, err := a.b.CreateCandidate(ctx, a.p, a.meta("trove_create_candidate"),
			domain.NewCandidate{SaleID: fixtures.PublishedSaleID, Title: title, Category: "lighting.lamps"})
		if err != nil {
			t.Fatal(err)
		}
		return c.CandidateID
	}
	watch, err := a.env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close(ctx)
	state := func(id string) (status string, dupOf *string) {
		if err := watch.QueryRow(ctx, "SELECT review_status, duplicate_of_candidate_id FROM trovesnap.inventory_candidates WHERE id = $1", id).
			Scan(&status, &dupOf); err != nil {
			t.Fatal(err)
		}
		return status, dupOf
	}
	markDup := func(id, of string) (domain.CandidateReviewed, error) {
		r, _, err := a.b.ReviewCandidate(ctx, a.p, a.meta("trove_review_candidate"), domain.CandidateReview{CandidateID: id,
			ExpectedVersion: 1, Action: domain.ReviewActionMarkDuplicate, DuplicateOfCandidateID: of, Reason: "same lamp"})
		return r, err
	}
	// race holds the other review open in tx, runs the RPC, waits until it
	// waits for a lock, commits the other review, and answers the RPC.
	race := func(tx pgx.Tx, rpc func() (domain.CandidateReviewed, error)) error {
		type out struct {
			r   domain.CandidateReviewed
			err error
		}
		done := make(chan out, 1)
		go func() { r, err := rpc(); done <- out{r, err} }()
		deadline := time.Now().Add(20 * time.Second)
		for {
			var n int
			if err := watch.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'
				AND query ILIKE '%mcp_review_candidate%'`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n > 0 {
				break
			}
			select {
			case o := <-done:
				_ = tx.Rollback(ctx)
				t.Fatalf("the review did not wait for the other one: %+v, %v", o.r, o.err)
			default:
			}
			if time.Now().After(deadline) {
				_ = tx.Rollback(ctx)
				t.Fatal("the review never waited for the other one")
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		return (<-done).err
	}
	other, err := a.env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	const dup = `UPDATE trovesnap.inventory_candidates SET review_status = 'duplicate', duplicate_of_candidate_id = $2,
		review_reason = 'same lamp', version = version + 1 WHERE id = $1`

	// B is being marked a duplicate of C; then A a duplicate of B.
	A, B, C := newCand("Lamp A"), newCand("Lamp B"), newCand("Lamp C")
	tx, err := other.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, dup, B, C); err != nil {
		t.Fatal(err)
	}
	err = race(tx, func() (domain.CandidateReviewed, error) { return markDup(A, B) })
	if !errors.Is(err, domain.ErrTransitionInvalid) {
		t.Fatalf("A marked a duplicate of B while B became a duplicate of C: %v", err)
	}
	if s, d := state(A); s != domain.ReviewNeedsReview || d != nil {
		t.Fatalf("A is %s (of %v): a chain A → B → C", s, d)
	}

	// A is being marked a duplicate of B (B locked FOR SHARE as the RPC
	// does); then B a duplicate of C.
	A, B, C = newCand("Lamp D"), newCand("Lamp E"), newCand("Lamp F")
	if tx, err = other.Begin(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, dup, A, B); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SELECT 1 FROM trovesnap.inventory_candidates WHERE id = $1 FOR SHARE", B); err != nil {
		t.Fatal(err)
	}
	err = race(tx, func() (domain.CandidateReviewed, error) { return markDup(B, C) })
	if !errors.Is(err, domain.ErrTransitionInvalid) {
		t.Fatalf("B marked a duplicate of C while A became a duplicate of B: %v", err)
	}
	if s, d := state(B); s != domain.ReviewNeedsReview || d != nil {
		t.Fatalf("B is %s (of %v): a chain A → B → C", s, d)
	}
	// A is being marked a duplicate of B; then B is rejected (the reject
	// order of F11): it waits for A's review and is refused.
	A, B = newCand("Lamp G"), newCand("Lamp H")
	if tx, err = other.Begin(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, dup, A, B); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SELECT 1 FROM trovesnap.inventory_candidates WHERE id = $1 FOR SHARE", B); err != nil {
		t.Fatal(err)
	}
	err = race(tx, func() (domain.CandidateReviewed, error) {
		r, _, err := a.b.ReviewCandidate(ctx, a.p, a.meta("trove_review_candidate"), domain.CandidateReview{CandidateID: B,
			ExpectedVersion: 1, Action: domain.ReviewActionReject, Reason: "not for sale"})
		return r, err
	})
	if !errors.Is(err, domain.ErrTransitionInvalid) {
		t.Fatalf("B rejected while A became a duplicate of B: %v", err)
	}
	if s, _ := state(B); s != domain.ReviewNeedsReview {
		t.Fatalf("B is %s: A points at a rejected candidate", s)
	}
}
