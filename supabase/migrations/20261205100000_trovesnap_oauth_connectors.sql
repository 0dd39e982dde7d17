-- TroveSnap: OAuth connectors (issue 17, part 3).
--
-- ChatGPT's and Claude's connectors reach a remote `trovesnap mcp serve
-- --http` and sign in as the seller through the project's Supabase Auth
-- (its OAuth 2.1 server). The server verifies each access token and forwards
-- it as the request's bearer token, so PostgREST runs the MCP RPC as role
-- `authenticated` with the token's claims. This migration makes the
-- database decide which client such a call is, with no server key:
--
--   * mcp_clients.oauth_client_id binds a client to one OAuth client, and
--     oauth_resource names the server (its /mcp URL) the tokens must be for;
--     a seller registers the binding (seller_register_client's new
--     arguments), and a connector has no token to rotate;
--   * request_credential_hash, for an `authenticated` caller, is the
--     credential hash of the client bound to the token's client_id whose
--     actor is the token's sub, provided the token's aud names the client's
--     resource; the client token header is ignored then. A token without
--     client_id (a seller's own session) is refused (forbidden) and one of an
--     unbound OAuth client, another member or another resource is
--     client_not_registered, on every MCP RPC;
--   * begin_rpc admits such a caller to the MCP RPCs, which are now
--     executable by `authenticated` too;
--   * the other way round, a connector's token is not the seller: the seller
--     RPCs (seller_user) and the seller's read policies (jwt_tenants) refuse
--     a token that names an OAuth client, so a connector can never approve,
--     grant, manage clients or read rows directly;
--   * trovesnap_access_token_hook is the Custom Access Token Hook a project
--     configures (Supabase does not take RFC 8707 resource indicators): for a
--     token issued to a bound OAuth client for its member, it adds the
--     client's resource to aud, so the token is for that server and no other.

SET ROLE trovesnap_owner;

-- oauth_client_id_ok: an OAuth client id as domain.OAuthClientIDPattern
-- (the same text) takes it; the column's check and seller_register_client
-- both ask it.
CREATE FUNCTION trovesnap.oauth_client_id_ok(p_id text) RETURNS boolean
    LANGUAGE sql IMMUTABLE
    AS $$ SELECT p_id IS NOT NULL AND p_id ~ '^[!-~]{1,255}$' $$;

ALTER TABLE trovesnap.mcp_clients
    ADD COLUMN oauth_client_id text UNIQUE CHECK (oauth_client_id IS NULL OR trovesnap.oauth_client_id_ok(oauth_client_id)),
    ADD COLUMN oauth_resource text CHECK (octet_length(oauth_resource) <= 2048),
    ADD CONSTRAINT mcp_clients_oauth_both CHECK ((oauth_client_id IS NULL) = (oauth_resource IS NULL));

-- oauth_resource_ok: a connector's resource as domain.CheckOAuthResource
-- takes it: domain.OAuthResourcePattern (the same text), at most
-- domain.MaxOAuthResourceBytes.
CREATE FUNCTION trovesnap.oauth_resource_ok(p_url text) RETURNS boolean
    LANGUAGE sql IMMUTABLE
    AS $$
        SELECT p_url IS NOT NULL AND octet_length(p_url) <= 2048
           AND p_url ~ '^(https://([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])|http://(localhost|127\.0\.0\.1|\[::1\]))(:[0-9]{1,5})?(/([A-Za-z0-9._~!$&''()*+,;=:@/-]|%[0-9A-Fa-f]{2})*)?$'
    $$;

-- jwt_claims: the request's JWT claims (an empty object when none).
CREATE FUNCTION trovesnap.jwt_claims() RETURNS jsonb
    LANGUAGE sql STABLE
    AS $$ SELECT coalesce(nullif(current_setting('request.jwt.claims', true), '')::jsonb, '{}'::jsonb) $$;

-- aud_names: whether an aud claim (a string or an array of strings) names
-- p_resource, a trailing slash aside (the go-sdk's oauthex.MatchesResource).
CREATE FUNCTION trovesnap.aud_names(p_aud jsonb, p_resource text) RETURNS boolean
    LANGUAGE sql IMMUTABLE
    AS $$
        SELECT p_resource IS NOT NULL AND EXISTS (
            SELECT 1 FROM jsonb_array_elements_text(CASE jsonb_typeof(p_aud) WHEN 'string' THEN jsonb_build_array(p_aud)
                                                                            WHEN 'array' THEN p_aud ELSE '[]'::jsonb END) a
            WHERE a = p_resource OR regexp_replace(a, '/$', '') = regexp_replace(p_resource, '/$', ''))
    $$;

-- connector_credential_hash: the credential hash of the client bound to a
-- connector's access token (claims of an `authenticated` request), read in
-- system context. Refusals raise: a seller's own session is forbidden, any
-- token that reaches no binding for its audience is client_not_registered.
CREATE FUNCTION trovesnap.connector_credential_hash(p_claims jsonb) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    v_client text := p_claims ->> 'client_id';
    v_sub    text := p_claims ->> 'sub';
    v_prev   text := coalesce(current_setting('trovesnap.system', true), 'off');
    v_hash   text;
    v_res    text;
BEGIN
    IF coalesce(v_client, '') = '' THEN
        PERFORM trovesnap.fail('forbidden', 'a seller''s own session calls no MCP RPC: a connector''s access token names its OAuth client');
    END IF;
    IF coalesce(v_sub, '') <> '' THEN
        PERFORM set_config('trovesnap.system', 'on', true);
        SELECT c.credential_hash, c.oauth_resource INTO v_hash, v_res
        FROM trovesnap.mcp_clients c JOIN trovesnap.users u ON u.id = c.actor_id
        WHERE c.oauth_client_id = v_client AND u.auth_subject = v_sub;
        PERFORM set_config('trovesnap.system', v_prev, true);
    END IF;
    IF v_hash IS NULL OR NOT trovesnap.aud_names(p_claims -> 'aud', v_res) THEN
        PERFORM trovesnap.fail('client_not_registered', 'no client is bound to this connector and account for this server');
    END IF;
    RETURN v_hash;
END
$$;

-- request_credential_hash: an `authenticated` caller is a connector (its
-- bound client's hash, or a refusal); any other caller's client is the
-- token in `x-trovesnap-client-token`, as before.
CREATE OR REPLACE FUNCTION trovesnap.request_credential_hash() RETURNS text
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    v_claims  jsonb := trovesnap.jwt_claims();
    v_headers jsonb;
    v_token   text;
BEGIN
    IF v_claims ->> 'role' = 'authenticated' THEN
        RETURN trovesnap.connector_credential_hash(v_claims);
    END IF;
    -- PostgREST always sets valid JSON; anything else fails the call (no
    -- EXCEPTION block: it would open a subtransaction on every RPC).
    v_headers := nullif(current_setting('request.headers', true), '')::jsonb;
    IF jsonb_typeof(v_headers) IS DISTINCT FROM 'object' THEN
        RETURN NULL;
    END IF;
    v_token := btrim(v_headers ->> 'x-trovesnap-client-token');
    -- A token is a few dozen characters; anything long is no token and is
    -- not hashed (lookup_client refuses NULL as client_not_registered).
    IF coalesce(v_token, '') = '' OR length(v_token) > 256 THEN
        RETURN NULL;
    END IF;
    RETURN encode(sha256(convert_to(v_token, 'UTF8')), 'hex');
END
$$;

-- begin_rpc: an MCP RPC is called with the public key (anon: its client is
-- the token header) or with a connector's access token (authenticated, with
-- a client_id: its client is the binding); a seller RPC requires its role.
CREATE OR REPLACE FUNCTION trovesnap.begin_rpc(p_role text) RETURNS void
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_claims jsonb := trovesnap.jwt_claims();
    v_role   text := coalesce(v_claims ->> 'role', '');
BEGIN
    PERFORM set_config('trovesnap.tenant_id', '', true);
    PERFORM set_config('trovesnap.system', 'off', true);
    IF p_role = 'trovesnap_mcp' THEN
        IF NOT (v_role = 'anon' OR (v_role = 'authenticated' AND coalesce(v_claims ->> 'client_id', '') <> '')) THEN
            PERFORM trovesnap.fail('forbidden');
        END IF;
    ELSIF v_role <> p_role THEN
        PERFORM trovesnap.fail('forbidden');
    END IF;
END
$$;

-- seller_user: a connector's access token is not the seller's own session.
CREATE OR REPLACE FUNCTION trovesnap.seller_user() RETURNS trovesnap.users
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    v_claims jsonb := trovesnap.jwt_claims();
    v_sub    text := v_claims ->> 'sub';
    u        trovesnap.users;
BEGIN
    IF coalesce(v_claims ->> 'client_id', '') <> '' THEN
        PERFORM trovesnap.fail('forbidden', 'a connector''s access token is not the seller''s own session');
    END IF;
    IF coalesce(v_sub, '') = '' THEN
        PERFORM trovesnap.fail('auth_required');
    END IF;
    PERFORM set_config('trovesnap.system', 'on', true);
    SELECT * INTO u FROM trovesnap.users WHERE auth_subject = v_sub;
    PERFORM set_config('trovesnap.system', 'off', true);
    RETURN u;
END
$$;

-- jwt_tenants: a connector's token reads no row under the seller's policies.
CREATE OR REPLACE FUNCTION trovesnap.jwt_tenants() RETURNS SETOF text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    IF coalesce(trovesnap.jwt_claims() ->> 'client_id', '') <> '' THEN
        RETURN;
    END IF;
    PERFORM set_config('trovesnap.system', 'on', true);
    RETURN QUERY
        SELECT m.tenant_id::text FROM trovesnap.memberships m JOIN trovesnap.users u ON u.id = m.user_id
        WHERE u.auth_subject IS NOT NULL
          AND u.auth_subject = trovesnap.jwt_claims() ->> 'sub';
    PERFORM set_config('trovesnap.system', 'off', true);
END
$$;

-- seller_client_json gains the binding (never the hash).
CREATE OR REPLACE FUNCTION trovesnap.seller_client_json(c trovesnap.mcp_clients) RETURNS jsonb
    LANGUAGE sql STABLE
    AS $$
        SELECT jsonb_build_object('id', c.id, 'tenant_id', c.tenant_id, 'source_connection_id', c.source_connection_id,
            'name', c.name, 'client_type', c.client_type, 'status', c.status, 'actor_id', c.actor_id,
            'allowed_tool_groups', to_jsonb(c.allowed_tool_groups), 'approval_policy_ids', to_jsonb(c.approval_policy_ids),
            'trust_level', c.trust_level, 'risk_class', c.risk_class, 'demo', c.demo, 'created_by', c.created_by,
            'created_at', trovesnap.ts(c.created_at), 'last_seen_at', trovesnap.ts(c.last_seen_at),
            'has_credential', c.credential_hash IS NOT NULL)
            || CASE WHEN c.oauth_client_id IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('oauth_client_id', c.oauth_client_id) END
    $$;

-- seller_register_client takes a connector binding (p_oauth_client_id,
-- p_oauth_resource), checked as domain.ValidateNewClient checks it.
DROP FUNCTION public.seller_register_client(text, text, text, text, text[], text, text, text, text);
CREATE FUNCTION public.seller_register_client(p_tenant_id text, p_actor_id text, p_name text, p_client_type text,
                                              p_groups text[], p_credential_hash text, p_trust_level text DEFAULT NULL,
                                              p_risk_class text DEFAULT NULL, p_created_by text DEFAULT NULL,
                                              p_oauth_client_id text DEFAULT NULL, p_oauth_resource text DEFAULT NULL)
    RETURNS jsonb
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
    v_bound  text;
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
    -- domain.ValidateNewClient's connector binding: both or neither.
    IF coalesce(p_oauth_client_id, '') <> '' OR coalesce(p_oauth_resource, '') <> '' THEN
        IF NOT trovesnap.oauth_client_id_ok(p_oauth_client_id) THEN
            PERFORM trovesnap.fail('invalid_input:oauth_client_id',
                'the OAuth client id of the connector: printable ASCII without spaces, at most 255 bytes');
        END IF;
        IF NOT trovesnap.oauth_resource_ok(p_oauth_resource) THEN
            PERFORM trovesnap.fail('invalid_input:oauth_resource',
                'the server''s MCP endpoint URL (https://host/mcp; http only on loopback), without credentials, query or fragment');
        END IF;
    END IF;

    s := trovesnap.seller_in(v_user, p_tenant_id, 'client.manage', 'invalid_reference:tenant', p_tenant_id);
    IF (trovesnap.seller_member_of(coalesce(p_actor_id, ''), p_tenant_id)).membership_id IS NULL THEN
        PERFORM trovesnap.fail('invalid_input:actor', coalesce(p_actor_id, '') || ' is not a member of ' || p_tenant_id);
    END IF;
    PERFORM trovesnap.seller_client_by(v_user, 'created_by', p_created_by);

    IF coalesce(p_oauth_client_id, '') <> '' THEN
        PERFORM set_config('trovesnap.system', 'on', true);
        SELECT m.id INTO v_bound FROM trovesnap.mcp_clients m WHERE m.oauth_client_id = p_oauth_client_id;
        PERFORM set_config('trovesnap.system', 'off', true);
        IF v_bound IS NOT NULL THEN
            PERFORM trovesnap.fail('invalid_input:oauth_client_id', 'this OAuth client is already bound to a client');
        END IF;
    END IF;

    v_groups := ARRAY(SELECT DISTINCT x COLLATE "C" FROM unnest(p_groups) AS x ORDER BY 1);
    INSERT INTO trovesnap.mcp_clients (id, tenant_id, source_connection_id, name, client_type, status, actor_id,
        allowed_tool_groups, trust_level, risk_class, demo, created_by, created_at, credential_hash,
        oauth_client_id, oauth_resource)
    VALUES (trovesnap.new_id('mcp_client'), p_tenant_id, trovesnap.new_id('conn'), p_name, p_client_type, 'active',
        p_actor_id, v_groups, coalesce(nullif(p_trust_level, ''), 'standard_client'),
        coalesce(nullif(p_risk_class, ''), 'standard'), false, v_user, now(), p_credential_hash,
        nullif(p_oauth_client_id, ''), nullif(p_oauth_resource, ''))
    RETURNING * INTO c;
    PERFORM trovesnap.seller_client_event(s, c, 'client_registered');
    RETURN trovesnap.seller_client_json(c);
END
$$;


-- seller_rotate_client_credential: a connector has no token to rotate.
CREATE OR REPLACE FUNCTION public.seller_rotate_client_credential(p_client_id text, p_credential_hash text, p_by text DEFAULT NULL)
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
    IF c.oauth_client_id IS NOT NULL THEN
        -- A token would reach the connector's client without OAuth.
        PERFORM trovesnap.fail('transition_invalid',
            'client ' || c.id || ' is a connector: it signs in through OAuth and has no token to rotate');
    END IF;
    UPDATE trovesnap.mcp_clients m SET credential_hash = p_credential_hash WHERE m.id = c.id RETURNING * INTO c;
    PERFORM trovesnap.seller_client_event(s, c, 'client_credential_rotated');
    RETURN trovesnap.seller_client_json(c);
END
$$;


-- trovesnap_access_token_hook: the project's Custom Access Token Hook
-- (Authentication → Hooks → Customize Access Token, this function). For a
-- token issued to an OAuth client bound to a client of the signing-in user,
-- aud gains the client's resource (the MCP endpoint), kept with what it
-- named; every other token is returned unchanged. The client's status is not
-- read here: every request decides it afresh (a suspended or revoked
-- client's token is refused when used). Only Supabase Auth's role may
-- execute it.
CREATE FUNCTION public.trovesnap_access_token_hook(event jsonb) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    v_claims jsonb := event -> 'claims';
    v_client text := event -> 'claims' ->> 'client_id';
    v_prev   text := coalesce(current_setting('trovesnap.system', true), 'off');
    v_res    text;
    v_aud    jsonb;
BEGIN
    IF jsonb_typeof(v_claims) IS DISTINCT FROM 'object' OR coalesce(v_client, '') = '' THEN
        RETURN event;
    END IF;
    PERFORM set_config('trovesnap.system', 'on', true);
    SELECT c.oauth_resource INTO v_res
    FROM trovesnap.mcp_clients c JOIN trovesnap.users u ON u.id = c.actor_id
    WHERE c.oauth_client_id = v_client AND u.auth_subject = event ->> 'user_id';
    PERFORM set_config('trovesnap.system', v_prev, true);
    IF v_res IS NULL THEN
        RETURN event;
    END IF;
    v_aud := CASE jsonb_typeof(v_claims -> 'aud') WHEN 'string' THEN jsonb_build_array(v_claims -> 'aud')
                                                  WHEN 'array' THEN v_claims -> 'aud' ELSE '[]'::jsonb END;
    IF NOT v_aud ? v_res THEN
        v_aud := v_aud || jsonb_build_array(v_res);
    END IF;
    RETURN jsonb_set(event, '{claims}', v_claims || jsonb_build_object('aud', v_aud));
END
$$;

SELECT trovesnap.revoke_execute(ARRAY['oauth_resource_ok', 'oauth_client_id_ok', 'jwt_claims', 'aud_names', 'connector_credential_hash',
    'request_credential_hash', 'begin_rpc', 'seller_user', 'seller_client_json', 'trovesnap_access_token_hook',
    'seller_register_client', 'seller_rotate_client_credential']);
SELECT trovesnap.grant_execute('authenticated', ARRAY['trovesnap.jwt_tenants()',
    'public.seller_register_client(text, text, text, text, text[], text, text, text, text, text, text)',
    'public.seller_rotate_client_credential(text, text, text)']);
SELECT trovesnap.grant_execute('supabase_auth_admin', ARRAY['public.trovesnap_access_token_hook(jsonb)']);
-- The MCP RPCs: a connector calls them as `authenticated` (the RPCs decide
-- whether it is one).
SELECT trovesnap.grant_execute('authenticated', ARRAY(
    SELECT p.oid::regprocedure::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
    WHERE n.nspname = 'public' AND p.proowner = 'trovesnap_owner'::regrole AND p.proname LIKE 'mcp\_%'
    ORDER BY 1));

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (49, '20261205100000_trovesnap_oauth_connectors');

RESET ROLE;
