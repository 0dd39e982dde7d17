-- A refusal never names a value the caller's role may not see (attack
-- review of issue 18): proposing to bind a tag to an item that already
-- carries one named that tag, and qr_code is outside the cataloger's and
-- the pricer's item projection. check_item_proposal, which
-- mcp_create_proposal re-verifies under the key's lock, says "already
-- carries another tag", as the Go builder (domain.BuildIdentity) does. The
-- function is otherwise unchanged from 20261130120600.
SET ROLE trovesnap_owner;

CREATE OR REPLACE FUNCTION trovesnap.check_item_proposal(p trovesnap.principal, p_action text, p_ids text[], p_changes jsonb) RETURNS void
    LANGUAGE plpgsql
    AS $$
DECLARE
    i      trovesnap.items;
    ch     jsonb;
    v_id   text;
    v_to   text;
    v_src  text;
    v_cand jsonb;
    v_perm text;
    v_act  text;
    v_num  numeric;
    v_any  boolean := false;
BEGIN
    IF jsonb_typeof(p_changes) IS DISTINCT FROM 'array' THEN
        PERFORM trovesnap.fail('invalid_input:changes', 'the exact changes of the proposal');
    END IF;
    IF EXISTS (SELECT 1 FROM jsonb_array_elements(p_changes) c
               WHERE jsonb_typeof(c) IS DISTINCT FROM 'object' OR NOT (c ->> 'target_id' = ANY (p_ids))) THEN
        PERFORM trovesnap.fail('invalid_input:changes', 'every change is of a target');
    END IF;
    IF p_action IN ('status_transition', 'archive_item', 'bind_identity', 'release_identity') AND cardinality(p_ids) <> 1 THEN
        PERFORM trovesnap.fail('invalid_input:item_id', 'one item per proposal of this action');
    END IF;
    CASE p_action
    WHEN 'status_transition', 'archive_item' THEN
        SELECT * INTO i FROM trovesnap.items it WHERE it.id = p_ids[1];
        v_to := trovesnap.change_value(p_changes, i.id, 'status') #>> '{}';
        IF v_to IS NULL THEN
            PERFORM trovesnap.fail('invalid_input:changes', 'a status change names its new status');
        ELSIF v_to = 'published' THEN
            PERFORM trovesnap.fail('invalid_input:to_status', 'publication has its own proposal (trove_propose_item_publication)');
        ELSIF (p_action = 'archive_item') <> (v_to = 'archived') THEN
            PERFORM trovesnap.fail('invalid_input:to_status', 'archiving is proposed as archive_item and needs an explicit human approval');
        ELSIF NOT trovesnap.can_transition(i.status, v_to) THEN
            PERFORM trovesnap.fail('transition_invalid', format('item %s cannot go from %s to %s', i.id, i.status, left(v_to, 30)));
        END IF;
        v_src := trovesnap.change_value(p_changes, i.id, 'source') #>> '{}';
        IF v_src IS NOT NULL THEN
            IF v_src !~ '^imported:candidate_[A-Za-z0-9]{1,40}$' THEN
                PERFORM trovesnap.fail('invalid_input:changes', 'an imported status names its candidate');
            END IF;
            v_cand := trovesnap.status_candidate_facts(substr(v_src, 10));
            IF NOT (v_cand ->> 'found')::boolean THEN
                PERFORM trovesnap.fail('invalid_reference:status_candidate_id',
                    jsonb_build_object('id', substr(v_src, 10), 'cross_tenant', false)::text);
            END IF;
            IF v_cand ->> 'kind' <> 'status_update' OR v_cand ->> 'review_status' <> 'approved' THEN
                PERFORM trovesnap.fail('candidate_required',
                    format('imported status %s must be approved with approve_status_import first', substr(v_src, 10)));
            END IF;
        END IF;
    WHEN 'bulk_item_update' THEN
        FOREACH v_id IN ARRAY p_ids
        LOOP
            SELECT * INTO i FROM trovesnap.items it WHERE it.id = v_id;
            IF i.status IN ('sold', 'archived', 'pending_pickup') THEN
                PERFORM trovesnap.fail('transition_invalid', format('item %s is %s and cannot be changed', i.id, i.status));
            END IF;
        END LOOP;
        FOR ch IN SELECT c FROM jsonb_array_elements(p_changes) c
        LOOP
            v_any := true;
            v_perm := trovesnap.bulk_field_perm(ch ->> 'field');
            IF v_perm IS NULL THEN
                PERFORM trovesnap.fail('invalid_input:changes', left(coalesce(ch ->> 'field', ''), 60) || ' cannot be changed by a bulk update');
            END IF;
            IF NOT trovesnap.has_perm(p.role, v_perm) THEN
                PERFORM trovesnap.fail('permission_denied:' || v_perm);
            END IF;
            IF ch ->> 'field' = 'price_cents' THEN
                IF jsonb_typeof(ch -> 'to') IS DISTINCT FROM 'number' THEN
                    PERFORM trovesnap.fail('invalid_input:changes', 'price_cents is a whole number of cents');
                END IF;
                v_num := (ch ->> 'to')::numeric;
                IF v_num < 0 OR v_num <> trunc(v_num) OR v_num > 9007199254740991 THEN
                    PERFORM trovesnap.fail('invalid_input:changes', 'price_cents is a whole number of cents');
                END IF;
            ELSIF jsonb_typeof(ch -> 'to') IS DISTINCT FROM 'string' THEN
                PERFORM trovesnap.fail('invalid_input:changes', (ch ->> 'field') || ' is text');
            END IF;
        END LOOP;
        IF NOT v_any THEN
            PERFORM trovesnap.fail('invalid_input:changes', 'name at least one field to change');
        END IF;
    WHEN 'bind_identity' THEN
        SELECT * INTO i FROM trovesnap.items it WHERE it.id = p_ids[1];
        v_to := trovesnap.change_value(p_changes, i.id, 'qr_code') #>> '{}';
        IF coalesce(v_to, '') = '' THEN
            PERFORM trovesnap.fail('invalid_input:qr_code', 'the tag to bind');
        ELSIF i.qr_code = v_to THEN
            PERFORM trovesnap.fail('transition_invalid', format('item %s already carries %s', i.id, left(v_to, 60)));
        ELSIF i.qr_code <> '' THEN
            PERFORM trovesnap.fail('transition_invalid', format('item %s already carries another tag: release it first', i.id));
        END IF;
        PERFORM trovesnap.require_tag_free(p.tenant_id, v_to, i.id);
    WHEN 'release_identity' THEN
        SELECT * INTO i FROM trovesnap.items it WHERE it.id = p_ids[1];
        v_src := trovesnap.change_value(p_changes, i.id, 'qr_code', 'from') #>> '{}';
        IF i.qr_code = '' OR i.qr_code IS DISTINCT FROM v_src
           OR (trovesnap.change_value(p_changes, i.id, 'qr_code') #>> '{}') IS DISTINCT FROM '' THEN
            PERFORM trovesnap.fail('transition_invalid', format('item %s does not carry %s', i.id, left(coalesce(v_src, ''), 60)));
        END IF;
    WHEN 'disposition_action' THEN
        FOREACH v_id IN ARRAY p_ids
        LOOP
            SELECT * INTO i FROM trovesnap.items it WHERE it.id = v_id;
            IF i.status IN ('sold', 'pending_pickup', 'archived') THEN
                PERFORM trovesnap.fail('transition_invalid', format('item %s is %s: only unsold items get a disposition', i.id, i.status));
            END IF;
            v_act := trovesnap.change_value(p_changes, i.id, 'disposition') #>> '{}';
            IF v_act IS NULL OR v_act NOT IN ('donate', 'consign', 'haul_away', 'return_to_family', 'buyout_offer') THEN
                PERFORM trovesnap.fail('invalid_input:action', 'donate, consign, haul_away, return_to_family or buyout_offer');
            END IF;
            IF (trovesnap.change_value(p_changes, i.id, 'status') #>> '{}') IS DISTINCT FROM
               (CASE v_act WHEN 'consign' THEN 'withdrawn' ELSE 'archived' END) THEN
                PERFORM trovesnap.fail('invalid_input:changes', 'a disposition archives the item (withdraws it when consigned)');
            END IF;
        END LOOP;
        FOR ch IN SELECT c FROM jsonb_array_elements(p_changes) c WHERE c ->> 'field' = 'offer_cents'
        LOOP
            IF v_act <> 'buyout_offer' THEN
                PERFORM trovesnap.fail('invalid_input:offer_cents', 'only with buyout_offer');
            END IF;
            IF jsonb_typeof(ch -> 'to') IS DISTINCT FROM 'number' OR (ch ->> 'to')::numeric < 0
               OR (ch ->> 'to')::numeric > 9007199254740991 THEN
                PERFORM trovesnap.fail('invalid_input:offer_cents', 'a non-negative number of cents');
            END IF;
        END LOOP;
    END CASE;
END
$$;

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (50, '20261206100000_trovesnap_tag_message');

RESET ROLE;
