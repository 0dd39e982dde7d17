package store

// tablesIngestion lists, parents before children, the tables created by migration
// 0004_ingestion.sql (issue: candidate and draft tools).
var tablesIngestion = []table{
	{"import_run_details", "import_run_id"},
	{"candidate_item_changes", "candidate_id"},
	{"source_assets", "id"},
	{"candidate_media", "id"},
	{"draft_revisions", "id"},
	{"export_drafts", "id"},
	{"export_draft_items", "export_id, position"},
}
