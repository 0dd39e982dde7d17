package live

import (
	"context"
	"time"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// The seller surface creates and lists sales (`trovesnap sale create|list`
// in live mode), through seller_create_sale and seller_list_sales.
var _ domain.SaleAdmin = (*Seller)(nil)

// CreateSale creates a draft sale in in.TenantID ("" = the signed-in
// user's only tenant). in.ActorID is not sent: the RPC acts as the user of
// the session's JWT and checks that user's membership and sale.create.
// The sale is cleaned and validated here first, as the store does; the
// RPC checks the same again.
func (s *Seller) CreateSale(ctx context.Context, in domain.NewSale) (domain.Sale, error) {
	in = in.Clean()
	if err := domain.ValidateNewSale(in); err != nil {
		return domain.Sale{}, err
	}
	var out domain.Sale
	err := s.call(ctx, "seller_create_sale", map[string]any{
		"p_tenant_id":      in.TenantID,
		"p_name":           in.Name,
		"p_starts_at":      in.StartsAt.UTC().Format(time.RFC3339Nano),
		"p_ends_at":        in.EndsAt.UTC().Format(time.RFC3339Nano),
		"p_city":           in.City,
		"p_region":         in.Region,
		"p_postal_code":    in.PostalCode,
		"p_street_address": in.StreetAddress,
	}, &out)
	if err != nil {
		return domain.Sale{}, err
	}
	return out, nil
}

// ListSalesAs lists the sales of tenantID ("" = the signed-in user's only
// tenant) the signed-in user may see. actorID is not sent: the session's
// user is the only one it may be.
func (s *Seller) ListSalesAs(ctx context.Context, tenantID, _ string) ([]domain.Sale, error) {
	out := []domain.Sale{}
	if err := s.call(ctx, "seller_list_sales", map[string]any{"p_tenant_id": tenantID}, &out); err != nil {
		return nil, err
	}
	if out == nil {
		out = []domain.Sale{}
	}
	return out, nil
}
