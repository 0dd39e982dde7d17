package live

import "github.com/triunalabs/trovesnap/internal/domain"

// rpcRateClass is the limit class each MCP RPC counts its own call in
// (its wrapper, migration 34: trovesnap.rpc_rate_class holds the same map,
// TestRPCRates_SQLClassesAreGos holds it to this one); "" counts nothing.
// An RPC that serves a tool counts in that tool's tier's class
// (catalog.LimitClass; TestRPCRates_ClassesAreTheToolsTiers). Counted in
// the database, the limits hold for a caller who calls the RPCs itself
// with a client token and the public key, not only for the gate.
//
// Not counted: the plumbing every tool call makes around its one counted
// RPC (the principal, the idempotency check, cursors, the approval state,
// the state reads that prepare a write) — counting it would charge one call
// several times; the doctor's RPCs; mcp_consume_rate, which is the count;
// and mcp_append_event, whose body limits anonymous events.
var rpcRateClass = map[string]string{
	"mcp_demand_signals":     domain.LimitReads,
	"mcp_disposition_queue":  domain.LimitReads,
	"mcp_get_candidate":      domain.LimitReads,
	"mcp_get_import_run":     domain.LimitReads,
	"mcp_get_item":           domain.LimitReads,
	"mcp_get_proposal":       domain.LimitReads,
	"mcp_get_sale":           domain.LimitReads,
	"mcp_list_candidates":    domain.LimitReads,
	"mcp_list_import_runs":   domain.LimitReads,
	"mcp_list_items":         domain.LimitReads,
	"mcp_list_label_batches": domain.LimitReads,
	"mcp_list_sales":         domain.LimitReads,
	"mcp_list_status_events": domain.LimitReads,
	"mcp_public_item":        domain.LimitReads,
	"mcp_public_sale":        domain.LimitReads,
	"mcp_resolve_public_qr":  domain.LimitReads,
	"mcp_search_marketplace": domain.LimitReads,

	"mcp_attach_candidate_media":     domain.LimitCandidateWrites,
	"mcp_create_inventory_candidate": domain.LimitCandidateWrites,
	"mcp_create_media_candidate":     domain.LimitCandidateWrites,
	"mcp_create_status_report":       domain.LimitCandidateWrites,
	"mcp_draft_listing_copy":         domain.LimitCandidateWrites,
	"mcp_run_import":                 domain.LimitCandidateWrites,
	"mcp_stage_export":               domain.LimitCandidateWrites,
	"mcp_review_candidate":           domain.LimitCandidateWrites,

	"mcp_create_proposal":  domain.LimitProposals,
	"mcp_execute_proposal": domain.LimitControlledActions,

	"mcp_append_event":      "",
	"mcp_approval_state":    "",
	"mcp_check_idempotency": "",
	"mcp_consume_rate":      "",
	"mcp_cursor_open":       "",
	"mcp_cursor_seal":       "",
	"mcp_draft_facts":       "",
	"mcp_export_state":      "",
	"mcp_import_targets":    "",
	"mcp_proposal_state":    "",
	"mcp_resolve_principal": "",
	"mcp_role_check":        "",
	"mcp_schema_version":    "",
}

// toolRPC names the RPC that makes each tool's one domain call in live
// mode, for the tools of the reads and candidate_writes classes (classRPC
// has the others). A tool missing here (trove_map_csv_columns reads nothing;
// trove_preview_csv_import reads mcp_import_targets, plumbing of the
// import) is counted by the gate as before.
var toolRPC = map[string]string{
	"trove_list_sales":                        "mcp_list_sales",
	"trove_list_items":                        "mcp_list_items",
	"trove_list_candidates":                   "mcp_list_candidates",
	"trove_demand_signals":                    "mcp_demand_signals",
	"trove_get_demand_signals":                "mcp_demand_signals",
	"trove_get_sale":                          "mcp_get_sale",
	"trove_get_item":                          "mcp_get_item",
	"trove_get_candidate":                     "mcp_get_candidate",
	"trove_list_import_runs":                  "mcp_list_import_runs",
	"trove_get_import_run":                    "mcp_get_import_run",
	"trove_list_status_events":                "mcp_list_status_events",
	"trove_list_label_batches":                "mcp_list_label_batches",
	"trove_get_disposition_queue":             "mcp_disposition_queue",
	"trove_get_proposal":                      "mcp_get_proposal",
	"trove_search_marketplace":                "mcp_search_marketplace",
	"trove_get_public_sale":                   "mcp_public_sale",
	"trove_get_public_item":                   "mcp_public_item",
	"trove_resolve_public_qr":                 "mcp_resolve_public_qr",
	"trove_create_candidate":                  "mcp_create_inventory_candidate",
	"trove_attach_candidate_photo":            "mcp_attach_candidate_media",
	"trove_create_media_attachment_candidate": "mcp_create_media_candidate",
	"trove_run_manual_import":                 "mcp_run_import",
	"trove_apply_csv_import":                  "mcp_run_import",
	"trove_create_status_update_candidate":    "mcp_create_status_report",
	"trove_draft_listing_copy":                "mcp_draft_listing_copy",
	"trove_stage_export":                      "mcp_stage_export",
	"trove_review_candidate":                  "mcp_review_candidate",
}

// classRPC names the RPC that makes every call of a limit class whose
// tools share one Backend method: every proposal tool is CreateProposal,
// every controlled action ExecuteProposal.
var classRPC = map[string]string{
	domain.LimitProposals:         "mcp_create_proposal",
	domain.LimitControlledActions: "mcp_execute_proposal",
}

// rpcOfTool is the RPC that makes a call of tool (of limit class class):
// "" when the tool has none that counts.
func rpcOfTool(tool, class string) string {
	if fn, ok := classRPC[class]; ok {
		return fn
	}
	return toolRPC[tool]
}

// CountsRateInCall reports whether a call of tool, of limit class class,
// is counted in that class by the RPC that makes it, so the gate must not
// count it again (gate.callCounter).
func (b *Backend) CountsRateInCall(tool, class string) bool {
	return rpcRateClass[rpcOfTool(tool, class)] == class && class != ""
}
