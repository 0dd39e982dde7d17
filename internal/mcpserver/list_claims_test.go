package mcpserver_test

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/triunalabs/trovesnap/internal/catalog"
	"github.com/triunalabs/trovesnap/internal/domain"
)

// An order claim a list tool's description may make, and what it means in
// the store: the column rows are sorted by (ties broken by id, in the same
// direction).
type orderClaim struct {
	phrase string
	column string // an SQL expression that sorts as text
	desc   bool
}

// orderClaims are the phrases a description may use for its order, longest
// first so "newest first by effective time" is not read as "newest first".
var orderClaims = []orderClaim{
	{"newest first by effective time", "effective_at", true},
	{"earliest start first", "starts_at", false},
	{"in file order", "printf('%012d', ordinal)", false},
	{"oldest first", "created_at", false},
	{"newest first", "created_at", true},
}

// orderWords finds anything in a description that sounds like an order
// claim, so a claim outside orderClaims fails instead of going unchecked.
var orderWords = regexp.MustCompile(`(?i)\b(newest|oldest|earliest|latest|most recent|sorted|ordered)\b|\bin [a-z ]*order\b`)

// pagedTools are the catalog's tools that return a page with a cursor:
// every output property ending in next_cursor marks one.
func pagedTools(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for i := range catalog.All() {
		tool := &catalog.All()[i]
		for name := range tool.OutputSchema().Properties {
			if strings.HasSuffix(name, "next_cursor") {
				out[tool.Name] = name
			}
		}
		if _, ok := out[tool.Name]; !ok && strings.HasPrefix(tool.Name, "trove_list_") {
			t.Errorf("%s is a list without a next_cursor", tool.Name)
		}
	}
	return out
}

// What a list tool's description (and its limit field) tells a model is
// what the real store does on the seeded fixtures: the order it claims is
// the order of every row over every page, and the page sizes it states are
// the domain's.
func TestListTools_DescriptionsTellTheTruth(t *testing.T) {
	e := readsEnv(t)
	// How to call each paged tool and find its rows: readExamples
	// (examples_test.go); a paged tool without rows there fails the test.
	lists := map[string]readExample{}
	for name, ex := range readExamples {
		if ex.rows != "" {
			lists[name] = ex
		}
	}
	db, err := sql.Open("sqlite", "file:"+e.path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	paged := pagedTools(t)
	for name := range lists {
		if _, ok := paged[name]; !ok {
			t.Errorf("%s is no longer a paged tool: drop it from this test", name)
		}
	}
	for name, cursorField := range paged {
		l, ok := lists[name]
		if !ok {
			t.Errorf("%s returns a page: say how to call it and where its rows are in readExamples (examples_test.go)", name)
			continue
		}
		tool, _ := catalog.Lookup(name)

		// The claim, if any, is one of the known phrases.
		var claim *orderClaim
		rest := tool.Description
		for i := range orderClaims {
			if strings.Contains(rest, orderClaims[i].phrase) {
				if claim != nil {
					t.Errorf("%s claims two orders", name)
				}
				claim = &orderClaims[i]
				rest = strings.ReplaceAll(rest, claim.phrase, "")
			}
		}
		if w := orderWords.FindString(rest); w != "" {
			t.Errorf("%s: %q is an order claim this test cannot check: %s", name, w, tool.Description)
		}

		// The limit field states the domain's page sizes, and the schema
		// enforces the maximum it states.
		max := domain.MaxPageSize
		if tool.Tier == catalog.TierPublicRead {
			max = domain.MaxSearchPageSize
		}
		limit := tool.InputSchema().Properties["limit"]
		if limit == nil || limit.Maximum == nil || int(*limit.Maximum) != max ||
			!strings.Contains(limit.Description, fmt.Sprintf("(default %d, max %d)", domain.DefaultPageSize, max)) {
			t.Errorf("%s: limit field %+v does not state default %d, max %d", name, limit, domain.DefaultPageSize, max)
		}

		// One page: its rows' ids (when the table says where they are), its
		// row count and the cursor of the next page.
		page := func(args map[string]any) (ids []string, n int, cursor string) {
			t.Helper()
			env := e.call(name, mergeArgs(l.args, args))
			if env.Status != "succeeded" {
				t.Fatalf("%s %v: %s", name, args, env.raw)
			}
			var data map[string]json.RawMessage
			if err := json.Unmarshal(env.Data, &data); err != nil {
				t.Fatal(err)
			}
			var rows []map[string]any
			if err := json.Unmarshal(data[l.rows], &rows); err != nil {
				t.Fatalf("%s: rows %q: %v", name, l.rows, err)
			}
			_ = json.Unmarshal(data[cursorField], &cursor)
			for _, r := range rows {
				if l.id != "" {
					ids = append(ids, idAt(t, r, l.id))
				}
			}
			return ids, len(rows), cursor
		}
		// Every row, page by page at the largest page size.
		var ids []string
		total, cursor := 0, ""
		for {
			more, n, next := page(map[string]any{"limit": max, "cursor": cursor})
			if n > max {
				t.Errorf("%s: %d rows on a page of at most %d", name, n, max)
			}
			ids, total, cursor = append(ids, more...), total+n, next
			if cursor == "" {
				break
			}
		}
		if total < 2 {
			t.Fatalf("%s: the fixtures give %d rows: too few to check an order", name, total)
		}
		// Without a limit, the default page size.
		if _, n, next := page(map[string]any{}); n != min(total, domain.DefaultPageSize) || (next != "") != (total > domain.DefaultPageSize) {
			t.Errorf("%s: the default page has %d of %d rows (next cursor %q), want %d", name, n, total, next, min(total, domain.DefaultPageSize))
		}
		// Above the stated maximum, the schema refuses.
		if over := e.call(name, mergeArgs(l.args, map[string]any{"limit": max + 1})); over.Status != "failed" || len(over.Errors) != 1 || over.Errors[0].Code != "invalid_input" {
			t.Errorf("%s: limit %d is above the stated max, yet: %s", name, max+1, over.raw)
		}

		if claim == nil {
			continue
		}
		if l.table == "" {
			t.Errorf("%s claims %q: give it a table to check against", name, claim.phrase)
			continue
		}
		type keyed struct{ key, id string }
		got := make([]keyed, 0, len(ids))
		distinct := map[string]bool{}
		for _, id := range ids {
			var k string
			if err := db.QueryRow("SELECT "+claim.column+" FROM "+l.table+" WHERE id = ?", id).Scan(&k); err != nil {
				t.Fatalf("%s: %s of %s: %v", name, claim.column, id, err)
			}
			got = append(got, keyed{k, id})
			distinct[k] = true
		}
		if len(distinct) < 2 {
			t.Errorf("%s: every row has the same %s: the fixtures cannot show the order", name, claim.column)
		}
		want := slices.Clone(got)
		slices.SortStableFunc(want, func(a, b keyed) int {
			c := strings.Compare(a.key, b.key)
			if c == 0 {
				c = strings.Compare(a.id, b.id)
			}
			if claim.desc {
				c = -c
			}
			return c
		})
		if !slices.Equal(got, want) {
			t.Errorf("%s claims %q but returns another order:\n got %v\nwant %v", name, claim.phrase, got, want)
		}
	}
}

func mergeArgs(a, b map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// idAt reads a dotted field ("item.id") of a row.
func idAt(t *testing.T, row map[string]any, path string) string {
	t.Helper()
	var v any = row
	for _, part := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("row %v has no %s", row, path)
		}
		v = m[part]
	}
	s, ok := v.(string)
	if !ok {
		t.Fatalf("row %v: %s is not a string", row, path)
	}
	return s
}
