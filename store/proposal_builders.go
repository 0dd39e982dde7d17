package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// buildProposal validates a draft against the current state inside the
// write transaction and returns the proposal content (no id, no hash). The
// rules are domain's (internal/domain/proposal_build.go), shared with the
// live backend; this file only loads what they need.
func (s *Store) buildProposal(ctx context.Context, tx *sql.Tx, p domain.Principal, d domain.ProposalDraft, now time.Time) (domain.Proposal, error) {
	// Bulk plans are bounded by the client's limit (§38 maximum_bulk_targets).
	lim, err := s.effectiveLimits(ctx, tx, p.TenantID, p.Client.ID)
	if err != nil {
		return domain.Proposal{}, err
	}
	prop, err := domain.StartProposal(p, d, now, lim.MaxBulkTargets)
	if err != nil {
		return prop, err
	}
	build, ok := builders[d.Action]
	if !ok {
		return prop, fmt.Errorf("store: action %q: %w", d.Action, domain.ErrInvalidInput)
	}
	if err := build(s, ctx, tx, p, d, &prop); err != nil {
		return prop, err
	}
	domain.FinishProposal(&prop)
	return prop, nil
}

// builder validates a draft of one action against the state in tx and
// fills the proposal (the rules are domain's; a builder loads what they
// read).
type builder func(s *Store, ctx context.Context, tx *sql.Tx, p domain.Principal, d domain.ProposalDraft, prop *domain.Proposal) error

// builders has one builder per action of the registry (domain.Actions), as
// a test holds; an action without one is refused as invalid input.
var builders = map[string]builder{
	domain.ActionPromoteCandidate: (*Store).buildPromotion,
	domain.ActionPublishItem:      (*Store).buildItemPublication,
	domain.ActionPublishSale:      (*Store).buildSalePublication,
	domain.ActionBulkItemUpdate:   (*Store).buildBulkUpdate,
	domain.ActionStatusTransition: (*Store).buildStatusTransition,
	domain.ActionArchiveItem:      (*Store).buildStatusTransition,
	domain.ActionBindIdentity:     (*Store).buildIdentity,
	domain.ActionReleaseIdentity:  (*Store).buildIdentity,
	domain.ActionDisposition:      (*Store).buildDisposition,
	domain.ActionBuyerNotify:      (*Store).buildNotification,
	domain.ActionExportDelivery:   (*Store).buildExportDelivery,
	domain.ActionCheckoutScan:     (*Store).buildCheckoutScan,
}

// loadItem reads an item of the tenant inside tx (RefError otherwise).
func (s *Store) loadItem(ctx context.Context, tx *sql.Tx, tenantID, id string) (domain.Item, error) {
	it, err := scanItem(tx.QueryRowContext(ctx, "SELECT "+itemCols+" FROM items WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return it, domain.UnknownRef("item_id", id, false)
	}
	if err != nil {
		return it, s.dbErr("load item", err)
	}
	if it.TenantID != tenantID {
		return domain.Item{}, domain.UnknownRef("item_id", id, true)
	}
	items := []domain.Item{it}
	if err := s.attachPhotos(ctx, tx, tenantID, items); err != nil {
		return it, err
	}
	return items[0], nil
}

// loadItems loads the item targets in expected-version order, refusing the
// first unknown one or one in a sale the principal is not assigned to; the
// builders check their versions (domain.BindItemTargets).
func (s *Store) loadItems(ctx context.Context, tx *sql.Tx, p domain.Principal, prop *domain.Proposal) ([]domain.Item, error) {
	items := make([]domain.Item, 0, len(prop.TargetIDs))
	for _, ev := range prop.ExpectedVersions {
		it, err := s.loadItem(ctx, tx, p.TenantID, ev.ID)
		if err != nil {
			return nil, err
		}
		if !p.MaySeeSale(it.SaleID) {
			return nil, domain.SaleAssignmentError("item", it.ID)
		}
		items = append(items, it)
	}
	return items, nil
}

// loadSale reads the fields a sale target is judged on (the caller checked
// the reference).
func (s *Store) loadSale(ctx context.Context, tx *sql.Tx, id string) (domain.Sale, error) {
	sale := domain.Sale{ID: id}
	var reveal sql.NullString
	if err := tx.QueryRowContext(ctx, "SELECT tenant_id, title, status, visibility, city, address_policy, address_reveal_at, version FROM estate_sales WHERE id = ?", id).
		Scan(&sale.TenantID, &sale.Title, &sale.Status, &sale.Visibility, &sale.City, &sale.AddressPolicy, &reveal, &sale.Version); err != nil {
		return sale, s.dbErr("load sale", err)
	}
	var tp timeScanner
	sale.AddressRevealAt = tp.ptr(reveal)
	if tp.err != nil {
		return sale, s.dbErr("load sale", tp.err)
	}
	return sale, nil
}

func (s *Store) buildPromotion(ctx context.Context, tx *sql.Tx, p domain.Principal, d domain.ProposalDraft, prop *domain.Proposal) error {
	prop.TargetKind = "candidate"
	id := prop.TargetIDs[0]
	var c domain.Candidate
	err := s.checkRef(ctx, tx, "inventory_candidates", "candidate_id", id, p.TenantID)
	if err != nil {
		return err
	}
	var supplied sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT id, sale_id, kind, title, description, category, room, review_status, version, supplied_price_cents
		FROM inventory_candidates WHERE id = ?`, id).Scan(&c.ID, &c.SaleID, &c.Kind, &c.Title, &c.Description, &c.Category, &c.Room,
		&c.ReviewStatus, &c.Version, &supplied); err != nil {
		return s.dbErr("load candidate", err)
	}
	if supplied.Valid {
		c.SuppliedPriceCents = &supplied.Int64
	}
	photos, err := s.candidatePhotos(ctx, tx, p.TenantID, id)
	if err != nil {
		return err
	}
	var item *domain.Item
	if c.Kind == domain.CandidateAttachMedia {
		it, err := s.candidateItem(ctx, tx, p.TenantID, id)
		if err != nil {
			return err
		}
		item = &it
	}
	return domain.BuildPromotion(p, d, prop, c, photos, item)
}

// candidateItem is the item an attach_media candidate names
// (candidate_item_changes), as it is now.
func (s *Store) candidateItem(ctx context.Context, tx *sql.Tx, tenant, candidate string) (domain.Item, error) {
	var itemID string
	if err := tx.QueryRowContext(ctx, "SELECT item_id FROM candidate_item_changes WHERE tenant_id = ? AND candidate_id = ?",
		tenant, candidate).Scan(&itemID); err != nil {
		return domain.Item{}, s.dbErr("candidate item", err)
	}
	return s.loadItem(ctx, tx, tenant, itemID)
}

// candidatePhotos are the asset ids of a candidate's media, in position
// order: the photos its promotion gives the item.
func (s *Store) candidatePhotos(ctx context.Context, tx *sql.Tx, tenant, candidate string) ([]string, error) {
	rows, err := tx.QueryContext(ctx, "SELECT asset_id FROM candidate_media WHERE tenant_id = ? AND candidate_id = ? ORDER BY position, id",
		tenant, candidate)
	if err != nil {
		return nil, s.dbErr("candidate photos", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, s.dbErr("candidate photos", err)
		}
		out = append(out, id)
	}
	if err := rows.Err(); err != nil {
		return nil, s.dbErr("candidate photos", err)
	}
	return out, nil
}

func (s *Store) buildItemPublication(ctx context.Context, tx *sql.Tx, p domain.Principal, d domain.ProposalDraft, prop *domain.Proposal) error {
	prop.TargetKind = "item"
	items, err := s.loadItems(ctx, tx, p, prop)
	if err != nil {
		return err
	}
	var saleStatus string
	if err := tx.QueryRowContext(ctx, "SELECT status FROM estate_sales WHERE id = ?", items[0].SaleID).Scan(&saleStatus); err != nil {
		return s.dbErr("sale status", err)
	}
	return domain.BuildItemPublication(p, d, prop, items, map[string]string{items[0].SaleID: saleStatus})
}

func (s *Store) buildSalePublication(ctx context.Context, tx *sql.Tx, p domain.Principal, _ domain.ProposalDraft, prop *domain.Proposal) error {
	prop.TargetKind = "sale"
	id := prop.TargetIDs[0]
	if err := s.checkRef(ctx, tx, "estate_sales", "sale_id", id, p.TenantID); err != nil {
		return err
	}
	if !p.MaySeeSale(id) {
		return domain.SaleAssignmentError("sale", id)
	}
	sale, err := s.loadSale(ctx, tx, id)
	if err != nil {
		return err
	}
	return domain.BuildSalePublication(p, prop, sale)
}

func (s *Store) buildBulkUpdate(ctx context.Context, tx *sql.Tx, p domain.Principal, d domain.ProposalDraft, prop *domain.Proposal) error {
	prop.TargetKind = "item"
	changes, names, err := domain.BulkUpdateChanges(p, d)
	if err != nil {
		return err
	}
	items, err := s.loadItems(ctx, tx, p, prop)
	if err != nil {
		return err
	}
	return domain.BuildBulkUpdate(p, prop, items, changes, names)
}

func (s *Store) buildStatusTransition(ctx context.Context, tx *sql.Tx, p domain.Principal, d domain.ProposalDraft, prop *domain.Proposal) error {
	prop.TargetKind = "item"
	items, err := s.loadItems(ctx, tx, p, prop)
	if err != nil {
		return err
	}
	return domain.BuildStatusTransition(p, d, prop, items, func(id string) (string, string, error) {
		var kind, review, itemRef string
		err := tx.QueryRowContext(ctx, "SELECT kind, review_status, notes FROM inventory_candidates WHERE tenant_id = ? AND id = ?", p.TenantID, id).Scan(&kind, &review, &itemRef)
		if errors.Is(err, sql.ErrNoRows) {
			return "", "", domain.UnknownRef("status_candidate_id", id, false)
		}
		if err != nil {
			return "", "", s.dbErr("status candidate", err)
		}
		return kind, review, nil
	})
}

func (s *Store) buildCheckoutScan(ctx context.Context, tx *sql.Tx, p domain.Principal, d domain.ProposalDraft, prop *domain.Proposal) error {
	prop.TargetKind = "item"
	items, err := s.loadItems(ctx, tx, p, prop)
	if err != nil {
		return err
	}
	return domain.BuildCheckoutScan(p, d, prop, items)
}

func (s *Store) buildIdentity(ctx context.Context, tx *sql.Tx, p domain.Principal, d domain.ProposalDraft, prop *domain.Proposal) error {
	prop.TargetKind = "item"
	items, err := s.loadItems(ctx, tx, p, prop)
	if err != nil {
		return err
	}
	return domain.BuildIdentity(p, d, prop, items, func(code, itemID string) error {
		return s.checkTagFree(ctx, tx, p.TenantID, code, itemID)
	})
}

func (s *Store) buildDisposition(ctx context.Context, tx *sql.Tx, p domain.Principal, d domain.ProposalDraft, prop *domain.Proposal) error {
	prop.TargetKind = "item"
	items, err := s.loadItems(ctx, tx, p, prop)
	if err != nil {
		return err
	}
	return domain.BuildDisposition(p, d, prop, items)
}

func (s *Store) buildNotification(ctx context.Context, tx *sql.Tx, p domain.Principal, d domain.ProposalDraft, prop *domain.Proposal) error {
	id := prop.TargetIDs[0]
	var target domain.NotificationTarget
	if domain.ValidID(domain.PrefixItem, id) {
		prop.TargetKind = "item"
		items, err := s.loadItems(ctx, tx, p, prop)
		if err != nil {
			return err
		}
		target.Item = &items[0]
	} else {
		prop.TargetKind = "sale"
		if err := s.checkRef(ctx, tx, "estate_sales", "sale_id", id, p.TenantID); err != nil {
			return err
		}
		sale, err := s.loadSale(ctx, tx, id)
		if err != nil {
			return err
		}
		target.Sale = &sale
	}
	// Audience from aggregated demand signals: counts only, never identities.
	return domain.BuildNotification(p, d, prop, target, func(saleID, top string) (int, int, error) {
		var saves, follows int
		q := "SELECT coalesce(sum(saves), 0), coalesce(sum(follows), 0) FROM demand_signals WHERE tenant_id = ? AND sale_id = ?"
		args := []any{p.TenantID, saleID}
		if top != "" {
			q += " AND (category = ? OR category LIKE ?)"
			args = append(args, top, top+".%")
		}
		if err := tx.QueryRowContext(ctx, q, args...).Scan(&saves, &follows); err != nil {
			return 0, 0, s.dbErr("audience", err)
		}
		return saves, follows, nil
	})
}

func (s *Store) buildExportDelivery(ctx context.Context, tx *sql.Tx, p domain.Principal, _ domain.ProposalDraft, prop *domain.Proposal) error {
	prop.TargetKind = "export"
	id := prop.TargetIDs[0]
	if err := s.checkRef(ctx, tx, "export_drafts", "export_id", id, p.TenantID); err != nil {
		return err
	}
	var e domain.ExportFacts
	if err := tx.QueryRowContext(ctx, "SELECT channel, status, item_count, valid_count FROM export_drafts WHERE id = ?", id).Scan(&e.Channel, &e.Status, &e.Items, &e.Valid); err != nil {
		return s.dbErr("load export", err)
	}
	// The delivery is bound to the snapshot AND to every item at the version
	// it was staged at.
	rows, err := tx.QueryContext(ctx, `SELECT d.item_id, d.item_version, i.sale_id, i.version FROM export_draft_items d JOIN items i ON i.id = d.item_id
		WHERE d.export_id = ? AND d.valid = 1 ORDER BY d.position`, id)
	if err != nil {
		return s.dbErr("export items", err)
	}
	defer rows.Close()
	for rows.Next() {
		var r domain.ExportItem
		if err := rows.Scan(&r.ItemID, &r.StagedVersion, &r.SaleID, &r.CurrentVersion); err != nil {
			return s.dbErr("export items", err)
		}
		e.Rows = append(e.Rows, r)
	}
	if err := rows.Err(); err != nil {
		return s.dbErr("export items", err)
	}
	return domain.BuildExportDelivery(p, prop, e)
}

// itemField is the current value of a changeable item field (the change
// history of update_item_fields records it).
func itemField(it domain.Item, f string) any { return domain.ItemField(it, f) }
