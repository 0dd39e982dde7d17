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
-- are issued and revoked here too (seller_issue_grant, seller_revoke_grant);
-- the execution that consumes them is migration 6's; the client and limits
-- RPCs are migration 8, on the same helpers.

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

-- seller_in: the membership of the signed-in user p_user_id in p_tenant_id,
-- holding p_perm when one is named (else permission_denied:<perm>),
-- becomes the request context. No such membership (or no tenant): the
-- caller's refusal p_refusal — an invalid_reference:<field> carries
-- {id: p_ref_id, cross_tenant: false} (a record of a tenant the user is
-- not a member of answers exactly like a missing one), any other code no
-- detail. Every seller entry below ends here.
CREATE FUNCTION trovesnap.seller_in(p_user_id text, p_tenant_id text, p_perm text, p_refusal text,
                                    p_ref_id text) RETURNS trovesnap.seller_ctx
    LANGUAGE plpgsql
    AS $$
DECLARE
    s trovesnap.seller_ctx;
BEGIN
    s := trovesnap.seller_member_of(p_user_id, p_tenant_id);
    IF s.membership_id IS NULL THEN
        IF p_refusal LIKE 'invalid_reference:%' THEN
            PERFORM trovesnap.fail(p_refusal, jsonb_build_object('id', p_ref_id, 'cross_tenant', false)::text);
        END IF;
        PERFORM trovesnap.fail(p_refusal);
    END IF;
    IF p_perm IS NOT NULL AND NOT trovesnap.has_perm(s.role, p_perm) THEN
        PERFORM trovesnap.fail('permission_denied:' || p_perm);
    END IF;
    PERFORM set_config('trovesnap.tenant_id', s.tenant_id, true);
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
BEGIN
    PERFORM trovesnap.begin_rpc('authenticated');
    u := trovesnap.seller_linked_user();
    IF coalesce(p_tenant_id, '') = '' THEN
        PERFORM trovesnap.fail('invalid_input:tenant_id', 'required');
    END IF;
    RETURN trovesnap.seller_in(u.id, p_tenant_id, p_perm, 'permission_denied:tenant_id', NULL);
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

-- seller_enter_record: seller_enter in the tenant of a record of p_table (a
-- policy, a client) that the seller is a member of; a missing record and
-- one of another tenant are the same invalid_reference:<p_field> {id: p_id}.
CREATE FUNCTION trovesnap.seller_enter_record(p_table text, p_field text, p_id text, p_perm text) RETURNS trovesnap.seller_ctx
    LANGUAGE plpgsql
    AS $$
DECLARE
    u trovesnap.users;
BEGIN
    PERFORM trovesnap.begin_rpc('authenticated');
    u := trovesnap.seller_linked_user();
    RETURN trovesnap.seller_in(u.id, trovesnap.owner_of(p_table, coalesce(p_id, '')), p_perm, 'invalid_reference:' || p_field,
                               p_id);
END
$$;

-- approver_enter starts a grant RPC: seller_enter's checks, except that the
-- actor is named and must be the signed-in user (a session acts only as its
-- own user), and a seller without approval.grant in p_tenant_id — a member
-- or not — is permission_denied:approval.grant.
CREATE FUNCTION trovesnap.approver_enter(p_tenant_id text, p_actor_id text) RETURNS trovesnap.seller_ctx
    LANGUAGE plpgsql
    AS $$
DECLARE
    u trovesnap.users;
BEGIN
    PERFORM trovesnap.begin_rpc('authenticated');
    u := trovesnap.seller_linked_user();
    IF coalesce(p_actor_id, '') <> u.id THEN
        PERFORM trovesnap.fail('permission_denied:actor_id', 'a seller session acts only as its signed-in user');
    END IF;
    RETURN trovesnap.seller_in(u.id, p_tenant_id, 'approval.grant', 'permission_denied:approval.grant', NULL);
END
$$;

-- seller_proposal_json: a domain.Proposal as a seller reads it —
-- proposal_json (the content as sealed, so the hash can be recomputed
-- from it, and what is not content) with its tenant, and its creation and
-- expiry should the body not carry them.
CREATE FUNCTION trovesnap.seller_proposal_json(p trovesnap.proposals) RETURNS jsonb
    LANGUAGE sql STABLE
    AS $$
        SELECT jsonb_build_object('created_at', trovesnap.ts(p.created_at), 'expires_at', trovesnap.ts(p.expires_at))
               || trovesnap.proposal_json(p) || jsonb_build_object('tenant_id', p.tenant_id)
    $$;

-- seller_grant_json: grant_json, with an active grant past its expiry
-- reported expired.
CREATE FUNCTION trovesnap.seller_grant_json(g trovesnap.approval_grants) RETURNS jsonb
    LANGUAGE sql STABLE
    AS $$
        SELECT trovesnap.grant_json(g)
               || jsonb_build_object('status', CASE WHEN g.status = 'active' AND g.expires_at <= now() THEN 'expired'
                                                    ELSE g.status END)
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
-- (granted, revoked, denied) under the proposal's correlation id, as the
-- embedded store's approvalEvent does: the requesting client by name, the
-- proposal's tool, requirement and hash, the issuer as the grant g records
-- it (NULL for a denial: the signed-in seller), who decided with its role
-- and approval.grant, and its cause (event_cause).
CREATE FUNCTION trovesnap.seller_approval_event(s trovesnap.seller_ctx, pr trovesnap.proposals, p_action text,
                                                p_decision text, g trovesnap.approval_grants) RETURNS void
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_client jsonb;
    v_event  jsonb;
BEGIN
    SELECT jsonb_build_object('id', c.id, 'name', c.name, 'type', c.client_type) INTO v_client
    FROM trovesnap.mcp_clients c WHERE c.id = pr.requested_by_client;
    v_event := trovesnap.seller_event(s, pr.correlation_id, p_action, 'approval.grant', 'approval', 'approval')
        || jsonb_build_object(
            'client', coalesce(v_client, jsonb_build_object('id', pr.requested_by_client, 'name', '')),
            'tool', jsonb_build_object('name', pr.tool_name, 'version', coalesce(pr.body -> 'tool' ->> 'version', '')),
            'related', trovesnap.empty_related() || jsonb_build_object('proposal_ids', jsonb_build_array(pr.id)),
            'payload', jsonb_build_object('input_hash', pr.proposal_hash,
                                          'redacted_summary', jsonb_build_object('proposal_id', pr.id)),
            'approval', jsonb_build_object('proposal_id', pr.id, 'approval_id', g.id, 'decision', p_decision,
                'requirement', coalesce(pr.body ->> 'approval_requirement', ''),
                'proposal_hash', coalesce(g.proposal_hash, pr.proposal_hash),
                'issued_by', CASE WHEN g.id IS NOT NULL THEN trovesnap.grant_json(g) -> 'issued_by'
                                  ELSE jsonb_build_object('type', 'human', 'actor_id', s.user_id) END),
            'occurred_at', trovesnap.ts(now()));
    v_event := v_event || jsonb_build_object('causation_id', trovesnap.event_cause(v_event));
    PERFORM trovesnap.record_event(v_event);
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
                    AND (coalesce(p_status, '') = '' OR trovesnap.proposal_status(p) = p_status)
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
    -- approval.grant first: a member who may not decide learns nothing
    -- about the proposal and takes no lock.
    s := trovesnap.seller_enter(p_tenant_id, NULL);
    IF NOT trovesnap.has_perm(s.role, 'approval.grant') THEN
        PERFORM trovesnap.fail('permission_denied:approval.grant');
    END IF;
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

-- seller_issue_grant records a human grant, as the embedded store's
-- IssueGrant does: a human issuer naming its actor and surface; the
-- signed-in seller is that actor and holds approval.grant in the tenant;
-- the proposal is the tenant's, pending, unexpired and still has the hash
-- the seller reviewed; the grant is for the proposal's own tool. A grant is
-- single use, active, and never outlives its proposal. The proposal becomes
-- approved and an approval_granted event joins its correlation.
CREATE FUNCTION public.seller_issue_grant(p_tenant_id text, p_actor_id text, p_grant jsonb) RETURNS jsonb
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

    INSERT INTO trovesnap.approval_grants (id, tenant_id, proposal_id, proposal_hash, issuer_type, issuer_actor,
        issuer_surface, tool, target_ids, constraints, status, single_use, issued_at, expires_at)
    VALUES (v_id, pr.tenant_id, pr.id, pr.proposal_hash, 'human', p_actor_id, p_grant -> 'issued_by' ->> 'surface',
        pr.tool_name, ARRAY(SELECT jsonb_array_elements_text(p_grant -> 'target_ids')),
        jsonb_build_object('maximum_items', coalesce((p_grant -> 'constraints' ->> 'maximum_items')::integer, 0),
                           'maximum_cost_usd', coalesce((p_grant -> 'constraints' ->> 'maximum_cost_usd')::numeric, 0),
                           'allow_publication', coalesce((p_grant -> 'constraints' ->> 'allow_publication')::boolean, false),
                           'allow_notifications', coalesce((p_grant -> 'constraints' ->> 'allow_notifications')::boolean, false)),
        'active', true, v_issued, v_expires)
    RETURNING * INTO g;
    UPDATE trovesnap.proposals SET status = 'approved', decided_by = p_actor_id WHERE id = pr.id;
    PERFORM trovesnap.seller_approval_event(s, pr, 'approval_granted', 'allowed', g);
    RETURN trovesnap.grant_json(g);
END
$$;

-- seller_revoke_grant revokes an active grant of the tenant: it can never
-- authorise afterwards; an approved proposal is pending again. The
-- signed-in seller must be p_actor_id and hold approval.grant.
CREATE FUNCTION public.seller_revoke_grant(p_tenant_id text, p_grant_id text, p_actor_id text) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    s  trovesnap.seller_ctx;
    g  trovesnap.approval_grants;
    pr trovesnap.proposals;
BEGIN
    s := trovesnap.approver_enter(p_tenant_id, p_actor_id);
    SELECT * INTO g FROM trovesnap.approval_grants x WHERE x.id = p_grant_id;
    IF NOT FOUND THEN
        PERFORM trovesnap.fail('invalid_reference:grant', jsonb_build_object('id', coalesce(p_grant_id, ''), 'cross_tenant', false)::text);
    END IF;
    -- The proposal first, then the grant: the order an execution locks them
    -- in, so a revocation racing an execution waits instead of deadlocking.
    SELECT * INTO pr FROM trovesnap.proposals x WHERE x.id = g.proposal_id FOR UPDATE;
    SELECT * INTO g FROM trovesnap.approval_grants x WHERE x.id = p_grant_id FOR UPDATE;
    IF g.status <> 'active' THEN
        PERFORM trovesnap.fail('transition_invalid', format('grant %s is %s', g.id, g.status));
    END IF;
    UPDATE trovesnap.approval_grants SET status = 'revoked', revoked_at = now(), revoked_by = p_actor_id
    WHERE id = g.id RETURNING * INTO g;
    IF pr.status = 'approved' THEN
        UPDATE trovesnap.proposals SET status = 'pending_approval' WHERE id = pr.id;
    END IF;
    PERFORM trovesnap.seller_approval_event(s, pr, 'approval_revoked', 'revoked', g);
    RETURN trovesnap.grant_json(g);
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
    RETURN trovesnap.policy_json(p);
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
    RETURN (SELECT coalesce(jsonb_agg(trovesnap.policy_json(p) ORDER BY p.id), '[]')
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
    s := trovesnap.seller_enter_record('automation_policies', 'policy', coalesce(p_policy_id, ''), 'proposal.read');
    SELECT * INTO STRICT p FROM trovesnap.automation_policies WHERE id = p_policy_id AND tenant_id = s.tenant_id;
    RETURN trovesnap.policy_json(p);
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
    s := trovesnap.seller_enter_record('automation_policies', 'policy', coalesce(p_policy_id, ''), 'policy.manage');
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
    RETURN trovesnap.policy_json(p);
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
    -- One's own role; another member's only for a member who manages clients.
    IF p_user_id IS DISTINCT FROM s.user_id AND NOT trovesnap.has_perm(s.role, 'client.manage') THEN
        PERFORM trovesnap.fail('permission_denied:client.manage');
    END IF;
    RETURN coalesce((SELECT m.role FROM trovesnap.memberships m WHERE m.tenant_id = s.tenant_id AND m.user_id = p_user_id), '');
END
$$;

-- seller_current_versions: the current version of each target id (items,
-- sales, candidates) of the tenant, as an object; unknown ids are absent. A
-- staged export is at domain.ExportVersion while it can still be delivered
-- (as the store's CurrentVersions): the approval step compares a delivery
-- proposal's targets with these before the seller may approve it.
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
            UNION ALL
            SELECT x.id, 1 FROM trovesnap.export_drafts x
            WHERE x.tenant_id = s.tenant_id AND x.id = ANY (v_ids) AND x.status IN ('staged', 'delivery_proposed')
              AND NOT trovesnap.export_delivery_queued(x.id)
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
SELECT trovesnap.revoke_execute(ARRAY[
    'seller_user', 'seller_linked_user', 'seller_member_of', 'seller_in', 'seller_enter', 'seller_enter_record',
    'approver_enter', 'seller_actor', 'seller_proposal_json', 'seller_grant_json', 'seller_event',
    'seller_approval_event', 'seller_validate_policy', 'seller_write_policy_version', 'seller_whoami',
    'seller_list_proposals', 'seller_get_proposal', 'seller_deny_proposal', 'seller_issue_grant',
    'seller_revoke_grant', 'seller_list_grants', 'seller_create_policy', 'seller_list_policies', 'seller_get_policy',
    'seller_set_policy_status', 'seller_member_role', 'seller_current_versions', 'seller_audit_trail']);
SELECT trovesnap.grant_execute('authenticated', ARRAY[
    'public.seller_whoami()', 'public.seller_list_proposals(text, text)', 'public.seller_get_proposal(text, text)',
    'public.seller_deny_proposal(text, text, text, text, text)', 'public.seller_issue_grant(text, text, jsonb)',
    'public.seller_revoke_grant(text, text, text)', 'public.seller_list_grants(text, text)',
    'public.seller_create_policy(text, jsonb)', 'public.seller_list_policies(text)', 'public.seller_get_policy(text)',
    'public.seller_set_policy_status(text, text, text)', 'public.seller_member_role(text, text)',
    'public.seller_current_versions(text, jsonb)', 'public.seller_audit_trail(text, text)']);

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (7, '20261130120300_trovesnap_seller_rpcs');

RESET ROLE;
