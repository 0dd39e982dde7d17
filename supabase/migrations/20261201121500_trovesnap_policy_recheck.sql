-- trovesnap live mode, migration 28: mcp_execute_proposal re-checks, on the
-- policy path, what the gate decides with approval.EvaluatePolicy
-- (domain.PolicyContentRefusal) — the policy's sale scope, items per run,
-- permitted fields and require_no_conflicts, the proposal not expired, and
-- the §18.2 categories judged on the proposal's content (financial fields,
-- sale completion, paid work, broad bulk). Before, a client calling the RPC
-- itself with p_auth naming a narrow policy could run any proposal of a tool
-- the policy allows (issue 15, finding 2): it moved a published item of one
-- sale to sold under a policy scoped to another sale for the field room.

SET ROLE trovesnap_owner;

-- policy_refusal: why pol does not authorise proposal pr now, with Go's
-- words (domain.PolicyContentRefusal, in the same order); NULL when it
-- does. Status, tenant, tools, version and daily limits are the caller's.
-- The lists and bounds are the generated lookups (migration 27).
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
    v_max := CASE WHEN jsonb_typeof(pol.body -> 'conditions' -> 'maximum_items_per_run') = 'number'
                  THEN (pol.body -> 'conditions' ->> 'maximum_items_per_run')::numeric::integer ELSE 0 END;

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
    IF v_max <= 0 OR v_n > v_max THEN
        RETURN format('%s targets exceed the policy''s %s per run', v_n, v_max);
    END IF;
    FOR c IN SELECT x.e FROM jsonb_array_elements(v_changes) WITH ORDINALITY AS x(e, n) ORDER BY x.n
    LOOP
        IF NOT v_fields @> jsonb_build_array(coalesce(c ->> 'field', '')) THEN
            RETURN 'field not permitted by the policy: ' || coalesce(c ->> 'field', '');
        END IF;
    END LOOP;
    IF pol.body -> 'conditions' -> 'require_no_conflicts' = 'true'::jsonb
       AND (coalesce(pr.body -> 'validation' ->> 'status', '') <> 'valid' OR jsonb_array_length(v_warns) > 0) THEN
        RETURN 'policy requires a proposal without conflicts or warnings';
    END IF;
    RETURN NULL;
END
$$;

-- mcp_execute_proposal as in migration 22, plus: on the policy path, the
-- policy must authorise the proposal's content (policy_refusal), refused
-- as approval_required, as the gate refuses it when no policy applies.
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
        -- What the gate decides (approval.EvaluatePolicy): scope, items per
        -- run, fields, conflicts and the §18.2 content categories.
        v_refusal := trovesnap.policy_refusal(pol, pr);
        IF v_refusal IS NOT NULL THEN
            PERFORM trovesnap.fail('approval_required',
                format('proposal %s is not authorised by policy %s: %s', pr.id, pol.id, v_refusal));
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

SELECT trovesnap.revoke_execute(ARRAY['policy_refusal']);

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (28, '20261201121500_trovesnap_policy_recheck');

RESET ROLE;
