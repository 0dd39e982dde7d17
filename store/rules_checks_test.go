package store

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// The SQLite schema's CHECK constraints spell out each status list (a
// SQLite CHECK cannot call Go, and the embedded migrations are
// append-only), so they are held to internal/domain's lists here: the
// rule is declared once in domain, and this table is where the store's
// copy is tested against it.
func TestRulesChecks_SQLiteStatusListsAreTheDomains(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trovesnap.db")
	openAt(t, path)
	db := rawDB(t, path)
	for _, c := range []struct {
		table, column string
		want          []string
	}{
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
		{"event_outbox", "state", []string{OutboxPending, OutboxSent, OutboxRejected}},
	} {
		var ddl string
		if err := db.QueryRow(`SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?`, c.table).Scan(&ddl); err != nil {
			t.Fatalf("%s: %v", c.table, err)
		}
		m := regexp.MustCompile(`(?s)\b` + c.column + `\s+IN\s*\(([^)]*)\)`).FindStringSubmatch(ddl)
		if m == nil {
			t.Errorf("%s.%s: no CHECK (… IN (…)) in %s", c.table, c.column, ddl)
			continue
		}
		var got []string
		for _, v := range strings.Split(m[1], ",") {
			got = append(got, strings.Trim(strings.TrimSpace(v), "'"))
		}
		slices.Sort(got)
		want := slices.Sorted(slices.Values(c.want))
		if !slices.Equal(got, want) {
			t.Errorf("%s.%s: the SQLite CHECK allows %v, domain declares %v", c.table, c.column, got, want)
		}
	}
}
