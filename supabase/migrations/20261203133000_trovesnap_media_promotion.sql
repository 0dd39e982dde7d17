-- Migration 43: an attach_media candidate becomes item photos through a
-- proposal (issue 16).
--
-- trove_create_media_attachment_candidate has proposed a photo for an
-- existing item since migration 13, but nothing could apply it. Its
-- promotion (trove_propose_candidate_promotion, executed by
-- trove_execute_candidate_promotion under a grant or a policy) now adds the
-- candidate's photos to the item it names: the changes add_photos.item_id
-- and add_photos.asset_ids (domain.buildMediaPromotion), private item
-- photos after the item's own, the item's version moved, the candidate
-- promoted. The item must be in a sale the caller is assigned and still
-- take changes (not sold, pending pickup or archived). Each replaced
-- function is migration 40's body plus these edits; derive_proposal derives
-- the changes exactly as Go builds them (internal/live/
-- proposal_authority_test.go).

SET ROLE trovesnap_owner;

-- promote_media_candidate adds an attach_media candidate's photos, as the
-- proposal lists them, to the item it names (store: promoteMediaCandidate)
-- and answers {item_id, version}.
CREATE FUNCTION trovesnap.promote_media_candidate(pr trovesnap.proposals) RETURNS jsonb
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
    PERFORM 1 FROM trovesnap.items it WHERE it.id = i.id FOR UPDATE;
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

CREATE OR REPLACE FUNCTION trovesnap.mcp_proposal_state(p_credential_hash text, p_tool text, p_tool_major integer, p_key text,
                                          p_fingerprint text, p_action text, p_target_ids jsonb,
                                          p_fields jsonb DEFAULT '{}'::jsonb) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    p        trovesnap.principal;
    v_replay jsonb;
    v_ids    text[];
    v_id     text;
    v_max    integer;
    v_state  jsonb;
    v_items  jsonb := '[]';
    v_sales  jsonb := '{}';
    v_fields jsonb := coalesce(p_fields, '{}'::jsonb);
    c        trovesnap.inventory_candidates;
    i        trovesnap.items;
    s        trovesnap.estate_sales;
BEGIN
    PERFORM trovesnap.begin_rpc('trovesnap_mcp');
    p := trovesnap.lookup_client(p_credential_hash);
    PERFORM set_config('trovesnap.tenant_id', p.tenant_id, true);
    v_replay := trovesnap.state_replay(p, p_tool, p_tool_major, p_key, p_fingerprint);
    IF v_replay IS NOT NULL THEN
        RETURN v_replay;
    END IF;
    PERFORM trovesnap.require_active(p);
    -- A proposal reads its targets like a tenant read: the proposal group or
    -- the read group, and proposal.create (the write checks the group).
    PERFORM trovesnap.proposal_access(p, p_action, true);
    IF trovesnap.action_tool(p_action) IS NULL THEN
        PERFORM trovesnap.fail('invalid_input:action', 'not available in live mode');
    END IF;
    IF jsonb_typeof(p_target_ids) IS DISTINCT FROM 'array' THEN
        PERFORM trovesnap.fail('invalid_input:targets', 'a list of ids');
    END IF;
    IF jsonb_typeof(v_fields) IS DISTINCT FROM 'object' THEN
        PERFORM trovesnap.fail('invalid_input:fields', 'an object');
    END IF;
    v_ids := ARRAY(SELECT jsonb_array_elements_text(p_target_ids));
    v_max := trovesnap.max_bulk_targets(p);
    v_state := jsonb_build_object('replayed', false, 'now', trovesnap.ts(now()), 'max_bulk_targets', v_max);
    -- Too many or no targets: the builder refuses before reading any.
    IF cardinality(v_ids) = 0 OR cardinality(v_ids) > v_max THEN
        RETURN v_state;
    END IF;
    CASE p_action
    WHEN 'promote_candidate' THEN
        v_id := v_ids[1];
        PERFORM trovesnap.check_ref('inventory_candidates', 'candidate_id', v_id);
        SELECT * INTO c FROM trovesnap.inventory_candidates ic WHERE ic.id = v_id;
        PERFORM trovesnap.require_assigned(p, c.sale_id, 'candidate', v_id);
        v_state := v_state || jsonb_build_object('candidate', trovesnap.candidate_json(c),
                                                 'candidate_photos', trovesnap.candidate_photos(c.tenant_id, c.id));
        -- An attach_media candidate is promoted onto the item it names:
        -- that item too, in a sale the caller is assigned.
        IF c.kind = 'attach_media' THEN
            SELECT it.* INTO i FROM trovesnap.candidate_item_changes x
            JOIN trovesnap.items it ON it.tenant_id = x.tenant_id AND it.id = x.item_id WHERE x.candidate_id = c.id;
            IF i.id IS NOT NULL THEN
                PERFORM trovesnap.require_assigned(p, i.sale_id, 'item', i.id);
                v_state := v_state || jsonb_build_object('candidate_item', trovesnap.item_state(i));
            END IF;
        END IF;
    WHEN 'publish_item' THEN
        FOREACH v_id IN ARRAY v_ids
        LOOP
            PERFORM trovesnap.check_ref('items', 'item_id', v_id);
            SELECT * INTO i FROM trovesnap.items it WHERE it.id = v_id;
            PERFORM trovesnap.require_assigned(p, i.sale_id, 'item', v_id);
            v_items := v_items || jsonb_build_array(trovesnap.item_state(i));
            v_sales := v_sales || jsonb_build_object(i.sale_id,
                (SELECT es.status FROM trovesnap.estate_sales es WHERE es.id = i.sale_id));
        END LOOP;
        v_state := v_state || jsonb_build_object('items', v_items, 'sale_statuses', v_sales);
    WHEN 'publish_sale' THEN
        v_id := v_ids[1];
        PERFORM trovesnap.check_ref('estate_sales', 'sale_id', v_id);
        PERFORM trovesnap.require_assigned(p, v_id, 'sale', v_id);
        SELECT * INTO s FROM trovesnap.estate_sales es WHERE es.id = v_id;
        v_state := v_state || jsonb_build_object('sale', trovesnap.sale_json(s));
    WHEN 'bulk_item_update', 'status_transition', 'archive_item', 'bind_identity', 'release_identity', 'disposition_action',
         'record_checkout_scan' THEN
        IF p_action = 'bulk_item_update' THEN
            PERFORM trovesnap.check_bulk_changes(p, v_fields -> 'changes');
        END IF;
        v_state := v_state || jsonb_build_object('items', trovesnap.item_targets(p, v_ids));
        IF p_action IN ('status_transition', 'archive_item') AND coalesce(v_fields ->> 'status_candidate_id', '') <> '' THEN
            v_state := v_state || jsonb_build_object('status_candidate',
                trovesnap.status_candidate_facts(v_fields ->> 'status_candidate_id'));
        END IF;
        IF p_action = 'bind_identity' THEN
            v_state := v_state || jsonb_build_object('tag',
                trovesnap.tag_facts(p.tenant_id, coalesce(v_fields ->> 'qr_code', ''), v_ids[1]));
        END IF;
    WHEN 'buyer_notification' THEN
        v_id := v_ids[1];
        IF v_id ~ '^item_[A-Za-z0-9]{1,40}$' THEN
            v_items := trovesnap.item_targets(p, v_ids);
            v_state := v_state || jsonb_build_object('items', v_items,
                'demand', trovesnap.sale_demand(v_items -> 0 ->> 'sale_id'));
        ELSE
            PERFORM trovesnap.check_ref('estate_sales', 'sale_id', v_id);
            PERFORM trovesnap.require_assigned(p, v_id, 'sale', v_id);
            SELECT * INTO s FROM trovesnap.estate_sales es WHERE es.id = v_id;
            v_state := v_state || jsonb_build_object('sale', trovesnap.sale_json(s), 'demand', trovesnap.sale_demand(v_id));
        END IF;
    WHEN 'export_delivery' THEN
        v_id := v_ids[1];
        PERFORM trovesnap.check_ref('export_drafts', 'export_id', v_id);
        PERFORM trovesnap.require_export_assigned(p, v_id);
        v_state := v_state || jsonb_build_object('export', trovesnap.export_facts(v_id));
    END CASE;
    RETURN v_state;
END
$$;

CREATE OR REPLACE FUNCTION trovesnap.derive_proposal(p_body jsonb) RETURNS jsonb
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    v_action  text := p_body ->> 'action';
    v_changes jsonb := CASE WHEN jsonb_typeof(p_body -> 'changes') = 'array' THEN p_body -> 'changes' ELSE '[]' END;
    v_ids     text[] := '{}';
    v_kind    text := '';
    v_evs     jsonb := '[]';
    v_out     jsonb := '[]';
    v_warn    jsonb := '[]';
    v_sales   text[] := '{}';
    v_created integer := 0;
    v_items   integer := 0;
    v_public  integer := 0;
    v_sent    integer := 0;
    v_deliv   integer := 0;
    v_cost    double precision := 0;
    v_notif   jsonb;
    v_id      text;
    v_f       text;
    v_names   text[];
    v_to      jsonb;
    v_src     jsonb;
    v_eff     jsonb;
    v_act     jsonb;
    v_v       jsonb;
    v_field   text;
    v_sale    text;
    v_title   text;
    v_cat     text;
    v_aud     text;
    v_chan    jsonb;
    v_top     text;
    v_dem     jsonb;
    v_saves   integer;
    v_follows integer;
    v_size    integer;
    v_supp    integer;
    v_per     double precision;
    v_facts   jsonb;
    v_role    text;
    v_price   jsonb;
    v_photos  jsonb;
    r         jsonb;
    c         trovesnap.inventory_candidates;
    i         trovesnap.items;
    s         trovesnap.estate_sales;
BEGIN
    IF jsonb_typeof(p_body -> 'target_ids') = 'array' THEN
        v_ids := ARRAY(SELECT x FROM jsonb_array_elements_text(p_body -> 'target_ids') WITH ORDINALITY AS t(x, n) ORDER BY n);
    END IF;
    IF cardinality(v_ids) = 0 THEN
        RETURN jsonb_build_object('target_ids', '[]'::jsonb);
    END IF;
    v_id := v_ids[1];
    CASE v_action
    WHEN 'promote_candidate' THEN
        -- domain.BuildPromotion
        v_kind := 'candidate';
        SELECT * INTO c FROM trovesnap.inventory_candidates x WHERE x.id = v_id;
        IF c.id IS NULL THEN
            RETURN jsonb_build_object('target_ids', to_jsonb(v_ids));
        END IF;
        v_evs := jsonb_build_array(jsonb_build_object('id', v_id, 'version', c.version));
        IF c.kind = 'attach_media' THEN
            -- domain.buildMediaPromotion: the item it names, its photos,
            -- the candidate promoted.
            SELECT it.* INTO i FROM trovesnap.candidate_item_changes x
            JOIN trovesnap.items it ON it.tenant_id = x.tenant_id AND it.id = x.item_id WHERE x.candidate_id = c.id;
            v_out := jsonb_build_array(
                trovesnap.proposal_change(v_id, 'add_photos.item_id', NULL, to_jsonb(i.id)),
                trovesnap.proposal_change(v_id, 'add_photos.asset_ids', NULL, trovesnap.candidate_photos(c.tenant_id, c.id)),
                trovesnap.proposal_change(v_id, 'review_status', to_jsonb(c.review_status), '"promoted"'));
            IF c.review_status = 'needs_review' THEN
                v_warn := v_warn || '["candidate_not_reviewed"]';
            END IF;
            v_sales := ARRAY[i.sale_id];
            v_items := 1;
        ELSE
        v_out := jsonb_build_array(trovesnap.proposal_change(v_id, 'create_item.sale_id', NULL, to_jsonb(c.sale_id)));
        FOREACH v_f IN ARRAY ARRAY['title', 'description', 'category', 'room']
        LOOP
            v_v := trovesnap.draft_value(v_changes, 'create_item.' || v_f);
            IF jsonb_typeof(v_v) IS DISTINCT FROM 'string' OR v_v #>> '{}' = '' THEN
                v_v := to_jsonb(coalesce(CASE v_f WHEN 'title' THEN c.title WHEN 'description' THEN c.description
                                                  WHEN 'category' THEN c.category ELSE c.room END, ''));
            END IF;
            IF v_f = 'category' THEN
                v_cat := v_v #>> '{}';
            END IF;
            v_out := v_out || jsonb_build_array(trovesnap.proposal_change(v_id, 'create_item.' || v_f, NULL, v_v));
        END LOOP;
        -- The price: the draft's, else the candidate's supplied one, a
        -- change only when the requester's role may change prices (the
        -- bulk rule, domain.PromotionFieldPermission). The photos: the
        -- candidate's assets in position order.
        SELECT m.role INTO v_role FROM trovesnap.memberships m
        WHERE m.tenant_id = p_body ->> 'tenant_id' AND m.user_id = p_body -> 'requested_by' ->> 'actor_id';
        v_price := trovesnap.draft_value(v_changes, 'create_item.price_cents');
        IF jsonb_typeof(v_price) IS DISTINCT FROM 'number' THEN
            v_price := to_jsonb(c.supplied_price_cents);
        END IF;
        IF v_price IS NOT NULL AND jsonb_typeof(v_price) = 'number'
           AND trovesnap.has_perm(coalesce(v_role, ''), trovesnap.bulk_field_perm('price_cents')) THEN
            v_out := v_out || jsonb_build_array(trovesnap.proposal_change(v_id, 'create_item.price_cents', NULL, v_price));
        END IF;
        v_photos := trovesnap.candidate_photos(c.tenant_id, c.id);
        IF jsonb_array_length(v_photos) > 0 THEN
            v_out := v_out || jsonb_build_array(trovesnap.proposal_change(v_id, 'create_item.photos', NULL, v_photos));
        END IF;
        v_out := v_out || jsonb_build_array(trovesnap.proposal_change(v_id, 'create_item.status', NULL, '"draft"'),
                                            trovesnap.proposal_change(v_id, 'review_status', to_jsonb(c.review_status), '"promoted"'));
        IF v_cat = '' THEN
            v_warn := v_warn || '["category_missing"]';
        END IF;
        IF c.review_status = 'needs_review' THEN
            v_warn := v_warn || '["candidate_not_reviewed"]';
        END IF;
        v_sales := ARRAY[c.sale_id];
        v_created := 1;
        END IF;
    WHEN 'publish_item' THEN
        -- domain.BuildItemPublication: the first target is the one published.
        v_kind := 'item';
        FOREACH v_f IN ARRAY v_ids
        LOOP
            SELECT * INTO i FROM trovesnap.items x WHERE x.id = v_f;
            v_evs := v_evs || jsonb_build_array(jsonb_build_object('id', v_f, 'version', i.version));
            v_sales := v_sales || i.sale_id;
        END LOOP;
        SELECT * INTO i FROM trovesnap.items x WHERE x.id = v_id;
        IF (SELECT es.status FROM trovesnap.estate_sales es WHERE es.id = i.sale_id) = 'draft' THEN
            v_warn := v_warn || '["sale_not_published: the item becomes visible when its sale is published"]';
        END IF;
        v_out := jsonb_build_array(trovesnap.proposal_change(v_id, 'status', to_jsonb(i.status), '"published"'));
        -- The photos the draft names become exactly the public ones
        -- (domain.BuildItemPublication): from the approved ids to the
        -- named ids, both sorted.
        v_photos := trovesnap.draft_value(v_changes, 'public_photo_ids');
        IF jsonb_typeof(v_photos) = 'array' THEN
            v_out := v_out || jsonb_build_array(trovesnap.proposal_change(v_id, 'public_photo_ids',
                to_jsonb(ARRAY(SELECT ph.id COLLATE "C" FROM trovesnap.item_photos ph
                               WHERE ph.tenant_id = i.tenant_id AND ph.item_id = i.id AND ph.published ORDER BY 1)),
                to_jsonb(ARRAY(SELECT DISTINCT x COLLATE "C" FROM jsonb_array_elements_text(v_photos) x ORDER BY 1))));
        END IF;
        v_items := 1;
        v_public := 1;
    WHEN 'publish_sale' THEN
        -- domain.BuildSalePublication
        v_kind := 'sale';
        SELECT * INTO s FROM trovesnap.estate_sales x WHERE x.id = v_id;
        v_evs := jsonb_build_array(jsonb_build_object('id', v_id, 'version', s.version));
        v_sales := ARRAY[v_id];
        v_out := jsonb_build_array(trovesnap.proposal_change(v_id, 'status', to_jsonb(s.status), '"published"'),
                                   trovesnap.proposal_change(v_id, 'visibility', to_jsonb(s.visibility), '"public"'),
                                   trovesnap.proposal_change(v_id, 'address_policy', to_jsonb(s.address_policy), to_jsonb(s.address_policy)));
        v_public := 1;
    WHEN 'bulk_item_update' THEN
        -- domain.BuildBulkUpdate: the named fields, sorted, on every target
        -- in order, each from its current value to the one value the draft
        -- gave the field.
        v_kind := 'item';
        v_names := ARRAY(SELECT DISTINCT ch ->> 'field' COLLATE "C" FROM jsonb_array_elements(v_changes) ch
                         WHERE jsonb_typeof(ch) = 'object' AND ch ->> 'field' IS NOT NULL ORDER BY 1);
        FOREACH v_id IN ARRAY v_ids
        LOOP
            SELECT * INTO i FROM trovesnap.items x WHERE x.id = v_id;
            v_evs := v_evs || jsonb_build_array(jsonb_build_object('id', v_id, 'version', i.version));
            v_sales := v_sales || i.sale_id;
            FOREACH v_field IN ARRAY v_names
            LOOP
                v_out := v_out || jsonb_build_array(trovesnap.proposal_change(v_id, v_field, trovesnap.item_field_value(i, v_field),
                                                                              trovesnap.draft_value(v_changes, v_field)));
            END LOOP;
            IF i.status = 'published' THEN
                v_public := v_public + 1;
            END IF;
        END LOOP;
        v_items := cardinality(v_ids);
    WHEN 'status_transition', 'archive_item' THEN
        -- domain.BuildStatusTransition
        v_kind := 'item';
        SELECT * INTO i FROM trovesnap.items x WHERE x.id = v_id;
        v_evs := jsonb_build_array(jsonb_build_object('id', v_id, 'version', i.version));
        v_sales := ARRAY[i.sale_id];
        v_to := trovesnap.draft_value(v_changes, 'status');
        v_src := trovesnap.draft_value(v_changes, 'source');
        v_eff := trovesnap.draft_value(v_changes, 'effective_at');
        IF jsonb_typeof(v_eff) IS DISTINCT FROM 'string' THEN
            v_eff := '""';
        END IF;
        IF v_src IS NOT NULL THEN
            v_out := jsonb_build_array(trovesnap.proposal_change(v_id, 'source', NULL, v_src));
        END IF;
        v_out := v_out || jsonb_build_array(trovesnap.proposal_change(v_id, 'status', to_jsonb(i.status), v_to),
                                            trovesnap.proposal_change(v_id, 'effective_at', NULL, v_eff));
        v_items := 1;
        IF i.status = 'published' OR v_to = '"published"' THEN
            v_public := 1;
        END IF;
    WHEN 'record_checkout_scan' THEN
        -- domain.BuildCheckoutScan: the scan, the status it records, a note.
        v_kind := 'item';
        SELECT * INTO i FROM trovesnap.items x WHERE x.id = v_id;
        v_evs := jsonb_build_array(jsonb_build_object('id', v_id, 'version', i.version));
        v_sales := ARRAY[i.sale_id];
        v_v := trovesnap.draft_value(v_changes, 'checkout_scan');
        v_to := to_jsonb(trovesnap.checkout_scan_status(CASE WHEN jsonb_typeof(v_v) = 'string' THEN v_v #>> '{}' END));
        v_out := jsonb_build_array(trovesnap.proposal_change(v_id, 'checkout_scan', NULL, v_v),
                                   trovesnap.proposal_change(v_id, 'status', to_jsonb(i.status), v_to));
        v_v := trovesnap.draft_value(v_changes, 'note');
        IF jsonb_typeof(v_v) = 'string' AND v_v #>> '{}' <> '' THEN
            v_out := v_out || jsonb_build_array(trovesnap.proposal_change(v_id, 'note', NULL, v_v));
        END IF;
        v_items := 1;
        IF i.status = 'published' THEN
            v_public := 1;
        END IF;
    WHEN 'bind_identity', 'release_identity' THEN
        -- domain.BuildIdentity
        v_kind := 'item';
        SELECT * INTO i FROM trovesnap.items x WHERE x.id = v_id;
        v_evs := jsonb_build_array(jsonb_build_object('id', v_id, 'version', i.version));
        v_sales := ARRAY[i.sale_id];
        IF v_action = 'bind_identity' THEN
            v_out := jsonb_build_array(trovesnap.proposal_change(v_id, 'qr_code', '""', trovesnap.draft_value(v_changes, 'qr_code')));
        ELSE
            IF i.status IN ('sold', 'pending_pickup') THEN
                v_warn := v_warn || jsonb_build_array('release_from_' || i.status || ': human approval only');
            END IF;
            v_out := jsonb_build_array(trovesnap.proposal_change(v_id, 'qr_code', to_jsonb(coalesce(i.qr_code, '')), '""'));
        END IF;
        v_items := 1;
    WHEN 'disposition_action' THEN
        -- domain.BuildDisposition
        v_kind := 'item';
        v_act := trovesnap.draft_value(v_changes, 'disposition');
        FOREACH v_f IN ARRAY v_ids
        LOOP
            SELECT * INTO i FROM trovesnap.items x WHERE x.id = v_f;
            v_evs := v_evs || jsonb_build_array(jsonb_build_object('id', v_f, 'version', i.version));
            v_sales := v_sales || i.sale_id;
            v_out := v_out || jsonb_build_array(
                trovesnap.proposal_change(v_f, 'disposition', NULL, v_act),
                trovesnap.proposal_change(v_f, 'status', to_jsonb(i.status),
                                          CASE WHEN v_act = '"consign"' THEN '"withdrawn"'::jsonb ELSE '"archived"'::jsonb END));
            IF i.status = 'published' THEN
                v_public := v_public + 1;
            END IF;
        END LOOP;
        v_v := trovesnap.draft_value(v_changes, 'counterparty');
        IF jsonb_typeof(v_v) = 'string' AND v_v #>> '{}' <> '' THEN
            v_out := v_out || jsonb_build_array(trovesnap.proposal_change(v_id, 'counterparty', NULL, v_v));
        END IF;
        v_v := trovesnap.draft_value(v_changes, 'offer_cents');
        IF v_v IS NOT NULL AND jsonb_typeof(v_v) <> 'null' THEN
            v_out := v_out || jsonb_build_array(trovesnap.proposal_change(v_id, 'offer_cents', NULL, v_v));
        END IF;
        v_items := cardinality(v_ids);
    WHEN 'buyer_notification' THEN
        -- domain.BuildNotification: the audience sized from the sale's
        -- aggregated demand, never a buyer; the draft's audience, channels
        -- and message are the body's.
        IF v_id ~ '^item_[A-Za-z0-9]{1,40}$' THEN
            v_kind := 'item';
            SELECT * INTO i FROM trovesnap.items x WHERE x.id = v_id;
            v_evs := jsonb_build_array(jsonb_build_object('id', v_id, 'version', i.version));
            v_sale := i.sale_id;
            v_cat := coalesce(i.category, '');
        ELSE
            v_kind := 'sale';
            SELECT * INTO s FROM trovesnap.estate_sales x WHERE x.id = v_id;
            v_evs := jsonb_build_array(jsonb_build_object('id', v_id, 'version', s.version));
            v_sale := v_id;
            v_cat := '';
        END IF;
        v_sales := ARRAY[v_sale];
        v_aud := CASE WHEN jsonb_typeof(p_body -> 'notification' -> 'selection_basis') = 'string'
                      THEN p_body -> 'notification' ->> 'selection_basis' ELSE '' END;
        v_chan := p_body -> 'notification' -> 'channels';
        IF jsonb_typeof(v_chan) IS DISTINCT FROM 'array'
           OR EXISTS (SELECT 1 FROM jsonb_array_elements(v_chan) e WHERE jsonb_typeof(e) <> 'string') THEN
            v_chan := 'null';
        END IF;
        v_top := CASE WHEN v_cat <> '' AND v_aud = 'category_interest' THEN split_part(v_cat, '.', 1) ELSE '' END;
        v_dem := trovesnap.sale_demand(v_sale);
        IF v_top = '' THEN
            v_saves := (v_dem ->> 'saves')::integer;
            v_follows := (v_dem ->> 'follows')::integer;
        ELSE
            v_saves := coalesce((v_dem -> 'by_top' -> v_top ->> 'saves')::integer, 0);
            v_follows := coalesce((v_dem -> 'by_top' -> v_top ->> 'follows')::integer, 0);
        END IF;
        v_size := v_follows;
        IF v_aud = 'saved_item' THEN
            v_size := v_saves / 10;
        END IF;
        v_supp := v_size / 10;
        v_sent := v_size - v_supp;
        v_per := CASE WHEN v_chan @> '["sms"]' THEN 0.0075::double precision ELSE 0 END;
        v_cost := floor(v_sent::double precision * v_per * 100::double precision + 0.5::double precision) / 100::double precision;
        v_notif := jsonb_build_object('audience_size', v_size, 'selection_basis', v_aud, 'channels', v_chan,
            'message_preview', CASE WHEN jsonb_typeof(p_body -> 'notification' -> 'message_preview') = 'string'
                                    THEN p_body -> 'notification' -> 'message_preview' ELSE '""' END,
            'suppressed_count', v_supp, 'rate_limit_per_hour', 500);
        v_out := jsonb_build_array(trovesnap.proposal_change(v_id, 'notification', NULL, to_jsonb(format('%s buyers via %s', v_sent,
            coalesce((SELECT string_agg(e, ',' ORDER BY n) FROM jsonb_array_elements_text(CASE WHEN v_chan = 'null' THEN '[]' ELSE v_chan END)
                      WITH ORDINALITY AS x(e, n)), '')))));
        IF v_sent = 0 THEN
            v_warn := v_warn || '["empty_audience"]';
        END IF;
    WHEN 'export_delivery' THEN
        -- domain.BuildExportDelivery
        v_kind := 'export';
        v_facts := trovesnap.export_facts(v_id);
        IF v_facts IS NULL THEN
            RETURN jsonb_build_object('target_ids', to_jsonb(v_ids));
        END IF;
        v_evs := jsonb_build_array(jsonb_build_object('id', v_id, 'version', 1));
        FOR r IN SELECT x.e FROM jsonb_array_elements(v_facts -> 'rows') WITH ORDINALITY AS x(e, n) ORDER BY x.n
        LOOP
            v_evs := v_evs || jsonb_build_array(jsonb_build_object('id', r ->> 'item_id', 'version', (r ->> 'staged_version')::integer));
            v_sales := v_sales || (r ->> 'sale_id');
            v_out := v_out || jsonb_build_array(trovesnap.proposal_change(r ->> 'item_id', 'external_listing.' || (v_facts ->> 'channel'),
                                                                          NULL, '"listed"'));
        END LOOP;
        IF (v_facts ->> 'valid_count')::integer < (v_facts ->> 'item_count')::integer THEN
            v_warn := v_warn || jsonb_build_array(format('%s of %s staged items fail %s''s checks and are not delivered',
                (v_facts ->> 'item_count')::integer - (v_facts ->> 'valid_count')::integer, v_facts ->> 'item_count', v_facts ->> 'channel'));
        END IF;
        v_out := v_out || jsonb_build_array(trovesnap.proposal_change(v_id, 'status', v_facts -> 'status', '"delivered"'));
        v_deliv := 1;
        v_public := (v_facts ->> 'valid_count')::integer;
    ELSE
        RETURN jsonb_build_object('target_ids', to_jsonb(v_ids));
    END CASE;
    RETURN jsonb_build_object(
        'target_kind', v_kind, 'target_ids', to_jsonb(v_ids), 'expected_versions', v_evs, 'changes', v_out,
        'impact', jsonb_build_object('canonical_items_created', v_created, 'items_changed', v_items,
                                     'public_records_changed', v_public, 'notifications_sent', v_sent,
                                     'external_deliveries', v_deliv, 'estimated_cost_usd', to_jsonb(v_cost)),
        'validation', jsonb_build_object('status', CASE WHEN jsonb_array_length(v_warn) > 0 THEN 'valid_with_warnings' ELSE 'valid' END,
                                         'warnings', v_warn, 'errors', '[]'::jsonb),
        'sale_ids', to_jsonb(ARRAY(SELECT DISTINCT x COLLATE "C" FROM unnest(v_sales) x WHERE x IS NOT NULL ORDER BY 1)))
        || CASE WHEN v_notif IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('notification', v_notif) END;
END
$$;

CREATE OR REPLACE FUNCTION trovesnap.mcp_create_proposal(p_credential_hash text, p_tool text, p_tool_major integer, p_key text,
                                                         p_fingerprint text, p_event jsonb, p_started_at timestamptz,
                                                         p_proposal jsonb) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    p         trovesnap.principal;
    v_now     timestamptz := now();
    v_replay  jsonb;
    v_id      text := p_proposal ->> 'id';
    v_action  text := p_proposal ->> 'action';
    v_tool    text[];
    v_kind    text;
    v_ids     text[];
    v_evids   text[];
    v_sales   text[];
    v_created timestamptz;
    v_expires timestamptz;
    v_target  text;
    v_facts   jsonb;
    c         trovesnap.inventory_candidates;
    i         trovesnap.items;
    s         trovesnap.estate_sales;
    v_body    jsonb;
    v_result  jsonb;
    v_related jsonb;
    v_event   jsonb := p_event;
    v_derived jsonb;
    v_field   text;
    v_extra   text;
    -- The keys of a proposal (domain.Proposal): a body with any other is
    -- not one the builder made.
    v_keys    text[] := ARRAY['id', 'tenant_id', 'tool', 'requested_by', 'action', 'target_kind', 'target_ids',
                              'expected_versions', 'changes', 'impact', 'validation', 'approval_requirement',
                              'notification', 'sale_ids', 'proposal_hash', 'created_at', 'expires_at', 'status',
                              'correlation_id'];
BEGIN
    PERFORM trovesnap.begin_rpc('trovesnap_mcp');
    p := trovesnap.lookup_client(p_credential_hash);
    PERFORM trovesnap.check_write_meta(p_tool, p_tool_major, p_key, p_fingerprint, p_event);
    IF jsonb_typeof(p_proposal) IS DISTINCT FROM 'object' THEN
        PERFORM trovesnap.fail('invalid_input:proposal', 'an object is required');
    END IF;
    PERFORM set_config('trovesnap.tenant_id', p.tenant_id, true);
    v_replay := trovesnap.idem_replay(p, p_tool, p_tool_major, p_key, p_fingerprint, true);
    IF v_replay IS NOT NULL THEN
        RETURN v_replay;
    END IF;
    PERFORM trovesnap.require_active(p);
    PERFORM trovesnap.proposal_access(p, p_proposal ->> 'action', false);
    SELECT k INTO v_extra FROM jsonb_object_keys(p_proposal) k WHERE NOT (k = ANY (v_keys)) ORDER BY k LIMIT 1;
    IF v_extra IS NOT NULL THEN
        PERFORM trovesnap.fail('invalid_input:proposal', left(v_extra, 40) || ' is not a field of a proposal');
    END IF;

    -- The proposal is this client's, for this tenant, of an action live mode
    -- executes, by the tool and under the approval the catalog gives it.
    IF coalesce(v_id, '') !~ '^proposal_[A-Za-z0-9]{1,40}$' THEN
        PERFORM trovesnap.fail('invalid_input:proposal_id', 'not a proposal id');
    END IF;
    IF coalesce(p_proposal ->> 'proposal_hash', '') !~ '^sha256:[0-9a-f]{64}$' THEN
        PERFORM trovesnap.fail('invalid_input:proposal_hash', 'a sealed proposal carries its sha256 hash');
    END IF;
    IF p_proposal ->> 'tenant_id' IS DISTINCT FROM p.tenant_id THEN
        PERFORM trovesnap.fail('invalid_input:tenant_id', 'a proposal is for the client''s own tenant');
    END IF;
    IF p_proposal -> 'requested_by' ->> 'client_id' IS DISTINCT FROM p.client_id
       OR p_proposal -> 'requested_by' ->> 'actor_id' IS DISTINCT FROM p.actor_id THEN
        PERFORM trovesnap.fail('invalid_input:requested_by', 'a proposal is requested by the calling client and its actor');
    END IF;
    v_tool := trovesnap.action_tool(v_action);
    IF v_tool IS NULL THEN
        PERFORM trovesnap.fail('invalid_input:action', 'not available in live mode');
    END IF;
    IF p_proposal -> 'tool' ->> 'name' IS DISTINCT FROM v_tool[1]
       OR coalesce(p_proposal -> 'tool' ->> 'version', '') = '' THEN
        PERFORM trovesnap.fail('invalid_input:tool', 'the action is executed by ' || v_tool[1]);
    END IF;
    IF p_proposal ->> 'approval_requirement' IS DISTINCT FROM v_tool[2] THEN
        PERFORM trovesnap.fail('invalid_input:approval_requirement', v_tool[1] || ' needs ' || v_tool[2]);
    END IF;
    BEGIN
        v_created := (p_proposal ->> 'created_at')::timestamptz;
        v_expires := (p_proposal ->> 'expires_at')::timestamptz;
    EXCEPTION WHEN others THEN
        PERFORM trovesnap.fail('invalid_input:expires_at', 'not a timestamp');
    END;
    IF v_created IS NULL OR v_expires IS NULL OR v_created < v_now - interval '5 minutes' OR v_created > v_now + interval '5 minutes' THEN
        PERFORM trovesnap.fail('invalid_input:created_at', 'a proposal is created now');
    END IF;
    IF v_expires <= v_created OR v_expires > v_created + interval '24 hours' THEN
        PERFORM trovesnap.fail('invalid_input:expires_at', 'a proposal expires within 24 hours');
    END IF;

    -- Targets: the frozen set, each named once with its expected version.
    IF jsonb_typeof(p_proposal -> 'target_ids') IS DISTINCT FROM 'array'
       OR jsonb_typeof(p_proposal -> 'expected_versions') IS DISTINCT FROM 'array' THEN
        PERFORM trovesnap.fail('invalid_input:targets', 'at least one target');
    END IF;
    v_ids := ARRAY(SELECT jsonb_array_elements_text(p_proposal -> 'target_ids'));
    v_evids := ARRAY(SELECT ev ->> 'id' FROM jsonb_array_elements(p_proposal -> 'expected_versions') ev);
    -- (An export delivery is bound to its export AND to each valid item at
    -- its staged version: its expected versions start with the export.)
    IF cardinality(v_ids) = 0
       OR (v_action <> 'export_delivery' AND v_ids IS DISTINCT FROM v_evids)
       OR (v_action = 'export_delivery' AND (cardinality(v_ids) <> 1 OR v_evids[1] IS DISTINCT FROM v_ids[1]))
       OR cardinality(v_evids) <> (SELECT count(DISTINCT x) FROM unnest(v_evids) x) THEN
        PERFORM trovesnap.fail('invalid_input:expected_versions', 'give exactly one version per target');
    END IF;
    IF cardinality(v_ids) > trovesnap.max_bulk_targets(p) THEN
        PERFORM trovesnap.fail('invalid_input:item_ids', 'too many targets for one plan');
    END IF;
    IF EXISTS (SELECT 1 FROM jsonb_array_elements(p_proposal -> 'expected_versions') ev
               WHERE jsonb_typeof(ev -> 'version') IS DISTINCT FROM 'number') THEN
        PERFORM trovesnap.fail('invalid_input:expected_versions', 'a version is a number');
    END IF;

    -- Each target as the action needs it, under the tenant context: visible,
    -- assigned, in a state the action accepts; then every version current.
    CASE v_action
    WHEN 'promote_candidate' THEN
        v_kind := 'candidate';
        v_target := v_ids[1];
        PERFORM trovesnap.check_ref('inventory_candidates', 'candidate_id', v_target);
        SELECT * INTO c FROM trovesnap.inventory_candidates ic WHERE ic.id = v_target;
        PERFORM trovesnap.require_assigned(p, c.sale_id, 'candidate', v_target);
        PERFORM trovesnap.check_versions(p_proposal -> 'expected_versions', false);
        IF c.kind NOT IN ('new_item', 'attach_media') THEN
            PERFORM trovesnap.fail('candidate_required', format('candidate %s is a %s candidate', v_target, c.kind));
        END IF;
        IF c.review_status NOT IN ('needs_review', 'approved') THEN
            PERFORM trovesnap.fail('transition_invalid', format('candidate %s is %s and cannot be promoted', v_target, c.review_status));
        END IF;
        IF c.kind = 'attach_media' THEN
            -- The item it names, assigned to the caller, still taking
            -- changes; the photos are derive_proposal's (its candidate's).
            SELECT it.* INTO i FROM trovesnap.candidate_item_changes x
            JOIN trovesnap.items it ON it.tenant_id = x.tenant_id AND it.id = x.item_id WHERE x.candidate_id = c.id;
            PERFORM trovesnap.require_assigned(p, i.sale_id, 'item', i.id);
            IF i.status IN ('sold', 'pending_pickup', 'archived') THEN
                PERFORM trovesnap.fail('transition_invalid', format('item %s is %s and takes no new photo', i.id, i.status));
            END IF;
            IF jsonb_array_length(trovesnap.candidate_photos(c.tenant_id, c.id)) = 0 THEN
                PERFORM trovesnap.fail('invalid_input:candidate_id', format('candidate %s has no photo to add', v_target));
            END IF;
        END IF;
        -- Exactly one change per create_item field, and the sale is the
        -- candidate's: no duplicate a later reader could take instead.
        IF (c.kind = 'new_item' AND (SELECT count(*) FROM jsonb_array_elements(p_proposal -> 'changes') ch
            WHERE ch ->> 'target_id' = v_target AND ch ->> 'field' = 'create_item.sale_id' AND ch ->> 'to' = c.sale_id) <> 1)
           OR EXISTS (SELECT 1 FROM jsonb_array_elements(p_proposal -> 'changes') ch
                      WHERE ch ->> 'field' LIKE 'create\_item.%' GROUP BY ch ->> 'target_id', ch ->> 'field' HAVING count(*) > 1) THEN
            PERFORM trovesnap.fail('invalid_input:changes', 'the item is created in the candidate''s sale, each field once');
        END IF;
        v_sales := ARRAY[c.sale_id];
    WHEN 'publish_item' THEN
        v_kind := 'item';
        FOREACH v_target IN ARRAY v_ids
        LOOP
            PERFORM trovesnap.check_ref('items', 'item_id', v_target);
            SELECT * INTO i FROM trovesnap.items it WHERE it.id = v_target;
            PERFORM trovesnap.require_assigned(p, i.sale_id, 'item', v_target);
        END LOOP;
        PERFORM trovesnap.check_versions(p_proposal -> 'expected_versions', false);
        FOREACH v_target IN ARRAY v_ids
        LOOP
            SELECT * INTO i FROM trovesnap.items it WHERE it.id = v_target;
            IF i.status <> 'ready' OR NOT trovesnap.item_ready_with(i, trovesnap.draft_value(p_proposal -> 'changes', 'public_photo_ids')) THEN
                PERFORM trovesnap.fail('transition_invalid', format('item %s is not ready to publish', v_target));
            END IF;
        END LOOP;
        v_sales := ARRAY(SELECT DISTINCT it.sale_id FROM trovesnap.items it WHERE it.id = ANY (v_ids) ORDER BY 1);
    WHEN 'publish_sale' THEN
        v_kind := 'sale';
        v_target := v_ids[1];
        PERFORM trovesnap.check_ref('estate_sales', 'sale_id', v_target);
        PERFORM trovesnap.require_assigned(p, v_target, 'sale', v_target);
        PERFORM trovesnap.check_versions(p_proposal -> 'expected_versions', false);
        SELECT * INTO s FROM trovesnap.estate_sales es WHERE es.id = v_target;
        IF s.status <> 'draft' THEN
            PERFORM trovesnap.fail('transition_invalid', format('sale %s is %s', v_target, s.status));
        END IF;
        -- As domain.BuildSalePublication refuses them.
        IF coalesce(s.city, '') = '' THEN
            PERFORM trovesnap.fail('transition_invalid', format('sale %s has no city', v_target));
        END IF;
        IF s.address_policy = 'hidden_until' AND s.address_reveal_at IS NULL THEN
            PERFORM trovesnap.fail('transition_invalid', format('sale %s hides its address without a reveal time', v_target));
        END IF;
        v_sales := ARRAY[v_target];
    WHEN 'bulk_item_update', 'status_transition', 'archive_item', 'bind_identity', 'release_identity', 'disposition_action' THEN
        v_kind := 'item';
        PERFORM trovesnap.item_targets(p, v_ids);
        PERFORM trovesnap.check_versions(p_proposal -> 'expected_versions', false);
        -- The status changes, which checkout may propose with item.update_status.
        IF 'item.update_status' = ANY (coalesce(trovesnap.proposal_perms(v_action), '{}')) THEN
            PERFORM trovesnap.check_checkout_proposal(p, v_action, v_ids, p_proposal -> 'changes');
        END IF;
        PERFORM trovesnap.check_item_proposal(p, v_action, v_ids, p_proposal -> 'changes');
        v_sales := ARRAY(SELECT DISTINCT it.sale_id FROM trovesnap.items it WHERE it.id = ANY (v_ids) ORDER BY 1);
    WHEN 'record_checkout_scan' THEN
        v_kind := 'item';
        PERFORM trovesnap.item_targets(p, v_ids);
        PERFORM trovesnap.check_versions(p_proposal -> 'expected_versions', false);
        PERFORM trovesnap.check_checkout_proposal(p, v_action, v_ids, p_proposal -> 'changes');
        v_sales := ARRAY(SELECT DISTINCT it.sale_id FROM trovesnap.items it WHERE it.id = ANY (v_ids) ORDER BY 1);
    WHEN 'buyer_notification' THEN
        IF cardinality(v_ids) <> 1 THEN
            PERFORM trovesnap.fail('invalid_input:targets', 'one item or one sale');
        END IF;
        v_target := v_ids[1];
        IF v_target ~ '^item_[A-Za-z0-9]{1,40}$' THEN
            v_kind := 'item';
            PERFORM trovesnap.item_targets(p, v_ids);
            PERFORM trovesnap.check_versions(p_proposal -> 'expected_versions', false);
            SELECT * INTO i FROM trovesnap.items it WHERE it.id = v_target;
            IF i.status <> 'published' THEN
                PERFORM trovesnap.fail('transition_invalid', format('item %s is %s: only published items are announced', v_target, i.status));
            END IF;
            v_sales := ARRAY[i.sale_id];
        ELSE
            v_kind := 'sale';
            PERFORM trovesnap.check_ref('estate_sales', 'sale_id', v_target);
            PERFORM trovesnap.require_assigned(p, v_target, 'sale', v_target);
            PERFORM trovesnap.check_versions(p_proposal -> 'expected_versions', false);
            SELECT * INTO s FROM trovesnap.estate_sales es WHERE es.id = v_target;
            IF s.status NOT IN ('published', 'live') THEN
                PERFORM trovesnap.fail('transition_invalid', format('sale %s is %s: only published sales are announced', v_target, s.status));
            END IF;
            v_sales := ARRAY[v_target];
        END IF;
        IF jsonb_typeof(p_proposal -> 'notification') IS DISTINCT FROM 'object' THEN
            PERFORM trovesnap.fail('invalid_input:notification', 'a notification proposal carries its reviewable plan');
        END IF;
        -- The builder cuts a preview at 280 bytes and marks the cut.
        IF jsonb_typeof(p_proposal -> 'notification' -> 'message_preview') IS DISTINCT FROM 'string'
           OR octet_length(p_proposal -> 'notification' ->> 'message_preview') > 280 + octet_length('…') THEN
            PERFORM trovesnap.fail('invalid_input:notification', 'the message preview is the template as the builder renders it');
        END IF;
    WHEN 'export_delivery' THEN
        v_kind := 'export';
        v_target := v_ids[1];
        PERFORM trovesnap.check_ref('export_drafts', 'export_id', v_target);
        PERFORM trovesnap.require_export_assigned(p, v_target);
        v_facts := trovesnap.export_facts(v_target);
        IF v_facts ->> 'status' NOT IN ('staged', 'delivery_proposed') THEN
            PERFORM trovesnap.fail('transition_invalid', format('export %s is %s: only a staged export can be delivered',
                                                                v_target, v_facts ->> 'status'));
        END IF;
        IF (v_facts ->> 'valid_count')::integer = 0 OR jsonb_array_length(v_facts -> 'rows') = 0 THEN
            PERFORM trovesnap.fail('transition_invalid', format('export %s has no item that passes %s''s checks',
                                                                v_target, v_facts ->> 'channel'));
        END IF;
        IF p_proposal -> 'expected_versions' IS DISTINCT FROM
           jsonb_build_array(jsonb_build_object('id', v_target, 'version', 1)) || (
               SELECT jsonb_agg(jsonb_build_object('id', r ->> 'item_id', 'version', (r ->> 'staged_version')::integer) ORDER BY n)
               FROM jsonb_array_elements(v_facts -> 'rows') WITH ORDINALITY AS x(r, n)) THEN
            PERFORM trovesnap.fail('invalid_input:expected_versions', 'the export, then each valid item at its staged version');
        END IF;
        PERFORM trovesnap.check_versions(p_proposal -> 'expected_versions', false);
        v_sales := ARRAY(SELECT DISTINCT r ->> 'sale_id' FROM jsonb_array_elements(v_facts -> 'rows') r ORDER BY 1);
    END CASE;
    IF p_proposal ->> 'target_kind' IS DISTINCT FROM v_kind THEN
        PERFORM trovesnap.fail('invalid_input:target_kind', 'must be ' || v_kind);
    END IF;
    -- The sales the targets belong to are a policy's scope: they must be exact.
    IF ARRAY(SELECT jsonb_array_elements_text(coalesce(p_proposal -> 'sale_ids', '[]')) ORDER BY 1) IS DISTINCT FROM v_sales THEN
        PERFORM trovesnap.fail('invalid_input:sale_ids', 'the sales of the targets');
    END IF;
    -- Every derived field is what the database derives from the current
    -- rows and the draft's own inputs (derive_proposal), exactly: the
    -- validation a policy's require_no_conflicts reads, each change and its
    -- before value the seller reviews, the impact and cost, the versions.
    v_derived := trovesnap.derive_proposal(p_proposal);
    FOREACH v_field IN ARRAY ARRAY['target_kind', 'target_ids', 'expected_versions', 'changes', 'validation', 'impact',
                                   'sale_ids', 'notification']
    LOOP
        IF p_proposal -> v_field IS DISTINCT FROM v_derived -> v_field THEN
            PERFORM trovesnap.fail('invalid_input:proposal', v_field || ' is not what the current state of the targets gives');
        END IF;
    END LOOP;

    v_body := p_proposal || jsonb_build_object('id', '', 'proposal_hash', '', 'status', '', 'correlation_id', '');
    INSERT INTO trovesnap.proposals (id, tenant_id, tool_name, action, requested_by_client, requested_by_actor,
                                     correlation_id, body, proposal_hash, created_at, expires_at, status)
    VALUES (v_id, p.tenant_id, v_tool[1], v_action, p.client_id, p.actor_id, coalesce(p_event ->> 'correlation_id', ''),
            v_body, p_proposal ->> 'proposal_hash', v_created, v_expires, 'pending_approval');

    v_result := p_proposal || jsonb_build_object('status', 'pending_approval',
                                                 'correlation_id', coalesce(p_event ->> 'correlation_id', ''));
    v_related := trovesnap.empty_related() || jsonb_build_object('proposal_ids', jsonb_build_array(v_id));
    IF v_kind = 'candidate' THEN
        v_related := v_related || jsonb_build_object('candidate_ids', to_jsonb(v_ids));
    ELSIF v_kind = 'item' THEN
        v_related := v_related || jsonb_build_object('item_ids', to_jsonb(v_ids));
    END IF;
    -- A proposal's own creation event names it in approval.proposal_id (§35):
    -- it is the approval request later events answer.
    IF coalesce(v_event -> 'approval' ->> 'proposal_id', '') = '' AND coalesce(v_event -> 'tool' ->> 'tier', '') = 'action_proposal' THEN
        v_event := jsonb_set(v_event, '{approval}', coalesce(v_event -> 'approval', '{}'::jsonb)
                                                    || jsonb_build_object('proposal_id', v_id));
    END IF;
    RETURN trovesnap.finish_write(p, p_tool, p_tool_major, p_key, p_fingerprint, v_event, p_started_at, v_result, v_related);
END
$$;

CREATE OR REPLACE FUNCTION trovesnap.mcp_execute_proposal(p_credential_hash text, p_tool text, p_tool_major integer, p_key text,
                                            p_fingerprint text, p_event jsonb, p_started_at timestamptz,
                                            p_proposal_id text, p_auth jsonb) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    v_media    jsonb;
    p          trovesnap.principal;
    v_now      timestamptz := now();
    v_replay   jsonb;
    v_perm     text;
    v_perms    text[];
    pr         trovesnap.proposals;
    g          trovesnap.approval_grants;
    pol        trovesnap.automation_policies;
    v_hash     text := coalesce(p_auth ->> 'proposal_hash', '');
    v_grant_id text := coalesce(p_auth ->> 'grant_id', '');
    v_pol_id   text := coalesce(p_auth ->> 'policy_id', '');
    v_used     text;
    v_refusal  text;
    v_usage    jsonb;
    v_cost     numeric;
    v_tool     text[];
    v_target   text;
    v_item     text;
    v_version  integer;
    v_results  jsonb := '[]';
    v_result   jsonb;
    v_related  jsonb;
    v_event    jsonb := p_event;
BEGIN
    PERFORM trovesnap.begin_rpc('trovesnap_mcp');
    p := trovesnap.lookup_client(p_credential_hash);
    PERFORM trovesnap.check_write_meta(p_tool, p_tool_major, p_key, p_fingerprint, p_event);
    IF jsonb_typeof(p_auth) IS DISTINCT FROM 'object' THEN
        PERFORM trovesnap.fail('invalid_input:authorization', 'an object is required');
    END IF;
    PERFORM set_config('trovesnap.tenant_id', p.tenant_id, true);
    v_replay := trovesnap.idem_replay(p, p_tool, p_tool_major, p_key, p_fingerprint, true);
    IF v_replay IS NOT NULL THEN
        RETURN v_replay;
    END IF;
    PERFORM trovesnap.require_active(p);
    -- The permissions of each tool (domain.Actions, generated).
    v_perms := trovesnap.tool_perms(p_tool);
    IF v_perms IS NULL THEN
        PERFORM trovesnap.fail('invalid_input:tool', 'not a controlled action available in live mode');
    END IF;
    FOREACH v_perm IN ARRAY v_perms
    LOOP
        PERFORM trovesnap.require_access(p, 'controlled_action', ARRAY[v_perm]);
    END LOOP;

    -- 3: the proposal, locked until commit.
    SELECT * INTO pr FROM trovesnap.proposals x WHERE x.id = p_proposal_id FOR UPDATE;
    IF NOT FOUND THEN
        -- Missing, another tenant's, or of a sale the member is not assigned
        -- (row level security hides it): answered as check_ref does.
        PERFORM trovesnap.check_ref('proposals', 'proposal_id', p_proposal_id);
        PERFORM trovesnap.fail('invalid_reference:proposal_id', jsonb_build_object('id', p_proposal_id, 'cross_tenant', false)::text);
    END IF;
    IF v_hash = '' OR pr.proposal_hash <> v_hash THEN
        PERFORM trovesnap.fail('proposal_changed', 'proposal ' || pr.id);
    ELSIF pr.status = 'executed' THEN
        PERFORM trovesnap.fail('approval_consumed', format('proposal %s was already executed', pr.id));
    ELSIF pr.status = 'rejected' THEN
        PERFORM trovesnap.fail('approval_invalid', format('proposal %s was rejected', pr.id));
    ELSIF v_now >= pr.expires_at THEN
        PERFORM trovesnap.fail('approval_expired', format('proposal %s expired', pr.id));
    ELSIF pr.tool_name <> p_tool THEN
        PERFORM trovesnap.fail('approval_invalid', format('proposal %s is for %s', pr.id, pr.tool_name));
    END IF;
    -- Only the client that proposed it, acting for the same actor, executes
    -- it: a grant approves what that agent asked for, and a policy covers
    -- proposals, never other clients (§17.1 actor-bound).
    IF pr.requested_by_client IS DISTINCT FROM p.client_id OR pr.requested_by_actor IS DISTINCT FROM p.actor_id THEN
        PERFORM trovesnap.fail('approval_invalid',
            format('proposal %s was requested by another client: only the client that proposed it can execute it', pr.id));
    END IF;

    -- 4: the authority, re-checked and used up.
    IF v_grant_id <> '' THEN
        SELECT * INTO g FROM trovesnap.approval_grants x WHERE x.id = v_grant_id FOR UPDATE;
        IF NOT FOUND THEN
            PERFORM trovesnap.fail('approval_invalid', 'grant ' || v_grant_id);
        ELSIF g.tenant_id <> pr.tenant_id OR g.proposal_id <> pr.id OR g.tool <> pr.tool_name THEN
            PERFORM trovesnap.fail('approval_invalid', format('grant %s is for another proposal', g.id));
        ELSIF (g.bound_client <> '' OR g.bound_actor <> '')
              AND (g.bound_client IS DISTINCT FROM p.client_id OR g.bound_actor IS DISTINCT FROM p.actor_id) THEN
            PERFORM trovesnap.fail('approval_invalid', format('grant %s is bound to another client', g.id));
        ELSIF g.proposal_hash <> pr.proposal_hash THEN
            PERFORM trovesnap.fail('proposal_changed', 'grant ' || g.id);
        ELSIF g.status = 'revoked' THEN
            PERFORM trovesnap.fail('approval_revoked', 'grant ' || g.id);
        ELSIF g.status = 'consumed' THEN
            PERFORM trovesnap.fail('approval_consumed', 'grant ' || g.id);
        ELSIF v_now >= g.expires_at THEN
            PERFORM trovesnap.fail('approval_expired', 'grant ' || g.id);
        END IF;
        IF g.single_use THEN
            UPDATE trovesnap.approval_grants SET status = 'consumed', consumed_at = v_now
            WHERE id = g.id AND status = 'active';
            IF NOT FOUND THEN
                PERFORM trovesnap.fail('approval_consumed', 'grant ' || g.id);
            END IF;
        END IF;
        v_used := g.id;
    ELSIF v_pol_id <> '' THEN
        -- The policy row lock serialises the daily count of its uses.
        SELECT * INTO pol FROM trovesnap.automation_policies x WHERE x.id = v_pol_id FOR UPDATE;
        IF NOT FOUND THEN
            PERFORM trovesnap.fail('approval_invalid', 'policy ' || v_pol_id);
        ELSIF pol.tenant_id <> pr.tenant_id OR NOT (coalesce(pol.body -> 'allowed_tools', '[]') ? pr.tool_name) THEN
            PERFORM trovesnap.fail('approval_invalid', format('policy %s does not cover this proposal', pol.id));
        ELSIF pol.status = 'revoked' THEN
            PERFORM trovesnap.fail('approval_revoked', format('policy %s was revoked', pol.id));
        ELSIF pol.status <> 'active' OR pol.version IS DISTINCT FROM (p_auth ->> 'policy_version')::integer THEN
            PERFORM trovesnap.fail('approval_revoked', format('policy %s changed (now v%s, %s)', pol.id, pol.version, pol.status));
        END IF;
        -- A policy never stands in for an explicit human approval (§18).
        IF coalesce(pr.body ->> 'approval_requirement', '') <> 'human_or_policy' THEN
            PERFORM trovesnap.fail('approval_required', format('proposal %s needs an explicit human approval', pr.id));
        END IF;
        -- What the gate decides (approval.EvaluatePolicy): scope, items per
        -- run, fields, conflicts and the §18.2 content categories.
        v_refusal := trovesnap.policy_refusal(pol, pr);
        IF v_refusal IS NOT NULL THEN
            PERFORM trovesnap.fail('approval_required',
                format('proposal %s is not authorised by policy %s: %s', pr.id, pol.id, v_refusal));
        END IF;
        v_usage := trovesnap.policy_usage(pol.id);
        v_cost := coalesce((pr.body -> 'impact' ->> 'estimated_cost_usd')::numeric, 0);
        -- Daily limits that are not numbers are no limits: nothing is allowed
        -- (a malformed policy is refused, never cast into an error).
        IF jsonb_typeof(coalesce(pol.body -> 'limits' -> 'maximum_daily_actions', '0')) <> 'number'
           OR jsonb_typeof(coalesce(pol.body -> 'limits' -> 'maximum_cost_usd_per_day', '0')) <> 'number' THEN
            PERFORM trovesnap.fail('approval_required', format('policy %s is malformed: its daily limits are not numbers', pol.id));
        END IF;
        IF (v_usage ->> 'actions_today')::integer + 1 > coalesce((pol.body -> 'limits' ->> 'maximum_daily_actions')::numeric, 0)
           OR (v_usage ->> 'cost_today')::numeric + v_cost > coalesce((pol.body -> 'limits' ->> 'maximum_cost_usd_per_day')::numeric, 0) THEN
            PERFORM trovesnap.fail('approval_required', format('policy %s reached its daily limit', pol.id));
        END IF;
        -- A policy authorisation is a distinguishable grant record, consumed
        -- at once (its expiry only satisfies the table: it is never usable).
        v_used := trovesnap.new_id('approval');
        INSERT INTO trovesnap.approval_grants (id, tenant_id, proposal_id, proposal_hash, issuer_type, policy_id,
            policy_version, tool, target_ids, constraints, status, single_use, issued_at, expires_at, consumed_at,
            bound_client, bound_actor)
        VALUES (v_used, pr.tenant_id, pr.id, pr.proposal_hash, 'policy', pol.id, pol.version, pr.tool_name,
            ARRAY(SELECT jsonb_array_elements_text(pr.body -> 'target_ids')),
            jsonb_build_object('maximum_items', coalesce((pol.body -> 'conditions' ->> 'maximum_items_per_run')::numeric::integer, 0),
                               'maximum_cost_usd', 0, 'allow_publication', false, 'allow_notifications', false),
            'consumed', true, v_now, v_now + interval '1 microsecond', v_now, pr.requested_by_client, pr.requested_by_actor);
        INSERT INTO trovesnap.policy_uses (tenant_id, policy_id, policy_version, proposal_id, grant_id, cost_usd, used_at)
        VALUES (pr.tenant_id, pol.id, pol.version, pr.id, v_used, v_cost, v_now);
        v_event := jsonb_set(v_event, '{approval}', coalesce(v_event -> 'approval', '{}'::jsonb)
                                                    || jsonb_build_object('approval_id', v_used));
    ELSE
        PERFORM trovesnap.fail('approval_required', 'no grant or policy');
    END IF;

    -- 5: the frozen target set at its expected versions: nothing else runs.
    PERFORM trovesnap.check_versions(pr.body -> 'expected_versions', true);
    -- The client's and the tenant's daily paid budgets, under the lock.
    PERFORM trovesnap.require_cost_budget(pr.tenant_id, p.client_id,
        coalesce((pr.body -> 'impact' ->> 'estimated_cost_usd')::numeric, 0), false);

    -- 6: the ONE domain function.
    v_tool := trovesnap.action_tool(pr.action);
    -- The event's approval and tool are what this transaction used, never
    -- what the body claimed: the grant (a human's, or the policy's record),
    -- its issuer, the proposal and its hash, the action's requirement.
    SELECT * INTO g FROM trovesnap.approval_grants x WHERE x.id = v_used;
    v_event := v_event || jsonb_build_object(
        'tool', coalesce(v_event -> 'tool', '{}'::jsonb) || jsonb_build_object('name', p_tool),
        'approval', jsonb_build_object('proposal_id', pr.id, 'approval_id', v_used,
            'decision', CASE WHEN g.issuer_type = 'policy' THEN 'allowed_by_policy' ELSE 'allowed' END,
            'requirement', v_tool[2], 'proposal_hash', pr.proposal_hash,
            'issued_by', trovesnap.grant_json(g) -> 'issued_by'));
    v_related := trovesnap.empty_related() || jsonb_build_object('proposal_ids', jsonb_build_array(pr.id));
    CASE pr.action
    WHEN 'promote_candidate' THEN
        v_target := pr.body -> 'target_ids' ->> 0;
        IF (SELECT ic.kind FROM trovesnap.inventory_candidates ic WHERE ic.tenant_id = pr.tenant_id AND ic.id = v_target) = 'attach_media' THEN
            -- Photos added to an existing item: it is changed, not created.
            v_media := trovesnap.promote_media_candidate(pr);
            v_results := jsonb_build_array(
                jsonb_build_object('target_id', v_target, 'outcome', 'applied', 'new_version', NULL),
                jsonb_build_object('target_id', v_media ->> 'item_id', 'outcome', 'applied', 'new_version', (v_media ->> 'version')::integer));
            v_related := v_related || jsonb_build_object('candidate_ids', jsonb_build_array(v_target),
                                                         'item_ids', jsonb_build_array(v_media ->> 'item_id'));
        ELSE
        v_item := trovesnap.promote_inventory_candidate(pr);
        v_results := jsonb_build_array(
            jsonb_build_object('target_id', v_target, 'outcome', 'applied', 'new_version', NULL),
            jsonb_build_object('target_id', v_item, 'outcome', 'applied', 'new_version', 1));
        v_related := v_related || jsonb_build_object('candidate_ids', jsonb_build_array(v_target),
                                                     'item_ids', jsonb_build_array(v_item));
        END IF;
    WHEN 'publish_item' THEN
        FOR v_target IN SELECT jsonb_array_elements_text(pr.body -> 'target_ids')
        LOOP
            v_version := trovesnap.publish_item(pr, v_target);
            v_results := v_results || jsonb_build_array(jsonb_build_object('target_id', v_target, 'outcome', 'applied',
                                                                           'new_version', v_version));
        END LOOP;
        v_related := v_related || jsonb_build_object('item_ids', pr.body -> 'target_ids');
    WHEN 'publish_sale' THEN
        v_target := pr.body -> 'target_ids' ->> 0;
        v_version := trovesnap.publish_sale(pr, v_target);
        v_results := jsonb_build_array(jsonb_build_object('target_id', v_target, 'outcome', 'applied', 'new_version', v_version));
    WHEN 'status_transition', 'archive_item', 'bulk_item_update', 'bind_identity', 'release_identity', 'disposition_action',
         'record_checkout_scan' THEN
        FOR v_target IN SELECT jsonb_array_elements_text(pr.body -> 'target_ids')
        LOOP
            v_version := trovesnap.apply_item_action(pr, v_target);
            v_results := v_results || jsonb_build_array(jsonb_build_object('target_id', v_target, 'outcome', 'applied',
                                                                           'new_version', v_version));
        END LOOP;
        v_related := v_related || jsonb_build_object('item_ids', pr.body -> 'target_ids');
    WHEN 'buyer_notification' THEN
        PERFORM trovesnap.notify_matched_buyers(pr);
        v_results := jsonb_build_array(jsonb_build_object('target_id', pr.body -> 'target_ids' ->> 0, 'outcome', 'queued',
                                                          'new_version', NULL));
    WHEN 'export_delivery' THEN
        PERFORM trovesnap.deliver_export(pr);
        SELECT jsonb_agg(jsonb_build_object('target_id', ev ->> 'id', 'outcome', 'queued', 'new_version', NULL) ORDER BY n)
        INTO v_results FROM jsonb_array_elements(pr.body -> 'expected_versions') WITH ORDINALITY AS x(ev, n);
        v_related := v_related || jsonb_build_object('item_ids', coalesce((
            SELECT jsonb_agg(ev ->> 'id' ORDER BY n) FROM jsonb_array_elements(pr.body -> 'expected_versions') WITH ORDINALITY AS x(ev, n)
            WHERE n > 1), '[]'::jsonb));
    ELSE
        PERFORM trovesnap.fail('transition_invalid', format('%s is not executed in live mode', pr.action));
    END CASE;
    UPDATE trovesnap.proposals SET status = 'executed', executed_at = v_now WHERE id = pr.id;

    v_result := jsonb_build_object('proposal_id', pr.id, 'executed', true, 'simulated', false,
        'domain_function', v_tool[3], 'results', v_results,
        'approval', jsonb_build_object('decision', coalesce(p_auth ->> 'decision', ''), 'approval_id', v_used,
                                       'policy_id', nullif(v_pol_id, '')));
    IF v_item IS NOT NULL THEN
        v_result := v_result || jsonb_build_object('created_item_ids', jsonb_build_array(v_item));
    END IF;
    RETURN trovesnap.finish_write(p, p_tool, p_tool_major, p_key, p_fingerprint, v_event, p_started_at, v_result, v_related);
END
$$;

SELECT trovesnap.revoke_execute(ARRAY['promote_media_candidate']);

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (43, '20261203133000_trovesnap_media_promotion');

RESET ROLE;
