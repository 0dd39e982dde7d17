-- Migration 38: trove_get_item shows where a promoted item came from.
--
-- item_provenance has linked each promoted item to its candidate, the
-- candidate's source record and import run, and the promotion proposal
-- since the first proposal migration, but no read returned it. mcp_get_item
-- now adds it, as "provenance", for a caller whose role reads the catalogue
-- (item.read, Go's domain.ProvenancePermission; a test holds the two
-- together for every role); checkout's role does not see it. An item
-- that was not promoted has none. The signature is unchanged, so the
-- public wrapper stays as it is.

SET ROLE trovesnap_owner;

CREATE OR REPLACE FUNCTION trovesnap.mcp_get_item(p_credential_hash text, p_item_id text, p_include_photos boolean DEFAULT false,
                                                  p_include_price_history boolean DEFAULT false) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    p trovesnap.principal;
    i trovesnap.items;
BEGIN
    p := trovesnap.enter_read(p_credential_hash, ARRAY['item.read', 'item.read_checkout']);
    PERFORM trovesnap.check_pricing(p, p_include_price_history);
    i := trovesnap.visible_item(p, p_item_id);
    RETURN trovesnap.item_detail_json(i, coalesce(p_include_photos, false), coalesce(p_include_price_history, false))
        || CASE WHEN trovesnap.has_perm(p.role, 'item.read') THEN coalesce((
               SELECT jsonb_build_object('provenance', jsonb_build_object('candidate_id', v.candidate_id,
                          'source_record_id', coalesce(v.source_record_id, ''), 'import_run_id', coalesce(v.import_run_id, ''),
                          'proposal_id', v.proposal_id, 'promoted_at', trovesnap.ts(v.created_at)))
               FROM trovesnap.item_provenance v WHERE v.tenant_id = i.tenant_id AND v.item_id = i.id), '{}')
           ELSE '{}'::jsonb END;
END
$$;

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (38, '20261202140000_trovesnap_item_provenance');

RESET ROLE;
