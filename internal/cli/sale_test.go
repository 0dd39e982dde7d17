package cli_test

import (
	"context"
	"encoding/json"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/cli"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/store"
)

// `trovesnap sale create|list` in mock mode: the passphrase's owner
// creates, through the store; the demo tenant's MCP client then sees it.

func saleIDs(sales []domain.Sale) []string {
	out := make([]string, len(sales))
	for i, s := range sales {
		out[i] = s.ID
	}
	return out
}

func mockDigest(t *testing.T, db string) map[string]string {
	t.Helper()
	st, err := store.Open(context.Background(), db, store.Options{Clock: domain.NewFixedClock(fixtures.Epoch), IDs: domain.RandomIDs{}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	d, err := st.Digest(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestSale_CreateThenListAndTheTenantsClientSeesIt(t *testing.T) {
	env, dir := tempEnv(t)
	db := filepath.Join(dir, "s.db")
	setPassphrase(t, env, db)
	r := runP(t, env, "--db", db, "sale", "create", "--tenant", fixtures.DemoTenantID, "--name", "Maple Street Estate",
		"--starts", "2026-12-10", "--ends", "2026-12-13", "--city", "Portland", "--region", "OR", "--address", "12 Maple St", "--json")
	if r.code != cli.ExitOK {
		t.Fatalf("create: %+v", r)
	}
	var sl domain.Sale
	if err := json.Unmarshal([]byte(r.out), &sl); err != nil {
		t.Fatalf("create --json: %v: %s", err, r.out)
	}
	wantStart, wantEnd := time.Date(2026, 12, 10, 0, 0, 0, 0, time.UTC), time.Date(2026, 12, 13, 23, 59, 59, 0, time.UTC)
	if !domain.ValidID(domain.PrefixSale, sl.ID) || sl.Status != domain.SaleDraft || sl.Visibility != domain.VisibilityPrivate ||
		sl.AddressPolicy != domain.AddressNever || !sl.StartsAt.Equal(wantStart) || !sl.EndsAt.Equal(wantEnd) || sl.City != "Portland" {
		t.Fatalf("created %+v", sl)
	}

	var list []domain.Sale
	r = run(t, env, "--db", db, "sale", "list", "--tenant", fixtures.DemoTenantID, "--json")
	if r.code != cli.ExitOK || json.Unmarshal([]byte(r.out), &list) != nil || !slices.Contains(saleIDs(list), sl.ID) {
		t.Fatalf("list: %+v", r)
	}
	if r := run(t, env, "--db", db, "sale", "list", "--tenant", fixtures.DemoTenantID); r.code != cli.ExitOK ||
		!strings.Contains(r.out, sl.ID) || !strings.Contains(r.out, "Maple Street Estate") || !strings.Contains(r.out, "2026-12-13T23:59:59Z") {
		t.Fatalf("list (table): %+v", r)
	}
	// A sale-scoped member lists its assigned sale only.
	r = run(t, env, "--db", db, "sale", "list", "--tenant", fixtures.DemoTenantID, "--as", fixtures.ScopedCatalogerUserID, "--json")
	if r.code != cli.ExitOK || json.Unmarshal([]byte(r.out), &list) != nil || !slices.Equal(saleIDs(list), []string{fixtures.LiveSaleID}) {
		t.Fatalf("scoped list: %+v", r)
	}
	// Another tenant's owner neither sees it nor lists the demo tenant.
	r = run(t, env, "--db", db, "sale", "list", "--tenant", fixtures.OtherTenantID, "--as", fixtures.OtherOwnerUserID, "--json")
	if r.code != cli.ExitOK || json.Unmarshal([]byte(r.out), &list) != nil || len(list) == 0 || slices.Contains(saleIDs(list), sl.ID) {
		t.Fatalf("other tenant's list: %+v", r)
	}
	if r := run(t, env, "--db", db, "sale", "list", "--tenant", fixtures.DemoTenantID, "--as", fixtures.OtherOwnerUserID); r.code != cli.ExitUsage ||
		!strings.Contains(r.err, "permission denied") {
		t.Fatalf("another tenant's owner lists the demo tenant: %+v", r)
	}

	// The MCP read of the tenant's demo client sees the new sale.
	st, err := store.Open(context.Background(), db, store.Options{Clock: domain.NewFixedClock(fixtures.Epoch), IDs: domain.RandomIDs{}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	p, err := st.ResolvePrincipal(context.Background(), "")
	if err != nil || p.TenantID != fixtures.DemoTenantID {
		t.Fatalf("demo principal %+v, %v", p, err)
	}
	page, err := st.ListSales(context.Background(), p, domain.SaleQuery{Limit: domain.MaxPageSize})
	if err != nil || !slices.Contains(saleIDs(page.Rows), sl.ID) {
		t.Fatalf("the demo client lists %v, %v", saleIDs(page.Rows), err)
	}
}

func TestSale_CreateRefusalsWriteNothing(t *testing.T) {
	env, dir := tempEnv(t)
	db := filepath.Join(dir, "s.db")
	setPassphrase(t, env, db)
	before := mockDigest(t, db)
	base := []string{"--db", db, "sale", "create", "--tenant", fixtures.DemoTenantID}
	for _, c := range []struct {
		what string
		argv []string
		want string
	}{
		{"no name", []string{"--starts", "2026-12-10", "--ends", "2026-12-13"}, "--name is required"},
		{"a blank name", []string{"--name", " \u200b ", "--starts", "2026-12-10", "--ends", "2026-12-13"}, "--name: required"},
		{"an end before the start", []string{"--name", "Elm", "--starts", "2026-12-10", "--ends", "2026-12-09"}, "--ends: must not be before starts_at"},
		{"a start that is no date", []string{"--name", "Elm", "--starts", "thursday", "--ends", "2026-12-13"}, "--starts \"thursday\""},
		{"no end", []string{"--name", "Elm", "--starts", "2026-12-10"}, "--ends is required"},
		{"no tenant", []string{"--name", "Elm", "--starts", "2026-12-10", "--ends", "2026-12-13", "--tenant", ""}, "--tenant is required"},
		{"another tenant", []string{"--name", "Elm", "--starts", "2026-12-10", "--ends", "2026-12-13", "--tenant", fixtures.OtherTenantID}, "tenant_id"},
	} {
		r := runP(t, env, append(slices.Clone(base), c.argv...)...)
		if r.code != cli.ExitUsage || !strings.Contains(r.err, c.want) {
			t.Errorf("%s: %+v, want exit 2 saying %q", c.what, r, c.want)
		}
	}
	// (A role without sale.create cannot get here in mock mode: only an
	// owner or a manager may own a passphrase. store's tests refuse it.)
	if !maps.Equal(before, mockDigest(t, db)) {
		t.Fatal("a refused creation changed the store")
	}
}
