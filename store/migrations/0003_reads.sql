-- 0003_reads: what the read tools (§11, §12) need beyond the P6 subset of
-- 0001: sale assignment of memberships, pricing and status history, QR label
-- batches, and the public marketplace search index.

-- Sale assignment (§4.3). A sale-scoped membership sees only the sales
-- listed for it in membership_sales; with none it sees no sale at all (the
-- flag, not the absence of rows, says the membership is limited).
ALTER TABLE memberships ADD COLUMN sale_scoped INTEGER NOT NULL DEFAULT 0 CHECK (sale_scoped IN (0, 1));

CREATE TABLE membership_sales (
    membership_id TEXT NOT NULL REFERENCES memberships (id),
    tenant_id     TEXT NOT NULL,
    sale_id       TEXT NOT NULL,
    PRIMARY KEY (membership_id, sale_id),
    FOREIGN KEY (tenant_id, sale_id) REFERENCES estate_sales (tenant_id, id)
) STRICT, WITHOUT ROWID;
-- memberships has no UNIQUE (tenant_id, id) to point a composite key at, so
-- a trigger keeps an assignment inside its membership's tenant.
CREATE TRIGGER membership_sales_same_tenant BEFORE INSERT ON membership_sales
WHEN NOT EXISTS (SELECT 1 FROM memberships WHERE id = NEW.membership_id AND tenant_id = NEW.tenant_id)
BEGIN
    SELECT RAISE(ABORT, 'membership_sales: membership and sale belong to different tenants');
END;
CREATE TRIGGER membership_sales_no_update BEFORE UPDATE ON membership_sales
BEGIN
    SELECT RAISE(ABORT, 'membership_sales: delete and insert an assignment instead of changing it');
END;

-- Pricing history: every price or internal-guidance change of an item,
-- append-only. It is internal (pricer, manager, owner only).
CREATE TABLE item_price_history (
    id                            TEXT PRIMARY KEY CHECK (id <> ''),
    tenant_id                     TEXT NOT NULL,
    item_id                       TEXT NOT NULL,
    price_cents                   INTEGER CHECK (price_cents IS NULL OR price_cents >= 0),
    internal_price_guidance_cents INTEGER CHECK (internal_price_guidance_cents IS NULL OR internal_price_guidance_cents >= 0),
    reason                        TEXT NOT NULL DEFAULT '',
    actor_id                      TEXT NOT NULL DEFAULT '',
    proposal_id                   TEXT NOT NULL DEFAULT '',
    changed_at                    TEXT NOT NULL,
    FOREIGN KEY (tenant_id, item_id) REFERENCES items (tenant_id, id)
) STRICT;
CREATE INDEX item_price_history_item ON item_price_history (tenant_id, item_id, changed_at, id);
CREATE TRIGGER item_price_history_no_update BEFORE UPDATE ON item_price_history
BEGIN
    SELECT RAISE(ABORT, 'item_price_history is append-only');
END;
CREATE TRIGGER item_price_history_no_delete BEFORE DELETE ON item_price_history
BEGIN
    SELECT RAISE(ABORT, 'item_price_history is append-only');
END;

-- Item status history, append-only: one row per lifecycle transition, with
-- who recorded it and from which source. sale_id is the item's sale at the
-- time, kept so a sale's history lists without a join.
CREATE TABLE item_status_events (
    id           TEXT PRIMARY KEY CHECK (id <> ''),
    tenant_id    TEXT NOT NULL,
    item_id      TEXT NOT NULL,
    sale_id      TEXT NOT NULL,
    from_status  TEXT NOT NULL CHECK (from_status IN ('draft', 'ready', 'published', 'on_hold',
                                                    'pending_pickup', 'sold', 'withdrawn', 'archived')),
    to_status    TEXT NOT NULL CHECK (to_status IN ('draft', 'ready', 'published', 'on_hold',
                                                  'pending_pickup', 'sold', 'withdrawn', 'archived')),
    effective_at TEXT NOT NULL,
    source_type  TEXT NOT NULL CHECK (source_type IN ('seller_confirmed', 'checkout_scan', 'status_import', 'proposal')),
    actor_id     TEXT NOT NULL DEFAULT '',
    proposal_id  TEXT NOT NULL DEFAULT '',
    recorded_at  TEXT NOT NULL,
    FOREIGN KEY (tenant_id, item_id) REFERENCES items (tenant_id, id),
    FOREIGN KEY (tenant_id, sale_id) REFERENCES estate_sales (tenant_id, id),
    CHECK (from_status <> to_status)
) STRICT;
-- ListStatusEvents: keyset on (effective_at, id) descending, by tenant and
-- optionally by item, sale or target status.
CREATE INDEX item_status_events_list ON item_status_events (tenant_id, effective_at, id);
CREATE INDEX item_status_events_item ON item_status_events (tenant_id, item_id, effective_at, id);
CREATE INDEX item_status_events_sale ON item_status_events (tenant_id, sale_id, effective_at, id);
CREATE INDEX item_status_events_to ON item_status_events (tenant_id, to_status, effective_at, id);
CREATE TRIGGER item_status_events_no_update BEFORE UPDATE ON item_status_events
BEGIN
    SELECT RAISE(ABORT, 'item_status_events is append-only');
END;
CREATE TRIGGER item_status_events_no_delete BEFORE DELETE ON item_status_events
BEGIN
    SELECT RAISE(ABORT, 'item_status_events is append-only');
END;

-- QR tags: a batch of printed labels for a sale. A label is bound to an item
-- exactly when the item's qr_code names it (items.qr_code is the one source
-- of truth for binding); a label no item names is spare or released.
CREATE TABLE label_batches (
    id         TEXT PRIMARY KEY CHECK (id <> ''),
    tenant_id  TEXT NOT NULL,
    sale_id    TEXT NOT NULL,
    status     TEXT NOT NULL CHECK (status IN ('draft', 'printed', 'retired')),
    created_at TEXT NOT NULL,
    printed_at TEXT,
    UNIQUE (tenant_id, id),
    FOREIGN KEY (tenant_id, sale_id) REFERENCES estate_sales (tenant_id, id),
    CHECK ((status = 'draft') = (printed_at IS NULL))
) STRICT;
CREATE INDEX label_batches_list ON label_batches (tenant_id, created_at, id);
CREATE INDEX label_batches_sale ON label_batches (tenant_id, sale_id, created_at, id);

-- A printed code is globally unique: the public QR tool resolves a code
-- without knowing its tenant.
CREATE TABLE qr_labels (
    code      TEXT PRIMARY KEY CHECK (code <> ''),
    tenant_id TEXT NOT NULL,
    batch_id  TEXT NOT NULL,
    ordinal   INTEGER NOT NULL CHECK (ordinal >= 1),
    UNIQUE (batch_id, ordinal),
    FOREIGN KEY (tenant_id, batch_id) REFERENCES label_batches (tenant_id, id)
) STRICT, WITHOUT ROWID;

-- One tag, one item: resolving a scanned code must name a single item.
CREATE UNIQUE INDEX items_qr_code ON items (qr_code) WHERE qr_code <> '';

-- Public marketplace search. search_keys gives every sale and item a stable
-- integer key (never reused: AUTOINCREMENT), which is the FTS rowid and the
-- search order, so pages are keyset ranges of the index itself. The FTS table
-- holds public text only (titles, descriptions, categories, city and
-- region): staff notes and internal pricing are never indexed. It indexes
-- every record; publication is checked against the base tables at query
-- time, so a status change needs no index update.
CREATE TABLE search_keys (
    seq    INTEGER PRIMARY KEY AUTOINCREMENT,
    kind   TEXT NOT NULL CHECK (kind IN ('sale', 'item')),
    ref_id TEXT NOT NULL UNIQUE
) STRICT;
CREATE VIRTUAL TABLE search_fts USING fts5(title, body, category, tokenize = 'unicode61 remove_diacritics 2', columnsize = 0);

-- The triggers keep the index in step with every writer of sales and items,
-- whichever code path (seeding, promotion, edits) it takes.
CREATE TRIGGER search_sale_insert AFTER INSERT ON estate_sales
BEGIN
    INSERT INTO search_keys (kind, ref_id) VALUES ('sale', NEW.id);
    INSERT INTO search_fts (rowid, title, body, category)
        SELECT seq, NEW.title, NEW.city || ' ' || NEW.region, '' FROM search_keys WHERE ref_id = NEW.id;
END;
CREATE TRIGGER search_sale_update AFTER UPDATE OF title, city, region ON estate_sales
BEGIN
    DELETE FROM search_fts WHERE rowid = (SELECT seq FROM search_keys WHERE ref_id = OLD.id);
    INSERT INTO search_fts (rowid, title, body, category)
        SELECT seq, NEW.title, NEW.city || ' ' || NEW.region, '' FROM search_keys WHERE ref_id = NEW.id;
END;
CREATE TRIGGER search_item_insert AFTER INSERT ON items
BEGIN
    INSERT INTO search_keys (kind, ref_id) VALUES ('item', NEW.id);
    INSERT INTO search_fts (rowid, title, body, category)
        SELECT seq, NEW.title, NEW.description, NEW.category FROM search_keys WHERE ref_id = NEW.id;
END;
CREATE TRIGGER search_item_update AFTER UPDATE OF title, description, category ON items
BEGIN
    DELETE FROM search_fts WHERE rowid = (SELECT seq FROM search_keys WHERE ref_id = OLD.id);
    INSERT INTO search_fts (rowid, title, body, category)
        SELECT seq, NEW.title, NEW.description, NEW.category FROM search_keys WHERE ref_id = NEW.id;
END;

-- ListImportRuns: newest first within a tenant, optionally by sale.
CREATE INDEX import_runs_recent ON import_runs (tenant_id, created_at, id);
CREATE INDEX import_runs_sale_recent ON import_runs (tenant_id, sale_id, created_at, id);
