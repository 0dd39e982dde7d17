-- trovesnap live mode, migration 14 (issue 13, findings 4 and 9): grants
-- bound to the client and actor that asked, and the daily paid budgets
-- enforced. Mirrors the embedded store (store/execute.go, store/grants.go,
-- store/budget.go).
--
--  * A grant records the client and actor whose proposal it approves
--    (bound_client, bound_actor: the proposal's requester, part of the
--    grant's immutable binding). mcp_execute_proposal refuses
--    (approval_invalid) an execution by any client or actor but the
--    proposal's requester, whatever authorises it: a grant approves what one
--    agent asked for, and a policy covers proposals, never other clients.
--  * The §38 maximum_daily_paid_cost_usd of the client (its limits row, else
--    the tenant's, else 0) and of the tenant bind paid work: a proposal whose
--    cost would take either past its limit today is not stored (a trigger on
--    proposals, whatever RPC inserts it); an execution re-checks spent today
--    + its cost under the proposal's lock; seller_issue_grant refuses a grant
--    whose maximum cost exceeds either budget. Spent today is the estimated
--    cost of the proposals executed since the start of the UTC day.
--    Refusals are cost_limit_exceeded and change nothing.

SET ROLE trovesnap_owner;

-- The binding to the requester, recorded on every grant (old grants take
-- their proposal's requester).
ALTER TABLE trovesnap.approval_grants
    ADD COLUMN bound_client text COLLATE "C" NOT NULL DEFAULT '',
    ADD COLUMN bound_actor  text COLLATE "C" NOT NULL DEFAULT '';
UPDATE trovesnap.approval_grants g
SET bound_client = x.requested_by_client, bound_actor = x.requested_by_actor
FROM trovesnap.proposals x
WHERE x.id = g.proposal_id AND x.tenant_id = g.tenant_id;

CREATE OR REPLACE FUNCTION trovesnap.grant_binding_immutable() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF (NEW.id, NEW.tenant_id, NEW.proposal_id, NEW.proposal_hash, NEW.issuer_type, NEW.issuer_actor, NEW.issuer_surface,
        NEW.policy_id, NEW.policy_version, NEW.tool, NEW.target_ids, NEW.constraints, NEW.single_use, NEW.issued_at,
        NEW.expires_at, NEW.bound_client, NEW.bound_actor)
       IS DISTINCT FROM
       (OLD.id, OLD.tenant_id, OLD.proposal_id, OLD.proposal_hash, OLD.issuer_type, OLD.issuer_actor, OLD.issuer_surface,
        OLD.policy_id, OLD.policy_version, OLD.tool, OLD.target_ids, OLD.constraints, OLD.single_use, OLD.issued_at,
        OLD.expires_at, OLD.bound_client, OLD.bound_actor) THEN
        RAISE EXCEPTION USING ERRCODE = 'P0001', MESSAGE = 'trovesnap:immutable:approval_grants';
    END IF;
    RETURN NEW;
END
$$;

-- grant_json: a domain.Grant as stored, with its binding (bound_to).
CREATE OR REPLACE FUNCTION trovesnap.grant_json(g trovesnap.approval_grants) RETURNS jsonb
    LANGUAGE sql STABLE
    AS $$
        SELECT jsonb_build_object('id', g.id, 'tenant_id', g.tenant_id, 'proposal_id', g.proposal_id,
            'proposal_hash', g.proposal_hash,
            'issued_by', jsonb_strip_nulls(jsonb_build_object('type', g.issuer_type, 'actor_id', nullif(g.issuer_actor, ''),
                'surface', nullif(g.issuer_surface, ''), 'policy_id', nullif(g.policy_id, ''),
                'policy_version', nullif(g.policy_version, 0))),
            'tool', g.tool, 'target_ids', to_jsonb(g.target_ids), 'constraints', g.constraints,
            'bound_to', jsonb_build_object('client_id', g.bound_client, 'actor_id', g.bound_actor), 'status', g.status,
            'single_use', g.single_use, 'issued_at', trovesnap.ts(g.issued_at), 'expires_at', trovesnap.ts(g.expires_at),
            'consumed_at', trovesnap.ts(g.consumed_at), 'revoked_at', trovesnap.ts(g.revoked_at))
    $$;

-- daily_paid_budget: maximum_daily_paid_cost_usd of p_client_id (its own
-- row, else the tenant's) or, for p_client_id '', of the tenant; no row is
-- the §38 default, 0.
CREATE OR REPLACE FUNCTION trovesnap.daily_paid_budget(p_tenant_id text, p_client_id text) RETURNS numeric
    LANGUAGE sql STABLE
    AS $$
        SELECT coalesce((SELECT l.maximum_daily_paid_cost_usd FROM trovesnap.mcp_limits l
                         WHERE l.tenant_id = p_tenant_id AND l.client_id IN ('', p_client_id)
                         ORDER BY l.client_id DESC LIMIT 1), 0)
    $$;

-- paid_spent_today: the estimated cost of the proposals of p_tenant_id
-- executed since the start of the UTC day, requested (and so executed) by
-- p_client_id, or by the whole tenant for p_client_id ''.
CREATE OR REPLACE FUNCTION trovesnap.paid_spent_today(p_tenant_id text, p_client_id text) RETURNS numeric
    LANGUAGE sql STABLE
    AS $$
        SELECT coalesce(sum(coalesce((x.body -> 'impact' ->> 'estimated_cost_usd')::numeric, 0)), 0)
        FROM trovesnap.proposals x
        WHERE x.tenant_id = p_tenant_id AND x.status = 'executed'
          AND x.executed_at >= (date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')
          AND (p_client_id = '' OR x.requested_by_client = p_client_id)
    $$;

-- usd: an amount as the refusals show it.
CREATE OR REPLACE FUNCTION trovesnap.usd(p numeric) RETURNS text
    LANGUAGE sql IMMUTABLE
    AS $$ SELECT '$' || to_char(round(coalesce(p, 0), 2), 'FM999999999990.00') $$;

-- require_cost_budget refuses (cost_limit_exceeded) paid work of
-- p_client_id in p_tenant_id that would take the client's or the tenant's
-- daily paid budget past its limit: spent today + p_cost. With p_grant,
-- p_cost is a grant's maximum cost, refused when it exceeds a budget
-- itself (a grant never allows more than the seller's limits). Free work
-- is never refused.
CREATE OR REPLACE FUNCTION trovesnap.require_cost_budget(p_tenant_id text, p_client_id text, p_cost numeric,
                                                         p_grant boolean) RETURNS void
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_scope text;
    v_limit numeric;
    v_spent numeric;
BEGIN
    IF coalesce(p_cost, 0) <= 0 THEN
        RETURN;
    END IF;
    FOREACH v_scope IN ARRAY ARRAY['client', 'tenant']
    LOOP
        v_limit := trovesnap.daily_paid_budget(p_tenant_id, CASE v_scope WHEN 'client' THEN p_client_id ELSE '' END);
        IF p_grant THEN
            IF p_cost > v_limit THEN
                PERFORM trovesnap.fail('cost_limit_exceeded',
                    format('a grant of up to %s exceeds the %s''s daily paid budget of %s: raise the budget with `trovesnap limits set --paid-usd-per-day` first, or deny the proposal',
                           trovesnap.usd(p_cost), v_scope, trovesnap.usd(v_limit)));
            END IF;
        ELSE
            v_spent := trovesnap.paid_spent_today(p_tenant_id, CASE v_scope WHEN 'client' THEN p_client_id ELSE '' END);
            IF v_spent + p_cost > v_limit THEN
                PERFORM trovesnap.fail('cost_limit_exceeded',
                    format('%s would exceed the %s''s daily paid budget of %s (%s already spent today), only the seller can raise it',
                           trovesnap.usd(p_cost), v_scope, trovesnap.usd(v_limit), trovesnap.usd(v_spent)));
            END IF;
        END IF;
    END LOOP;
END
$$;

-- A proposal whose cost alone would exceed what is left of today's budgets
-- is never stored, whichever RPC inserts it.
CREATE OR REPLACE FUNCTION trovesnap.proposal_cost_budget() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    PERFORM trovesnap.require_cost_budget(NEW.tenant_id, NEW.requested_by_client,
        coalesce((NEW.body -> 'impact' ->> 'estimated_cost_usd')::numeric, 0), false);
    RETURN NEW;
END
$$;
CREATE TRIGGER proposals_cost_budget BEFORE INSERT ON trovesnap.proposals
    FOR EACH ROW EXECUTE FUNCTION trovesnap.proposal_cost_budget();

-- mcp_execute_proposal as in migration 6, plus: the caller must be the
-- proposal's requesting client and actor (approval_invalid), a grant's
-- recorded binding must be the caller's, a policy grant records the
-- binding, and the daily paid budgets are re-checked under the lock
-- (cost_limit_exceeded). Any refusal rolls back everything.
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
    -- The permissions of each tool (catalog/actions.go).
    v_perms := CASE p_tool
        WHEN 'trove_execute_candidate_promotion' THEN ARRAY['candidate.read', 'item.create_candidate']
        WHEN 'trove_publish_item' THEN ARRAY['item.publish']
        WHEN 'trove_publish_sale' THEN ARRAY['sale.publish']
        WHEN 'trove_update_item_status' THEN ARRAY['item.update_status']
        WHEN 'trove_archive_item' THEN ARRAY['item.update_status']
        WHEN 'trove_apply_bulk_item_update' THEN ARRAY['item.update_price']
        WHEN 'trove_bind_item_identity' THEN ARRAY['item.bind_identity']
        WHEN 'trove_release_item_identity' THEN ARRAY['item.bind_identity']
        WHEN 'trove_apply_disposition_action' THEN ARRAY['disposition.apply']
        WHEN 'trove_notify_matched_buyers' THEN ARRAY['buyer.notify']
        WHEN 'trove_deliver_export' THEN ARRAY['export.deliver'] END;
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

-- seller_issue_grant as in migration 7, plus: the grant records its
-- binding to the proposal's requester (a bound_to naming anyone else is
-- refused), and its maximum cost may not exceed the requesting client's or
-- the tenant's daily paid budget (cost_limit_exceeded).
CREATE OR REPLACE FUNCTION public.seller_issue_grant(p_tenant_id text, p_actor_id text, p_grant jsonb) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    v_now     timestamptz := now();
    s         trovesnap.seller_ctx;
    v_id      text;
    v_issued  timestamptz;
    v_expires timestamptz;
    pr        trovesnap.proposals;
    g         trovesnap.approval_grants;
BEGIN
    PERFORM trovesnap.begin_rpc('authenticated');
    IF jsonb_typeof(p_grant) IS DISTINCT FROM 'object' THEN
        PERFORM trovesnap.fail('invalid_input:grant', 'an object is required');
    END IF;
    IF p_grant -> 'issued_by' ->> 'type' IS DISTINCT FROM 'human' OR coalesce(p_grant -> 'issued_by' ->> 'actor_id', '') = ''
       OR coalesce(p_grant -> 'issued_by' ->> 'surface', '') = '' THEN
        PERFORM trovesnap.fail('invalid_input:issued_by', 'a human grant names its actor and surface');
    END IF;
    IF p_grant -> 'issued_by' ->> 'actor_id' <> coalesce(p_actor_id, '') OR coalesce(p_grant ->> 'tenant_id', '') <> coalesce(p_tenant_id, '') THEN
        PERFORM trovesnap.fail('permission_denied:actor_id', 'a seller session acts only as its signed-in user');
    END IF;
    s := trovesnap.approver_enter(p_tenant_id, p_actor_id);

    SELECT * INTO pr FROM trovesnap.proposals x WHERE x.id = p_grant ->> 'proposal_id' FOR UPDATE;
    IF NOT FOUND THEN
        PERFORM trovesnap.fail('invalid_reference:proposal_id',
            jsonb_build_object('id', coalesce(p_grant ->> 'proposal_id', ''), 'cross_tenant', false)::text);
    END IF;
    IF pr.proposal_hash IS DISTINCT FROM p_grant ->> 'proposal_hash' THEN
        PERFORM trovesnap.fail('proposal_changed', format('proposal %s changed', pr.id));
    ELSIF pr.status <> 'pending_approval' THEN
        PERFORM trovesnap.fail('transition_invalid', format('proposal %s is %s', pr.id, pr.status));
    ELSIF v_now >= pr.expires_at THEN
        PERFORM trovesnap.fail('approval_expired', format('proposal %s expired', pr.id));
    ELSIF p_grant ->> 'tool' IS DISTINCT FROM pr.tool_name THEN
        PERFORM trovesnap.fail('invalid_input:tool', 'a grant is for the proposal''s own tool');
    ELSIF (coalesce(p_grant -> 'bound_to' ->> 'client_id', '') <> '' OR coalesce(p_grant -> 'bound_to' ->> 'actor_id', '') <> '')
          AND (p_grant -> 'bound_to' ->> 'client_id' IS DISTINCT FROM pr.requested_by_client
               OR p_grant -> 'bound_to' ->> 'actor_id' IS DISTINCT FROM pr.requested_by_actor) THEN
        PERFORM trovesnap.fail('invalid_input:bound_to', 'a grant is bound to the client and actor that requested the proposal');
    END IF;

    v_id := coalesce(nullif(p_grant ->> 'id', ''), trovesnap.new_id('approval'));
    IF v_id !~ '^approval_[A-Za-z0-9]{1,40}$' THEN
        PERFORM trovesnap.fail('invalid_input:id', 'not an approval id');
    END IF;
    IF coalesce(p_grant ->> 'status', 'active') NOT IN ('', 'active') THEN
        PERFORM trovesnap.fail('invalid_input:status', 'a new grant is active');
    END IF;
    IF coalesce((p_grant ->> 'single_use')::boolean, true) IS NOT TRUE THEN
        PERFORM trovesnap.fail('invalid_input:single_use', 'a human grant is single use');
    END IF;
    IF jsonb_typeof(p_grant -> 'target_ids') IS DISTINCT FROM 'array' THEN
        PERFORM trovesnap.fail('invalid_input:target_ids', 'the targets the grant covers');
    END IF;
    BEGIN
        v_issued := coalesce((p_grant ->> 'issued_at')::timestamptz, v_now);
        v_expires := (p_grant ->> 'expires_at')::timestamptz;
    EXCEPTION WHEN others THEN
        PERFORM trovesnap.fail('invalid_input:expiry', 'not a timestamp');
    END;
    IF v_issued > v_now + interval '5 minutes' THEN
        PERFORM trovesnap.fail('invalid_input:issued_at', 'a grant is issued now');
    END IF;
    IF v_expires IS NULL OR v_expires <= v_issued THEN
        PERFORM trovesnap.fail('invalid_input:expiry', 'after the grant is issued');
    END IF;
    IF v_expires > pr.expires_at THEN
        PERFORM trovesnap.fail('invalid_input:expiry', 'a grant never outlives its proposal');
    END IF;

    -- A grant never allows more than the daily paid budgets of the
    -- requesting client and of the tenant.
    PERFORM trovesnap.require_cost_budget(pr.tenant_id, pr.requested_by_client,
        coalesce((p_grant -> 'constraints' ->> 'maximum_cost_usd')::numeric, 0), true);

    INSERT INTO trovesnap.approval_grants (id, tenant_id, proposal_id, proposal_hash, issuer_type, issuer_actor,
        issuer_surface, tool, target_ids, constraints, status, single_use, issued_at, expires_at, bound_client, bound_actor)
    VALUES (v_id, pr.tenant_id, pr.id, pr.proposal_hash, 'human', p_actor_id, p_grant -> 'issued_by' ->> 'surface',
        pr.tool_name, ARRAY(SELECT jsonb_array_elements_text(p_grant -> 'target_ids')),
        jsonb_build_object('maximum_items', coalesce((p_grant -> 'constraints' ->> 'maximum_items')::integer, 0),
                           'maximum_cost_usd', coalesce((p_grant -> 'constraints' ->> 'maximum_cost_usd')::numeric, 0),
                           'allow_publication', coalesce((p_grant -> 'constraints' ->> 'allow_publication')::boolean, false),
                           'allow_notifications', coalesce((p_grant -> 'constraints' ->> 'allow_notifications')::boolean, false)),
        'active', true, v_issued, v_expires, pr.requested_by_client, pr.requested_by_actor)
    RETURNING * INTO g;
    UPDATE trovesnap.proposals SET status = 'approved', decided_by = p_actor_id WHERE id = pr.id;
    PERFORM trovesnap.seller_approval_event(s, pr, 'approval_granted', 'allowed', g);
    RETURN trovesnap.grant_json(g);
END
$$;

SELECT trovesnap.revoke_execute(ARRAY['daily_paid_budget', 'paid_spent_today', 'usd', 'require_cost_budget',
                                      'proposal_cost_budget']);

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (14, '20261201120100_trovesnap_hardening_grants');

RESET ROLE;
