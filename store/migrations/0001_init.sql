-- 0001_init: the P5/P6 subset that trovesnap simulates in mock mode, plus the
-- P7 records (plugin_events, idempotency_keys) and store_meta.
--
-- Conventions (the Go code relies on them):
--   * Timestamps are UTC text in RFC 3339 with exactly nine fractional digits
--     ("2026-11-29T10:00:00.000000000Z"). Fixed width makes text order equal
--     time order, so keyset pagination and expiry checks compare text.
--   * Every tenant-owned row carries tenant_id. References between tenant-owned
--     rows are composite (tenant_id, x_id) → parent(tenant_id, id), so the
--     database itself refuses a row that points into another tenant. That is
--     why parents declare a redundant UNIQUE (tenant_id, id).
--   * Optional references are NULL, never '' (a composite FK with a NULL
--     column is not checked).
--   * Tables are STRICT: a value of the wrong type is an error, not a silent
--     conversion.
-- This file runs inside one IMMEDIATE transaction together with
-- PRAGMA user_version = 1, so a crash leaves either nothing or all of it.

-- 0x54524F56 ("TROV"): marks the file as trovesnap's so Open can tell its own
-- database from a foreign one before touching it.
PRAGMA application_id = 1414680406;

CREATE TABLE store_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) STRICT;

CREATE TABLE tenants (
    id   TEXT PRIMARY KEY CHECK (id <> ''),
    name TEXT NOT NULL
) STRICT;

CREATE TABLE users (
    id           TEXT PRIMARY KEY CHECK (id <> ''),
    display_name TEXT NOT NULL,
    email        TEXT NOT NULL
) STRICT;

-- One membership per (tenant, user): a principal resolves to exactly one role.
CREATE TABLE memberships (
    id        TEXT PRIMARY KEY CHECK (id <> ''),
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    user_id   TEXT NOT NULL REFERENCES users (id),
    role      TEXT NOT NULL CHECK (role IN ('owner', 'manager', 'cataloger', 'pricer', 'checkout')),
    UNIQUE (tenant_id, user_id)
) STRICT;
CREATE INDEX memberships_user ON memberships (user_id);

-- A registered MCP client. credential_hash is the hex sha256 of the client's
-- token (the token itself is never stored); NULL until a credential is issued.
CREATE TABLE mcp_clients (
    id                   TEXT PRIMARY KEY CHECK (id <> ''),
    tenant_id            TEXT NOT NULL REFERENCES tenants (id),
    source_connection_id TEXT NOT NULL DEFAULT '',
    name                 TEXT NOT NULL,
    client_type          TEXT NOT NULL,
    status               TEXT NOT NULL CHECK (status IN ('active', 'pending', 'suspended', 'revoked')),
    actor_id             TEXT NOT NULL REFERENCES users (id),
    allowed_tool_groups  TEXT NOT NULL DEFAULT '[]'
        CHECK (json_valid(allowed_tool_groups) AND json_type(allowed_tool_groups) = 'array'),
    demo                 INTEGER NOT NULL DEFAULT 0 CHECK (demo IN (0, 1)),
    created_by           TEXT NOT NULL DEFAULT '',
    created_at           TEXT NOT NULL,
    credential_hash      TEXT CHECK (credential_hash IS NULL OR credential_hash <> ''),
    last_seen_at         TEXT,
    UNIQUE (tenant_id, id)
) STRICT;
-- Mock mode's "no credential" means THE demo client: there can be only one.
CREATE UNIQUE INDEX mcp_clients_one_demo ON mcp_clients (demo) WHERE demo = 1;
CREATE UNIQUE INDEX mcp_clients_credential ON mcp_clients (credential_hash) WHERE credential_hash IS NOT NULL;
CREATE INDEX mcp_clients_actor ON mcp_clients (actor_id);

CREATE TABLE estate_sales (
    id                TEXT PRIMARY KEY CHECK (id <> ''),
    tenant_id         TEXT NOT NULL REFERENCES tenants (id),
    title             TEXT NOT NULL,
    status            TEXT NOT NULL CHECK (status IN ('draft', 'published', 'live', 'closed', 'archived')),
    visibility        TEXT NOT NULL CHECK (visibility IN ('private', 'public')),
    city              TEXT NOT NULL DEFAULT '',
    region            TEXT NOT NULL DEFAULT '',
    postal_code       TEXT NOT NULL DEFAULT '',
    street_address    TEXT NOT NULL DEFAULT '',
    address_policy    TEXT NOT NULL CHECK (address_policy IN ('hidden_until', 'always', 'never')),
    address_reveal_at TEXT,
    starts_at         TEXT NOT NULL,
    ends_at           TEXT NOT NULL,
    version           INTEGER NOT NULL DEFAULT 1 CHECK (version >= 1),
    created_at        TEXT NOT NULL,
    updated_at        TEXT NOT NULL,
    UNIQUE (tenant_id, id),
    CHECK (ends_at >= starts_at),
    -- "hidden until" needs the instant it stops being hidden.
    CHECK (address_policy <> 'hidden_until' OR address_reveal_at IS NOT NULL)
) STRICT;
-- ListSales: keyset on (starts_at, id) within a tenant, optionally by status.
CREATE INDEX estate_sales_list ON estate_sales (tenant_id, starts_at, id);
CREATE INDEX estate_sales_status ON estate_sales (tenant_id, status, starts_at, id);

CREATE TABLE items (
    id                            TEXT PRIMARY KEY CHECK (id <> ''),
    tenant_id                     TEXT NOT NULL,
    sale_id                       TEXT NOT NULL,
    title                         TEXT NOT NULL,
    description                   TEXT NOT NULL DEFAULT '',
    category                      TEXT NOT NULL DEFAULT '',
    room                          TEXT NOT NULL DEFAULT '',
    status                        TEXT NOT NULL CHECK (status IN ('draft', 'ready', 'published', 'on_hold',
                                                                  'pending_pickup', 'sold', 'withdrawn', 'archived')),
    price_cents                   INTEGER CHECK (price_cents IS NULL OR price_cents >= 0),
    internal_price_guidance_cents INTEGER CHECK (internal_price_guidance_cents IS NULL OR internal_price_guidance_cents >= 0),
    cost_basis_cents              INTEGER CHECK (cost_basis_cents IS NULL OR cost_basis_cents >= 0),
    appraisal_flag                INTEGER NOT NULL DEFAULT 0 CHECK (appraisal_flag IN (0, 1)),
    staff_notes                   TEXT NOT NULL DEFAULT '',
    qr_code                       TEXT NOT NULL DEFAULT '',
    version                       INTEGER NOT NULL DEFAULT 1 CHECK (version >= 1),
    created_at                    TEXT NOT NULL,
    updated_at                    TEXT NOT NULL,
    UNIQUE (tenant_id, id),
    FOREIGN KEY (tenant_id, sale_id) REFERENCES estate_sales (tenant_id, id)
) STRICT;
-- ListItems: keyset on (created_at, id) within a tenant, optionally by sale or
-- status; category prefix is a range scan on (tenant_id, category).
CREATE INDEX items_list ON items (tenant_id, created_at, id);
CREATE INDEX items_sale ON items (tenant_id, sale_id, created_at, id);
CREATE INDEX items_status ON items (tenant_id, status, created_at, id);
CREATE INDEX items_category ON items (tenant_id, category);

CREATE TABLE item_photos (
    id          TEXT PRIMARY KEY CHECK (id <> ''),
    tenant_id   TEXT NOT NULL,
    item_id     TEXT NOT NULL,
    storage_key TEXT NOT NULL,
    width       INTEGER NOT NULL DEFAULT 0 CHECK (width >= 0),
    height      INTEGER NOT NULL DEFAULT 0 CHECK (height >= 0),
    position    INTEGER NOT NULL DEFAULT 0,
    published   INTEGER NOT NULL DEFAULT 0 CHECK (published IN (0, 1)),
    FOREIGN KEY (tenant_id, item_id) REFERENCES items (tenant_id, id)
) STRICT;
CREATE INDEX item_photos_item ON item_photos (tenant_id, item_id, position, id);

-- Where ingested data comes from. kind is an open vocabulary (mcp_client,
-- csv_upload, manual, ...); an mcp_client descriptor names its client, and
-- there is at most one per (tenant, client): the candidate chain reuses it.
CREATE TABLE source_descriptors (
    id         TEXT PRIMARY KEY CHECK (id <> ''),
    tenant_id  TEXT NOT NULL REFERENCES tenants (id),
    kind       TEXT NOT NULL CHECK (kind <> ''),
    client_id  TEXT,
    label      TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    UNIQUE (tenant_id, id),
    FOREIGN KEY (tenant_id, client_id) REFERENCES mcp_clients (tenant_id, id),
    CHECK (kind <> 'mcp_client' OR client_id IS NOT NULL)
) STRICT;
CREATE UNIQUE INDEX source_descriptors_one_per_client ON source_descriptors (tenant_id, client_id)
    WHERE kind = 'mcp_client';

CREATE TABLE import_runs (
    id                   TEXT PRIMARY KEY CHECK (id <> ''),
    tenant_id            TEXT NOT NULL,
    source_descriptor_id TEXT NOT NULL,
    sale_id              TEXT,
    kind                 TEXT NOT NULL,
    status               TEXT NOT NULL,
    record_count         INTEGER NOT NULL DEFAULT 0 CHECK (record_count >= 0),
    created_at           TEXT NOT NULL,
    UNIQUE (tenant_id, id),
    FOREIGN KEY (tenant_id, source_descriptor_id) REFERENCES source_descriptors (tenant_id, id),
    FOREIGN KEY (tenant_id, sale_id) REFERENCES estate_sales (tenant_id, id)
) STRICT;
CREATE INDEX import_runs_descriptor ON import_runs (tenant_id, source_descriptor_id, created_at, id);
CREATE INDEX import_runs_sale ON import_runs (tenant_id, sale_id);

CREATE TABLE source_records (
    id            TEXT PRIMARY KEY CHECK (id <> ''),
    tenant_id     TEXT NOT NULL,
    import_run_id TEXT NOT NULL,
    ordinal       INTEGER NOT NULL CHECK (ordinal >= 0),
    payload_hash  TEXT NOT NULL,
    payload       TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    UNIQUE (tenant_id, id),
    UNIQUE (import_run_id, ordinal),
    FOREIGN KEY (tenant_id, import_run_id) REFERENCES import_runs (tenant_id, id)
) STRICT;
CREATE INDEX source_records_run ON source_records (tenant_id, import_run_id, ordinal);

-- A reviewable, non-canonical proposal for inventory (P5). Provenance ids
-- are NULL for candidates that predate provenance (hand-entered fixtures).
CREATE TABLE inventory_candidates (
    id                   TEXT PRIMARY KEY CHECK (id <> ''),
    tenant_id            TEXT NOT NULL,
    sale_id              TEXT NOT NULL,
    kind                 TEXT NOT NULL CHECK (kind <> ''),
    title                TEXT NOT NULL,
    description          TEXT NOT NULL DEFAULT '',
    category             TEXT NOT NULL DEFAULT '',
    room                 TEXT NOT NULL DEFAULT '',
    condition            TEXT NOT NULL DEFAULT '',
    quantity             INTEGER NOT NULL DEFAULT 1 CHECK (quantity >= 1),
    supplied_price_cents INTEGER CHECK (supplied_price_cents IS NULL OR supplied_price_cents >= 0),
    notes                TEXT NOT NULL DEFAULT '',
    review_status        TEXT NOT NULL CHECK (review_status IN ('needs_review', 'approved', 'rejected', 'promoted')),
    source_descriptor_id TEXT,
    import_run_id        TEXT,
    source_record_id     TEXT,
    created_by_client_id TEXT,
    version              INTEGER NOT NULL DEFAULT 1 CHECK (version >= 1),
    created_at           TEXT NOT NULL,
    UNIQUE (tenant_id, id),
    FOREIGN KEY (tenant_id, sale_id) REFERENCES estate_sales (tenant_id, id),
    FOREIGN KEY (tenant_id, source_descriptor_id) REFERENCES source_descriptors (tenant_id, id),
    FOREIGN KEY (tenant_id, import_run_id) REFERENCES import_runs (tenant_id, id),
    FOREIGN KEY (tenant_id, source_record_id) REFERENCES source_records (tenant_id, id),
    FOREIGN KEY (tenant_id, created_by_client_id) REFERENCES mcp_clients (tenant_id, id)
) STRICT;
-- ListCandidates: keyset on (created_at, id), optionally by sale or review status.
CREATE INDEX inventory_candidates_list ON inventory_candidates (tenant_id, created_at, id);
CREATE INDEX inventory_candidates_sale ON inventory_candidates (tenant_id, sale_id, created_at, id);
CREATE INDEX inventory_candidates_review ON inventory_candidates (tenant_id, review_status, created_at, id);
CREATE INDEX inventory_candidates_descriptor ON inventory_candidates (tenant_id, source_descriptor_id);
CREATE INDEX inventory_candidates_run ON inventory_candidates (tenant_id, import_run_id);
CREATE INDEX inventory_candidates_record ON inventory_candidates (tenant_id, source_record_id);
CREATE INDEX inventory_candidates_client ON inventory_candidates (tenant_id, created_by_client_id);

-- Buyer-interest counts; never a buyer identity. sale_id NULL = tenant-wide.
CREATE TABLE demand_signals (
    id           INTEGER PRIMARY KEY,
    tenant_id    TEXT NOT NULL REFERENCES tenants (id),
    sale_id      TEXT,
    category     TEXT NOT NULL,
    saves        INTEGER NOT NULL DEFAULT 0 CHECK (saves >= 0),
    searches     INTEGER NOT NULL DEFAULT 0 CHECK (searches >= 0),
    follows      INTEGER NOT NULL DEFAULT 0 CHECK (follows >= 0),
    window_start TEXT NOT NULL,
    window_end   TEXT NOT NULL,
    FOREIGN KEY (tenant_id, sale_id) REFERENCES estate_sales (tenant_id, id),
    CHECK (window_end >= window_start)
) STRICT;
-- One row per (tenant, sale, category, window); also the DemandSignals order.
CREATE UNIQUE INDEX demand_signals_key
    ON demand_signals (tenant_id, ifnull(sale_id, ''), category, window_start, window_end);
CREATE INDEX demand_signals_sale ON demand_signals (tenant_id, sale_id);

-- plugin_events: the append-only record of every invocation. The indexed
-- columns serve lookups; body is the full domain.Event JSON. seq is the
-- rowid (AUTOINCREMENT: never reused), so seq order is append order; id is
-- the event's public key. No foreign keys: the audit must accept the event of
-- any call, including one that names nothing that exists.
CREATE TABLE plugin_events (
    seq               INTEGER PRIMARY KEY AUTOINCREMENT,
    id                TEXT NOT NULL UNIQUE CHECK (id <> ''),
    tenant_id         TEXT NOT NULL DEFAULT '',
    correlation_id    TEXT NOT NULL DEFAULT '',
    request_id        TEXT NOT NULL DEFAULT '',
    server_request_id TEXT NOT NULL DEFAULT '',
    tool_name         TEXT NOT NULL DEFAULT '',
    outcome           TEXT NOT NULL CHECK (outcome IN ('success', 'replayed', 'blocked', 'failed')),
    occurred_at       TEXT NOT NULL,
    body              TEXT NOT NULL CHECK (json_valid(body))
) STRICT;
CREATE INDEX plugin_events_tenant ON plugin_events (tenant_id, seq);
CREATE INDEX plugin_events_correlation ON plugin_events (correlation_id, seq);
CREATE INDEX plugin_events_request ON plugin_events (request_id, seq);
CREATE INDEX plugin_events_server_request ON plugin_events (server_request_id, seq);
CREATE INDEX plugin_events_tool ON plugin_events (tool_name, seq);

-- Append-only guards. UPDATE and DELETE abort. INSERT OR REPLACE would
-- otherwise delete the old row without firing the DELETE trigger (REPLACE
-- fires delete triggers only with recursive_triggers on), so an insert that
-- would collide is refused before conflict resolution runs.
-- (Store.Reset drops these, empties the table and recreates them from
-- sqlite_master in one transaction.)
CREATE TRIGGER plugin_events_no_update BEFORE UPDATE ON plugin_events
BEGIN
    SELECT RAISE(ABORT, 'plugin_events is append-only');
END;
CREATE TRIGGER plugin_events_no_delete BEFORE DELETE ON plugin_events
BEGIN
    SELECT RAISE(ABORT, 'plugin_events is append-only');
END;
CREATE TRIGGER plugin_events_no_replace BEFORE INSERT ON plugin_events
WHEN EXISTS (SELECT 1 FROM plugin_events WHERE id = NEW.id OR seq = NEW.seq)
BEGIN
    SELECT RAISE(ABORT, 'plugin_events is append-only');
END;

-- idempotency_keys: the first result of a persisted write, per scope
-- (tenant, client, tool, tool major, caller key). fingerprint is the hash of
-- the canonical input; result is a domain.StoredResult JSON. A key is honoured
-- for 24 hours: expires_at = created_at + 24h (store.IdempotencyTTL). After
-- that the same key starts a new execution, and PruneIdempotency deletes it.
CREATE TABLE idempotency_keys (
    tenant_id   TEXT NOT NULL,
    client_id   TEXT NOT NULL,
    tool        TEXT NOT NULL,
    tool_major  INTEGER NOT NULL,
    key         TEXT NOT NULL CHECK (key <> ''),
    fingerprint TEXT NOT NULL CHECK (fingerprint <> ''),
    result      TEXT NOT NULL CHECK (json_valid(result)),
    event_id    TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    expires_at  TEXT NOT NULL,
    PRIMARY KEY (tenant_id, client_id, tool, tool_major, key),
    FOREIGN KEY (tenant_id, client_id) REFERENCES mcp_clients (tenant_id, id)
) STRICT;
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);
