package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// A cursor is bound to the database file that made it: another file (its
// own secret) refuses it, and reopening the same file keeps the secret.
func TestHardening_CursorFromAnotherDatabaseIsRefused(t *testing.T) {
	dir := t.TempDir()
	a := openAt(t, filepath.Join(dir, "a.db"), freshlySeeded)
	b := openAt(t, filepath.Join(dir, "b.db"), freshlySeeded)
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

// limitDefaults are the Go defaults the SQL must repeat, by mcp_limits
// column (and so by the key of the limits' JSON).
func limitDefaults() map[string]float64 {
	d := domain.DefaultLimits()
	return map[string]float64{
		"read_calls_per_minute":         float64(d.ReadsPerMinute),
		"candidate_writes_per_minute":   float64(d.CandidateWritesPerMinute),
		"proposals_per_minute":          float64(d.ProposalsPerMinute),
		"controlled_actions_per_minute": float64(d.ControlledActionsPerMinute),
		"maximum_bulk_targets":          float64(d.MaxBulkTargets),
		"maximum_daily_paid_cost_usd":   d.MaxDailyPaidCostUSD,
		"rejected_calls_per_minute":     float64(domain.DefaultRejectedPerMinute),
		"maximum_open_candidates":       float64(domain.DefaultMaxOpenCandidates),
		"maximum_candidate_bytes":       float64(domain.DefaultMaxCandidateBytes),
	}
}

// The limit defaults live in Go (domain.DefaultLimits and its constants)
// and, as literals, in the SQL of both backends' migrations: every
// ifnull/coalesce of a limit column, every JSON object of default limits
// and every per-class CASE of defaults, in every migration file, must say
// what Go says. A default the patterns see but cannot read fails too, and
// so do too few matches (a pattern that no longer matches anything).
func TestHardening_QuotaAndLimitDefaultsAgreeWithTheSQL(t *testing.T) {
	defaults := limitDefaults()
	if l := domain.DefaultLimits(); l.RejectedPerMinute != domain.DefaultRejectedPerMinute ||
		l.MaxOpenCandidates != domain.DefaultMaxOpenCandidates || l.MaxCandidateBytes != domain.DefaultMaxCandidateBytes {
		t.Fatalf("DefaultLimits = %+v disagrees with the Default constants", l)
	}
	// A stored 0 is the default where Go's Effective says so (the rejected
	// budget, the quota): coalesce(p_x, 0) stores a default there.
	zeroIsDefault := map[string]bool{}
	var zero domain.Limits
	eff := zero.Effective()
	zeroIsDefault["rejected_calls_per_minute"] = eff.RejectedPerMinute != 0
	zeroIsDefault["maximum_open_candidates"] = eff.MaxOpenCandidates != 0
	zeroIsDefault["maximum_candidate_bytes"] = eff.MaxCandidateBytes != 0

	cols := slices.Sorted(maps.Keys(defaults))
	colAlt := strings.Join(cols, "|")
	num := `(\d+(?:\.\d+)?)`
	// Every ifnull/coalesce whose first argument is a limit column, read or
	// not: the strict patterns below must account for each.
	loose := regexp.MustCompile(`(?is)\b(?:ifnull|coalesce)\(\s*(?:nullif\(\s*|\(\s*select\s+)?(?:\w+\.|p_)?(?:` + colAlt + `)\b`)
	strict := []*regexp.Regexp{
		// coalesce((SELECT l.col FROM ... WHERE ...), N)
		regexp.MustCompile(`(?is)\b(?:ifnull|coalesce)\(\s*\(\s*select\s+\w+\.(` + colAlt + `)\s+from\s(?:[^()]|\([^()]*\))*\)\s*,\s*` + num + `\s*\)`),
		// coalesce(nullif(t.col, 0), N)
		regexp.MustCompile(`(?is)\b(?:ifnull|coalesce)\(\s*nullif\(\s*(?:\w+\.)?(` + colAlt + `)\s*,\s*0\s*\)\s*,\s*` + num + `\s*\)`),
		// coalesce(t.col, N), coalesce(p_col, N)
		regexp.MustCompile(`(?is)\b(?:ifnull|coalesce)\(\s*(\w+\.|p_)?(` + colAlt + `)\s*,\s*` + num + `\s*\)`),
	}
	// jsonb_build_object('col', N, ...): the JSON of default limits.
	jsonKey := regexp.MustCompile(`(?i)'(` + colAlt + `)'\s*,\s*` + num + `\s*[,)]`)
	// CASE p_class WHEN 'reads' THEN N ... ELSE N END: the ELSE is the
	// controlled actions (the one class these CASEs never name).
	caseExpr := regexp.MustCompile(`(?is)CASE\s+p_class\s+((?:WHEN\s+'\w+'\s+THEN\s+\d+\s+)+)ELSE\s+(\d+)\s+END`)
	caseWhen := regexp.MustCompile(`(?i)WHEN\s+'(\w+)'\s+THEN\s+(\d+)`)

	storeFiles, err := filepath.Glob(filepath.Join("migrations", "*.sql"))
	if err != nil || len(storeFiles) == 0 {
		t.Fatalf("store migrations: %v %v", storeFiles, err)
	}
	liveFiles, err := filepath.Glob(filepath.Join("..", "supabase", "migrations", "*.sql"))
	if err != nil || len(liveFiles) == 0 {
		t.Fatalf("live migrations: %v %v", liveFiles, err)
	}
	embedded, err := fs.Glob(migrationsFS, "migrations/*.sql")
	if err != nil || len(embedded) != len(storeFiles) {
		t.Fatalf("%d embedded store migrations, %d on disk (%v)", len(embedded), len(storeFiles), err)
	}

	matches := map[string]int{} // "store"/"live" → matches
	seen := map[string]map[string]bool{"store": {}, "live": {}}
	check := func(file, col, lit string, zeroOK bool) {
		t.Helper()
		v, err := strconv.ParseFloat(lit, 64)
		switch {
		case err != nil:
			t.Errorf("%s: %s default %q is not a number", file, col, lit)
		case v == defaults[col]:
		case v == 0 && zeroOK && zeroIsDefault[col]:
		default:
			t.Errorf("%s: %s default %s, Go says %s", file, col, lit, strconv.FormatFloat(defaults[col], 'f', -1, 64))
		}
	}
	for _, f := range append(slices.Clone(storeFiles), liveFiles...) {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		// Whole-line comments are prose, not defaults.
		var b strings.Builder
		for _, line := range strings.Split(string(body), "\n") {
			if !strings.HasPrefix(strings.TrimSpace(line), "--") {
				b.WriteString(line + "\n")
			}
		}
		sql, name := b.String(), filepath.Base(f)
		side := "store"
		if strings.Contains(f, "supabase") {
			side = "live"
		}
		found := func(col string) {
			matches[side]++
			seen[side][col] = true
		}
		read := 0
		for i, re := range strict {
			for _, m := range re.FindAllStringSubmatch(sql, -1) {
				col, lit, zeroOK := m[1], m[2], false
				if i == 2 {
					col, lit, zeroOK = m[2], m[3], m[1] == "p_"
				}
				check(name, col, lit, zeroOK)
				found(col)
				read++
			}
		}
		if n := len(loose.FindAllString(sql, -1)); n != read {
			t.Errorf("%s: %d ifnull/coalesce of a limit column, %d read as a default: a new form of default the patterns miss",
				name, n, read)
		}
		for _, m := range jsonKey.FindAllStringSubmatch(sql, -1) {
			check(name, m[1], m[2], false)
			found(m[1])
		}
		for _, m := range caseExpr.FindAllStringSubmatch(sql, -1) {
			for _, w := range caseWhen.FindAllStringSubmatch(m[1], -1) {
				want := domain.DefaultLimits().PerMinute(w[1])
				if got, _ := strconv.Atoi(w[2]); got != want || want == 0 {
					t.Errorf("%s: CASE default of class %s = %s, Go says %d", name, w[1], w[2], want)
				}
				if w[1] == domain.LimitControlledActions {
					t.Errorf("%s: a CASE of defaults names controlled_actions, the ELSE this test reads as it", name)
				}
			}
			if got, _ := strconv.Atoi(m[2]); got != domain.DefaultLimits().PerMinute(domain.LimitControlledActions) {
				t.Errorf("%s: CASE default of class %s = %s, Go says %d", name, domain.LimitControlledActions, m[2],
					domain.DefaultLimits().PerMinute(domain.LimitControlledActions))
			}
			matches[side]++
		}
	}
	t.Logf("defaults read: %v", matches)
	// The store's SQL holds the quota defaults (its triggers); the live SQL
	// every default (effective_limits).
	if matches["store"] < 8 || matches["live"] < 50 {
		t.Errorf("only %v defaults read: the patterns no longer match the migrations", matches)
	}
	for _, col := range []string{"maximum_open_candidates", "maximum_candidate_bytes"} {
		if !seen["store"][col] {
			t.Errorf("no store migration holds a default of %s", col)
		}
	}
	for _, col := range cols {
		if !seen["live"][col] {
			t.Errorf("no live migration holds a default of %s", col)
		}
	}
}
