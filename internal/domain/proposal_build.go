package domain

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Proposal building (§15): the rules that turn a draft into the content of
// an immutable proposal, written once for every Backend. A Backend loads the
// current state of the targets (inside the transaction that stores the
// proposal, or from an RPC whose write re-verifies it) and calls these pure
// functions; only loading and storing differ between backends. Each builder
// refuses in the order the checks are listed, so both backends answer the
// same error for the same state.

// Proposal lifetimes: a draft's TTL, when unset or out of range, is the
// default; nothing lives longer than the maximum.
const (
	DefaultProposalTTL = time.Hour
	MaxProposalTTL     = 24 * time.Hour
)

// ExportVersion is the "version" of a staged export: its snapshot never
// changes, so a live (staged or delivery-proposed) export is version 1.
const ExportVersion = 1

// StartProposal runs the prelude every proposal shares: the expiry, at least
// one target, exactly one expected version per target and no target twice,
// and at most maxBulkTargets targets (§38 maximum_bulk_targets). It returns
// the proposal with its expected versions in target order; the action's
// builder fills the rest.
func StartProposal(p Principal, d ProposalDraft, now time.Time, maxBulkTargets int) (Proposal, error) {
	ttl := d.TTL
	if ttl <= 0 || ttl > MaxProposalTTL {
		ttl = DefaultProposalTTL
	}
	prop := Proposal{
		TenantID: p.TenantID, Tool: d.Tool, RequestedBy: Requester{ClientID: p.Client.ID, ActorID: p.ActorID},
		Action: d.Action, Requirement: d.Requirement, TargetIDs: slices.Clone(d.TargetIDs),
		Changes: []FieldChange{}, Validation: ProposalValidation{Status: "valid", Warnings: []string{}, Errors: []string{}},
		CreatedAt: now, ExpiresAt: now.Add(ttl), SaleIDs: []string{},
	}
	// The action's executing tool and approval are the registry's, whoever
	// built the draft: a draft that names another tool or a weaker
	// approval is refused, never stored.
	spec, ok := ActionOf(d.Action)
	switch {
	case !ok:
		return prop, Invalid("action", fmt.Sprintf("%q is not a controlled action", d.Action))
	case d.Tool.Name != spec.Tool || d.Requirement != spec.Requirement:
		return prop, Invalid("action", fmt.Sprintf("%s is executed by %s under %s approval", d.Action, spec.Tool, spec.Requirement))
	}
	if len(d.TargetIDs) == 0 {
		return prop, Invalid("targets", "at least one target")
	}
	if len(d.TargetIDs) != len(d.ExpectedVersions) {
		return prop, Invalid("expected_versions", "give exactly one version per target")
	}
	seen := map[string]int{}
	for _, ev := range d.ExpectedVersions {
		seen[ev.ID] = ev.Version
	}
	for _, id := range d.TargetIDs {
		if _, ok := seen[id]; !ok {
			return prop, Invalid("expected_versions", "no version for "+id+" (the list must name exactly the targets)")
		}
	}
	if len(seen) != len(d.TargetIDs) {
		return prop, Invalid("item_ids", "a target is named twice")
	}
	if len(d.TargetIDs) > maxBulkTargets {
		return prop, Invalid("item_ids", fmt.Sprintf("%d targets exceed the maximum of %d per plan", len(d.TargetIDs), maxBulkTargets))
	}
	for _, id := range d.TargetIDs {
		prop.ExpectedVersions = append(prop.ExpectedVersions, TargetVersion{ID: id, Version: seen[id]})
	}
	return prop, nil
}

// FinishProposal completes a built proposal: its sales sorted and unique,
// and the validation status its warnings imply.
func FinishProposal(prop *Proposal) {
	slices.Sort(prop.SaleIDs)
	prop.SaleIDs = slices.Compact(prop.SaleIDs)
	if len(prop.Validation.Warnings) > 0 {
		prop.Validation.Status = "valid_with_warnings"
	}
}

// StaleError names the targets whose version moved.
func StaleError(stale []string, want, got map[string]int) error {
	var parts []string
	for _, id := range stale {
		parts = append(parts, fmt.Sprintf("%s is at version %d, the proposal expected %d", id, got[id], want[id]))
	}
	return Because(ErrStaleVersion, "%s", strings.Join(parts, "; "))
}

// staleOne is StaleError for one target.
func staleOne(id string, want, got int) error {
	return StaleError([]string{id}, map[string]int{id: want}, map[string]int{id: got})
}

// SaleAssignmentError is the refusal of a target in a sale the principal is
// not assigned to (§4.3).
func SaleAssignmentError(kind, id string) error {
	return fmt.Errorf("%s %s: %w", kind, id, ErrSaleAssignment)
}

// BindItemTargets checks loaded item targets (in expected-version order)
// against the proposal: each in a sale the principal may see, each at its
// expected version (every stale target is named). It records their sales.
func BindItemTargets(p Principal, prop *Proposal, items []Item) error {
	byID := make(map[string]Item, len(items))
	for _, it := range items {
		byID[it.ID] = it
	}
	want, got := map[string]int{}, map[string]int{}
	var stale []string
	for _, ev := range prop.ExpectedVersions {
		it, ok := byID[ev.ID]
		if !ok {
			return UnknownRef("item_id", ev.ID, false)
		}
		if !p.MaySeeSale(it.SaleID) {
			return SaleAssignmentError("item", it.ID)
		}
		want[ev.ID], got[ev.ID] = ev.Version, it.Version
		if it.Version != ev.Version {
			stale = append(stale, ev.ID)
		}
		prop.SaleIDs = append(prop.SaleIDs, it.SaleID)
	}
	if len(stale) > 0 {
		return StaleError(stale, want, got)
	}
	return nil
}

// BuildPromotion builds a promote_candidate proposal from the candidate
// target and its photos (the asset ids of its media, in position order): a
// complete draft item with the candidate's values (or the draft's
// corrections), its price and its photos, the candidate → promoted.
//
// The item's price is the draft's price_cents, else the candidate's
// supplied price; it is a change only when the principal may change prices
// (PromotionFieldPermission): a draft price without that permission is
// refused, a supplied one is left for a later bulk update. Every photo of
// the candidate becomes a private photo of the item (create_item.photos,
// the asset ids in order); publication approves photos for public view.
//
// An attach_media candidate is promoted onto the item it names (item, which
// the backend loads; nil for any other kind): BuildMediaPromotion.
func BuildPromotion(p Principal, d ProposalDraft, prop *Proposal, c Candidate, photos []string, item *Item) error {
	prop.TargetKind = "candidate"
	id := prop.TargetIDs[0]
	if !p.MaySeeSale(c.SaleID) {
		return SaleAssignmentError("candidate", id)
	}
	if c.Version != prop.ExpectedVersions[0].Version {
		return staleOne(id, prop.ExpectedVersions[0].Version, c.Version)
	}
	if !slices.Contains(PromotableCandidateKinds(), c.Kind) {
		return Because(ErrCandidateRequired, "candidate %s is a %s candidate: only new-item and attach-media candidates are promoted", id, c.Kind)
	}
	if !slices.Contains(OpenReviewStatuses(), c.ReviewStatus) {
		return Because(ErrTransitionInvalid, "candidate %s is %s and cannot be promoted", id, c.ReviewStatus)
	}
	if c.Kind == CandidateAttachMedia {
		return buildMediaPromotion(p, d, prop, c, photos, item)
	}
	price := c.SuppliedPriceCents
	if v, ok := d.Fields["price_cents"]; ok {
		cents, ok := v.(int64)
		if !ok || cents < 0 || cents > MaxPriceCents {
			return Invalid("price_cents", fmt.Sprintf("a price in cents from 0 to %d", MaxPriceCents))
		}
		if !p.Has(PromotionFieldPermission("price_cents")) {
			return Because(ErrPermissionDenied, "setting price_cents needs %s", PromotionFieldPermission("price_cents"))
		}
		price = &cents
	}
	if len(photos) > MaxPhotosPerCandidate {
		return Invalid("photos", fmt.Sprintf("candidate %s has %d photos, more than the %d an item takes", id, len(photos), MaxPhotosPerCandidate))
	}
	field := func(name, candidateValue string) string {
		v := candidateValue
		if o, ok := d.Fields[name].(string); ok && o != "" {
			v = o
		}
		prop.Changes = append(prop.Changes, FieldChange{TargetID: id, Field: "create_item." + name, From: nil, To: v})
		return v
	}
	prop.Changes = append(prop.Changes, FieldChange{TargetID: id, Field: "create_item.sale_id", From: nil, To: c.SaleID})
	field("title", c.Title)
	field("description", c.Description)
	category := field("category", c.Category)
	field("room", c.Room)
	if price != nil && p.Has(PromotionFieldPermission("price_cents")) {
		prop.Changes = append(prop.Changes, FieldChange{TargetID: id, Field: "create_item.price_cents", From: nil, To: *price})
	}
	if len(photos) > 0 {
		prop.Changes = append(prop.Changes, FieldChange{TargetID: id, Field: "create_item.photos", From: nil, To: slices.Clone(photos)})
	}
	prop.Changes = append(prop.Changes, FieldChange{TargetID: id, Field: "create_item.status", From: nil, To: ItemDraft})
	prop.Changes = append(prop.Changes, FieldChange{TargetID: id, Field: "review_status", From: c.ReviewStatus, To: ReviewPromoted})
	// The item would be created without a category: judged on what is
	// created, so the warning is derived from the proposal's own changes
	// (the live database derives it the same way: derive_proposal).
	if category == "" {
		prop.Validation.Warnings = append(prop.Validation.Warnings, "category_missing")
	}
	if c.ReviewStatus == ReviewNeedsReview {
		prop.Validation.Warnings = append(prop.Validation.Warnings, "candidate_not_reviewed")
	}
	prop.SaleIDs = append(prop.SaleIDs, c.SaleID)
	prop.Impact = ProposalImpact{CanonicalItemsCreated: 1}
	return nil
}

// PromotableCandidateKinds are the kinds of candidate a promotion applies:
// a new item, and photos for an existing one. A status report is reviewed
// by a status transition instead.
func PromotableCandidateKinds() []string { return []string{CandidateNewItem, CandidateAttachMedia} }

// MediaPromotionFields are the changes of an attach_media candidate's
// promotion besides its review status: the item the photos are added to,
// and the photos (asset ids, in order).
const (
	FieldAddPhotosItem   = "add_photos.item_id"
	FieldAddPhotosAssets = "add_photos.asset_ids"
)

// buildMediaPromotion builds the promotion of an attach_media candidate:
// its photos become private photos of the item it names, which must be in
// a sale the principal may see and still take changes (not sold, pending
// pickup or archived). It adds photos only: a draft that names anything
// else is refused. The item's version is not bound (adding a photo does
// not depend on its other fields); execution checks it again.
func buildMediaPromotion(p Principal, d ProposalDraft, prop *Proposal, c Candidate, photos []string, item *Item) error {
	id := prop.TargetIDs[0]
	for _, f := range []string{"title", "description", "category", "room", "price_cents"} {
		if _, ok := d.Fields[f]; ok {
			return Invalid(f, "promoting an attach_media candidate adds its photos to the item; it changes nothing else")
		}
	}
	if item == nil {
		return UnknownRef("item_id", "", false)
	}
	if !p.MaySeeSale(item.SaleID) {
		return SaleAssignmentError("item", item.ID)
	}
	if slices.Contains(LockedItemStatuses(), item.Status) {
		return Because(ErrTransitionInvalid, "item %s is %s and takes no new photo", item.ID, item.Status)
	}
	if len(photos) == 0 {
		return Invalid("candidate_id", fmt.Sprintf("candidate %s has no photo to add", id))
	}
	prop.Changes = append(prop.Changes,
		FieldChange{TargetID: id, Field: FieldAddPhotosItem, From: nil, To: item.ID},
		FieldChange{TargetID: id, Field: FieldAddPhotosAssets, From: nil, To: slices.Clone(photos)},
		FieldChange{TargetID: id, Field: "review_status", From: c.ReviewStatus, To: ReviewPromoted})
	if c.ReviewStatus == ReviewNeedsReview {
		prop.Validation.Warnings = append(prop.Validation.Warnings, "candidate_not_reviewed")
	}
	prop.SaleIDs = append(prop.SaleIDs, item.SaleID)
	prop.Impact = ProposalImpact{ItemsChanged: 1}
	return nil
}

// PromotionFieldPermission is the permission a promotion needs to set a
// field of the item it creates: a bulk update's (bulkFields), so a
// promotion prices an item exactly when a bulk update could; any other
// field needs only proposal.create.
func PromotionFieldPermission(field string) string {
	if perm, ok := bulkFields[field]; ok {
		return perm
	}
	return PermProposalCreate
}

// PublicationReadiness is the publication checklist of an item: what is
// missing (title, category, price, approved_photo); empty when ready.
func PublicationReadiness(it Item) []string {
	return publicationMissing(it, slices.ContainsFunc(it.Photos, func(ph Photo) bool { return ph.Published }))
}

// TalliedReadiness is PublicationReadiness of an item whose photos were
// tallied (ItemIncludes.PhotoTally) rather than read.
func TalliedReadiness(it Item, t PhotoTally) []string {
	return publicationMissing(it, t.Published > 0)
}

// publicationMissing is the checklist itself: one rule for both.
func publicationMissing(it Item, publishedPhoto bool) []string {
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
	if !publishedPhoto {
		out = append(out, "approved_photo")
	}
	return out
}

// PublishedPhotoIDs are the ids of the item's photos approved for public
// view, sorted.
func PublishedPhotoIDs(it Item) []string {
	out := []string{}
	for _, ph := range it.Photos {
		if ph.Published {
			out = append(out, ph.ID)
		}
	}
	slices.Sort(out)
	return out
}

// WithPublicPhotos is the item as it is once exactly the photos ids name
// are approved for public view (sorted ids answered with it): every id a
// photo of the item, none twice, at least one. The photos it does not name
// become private.
func WithPublicPhotos(it Item, ids []string) (Item, []string, error) {
	if len(ids) == 0 {
		return it, nil, Invalid("photo_ids", "name at least one photo of the item")
	}
	sorted := slices.Clone(ids)
	slices.Sort(sorted)
	if len(slices.Compact(slices.Clone(sorted))) != len(sorted) {
		return it, nil, Invalid("photo_ids", "a photo is named twice")
	}
	out := it
	out.Photos = slices.Clone(it.Photos)
	for i := range out.Photos {
		out.Photos[i].Published = slices.Contains(sorted, out.Photos[i].ID)
	}
	for _, id := range sorted {
		if !slices.ContainsFunc(it.Photos, func(ph Photo) bool { return ph.ID == id }) {
			return it, nil, Invalid("photo_ids", fmt.Sprintf("%s is not a photo of item %s", id, it.ID))
		}
	}
	return out, sorted, nil
}

// DraftPhotoIDs are the photo ids a publication draft names (nil when it
// names none: the item's approved photos stay as they are).
func DraftPhotoIDs(d ProposalDraft) []string {
	ids, _ := d.Fields["photo_ids"].([]string)
	return ids
}

// BuildItemPublication builds a publish_item proposal: the item must be
// ready and pass the readiness checklist. When the draft names photos
// (DraftPhotoIDs), the item's public photos become exactly those
// (public_photo_ids, from the approved ones to the named ones, sorted) and
// the checklist is judged with them. saleStatus names the status of the
// item's sale (a draft sale is a warning: the item shows once the sale is
// published).
func BuildItemPublication(p Principal, d ProposalDraft, prop *Proposal, items []Item, saleStatus map[string]string) error {
	prop.TargetKind = "item"
	if err := BindItemTargets(p, prop, items); err != nil {
		return err
	}
	it := items[0]
	if it.Status != ItemReady {
		return Because(ErrTransitionInvalid, "item %s is %s; only a ready item can be published", it.ID, it.Status)
	}
	var public []string
	if ids := DraftPhotoIDs(d); ids != nil {
		var err error
		if it, public, err = WithPublicPhotos(it, ids); err != nil {
			return err
		}
	}
	if missing := PublicationReadiness(it); len(missing) > 0 {
		return Because(ErrTransitionInvalid, "item %s is not ready to publish: missing %s", it.ID, strings.Join(missing, ", "))
	}
	if saleStatus[it.SaleID] == SaleDraft {
		prop.Validation.Warnings = append(prop.Validation.Warnings, "sale_not_published: the item becomes visible when its sale is published")
	}
	prop.Changes = append(prop.Changes, FieldChange{TargetID: it.ID, Field: "status", From: it.Status, To: ItemPublished})
	if public != nil {
		prop.Changes = append(prop.Changes, FieldChange{TargetID: it.ID, Field: "public_photo_ids", From: PublishedPhotoIDs(items[0]), To: public})
	}
	prop.Impact = ProposalImpact{ItemsChanged: 1, PublicRecordsChanged: 1}
	return nil
}

// BuildSalePublication builds a publish_sale proposal: a draft sale with a
// city, whose hidden address has a reveal time, becomes published and public.
func BuildSalePublication(p Principal, prop *Proposal, s Sale) error {
	prop.TargetKind = "sale"
	id := prop.TargetIDs[0]
	if !p.MaySeeSale(id) {
		return SaleAssignmentError("sale", id)
	}
	if s.Version != prop.ExpectedVersions[0].Version {
		return staleOne(id, prop.ExpectedVersions[0].Version, s.Version)
	}
	if s.Status != SaleDraft {
		return Because(ErrTransitionInvalid, "sale %s is %s; only a draft sale can be published", id, s.Status)
	}
	if s.City == "" {
		return Because(ErrTransitionInvalid, "sale %s has no city", id)
	}
	if s.AddressPolicy == "hidden_until" && s.AddressRevealAt == nil {
		return Because(ErrTransitionInvalid, "sale %s hides its address without a reveal time", id)
	}
	prop.SaleIDs = append(prop.SaleIDs, id)
	prop.Changes = append(prop.Changes,
		FieldChange{TargetID: id, Field: "status", From: s.Status, To: SalePublished},
		FieldChange{TargetID: id, Field: "visibility", From: s.Visibility, To: VisibilityPublic},
		FieldChange{TargetID: id, Field: "address_policy", From: s.AddressPolicy, To: s.AddressPolicy})
	prop.Impact = ProposalImpact{PublicRecordsChanged: 1}
	return nil
}

// bulkFields are the fields a bulk update may change, with the permission
// each needs (§30: bulk actions cannot bypass field-level permissions).
var bulkFields = map[string]string{
	"room": PermProposalCreate, "category": PermProposalCreate, "title": PermProposalCreate,
	"description": PermProposalCreate, "price_cents": PermItemUpdatePrice,
}

// BulkUpdateChanges checks a bulk update's changes before any target is
// loaded: at least one, each a field a bulk update may change and the
// principal may change. It returns them with their names sorted.
func BulkUpdateChanges(p Principal, d ProposalDraft) (map[string]any, []string, error) {
	changes, _ := d.Fields["changes"].(map[string]any)
	if len(changes) == 0 {
		return nil, nil, Invalid("changes", "name at least one field to change")
	}
	names := make([]string, 0, len(changes))
	for f := range changes {
		perm, ok := bulkFields[f]
		if !ok {
			return nil, nil, Invalid("changes", f+" cannot be changed by a bulk update")
		}
		if !p.Has(perm) {
			return nil, nil, Because(ErrPermissionDenied, "changing %s needs %s", f, perm)
		}
		names = append(names, f)
	}
	slices.Sort(names)
	return changes, names, nil
}

// BuildBulkUpdate builds a bulk_item_update proposal from its checked
// changes (BulkUpdateChanges) and the loaded targets.
func BuildBulkUpdate(p Principal, prop *Proposal, items []Item, changes map[string]any, names []string) error {
	prop.TargetKind = "item"
	if err := BindItemTargets(p, prop, items); err != nil {
		return err
	}
	for _, it := range items {
		if slices.Contains(LockedItemStatuses(), it.Status) {
			return Because(ErrTransitionInvalid, "item %s is %s and cannot be changed", it.ID, it.Status)
		}
		for _, f := range names {
			prop.Changes = append(prop.Changes, FieldChange{TargetID: it.ID, Field: f, From: ItemField(it, f), To: changes[f]})
		}
		if it.Status == ItemPublished {
			prop.Impact.PublicRecordsChanged++
		}
	}
	prop.Impact.ItemsChanged = len(items)
	return nil
}

// ItemField is the current value of a changeable item field, as a decoded
// JSON value would compare with it.
func ItemField(it Item, f string) any {
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

// StatusCandidateLookup returns the kind and review status of the tenant's
// candidate id (a RefError when there is none).
type StatusCandidateLookup func(id string) (kind, review string, err error)

// BuildStatusTransition builds a status_transition (or archive_item)
// proposal. A transition that reviews an imported status names its
// status_update candidate, which must have been approved; lookup is only
// called then. A principal without proposal.create (checkout) may propose
// only the checkout transitions from the item's status (CheckoutActionsFor)
// of items in its assigned sales, and reviews no imported status.
func BuildStatusTransition(p Principal, d ProposalDraft, prop *Proposal, items []Item, lookup StatusCandidateLookup) error {
	prop.TargetKind = "item"
	to, _ := d.Fields["to_status"].(string)
	if err := BindItemTargets(p, prop, items); err != nil {
		return err
	}
	it := items[0]
	if to == ItemPublished {
		return Invalid("to_status", "publication has its own proposal (trove_propose_item_publication)")
	}
	// Checkout (item.update_status without proposal.create) proposes the
	// checkout transitions of its assigned sales' items only.
	if err := statusProposalAuthority(p, it, to, d.StatusCandidateID); err != nil {
		return err
	}
	if !CanTransition(it.Status, to) {
		return Because(ErrTransitionInvalid, "item %s cannot go from %s to %s", it.ID, it.Status, to)
	}
	if d.StatusCandidateID != "" {
		kind, review, err := lookup(d.StatusCandidateID)
		if err != nil {
			return err
		}
		if kind != "status_update" || review != ReviewApproved {
			return Because(ErrCandidateRequired, "imported status %s must be approved with approve_status_import first", d.StatusCandidateID)
		}
		prop.Changes = append(prop.Changes, FieldChange{TargetID: it.ID, Field: "source", From: nil, To: ImportedSourcePrefix + d.StatusCandidateID})
	}
	eff, _ := d.Fields["effective_at"].(string)
	prop.Changes = append(prop.Changes,
		FieldChange{TargetID: it.ID, Field: "status", From: it.Status, To: to},
		FieldChange{TargetID: it.ID, Field: "effective_at", From: nil, To: eff})
	prop.Impact.ItemsChanged = 1
	if it.Status == ItemPublished || to == ItemPublished {
		prop.Impact.PublicRecordsChanged = 1
	}
	return nil
}

// BuildIdentity builds a bind_identity or release_identity proposal.
// tagFree checks that a tag is one of the tenant's printed labels and bound
// to no other item; it is only called for a bind that passed the item's own
// checks.
func BuildIdentity(p Principal, d ProposalDraft, prop *Proposal, items []Item, tagFree func(code, itemID string) error) error {
	prop.TargetKind = "item"
	code, _ := d.Fields["qr_code"].(string)
	if err := BindItemTargets(p, prop, items); err != nil {
		return err
	}
	it := items[0]
	switch d.Action {
	case ActionBindIdentity:
		if it.QRCode == code {
			return Because(ErrTransitionInvalid, "item %s already carries %s", it.ID, code)
		}
		if it.QRCode != "" {
			// Never the tag itself: a role whose item projection hides
			// qr_code may still propose binding one (attack review, issue 18).
			return Because(ErrTransitionInvalid, "item %s already carries another tag: release it first", it.ID)
		}
		if err := tagFree(code, it.ID); err != nil {
			return err
		}
		prop.Changes = append(prop.Changes, FieldChange{TargetID: it.ID, Field: "qr_code", From: "", To: code})
	case ActionReleaseIdentity:
		if it.QRCode != code || code == "" {
			return Because(ErrTransitionInvalid, "item %s does not carry %s", it.ID, code)
		}
		if it.Status == ItemSold || it.Status == ItemPendingPickup {
			prop.Validation.Warnings = append(prop.Validation.Warnings, "release_from_"+it.Status+": human approval only")
		}
		prop.Changes = append(prop.Changes, FieldChange{TargetID: it.ID, Field: "qr_code", From: code, To: ""})
	}
	prop.Impact.ItemsChanged = 1
	return nil
}

// Disposition actions: what happens to an unsold item after its sale.
const (
	DispositionDonate         = "donate"
	DispositionConsign        = "consign"
	DispositionHaulAway       = "haul_away"
	DispositionReturnToFamily = "return_to_family"
	DispositionBuyoutOffer    = "buyout_offer"
)

// DispositionActions lists every disposition action. The tool's input
// enum, the live item_dispositions CHECK and check_item_proposal spell it
// out; tests in internal/catalog and internal/sqlgen hold them to this.
func DispositionActions() []string {
	return []string{DispositionDonate, DispositionConsign, DispositionHaulAway, DispositionReturnToFamily, DispositionBuyoutOffer}
}

// BuildDisposition builds a disposition_action proposal for unsold items:
// archived afterwards (withdrawn when consigned).
func BuildDisposition(p Principal, d ProposalDraft, prop *Proposal, items []Item) error {
	prop.TargetKind = "item"
	action, _ := d.Fields["action"].(string)
	if err := BindItemTargets(p, prop, items); err != nil {
		return err
	}
	for _, it := range items {
		if slices.Contains(LockedItemStatuses(), it.Status) {
			return Because(ErrTransitionInvalid, "item %s is %s: only unsold items get a disposition", it.ID, it.Status)
		}
		if !slices.Contains(DispositionActions(), action) { // after the status, as check_item_proposal
			return Invalid("action", strings.Join(DispositionActions(), ", "))
		}
		to := ItemArchived
		if action == DispositionConsign {
			to = ItemWithdrawn
		}
		if DispositionSteps(it.Status, to) == nil {
			return Because(ErrTransitionInvalid, "item %s is %s and cannot become %s", it.ID, it.Status, to)
		}
		prop.Changes = append(prop.Changes,
			FieldChange{TargetID: it.ID, Field: "disposition", From: nil, To: action},
			FieldChange{TargetID: it.ID, Field: "status", From: it.Status, To: to})
		if it.Status == ItemPublished {
			prop.Impact.PublicRecordsChanged++
		}
	}
	if cp, _ := d.Fields["counterparty"].(string); cp != "" {
		prop.Changes = append(prop.Changes, FieldChange{TargetID: prop.TargetIDs[0], Field: "counterparty", From: nil, To: cp})
	}
	if offer, ok := d.Fields["offer_cents"]; ok && offer != nil {
		if action != DispositionBuyoutOffer {
			return Invalid("offer_cents", "only with "+DispositionBuyoutOffer)
		}
		prop.Changes = append(prop.Changes, FieldChange{TargetID: prop.TargetIDs[0], Field: "offer_cents", From: nil, To: offer})
	}
	prop.Impact.ItemsChanged = len(items)
	return nil
}

// NotificationTarget is the loaded target of a buyer notification: exactly
// one of a published item or a published (or live) sale.
type NotificationTarget struct {
	Item *Item
	Sale *Sale
}

// NotificationAudiences are the buyers a notification may address: those
// who saved the item, follow the sale, or follow its category.
func NotificationAudiences() []string {
	return []string{"saved_item", "followed_sale", "category_interest"}
}

// NotificationChannels are the channels a notification may go by.
func NotificationChannels() []string { return []string{"email", "sms", "push"} }

// AudienceLookup sums the demand signals of a sale (saves and follows),
// narrowed to a top-level category when one is given. Counts only: never
// a buyer identity.
type AudienceLookup func(saleID, topCategory string) (saves, follows int, err error)

// BuildNotification builds a buyer_notification proposal: the reviewable
// plan (audience size from aggregated demand, suppressions, channels,
// preview) and its estimated cost.
func BuildNotification(p Principal, d ProposalDraft, prop *Proposal, target NotificationTarget, audience AudienceLookup) error {
	id := prop.TargetIDs[0]
	channels, _ := d.Fields["channels"].([]string)
	aud, _ := d.Fields["audience"].(string)
	tmpl, _ := d.Fields["message_template"].(string)
	if !slices.Contains(NotificationAudiences(), aud) {
		return Invalid("audience", "one of "+strings.Join(NotificationAudiences(), ", "))
	}
	if len(channels) == 0 || len(slices.Compact(slices.Sorted(slices.Values(channels)))) != len(channels) ||
		slices.ContainsFunc(channels, func(c string) bool { return !slices.Contains(NotificationChannels(), c) }) {
		return Invalid("channels", "one or more of "+strings.Join(NotificationChannels(), ", ")+", each once")
	}
	var saleID, title, category string
	if target.Item != nil {
		prop.TargetKind = "item"
		if err := BindItemTargets(p, prop, []Item{*target.Item}); err != nil {
			return err
		}
		it := target.Item
		saleID, title, category = it.SaleID, it.Title, it.Category
		if it.Status != ItemPublished {
			return Because(ErrTransitionInvalid, "item %s is %s: only published items are announced", id, it.Status)
		}
	} else {
		prop.TargetKind = "sale"
		s := target.Sale
		if !p.MaySeeSale(id) {
			return fmt.Errorf("sale %s: %w", id, ErrSaleAssignment)
		}
		if s.Version != prop.ExpectedVersions[0].Version {
			return staleOne(id, prop.ExpectedVersions[0].Version, s.Version)
		}
		if s.Status != SalePublished && s.Status != SaleLive {
			return Because(ErrTransitionInvalid, "sale %s is %s: only published sales are announced", id, s.Status)
		}
		saleID, title = id, s.Title
		prop.SaleIDs = append(prop.SaleIDs, id)
	}
	top := ""
	if category != "" && aud == "category_interest" {
		top, _, _ = strings.Cut(category, ".")
	}
	saves, follows, err := audience(saleID, top)
	if err != nil {
		return err
	}
	size := follows
	if aud == "saved_item" {
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
	prop.Notification = &NotificationPlan{
		AudienceSize: size, SelectionBasis: aud, Channels: channels, MessagePreview: preview,
		SuppressedCount: suppressed, RateLimitPerHour: 500,
	}
	sent := size - suppressed
	prop.Changes = append(prop.Changes, FieldChange{TargetID: id, Field: "notification", From: nil, To: fmt.Sprintf("%d buyers via %s", sent, strings.Join(channels, ","))})
	// Each step rounded to float64 (the conversion forbids a fused
	// multiply-add), so the cost is the same bits on every architecture
	// and in the live database's derive_proposal.
	cents := float64(float64(sent)*perMessage) * 100
	prop.Impact = ProposalImpact{NotificationsSent: sent, EstimatedCostUSD: float64(int(float64(cents)+0.5)) / 100}
	if sent == 0 {
		prop.Validation.Warnings = append(prop.Validation.Warnings, "empty_audience")
	}
	return nil
}

// ExportItem is one valid item of a staged export: the version it was
// staged at and its current state.
type ExportItem struct {
	ItemID         string
	StagedVersion  int
	SaleID         string
	CurrentVersion int
}

// ExportFacts is the loaded state of a staged export.
type ExportFacts struct {
	Channel string
	Status  string
	Items   int // staged items
	Valid   int // items that pass the channel's checks
	Rows    []ExportItem
}

// BuildExportDelivery builds an export_delivery proposal, bound to the
// staged snapshot AND to every valid item at the version it was staged at:
// an item changed since staging makes the delivery stale.
func BuildExportDelivery(p Principal, prop *Proposal, e ExportFacts) error {
	prop.TargetKind = "export"
	id := prop.TargetIDs[0]
	for _, r := range e.Rows {
		if !p.MaySeeSale(r.SaleID) {
			return fmt.Errorf("export %s: item %s: %w", id, r.ItemID, ErrSaleAssignment)
		}
	}
	if !slices.Contains(ExportDeliverableStatuses(), e.Status) {
		return Because(ErrTransitionInvalid, "export %s is %s: only a staged export can be delivered", id, e.Status)
	}
	if e.Valid == 0 {
		return Because(ErrTransitionInvalid, "export %s has no item that passes %s's checks", id, e.Channel)
	}
	for _, r := range e.Rows {
		if r.CurrentVersion != r.StagedVersion {
			return staleOne(r.ItemID, r.StagedVersion, r.CurrentVersion)
		}
		prop.ExpectedVersions = append(prop.ExpectedVersions, TargetVersion{ID: r.ItemID, Version: r.StagedVersion})
		prop.SaleIDs = append(prop.SaleIDs, r.SaleID)
		prop.Changes = append(prop.Changes, FieldChange{TargetID: r.ItemID, Field: "external_listing." + e.Channel, From: nil, To: "listed"})
	}
	if e.Valid < e.Items {
		prop.Validation.Warnings = append(prop.Validation.Warnings, fmt.Sprintf("%d of %d staged items fail %s's checks and are not delivered", e.Items-e.Valid, e.Items, e.Channel))
	}
	prop.Changes = append(prop.Changes, FieldChange{TargetID: id, Field: "status", From: e.Status, To: ExportDelivered})
	prop.Impact = ProposalImpact{ExternalDeliveries: 1, PublicRecordsChanged: e.Valid}
	return nil
}

// DomainFunction names the P5/P6 domain function an execution of action
// reports (ExecutionResult.DomainFunction, §16): the registry's Operation,
// the one the tool's catalog mapping advertises; "" for an unknown action.
func DomainFunction(action string) string {
	a, _ := ActionOf(action)
	return a.Operation
}

// StringList reads a change's list of ids as a builder made it ([]string)
// or as it reads back from a stored proposal ([]any of strings); nil for
// anything else, so a change that is not a list of strings names nothing.
func StringList(v any) []string {
	switch l := v.(type) {
	case []string:
		return slices.Clone(l)
	case []any:
		out := make([]string, 0, len(l))
		for _, x := range l {
			s, ok := x.(string)
			if !ok {
				return nil
			}
			out = append(out, s)
		}
		return out
	}
	return nil
}
