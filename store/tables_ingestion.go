package store

// tablesIngestion lists, parents before children, the tables created by migration
// 0004_ingestion.sql (issue: candidate and draft tools).
var tablesIngestion = []table{}
