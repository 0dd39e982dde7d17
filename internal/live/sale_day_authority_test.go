package live_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/approval"
	"github.com/triunalabs/trovesnap/internal/contract"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/live/pgtest"
)

// Sale day (issue 16, part 4), enforced by the database for a caller that
// holds a client token and calls the RPCs itself: a checkout client's
// mcp_proposal_state and mcp_create_proposal accept the checkout
// transitions and checkout scans and nothing else a checkout may not
// propose — the same rule Go's builders apply (domain.BuildStatusTransition,
// domain.BuildCheckoutScan) — and a client without checkout.scan stores no
// scan. Every refusal leaves every table as it was.
func TestAuthority_SaleDayRPCsFollowTheCheckoutRules(t *testing.T) {
	env := seeded(t)
	checkout := checkoutUser(t)
	coID, co := authorityClient(t, env, checkout, "tenant_read", "action_proposal", "controlled_action")
	pricerID, pricer := authorityClient(t, env, fixtures.PricerUserID, "tenant_read", "action_proposal")
	b := newBackend(t, env)
	owner, err := b.ResolvePrincipal(ctx, contract.CredOwner)
	if err != nil {
		t.Fatal(err)
	}
	item := func(id string) domain.Item {
		t.Helper()
		d, err := b.GetItem(ctx, owner, id, domain.ItemIncludes{})
		if err != nil {
			t.Fatal(err)
		}
		return d.Item
	}
	// body is the proposal Go builds for d (as the owner may, so a forbidden
	// one is built at all), requested by client/actor and sealed: what a
	// token holder could send.
	body := func(d domain.ProposalDraft, client, actor string) domain.Proposal {
		t.Helper()
		it := item(d.TargetIDs[0])
		spec, _ := domain.ActionOf(d.Action)
		d.Tool, d.Requirement = domain.ExecutingTool{Name: spec.Tool, Version: "1.0.0"}, spec.Requirement
		d.ExpectedVersions = []domain.TargetVersion{{ID: it.ID, Version: it.Version}}
		prop, err := domain.StartProposal(owner, d, time.Now().UTC().Truncate(time.Second), 50)
		if err != nil {
			t.Fatal(err)
		}
		switch d.Action {
		case domain.ActionCheckoutScan:
			err = domain.BuildCheckoutScan(owner, d, &prop, []domain.Item{it})
		default:
			err = domain.BuildStatusTransition(owner, d, &prop, []domain.Item{it}, nil)
		}
		if err != nil {
			t.Fatalf("the owner's build of %s: %v", d.Action, err)
		}
		domain.FinishProposal(&prop)
		prop.ID = domain.RandomIDs{}.New(domain.PrefixProposal)
		prop.RequestedBy = domain.Requester{ClientID: client, ActorID: actor}
		if prop.Hash, err = approval.Hash(prop); err != nil {
			t.Fatal(err)
		}
		return prop
	}
	create := func(tok string, prop domain.Proposal) (int, map[string]any) {
		t.Helper()
		spec, _ := domain.ActionOf(prop.Action)
		return rpcClient(t, env, tok, "mcp_create_proposal", writeArgs(spec.ProposalTool, map[string]any{"p_proposal": prop}))
	}
	status := func(id, to string) domain.ProposalDraft {
		return domain.ProposalDraft{Action: domain.ActionStatusTransition, TargetIDs: []string{id},
			Fields: map[string]any{"to_status": to, "effective_at": "2026-06-20T15:04:05Z"}}
	}
	scan := func(id, kind string) domain.ProposalDraft {
		return domain.ProposalDraft{Action: domain.ActionCheckoutScan, TargetIDs: []string{id}, Fields: map[string]any{"scan": kind}}
	}

	// What checkout may propose is stored.
	for _, d := range []domain.ProposalDraft{status("item_1001", domain.ItemOnHold),
		status("item_1042", domain.ItemSold), scan("item_1002", domain.ScanHold)} {
		before := counts(t, env)
		st, out := create(co, body(d, coID, checkout))
		res, _ := out["result"].(map[string]any)
		if st != http.StatusOK || res["status"] != domain.ProposalPending {
			t.Fatalf("checkout's %s: %d %v", d.Action, st, out)
		}
		if after := counts(t, env); after["proposals"] != before["proposals"]+1 {
			t.Fatalf("checkout's %s stored %d proposals", d.Action, after["proposals"]-before["proposals"])
		}
	}
	// What it may not is refused, nothing stored.
	before := counts(t, env)
	for _, c := range []struct {
		what, tok string
		prop      domain.Proposal
		code      string
	}{
		{"checkout withdraws an item", co, body(status("item_1001", domain.ItemWithdrawn), coID, checkout), "permission_denied:proposal.create"},
		{"a pricer records a scan", pricer, body(scan("item_1002", domain.ScanHold), pricerID, fixtures.PricerUserID), "permission_denied:checkout.scan"},
	} {
		st, out := create(c.tok, c.prop)
		wantRefused(t, c.what, st, out, c.code, "")
	}
	// A scan whose status change is not the scan's is not the builder's.
	forged := body(scan("item_1002", domain.ScanHold), coID, checkout)
	for i, ch := range forged.Changes {
		if ch.Field == "status" {
			forged.Changes[i].To = domain.ItemSold
		}
	}
	forged.ID = domain.RandomIDs{}.New(domain.PrefixProposal)
	forged.Hash, _ = approval.Hash(forged)
	st, out := create(co, forged)
	wantRefused(t, "a hold scan that sells the item", st, out, "invalid_input:proposal", "changes")
	long := body(scan("item_1002", domain.ScanHold), coID, checkout)
	long.Changes = append(long.Changes, domain.FieldChange{TargetID: "item_1002", Field: "note", To: strings.Repeat("n", domain.MaxCheckoutNoteLen+1)})
	long.Hash, _ = approval.Hash(long)
	st, out = create(co, long)
	wantRefused(t, "a scan note over the bound", st, out, "invalid_input:note", "")
	sameCounts(t, env, before, "refused sale-day proposals")

	// mcp_proposal_state answers checkout for its actions and refuses the others.
	state := func(action, id string) (int, map[string]any) {
		spec, _ := domain.ActionOf(action)
		k := randHex(6)
		return rpcClient(t, env, co, "mcp_proposal_state", map[string]any{"p_tool": spec.ProposalTool, "p_tool_major": 1,
			"p_key": "state-" + k, "p_fingerprint": "sha256:" + k, "p_action": action, "p_target_ids": []string{id}, "p_fields": map[string]any{}})
	}
	if st, out := state(domain.ActionCheckoutScan, "item_1002"); st != http.StatusOK || fmt.Sprint(out["items"]) == "<nil>" {
		t.Fatalf("checkout's scan state: %d %v", st, out)
	}
	st, out = state(domain.ActionPromoteCandidate, fixtures.DemoCandidateID)
	wantRefused(t, "checkout's promotion state", st, out, "permission_denied:proposal.create", "")
	sameCounts(t, env, before, "proposal state reads")
}

// The sale-day lookups generated from internal/domain answer as the Go
// rules for every input, unknown ones included.
func TestGeneratedRules_SaleDayLookupsAnswerAsTheDomain(t *testing.T) {
	conn := superConn(t, pgtest.Need(t))
	text := func(sql string, args ...any) *string {
		t.Helper()
		var v *string
		if err := conn.QueryRow(ctx, sql, args...).Scan(&v); err != nil {
			t.Fatalf("%s %v: %v", sql, args, err)
		}
		return v
	}
	statuses := append(domain.ItemStatuses(), "", "paid")
	for _, from := range statuses {
		for _, to := range statuses {
			var got bool
			if err := conn.QueryRow(ctx, "SELECT trovesnap.checkout_transition($1, $2)", from, to).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != domain.CheckoutTransition(from, to) {
				t.Errorf("checkout_transition(%q, %q) = %v, domain %v", from, to, got, domain.CheckoutTransition(from, to))
			}
		}
	}
	for _, scan := range append(domain.CheckoutScans(), "", "paid") {
		want, ok := domain.CheckoutScanStatus(scan)
		if got := text("SELECT trovesnap.checkout_scan_status($1)", scan); (got != nil) != ok || ok && *got != want {
			t.Errorf("checkout_scan_status(%q) = %v, domain %q %v", scan, got, want, ok)
		}
	}
	for _, a := range append(domain.Actions(), domain.ActionSpec{Action: "delete_everything"}) {
		var got []string
		if err := conn.QueryRow(ctx, "SELECT trovesnap.proposal_perms($1)", a.Action).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if _, known := domain.ActionOf(a.Action); known && fmt.Sprint(got) != fmt.Sprint(domain.ProposalPermissions(a.Action)) || !known && got != nil {
			t.Errorf("proposal_perms(%s) = %v, domain %v", a.Action, got, domain.ProposalPermissions(a.Action))
		}
	}
	var scans, policyScans []string
	var noteMax int
	if err := conn.QueryRow(ctx, "SELECT trovesnap.checkout_scans(), trovesnap.policy_checkout_scans(), trovesnap.checkout_note_max()").
		Scan(&scans, &policyScans, &noteMax); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(scans) != fmt.Sprint(domain.CheckoutScans()) || fmt.Sprint(policyScans) != fmt.Sprint(domain.PolicyCheckoutScans()) ||
		noteMax != domain.MaxCheckoutNoteLen {
		t.Errorf("checkout_scans %v, policy_checkout_scans %v, checkout_note_max %d", scans, policyScans, noteMax)
	}
}
