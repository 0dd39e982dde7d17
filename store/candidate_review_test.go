package store

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/domain"
)

// Migration 0014 rebuilds inventory_candidates (SQLite cannot change a
// CHECK). On a file seeded at 0013 with the fixtures plus a status report
// (a candidate candidate_item_changes references by foreign key) it keeps
// every row and column value, every index and trigger of the table
// (0001, 0010) with the same text, tenant_usage as it was, and every
// foreign key resolved; and the new CHECK takes 'duplicate'.
func TestMigration0014_RebuildKeepsRowsIndexesTriggersAndUsage(t *testing.T) {
	orig := migrations
	all := orig()
	i := slices.IndexFunc(all, func(m migration) bool { return strings.HasPrefix(m.name, "0014_") })
	if i < 0 {
		t.Fatal("no migration 0014")
	}
	path := filepath.Join(t.TempDir(), "trovesnap.db")
	ds := fixtures.Dataset()
	migrations = func() []migration { return all[:i] }
	s, err := Open(context.Background(), path, Options{Clock: domain.NewFixedClock(epoch), Seed: &ds})
	migrations = orig
	if err != nil {
		t.Fatal(err)
	}
	// A status report: a candidate that candidate_item_changes references,
	// so the rebuild has a referencing row to resolve again.
	p, err := s.ResolvePrincipal(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.CreateStatusReport(context.Background(), p, metaFor(p, "trove_create_status_update_candidate", "mig-1", "sha256:m1", "event_m1"),
		domain.NewStatusReport{ItemID: fixtures.DemoItemID, ReportedStatus: domain.ItemSold, EffectiveAt: epoch, Source: domain.ReportSellerConfirmed}); err != nil {
		t.Fatalf("status report at 0013: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, path)
	schema := func() []string {
		t.Helper()
		return queryStrings(t, db, `SELECT type || ' ' || name || ': ' || sql FROM sqlite_master
			WHERE tbl_name = 'inventory_candidates' AND type IN ('index', 'trigger') AND sql IS NOT NULL ORDER BY type, name`)
	}
	rows := func() []string {
		t.Helper()
		return queryStrings(t, db, `SELECT id || '|' || tenant_id || '|' || sale_id || '|' || kind || '|' || title || '|' || description
			|| '|' || category || '|' || room || '|' || condition || '|' || quantity || '|' || ifnull(supplied_price_cents, 'null')
			|| '|' || notes || '|' || review_status || '|' || ifnull(source_descriptor_id, '') || '|' || ifnull(import_run_id, '')
			|| '|' || ifnull(source_record_id, '') || '|' || ifnull(created_by_client_id, '') || '|' || version || '|' || created_at
			FROM inventory_candidates ORDER BY id`)
	}
	usage := func() []string {
		t.Helper()
		return queryStrings(t, db, `SELECT tenant_id || ' ' || open_candidates || ' ' || candidate_bytes FROM tenant_usage ORDER BY tenant_id`)
	}
	children := queryStrings(t, db, `SELECT 'changes ' || count(*) FROM candidate_item_changes
		UNION ALL SELECT 'provenance ' || count(*) FROM item_provenance`)
	beforeSchema, beforeRows, beforeUsage := schema(), rows(), usage()
	if len(beforeRows) == 0 || len(beforeSchema) != 10 || children[0] == "changes 0" {
		t.Fatalf("seeded at 0013: %d candidates, schema %v, referencing rows %v", len(beforeRows), beforeSchema, children)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = Open(context.Background(), path, Options{Clock: domain.NewFixedClock(epoch)})
	if err != nil {
		t.Fatalf("migrating to 0014: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db = rawDB(t, path)
	if got := schema(); !slices.Equal(got, beforeSchema) {
		t.Errorf("indexes and triggers after 0014:\n%v\nbefore:\n%v", got, beforeSchema)
	}
	if got := rows(); !slices.Equal(got, beforeRows) {
		t.Errorf("rows changed by 0014:\n%v\nbefore:\n%v", got, beforeRows)
	}
	if got := usage(); !slices.Equal(got, beforeUsage) {
		t.Errorf("tenant_usage after 0014 %v, before %v", got, beforeUsage)
	}
	if got := queryStrings(t, db, `SELECT 'changes ' || count(*) FROM candidate_item_changes
		UNION ALL SELECT 'provenance ' || count(*) FROM item_provenance`); !slices.Equal(got, children) {
		t.Errorf("referencing rows %v, before %v", got, children)
	}
	if fk := queryStrings(t, db, `SELECT "table" || ' ' || rowid || ' → ' || parent FROM pragma_foreign_key_check`); len(fk) > 0 {
		t.Errorf("unresolved foreign keys after 0014: %v", fk)
	}
	if _, err := db.Exec(`UPDATE inventory_candidates SET review_status = 'duplicate' WHERE id = (SELECT min(id) FROM inventory_candidates)`); err == nil {
		t.Error("a duplicate naming nothing was stored")
	}
}

func queryStrings(t *testing.T, db *sql.DB, q string) []string {
	t.Helper()
	rs, err := db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rs.Close() }()
	var out []string
	for rs.Next() {
		var v string
		if err := rs.Scan(&v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
