package store

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// `trovesnap sale create|list` in mock mode: the same rules and refusals
// as the live seller_create_sale and seller_list_sales.

func hasSale(sales []domain.Sale, id string) bool {
	return slices.ContainsFunc(sales, func(s domain.Sale) bool { return s.ID == id })
}

func wantSaleRefusal(t *testing.T, what string, err, sentinel error, reason string) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Fatalf("%s: %v, want %v", what, err, sentinel)
	}
	var re *domain.ReasonError
	var ie *domain.InputError
	switch {
	case errors.As(err, &re):
		if re.Reason != reason {
			t.Fatalf("%s: reason %q, want %q", what, re.Reason, reason)
		}
	case errors.As(err, &ie):
		if ie.Field != reason {
			t.Fatalf("%s: field %q, want %q", what, ie.Field, reason)
		}
	case reason != "":
		t.Fatalf("%s: %v names nothing, want %q", what, err, reason)
	}
}

func TestCreateSale_OwnerCreatesADraftTheTenantsClientSees(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	starts, ends := at(60*24*time.Hour), at(63*24*time.Hour)
	sl, err := s.CreateSale(ctx, domain.NewSale{TenantID: tenantA, ActorID: userAlice, Name: " Elm\u200b Court ",
		City: "Eugene", Region: "OR", StartsAt: starts, EndsAt: ends})
	if err != nil {
		t.Fatal(err)
	}
	if !domain.ValidID(domain.PrefixSale, sl.ID) || sl.TenantID != tenantA || sl.Title != "Elm Court" || sl.Version != 1 ||
		sl.Status != domain.NewSaleStatus || sl.Visibility != domain.NewSaleVisibility || sl.AddressPolicy != domain.NewSaleAddressPolicy ||
		!sl.StartsAt.Equal(starts) || !sl.EndsAt.Equal(ends) || !sl.CreatedAt.Equal(epoch) {
		t.Fatalf("created %+v", sl)
	}
	list, err := s.ListSalesAs(ctx, tenantA, userCarol) // a pricer reads sales
	if err != nil || !hasSale(list, sl.ID) || len(list) != 3 {
		t.Fatalf("the pricer lists %+v, %v", list, err)
	}
	page, err := s.ListSales(ctx, principal(t, s, ""), domain.SaleQuery{Limit: domain.MaxPageSize})
	if err != nil || !hasSale(page.Rows, sl.ID) {
		t.Fatalf("the tenant's client lists %+v, %v", page.Rows, err)
	}
	page, err = s.ListSales(ctx, principal(t, s, credB), domain.SaleQuery{Limit: domain.MaxPageSize})
	if err != nil || hasSale(page.Rows, sl.ID) || len(page.Rows) != 1 {
		t.Fatalf("another tenant's client lists %+v, %v", page.Rows, err)
	}
	if list, err := s.ListSalesAs(ctx, tenantB, userBob); err != nil || hasSale(list, sl.ID) {
		t.Fatalf("another tenant's manager lists %+v, %v", list, err)
	}
	_, err = s.ListSalesAs(ctx, tenantA, userBob)
	wantSaleRefusal(t, "another tenant's manager lists tenant A", err, domain.ErrPermissionDenied, "tenant_id")

	var actor, role, perm string
	if err := s.r.QueryRow(`SELECT body ->> '$.actor.id', body ->> '$.actor.role', body ->> '$.permissions[0]' FROM plugin_events
		WHERE tenant_id = ? AND body ->> '$.action' = 'sale_created' AND body ->> '$.payload.redacted_summary.sale_id' = ?`,
		tenantA, sl.ID).Scan(&actor, &role, &perm); err != nil {
		t.Fatalf("sale_created event: %v", err)
	}
	if actor != userAlice || role != domain.RoleOwner || perm != domain.PermSaleCreate {
		t.Fatalf("sale_created by %s (%s) with %s", actor, role, perm)
	}
}

func TestCreateSale_RefusalsWriteNothing(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	good := domain.NewSale{TenantID: tenantA, ActorID: userAlice, Name: "Elm Court", StartsAt: at(time.Hour), EndsAt: at(49 * time.Hour)}
	before := mustDigest(t, s)
	for _, c := range []struct {
		what     string
		mod      func(*domain.NewSale)
		sentinel error
		reason   string
	}{
		{"a non-member", func(n *domain.NewSale) { n.ActorID = userBob }, domain.ErrPermissionDenied, "tenant_id"},
		{"an unknown tenant", func(n *domain.NewSale) { n.TenantID = "tenant_zz" }, domain.ErrPermissionDenied, "tenant_id"},
		{"a pricer", func(n *domain.NewSale) { n.ActorID = userCarol }, domain.ErrPermissionDenied, domain.PermSaleCreate},
		{"an empty name", func(n *domain.NewSale) { n.Name = " \u200b\t" }, domain.ErrInvalidInput, "name"},
		{"a name too long", func(n *domain.NewSale) { n.Name = strings.Repeat("é", domain.MaxSaleTextLen+1) }, domain.ErrInvalidInput, "name"},
		{"a street too long", func(n *domain.NewSale) { n.StreetAddress = strings.Repeat("x", domain.MaxSaleTextLen+1) }, domain.ErrInvalidInput, "street_address"},
		{"no start", func(n *domain.NewSale) { n.StartsAt = time.Time{} }, domain.ErrInvalidInput, "starts_at"},
		{"an end before the start", func(n *domain.NewSale) { n.EndsAt = n.StartsAt.Add(-time.Second) }, domain.ErrInvalidInput, "ends_at"},
	} {
		in := good
		c.mod(&in)
		_, err := s.CreateSale(ctx, in)
		wantSaleRefusal(t, c.what, err, c.sentinel, c.reason)
	}
	if after := mustDigest(t, s); !maps.Equal(before, after) {
		t.Fatal("a refused creation changed the store")
	}
}

// A sale-scoped member lists only its assigned sales and creates none,
// even with a role that holds sale.create: it could not see the sale.
func TestCreateSale_ScopedMemberListsOnlyAssignedSalesAndCreatesNone(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	for _, q := range []string{"UPDATE memberships SET sale_scoped = 1 WHERE id = 'membership_a1'",
		"INSERT INTO membership_sales (membership_id, tenant_id, sale_id) VALUES ('membership_a1', 'tenant_a', 'sale_a1')"} {
		if _, err := s.w.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	list, err := s.ListSalesAs(ctx, tenantA, userAlice)
	if err != nil || len(list) != 1 || list[0].ID != saleA1 {
		t.Fatalf("the scoped owner lists %+v, %v", list, err)
	}
	before := mustDigest(t, s)
	_, err = s.CreateSale(ctx, domain.NewSale{TenantID: tenantA, ActorID: userAlice, Name: "Elm Court", StartsAt: at(0), EndsAt: at(time.Hour)})
	wantSaleRefusal(t, "the scoped owner creates", err, domain.ErrSaleAssignment, "")
	if after := mustDigest(t, s); !maps.Equal(before, after) {
		t.Fatal("a refused creation changed the store")
	}
}
