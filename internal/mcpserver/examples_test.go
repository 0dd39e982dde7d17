package mcpserver_test

import "github.com/triunalabs/trovesnap/fixtures"

// readExample says how to call one read tool on the seeded fixtures, and,
// for a tool that returns a page, where its rows are: the one place a new
// read tool is described to the tests that call every read (the envelope
// schemas, the description claims). A read missing here fails them.
type readExample struct {
	args  map[string]any
	rows  string // a paged tool's data field holding the page's rows
	id    string // the row field (dotted) holding the row's id
	table string // where the order column of a paged tool's rows lives
}

// readExamples are the calls of every read tool but trove_get_proposal,
// whose proposal the tests create first.
var readExamples = map[string]readExample{
	"trove_search_marketplace":    {args: map[string]any{}, rows: "hits"},
	"trove_get_public_sale":       {args: map[string]any{"sale_id": fixtures.LiveSaleID}},
	"trove_get_public_item":       {args: map[string]any{"item_id": fixtures.DemoItemID}},
	"trove_resolve_public_qr":     {args: map[string]any{"qr_code": "QR-221-0001"}},
	"trove_list_sales":            {args: map[string]any{}, rows: "sales", id: "id", table: "estate_sales"},
	"trove_get_sale":              {args: map[string]any{"sale_id": fixtures.PublishedSaleID}},
	"trove_list_items":            {args: map[string]any{}, rows: "items", id: "id", table: "items"},
	"trove_get_item":              {args: map[string]any{"item_id": fixtures.DemoItemID}},
	"trove_list_candidates":       {args: map[string]any{}, rows: "candidates", id: "id", table: "inventory_candidates"},
	"trove_get_candidate":         {args: map[string]any{"candidate_id": fixtures.DemoCandidateID}},
	"trove_get_demand_signals":    {args: map[string]any{}},
	"trove_demand_signals":        {args: map[string]any{}},
	"trove_list_import_runs":      {args: map[string]any{}, rows: "runs", id: "id", table: "import_runs"},
	"trove_get_import_run":        {args: map[string]any{"run_id": "run_848"}, rows: "records", id: "id", table: "source_records"},
	"trove_list_status_events":    {args: map[string]any{}, rows: "events", id: "id", table: "item_status_events"},
	"trove_list_label_batches":    {args: map[string]any{}, rows: "batches", id: "id", table: "label_batches"},
	"trove_get_disposition_queue": {args: map[string]any{"sale_id": fixtures.ClosedSaleID}, rows: "entries", id: "item.id", table: "items"},
}
