-- Hardening (issue 13, limits): the candidate tier's other writes count in
-- the bytes quota too. A staged export (export_drafts, export_draft_items)
-- and a persisted draft (draft_revisions) are written by candidate-tier
-- tools (trove_stage_export, trove_draft_listing_copy with persist) without
-- approval; before this migration they added ~26 KB a call that
-- tenant_usage did not see, so they went on writing with the quota full.
-- Each row now adds its stored text (UTF-8 bytes) plus 256 bytes of row and
-- index overhead, kept by triggers like those of *_cursor_secret_quota.sql,
-- and a row that takes the tenant over its bytes quota is refused inside the
-- statement (the store rolls the whole write back). docs/quota.md.

-- Backfill: what these rows already hold.
UPDATE tenant_usage SET candidate_bytes = candidate_bytes
    + (SELECT ifnull(sum(256 + length(CAST(x.title AS BLOB)) + length(CAST(x.description AS BLOB)) + length(CAST(x.segments AS BLOB))), 0) FROM draft_revisions x WHERE x.tenant_id = tenant_usage.tenant_id)
    + (SELECT ifnull(sum(256 + length(CAST(x.warnings AS BLOB))), 0) FROM export_drafts x WHERE x.tenant_id = tenant_usage.tenant_id)
    + (SELECT ifnull(sum(256 + length(CAST(x.snapshot AS BLOB)) + length(CAST(x.warnings AS BLOB))), 0) FROM export_draft_items x WHERE x.tenant_id = tenant_usage.tenant_id);
INSERT INTO tenant_usage (tenant_id, open_candidates, candidate_bytes)
SELECT t.id, 0, 0
    + (SELECT ifnull(sum(256 + length(CAST(x.title AS BLOB)) + length(CAST(x.description AS BLOB)) + length(CAST(x.segments AS BLOB))), 0) FROM draft_revisions x WHERE x.tenant_id = t.id)
    + (SELECT ifnull(sum(256 + length(CAST(x.warnings AS BLOB))), 0) FROM export_drafts x WHERE x.tenant_id = t.id)
    + (SELECT ifnull(sum(256 + length(CAST(x.snapshot AS BLOB)) + length(CAST(x.warnings AS BLOB))), 0) FROM export_draft_items x WHERE x.tenant_id = t.id)
FROM tenants t WHERE t.id NOT IN (SELECT tenant_id FROM tenant_usage);

CREATE TRIGGER draft_revisions_usage_insert AFTER INSERT ON draft_revisions
BEGIN
    INSERT INTO tenant_usage (tenant_id, open_candidates, candidate_bytes)
    VALUES (NEW.tenant_id, 0, 256 + length(CAST(NEW.title AS BLOB)) + length(CAST(NEW.description AS BLOB)) + length(CAST(NEW.segments AS BLOB)))
    ON CONFLICT (tenant_id) DO UPDATE SET candidate_bytes = candidate_bytes + excluded.candidate_bytes;
    SELECT RAISE(ABORT, 'trovesnap_quota:candidate_bytes') FROM tenant_usage u
    WHERE u.tenant_id = NEW.tenant_id
      AND u.candidate_bytes > ifnull((SELECT l.maximum_candidate_bytes FROM mcp_limits l
                                      WHERE l.tenant_id = NEW.tenant_id AND l.client_id = ''), 2684354560);
END;

CREATE TRIGGER draft_revisions_usage_delete AFTER DELETE ON draft_revisions
BEGIN
    UPDATE tenant_usage SET candidate_bytes = candidate_bytes - (256 + length(CAST(OLD.title AS BLOB)) + length(CAST(OLD.description AS BLOB)) + length(CAST(OLD.segments AS BLOB)))
    WHERE tenant_id = OLD.tenant_id;
END;

CREATE TRIGGER export_drafts_usage_insert AFTER INSERT ON export_drafts
BEGIN
    INSERT INTO tenant_usage (tenant_id, open_candidates, candidate_bytes)
    VALUES (NEW.tenant_id, 0, 256 + length(CAST(NEW.warnings AS BLOB)))
    ON CONFLICT (tenant_id) DO UPDATE SET candidate_bytes = candidate_bytes + excluded.candidate_bytes;
    SELECT RAISE(ABORT, 'trovesnap_quota:candidate_bytes') FROM tenant_usage u
    WHERE u.tenant_id = NEW.tenant_id
      AND u.candidate_bytes > ifnull((SELECT l.maximum_candidate_bytes FROM mcp_limits l
                                      WHERE l.tenant_id = NEW.tenant_id AND l.client_id = ''), 2684354560);
END;

CREATE TRIGGER export_drafts_usage_delete AFTER DELETE ON export_drafts
BEGIN
    UPDATE tenant_usage SET candidate_bytes = candidate_bytes - (256 + length(CAST(OLD.warnings AS BLOB)))
    WHERE tenant_id = OLD.tenant_id;
END;

CREATE TRIGGER export_draft_items_usage_insert AFTER INSERT ON export_draft_items
BEGIN
    INSERT INTO tenant_usage (tenant_id, open_candidates, candidate_bytes)
    VALUES (NEW.tenant_id, 0, 256 + length(CAST(NEW.snapshot AS BLOB)) + length(CAST(NEW.warnings AS BLOB)))
    ON CONFLICT (tenant_id) DO UPDATE SET candidate_bytes = candidate_bytes + excluded.candidate_bytes;
    SELECT RAISE(ABORT, 'trovesnap_quota:candidate_bytes') FROM tenant_usage u
    WHERE u.tenant_id = NEW.tenant_id
      AND u.candidate_bytes > ifnull((SELECT l.maximum_candidate_bytes FROM mcp_limits l
                                      WHERE l.tenant_id = NEW.tenant_id AND l.client_id = ''), 2684354560);
END;

CREATE TRIGGER export_draft_items_usage_delete AFTER DELETE ON export_draft_items
BEGIN
    UPDATE tenant_usage SET candidate_bytes = candidate_bytes - (256 + length(CAST(OLD.snapshot AS BLOB)) + length(CAST(OLD.warnings AS BLOB)))
    WHERE tenant_id = OLD.tenant_id;
END;
