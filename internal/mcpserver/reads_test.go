package mcpserver_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/catalog"
	"github.com/triunalabs/trovesnap/internal/domain"
)

// The read tools of §11 and §12, end to end: real go-sdk clients over
// in-memory transports, the real store seeded from fixtures.

// toolsOfTier are the catalog's tools of one tier, in catalog (name) order:
// the scoped reads of §12 (with the §12.1 compatibility name and the
// proposal read) are toolsOfTier(catalog.TierTenantRead).
func toolsOfTier(tier catalog.Tier) []string {
	var out []string
	for _, tool := range catalog.All() {
		if tool.Tier == tier {
			out = append(out, tool.Name)
		}
	}
	return out
}

// readsEnv is newEnv with read limits high enough to walk every page: the
// fixed clock never leaves its rate window.
func readsEnv(t testing.TB, opts ...envOpt) *env {
	t.Helper()
	e := newEnv(t, opts...)
	l := domain.DefaultLimits()
	l.ReadsPerMinute = 1_000_000
	for _, tenant := range []string{fixtures.DemoTenantID, fixtures.OtherTenantID} {
		if err := e.st.SetLimits(context.Background(), tenant, "", l); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// sessionFor registers a client acting for user and connects it.
func sessionFor(e *env, tenant, user string) *mcp.ClientSession {
	e.t.Helper()
	_, tok := e.register(tenant, user)
	return connect(e.t, e.gate, tok)
}

// staffOf is one user per role of the demo tenant.
var staffOf = map[string]string{
	domain.RoleOwner: fixtures.DemoUserID, domain.RoleManager: fixtures.ManagerUserID, domain.RoleCataloger: fixtures.CatalogerUserID,
	domain.RolePricer: fixtures.PricerUserID, domain.RoleCheckout: fixtures.CheckoutUserID,
}

// declaredItemFields is the projection of §12.2 written out by hand: a
// field that appears in a projection without being declared here fails
// the test, and so does a declared field that goes missing.
var declaredItemFields = func() map[string][]string {
	cataloger := []string{"id", "sale_id", "title", "description", "category", "room", "status", "version", "photos",
		"publication_readiness", "updated_at"}
	pricing := []string{"price_cents", "internal_price_guidance_cents", "cost_basis_cents", "appraisal_flag", "staff_notes", "pricing_history"}
	checkout := []string{"id", "sale_id", "title", "status", "version", "qr_code", "checkout_actions"}
	all := slices.Concat(cataloger, pricing, []string{"qr_code", "checkout_actions"})
	return map[string][]string{
		domain.RoleCataloger: cataloger,
		domain.RolePricer:    slices.Concat(cataloger, pricing),
		domain.RoleCheckout:  checkout,
		domain.RoleOwner:     all,
		domain.RoleManager:   all,
	}
}()

func keysOf(t testing.TB, raw json.RawMessage) []string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("not an object: %s", raw)
	}
	return slices.Sorted(maps.Keys(m))
}

func sortedCopy(xs []string) []string { return slices.Sorted(slices.Values(xs)) }

// subset reports the keys of got that are not in want.
func extraKeys(got, want []string) []string {
	var out []string
	for _, k := range got {
		if !slices.Contains(want, k) {
			out = append(out, k)
		}
	}
	return out
}

// fullItem is a fixture item with a value in every projected field, so
// that its projection shows exactly the declared fields.
func fullItem(t testing.TB) domain.Item {
	t.Helper()
	for _, it := range fixtures.Dataset().Items {
		if it.TenantID == fixtures.DemoTenantID && it.SaleID == fixtures.PublishedSaleID && it.PriceCents != nil &&
			it.InternalPriceGuidanceCents != nil && it.CostBasisCents != nil && it.StaffNotes != "" && it.QRCode != "" {
			return it
		}
	}
	t.Fatal("no fixture item has every projected field")
	return domain.Item{}
}

type rawItems struct {
	Items      []json.RawMessage `json:"items"`
	NextCursor string            `json:"next_cursor"`
	Projection string            `json:"projection"`
}

// §12.2, criteria 56–58: each role gets exactly its declared fields, from
// the one projection table, in gets, lists and the disposition queue.
func TestProjection_ExactFieldsPerRole(t *testing.T) {
	e := readsEnv(t)
	full := fullItem(t)
	for role, user := range staffOf {
		t.Run(role, func(t *testing.T) {
			want := sortedCopy(declaredItemFields[role])
			if table := sortedCopy(append(catalog.ItemFieldsFor(role), "id")); !slices.Equal(table, want) {
				t.Fatalf("projection table for %s = %v; declared %v", role, table, want)
			}
			cs := sessionFor(e, fixtures.DemoTenantID, user)
			env := callOn(t, cs, "trove_get_item", map[string]any{"item_id": full.ID}, nil)
			var got struct {
				Item       json.RawMessage `json:"item"`
				Projection string          `json:"projection"`
			}
			if err := json.Unmarshal(env.Data, &got); err != nil || env.Status != "succeeded" {
				t.Fatalf("get_item: %s", env.raw)
			}
			if keys := keysOf(t, got.Item); !slices.Equal(keys, want) || got.Projection != role {
				t.Fatalf("get_item fields = %v (projection %s); want %v", keys, got.Projection, want)
			}
			var item map[string]json.RawMessage
			_ = json.Unmarshal(got.Item, &item)
			if raw, ok := item["photos"]; ok {
				var photos []json.RawMessage
				_ = json.Unmarshal(raw, &photos)
				if len(photos) == 0 || !slices.Equal(keysOf(t, photos[0]), []string{"height", "id", "position", "published", "storage_key", "width"}) {
					t.Errorf("photo fields = %s", raw)
				}
			}
			if raw, ok := item["pricing_history"]; ok {
				var hist []json.RawMessage
				_ = json.Unmarshal(raw, &hist)
				if len(hist) == 0 || !slices.Equal(keysOf(t, hist[0]), []string{"actor_id", "changed_at", "internal_price_guidance_cents", "price_cents", "reason"}) {
					t.Errorf("pricing history = %s", raw)
				}
			}
			if raw, ok := item["checkout_actions"]; ok {
				var actions []string
				_ = json.Unmarshal(raw, &actions)
				if !slices.Equal(actions, domain.CheckoutActionsFor(full.Status)) {
					t.Errorf("checkout actions of a %s item = %v", full.Status, actions)
				}
			}

			// Every item of a list is a summary row cut from the role's
			// projection: the declared fields a row carries, a photo count
			// where photos are declared and a ready flag where readiness is
			// — never a description, photo, note or pricing history; the
			// fields every item has a value for are always there.
			allowed := []string{"id"}
			for _, f := range []string{"sale_id", "title", "category", "room", "status", "version", "price_cents", "qr_code", "checkout_actions"} {
				if slices.Contains(want, f) {
					allowed = append(allowed, f)
				}
			}
			always := []string{"id", "title", "status", "version"}
			for f, row := range map[string]string{"photos": "photo_count", "publication_readiness": "ready", "checkout_actions": "checkout_actions"} {
				if slices.Contains(want, f) {
					allowed = append(allowed, row)
					always = append(always, row)
				}
			}
			cursor, n := "", 0
			for {
				args := map[string]any{"sale_id": fixtures.PublishedSaleID, "limit": 100}
				if cursor != "" {
					args["cursor"] = cursor
				}
				page := dataAs[rawItems](t, callOn(t, cs, "trove_list_items", args, nil))
				for _, raw := range page.Items {
					keys := keysOf(t, raw)
					if extra := extraKeys(keys, allowed); len(extra) > 0 {
						t.Fatalf("list item has undeclared fields %v: %s", extra, raw)
					}
					if missing := extraKeys(always, keys); len(missing) > 0 {
						t.Fatalf("list item lacks %v: %s", missing, raw)
					}
					n++
				}
				if cursor = page.NextCursor; cursor == "" {
					break
				}
			}
			if n < 100 || page0Projection(t, cs) != role {
				t.Errorf("listed %d items", n)
			}
			if role == domain.RoleCheckout {
				wantCode(t, callOn(t, cs, "trove_get_disposition_queue", map[string]any{"sale_id": fixtures.ClosedSaleID}, nil), "blocked", "tool_not_available")
				return
			}
			q := callOn(t, cs, "trove_get_disposition_queue", map[string]any{"sale_id": fixtures.ClosedSaleID, "limit": 100}, nil)
			var queue struct {
				Entries []struct {
					Item json.RawMessage `json:"item"`
				} `json:"entries"`
			}
			if err := json.Unmarshal(q.Data, &queue); err != nil || len(queue.Entries) == 0 {
				t.Fatalf("queue: %s", q.raw)
			}
			for _, en := range queue.Entries {
				if extra := extraKeys(keysOf(t, en.Item), allowed); len(extra) > 0 {
					t.Fatalf("queue item has undeclared fields %v", extra)
				}
			}
		})
	}
}

func page0Projection(t testing.TB, cs *mcp.ClientSession) string {
	t.Helper()
	return dataAs[rawItems](t, callOn(t, cs, "trove_list_items", map[string]any{"limit": 1}, nil)).Projection
}

// Every read tool's envelope, for every role that may call it, validates
// against the output schema it advertises.
func TestReads_EnvelopesMatchAdvertisedSchemas(t *testing.T) {
	e := readsEnv(t)
	calls := map[string]map[string]any{}
	for name, ex := range readExamples {
		calls[name] = ex.args
	}
	prop := callOn(t, e.cs, "trove_propose_candidate_promotion", map[string]any{"candidate_id": fixtures.DemoCandidateID, "expected_version": 3,
		"idempotency_key": "reads-schema-prop-0001"}, nil)
	if prop.Status != "proposed" {
		t.Fatalf("propose: %s", prop.raw)
	}
	calls["trove_get_proposal"] = map[string]any{"proposal_id": dataAs[catalog.ProposalView](t, prop).ProposalID}
	// Every read of the catalog is called: a new read cannot slip past.
	for _, name := range slices.Concat(toolsOfTier(catalog.TierPublicRead), toolsOfTier(catalog.TierTenantRead)) {
		if _, ok := calls[name]; !ok {
			t.Errorf("%s: say how to call it in readExamples (examples_test.go)", name)
		}
	}
	seen := map[string]bool{}
	for role, user := range staffOf {
		cs := sessionFor(e, fixtures.DemoTenantID, user)
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range res.Tools {
			args, ok := calls[tool.Name]
			if !ok {
				continue
			}
			b, _ := json.Marshal(tool.OutputSchema)
			var s jsonschema.Schema
			if err := json.Unmarshal(b, &s); err != nil {
				t.Fatal(err)
			}
			rs, err := s.Resolve(nil)
			if err != nil {
				t.Fatal(err)
			}
			env := callOn(t, cs, tool.Name, args, nil)
			var v any
			_ = json.Unmarshal([]byte(env.raw), &v)
			if !strings.HasPrefix(env.Status, "succeeded") {
				t.Errorf("%s as %s: %s", tool.Name, role, env.raw)
			} else if err := rs.Validate(v); err != nil {
				t.Errorf("%s as %s: envelope does not match its output schema: %v", tool.Name, role, err)
			}
			seen[tool.Name] = true
		}
	}
	for name := range calls {
		if !seen[name] {
			t.Errorf("%s: no staff role was offered it", name)
		}
	}
}

type publicSale struct {
	ID              string     `json:"id"`
	StreetAddress   *string    `json:"street_address"`
	AddressRevealed bool       `json:"address_revealed"`
	AddressRevealAt *time.Time `json:"address_reveal_at"`
}

// §11, criterion 59: the street address follows the sale's reveal policy at
// the time of the call, and so does everything linked to the sale.
func TestPublic_AddressHiddenBeforeRevealShownAfter(t *testing.T) {
	e := readsEnv(t)
	street := "1847 Maple Street"
	reveal := fixtures.Epoch.Add(5 * 24 * time.Hour)
	linked := func() []envelope {
		return []envelope{
			e.call("trove_get_public_sale", map[string]any{"sale_id": fixtures.PublishedSaleID}),
			e.call("trove_get_public_item", map[string]any{"item_id": fixtures.DemoItemID}),
			e.call("trove_resolve_public_qr", map[string]any{"qr_code": "QR-221-0001"}), // item_991's tag
			e.call("trove_search_marketplace", map[string]any{"query": "maple street"}),
		}
	}
	saleOf := func(env envelope, id string) publicSale {
		var d struct {
			Sale publicSale `json:"sale"`
		}
		if err := json.Unmarshal(env.Data, &d); err != nil || d.Sale.ID != id {
			t.Fatalf("%s: %s", env.Tool.Name, env.raw)
		}
		return d.Sale
	}
	for _, at := range []time.Time{fixtures.Epoch, reveal.Add(-time.Second)} {
		e.clock.Set(at)
		for i, env := range linked() {
			if strings.Contains(env.raw, street) || strings.Contains(env.raw, "1847") {
				t.Fatalf("at %v, %s leaks the hidden address: %s", at, env.Tool.Name, env.raw)
			}
			if i < 3 {
				if s := saleOf(env, fixtures.PublishedSaleID); s.StreetAddress != nil || s.AddressRevealed || s.AddressRevealAt == nil || !s.AddressRevealAt.Equal(reveal) {
					t.Fatalf("at %v, %s: sale %+v", at, env.Tool.Name, s)
				}
			}
		}
	}
	e.clock.Set(reveal)
	for i, env := range linked()[:3] {
		if s := saleOf(env, fixtures.PublishedSaleID); s.StreetAddress == nil || *s.StreetAddress != street || !s.AddressRevealed {
			t.Fatalf("after reveal, call %d: sale %+v", i, s)
		}
	}
	// Search hits never carry an address: a buyer opens the sale for it.
	if strings.Contains(linked()[3].raw, street) {
		t.Error("a search hit carries the street address")
	}
	// "always" shows it, "never" never does, whatever the time.
	e.clock.Set(fixtures.Epoch.Add(365 * 24 * time.Hour))
	always := saleOf(e.call("trove_get_public_sale", map[string]any{"sale_id": fixtures.LiveSaleID}), fixtures.LiveSaleID)
	if always.StreetAddress == nil || always.AddressRevealAt != nil {
		t.Errorf("always-policy sale = %+v", always)
	}
}

// §11, criteria 7, 22, 23: public views carry public fields only:
// published photos, public prices, no internal pricing, notes, seller PII
// or storage paths.
func TestPublic_NoInternalFieldsNoUnpublishedPhotos(t *testing.T) {
	e := readsEnv(t)
	var demo domain.Item
	for _, it := range fixtures.Dataset().Items {
		if it.ID == fixtures.DemoItemID {
			demo = it
		}
	}
	env := e.call("trove_get_public_item", map[string]any{"item_id": fixtures.DemoItemID})
	var got struct {
		Item catalog.PublicItemView `json:"item"`
	}
	if err := json.Unmarshal(env.Data, &got); err != nil || env.Status != "succeeded" {
		t.Fatalf("%s", env.raw)
	}
	var published []string
	for _, p := range demo.Photos {
		if p.Published {
			published = append(published, p.ID)
		}
	}
	var ids []string
	for _, p := range got.Item.Photos {
		ids = append(ids, p.ID)
		if !strings.HasPrefix(p.URL, catalog.PublicPhotoURLBase) || strings.Contains(p.URL, "tenant_") {
			t.Errorf("photo URL %q reveals a storage path", p.URL)
		}
	}
	if !slices.Equal(ids, published) || len(published) == len(demo.Photos) {
		t.Fatalf("public photos %v; the published ones are %v of %d", ids, published, len(demo.Photos))
	}
	if got.Item.Status != "available" || got.Item.PriceCents == nil || *got.Item.PriceCents != *demo.PriceCents {
		t.Errorf("public item = %+v", got.Item)
	}

	// Everything public, walked: no private value and no private field
	// anywhere, and only public records.
	private := []string{"internal_price_guidance", "cost_basis", "appraisal", "staff_notes", "pricing_history", "storage_key",
		"qr_code", "tenant_", "heritage-estates.example", demo.StaffNotes, fmt.Sprint(*demo.InternalPriceGuidanceCents)}
	sales := map[string]domain.Sale{}
	for _, s := range fixtures.Dataset().Sales {
		sales[s.ID] = s
	}
	items := map[string]domain.Item{}
	for _, it := range fixtures.Dataset().Items {
		items[it.ID] = it
	}
	bodies := []string{env.raw}
	cursor, hits := "", 0
	for {
		args := map[string]any{"limit": 50}
		if cursor != "" {
			args["cursor"] = cursor
		}
		page := e.call("trove_search_marketplace", args)
		out := dataAs[catalog.SearchMarketplaceOutput](t, page)
		bodies = append(bodies, page.raw)
		for _, h := range out.Hits {
			hits++
			s := sales[h.SaleID]
			if s.Visibility != "public" || (s.Status != domain.SalePublished && s.Status != domain.SaleLive) {
				t.Fatalf("hit in non-public sale %s", s.ID)
			}
			if h.ItemID != nil {
				if it := items[*h.ItemID]; it.Status != domain.ItemPublished {
					t.Fatalf("hit for %s item %s", it.Status, it.ID)
				}
				bodies = append(bodies, e.call("trove_get_public_item", map[string]any{"item_id": *h.ItemID}).raw)
			}
		}
		if cursor = out.NextCursor; cursor == "" {
			break
		}
	}
	if hits < 100 {
		t.Fatalf("search found only %d public hits", hits)
	}
	for _, body := range bodies {
		for _, p := range private {
			if strings.Contains(body, p) {
				t.Fatalf("public answer contains %q: %s", p, body)
			}
		}
	}
}

// normalized removes what differs between two calls by construction: the
// server's request and event ids, and the caller's own id echoed back.
func normalized(env envelope, id string) string {
	return strings.NewReplacer(env.ServerRequestID, "REQ", env.Audit.PluginEventID, "EV", id, "ID").Replace(env.raw)
}

// §11: unknown, unpublished and withdrawn records answer byte for byte
// alike (no enumeration oracle); a QR code that exists but is unbound
// answers like one that never existed.
func TestPublic_EnumerationIdenticalAnswers(t *testing.T) {
	e := readsEnv(t)
	pick := func(sale, status string) string {
		for _, it := range fixtures.Dataset().Items {
			if it.SaleID == sale && it.Status == status {
				return it.ID
			}
		}
		t.Fatalf("no %s item in %s", status, sale)
		return ""
	}
	cases := []struct {
		tool, field string
		ids         []string
	}{
		{"trove_get_public_item", "item_id", []string{"item_999999", pick(fixtures.PublishedSaleID, domain.ItemDraft),
			pick(fixtures.PublishedSaleID, domain.ItemWithdrawn), pick(fixtures.DraftSaleID, domain.ItemReady),
			pick(fixtures.ClosedSaleID, domain.ItemPublished), pick(fixtures.OtherDraftSaleID, domain.ItemDraft)}},
		{"trove_get_public_sale", "sale_id", []string{"sale_999999", fixtures.DraftSaleID, fixtures.ClosedSaleID, fixtures.OtherDraftSaleID}},
		{"trove_resolve_public_qr", "qr_code", []string{"QR-999-9999", fixtures.SpareQRCode, "QR-224-0001", "QR-222-0001"}},
	}
	before := e.digest()
	for _, c := range cases {
		var first string
		for i, id := range c.ids {
			env := e.call(c.tool, map[string]any{c.field: id})
			wantCode(t, env, "failed", "invalid_reference")
			if ev := e.events(env.ServerRequestID); len(ev) != 1 || ev[0].AuditCode != "" {
				t.Errorf("%s %s: event %+v", c.tool, id, ev)
			}
			if i == 0 {
				first = normalized(env, id)
			} else if got := normalized(env, id); got != first {
				t.Errorf("%s: %s answers differently from an unknown id:\n%s\n%s", c.tool, id, got, first)
			}
		}
	}
	assertOnlyEventsChanged(t, before, e.digest())
}

// §40.2, §38: without a credential (live mode) the public tools answer,
// the private ones are refused, and the public bucket is rate limited.
func TestPublic_AnonymousCallerAndPublicRateLimit(t *testing.T) {
	e := newEnv(t, withCredential(domain.PublicCredential))
	names := listNames(t, e.cs)
	if want := toolsOfTier(catalog.TierPublicRead); len(want) < 4 || !slices.Equal(names, want) {
		t.Fatalf("anonymous sees %v; want %v", names, want)
	}
	for _, name := range toolsOfTier(catalog.TierTenantRead) {
		wantCode(t, e.call(name, map[string]any{}), "blocked", "authentication_required")
	}
	// Refused calls stop before the limits step: only the public reads count.
	limit := domain.DefaultLimits().ReadsPerMinute
	for i := range limit {
		if env := e.call("trove_get_public_sale", map[string]any{"sale_id": fixtures.LiveSaleID}); env.Status != "succeeded" {
			t.Fatalf("call %d: %s", i, env.raw)
		}
	}
	wantCode(t, e.call("trove_search_marketplace", map[string]any{"query": "lamp"}), "blocked", "rate_limited")
	e.clock.Advance(time.Minute)
	if env := e.call("trove_search_marketplace", map[string]any{"query": "lamp"}); env.Status != "succeeded" {
		t.Fatalf("next window: %s", env.raw)
	}
}

// walk follows a list tool's cursor field to the end, calling between
// after each page, and returns every row's id.
func walk(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any, rowsField, cursorField string, between func(page int)) []string {
	t.Helper()
	var ids []string
	cursor := ""
	for page := 0; ; page++ {
		a := maps.Clone(args)
		if cursor != "" {
			a["cursor"] = cursor
		}
		env := callOn(t, cs, tool, a, nil)
		var data map[string]json.RawMessage
		if err := json.Unmarshal(env.Data, &data); err != nil {
			t.Fatalf("%s: %s", tool, env.raw)
		}
		var rows []map[string]json.RawMessage
		_ = json.Unmarshal(data[rowsField], &rows)
		for _, r := range rows {
			raw := r["id"]
			if raw == nil { // a disposition entry: the item is nested
				var it map[string]json.RawMessage
				_ = json.Unmarshal(r["item"], &it)
				raw = it["id"]
			}
			if tool == "trove_search_marketplace" {
				if r["item_id"] != nil && string(r["item_id"]) != "null" {
					raw = r["item_id"]
				} else {
					raw = r["sale_id"]
				}
			}
			var id string
			_ = json.Unmarshal(raw, &id)
			ids = append(ids, id)
		}
		_ = json.Unmarshal(data[cursorField], &cursor)
		if between != nil {
			between(page)
		}
		if cursor == "" {
			return ids
		}
		if page > 2000 {
			t.Fatalf("%s: pagination does not end", tool)
		}
	}
}

func once(t *testing.T, what string, ids []string, want int) {
	t.Helper()
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Fatalf("%s: %s on two pages", what, id)
		}
		seen[id] = true
	}
	if len(ids) != want {
		t.Fatalf("%s: walked %d rows, want %d", what, len(ids), want)
	}
}

// Keyset pages walk every row exactly once, also while rows are inserted
// by another connection during the walk (new rows sort after the cursor
// in ascending lists and are reached once; in newest-first lists they sort
// before it and are not).
func TestPagination_EveryRowOnceWithConcurrentInserts(t *testing.T) {
	e := readsEnv(t)
	ds := fixtures.Dataset()
	db, err := sql.Open("sqlite", "file:"+e.path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	stamp := func(d time.Duration) string {
		return fixtures.Epoch.Add(d).UTC().Format("2006-01-02T15:04:05.000000000Z")
	}
	insertItem := func(id string) {
		t.Helper()
		if _, err := db.Exec(`INSERT INTO items (id, tenant_id, sale_id, title, status, created_at, updated_at)
			VALUES (?, ?, ?, 'Late arrival lamp', 'published', ?, ?)`, id, fixtures.DemoTenantID, fixtures.PublishedSaleID, stamp(time.Hour), stamp(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	count := func(f func(domain.Item) bool) int {
		n := 0
		for _, it := range ds.Items {
			if f(it) {
				n++
			}
		}
		return n
	}

	inSale := count(func(it domain.Item) bool { return it.SaleID == fixtures.PublishedSaleID })
	ids := walk(t, e.cs, "trove_list_items", map[string]any{"sale_id": fixtures.PublishedSaleID, "limit": 7}, "items", "next_cursor", func(page int) {
		if page == 0 {
			insertItem("item_late1")
			insertItem("item_late2")
		}
	})
	once(t, "list_items", ids, inSale+2)
	if !slices.Equal(ids[len(ids)-2:], []string{"item_late1", "item_late2"}) {
		t.Errorf("new items not reached last: %v", ids[len(ids)-2:])
	}

	forSale := count(func(it domain.Item) bool {
		return it.Status == domain.ItemPublished && (it.SaleID == fixtures.PublishedSaleID || it.SaleID == fixtures.LiveSaleID || it.SaleID == fixtures.OtherPublishedSaleID)
	}) + 2 /* the late items */ + 3 /* public sales */
	ids = walk(t, e.cs, "trove_search_marketplace", map[string]any{"limit": 50}, "hits", "next_cursor", func(page int) {
		if page == 0 {
			insertItem("item_late3")
		}
	})
	once(t, "search", ids, forSale+1)

	tenantEvents := 0
	for _, ev := range ds.StatusEvents {
		if ev.TenantID == fixtures.DemoTenantID {
			tenantEvents++
		}
	}
	ids = walk(t, e.cs, "trove_list_status_events", map[string]any{"limit": 100}, "events", "next_cursor", func(page int) {
		if page == 0 {
			if _, err := db.Exec(`INSERT INTO item_status_events (id, tenant_id, item_id, sale_id, from_status, to_status, effective_at,
				source_type, recorded_at) VALUES ('status_late', ?, 'item_late1', ?, 'published', 'on_hold', ?, 'checkout_scan', ?)`,
				fixtures.DemoTenantID, fixtures.PublishedSaleID, stamp(2*time.Hour), stamp(2*time.Hour)); err != nil {
				t.Fatal(err)
			}
		}
	})
	once(t, "status events", ids, tenantEvents)

	runs, batches := 0, 0
	for _, r := range ds.ImportRuns {
		if r.TenantID == fixtures.DemoTenantID {
			runs++
		}
	}
	for _, b := range ds.LabelBatches {
		if b.TenantID == fixtures.DemoTenantID {
			batches++
		}
	}
	once(t, "import runs", walk(t, e.cs, "trove_list_import_runs", map[string]any{"limit": 2}, "runs", "next_cursor", nil), runs)
	once(t, "label batches", walk(t, e.cs, "trove_list_label_batches", map[string]any{"limit": 2}, "batches", "next_cursor", nil), batches)
	once(t, "run records", walk(t, e.cs, "trove_get_import_run", map[string]any{"run_id": "run_848", "limit": 4}, "records", "records_next_cursor", nil), 6)
	unsold := count(func(it domain.Item) bool {
		return it.SaleID == fixtures.ClosedSaleID && it.Status == domain.ItemPublished
	})
	once(t, "disposition queue", walk(t, e.cs, "trove_get_disposition_queue", map[string]any{"sale_id": fixtures.ClosedSaleID, "limit": 4}, "entries", "next_cursor", nil), unsold)
}

// idParams are the id fields of a read tool's input, found in its schema;
// an id field of a type this test has no foreign record for fails it.
func idParams(t *testing.T, tool *catalog.Tool, foreign map[string]string) []string {
	t.Helper()
	var out []string
	for name, p := range tool.InputSchema().Properties {
		if !strings.HasSuffix(name, "_id") || name == "request_id" {
			continue
		}
		found := false
		for prefix := range foreign {
			found = found || p.Pattern == domain.IDPattern(prefix)
		}
		if !found {
			t.Fatalf("%s.%s: no foreign record to test it with", tool.Name, name)
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// §40.2, criterion 55: every read tool × every id parameter, given another
// tenant's record, answers exactly like a missing id (zero leaks) while the
// audit records cross_tenant_reference.
func TestCrossTenant_EveryReadToolEveryIDParameter(t *testing.T) {
	e := readsEnv(t)
	var otherItem string
	for _, it := range fixtures.Dataset().Items {
		if it.TenantID == fixtures.OtherTenantID {
			otherItem = it.ID
			break
		}
	}
	// A proposal of the other tenant, made by its owner.
	other := sessionFor(e, fixtures.OtherTenantID, fixtures.OtherOwnerUserID)
	prop := callOn(t, other, "trove_propose_candidate_promotion", map[string]any{"candidate_id": "candidate_901", "expected_version": 1,
		"idempotency_key": "xt-read-prop-0001"}, nil)
	if prop.Status != "proposed" {
		t.Fatalf("the other tenant's proposal: %s", prop.raw)
	}
	foreign := map[string]string{domain.PrefixSale: fixtures.OtherPublishedSaleID, domain.PrefixItem: otherItem,
		domain.PrefixCandidate: "candidate_901", domain.PrefixRun: "run_901",
		domain.PrefixProposal: dataAs[catalog.ProposalView](t, prop).ProposalID}
	pairs := 0
	for _, name := range toolsOfTier(catalog.TierTenantRead) {
		tool, ok := catalog.Lookup(name)
		if !ok {
			t.Fatalf("no tool %s", name)
		}
		for _, param := range idParams(t, tool, foreign) {
			prefix := ""
			for p := range foreign {
				if tool.InputSchema().Properties[param].Pattern == domain.IDPattern(p) {
					prefix = p
				}
			}
			missing := prefix + "_999999"
			before := e.digest()
			f := e.call(name, map[string]any{param: foreign[prefix]})
			m := e.call(name, map[string]any{param: missing})
			wantCode(t, f, "failed", "invalid_reference")
			wantCode(t, m, "failed", "invalid_reference")
			if f.Errors[0].Field != param || normalized(f, foreign[prefix]) != normalized(m, missing) {
				t.Errorf("%s(%s): foreign and missing answers differ:\n%s\n%s", name, param, f.raw, m.raw)
			}
			if ev := e.events(f.ServerRequestID); len(ev) != 1 || ev[0].AuditCode != "cross_tenant_reference" {
				t.Errorf("%s(%s): foreign event = %+v", name, param, ev)
			}
			if ev := e.events(m.ServerRequestID); len(ev) != 1 || ev[0].AuditCode != "" {
				t.Errorf("%s(%s): missing event = %+v", name, param, ev)
			}
			assertOnlyEventsChanged(t, before, e.digest())
			pairs++
		}
	}
	if pairs < 13 {
		t.Fatalf("only %d tool × id pairs tested", pairs)
	}
}

// §4.3: a member limited to assigned sales sees only those: lists leave
// the others out, and reading one of them answers sale_assignment_required.
func TestSaleAssignment_ScopedMemberSeesOnlyAssignedSales(t *testing.T) {
	e := readsEnv(t)
	cs := sessionFor(e, fixtures.DemoTenantID, fixtures.ScopedCatalogerUserID)
	ds := fixtures.Dataset()
	saleOf := map[string]string{}
	for _, it := range ds.Items {
		saleOf[it.ID] = it.SaleID
	}
	only := func(what string, got []string, allowed func(string) bool) {
		t.Helper()
		if len(got) == 0 {
			t.Fatalf("%s: nothing listed", what)
		}
		for _, id := range got {
			if !allowed(id) {
				t.Fatalf("%s lists %s", what, id)
			}
		}
	}
	live := func(id string) bool { return id == fixtures.LiveSaleID }
	only("sales", walk(t, cs, "trove_list_sales", map[string]any{}, "sales", "next_cursor", nil), live)
	items := walk(t, cs, "trove_list_items", map[string]any{"limit": 100}, "items", "next_cursor", nil)
	only("items", items, func(id string) bool { return saleOf[id] == fixtures.LiveSaleID })
	n := 0
	for _, it := range ds.Items {
		if it.SaleID == fixtures.LiveSaleID {
			n++
		}
	}
	once(t, "scoped items", items, n)
	cands := dataAs[catalog.ListCandidatesOutput](t, callOn(t, cs, "trove_list_candidates", map[string]any{}, nil))
	for _, c := range cands.Candidates {
		if c.SaleID != fixtures.LiveSaleID {
			t.Errorf("candidate %s of %s", c.ID, c.SaleID)
		}
	}
	signals := dataAs[catalog.DemandSignalsOutput](t, callOn(t, cs, "trove_get_demand_signals", map[string]any{}, nil))
	for _, s := range signals.Signals {
		if s.SaleID != fixtures.LiveSaleID {
			t.Errorf("demand signal of %q", s.SaleID)
		}
	}
	runs := dataAs[catalog.ListImportRunsOutput](t, callOn(t, cs, "trove_list_import_runs", map[string]any{}, nil))
	for _, r := range runs.Runs {
		if r.SaleID != fixtures.LiveSaleID {
			t.Errorf("run %s of %s", r.ID, r.SaleID)
		}
	}
	events := dataAs[catalog.ListStatusEventsOutput](t, callOn(t, cs, "trove_list_status_events", map[string]any{"limit": 100}, nil))
	batches := dataAs[catalog.ListLabelBatchesOutput](t, callOn(t, cs, "trove_list_label_batches", map[string]any{}, nil))
	if len(cands.Candidates) == 0 || len(runs.Runs) == 0 || len(events.Events) == 0 || len(batches.Batches) != 1 || batches.Batches[0].SaleID != fixtures.LiveSaleID {
		t.Fatalf("scoped lists: %d candidates, %d runs, %d events, batches %+v", len(cands.Candidates), len(runs.Runs), len(events.Events), batches.Batches)
	}
	for _, ev := range events.Events {
		if ev.SaleID != fixtures.LiveSaleID {
			t.Errorf("status event of %s", ev.SaleID)
		}
	}

	before := e.digest()
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"trove_get_sale", map[string]any{"sale_id": fixtures.PublishedSaleID}},
		{"trove_get_item", map[string]any{"item_id": fixtures.DemoItemID}},
		{"trove_get_candidate", map[string]any{"candidate_id": fixtures.DemoCandidateID}},
		{"trove_get_import_run", map[string]any{"run_id": "run_844"}},
		{"trove_list_items", map[string]any{"sale_id": fixtures.PublishedSaleID}},
		{"trove_list_candidates", map[string]any{"sale_id": fixtures.DraftSaleID}},
		{"trove_get_demand_signals", map[string]any{"sale_id": fixtures.PublishedSaleID}},
		{"trove_list_import_runs", map[string]any{"sale_id": fixtures.DraftSaleID}},
		{"trove_list_status_events", map[string]any{"item_id": fixtures.DemoItemID}},
		{"trove_list_status_events", map[string]any{"sale_id": fixtures.ClosedSaleID}},
		{"trove_list_label_batches", map[string]any{"sale_id": fixtures.PublishedSaleID}},
		{"trove_get_disposition_queue", map[string]any{"sale_id": fixtures.ClosedSaleID}},
	} {
		env := callOn(t, cs, c.tool, c.args, nil)
		wantCode(t, env, "blocked", "sale_assignment_required")
		if strings.Contains(env.raw, fixtures.PublishedSaleID) && c.args["sale_id"] != fixtures.PublishedSaleID {
			t.Errorf("%s names a sale the caller did not: %s", c.tool, env.raw)
		}
	}
	assertOnlyEventsChanged(t, before, e.digest())
	// Another tenant's sale is unknown, not unassigned.
	wantCode(t, callOn(t, cs, "trove_get_sale", map[string]any{"sale_id": fixtures.OtherPublishedSaleID}, nil), "failed", "invalid_reference")
	if env := callOn(t, cs, "trove_get_sale", map[string]any{"sale_id": fixtures.LiveSaleID}, nil); env.Status != "succeeded" {
		t.Fatalf("assigned sale: %s", env.raw)
	}
	if env := callOn(t, cs, "trove_get_item", map[string]any{"item_id": items[0]}, nil); env.Status != "succeeded" {
		t.Fatalf("item of the assigned sale: %s", env.raw)
	}
}

// Bad input: malformed or foreign cursors, limits out of range, unknown
// filter values get the right code, name the field, and leak nothing.
func TestReads_BadInputRightCodeNothingLeaked(t *testing.T) {
	e := readsEnv(t)
	cursorOf := func(cs *mcp.ClientSession, tool string, args map[string]any, field string) string {
		t.Helper()
		env := callOn(t, cs, tool, args, nil)
		var d map[string]json.RawMessage
		_ = json.Unmarshal(env.Data, &d)
		var c string
		if err := json.Unmarshal(d[field], &c); err != nil || c == "" {
			t.Fatalf("%s gave no cursor: %s", tool, env.raw)
		}
		return c
	}
	other := sessionFor(e, fixtures.OtherTenantID, fixtures.OtherOwnerUserID)
	itemsCursor := cursorOf(e.cs, "trove_list_items", map[string]any{"limit": 1}, "next_cursor")
	salesCursor := cursorOf(e.cs, "trove_list_sales", map[string]any{"limit": 1}, "next_cursor")
	otherItemsCursor := cursorOf(other, "trove_list_items", map[string]any{"limit": 1}, "next_cursor")
	recordsCursor := cursorOf(e.cs, "trove_get_import_run", map[string]any{"run_id": "run_848", "limit": 2}, "records_next_cursor")
	queueCursor := cursorOf(e.cs, "trove_get_disposition_queue", map[string]any{"sale_id": fixtures.ClosedSaleID, "limit": 2}, "next_cursor")
	searchCursor := cursorOf(e.cs, "trove_search_marketplace", map[string]any{"limit": 2}, "next_cursor")
	forged := e.st.Cursors().Encode(domain.CursorMarketplace, domain.PublicTenant, domain.Keyset{Key: "not-a-number", ID: "item_1"})
	cases := []struct {
		tool        string
		args        map[string]any
		code, field string
	}{
		{"trove_list_items", map[string]any{"cursor": "!!!"}, "invalid_input", "cursor"},
		{"trove_list_items", map[string]any{"cursor": salesCursor}, "invalid_input", "cursor"},
		{"trove_list_items", map[string]any{"cursor": otherItemsCursor}, "invalid_input", "cursor"},
		{"trove_list_items", map[string]any{"cursor": searchCursor}, "invalid_input", "cursor"},
		{"trove_list_status_events", map[string]any{"cursor": itemsCursor}, "invalid_input", "cursor"},
		{"trove_list_import_runs", map[string]any{"cursor": itemsCursor}, "invalid_input", "cursor"},
		{"trove_list_label_batches", map[string]any{"cursor": itemsCursor}, "invalid_input", "cursor"},
		{"trove_get_import_run", map[string]any{"run_id": "run_844", "cursor": recordsCursor}, "invalid_input", "cursor"},
		{"trove_get_disposition_queue", map[string]any{"sale_id": fixtures.PublishedSaleID, "cursor": queueCursor}, "invalid_input", "cursor"},
		{"trove_search_marketplace", map[string]any{"cursor": itemsCursor}, "invalid_input", "cursor"},
		{"trove_search_marketplace", map[string]any{"cursor": forged}, "invalid_input", "cursor"},
		{"trove_list_items", map[string]any{"limit": 0}, "invalid_input", "limit"},
		{"trove_list_items", map[string]any{"limit": 101}, "invalid_input", "limit"},
		{"trove_list_status_events", map[string]any{"limit": -1}, "invalid_input", "limit"},
		{"trove_search_marketplace", map[string]any{"limit": 51}, "invalid_input", "limit"},
		{"trove_get_import_run", map[string]any{"run_id": "run_848", "limit": 1000}, "invalid_input", "limit"},
		{"trove_list_status_events", map[string]any{"to_status": "stolen"}, "invalid_input", "to_status"},
		{"trove_list_label_batches", map[string]any{"status": "lost"}, "invalid_input", "status"},
		{"trove_list_sales", map[string]any{"status": "cancelled"}, "invalid_input", "status"},
		{"trove_list_items", map[string]any{"room": "Living Room"}, "invalid_input", "room"},
		{"trove_search_marketplace", map[string]any{"category": "Furniture!"}, "invalid_input", "category"},
		{"trove_search_marketplace", map[string]any{"date_from": "2026-02-31"}, "invalid_input", "date_from"},
		{"trove_search_marketplace", map[string]any{"date_from": "2026-07-01", "date_to": "2026-06-01"}, "invalid_input", "date_from"},
		{"trove_search_marketplace", map[string]any{"query": "!!! ???"}, "invalid_input", "query"},
		{"trove_search_marketplace", map[string]any{"query": "a b c d e f g h i"}, "invalid_input", "query"},
		{"trove_search_marketplace", map[string]any{"query": strings.Repeat("x", 201)}, "invalid_input", "query"},
		{"trove_get_item", map[string]any{"item_id": fixtures.PublishedSaleID}, "invalid_input", "item_id"},
		{"trove_get_sale", map[string]any{}, "invalid_input", "arguments"},
		{"trove_get_public_item", map[string]any{"item_id": fixtures.DemoItemID, "tenant": "x"}, "invalid_input", "arguments"},
		{"trove_resolve_public_qr", map[string]any{"qr_code": "QR 221 0001"}, "invalid_input", "qr_code"},
	}
	for i, c := range cases {
		t.Run(fmt.Sprintf("%02d_%s", i, c.tool), func(t *testing.T) {
			before, counts := e.digest(), e.counts()
			env := e.call(c.tool, c.args)
			wantCode(t, env, "failed", c.code)
			if env.Errors[0].Field != c.field {
				t.Errorf("field = %q, want %q (%s)", env.Errors[0].Field, c.field, env.Errors[0].Message)
			}
			low := strings.ToLower(env.raw)
			for _, leak := range []string{"sql", "fts5", "match", "syntax error", "tenant_456", "tenant_123"} {
				if strings.Contains(low, leak) {
					t.Errorf("answer leaks %q: %s", leak, env.raw)
				}
			}
			assertOnlyEventsChanged(t, before, e.digest())
			if d := e.counts()["plugin_events"] - counts["plugin_events"]; d != 1 {
				t.Errorf("wrote %d events, want the call's own", d)
			}
		})
	}
}

// The scoped reads answer what the fixtures hold.
func TestReads_ScopedToolsAnswerFromFixtures(t *testing.T) {
	e := readsEnv(t)
	sale := dataAs[catalog.GetSaleOutput](t, e.call("trove_get_sale", map[string]any{"sale_id": fixtures.PublishedSaleID})).Sale
	if sale.Version != 4 || sale.AddressPolicy != "hidden_until" || sale.StreetAddress == "" {
		t.Errorf("own sale = %+v", sale) // the seller sees its own address whatever the public policy
	}
	cand := dataAs[catalog.GetCandidateOutput](t, e.call("trove_get_candidate", map[string]any{"candidate_id": "candidate_779"})).Candidate
	if !cand.Untrusted || !strings.Contains(cand.Notes, "Ignore prior instructions") || cand.ImportRunID != "run_848" {
		t.Errorf("candidate = %+v", cand)
	}
	run := dataAs[catalog.GetImportRunOutput](t, e.call("trove_get_import_run", map[string]any{"run_id": "run_848", "limit": 4}))
	if run.Run.SourceKind != "csv_upload" || run.Candidates != (catalog.CandidateCounts{NeedsReview: 3, Approved: 2, Rejected: 1}) ||
		len(run.Records) != 4 || run.RecordsNextCursor == "" || len(run.Records[0].CandidateIDs) != 1 || !run.Records[0].Untrusted {
		t.Errorf("run = %+v", run)
	}
	batches := dataAs[catalog.ListLabelBatchesOutput](t, e.call("trove_list_label_batches", map[string]any{"sale_id": fixtures.PublishedSaleID})).Batches
	tagged := 0
	for _, it := range fixtures.Dataset().Items {
		if it.SaleID == fixtures.PublishedSaleID && it.QRCode != "" {
			tagged++
		}
	}
	if len(batches) != 2 || batches[0].LabelCount+batches[1].LabelCount != 150 || batches[0].BoundCount+batches[1].BoundCount != tagged {
		t.Errorf("batches = %+v; %d tagged items", batches, tagged)
	}
	events := dataAs[catalog.ListStatusEventsOutput](t, e.call("trove_list_status_events", map[string]any{"item_id": fixtures.DemoItemID})).Events
	if len(events) != 2 || events[0].ToStatus != domain.ItemPublished || events[1].ToStatus != domain.ItemReady || events[0].ProposalID != nil {
		t.Errorf("item_991 history = %+v", events)
	}
	queue := dataAs[catalog.GetDispositionQueueOutput](t, e.call("trove_get_disposition_queue", map[string]any{"sale_id": fixtures.ClosedSaleID, "limit": 100}))
	for _, en := range queue.Entries {
		if *en.Item.Status != domain.ItemPublished || *en.Item.SaleID != fixtures.ClosedSaleID || en.QueuedAt.IsZero() {
			t.Errorf("queue entry = %+v", en)
		}
	}
	if open := dataAs[catalog.GetDispositionQueueOutput](t, e.call("trove_get_disposition_queue", map[string]any{"sale_id": fixtures.LiveSaleID})); len(open.Entries) != 0 {
		t.Errorf("a live sale has a disposition queue: %+v", open.Entries)
	}
	pricer := sessionFor(e, fixtures.DemoTenantID, fixtures.PricerUserID)
	item := dataAs[catalog.GetItemOutput](t, callOn(t, pricer, "trove_get_item", map[string]any{"item_id": fixtures.DemoItemID}, nil)).Item
	if h := item.PricingHistory; len(h) != 2 || *h[1].PriceCents != 45000 || *h[0].PriceCents != 49500 {
		t.Errorf("item_991 pricing history = %+v", h)
	}
	checkout := sessionFor(e, fixtures.DemoTenantID, fixtures.CheckoutUserID)
	for status, want := range map[string][]string{
		domain.ItemPublished: {domain.ItemOnHold, domain.ItemPendingPickup, domain.ItemSold},
		domain.ItemSold:      {},
	} {
		var id string
		for _, it := range fixtures.Dataset().Items {
			if it.SaleID == fixtures.LiveSaleID && it.Status == status {
				id = it.ID
				break
			}
		}
		got := dataAs[catalog.GetItemOutput](t, callOn(t, checkout, "trove_get_item", map[string]any{"item_id": id}, nil)).Item
		if !slices.Equal(got.CheckoutActions, want) || got.CheckoutActions == nil || got.QRCode == nil {
			t.Errorf("checkout view of a %s item = %+v", status, got)
		}
	}
}

// Found by the attack review of issue 18: a role reads no item field
// through another door. A candidate's supplied price (the item's price
// once a promotion keeps it) is shown only to roles that see prices, in
// the list, the get and the review; and a list filter on a field the
// role's projection hides is refused, changing nothing.
func TestProjection_NoFieldThroughCandidatesOrFilters(t *testing.T) {
	e := readsEnv(t)
	var priced domain.Candidate
	for _, c := range fixtures.Dataset().Candidates {
		if c.TenantID == fixtures.DemoTenantID && c.SuppliedPriceCents != nil {
			priced = c
			break
		}
	}
	if priced.ID == "" {
		t.Fatal("no fixture candidate has a supplied price")
	}
	var room string
	for _, it := range fixtures.Dataset().Items {
		if it.TenantID == fixtures.DemoTenantID && it.Room != "" {
			room = it.Room
			break
		}
	}
	checked := 0
	for role, user := range staffOf {
		cs := sessionFor(e, fixtures.DemoTenantID, user)
		fields := catalog.ItemFieldsFor(role)
		seesPrice := slices.Contains(fields, "price_cents")

		if got := callOn(t, cs, "trove_get_candidate", map[string]any{"candidate_id": priced.ID}, nil); got.Status == "succeeded" {
			checked++
			c := dataAs[catalog.GetCandidateOutput](t, got).Candidate
			if (c.SuppliedPriceCents != nil) != seesPrice || seesPrice && *c.SuppliedPriceCents != *priced.SuppliedPriceCents {
				t.Errorf("%s: trove_get_candidate supplied price = %v; sees prices: %v", role, c.SuppliedPriceCents, seesPrice)
			}
			list := dataAs[catalog.ListCandidatesOutput](t, callOn(t, cs, "trove_list_candidates", map[string]any{"sale_id": priced.SaleID, "limit": 100}, nil))
			i := slices.IndexFunc(list.Candidates, func(s catalog.CandidateSummary) bool { return s.ID == priced.ID })
			if i < 0 || (list.Candidates[i].SuppliedPriceCents != nil) != seesPrice {
				t.Errorf("%s: trove_list_candidates row of %s = %+v; sees prices: %v", role, priced.ID, list.Candidates, seesPrice)
			}
		}

		// An import run's source records: payloads only to roles that see
		// prices (a record may carry one).
		if got := callOn(t, cs, "trove_get_import_run", map[string]any{"run_id": priced.ImportRunID}, nil); got.Status == "succeeded" {
			var run struct {
				Records []struct {
					Payload  string `json:"payload"`
					Withheld bool   `json:"payload_withheld"`
				} `json:"records"`
			}
			if err := json.Unmarshal(got.Data, &run); err != nil || len(run.Records) == 0 {
				t.Fatalf("%s: import run: %s", role, got.raw)
			}
			for _, r := range run.Records {
				if r.Withheld == seesPrice || (r.Payload == "") != r.Withheld {
					t.Errorf("%s: record payload %q withheld=%v; sees prices: %v", role, r.Payload, r.Withheld, seesPrice)
				}
			}
		}
		// A proposal refused because the item has a tag does not name it.
		if !slices.Contains(fields, "qr_code") {
			tagged := fullItem(t)
			ref := callOn(t, cs, "trove_propose_identity_binding", map[string]any{"item_id": tagged.ID, "expected_version": tagged.Version,
				"action": "bind", "qr_code": "QR-999-9999", "idempotency_key": "leak-" + role + "-0001"}, nil)
			if strings.Contains(ref.raw, tagged.QRCode) {
				t.Errorf("%s: a refusal names the item's hidden tag: %s", role, ref.raw)
			}
		}

		before := e.digest()
		got := callOn(t, cs, "trove_list_items", map[string]any{"room": room}, nil)
		if slices.Contains(fields, "room") {
			if got.Status != "succeeded" || len(dataAs[rawItems](t, got).Items) == 0 {
				t.Errorf("%s may read rooms, yet filtering by room %q: %s", role, room, got.raw)
			}
			continue
		}
		wantCode(t, got, "failed", "invalid_input")
		if !strings.Contains(got.raw, `"room"`) {
			t.Errorf("%s: the refusal does not name the field: %s", role, got.raw)
		}
		assertOnlyEventsChanged(t, before, e.digest())
		checked++
	}
	if checked < 4 {
		t.Fatalf("checked %d role cases", checked)
	}
}
