package store

import (
	"database/sql"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// sqliteCheck is one column CHECK of the SQLite schema that spells out a
// list, and want is its one declaration in internal/domain.
type sqliteCheck struct {
	table, column string
	want          []string
}

func sqliteChecks() []sqliteCheck {
	return []sqliteCheck{
		{"memberships", "role", domain.Roles()},
		{"mcp_clients", "status", domain.ClientStatuses()},
		{"estate_sales", "status", domain.SaleStatuses()},
		{"items", "status", domain.ItemStatuses()},
		{"item_status_events", "from_status", domain.ItemStatuses()},
		{"item_status_events", "to_status", domain.ItemStatuses()},
		{"item_status_events", "source_type", domain.StatusSources()},
		{"label_batches", "status", domain.LabelBatchStatuses()},
		{"inventory_candidates", "review_status", domain.ReviewStatuses()},
		{"candidate_item_changes", "reported_status", domain.ReportableStatuses},
		{"proposals", "status", domain.ProposalStatuses()},
		{"approval_grants", "status", domain.GrantStatuses()},
		{"approval_grants", "issuer_type", domain.GrantIssuers()},
		{"automation_policies", "status", domain.PolicyStatuses()},
		{"plugin_events", "outcome", domain.Outcomes()},
		{"mcp_clients", "trust_level", domain.TrustLevels},
		{"mcp_clients", "risk_class", domain.RiskClasses},
		{"estate_sales", "visibility", domain.SaleVisibilities()},
		{"estate_sales", "address_policy", domain.AddressPolicies()},
		{"candidate_item_changes", "kind", domain.ItemChangeKinds()},
		{"source_assets", "mime_type", domain.MediaTypes},
		{"export_drafts", "channel", domain.ExportChannels},
		{"export_drafts", "status", domain.ExportStatuses()},
		{"simulated_deliveries", "kind", domain.OutboundKinds()},
		// '' on rows written before migration 0013 kept the scan.
		{"checkout_scans", "scan", append([]string{""}, domain.CheckoutScans()...)},
		{"event_outbox", "state", []string{OutboxPending, OutboxSent, OutboxRejected}},
	}
}

// The SQLite schema's CHECK constraints spell out each status list (a
// SQLite CHECK cannot call Go, and the embedded migrations are
// append-only), so they are held to internal/domain's lists here: the
// rule is declared once in domain, and this table is where the store's
// copy is tested against it.
func TestRulesChecks_SQLiteStatusListsAreTheDomains(t *testing.T) {
	db := schemaDB(t)
	for _, c := range sqliteChecks() {
		var ddl string
		if err := db.QueryRow(`SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?`, c.table).Scan(&ddl); err != nil {
			t.Fatalf("%s: %v", c.table, err)
		}
		lists := sqliteINLists(ddl, c.column)
		if len(lists) == 0 {
			t.Errorf("%s.%s: no CHECK (… IN (…)) in %s", c.table, c.column, ddl)
			continue
		}
		for _, l := range lists { // every IN-list on the column, not only the first
			if !sameSet(l.vals, c.want) {
				t.Errorf("%s.%s: the SQLite CHECK allows %v, domain declares %v", c.table, c.column, l.vals, c.want)
			}
		}
	}
}

// quotaTriggers are the triggers of migration 0010 that keep
// tenant_usage.open_candidates: each tests a candidate's review status
// against the open ones, more than once.
var quotaTriggers = []string{"inventory_candidates_usage_insert", "inventory_candidates_usage_review", "inventory_candidates_usage_delete"}

// The open-candidate quota is counted by triggers (SQLite cannot call Go),
// so every review_status IN-list in them is held to the domain's open
// review statuses: a candidate counts exactly while it may be promoted.
func TestRulesChecks_SQLiteQuotaTriggersCountTheDomainsOpenCandidates(t *testing.T) {
	db := schemaDB(t)
	for _, name := range quotaTriggers {
		var ddl string
		if err := db.QueryRow(`SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = ?`, name).Scan(&ddl); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		lists := sqliteINLists(ddl, `(?:NEW|OLD)\.review_status`)
		if len(lists) == 0 {
			t.Errorf("%s: no review_status IN (…) in %s", name, ddl)
		}
		for _, l := range lists {
			if !sameSet(l.vals, domain.OpenReviewStatuses()) {
				t.Errorf("%s: counts review_status IN %v as open, domain declares %v", name, l.vals, domain.OpenReviewStatuses())
			}
		}
	}
}

// sqliteNotARule names the IN-lists of the SQLite schema that no domain
// list declares, each with why it is not a rule of its own.
var sqliteNotARule = map[string]string{
	"table search_keys kind": "the search index's own row discriminator (a sale or an item row), written and read only by the index SQL",
}

// Every IN-list the SQLite schema keeps (tables, triggers, indexes, views)
// is either held above or named in sqliteNotARule: a list added to a new
// migration fails here until it is held to its domain declaration.
func TestRulesChecks_EverySQLiteListIsHeld(t *testing.T) {
	held := map[string]bool{}
	for _, c := range sqliteChecks() {
		held["table "+c.table+" "+c.column] = true
	}
	for _, name := range quotaTriggers {
		held["trigger "+name+" review_status"] = true
	}
	rows, err := schemaDB(t).Query(`SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	seen := map[string]bool{}
	for rows.Next() {
		var typ, name, ddl string
		if err := rows.Scan(&typ, &name, &ddl); err != nil {
			t.Fatal(err)
		}
		for _, l := range sqliteINLists(ddl, `[\w.]+`) {
			lhs := l.lhs[strings.LastIndex(l.lhs, ".")+1:]
			key := typ + " " + name + " " + lhs
			seen[key] = true
			if !held[key] && sqliteNotARule[key] == "" {
				t.Errorf("%s: %s IN %v is neither held to a domain list nor in sqliteNotARule", typ+" "+name, l.lhs, l.vals)
			}
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for key := range sqliteNotARule {
		if !seen[key] {
			t.Errorf("sqliteNotARule names %q, which the schema no longer has", key)
		}
	}
}

func schemaDB(t *testing.T) *sql.DB {
	t.Helper()
	path := filepath.Join(t.TempDir(), "trovesnap.db")
	openAt(t, path)
	return rawDB(t, path)
}

// sqliteList is one IN-list of string literals in a schema text.
type sqliteList struct {
	lhs  string
	vals []string
}

// sqliteINLists finds the IN-lists of string literals whose left-hand side
// matches the pattern lhs (an IN over a subquery is not a list).
func sqliteINLists(ddl, lhs string) []sqliteList {
	re := regexp.MustCompile(`(?is)(?:^|[^\w.])(` + lhs + `)\)?\s+(?:NOT\s+)?IN\s*\(\s*('[^)]*)\)`)
	var out []sqliteList
	for _, m := range re.FindAllStringSubmatch(ddl, -1) {
		l := sqliteList{lhs: m[1]}
		for _, v := range strings.Split(m[2], ",") {
			l.vals = append(l.vals, strings.Trim(strings.TrimSpace(v), "'"))
		}
		out = append(out, l)
	}
	return out
}

func sameSet(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}
