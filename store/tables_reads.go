package store

// tablesReads lists, parents before children, the tables created by migration
// 0003_reads.sql (issue: read tools).
var tablesReads = []table{}
