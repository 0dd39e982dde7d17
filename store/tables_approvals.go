package store

// tablesApprovals lists, parents before children, the tables created by
// migration 0005_approvals.sql (issue: proposals, grants, policies).
var tablesApprovals = []table{
	{"proposals", "id"},
	{"approval_grants", "id"},
	{"automation_policies", "id"},
	{"automation_policy_versions", "policy_id, version"},
	{"policy_uses", "id"},
	{"item_provenance", "item_id"},
	{"item_change_history", "id"},
	{"item_dispositions", "item_id"},
	{"simulated_deliveries", "id"},
	{"checkout_scans", "id"},
	{"public_appraisal_links", "id"},
}
