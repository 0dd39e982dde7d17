package catalog

import (
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// ItemView is the projected item a tool returns. Every field but id is
// optional: a role sees only the fields its projection declares
// (itemFields), never the base-table row. A declared field is present when
// the item has a value for it; lists (photos, checkout actions, pricing
// history) are present, possibly empty, exactly when declared.
type ItemView struct {
	ID                         string            `json:"id"`
	SaleID                     *string           `json:"sale_id,omitempty"`
	Title                      *string           `json:"title,omitempty"`
	Description                *string           `json:"description,omitempty"`
	Category                   *string           `json:"category,omitempty"`
	Room                       *string           `json:"room,omitempty"`
	Status                     *string           `json:"status,omitempty"`
	Version                    *int              `json:"version,omitempty"`
	PriceCents                 *int64            `json:"price_cents,omitempty"`
	Photos                     []PhotoView       `json:"photos,omitzero"`
	PublicationReadiness       *Readiness        `json:"publication_readiness,omitempty"`
	InternalPriceGuidanceCents *int64            `json:"internal_price_guidance_cents,omitempty"`
	CostBasisCents             *int64            `json:"cost_basis_cents,omitempty"`
	AppraisalFlag              *bool             `json:"appraisal_flag,omitempty"`
	StaffNotes                 *string           `json:"staff_notes,omitempty"`
	PricingHistory             []PriceChangeView `json:"pricing_history,omitzero"`
	QRCode                     *string           `json:"qr_code,omitempty"`
	CheckoutActions            []string          `json:"checkout_actions,omitzero" jsonschema:"to_status values checkout may propose now with trove_propose_status_transition"`
	UpdatedAt                  *time.Time        `json:"updated_at,omitempty"`
}

// PhotoView is a projected photo (staff view: published or not).
type PhotoView struct {
	ID         string `json:"id"`
	StorageKey string `json:"storage_key"`
	Width      int    `json:"width"`
	Height     int    `json:"height"`
	Position   int    `json:"position"`
	Published  bool   `json:"published"`
}

// PriceChangeView is one entry of an item's internal pricing history.
type PriceChangeView struct {
	PriceCents                 *int64    `json:"price_cents"`
	InternalPriceGuidanceCents *int64    `json:"internal_price_guidance_cents"`
	Reason                     string    `json:"reason"`
	ActorID                    string    `json:"actor_id"`
	ChangedAt                  time.Time `json:"changed_at"`
}

// Readiness says whether an item could be proposed for publication.
type Readiness struct {
	Ready   bool     `json:"ready"`
	Missing []string `json:"missing"`
}

// Item projection fields: the JSON names of ItemView.
const (
	fSale            = "sale_id"
	fTitle           = "title"
	fDesc            = "description"
	fCategory        = "category"
	fRoom            = "room"
	fStatus          = "status"
	fVersion         = "version"
	fPrice           = "price_cents"
	fPhotos          = "photos"
	fReadiness       = "publication_readiness"
	fGuidance        = "internal_price_guidance_cents"
	fCostBasis       = "cost_basis_cents"
	fAppraisal       = "appraisal_flag"
	fNotes           = "staff_notes"
	fPricingHistory  = "pricing_history"
	fQR              = "qr_code"
	fCheckoutActions = "checkout_actions"
	fUpdated         = "updated_at"
)

// The field groups of §12.2. Cataloging is what a cataloger works with;
// pricing is internal (tag price, guidance, cost, appraisal, notes,
// history); checkout is what a tag scan needs: the sale it is on (the scope
// of checkout's work, which it filters by and status events show), the
// public title, the QR identity, the item's selling status and the status
// changes checkout may propose, with the version a proposal binds.
var (
	catalogingFields = []string{fSale, fTitle, fDesc, fCategory, fRoom, fStatus, fVersion, fPhotos, fReadiness, fUpdated}
	pricingFields    = []string{fPrice, fGuidance, fCostBasis, fAppraisal, fNotes, fPricingHistory}
	checkoutFields   = []string{fSale, fTitle, fStatus, fVersion, fQR, fCheckoutActions}
)

// itemFields is THE projection table: role → fields it may see (besides
// id). A field that is not listed for a role is never returned to it, and
// every tool that returns items (lists, gets, the disposition queue) applies
// it through projectItem.
var itemFields = map[string][]string{
	domain.RoleCataloger: catalogingFields,
	domain.RolePricer:    union(catalogingFields, pricingFields),
	domain.RoleCheckout:  checkoutFields,
	domain.RoleOwner:     union(catalogingFields, pricingFields, checkoutFields),
	domain.RoleManager:   union(catalogingFields, pricingFields, checkoutFields),
}

// union concatenates field groups, keeping the first of any repeat.
func union(groups ...[]string) []string {
	var out []string
	for _, g := range groups {
		for _, f := range g {
			if !slices.Contains(out, f) {
				out = append(out, f)
			}
		}
	}
	return out
}

// allItemFields is every field some role's projection declares.
var allItemFields = union(catalogingFields, pricingFields, checkoutFields)

// ChangeVisible reports whether role may see the values of a proposal
// change on field. It is the item projection applied to proposals, not a
// second list: a change to an item field (a promotion's "create_item.<f>"
// included) is visible exactly when itemFields declares that field for the
// role, so a cataloger sees a price change in a proposal no more than in
// trove_get_item. Other changes (a sale's visibility, a candidate's review
// status, a notification) name no item field and are visible to any role
// that may read the proposal. An unknown role sees no item field's values.
func ChangeVisible(role, field string) bool {
	f := strings.TrimPrefix(field, "create_item.")
	if !slices.Contains(allItemFields, f) {
		return true
	}
	return slices.Contains(itemFields[role], f)
}

// ChangeView is one change of a proposal as a role sees it: exact before
// and after values, or, for a field its role may not see (ChangeVisible),
// the target and field name only, marked redacted.
type ChangeView struct {
	TargetID string `json:"target_id"`
	Field    string `json:"field"`
	From     any    `json:"from,omitempty" jsonschema:"the value before (null when none); left out when redacted"`
	To       any    `json:"to,omitempty" jsonschema:"the value after; left out when redacted"`
	Redacted bool   `json:"redacted,omitempty" jsonschema:"true when your role may not see this field's values (as in trove_get_item): from and to are left out, and so is the proposal's hash"`
}

// MarshalJSON keeps from and to (null included) on a visible change and
// leaves both out of a redacted one.
func (c ChangeView) MarshalJSON() ([]byte, error) {
	if c.Redacted {
		return json.Marshal(struct {
			TargetID string `json:"target_id"`
			Field    string `json:"field"`
			Redacted bool   `json:"redacted"`
		}{c.TargetID, c.Field, true})
	}
	return json.Marshal(struct {
		TargetID string `json:"target_id"`
		Field    string `json:"field"`
		From     any    `json:"from"`
		To       any    `json:"to"`
	}{c.TargetID, c.Field, c.From, c.To})
}

// projectChanges applies ChangeVisible to each change of a proposal.
func projectChanges(role string, changes []domain.FieldChange) []ChangeView {
	out := make([]ChangeView, 0, len(changes))
	for _, c := range changes {
		if ChangeVisible(role, c.Field) {
			out = append(out, ChangeView{TargetID: c.TargetID, Field: c.Field, From: c.From, To: c.To})
			continue
		}
		out = append(out, ChangeView{TargetID: c.TargetID, Field: c.Field, Redacted: true})
	}
	return out
}

// ItemFieldsFor returns the projection of a role (nil for an unknown role).
func ItemFieldsFor(role string) []string { return slices.Clone(itemFields[role]) }

// itemIncludes tells the Backend which extras a role's projection needs, so
// a role's read never even loads what it may not see.
func itemIncludes(role string) domain.ItemIncludes {
	f := itemFields[role]
	return domain.ItemIncludes{
		Photos:       slices.Contains(f, fPhotos) || slices.Contains(f, fReadiness),
		PriceHistory: slices.Contains(f, fPricingHistory),
	}
}

// projectItem applies the role's projection to it.
func projectItem(role string, it domain.ItemDetail) ItemView {
	v := ItemView{ID: it.ID}
	for _, f := range itemFields[role] {
		switch f {
		case fSale:
			v.SaleID = ptr(it.SaleID)
		case fTitle:
			v.Title = ptr(it.Title)
		case fDesc:
			v.Description = ptr(it.Description)
		case fCategory:
			v.Category = ptr(it.Category)
		case fRoom:
			v.Room = ptr(it.Room)
		case fStatus:
			v.Status = ptr(it.Status)
		case fVersion:
			v.Version = ptr(it.Version)
		case fPrice:
			v.PriceCents = it.PriceCents
		case fPhotos:
			v.Photos = make([]PhotoView, 0, len(it.Photos))
			for _, p := range it.Photos {
				v.Photos = append(v.Photos, PhotoView{ID: p.ID, StorageKey: p.StorageKey, Width: p.Width, Height: p.Height, Position: p.Position, Published: p.Published})
			}
		case fReadiness:
			v.PublicationReadiness = ptr(readiness(it.Item))
		case fGuidance:
			v.InternalPriceGuidanceCents = it.InternalPriceGuidanceCents
		case fCostBasis:
			v.CostBasisCents = it.CostBasisCents
		case fAppraisal:
			v.AppraisalFlag = ptr(it.AppraisalFlag)
		case fNotes:
			v.StaffNotes = ptr(it.StaffNotes)
		case fPricingHistory:
			v.PricingHistory = make([]PriceChangeView, 0, len(it.PriceHistory))
			for _, pc := range it.PriceHistory {
				v.PricingHistory = append(v.PricingHistory, PriceChangeView{PriceCents: pc.PriceCents,
					InternalPriceGuidanceCents: pc.InternalPriceGuidanceCents, Reason: pc.Reason, ActorID: pc.ActorID, ChangedAt: pc.ChangedAt})
			}
		case fQR:
			if it.QRCode != "" { // an untagged item has no QR identity, not an empty one
				v.QRCode = ptr(it.QRCode)
			}
		case fCheckoutActions:
			v.CheckoutActions = domain.CheckoutActionsFor(it.Status)
		case fUpdated:
			v.UpdatedAt = ptr(it.UpdatedAt)
		}
	}
	return v
}

// ItemSummary is an item as a list returns it (issue 18: answers sized for
// a model): what a model needs to choose an item and act on it, its
// version included, and no description, photos or pricing internals;
// trove_get_item has the detail. It is cut from the role's projection
// (summarizeItem), so a list shows a role no field its projection hides.
type ItemSummary struct {
	ID              string   `json:"id"`
	SaleID          *string  `json:"sale_id,omitempty"`
	Title           *string  `json:"title,omitempty"`
	Category        *string  `json:"category,omitempty"`
	Room            *string  `json:"room,omitempty"`
	Status          *string  `json:"status,omitempty"`
	Version         *int     `json:"version,omitempty"`
	PriceCents      *int64   `json:"price_cents,omitempty"`
	PhotoCount      *int     `json:"photo_count,omitempty" jsonschema:"the item's photos, published or not"`
	Ready           *bool    `json:"ready,omitempty" jsonschema:"whether it could be proposed for publication (trove_get_item says what is missing)"`
	QRCode          *string  `json:"qr_code,omitempty"`
	CheckoutActions []string `json:"checkout_actions,omitzero" jsonschema:"to_status values checkout may propose now with trove_propose_status_transition"`
}

// summarizeItem is the role's projection of it, cut to a list row.
func summarizeItem(role string, it domain.ItemDetail) ItemSummary {
	v := projectItem(role, it)
	s := ItemSummary{ID: v.ID, SaleID: v.SaleID, Title: v.Title, Category: v.Category, Room: v.Room, Status: v.Status,
		Version: v.Version, PriceCents: v.PriceCents, QRCode: v.QRCode, CheckoutActions: v.CheckoutActions}
	// The photos tallied (summaryIncludes), or read: a row shows how many
	// and whether the item is ready, where the projection shows them.
	t := domain.TallyPhotos(it.Photos)
	if it.PhotoTally != nil {
		t = *it.PhotoTally
	}
	if v.Photos != nil {
		s.PhotoCount = ptr(t.Count)
	}
	if v.PublicationReadiness != nil {
		s.Ready = ptr(len(domain.TalliedReadiness(it.Item, t)) == 0)
	}
	return s
}

// filtersReadable refuses a filter (field, value) on an item field the
// role's projection hides: a filter answers "which items have this value",
// which is reading the field (found by the attack review: checkout, which
// sees no room, listed the items of each room by filtering on it).
func filtersReadable(role string, filters ...[2]string) error {
	for _, f := range filters {
		if f[1] != "" && !slices.Contains(itemFields[role], f[0]) {
			return domain.Invalid(f[0], "your role may not read this field of an item, so it may not filter by it")
		}
	}
	return nil
}

// summaryIncludes is what a list row needs loaded: the photos where the
// role's projection counts them or checks readiness, never the pricing
// history.
func summaryIncludes(role string) domain.ItemIncludes {
	inc := itemIncludes(role)
	inc.PriceHistory = false
	// A row shows how many photos and whether one is approved: counted,
	// not read.
	inc.PhotoTally, inc.Photos = inc.Photos, false
	return inc
}

// readiness is the cataloger-visible publication checklist: the domain's
// rule (domain.PublicationReadiness), the one a publication proposal is
// held to.
func readiness(it domain.Item) Readiness {
	return readinessOf(domain.PublicationReadiness(it))
}

func readinessOf(missing []string) Readiness {
	if missing == nil {
		missing = []string{}
	}
	return Readiness{Ready: len(missing) == 0, Missing: missing}
}

func ptr[T any](v T) *T { return &v }
