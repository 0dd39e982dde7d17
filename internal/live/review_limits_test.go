package live_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/contract"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/live/pgtest"
)

// storedQuota is the tenant's quota columns as stored (NULL: nil).
func storedQuota(t *testing.T, env *pgtest.Env, tenantID string) (cands, bytes *int64) {
	t.Helper()
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := conn.QueryRow(ctx, `SELECT maximum_open_candidates, maximum_candidate_bytes FROM trovesnap.mcp_limits
		WHERE tenant_id = $1 AND client_id = ''`, tenantID).Scan(&cands, &bytes); err != nil {
		t.Fatal(err)
	}
	return cands, bytes
}

// A seller calling seller_set_quota directly with 0 (Go's "the default")
// gets the default, as Seller.SetLimits does: NULL is stored, the answer
// and the effective limits say the default, and the tenant's candidate
// tier stays open. A 0 an earlier direct call stored reads as the default
// too (effective_limits and usage_add), instead of closing the tier.
func TestReview_DirectQuotaOfZeroIsTheDefault(t *testing.T) {
	env := seeded(t)
	tenant := fixtures.DemoTenantID
	seller := sellerAs(t, env, fixtures.DemoUserID)
	// seller_set_quota writes on the tenant's limits row: make one, with a
	// quota of its own.
	l := domain.DefaultLimits()
	l.MaxOpenCandidates, l.MaxCandidateBytes = 5000, 1<<30
	if err := seller.SetLimits(ctx, tenant, "", l); err != nil {
		t.Fatal(err)
	}
	if c, b := storedQuota(t, env, tenant); c == nil || *c != 5000 || b == nil || *b != 1<<30 {
		t.Fatalf("stored quota before = %v, %v", c, b)
	}

	token := env.Endpoint.UserToken(pgtest.AuthSubject(fixtures.DemoUserID), time.Hour)
	status, raw := rpcAs(t, env, token, "seller_set_quota", map[string]any{"p_tenant_id": tenant,
		"p_maximum_open_candidates": 0, "p_maximum_candidate_bytes": 0})
	var ans struct {
		Cands int64 `json:"maximum_open_candidates"`
		Bytes int64 `json:"maximum_candidate_bytes"`
	}
	if status != http.StatusOK || json.Unmarshal(raw, &ans) != nil ||
		ans.Cands != domain.DefaultMaxOpenCandidates || ans.Bytes != domain.DefaultMaxCandidateBytes {
		t.Fatalf("seller_set_quota(0, 0) = HTTP %d %s; want the defaults", status, raw)
	}
	if c, b := storedQuota(t, env, tenant); c != nil || b != nil {
		t.Fatalf("stored quota after a direct 0 = %v, %v; want NULL (the default)", c, b)
	}
	wantOpen := func(when, key string) {
		t.Helper()
		for _, client := range []string{"", fixtures.DemoClientID} {
			got, err := seller.EffectiveLimits(ctx, tenant, client)
			if err != nil || got.MaxOpenCandidates != domain.DefaultMaxOpenCandidates || got.MaxCandidateBytes != domain.DefaultMaxCandidateBytes {
				t.Fatalf("%s: EffectiveLimits(%q) = %+v, %v; want the default quota", when, client, got, err)
			}
		}
		b := newBackend(t, env)
		p, err := b.ResolvePrincipal(ctx, contract.CredOwner)
		if err != nil {
			t.Fatal(err)
		}
		before := counts(t, env)
		res, _, err := b.CreateCandidate(ctx, p, benchMeta(p, "trove_create_candidate", key),
			domain.NewCandidate{SaleID: fixtures.LiveSaleID, Title: "Quota of zero " + key})
		if err != nil || res.CandidateID == "" {
			t.Fatalf("%s: create_candidate = %+v, %v; want it created under the default quota", when, res, err)
		}
		if after := counts(t, env); after["inventory_candidates"] != before["inventory_candidates"]+1 {
			t.Fatalf("%s: inventory_candidates %d → %d", when, before["inventory_candidates"], after["inventory_candidates"])
		}
	}
	wantOpen("after a direct 0", "review-q0")

	// A 0 already stored (the check allows it; a direct call before this
	// migration wrote it).
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `UPDATE trovesnap.mcp_limits SET maximum_open_candidates = 0, maximum_candidate_bytes = 0
		WHERE tenant_id = $1 AND client_id = ''`, tenant); err != nil {
		t.Fatal(err)
	}
	wantOpen("with a stored 0", "review-q1")
}

// The defaults are written once in the live SQL: effective_limits holds
// every one, and the functions that answer or enforce limits hold none
// (they read effective_limits).
func TestReview_LimitDefaultsOnlyInEffectiveLimits(t *testing.T) {
	env := pgtest.Need(t)
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	src := func(name string) string {
		t.Helper()
		var s string
		if err := conn.QueryRow(ctx, `SELECT string_agg(p.prosrc, E'\n') FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
			WHERE n.nspname IN ('public', 'trovesnap') AND p.proname = $1`, name).Scan(&s); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return s
	}
	d := domain.DefaultLimits()
	var nonzero []string
	for _, v := range []int64{int64(d.ReadsPerMinute), int64(d.CandidateWritesPerMinute), int64(d.ProposalsPerMinute),
		int64(d.ControlledActionsPerMinute), int64(d.MaxBulkTargets), int64(d.RejectedPerMinute), int64(d.MaxOpenCandidates), d.MaxCandidateBytes} {
		nonzero = append(nonzero, strconv.FormatInt(v, 10))
	}
	eff := src("effective_limits")
	for _, v := range nonzero {
		if !regexp.MustCompile(`\b` + v + `\b`).MatchString(eff) {
			t.Errorf("effective_limits does not hold the default %s", v)
		}
	}
	held := regexp.MustCompile(`\b(?:` + strings.Join(nonzero, "|") + `)\b`)
	for _, fn := range []string{"mcp_consume_rate", "seller_effective_limits", "seller_set_quota", "usage_add",
		"max_bulk_targets", "daily_paid_budget"} {
		if m := held.FindString(src(fn)); m != "" {
			t.Errorf("%s holds the default %s itself", fn, m)
		}
	}
}
