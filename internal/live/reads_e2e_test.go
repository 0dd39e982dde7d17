package live_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/contract"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/live/pgtest"
)

// seededHiddenAddress seeds the contract dataset with sale_221's address
// revealed two days from now on the database's clock, so a buyer must not
// see it yet (the fixtures' reveal time is long past on a real clock).
func seededHiddenAddress(t *testing.T) (*pgtest.Env, domain.Sale) {
	t.Helper()
	env := pgtest.Need(t)
	ds := contract.Dataset()
	reveal := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second)
	var sale domain.Sale
	for i := range ds.Sales {
		if ds.Sales[i].ID == fixtures.PublishedSaleID {
			ds.Sales[i].AddressRevealAt = &reveal
			sale = ds.Sales[i]
		}
	}
	if sale.StreetAddress == "" || sale.AddressPolicy != domain.AddressHiddenUntil {
		t.Fatalf("%s is not a hidden_until sale with an address: %+v", fixtures.PublishedSaleID, sale)
	}
	if err := env.Seed(ctx, ds); err != nil {
		t.Fatalf("seed: %v", err)
	}
	return env, sale
}

func keysOf(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// §11 through a real MCP client in live mode: an anonymous buyer reads the
// public tools over the live Backend and PostgreSQL and gets public views
// only — no address before its reveal time, no internal field, no storage
// path — while the seller's own scoped reads show the sale in full.
func TestReads_PublicAndScopedToolsLive(t *testing.T) {
	env, sale := seededHiddenAddress(t)
	lg := newLiveGate(t, env)
	anon := connect(t, lg.g, "")
	ok := func(tool string, e map[string]any) map[string]any {
		t.Helper()
		if e["mode"] != "live" || e["status"] != "succeeded" {
			t.Fatalf("%s = %v", tool, e)
		}
		return e["data"].(map[string]any)
	}
	private := []string{sale.StreetAddress, "staff_notes", "internal_price_guidance", "cost_basis", "appraisal", "storage_key",
		fixtures.DemoTenantID, "tenant_id", "postal_code", "visibility"}
	noPrivate := func(tool string, data map[string]any) {
		t.Helper()
		s := mustJSON(data)
		for _, p := range private {
			if strings.Contains(s, p) {
				t.Fatalf("%s shows %q to a buyer: %s", tool, p, s)
			}
		}
	}

	ps := ok("trove_get_public_sale", call(t, anon, "trove_get_public_sale", map[string]any{"sale_id": sale.ID}))
	noPrivate("trove_get_public_sale", ps)
	s := ps["sale"].(map[string]any)
	if s["street_address"] != nil || s["address_revealed"] != false || s["address_reveal_at"] == nil || s["title"] != sale.Title {
		t.Fatalf("public sale before its reveal time = %v", s)
	}
	ls := ok("trove_get_public_sale", call(t, anon, "trove_get_public_sale", map[string]any{"sale_id": fixtures.LiveSaleID}))["sale"].(map[string]any)
	if ls["street_address"] == nil || ls["address_revealed"] != true {
		t.Fatalf("an always-policy sale = %v", ls)
	}

	pi := ok("trove_get_public_item", call(t, anon, "trove_get_public_item", map[string]any{"item_id": fixtures.DemoItemID}))
	noPrivate("trove_get_public_item", pi)
	item := pi["item"].(map[string]any)
	if got := keysOf(item); !slices.Equal(got, []string{"category", "description", "id", "photos", "price_cents", "sale_id", "status", "title"}) {
		t.Fatalf("public item fields = %v", got)
	}
	if item["status"] != "available" || len(item["photos"].([]any)) == 0 || pi["sale"].(map[string]any)["street_address"] != nil {
		t.Fatalf("public item = %v", pi)
	}
	byTag := ok("trove_resolve_public_qr", call(t, anon, "trove_resolve_public_qr", map[string]any{"qr_code": "QR-221-0001"}))
	noPrivate("trove_resolve_public_qr", byTag)
	if byTag["item"].(map[string]any)["id"] != fixtures.DemoItemID {
		t.Fatalf("QR-221-0001 resolves to %v", byTag["item"])
	}
	for tool, args := range map[string]map[string]any{
		"trove_resolve_public_qr": {"qr_code": fixtures.SpareQRCode},
		"trove_get_public_sale":   {"sale_id": fixtures.DraftSaleID},
		"trove_get_public_item":   {"item_id": "item_404"},
	} {
		e := call(t, anon, tool, args)
		if e["status"] != "failed" || !strings.Contains(mustJSON(e["errors"]), "invalid_reference") {
			t.Fatalf("%s %v = %v; want invalid_reference", tool, args, e)
		}
	}
	hits := ok("trove_search_marketplace", call(t, anon, "trove_search_marketplace", map[string]any{"query": "walnut", "limit": 50}))
	noPrivate("trove_search_marketplace", hits)
	if len(hits["hits"].([]any)) == 0 {
		t.Fatal("no marketplace hit for walnut")
	}
	// The buyer cannot reach a scoped read.
	if e := call(t, anon, "trove_get_sale", map[string]any{"sale_id": sale.ID}); e["status"] == "succeeded" {
		t.Fatalf("anonymous trove_get_sale = %v", e)
	}

	// The seller's scoped reads: its own sale in full, its item by role.
	owner := connect(t, lg.g, contract.CredOwner)
	gs := ok("trove_get_sale", call(t, owner, "trove_get_sale", map[string]any{"sale_id": sale.ID}))["sale"].(map[string]any)
	if gs["street_address"] != sale.StreetAddress {
		t.Fatalf("the seller's own sale = %v", gs)
	}
	gi := ok("trove_get_item", call(t, owner, "trove_get_item", map[string]any{"item_id": fixtures.DemoItemID}))
	if gi["projection"] != domain.RoleOwner || gi["item"].(map[string]any)["pricing_history"] == nil {
		t.Fatalf("owner's item = %v", gi)
	}
	cross := call(t, owner, "trove_get_item", map[string]any{"item_id": "item_404"})
	if cross["status"] != "failed" || !strings.Contains(mustJSON(cross["errors"]), "invalid_reference") {
		t.Fatalf("unknown item = %v", cross)
	}
	for tool, args := range map[string]map[string]any{
		"trove_get_candidate":         {"candidate_id": fixtures.DemoCandidateID},
		"trove_list_import_runs":      {},
		"trove_get_import_run":        {"run_id": "run_848", "limit": 2},
		"trove_list_status_events":    {"item_id": fixtures.DemoItemID},
		"trove_list_label_batches":    {},
		"trove_get_disposition_queue": {"sale_id": fixtures.ClosedSaleID, "limit": 3},
	} {
		data := ok(tool, call(t, owner, tool, args))
		if len(mustJSON(data)) < 40 {
			t.Fatalf("%s = %v", tool, data)
		}
	}
	page := ok("trove_get_import_run", call(t, owner, "trove_get_import_run", map[string]any{"run_id": "run_848", "limit": 2}))
	next := page["records_next_cursor"].(string)
	page2 := ok("trove_get_import_run", call(t, owner, "trove_get_import_run", map[string]any{"run_id": "run_848", "limit": 2, "cursor": next}))
	r1, r2 := page["records"].([]any), page2["records"].([]any)
	if len(r1) != 2 || len(r2) != 2 || r1[1].(map[string]any)["ordinal"].(float64) >= r2[0].(map[string]any)["ordinal"].(float64) {
		t.Fatalf("records pages = %v then %v", r1, r2)
	}
}

// The public context is row level security's, not the RPCs' alone: under
// it the owner role itself reads published sales of public visibility,
// their public items, published photos and their search keys — and no
// other row of any table; it writes nothing; and a context with a tenant
// is never public.
func TestRLS_PublicContextSeesPublishedRowsOnly(t *testing.T) {
	env := seeded(t)
	ds := contract.Dataset()
	sales := map[string]domain.Sale{}
	wantSales, wantItems, wantPhotos := 0, 0, 0
	for _, s := range ds.Sales {
		sales[s.ID] = s
		if s.Visibility == "public" && slices.Contains(domain.PublicSaleStatuses, s.Status) {
			wantSales++
		}
	}
	for _, it := range ds.Items {
		s := sales[it.SaleID]
		if _, ok := domain.PublicItemStatus(it.Status); !ok || s.Visibility != "public" || !slices.Contains(domain.PublicSaleStatuses, s.Status) {
			continue
		}
		wantItems++
		for _, ph := range it.Photos {
			if ph.Published {
				wantPhotos++
			}
		}
	}
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tables, err := env.Cluster.Tables(ctx)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	var updated, tenantSales int64
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL ROLE trovesnap_owner"); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "SELECT set_config('trovesnap.public', 'on', true)"); err != nil {
			return err
		}
		for _, table := range tables {
			var n int
			if err := tx.QueryRow(ctx, "SELECT count(*) FROM trovesnap."+pgx.Identifier{table}.Sanitize()).Scan(&n); err != nil {
				return err
			}
			counts[table] = n
		}
		tag, err := tx.Exec(ctx, "UPDATE trovesnap.items SET title = title")
		if err != nil {
			return err
		}
		updated = tag.RowsAffected()
		if _, err := tx.Exec(ctx, "SELECT set_config('trovesnap.tenant_id', $1, true)", fixtures.DemoTenantID); err != nil {
			return err
		}
		return tx.QueryRow(ctx, "SELECT count(*) FROM trovesnap.estate_sales WHERE tenant_id <> $1", fixtures.DemoTenantID).Scan(&tenantSales)
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"estate_sales": wantSales, "items": wantItems, "item_photos": wantPhotos, "search_keys": wantSales + wantItems,
		"role_permissions": counts["role_permissions"], "schema_migrations": counts["schema_migrations"]}
	for _, table := range tables {
		if counts[table] != want[table] {
			t.Errorf("public context reads %d rows of %s, want %d", counts[table], table, want[table])
		}
	}
	if wantSales == 0 || wantItems == 0 || wantPhotos == 0 || counts["role_permissions"] == 0 {
		t.Fatalf("public rows %d/%d/%d: the case proves nothing", wantSales, wantItems, wantPhotos)
	}
	if updated != 0 || tenantSales != 0 {
		t.Fatalf("public context updated %d items; with a tenant it sees %d other tenants' sales", updated, tenantSales)
	}
}

// rpcAs calls an RPC with a bearer token of any role.
func rpcAs(t *testing.T, env *pgtest.Env, token, fn string, args map[string]any) (int, json.RawMessage) {
	t.Helper()
	body, _ := json.Marshal(args)
	req, _ := http.NewRequest(http.MethodPost, env.Endpoint.URL+"/rest/v1/rpc/"+fn, bytes.NewReader(body))
	req.Header.Set("apikey", env.PublicKey())
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out json.RawMessage
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// The public RPCs answer the public projection's fields and nothing else,
// computed in the database, and only the server's role may call them.
func TestReads_PublicRPCsAnswerPublicFieldsOnly(t *testing.T) {
	env, _ := seededHiddenAddress(t)
	decode := func(raw json.RawMessage) map[string]any {
		t.Helper()
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("answer %s: %v", raw, err)
		}
		return m
	}
	saleKeys := []string{"address_reveal_at", "city", "ends_at", "id", "published_items", "region", "starts_at", "status", "street_address", "title"}
	photoKeys := []string{"height", "id", "position", "width"}
	status, raw := rpcAs(t, env, "", "mcp_public_sale", map[string]any{"p_sale_id": fixtures.PublishedSaleID})
	s := decode(raw)
	if status != http.StatusOK || !slices.Equal(keysOf(s), saleKeys) || s["street_address"] != nil {
		t.Fatalf("mcp_public_sale = %d %v", status, s)
	}
	status, raw = rpcAs(t, env, "", "mcp_public_item", map[string]any{"p_item_id": fixtures.DemoItemID})
	it := decode(raw)
	if status != http.StatusOK || !slices.Equal(keysOf(it), []string{"category", "description", "id", "photos", "price_cents", "sale", "sale_id", "status", "title"}) ||
		!slices.Equal(keysOf(it["sale"].(map[string]any)), saleKeys) {
		t.Fatalf("mcp_public_item = %d %v", status, it)
	}
	for _, ph := range it["photos"].([]any) {
		if !slices.Equal(keysOf(ph.(map[string]any)), photoKeys) {
			t.Fatalf("public photo = %v", ph)
		}
	}
	status, raw = rpcAs(t, env, "", "mcp_search_marketplace", map[string]any{"p_terms": []string{"walnut"}, "p_limit": 50})
	page := decode(raw)
	rows, _ := page["rows"].([]any)
	if status != http.StatusOK || len(rows) == 0 {
		t.Fatalf("mcp_search_marketplace = %d %v", status, page)
	}
	for _, r := range rows {
		h := r.(map[string]any)
		if !slices.Equal(keysOf(h), []string{"city", "ends_at", "id", "item_id", "kind", "photo", "price_cents", "region", "sale_id",
			"sale_title", "seq", "starts_at", "title"}) {
			t.Fatalf("search hit = %v", h)
		}
		if ph, ok := h["photo"].(map[string]any); ok && !slices.Equal(keysOf(ph), photoKeys) {
			t.Fatalf("search hit photo = %v", ph)
		}
	}
	// The public RPCs are the public key's (a buyer's agent reaches the same
	// projection); a tenant RPC without a client token is nobody's, and a
	// seller's session may call no MCP RPC at all.
	if status, raw := rpcAs(t, env, "", "mcp_get_sale", map[string]any{"p_sale_id": fixtures.LiveSaleID}); status != http.StatusBadRequest ||
		!strings.Contains(string(raw), "trovesnap:client_not_registered") {
		t.Errorf("mcp_get_sale without a token: %d %s", status, raw)
	}
	seller := env.Endpoint.UserToken(pgtest.AuthSubject(fixtures.DemoUserID), time.Minute)
	for fn, args := range map[string]map[string]any{
		"mcp_public_sale":        {"p_sale_id": fixtures.PublishedSaleID},
		"mcp_public_item":        {"p_item_id": fixtures.DemoItemID},
		"mcp_resolve_public_qr":  {"p_qr_code": "QR-221-0001"},
		"mcp_search_marketplace": {"p_limit": 1},
		"mcp_get_sale":           {"p_sale_id": fixtures.LiveSaleID},
	} {
		if status, raw := rpcAs(t, env, seller, fn, args); status < 400 || strings.Contains(string(raw), "sale_2") {
			t.Errorf("a seller session called %s: %d %s", fn, status, raw)
		}
	}
}

// The search keys follow every writer of items, even SQL outside any
// request context: a renamed item is found by its new words, and no longer
// by its old ones.
func TestReads_SearchFollowsAnEditedItem(t *testing.T) {
	env := seeded(t)
	b := newBackend(t, env)
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	hitsFor := func(text string) []string {
		t.Helper()
		page, err := b.SearchMarketplace(ctx, domain.MarketplaceQuery{Text: text, Limit: 50})
		if err != nil {
			t.Fatalf("search %q: %v", text, err)
		}
		var ids []string
		for _, h := range page.Rows {
			ids = append(ids, h.ItemID)
		}
		return ids
	}
	if got := hitsFor("zeppelin"); len(got) != 0 {
		t.Fatalf("zeppelin before the edit: %v", got)
	}
	if !slices.Contains(hitsFor("eames ottoman"), fixtures.DemoItemID) {
		t.Fatal("the demo item is not found by its title")
	}
	if _, err := conn.Exec(ctx, "UPDATE trovesnap.items SET title = 'Zeppelin-shaped lamp' WHERE id = $1", fixtures.DemoItemID); err != nil {
		t.Fatal(err)
	}
	if got := hitsFor("ZEPPELIN lamp"); !slices.Equal(got, []string{fixtures.DemoItemID}) {
		t.Fatalf("zeppelin after the edit: %v", got)
	}
	if slices.Contains(hitsFor("eames ottoman"), fixtures.DemoItemID) {
		t.Fatal("the demo item is still found by its old title")
	}
}
