package contract

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/domain"
)

// runHardeningQuota: issue 13's findings 8 (cursors are signed by the
// database's secret) and 11 (a per-tenant quota on the candidate tier).
func runHardeningQuota(t *testing.T, open func(t *testing.T) Instance) {
	t.Run("Hardening/CursorsAreSigned", func(t *testing.T) { testHardeningCursors(t, open(t)) })
	t.Run("Hardening/CandidateQuota", func(t *testing.T) { testHardeningCandidateQuota(t, open(t)) })
	t.Run("Hardening/CandidateBytesQuota", func(t *testing.T) { testHardeningBytesQuota(t, open(t)) })
}

// OldSchemeCursor builds a cursor the way c461580 did: base64url JSON with a
// tenant tag that is a hash of a public string. Anyone could make one.
func OldSchemeCursor(kind, tenantID string, k domain.Keyset) string {
	sum := sha256.Sum256([]byte("trovesnap-cursor:" + tenantID))
	b, _ := json.Marshal(map[string]any{"v": 1, "t": kind, "n": hex.EncodeToString(sum[:4]), "k": k.Key, "i": k.ID})
	return base64.RawURLEncoding.EncodeToString(b)
}

func wantBadCursor(t *testing.T, err error, what string) {
	t.Helper()
	var ie *domain.InputError
	if !errors.As(err, &ie) || ie.Field != "cursor" || ie.Reason != "not a cursor of this list: start again without a cursor" {
		t.Fatalf("%s: err = %v, want invalid_input on cursor", what, err)
	}
}

func testHardeningCursors(t *testing.T, in Instance) {
	b := in.Backend
	p, other := resolve(t, b, CredOwner), resolve(t, b, CredOther)
	first, err := b.ListItems(ctx, p, domain.ItemQuery{Limit: 2})
	if err != nil || len(first.Rows) != 2 || first.NextCursor == "" {
		t.Fatalf("first page: %d rows, cursor %q, %v", len(first.Rows), first.NextCursor, err)
	}
	// A real cursor opens and pages on from the last row.
	k, err := b.OpenCursor(ctx, p, "items", first.NextCursor)
	if err != nil || k == nil || k.ID != first.Rows[1].ID {
		t.Fatalf("real cursor = %+v, %v; want the position after %s", k, err, first.Rows[1].ID)
	}
	second, err := b.ListItems(ctx, p, domain.ItemQuery{Limit: 2, After: k})
	if err != nil || len(second.Rows) == 0 || second.Rows[0].ID == first.Rows[0].ID || second.Rows[0].ID == first.Rows[1].ID {
		t.Fatalf("second page = %+v, %v", second.Rows, err)
	}
	// A forged cursor of the old public scheme, for our own tenant.
	_, err = b.OpenCursor(ctx, p, "items", OldSchemeCursor("items", p.TenantID, *k))
	wantBadCursor(t, err, "an old-scheme cursor")
	// One byte flipped, anywhere.
	for i := range len(first.NextCursor) {
		c := []byte(first.NextCursor)
		switch {
		case c[i] == 'A':
			c[i] = 'B'
		default:
			c[i] = 'A'
		}
		_, err := b.OpenCursor(ctx, p, "items", string(c))
		wantBadCursor(t, err, fmt.Sprintf("byte %d flipped", i))
	}
	// Truncated, extended, another list's, another tenant's.
	_, err = b.OpenCursor(ctx, p, "items", first.NextCursor[:len(first.NextCursor)-1])
	wantBadCursor(t, err, "a truncated cursor")
	_, err = b.OpenCursor(ctx, p, "items", first.NextCursor+"A")
	wantBadCursor(t, err, "an extended cursor")
	_, err = b.OpenCursor(ctx, p, "sales", first.NextCursor)
	wantBadCursor(t, err, "another list's cursor")
	_, err = b.OpenCursor(ctx, other, "items", first.NextCursor)
	wantBadCursor(t, err, "another tenant's cursor")
	// The key and id are readable in the cursor, but replacing the id with
	// another row's keeps the old MAC: refused.
	parts := strings.Split(first.NextCursor, ".")
	parts[2] = base64.RawURLEncoding.EncodeToString([]byte(first.Rows[0].ID))
	_, err = b.OpenCursor(ctx, p, "items", strings.Join(parts, "."))
	wantBadCursor(t, err, "a cursor with another id")
	// The empty cursor is the first page.
	if k, err := b.OpenCursor(ctx, p, "items", ""); err != nil || k != nil {
		t.Fatalf("empty cursor = %+v, %v", k, err)
	}
	// Public lists: the marketplace's cursor is refused for a tenant list.
	page, err := b.SearchMarketplace(ctx, domain.MarketplaceQuery{Limit: 1})
	if err != nil || page.NextCursor == "" {
		t.Fatalf("marketplace page: %v %q", err, page.NextCursor)
	}
	if k, err := b.OpenCursor(ctx, domain.Principal{}, domain.CursorMarketplace, page.NextCursor); err != nil || k == nil {
		t.Fatalf("marketplace cursor = %+v, %v", k, err)
	}
	_, err = b.OpenCursor(ctx, p, "items", page.NextCursor)
	wantBadCursor(t, err, "a marketplace cursor for items")
}

// openCandidates counts the tenant's candidates in review.
func openCandidates(t *testing.T, b domain.Backend, p domain.Principal) int {
	t.Helper()
	n := 0
	for _, status := range []string{domain.ReviewNeedsReview, domain.ReviewApproved} {
		n += len(walk(t, domain.MaxPageSize, func(after *domain.Keyset, limit int) (domain.Page[domain.Candidate], error) {
			return b.ListCandidates(ctx, p, domain.CandidateQuery{ReviewStatus: status, Limit: limit, After: after})
		}, "candidates", cursorsOf(b, p), func(c domain.Candidate) string { return c.ID }))
	}
	return n
}

func quotaRows(n int, prefix string) []domain.ImportRow {
	rows := make([]domain.ImportRow, n)
	for i := range rows {
		rows[i] = domain.ImportRow{Row: i + 1, Kind: domain.CandidateNewItem, Title: fmt.Sprintf("%s %d", prefix, i+1), OriginalHash: "sha256:aa"}
	}
	return rows
}

func setQuota(t *testing.T, in Instance, cands int, bytes int64) {
	t.Helper()
	a := owner(t, in)
	l, err := a.EffectiveLimits(ctx, fixtures.DemoTenantID, "")
	if err != nil {
		t.Fatal(err)
	}
	l.MaxOpenCandidates, l.MaxCandidateBytes = cands, bytes
	if err := a.SetLimits(ctx, fixtures.DemoTenantID, "", l); err != nil {
		t.Fatalf("SetLimits: %v", err)
	}
	if got, err := a.EffectiveLimits(ctx, fixtures.DemoTenantID, fixtures.DemoClientID); err != nil ||
		got.MaxOpenCandidates != cands || got.MaxCandidateBytes != bytes {
		t.Fatalf("effective quota = %+v, %v", got, err)
	}
}

func wantQuota(t *testing.T, err error, quota string) {
	t.Helper()
	var ie *domain.InputError
	if !errors.As(err, &ie) || ie.Field != "quota" || !strings.Contains(ie.Reason, quota) || !strings.Contains(ie.Reason, "trovesnap limits set") {
		t.Fatalf("err = %v, want invalid_input on quota naming %q and how to raise it", err, quota)
	}
}

func testHardeningCandidateQuota(t *testing.T, in Instance) {
	b := in.Backend
	p := resolve(t, b, CredOwner)
	used := openCandidates(t, b, p)
	setQuota(t, in, used+2, domain.DefaultMaxCandidateBytes)

	// Under the quota: a candidate is created.
	nc := domain.NewCandidate{SaleID: fixtures.LiveSaleID, Title: "Quota lamp"}
	if _, _, err := b.CreateCandidate(ctx, p, meta(p, "quota-1", "sha256:q1", "event_q1"), nc); err != nil {
		t.Fatalf("under the quota: %v", err)
	}
	// A CSV apply of 2 rows would take the tenant to used+3: refused whole.
	before := in.Counts(t)
	imp := domain.NewImport{SaleID: fixtures.LiveSaleID, Kind: domain.ImportCSV, SourceLabel: "quota sheet",
		ContentHash: domain.OriginalHash([]byte("csv")), ContentBytes: 3,
		Mapping: []domain.ColumnMapping{{Column: "title", Field: "title"}}, Rows: quotaRows(2, "Quota jar")}
	_, _, err := b.RunImport(ctx, p, ingMeta(p, toolApplyCSV, "quota-csv-1", "sha256:qc1", "event_qc1"), imp)
	wantQuota(t, err, "open candidates")
	if d := changed(before, in.Counts(t)); len(d) > 0 {
		t.Fatalf("a refused CSV apply wrote: %v", d)
	}
	// The last place is taken by one candidate; the next is refused.
	if _, _, err := b.CreateCandidate(ctx, p, meta(p, "quota-2", "sha256:q2", "event_q2"), nc); err != nil {
		t.Fatalf("the last place: %v", err)
	}
	before = in.Counts(t)
	_, _, err = b.CreateCandidate(ctx, p, meta(p, "quota-3", "sha256:q3", "event_q3"), nc)
	wantQuota(t, err, "open candidates")
	if d := changed(before, in.Counts(t)); len(d) > 0 {
		t.Fatalf("a refused candidate wrote: %v", d)
	}
	if got := openCandidates(t, b, p); got != used+2 {
		t.Fatalf("open candidates = %d, want %d", got, used+2)
	}
	// Another tenant is not affected by this tenant's quota.
	o := resolve(t, b, CredOther)
	if _, _, err := b.CreateCandidate(ctx, o, meta(o, "quota-o1", "sha256:o1", "event_qo1"),
		domain.NewCandidate{SaleID: fixtures.OtherDraftSaleID, Title: "Other lamp"}); err != nil {
		t.Fatalf("another tenant: %v", err)
	}
	// Raised by the seller: the same CSV apply goes through.
	setQuota(t, in, used+4, domain.DefaultMaxCandidateBytes)
	res, _, err := b.RunImport(ctx, p, ingMeta(p, toolApplyCSV, "quota-csv-2", "sha256:qc1", "event_qc2"), imp)
	if err != nil || res.CandidateCount != 2 {
		t.Fatalf("after raising the quota: %+v, %v", res, err)
	}
}

func testHardeningBytesQuota(t *testing.T, in Instance) {
	b := in.Backend
	p := resolve(t, b, CredOwner)
	// A quota of 1 byte: every write that stores bytes is refused.
	setQuota(t, in, domain.DefaultMaxOpenCandidates, 1)
	before := in.Counts(t)
	_, _, err := b.CreateCandidate(ctx, p, meta(p, "bytes-1", "sha256:b1", "event_b1"),
		domain.NewCandidate{SaleID: fixtures.LiveSaleID, Title: "Bytes lamp", Description: strings.Repeat("long ", 100)})
	wantQuota(t, err, "candidate storage bytes")
	imp := domain.NewImport{SaleID: fixtures.LiveSaleID, Kind: domain.ImportManual, Rows: quotaRows(3, "Bytes jar")}
	_, _, err = b.RunImport(ctx, p, ingMeta(p, toolManualImport, "bytes-2", "sha256:b2", "event_b2"), imp)
	wantQuota(t, err, "candidate storage bytes")
	if d := changed(before, in.Counts(t)); len(d) > 0 {
		t.Fatalf("refused writes wrote: %v", d)
	}
	// Back to the default: the same import succeeds.
	setQuota(t, in, domain.DefaultMaxOpenCandidates, domain.DefaultMaxCandidateBytes)
	if res, _, err := b.RunImport(ctx, p, ingMeta(p, toolManualImport, "bytes-2", "sha256:b2", "event_b3"), imp); err != nil || res.CandidateCount != 3 {
		t.Fatalf("under the default quota: %+v, %v", res, err)
	}
}
