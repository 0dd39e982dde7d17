-- trovesnap live mode, migration 8: seller-surface RPCs for MCP clients and limits under a signed-in user's JWT.
--
-- `trovesnap client …` and `trovesnap limits …` in live mode, and the
-- approval terminal's client list, call these with the seller's own Supabase
-- Auth access token (role authenticated): the user is the JWT's `sub`
-- (trovesnap.users.auth_subject), never an argument. They mirror the
-- embedded store (store/clients.go, store/limits.go) — same validation, same
-- outcomes, same plugin_events — and add what the store leaves to the CLI:
--   * a user acts only in tenants it is a member of; a tenant or client of
--     any other tenant answers exactly like a missing one (invalid_reference
--     with cross_tenant false: no existence oracle for a seller);
--   * reading clients and limits needs membership; changing them (register,
--     suspend, reactivate, revoke, rotate, set limits) needs client.manage;
--   * `by` / `created_by` may only name the signed-in user (default: it).
-- Credentials never cross the network in clear: the CLI generates the token
-- and sends only its hex sha256, which is all the database keeps.
--
-- Every function is SECURITY DEFINER (trovesnap_owner, itself subject to the
-- FORCEd row level security: the tenant context is set only after the
-- membership check), has a fixed search_path, starts with
-- trovesnap.begin_rpc('authenticated'), and is executable by authenticated
-- only.

SET ROLE trovesnap_owner;

-- ---------------------------------------------------------------------------
-- Helpers (not exposed: schema trovesnap has no USAGE for request roles)
-- ---------------------------------------------------------------------------

-- The seller is found and admitted by migration 7's helpers: the user of
-- the JWT's sub (seller_linked_user: auth_required, permission_denied:user),
-- a tenant it is a member of (seller_in, refused as invalid_reference:tenant
-- like a missing tenant) or the tenant of a client it is a member of
-- (seller_enter_record, invalid_reference:client), holding client.manage
-- to change anything.

-- seller_client_by: a `by` / `created_by` argument may only name the
-- signed-in user; empty means the signed-in user.
CREATE FUNCTION trovesnap.seller_client_by(p_user text, p_field text, p_by text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    AS $$
BEGIN
    IF coalesce(p_by, '') <> '' AND p_by <> p_user THEN
        PERFORM trovesnap.fail('invalid_input:' || p_field, 'must be the signed-in user (' || p_user || ') or empty');
    END IF;
END
$$;

-- seller_client_json: the fields of domain.Client (never the credential hash).
CREATE FUNCTION trovesnap.seller_client_json(c trovesnap.mcp_clients) RETURNS jsonb
    LANGUAGE sql STABLE
    AS $$
        SELECT jsonb_build_object('id', c.id, 'tenant_id', c.tenant_id, 'source_connection_id', c.source_connection_id,
            'name', c.name, 'client_type', c.client_type, 'status', c.status, 'actor_id', c.actor_id,
            'allowed_tool_groups', to_jsonb(c.allowed_tool_groups), 'approval_policy_ids', to_jsonb(c.approval_policy_ids),
            'trust_level', c.trust_level, 'risk_class', c.risk_class, 'demo', c.demo, 'created_by', c.created_by,
            'created_at', trovesnap.ts(c.created_at), 'last_seen_at', trovesnap.ts(c.last_seen_at),
            'has_credential', c.credential_hash IS NOT NULL)
    $$;

CREATE FUNCTION trovesnap.seller_limits_json(l trovesnap.mcp_limits) RETURNS jsonb
    LANGUAGE sql IMMUTABLE
    AS $$
        SELECT jsonb_build_object('read_calls_per_minute', l.read_calls_per_minute,
            'candidate_writes_per_minute', l.candidate_writes_per_minute, 'proposals_per_minute', l.proposals_per_minute,
            'controlled_actions_per_minute', l.controlled_actions_per_minute, 'maximum_bulk_targets', l.maximum_bulk_targets,
            'maximum_daily_paid_cost_usd', l.maximum_daily_paid_cost_usd)
    $$;

-- seller_client_event records a seller-side action on a client as the
-- store's adminEvent does: seller_event (the acting member and role,
-- client.manage, domain clients/<action>) naming the client, in the tenant
-- context the caller entered.
CREATE FUNCTION trovesnap.seller_client_event(s trovesnap.seller_ctx, c trovesnap.mcp_clients, p_action text) RETURNS void
    LANGUAGE plpgsql
    AS $$
BEGIN
    PERFORM trovesnap.record_event(
        trovesnap.seller_event(s, trovesnap.new_id('corr'), p_action, 'client.manage', 'clients', 'cli')
        || jsonb_build_object(
            'client', jsonb_build_object('id', c.id, 'name', c.name, 'type', c.client_type),
            'payload', jsonb_build_object('input_hash', '', 'redacted_summary', jsonb_build_object('client_id', c.id)),
            'occurred_at', trovesnap.ts(now())));
END
$$;

-- seller_client_hash: a credential hash as the CLI sends it (hex sha256).
CREATE FUNCTION trovesnap.seller_client_hash(p_hash text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    AS $$
BEGIN
    IF p_hash IS NULL OR p_hash !~ '^[0-9a-f]{64}$' THEN
        PERFORM trovesnap.fail('invalid_input:credential_hash', 'must be the hex sha256 of the new credential');
    END IF;
END
$$;

-- ---------------------------------------------------------------------------
-- RPCs
-- ---------------------------------------------------------------------------

-- seller_register_client registers an active client for a member of a
-- tenant the caller manages clients of (domain.ValidateNewClient's checks,
-- then the store's: tenant, actor membership). created_by is the caller.
-- The credential arrives as its hash only; the event client_registered
-- commits with the row.
CREATE FUNCTION public.seller_register_client(p_tenant_id text, p_actor_id text, p_name text, p_client_type text,
                                              p_groups text[], p_credential_hash text, p_trust_level text DEFAULT NULL,
                                              p_risk_class text DEFAULT NULL, p_created_by text DEFAULT NULL) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    v_user   text;
    s        trovesnap.seller_ctx;
    v_types  text[] := ARRAY['claude_code', 'claude_desktop', 'chatgpt', 'local_agent', 'desktop_harness',
                             'internal_automation', 'custom'];
    v_all    text[] := ARRAY['public_read', 'tenant_read', 'candidate_write', 'action_proposal', 'controlled_action'];
    v_trusts text[] := ARRAY['trusted_local_client', 'standard_client', 'untrusted_client'];
    v_risks  text[] := ARRAY['standard', 'elevated', 'restricted'];
    v_groups text[];
    g        text;
    c        trovesnap.mcp_clients;
BEGIN
    PERFORM trovesnap.begin_rpc('authenticated');
    v_user := (trovesnap.seller_linked_user()).id;
    -- domain.ValidateNewClient, in its order and words.
    IF p_name IS NULL OR p_name ~ '^\s*$' OR octet_length(p_name) > 100 THEN
        PERFORM trovesnap.fail('invalid_input:name', 'required, at most 100 characters');
    END IF;
    IF p_client_type IS NULL OR NOT (p_client_type = ANY (v_types)) THEN
        PERFORM trovesnap.fail('invalid_input:type', 'one of ' || array_to_string(v_types, ', '));
    END IF;
    IF coalesce(cardinality(p_groups), 0) = 0 THEN
        PERFORM trovesnap.fail('invalid_input:groups', 'at least one of ' || array_to_string(v_all, ', '));
    END IF;
    IF coalesce(p_trust_level, '') <> '' AND NOT (p_trust_level = ANY (v_trusts)) THEN
        PERFORM trovesnap.fail('invalid_input:trust', 'one of ' || array_to_string(v_trusts, ', '));
    END IF;
    IF coalesce(p_risk_class, '') <> '' AND NOT (p_risk_class = ANY (v_risks)) THEN
        PERFORM trovesnap.fail('invalid_input:risk_class', 'one of ' || array_to_string(v_risks, ', '));
    END IF;
    FOREACH g IN ARRAY p_groups
    LOOP
        IF g IS NULL OR NOT (g = ANY (v_all)) THEN
            PERFORM trovesnap.fail('invalid_input:groups',
                coalesce(g, 'null') || ' is not a tool group (' || array_to_string(v_all, ', ') || ')');
        END IF;
    END LOOP;
    PERFORM trovesnap.seller_client_hash(p_credential_hash);

    s := trovesnap.seller_in(v_user, p_tenant_id, 'client.manage', 'invalid_reference:tenant', p_tenant_id);
    IF (trovesnap.seller_member_of(coalesce(p_actor_id, ''), p_tenant_id)).membership_id IS NULL THEN
        PERFORM trovesnap.fail('invalid_input:actor', coalesce(p_actor_id, '') || ' is not a member of ' || p_tenant_id);
    END IF;
    PERFORM trovesnap.seller_client_by(v_user, 'created_by', p_created_by);

    v_groups := ARRAY(SELECT DISTINCT x COLLATE "C" FROM unnest(p_groups) AS x ORDER BY 1);
    INSERT INTO trovesnap.mcp_clients (id, tenant_id, source_connection_id, name, client_type, status, actor_id,
        allowed_tool_groups, trust_level, risk_class, demo, created_by, created_at, credential_hash)
    VALUES (trovesnap.new_id('mcp_client'), p_tenant_id, trovesnap.new_id('conn'), p_name, p_client_type, 'active',
        p_actor_id, v_groups, coalesce(nullif(p_trust_level, ''), 'standard_client'),
        coalesce(nullif(p_risk_class, ''), 'standard'), false, v_user, now(), p_credential_hash)
    RETURNING * INTO c;
    PERFORM trovesnap.seller_client_event(s, c, 'client_registered');
    RETURN trovesnap.seller_client_json(c);
END
$$;

-- seller_list_clients: the clients of one tenant the caller is a member of,
-- or (p_tenant_id empty) of every such tenant, by (tenant, id).
CREATE FUNCTION public.seller_list_clients(p_tenant_id text DEFAULT NULL) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    v_user    text;
    v_tenants text[];
    t         text;
    v_out     jsonb := '[]';
    v_rows    jsonb;
BEGIN
    PERFORM trovesnap.begin_rpc('authenticated');
    v_user := (trovesnap.seller_linked_user()).id;
    IF coalesce(p_tenant_id, '') <> '' THEN
        v_tenants := ARRAY[p_tenant_id];
    ELSE
        PERFORM set_config('trovesnap.system', 'on', true);
        v_tenants := ARRAY(SELECT m.tenant_id FROM trovesnap.memberships m WHERE m.user_id = v_user ORDER BY 1);
        PERFORM set_config('trovesnap.system', 'off', true);
    END IF;
    -- One tenant context at a time: row level security sees to the rest.
    FOREACH t IN ARRAY v_tenants
    LOOP
        PERFORM trovesnap.seller_in(v_user, t, NULL, 'invalid_reference:tenant', t);
        SELECT coalesce(jsonb_agg(trovesnap.seller_client_json(c) ORDER BY c.id), '[]') INTO v_rows
        FROM trovesnap.mcp_clients c WHERE c.tenant_id = t;
        v_out := v_out || v_rows;
    END LOOP;
    PERFORM set_config('trovesnap.tenant_id', '', true);
    RETURN v_out;
END
$$;

-- seller_get_client: one client of a tenant the caller is a member of.
CREATE FUNCTION public.seller_get_client(p_client_id text) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    c trovesnap.mcp_clients;
BEGIN
    PERFORM trovesnap.seller_enter_record('mcp_clients', 'client', p_client_id, NULL);
    SELECT * INTO c FROM trovesnap.mcp_clients m WHERE m.id = p_client_id;
    RETURN trovesnap.seller_client_json(c);
END
$$;

-- seller_set_client_status suspends, reactivates or revokes (the store's
-- transitions: revoked is final; pending only becomes active or revoked).
-- Revoking drops the credential hash. The change is seen by the very next
-- call of every server, which authenticates each call from the database.
CREATE FUNCTION public.seller_set_client_status(p_client_id text, p_status text, p_by text DEFAULT NULL) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    s    trovesnap.seller_ctx;
    c    trovesnap.mcp_clients;
    v_to text[];
BEGIN
    s := trovesnap.seller_enter_record('mcp_clients', 'client', p_client_id, 'client.manage');
    PERFORM trovesnap.seller_client_by(s.user_id, 'by', p_by);
    SELECT * INTO c FROM trovesnap.mcp_clients m WHERE m.id = p_client_id FOR UPDATE;
    v_to := CASE c.status WHEN 'active' THEN ARRAY['suspended', 'revoked']
                          WHEN 'suspended' THEN ARRAY['active', 'revoked']
                          WHEN 'pending' THEN ARRAY['active', 'revoked']
                          ELSE ARRAY[]::text[] END;
    IF p_status IS NULL OR NOT (p_status = ANY (v_to)) THEN
        PERFORM trovesnap.fail('transition_invalid',
            'client ' || c.id || ' is ' || c.status || ' and cannot become ' || coalesce(p_status, 'null'));
    END IF;
    IF p_status = 'revoked' THEN
        UPDATE trovesnap.mcp_clients m SET status = p_status, credential_hash = NULL WHERE m.id = c.id RETURNING * INTO c;
    ELSE
        UPDATE trovesnap.mcp_clients m SET status = p_status WHERE m.id = c.id RETURNING * INTO c;
    END IF;
    PERFORM trovesnap.seller_client_event(s, c,
        CASE p_status WHEN 'active' THEN 'client_reactivated' WHEN 'suspended' THEN 'client_suspended' ELSE 'client_revoked' END);
    RETURN trovesnap.seller_client_json(c);
END
$$;

-- seller_rotate_client_credential replaces a client's credential hash with
-- the new one's; the old credential stops working at once. A revoked client
-- stays revoked; the mock demo client has no credential.
CREATE FUNCTION public.seller_rotate_client_credential(p_client_id text, p_credential_hash text, p_by text DEFAULT NULL)
    RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    s trovesnap.seller_ctx;
    c trovesnap.mcp_clients;
BEGIN
    s := trovesnap.seller_enter_record('mcp_clients', 'client', p_client_id, 'client.manage');
    PERFORM trovesnap.seller_client_by(s.user_id, 'by', p_by);
    PERFORM trovesnap.seller_client_hash(p_credential_hash);
    SELECT * INTO c FROM trovesnap.mcp_clients m WHERE m.id = p_client_id FOR UPDATE;
    IF c.status = 'revoked' THEN
        PERFORM trovesnap.fail('transition_invalid', 'client ' || c.id || ' is revoked');
    END IF;
    IF c.demo THEN
        PERFORM trovesnap.fail('transition_invalid', 'the mock demo client has no credential');
    END IF;
    UPDATE trovesnap.mcp_clients m SET credential_hash = p_credential_hash WHERE m.id = c.id RETURNING * INTO c;
    PERFORM trovesnap.seller_client_event(s, c, 'client_credential_rotated');
    RETURN trovesnap.seller_client_json(c);
END
$$;

-- seller_client_principal: the principal a client would act as, whatever
-- its status (`tools list --as` explains visibility with it); an actor
-- without membership yields no role.
CREATE FUNCTION public.seller_client_principal(p_client_id text) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    c        trovesnap.mcp_clients;
    m        trovesnap.memberships;
    v_scoped boolean := false;
    v_sales  jsonb;
BEGIN
    PERFORM trovesnap.seller_enter_record('mcp_clients', 'client', p_client_id, NULL);
    SELECT * INTO c FROM trovesnap.mcp_clients x WHERE x.id = p_client_id;
    SELECT * INTO m FROM trovesnap.memberships x WHERE x.tenant_id = c.tenant_id AND x.user_id = c.actor_id;
    IF m.id IS NOT NULL AND m.sale_scoped THEN
        v_scoped := true;
        SELECT coalesce(jsonb_agg(ms.sale_id ORDER BY ms.sale_id), '[]') INTO v_sales
        FROM trovesnap.membership_sales ms WHERE ms.membership_id = m.id;
    END IF;
    RETURN jsonb_build_object(
        'client', jsonb_build_object('id', c.id, 'name', c.name, 'type', c.client_type),
        'client_status', c.status,
        'allowed_tool_groups', to_jsonb(c.allowed_tool_groups),
        'actor_id', c.actor_id,
        'actor_type', 'seller',
        'tenant_id', c.tenant_id,
        'membership_id', coalesce(m.id, ''),
        'role', coalesce(m.role, ''),
        'public', false,
        'sale_scoped', v_scoped,
        'assigned_sale_ids', v_sales);
END
$$;

-- seller_set_limits stores the limits of a tenant (p_client_id empty) or of
-- one of its clients. Negative values are refused before anything else, as
-- in the store; no event (the store records none).
CREATE FUNCTION public.seller_set_limits(p_tenant_id text, p_client_id text, p_read_calls_per_minute integer,
                                         p_candidate_writes_per_minute integer, p_proposals_per_minute integer,
                                         p_controlled_actions_per_minute integer, p_maximum_bulk_targets integer,
                                         p_maximum_daily_paid_cost_usd numeric) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    v_user   text;
    v_client text := coalesce(p_client_id, '');
    l        trovesnap.mcp_limits;
BEGIN
    PERFORM trovesnap.begin_rpc('authenticated');
    v_user := (trovesnap.seller_linked_user()).id;
    IF p_read_calls_per_minute IS NULL OR p_candidate_writes_per_minute IS NULL OR p_proposals_per_minute IS NULL
       OR p_controlled_actions_per_minute IS NULL OR p_maximum_bulk_targets IS NULL OR p_maximum_daily_paid_cost_usd IS NULL
       OR p_read_calls_per_minute < 0 OR p_candidate_writes_per_minute < 0 OR p_proposals_per_minute < 0
       OR p_controlled_actions_per_minute < 0 OR p_maximum_bulk_targets < 0 OR p_maximum_daily_paid_cost_usd < 0 THEN
        PERFORM trovesnap.fail('invalid_input:limits', 'must not be negative');
    END IF;
    PERFORM trovesnap.seller_in(v_user, p_tenant_id, 'client.manage', 'invalid_reference:tenant', p_tenant_id);
    IF v_client <> '' AND NOT EXISTS (SELECT 1 FROM trovesnap.mcp_clients c WHERE c.id = v_client) THEN
        -- Not a client of this tenant: missing, or another tenant's — the
        -- same answer either way.
        PERFORM trovesnap.fail('invalid_reference:client', jsonb_build_object('id', v_client, 'cross_tenant', false)::text);
    END IF;
    INSERT INTO trovesnap.mcp_limits AS ml (tenant_id, client_id, read_calls_per_minute, candidate_writes_per_minute,
        proposals_per_minute, controlled_actions_per_minute, maximum_bulk_targets, maximum_daily_paid_cost_usd, updated_at)
    VALUES (p_tenant_id, v_client, p_read_calls_per_minute, p_candidate_writes_per_minute, p_proposals_per_minute,
        p_controlled_actions_per_minute, p_maximum_bulk_targets, p_maximum_daily_paid_cost_usd, now())
    ON CONFLICT (tenant_id, client_id) DO UPDATE SET read_calls_per_minute = excluded.read_calls_per_minute,
        candidate_writes_per_minute = excluded.candidate_writes_per_minute, proposals_per_minute = excluded.proposals_per_minute,
        controlled_actions_per_minute = excluded.controlled_actions_per_minute,
        maximum_bulk_targets = excluded.maximum_bulk_targets,
        maximum_daily_paid_cost_usd = excluded.maximum_daily_paid_cost_usd, updated_at = excluded.updated_at
    RETURNING * INTO l;
    RETURN trovesnap.seller_limits_json(l);
END
$$;

-- seller_effective_limits: the client's row, else the tenant's, else the
-- spec's §38 defaults (also for an empty tenant, as in the store).
CREATE FUNCTION public.seller_effective_limits(p_tenant_id text, p_client_id text DEFAULT NULL) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    v_user text;
    l      trovesnap.mcp_limits;
BEGIN
    PERFORM trovesnap.begin_rpc('authenticated');
    v_user := (trovesnap.seller_linked_user()).id;
    IF coalesce(p_tenant_id, '') <> '' THEN
        PERFORM trovesnap.seller_in(v_user, p_tenant_id, NULL, 'invalid_reference:tenant', p_tenant_id);
        SELECT * INTO l FROM trovesnap.mcp_limits m
        WHERE m.tenant_id = p_tenant_id AND m.client_id IN ('', coalesce(p_client_id, ''))
        ORDER BY m.client_id DESC LIMIT 1;
        IF FOUND THEN
            RETURN trovesnap.seller_limits_json(l);
        END IF;
    END IF;
    RETURN jsonb_build_object('read_calls_per_minute', 120, 'candidate_writes_per_minute', 20, 'proposals_per_minute', 20,
        'controlled_actions_per_minute', 10, 'maximum_bulk_targets', 50, 'maximum_daily_paid_cost_usd', 0);
END
$$;

-- Nothing here is executable by anyone but its owner, except the seller
-- RPCs, which only a signed-in user (role authenticated) may call.
SELECT trovesnap.revoke_execute(ARRAY[
    'seller_client_by', 'seller_client_json', 'seller_limits_json', 'seller_client_event', 'seller_client_hash',
    'seller_register_client', 'seller_list_clients', 'seller_get_client', 'seller_set_client_status',
    'seller_rotate_client_credential', 'seller_client_principal', 'seller_set_limits', 'seller_effective_limits']);
SELECT trovesnap.grant_execute('authenticated', ARRAY[
    'public.seller_register_client(text, text, text, text, text[], text, text, text, text)',
    'public.seller_list_clients(text)', 'public.seller_get_client(text)',
    'public.seller_set_client_status(text, text, text)', 'public.seller_rotate_client_credential(text, text, text)',
    'public.seller_client_principal(text)',
    'public.seller_set_limits(text, text, integer, integer, integer, integer, integer, numeric)',
    'public.seller_effective_limits(text, text)']);

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (8, '20261130120400_trovesnap_seller_client_rpcs');

RESET ROLE;
