package live_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/contract"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/live/pgtest"
)

// `trovesnap sale create|list` in live mode: seller_create_sale and
// seller_list_sales under the signed-in user's JWT.

var (
	saleStarts = time.Date(2026, 12, 10, 9, 0, 0, 0, time.UTC)
	saleEnds   = time.Date(2026, 12, 13, 17, 0, 0, 0, time.UTC)
)

func hasSale(sales []domain.Sale, id string) bool {
	return slices.ContainsFunc(sales, func(s domain.Sale) bool { return s.ID == id })
}

// wantReason asserts a refusal's sentinel and the field or permission it
// names (the reason of a permission refusal, the field of an invalid input).
func wantReason(t *testing.T, what string, err, sentinel error, reason string) {
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

// An owner creates a sale: a private draft that hides its address, with a
// domain id; the seller list and an MCP client of the tenant see it,
// another tenant's owner and client never do, and sale_created records it.
func TestSellerSales_OwnerCreatesADraftTheTenantsClientSees(t *testing.T) {
	env := seeded(t)
	owner := sellerAs(t, env, fixtures.DemoUserID)
	sl, err := owner.CreateSale(ctx, domain.NewSale{TenantID: fixtures.DemoTenantID, Name: "  Maple Street\testate ",
		City: "Portland", Region: "OR", StreetAddress: "12 Maple St", StartsAt: saleStarts, EndsAt: saleEnds})
	if err != nil {
		t.Fatal(err)
	}
	if !domain.ValidID(domain.PrefixSale, sl.ID) || sl.TenantID != fixtures.DemoTenantID || sl.Title != "Maple Street estate" ||
		sl.Status != domain.NewSaleStatus || sl.Visibility != domain.NewSaleVisibility || sl.AddressPolicy != domain.NewSaleAddressPolicy ||
		sl.Version != 1 || !sl.StartsAt.Equal(saleStarts) || !sl.EndsAt.Equal(saleEnds) || sl.City != "Portland" {
		t.Fatalf("created %+v", sl)
	}
	list, err := owner.ListSalesAs(ctx, "", "") // the owner's only tenant
	if err != nil || !hasSale(list, sl.ID) {
		t.Fatalf("owner lists %d sales, %v", len(list), err)
	}

	b := newBackend(t, env)
	p, err := b.ResolvePrincipal(ctx, contract.CredOwner)
	if err != nil {
		t.Fatal(err)
	}
	page, err := b.ListSales(ctx, p, domain.SaleQuery{Limit: domain.MaxPageSize})
	if err != nil || !hasSale(page.Rows, sl.ID) {
		t.Fatalf("the tenant's client lists %+v, %v", page.Rows, err)
	}
	if got, err := b.GetSale(ctx, p, sl.ID); err != nil || got.Title != sl.Title {
		t.Fatalf("the tenant's client reads %+v, %v", got, err)
	}
	po, err := b.ResolvePrincipal(ctx, contract.CredOther)
	if err != nil {
		t.Fatal(err)
	}
	if page, err := b.ListSales(ctx, po, domain.SaleQuery{Limit: domain.MaxPageSize}); err != nil || hasSale(page.Rows, sl.ID) {
		t.Fatalf("another tenant's client lists %+v, %v", page.Rows, err)
	}
	other := sellerAs(t, env, fixtures.OtherOwnerUserID)
	if list, err := other.ListSalesAs(ctx, fixtures.OtherTenantID, ""); err != nil || hasSale(list, sl.ID) || len(list) == 0 {
		t.Fatalf("another tenant's owner lists %+v, %v", list, err)
	}
	_, err = other.ListSalesAs(ctx, fixtures.DemoTenantID, "")
	wantReason(t, "another tenant's owner lists the demo tenant", err, domain.ErrPermissionDenied, "tenant_id")

	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var actor, role, perm string
	if err := conn.QueryRow(ctx, `SELECT body -> 'actor' ->> 'id', body -> 'actor' ->> 'role', body -> 'permissions' ->> 0
		FROM trovesnap.plugin_events WHERE tenant_id = $1 AND body ->> 'action' = 'sale_created'
		  AND body -> 'payload' -> 'redacted_summary' ->> 'sale_id' = $2`, fixtures.DemoTenantID, sl.ID).Scan(&actor, &role, &perm); err != nil {
		t.Fatalf("sale_created event: %v", err)
	}
	if actor != fixtures.DemoUserID || role != domain.RoleOwner || perm != domain.PermSaleCreate {
		t.Fatalf("sale_created by %s (%s) with %s", actor, role, perm)
	}
}

// A manager holds sale.create too; every refusal leaves every table as it
// was: a non-member, a role without sale.create, and — sent past the
// CLI's own checks, straight to the RPC — an empty name and an end before
// the start.
func TestSellerSales_RefusalsWriteNothing(t *testing.T) {
	env := seeded(t)
	if _, err := sellerAs(t, env, fixtures.ManagerUserID).CreateSale(ctx, domain.NewSale{TenantID: fixtures.DemoTenantID,
		Name: "Manager's sale", StartsAt: saleStarts, EndsAt: saleStarts}); err != nil {
		t.Fatalf("a manager creates a one-instant sale: %v", err)
	}
	before := scSnapshot(t, env)
	good := domain.NewSale{TenantID: fixtures.DemoTenantID, Name: "Elm Court", StartsAt: saleStarts, EndsAt: saleEnds}
	_, err := sellerAs(t, env, fixtures.OtherOwnerUserID).CreateSale(ctx, good)
	wantReason(t, "non-member", err, domain.ErrPermissionDenied, "tenant_id")
	for _, user := range []string{fixtures.CatalogerUserID, fixtures.PricerUserID, fixtures.CheckoutUserID, fixtures.ScopedCatalogerUserID} {
		_, err = sellerAs(t, env, user).CreateSale(ctx, good)
		wantReason(t, user, err, domain.ErrPermissionDenied, domain.PermSaleCreate)
	}
	owner := sellerAs(t, env, fixtures.DemoUserID)
	bad := good
	bad.EndsAt = saleStarts.Add(-time.Second)
	_, err = owner.CreateSale(ctx, bad)
	wantReason(t, "ends before starts (Go)", err, domain.ErrInvalidInput, "ends_at")
	bad = good
	bad.Name = " \t "
	_, err = owner.CreateSale(ctx, bad)
	wantReason(t, "empty name (Go)", err, domain.ErrInvalidInput, "name")

	tok := env.Endpoint.UserToken(pgtest.AuthSubject(fixtures.DemoUserID), time.Hour)
	args := func(name, starts, ends string) map[string]any {
		return map[string]any{"p_tenant_id": fixtures.DemoTenantID, "p_name": name, "p_starts_at": starts, "p_ends_at": ends}
	}
	rfc := func(t time.Time) string { return t.Format(time.RFC3339) }
	for _, c := range []struct {
		what string
		args map[string]any
		want string
	}{
		{"ends before starts", args("Elm Court", rfc(saleEnds), rfc(saleStarts)), "trovesnap:invalid_input:ends_at"},
		{"empty name", args("   ", rfc(saleStarts), rfc(saleEnds)), "trovesnap:invalid_input:name"},
		{"no start", args("Elm Court", "", rfc(saleEnds)), "trovesnap:invalid_input:starts_at"},
		{"a start that is no time", args("Elm Court", "next thursday", rfc(saleEnds)), "trovesnap:invalid_input:starts_at"},
		{"a control character", args("Elm\x1bCourt", rfc(saleStarts), rfc(saleEnds)), "trovesnap:invalid_input:name"},
		{"a name too long", args(strings.Repeat("é", domain.MaxSaleTextLen+1), rfc(saleStarts), rfc(saleEnds)), "trovesnap:invalid_input:name"},
	} {
		status, raw := rpcAs(t, env, tok, "seller_create_sale", c.args)
		var e struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal(raw, &e)
		if status < 400 || e.Message != c.want {
			t.Errorf("%s: HTTP %d %s, want %s", c.what, status, raw, c.want)
		}
	}
	scSnapshot(t, env).same(t, "refused creations", before)
}

// A sale-scoped member lists only its assigned sales, never a new one,
// and creates none, even with a role that holds sale.create: it could not
// see the sale it made.
func TestSellerSales_ScopedMemberListsOnlyItsAssignedSales(t *testing.T) {
	env := seeded(t)
	sl, err := sellerAs(t, env, fixtures.DemoUserID).CreateSale(ctx, domain.NewSale{TenantID: fixtures.DemoTenantID,
		Name: "Birch Lane", StartsAt: saleStarts, EndsAt: saleEnds})
	if err != nil {
		t.Fatal(err)
	}
	list, err := sellerAs(t, env, fixtures.ScopedCatalogerUserID).ListSalesAs(ctx, fixtures.DemoTenantID, "")
	if err != nil || len(list) != 1 || list[0].ID != fixtures.LiveSaleID || hasSale(list, sl.ID) {
		t.Fatalf("the scoped cataloger lists %+v, %v; want only %s", list, err, fixtures.LiveSaleID)
	}
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "UPDATE trovesnap.memberships SET sale_scoped = true WHERE tenant_id = $1 AND user_id = $2",
		fixtures.DemoTenantID, fixtures.ManagerUserID); err != nil {
		t.Fatal(err)
	}
	before := scSnapshot(t, env)
	_, err = sellerAs(t, env, fixtures.ManagerUserID).CreateSale(ctx, domain.NewSale{TenantID: fixtures.DemoTenantID,
		Name: "Cedar Row", StartsAt: saleStarts, EndsAt: saleEnds})
	wantReason(t, "a sale-scoped manager", err, domain.ErrSaleAssignment, "")
	scSnapshot(t, env).same(t, "a sale-scoped manager's refused creation", before)
}
