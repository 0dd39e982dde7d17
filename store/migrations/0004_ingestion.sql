-- 0004_ingestion: the records of the candidate and draft tools (spec §13):
-- import provenance beyond the run itself, candidates that propose a change
-- to an existing item (status_update, attach_media), private source assets
-- and their attachment to candidates, listing-copy draft revisions and
-- staged exports. Conventions are those of 0001_init.sql (STRICT tables,
-- composite tenant foreign keys, fixed-width UTC timestamps).
--
-- None of these tables is canonical inventory: nothing here is read by a
-- public tool, and no row here changes an item. inventory_candidates.kind is
-- an open vocabulary (CHECK kind <> ''), so the new kinds need no change to
-- that table; what a change-candidate is about lives in a side table.

-- What an import run read: its label, the hash and size of the original file
-- (CSV), the column mapping it applied and how many rows it rejected.
CREATE TABLE import_run_details (
    import_run_id        TEXT PRIMARY KEY,
    tenant_id            TEXT NOT NULL,
    source_label         TEXT NOT NULL DEFAULT '',
    content_sha256       TEXT CHECK (content_sha256 IS NULL OR (content_sha256 LIKE 'sha256:%' AND length(content_sha256) = 71)),
    content_bytes        INTEGER NOT NULL DEFAULT 0 CHECK (content_bytes >= 0),
    mapping              TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(mapping) AND json_type(mapping) = 'array'),
    rows_total           INTEGER NOT NULL CHECK (rows_total >= 0),
    rows_rejected        INTEGER NOT NULL DEFAULT 0 CHECK (rows_rejected >= 0 AND rows_rejected <= rows_total),
    created_by_client_id TEXT NOT NULL,
    FOREIGN KEY (tenant_id, import_run_id) REFERENCES import_runs (tenant_id, id),
    FOREIGN KEY (tenant_id, created_by_client_id) REFERENCES mcp_clients (tenant_id, id)
) STRICT;
CREATE INDEX import_run_details_client ON import_run_details (tenant_id, created_by_client_id);

-- The item a status_update or attach_media candidate is about, the item's
-- version and status when the candidate was made (a reviewer sees what the
-- report was measured against) and, for a status report, what it claims.
-- effective_at may be unknown (a spreadsheet row without a date).
CREATE TABLE candidate_item_changes (
    candidate_id         TEXT PRIMARY KEY,
    tenant_id            TEXT NOT NULL,
    kind                 TEXT NOT NULL CHECK (kind IN ('status_update', 'attach_media')),
    item_id              TEXT NOT NULL,
    observed_version     INTEGER NOT NULL CHECK (observed_version >= 1),
    observed_status      TEXT NOT NULL,
    reported_status      TEXT CHECK (reported_status IS NULL OR reported_status IN ('on_hold', 'pending_pickup', 'sold', 'withdrawn')),
    effective_at         TEXT,
    report_source        TEXT,
    CHECK (kind <> 'status_update' OR (reported_status IS NOT NULL AND report_source IS NOT NULL)),
    CHECK (kind <> 'attach_media' OR reported_status IS NULL),
    FOREIGN KEY (tenant_id, candidate_id) REFERENCES inventory_candidates (tenant_id, id),
    FOREIGN KEY (tenant_id, item_id) REFERENCES items (tenant_id, id)
) STRICT;
CREATE INDEX candidate_item_changes_item ON candidate_item_changes (tenant_id, item_id);

-- A durable source asset: bytes the server checked (sniffed type, real
-- decode, bounded pixels) and stored under a path IT chose, relative to the
-- data directory (assets/<tenant>/<hh>/<sha256 hex>.<ext>). One row per
-- tenant and content hash: an upload of the same bytes reuses it. Private
-- always: publication is a reviewed action on an item, not on an asset.
CREATE TABLE source_assets (
    id                   TEXT PRIMARY KEY CHECK (id <> ''),
    tenant_id            TEXT NOT NULL REFERENCES tenants (id),
    sha256               TEXT NOT NULL CHECK (sha256 LIKE 'sha256:%' AND length(sha256) = 71),
    mime_type            TEXT NOT NULL CHECK (mime_type IN ('image/jpeg', 'image/png', 'image/gif', 'image/webp')),
    byte_size            INTEGER NOT NULL CHECK (byte_size > 0),
    width                INTEGER NOT NULL CHECK (width > 0),
    height               INTEGER NOT NULL CHECK (height > 0),
    storage_path         TEXT NOT NULL CHECK (storage_path LIKE 'assets/%' AND instr(storage_path, '..') = 0),
    visibility           TEXT NOT NULL DEFAULT 'private' CHECK (visibility = 'private'),
    created_by_client_id TEXT NOT NULL,
    created_at           TEXT NOT NULL,
    UNIQUE (tenant_id, id),
    UNIQUE (tenant_id, sha256),
    FOREIGN KEY (tenant_id, created_by_client_id) REFERENCES mcp_clients (tenant_id, id)
) STRICT;

-- An asset attached to a candidate, in position order. An asset is attached
-- to a candidate at most once.
CREATE TABLE candidate_media (
    id                   TEXT PRIMARY KEY CHECK (id <> ''),
    tenant_id            TEXT NOT NULL,
    candidate_id         TEXT NOT NULL,
    asset_id             TEXT NOT NULL,
    caption              TEXT NOT NULL DEFAULT '',
    position             INTEGER NOT NULL CHECK (position >= 1),
    created_by_client_id TEXT NOT NULL,
    created_at           TEXT NOT NULL,
    UNIQUE (tenant_id, id),
    UNIQUE (candidate_id, asset_id),
    UNIQUE (candidate_id, position),
    FOREIGN KEY (tenant_id, candidate_id) REFERENCES inventory_candidates (tenant_id, id),
    FOREIGN KEY (tenant_id, asset_id) REFERENCES source_assets (tenant_id, id),
    FOREIGN KEY (tenant_id, created_by_client_id) REFERENCES mcp_clients (tenant_id, id)
) STRICT;
CREATE INDEX candidate_media_asset ON candidate_media (tenant_id, asset_id);

-- A stored draft of listing copy for a candidate or an item: immutable
-- (a new draft is a new revision), never the item's public text.
CREATE TABLE draft_revisions (
    id                   TEXT PRIMARY KEY CHECK (id <> ''),
    tenant_id            TEXT NOT NULL,
    candidate_id         TEXT,
    item_id              TEXT,
    revision             INTEGER NOT NULL CHECK (revision >= 1),
    source_version       INTEGER NOT NULL CHECK (source_version >= 1),
    tone                 TEXT NOT NULL,
    title                TEXT NOT NULL,
    description          TEXT NOT NULL,
    segments             TEXT NOT NULL CHECK (json_valid(segments) AND json_type(segments) = 'array'),
    created_by_client_id TEXT NOT NULL,
    created_at           TEXT NOT NULL,
    CHECK ((candidate_id IS NULL) <> (item_id IS NULL)),
    UNIQUE (tenant_id, id),
    UNIQUE (candidate_id, revision),
    UNIQUE (item_id, revision),
    FOREIGN KEY (tenant_id, candidate_id) REFERENCES inventory_candidates (tenant_id, id),
    FOREIGN KEY (tenant_id, item_id) REFERENCES items (tenant_id, id),
    FOREIGN KEY (tenant_id, created_by_client_id) REFERENCES mcp_clients (tenant_id, id)
) STRICT;
CREATE TRIGGER draft_revisions_immutable BEFORE UPDATE ON draft_revisions
BEGIN
    SELECT RAISE(ABORT, 'draft_revisions are immutable: write a new revision');
END;

-- A staged export: a frozen snapshot of items' public fields at their
-- versions, validated for one channel. Staging never delivers: delivery is a
-- proposal (trove_propose_export_delivery) and a seller's approval, and only
-- that later step may move status past 'staged' — the snapshot itself never
-- changes (triggers below).
CREATE TABLE export_drafts (
    id                   TEXT PRIMARY KEY CHECK (id <> ''),
    tenant_id            TEXT NOT NULL REFERENCES tenants (id),
    channel              TEXT NOT NULL CHECK (channel IN ('ebay', 'facebook_marketplace', 'etsy', 'csv_file')),
    status               TEXT NOT NULL CHECK (status IN ('staged', 'delivery_proposed', 'delivered', 'cancelled')),
    item_count           INTEGER NOT NULL CHECK (item_count BETWEEN 1 AND 50),
    valid_count          INTEGER NOT NULL CHECK (valid_count >= 0 AND valid_count <= item_count),
    warnings             TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(warnings) AND json_type(warnings) = 'array'),
    created_by_client_id TEXT NOT NULL,
    created_at           TEXT NOT NULL,
    UNIQUE (tenant_id, id),
    FOREIGN KEY (tenant_id, created_by_client_id) REFERENCES mcp_clients (tenant_id, id)
) STRICT;
CREATE INDEX export_drafts_list ON export_drafts (tenant_id, created_at, id);
CREATE TRIGGER export_drafts_snapshot_immutable
BEFORE UPDATE OF id, tenant_id, channel, item_count, valid_count, warnings, created_by_client_id, created_at ON export_drafts
BEGIN
    SELECT RAISE(ABORT, 'an export snapshot is immutable: stage a new export');
END;

CREATE TABLE export_draft_items (
    export_id    TEXT NOT NULL,
    tenant_id    TEXT NOT NULL,
    position     INTEGER NOT NULL CHECK (position >= 1),
    item_id      TEXT NOT NULL,
    item_version INTEGER NOT NULL CHECK (item_version >= 1),
    snapshot     TEXT NOT NULL CHECK (json_valid(snapshot) AND json_type(snapshot) = 'object'),
    valid        INTEGER NOT NULL CHECK (valid IN (0, 1)),
    warnings     TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(warnings) AND json_type(warnings) = 'array'),
    PRIMARY KEY (export_id, position),
    UNIQUE (export_id, item_id),
    FOREIGN KEY (tenant_id, export_id) REFERENCES export_drafts (tenant_id, id),
    FOREIGN KEY (tenant_id, item_id) REFERENCES items (tenant_id, id)
) STRICT;
CREATE INDEX export_draft_items_item ON export_draft_items (tenant_id, item_id);
CREATE TRIGGER export_draft_items_immutable BEFORE UPDATE ON export_draft_items
BEGIN
    SELECT RAISE(ABORT, 'an export snapshot is immutable: stage a new export');
END;
