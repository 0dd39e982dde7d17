package store

// tablesQuota lists the data tables of the hardening migration
// (migrations/*_cursor_secret_quota.sql): the candidate-tier usage the quota
// triggers keep. Its secret table is unlisted (cursors.go).
var tablesQuota = []table{
	{"tenant_usage", "tenant_id"},
}
