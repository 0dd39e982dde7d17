package domain

import (
	"context"
	"fmt"
	"time"
)

// A new estate sale starts where the sale lifecycle starts (draft →
// published → live → closed → archived): a private draft whose street
// address is never shown until the seller sets a reveal. Publishing it is
// a controlled action (ActionPublishSale), never part of creating it. The
// store and the live RPC seller_create_sale (through the generated
// lookups) read these; no other place names them.
const (
	NewSaleStatus        = SaleDraft
	NewSaleVisibility    = VisibilityPrivate
	NewSaleAddressPolicy = AddressNever
)

// MaxSaleTextLen bounds each text field of a new sale (its name, city,
// region, postal code and street address), in characters.
const MaxSaleTextLen = 200

// NewSale is what `trovesnap sale create` asks for. ActorID is the seller
// creating it: a member of TenantID whose role grants PermSaleCreate. In
// live mode the RPC takes tenant and actor from the signed-in session,
// never from the request.
type NewSale struct {
	TenantID      string
	ActorID       string
	Name          string
	City          string
	Region        string
	PostalCode    string
	StreetAddress string
	StartsAt      time.Time
	EndsAt        time.Time
}

// Clean normalises the text of a new sale the way imported text is
// (CleanLine): what is stored is what a reader sees.
func (in NewSale) Clean() NewSale {
	in.Name, in.City, in.Region = CleanLine(in.Name), CleanLine(in.City), CleanLine(in.Region)
	in.PostalCode, in.StreetAddress = CleanLine(in.PostalCode), CleanLine(in.StreetAddress)
	return in
}

// ValidateNewSale checks a cleaned new sale: a name, every text within
// MaxSaleTextLen, both dates, and the sale not ending before it starts.
// The live RPC checks the same, in the same order, with the same fields.
func ValidateNewSale(in NewSale) error {
	if in.Name == "" || RuneLen(in.Name) > MaxSaleTextLen {
		return Invalid("name", fmt.Sprintf("required, at most %d characters", MaxSaleTextLen))
	}
	for _, f := range []struct{ field, v string }{
		{"city", in.City}, {"region", in.Region}, {"postal_code", in.PostalCode}, {"street_address", in.StreetAddress},
	} {
		if RuneLen(f.v) > MaxSaleTextLen {
			return Invalid(f.field, fmt.Sprintf("at most %d characters", MaxSaleTextLen))
		}
	}
	switch {
	case in.StartsAt.IsZero():
		return Invalid("starts_at", "required")
	case in.EndsAt.IsZero():
		return Invalid("ends_at", "required")
	case in.EndsAt.Before(in.StartsAt):
		return Invalid("ends_at", "must not be before starts_at")
	}
	return nil
}

// SaleAdmin is the seller-side creation and listing of sales (`trovesnap
// sale create|list`); no MCP tool uses it. ListSalesAs lists the sales of
// tenantID that actorID may see: all of them for an unscoped member, only
// its assigned ones for a sale-scoped member (§4.3).
type SaleAdmin interface {
	CreateSale(ctx context.Context, in NewSale) (Sale, error)
	ListSalesAs(ctx context.Context, tenantID, actorID string) ([]Sale, error)
}
