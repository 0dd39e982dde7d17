package catalog

import "github.com/triunalabs/trovesnap/internal/domain"

// liveReady lists the tools the live Supabase backend can serve today (its
// RPCs exist and the contract suite runs them on PostgreSQL). Every other
// tool is offered in mock mode only: in live mode the gate's discovery and
// call-time decision hide it, so no call can reach a live method that does
// not exist yet. A tool joins this list with its RPC and contract cases.
var liveReady = map[string]bool{
	"trove_list_sales":         true,
	"trove_list_items":         true,
	"trove_list_candidates":    true,
	"trove_create_candidate":   true,
	"trove_demand_signals":     true,
	"trove_get_demand_signals": true,
	"trove_map_csv_columns":    true, // pure: no Backend call

	// The public and scoped reads (supabase migration 5).
	"trove_search_marketplace":    true,
	"trove_get_public_sale":       true,
	"trove_get_public_item":       true,
	"trove_resolve_public_qr":     true,
	"trove_get_sale":              true,
	"trove_get_item":              true,
	"trove_get_candidate":         true,
	"trove_list_import_runs":      true,
	"trove_get_import_run":        true,
	"trove_list_status_events":    true,
	"trove_list_label_batches":    true,
	"trove_get_disposition_queue": true,

	// Proposals, approval state and the controlled actions whose domain
	// function the live database runs (supabase migration 6).
	"trove_propose_candidate_promotion": true,
	"trove_propose_item_publication":    true,
	"trove_propose_sale_publication":    true,
	"trove_get_proposal":                true,
	"trove_execute_candidate_promotion": true,
	"trove_publish_item":                true,
	"trove_publish_sale":                true,

	// The ingestion writes and the CSV preview's read (supabase migration
	// 9), and the media writes, whose bytes live in Postgres (migration
	// 12, docs/live-media.md).
	"trove_preview_csv_import":                true,
	"trove_apply_csv_import":                  true,
	"trove_run_manual_import":                 true,
	"trove_create_status_update_candidate":    true,
	"trove_draft_listing_copy":                true,
	"trove_stage_export":                      true,
	"trove_attach_candidate_photo":            true,
	"trove_create_media_attachment_candidate": true,

	// The remaining controlled actions (supabase migration 10). A buyer
	// notification or an export delivery is queued for an external worker
	// in live mode, never sent here (docs/live-outbound.md).
	"trove_propose_status_transition":  true,
	"trove_propose_bulk_item_update":   true,
	"trove_propose_identity_binding":   true,
	"trove_propose_disposition_action": true,
	"trove_propose_buyer_notification": true,
	"trove_propose_export_delivery":    true,
	"trove_update_item_status":         true,
	"trove_archive_item":               true,
	"trove_apply_bulk_item_update":     true,
	"trove_bind_item_identity":         true,
	"trove_release_item_identity":      true,
	"trove_apply_disposition_action":   true,
	"trove_notify_matched_buyers":      true,
	"trove_deliver_export":             true,
}

var mockOnly = []domain.Mode{domain.ModeMock}

// restrictModes applies liveReady to a built tool.
func restrictModes(t *Tool) {
	if !liveReady[t.Name] {
		t.Modes = mockOnly
	}
}
