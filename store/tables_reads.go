package store

// tablesReads lists, parents before children, the tables created by migration
// 0003_reads.sql (issue: read tools).
//
// search_fts is an FTS5 table: SQLite lists its shadow tables (_config,
// _content, _data, _idx) as tables too, so they are here for Counts and
// Digest. They come before search_fts so that Reset, which deletes in
// reverse order, empties search_fts through FTS5 first; insertDataset then
// recreates the index from its own definition (see rebuildSearchIndex).
var tablesReads = []table{
	{"membership_sales", "membership_id, sale_id"},
	{"item_price_history", "id"},
	{"item_status_events", "id"},
	{"label_batches", "id"},
	{"qr_labels", "code"},
	{"search_keys", "seq"},
	{"search_fts_config", "k"},
	{"search_fts_content", "id"},
	{"search_fts_data", "id"},
	{"search_fts_idx", "segid, term"},
	{"search_fts", "rowid"},
}
