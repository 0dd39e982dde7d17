-- trovesnap live mode, migration 15: refused calls count against their own
-- per-client budget (issue 13, finding 6), as in the embedded store
-- (store/migrations/0009_rejected_limit.sql, store/limits.go).
--
-- A call the gate refuses before its tool's class is counted (invalid
-- input, unknown or invisible tool, version pin, tenant hint, oversize
-- arguments) is counted in the limit class 'rejected'. Its budget is a
-- column of mcp_limits; 0 means the default, 120 a minute: an agent learns
-- a schema from its refusals, so the class can be lowered but not closed.

SET ROLE trovesnap_owner;

ALTER TABLE trovesnap.mcp_limits ADD COLUMN rejected_calls_per_minute integer NOT NULL DEFAULT 0
    CHECK (rejected_calls_per_minute >= 0);

-- mcp_consume_rate: as before, plus the class 'rejected'.
CREATE OR REPLACE FUNCTION public.mcp_consume_rate(p_credential_hash text, p_class text) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    p        trovesnap.principal;
    v_bucket text := 'public';
    v_tenant text;
    v_limit  integer;
    v_now    bigint := floor(extract(epoch FROM now()))::bigint;
    v_window bigint;
    v_count  integer;
    l        trovesnap.mcp_limits;
BEGIN
    PERFORM trovesnap.begin_rpc('trovesnap_mcp');
    IF coalesce(p_class, '') NOT IN ('reads', 'candidate_writes', 'proposals', 'controlled_actions', 'rejected') THEN
        PERFORM trovesnap.fail('invalid_input:class', 'unknown limit class');
    END IF;
    v_limit := CASE p_class WHEN 'reads' THEN 120 WHEN 'candidate_writes' THEN 20 WHEN 'proposals' THEN 20
                            WHEN 'rejected' THEN 120 ELSE 10 END;
    IF coalesce(p_credential_hash, '') <> '' THEN
        p := trovesnap.lookup_client(p_credential_hash);
        v_bucket := p.client_id;
        v_tenant := p.tenant_id;
        PERFORM set_config('trovesnap.tenant_id', p.tenant_id, true);
        SELECT * INTO l FROM trovesnap.mcp_limits m
        WHERE m.tenant_id = p.tenant_id AND m.client_id IN ('', p.client_id) ORDER BY m.client_id DESC LIMIT 1;
        IF FOUND THEN
            v_limit := CASE p_class WHEN 'reads' THEN l.read_calls_per_minute
                                    WHEN 'candidate_writes' THEN l.candidate_writes_per_minute
                                    WHEN 'proposals' THEN l.proposals_per_minute
                                    WHEN 'rejected' THEN coalesce(nullif(l.rejected_calls_per_minute, 0), 120)
                                    ELSE l.controlled_actions_per_minute END;
        END IF;
    END IF;
    v_window := v_now - v_now % 60;
    IF v_limit > 0 THEN
        DELETE FROM trovesnap.rate_counters WHERE bucket = v_bucket AND class = p_class AND window_start < v_window;
        INSERT INTO trovesnap.rate_counters AS rc (bucket, class, window_start, count, tenant_id)
        VALUES (v_bucket, p_class, v_window, 1, v_tenant)
        ON CONFLICT (bucket, class, window_start) DO UPDATE SET count = rc.count + 1 WHERE rc.count < v_limit
        RETURNING rc.count INTO v_count;
    END IF;
    RETURN jsonb_build_object('allowed', v_count IS NOT NULL, 'class', p_class, 'limit', v_limit,
                              'retry_after_seconds', v_window + 60 - v_now);
END
$$;

CREATE OR REPLACE FUNCTION trovesnap.seller_limits_json(l trovesnap.mcp_limits) RETURNS jsonb
    LANGUAGE sql IMMUTABLE
    AS $$
        SELECT jsonb_build_object('read_calls_per_minute', l.read_calls_per_minute,
            'candidate_writes_per_minute', l.candidate_writes_per_minute, 'proposals_per_minute', l.proposals_per_minute,
            'controlled_actions_per_minute', l.controlled_actions_per_minute, 'maximum_bulk_targets', l.maximum_bulk_targets,
            'maximum_daily_paid_cost_usd', l.maximum_daily_paid_cost_usd,
            'rejected_calls_per_minute', l.rejected_calls_per_minute)
    $$;

-- seller_set_limits takes the rejected budget too. A new parameter is a new
-- signature, so the old function is dropped (a call by name with the old
-- parameters still resolves: the new one defaults to 0, the default).
DROP FUNCTION public.seller_set_limits(text, text, integer, integer, integer, integer, integer, numeric);
CREATE FUNCTION public.seller_set_limits(p_tenant_id text, p_client_id text, p_read_calls_per_minute integer,
                                         p_candidate_writes_per_minute integer, p_proposals_per_minute integer,
                                         p_controlled_actions_per_minute integer, p_maximum_bulk_targets integer,
                                         p_maximum_daily_paid_cost_usd numeric,
                                         p_rejected_calls_per_minute integer DEFAULT 0) RETURNS jsonb
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
       OR p_controlled_actions_per_minute < 0 OR p_maximum_bulk_targets < 0 OR p_maximum_daily_paid_cost_usd < 0
       OR coalesce(p_rejected_calls_per_minute, 0) < 0 THEN
        PERFORM trovesnap.fail('invalid_input:limits', 'must not be negative');
    END IF;
    PERFORM trovesnap.seller_in(v_user, p_tenant_id, 'client.manage', 'invalid_reference:tenant', p_tenant_id);
    IF v_client <> '' AND NOT EXISTS (SELECT 1 FROM trovesnap.mcp_clients c WHERE c.id = v_client) THEN
        PERFORM trovesnap.fail('invalid_reference:client', jsonb_build_object('id', v_client, 'cross_tenant', false)::text);
    END IF;
    INSERT INTO trovesnap.mcp_limits AS ml (tenant_id, client_id, read_calls_per_minute, candidate_writes_per_minute,
        proposals_per_minute, controlled_actions_per_minute, maximum_bulk_targets, maximum_daily_paid_cost_usd,
        rejected_calls_per_minute, updated_at)
    VALUES (p_tenant_id, v_client, p_read_calls_per_minute, p_candidate_writes_per_minute, p_proposals_per_minute,
        p_controlled_actions_per_minute, p_maximum_bulk_targets, p_maximum_daily_paid_cost_usd,
        coalesce(p_rejected_calls_per_minute, 0), now())
    ON CONFLICT (tenant_id, client_id) DO UPDATE SET read_calls_per_minute = excluded.read_calls_per_minute,
        candidate_writes_per_minute = excluded.candidate_writes_per_minute, proposals_per_minute = excluded.proposals_per_minute,
        controlled_actions_per_minute = excluded.controlled_actions_per_minute,
        maximum_bulk_targets = excluded.maximum_bulk_targets,
        maximum_daily_paid_cost_usd = excluded.maximum_daily_paid_cost_usd,
        rejected_calls_per_minute = excluded.rejected_calls_per_minute, updated_at = excluded.updated_at
    RETURNING * INTO l;
    RETURN trovesnap.seller_limits_json(l);
END
$$;

-- seller_effective_limits: the defaults now name the rejected budget too.
CREATE OR REPLACE FUNCTION public.seller_effective_limits(p_tenant_id text, p_client_id text DEFAULT NULL) RETURNS jsonb
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
        'controlled_actions_per_minute', 10, 'maximum_bulk_targets', 50, 'maximum_daily_paid_cost_usd', 0,
        'rejected_calls_per_minute', 120);
END
$$;

SELECT trovesnap.revoke_execute(ARRAY['seller_limits_json', 'seller_set_limits', 'seller_effective_limits', 'mcp_consume_rate']);
SELECT trovesnap.grant_execute('authenticated', ARRAY[
    'public.seller_set_limits(text, text, integer, integer, integer, integer, integer, numeric, integer)',
    'public.seller_effective_limits(text, text)']);
GRANT EXECUTE ON FUNCTION public.mcp_consume_rate(text, text) TO trovesnap_mcp;

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (15, '20261201120200_trovesnap_hardening_rates');

RESET ROLE;
