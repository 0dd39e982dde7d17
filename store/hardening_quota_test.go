package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// A cursor is bound to the database file that made it: another file (its
// own secret) refuses it, and reopening the same file keeps the secret.
func TestHardening_CursorFromAnotherDatabaseIsRefused(t *testing.T) {
	dir := t.TempDir()
	a := openAt(t, filepath.Join(dir, "a.db"))
	b := openAt(t, filepath.Join(dir, "b.db"))
	p := principal(t, a, "")
	page, err := a.ListItems(context.Background(), p, domain.ItemQuery{Limit: 1})
	if err != nil || page.NextCursor == "" {
		t.Fatalf("page: %v %q", err, page.NextCursor)
	}
	if k, err := a.OpenCursor(context.Background(), p, CursorItems, page.NextCursor); err != nil || k == nil {
		t.Fatalf("own cursor: %+v, %v", k, err)
	}
	var ie *domain.InputError
	if _, err := b.OpenCursor(context.Background(), p, CursorItems, page.NextCursor); !errors.As(err, &ie) || ie.Field != "cursor" {
		t.Fatalf("another database's cursor: %v", err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := Open(context.Background(), filepath.Join(dir, "a.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = again.Close() }()
	if k, err := again.OpenCursor(context.Background(), p, CursorItems, page.NextCursor); err != nil || k == nil {
		t.Fatalf("after reopening: %+v, %v", k, err)
	}
}

// tenant_usage, kept by triggers, equals what the rows add up to, after
// seeding, writes, a review decision and a fixtures reset.
func TestHardening_TenantUsageMatchesTheRows(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	check := func(when string) {
		t.Helper()
		rows, err := s.r.QueryContext(ctx, `SELECT t.id,
			(SELECT count(*) FROM inventory_candidates c WHERE c.tenant_id = t.id AND c.review_status IN ('needs_review', 'approved')),
			(SELECT ifnull(sum(256 + length(CAST(c.title AS BLOB)) + length(CAST(c.description AS BLOB)) + length(CAST(c.category AS BLOB))
				+ length(CAST(c.room AS BLOB)) + length(CAST(c.condition AS BLOB)) + length(CAST(c.notes AS BLOB))), 0)
				FROM inventory_candidates c WHERE c.tenant_id = t.id)
			+ (SELECT ifnull(sum(256 + length(CAST(r.payload AS BLOB))), 0) FROM source_records r WHERE r.tenant_id = t.id)
			+ (SELECT ifnull(sum(a.byte_size), 0) FROM source_assets a WHERE a.tenant_id = t.id)
			+ (SELECT ifnull(sum(256 + length(CAST(d.title AS BLOB)) + length(CAST(d.description AS BLOB))
				+ length(CAST(d.segments AS BLOB))), 0) FROM draft_revisions d WHERE d.tenant_id = t.id)
			+ (SELECT ifnull(sum(256 + length(CAST(x.warnings AS BLOB))), 0) FROM export_drafts x WHERE x.tenant_id = t.id)
			+ (SELECT ifnull(sum(256 + length(CAST(x.snapshot AS BLOB)) + length(CAST(x.warnings AS BLOB))), 0)
				FROM export_draft_items x WHERE x.tenant_id = t.id),
			ifnull((SELECT open_candidates FROM tenant_usage u WHERE u.tenant_id = t.id), 0),
			ifnull((SELECT candidate_bytes FROM tenant_usage u WHERE u.tenant_id = t.id), 0)
			FROM tenants t`)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = rows.Close() }()
		n := 0
		for rows.Next() {
			var id string
			var wantOpen, wantBytes, open, bytes int64
			if err := rows.Scan(&id, &wantOpen, &wantBytes, &open, &bytes); err != nil {
				t.Fatal(err)
			}
			if open != wantOpen || bytes != wantBytes {
				t.Errorf("%s: %s usage = %d open, %d bytes; the rows say %d, %d", when, id, open, bytes, wantOpen, wantBytes)
			}
			n++
		}
		if n == 0 {
			t.Fatalf("%s: no tenants", when)
		}
	}
	check("seeded")
	p := principal(t, s, "")
	for i := range 3 {
		w := meta(p, fmt.Sprintf("usage-key-%d", i), fmt.Sprintf("sha256:u%d", i), fmt.Sprintf("event_u%d", i))
		if _, _, err := s.CreateCandidate(ctx, p, w, domain.NewCandidate{SaleID: lamp().SaleID, Title: "Ünïcode lamp ✓", Notes: strings.Repeat("n", i*100)}); err != nil {
			t.Fatal(err)
		}
	}
	// The candidate tier's other writes: a staged export, a stored draft.
	if _, _, err := s.StageExport(ctx, p, meta(p, "usage-export", "sha256:ux", "event_ux"),
		domain.NewExport{Channel: domain.ChannelEbay, ItemIDs: []string{"item_a1", "item_a4"}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.DraftListingCopy(ctx, p, meta(p, "usage-draft", "sha256:ud", "event_ud"),
		domain.DraftRequest{CandidateID: "candidate_csv1", Persist: true}); err != nil {
		t.Fatal(err)
	}
	check("after writes")
	if _, err := s.w.ExecContext(ctx, "UPDATE inventory_candidates SET review_status = 'rejected' WHERE id = (SELECT min(id) FROM inventory_candidates WHERE tenant_id = ? AND review_status = 'needs_review')", p.TenantID); err != nil {
		t.Fatal(err)
	}
	check("after a rejection")
	if _, err := s.Reset(ctx, testDataset(), "tester"); err != nil {
		t.Fatal(err)
	}
	check("after reset")
}

// The defaults live in Go (domain.DefaultLimits) and in the SQL of both
// backends' migrations: they must say the same.
func TestHardening_QuotaDefaultsAgreeWithTheSQL(t *testing.T) {
	cands, bytes := fmt.Sprint(domain.DefaultMaxOpenCandidates), fmt.Sprint(domain.DefaultMaxCandidateBytes)
	// Found by name, whatever number the migration ends up with.
	names, err := fs.Glob(migrationsFS, "migrations/*_cursor_secret_quota.sql")
	if err != nil || len(names) != 1 {
		t.Fatalf("store migration: %v %v", names, err)
	}
	store, err := migrationsFS.ReadFile(names[0])
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join("..", "supabase", "migrations", "*_trovesnap_hardening_quota.sql"))
	if err != nil || len(files) != 1 {
		t.Fatalf("live migration: %v %v", files, err)
	}
	live, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	for name, sql := range map[string]string{"store": string(store), "live": string(live)} {
		if !strings.Contains(sql, ", "+cands+")") || !strings.Contains(sql, ", "+bytes+")") {
			t.Errorf("%s migration does not hold the defaults %s and %s", name, cands, bytes)
		}
	}
	l := domain.DefaultLimits()
	if l.MaxOpenCandidates != domain.DefaultMaxOpenCandidates || l.MaxCandidateBytes != domain.DefaultMaxCandidateBytes {
		t.Errorf("DefaultLimits = %+v", l)
	}
}
