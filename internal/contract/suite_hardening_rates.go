package contract

import (
	"testing"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/domain"
)

// Hardening of the rate limits (issue 13, finding 6): refused calls count
// against their own per-client budget, stored with the other limits.

func runHardeningRates(t *testing.T, open func(t *testing.T) Instance) {
	t.Run("HardeningRates/RejectedClassHasItsOwnBudget", func(t *testing.T) { testRejectedBudget(t, open(t)) })
}

// testRejectedBudget: a client without limits of its own gets the default
// rejected budget; one set to 3 admits three refusals a minute and refuses
// the fourth with a retry-after, without touching the reads class; the
// value round-trips through EffectiveLimits, and 0 reads as the default.
func testRejectedBudget(t *testing.T, in Instance) {
	b := in.Backend
	d, err := b.ConsumeRate(ctx, resolve(t, b, CredOther), domain.LimitRejected)
	if err != nil || !d.Allowed || d.Limit != domain.DefaultRejectedPerMinute || d.Class != domain.LimitRejected {
		t.Fatalf("default rejected budget: %+v, %v", d, err)
	}

	a := in.Clients(t, fixtures.DemoTenantID, fixtures.DemoUserID)
	// Windows are wall-clock minutes on a live database: a case that
	// straddles a minute boundary is repeated with a fresh client.
	for _, c := range []struct{ cred, id string }{{CredPricer, PricerClientID}, {CredScoped, ScopedClientID}, {CredOwner, fixtures.DemoClientID}} {
		l, err := a.EffectiveLimits(ctx, fixtures.DemoTenantID, c.id)
		if err != nil {
			t.Fatal(err)
		}
		l.RejectedPerMinute = 3
		if err := a.SetLimits(ctx, fixtures.DemoTenantID, c.id, l); err != nil {
			t.Fatalf("SetLimits: %v", err)
		}
		if got, err := a.EffectiveLimits(ctx, fixtures.DemoTenantID, c.id); err != nil || got != l {
			t.Fatalf("EffectiveLimits = %+v, %v; want %+v", got, err, l)
		}
		if rejectedCase(t, b, resolve(t, b, c.cred)) {
			l.RejectedPerMinute = 0
			if err := a.SetLimits(ctx, fixtures.DemoTenantID, c.id, l); err != nil {
				t.Fatal(err)
			}
			d, err := b.ConsumeRate(ctx, resolve(t, b, c.cred), domain.LimitRejected)
			if err != nil || d.Limit != domain.DefaultRejectedPerMinute {
				t.Fatalf("a rejected limit of 0 reads as the default: %+v, %v", d, err)
			}
			return
		}
	}
	t.Fatal("three rejected cases in a row straddled a minute boundary")
}

// rejectedCase spends a rejected budget of 3 and reports false if the
// window rolled over meanwhile.
func rejectedCase(t *testing.T, b domain.Backend, p domain.Principal) bool {
	t.Helper()
	last := 61
	for i := range 4 {
		d, err := b.ConsumeRate(ctx, p, domain.LimitRejected)
		if err != nil {
			t.Fatalf("refusal %d: %v", i, err)
		}
		if d.RetryAfterSeconds > last {
			return false
		}
		last = d.RetryAfterSeconds
		if d.Limit != 3 || d.Class != domain.LimitRejected || d.RetryAfterSeconds < 1 || d.RetryAfterSeconds > 60 || d.Allowed != (i < 3) {
			t.Fatalf("refusal %d: decision %+v", i, d)
		}
	}
	// The reads class is a budget of its own.
	d, err := b.ConsumeRate(ctx, p, domain.LimitReads)
	if err != nil || !d.Allowed || d.Class != domain.LimitReads {
		t.Fatalf("a read after the rejected budget ran out: %+v, %v", d, err)
	}
	return d.RetryAfterSeconds <= last
}
