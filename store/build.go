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

// buildProposal validates a draft against the current state inside the
// write transaction and returns the proposal content (no id, no hash).
func (s *Store) buildProposal(ctx context.Context, tx *sql.Tx, p domain.Principal, d domain.ProposalDraft, now time.Time) (domain.Proposal, error) {
	ttl := d.TTL
	if ttl <= 0 || ttl > 24*time.Hour {
		ttl = DefaultProposalTTL
	}
	prop := domain.Proposal{
		TenantID: p.TenantID, Tool: d.Tool, RequestedBy: domain.Requester{ClientID: p.Client.ID, ActorID: p.ActorID},
		Action: d.Action, Requirement: d.Requirement, TargetIDs: slices.Clone(d.TargetIDs),
		Changes: []domain.FieldChange{}, Validation: domain.ProposalValidation{Status: "valid", Warnings: []string{}, Errors: []string{}},
		CreatedAt: now, ExpiresAt: now.Add(ttl), SaleIDs: []string{},
	}
	if len(d.TargetIDs) == 0 {
		return prop, domain.Invalid("targets", "at least one target")
	}
	if len(d.TargetIDs) != len(d.ExpectedVersions) {
		return prop, domain.Invalid("expected_versions", "give exactly one version per target")
	}
	seen := map[string]int{}
	for _, ev := range d.ExpectedVersions {
		seen[ev.ID] = ev.Version
	}
	for _, id := range d.TargetIDs {
		if _, ok := seen[id]; !ok {
			return prop, domain.Invalid("expected_versions", "no version for "+id+" (the list must name exactly the targets)")
		}
	}
	if len(seen) != len(d.TargetIDs) {
		return prop, domain.Invalid("item_ids", "a target is named twice")
	}
	// Bulk plans are bounded by the client's limit (§38 maximum_bulk_targets).
	lim, err := s.effectiveLimits(ctx, tx, p.TenantID, p.Client.ID)
	if err != nil {
		return prop, err
	}
	if len(d.TargetIDs) > lim.MaxBulkTargets {
		return prop, domain.Invalid("item_ids", fmt.Sprintf("%d targets exceed the maximum of %d per plan", len(d.TargetIDs), lim.MaxBulkTargets))
	}
	for _, id := range d.TargetIDs {
		prop.ExpectedVersions = append(prop.ExpectedVersions, domain.TargetVersion{ID: id, Version: seen[id]})
	}

	switch d.Action {
	case domain.ActionPromoteCandidate:
		err = s.buildPromotion(ctx, tx, p, d, &prop)
	case domain.ActionPublishItem:
		err = s.buildItemPublication(ctx, tx, p, &prop)
	case domain.ActionPublishSale:
		err = s.buildSalePublication(ctx, tx, p, &prop)
	case domain.ActionBulkItemUpdate:
		err = s.buildBulkUpdate(ctx, tx, p, d, &prop)
	case domain.ActionStatusTransition, domain.ActionArchiveItem:
		err = s.buildStatusTransition(ctx, tx, p, d, &prop)
	case domain.ActionBindIdentity, domain.ActionReleaseIdentity:
		err = s.buildIdentity(ctx, tx, p, d, &prop)
	case domain.ActionDisposition:
		err = s.buildDisposition(ctx, tx, p, d, &prop)
	case domain.ActionBuyerNotify:
		err = s.buildNotification(ctx, tx, p, d, &prop)
	case domain.ActionExportDelivery:
		err = s.buildExportDelivery(ctx, tx, p, &prop)
	default:
		return prop, fmt.Errorf("store: action %q: %w", d.Action, domain.ErrInvalidInput)
	}
	if err != nil {
		return prop, err
	}
	slices.Sort(prop.SaleIDs)
	prop.SaleIDs = slices.Compact(prop.SaleIDs)
	if len(prop.Validation.Warnings) > 0 {
		prop.Validation.Status = "valid_with_warnings"
	}
	return prop, nil
}

// staleError names the targets whose version moved.
func staleError(stale []string, want, got map[string]int) error {
	var parts []string
	for _, id := range stale {
		parts = append(parts, fmt.Sprintf("%s is at version %d, the proposal expected %d", id, got[id], want[id]))
	}
	return fmt.Errorf("%s: %w", strings.Join(parts, "; "), domain.ErrStaleVersion)
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

// loadItems loads targets and checks their versions against the draft.
func (s *Store) loadItems(ctx context.Context, tx *sql.Tx, p domain.Principal, prop *domain.Proposal) ([]domain.Item, error) {
	want, got := map[string]int{}, map[string]int{}
	var stale []string
	items := make([]domain.Item, 0, len(prop.TargetIDs))
	for _, ev := range prop.ExpectedVersions {
		it, err := s.loadItem(ctx, tx, p.TenantID, ev.ID)
		if err != nil {
			return nil, err
		}
		if !p.MaySeeSale(it.SaleID) {
			return nil, fmt.Errorf("item %s: %w", it.ID, domain.ErrSaleAssignment)
		}
		want[ev.ID], got[ev.ID] = ev.Version, it.Version
		if it.Version != ev.Version {
			stale = append(stale, ev.ID)
		}
		items = append(items, it)
		prop.SaleIDs = append(prop.SaleIDs, it.SaleID)
	}
	if len(stale) > 0 {
		return nil, staleError(stale, want, got)
	}
	return items, nil
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
	if !p.MaySeeSale(c.SaleID) {
		return fmt.Errorf("candidate %s: %w", id, domain.ErrSaleAssignment)
	}
	if c.Version != prop.ExpectedVersions[0].Version {
		return staleError([]string{id}, map[string]int{id: prop.ExpectedVersions[0].Version}, map[string]int{id: c.Version})
	}
	if c.Kind != domain.CandidateNewItem {
		return fmt.Errorf("candidate %s is a %s candidate: only new-item candidates are promoted: %w", id, c.Kind, domain.ErrCandidateRequired)
	}
	if c.ReviewStatus != domain.ReviewNeedsReview && c.ReviewStatus != domain.ReviewApproved {
		return fmt.Errorf("candidate %s is %s and cannot be promoted: %w", id, c.ReviewStatus, domain.ErrTransitionInvalid)
	}
	field := func(name, candidateValue string) {
		v := candidateValue
		if o, ok := d.Fields[name].(string); ok && o != "" {
			v = o
		}
		prop.Changes = append(prop.Changes, domain.FieldChange{TargetID: id, Field: "create_item." + name, From: nil, To: v})
	}
	prop.Changes = append(prop.Changes, domain.FieldChange{TargetID: id, Field: "create_item.sale_id", From: nil, To: c.SaleID})
	field("title", c.Title)
	field("description", c.Description)
	field("category", c.Category)
	field("room", c.Room)
	prop.Changes = append(prop.Changes, domain.FieldChange{TargetID: id, Field: "create_item.status", From: nil, To: domain.ItemDraft})
	prop.Changes = append(prop.Changes, domain.FieldChange{TargetID: id, Field: "review_status", From: c.ReviewStatus, To: domain.ReviewPromoted})
	if c.Category == "" && d.Fields["category"] == nil {
		prop.Validation.Warnings = append(prop.Validation.Warnings, "category_missing")
	}
	if c.ReviewStatus == domain.ReviewNeedsReview {
		prop.Validation.Warnings = append(prop.Validation.Warnings, "candidate_not_reviewed")
	}
	prop.SaleIDs = append(prop.SaleIDs, c.SaleID)
	prop.Impact = domain.ProposalImpact{CanonicalItemsCreated: 1}
	return nil
}

// readinessProblems is the publication checklist of an item.
func readinessProblems(it domain.Item) []string {
	var out []string
	if strings.TrimSpace(it.Title) == "" {
		out = append(out, "title")
	}
	if it.Category == "" {
		out = append(out, "category")
	}
	if it.PriceCents == nil {
		out = append(out, "price")
	}
	if !slices.ContainsFunc(it.Photos, func(ph domain.Photo) bool { return ph.Published }) {
		out = append(out, "approved_photo")
	}
	return out
}

func (s *Store) buildItemPublication(ctx context.Context, tx *sql.Tx, p domain.Principal, prop *domain.Proposal) error {
	prop.TargetKind = "item"
	items, err := s.loadItems(ctx, tx, p, prop)
	if err != nil {
		return err
	}
	it := items[0]
	if it.Status != domain.ItemReady {
		return fmt.Errorf("item %s is %s; only a ready item can be published: %w", it.ID, it.Status, domain.ErrTransitionInvalid)
	}
	if missing := readinessProblems(it); len(missing) > 0 {
		return fmt.Errorf("item %s is not ready to publish: missing %s: %w", it.ID, strings.Join(missing, ", "), domain.ErrTransitionInvalid)
	}
	var saleStatus string
	if err := tx.QueryRowContext(ctx, "SELECT status FROM estate_sales WHERE id = ?", it.SaleID).Scan(&saleStatus); err != nil {
		return s.dbErr("sale status", err)
	}
	if saleStatus == domain.SaleDraft {
		prop.Validation.Warnings = append(prop.Validation.Warnings, "sale_not_published: the item becomes visible when its sale is published")
	}
	prop.Changes = append(prop.Changes, domain.FieldChange{TargetID: it.ID, Field: "status", From: it.Status, To: domain.ItemPublished})
	prop.Impact = domain.ProposalImpact{ItemsChanged: 1, PublicRecordsChanged: 1}
	return nil
}

func (s *Store) buildSalePublication(ctx context.Context, tx *sql.Tx, p domain.Principal, prop *domain.Proposal) error {
	prop.TargetKind = "sale"
	id := prop.TargetIDs[0]
	if err := s.checkRef(ctx, tx, "estate_sales", "sale_id", id, p.TenantID); err != nil {
		return err
	}
	if !p.MaySeeSale(id) {
		return fmt.Errorf("sale %s: %w", id, domain.ErrSaleAssignment)
	}
	var st, vis, city, policy string
	var version int
	var reveal sql.NullString
	if err := tx.QueryRowContext(ctx, "SELECT status, visibility, city, address_policy, address_reveal_at, version FROM estate_sales WHERE id = ?", id).
		Scan(&st, &vis, &city, &policy, &reveal, &version); err != nil {
		return s.dbErr("load sale", err)
	}
	if version != prop.ExpectedVersions[0].Version {
		return staleError([]string{id}, map[string]int{id: prop.ExpectedVersions[0].Version}, map[string]int{id: version})
	}
	if st != domain.SaleDraft {
		return fmt.Errorf("sale %s is %s; only a draft sale can be published: %w", id, st, domain.ErrTransitionInvalid)
	}
	if city == "" {
		return fmt.Errorf("sale %s has no city: %w", id, domain.ErrTransitionInvalid)
	}
	if policy == "hidden_until" && !reveal.Valid {
		return fmt.Errorf("sale %s hides its address without a reveal time: %w", id, domain.ErrTransitionInvalid)
	}
	prop.SaleIDs = append(prop.SaleIDs, id)
	prop.Changes = append(prop.Changes,
		domain.FieldChange{TargetID: id, Field: "status", From: st, To: domain.SalePublished},
		domain.FieldChange{TargetID: id, Field: "visibility", From: vis, To: "public"},
		domain.FieldChange{TargetID: id, Field: "address_policy", From: policy, To: policy})
	prop.Impact = domain.ProposalImpact{PublicRecordsChanged: 1}
	return nil
}

// bulkFields are the fields a bulk update may change, with the permission
// each needs (§30: bulk actions cannot bypass field-level permissions).
var bulkFields = map[string]string{
	"room": domain.PermProposalCreate, "category": domain.PermProposalCreate, "title": domain.PermProposalCreate,
	"description": domain.PermProposalCreate, "price_cents": domain.PermItemUpdatePrice,
}

func (s *Store) buildBulkUpdate(ctx context.Context, tx *sql.Tx, p domain.Principal, d domain.ProposalDraft, prop *domain.Proposal) error {
	prop.TargetKind = "item"
	changes, _ := d.Fields["changes"].(map[string]any)
	if len(changes) == 0 {
		return domain.Invalid("changes", "name at least one field to change")
	}
	names := make([]string, 0, len(changes))
	for f := range changes {
		perm, ok := bulkFields[f]
		if !ok {
			return domain.Invalid("changes", f+" cannot be changed by a bulk update")
		}
		if !p.Has(perm) {
			return fmt.Errorf("changing %s needs %s: %w", f, perm, domain.ErrPermissionDenied)
		}
		names = append(names, f)
	}
	slices.Sort(names)
	items, err := s.loadItems(ctx, tx, p, prop)
	if err != nil {
		return err
	}
	for _, it := range items {
		if it.Status == domain.ItemSold || it.Status == domain.ItemArchived || it.Status == domain.ItemPendingPickup {
			return fmt.Errorf("item %s is %s and cannot be changed: %w", it.ID, it.Status, domain.ErrTransitionInvalid)
		}
		for _, f := range names {
			prop.Changes = append(prop.Changes, domain.FieldChange{TargetID: it.ID, Field: f, From: itemField(it, f), To: changes[f]})
		}
		if it.Status == domain.ItemPublished {
			prop.Impact.PublicRecordsChanged++
		}
	}
	prop.Impact.ItemsChanged = len(items)
	return nil
}

func itemField(it domain.Item, f string) any {
	switch f {
	case "room":
		return it.Room
	case "category":
		return it.Category
	case "title":
		return it.Title
	case "description":
		return it.Description
	case "price_cents":
		if it.PriceCents == nil {
			return nil
		}
		return float64(*it.PriceCents) // JSON numbers: compare as decoded
	case "qr_code":
		return it.QRCode
	case "status":
		return it.Status
	}
	return nil
}

func (s *Store) buildStatusTransition(ctx context.Context, tx *sql.Tx, p domain.Principal, d domain.ProposalDraft, prop *domain.Proposal) error {
	prop.TargetKind = "item"
	to, _ := d.Fields["to_status"].(string)
	items, err := s.loadItems(ctx, tx, p, prop)
	if err != nil {
		return err
	}
	it := items[0]
	if to == domain.ItemPublished {
		return domain.Invalid("to_status", "publication has its own proposal (trove_propose_item_publication)")
	}
	if !domain.CanTransition(it.Status, to) {
		return fmt.Errorf("item %s cannot go from %s to %s: %w", it.ID, it.Status, to, domain.ErrTransitionInvalid)
	}
	if d.StatusCandidateID != "" {
		var kind, review, itemRef string
		err := tx.QueryRowContext(ctx, "SELECT kind, review_status, notes FROM inventory_candidates WHERE tenant_id = ? AND id = ?", p.TenantID, d.StatusCandidateID).Scan(&kind, &review, &itemRef)
		if errors.Is(err, sql.ErrNoRows) {
			return domain.UnknownRef("status_candidate_id", d.StatusCandidateID, false)
		}
		if err != nil {
			return s.dbErr("status candidate", err)
		}
		if kind != "status_update" || review != domain.ReviewApproved {
			return fmt.Errorf("imported status %s must be approved with approve_status_import first: %w", d.StatusCandidateID, domain.ErrCandidateRequired)
		}
		prop.Changes = append(prop.Changes, domain.FieldChange{TargetID: it.ID, Field: "source", From: nil, To: "imported:" + d.StatusCandidateID})
	}
	eff, _ := d.Fields["effective_at"].(string)
	prop.Changes = append(prop.Changes,
		domain.FieldChange{TargetID: it.ID, Field: "status", From: it.Status, To: to},
		domain.FieldChange{TargetID: it.ID, Field: "effective_at", From: nil, To: eff})
	prop.Impact.ItemsChanged = 1
	if it.Status == domain.ItemPublished || to == domain.ItemPublished {
		prop.Impact.PublicRecordsChanged = 1
	}
	return nil
}

func (s *Store) buildIdentity(ctx context.Context, tx *sql.Tx, p domain.Principal, d domain.ProposalDraft, prop *domain.Proposal) error {
	prop.TargetKind = "item"
	code, _ := d.Fields["qr_code"].(string)
	items, err := s.loadItems(ctx, tx, p, prop)
	if err != nil {
		return err
	}
	it := items[0]
	switch d.Action {
	case domain.ActionBindIdentity:
		if it.QRCode == code {
			return fmt.Errorf("item %s already carries %s: %w", it.ID, code, domain.ErrTransitionInvalid)
		}
		if it.QRCode != "" {
			return fmt.Errorf("item %s carries %s: release it first: %w", it.ID, it.QRCode, domain.ErrTransitionInvalid)
		}
		if err := s.checkTagFree(ctx, tx, p.TenantID, code, it.ID); err != nil {
			return err
		}
		prop.Changes = append(prop.Changes, domain.FieldChange{TargetID: it.ID, Field: "qr_code", From: "", To: code})
	case domain.ActionReleaseIdentity:
		if it.QRCode != code || code == "" {
			return fmt.Errorf("item %s does not carry %s: %w", it.ID, code, domain.ErrTransitionInvalid)
		}
		if it.Status == domain.ItemSold || it.Status == domain.ItemPendingPickup {
			prop.Validation.Warnings = append(prop.Validation.Warnings, "release_from_"+it.Status+": human approval only")
		}
		prop.Changes = append(prop.Changes, domain.FieldChange{TargetID: it.ID, Field: "qr_code", From: code, To: ""})
	}
	prop.Impact.ItemsChanged = 1
	return nil
}

func (s *Store) buildDisposition(ctx context.Context, tx *sql.Tx, p domain.Principal, d domain.ProposalDraft, prop *domain.Proposal) error {
	prop.TargetKind = "item"
	action, _ := d.Fields["action"].(string)
	items, err := s.loadItems(ctx, tx, p, prop)
	if err != nil {
		return err
	}
	for _, it := range items {
		if it.Status == domain.ItemSold || it.Status == domain.ItemPendingPickup || it.Status == domain.ItemArchived {
			return fmt.Errorf("item %s is %s: only unsold items get a disposition: %w", it.ID, it.Status, domain.ErrTransitionInvalid)
		}
		to := domain.ItemArchived
		if action == "consign" {
			to = domain.ItemWithdrawn
		}
		prop.Changes = append(prop.Changes,
			domain.FieldChange{TargetID: it.ID, Field: "disposition", From: nil, To: action},
			domain.FieldChange{TargetID: it.ID, Field: "status", From: it.Status, To: to})
		if it.Status == domain.ItemPublished {
			prop.Impact.PublicRecordsChanged++
		}
	}
	if cp, _ := d.Fields["counterparty"].(string); cp != "" {
		prop.Changes = append(prop.Changes, domain.FieldChange{TargetID: prop.TargetIDs[0], Field: "counterparty", From: nil, To: cp})
	}
	if offer, ok := d.Fields["offer_cents"]; ok && offer != nil {
		if action != "buyout_offer" {
			return domain.Invalid("offer_cents", "only with buyout_offer")
		}
		prop.Changes = append(prop.Changes, domain.FieldChange{TargetID: prop.TargetIDs[0], Field: "offer_cents", From: nil, To: offer})
	}
	prop.Impact.ItemsChanged = len(items)
	return nil
}

func (s *Store) buildNotification(ctx context.Context, tx *sql.Tx, p domain.Principal, d domain.ProposalDraft, prop *domain.Proposal) error {
	id := prop.TargetIDs[0]
	channels, _ := d.Fields["channels"].([]string)
	audience, _ := d.Fields["audience"].(string)
	tmpl, _ := d.Fields["message_template"].(string)
	var saleID, title, category, status string
	if domain.ValidID(domain.PrefixItem, id) {
		prop.TargetKind = "item"
		items, err := s.loadItems(ctx, tx, p, prop)
		if err != nil {
			return err
		}
		saleID, title, category, status = items[0].SaleID, items[0].Title, items[0].Category, items[0].Status
		if status != domain.ItemPublished {
			return fmt.Errorf("item %s is %s: only published items are announced: %w", id, status, domain.ErrTransitionInvalid)
		}
	} else {
		prop.TargetKind = "sale"
		if err := s.checkRef(ctx, tx, "estate_sales", "sale_id", id, p.TenantID); err != nil {
			return err
		}
		var version int
		if err := tx.QueryRowContext(ctx, "SELECT title, status, version FROM estate_sales WHERE id = ?", id).Scan(&title, &status, &version); err != nil {
			return s.dbErr("load sale", err)
		}
		if version != prop.ExpectedVersions[0].Version {
			return staleError([]string{id}, map[string]int{id: prop.ExpectedVersions[0].Version}, map[string]int{id: version})
		}
		if status != domain.SalePublished && status != domain.SaleLive {
			return fmt.Errorf("sale %s is %s: only published sales are announced: %w", id, status, domain.ErrTransitionInvalid)
		}
		saleID = id
		prop.SaleIDs = append(prop.SaleIDs, id)
	}
	// Audience from aggregated demand signals: counts only, never identities.
	var saves, follows int
	q := "SELECT coalesce(sum(saves), 0), coalesce(sum(follows), 0) FROM demand_signals WHERE tenant_id = ? AND sale_id = ?"
	args := []any{p.TenantID, saleID}
	if category != "" && audience == "category_interest" {
		top, _, _ := strings.Cut(category, ".")
		q += " AND (category = ? OR category LIKE ?)"
		args = append(args, top, top+".%")
	}
	if err := tx.QueryRowContext(ctx, q, args...).Scan(&saves, &follows); err != nil {
		return s.dbErr("audience", err)
	}
	size := follows
	if audience == "saved_item" {
		size = saves / 10 // buyers who saved this item, estimated from the sale's saves
	}
	suppressed := size / 10 // opt-outs and frequency caps
	perMessage := 0.0
	if slices.Contains(channels, "sms") {
		perMessage = 0.0075
	}
	preview := strings.NewReplacer("{{item_title}}", title, "{{sale_title}}", title, "{{sale_dates}}", "the sale dates").Replace(tmpl)
	if len(preview) > 280 {
		preview = preview[:280] + "…"
	}
	prop.Notification = &domain.NotificationPlan{
		AudienceSize: size, SelectionBasis: audience, Channels: channels, MessagePreview: preview,
		SuppressedCount: suppressed, RateLimitPerHour: 500,
	}
	sent := size - suppressed
	prop.Changes = append(prop.Changes, domain.FieldChange{TargetID: id, Field: "notification", From: nil, To: fmt.Sprintf("%d buyers via %s", sent, strings.Join(channels, ","))})
	prop.Impact = domain.ProposalImpact{NotificationsSent: sent, EstimatedCostUSD: float64(int(float64(sent)*perMessage*100+0.5)) / 100}
	if sent == 0 {
		prop.Validation.Warnings = append(prop.Validation.Warnings, "empty_audience")
	}
	return nil
}

// exportVersion is the "version" of a staged export: its snapshot never
// changes, so a live (staged or delivery-proposed) export is version 1.
const exportVersion = 1

func (s *Store) buildExportDelivery(ctx context.Context, tx *sql.Tx, p domain.Principal, prop *domain.Proposal) error {
	prop.TargetKind = "export"
	id := prop.TargetIDs[0]
	if err := s.checkRef(ctx, tx, "export_drafts", "export_id", id, p.TenantID); err != nil {
		return err
	}
	var channel, status string
	var items, valid int
	if err := tx.QueryRowContext(ctx, "SELECT channel, status, item_count, valid_count FROM export_drafts WHERE id = ?", id).Scan(&channel, &status, &items, &valid); err != nil {
		return s.dbErr("load export", err)
	}
	if status != "staged" && status != "delivery_proposed" {
		return fmt.Errorf("export %s is %s: only a staged export can be delivered: %w", id, status, domain.ErrTransitionInvalid)
	}
	if valid == 0 {
		return fmt.Errorf("export %s has no item that passes %s's checks: %w", id, channel, domain.ErrTransitionInvalid)
	}
	// The delivery is bound to the snapshot AND to every item at the version
	// it was staged at: an item changed since staging makes it stale.
	rows, err := tx.QueryContext(ctx, `SELECT d.item_id, d.item_version, i.sale_id, i.version FROM export_draft_items d JOIN items i ON i.id = d.item_id
		WHERE d.export_id = ? AND d.valid = 1 ORDER BY d.position`, id)
	if err != nil {
		return s.dbErr("export items", err)
	}
	defer rows.Close()
	for rows.Next() {
		var itemID, saleID string
		var v, current int
		if err := rows.Scan(&itemID, &v, &saleID, &current); err != nil {
			return s.dbErr("export items", err)
		}
		if current != v {
			return staleError([]string{itemID}, map[string]int{itemID: v}, map[string]int{itemID: current})
		}
		prop.ExpectedVersions = append(prop.ExpectedVersions, domain.TargetVersion{ID: itemID, Version: v})
		prop.SaleIDs = append(prop.SaleIDs, saleID)
		prop.Changes = append(prop.Changes, domain.FieldChange{TargetID: itemID, Field: "external_listing." + channel, From: nil, To: "listed"})
	}
	if err := rows.Err(); err != nil {
		return s.dbErr("export items", err)
	}
	if valid < items {
		prop.Validation.Warnings = append(prop.Validation.Warnings, fmt.Sprintf("%d of %d staged items fail %s's checks and are not delivered", items-valid, items, channel))
	}
	prop.Changes = append(prop.Changes, domain.FieldChange{TargetID: id, Field: "status", From: status, To: "delivered"})
	prop.Impact = domain.ProposalImpact{ExternalDeliveries: 1, PublicRecordsChanged: valid}
	return nil
}
