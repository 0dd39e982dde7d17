-- Migration 45 (issue 16 hardening). promote_media_candidate (migration 43)
-- read the item an attach_media candidate names, then locked it, and judged
-- the status it had read BEFORE the lock: an item sold (or archived, or
-- pending pickup) by a transaction that committed while the execution
-- waited for the item's row took the approved photo anyway, and the
-- execution answered a version computed from the stale row. The item is
-- now read as locked (SELECT ... FOR UPDATE into the row the checks use);
-- the rest of the body is migration 43's.
-- internal/live/media_promotion_attack_test.go holds it.

SET ROLE trovesnap_owner;

CREATE OR REPLACE FUNCTION trovesnap.promote_media_candidate(pr trovesnap.proposals) RETURNS jsonb
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_cand  text := pr.body -> 'target_ids' ->> 0;
    c       trovesnap.inventory_candidates;
    i       trovesnap.items;
    a       trovesnap.source_assets;
    v_named text;
    v_asset text;
    v_last  integer;
    v_n     integer := 0;
    v_now   timestamptz := now();
BEGIN
    SELECT * INTO c FROM trovesnap.inventory_candidates ic WHERE ic.tenant_id = pr.tenant_id AND ic.id = v_cand FOR UPDATE;
    IF NOT FOUND THEN
        PERFORM trovesnap.fail('invalid_reference:candidate_id', jsonb_build_object('id', v_cand, 'cross_tenant', false)::text);
    END IF;
    SELECT it.* INTO i FROM trovesnap.candidate_item_changes x
    JOIN trovesnap.items it ON it.tenant_id = x.tenant_id AND it.id = x.item_id
    WHERE x.tenant_id = pr.tenant_id AND x.candidate_id = v_cand;
    v_named := (SELECT ch ->> 'to' FROM jsonb_array_elements(pr.body -> 'changes') ch
                WHERE ch ->> 'target_id' = v_cand AND ch ->> 'field' = 'add_photos.item_id' LIMIT 1);
    IF c.review_status NOT IN ('needs_review', 'approved') OR i.id IS NULL OR v_named IS DISTINCT FROM i.id THEN
        PERFORM trovesnap.fail('transition_invalid', format('candidate %s is %s, or no longer adds these photos to %s',
                                                            v_cand, c.review_status, left(coalesce(v_named, ''), 60)));
    END IF;
    -- The item as locked: a change committed while this waited is judged.
    SELECT it.* INTO i FROM trovesnap.items it WHERE it.tenant_id = pr.tenant_id AND it.id = i.id FOR UPDATE;
    IF NOT FOUND THEN
        PERFORM trovesnap.fail('transition_invalid', format('the item of candidate %s is gone', v_cand));
    END IF;
    IF i.status IN ('sold', 'pending_pickup', 'archived') THEN
        PERFORM trovesnap.fail('transition_invalid', format('item %s is %s and takes no new photo', i.id, i.status));
    END IF;
    SELECT coalesce(max(ph.position), 0) INTO v_last FROM trovesnap.item_photos ph WHERE ph.tenant_id = pr.tenant_id AND ph.item_id = i.id;
    FOR v_asset IN SELECT x FROM jsonb_array_elements_text(
                       coalesce((SELECT ch -> 'to' FROM jsonb_array_elements(pr.body -> 'changes') ch
                                 WHERE ch ->> 'target_id' = v_cand AND ch ->> 'field' = 'add_photos.asset_ids'
                                   AND jsonb_typeof(ch -> 'to') = 'array' LIMIT 1), '[]')) WITH ORDINALITY AS t(x, n) ORDER BY n
    LOOP
        SELECT sa.* INTO a FROM trovesnap.candidate_media m
        JOIN trovesnap.source_assets sa ON sa.tenant_id = m.tenant_id AND sa.id = m.asset_id
        WHERE m.tenant_id = pr.tenant_id AND m.candidate_id = v_cand AND m.asset_id = v_asset;
        IF NOT FOUND THEN
            PERFORM trovesnap.fail('transition_invalid', format('asset %s is not a photo of candidate %s', left(v_asset, 60), v_cand));
        END IF;
        v_n := v_n + 1;
        INSERT INTO trovesnap.item_photos (id, tenant_id, item_id, storage_key, width, height, position, published, asset_id)
        VALUES (trovesnap.new_id('photo'), pr.tenant_id, i.id, 'source_assets/' || a.id, a.width, a.height, v_last + v_n, false, a.id);
    END LOOP;
    IF v_n = 0 THEN
        PERFORM trovesnap.fail('transition_invalid', format('candidate %s adds no photo', v_cand));
    END IF;
    UPDATE trovesnap.items SET version = version + 1, updated_at = v_now WHERE id = i.id;
    UPDATE trovesnap.inventory_candidates SET review_status = 'promoted', version = version + 1 WHERE id = v_cand;
    RETURN jsonb_build_object('item_id', i.id, 'version', i.version + 1);
END
$$;

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (45, '20261203150000_trovesnap_media_promotion_lock');

RESET ROLE;
