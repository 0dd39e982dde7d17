-- Migration 47 (issue 16 hardening). promote_media_candidate (migration 43)
-- read the item an attach_media candidate names, then locked it, and judged
-- the status it had read BEFORE the lock: an item sold (or archived, or
-- pending pickup) by a transaction that committed while the execution
-- waited for the item's row took the approved photo anyway, and the
-- execution answered a version computed from the stale row. The item is
-- now read as locked (SELECT ... FOR UPDATE into the row the checks use);
-- the rest of the body is migration 43's.
-- internal/live/media_promotion_attack_test.go holds it.
--
-- mcp_review_candidate (migration 41, with the F11 edit) refused marking
-- the original of duplicates a duplicate, but still rejected it, leaving
-- its duplicates pointing at a rejected candidate — what marking a
-- duplicate of a rejected candidate refuses. It is now refused too
-- (domain.CheckCandidateReview; contract ReviewCandidateOriginalNotRejected-
-- UnderItsDuplicates); the rest of the body is migration 41's.

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

CREATE OR REPLACE FUNCTION trovesnap.mcp_review_candidate(p_credential_hash text, p_tool text, p_tool_major integer, p_key text,
                                               p_fingerprint text, p_event jsonb, p_started_at timestamptz,
                                               p_review jsonb) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    p          trovesnap.principal;
    v_replay   jsonb;
    v_id       text := p_review ->> 'candidate_id';
    v_action   text := p_review ->> 'action';
    v_dup_c    text := nullif(p_review ->> 'duplicate_of_candidate_id', '');
    v_dup_i    text := nullif(p_review ->> 'duplicate_of_item_id', '');
    v_n        integer;
    v_reason   text := coalesce(p_review ->> 'reason', '');
    v_expected integer;
    v_to       text;
    v_prev     text;
    c          trovesnap.inventory_candidates;
    t          trovesnap.inventory_candidates;
    i          trovesnap.items;
    v_related  jsonb;
BEGIN
    PERFORM trovesnap.begin_rpc('trovesnap_mcp');
    p := trovesnap.lookup_client(p_credential_hash);
    PERFORM trovesnap.check_write_meta(p_tool, p_tool_major, p_key, p_fingerprint, p_event);
    -- The shape (domain.CandidateReview.Validate), before anything is read.
    IF jsonb_typeof(p_review) IS DISTINCT FROM 'object' THEN
        PERFORM trovesnap.fail('invalid_input:input', 'an object is required');
    END IF;
    IF coalesce(btrim(v_id), '') = '' THEN
        PERFORM trovesnap.fail('invalid_input:candidate_id', 'required');
    END IF;
    IF jsonb_typeof(p_review -> 'expected_version') = 'number' AND (p_review ->> 'expected_version') ~ '^[0-9]{1,9}$' THEN
        v_expected := (p_review ->> 'expected_version')::integer;
    END IF;
    IF coalesce(v_expected, 0) < 1 THEN
        PERFORM trovesnap.fail('invalid_input:expected_version', 'required: the candidate''s current version (trove_get_candidate)');
    END IF;
    IF coalesce(v_action, '') <> ALL (trovesnap.candidate_review_actions()) THEN
        PERFORM trovesnap.fail('invalid_input:action', 'must be one of ' || array_to_string(trovesnap.candidate_review_actions(), ', '));
    END IF;
    IF char_length(v_reason) > 1000 THEN
        PERFORM trovesnap.fail('invalid_input:reason', 'longer than 1000 characters');
    END IF;
    IF v_action = 'mark_duplicate' THEN
        IF (v_dup_c IS NULL) = (v_dup_i IS NULL) THEN
            PERFORM trovesnap.fail('invalid_input:duplicate_of_candidate_id',
                'mark_duplicate needs exactly one of duplicate_of_candidate_id or duplicate_of_item_id');
        END IF;
    ELSIF v_dup_c IS NOT NULL OR v_dup_i IS NOT NULL THEN
        PERFORM trovesnap.fail('invalid_input:duplicate_of_candidate_id', 'only mark_duplicate names what the candidate duplicates');
    END IF;
    IF v_action <> 'reopen' AND v_reason ~ '^[[:space:]]*$' THEN
        PERFORM trovesnap.fail('invalid_input:reason', 'required to ' || replace(v_action, '_', ' ') || ': say why, for the seller');
    END IF;
    IF v_dup_c = v_id THEN
        PERFORM trovesnap.fail('invalid_input:duplicate_of_candidate_id', 'a candidate cannot duplicate itself');
    END IF;

    PERFORM set_config('trovesnap.tenant_id', p.tenant_id, true);
    v_replay := trovesnap.idem_replay(p, p_tool, p_tool_major, p_key, p_fingerprint, true);
    IF v_replay IS NOT NULL THEN
        RETURN v_replay;
    END IF;
    PERFORM trovesnap.require_active(p);
    PERFORM trovesnap.require_access(p, 'candidate_write', ARRAY['item.create_candidate']);
    PERFORM trovesnap.check_ref('inventory_candidates', 'candidate_id', v_id);
    SELECT * INTO c FROM trovesnap.inventory_candidates x WHERE x.id = v_id FOR UPDATE;
    PERFORM trovesnap.require_assigned(p, c.sale_id, 'candidate', c.id);
    IF c.version <> v_expected THEN
        PERFORM trovesnap.fail('stale_version', format('candidate %s is at version %s, the review expected %s: read it again',
            c.id, c.version, v_expected));
    END IF;
    v_to := trovesnap.candidate_review_to(v_action, c.review_status);
    IF v_to IS NULL THEN
        PERFORM trovesnap.fail('transition_invalid', format('candidate %s is %s: %s', c.id, c.review_status, CASE
            WHEN c.review_status = 'promoted' THEN 'promotion is final, its item exists'
            WHEN c.review_status = 'approved' THEN 'a seller approved it; review does not undo that'
            WHEN v_action = 'reopen' THEN 'only a rejected or duplicate candidate is reopened'
            ELSE 'reopen it first' END));
    END IF;
    -- A candidate other duplicates point at is not marked a duplicate
    -- itself (no chain by order; domain.CheckCandidateReview), nor rejected
    -- (they would point at a rejected candidate: migration 47). Its row is
    -- locked above, and a duplicate pointing at it locks it too (FOR SHARE).
    IF v_action = 'mark_duplicate' OR v_action = 'reject' THEN
        SELECT count(*) INTO v_n FROM trovesnap.inventory_candidates x
        WHERE x.tenant_id = c.tenant_id AND x.duplicate_of_candidate_id = c.id AND x.review_status = 'duplicate';
        IF v_n > 0 AND v_action = 'reject' THEN
            PERFORM trovesnap.fail('transition_invalid', format('candidate %s is the original of %s duplicates: reopen them first (a duplicate points at the original, never at a rejected candidate)',
                c.id, v_n));
        END IF;
        IF v_n > 0 THEN
            PERFORM trovesnap.fail('transition_invalid', format('candidate %s is the original of %s duplicates: mark them duplicates of what it duplicates, or reopen them, first',
                c.id, v_n));
        END IF;
    END IF;
    IF v_dup_c IS NOT NULL THEN
        PERFORM trovesnap.check_ref('inventory_candidates', 'duplicate_of_candidate_id', v_dup_c);
        SELECT * INTO t FROM trovesnap.inventory_candidates x WHERE x.id = v_dup_c FOR SHARE;
        PERFORM trovesnap.require_assigned(p, t.sale_id, 'candidate', t.id);
        IF t.kind <> c.kind THEN
            PERFORM trovesnap.fail('transition_invalid', format('candidate %s is a %s candidate and %s a %s candidate: a duplicate is of the same kind',
                c.id, c.kind, t.id, t.kind));
        END IF;
        IF trovesnap.candidate_review_to('reopen', t.review_status) IS NOT NULL THEN
            PERFORM trovesnap.fail('transition_invalid', format('candidate %s is %s: mark %s a duplicate of the candidate or item it stands for',
                t.id, t.review_status, c.id));
        END IF;
    ELSIF v_dup_i IS NOT NULL THEN
        PERFORM trovesnap.check_ref('items', 'duplicate_of_item_id', v_dup_i);
        SELECT * INTO i FROM trovesnap.items x WHERE x.id = v_dup_i FOR SHARE;
        PERFORM trovesnap.require_assigned(p, i.sale_id, 'item', i.id);
        IF c.kind <> 'new_item' THEN
            PERFORM trovesnap.fail('transition_invalid', format('candidate %s is a %s candidate, which already names its item: only a new_item candidate duplicates an item',
                c.id, c.kind));
        END IF;
    END IF;

    v_prev := c.review_status;
    UPDATE trovesnap.inventory_candidates x SET review_status = v_to, version = x.version + 1,
        duplicate_of_candidate_id = v_dup_c, duplicate_of_item_id = v_dup_i, review_reason = v_reason
    WHERE x.id = c.id
    RETURNING * INTO c;

    v_related := trovesnap.empty_related() || jsonb_build_object(
        'candidate_ids', to_jsonb(array_remove(ARRAY[c.id, v_dup_c], NULL)),
        'item_ids', to_jsonb(array_remove(ARRAY[v_dup_i], NULL)));
    RETURN trovesnap.finish_write(p, p_tool, p_tool_major, p_key, p_fingerprint, p_event, p_started_at,
        jsonb_build_object('candidate', trovesnap.candidate_json(c), 'action', v_action, 'previous_status', v_prev), v_related);
END
$$;

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (47, '20261203150000_trovesnap_media_promotion_lock');

RESET ROLE;
