-- trovesnap live mode, migration 40: sale day (issue 16, part 4).
--
-- The checkout role proposes status changes of items of its assigned sales
-- and records checkout scans; a seller may let a bounded policy authorise
-- holds so the checkout line does not wait on a person. The rules are Go's
-- (internal/domain/checkout.go); the lookups they need are generated from
-- it (checkout_transition, checkout_scan_status, checkout_scans,
-- policy_checkout_scans, proposal_perms: the generated domain-rules
-- migration that follows this one). Each function below is its latest body
-- with only what this part changes:
--
--  * checkout_scans: one row per executed scan (item, tag, scan, proposal,
--    who, when), append-only, under the tenant's row level security. No
--    column holds an amount or a payment: a scan is an item-status
--    operation.
--  * mcp_proposal_state and mcp_create_proposal ask for the proposing
--    permissions of the action (proposal_perms: proposal.create, or
--    item.update_status for a status change, checkout.scan for a scan)
--    instead of proposal.create; a status change by a role without
--    proposal.create is a checkout transition from the item's status
--    (checkout_transition) that reviews no imported status
--    (domain.BuildStatusTransition); a record_checkout_scan proposal is
--    checked as domain.BuildCheckoutScan builds it, and derive_proposal
--    derives it.
--  * mcp_execute_proposal runs record_checkout_scan through
--    apply_item_action → record_checkout_scan: the status event (source
--    checkout_scan, append_inventory_status_event) and the scan's row, in
--    the execution's one transaction.
--  * seller_validate_policy and seller_create_policy: a policy naming
--    trove_record_checkout_scan lists the scans it authorises in
--    conditions.checkout_scans, only those policy_checkout_scans allows (a
--    hold); no other policy lists any (domain.CheckoutPolicyRefusal).
--    policy_refusal authorises a scan only if the policy lists it (after
--    the §18.2 sale-completion refusal, which a sold or pending-pickup scan
--    meets first).

SET ROLE trovesnap_owner;

CREATE TABLE trovesnap.checkout_scans (
    id          text COLLATE "C" PRIMARY KEY CHECK (id <> ''),
    tenant_id   text COLLATE "C" NOT NULL,
    item_id     text COLLATE "C" NOT NULL,
    qr_code     text NOT NULL DEFAULT '',
    scan        text NOT NULL CHECK (scan IN ('hold', 'sold_pending_pickup', 'picked_up')),
    proposal_id text COLLATE "C" NOT NULL,
    scanned_by  text COLLATE "C" NOT NULL,
    scanned_at  timestamptz NOT NULL,
    FOREIGN KEY (tenant_id, item_id) REFERENCES trovesnap.items (tenant_id, id),
    FOREIGN KEY (tenant_id, proposal_id) REFERENCES trovesnap.proposals (tenant_id, id)
);
CREATE INDEX checkout_scans_item ON trovesnap.checkout_scans (tenant_id, item_id);
CREATE TRIGGER checkout_scans_append_only BEFORE UPDATE OR DELETE ON trovesnap.checkout_scans
    FOR EACH ROW EXECUTE FUNCTION trovesnap.refuse_change();
SELECT trovesnap.tenant_rls(ARRAY['checkout_scans']);

-- append_inventory_status_event as in migration 10, plus: a checkout scan
-- is its own source (checkout_scan).

CREATE OR REPLACE FUNCTION trovesnap.append_inventory_status_event(pr trovesnap.proposals, i trovesnap.items, p_to text,
                                                        p_effective_at text, p_source text) RETURNS integer
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_now timestamptz := now();
    v_eff timestamptz := now();
BEGIN
    IF p_to IS NULL OR NOT trovesnap.can_transition(i.status, p_to) THEN
        PERFORM trovesnap.fail('transition_invalid', format('item %s cannot go from %s to %s', i.id, i.status, left(coalesce(p_to, ''), 30)));
    END IF;
    -- An RFC 3339 instant, else now (like the store's time.Parse fallback).
    IF coalesce(p_effective_at, '') ~ '^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$' THEN
        BEGIN
            v_eff := p_effective_at::timestamptz;
        EXCEPTION WHEN others THEN
            v_eff := v_now;
        END;
    END IF;
    UPDATE trovesnap.items SET status = p_to, version = version + 1, updated_at = v_now
    WHERE tenant_id = pr.tenant_id AND id = i.id;
    INSERT INTO trovesnap.item_status_events (id, tenant_id, item_id, sale_id, from_status, to_status, effective_at,
                                              source_type, actor_id, proposal_id, recorded_at)
    VALUES (trovesnap.new_id('status'), pr.tenant_id, i.id, i.sale_id, i.status, p_to, v_eff,
            CASE WHEN coalesce(p_source, '') LIKE 'imported:%' THEN 'status_import'
                 WHEN p_source = 'checkout_scan' THEN 'checkout_scan' ELSE 'proposal' END,
            pr.requested_by_actor, pr.id, v_now);
    RETURN i.version + 1;
END
$$;

-- record_checkout_scan moves the item to the status its scan records
-- (checkout_scan_status; the lifecycle refuses what it does not allow),
-- appends the status event with source checkout_scan and records the scan
-- with the tag the item carries (store: recordCheckoutScan). Never a
-- payment or a price.
CREATE FUNCTION trovesnap.record_checkout_scan(pr trovesnap.proposals, i trovesnap.items, p_changes jsonb) RETURNS integer
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_scan text := CASE WHEN jsonb_typeof(p_changes -> 'checkout_scan') = 'string' THEN p_changes ->> 'checkout_scan' END;
    v_to   text := trovesnap.checkout_scan_status(v_scan);
    v      integer;
BEGIN
    IF v_to IS NULL OR p_changes ->> 'status' IS DISTINCT FROM v_to THEN
        PERFORM trovesnap.fail('transition_invalid', format('proposal %s records no checkout scan of %s', pr.id, i.id));
    END IF;
    v := trovesnap.append_inventory_status_event(pr, i, v_to, '', 'checkout_scan');
    INSERT INTO trovesnap.checkout_scans (id, tenant_id, item_id, qr_code, scan, proposal_id, scanned_by, scanned_at)
    VALUES (trovesnap.new_id('scan'), pr.tenant_id, i.id, coalesce(i.qr_code, ''), v_scan, pr.id, pr.requested_by_actor, now());
    RETURN v;
END
$$;

-- apply_item_action as in migration 10, plus record_checkout_scan.

CREATE OR REPLACE FUNCTION trovesnap.apply_item_action(pr trovesnap.proposals, p_item_id text) RETURNS integer
    LANGUAGE plpgsql
    AS $$
DECLARE
    i  trovesnap.items;
    ch jsonb;
BEGIN
    SELECT * INTO i FROM trovesnap.items it WHERE it.tenant_id = pr.tenant_id AND it.id = p_item_id FOR UPDATE;
    IF NOT FOUND THEN
        PERFORM trovesnap.fail('invalid_reference:item_id', jsonb_build_object('id', p_item_id, 'cross_tenant', false)::text);
    END IF;
    SELECT coalesce(jsonb_object_agg(x.ch ->> 'field', x.ch -> 'to' ORDER BY x.n), '{}') INTO ch
    FROM jsonb_array_elements(pr.body -> 'changes') WITH ORDINALITY AS x(ch, n)
    WHERE x.ch ->> 'target_id' = p_item_id;
    CASE pr.action
    WHEN 'status_transition', 'archive_item' THEN
        RETURN trovesnap.append_inventory_status_event(pr, i, ch ->> 'status', coalesce(ch ->> 'effective_at', ''),
            CASE WHEN jsonb_typeof(ch -> 'source') = 'string' THEN ch ->> 'source' ELSE 'seller_confirmed' END);
    WHEN 'bulk_item_update' THEN
        RETURN trovesnap.update_item_fields(pr, i, ch);
    WHEN 'bind_identity', 'release_identity' THEN
        RETURN trovesnap.set_item_identity(pr, i, CASE WHEN jsonb_typeof(ch -> 'qr_code') = 'string' THEN ch ->> 'qr_code' ELSE '' END);
    WHEN 'disposition_action' THEN
        RETURN trovesnap.apply_disposition_action(pr, i, ch);
    WHEN 'record_checkout_scan' THEN
        RETURN trovesnap.record_checkout_scan(pr, i, ch);
    ELSE
        PERFORM trovesnap.fail('transition_invalid', format('%s is not an item action', pr.action));
    END CASE;
    RETURN NULL;
END
$$;

-- check_checkout_proposal: what mcp_create_proposal re-verifies of a
-- status change or a checkout scan beyond check_item_proposal, after the
-- targets' references, assignment and versions, as domain's builders
-- refuse it. A status change by a role without proposal.create (checkout)
-- is a checkout transition from the item's status and reviews no imported
-- status (permission_denied); a scan is one of checkout_scans, recorded by
-- checkout.scan, moving the item to the status it records as the lifecycle
-- allows, with at most a note besides.
CREATE FUNCTION trovesnap.check_checkout_proposal(p trovesnap.principal, p_action text, p_ids text[], p_changes jsonb) RETURNS void
    LANGUAGE plpgsql
    AS $$
DECLARE
    i       trovesnap.items;
    v_to    text;
    v_scan  text;
BEGIN
    IF jsonb_typeof(p_changes) IS DISTINCT FROM 'array' THEN
        PERFORM trovesnap.fail('invalid_input:changes', 'the exact changes of the proposal');
    END IF;
    IF cardinality(p_ids) <> 1 THEN
        PERFORM trovesnap.fail('invalid_input:item_id', 'one item per proposal of this action');
    END IF;
    SELECT * INTO i FROM trovesnap.items it WHERE it.id = p_ids[1];
    IF p_action <> 'record_checkout_scan' THEN
        -- A status change (archive_item or status_transition).
        IF trovesnap.has_perm(p.role, 'proposal.create') THEN
            RETURN;
        END IF;
        v_to := trovesnap.change_value(p_changes, i.id, 'status') #>> '{}';
        IF v_to IS NULL OR v_to = 'published' THEN
            RETURN; -- check_item_proposal refuses it as the builder does
        END IF;
        IF NOT trovesnap.has_perm(p.role, 'item.update_status') THEN
            PERFORM trovesnap.fail('permission_denied:item.update_status');
        END IF;
        IF trovesnap.change_value(p_changes, i.id, 'source') IS NOT NULL THEN
            PERFORM trovesnap.fail('permission_denied:proposal.create');
        END IF;
        IF NOT trovesnap.checkout_transition(i.status, v_to) THEN
            PERFORM trovesnap.fail('permission_denied:proposal.create');
        END IF;
        RETURN;
    END IF;
    -- record_checkout_scan (domain.BuildCheckoutScan)
    IF NOT trovesnap.has_perm(p.role, 'checkout.scan') THEN
        PERFORM trovesnap.fail('permission_denied:checkout.scan');
    END IF;
    IF EXISTS (SELECT 1 FROM jsonb_array_elements(p_changes) c
               WHERE jsonb_typeof(c) IS DISTINCT FROM 'object' OR c ->> 'target_id' IS DISTINCT FROM i.id
                  OR NOT (c ->> 'field' = ANY (ARRAY['checkout_scan', 'status', 'note']))) THEN
        PERFORM trovesnap.fail('invalid_input:changes', 'a checkout scan changes its item''s status and records the scan');
    END IF;
    IF length(coalesce(trovesnap.change_value(p_changes, i.id, 'note') #>> '{}', '')) > trovesnap.checkout_note_max() THEN
        PERFORM trovesnap.fail('invalid_input:note', format('at most %s characters', trovesnap.checkout_note_max()));
    END IF;
    v_scan := trovesnap.change_value(p_changes, i.id, 'checkout_scan') #>> '{}';
    v_to := trovesnap.checkout_scan_status(v_scan);
    IF v_to IS NULL THEN
        PERFORM trovesnap.fail('invalid_input:scan', array_to_string(trovesnap.checkout_scans(), ', '));
    END IF;
    IF NOT trovesnap.can_transition(i.status, v_to) THEN
        PERFORM trovesnap.fail('transition_invalid', format('item %s is %s: a %s scan cannot move it to %s', i.id, i.status, v_scan, v_to));
    END IF;
END
$$;

-- proposal_access: the access a proposal of p_action needs: the
-- action_proposal group (or tenant_read, p_read) and one of the proposing
-- permissions of the action (proposal_perms, generated from
-- domain.ProposalPermissions).
CREATE FUNCTION trovesnap.proposal_access(p trovesnap.principal, p_action text, p_read boolean) RETURNS void
    LANGUAGE plpgsql STABLE
    AS $$
BEGIN
    PERFORM trovesnap.require_any_access(p, CASE WHEN p_read THEN ARRAY['action_proposal', 'tenant_read'] ELSE ARRAY['action_proposal'] END,
                                         coalesce(trovesnap.proposal_perms(p_action), ARRAY['proposal.create']));
END
$$;

-- mcp_proposal_state as in migration 39, plus: the
-- action's proposing permissions (proposal_access), and a checkout scan
-- reads its item target.

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

-- derive_proposal as in migration 39, plus record_checkout_scan
-- (domain.BuildCheckoutScan).

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

-- mcp_create_proposal as in migration 39, plus: the action's proposing
-- permissions (proposal_access); a status change or checkout scan checked
-- as domain builds it (check_checkout_proposal).

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
        IF c.kind <> 'new_item' THEN
            PERFORM trovesnap.fail('candidate_required', format('candidate %s is a %s candidate', v_target, c.kind));
        END IF;
        IF c.review_status NOT IN ('needs_review', 'approved') THEN
            PERFORM trovesnap.fail('transition_invalid', format('candidate %s is %s and cannot be promoted', v_target, c.review_status));
        END IF;
        -- Exactly one change per create_item field, and the sale is the
        -- candidate's: no duplicate a later reader could take instead.
        IF (SELECT count(*) FROM jsonb_array_elements(p_proposal -> 'changes') ch
            WHERE ch ->> 'target_id' = v_target AND ch ->> 'field' = 'create_item.sale_id' AND ch ->> 'to' = c.sale_id) <> 1
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

-- mcp_execute_proposal as in migration 33, plus record_checkout_scan, an
-- item action.

CREATE OR REPLACE FUNCTION trovesnap.mcp_execute_proposal(p_credential_hash text, p_tool text, p_tool_major integer, p_key text,
                                            p_fingerprint text, p_event jsonb, p_started_at timestamptz,
                                            p_proposal_id text, p_auth jsonb) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
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
        v_item := trovesnap.promote_inventory_candidate(pr);
        v_results := jsonb_build_array(
            jsonb_build_object('target_id', v_target, 'outcome', 'applied', 'new_version', NULL),
            jsonb_build_object('target_id', v_item, 'outcome', 'applied', 'new_version', 1));
        v_related := v_related || jsonb_build_object('candidate_ids', jsonb_build_array(v_target),
                                                     'item_ids', jsonb_build_array(v_item));
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

-- policy_refusal as in migration 33, plus: a checkout scan only if the
-- policy lists it (domain.PolicyContentRefusal).

CREATE OR REPLACE FUNCTION trovesnap.policy_refusal(pol trovesnap.automation_policies, pr trovesnap.proposals) RETURNS text
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    v_scope   jsonb := pol.body -> 'scope' -> 'estate_sale_ids';
    v_fields  jsonb := pol.body -> 'conditions' -> 'permitted_fields';
    v_targets jsonb := pr.body -> 'target_ids';
    v_sales   jsonb := pr.body -> 'sale_ids';
    v_changes jsonb := pr.body -> 'changes';
    v_warns   jsonb := pr.body -> 'validation' -> 'warnings';
    v_max     integer;
    v_maxj    jsonb := pol.body -> 'conditions' -> 'maximum_items_per_run';
    v_now     jsonb;
    v_n       integer;
    v_cost    numeric;
    v_cat     text;
    v_sale    text;
    c         jsonb;
BEGIN
    -- A missing or malformed list is an empty one, as in Go.
    v_scope := CASE WHEN jsonb_typeof(v_scope) = 'array' THEN v_scope ELSE '[]' END;
    v_fields := CASE WHEN jsonb_typeof(v_fields) = 'array' THEN v_fields ELSE '[]' END;
    v_targets := CASE WHEN jsonb_typeof(v_targets) = 'array' THEN v_targets ELSE '[]' END;
    v_sales := CASE WHEN jsonb_typeof(v_sales) = 'array' THEN v_sales ELSE '[]' END;
    v_changes := CASE WHEN jsonb_typeof(v_changes) = 'array' THEN v_changes ELSE '[]' END;
    v_warns := CASE WHEN jsonb_typeof(v_warns) = 'array' THEN v_warns ELSE '[]' END;
    v_n := jsonb_array_length(v_targets);
    v_cost := CASE WHEN jsonb_typeof(pr.body -> 'impact' -> 'estimated_cost_usd') = 'number'
                   THEN (pr.body -> 'impact' ->> 'estimated_cost_usd')::numeric ELSE 0 END;

    IF now() >= pr.expires_at THEN
        RETURN 'proposal expired';
    END IF;
    -- §18.2: what no policy authorises, by action and by content.
    v_cat := trovesnap.policy_human_only(pr.action);
    IF v_cat IS NOT NULL THEN
        RETURN v_cat || ' is never authorised by a policy';
    END IF;
    IF coalesce(pr.body ->> 'approval_requirement', '') <> 'human_or_policy' THEN
        RETURN 'the tool requires explicit human approval';
    END IF;
    IF v_cost > 0 THEN
        RETURN 'paid work is never authorised by a policy';
    END IF;
    IF v_n > trovesnap.broad_bulk_limit() THEN
        RETURN format('more than %s targets is a broad bulk change', trovesnap.broad_bulk_limit());
    END IF;
    FOR c IN SELECT x.e FROM jsonb_array_elements(v_changes) WITH ORDINALITY AS x(e, n) ORDER BY x.n
    LOOP
        IF c ->> 'field' = ANY (trovesnap.financial_fields()) THEN
            RETURN 'financial changes are never authorised by a policy';
        END IF;
        IF c ->> 'field' = 'status' AND jsonb_typeof(c -> 'to') = 'string'
           AND c ->> 'to' = ANY (trovesnap.sale_completion_statuses()) THEN
            RETURN 'sale completion is never authorised by a policy';
        END IF;
    END LOOP;

    -- The policy's scope and conditions.
    IF jsonb_array_length(v_scope) = 0 THEN
        RETURN 'policy has no sale scope';
    END IF;
    IF jsonb_array_length(v_sales) = 0 THEN
        RETURN 'proposal targets no sale';
    END IF;
    FOR v_sale IN SELECT x.e FROM jsonb_array_elements_text(v_sales) WITH ORDINALITY AS x(e, n) ORDER BY x.n
    LOOP
        IF NOT v_scope @> jsonb_build_array(v_sale) THEN
            RETURN 'target outside the policy''s sales: ' || v_sale;
        END IF;
    END LOOP;
    -- A count of items is a whole number (Go's int): a fractional or
    -- out-of-range value (only a superuser can store one: the seller RPCs
    -- refuse it) is a malformed policy, refused, never cast into an error.
    IF jsonb_typeof(v_maxj) = 'number' AND (v_maxj::text::numeric <> trunc(v_maxj::text::numeric)
                                            OR abs(v_maxj::text::numeric) > 2147483647) THEN
        RETURN 'policy is malformed: maximum_items_per_run ' || v_maxj::text || ' is not a whole number of items';
    END IF;
    v_max := CASE WHEN jsonb_typeof(v_maxj) = 'number' THEN v_maxj::text::numeric::integer ELSE 0 END;
    IF v_max <= 0 OR v_n > v_max THEN
        RETURN format('%s targets exceed the policy''s %s per run', v_n, v_max);
    END IF;
    FOR c IN SELECT x.e FROM jsonb_array_elements(v_changes) WITH ORDINALITY AS x(e, n) ORDER BY x.n
    LOOP
        IF NOT v_fields @> jsonb_build_array(coalesce(c ->> 'field', '')) THEN
            RETURN 'field not permitted by the policy: ' || coalesce(c ->> 'field', '');
        END IF;
    END LOOP;
    IF pr.action = 'record_checkout_scan' THEN
        FOR c IN SELECT x.e FROM jsonb_array_elements(v_changes) WITH ORDINALITY AS x(e, n) ORDER BY x.n
        LOOP
            IF c ->> 'field' = 'checkout_scan' AND NOT (
                   jsonb_typeof(pol.body -> 'conditions' -> 'checkout_scans') = 'array'
                   AND pol.body -> 'conditions' -> 'checkout_scans' @> jsonb_build_array(coalesce(c ->> 'to', ''))) THEN
                RETURN 'checkout scan not permitted by the policy: ' || coalesce(c ->> 'to', '');
            END IF;
        END LOOP;
    END IF;
    IF pol.body -> 'conditions' -> 'require_no_conflicts' = 'true'::jsonb THEN
        -- Judged on the stored validation AND on the one derived again from
        -- the current rows (migration 32): neither a stored body nor a state
        -- that changed since can hide a conflict.
        v_now := trovesnap.derive_proposal(pr.body) -> 'validation';
        IF coalesce(pr.body -> 'validation' ->> 'status', '') <> 'valid' OR jsonb_array_length(v_warns) > 0
           OR coalesce(v_now ->> 'status', '') <> 'valid'
           OR jsonb_typeof(v_now -> 'warnings') IS DISTINCT FROM 'array' OR jsonb_array_length(v_now -> 'warnings') > 0 THEN
            RETURN 'policy requires a proposal without conflicts or warnings';
        END IF;
    END IF;
    RETURN NULL;
END
$$;

-- seller_validate_policy as in migration 26, plus
-- domain.CheckoutPolicyRefusal: conditions.checkout_scans is listed by a
-- policy naming trove_record_checkout_scan, and only by one, with only the
-- scans a policy may authorise.

CREATE OR REPLACE FUNCTION trovesnap.seller_validate_policy(p_policy jsonb) RETURNS void
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_tools  jsonb := p_policy -> 'allowed_tools';
    v_sales  jsonb := p_policy -> 'scope' -> 'estate_sale_ids';
    v_fields jsonb := p_policy -> 'conditions' -> 'permitted_fields';
    v_scans  jsonb := p_policy -> 'conditions' -> 'checkout_scans';
    v_max    numeric;
    v_daily  numeric;
    v_cost   numeric;
    v        text;
BEGIN
    IF jsonb_typeof(p_policy) IS DISTINCT FROM 'object' THEN
        PERFORM trovesnap.fail('invalid_input:policy', 'an object is required');
    END IF;
    IF coalesce(p_policy ->> 'name', '') = '' OR length(p_policy ->> 'name') > trovesnap.policy_name_max() THEN
        PERFORM trovesnap.fail('invalid_input:name', format('required, at most %s characters', trovesnap.policy_name_max()));
    END IF;
    IF jsonb_typeof(v_tools) IS DISTINCT FROM 'array' OR jsonb_array_length(v_tools) = 0 THEN
        PERFORM trovesnap.fail('invalid_input:allowed_tools', 'name at least one controlled tool');
    END IF;
    IF jsonb_typeof(v_sales) IS DISTINCT FROM 'array' OR jsonb_array_length(v_sales) = 0 THEN
        PERFORM trovesnap.fail('invalid_input:scope.estate_sale_ids', 'a policy must be scoped to named sales');
    END IF;
    IF jsonb_typeof(p_policy -> 'conditions' -> 'maximum_items_per_run') IS DISTINCT FROM 'number' THEN
        PERFORM trovesnap.fail('invalid_input:conditions.maximum_items_per_run', format('between 1 and %s', trovesnap.broad_bulk_limit()));
    END IF;
    v_max := (p_policy -> 'conditions' ->> 'maximum_items_per_run')::numeric;
    IF v_max < 1 OR v_max > trovesnap.broad_bulk_limit() OR v_max <> trunc(v_max) THEN
        PERFORM trovesnap.fail('invalid_input:conditions.maximum_items_per_run', format('between 1 and %s', trovesnap.broad_bulk_limit()));
    END IF;
    IF jsonb_typeof(v_fields) IS DISTINCT FROM 'array' OR jsonb_array_length(v_fields) = 0 THEN
        PERFORM trovesnap.fail('invalid_input:conditions.permitted_fields', 'name the fields the policy may change');
    END IF;
    IF jsonb_typeof(p_policy -> 'limits' -> 'maximum_daily_actions') IS DISTINCT FROM 'number' THEN
        PERFORM trovesnap.fail('invalid_input:limits.maximum_daily_actions', 'at least 1');
    END IF;
    v_daily := (p_policy -> 'limits' ->> 'maximum_daily_actions')::numeric;
    IF v_daily < 1 OR v_daily <> trunc(v_daily) THEN
        PERFORM trovesnap.fail('invalid_input:limits.maximum_daily_actions', 'at least 1');
    END IF;
    IF jsonb_typeof(p_policy -> 'conditions' -> 'require_no_conflicts') NOT IN ('boolean', 'null') THEN
        PERFORM trovesnap.fail('invalid_input:conditions.require_no_conflicts', 'true or false');
    END IF;
    IF jsonb_typeof(p_policy -> 'limits' -> 'maximum_cost_usd_per_day') NOT IN ('number', 'null') THEN
        PERFORM trovesnap.fail('invalid_input:limits.maximum_cost_usd_per_day', 'policies never authorise paid work: must be 0');
    END IF;
    v_cost := coalesce((p_policy -> 'limits' ->> 'maximum_cost_usd_per_day')::numeric, 0);
    IF v_cost <> 0 THEN
        PERFORM trovesnap.fail('invalid_input:limits.maximum_cost_usd_per_day', 'policies never authorise paid work: must be 0');
    END IF;
    FOR v IN SELECT x FROM jsonb_array_elements_text(v_tools) x
    LOOP
        IF NOT trovesnap.policy_may(v) THEN
            PERFORM trovesnap.fail('invalid_input:allowed_tools', left(v, 60) || ' can never be authorised by a policy');
        END IF;
    END LOOP;
    FOR v IN SELECT x FROM jsonb_array_elements_text(v_sales) x
    LOOP
        IF v !~ '^sale_[A-Za-z0-9]{1,40}$' THEN
            PERFORM trovesnap.fail('invalid_input:scope.estate_sale_ids', 'malformed sale id');
        END IF;
    END LOOP;
    FOR v IN SELECT x FROM jsonb_array_elements_text(v_fields) x
    LOOP
        IF v = '' OR length(v) > 100 THEN
            PERFORM trovesnap.fail('invalid_input:conditions.permitted_fields', 'a field name of at most 100 characters');
        END IF;
    END LOOP;
    IF jsonb_typeof(v_scans) NOT IN ('array', 'null') OR (jsonb_typeof(v_scans) = 'array'
       AND EXISTS (SELECT 1 FROM jsonb_array_elements(v_scans) e WHERE jsonb_typeof(e) <> 'string')) THEN
        PERFORM trovesnap.fail('invalid_input:conditions.checkout_scans', 'a list of scans');
    END IF;
    v_scans := CASE WHEN jsonb_typeof(v_scans) = 'array' THEN v_scans ELSE '[]' END;
    IF NOT (v_tools ? 'trove_record_checkout_scan') AND jsonb_array_length(v_scans) > 0 THEN
        PERFORM trovesnap.fail('invalid_input:conditions.checkout_scans',
            'only a policy naming trove_record_checkout_scan lists checkout scans');
    END IF;
    IF v_tools ? 'trove_record_checkout_scan' AND jsonb_array_length(v_scans) = 0 THEN
        PERFORM trovesnap.fail('invalid_input:conditions.checkout_scans',
            'a policy naming trove_record_checkout_scan lists the scans it authorises: '
            || array_to_string(trovesnap.policy_checkout_scans(), ', '));
    END IF;
    FOR v IN SELECT x FROM jsonb_array_elements_text(v_scans) WITH ORDINALITY AS s(x, n) ORDER BY n
    LOOP
        IF NOT (v = ANY (trovesnap.policy_checkout_scans())) THEN
            PERFORM trovesnap.fail('invalid_input:conditions.checkout_scans',
                left(v, 40) || ' is never authorised by a policy: only ' || array_to_string(trovesnap.policy_checkout_scans(), ', '));
        END IF;
    END LOOP;
END
$$;

-- seller_create_policy as in migration 7, plus: the checkout scans a policy
-- lists are kept in its conditions (none: no key, as Go's omitempty).

CREATE OR REPLACE FUNCTION public.seller_create_policy(p_tenant_id text, p_policy jsonb) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    s      trovesnap.seller_ctx;
    p      trovesnap.automation_policies;
    v_sale text;
    v_now  timestamptz := clock_timestamp();
BEGIN
    s := trovesnap.seller_enter(p_tenant_id, 'policy.manage');
    PERFORM trovesnap.seller_actor(s, p_policy ->> 'created_by');
    IF coalesce(p_policy ->> 'tenant_id', '') NOT IN ('', s.tenant_id) THEN
        PERFORM trovesnap.fail('invalid_input:tenant_id', 'the policy names another tenant than the call');
    END IF;
    PERFORM trovesnap.seller_validate_policy(p_policy);
    FOR v_sale IN SELECT x FROM jsonb_array_elements_text(p_policy -> 'scope' -> 'estate_sale_ids') x
    LOOP
        PERFORM trovesnap.check_ref('estate_sales', 'scope.estate_sale_ids', v_sale);
    END LOOP;
    INSERT INTO trovesnap.automation_policies (id, tenant_id, name, version, status, body, created_by, created_at, updated_at)
    VALUES (trovesnap.new_id('policy'), s.tenant_id, p_policy ->> 'name', 1, 'disabled',
            jsonb_build_object('allowed_tools', p_policy -> 'allowed_tools',
                'scope', jsonb_build_object('estate_sale_ids', p_policy -> 'scope' -> 'estate_sale_ids'),
                'conditions', jsonb_build_object(
                    'maximum_items_per_run', p_policy -> 'conditions' -> 'maximum_items_per_run',
                    'permitted_fields', p_policy -> 'conditions' -> 'permitted_fields',
                    'require_no_conflicts', coalesce((p_policy -> 'conditions' ->> 'require_no_conflicts')::boolean, false))
                    || CASE WHEN jsonb_typeof(p_policy -> 'conditions' -> 'checkout_scans') = 'array'
                                 AND jsonb_array_length(p_policy -> 'conditions' -> 'checkout_scans') > 0
                            THEN jsonb_build_object('checkout_scans', p_policy -> 'conditions' -> 'checkout_scans')
                            ELSE '{}'::jsonb END,
                'limits', jsonb_build_object(
                    'maximum_daily_actions', p_policy -> 'limits' -> 'maximum_daily_actions',
                    'maximum_cost_usd_per_day', 0)),
            s.user_id, v_now, v_now)
    RETURNING * INTO p;
    PERFORM trovesnap.seller_write_policy_version(s, p, 'policy_created');
    RETURN trovesnap.policy_json(p);
END
$$;

-- Nothing here is executable but by its owner.
SELECT trovesnap.revoke_execute(ARRAY['record_checkout_scan', 'check_checkout_proposal', 'proposal_access']);

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (40, '20261203120000_trovesnap_sale_day');

RESET ROLE;
