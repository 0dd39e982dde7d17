package sqlgen_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/sqlgen"
)

// heldList is one list the live SQL spells out, at where (a key of
// liveSchema.texts()), as the IN-list that follows lhs; want is its one
// declaration in internal/domain. lookup, when set, names the generated
// function (one of sqlgen.Functions) whose list a CHECK on lhs calls
// instead: lhs = ANY (trovesnap.<lookup>()) must be there, and be the only
// generated list lhs is tested against.
type heldList struct {
	where, lhs string
	want       []string
	lookup     string
}

func heldLists() []heldList {
	col := func(tc string, want []string) heldList {
		return heldList{"column trovesnap." + tc, tc[strings.Index(tc, ".")+1:], want, ""}
	}
	// gen is a column whose CHECK calls the generated lookup instead of
	// spelling the list out.
	gen := func(tc, lookup string, want []string) heldList {
		h := col(tc, want)
		h.lookup = lookup
		return h
	}
	return []heldList{
		col("memberships.role", domain.Roles()),
		gen("mcp_clients.status", "client_statuses", domain.ClientStatuses()),
		col("mcp_clients.trust_level", domain.TrustLevels),
		col("mcp_clients.risk_class", domain.RiskClasses),
		gen("estate_sales.status", "sale_statuses", domain.SaleStatuses()),
		col("estate_sales.visibility", domain.SaleVisibilities()),
		col("estate_sales.address_policy", domain.AddressPolicies()),
		gen("items.status", "item_statuses", domain.ItemStatuses()),
		gen("inventory_candidates.review_status", "review_statuses", domain.ReviewStatuses()),
		col("plugin_events.outcome", domain.Outcomes()),
		gen("proposals.status", "proposal_statuses", domain.ProposalStatuses()),
		gen("approval_grants.status", "grant_statuses", domain.GrantStatuses()),
		gen("approval_grants.issuer_type", "grant_issuers", domain.GrantIssuers()),
		gen("automation_policies.status", "policy_statuses", domain.PolicyStatuses()),
		gen("item_status_events.from_status", "item_statuses", domain.ItemStatuses()),
		gen("item_status_events.to_status", "item_statuses", domain.ItemStatuses()),
		gen("item_status_events.source_type", "status_sources", domain.StatusSources()),
		gen("label_batches.status", "label_batch_statuses", domain.LabelBatchStatuses()),
		col("candidate_item_changes.kind", domain.ItemChangeKinds()),
		gen("candidate_item_changes.reported_status", "reportable_statuses", domain.ReportableStatuses),
		col("source_assets.mime_type", domain.MediaTypes),
		col("export_drafts.channel", domain.ExportChannels),
		col("export_drafts.status", domain.ExportStatuses()),
		col("outbound_requests.kind", domain.OutboundKinds()),
		col("outbound_requests.status", domain.OutboundStatuses()),
		col("item_dispositions.action", domain.DispositionActions()),
		col("checkout_scans.scan", domain.CheckoutScans()),
		{"function trovesnap.record_event", "coalesce(p_body ->> 'outcome', '')", domain.Outcomes(), ""},
		{"function public.mcp_run_import", "coalesce(v_kind, '')", domain.ImportKinds(), ""},
		{"function public.mcp_run_import", "coalesce(r ->> 'kind', '')", domain.ImportRowKinds(), ""},
		{"function public.mcp_stage_export", "coalesce(v_channel, '')", domain.ExportChannels, ""},
		{"function public.mcp_draft_listing_copy", "coalesce(v_tone, '')", domain.DraftTones, ""},
		{"function trovesnap.media_input", "coalesce(p_media ->> 'mime_type', '')", domain.MediaTypes, ""},
		{"function public.mcp_consume_rate", "coalesce(p_class, '')", domain.LimitClasses(), ""},
		{"function trovesnap.mcp_consume_rate", "coalesce(p_class, '')", domain.LimitClasses(), ""},
		{"function trovesnap.check_item_proposal", "v_act", domain.DispositionActions(), ""},
		{"function public.mcp_create_proposal", "v_facts ->> 'status'", domain.ExportDeliverableStatuses(), ""},
		{"function trovesnap.mcp_create_proposal", "v_facts ->> 'status'", domain.ExportDeliverableStatuses(), ""},
		{"function trovesnap.deliver_export", "e.status", domain.ExportDeliverableStatuses(), ""},
		{"function trovesnap.target_version", "e.status", domain.ExportDeliverableStatuses(), ""},
		{"function public.seller_current_versions", "x.status", domain.ExportDeliverableStatuses(), ""},
		{"function public.mcp_create_proposal", "s.status", domain.PublicSaleStatuses, ""},
		{"function trovesnap.mcp_create_proposal", "s.status", domain.PublicSaleStatuses, ""},
		{"function trovesnap.check_item_proposal", "i.status", domain.LockedItemStatuses(), ""},
		{"function trovesnap.update_item_fields", "i.status", domain.LockedItemStatuses(), ""},
		{"function trovesnap.mcp_create_proposal", "i.status", domain.LockedItemStatuses(), ""},
		{"function trovesnap.promote_media_candidate", "i.status", domain.LockedItemStatuses(), ""},
		{"function trovesnap.mcp_create_proposal", "c.kind", domain.PromotableCandidateKinds(), ""},
		{"function trovesnap.candidate_is_open", "p_status", domain.OpenReviewStatuses(), ""},
		{"function trovesnap.promote_inventory_candidate", "c.review_status", domain.OpenReviewStatuses(), ""},
		{"function trovesnap.promote_media_candidate", "c.review_status", domain.OpenReviewStatuses(), ""},
		{"function public.mcp_create_proposal", "c.review_status", domain.OpenReviewStatuses(), ""},
		{"function trovesnap.mcp_create_proposal", "c.review_status", domain.OpenReviewStatuses(), ""},
		{"function trovesnap.proposal_status", "pr.status", domain.OpenProposalStatuses(), ""},
		{"policy trovesnap.estate_sales/public_read", "status", domain.PublicSaleStatuses, ""},
		{"policy trovesnap.items/public_read", "s.status", domain.PublicSaleStatuses, ""},
		{"policy trovesnap.items/public_read", "status", domain.PublicItemStatuses(), ""},
	}
}

// lookups names every generated list lhs (ending a word) is tested against
// in text — lhs = ANY (trovesnap.f()) — in order: sqlgen's golden test
// holds each such function to domain.
func lookups(text, lhs string) []string {
	re := regexp.MustCompile(`(?:^|[^\w.>])` + regexp.QuoteMeta(lhs) + `\s*=\s*ANY\s*\(\s*trovesnap\.(\w+)\(\)\s*\)`)
	var out []string
	for _, m := range re.FindAllStringSubmatch(text, -1) {
		out = append(out, m[1])
	}
	return out
}

// found is one IN-list in a text: its values and where they start.
type found struct {
	vals []string
	at   int
}

// inLists finds every IN-list that follows lhs in text (lhs ending a
// word): a function may test the same thing twice, and each copy is held.
func inLists(text, lhs string) []found {
	re := regexp.MustCompile(`(?:^|[^\w.>])` + regexp.QuoteMeta(lhs) + `\s+(?:NOT\s+)?IN\s*\(([^)]*)\)`)
	var out []found
	for _, m := range re.FindAllStringSubmatchIndex(text, -1) {
		var vals []string
		for _, v := range strings.Split(text[m[2]:m[3]], ",") {
			vals = append(vals, strings.Trim(strings.TrimSpace(v), "'"))
		}
		out = append(out, found{vals, m[2]})
	}
	return out
}

// Where the live SQL must spell a list out — a CHECK in an applied
// migration, a literal in an RPC body, a row level security policy — the
// newest definition of it is the list internal/domain declares; a CHECK
// that calls a generated lookup instead is held by the golden test.
func TestLists_LiveSQLListsAreTheDomains(t *testing.T) {
	texts := readLiveSchema(t).texts()
	for _, h := range heldLists() {
		text, ok := texts[h.where]
		if !ok {
			t.Errorf("%s: not in the live schema", h.where)
			continue
		}
		lists := inLists(text, h.lhs)
		calls := lookups(text, h.lhs)
		switch {
		case h.lookup != "":
			if !slices.Contains(sqlgen.Functions, h.lookup) {
				t.Errorf("%s: held to trovesnap.%s(), which sqlgen does not generate", h.where, h.lookup)
			}
			if len(calls) == 0 {
				t.Errorf("%s: no %s = ANY (trovesnap.%s()) in %q", h.where, h.lhs, h.lookup, text)
			}
			for _, c := range calls {
				if c != h.lookup {
					t.Errorf("%s: %s = ANY (trovesnap.%s()), want trovesnap.%s()", h.where, h.lhs, c, h.lookup)
				}
			}
		case len(calls) > 0:
			t.Errorf("%s: %s = ANY (trovesnap.%s()), but no generated lookup is held for it here", h.where, h.lhs, strings.Join(calls, "(), trovesnap."))
		case len(lists) == 0:
			t.Errorf("%s: no %s IN (…) in %q", h.where, h.lhs, text)
		}
		for _, l := range lists {
			if !sameSet(l.vals, h.want) {
				t.Errorf("%s: %s IN %v, domain declares %v", h.where, h.lhs, l.vals, h.want)
			}
		}
	}
}

func sameSet(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}
