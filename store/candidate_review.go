package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// ReviewCandidate rejects, marks a duplicate or reopens a candidate
// (domain.CheckCandidateReview decides) in one write transaction with its
// idempotency row and plugin_event. It writes the candidate's row only:
// review status, version + 1, duplicate_of_* and the reason; no item is
// read for more than its tenant and sale, and none is written. Reopening
// moves the candidate back among the open ones: the quota trigger
// (migrations 0010, recreated by 0012) refuses it over the tenant's quota
// and the whole write rolls back.
func (s *Store) ReviewCandidate(ctx context.Context, p domain.Principal, w domain.WriteMeta, in domain.CandidateReview) (domain.CandidateReviewed, domain.WriteOutcome, error) {
	if err := in.Validate(); err != nil {
		return domain.CandidateReviewed{}, domain.WriteOutcome{}, err
	}
	return idempotentWrite(ctx, s, p, w, func(tx *sql.Tx, now time.Time) (domain.CandidateReviewed, domain.Related, error) {
		var res domain.CandidateReviewed
		if err := domain.CheckCandidateReviewer(p); err != nil {
			return res, domain.Related{}, err
		}
		c, err := scanCandidate(tx.QueryRowContext(ctx, "SELECT "+candidateCols+" FROM inventory_candidates WHERE id = ?", in.CandidateID))
		if errors.Is(err, sql.ErrNoRows) {
			return res, domain.Related{}, domain.UnknownRef("candidate_id", in.CandidateID, false)
		}
		if err != nil {
			return res, domain.Related{}, s.dbErr("review candidate", err)
		}
		if c.TenantID != p.TenantID {
			return res, domain.Related{}, domain.UnknownRef("candidate_id", in.CandidateID, true)
		}
		var target domain.ReviewRef
		if in.Action == domain.ReviewActionMarkDuplicate {
			if target, err = s.reviewRef(ctx, tx, in); err != nil {
				return res, domain.Related{}, err
			}
		}
		var duplicatedBy int
		if in.Action == domain.ReviewActionMarkDuplicate || in.Action == domain.ReviewActionReject {
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM inventory_candidates WHERE tenant_id = ? AND duplicate_of_candidate_id = ?
				AND review_status = ?`, p.TenantID, c.ID, domain.ReviewDuplicate).Scan(&duplicatedBy); err != nil {
				return res, domain.Related{}, s.dbErr("review candidate", err)
			}
		}
		to, err := domain.CheckCandidateReview(p, c, in, target, duplicatedBy)
		if err != nil {
			return res, domain.Related{}, err
		}
		reason := in.Reason
		if _, err := tx.ExecContext(ctx, `UPDATE inventory_candidates SET review_status = ?, version = version + 1,
			duplicate_of_candidate_id = ?, duplicate_of_item_id = ?, review_reason = ?
			WHERE tenant_id = ? AND id = ? AND version = ?`,
			to, nullStr(in.DuplicateOfCandidateID), nullStr(in.DuplicateOfItemID), reason, p.TenantID, c.ID, c.Version); err != nil {
			if q := quotaError(err); q != nil {
				return res, domain.Related{}, q
			}
			return res, domain.Related{}, s.dbErr("review candidate", err)
		}
		prev := c.ReviewStatus
		c.ReviewStatus, c.Version = to, c.Version+1
		c.DuplicateOfCandidateID, c.DuplicateOfItemID, c.ReviewReason = in.DuplicateOfCandidateID, in.DuplicateOfItemID, reason
		rel := domain.Related{CandidateIDs: []string{c.ID}}
		if in.DuplicateOfCandidateID != "" {
			rel.CandidateIDs = append(rel.CandidateIDs, in.DuplicateOfCandidateID)
		}
		if in.DuplicateOfItemID != "" {
			rel.ItemIDs = []string{in.DuplicateOfItemID}
		}
		return domain.CandidateReviewed{Candidate: c, Action: in.Action, PreviousStatus: prev}, rel, nil
	})
}

// reviewRef loads what a duplicate points at: its tenant and sale, and a
// candidate's kind and review status.
func (s *Store) reviewRef(ctx context.Context, tx *sql.Tx, in domain.CandidateReview) (domain.ReviewRef, error) {
	var (
		r   domain.ReviewRef
		err error
	)
	if in.DuplicateOfCandidateID != "" {
		err = tx.QueryRowContext(ctx, "SELECT tenant_id, sale_id, kind, review_status FROM inventory_candidates WHERE id = ?",
			in.DuplicateOfCandidateID).Scan(&r.TenantID, &r.SaleID, &r.Kind, &r.ReviewStatus)
	} else {
		err = tx.QueryRowContext(ctx, "SELECT tenant_id, sale_id FROM items WHERE id = ?", in.DuplicateOfItemID).Scan(&r.TenantID, &r.SaleID)
	}
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return r, nil
	case err != nil:
		return r, s.dbErr("review candidate: duplicate target", err)
	}
	r.Found = true
	return r, nil
}
