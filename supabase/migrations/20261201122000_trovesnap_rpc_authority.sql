-- trovesnap live mode, migration 33: the database is the authority for
-- every call it serves (issue 15). A client calling an RPC itself, with its
-- token and the public key, is refused exactly where the gate would refuse
-- the same call:
--   * check_ref: a record the request context cannot see although its own
--     tenant owns it (a proposal or grant of a sale the member is not
--     assigned, hidden by row level security) is answered as a missing one,
--     cross_tenant false — as the store's UnknownRef(…, false) — and no
--     longer as another tenant's, which told a sale-scoped client that the
--     id exists;
--   * mcp_get_proposal and mcp_approval_state require what the gate requires
--     of the calls they serve: trove_get_proposal (tool group tenant_read,
--     permission proposal.read), or the controlled action being resolved
--     (group controlled_action and every permission of that tool). Before,
--     any of three groups and no permission at all was enough (a checkout
--     or an action_proposal-only client read every proposal);
--   * mcp_execute_proposal answers a hidden proposal like check_ref, and a
--     policy whose limits are malformed (a fractional maximum_items_per_run,
--     or non-numeric daily limits — only a superuser can store them) is
--     refused as approval_required with a reason, instead of failing on a
--     cast (policy_refusal);
--   * idem_replay refuses a client that is not active, as the gate does
--     before any idempotency check: a suspended client's key no longer
--     replays its stored answer.

SET ROLE trovesnap_owner;

-- check_ref (migration 3): cross_tenant only when another tenant owns the
-- record; a row of the caller's own tenant that row level security hides
-- is a missing one.
CREATE OR REPLACE FUNCTION trovesnap.check_ref(p_table text, p_field text, p_id text) RETURNS void
    LANGUAGE plpgsql
    AS $$
DECLARE
    visible boolean;
    owner   text;
BEGIN
    EXECUTE format('SELECT EXISTS (SELECT 1 FROM trovesnap.%I WHERE id = $1)', p_table) INTO visible USING p_id;
    IF visible THEN
        RETURN;
    END IF;
    owner := trovesnap.owner_of(p_table, p_id);
    PERFORM trovesnap.fail('invalid_reference:' || p_field,
        jsonb_build_object('id', p_id, 'cross_tenant',
            owner IS NOT NULL AND owner IS DISTINCT FROM nullif(current_setting('trovesnap.tenant_id', true), ''))::text);
END
$$;

-- require_proposal_reader: the caller may read a proposal for tool p_tool
-- (the controlled tool that executes it) when the gate would let it —
-- trove_get_proposal (group tenant_read, permission proposal.read), or the
-- controlled action p_tool itself, whose approval is being resolved (group
-- controlled_action, every permission of the tool: catalog.Decide). Else
-- permission_denied:<the group> when it has neither group, or
-- permission_denied:proposal.read.
CREATE FUNCTION trovesnap.require_proposal_reader(p trovesnap.principal, p_tool text) RETURNS void
    LANGUAGE plpgsql STABLE
    AS $$
DECLARE
    v_perms text[] := trovesnap.tool_perms(coalesce(p_tool, ''));
BEGIN
    IF 'tenant_read' = ANY (coalesce(p.groups, '{}')) AND trovesnap.has_perm(p.role, 'proposal.read') THEN
        RETURN;
    END IF;
    IF 'controlled_action' = ANY (coalesce(p.groups, '{}')) AND v_perms IS NOT NULL
       AND NOT EXISTS (SELECT 1 FROM unnest(v_perms) AS perm WHERE NOT trovesnap.has_perm(p.role, perm)) THEN
        RETURN;
    END IF;
    IF NOT (coalesce(p.groups, '{}') && ARRAY['tenant_read', 'controlled_action']) THEN
        PERFORM trovesnap.fail('permission_denied:tenant_read');
    END IF;
    PERFORM trovesnap.fail('permission_denied:proposal.read');
END
$$;

-- mcp_get_proposal (migration 12): the reader's group and permission; a
-- proposal the caller cannot see is a missing one (check_ref). Whether a
-- controlled_action caller may read it depends on the proposal's tool, so
-- that path is checked once the row is read: a proposal it cannot execute
-- is refused as permission_denied, the row's content never returned.
CREATE OR REPLACE FUNCTION trovesnap.mcp_get_proposal(p_credential_hash text, p_proposal_id text) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    p  trovesnap.principal;
    pr trovesnap.proposals;
BEGIN
    p := trovesnap.enter_any_group(p_credential_hash, ARRAY['tenant_read', 'controlled_action'], NULL);
    IF NOT ('tenant_read' = ANY (coalesce(p.groups, '{}')) AND trovesnap.has_perm(p.role, 'proposal.read'))
       AND NOT ('controlled_action' = ANY (coalesce(p.groups, '{}'))) THEN
        PERFORM trovesnap.fail('permission_denied:proposal.read');
    END IF;
    PERFORM trovesnap.check_ref('proposals', 'proposal_id', p_proposal_id);
    SELECT * INTO pr FROM trovesnap.proposals x WHERE x.id = p_proposal_id;
    PERFORM trovesnap.require_proposal_reader(p, pr.tool_name);
    RETURN trovesnap.proposal_json(pr);
END
$$;

-- mcp_approval_state (migration 12): the reader's group and permission for
-- the tool p_tool, before anything is read.
CREATE OR REPLACE FUNCTION trovesnap.mcp_approval_state(p_credential_hash text, p_proposal_id text, p_tool text) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    p trovesnap.principal;
BEGIN
    p := trovesnap.enter_any_group(p_credential_hash, ARRAY['tenant_read', 'controlled_action'], NULL);
    PERFORM trovesnap.require_proposal_reader(p, p_tool);
    RETURN jsonb_build_object(
        'grants', (SELECT coalesce(jsonb_agg(trovesnap.grant_json(g) ORDER BY g.issued_at, g.id), '[]')
                   FROM trovesnap.approval_grants g WHERE g.tenant_id = p.tenant_id AND g.proposal_id = p_proposal_id),
        'policies', (SELECT coalesce(jsonb_agg(jsonb_build_object('policy', trovesnap.policy_json(pol),
                                                                  'usage', trovesnap.policy_usage(pol.id)) ORDER BY pol.id), '[]')
                     FROM trovesnap.automation_policies pol
                     WHERE pol.tenant_id = p.tenant_id AND pol.status = 'active'
                       AND coalesce(pol.body -> 'allowed_tools', '[]') ? p_tool));
END
$$;

-- idem_replay (migration 3), plus: only an active client replays. Every
-- write RPC looks its key up before it checks the client's status; the
-- gate refuses a suspended or revoked client before any idempotency check,
-- so the database does too (a replay writes nothing, but it answers).
CREATE OR REPLACE FUNCTION trovesnap.idem_replay(p trovesnap.principal, p_tool text, p_tool_major integer, p_key text,
                                                 p_fingerprint text, p_lock boolean) RETURNS jsonb
    LANGUAGE plpgsql
    AS $$
DECLARE
    k trovesnap.idempotency_keys;
BEGIN
    PERFORM trovesnap.require_active(p);
    IF p_lock THEN
        PERFORM pg_advisory_xact_lock(hashtextextended(
            concat_ws('/', 'idem', p.tenant_id, p.client_id, p_tool, p_tool_major::text, p_key), 0));
    END IF;
    SELECT * INTO k FROM trovesnap.idempotency_keys ik
    WHERE ik.client_id = p.client_id AND ik.tool = p_tool AND ik.tool_major = p_tool_major AND ik.key = p_key;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    IF k.expires_at <= now() THEN
        IF p_lock THEN
            DELETE FROM trovesnap.idempotency_keys ik
            WHERE ik.client_id = p.client_id AND ik.tool = p_tool AND ik.tool_major = p_tool_major AND ik.key = p_key;
        END IF;
        RETURN NULL;
    END IF;
    IF k.fingerprint <> p_fingerprint THEN
        PERFORM trovesnap.fail('idempotency_conflict');
    END IF;
    RETURN jsonb_build_object('replayed', true, 'result', k.result -> 'result', 'related', k.result -> 'related',
                              'event_id', k.event_id);
END
$$;

-- policy_refusal (migration 28), plus: require_no_conflicts is judged on
-- the validation derived from the current rows (derive_proposal, migration
-- 32) as well as the stored one, and a maximum_items_per_run that is not a
-- whole number is a malformed policy, refused with a reason.
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

-- mcp_execute_proposal (migration 28, moved by migration 29), plus: a
-- hidden proposal is answered like check_ref; malformed policy limits are
-- refused as approval_required instead of failing on a cast.
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

SELECT trovesnap.revoke_execute(ARRAY['require_proposal_reader']);

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (33, '20261201122000_trovesnap_rpc_authority');

RESET ROLE;
