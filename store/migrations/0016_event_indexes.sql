-- The event's indexes, each justified (issue 18): every index is one more
-- b-tree written by every call's event. Kept: the id's uniqueness; the
-- chain index (tenant_id, seq, event_hash), which finds a tenant's chain
-- head on every insert; the correlation index, which finds a call's cause
-- on every insert; the partial causation index, written only by events
-- that have a cause (audit trace follows it). Dropped: the request,
-- server-request and tool indexes, which served only the operator's
-- audit commands and test helpers (store.Events, store.AuditEvents by
-- request or tool): those now scan, bounded by the tenant or correlation
-- filter they are usually given; no call path reads by them.
DROP INDEX plugin_events_request;
DROP INDEX plugin_events_server_request;
DROP INDEX plugin_events_tool;
