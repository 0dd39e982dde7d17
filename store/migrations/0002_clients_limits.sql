-- Governed access: client trust metadata, per-tenant/per-client limits and
-- cross-process rate counters.

ALTER TABLE mcp_clients ADD COLUMN trust_level TEXT NOT NULL DEFAULT 'standard_client'
    CHECK (trust_level IN ('trusted_local_client', 'standard_client', 'untrusted_client'));
ALTER TABLE mcp_clients ADD COLUMN risk_class TEXT NOT NULL DEFAULT 'standard'
    CHECK (risk_class IN ('standard', 'elevated', 'restricted'));
ALTER TABLE mcp_clients ADD COLUMN approval_policy_ids TEXT NOT NULL DEFAULT '[]'
    CHECK (json_valid(approval_policy_ids) AND json_type(approval_policy_ids) = 'array');

-- Limits: one row per tenant (client_id = '') and optional rows per client.
-- A missing row means the spec's §38 defaults.
CREATE TABLE mcp_limits (
    tenant_id                      TEXT NOT NULL REFERENCES tenants (id),
    client_id                      TEXT NOT NULL DEFAULT '',
    read_calls_per_minute          INTEGER NOT NULL CHECK (read_calls_per_minute >= 0),
    candidate_writes_per_minute    INTEGER NOT NULL CHECK (candidate_writes_per_minute >= 0),
    proposals_per_minute           INTEGER NOT NULL CHECK (proposals_per_minute >= 0),
    controlled_actions_per_minute  INTEGER NOT NULL CHECK (controlled_actions_per_minute >= 0),
    maximum_bulk_targets           INTEGER NOT NULL CHECK (maximum_bulk_targets >= 0),
    maximum_daily_paid_cost_usd    REAL NOT NULL CHECK (maximum_daily_paid_cost_usd >= 0),
    updated_at                     TEXT NOT NULL,
    PRIMARY KEY (tenant_id, client_id)
) STRICT;

-- Fixed one-minute windows per client and limit class. The counter is
-- incremented only while under the limit, in one statement on the single
-- writer (BEGIN IMMEDIATE across processes), so concurrent servers sharing
-- the file never admit more than the limit within a window.
CREATE TABLE rate_counters (
    bucket        TEXT NOT NULL,  -- client id, or 'public' for anonymous calls
    class         TEXT NOT NULL,
    window_start  INTEGER NOT NULL, -- unix seconds, a multiple of 60
    count         INTEGER NOT NULL,
    PRIMARY KEY (bucket, class, window_start)
) STRICT, WITHOUT ROWID;

-- When a client last made a call. Kept apart from mcp_clients so that the
-- client record changes only by a seller's action; written in the same
-- transaction as the call's plugin_event, at most once a minute per client.
CREATE TABLE client_activity (
    client_id     TEXT PRIMARY KEY REFERENCES mcp_clients (id),
    last_seen_at  TEXT NOT NULL
) STRICT;
