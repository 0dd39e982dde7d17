package store

// tablesApprovals lists, parents before children, the tables created by migration
// 0005_approvals.sql (issue: proposals, grants, policies).
var tablesApprovals = []table{}
