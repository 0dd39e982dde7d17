-- Hardening (issue 13): the cursor secret and the candidate-tier quota.
-- (Number 0009, after 0008_seller_passphrase; the content does not depend on
-- its number.)
--
-- store_secrets holds this database's random secrets; the store creates the
-- cursor secret (32 bytes from crypto/rand) on the first open. Not data:
-- Counts, Digest and Reset skip it (store/cursors.go).
CREATE TABLE store_secrets (
    name  TEXT PRIMARY KEY CHECK (name <> ''),
    value BLOB NOT NULL CHECK (length(value) = 32)
) STRICT;

-- Per-tenant quota of candidate-tier storage (docs/quota.md). Only the
-- tenant's own row (client_id '') carries it; NULL means the default
-- (domain.DefaultLimits: 20000 open candidates, 2.5 GiB).
ALTER TABLE mcp_limits ADD COLUMN maximum_open_candidates INTEGER
    CHECK (maximum_open_candidates IS NULL OR maximum_open_candidates >= 0);
ALTER TABLE mcp_limits ADD COLUMN maximum_candidate_bytes INTEGER
    CHECK (maximum_candidate_bytes IS NULL OR maximum_candidate_bytes >= 0);

-- What a tenant holds in the candidate tier, kept by the triggers below in
-- the same statement as the row that changes it, so the quota check costs
-- one lookup however large the tenant is. open_candidates counts candidates
-- still in review (needs_review, approved); candidate_bytes counts stored
-- source bytes: each candidate's text and each source record's payload
-- (UTF-8 bytes) plus 256 bytes of row and index overhead per row, and each
-- source asset's bytes.
CREATE TABLE tenant_usage (
    tenant_id       TEXT PRIMARY KEY REFERENCES tenants (id),
    open_candidates INTEGER NOT NULL DEFAULT 0,
    candidate_bytes INTEGER NOT NULL DEFAULT 0
) STRICT;

INSERT INTO tenant_usage (tenant_id, open_candidates, candidate_bytes)
SELECT t.id,
    (SELECT count(*) FROM inventory_candidates c WHERE c.tenant_id = t.id AND c.review_status IN ('needs_review', 'approved')),
    (SELECT ifnull(sum(256 + length(CAST(c.title AS BLOB)) + length(CAST(c.description AS BLOB)) + length(CAST(c.category AS BLOB))
        + length(CAST(c.room AS BLOB)) + length(CAST(c.condition AS BLOB)) + length(CAST(c.notes AS BLOB))), 0)
        FROM inventory_candidates c WHERE c.tenant_id = t.id)
    + (SELECT ifnull(sum(256 + length(CAST(r.payload AS BLOB))), 0) FROM source_records r WHERE r.tenant_id = t.id)
    + (SELECT ifnull(sum(a.byte_size), 0) FROM source_assets a WHERE a.tenant_id = t.id)
FROM tenants t;

-- The checks run after the usage moved up, inside the statement: RAISE
-- backs the statement out and the store rolls the whole write back, so a
-- CSV apply that would cross the quota writes nothing. A change that lowers
-- usage (a review decision) is never refused. The messages are matched by
-- store/quota.go.
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

CREATE TRIGGER source_records_usage_insert AFTER INSERT ON source_records
BEGIN
    INSERT INTO tenant_usage (tenant_id, open_candidates, candidate_bytes)
    VALUES (NEW.tenant_id, 0, 256 + length(CAST(NEW.payload AS BLOB)))
    ON CONFLICT (tenant_id) DO UPDATE SET candidate_bytes = candidate_bytes + excluded.candidate_bytes;
    SELECT RAISE(ABORT, 'trovesnap_quota:candidate_bytes') FROM tenant_usage u
    WHERE u.tenant_id = NEW.tenant_id
      AND u.candidate_bytes > ifnull((SELECT l.maximum_candidate_bytes FROM mcp_limits l
                                      WHERE l.tenant_id = NEW.tenant_id AND l.client_id = ''), 2684354560);
END;

CREATE TRIGGER source_records_usage_delete AFTER DELETE ON source_records
BEGIN
    UPDATE tenant_usage SET candidate_bytes = candidate_bytes - (256 + length(CAST(OLD.payload AS BLOB)))
    WHERE tenant_id = OLD.tenant_id;
END;

CREATE TRIGGER source_assets_usage_insert AFTER INSERT ON source_assets
BEGIN
    INSERT INTO tenant_usage (tenant_id, open_candidates, candidate_bytes)
    VALUES (NEW.tenant_id, 0, NEW.byte_size)
    ON CONFLICT (tenant_id) DO UPDATE SET candidate_bytes = candidate_bytes + excluded.candidate_bytes;
    SELECT RAISE(ABORT, 'trovesnap_quota:candidate_bytes') FROM tenant_usage u
    WHERE u.tenant_id = NEW.tenant_id
      AND u.candidate_bytes > ifnull((SELECT l.maximum_candidate_bytes FROM mcp_limits l
                                      WHERE l.tenant_id = NEW.tenant_id AND l.client_id = ''), 2684354560);
END;

CREATE TRIGGER source_assets_usage_delete AFTER DELETE ON source_assets
BEGIN
    UPDATE tenant_usage SET candidate_bytes = candidate_bytes - OLD.byte_size WHERE tenant_id = OLD.tenant_id;
END;
