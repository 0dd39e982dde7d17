-- Candidate review (issue 16, part 3): a candidate is rejected, marked a
-- duplicate of another candidate or of an item, or reopened
-- (store/candidate_review.go, domain.CheckCandidateReview). The review
-- status gains 'duplicate' (domain.ReviewStatuses) and the row records
-- what it duplicates and the reviewer's reason.
--
-- SQLite cannot change a CHECK in place, so inventory_candidates is rebuilt
-- with every column, constraint, index and trigger it had (0001 and 0010)
-- plus the new ones. Other tables reference it (candidate_item_changes,
-- candidate_media, draft_revisions): with foreign keys
-- deferred, dropping the old table leaves their rows unresolved for a
-- moment and inserting the same rows into the new one resolves them again,
-- so the commit's foreign key check passes exactly when every row came
-- back. The old table's triggers go with it before any row moves (SQLite
-- drops them first), and the new ones are made after the copy, so
-- tenant_usage is neither lowered nor counted twice.
PRAGMA defer_foreign_keys = ON;

CREATE TABLE inventory_candidates_0014 AS SELECT * FROM inventory_candidates;
DROP TABLE inventory_candidates;

-- A reviewable, non-canonical proposal for inventory (P5). Provenance ids
-- are NULL for candidates that predate provenance (hand-entered fixtures).
-- A duplicate names exactly one record of its own tenant it duplicates; no
-- other status names one.
CREATE TABLE inventory_candidates (
    id                        TEXT PRIMARY KEY CHECK (id <> ''),
    tenant_id                 TEXT NOT NULL,
    sale_id                   TEXT NOT NULL,
    kind                      TEXT NOT NULL CHECK (kind <> ''),
    title                     TEXT NOT NULL,
    description               TEXT NOT NULL DEFAULT '',
    category                  TEXT NOT NULL DEFAULT '',
    room                      TEXT NOT NULL DEFAULT '',
    condition                 TEXT NOT NULL DEFAULT '',
    quantity                  INTEGER NOT NULL DEFAULT 1 CHECK (quantity >= 1),
    supplied_price_cents      INTEGER CHECK (supplied_price_cents IS NULL OR supplied_price_cents >= 0),
    notes                     TEXT NOT NULL DEFAULT '',
    review_status             TEXT NOT NULL CHECK (review_status IN ('needs_review', 'approved', 'rejected', 'promoted', 'duplicate')),
    source_descriptor_id      TEXT,
    import_run_id             TEXT,
    source_record_id          TEXT,
    created_by_client_id      TEXT,
    version                   INTEGER NOT NULL DEFAULT 1 CHECK (version >= 1),
    created_at                TEXT NOT NULL,
    duplicate_of_candidate_id TEXT CHECK (duplicate_of_candidate_id <> id),
    duplicate_of_item_id      TEXT,
    review_reason             TEXT NOT NULL DEFAULT '' CHECK (length(review_reason) <= 1000),
    UNIQUE (tenant_id, id),
    CHECK (CASE WHEN review_status = 'duplicate' THEN (duplicate_of_candidate_id IS NULL) <> (duplicate_of_item_id IS NULL)
                ELSE duplicate_of_candidate_id IS NULL AND duplicate_of_item_id IS NULL END),
    FOREIGN KEY (tenant_id, sale_id) REFERENCES estate_sales (tenant_id, id),
    FOREIGN KEY (tenant_id, source_descriptor_id) REFERENCES source_descriptors (tenant_id, id),
    FOREIGN KEY (tenant_id, import_run_id) REFERENCES import_runs (tenant_id, id),
    FOREIGN KEY (tenant_id, source_record_id) REFERENCES source_records (tenant_id, id),
    FOREIGN KEY (tenant_id, created_by_client_id) REFERENCES mcp_clients (tenant_id, id),
    FOREIGN KEY (tenant_id, duplicate_of_candidate_id) REFERENCES inventory_candidates (tenant_id, id),
    FOREIGN KEY (tenant_id, duplicate_of_item_id) REFERENCES items (tenant_id, id)
) STRICT;

INSERT INTO inventory_candidates (id, tenant_id, sale_id, kind, title, description, category, room, condition, quantity,
    supplied_price_cents, notes, review_status, source_descriptor_id, import_run_id, source_record_id, created_by_client_id,
    version, created_at)
SELECT id, tenant_id, sale_id, kind, title, description, category, room, condition, quantity,
    supplied_price_cents, notes, review_status, source_descriptor_id, import_run_id, source_record_id, created_by_client_id,
    version, created_at
FROM inventory_candidates_0014;
DROP TABLE inventory_candidates_0014;

-- The indexes of 0001.
-- ListCandidates: keyset on (created_at, id), optionally by sale or review status.
CREATE INDEX inventory_candidates_list ON inventory_candidates (tenant_id, created_at, id);
CREATE INDEX inventory_candidates_sale ON inventory_candidates (tenant_id, sale_id, created_at, id);
CREATE INDEX inventory_candidates_review ON inventory_candidates (tenant_id, review_status, created_at, id);
CREATE INDEX inventory_candidates_descriptor ON inventory_candidates (tenant_id, source_descriptor_id);
CREATE INDEX inventory_candidates_run ON inventory_candidates (tenant_id, import_run_id);
CREATE INDEX inventory_candidates_record ON inventory_candidates (tenant_id, source_record_id);
CREATE INDEX inventory_candidates_client ON inventory_candidates (tenant_id, created_by_client_id);

-- The quota triggers of 0010, unchanged: a rejected or duplicate candidate
-- is not open (domain.OpenReviewStatuses), so reviewing one lowers
-- open_candidates and reopening one raises it, refused over the quota.
CREATE TRIGGER inventory_candidates_usage_insert AFTER INSERT ON inventory_candidates
BEGIN
    INSERT INTO tenant_usage (tenant_id, open_candidates, candidate_bytes)
    VALUES (NEW.tenant_id, CASE WHEN NEW.review_status IN ('needs_review', 'approved') THEN 1 ELSE 0 END,
        256 + length(CAST(NEW.title AS BLOB)) + length(CAST(NEW.description AS BLOB)) + length(CAST(NEW.category AS BLOB))
        + length(CAST(NEW.room AS BLOB)) + length(CAST(NEW.condition AS BLOB)) + length(CAST(NEW.notes AS BLOB)))
    ON CONFLICT (tenant_id) DO UPDATE SET open_candidates = open_candidates + excluded.open_candidates,
        candidate_bytes = candidate_bytes + excluded.candidate_bytes;
    SELECT RAISE(ABORT, 'trovesnap_quota:open_candidates') FROM tenant_usage u
    WHERE u.tenant_id = NEW.tenant_id AND NEW.review_status IN ('needs_review', 'approved')
      AND u.open_candidates > ifnull((SELECT l.maximum_open_candidates FROM mcp_limits l
                                      WHERE l.tenant_id = NEW.tenant_id AND l.client_id = ''), 20000);
    SELECT RAISE(ABORT, 'trovesnap_quota:candidate_bytes') FROM tenant_usage u
    WHERE u.tenant_id = NEW.tenant_id
      AND u.candidate_bytes > ifnull((SELECT l.maximum_candidate_bytes FROM mcp_limits l
                                      WHERE l.tenant_id = NEW.tenant_id AND l.client_id = ''), 2684354560);
END;

CREATE TRIGGER inventory_candidates_usage_review AFTER UPDATE OF review_status ON inventory_candidates
WHEN (NEW.review_status IN ('needs_review', 'approved')) <> (OLD.review_status IN ('needs_review', 'approved'))
BEGIN
    UPDATE tenant_usage SET open_candidates = open_candidates
        + CASE WHEN NEW.review_status IN ('needs_review', 'approved') THEN 1 ELSE -1 END
    WHERE tenant_id = NEW.tenant_id;
    SELECT RAISE(ABORT, 'trovesnap_quota:open_candidates') FROM tenant_usage u
    WHERE u.tenant_id = NEW.tenant_id AND NEW.review_status IN ('needs_review', 'approved')
      AND u.open_candidates > ifnull((SELECT l.maximum_open_candidates FROM mcp_limits l
                                      WHERE l.tenant_id = NEW.tenant_id AND l.client_id = ''), 20000);
END;

CREATE TRIGGER inventory_candidates_usage_delete AFTER DELETE ON inventory_candidates
BEGIN
    UPDATE tenant_usage SET
        open_candidates = open_candidates - CASE WHEN OLD.review_status IN ('needs_review', 'approved') THEN 1 ELSE 0 END,
        candidate_bytes = candidate_bytes - (256 + length(CAST(OLD.title AS BLOB)) + length(CAST(OLD.description AS BLOB))
            + length(CAST(OLD.category AS BLOB)) + length(CAST(OLD.room AS BLOB)) + length(CAST(OLD.condition AS BLOB))
            + length(CAST(OLD.notes AS BLOB)))
    WHERE tenant_id = OLD.tenant_id;
END;
