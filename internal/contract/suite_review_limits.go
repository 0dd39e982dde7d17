package contract

import (
	"testing"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/domain"
)

// runReviewLimits: the review of the limits rules written twice (Go's
// domain.DefaultLimits and domain.Narrow, the live SQL's effective_limits).
// Both backends answer the Go defaults where no row applies, and narrow a
// tenant's limits by a client's field by field exactly as domain.Narrow.
func runReviewLimits(t *testing.T, open func(t *testing.T) Instance) {
	t.Run("Review/DefaultsWhereNoLimitsRowApplies", func(t *testing.T) { testReviewDefaultLimits(t, open(t)) })
	t.Run("Review/ClientNarrowsTheTenantFieldByField", func(t *testing.T) { testReviewNarrowing(t, open(t)) })
}

// limitClasses are every per-minute class of domain.Limits.
var limitClasses = []string{domain.LimitReads, domain.LimitCandidateWrites, domain.LimitProposals,
	domain.LimitControlledActions, domain.LimitRejected}

// testReviewDefaultLimits: the public bucket and a client of a tenant
// without a limits row are limited, class by class, by
// domain.DefaultLimits; the seller surface reports the same defaults for
// that tenant, its client and no tenant at all. Only bookkeeping changes.
func testReviewDefaultLimits(t *testing.T, in Instance) {
	b, def := in.Backend, domain.DefaultLimits()
	other := resolve(t, b, CredOther)
	a := in.Clients(t, fixtures.OtherTenantID, fixtures.OtherOwnerUserID)
	for _, c := range []struct{ tenant, client string }{{fixtures.OtherTenantID, ""}, {fixtures.OtherTenantID, fixtures.OtherClientID}} {
		if got, err := a.EffectiveLimits(ctx, c.tenant, c.client); err != nil || got != def {
			t.Fatalf("EffectiveLimits(%q, %q) = %+v, %v; want the defaults %+v (the tenant has no limits row)", c.tenant, c.client, got, err, def)
		}
	}
	if got, err := a.EffectiveLimits(ctx, "", ""); err != nil || got != def {
		t.Fatalf("EffectiveLimits of no tenant = %+v, %v; want the defaults %+v", got, err, def)
	}
	before := in.Counts(t)
	for _, class := range limitClasses {
		for who, p := range map[string]domain.Principal{"public": domain.Anonymous(), "a client of a tenant without limits": other} {
			d, err := b.ConsumeRate(ctx, p, class)
			if err != nil || d.Limit != def.PerMinute(class) || d.Class != class || !d.Allowed {
				t.Fatalf("ConsumeRate(%s) for %s = %+v, %v; want the default limit %d", class, who, d, err, def.PerMinute(class))
			}
		}
	}
	if d := changed(before, in.Counts(t)); len(d) > 0 {
		t.Fatalf("counting calls changed more than the bookkeeping: %v", d)
	}
}

// testReviewNarrowing: for each field, the tenant's row says n and the
// client's n+1, then n-1: EffectiveLimits of the client is domain.Narrow
// of the two rows (the tenant's own stays the tenant's), and ConsumeRate
// of a per-minute class answers that limit.
func testReviewNarrowing(t *testing.T, in Instance) {
	b, a := in.Backend, owner(t, in)
	tenant, client := fixtures.DemoTenantID, PricerClientID
	p := resolve(t, b, CredPricer)
	const n = 7
	fields := []struct {
		name  string
		class string // "" for a field without a per-minute class
		set   func(l *domain.Limits, v int)
	}{
		{"reads", domain.LimitReads, func(l *domain.Limits, v int) { l.ReadsPerMinute = v }},
		{"candidate writes", domain.LimitCandidateWrites, func(l *domain.Limits, v int) { l.CandidateWritesPerMinute = v }},
		{"proposals", domain.LimitProposals, func(l *domain.Limits, v int) { l.ProposalsPerMinute = v }},
		{"controlled actions", domain.LimitControlledActions, func(l *domain.Limits, v int) { l.ControlledActionsPerMinute = v }},
		{"rejected", domain.LimitRejected, func(l *domain.Limits, v int) { l.RejectedPerMinute = v }},
		{"bulk targets", "", func(l *domain.Limits, v int) { l.MaxBulkTargets = v }},
		{"paid USD/day", "", func(l *domain.Limits, v int) { l.MaxDailyPaidCostUSD = float64(v) }},
	}
	for _, f := range fields {
		tl := domain.DefaultLimits()
		f.set(&tl, n)
		if err := a.SetLimits(ctx, tenant, "", tl); err != nil {
			t.Fatalf("%s: the tenant's row: %v", f.name, err)
		}
		for _, cv := range []int{n + 1, n - 1} {
			cl := domain.DefaultLimits()
			f.set(&cl, cv)
			if err := a.SetLimits(ctx, tenant, client, cl); err != nil {
				t.Fatalf("%s: the client's row of %d: %v", f.name, cv, err)
			}
			want := domain.Narrow(tl, cl)
			got, err := a.EffectiveLimits(ctx, tenant, client)
			if err != nil || got != want {
				t.Fatalf("%s: tenant %d, client %d: EffectiveLimits = %+v, %v; domain.Narrow says %+v", f.name, n, cv, got, err, want)
			}
			if own, err := a.EffectiveLimits(ctx, tenant, ""); err != nil || own != tl.Effective() {
				t.Fatalf("%s: the tenant's own limits = %+v, %v; want its row %+v", f.name, own, err, tl.Effective())
			}
			if f.class == "" {
				continue
			}
			if want.PerMinute(f.class) != min(n, cv) {
				t.Fatalf("%s: domain.Narrow of %d and %d = %d", f.name, n, cv, want.PerMinute(f.class))
			}
			if d, err := b.ConsumeRate(ctx, p, f.class); err != nil || d.Limit != want.PerMinute(f.class) || d.Class != f.class {
				t.Fatalf("%s: tenant %d, client %d: ConsumeRate = %+v, %v; want the limit %d", f.name, n, cv, d, err, want.PerMinute(f.class))
			}
		}
	}
}
