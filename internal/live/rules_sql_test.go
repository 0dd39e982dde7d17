package live_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/live/pgtest"
)

// The lookups generated from internal/domain (internal/sqlgen) answer as
// the Go rules do for every input: each action and tool, unknown ones
// included; each bulk field; each status pair; each role × permission;
// page limits around both bounds; and the status lists.
func TestGeneratedRules_AnswerAsTheDomainForEveryInput(t *testing.T) {
	conn := superConn(t, pgtest.Need(t))
	query := func(sql string, args ...any) any {
		t.Helper()
		var v any
		if err := conn.QueryRow(ctx, sql, args...).Scan(&v); err != nil {
			t.Fatalf("%s %v: %v", sql, args, err)
		}
		return v
	}
	texts := func(v any) []string {
		if v == nil {
			return nil
		}
		var out []string
		for _, x := range v.([]any) {
			out = append(out, x.(string))
		}
		return out
	}

	actions := domain.Actions()
	var policyTools []string
	for _, a := range append(actions, domain.ActionSpec{Action: "delete_everything", Tool: "trove_delete_everything"}) {
		_, known := domain.ActionOf(a.Action)
		got := texts(query("SELECT trovesnap.action_tool($1)", a.Action))
		if want := []string{a.Tool, a.Requirement, a.Operation}; known && !slices.Equal(got, want) || !known && got != nil {
			t.Errorf("action_tool(%s) = %v, registry %+v", a.Action, got, a)
		}
		if got := texts(query("SELECT trovesnap.tool_perms($1)", a.Tool)); !slices.Equal(got, a.Permissions) {
			t.Errorf("tool_perms(%s) = %v, registry %v", a.Tool, got, a.Permissions)
		}
		if got := query("SELECT trovesnap.policy_may($1)", a.Tool).(bool); got != a.PolicyMay() {
			t.Errorf("policy_may(%s) = %v, registry %v", a.Tool, got, a.PolicyMay())
		}
		if got, _ := query("SELECT trovesnap.policy_human_only($1)", a.Action).(string); got != a.HumanOnly {
			t.Errorf("policy_human_only(%s) = %q, registry %q", a.Action, got, a.HumanOnly)
		}
		if a.PolicyMay() {
			policyTools = append(policyTools, a.Tool)
		}
	}
	if len(policyTools) == 0 || query("SELECT trovesnap.policy_may(NULL)").(bool) {
		t.Errorf("policy_may: tools %v; NULL must be false", policyTools)
	}

	for _, f := range append(domain.BulkFields(), domain.BulkField{Field: "status"}, domain.BulkField{Field: "qr_code"}) {
		got, _ := query("SELECT trovesnap.bulk_field_perm($1)", f.Field).(string)
		if got != f.Permission {
			t.Errorf("bulk_field_perm(%s) = %q, domain %q", f.Field, got, f.Permission)
		}
	}

	statuses := append(domain.ItemStatuses(), "", "paid")
	for _, from := range statuses {
		for _, to := range statuses {
			if got := query("SELECT trovesnap.can_transition($1, $2)", from, to).(bool); got != domain.CanTransition(from, to) {
				t.Errorf("can_transition(%q, %q) = %v, domain %v", from, to, got, domain.CanTransition(from, to))
			}
		}
	}

	perms := append(domain.Permissions(), "everything")
	for _, role := range append(domain.Roles(), "intern") {
		p := domain.Principal{Role: role}
		for _, perm := range perms {
			if got := query("SELECT trovesnap.has_perm($1, $2)", role, perm).(bool); got != p.Has(perm) {
				t.Errorf("has_perm(%s, %s) = %v, domain %v", role, perm, got, p.Has(perm))
			}
		}
	}

	for _, n := range []int{0, 1, domain.DefaultPageSize, domain.MaxPageSize - 1, domain.MaxPageSize, domain.MaxPageSize + 1, 1 << 30} {
		want, _ := domain.PageLimit(n)
		if got := query("SELECT trovesnap.page_limit($1)", n).(int32); int(got) != want {
			t.Errorf("page_limit(%d) = %d, domain %d", n, got, want)
		}
	}
	if got := query("SELECT trovesnap.page_limit(NULL)").(int32); int(got) != domain.DefaultPageSize {
		t.Errorf("page_limit(NULL) = %d", got)
	}
	if _, err := conn.Exec(ctx, "SELECT trovesnap.page_limit(-1)"); err == nil || !strings.Contains(err.Error(), "invalid_input:limit") {
		t.Errorf("page_limit(-1): %v", err)
	}

	for _, n := range []int{0, 1, domain.MaxSearchPageSize - 1, domain.MaxSearchPageSize, domain.MaxSearchPageSize + 1,
		domain.MaxPageSize, domain.MaxPageSize + 1} {
		want, _ := domain.PageLimit(n)
		want = min(want, domain.MaxSearchPageSize)
		if got := query("SELECT trovesnap.search_page_limit($1)", n).(int32); int(got) != want {
			t.Errorf("search_page_limit(%d) = %d, domain %d", n, got, want)
		}
	}
	if _, err := conn.Exec(ctx, "SELECT trovesnap.search_page_limit(-1)"); err == nil || !strings.Contains(err.Error(), "invalid_input:limit") {
		t.Errorf("search_page_limit(-1): %v", err)
	}
	for fn, want := range map[string]int{"search_max_terms": domain.MaxSearchTerms, "broad_bulk_limit": domain.BroadBulkLimit,
		"policy_name_max": domain.MaxPolicyNameLen, "max_import_rows": domain.MaxImportRows, "max_listed_ids": domain.MaxListedIDs,
		"max_related_ids": domain.MaxRelatedIDs} {
		if got := query("SELECT trovesnap." + fn + "()").(int32); int(got) != want {
			t.Errorf("%s() = %d, domain %d", fn, got, want)
		}
	}
	for _, st := range statuses {
		want, public := domain.PublicItemStatus(st)
		if got, _ := query("SELECT trovesnap.public_item_status($1)", st).(string); got != want || public != (got != "") {
			t.Errorf("public_item_status(%q) = %q, domain %q (%v)", st, got, want, public)
		}
	}

	for fn, want := range map[string][]string{"item_statuses": domain.ItemStatuses(), "sale_statuses": domain.SaleStatuses(),
		"proposal_statuses": domain.ProposalStatuses(), "public_sale_statuses": domain.PublicSaleStatuses,
		"public_item_statuses": domain.PublicItemStatuses(), "reportable_statuses": domain.ReportableStatuses,
		"status_sources": domain.StatusSources(), "grant_statuses": domain.GrantStatuses(), "grant_issuers": domain.GrantIssuers(),
		"policy_statuses": domain.PolicyStatuses(), "client_statuses": domain.ClientStatuses(),
		"review_statuses": domain.ReviewStatuses(), "label_batch_statuses": domain.LabelBatchStatuses(),
		"disposition_sale_statuses": domain.DispositionSaleStatuses(), "unsold_item_statuses": domain.UnsoldItemStatuses(),
		"financial_fields": domain.FinancialFields(), "sale_completion_statuses": domain.SaleCompletionStatuses()} {
		if got := texts(query("SELECT trovesnap." + fn + "()")); !slices.Equal(got, want) {
			t.Errorf("%s() = %v, domain %v", fn, got, want)
		}
	}
}

// The RPCs that held a copy of a rule call the generated lookup instead,
// and the status CHECKs name the generated lists: no second copy is left
// in the functions and constraints the database runs.
func TestGeneratedRules_RPCsCallTheLookups(t *testing.T) {
	conn := superConn(t, pgtest.Need(t))
	// A copy of a rule: a status list (two of its values, quoted and
	// adjacent), a public status name, or a bound of the marketplace or
	// of a policy as a number.
	copies := []string{"'trove_publish_item'", "'pending_pickup', 'sold'", "'live', 'closed'", "'approved', 'rejected'",
		"'published', 'live'", "'published', 'on_hold'", "'closed', 'archived'", "'draft', 'printed'", "'needs_review', 'approved'",
		"'available'", ", 50)", "> 8 ", "at most 8", "> 20 ", "and 20'", "> 10000", "<= 500", "> 500", "<= 100", "1:100]",
		"'name') > 100", "'required, at most 100"}
	for fn, calls := range map[string][]string{
		"mcp_execute_proposal": {"trovesnap.tool_perms(p_tool)", "trovesnap.policy_refusal(pol, pr)"},
		"policy_refusal": {"trovesnap.policy_human_only(pr.action)", "trovesnap.broad_bulk_limit()",
			"trovesnap.financial_fields()", "trovesnap.sale_completion_statuses()"},
		"seller_validate_policy": {"trovesnap.policy_may(v)", "trovesnap.broad_bulk_limit()", "trovesnap.policy_name_max()"},
		"mcp_list_sales":         {"trovesnap.sale_statuses()"},
		"mcp_list_items":         {"trovesnap.item_statuses()"},
		"mcp_list_status_events": {"trovesnap.item_statuses()"},
		"seller_list_proposals":  {"trovesnap.proposal_statuses()"},
		"public_item_json":       {"trovesnap.public_item_status(i.status)"},
		"public_item_where":      {"trovesnap.public_item_statuses()", "trovesnap.public_sale_statuses()"},
		"mcp_public_sale":        {"trovesnap.public_sale_statuses()"},
		"mcp_search_marketplace": {"trovesnap.search_page_limit(p_limit)", "trovesnap.search_max_terms()", "trovesnap.public_sale_statuses()"},
		"mcp_list_candidates":    {"trovesnap.review_statuses()"},
		"mcp_list_label_batches": {"trovesnap.label_batch_statuses()"},
		"mcp_disposition_queue":  {"trovesnap.disposition_sale_statuses()", "trovesnap.unsold_item_statuses()"},
		"mcp_run_import": {"trovesnap.reportable_statuses()", "trovesnap.max_import_rows()", "trovesnap.max_listed_ids()",
			"trovesnap.max_related_ids()"},
		"mcp_create_status_report": {"trovesnap.reportable_statuses()"},
	} {
		var src string
		if err := conn.QueryRow(ctx, // the body, not its public wrapper (migrations 29 and 34)
			"SELECT prosrc FROM pg_proc WHERE proname = $1 ORDER BY pronamespace = 'trovesnap'::regnamespace DESC LIMIT 1", fn).Scan(&src); err != nil {
			t.Fatalf("%s: %v", fn, err)
		}
		for _, call := range calls {
			if !strings.Contains(src, call) {
				t.Errorf("%s does not call %s", fn, call)
			}
		}
		for _, c := range copies {
			if strings.Contains(src, c) {
				t.Errorf("%s still spells out a rule itself: %s", fn, c)
			}
		}
	}

	// The public context's row level security names the generated lists.
	rows, err := conn.Query(ctx, `SELECT tablename || ': ' || qual FROM pg_policies
		WHERE schemaname = 'trovesnap' AND policyname = 'public_read' AND tablename IN ('estate_sales', 'items') ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	quals, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(quals) != 2 {
		t.Fatalf("public_read policies %v, %v", quals, err)
	}
	for _, q := range quals {
		if !strings.Contains(q, "public_sale_statuses()") || strings.Contains(q, "'published'") {
			t.Errorf("%s: not the generated list", q)
		}
	}
	if !strings.Contains(quals[1], "public_item_statuses()") {
		t.Errorf("%s: not the generated list", quals[1])
	}

	checks := map[string]string{
		"estate_sales_status_check":                    "sale_statuses()",
		"items_status_check":                           "item_statuses()",
		"item_status_events_from_status_check":         "item_statuses()",
		"item_status_events_to_status_check":           "item_statuses()",
		"proposals_status_check":                       "proposal_statuses()",
		"candidate_item_changes_reported_status_check": "reportable_statuses()",
		"item_status_events_source_type_check":         "status_sources()",
		"approval_grants_status_check":                 "grant_statuses()",
		"approval_grants_issuer_type_check":            "grant_issuers()",
		"automation_policies_status_check":             "policy_statuses()",
		"mcp_clients_status_check":                     "client_statuses()",
		"inventory_candidates_review_status_check":     "review_statuses()",
		"label_batches_status_check":                   "label_batch_statuses()",
	}
	rows, err = conn.Query(ctx, `SELECT conname, pg_get_constraintdef(oid), convalidated FROM pg_constraint
		WHERE connamespace = 'trovesnap'::regnamespace AND contype = 'c'`)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for rows.Next() {
		var (
			name, def string
			valid     bool
		)
		if err := rows.Scan(&name, &def, &valid); err != nil {
			t.Fatal(err)
		}
		if fn, ok := checks[name]; ok {
			seen++
			if !strings.Contains(def, "trovesnap."+fn) || !valid {
				t.Errorf("%s: %s (validated %v): not the generated list", name, def, valid)
			}
		}
	}
	if err := rows.Err(); err != nil || seen != len(checks) {
		t.Fatalf("found %d of the %d status constraints, %v", seen, len(checks), err)
	}
}
