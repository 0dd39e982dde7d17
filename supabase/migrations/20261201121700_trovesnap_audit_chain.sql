-- trovesnap live mode, migration 29: the tamper-evident audit chain of
-- plugin_events (issue #15), and the seller RPCs `trovesnap audit` reads it
-- with in live mode.
--
-- The embedded store keeps one hash chain per tenant (internal/domain
-- chain.go); live events had no chain, so `audit verify` had nothing to
-- verify. Every plugin_event now carries prev_hash and event_hash, by the
-- store's exact definition:
--
--   event_hash = 'sha256:' || hex(sha256(JCS(body) || E'\n' || prev_hash))
--
-- with JCS the RFC 8785 canonical form (trovesnap.audit_jcs below) and
-- prev_hash the event_hash of the tenant's previous event ('' for the
-- first). The Go verifier (internal/audit.Verify) recomputes it from the
-- body the RPCs return, so a chain written here verifies there.
--
-- The hash is computed in SQL, inside the event's own transaction, by
-- trovesnap.record_event (the one insert path: finish_write and
-- mcp_append_event, neither redefined here). Appends of one tenant
-- serialise on a transaction advisory lock taken before the row gets its
-- seq, so within a tenant seq order is chain order and commit order: two
-- concurrent events never fork the chain, and a reader paging by seq never
-- skips an event of the tenant it reads. A conflicting event id inserts
-- nothing and so advances nothing.
--
-- Rows recorded before this migration are chained by it, per tenant in seq
-- (insertion) order, so every chain starts at the tenant's first event.

SET ROLE trovesnap_owner;

ALTER TABLE trovesnap.plugin_events
    ADD COLUMN prev_hash  text COLLATE "C" NOT NULL DEFAULT '',
    ADD COLUMN event_hash text COLLATE "C" NOT NULL DEFAULT '';

-- audit_jcs_number writes a float8 the way ECMAScript's Number::toString
-- does (RFC 8785 §3.2.2.3, domain.AppendES6Number). float8 output is
-- already the shortest round-trip digits (extra_float_digits >= 1, which
-- audit_jcs sets); only its exponent form differs: Postgres switches to it
-- below 1e-4 and from 1e15, ECMAScript below 1e-6 and from 1e21.
CREATE FUNCTION trovesnap.audit_jcs_number(p float8) RETURNS text
    LANGUAGE plpgsql IMMUTABLE STRICT
    AS $$
DECLARE
    s      text := p::text;
    neg    boolean;
    digits text;
    ip     text;
    fp     text;
    n      integer; -- the value is 0.<digits> × 10^n
    k      integer;
BEGIN
    IF p = 0 THEN
        RETURN '0';
    END IF;
    IF strpos(s, 'e') = 0 THEN
        RETURN s;
    END IF;
    neg := left(s, 1) = '-';
    IF neg THEN
        s := substr(s, 2);
    END IF;
    ip := split_part(split_part(s, 'e', 1), '.', 1);
    fp := split_part(split_part(s, 'e', 1), '.', 2);
    digits := rtrim(ip || fp, '0');
    n := split_part(s, 'e', 2)::integer + length(ip);
    k := length(digits);
    IF k <= n AND n <= 21 THEN
        s := digits || repeat('0', n - k);
    ELSIF 0 < n AND n <= 21 THEN
        s := left(digits, n) || '.' || substr(digits, n + 1);
    ELSIF -6 < n AND n <= 0 THEN
        s := '0.' || repeat('0', -n) || digits;
    ELSE
        s := left(digits, 1) || CASE WHEN k > 1 THEN '.' || substr(digits, 2) ELSE '' END
             || 'e' || CASE WHEN n - 1 >= 0 THEN '+' ELSE '-' END || abs(n - 1)::text;
    END IF;
    RETURN CASE WHEN neg THEN '-' || s ELSE s END;
END
$$;

-- audit_jcs_key orders object member names by their UTF-16 code units
-- (RFC 8785 §3.2.3): their UTF-8 bytes, except that a character above
-- U+FFFF is written as its surrogate pair, each half as three UTF-8-style
-- bytes (CESU-8), whose byte order is exactly UTF-16's.
CREATE FUNCTION trovesnap.audit_jcs_key(p text) RETURNS bytea
    LANGUAGE plpgsql IMMUTABLE STRICT
    AS $$
DECLARE
    out bytea := ''::bytea;
    c   text;
    cp  integer;
    u   integer;
BEGIN
    IF p !~ '[\U00010000-\U0010FFFF]' THEN
        RETURN convert_to(p, 'UTF8');
    END IF;
    FOREACH c IN ARRAY regexp_split_to_array(p, '')
    LOOP
        cp := ascii(c);
        IF cp < 65536 THEN
            out := out || convert_to(c, 'UTF8');
            CONTINUE;
        END IF;
        FOREACH u IN ARRAY ARRAY[55296 + ((cp - 65536) >> 10), 56320 + ((cp - 65536) & 1023)]
        LOOP
            out := out || decode(lpad(to_hex(224 | (u >> 12)), 2, '0') || lpad(to_hex(128 | ((u >> 6) & 63)), 2, '0')
                                 || lpad(to_hex(128 | (u & 63)), 2, '0'), 'hex');
        END LOOP;
    END LOOP;
    RETURN out;
END
$$;

-- audit_jcs_value is the RFC 8785 form of one JSON value. Strings,
-- booleans and null print as jsonb prints them (only '"', '\' and control
-- characters escaped, \u00xx in lower case: RFC 8785's rule); numbers go
-- through float8, as a JSON number is an IEEE 754 double there.
CREATE FUNCTION trovesnap.audit_jcs_value(p jsonb) RETURNS text
    LANGUAGE plpgsql IMMUTABLE STRICT
    AS $$
BEGIN
    -- Members and elements are written inline (a function call per value
    -- would dominate): containers recurse, numbers without an exponent
    -- print as float8 does, and a name sorts by its UTF-8 bytes unless it
    -- has a character above U+FFFF.
    CASE jsonb_typeof(p)
    WHEN 'object' THEN
        RETURN '{' || coalesce((SELECT string_agg(to_jsonb(e.key)::text || ':' ||
                    CASE jsonb_typeof(e.value)
                        WHEN 'object' THEN trovesnap.audit_jcs_value(e.value)
                        WHEN 'array' THEN trovesnap.audit_jcs_value(e.value)
                        WHEN 'number' THEN CASE WHEN strpos((e.value::numeric::float8)::text, 'e') = 0
                                                THEN (e.value::numeric::float8)::text
                                                ELSE trovesnap.audit_jcs_number(e.value::numeric::float8) END
                        ELSE e.value::text END, ','
                    ORDER BY CASE WHEN e.key ~ '[\U00010000-\U0010FFFF]' THEN trovesnap.audit_jcs_key(e.key)
                                  ELSE convert_to(e.key, 'UTF8') END)
                FROM jsonb_each(p) e), '') || '}';
    WHEN 'array' THEN
        RETURN '[' || coalesce((SELECT string_agg(
                    CASE jsonb_typeof(a.value)
                        WHEN 'object' THEN trovesnap.audit_jcs_value(a.value)
                        WHEN 'array' THEN trovesnap.audit_jcs_value(a.value)
                        WHEN 'number' THEN CASE WHEN strpos((a.value::numeric::float8)::text, 'e') = 0
                                                THEN (a.value::numeric::float8)::text
                                                ELSE trovesnap.audit_jcs_number(a.value::numeric::float8) END
                        ELSE a.value::text END, ',' ORDER BY a.i)
                FROM jsonb_array_elements(p) WITH ORDINALITY a(value, i)), '') || ']';
    WHEN 'number' THEN
        RETURN trovesnap.audit_jcs_number(p::numeric::float8);
    ELSE
        RETURN p::text;
    END CASE;
END
$$;

-- audit_jcs is domain.CanonicalJSON of a stored body.
CREATE FUNCTION trovesnap.audit_jcs(p jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT
    SET extra_float_digits = 1
    AS $$ SELECT trovesnap.audit_jcs_value(p) $$;

-- audit_chain_hash is domain.ChainHash(JCS(body), prev).
CREATE FUNCTION trovesnap.audit_chain_hash(p_body jsonb, p_prev text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT
    AS $$ SELECT 'sha256:' || encode(sha256(convert_to(trovesnap.audit_jcs(p_body) || E'\n' || p_prev, 'UTF8')), 'hex') $$;

-- audit_chain_lock serialises the appends of one tenant chain until the
-- end of the transaction (the two-key advisory lock space, apart from the
-- idempotency keys' one-key locks; a hash collision only serialises two
-- tenants more than needed).
CREATE FUNCTION trovesnap.audit_chain_lock(p_tenant_id text) RETURNS void
    LANGUAGE sql
    AS $$ SELECT pg_advisory_xact_lock(hashtext('trovesnap.audit_chain'), hashtext(p_tenant_id)) $$;

-- Chain the events recorded before this migration, per tenant in seq order.
DO $$
DECLARE
    r      record;
    v_prev text := '';
    v_ten  text := NULL;
    v_hash text;
BEGIN
    PERFORM set_config('trovesnap.system', 'on', true);
    LOCK TABLE trovesnap.plugin_events IN SHARE ROW EXCLUSIVE MODE;
    ALTER TABLE trovesnap.plugin_events DISABLE TRIGGER plugin_events_append_only;
    FOR r IN SELECT seq, tenant_id, body FROM trovesnap.plugin_events ORDER BY tenant_id, seq
    LOOP
        IF v_ten IS DISTINCT FROM r.tenant_id THEN
            v_ten := r.tenant_id;
            v_prev := '';
        END IF;
        v_hash := trovesnap.audit_chain_hash(r.body, v_prev);
        UPDATE trovesnap.plugin_events SET prev_hash = v_prev, event_hash = v_hash WHERE seq = r.seq;
        v_prev := v_hash;
    END LOOP;
    ALTER TABLE trovesnap.plugin_events ENABLE TRIGGER plugin_events_append_only;
    PERFORM set_config('trovesnap.system', 'off', true);
END
$$;

-- record_event inserts a plugin_event body (idempotent by event id), linked
-- to the head of its tenant's chain.
CREATE OR REPLACE FUNCTION trovesnap.record_event(p_body jsonb) RETURNS boolean
    LANGUAGE plpgsql
    AS $$
DECLARE
    n      integer;
    v_ten  text;
    v_prev text;
BEGIN
    IF jsonb_typeof(p_body) IS DISTINCT FROM 'object' OR coalesce(p_body ->> 'id', '') = '' THEN
        PERFORM trovesnap.fail('invalid_input:event', 'an event needs an id');
    END IF;
    IF coalesce(p_body ->> 'outcome', '') NOT IN ('success', 'replayed', 'blocked', 'failed') THEN
        PERFORM trovesnap.fail('invalid_input:event', 'outcome must be success, replayed, blocked or failed');
    END IF;
    IF coalesce(p_body ->> 'occurred_at', '') = '' OR p_body ->> 'occurred_at' LIKE '0001-01-01%' THEN
        p_body := p_body || jsonb_build_object('occurred_at', trovesnap.ts(now()));
    END IF;
    v_ten := coalesce(p_body ->> 'tenant_id', '');
    -- A replayed id records nothing: answer before taking the chain's lock.
    IF EXISTS (SELECT 1 FROM trovesnap.plugin_events e WHERE e.id = p_body ->> 'id') THEN
        RETURN false;
    END IF;
    -- The lock comes before the INSERT draws the row's seq, and the head is
    -- read after it (a new snapshot under READ COMMITTED): the previous
    -- holder's event is committed and has the lower seq.
    PERFORM trovesnap.audit_chain_lock(v_ten);
    SELECT e.event_hash INTO v_prev FROM trovesnap.plugin_events e
    WHERE e.tenant_id = v_ten ORDER BY e.seq DESC LIMIT 1;
    v_prev := coalesce(v_prev, '');
    INSERT INTO trovesnap.plugin_events (id, tenant_id, correlation_id, request_id, server_request_id, tool_name, outcome,
                                         occurred_at, body, prev_hash, event_hash)
    VALUES (p_body ->> 'id', v_ten, coalesce(p_body ->> 'correlation_id', ''),
            coalesce(p_body ->> 'request_id', ''), coalesce(p_body ->> 'server_request_id', ''),
            coalesce(p_body -> 'tool' ->> 'name', ''), p_body ->> 'outcome', (p_body ->> 'occurred_at')::timestamptz, p_body,
            v_prev, trovesnap.audit_chain_hash(p_body, v_prev))
    ON CONFLICT (id) DO NOTHING;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n = 1;
END
$$;

-- Seller RPCs of `trovesnap audit` in live mode. The chain is the whole
-- tenant's log, so reading it needs proposal.read (the permission of the
-- audit trail) and a membership that is not sale-scoped: a sale-scoped
-- member may not read other sales' events, and a chain with holes cannot
-- be verified (refused as sale_assignment).
CREATE FUNCTION trovesnap.seller_audit_enter(p_tenant_id text) RETURNS trovesnap.seller_ctx
    LANGUAGE plpgsql
    AS $$
DECLARE
    s trovesnap.seller_ctx;
BEGIN
    s := trovesnap.seller_enter(p_tenant_id, 'proposal.read');
    IF EXISTS (SELECT 1 FROM trovesnap.memberships m WHERE m.id = s.membership_id AND m.sale_scoped) THEN
        PERFORM trovesnap.fail('sale_assignment');
    END IF;
    RETURN s;
END
$$;

-- audit_chain_json is one event as domain.ChainRecord (and its body). The
-- RPCs answer json, not jsonb: a page of 10,000 bodies is written out once
-- instead of being rebuilt as one jsonb value first.
CREATE FUNCTION trovesnap.audit_chain_json(e trovesnap.plugin_events) RETURNS json
    LANGUAGE sql STABLE
    AS $$
SELECT json_build_object('seq', e.seq, 'id', e.id, 'tenant_id', e.tenant_id, 'correlation_id', e.correlation_id,
    'causation_id', coalesce(e.body ->> 'causation_id', ''), 'request_id', e.request_id,
    'server_request_id', e.server_request_id, 'tool_name', e.tool_name, 'outcome', e.outcome,
    -- The column keeps microseconds, the body what the writer sent (Go
    -- writes nanoseconds): the body's text when the two agree, else the
    -- column's, which the verifier then reports as a modified column.
    'occurred_at', CASE WHEN (e.body ->> 'occurred_at')::timestamptz = e.occurred_at THEN e.body ->> 'occurred_at'
                        ELSE trovesnap.ts(e.occurred_at) END,
    'prev_hash', e.prev_hash, 'event_hash', e.event_hash, 'body', e.body)
$$;

-- seller_audit_chain: the tenant's events after seq p_after_seq, in seq
-- order, at most p_limit (1 to 20000, default 10000) — `audit verify`
-- pages through the chain with it. (audit_chain_json's expression, inline:
-- this is the one read of every event.)
CREATE FUNCTION public.seller_audit_chain(p_tenant_id text, p_after_seq bigint DEFAULT 0, p_limit integer DEFAULT 10000)
    RETURNS json
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    s trovesnap.seller_ctx;
BEGIN
    s := trovesnap.seller_audit_enter(p_tenant_id);
    RETURN (SELECT coalesce(json_agg(json_build_object('seq', e.seq, 'id', e.id, 'tenant_id', e.tenant_id,
                'correlation_id', e.correlation_id, 'causation_id', coalesce(e.body ->> 'causation_id', ''),
                'request_id', e.request_id, 'server_request_id', e.server_request_id, 'tool_name', e.tool_name,
                'outcome', e.outcome,
                'occurred_at', CASE WHEN (e.body ->> 'occurred_at')::timestamptz = e.occurred_at THEN e.body ->> 'occurred_at'
                                    ELSE trovesnap.ts(e.occurred_at) END,
                'prev_hash', e.prev_hash, 'event_hash', e.event_hash, 'body', e.body) ORDER BY e.seq), '[]')
            FROM (SELECT * FROM trovesnap.plugin_events e
                  WHERE e.tenant_id = s.tenant_id AND e.seq > coalesce(p_after_seq, 0)
                  ORDER BY e.seq LIMIT least(greatest(coalesce(p_limit, 10000), 1), 20000)) e);
END
$$;

-- seller_audit_head: the newest event of the tenant's chain and the
-- chain's length ([] when it has none).
CREATE FUNCTION public.seller_audit_head(p_tenant_id text) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    s trovesnap.seller_ctx;
BEGIN
    s := trovesnap.seller_audit_enter(p_tenant_id);
    RETURN (SELECT coalesce(jsonb_agg(jsonb_build_object('tenant_id', e.tenant_id,
                'events', (SELECT count(*) FROM trovesnap.plugin_events c WHERE c.tenant_id = s.tenant_id),
                'seq', e.seq, 'event_id', e.id, 'event_hash', e.event_hash)), '[]')
            FROM (SELECT * FROM trovesnap.plugin_events e WHERE e.tenant_id = s.tenant_id ORDER BY e.seq DESC LIMIT 1) e);
END
$$;

-- seller_audit_events: the tenant's events matching every filter given
-- (domain.EventQuery: an event id, a request id, a server request id, a
-- correlation id, a causation id), after p_after_seq, in seq order; with
-- p_newest the last p_limit of them (still in seq order). `audit trace`,
-- `tail` and `show` read through it. At most 1000 per call.
CREATE FUNCTION public.seller_audit_events(p_tenant_id text, p_id text DEFAULT '', p_request_id text DEFAULT '',
                                           p_server_request_id text DEFAULT '', p_correlation_id text DEFAULT '',
                                           p_causation_id text DEFAULT '', p_after_seq bigint DEFAULT 0,
                                           p_limit integer DEFAULT 1000, p_newest boolean DEFAULT false) RETURNS json
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    s trovesnap.seller_ctx;
    v_limit integer := least(greatest(coalesce(nullif(p_limit, 0), 1000), 1), 1000);
BEGIN
    s := trovesnap.seller_audit_enter(p_tenant_id);
    RETURN (SELECT coalesce(json_agg(trovesnap.audit_chain_json(e) ORDER BY e.seq), '[]')
            FROM (SELECT * FROM trovesnap.plugin_events e
                  WHERE e.tenant_id = s.tenant_id AND e.seq > coalesce(p_after_seq, 0)
                    AND (coalesce(p_id, '') = '' OR e.id = p_id)
                    AND (coalesce(p_request_id, '') = '' OR e.request_id = p_request_id)
                    AND (coalesce(p_server_request_id, '') = '' OR e.server_request_id = p_server_request_id)
                    AND (coalesce(p_correlation_id, '') = '' OR e.correlation_id = p_correlation_id)
                    AND (coalesce(p_causation_id, '') = '' OR e.body ->> 'causation_id' = p_causation_id)
                  ORDER BY CASE WHEN coalesce(p_newest, false) THEN -e.seq ELSE e.seq END
                  LIMIT v_limit) e);
END
$$;

SELECT trovesnap.revoke_execute(ARRAY['audit_jcs_number', 'audit_jcs_key', 'audit_jcs_value', 'audit_jcs', 'audit_chain_hash',
    'audit_chain_lock', 'seller_audit_enter', 'audit_chain_json', 'seller_audit_chain', 'seller_audit_head', 'seller_audit_events']);
SELECT trovesnap.grant_execute('authenticated', ARRAY[
    'public.seller_audit_chain(text, bigint, integer)', 'public.seller_audit_head(text)',
    'public.seller_audit_events(text, text, text, text, text, text, bigint, integer, boolean)']);

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (30, '20261201121700_trovesnap_audit_chain');

RESET ROLE;
