-- trovesnap live mode, migration 7: Seller-surface RPCs under a signed-in user's JWT.
--
-- `trovesnap approve` and `trovesnap policy` in live mode act as a signed-in
-- seller: PostgREST runs these functions with role `authenticated` and the
-- user's Supabase Auth claims. Every seller_* function:
--   * is SECURITY DEFINER (trovesnap_owner, itself under the FORCEd row level
--     security) with a fixed search_path, and starts with
--     trovesnap.begin_rpc('authenticated');
--   * finds the TroveSnap user from the JWT `sub` (trovesnap.users.auth_subject);
--     no argument can name another user to act as — an actor argument must be
--     the signed-in user itself;
--   * acts only in a tenant where that user is a member (else
--     permission_denied:tenant_id), with the tenant context set to it, so row
--     level security bounds every statement to that tenant;
--   * checks the role's permission from trovesnap.role_permissions:
--     proposal.read to read proposals, grants, policies, versions and the
--     audit trail; approval.grant to deny; policy.manage to create or change
--     a policy (the same permissions the embedded store checks).
-- Errors are trovesnap.fail codes (internal/live/rpc.go maps them). Grants
-- themselves are issued and revoked by seller_issue_grant and
-- seller_revoke_grant in migration 6, next to the execution that consumes
-- them; the client and limits RPCs are migration 8.

SET ROLE trovesnap_owner;

-- The signed-in seller of one RPC, in one tenant.
CREATE TYPE trovesnap.seller_ctx AS (
    user_id       text,
    tenant_id     text,
    membership_id text,
    role          text
);

-- seller_user is the TroveSnap user linked to the JWT's `sub` (all fields
-- NULL when the Auth user is linked to none). No `sub`: auth_required.
CREATE FUNCTION trovesnap.seller_user() RETURNS trovesnap.users
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    v_sub text := nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'sub';
    u     trovesnap.users;
BEGIN
    IF coalesce(v_sub, '') = '' THEN
        PERFORM trovesnap.fail('auth_required');
    END IF;
    PERFORM set_config('trovesnap.system', 'on', true);
    SELECT * INTO u FROM trovesnap.users WHERE auth_subject = v_sub;
    PERFORM set_config('trovesnap.system', 'off', true);
    RETURN u;
END
$$;

-- seller_linked_user: seller_user, refused when the Auth user is linked to
-- no TroveSnap user.
CREATE FUNCTION trovesnap.seller_linked_user() RETURNS trovesnap.users
    LANGUAGE plpgsql
    AS $$
DECLARE
    u trovesnap.users;
BEGIN
    u := trovesnap.seller_user();
    IF u.id IS NULL THEN
        PERFORM trovesnap.fail('permission_denied:user', 'the signed-in account is not linked to a TroveSnap user');
    END IF;
    RETURN u;
END
$$;

-- seller_member_of: the membership of a user in a tenant (fields NULL when
-- none), read in system context and leaving the context as it found it.
CREATE FUNCTION trovesnap.seller_member_of(p_user_id text, p_tenant_id text) RETURNS trovesnap.seller_ctx
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    s trovesnap.seller_ctx;
BEGIN
    PERFORM set_config('trovesnap.system', 'on', true);
    SELECT m.user_id, m.tenant_id, m.id, m.role INTO s.user_id, s.tenant_id, s.membership_id, s.role
    FROM trovesnap.memberships m WHERE m.tenant_id = p_tenant_id AND m.user_id = p_user_id;
    PERFORM set_config('trovesnap.system', 'off', true);
    RETURN s;
END
$$;

-- seller_enter starts a seller RPC in a tenant: role authenticated, the
-- linked user of the JWT, a membership in p_tenant_id (else
-- permission_denied:tenant_id) and, when p_perm is given, that permission
-- of the membership's role (else permission_denied:<perm>). It sets the
-- tenant context and returns the seller.
CREATE FUNCTION trovesnap.seller_enter(p_tenant_id text, p_perm text) RETURNS trovesnap.seller_ctx
    LANGUAGE plpgsql
    AS $$
DECLARE
    u trovesnap.users;
    s trovesnap.seller_ctx;
BEGIN
    PERFORM trovesnap.begin_rpc('authenticated');
    u := trovesnap.seller_linked_user();
    IF coalesce(p_tenant_id, '') = '' THEN
        PERFORM trovesnap.fail('invalid_input:tenant_id', 'required');
    END IF;
    s := trovesnap.seller_member_of(u.id, p_tenant_id);
    IF s.membership_id IS NULL THEN
        PERFORM trovesnap.fail('permission_denied:tenant_id');
    END IF;
    IF p_perm IS NOT NULL AND NOT trovesnap.has_perm(s.role, p_perm) THEN
        PERFORM trovesnap.fail('permission_denied:' || p_perm);
    END IF;
    PERFORM set_config('trovesnap.tenant_id', s.tenant_id, true);
    RETURN s;
END
$$;

-- seller_actor: an actor argument names the signed-in user or nobody (then
-- the signed-in user is meant). A seller session never acts as anyone else.
CREATE FUNCTION trovesnap.seller_actor(s trovesnap.seller_ctx, p_actor_id text) RETURNS text
    LANGUAGE plpgsql IMMUTABLE
    AS $$
BEGIN
    IF coalesce(p_actor_id, '') <> '' AND p_actor_id <> s.user_id THEN
        PERFORM trovesnap.fail('permission_denied:actor_id', 'a seller session acts only as its signed-in user');
    END IF;
    RETURN s.user_id;
END
$$;

-- seller_tenant_of: the tenant of a record of p_table by id, whatever the
-- context (NULL when none). Callers answer a record of a tenant the seller
-- is not a member of exactly like a missing one.
CREATE FUNCTION trovesnap.seller_tenant_of(p_table text, p_id text) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    t text;
BEGIN
    IF p_table NOT IN ('automation_policies') THEN
        RAISE EXCEPTION 'seller_tenant_of: table % is not looked up by id', p_table;
    END IF;
    PERFORM set_config('trovesnap.system', 'on', true);
    EXECUTE format('SELECT tenant_id FROM trovesnap.%I WHERE id = $1', p_table) INTO t USING p_id;
    PERFORM set_config('trovesnap.system', 'off', true);
    RETURN t;
END
$$;

-- seller_enter_policy: seller_enter in the tenant of a policy the seller
-- is a member of; a missing policy and one of another tenant are the same
-- invalid_reference:policy.
CREATE FUNCTION trovesnap.seller_enter_policy(p_policy_id text, p_perm text) RETURNS trovesnap.seller_ctx
    LANGUAGE plpgsql
    AS $$
DECLARE
    u        trovesnap.users;
    v_tenant text;
BEGIN
    PERFORM trovesnap.begin_rpc('authenticated');
    u := trovesnap.seller_linked_user();
    v_tenant := trovesnap.seller_tenant_of('automation_policies', p_policy_id);
    IF v_tenant IS NULL OR (trovesnap.seller_member_of(u.id, v_tenant)).membership_id IS NULL THEN
        PERFORM trovesnap.fail('invalid_reference:policy',
            jsonb_build_object('id', coalesce(p_policy_id, ''), 'cross_tenant', false)::text);
    END IF;
    RETURN trovesnap.seller_enter(v_tenant, p_perm);
END
$$;

-- seller_proposal_status: a pending or approved proposal past its expiry is
-- expired (the stored status catches up lazily, as in the embedded store).
CREATE FUNCTION trovesnap.seller_proposal_status(p trovesnap.proposals) RETURNS text
    LANGUAGE sql STABLE
    AS $$
        SELECT CASE WHEN p.status IN ('pending_approval', 'approved') AND p.expires_at <= now() THEN 'expired'
                    ELSE p.status END
    $$;

-- seller_proposal_json: a domain.Proposal. The body is the proposal's
-- content as sealed (so the hash can be recomputed from it); the columns
-- add what is not content.
CREATE FUNCTION trovesnap.seller_proposal_json(p trovesnap.proposals) RETURNS jsonb
    LANGUAGE sql STABLE
    AS $$
        SELECT jsonb_build_object('created_at', trovesnap.ts(p.created_at), 'expires_at', trovesnap.ts(p.expires_at))
               || p.body
               || jsonb_build_object('id', p.id, 'tenant_id', p.tenant_id, 'proposal_hash', p.proposal_hash,
                                     'status', trovesnap.seller_proposal_status(p), 'correlation_id', p.correlation_id)
    $$;

-- seller_grant_json: a domain.Grant; an active grant past its expiry is
-- reported expired.
CREATE FUNCTION trovesnap.seller_grant_json(g trovesnap.approval_grants) RETURNS jsonb
    LANGUAGE sql STABLE
    AS $$
        SELECT jsonb_build_object('id', g.id, 'tenant_id', g.tenant_id, 'proposal_id', g.proposal_id,
            'proposal_hash', g.proposal_hash,
            'issued_by', jsonb_strip_nulls(jsonb_build_object('type', g.issuer_type, 'actor_id', nullif(g.issuer_actor, ''),
                'surface', nullif(g.issuer_surface, ''), 'policy_id', nullif(g.policy_id, ''),
                'policy_version', nullif(g.policy_version, 0))),
            'tool', g.tool, 'target_ids', to_jsonb(g.target_ids), 'constraints', g.constraints,
            'status', CASE WHEN g.status = 'active' AND g.expires_at <= now() THEN 'expired' ELSE g.status END,
            'single_use', g.single_use, 'issued_at', trovesnap.ts(g.issued_at), 'expires_at', trovesnap.ts(g.expires_at),
            'consumed_at', trovesnap.ts(g.consumed_at), 'revoked_at', trovesnap.ts(g.revoked_at))
    $$;

-- seller_policy_json: a domain.Policy (the body holds allowed_tools, scope,
-- conditions and limits).
CREATE FUNCTION trovesnap.seller_policy_json(p trovesnap.automation_policies) RETURNS jsonb
    LANGUAGE sql STABLE
    AS $$
        SELECT p.body || jsonb_build_object('id', p.id, 'tenant_id', p.tenant_id, 'name', p.name, 'version', p.version,
            'status', p.status, 'created_by', p.created_by, 'created_at', trovesnap.ts(p.created_at),
            'updated_at', trovesnap.ts(p.updated_at))
    $$;

-- seller_event: the plugin_event body of a seller's own action (§35): no
-- MCP client or tool of its own, the actor with its role, the permission
-- the action needed and the domain operation it was. Callers add what is
-- specific with ||.
CREATE FUNCTION trovesnap.seller_event(s trovesnap.seller_ctx, p_correlation_id text, p_action text, p_perm text,
                                       p_service text, p_plugin_version text) RETURNS jsonb
    LANGUAGE sql VOLATILE
    AS $$
        SELECT jsonb_build_object(
            'id', trovesnap.new_id('event'), 'tenant_id', s.tenant_id, 'correlation_id', p_correlation_id,
            'causation_id', NULL, 'request_id', '', 'server_request_id', '', 'mode', 'live',
            'plugin', jsonb_build_object('type', 'mcp', 'id', 'trovesnap', 'version', p_plugin_version),
            'client', jsonb_build_object('id', '', 'name', ''),
            'tool', jsonb_build_object('name', '', 'version', ''),
            'actor', jsonb_build_object('id', s.user_id, 'type', 'seller', 'role', s.role),
            'action', p_action, 'outcome', 'success', 'related', trovesnap.empty_related(),
            'payload', jsonb_build_object('input_hash', '', 'redacted_summary', '{}'::jsonb),
            'approval', jsonb_build_object('proposal_id', NULL, 'approval_id', NULL, 'decision', 'not_required'),
            'metrics', jsonb_build_object('latency_ms', 0, 'estimated_cost_usd', 0),
            'impact', jsonb_build_object('type', p_action, 'material', true, 'canonical_state_changed', false,
                                         'public_state_changed', false),
            'occurred_at', trovesnap.ts(clock_timestamp()),
            'permissions', jsonb_build_array(p_perm),
            'domain', jsonb_build_object('service', p_service, 'operation', p_action))
    $$;

-- seller_approval_event records a human approval decision about a proposal
-- under the proposal's correlation id, as the embedded store's
-- approvalEvent does: the requesting client by name, the proposal's tool,
-- requirement and hash, who decided, and as cause the event that created
-- the proposal (or, for an event about a grant, the event that granted it).
CREATE FUNCTION trovesnap.seller_approval_event(s trovesnap.seller_ctx, p trovesnap.proposals, p_action text,
                                                p_decision text, p_grant_id text) RETURNS jsonb
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_event  jsonb;
    v_cause  text;
    v_client jsonb := jsonb_build_object('id', p.requested_by_client, 'name', '');
    v_issuer jsonb := jsonb_build_object('type', 'human', 'actor_id', s.user_id);
    g        trovesnap.approval_grants;
BEGIN
    SELECT jsonb_build_object('id', c.id, 'name', c.name, 'type', c.client_type) INTO v_client
    FROM trovesnap.mcp_clients c WHERE c.id = p.requested_by_client;
    v_client := coalesce(v_client, jsonb_build_object('id', p.requested_by_client, 'name', ''));
    IF p_grant_id IS NOT NULL THEN
        SELECT * INTO g FROM trovesnap.approval_grants WHERE id = p_grant_id;
        IF FOUND THEN
            v_issuer := trovesnap.seller_grant_json(g) -> 'issued_by';
        END IF;
        IF p_action <> 'approval_granted' THEN
            SELECT e.id INTO v_cause FROM trovesnap.plugin_events e
            WHERE e.correlation_id = p.correlation_id AND e.body ->> 'action' = 'approval_granted'
              AND e.body -> 'approval' ->> 'approval_id' = p_grant_id
            ORDER BY e.seq LIMIT 1;
        END IF;
    END IF;
    IF v_cause IS NULL AND p.correlation_id <> '' THEN
        SELECT e.id INTO v_cause FROM trovesnap.plugin_events e
        WHERE e.correlation_id = p.correlation_id AND e.outcome = 'success' AND e.body ->> 'action' = 'mcp_tool_called'
          AND coalesce(e.body -> 'related' -> 'proposal_ids', '[]'::jsonb) ? p.id
        ORDER BY e.seq LIMIT 1;
    END IF;
    v_event := trovesnap.seller_event(s, p.correlation_id, p_action, 'approval.grant', 'approval', 'approval')
        || jsonb_build_object(
            'causation_id', v_cause,
            'client', v_client,
            'tool', jsonb_build_object('name', p.tool_name, 'version', coalesce(p.body -> 'tool' ->> 'version', '')),
            'related', trovesnap.empty_related() || jsonb_build_object('proposal_ids', jsonb_build_array(p.id)),
            'payload', jsonb_build_object('input_hash', p.proposal_hash,
                                          'redacted_summary', jsonb_build_object('proposal_id', p.id)),
            'approval', jsonb_strip_nulls(jsonb_build_object('proposal_id', p.id, 'decision', p_decision,
                'requirement', nullif(coalesce(p.body ->> 'approval_requirement', ''), ''),
                'proposal_hash', p.proposal_hash, 'issued_by', v_issuer))
                || jsonb_build_object('approval_id', p_grant_id));
    PERFORM trovesnap.record_event(v_event);
    RETURN v_event;
END
$$;

-- seller_validate_policy: what internal/approval.ValidatePolicy checks,
-- enforced again here because the RPC is the boundary (a seller may call
-- it without the CLI): a name, controlled tools a policy may ever
-- authorise, named sales of the tenant, a bounded run, permitted fields, a
-- daily limit, and never paid work.
CREATE FUNCTION trovesnap.seller_validate_policy(p_policy jsonb) RETURNS void
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
        IF v NOT IN ('trove_execute_candidate_promotion', 'trove_update_item_status', 'trove_apply_bulk_item_update',
                     'trove_bind_item_identity') THEN
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

-- seller_write_policy_version keeps a policy version and records its event.
CREATE FUNCTION trovesnap.seller_write_policy_version(s trovesnap.seller_ctx, p trovesnap.automation_policies,
                                                      p_action text) RETURNS void
    LANGUAGE plpgsql
    AS $$
BEGIN
    INSERT INTO trovesnap.automation_policy_versions (policy_id, tenant_id, version, status, body, changed_by, changed_at)
    VALUES (p.id, p.tenant_id, p.version, p.status, p.body, s.user_id, p.updated_at);
    PERFORM trovesnap.record_event(
        trovesnap.seller_event(s, trovesnap.new_id('corr'), p_action, 'policy.manage', 'automation_policy', 'policy')
        || jsonb_build_object('payload', jsonb_build_object('input_hash', '',
               'redacted_summary', jsonb_build_object('policy_id', p.id, 'policy_version', p.version::text))));
END
$$;

-- ---------------------------------------------------------------------------
-- RPCs
-- ---------------------------------------------------------------------------

-- seller_whoami: the signed-in user (null when the Auth account is linked
-- to no TroveSnap user) and its memberships, each with its role's
-- permissions.
CREATE FUNCTION public.seller_whoami() RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    u     trovesnap.users;
    v_out jsonb;
BEGIN
    PERFORM trovesnap.begin_rpc('authenticated');
    u := trovesnap.seller_user();
    IF u.id IS NULL THEN
        RETURN jsonb_build_object('user', NULL, 'memberships', '[]'::jsonb);
    END IF;
    PERFORM set_config('trovesnap.system', 'on', true);
    SELECT jsonb_build_object(
        'user', jsonb_build_object('id', u.id, 'display_name', u.display_name, 'email', u.email),
        'memberships', coalesce(jsonb_agg(jsonb_build_object(
            'tenant_id', m.tenant_id, 'tenant_name', t.name, 'membership_id', m.id, 'role', m.role,
            'sale_scoped', m.sale_scoped,
            'permissions', coalesce((SELECT jsonb_agg(rp.permission ORDER BY rp.permission COLLATE "C")
                                     FROM trovesnap.role_permissions rp WHERE rp.role = m.role), '[]'::jsonb))
            ORDER BY m.tenant_id) FILTER (WHERE m.id IS NOT NULL), '[]'::jsonb))
    INTO v_out
    FROM trovesnap.memberships m JOIN trovesnap.tenants t ON t.id = m.tenant_id
    WHERE m.user_id = u.id;
    PERFORM set_config('trovesnap.system', 'off', true);
    RETURN v_out;
END
$$;

-- seller_list_proposals: a tenant's proposals, newest first, optionally by
-- status (with expiry applied: "expired" includes pending ones past it).
CREATE FUNCTION public.seller_list_proposals(p_tenant_id text, p_status text DEFAULT NULL) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    s trovesnap.seller_ctx;
BEGIN
    s := trovesnap.seller_enter(p_tenant_id, 'proposal.read');
    PERFORM trovesnap.one_of('status', p_status, ARRAY['pending_approval', 'approved', 'rejected', 'expired', 'executed']);
    RETURN (SELECT coalesce(jsonb_agg(x.j ORDER BY x.created_at DESC, x.id DESC), '[]')
            FROM (SELECT p.id, p.created_at, trovesnap.seller_proposal_json(p) AS j FROM trovesnap.proposals p
                  WHERE p.tenant_id = s.tenant_id
                    AND (coalesce(p_status, '') = '' OR trovesnap.seller_proposal_status(p) = p_status)
                  ORDER BY p.created_at DESC, p.id DESC
                  LIMIT 500) x);
END
$$;

-- seller_get_proposal: one proposal of the tenant (a missing one and one of
-- another tenant are the same invalid_reference).
CREATE FUNCTION public.seller_get_proposal(p_tenant_id text, p_proposal_id text) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    s trovesnap.seller_ctx;
    p trovesnap.proposals;
BEGIN
    s := trovesnap.seller_enter(p_tenant_id, 'proposal.read');
    SELECT * INTO p FROM trovesnap.proposals WHERE id = p_proposal_id AND tenant_id = s.tenant_id;
    IF NOT FOUND THEN
        PERFORM trovesnap.fail('invalid_reference:proposal_id',
            jsonb_build_object('id', coalesce(p_proposal_id, ''), 'cross_tenant', false)::text);
    END IF;
    RETURN trovesnap.seller_proposal_json(p);
END
$$;

-- seller_deny_proposal rejects a pending proposal as the signed-in seller
-- (approval.grant), recording who and why, with an approval_denied event
-- under the proposal's correlation id.
CREATE FUNCTION public.seller_deny_proposal(p_tenant_id text, p_proposal_id text, p_actor_id text DEFAULT NULL,
                                            p_surface text DEFAULT NULL, p_reason text DEFAULT NULL) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    s trovesnap.seller_ctx;
    p trovesnap.proposals;
BEGIN
    s := trovesnap.seller_enter(p_tenant_id, NULL);
    PERFORM trovesnap.seller_actor(s, p_actor_id);
    IF length(coalesce(p_reason, '')) > 1000 THEN
        PERFORM trovesnap.fail('invalid_input:reason', 'at most 1000 characters');
    END IF;
    SELECT * INTO p FROM trovesnap.proposals WHERE id = p_proposal_id AND tenant_id = s.tenant_id FOR UPDATE;
    IF NOT FOUND THEN
        PERFORM trovesnap.fail('invalid_reference:proposal_id',
            jsonb_build_object('id', coalesce(p_proposal_id, ''), 'cross_tenant', false)::text);
    END IF;
    IF p.status <> 'pending_approval' THEN
        PERFORM trovesnap.fail('transition_invalid', 'proposal ' || p.id || ' is ' || p.status);
    END IF;
    IF NOT trovesnap.has_perm(s.role, 'approval.grant') THEN
        PERFORM trovesnap.fail('permission_denied:approval.grant');
    END IF;
    UPDATE trovesnap.proposals SET status = 'rejected', status_reason = coalesce(p_reason, ''), decided_by = s.user_id
    WHERE id = p.id
    RETURNING * INTO p;
    PERFORM trovesnap.seller_approval_event(s, p, 'approval_denied', 'blocked', NULL);
    RETURN trovesnap.seller_proposal_json(p);
END
$$;

-- seller_list_grants: a tenant's grants, newest first; "expired" means
-- active grants past their expiry.
CREATE FUNCTION public.seller_list_grants(p_tenant_id text, p_status text DEFAULT NULL) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    s trovesnap.seller_ctx;
BEGIN
    s := trovesnap.seller_enter(p_tenant_id, 'proposal.read');
    PERFORM trovesnap.one_of('status', p_status, ARRAY['active', 'consumed', 'revoked', 'expired']);
    RETURN (SELECT coalesce(jsonb_agg(x.j ORDER BY x.issued_at DESC, x.id DESC), '[]')
            FROM (SELECT g.id, g.issued_at, trovesnap.seller_grant_json(g) AS j FROM trovesnap.approval_grants g
                  WHERE g.tenant_id = s.tenant_id
                  ORDER BY g.issued_at DESC, g.id DESC
                  LIMIT 500) x
            WHERE coalesce(p_status, '') = '' OR x.j ->> 'status' = p_status);
END
$$;

-- seller_create_policy stores a new automation policy of the tenant,
-- disabled, at version 1, created by the signed-in seller (policy.manage).
CREATE FUNCTION public.seller_create_policy(p_tenant_id text, p_policy jsonb) RETURNS jsonb
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
                    'require_no_conflicts', coalesce((p_policy -> 'conditions' ->> 'require_no_conflicts')::boolean, false)),
                'limits', jsonb_build_object(
                    'maximum_daily_actions', p_policy -> 'limits' -> 'maximum_daily_actions',
                    'maximum_cost_usd_per_day', 0)),
            s.user_id, v_now, v_now)
    RETURNING * INTO p;
    PERFORM trovesnap.seller_write_policy_version(s, p, 'policy_created');
    RETURN trovesnap.seller_policy_json(p);
END
$$;

-- seller_list_policies: a tenant's policies, by id.
CREATE FUNCTION public.seller_list_policies(p_tenant_id text) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    s trovesnap.seller_ctx;
BEGIN
    s := trovesnap.seller_enter(p_tenant_id, 'proposal.read');
    RETURN (SELECT coalesce(jsonb_agg(trovesnap.seller_policy_json(p) ORDER BY p.id), '[]')
            FROM trovesnap.automation_policies p WHERE p.tenant_id = s.tenant_id);
END
$$;

-- seller_get_policy: one policy of a tenant the seller is a member of.
CREATE FUNCTION public.seller_get_policy(p_policy_id text) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    s trovesnap.seller_ctx;
    p trovesnap.automation_policies;
BEGIN
    s := trovesnap.seller_enter_policy(p_policy_id, 'proposal.read');
    SELECT * INTO STRICT p FROM trovesnap.automation_policies WHERE id = p_policy_id AND tenant_id = s.tenant_id;
    RETURN trovesnap.seller_policy_json(p);
END
$$;

-- seller_set_policy_status enables, disables or revokes a policy
-- (policy.manage; revoked is final). Every change is a new version, so an
-- execution authorised under an older version is refused.
CREATE FUNCTION public.seller_set_policy_status(p_policy_id text, p_status text, p_actor_id text DEFAULT NULL) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    s trovesnap.seller_ctx;
    p trovesnap.automation_policies;
BEGIN
    s := trovesnap.seller_enter_policy(p_policy_id, 'policy.manage');
    PERFORM trovesnap.seller_actor(s, p_actor_id);
    SELECT * INTO STRICT p FROM trovesnap.automation_policies WHERE id = p_policy_id AND tenant_id = s.tenant_id FOR UPDATE;
    IF NOT ((p.status = 'disabled' AND p_status IN ('active', 'revoked'))
            OR (p.status = 'active' AND p_status IN ('disabled', 'revoked'))) THEN
        PERFORM trovesnap.fail('transition_invalid',
            'policy ' || p.id || ' is ' || p.status || ' and cannot become ' || left(coalesce(p_status, ''), 20));
    END IF;
    UPDATE trovesnap.automation_policies SET status = p_status, version = version + 1, updated_at = clock_timestamp()
    WHERE id = p.id
    RETURNING * INTO p;
    PERFORM trovesnap.seller_write_policy_version(s, p,
        CASE p_status WHEN 'active' THEN 'policy_enabled' WHEN 'disabled' THEN 'policy_disabled' ELSE 'policy_revoked' END);
    RETURN trovesnap.seller_policy_json(p);
END
$$;

-- seller_member_role: the role of a user in one of the seller's tenants
-- ('' when that user is no member of it).
CREATE FUNCTION public.seller_member_role(p_tenant_id text, p_user_id text) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    s trovesnap.seller_ctx;
BEGIN
    s := trovesnap.seller_enter(p_tenant_id, NULL);
    RETURN coalesce((SELECT m.role FROM trovesnap.memberships m WHERE m.tenant_id = s.tenant_id AND m.user_id = p_user_id), '');
END
$$;

-- seller_current_versions: the current version of each target id (items,
-- sales, candidates) of the tenant, as an object; unknown ids are absent.
CREATE FUNCTION public.seller_current_versions(p_tenant_id text, p_ids jsonb) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    s     trovesnap.seller_ctx;
    v_ids text[];
BEGIN
    s := trovesnap.seller_enter(p_tenant_id, 'proposal.read');
    IF p_ids IS NOT NULL AND jsonb_typeof(p_ids) NOT IN ('array', 'null') THEN
        PERFORM trovesnap.fail('invalid_input:ids', 'an array of ids');
    END IF;
    v_ids := ARRAY(SELECT jsonb_array_elements_text(coalesce(nullif(p_ids, 'null'::jsonb), '[]'::jsonb)));
    IF cardinality(v_ids) > 500 THEN
        PERFORM trovesnap.fail('invalid_input:ids', 'at most 500 ids');
    END IF;
    RETURN coalesce((
        SELECT jsonb_object_agg(v.id, v.version) FROM (
            SELECT i.id, i.version FROM trovesnap.items i WHERE i.tenant_id = s.tenant_id AND i.id = ANY (v_ids)
            UNION ALL
            SELECT e.id, e.version FROM trovesnap.estate_sales e WHERE e.tenant_id = s.tenant_id AND e.id = ANY (v_ids)
            UNION ALL
            SELECT c.id, c.version FROM trovesnap.inventory_candidates c WHERE c.tenant_id = s.tenant_id AND c.id = ANY (v_ids)
        ) v), '{}'::jsonb);
END
$$;

-- seller_audit_trail: the plugin_events of one correlation id (a proposal,
-- its approval and its execution) of the tenant, in append order.
CREATE FUNCTION public.seller_audit_trail(p_tenant_id text, p_correlation_id text) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    s trovesnap.seller_ctx;
BEGIN
    s := trovesnap.seller_enter(p_tenant_id, 'proposal.read');
    IF coalesce(p_correlation_id, '') = '' THEN
        RETURN '[]'::jsonb;
    END IF;
    RETURN (SELECT coalesce(jsonb_agg(e.body ORDER BY e.seq), '[]')
            FROM (SELECT * FROM trovesnap.plugin_events e
                  WHERE e.tenant_id = s.tenant_id AND e.correlation_id = p_correlation_id
                  ORDER BY e.seq LIMIT 1000) e);
END
$$;

-- Nothing here is executable by anyone but its owner, except the seller_*
-- RPCs, which only a signed-in user's role (authenticated) may call.
DO $$
DECLARE
    f regprocedure;
    r text;
BEGIN
    FOR f IN SELECT p.oid::regprocedure FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
             WHERE p.proowner = 'trovesnap_owner'::regrole
               AND ((n.nspname = 'trovesnap' AND p.proname IN ('seller_user', 'seller_linked_user', 'seller_member_of',
                        'seller_enter', 'seller_actor', 'seller_tenant_of', 'seller_enter_policy', 'seller_proposal_status',
                        'seller_proposal_json', 'seller_grant_json', 'seller_policy_json', 'seller_event',
                        'seller_approval_event', 'seller_validate_policy', 'seller_write_policy_version'))
                 OR (n.nspname = 'public' AND p.proname IN ('seller_whoami', 'seller_list_proposals', 'seller_get_proposal',
                        'seller_deny_proposal', 'seller_list_grants', 'seller_create_policy', 'seller_list_policies',
                        'seller_get_policy', 'seller_set_policy_status', 'seller_member_role', 'seller_current_versions',
                        'seller_audit_trail')))
    LOOP
        EXECUTE format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', f);
        FOREACH r IN ARRAY ARRAY['anon', 'authenticated', 'service_role', 'trovesnap_mcp', 'trovesnap_admin']
        LOOP
            IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r) THEN
                EXECUTE format('REVOKE ALL ON FUNCTION %s FROM %I', f, r);
            END IF;
        END LOOP;
    END LOOP;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'authenticated') THEN
        GRANT EXECUTE ON FUNCTION
            public.seller_whoami(),
            public.seller_list_proposals(text, text),
            public.seller_get_proposal(text, text),
            public.seller_deny_proposal(text, text, text, text, text),
            public.seller_list_grants(text, text),
            public.seller_create_policy(text, jsonb),
            public.seller_list_policies(text),
            public.seller_get_policy(text),
            public.seller_set_policy_status(text, text, text),
            public.seller_member_role(text, text),
            public.seller_current_versions(text, jsonb),
            public.seller_audit_trail(text, text)
        TO authenticated;
    END IF;
END
$$;

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (7, '20261130120300_trovesnap_seller_rpcs');

RESET ROLE;
