package contract

import (
	"errors"
	"strings"
	"testing"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/domain"
)

// runHardeningLimits: issue 13's follow-up attack on the limits. A client's
// limits narrow its tenant's (a client row written by lowering one field
// cannot pin the client above a later tenant-level lowering), and the
// candidate tier's other writes (staged exports, stored drafts) count in
// the tenant's bytes quota.
func runHardeningLimits(t *testing.T, open func(t *testing.T) Instance) {
	t.Run("Hardening/ClientLimitsNarrowTheTenants", func(t *testing.T) { testHardeningClientLimitsNarrow(t, open(t)) })
	t.Run("Hardening/CandidateTierWritesCountInTheQuota", func(t *testing.T) { testHardeningTierWritesQuota(t, open(t)) })
}

func testHardeningClientLimitsNarrow(t *testing.T, in Instance) {
	b, a := in.Backend, owner(t, in)
	p := resolve(t, b, CredOwner)
	tenant, client := fixtures.DemoTenantID, p.Client.ID
	base, err := a.EffectiveLimits(ctx, tenant, "")
	if err != nil {
		t.Fatal(err)
	}
	// The client's "lowering" of one field copies the tenant's values into
	// a client row.
	own := base
	own.MaxBulkTargets = 49
	if err := a.SetLimits(ctx, tenant, client, own); err != nil {
		t.Fatalf("the client's row: %v", err)
	}
	// The seller lowers the tenant afterwards: it binds the client too.
	low := base
	low.ReadsPerMinute, low.RejectedPerMinute = 1, 3
	if err := a.SetLimits(ctx, tenant, "", low); err != nil {
		t.Fatalf("the tenant's row: %v", err)
	}
	got, err := a.EffectiveLimits(ctx, tenant, client)
	if err != nil || got.ReadsPerMinute != 1 || got.PerMinute(domain.LimitRejected) != 3 || got.MaxBulkTargets != 49 ||
		got.CandidateWritesPerMinute != base.CandidateWritesPerMinute {
		t.Fatalf("effective = %+v, %v; want reads 1 and rejected 3 (the tenant's), bulk 49 (the client's)", got, err)
	}
	for class, want := range map[string]int{domain.LimitReads: 1, domain.LimitRejected: 3} {
		d, err := b.ConsumeRate(ctx, p, class)
		if err != nil || d.Limit != want || !d.Allowed {
			t.Fatalf("ConsumeRate(%s) = %+v, %v; want the limit %d", class, d, err, want)
		}
	}
	// A client row above the tenant's widens nothing; 0 (the default) in
	// the client's rejected budget is the default, above the tenant's 3.
	high := got
	high.ReadsPerMinute, high.RejectedPerMinute, high.MaxBulkTargets = 500, 0, 50
	if err := a.SetLimits(ctx, tenant, client, high); err != nil {
		t.Fatal(err)
	}
	got, err = a.EffectiveLimits(ctx, tenant, client)
	if err != nil || got.ReadsPerMinute != 1 || got.PerMinute(domain.LimitRejected) != 3 || got.MaxBulkTargets != base.MaxBulkTargets {
		t.Fatalf("effective after a higher client row = %+v, %v", got, err)
	}
	if tl, err := a.EffectiveLimits(ctx, tenant, ""); err != nil || tl.ReadsPerMinute != 1 || tl.MaxBulkTargets != base.MaxBulkTargets {
		t.Fatalf("the tenant's = %+v, %v", tl, err)
	}
	// Proposals read the same limits: the tenant's bulk limit of 0 binds
	// the client whose own row says 50.
	zero := low
	zero.MaxBulkTargets = 0
	if err := a.SetLimits(ctx, tenant, "", zero); err != nil {
		t.Fatal(err)
	}
	f := newFlow(t, in)
	before := in.Counts(t)
	_, _, err = f.propose(p, itemPublicationDraft(readyItem, 2))
	var ie *domain.InputError
	if !errors.As(err, &ie) || ie.Field != "item_ids" || !strings.Contains(ie.Reason, "maximum of 0") {
		t.Fatalf("a proposal over the tenant's bulk limit: %v", err)
	}
	if d := changed(before, in.Counts(t)); len(d) > 0 {
		t.Fatalf("a refused proposal wrote: %v", d)
	}
	// A client without a row of its own has the tenant's limits, also
	// where the tenant's are above the defaults.
	wide := zero
	wide.ReadsPerMinute = 500
	if err := a.SetLimits(ctx, tenant, "", wide); err != nil {
		t.Fatal(err)
	}
	if pl, err := a.EffectiveLimits(ctx, tenant, PricerClientID); err != nil || pl.ReadsPerMinute != 500 {
		t.Fatalf("a client without a row = %+v, %v; want the tenant's reads, 500", pl, err)
	}
	if got, err := a.EffectiveLimits(ctx, tenant, client); err != nil || got.ReadsPerMinute != 500 {
		t.Fatalf("the client whose row says 500 = %+v, %v", got, err)
	}
}

func testHardeningTierWritesQuota(t *testing.T, in Instance) {
	b, d := in.Backend, ingData()
	p := resolve(t, b, CredOwner)
	pub := d.item(t, ingPubItem, fixtures.DemoTenantID, fixtures.PublishedSaleID)
	export := domain.NewExport{Channel: domain.ChannelEbay, ItemIDs: []string{pub.ID}}
	draft := domain.DraftRequest{CandidateID: ingReviewCand, Persist: true}

	setQuota(t, in, domain.DefaultMaxOpenCandidates, 1)
	before := in.Counts(t)
	_, _, err := b.StageExport(ctx, p, ingMeta(p, toolStageExport, "lim-ex-1", "sha256:le1", "event_le1"), export)
	wantQuota(t, err, "candidate storage bytes")
	_, _, err = b.DraftListingCopy(ctx, p, ingMeta(p, toolDraftCopy, "lim-dr-1", "sha256:ld1", "event_ld1"), draft)
	wantQuota(t, err, "candidate storage bytes")
	if d := changed(before, in.Counts(t)); len(d) > 0 {
		t.Fatalf("refused candidate-tier writes wrote: %v", d)
	}

	// Under the default quota both are written.
	setQuota(t, in, domain.DefaultMaxOpenCandidates, domain.DefaultMaxCandidateBytes)
	if res, _, err := b.StageExport(ctx, p, ingMeta(p, toolStageExport, "lim-ex-1", "sha256:le1", "event_le2"), export); err != nil || res.ExportID == "" {
		t.Fatalf("export under the default quota: %+v, %v", res, err)
	}
	if res, _, err := b.DraftListingCopy(ctx, p, ingMeta(p, toolDraftCopy, "lim-dr-1", "sha256:ld1", "event_ld2"), draft); err != nil || !res.Persisted {
		t.Fatalf("draft under the default quota: %+v, %v", res, err)
	}
	if d := changed(before, in.Counts(t)); len(d) == 0 {
		t.Fatal("the writes under the default quota wrote nothing")
	}
}
