-- TroveSnap: the client token is the only secret a host holds.
--
-- Until now every host that served MCP in live mode held a JWT for the
-- trovesnap_mcp role — one key for every tenant of the project — and sent
-- the sha256 of its client credential as an argument, which was also the
-- value stored: a copy of mcp_clients was a set of working credentials.
--
-- From this migration:
--   * a host calls with the project's public (anon) key and its own client
--     token in the request header `x-trovesnap-client-token`; PostgREST
--     hands the request headers to SQL as the `request.headers` setting;
--   * SQL hashes the token (request_credential_hash) and looks the client
--     up by that hash; the stored hash never travels and is no credential;
--   * every mcp_* RPC that took p_credential_hash moves into the private
--     schema `trovesnap` unchanged, behind a public wrapper of the same name
--     without that argument, which passes the hash of the header's token.
--     Later migrations that change an RPC's body replace
--     trovesnap.mcp_<name>(p_credential_hash text, …);
--   * the mcp_* RPCs are executable by `anon` only; trovesnap_mcp, the role
--     of the retired server key, may execute nothing and begin_rpc refuses
--     it;
--   * mcp_append_event takes the tenant, client and actor of an event from
--     the token, never from the body, and finish_write does the same for the
--     event of every write.

SET ROLE trovesnap_owner;

-- request_credential_hash is the hex sha256 of the client token the request
-- carries in `x-trovesnap-client-token` (NULL: none). The token itself is
-- never stored, returned or logged. Postgres' built-in sha256() is the same
-- function pgcrypto's digest(…, 'sha256') computes, without the extension.
CREATE FUNCTION trovesnap.request_credential_hash() RETURNS text
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    v_headers jsonb;
    v_token   text;
BEGIN
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

-- begin_rpc: an MCP RPC ('trovesnap_mcp') is now called with the public
-- key, so the request role is anon; its authority is the client token, and
-- the retired trovesnap_mcp role is refused. Seller RPCs still require
-- their role.
CREATE OR REPLACE FUNCTION trovesnap.begin_rpc(p_role text) RETURNS void
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_role text := coalesce(nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'role', '');
BEGIN
    PERFORM set_config('trovesnap.tenant_id', '', true);
    PERFORM set_config('trovesnap.system', 'off', true);
    IF p_role = 'trovesnap_mcp' THEN
        IF v_role <> 'anon' THEN
            PERFORM trovesnap.fail('forbidden');
        END IF;
    ELSIF v_role <> p_role THEN
        PERFORM trovesnap.fail('forbidden');
    END IF;
END
$$;

-- Move every public.mcp_*(p_credential_hash text, …) into trovesnap and put
-- a wrapper without that argument in its place.
DO $$
DECLARE
    f      record;
    v_args text;
    v_pass text;
BEGIN
    FOR f IN
        SELECT p.oid, p.proname, p.proargnames, p.pronargs,
               pg_get_function_identity_arguments(p.oid) AS ident,
               pg_get_function_arguments(p.oid) AS args,
               pg_get_function_result(p.oid) AS result
        FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
        WHERE n.nspname = 'public' AND p.proname LIKE 'mcp\_%' AND p.proowner = 'trovesnap_owner'::regrole
          AND p.proargnames[1] = 'p_credential_hash'
        ORDER BY p.proname
    LOOP
        IF f.args NOT LIKE 'p_credential_hash text%' OR f.proargnames IS NULL
           OR array_length(f.proargnames, 1) <> f.pronargs THEN
            RAISE EXCEPTION 'unexpected signature: %(%)', f.proname, f.args;
        END IF;
        v_args := regexp_replace(f.args, '^p_credential_hash text(, )?', '');
        SELECT coalesce(string_agg(format('%1$I => %1$I', a), ', ' ORDER BY i), '')
        INTO v_pass FROM unnest(f.proargnames[2:]) WITH ORDINALITY AS x(a, i);
        EXECUTE format('ALTER FUNCTION public.%I(%s) SET SCHEMA trovesnap', f.proname, f.ident);
        EXECUTE format(
            'CREATE FUNCTION public.%1$I(%2$s) RETURNS %3$s LANGUAGE sql SECURITY DEFINER '
            'SET search_path = pg_catalog, pg_temp '
            'AS $w$ SELECT trovesnap.%1$I(p_credential_hash => trovesnap.request_credential_hash()%4$s) $w$',
            f.proname, v_args, f.result, CASE WHEN v_pass = '' THEN '' ELSE ', ' || v_pass END);
        EXECUTE format('COMMENT ON FUNCTION public.%I(%s) IS %L', f.proname,
                       regexp_replace(f.ident, '^p_credential_hash text(, )?', ''),
                       'wrapper: the client is the request''s x-trovesnap-client-token (see trovesnap.' || f.proname || ')');
    END LOOP;
END
$$;

-- finish_write: the event of a write names the tenant, client and actor of
-- the credential that made it, whatever the body said.
CREATE OR REPLACE FUNCTION trovesnap.finish_write(p trovesnap.principal, p_tool text, p_tool_major integer, p_key text,
                                                  p_fingerprint text, p_event jsonb, p_started_at timestamptz, p_result jsonb,
                                                  p_related jsonb) RETURNS jsonb
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_now   timestamptz := now();
    v_event jsonb;
BEGIN
    v_event := trovesnap.event_identity(p_event, p) || jsonb_build_object('outcome', 'success', 'related', p_related);
    IF p_started_at IS NOT NULL THEN
        v_event := jsonb_set(v_event, '{metrics}', coalesce(v_event -> 'metrics', '{}'::jsonb) || jsonb_build_object(
            'latency_ms', round((greatest(extract(epoch FROM clock_timestamp() - p_started_at), 0) * 1000)::numeric, 3)));
    END IF;
    IF v_event -> 'causation_id' IS NULL OR jsonb_typeof(v_event -> 'causation_id') = 'null' THEN
        v_event := v_event || jsonb_build_object('causation_id', trovesnap.event_cause(v_event));
    END IF;
    -- A write's event is recorded, or the write does not happen: an id
    -- already used (someone's event) must not leave a write unaudited.
    IF NOT trovesnap.record_event(v_event) THEN
        PERFORM trovesnap.fail('invalid_input:event', 'an event with this id is already recorded');
    END IF;
    INSERT INTO trovesnap.idempotency_keys (tenant_id, client_id, tool, tool_major, key, fingerprint, result, event_id,
                                            created_at, expires_at)
    VALUES (p.tenant_id, p.client_id, p_tool, p_tool_major, p_key, p_fingerprint,
            jsonb_build_object('result', p_result, 'related', p_related, 'event_id', p_event ->> 'id'),
            p_event ->> 'id', v_now, v_now + interval '24 hours');
    RETURN jsonb_build_object('replayed', false, 'result', p_result, 'related', p_related, 'event_id', p_event ->> 'id');
END
$$;

-- event_identity sets an event's identity fields from a principal (NULL:
-- the anonymous caller): tenant, client, actor and mode. A body that names
-- another client is refused rather than rewritten — it is a forgery or a
-- bug, and either way not this credential's event.
CREATE FUNCTION trovesnap.event_identity(p_event jsonb, p trovesnap.principal) RETURNS jsonb
    LANGUAGE plpgsql IMMUTABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    v_named text;
BEGIN
    IF jsonb_typeof(p_event) IS DISTINCT FROM 'object' THEN
        PERFORM trovesnap.fail('invalid_input:event', 'an event is an object');
    END IF;
    v_named := coalesce(p_event -> 'client' ->> 'id', '');
    IF p.client_id IS NULL THEN
        IF v_named <> '' OR coalesce(p_event ->> 'tenant_id', '') <> '' THEN
            PERFORM trovesnap.fail('invalid_input:event', 'an event without a client token names no client and no tenant');
        END IF;
        RETURN p_event || jsonb_build_object('mode', 'live', 'tenant_id', '',
            'client', jsonb_build_object('id', '', 'name', ''),
            'actor', jsonb_build_object('id', '', 'type', 'anonymous'));
    END IF;
    IF v_named <> '' AND v_named <> p.client_id THEN
        PERFORM trovesnap.fail('invalid_input:event', 'the event names another client than the token''s');
    END IF;
    RETURN p_event || jsonb_build_object('mode', 'live', 'tenant_id', p.tenant_id,
        'client', jsonb_build_object('id', p.client_id, 'name', p.client_name, 'type', p.client_type),
        'actor', CASE WHEN coalesce(p.actor_id, '') = '' THEN jsonb_build_object('id', '', 'type', 'anonymous')
                      ELSE jsonb_build_object('id', p.actor_id, 'type', 'seller', 'role', coalesce(p.role, '')) END);
END
$$;

-- mcp_append_event: the audit sink for calls that wrote nothing (reads,
-- blocks, failures, replays). The token decides whose event it is: with a
-- token of a known client (whatever its status — a suspended client's
-- refusals are audited too), the event is that client's, in its tenant;
-- with none, it is an anonymous event of no tenant. An unknown or revoked
-- token is client_not_registered. An event is at most 64 KiB. Anonymous
-- events count in the public bucket's `rejected` class; a client's count in
-- its own `events` bucket, whose limit is its read and rejected limits
-- together (every call that wrote nothing is one of those) — so neither the
-- public key nor a token can flood the table. Idempotent by event id: a
-- retried flush records an event exactly once, and an id already recorded
-- for another tenant or client is refused, never silently kept.
CREATE OR REPLACE FUNCTION public.mcp_append_event(p_event jsonb) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    v_hash   text;
    p        trovesnap.principal;
    v_rate   jsonb;
    v_lim    trovesnap.mcp_limits;
    v_now    bigint := floor(extract(epoch FROM now()))::bigint;
    v_count  integer;
    inserted boolean;
BEGIN
    PERFORM trovesnap.begin_rpc('trovesnap_mcp');
    IF octet_length(p_event::text) > 65536 THEN
        PERFORM trovesnap.fail('invalid_input:event', 'an event is at most 64 KiB');
    END IF;
    v_hash := trovesnap.request_credential_hash();
    IF v_hash IS NOT NULL THEN
        p := trovesnap.lookup_client(v_hash);
        IF p.client_status <> 'suspended' THEN -- a suspended client's refusals are audited
            PERFORM trovesnap.require_active(p);
        END IF;
        PERFORM set_config('trovesnap.system', 'on', true);
        v_lim := trovesnap.effective_limits(p.tenant_id, p.client_id);
        INSERT INTO trovesnap.rate_counters AS rc (bucket, class, window_start, count, tenant_id)
        VALUES (p.client_id, 'events', v_now - v_now % 60, 1, p.tenant_id)
        ON CONFLICT (bucket, class, window_start) DO UPDATE SET count = rc.count + 1
            WHERE rc.count < v_lim.read_calls_per_minute + v_lim.rejected_calls_per_minute
        RETURNING rc.count INTO v_count;
        PERFORM set_config('trovesnap.system', 'off', true);
        IF v_count IS NULL THEN
            PERFORM trovesnap.fail('rate_limited', 'events over the client''s limit');
        END IF;
    ELSE
        v_rate := trovesnap.mcp_consume_rate(p_credential_hash => NULL, p_class => 'rejected');
        IF NOT (v_rate ->> 'allowed')::boolean THEN
            PERFORM trovesnap.fail('rate_limited', 'anonymous events over the public limit');
        END IF;
    END IF;
    p_event := trovesnap.event_identity(p_event, p);
    PERFORM set_config('trovesnap.system', 'on', true);
    inserted := trovesnap.record_event(p_event);
    IF NOT inserted AND NOT EXISTS (
        SELECT 1 FROM trovesnap.plugin_events e
        WHERE e.id = p_event ->> 'id' AND e.tenant_id = coalesce(p_event ->> 'tenant_id', '')
          AND coalesce(e.body -> 'client' ->> 'id', '') = coalesce(p_event -> 'client' ->> 'id', '')) THEN
        PERFORM trovesnap.fail('invalid_input:event', 'an event with this id is already recorded for another caller');
    END IF;
    PERFORM set_config('trovesnap.system', 'off', true);
    RETURN jsonb_build_object('recorded', inserted);
END
$$;

-- Grants: nothing for the retired server role, the wrappers and the
-- token-free RPCs for anon, nothing at all on the moved bodies.
DO $$
DECLARE
    f regprocedure;
BEGIN
    FOR f IN SELECT p.oid::regprocedure FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
             WHERE p.proowner = 'trovesnap_owner'::regrole AND n.nspname IN ('public', 'trovesnap')
    LOOP
        IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'trovesnap_mcp') THEN
            EXECUTE format('REVOKE ALL ON FUNCTION %s FROM trovesnap_mcp', f);
        END IF;
    END LOOP;
END
$$;
SELECT trovesnap.revoke_execute(ARRAY(
    SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
    WHERE n.nspname = 'trovesnap' AND p.proowner = 'trovesnap_owner'::regrole AND p.proname LIKE 'mcp\_%'));
SELECT trovesnap.revoke_execute(ARRAY['request_credential_hash', 'event_identity', 'finish_write', 'begin_rpc']);
SELECT trovesnap.grant_execute('anon', ARRAY(
    SELECT p.oid::regprocedure::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
    WHERE n.nspname = 'public' AND p.proowner = 'trovesnap_owner'::regrole AND p.proname LIKE 'mcp\_%'
    ORDER BY 1));

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (29, '20261201121600_trovesnap_client_token');

RESET ROLE;
