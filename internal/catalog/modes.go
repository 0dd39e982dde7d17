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
}

var mockOnly = []domain.Mode{domain.ModeMock}

// restrictModes applies liveReady to a built tool.
func restrictModes(t *Tool) {
	if !liveReady[t.Name] {
		t.Modes = mockOnly
	}
}
