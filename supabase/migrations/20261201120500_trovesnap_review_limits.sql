-- trovesnap live mode, migration 18: the review of the limits rules written
-- twice, in Go (internal/domain: Limits, DefaultLimits, Narrow) and here.
--
-- 1. A candidate quota of 0 is the default, as in Go (domain.Limits:
--    "0 here means the default ... the smallest quota is 1";
--    Seller.SetLimits sends 0 as NULL). seller_set_quota stored a literal
--    0, and usage_add then enforced it: a seller calling the RPC directly
--    closed the tenant's candidate tier while Go reported the default.
--    seller_set_quota now stores 0 as NULL, effective_limits reads a stored
--    0 as the default, usage_add reads the quota through effective_limits,
--    and rows an earlier direct call left at 0 are set to NULL.
--
-- 2. The defaults once. mcp_consume_rate and seller_effective_limits held
--    the §38 numbers themselves (for the public bucket, for no tenant) next
--    to effective_limits'; seller_set_quota, seller_effective_limits and
--    usage_add held the quota's. Every value, defaults included, now comes
--    from trovesnap.effective_limits, which now also fills in the quota;
--    for no tenant (p_tenant_id NULL or '') it reads no row and answers the
--    defaults. The numbers are domain.DefaultLimits(); store's
--    TestHardening_QuotaAndLimitDefaultsAgreeWithTheSQL compares every migration's
--    default literals with it.

SET ROLE trovesnap_owner;

-- effective_limits: as before (the limits migration), plus the tenant's
-- candidate quota with its defaults, a stored 0 read as the default.
CREATE OR REPLACE FUNCTION trovesnap.effective_limits(p_tenant_id text, p_client_id text) RETURNS trovesnap.mcp_limits
    LANGUAGE plpgsql STABLE
    AS $$
DECLARE
    t trovesnap.mcp_limits;
    c trovesnap.mcp_limits;
    e trovesnap.mcp_limits;
BEGIN
    SELECT * INTO t FROM trovesnap.mcp_limits m WHERE m.tenant_id = p_tenant_id AND m.client_id = '';
    IF coalesce(p_client_id, '') <> '' THEN
        SELECT * INTO c FROM trovesnap.mcp_limits m WHERE m.tenant_id = p_tenant_id AND m.client_id = p_client_id;
    END IF;
    e.tenant_id := p_tenant_id;
    e.client_id := coalesce(p_client_id, '');
    -- The tenant's row, else the defaults ...
    e.read_calls_per_minute := coalesce(t.read_calls_per_minute, 120);
    e.candidate_writes_per_minute := coalesce(t.candidate_writes_per_minute, 20);
    e.proposals_per_minute := coalesce(t.proposals_per_minute, 20);
    e.controlled_actions_per_minute := coalesce(t.controlled_actions_per_minute, 10);
    e.maximum_bulk_targets := coalesce(t.maximum_bulk_targets, 50);
    e.maximum_daily_paid_cost_usd := coalesce(t.maximum_daily_paid_cost_usd, 0);
    e.rejected_calls_per_minute := coalesce(nullif(t.rejected_calls_per_minute, 0), 120);
    -- ... narrowed by the client's own row where it has one.
    IF c.client_id IS NOT NULL THEN
        e.read_calls_per_minute := least(e.read_calls_per_minute, c.read_calls_per_minute);
        e.candidate_writes_per_minute := least(e.candidate_writes_per_minute, c.candidate_writes_per_minute);
        e.proposals_per_minute := least(e.proposals_per_minute, c.proposals_per_minute);
        e.controlled_actions_per_minute := least(e.controlled_actions_per_minute, c.controlled_actions_per_minute);
        e.maximum_bulk_targets := least(e.maximum_bulk_targets, c.maximum_bulk_targets);
        e.maximum_daily_paid_cost_usd := least(e.maximum_daily_paid_cost_usd, c.maximum_daily_paid_cost_usd);
        e.rejected_calls_per_minute := least(e.rejected_calls_per_minute, coalesce(nullif(c.rejected_calls_per_minute, 0), 120));
    END IF;
    -- The candidate quota is the tenant's alone.
    e.maximum_open_candidates := coalesce(nullif(t.maximum_open_candidates, 0), 20000);
    e.maximum_candidate_bytes := coalesce(nullif(t.maximum_candidate_bytes, 0), 2684354560);
    RETURN e;
END
$$;

-- mcp_consume_rate: as before, the limit of every caller, the public bucket
-- included (no tenant: the defaults), from effective_limits.
CREATE OR REPLACE FUNCTION public.mcp_consume_rate(p_credential_hash text, p_class text) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    p        trovesnap.principal;
    v_bucket text := 'public';
    v_tenant text;
    v_client text;
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
    IF coalesce(p_credential_hash, '') <> '' THEN
        p := trovesnap.lookup_client(p_credential_hash);
        v_bucket := p.client_id;
        v_tenant := p.tenant_id;
        v_client := p.client_id;
        PERFORM set_config('trovesnap.tenant_id', p.tenant_id, true);
    END IF;
    l := trovesnap.effective_limits(v_tenant, v_client);
    v_limit := CASE p_class WHEN 'reads' THEN l.read_calls_per_minute
                            WHEN 'candidate_writes' THEN l.candidate_writes_per_minute
                            WHEN 'proposals' THEN l.proposals_per_minute
                            WHEN 'rejected' THEN l.rejected_calls_per_minute
                            ELSE l.controlled_actions_per_minute END;
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

-- seller_effective_limits: as before, every value (for no tenant: the
-- defaults) from effective_limits.
CREATE OR REPLACE FUNCTION public.seller_effective_limits(p_tenant_id text, p_client_id text DEFAULT NULL) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    v_user   text;
    v_tenant text;
    l        trovesnap.mcp_limits;
BEGIN
    PERFORM trovesnap.begin_rpc('authenticated');
    v_user := (trovesnap.seller_linked_user()).id;
    IF coalesce(p_tenant_id, '') <> '' THEN
        PERFORM trovesnap.seller_in(v_user, p_tenant_id, NULL, 'invalid_reference:tenant', p_tenant_id);
        v_tenant := p_tenant_id;
    END IF;
    l := trovesnap.effective_limits(v_tenant, p_client_id);
    RETURN trovesnap.seller_limits_json(l) || jsonb_build_object('maximum_open_candidates', l.maximum_open_candidates,
        'maximum_candidate_bytes', l.maximum_candidate_bytes);
END
$$;

-- seller_set_quota: as before (the quota migration), 0 stored as NULL (the
-- default, as Seller.SetLimits sends it), the answer from effective_limits.
CREATE OR REPLACE FUNCTION public.seller_set_quota(p_tenant_id text, p_maximum_open_candidates integer,
                                                   p_maximum_candidate_bytes bigint) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    v_user text;
    l      trovesnap.mcp_limits;
BEGIN
    PERFORM trovesnap.begin_rpc('authenticated');
    v_user := (trovesnap.seller_linked_user()).id;
    IF p_maximum_open_candidates < 0 OR p_maximum_candidate_bytes < 0 THEN
        PERFORM trovesnap.fail('invalid_input:limits', 'must not be negative');
    END IF;
    PERFORM trovesnap.seller_in(v_user, p_tenant_id, 'client.manage', 'invalid_reference:tenant', p_tenant_id);
    UPDATE trovesnap.mcp_limits SET maximum_open_candidates = nullif(p_maximum_open_candidates, 0),
        maximum_candidate_bytes = nullif(p_maximum_candidate_bytes, 0), updated_at = now()
    WHERE tenant_id = p_tenant_id AND client_id = '';
    IF NOT FOUND THEN
        PERFORM trovesnap.fail('invalid_input:limits', 'set the tenant''s limits first');
    END IF;
    l := trovesnap.effective_limits(p_tenant_id, '');
    RETURN jsonb_build_object('maximum_open_candidates', l.maximum_open_candidates,
        'maximum_candidate_bytes', l.maximum_candidate_bytes);
END
$$;

-- usage_add: as before (the quota migration), the quota from
-- effective_limits (a stored 0 is the default there).
CREATE OR REPLACE FUNCTION trovesnap.usage_add(p_tenant text, p_open bigint, p_bytes bigint) RETURNS void
    LANGUAGE plpgsql
    AS $$
DECLARE
    u trovesnap.tenant_usage;
    l trovesnap.mcp_limits;
BEGIN
    INSERT INTO trovesnap.tenant_usage AS t (tenant_id, open_candidates, candidate_bytes) VALUES (p_tenant, p_open, p_bytes)
    ON CONFLICT (tenant_id) DO UPDATE SET open_candidates = t.open_candidates + excluded.open_candidates,
        candidate_bytes = t.candidate_bytes + excluded.candidate_bytes
    RETURNING * INTO u;
    IF p_open <= 0 AND p_bytes <= 0 THEN
        RETURN;
    END IF;
    l := trovesnap.effective_limits(p_tenant, '');
    IF p_open > 0 AND u.open_candidates > l.maximum_open_candidates THEN
        PERFORM trovesnap.fail('invalid_input:quota', 'this write would exceed the tenant''s quota of open candidates: '
            || 'review or reject candidates, or the seller can raise it with trovesnap limits set --tenant <tenant> --candidates N');
    END IF;
    IF p_bytes > 0 AND u.candidate_bytes > l.maximum_candidate_bytes THEN
        PERFORM trovesnap.fail('invalid_input:quota', 'this write would exceed the tenant''s quota of candidate storage bytes: '
            || 'the seller can raise it with trovesnap limits set --tenant <tenant> --candidate-bytes B');
    END IF;
END
$$;

-- A quota an earlier direct seller_set_quota call stored as 0 is the
-- default (Go has always reported it so): NULL, like every other default.
SELECT set_config('trovesnap.system', 'on', false);
UPDATE trovesnap.mcp_limits SET maximum_open_candidates = nullif(maximum_open_candidates, 0),
    maximum_candidate_bytes = nullif(maximum_candidate_bytes, 0)
WHERE maximum_open_candidates = 0 OR maximum_candidate_bytes = 0;
SELECT set_config('trovesnap.system', 'off', false);

SELECT trovesnap.revoke_execute(ARRAY['effective_limits', 'mcp_consume_rate', 'seller_effective_limits', 'seller_set_quota',
    'usage_add']);
GRANT EXECUTE ON FUNCTION public.mcp_consume_rate(text, text) TO trovesnap_mcp;
SELECT trovesnap.grant_execute('authenticated', ARRAY[
    'public.seller_set_quota(text, integer, bigint)',
    'public.seller_effective_limits(text, text)']);

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (18, '20261201120500_trovesnap_review_limits');

RESET ROLE;
