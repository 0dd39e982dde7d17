-- trovesnap live mode, migration 22: the RPCs that held a copy of a domain
-- rule now call the lookup generated from internal/domain (migration 21,
-- internal/sqlgen), so the rule is written once, in Go. Each function is
-- its latest body with only that change; CHECK constraints on statuses
-- name the generated lists too.

SET ROLE trovesnap_owner;

-- mcp_execute_proposal as in migration 14; the permissions of the tool
-- come from tool_perms.
CREATE OR REPLACE FUNCTION public.mcp_execute_proposal(p_credential_hash text, p_tool text, p_tool_major integer, p_key text,
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
        PERFORM trovesnap.fail('invalid_reference:proposal_id',
            jsonb_build_object('id', p_proposal_id, 'cross_tenant', trovesnap.owner_of('proposals', p_proposal_id) IS NOT NULL)::text);
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
        v_usage := trovesnap.policy_usage(pol.id);
        v_cost := coalesce((pr.body -> 'impact' ->> 'estimated_cost_usd')::numeric, 0);
        IF (v_usage ->> 'actions_today')::integer + 1 > coalesce((pol.body -> 'limits' ->> 'maximum_daily_actions')::integer, 0)
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
            jsonb_build_object('maximum_items', coalesce((pol.body -> 'conditions' ->> 'maximum_items_per_run')::integer, 0),
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
    WHEN 'status_transition', 'archive_item', 'bulk_item_update', 'bind_identity', 'release_identity', 'disposition_action' THEN
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

-- seller_validate_policy as in migration 7; the tools a policy may ever
-- authorise come from policy_may (§18.2).
CREATE OR REPLACE FUNCTION trovesnap.seller_validate_policy(p_policy jsonb) RETURNS void
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_tools  jsonb := p_policy -> 'allowed_tools';
    v_sales  jsonb := p_policy -> 'scope' -> 'estate_sale_ids';
    v_fields jsonb := p_policy -> 'conditions' -> 'permitted_fields';
    v_max    numeric;
    v_daily  numeric;
    v_cost   numeric;
    v        text;
BEGIN
    IF jsonb_typeof(p_policy) IS DISTINCT FROM 'object' THEN
        PERFORM trovesnap.fail('invalid_input:policy', 'an object is required');
    END IF;
    IF coalesce(p_policy ->> 'name', '') = '' OR length(p_policy ->> 'name') > 100 THEN
        PERFORM trovesnap.fail('invalid_input:name', 'required, at most 100 characters');
    END IF;
    IF jsonb_typeof(v_tools) IS DISTINCT FROM 'array' OR jsonb_array_length(v_tools) = 0 THEN
        PERFORM trovesnap.fail('invalid_input:allowed_tools', 'name at least one controlled tool');
    END IF;
    IF jsonb_typeof(v_sales) IS DISTINCT FROM 'array' OR jsonb_array_length(v_sales) = 0 THEN
        PERFORM trovesnap.fail('invalid_input:scope.estate_sale_ids', 'a policy must be scoped to named sales');
    END IF;
    IF jsonb_typeof(p_policy -> 'conditions' -> 'maximum_items_per_run') IS DISTINCT FROM 'number' THEN
        PERFORM trovesnap.fail('invalid_input:conditions.maximum_items_per_run', 'between 1 and 20');
    END IF;
    v_max := (p_policy -> 'conditions' ->> 'maximum_items_per_run')::numeric;
    IF v_max < 1 OR v_max > 20 OR v_max <> trunc(v_max) THEN
        PERFORM trovesnap.fail('invalid_input:conditions.maximum_items_per_run', 'between 1 and 20');
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
END
$$;

-- mcp_list_sales as in migration 3; the statuses from sale_statuses.
CREATE OR REPLACE FUNCTION public.mcp_list_sales(p_credential_hash text, p_status text DEFAULT NULL, p_limit integer DEFAULT NULL,
                                      p_after_key text DEFAULT NULL, p_after_id text DEFAULT NULL) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    p       trovesnap.principal;
    v_limit integer;
    v_after timestamptz;
    v_rows  jsonb;
BEGIN
    p := trovesnap.enter(p_credential_hash, 'tenant_read', ARRAY['sale.read']);
    v_limit := trovesnap.page_limit(p_limit);
    PERFORM trovesnap.one_of('status', p_status, trovesnap.sale_statuses());
    v_after := trovesnap.after_key(p_after_key, p_after_id);
    SELECT coalesce(jsonb_agg(trovesnap.sale_json(s) ORDER BY s.starts_at, s.id), '[]') INTO v_rows
    FROM (SELECT * FROM trovesnap.estate_sales s
          WHERE (NOT p.sale_scoped OR s.id = ANY (p.assigned))
            AND (coalesce(p_status, '') = '' OR s.status = p_status)
            AND (v_after IS NULL OR (s.starts_at, s.id) > (v_after, p_after_id))
          ORDER BY s.starts_at, s.id
          LIMIT v_limit + 1) s;
    RETURN trovesnap.page(v_rows, v_limit, 'starts_at');
END
$$;

-- mcp_list_items as in migration 3; the statuses from item_statuses.
CREATE OR REPLACE FUNCTION public.mcp_list_items(p_credential_hash text, p_sale_id text DEFAULT NULL, p_status text DEFAULT NULL,
                                      p_room text DEFAULT NULL, p_category text DEFAULT NULL, p_limit integer DEFAULT NULL,
                                      p_after_key text DEFAULT NULL, p_after_id text DEFAULT NULL,
                                      p_include_photos boolean DEFAULT false,
                                      p_include_price_history boolean DEFAULT false) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    p       trovesnap.principal;
    v_limit integer;
    v_after timestamptz;
    v_rows  jsonb;
BEGIN
    p := trovesnap.enter(p_credential_hash, 'tenant_read', ARRAY['item.read', 'item.read_checkout']);
    PERFORM trovesnap.check_pricing(p, p_include_price_history);
    v_limit := trovesnap.page_limit(p_limit);
    PERFORM trovesnap.one_of('status', p_status, trovesnap.item_statuses());
    v_after := trovesnap.after_key(p_after_key, p_after_id);
    IF coalesce(p_sale_id, '') <> '' THEN
        PERFORM trovesnap.check_sale(p, p_sale_id);
    END IF;
    SELECT coalesce(jsonb_agg(trovesnap.item_detail_json(i, p_include_photos, p_include_price_history)
                              ORDER BY i.created_at, i.id), '[]') INTO v_rows
    FROM (SELECT * FROM trovesnap.items i
          WHERE (NOT p.sale_scoped OR i.sale_id = ANY (p.assigned))
            AND (coalesce(p_sale_id, '') = '' OR i.sale_id = p_sale_id)
            AND (coalesce(p_status, '') = '' OR i.status = p_status)
            AND (coalesce(p_room, '') = '' OR i.room = p_room)
            AND (coalesce(p_category, '') = '' OR i.category = p_category OR starts_with(i.category, p_category || '.'))
            AND (v_after IS NULL OR (i.created_at, i.id) > (v_after, p_after_id))
          ORDER BY i.created_at, i.id
          LIMIT v_limit + 1) i;
    RETURN trovesnap.page(v_rows, v_limit, 'created_at');
END
$$;

-- mcp_list_status_events as in migration 5; the statuses from item_statuses.
CREATE OR REPLACE FUNCTION public.mcp_list_status_events(p_credential_hash text, p_item_id text DEFAULT NULL,
                                              p_sale_id text DEFAULT NULL, p_to_status text DEFAULT NULL,
                                              p_limit integer DEFAULT NULL, p_after_key text DEFAULT NULL,
                                              p_after_id text DEFAULT NULL) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    p       trovesnap.principal;
    v_limit integer;
    v_after timestamptz;
    v_rows  jsonb;
BEGIN
    p := trovesnap.enter_read(p_credential_hash, ARRAY['item.read', 'item.read_checkout']);
    v_limit := trovesnap.page_limit(p_limit);
    PERFORM trovesnap.one_of('to_status', p_to_status, trovesnap.item_statuses());
    v_after := trovesnap.after_key(p_after_key, p_after_id);
    IF coalesce(p_item_id, '') <> '' THEN
        PERFORM trovesnap.visible_item(p, p_item_id);
    END IF;
    IF coalesce(p_sale_id, '') <> '' THEN
        PERFORM trovesnap.check_sale(p, p_sale_id);
    END IF;
    SELECT coalesce(jsonb_agg(jsonb_build_object('id', e.id, 'tenant_id', e.tenant_id, 'item_id', e.item_id,
               'sale_id', e.sale_id, 'from_status', e.from_status, 'to_status', e.to_status,
               'effective_at', trovesnap.ts(e.effective_at), 'source_type', e.source_type, 'actor_id', e.actor_id,
               'proposal_id', e.proposal_id, 'recorded_at', trovesnap.ts(e.recorded_at))
               ORDER BY e.effective_at DESC, e.id DESC), '[]') INTO v_rows
    FROM (SELECT * FROM trovesnap.item_status_events e
          WHERE (NOT p.sale_scoped OR e.sale_id = ANY (p.assigned))
            AND (coalesce(p_item_id, '') = '' OR e.item_id = p_item_id)
            AND (coalesce(p_sale_id, '') = '' OR e.sale_id = p_sale_id)
            AND (coalesce(p_to_status, '') = '' OR e.to_status = p_to_status)
            AND (v_after IS NULL OR (e.effective_at, e.id) < (v_after, p_after_id))
          ORDER BY e.effective_at DESC, e.id DESC
          LIMIT v_limit + 1) e;
    RETURN trovesnap.page(v_rows, v_limit, 'effective_at');
END
$$;

-- seller_list_proposals as in migration 7; the statuses from proposal_statuses.
CREATE OR REPLACE FUNCTION public.seller_list_proposals(p_tenant_id text, p_status text DEFAULT NULL) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    s trovesnap.seller_ctx;
BEGIN
    s := trovesnap.seller_enter(p_tenant_id, 'proposal.read');
    PERFORM trovesnap.one_of('status', p_status, trovesnap.proposal_statuses());
    RETURN (SELECT coalesce(jsonb_agg(x.j ORDER BY x.created_at DESC, x.id DESC), '[]')
            FROM (SELECT p.id, p.created_at, trovesnap.seller_proposal_json(p) AS j FROM trovesnap.proposals p
                  WHERE p.tenant_id = s.tenant_id
                    AND (coalesce(p_status, '') = '' OR trovesnap.proposal_status(p) = p_status)
                  ORDER BY p.created_at DESC, p.id DESC
                  LIMIT 500) x);
END
$$;

-- The status CHECKs of the tables name the generated lists (the functions
-- are IMMUTABLE; a later rules migration that changes a list must
-- re-validate these constraints).
ALTER TABLE trovesnap.estate_sales DROP CONSTRAINT estate_sales_status_check,
    ADD CONSTRAINT estate_sales_status_check CHECK (status = ANY (trovesnap.sale_statuses()));
ALTER TABLE trovesnap.items DROP CONSTRAINT items_status_check,
    ADD CONSTRAINT items_status_check CHECK (status = ANY (trovesnap.item_statuses()));
ALTER TABLE trovesnap.item_status_events DROP CONSTRAINT item_status_events_from_status_check,
    ADD CONSTRAINT item_status_events_from_status_check CHECK (from_status = ANY (trovesnap.item_statuses())),
    DROP CONSTRAINT item_status_events_to_status_check,
    ADD CONSTRAINT item_status_events_to_status_check CHECK (to_status = ANY (trovesnap.item_statuses()));
ALTER TABLE trovesnap.proposals DROP CONSTRAINT proposals_status_check,
    ADD CONSTRAINT proposals_status_check CHECK (status = ANY (trovesnap.proposal_statuses()));

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (22, '20261201120900_trovesnap_domain_rules_callers');

RESET ROLE;
