package catalog

import (
	"time"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// ItemView is the projected item a tool returns. Every field is optional: a
// role sees only the fields its projection declares (itemFields), never the
// base-table row.
type ItemView struct {
	ID                         string      `json:"id"`
	SaleID                     *string     `json:"sale_id,omitempty"`
	Title                      *string     `json:"title,omitempty"`
	Description                *string     `json:"description,omitempty"`
	Category                   *string     `json:"category,omitempty"`
	Room                       *string     `json:"room,omitempty"`
	Status                     *string     `json:"status,omitempty"`
	Version                    *int        `json:"version,omitempty"`
	PriceCents                 *int64      `json:"price_cents,omitempty"`
	Photos                     []PhotoView `json:"photos,omitempty"`
	PublicationReadiness       *Readiness  `json:"publication_readiness,omitempty"`
	InternalPriceGuidanceCents *int64      `json:"internal_price_guidance_cents,omitempty"`
	CostBasisCents             *int64      `json:"cost_basis_cents,omitempty"`
	AppraisalFlag              *bool       `json:"appraisal_flag,omitempty"`
	StaffNotes                 *string     `json:"staff_notes,omitempty"`
	QRCode                     *string     `json:"qr_code,omitempty"`
	UpdatedAt                  *time.Time  `json:"updated_at,omitempty"`
}

// PhotoView is a projected photo.
type PhotoView struct {
	ID         string `json:"id"`
	StorageKey string `json:"storage_key"`
	Width      int    `json:"width"`
	Height     int    `json:"height"`
	Position   int    `json:"position"`
	Published  bool   `json:"published"`
}

// Readiness says whether an item could be proposed for publication.
type Readiness struct {
	Ready   bool     `json:"ready"`
	Missing []string `json:"missing"`
}

// Item projection fields.
const (
	fSale      = "sale_id"
	fTitle     = "title"
	fDesc      = "description"
	fCategory  = "category"
	fRoom      = "room"
	fStatus    = "status"
	fVersion   = "version"
	fPrice     = "price_cents"
	fPhotos    = "photos"
	fReadiness = "publication_readiness"
	fGuidance  = "internal_price_guidance_cents"
	fCostBasis = "cost_basis_cents"
	fAppraisal = "appraisal_flag"
	fNotes     = "staff_notes"
	fQR        = "qr_code"
	fUpdated   = "updated_at"
)

// itemFields is THE projection table: role → fields it may see (besides id).
// A field that is not listed for a role is never returned to it.
var itemFields = map[string][]string{
	domain.RoleCataloger: {fSale, fTitle, fDesc, fCategory, fRoom, fStatus, fVersion, fPhotos, fReadiness, fUpdated},
	domain.RolePricer: {fSale, fTitle, fDesc, fCategory, fRoom, fStatus, fVersion, fPhotos, fReadiness, fUpdated,
		fPrice, fGuidance, fCostBasis, fAppraisal, fNotes},
	domain.RoleCheckout: {fSale, fTitle, fStatus, fVersion, fPrice, fQR},
	domain.RoleOwner: {fSale, fTitle, fDesc, fCategory, fRoom, fStatus, fVersion, fPhotos, fReadiness, fUpdated,
		fPrice, fGuidance, fCostBasis, fAppraisal, fNotes, fQR},
	domain.RoleManager: {fSale, fTitle, fDesc, fCategory, fRoom, fStatus, fVersion, fPhotos, fReadiness, fUpdated,
		fPrice, fGuidance, fCostBasis, fAppraisal, fNotes, fQR},
}

// ItemFieldsFor returns the projection of a role (nil for an unknown role).
func ItemFieldsFor(role string) []string { return itemFields[role] }

// projectItem applies the role's projection to it.
func projectItem(role string, it domain.Item) ItemView {
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
			v.PublicationReadiness = ptr(readiness(it))
		case fGuidance:
			v.InternalPriceGuidanceCents = it.InternalPriceGuidanceCents
		case fCostBasis:
			v.CostBasisCents = it.CostBasisCents
		case fAppraisal:
			v.AppraisalFlag = ptr(it.AppraisalFlag)
		case fNotes:
			v.StaffNotes = ptr(it.StaffNotes)
		case fQR:
			v.QRCode = ptr(it.QRCode)
		case fUpdated:
			v.UpdatedAt = ptr(it.UpdatedAt)
		}
	}
	return v
}

// readiness is the cataloger-visible publication checklist.
func readiness(it domain.Item) Readiness {
	r := Readiness{Missing: []string{}}
	if it.Title == "" {
		r.Missing = append(r.Missing, "title")
	}
	if it.Category == "" {
		r.Missing = append(r.Missing, "category")
	}
	if it.PriceCents == nil {
		r.Missing = append(r.Missing, "price")
	}
	published := false
	for _, p := range it.Photos {
		published = published || p.Published
	}
	if !published {
		r.Missing = append(r.Missing, "approved_photo")
	}
	r.Ready = len(r.Missing) == 0
	return r
}

func ptr[T any](v T) *T { return &v }
