-- Migration 45: a buyer notification's audience and channels are the
-- builder's lists (issue 16 attack, finding 9). derive_proposal took the
-- body's selection basis and channels as they were, so a token holder could
-- store a proposal whose plan carried any text (terminal control sequences
-- among it) for the seller's approval screen. It now derives them only
-- from domain.NotificationAudiences and NotificationChannels (generated as
-- notification_audiences and notification_channels by the domain-rules
-- migration after this one): a body naming anything else, or a channel
-- twice, differs from what the database derives and mcp_create_proposal
-- refuses it (invalid_input:proposal, notification). derive_proposal is
-- migration 43's body plus this.

SET ROLE trovesnap_owner;

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
        -- The audience and the channels are the builder's lists
        -- (domain.NotificationAudiences, NotificationChannels, generated):
        -- anything else derives nothing a body can match.
        IF NOT (v_aud = ANY (trovesnap.notification_audiences())) THEN
            v_aud := '';
        END IF;
        v_chan := p_body -> 'notification' -> 'channels';
        IF jsonb_typeof(v_chan) IS DISTINCT FROM 'array'
           OR EXISTS (SELECT 1 FROM jsonb_array_elements(v_chan) e WHERE jsonb_typeof(e) <> 'string')
           OR jsonb_array_length(v_chan) = 0
           OR EXISTS (SELECT 1 FROM jsonb_array_elements_text(v_chan) e WHERE NOT (e = ANY (trovesnap.notification_channels())))
           OR (SELECT count(DISTINCT e) FROM jsonb_array_elements_text(v_chan) e) <> jsonb_array_length(v_chan) THEN
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


INSERT INTO trovesnap.schema_migrations (version, name) VALUES (45, '20261203144000_trovesnap_notification_lists');

RESET ROLE;
