package store

// tablesOutbox lists the tables created by migration 0007_outbox.sql (live
// mode's event outbox).
var tablesOutbox = []table{
	{"event_outbox", "seq"},
}
