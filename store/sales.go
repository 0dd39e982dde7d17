package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// The seller surface creates and lists sales (`trovesnap sale create|list`
// in mock mode); no MCP tool does.
var _ domain.SaleAdmin = (*Store)(nil)

// sellerIn is the membership of actorID in tenantID, refused as the live
// seller RPCs refuse it (seller_enter): no membership — or no such tenant,
// alike — is permission_denied:tenant_id; a role without perm is
// permission_denied:<perm>. The principal carries the sale scope.
func (s *Store) sellerIn(ctx context.Context, tx *sql.Tx, tenantID, actorID, perm string) (domain.Principal, error) {
	p := domain.Principal{TenantID: tenantID, ActorID: actorID, ActorType: "seller"}
	err := tx.QueryRowContext(ctx, "SELECT id, role FROM memberships WHERE tenant_id = ? AND user_id = ?", tenantID, actorID).
		Scan(&p.MembershipID, &p.Role)
	if errors.Is(err, sql.ErrNoRows) || tenantID == "" || actorID == "" {
		return p, domain.Because(domain.ErrPermissionDenied, "tenant_id")
	}
	if err != nil {
		return p, s.dbErr("seller membership", err)
	}
	if !p.Has(perm) {
		return p, domain.Because(domain.ErrPermissionDenied, "%s", perm)
	}
	return p, s.loadSaleScope(ctx, tx, &p)
}

// CreateSale creates a draft sale of in.TenantID for in.ActorID, who must
// hold sale.create and not be sale-scoped (it could not see the sale
// afterwards), and records sale_created. Every call creates a new sale.
func (s *Store) CreateSale(ctx context.Context, in domain.NewSale) (domain.Sale, error) {
	in = in.Clean()
	var out domain.Sale
	err := s.withTx(ctx, func(tx *sql.Tx) error {
		p, err := s.sellerIn(ctx, tx, in.TenantID, in.ActorID, domain.PermSaleCreate)
		if err != nil {
			return err
		}
		if p.SaleScoped {
			return fmt.Errorf("%s creates a sale: %w", in.ActorID, domain.ErrSaleAssignment)
		}
		if err := domain.ValidateNewSale(in); err != nil {
			return err
		}
		now := s.clock.Now()
		id := s.ids.New(domain.PrefixSale)
		if _, err := tx.ExecContext(ctx, `INSERT INTO estate_sales (id, tenant_id, title, status, visibility, city, region, postal_code,
			street_address, address_policy, address_reveal_at, starts_at, ends_at, version, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, 1, ?, ?)`,
			id, in.TenantID, in.Name, domain.NewSaleStatus, domain.NewSaleVisibility, in.City, in.Region, in.PostalCode,
			in.StreetAddress, domain.NewSaleAddressPolicy, ts(in.StartsAt), ts(in.EndsAt), ts(now), ts(now)); err != nil {
			return s.dbErr("create sale", err)
		}
		if out, err = scanSale(tx.QueryRowContext(ctx, "SELECT "+saleCols+" FROM estate_sales WHERE id = ?", id)); err != nil {
			return s.dbErr("create sale: read back", err)
		}
		ev := domain.Event{
			ID: s.ids.New(domain.PrefixEvent), TenantID: in.TenantID, CorrelationID: s.ids.New(domain.PrefixCorr), Mode: s.mode,
			Plugin:     domain.PluginRef{Type: "mcp", ID: "trovesnap", Version: "cli"},
			Actor:      domain.ActorRef{ID: in.ActorID, Type: "seller", Role: p.Role},
			Action:     "sale_created",
			Outcome:    domain.OutcomeSuccess,
			Payload:    domain.EventPayload{RedactedSummary: map[string]string{"sale_id": id}},
			Approval:   domain.EventApproval{Decision: "not_required"},
			Impact:     domain.EventImpact{Type: "sale_created", Material: true, CanonicalStateChanged: true},
			OccurredAt: now,
		}
		if err := s.completeSellerEvent(ctx, tx, &ev, "inventory", domain.PermSaleCreate); err != nil {
			return err
		}
		return s.insertEvent(ctx, tx, ev)
	})
	if err != nil {
		return domain.Sale{}, err
	}
	return out, nil
}

// maxSellerSales bounds `sale list`, as seller_list_sales does.
const maxSellerSales = 500

// ListSalesAs lists the sales of tenantID that actorID (sale.read) may
// see, by (starts_at, id): a sale-scoped member only its assigned ones.
func (s *Store) ListSalesAs(ctx context.Context, tenantID, actorID string) ([]domain.Sale, error) {
	out := []domain.Sale{}
	err := s.withRead(ctx, func(tx *sql.Tx) error {
		p, err := s.sellerIn(ctx, tx, tenantID, actorID, domain.PermSaleRead)
		if err != nil {
			return err
		}
		var w where
		w.add("tenant_id = ?", tenantID)
		w.assignedSales("id", p)
		rows, err := collect(s, "list sales", scanSale)(tx.QueryContext(ctx, "SELECT "+saleCols+" FROM estate_sales"+w.sql()+
			" ORDER BY starts_at, id LIMIT ?", append(w.args, maxSellerSales)...))
		if err != nil {
			return err
		}
		out = append(out, rows...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
