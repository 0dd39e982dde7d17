package live_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/approval"
	"github.com/triunalabs/trovesnap/internal/contract"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/live"
	"github.com/triunalabs/trovesnap/internal/live/pgtest"
)

// Issue 15: the database is the authority for every derived field of a
// proposal. mcp_create_proposal derives target versions, each change and
// its before value, the validation and its warnings, the impact and cost,
// the sales and a notification's plan from the current rows
// (trovesnap.derive_proposal) and refuses a body that differs; the
// execution's require_no_conflicts judges the validation derived again.

// authorityDraft is the draft of action on targets at their versions, with
// the registry's tool and approval.
func authorityDraft(action string, fields map[string]any, targets ...domain.TargetVersion) domain.ProposalDraft {
	spec, _ := domain.ActionOf(action)
	d := domain.ProposalDraft{Action: action, Tool: domain.ExecutingTool{Name: spec.Tool, Version: "1.0.0"},
		Requirement: spec.Requirement, Fields: fields}
	for _, tv := range targets {
		d.TargetIDs = append(d.TargetIDs, tv.ID)
		d.ExpectedVersions = append(d.ExpectedVersions, tv)
	}
	return d
}

// authority holds what the tests share: the backend, the owner, and a
// counter for keys.
type authority struct {
	t   *testing.T
	env *pgtest.Env
	b   *live.Backend
	p   domain.Principal
	n   int
}

func newAuthority(t *testing.T) *authority {
	env := seeded(t)
	b := newBackend(t, env)
	p, err := b.ResolvePrincipal(ctx, contract.CredOwner)
	if err != nil {
		t.Fatal(err)
	}
	// A paid budget, so priced notifications may be proposed at all.
	l := domain.DefaultLimits()
	l.MaxDailyPaidCostUSD = 50
	// The RPCs count their calls (migration 34): room for every case in one
	// minute.
	l.ReadsPerMinute, l.ProposalsPerMinute, l.ControlledActionsPerMinute = 1000, 1000, 1000
	for _, client := range []string{"", fixtures.DemoClientID} {
		if err := sellerAs(t, env, fixtures.DemoUserID).SetLimits(ctx, fixtures.DemoTenantID, client, l); err != nil {
			t.Fatal(err)
		}
	}
	return &authority{t: t, env: env, b: b, p: p}
}

func (a *authority) meta(tool string) domain.WriteMeta {
	a.n++
	return benchMeta(a.p, tool, fmt.Sprintf("authority-%s-%d", randHex(4), a.n))
}

// propose builds d in Go over the state mcp_proposal_state answers and has
// mcp_create_proposal store it: it answers the proposal Go built.
func (a *authority) propose(d domain.ProposalDraft) (domain.Proposal, error) {
	a.t.Helper()
	spec, _ := domain.ActionOf(d.Action)
	var built domain.Proposal
	capture := func(pr domain.Proposal) (string, error) {
		built = pr
		var err error
		built.Hash, err = approval.Hash(pr)
		return built.Hash, err
	}
	stored, _, err := a.b.CreateProposal(ctx, a.p, a.meta(spec.ProposalTool), d, capture)
	if err != nil {
		return built, err
	}
	if stored.ID != built.ID || stored.Hash != built.Hash {
		a.t.Fatalf("stored %s %s, built %s %s", stored.ID, stored.Hash, built.ID, built.Hash)
	}
	return built, nil
}

func (a *authority) item(id string) domain.Item {
	a.t.Helper()
	it, err := a.b.GetItem(ctx, a.p, id, domain.ItemIncludes{})
	if err != nil {
		a.t.Fatal(err)
	}
	return it.Item
}

func (a *authority) at(id string) domain.TargetVersion {
	a.t.Helper()
	return domain.TargetVersion{ID: id, Version: a.item(id).Version}
}

// forge sends prop, changed by edit and re-sealed under a new id, to
// mcp_create_proposal as the client's token holder would, and requires the
// refusal code (and the detail to contain reason), with nothing stored.
func (a *authority) forge(prop domain.Proposal, edit func(*domain.Proposal), code, reason string) {
	a.t.Helper()
	forged := prop
	forged.Changes = slices.Clone(prop.Changes)
	forged.ExpectedVersions = slices.Clone(prop.ExpectedVersions)
	forged.TargetIDs = slices.Clone(prop.TargetIDs)
	forged.Validation.Warnings = slices.Clone(prop.Validation.Warnings)
	forged.ID = domain.RandomIDs{}.New(domain.PrefixProposal)
	edit(&forged)
	var err error
	if forged.Hash, err = approval.Hash(forged); err != nil {
		a.t.Fatal(err)
	}
	a.send(forged, code, reason)
}

// send posts a proposal body to mcp_create_proposal directly and requires
// the refusal, with no row changed.
func (a *authority) send(body any, code, reason string) {
	a.t.Helper()
	spec, _ := domain.ActionOf(actionOf(body))
	w := a.meta(spec.ProposalTool)
	before := counts(a.t, a.env)
	status, out := rpcClient(a.t, a.env, contract.CredOwner, "mcp_create_proposal", map[string]any{"p_tool": w.Idem.Tool,
		"p_tool_major": 1, "p_key": w.Idem.Key, "p_fingerprint": w.Idem.Fingerprint, "p_event": w.Event,
		"p_started_at": time.Now().UTC().Format(time.RFC3339Nano), "p_proposal": body})
	if status != http.StatusBadRequest || out["message"] != "trovesnap:"+code || !strings.Contains(fmt.Sprint(out["details"]), reason) {
		b, _ := json.Marshal(out)
		a.t.Fatalf("forged proposal: HTTP %d %s; want trovesnap:%s with %q", status, b, code, reason)
	}
	sameCounts(a.t, a.env, before, "a refused forged proposal")
}

func actionOf(body any) string {
	switch x := body.(type) {
	case domain.Proposal:
		return x.Action
	case map[string]any:
		s, _ := x["action"].(string)
		return s
	}
	return ""
}

// One source of rules: every action, and every warning its builder can
// give, built in Go over the state mcp_proposal_state answers, is stored by
// mcp_create_proposal — which refuses any body whose derived fields differ
// from what SQL derives (derive_proposal) — so for each case Go and SQL
// derived the same proposal. The expected warnings prove each branch ran.
func TestProposalAuthority_GoAndSQLDeriveTheSame(t *testing.T) {
	a := newAuthority(t)
	noCategory, _, err := a.b.CreateCandidate(ctx, a.p, a.meta("trove_create_candidate"),
		domain.NewCandidate{SaleID: fixtures.PublishedSaleID, Title: "Mantel clock"})
	if err != nil {
		t.Fatal(err)
	}
	export, _, err := a.b.StageExport(ctx, a.p, a.meta("trove_stage_export"),
		domain.NewExport{Channel: "csv_file", ItemIDs: []string{"item_1002", "item_1004", "item_1015"}})
	if err != nil {
		t.Fatal(err)
	}
	var exportWarnings []string
	if n := len(export.Listings); export.ValidCount < n {
		exportWarnings = []string{fmt.Sprintf("%d of %d staged items fail csv_file's checks and are not delivered", n-export.ValidCount, n)}
	}
	// Photos for the unreviewed candidate: its promotion lists them.
	for k, seed := range []uint8{41, 42} {
		up := authorityPNG(t, seed)
		if _, _, err := a.b.AttachCandidateMedia(ctx, a.p, a.meta("trove_attach_candidate_photo"),
			domain.NewCandidateMedia{CandidateID: fixtures.DemoCandidateID, Upload: &up, Caption: fmt.Sprint("view ", k)}); err != nil {
			t.Fatal(err)
		}
	}
	// A photo proposed for an existing item: its promotion adds it.
	mupload := authorityPNG(t, 43)
	mediaCand, _, err := a.b.CreateMediaCandidate(ctx, a.p, a.meta("trove_create_media_attachment_candidate"),
		domain.NewCandidateMedia{ItemID: "item_1003", Upload: &mupload})
	if err != nil {
		t.Fatal(err)
	}
	pubd, err := a.b.GetItem(ctx, a.p, "item_1003", domain.ItemIncludes{Photos: true})
	if err != nil || len(pubd.Photos) < 2 {
		t.Fatalf("item_1003 = %+v, %v: the case needs two photos", pubd.Photos, err)
	}
	cand := func(id string, v int) domain.TargetVersion { return domain.TargetVersion{ID: id, Version: v} }
	saleV := func(id string) domain.TargetVersion {
		s, err := a.b.GetSale(ctx, a.p, id)
		if err != nil {
			t.Fatal(err)
		}
		return domain.TargetVersion{ID: id, Version: s.Version}
	}
	cases := []struct {
		name     string
		draft    domain.ProposalDraft
		warnings []string
	}{
		{"promotion of an unreviewed candidate", authorityDraft(domain.ActionPromoteCandidate, nil, cand(fixtures.DemoCandidateID, 3)),
			[]string{"candidate_not_reviewed"}},
		{"promotion of an approved candidate", authorityDraft(domain.ActionPromoteCandidate, nil, cand("candidate_773", 2)), nil},
		{"promotion with corrections", authorityDraft(domain.ActionPromoteCandidate,
			map[string]any{"title": "Brass lamp", "room": "hall", "description": ""}, cand("candidate_773", 2)), nil},
		{"promotion without a category", authorityDraft(domain.ActionPromoteCandidate, nil, cand(noCategory.CandidateID, 1)),
			[]string{"category_missing", "candidate_not_reviewed"}},
		{"promotion given an empty category", authorityDraft(domain.ActionPromoteCandidate, map[string]any{"category": ""},
			cand(noCategory.CandidateID, 1)), []string{"category_missing", "candidate_not_reviewed"}},
		{"promotion given a category", authorityDraft(domain.ActionPromoteCandidate, map[string]any{"category": "decor.clock.mantel"},
			cand(noCategory.CandidateID, 1)), []string{"candidate_not_reviewed"}},
		{"publication in a draft sale", authorityDraft(domain.ActionPublishItem, nil, a.at("item_1150")),
			[]string{"sale_not_published: the item becomes visible when its sale is published"}},
		{"publication in a published sale", authorityDraft(domain.ActionPublishItem, nil, a.at("item_1003")), nil},
		{"publication naming its photos", authorityDraft(domain.ActionPublishItem,
			map[string]any{"photo_ids": []string{pubd.Photos[1].ID, pubd.Photos[0].ID}}, a.at("item_1003")), nil},
		{"promotion with a draft price", authorityDraft(domain.ActionPromoteCandidate, map[string]any{"price_cents": int64(999)},
			cand("candidate_773", 2)), nil},
		{"promotion of a photo for an item", authorityDraft(domain.ActionPromoteCandidate, nil, cand(mediaCand.CandidateID, 1)),
			[]string{"candidate_not_reviewed"}},
		{"sale publication", authorityDraft(domain.ActionPublishSale, nil, saleV(fixtures.DraftSaleID)), nil},
		{"bulk update of published, ready and unpriced items", authorityDraft(domain.ActionBulkItemUpdate,
			map[string]any{"changes": map[string]any{"room": "attic", "price_cents": float64(1250), "title": "Lot"}},
			a.at(fixtures.DemoItemID), a.at("item_1003"), a.at("item_1015")), nil},
		{"status transition", authorityDraft(domain.ActionStatusTransition,
			map[string]any{"to_status": "on_hold", "effective_at": "2026-06-20T15:04:05Z"}, a.at("item_1001")), nil},
		{"status transition without a time", authorityDraft(domain.ActionStatusTransition,
			map[string]any{"to_status": "withdrawn"}, a.at("item_1037")), nil},
		{"archive", authorityDraft(domain.ActionArchiveItem, map[string]any{"to_status": "archived"}, a.at("item_1009")), nil},
		{"bind", authorityDraft(domain.ActionBindIdentity, map[string]any{"qr_code": "QR-221-0122"}, a.at("item_1003")), nil},
		{"release from published", authorityDraft(domain.ActionReleaseIdentity, map[string]any{"qr_code": "QR-221-0002"},
			a.at("item_1001")), nil},
		{"release from sold", authorityDraft(domain.ActionReleaseIdentity, map[string]any{"qr_code": "QR-221-0015"},
			a.at("item_1018")), []string{"release_from_sold: human approval only"}},
		{"release from pending pickup", authorityDraft(domain.ActionReleaseIdentity, map[string]any{"qr_code": "QR-221-0031"},
			a.at("item_1042")), []string{"release_from_pending_pickup: human approval only"}},
		{"buy-out offer", authorityDraft(domain.ActionDisposition,
			map[string]any{"action": "buyout_offer", "counterparty": "Second Chance", "offer_cents": float64(900)},
			a.at("item_1009"), a.at("item_1023")), nil},
		{"consignment", authorityDraft(domain.ActionDisposition, map[string]any{"action": "consign"}, a.at(fixtures.DemoItemID)), nil},
		{"notification of a sale by sms", authorityDraft(domain.ActionBuyerNotify, map[string]any{"audience": "followed_sale",
			"channels": []string{"email", "sms"}, "message_template": "{{sale_title}} opens {{sale_dates}}"},
			saleV(fixtures.PublishedSaleID)), nil},
		{"notification of an item by interest", authorityDraft(domain.ActionBuyerNotify, map[string]any{"audience": "category_interest",
			"channels": []string{"push"}, "message_template": strings.Repeat("{{item_title}} ", 40)}, a.at(fixtures.DemoItemID)), nil},
		{"notification of an item to its savers", authorityDraft(domain.ActionBuyerNotify, map[string]any{"audience": "saved_item",
			"channels": []string{"sms"}, "message_template": "Still here"}, a.at("item_1049")), nil},
		{"notification without an audience", authorityDraft(domain.ActionBuyerNotify, map[string]any{"audience": "followed_sale",
			"channels": []string{"email"}, "message_template": "Hello"}, a.at("item_1251")), []string{"empty_audience"}},
		{"export delivery", authorityDraft(domain.ActionExportDelivery, nil, domain.TargetVersion{ID: export.ExportID, Version: 1}),
			exportWarnings},
		{"checkout scan: a hold with a note", authorityDraft(domain.ActionCheckoutScan, map[string]any{"scan": "hold",
			"qr_code": "QR-221-0003", "note": "Ana, back at noon"}, a.at("item_1002")), nil},
		{"checkout scan: picked up from pending pickup", authorityDraft(domain.ActionCheckoutScan, map[string]any{"scan": "picked_up"},
			a.at("item_1042")), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a.t = t
			prop, err := a.propose(c.draft)
			if err != nil {
				t.Fatalf("Go built %+v; the database refused it: %v", prop, err)
			}
			want := c.warnings
			if want == nil {
				want = []string{}
			}
			status := "valid"
			if len(want) > 0 {
				status = "valid_with_warnings"
			}
			if !slices.Equal(prop.Validation.Warnings, want) || prop.Validation.Status != status {
				t.Fatalf("validation %+v; want %s %q", prop.Validation, status, want)
			}
		})
	}
	// The notification cases sized a real audience and priced it.
	a.t = t
	var sms domain.Proposal
	if sms, err = a.propose(cases[22].draft); err != nil || sms.Impact.NotificationsSent == 0 || sms.Impact.EstimatedCostUSD == 0 {
		t.Fatalf("sms notification %+v, %v: want a priced audience", sms.Impact, err)
	}
}

// Every forgery of a derived field is refused by mcp_create_proposal with
// the field named, and nothing is stored.
func TestProposalAuthority_ForgeriesRefused(t *testing.T) {
	a := newAuthority(t)
	promo, err := a.propose(authorityDraft(domain.ActionPromoteCandidate, nil, domain.TargetVersion{ID: fixtures.DemoCandidateID, Version: 3}))
	if err != nil {
		t.Fatal(err)
	}
	bulk, err := a.propose(authorityDraft(domain.ActionBulkItemUpdate, map[string]any{"changes": map[string]any{"room": "attic"}},
		a.at(fixtures.DemoItemID), a.at("item_1003")))
	if err != nil {
		t.Fatal(err)
	}
	note, err := a.propose(authorityDraft(domain.ActionBuyerNotify, map[string]any{"audience": "followed_sale",
		"channels": []string{"sms"}, "message_template": "Doors open"}, domain.TargetVersion{ID: fixtures.PublishedSaleID, Version: 4}))
	if err != nil {
		t.Fatal(err)
	}
	release, err := a.propose(authorityDraft(domain.ActionReleaseIdentity, map[string]any{"qr_code": "QR-221-0015"}, a.at("item_1018")))
	if err != nil {
		t.Fatal(err)
	}
	if promo.Validation.Status != "valid_with_warnings" || note.Impact.EstimatedCostUSD == 0 || release.Validation.Status != "valid_with_warnings" {
		t.Fatalf("fixtures: promotion %+v, notification %+v, release %+v", promo.Validation, note.Impact, release.Validation)
	}

	t.Run("claims valid with no warnings", func(t *testing.T) {
		a.t = t
		clean := func(x *domain.Proposal) {
			x.Validation = domain.ProposalValidation{Status: "valid", Warnings: []string{}, Errors: []string{}}
		}
		a.forge(promo, clean, "invalid_input:proposal", "validation")
		a.forge(release, clean, "invalid_input:proposal", "validation")
		a.forge(promo, func(x *domain.Proposal) { x.Validation.Status = "valid" }, "invalid_input:proposal", "validation")
	})
	t.Run("lies about a before value", func(t *testing.T) {
		a.t = t
		a.forge(bulk, func(x *domain.Proposal) { x.Changes[0].From = "garage" }, "invalid_input:proposal", "changes")
		a.forge(promo, func(x *domain.Proposal) { x.Changes[len(x.Changes)-1].From = "approved" }, "invalid_input:proposal", "changes")
		a.forge(release, func(x *domain.Proposal) { x.Changes[0].From = "QR-221-0001" }, "transition_invalid", "does not carry")
	})
	t.Run("lies about an expected version", func(t *testing.T) {
		a.t = t
		a.forge(bulk, func(x *domain.Proposal) { x.ExpectedVersions[1].Version++ }, "stale_version", "item_1003 is at version")
	})
	t.Run("lies about impact or cost", func(t *testing.T) {
		a.t = t
		a.forge(bulk, func(x *domain.Proposal) { x.Impact.PublicRecordsChanged = 0 }, "invalid_input:proposal", "impact")
		a.forge(bulk, func(x *domain.Proposal) { x.Impact.ItemsChanged = 1 }, "invalid_input:proposal", "impact")
		a.forge(note, func(x *domain.Proposal) { x.Impact.EstimatedCostUSD = 0 }, "invalid_input:proposal", "impact")
		a.forge(note, func(x *domain.Proposal) {
			n := *x.Notification
			n.AudienceSize, n.SuppressedCount = 1, 0
			x.Notification = &n
		}, "invalid_input:proposal", "notification")
		a.forge(note, func(x *domain.Proposal) { x.Changes[0].To = "1 buyers via sms" }, "invalid_input:proposal", "changes")
	})
	t.Run("drops a target", func(t *testing.T) {
		a.t = t
		a.forge(bulk, func(x *domain.Proposal) { x.Changes = x.Changes[:1] }, "invalid_input:proposal", "changes")
	})
	t.Run("adds a field the draft did not name", func(t *testing.T) {
		a.t = t
		a.forge(bulk, func(x *domain.Proposal) {
			x.Changes = append(x.Changes, domain.FieldChange{TargetID: "item_1003", Field: "title", From: "", To: "Renamed"})
		}, "invalid_input:proposal", "changes")
		// Photos the candidate does not have.
		a.forge(promo, func(x *domain.Proposal) {
			x.Changes = append(x.Changes, domain.FieldChange{TargetID: fixtures.DemoCandidateID, Field: "create_item.photos", To: []string{"asset_1"}})
		}, "invalid_input:proposal", "changes")
		// A key a proposal does not have.
		body := map[string]any{}
		raw, _ := json.Marshal(bulk)
		_ = json.Unmarshal(raw, &body)
		body["id"], body["risk"] = domain.RandomIDs{}.New(domain.PrefixProposal), "low"
		a.send(body, "invalid_input:proposal", "risk is not a field of a proposal")
		// A notification plan on another action.
		a.forge(bulk, func(x *domain.Proposal) { x.Notification = note.Notification }, "invalid_input:proposal", "notification")
	})
	// The honest bodies still store (a control: the forgeries were refused
	// for what they changed).
	a.t = t
	for _, prop := range []domain.Proposal{promo, bulk, note, release} {
		a.accept(prop)
	}
}

// accept re-seals prop under a new id and requires mcp_create_proposal to
// store it as sent.
func (a *authority) accept(prop domain.Proposal) {
	a.t.Helper()
	prop.ID = domain.RandomIDs{}.New(domain.PrefixProposal)
	var err error
	if prop.Hash, err = approval.Hash(prop); err != nil {
		a.t.Fatal(err)
	}
	spec, _ := domain.ActionOf(prop.Action)
	w := a.meta(spec.ProposalTool)
	status, out := rpcClient(a.t, a.env, contract.CredOwner, "mcp_create_proposal", map[string]any{"p_tool": w.Idem.Tool,
		"p_tool_major": 1, "p_key": w.Idem.Key, "p_fingerprint": w.Idem.Fingerprint, "p_event": w.Event,
		"p_started_at": time.Now().UTC().Format(time.RFC3339Nano), "p_proposal": prop})
	if status != http.StatusOK {
		b, _ := json.Marshal(out)
		a.t.Fatalf("an honest %s body: HTTP %d %s", prop.Action, status, b)
	}
}

// The original attack, end to end: a forged "valid" promotion of an
// unreviewed candidate is refused at creation; and one stored without the
// database's derivation (as before this migration) is refused at execution
// by a policy with require_no_conflicts, which judges the validation
// derived from the current rows — the candidate is left as it was.
func TestProposalAuthority_ForgedValidPromotionNeverRunsUnderAPolicy(t *testing.T) {
	a := newAuthority(t)
	admin := sellerAs(t, a.env, fixtures.DemoUserID)
	// A candidate without a supplied price: a promotion that prices its
	// item is a financial change, which no policy runs at all.
	const unpriced = "candidate_772"
	c772, err := a.b.GetCandidate(ctx, a.p, unpriced)
	if err != nil || c772.SuppliedPriceCents != nil || c772.SaleID != fixtures.PublishedSaleID {
		t.Fatalf("the dataset's %s = %+v, %v: the case needs an unpriced candidate of %s", unpriced, c772, err, fixtures.PublishedSaleID)
	}
	honest, err := a.propose(authorityDraft(domain.ActionPromoteCandidate, nil, domain.TargetVersion{ID: unpriced, Version: c772.Version}))
	if err != nil {
		t.Fatal(err)
	}
	a.forge(honest, func(x *domain.Proposal) {
		x.Validation = domain.ProposalValidation{Status: "valid", Warnings: []string{}, Errors: []string{}}
	}, "invalid_input:proposal", "validation")

	var fields []string
	for _, c := range honest.Changes {
		fields = append(fields, c.Field)
	}
	pol, err := admin.CreatePolicy(ctx, domain.Policy{TenantID: fixtures.DemoTenantID, Name: "promote-clean",
		AllowedTools: []string{"trove_execute_candidate_promotion"}, Scope: domain.PolicyScope{EstateSaleIDs: []string{fixtures.PublishedSaleID}},
		Conditions: domain.PolicyConditions{MaxItemsPerRun: 1, PermittedFields: fields, RequireNoConflicts: true},
		Limits:     domain.PolicyLimits{MaxDailyActions: 50}, CreatedBy: fixtures.DemoUserID})
	if err != nil {
		t.Fatal(err)
	}
	if pol, err = admin.SetPolicyStatus(ctx, pol.ID, domain.PolicyActive, fixtures.DemoUserID); err != nil {
		t.Fatal(err)
	}
	// Stored as a forger could before: the honest content, claiming valid.
	forged := insertProposal(t, a.env, func(x *domain.Proposal) {
		x.TargetIDs, x.ExpectedVersions = honest.TargetIDs, honest.ExpectedVersions
		x.Changes = honest.Changes
		x.Validation = domain.ProposalValidation{Status: "valid", Warnings: []string{}, Errors: []string{}}
	})
	candidate := func() domain.Candidate {
		c, err := a.b.GetCandidate(ctx, a.p, unpriced)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c0 := candidate() // a read, which counts itself: before the snapshot
	before := counts(t, a.env)
	res, _, err := a.b.ExecuteProposal(ctx, a.p, a.meta(forged.Tool.Name), forged.ID, domain.Authorization{Decision: "allowed_by_policy",
		PolicyID: pol.ID, PolicyVersion: pol.Version, ProposalHash: forged.Hash})
	if !errors.Is(err, domain.ErrApprovalRequired) || !strings.Contains(err.Error(), "policy requires a proposal without conflicts or warnings") {
		t.Fatalf("forged valid promotion under a no-conflicts policy: %+v, %v", res, err)
	}
	sameCounts(t, a.env, before, "a refused policy execution")
	if c1 := candidate(); c1.ReviewStatus != c0.ReviewStatus || c1.Version != c0.Version {
		t.Fatalf("candidate changed: %+v → %+v", c0, c1)
	}
}

// authorityPNG is a small PNG with the checks' report on it, distinct by
// seed.
func authorityPNG(t *testing.T, seed uint8) domain.PhotoUpload {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 5, 4))
	img.Set(1, 1, color.RGBA{seed, 9, 99, 255})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return domain.PhotoUpload{Bytes: b.Bytes(), MimeType: "image/png", Ext: "png", Width: 5, Height: 4, Size: b.Len(),
		ContentHash: domain.OriginalHash(b.Bytes())}
}
