-- trovesnap live mode, migration 36: each event keeps the exact text its
-- chain hash covers, and the rate count resolves the caller once (issue
-- 15's speed targets).
--
-- Migration 30 hashed JCS(body) but stored only the jsonb body, so every
-- reader of the chain paid for the canonical form again: `audit verify`
-- over 100,000 events printed each jsonb body (1.7 s in Postgres) and then
-- canonicalised it in Go, and every event paid 0.6 ms for the SQL
-- canonicaliser in the writer's transaction.
--
-- From here:
--
-- * plugin_events.body_jcs is the canonical text, RFC 8785, as json (which
--   keeps the text as given): what event_hash covers, byte for byte. The
--   verifier hashes the bytes it is sent and never canonicalises them again
--   (equal SHA-256, equal bytes). Rows recorded before this migration have
--   none; the readers canonicalise their jsonb body, as before.
-- * The jsonb body is the parse of that text (record_event stores
--   body_jcs::jsonb), and a CHECK keeps the two equal: one cannot be
--   changed without the other. What a seller reads of an event
--   (seller_audit_chain, seller_audit_events) is body_jcs, the hashed text.
-- * audit_jcs has a fast path for bodies without a character above U+FFFF
--   (every event the gate writes): names sort by their UTF-8 bytes
--   (COLLATE "C"), which is UTF-16 order when no surrogate pair is involved,
--   and the members and elements of the body's children are written inline
--   (a PL/pgSQL call per container dominated). Other bodies take migration
--   30's exact path. TestAuditChain_SQLCanonicalFormIsTheDomains holds both
--   to domain.CanonicalJSON.
-- * record_event canonicalises before it takes the tenant chain's lock, so
--   concurrent appends of one tenant wait for each other's INSERT only.
-- * seller_audit_chain answers a page as columns, with the stored text as
--   the bodies and their lengths, without re-reading the jsonb body: the
--   occurred_at column comes as a timestamp (microseconds; the verifier
--   compares it with the body's nanoseconds at that precision) and there is
--   no causation_id, which is no column: the verifier reads it from the
--   body. seller_audit_chain_marks says where the pages start, so that a
--   reader fetches three at once (Postgres builds pages while the reader
--   verifies one).
-- * Rows from here on must keep their text (a CHECK), and record_event
--   refuses an occurred_at that is not RFC 3339 (the verifier could not
--   read it, and an event it reports stops the report of its chain).
-- * The rate count of every MCP RPC reads only the client's id and tenant
--   (rate_take, count_rpc below).

SET ROLE trovesnap_owner;

-- An event row now carries its body twice (about 2.3 KB for a gate
-- event), past the 2 KB at which Postgres starts compressing a row's
-- largest values: every read of a chain page then decompressed both. Rows
-- up to a page stay as they are; larger ones are still compressed or moved
-- out of line.
ALTER TABLE trovesnap.plugin_events
    ADD COLUMN body_jcs json,
    ADD CONSTRAINT plugin_events_body_jcs_is_body CHECK (body_jcs IS NULL OR body_jcs::jsonb = body),
    SET (toast_tuple_target = 8160);

-- Every row from here on carries its text: a row without one is read as a
-- legacy row and canonicalised from its jsonb body, so emptying the text of
-- a new row (and editing the body below float precision) must be refused,
-- not left to the reader. The rows before this migration are the only ones
-- allowed none.
DO $$
BEGIN
    PERFORM set_config('trovesnap.system', 'on', true); -- every tenant's rows
    EXECUTE format('ALTER TABLE trovesnap.plugin_events ADD CONSTRAINT plugin_events_body_jcs_kept
                    CHECK (body_jcs IS NOT NULL OR seq <= %s)',
                   (SELECT coalesce(max(seq), 0) FROM trovesnap.plugin_events));
    PERFORM set_config('trovesnap.system', 'off', true);
END
$$;

-- audit_jcs_number: as in migration 30, and now the shortest digits for a
-- value from 2^53: there Postgres's shortest-digits printer (which leaves
-- out the ends of a value's rounding interval) can print more digits than
-- RFC 8785's shortest form when that form lies exactly on an end — 4768e20
-- printed 4.7679999999999997e+23. Shorter digits are tried, rounded down and
-- up, until some read back as the same double; of two, the nearer to the
-- printed value wins, as ECMAScript and Go choose. Below 2^53 an interval's
-- ends have long decimal expansions, never shorter ones.
CREATE OR REPLACE FUNCTION trovesnap.audit_jcs_number(p float8) RETURNS text
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
    len    integer;
    cand   text;
    best   text;
    dist   numeric;
    bestd  numeric;
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
    IF abs(p) >= 9007199254740992 AND k > 1 THEN
        FOR len IN 1 .. k - 1 LOOP
            best := NULL;
            FOREACH cand IN ARRAY ARRAY[left(digits, len), (left(digits, len)::numeric + 1)::text]
            LOOP
                -- (Rounding the largest doubles up passes the largest.)
                CONTINUE WHEN (cand || 'e' || (n - len))::numeric > 1.7976931348623157e308;
                IF (cand || 'e' || (n - len))::float8 = abs(p) THEN
                    -- |cand × 10^(n-len) − digits × 10^(n-k)|, in units of 10^(n-k)
                    dist := abs(cand::numeric * power(10::numeric, k - len) - digits::numeric);
                    IF best IS NULL OR dist < bestd THEN
                        best := cand;
                        bestd := dist;
                    END IF;
                END IF;
            END LOOP;
            IF best IS NOT NULL THEN
                n := n - len + length(best);
                digits := rtrim(best, '0');
                k := length(digits);
                EXIT;
            END IF;
        END LOOP;
    END IF;
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

-- audit_jcs_bmp is audit_jcs_value for a body without a character above
-- U+FFFF. Two levels are written in one statement; deeper containers
-- recurse, except an empty array or one of a single string, which jsonb
-- prints in its canonical form (most of a gate event's arrays). (A PL/pgSQL
-- call per container dominated. Writing a third level inline, or all
-- levels in one expression, was slower still: every execution starts each
-- subquery of the statement, taken or not.)
CREATE FUNCTION trovesnap.audit_jcs_bmp(p jsonb) RETURNS text
    LANGUAGE plpgsql IMMUTABLE STRICT
    AS $$
BEGIN
    CASE jsonb_typeof(p)
    WHEN 'object' THEN
        RETURN '{' || coalesce((SELECT string_agg(to_json(e.key)::text || ':' ||
                    CASE jsonb_typeof(e.value)
                        WHEN 'object' THEN '{' || coalesce((SELECT string_agg(to_json(f.key)::text || ':' ||
                                CASE jsonb_typeof(f.value)
                                    WHEN 'object' THEN trovesnap.audit_jcs_bmp(f.value)
                                    WHEN 'array' THEN CASE WHEN jsonb_array_length(f.value) = 0 THEN '[]'
                                                           WHEN jsonb_array_length(f.value) = 1 AND jsonb_typeof(f.value -> 0) = 'string'
                                                           THEN '[' || (f.value -> 0)::text || ']'
                                                           ELSE trovesnap.audit_jcs_bmp(f.value) END
                                    WHEN 'number' THEN CASE WHEN strpos((f.value::numeric::float8)::text, 'e') = 0
                                                            THEN (f.value::numeric::float8)::text
                                                            ELSE trovesnap.audit_jcs_number(f.value::numeric::float8) END
                                    ELSE f.value::text END, ',' ORDER BY f.key COLLATE "C")
                            FROM jsonb_each(e.value) f), '') || '}'
                        WHEN 'array' THEN '[' || coalesce((SELECT string_agg(
                                CASE jsonb_typeof(f.value)
                                    WHEN 'object' THEN trovesnap.audit_jcs_bmp(f.value)
                                    WHEN 'array' THEN CASE WHEN jsonb_array_length(f.value) = 0 THEN '[]'
                                                           WHEN jsonb_array_length(f.value) = 1 AND jsonb_typeof(f.value -> 0) = 'string'
                                                           THEN '[' || (f.value -> 0)::text || ']'
                                                           ELSE trovesnap.audit_jcs_bmp(f.value) END
                                    WHEN 'number' THEN CASE WHEN strpos((f.value::numeric::float8)::text, 'e') = 0
                                                            THEN (f.value::numeric::float8)::text
                                                            ELSE trovesnap.audit_jcs_number(f.value::numeric::float8) END
                                    ELSE f.value::text END, ',' ORDER BY f.i)
                            FROM jsonb_array_elements(e.value) WITH ORDINALITY f(value, i)), '') || ']'
                        WHEN 'number' THEN CASE WHEN strpos((e.value::numeric::float8)::text, 'e') = 0
                                                THEN (e.value::numeric::float8)::text
                                                ELSE trovesnap.audit_jcs_number(e.value::numeric::float8) END
                        ELSE e.value::text END, ','
                    ORDER BY e.key COLLATE "C")
                FROM jsonb_each(p) e), '') || '}';
    WHEN 'array' THEN
        RETURN '[' || coalesce((SELECT string_agg(
                    CASE jsonb_typeof(a.value)
                        WHEN 'object' THEN trovesnap.audit_jcs_bmp(a.value)
                        WHEN 'array' THEN trovesnap.audit_jcs_bmp(a.value)
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

-- audit_jcs is domain.CanonicalJSON of a stored body: the fast path unless
-- the body has a character above U+FFFF anywhere (only a member name's
-- would sort differently, but one test of the whole text is cheaper than
-- one per name).
CREATE OR REPLACE FUNCTION trovesnap.audit_jcs(p jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT
    SET extra_float_digits = 1
    AS $$
SELECT CASE WHEN p::text ~ '[\U00010000-\U0010FFFF]' THEN trovesnap.audit_jcs_value(p)
            ELSE trovesnap.audit_jcs_bmp(p) END
$$;

-- record_event inserts a plugin_event body (idempotent by event id), its
-- canonical text and its link to the head of its tenant's chain.
CREATE OR REPLACE FUNCTION trovesnap.record_event(p_body jsonb) RETURNS boolean
    LANGUAGE plpgsql
    AS $$
DECLARE
    n      integer;
    v_ten  text;
    v_prev text;
    v_jcs  text;
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
    -- RFC 3339 only, as the verifier parses it: Postgres also reads
    -- 'epoch', 'infinity' or a space for the T, and such an event would
    -- verify as modified, hiding every later problem of its chain.
    IF p_body ->> 'occurred_at' !~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-5][0-9](\.[0-9]{1,9})?(Z|[+-][0-9]{2}:[0-9]{2})$' THEN
        PERFORM trovesnap.fail('invalid_input:event', 'occurred_at must be an RFC 3339 time');
    END IF;
    v_ten := coalesce(p_body ->> 'tenant_id', '');
    -- A replayed id records nothing: answer before any other work.
    IF EXISTS (SELECT 1 FROM trovesnap.plugin_events e WHERE e.id = p_body ->> 'id') THEN
        RETURN false;
    END IF;
    v_jcs := trovesnap.audit_jcs(p_body);
    -- The lock comes before the INSERT draws the row's seq, and the head is
    -- read after it (a new snapshot under READ COMMITTED): the previous
    -- holder's event is committed and has the lower seq.
    PERFORM trovesnap.audit_chain_lock(v_ten);
    SELECT e.event_hash INTO v_prev FROM trovesnap.plugin_events e
    WHERE e.tenant_id = v_ten ORDER BY e.seq DESC LIMIT 1;
    v_prev := coalesce(v_prev, '');
    INSERT INTO trovesnap.plugin_events (id, tenant_id, correlation_id, request_id, server_request_id, tool_name, outcome,
                                         occurred_at, body, body_jcs, prev_hash, event_hash)
    VALUES (p_body ->> 'id', v_ten, coalesce(p_body ->> 'correlation_id', ''),
            coalesce(p_body ->> 'request_id', ''), coalesce(p_body ->> 'server_request_id', ''),
            coalesce(p_body -> 'tool' ->> 'name', ''), p_body ->> 'outcome', (p_body ->> 'occurred_at')::timestamptz,
            v_jcs::jsonb, v_jcs::json, v_prev,
            'sha256:' || encode(sha256(convert_to(v_jcs || E'\n' || v_prev, 'UTF8')), 'hex'))
    ON CONFLICT (id) DO NOTHING;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n = 1;
END
$$;

-- audit_chain_json (seller_audit_events' rows): as before, with the body
-- as hashed.
CREATE OR REPLACE FUNCTION trovesnap.audit_chain_json(e trovesnap.plugin_events) RETURNS json
    LANGUAGE sql STABLE
    AS $$
SELECT json_build_object('seq', e.seq, 'id', e.id, 'tenant_id', e.tenant_id, 'correlation_id', e.correlation_id,
    'causation_id', coalesce(e.body ->> 'causation_id', ''), 'request_id', e.request_id,
    'server_request_id', e.server_request_id, 'tool_name', e.tool_name, 'outcome', e.outcome,
    'occurred_at', CASE WHEN (e.body ->> 'occurred_at')::timestamptz = e.occurred_at THEN e.body ->> 'occurred_at'
                        ELSE trovesnap.ts(e.occurred_at) END,
    'prev_hash', e.prev_hash, 'event_hash', e.event_hash,
    'body', coalesce(e.body_jcs, trovesnap.audit_jcs(e.body)::json))
$$;

-- seller_audit_chain: the tenant's events after seq p_after_seq, in seq
-- order, at most p_limit (1 to 20000, default 10000), as one object of
-- columns, each an array with a value per event: seq, id, tenant_id,
-- correlation_id, request_id, server_request_id, tool_name, outcome,
-- occurred_at (the column, a timestamp), prev_hash, event_hash, body_bytes
-- (the length of the body's text) and body (the hashed text); {} when there
-- are none. Columns cost a value each where an object per event cost a
-- member name each and its own build; the lengths let the reader cut the
-- bodies without scanning them. One aggregate node feeds every array in the
-- same row order, the subquery's seq order (the reader checks it).
CREATE OR REPLACE FUNCTION public.seller_audit_chain(p_tenant_id text, p_after_seq bigint DEFAULT 0, p_limit integer DEFAULT 10000)
    RETURNS json
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    s trovesnap.seller_ctx;
BEGIN
    s := trovesnap.seller_audit_enter(p_tenant_id);
    RETURN (SELECT CASE WHEN count(*) = 0 THEN '{}'::json ELSE json_build_object('seq', array_agg(e.seq), 'id', array_agg(e.id),
                'tenant_id', array_agg(e.tenant_id), 'correlation_id', array_agg(e.correlation_id),
                'request_id', array_agg(e.request_id), 'server_request_id', array_agg(e.server_request_id),
                'tool_name', array_agg(e.tool_name), 'outcome', array_agg(e.outcome), 'occurred_at', array_agg(e.occurred_at),
                'prev_hash', array_agg(e.prev_hash), 'event_hash', array_agg(e.event_hash),
                'body_bytes', array_agg(octet_length(e.b::text)), 'body', json_agg(e.b)) END
            FROM (SELECT e.seq, e.id, e.tenant_id, e.correlation_id, e.request_id, e.server_request_id, e.tool_name, e.outcome,
                         e.occurred_at, e.prev_hash, e.event_hash, coalesce(e.body_jcs, trovesnap.audit_jcs(e.body)::json) AS b
                  FROM trovesnap.plugin_events e
                  WHERE e.tenant_id = s.tenant_id AND e.seq > coalesce(p_after_seq, 0)
                  ORDER BY e.seq LIMIT least(greatest(coalesce(p_limit, 10000), 1), 20000)) e);
END
$$;

-- seller_audit_chain_marks: the seq of every p_every-th event of the
-- tenant after p_after_seq (p_every 1 to 20000, default 10000), in order:
-- where the pages of that size start, so that a reader fetches several at
-- once (from the index alone).
CREATE FUNCTION public.seller_audit_chain_marks(p_tenant_id text, p_after_seq bigint DEFAULT 0, p_every integer DEFAULT 10000)
    RETURNS json
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    s       trovesnap.seller_ctx;
    v_every integer := least(greatest(coalesce(p_every, 10000), 1), 20000);
BEGIN
    s := trovesnap.seller_audit_enter(p_tenant_id);
    RETURN (SELECT coalesce(json_agg(m.seq ORDER BY m.seq), '[]')
            FROM (SELECT e.seq, row_number() OVER (ORDER BY e.seq) AS n FROM trovesnap.plugin_events e
                  WHERE e.tenant_id = s.tenant_id AND e.seq > coalesce(p_after_seq, 0)) m
            WHERE m.n % v_every = 0);
END
$$;

-- The rate count of every MCP RPC (migration 34's count_rpc) went through
-- mcp_consume_rate, which resolves the whole principal (membership, sale
-- scope) that the RPC's body then resolves again, and cleared the bucket's
-- old windows on every call. rate_take is the count itself, once, for
-- both; count_rpc finds only the client's id and tenant; old windows are
-- cleared when a window's first call inserts its row.
CREATE FUNCTION trovesnap.rate_take(p_bucket text, p_tenant text, p_client text, p_class text) RETURNS jsonb
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_now    bigint := floor(extract(epoch FROM now()))::bigint;
    v_window bigint;
    v_limit  integer;
    v_count  integer;
    v_new    boolean;
    l        trovesnap.mcp_limits;
BEGIN
    l := trovesnap.effective_limits(p_tenant, p_client);
    v_limit := CASE p_class WHEN 'reads' THEN l.read_calls_per_minute
                            WHEN 'candidate_writes' THEN l.candidate_writes_per_minute
                            WHEN 'proposals' THEN l.proposals_per_minute
                            WHEN 'rejected' THEN l.rejected_calls_per_minute
                            ELSE l.controlled_actions_per_minute END;
    v_window := v_now - v_now % 60;
    IF v_limit > 0 THEN
        INSERT INTO trovesnap.rate_counters AS rc (bucket, class, window_start, count, tenant_id)
        VALUES (p_bucket, p_class, v_window, 1, p_tenant)
        ON CONFLICT (bucket, class, window_start) DO UPDATE SET count = rc.count + 1 WHERE rc.count < v_limit
        RETURNING rc.count, rc.xmax = 0 INTO v_count, v_new;
        IF v_new THEN
            DELETE FROM trovesnap.rate_counters WHERE bucket = p_bucket AND class = p_class AND window_start < v_window;
        END IF;
    END IF;
    RETURN jsonb_build_object('allowed', v_count IS NOT NULL, 'class', p_class, 'limit', v_limit,
                              'retry_after_seconds', v_window + 60 - v_now);
END
$$;

-- mcp_consume_rate: as before (the review-limits migration), counting
-- through rate_take.
CREATE OR REPLACE FUNCTION trovesnap.mcp_consume_rate(p_credential_hash text, p_class text) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    p        trovesnap.principal;
    v_bucket text := 'public';
    v_tenant text;
    v_client text;
BEGIN
    PERFORM trovesnap.begin_rpc('trovesnap_mcp');
    IF coalesce(p_class, '') NOT IN ('reads', 'candidate_writes', 'proposals', 'controlled_actions', 'rejected') THEN
        PERFORM trovesnap.fail('invalid_input:class', 'unknown limit class');
    END IF;
    IF coalesce(p_credential_hash, '') <> '' THEN
        p := trovesnap.lookup_client(p_credential_hash);
        v_bucket := p.client_id;
        v_tenant := p.tenant_id;
        v_client := p.client_id;
        PERFORM set_config('trovesnap.tenant_id', p.tenant_id, true);
    END IF;
    RETURN trovesnap.rate_take(v_bucket, v_tenant, v_client, p_class);
END
$$;

-- count_rpc: as before (migration 34), with the client's id and tenant
-- read in one statement (an unknown token is client_not_registered, as
-- lookup_client answers it; status and permissions are the body's to
-- check).
CREATE OR REPLACE FUNCTION trovesnap.count_rpc(p_fn text) RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    v_class  text := trovesnap.rpc_rate_class(p_fn);
    v_hash   text;
    v_client text;
    v_tenant text;
    v_rate   jsonb;
BEGIN
    IF v_class IS NULL THEN
        RETURN;
    END IF;
    PERFORM trovesnap.begin_rpc('trovesnap_mcp');
    v_hash := trovesnap.request_credential_hash();
    IF v_hash IS NULL THEN
        v_rate := trovesnap.rate_take('public', NULL, NULL, v_class);
    ELSE
        PERFORM set_config('trovesnap.system', 'on', true);
        SELECT c.id, c.tenant_id INTO v_client, v_tenant FROM trovesnap.mcp_clients c
        WHERE c.credential_hash IN (v_hash, 'sha256:' || v_hash);
        PERFORM set_config('trovesnap.system', 'off', true);
        IF v_client IS NULL THEN
            PERFORM trovesnap.fail('client_not_registered');
        END IF;
        PERFORM set_config('trovesnap.tenant_id', v_tenant, true);
        v_rate := trovesnap.rate_take(v_client, v_tenant, v_client, v_class);
    END IF;
    IF NOT (v_rate ->> 'allowed')::boolean THEN
        PERFORM trovesnap.fail('rate_limited', jsonb_build_object('class', v_class, 'limit', (v_rate ->> 'limit')::integer,
            'retry_after_seconds', (v_rate ->> 'retry_after_seconds')::integer)::text);
    END IF;
END
$$;

-- The new functions (a replaced one keeps its grants).
SELECT trovesnap.revoke_execute(ARRAY['audit_jcs_bmp', 'seller_audit_chain_marks', 'rate_take']);
SELECT trovesnap.grant_execute('authenticated', ARRAY['public.seller_audit_chain_marks(text, bigint, integer)']);

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (36, '20261202120000_trovesnap_audit_text');

RESET ROLE;
