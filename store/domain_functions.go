package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// The local simulation of the P5/P6 domain functions (§16). Each runs inside
// the execution transaction, enforces its own rules (a stale or invalid
// change is refused here too, whoever calls), increments the version of
// every row it changes and leaves history behind. None deletes anything.

// domainFunction executes an approved proposal inside the execution's
// transaction, recording each target's outcome in res and what it touched
// in rel.
type domainFunction func(s *Store, ctx context.Context, tx *sql.Tx, p domain.Principal, prop domain.Proposal, now time.Time, res *domain.ExecutionResult, rel *domain.Related) error

// domainFunctions has one domain function per action of the registry
// (domain.Actions), as a test holds. The item functions apply each item
// target's changes (eachItem); the others act on the proposal as a whole.
var domainFunctions = map[string]domainFunction{
	domain.ActionPromoteCandidate: (*Store).runPromotion,
	domain.ActionPublishSale:      (*Store).runSalePublication,
	domain.ActionBuyerNotify:      (*Store).runBuyerNotification,
	domain.ActionExportDelivery:   (*Store).runExportDelivery,
	domain.ActionPublishItem:      eachItem((*Store).publishItemTarget),
	domain.ActionStatusTransition: eachItem((*Store).statusTarget),
	domain.ActionArchiveItem:      eachItem((*Store).statusTarget),
	domain.ActionBulkItemUpdate:   eachItem((*Store).updateItemFields),
	domain.ActionBindIdentity:     eachItem((*Store).setItemIdentity),
	domain.ActionReleaseIdentity:  eachItem((*Store).setItemIdentity),
	domain.ActionDisposition:      eachItem((*Store).applyDispositionAction),
	domain.ActionCheckoutScan:     eachItem((*Store).recordCheckoutScan),
}

// itemFunction applies a proposal's changes to one item target, returning
// the item's new version.
type itemFunction func(s *Store, ctx context.Context, tx *sql.Tx, prop domain.Proposal, it domain.Item, changes map[string]any, now time.Time) (int, error)

// eachItem makes an item function the domain function of an action: each
// target in turn is loaded and given its changes.
func eachItem(fn itemFunction) domainFunction {
	return func(s *Store, ctx context.Context, tx *sql.Tx, p domain.Principal, prop domain.Proposal, now time.Time, res *domain.ExecutionResult, rel *domain.Related) error {
		for _, id := range prop.TargetIDs {
			it, err := s.loadItem(ctx, tx, p.TenantID, id)
			if err != nil {
				return err
			}
			changes := map[string]any{}
			for _, c := range prop.Changes {
				if c.TargetID == id {
					changes[c.Field] = c.To
				}
			}
			v, err := fn(s, ctx, tx, prop, it, changes, now)
			if err != nil {
				return err
			}
			res.Results = append(res.Results, domain.TargetOutcome{TargetID: id, Outcome: outcome(s.mode), NewVersion: &v})
			rel.ItemIDs = append(rel.ItemIDs, id)
		}
		return nil
	}
}

func (s *Store) runPromotion(ctx context.Context, tx *sql.Tx, _ domain.Principal, prop domain.Proposal, now time.Time, res *domain.ExecutionResult, rel *domain.Related) error {
	var kind string
	if err := tx.QueryRowContext(ctx, "SELECT kind FROM inventory_candidates WHERE tenant_id = ? AND id = ?", prop.TenantID, prop.TargetIDs[0]).
		Scan(&kind); err != nil {
		return s.dbErr("promote: candidate", err)
	}
	if kind == domain.CandidateAttachMedia {
		itemID, v, err := s.promoteMediaCandidate(ctx, tx, prop, now)
		if err != nil {
			return err
		}
		res.Results = append(res.Results, domain.TargetOutcome{TargetID: prop.TargetIDs[0], Outcome: outcome(s.mode), NewVersion: nil},
			domain.TargetOutcome{TargetID: itemID, Outcome: outcome(s.mode), NewVersion: &v})
		rel.CandidateIDs = append(rel.CandidateIDs, prop.TargetIDs[0])
		rel.ItemIDs = append(rel.ItemIDs, itemID)
		return nil
	}
	itemID, err := s.promoteInventoryCandidate(ctx, tx, prop, now)
	if err != nil {
		return err
	}
	res.CreatedItemIDs = []string{itemID}
	one := 1
	res.Results = append(res.Results, domain.TargetOutcome{TargetID: prop.TargetIDs[0], Outcome: outcome(s.mode), NewVersion: nil},
		domain.TargetOutcome{TargetID: itemID, Outcome: outcome(s.mode), NewVersion: &one})
	rel.CandidateIDs = append(rel.CandidateIDs, prop.TargetIDs[0])
	rel.ItemIDs = append(rel.ItemIDs, itemID)
	return nil
}

func (s *Store) runSalePublication(ctx context.Context, tx *sql.Tx, _ domain.Principal, prop domain.Proposal, now time.Time, res *domain.ExecutionResult, _ *domain.Related) error {
	v, err := s.publishSale(ctx, tx, prop, now)
	if err != nil {
		return err
	}
	res.Results = append(res.Results, domain.TargetOutcome{TargetID: prop.TargetIDs[0], Outcome: outcome(s.mode), NewVersion: &v})
	return nil
}

func (s *Store) runBuyerNotification(ctx context.Context, tx *sql.Tx, _ domain.Principal, prop domain.Proposal, now time.Time, res *domain.ExecutionResult, _ *domain.Related) error {
	if err := s.recordSimulated(ctx, tx, prop, "buyer_notification", now); err != nil {
		return err
	}
	res.Results = append(res.Results, domain.TargetOutcome{TargetID: prop.TargetIDs[0], Outcome: "simulated"})
	return nil
}

// runExportDelivery is the channel-specific delivery: recorded, never sent,
// in this simulation; the export is marked delivered so it cannot go twice.
func (s *Store) runExportDelivery(ctx context.Context, tx *sql.Tx, _ domain.Principal, prop domain.Proposal, now time.Time, res *domain.ExecutionResult, rel *domain.Related) error {
	if err := s.recordSimulated(ctx, tx, prop, "export_delivery", now); err != nil {
		return err
	}
	deliverable := domain.ExportDeliverableStatuses()
	r, err := tx.ExecContext(ctx, "UPDATE export_drafts SET status = ? WHERE id = ? AND status IN "+placeholders(len(deliverable)),
		append([]any{domain.ExportDelivered, prop.TargetIDs[0]}, anyArgs(deliverable)...)...)
	if err != nil {
		return s.dbErr("deliver export", err)
	}
	if n, _ := r.RowsAffected(); n != 1 {
		return domain.Because(domain.ErrTransitionInvalid, "export %s is no longer staged", prop.TargetIDs[0])
	}
	res.Results = append(res.Results, domain.TargetOutcome{TargetID: prop.TargetIDs[0], Outcome: "simulated"})
	for _, ev := range prop.ExpectedVersions[1:] {
		res.Results = append(res.Results, domain.TargetOutcome{TargetID: ev.ID, Outcome: "simulated"})
		rel.ItemIDs = append(rel.ItemIDs, ev.ID)
	}
	return nil
}

// publishItemTarget publishes one item that is still ready to publish.
//
// When the proposal names the item's public photos (public_photo_ids),
// exactly those become public and its other photos private.
func (s *Store) publishItemTarget(ctx context.Context, tx *sql.Tx, prop domain.Proposal, it domain.Item, changes map[string]any, now time.Time) (int, error) {
	public, named := changes["public_photo_ids"]
	judged := it
	if named {
		var err error
		if judged, _, err = domain.WithPublicPhotos(it, domain.StringList(public)); err != nil {
			return 0, domain.Because(domain.ErrTransitionInvalid, "item %s: the photos the proposal names are no longer the item's", it.ID)
		}
	}
	if missing := domain.PublicationReadiness(judged); len(missing) > 0 || it.Status != domain.ItemReady {
		return 0, domain.Because(domain.ErrTransitionInvalid, "item %s is no longer ready to publish", it.ID)
	}
	for _, ph := range judged.Photos {
		if _, err := tx.ExecContext(ctx, "UPDATE item_photos SET published = ? WHERE tenant_id = ? AND id = ?",
			boolInt(ph.Published), prop.TenantID, ph.ID); err != nil {
			return 0, s.dbErr("publish: photos", err)
		}
	}
	return s.appendInventoryStatusEvent(ctx, tx, prop, it, domain.ItemPublished, ts(now), "seller_approved", now)
}

// statusTarget records one item's status transition (or archiving) as the
// proposal froze it.
func (s *Store) statusTarget(ctx context.Context, tx *sql.Tx, prop domain.Proposal, it domain.Item, changes map[string]any, now time.Time) (int, error) {
	to, _ := changes["status"].(string)
	eff, _ := changes["effective_at"].(string)
	source := "seller_confirmed"
	if src, ok := changes["source"].(string); ok {
		source = src
	}
	return s.appendInventoryStatusEvent(ctx, tx, prop, it, to, eff, source, now)
}

// promoteInventoryCandidate creates the canonical item from a candidate,
// with provenance back to candidate, source record and import run: the
// proposal's create_item values, its price (with the price's history) and
// its photos (private item photos of the candidate's assets, in order).
func (s *Store) promoteInventoryCandidate(ctx context.Context, tx *sql.Tx, prop domain.Proposal, now time.Time) (string, error) {
	cid := prop.TargetIDs[0]
	var review, kind string
	var record, run sql.NullString
	if err := tx.QueryRowContext(ctx, "SELECT review_status, kind, source_record_id, import_run_id FROM inventory_candidates WHERE tenant_id = ? AND id = ?",
		prop.TenantID, cid).Scan(&review, &kind, &record, &run); err != nil {
		return "", s.dbErr("promote: candidate", err)
	}
	if kind != domain.CandidateNewItem || !slices.Contains(domain.OpenReviewStatuses(), review) {
		return "", domain.Because(domain.ErrTransitionInvalid, "candidate %s is %s", cid, review)
	}
	f := map[string]string{}
	var price *int64
	var photos []string
	for _, c := range prop.Changes {
		if c.TargetID != cid {
			continue
		}
		switch v := c.To.(type) {
		case string:
			f[c.Field] = v
		case float64:
			if c.Field == "create_item.price_cents" {
				cents := int64(v)
				price = &cents
			}
		case int64:
			if c.Field == "create_item.price_cents" {
				price = &v
			}
		}
		if c.Field == "create_item.photos" {
			photos = domain.StringList(c.To)
		}
	}
	id := s.ids.New(domain.PrefixItem)
	if _, err := tx.ExecContext(ctx, `INSERT INTO items (id, tenant_id, sale_id, title, description, category, room, price_cents, status, version, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'draft', 1, ?, ?)`,
		id, prop.TenantID, f["create_item.sale_id"], f["create_item.title"], f["create_item.description"], f["create_item.category"],
		f["create_item.room"], price, ts(now), ts(now)); err != nil {
		return "", s.dbErr("promote: item", err)
	}
	if price != nil {
		if _, err := tx.ExecContext(ctx, `INSERT INTO item_price_history (id, tenant_id, item_id, price_cents, internal_price_guidance_cents,
			reason, actor_id, proposal_id, changed_at) VALUES (?, ?, ?, ?, NULL, 'approved promotion', ?, ?, ?)`,
			s.ids.New("price"), prop.TenantID, id, *price, prop.RequestedBy.ActorID, prop.ID, ts(now)); err != nil {
			return "", s.dbErr("promote: price history", err)
		}
	}
	if err := s.addCandidatePhotos(ctx, tx, prop.TenantID, cid, id, photos, 0); err != nil {
		return "", err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO item_provenance (item_id, tenant_id, candidate_id, source_record_id, import_run_id, proposal_id, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, id, prop.TenantID, cid, record, run, prop.ID, ts(now)); err != nil {
		return "", s.dbErr("promote: provenance", err)
	}
	if _, err := tx.ExecContext(ctx, "UPDATE inventory_candidates SET review_status = 'promoted', version = version + 1 WHERE id = ?", cid); err != nil {
		return "", s.dbErr("promote: candidate status", err)
	}
	return id, nil
}

// promoteMediaCandidate adds an attach_media candidate's photos, as the
// proposal lists them, to the item it names, as private photos after the
// item's own; the item's version moves and the candidate becomes promoted.
// It answers the item and its new version.
func (s *Store) promoteMediaCandidate(ctx context.Context, tx *sql.Tx, prop domain.Proposal, now time.Time) (string, int, error) {
	cid := prop.TargetIDs[0]
	var review, itemID string
	if err := tx.QueryRowContext(ctx, `SELECT c.review_status, x.item_id FROM inventory_candidates c
		JOIN candidate_item_changes x ON x.tenant_id = c.tenant_id AND x.candidate_id = c.id WHERE c.tenant_id = ? AND c.id = ?`,
		prop.TenantID, cid).Scan(&review, &itemID); err != nil {
		return "", 0, s.dbErr("promote media: candidate", err)
	}
	var named string
	var assets []string
	for _, c := range prop.Changes {
		if c.TargetID != cid {
			continue
		}
		switch c.Field {
		case domain.FieldAddPhotosItem:
			named, _ = c.To.(string)
		case domain.FieldAddPhotosAssets:
			assets = domain.StringList(c.To)
		}
	}
	if !slices.Contains(domain.OpenReviewStatuses(), review) || named != itemID || len(assets) == 0 {
		return "", 0, domain.Because(domain.ErrTransitionInvalid, "candidate %s is %s, or no longer adds these photos to %s", cid, review, named)
	}
	it, err := s.loadItem(ctx, tx, prop.TenantID, itemID)
	if err != nil {
		return "", 0, err
	}
	if slices.Contains(domain.LockedItemStatuses(), it.Status) {
		return "", 0, domain.Because(domain.ErrTransitionInvalid, "item %s is %s and takes no new photo", it.ID, it.Status)
	}
	var last int
	if err := tx.QueryRowContext(ctx, "SELECT ifnull(max(position), 0) FROM item_photos WHERE tenant_id = ? AND item_id = ?",
		prop.TenantID, itemID).Scan(&last); err != nil {
		return "", 0, s.dbErr("promote media: photos", err)
	}
	if err := s.addCandidatePhotos(ctx, tx, prop.TenantID, cid, itemID, assets, last); err != nil {
		return "", 0, err
	}
	if _, err := tx.ExecContext(ctx, "UPDATE items SET version = version + 1, updated_at = ? WHERE id = ?", ts(now), itemID); err != nil {
		return "", 0, s.dbErr("promote media: item", err)
	}
	if _, err := tx.ExecContext(ctx, "UPDATE inventory_candidates SET review_status = 'promoted', version = version + 1 WHERE id = ?", cid); err != nil {
		return "", 0, s.dbErr("promote media: candidate status", err)
	}
	return itemID, it.Version + 1, nil
}

// addCandidatePhotos makes the candidate's assets a proposal lists private
// photos of the item, in order, after position last. Each must still be
// the candidate's (attached to it: a proposal names nothing else).
func (s *Store) addCandidatePhotos(ctx context.Context, tx *sql.Tx, tenant, cid, itemID string, assets []string, last int) error {
	for k, asset := range assets {
		var key string
		var w, h int
		err := tx.QueryRowContext(ctx, `SELECT a.storage_path, a.width, a.height FROM candidate_media m
			JOIN source_assets a ON a.tenant_id = m.tenant_id AND a.id = m.asset_id
			WHERE m.tenant_id = ? AND m.candidate_id = ? AND m.asset_id = ?`, tenant, cid, asset).Scan(&key, &w, &h)
		if errors.Is(err, sql.ErrNoRows) {
			return domain.Because(domain.ErrTransitionInvalid, "asset %s is not a photo of candidate %s", asset, cid)
		}
		if err != nil {
			return s.dbErr("promote: photo", err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO item_photos (id, tenant_id, item_id, storage_key, width, height, position, published, asset_id)
			VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?)`, s.ids.New(domain.PrefixPhoto), tenant, itemID, key, w, h, last+k+1, asset); err != nil {
			return s.dbErr("promote: photo", err)
		}
	}
	return nil
}

// appendInventoryStatusEvent moves an item along the lifecycle, refusing
// invalid transitions, and appends the history row. It never records a
// payment or a price.
func (s *Store) appendInventoryStatusEvent(ctx context.Context, tx *sql.Tx, prop domain.Proposal, it domain.Item, to, effectiveAt, source string, now time.Time) (int, error) {
	if !domain.CanTransition(it.Status, to) {
		return 0, domain.Because(domain.ErrTransitionInvalid, "item %s cannot go from %s to %s", it.ID, it.Status, to)
	}
	if effectiveAt == "" {
		effectiveAt = ts(now)
	}
	if _, err := tx.ExecContext(ctx, "UPDATE items SET status = ?, version = version + 1, updated_at = ? WHERE id = ?", to, ts(now), it.ID); err != nil {
		return 0, s.dbErr("status: item", err)
	}
	eff, err := time.Parse(time.RFC3339Nano, effectiveAt)
	if err != nil {
		eff = now
	}
	// The lifecycle history trove_list_status_events reads: an executed
	// proposal is its source; an imported report is named by its proposal.
	sourceType := domain.StatusSourceProposal
	switch {
	case strings.HasPrefix(source, domain.ImportedSourcePrefix):
		sourceType = domain.StatusSourceImport
	case source == domain.StatusSourceCheckout:
		sourceType = domain.StatusSourceCheckout
	}
	if err := insertStatusEvent(ctx, tx, domain.StatusEvent{
		ID: s.ids.New("status"), TenantID: prop.TenantID, ItemID: it.ID, SaleID: it.SaleID, FromStatus: it.Status, ToStatus: to,
		EffectiveAt: eff, SourceType: sourceType, ActorID: prop.RequestedBy.ActorID, ProposalID: prop.ID, RecordedAt: now,
	}); err != nil {
		return 0, s.dbErr("status: history", err)
	}
	return it.Version + 1, nil
}

// publishSale makes a draft sale public under its address policy.
func (s *Store) publishSale(ctx context.Context, tx *sql.Tx, prop domain.Proposal, now time.Time) (int, error) {
	id := prop.TargetIDs[0]
	var st string
	var v int
	if err := tx.QueryRowContext(ctx, "SELECT status, version FROM estate_sales WHERE id = ?", id).Scan(&st, &v); err != nil {
		return 0, s.dbErr("publish sale", err)
	}
	if st != domain.SaleDraft {
		return 0, domain.Because(domain.ErrTransitionInvalid, "sale %s is %s", id, st)
	}
	if _, err := tx.ExecContext(ctx, "UPDATE estate_sales SET status = 'published', visibility = 'public', version = version + 1, updated_at = ? WHERE id = ?", ts(now), id); err != nil {
		return 0, s.dbErr("publish sale", err)
	}
	return v + 1, nil
}

// updateItemFields applies exact field changes (update_item_price for
// price_cents), keeping field-level history.
func (s *Store) updateItemFields(ctx context.Context, tx *sql.Tx, prop domain.Proposal, it domain.Item, changes map[string]any, now time.Time) (int, error) {
	if slices.Contains(domain.LockedItemStatuses(), it.Status) {
		return 0, domain.Because(domain.ErrTransitionInvalid, "item %s is %s", it.ID, it.Status)
	}
	cols := map[string]string{"room": "room", "category": "category", "title": "title", "description": "description", "price_cents": "price_cents"}
	for field, to := range changes {
		col, ok := cols[field]
		if !ok {
			continue
		}
		val := to
		if f, ok := to.(float64); ok {
			val = int64(f)
		}
		if _, err := tx.ExecContext(ctx, "UPDATE items SET "+col+" = ? WHERE id = ?", val, it.ID); err != nil {
			return 0, s.dbErr("update "+field, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO item_change_history (tenant_id, item_id, field, from_value, to_value, proposal_id, changed_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, prop.TenantID, it.ID, field, fmt.Sprint(itemField(it, field)), fmt.Sprint(to), prop.ID, ts(now)); err != nil {
			return 0, s.dbErr("change history", err)
		}
		if field == "price_cents" { // update_item_price: the pricer's history
			if _, err := tx.ExecContext(ctx, `INSERT INTO item_price_history (id, tenant_id, item_id, price_cents, internal_price_guidance_cents,
				reason, actor_id, proposal_id, changed_at) VALUES (?, ?, ?, ?, ?, 'approved proposal', ?, ?, ?)`,
				s.ids.New("price"), prop.TenantID, it.ID, val, it.InternalPriceGuidanceCents, prop.RequestedBy.ActorID, prop.ID, ts(now)); err != nil {
				return 0, s.dbErr("price history", err)
			}
		}
	}
	if _, err := tx.ExecContext(ctx, "UPDATE items SET version = version + 1, updated_at = ? WHERE id = ?", ts(now), it.ID); err != nil {
		return 0, s.dbErr("update item", err)
	}
	return it.Version + 1, nil
}

// setItemIdentity binds or releases a QR tag (bind_item_identity /
// release_item_identity).
func (s *Store) setItemIdentity(ctx context.Context, tx *sql.Tx, prop domain.Proposal, it domain.Item, changes map[string]any, now time.Time) (int, error) {
	to, _ := changes["qr_code"].(string)
	if to != "" {
		if err := s.checkTagFree(ctx, tx, prop.TenantID, to, it.ID); err != nil {
			return 0, err
		}
	}
	if _, err := tx.ExecContext(ctx, "UPDATE items SET qr_code = ?, version = version + 1, updated_at = ? WHERE id = ?", to, ts(now), it.ID); err != nil {
		return 0, s.dbErr("set identity", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO item_change_history (tenant_id, item_id, field, from_value, to_value, proposal_id, changed_at)
		VALUES (?, ?, 'qr_code', ?, ?, ?, ?)`, prop.TenantID, it.ID, it.QRCode, to, prop.ID, ts(now)); err != nil {
		return 0, s.dbErr("change history", err)
	}
	return it.Version + 1, nil
}

// applyDispositionAction records what happens to an unsold item and moves
// it out of inventory (archived; withdrawn when consigned).
func (s *Store) applyDispositionAction(ctx context.Context, tx *sql.Tx, prop domain.Proposal, it domain.Item, changes map[string]any, now time.Time) (int, error) {
	action, _ := changes["disposition"].(string)
	to, _ := changes["status"].(string)
	cp := ""
	var offer any
	for _, c := range prop.Changes {
		if c.Field == "counterparty" {
			cp, _ = c.To.(string)
		}
		if c.Field == "offer_cents" {
			if f, ok := c.To.(float64); ok {
				offer = int64(f)
			}
		}
	}
	var had string
	switch err := tx.QueryRowContext(ctx, "SELECT action FROM item_dispositions WHERE item_id = ?", it.ID).Scan(&had); {
	case err == nil:
		return 0, domain.Because(domain.ErrTransitionInvalid, "item %s already has a disposition (%s)", it.ID, had)
	case !errors.Is(err, sql.ErrNoRows):
		return 0, s.dbErr("disposition", err)
	}
	steps := domain.DispositionSteps(it.Status, to)
	if steps == nil {
		return 0, domain.Because(domain.ErrTransitionInvalid, "item %s cannot go from %s to %s", it.ID, it.Status, to)
	}
	var v int
	for _, step := range steps { // withdrawn from sale first when it must be
		var err error
		if v, err = s.appendInventoryStatusEvent(ctx, tx, prop, it, step, ts(now), "disposition:"+action, now); err != nil {
			return 0, err
		}
		it.Status, it.Version = step, v
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO item_dispositions (item_id, tenant_id, action, counterparty, offer_cents, proposal_id, applied_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, it.ID, prop.TenantID, action, cp, offer, prop.ID, ts(now)); err != nil {
		return 0, s.dbErr("disposition", err)
	}
	return v, nil
}

// ApproveStatusImport is the human review of an imported status report (a
// status_update candidate): approved, it may back a status transition
// proposal. Only a member who may update item status can approve it.
func (s *Store) ApproveStatusImport(ctx context.Context, tenantID, candidateID, actorID string) error {
	return s.withTx(ctx, func(tx *sql.Tx) error {
		role, err := s.roleIn(ctx, tx, tenantID, actorID)
		if err != nil {
			return err
		}
		if !(domain.Principal{Role: role}).Has(domain.PermItemUpdateStatus) {
			return domain.Because(domain.ErrPermissionDenied, "%s may not approve status imports", actorID)
		}
		r, err := tx.ExecContext(ctx, `UPDATE inventory_candidates SET review_status = 'approved', version = version + 1
			WHERE tenant_id = ? AND id = ? AND kind = 'status_update' AND review_status = 'needs_review'`, tenantID, candidateID)
		if err != nil {
			return s.dbErr("approve status import", err)
		}
		if n, _ := r.RowsAffected(); n != 1 {
			return domain.Because(domain.ErrTransitionInvalid, "no status_update candidate %s awaiting review", candidateID)
		}
		return nil
	})
}

// recordCheckoutScan is record_checkout_scan: the item moves to the status
// its scan records (the lifecycle refuses what it does not allow), the
// status event names the checkout scan as its source, and the scan is
// recorded with the tag the item carries and the proposal it executes. It
// is an item-status operation, never payment processing.
func (s *Store) recordCheckoutScan(ctx context.Context, tx *sql.Tx, prop domain.Proposal, it domain.Item, changes map[string]any, now time.Time) (int, error) {
	scan, _ := changes["checkout_scan"].(string)
	to, ok := domain.CheckoutScanStatus(scan)
	if !ok || changes["status"] != to {
		return 0, domain.Because(domain.ErrTransitionInvalid, "proposal %s records no checkout scan of %s", prop.ID, it.ID)
	}
	v, err := s.appendInventoryStatusEvent(ctx, tx, prop, it, to, "", domain.StatusSourceCheckout, now)
	if err != nil {
		return 0, err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO checkout_scans (id, tenant_id, item_id, qr_code, scanned_by, scanned_at, scan, proposal_id)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, s.ids.New("scan"), prop.TenantID, it.ID, it.QRCode, prop.RequestedBy.ActorID, ts(now), scan, prop.ID); err != nil {
		return 0, s.dbErr("checkout scan", err)
	}
	return v, nil
}

// CreatePublicAppraisalLink creates a shareable appraisal page for a
// published item. The link stores no address: a public read of it follows
// the sale's address policy at the time of that read.
func (s *Store) CreatePublicAppraisalLink(ctx context.Context, p domain.Principal, itemID string) (string, error) {
	id := s.ids.New("appraisal")
	err := s.withTx(ctx, func(tx *sql.Tx) error {
		it, err := s.loadItem(ctx, tx, p.TenantID, itemID)
		if err != nil {
			return err
		}
		if it.Status != domain.ItemPublished {
			return domain.Because(domain.ErrTransitionInvalid, "item %s is %s: only published items get a public link", itemID, it.Status)
		}
		_, err = tx.ExecContext(ctx, "INSERT INTO public_appraisal_links (id, tenant_id, item_id, sale_id, created_by, created_at) VALUES (?, ?, ?, ?, ?, ?)",
			id, p.TenantID, itemID, it.SaleID, p.ActorID, ts(s.clock.Now()))
		if err != nil {
			return s.dbErr("appraisal link", err)
		}
		return nil
	})
	return id, err
}

// checkTagFree: a tag must be one of the tenant's printed labels and bound
// to no other item (tags are unique across tenants: one scan, one item).
func (s *Store) checkTagFree(ctx context.Context, tx *sql.Tx, tenantID, code, itemID string) error {
	var n int
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM qr_labels WHERE tenant_id = ? AND code = ?", tenantID, code).Scan(&n); err != nil {
		return s.dbErr("qr label", err)
	}
	if n == 0 {
		return domain.Because(domain.ErrTransitionInvalid, "tag %s is not one of your printed labels", code)
	}
	var other string
	err := tx.QueryRowContext(ctx, "SELECT id FROM items WHERE qr_code = ? AND id <> ?", code, itemID).Scan(&other)
	if err == nil {
		return domain.Because(domain.ErrTransitionInvalid, "tag %s is bound to another item", code)
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return s.dbErr("qr lookup", err)
	}
	return nil
}
