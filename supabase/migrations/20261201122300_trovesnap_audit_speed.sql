-- trovesnap live mode, migration 36: `audit verify` reads each event's
-- canonical form as recorded (issue #15: 100,000 events in at most 2 s).
--
-- record_event already computes JCS(body), the RFC 8785 form the chain
-- hashes (migration 30). It now keeps that text too, in plugin_events.
-- canonical (type json: Postgres keeps a json value's text byte for byte
-- and refuses text that is not JSON). seller_audit_chain returns it as the
-- event's body, so the Go verifier hashes the bytes it receives as they
-- are (domain.ChainHashMatches) instead of canonicalising every body.
--
-- The canonical column is a cache, not evidence. seller_audit_chain sends
-- it only when the stored body is still the same JSON value
-- (body = canonical::jsonb: jsonb equality is equality of the parsed
-- values, and JCS(canonical) = canonical, so then JCS(body) = canonical
-- byte for byte); otherwise — a body edited behind the chain's back, a
-- canonical column edited or cleared, a number float8 cannot hold exactly
-- — it sends the stored body, which the verifier canonicalises and hashes
-- as before. What the verifier concludes is therefore exactly what it
-- concluded from the body alone: an edited body is still a modified event.

SET ROLE trovesnap_owner;

ALTER TABLE trovesnap.plugin_events ADD COLUMN canonical json;

-- Keep the canonical form of the events recorded so far.
DO $$
BEGIN
    PERFORM set_config('trovesnap.system', 'on', true);
    LOCK TABLE trovesnap.plugin_events IN SHARE ROW EXCLUSIVE MODE;
    ALTER TABLE trovesnap.plugin_events DISABLE TRIGGER plugin_events_append_only;
    UPDATE trovesnap.plugin_events SET canonical = trovesnap.audit_jcs(body)::json;
    ALTER TABLE trovesnap.plugin_events ENABLE TRIGGER plugin_events_append_only;
    PERFORM set_config('trovesnap.system', 'off', true);
END
$$;

-- record_event inserts a plugin_event body (idempotent by event id), linked
-- to the head of its tenant's chain, with its canonical form, computed
-- once for both the hash and the canonical column.
CREATE OR REPLACE FUNCTION trovesnap.record_event(p_body jsonb) RETURNS boolean
    LANGUAGE plpgsql
    AS $$
DECLARE
    n       integer;
    v_ten   text;
    v_prev  text;
    v_canon text;
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
    -- Canonicalised before the lock: it needs nothing the lock guards.
    v_canon := trovesnap.audit_jcs(p_body);
    -- The lock comes before the INSERT draws the row's seq, and the head is
    -- read after it (a new snapshot under READ COMMITTED): the previous
    -- holder's event is committed and has the lower seq.
    PERFORM trovesnap.audit_chain_lock(v_ten);
    SELECT e.event_hash INTO v_prev FROM trovesnap.plugin_events e
    WHERE e.tenant_id = v_ten ORDER BY e.seq DESC LIMIT 1;
    v_prev := coalesce(v_prev, '');
    INSERT INTO trovesnap.plugin_events (id, tenant_id, correlation_id, request_id, server_request_id, tool_name, outcome,
                                         occurred_at, body, prev_hash, event_hash, canonical)
    VALUES (p_body ->> 'id', v_ten, coalesce(p_body ->> 'correlation_id', ''),
            coalesce(p_body ->> 'request_id', ''), coalesce(p_body ->> 'server_request_id', ''),
            coalesce(p_body -> 'tool' ->> 'name', ''), p_body ->> 'outcome', (p_body ->> 'occurred_at')::timestamptz, p_body,
            v_prev, 'sha256:' || encode(sha256(convert_to(v_canon || E'\n' || v_prev, 'UTF8')), 'hex'), v_canon::json)
    ON CONFLICT (id) DO NOTHING;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n = 1;
END
$$;

-- seller_audit_chain as in migration 30, but an event's body is its
-- canonical form while the stored body is still that JSON value (see the
-- head of this file).
CREATE OR REPLACE FUNCTION public.seller_audit_chain(p_tenant_id text, p_after_seq bigint DEFAULT 0, p_limit integer DEFAULT 10000)
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
                'prev_hash', e.prev_hash, 'event_hash', e.event_hash,
                'body', CASE WHEN e.canonical IS NOT NULL AND e.body = e.canonical::jsonb THEN e.canonical
                             ELSE e.body::json END) ORDER BY e.seq), '[]')
            FROM (SELECT * FROM trovesnap.plugin_events e
                  WHERE e.tenant_id = s.tenant_id AND e.seq > coalesce(p_after_seq, 0)
                  ORDER BY e.seq LIMIT least(greatest(coalesce(p_limit, 10000), 1), 20000)) e);
END
$$;

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (36, '20261201122300_trovesnap_audit_speed');

RESET ROLE;
