package cli_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/cli"
	"github.com/triunalabs/trovesnap/internal/contract"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/live"
)

// `trovesnap sale create|list` in live mode act as the signed-in seller:
// seller_create_sale and seller_list_sales decide, under the user's JWT.
func TestSaleLive_SellerCreatesAndListsAndRefusalsChangeNothing(t *testing.T) {
	env, newSeller := lcEnv(t)
	owner := lcLogin(t, env, newSeller, fixtures.DemoUserID)
	r := owner.run(t, "sale", "create", "--name", "Maple Street Estate", "--starts", "2026-12-10", "--ends", "2026-12-13",
		"--city", "Portland", "--json")
	if r.code != cli.ExitOK {
		t.Fatalf("create: %+v", r)
	}
	var sl domain.Sale
	if err := json.Unmarshal([]byte(r.out), &sl); err != nil || sl.TenantID != fixtures.DemoTenantID || sl.Status != domain.SaleDraft ||
		!domain.ValidID(domain.PrefixSale, sl.ID) {
		t.Fatalf("created %+v (%v)", sl, err)
	}
	var list []domain.Sale
	r = owner.run(t, "sale", "list", "--json")
	if r.code != cli.ExitOK || json.Unmarshal([]byte(r.out), &list) != nil || !slices.Contains(saleIDs(list), sl.ID) {
		t.Fatalf("list: %+v", r)
	}
	// The tenant's MCP client (the server's key) sees it.
	b, err := live.New(live.Options{URL: env.Endpoint.URL, PublicKey: env.PublicKey()})
	if err != nil {
		t.Fatal(err)
	}
	p, err := b.ResolvePrincipal(context.Background(), contract.CredOwner)
	if err != nil {
		t.Fatal(err)
	}
	page, err := b.ListSales(context.Background(), p, domain.SaleQuery{Limit: domain.MaxPageSize})
	if err != nil || !slices.Contains(saleIDs(page.Rows), sl.ID) {
		t.Fatalf("the tenant's client lists %v, %v", saleIDs(page.Rows), err)
	}

	scoped := lcLogin(t, env, newSeller, fixtures.ScopedCatalogerUserID)
	r = scoped.run(t, "sale", "list", "--json")
	if r.code != cli.ExitOK || json.Unmarshal([]byte(r.out), &list) != nil || !slices.Equal(saleIDs(list), []string{fixtures.LiveSaleID}) {
		t.Fatalf("scoped list: %+v", r)
	}
	if r := owner.run(t, "sale", "list", "--as", fixtures.ManagerUserID); r.code != cli.ExitUsage {
		t.Fatalf("list --as another user in live mode: %+v", r)
	}

	before := lcDigest(t, env)
	other := lcLogin(t, env, newSeller, fixtures.OtherOwnerUserID)
	for _, c := range []struct {
		what string
		s    lcSeller
		argv []string
		want string
	}{
		{"a cataloger", scoped, nil, domain.PermSaleCreate},
		{"another tenant's owner", other, []string{"--tenant", fixtures.DemoTenantID}, "tenant_id"},
		{"an end before the start", owner, []string{"--ends", "2026-12-01"}, "--ends: must not be before starts_at"},
	} {
		argv := append([]string{"sale", "create", "--name", "Elm Court", "--starts", "2026-12-10", "--ends", "2026-12-13"}, c.argv...)
		if r := c.s.run(t, argv...); r.code != cli.ExitUsage || !strings.Contains(r.err, c.want) {
			t.Errorf("%s: %+v, want exit 2 saying %q", c.what, r, c.want)
		}
	}
	if after := lcDigest(t, env); after != before {
		t.Fatalf("refused creations changed the project:\n%s\n%s", before, after)
	}
	r = other.run(t, "sale", "list", "--json")
	if r.code != cli.ExitOK || json.Unmarshal([]byte(r.out), &list) != nil || len(list) == 0 || slices.Contains(saleIDs(list), sl.ID) {
		t.Fatalf("another tenant's owner lists %+v", r)
	}
}
