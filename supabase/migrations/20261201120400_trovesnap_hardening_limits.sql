-- trovesnap live mode, migration 17: hardening of the limits (issue 13,
-- after an attack on the merged hardening). Mirrors store/limits.go
-- (domain.Narrow) and store/migrations/*_candidate_tier_usage.sql.
--
-- 1. A client's limits narrow its tenant's. Before, a client's row replaced
--    the tenant's ("client row else tenant row"): an agent that "lowered"
--    one field of its own client (no passphrase needed for a lowering) got
--    a row holding the tenant's then values, and the seller's later
--    tenant-level lowering no longer applied to it. Now every reader takes,
--    per class, the smaller of the client's row and the tenant's (the §38
--    defaults where the tenant has no row, the tenant's where the client
--    has none; a rejected budget of 0 is its default, 120). trovesnap.effective_limits computes it; mcp_consume_rate,
--    seller_effective_limits, max_bulk_targets and daily_paid_budget use it.
--    The candidate quota stays the tenant's alone.
--
-- 2. The candidate tier's other writes count in the bytes quota: staged
--    exports (export_drafts, export_draft_items) and stored drafts
--    (draft_revisions), written by trove_stage_export and
--    trove_draft_listing_copy with persist without approval, added ~26 KB
--    a call that tenant_usage did not see. Each row now adds its stored
--    text (UTF-8 bytes; jsonb as its text) plus 256 bytes, and usage_add
--    refuses a row that takes the tenant over its bytes quota, inside the
--    writing RPC's transaction (invalid_input:quota; nothing is written).

SET ROLE trovesnap_owner;

-- ---------------------------------------------------------------------------
-- Limits
-- ---------------------------------------------------------------------------

-- effective_limits: the limits binding p_client_id in p_tenant_id (for
-- p_client_id '' or NULL: the tenant's): the tenant's row (the defaults
-- where it is absent), narrowed per class by the client's own row where it
-- has one; the rejected budget's 0 read as its default. The caller has
-- entered the tenant's context (the table's row security).
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
    e.maximum_open_candidates := t.maximum_open_candidates;
    e.maximum_candidate_bytes := t.maximum_candidate_bytes;
    RETURN e;
END
$$;

-- mcp_consume_rate: as before (the rates migration), with the effective
-- limits.
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
        l := trovesnap.effective_limits(p.tenant_id, p.client_id);
        v_limit := CASE p_class WHEN 'reads' THEN l.read_calls_per_minute
                                WHEN 'candidate_writes' THEN l.candidate_writes_per_minute
                                WHEN 'proposals' THEN l.proposals_per_minute
                                WHEN 'rejected' THEN l.rejected_calls_per_minute
                                ELSE l.controlled_actions_per_minute END;
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

-- seller_effective_limits: as before (the quota migration: the limits with
-- the rejected budget, plus the tenant's candidate quota), with the
-- effective limits.
CREATE OR REPLACE FUNCTION public.seller_effective_limits(p_tenant_id text, p_client_id text DEFAULT NULL) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    v_user text;
    l      trovesnap.mcp_limits;
    v_out  jsonb := jsonb_build_object('read_calls_per_minute', 120, 'candidate_writes_per_minute', 20, 'proposals_per_minute', 20,
        'controlled_actions_per_minute', 10, 'maximum_bulk_targets', 50, 'maximum_daily_paid_cost_usd', 0,
        'rejected_calls_per_minute', 120);
BEGIN
    PERFORM trovesnap.begin_rpc('authenticated');
    v_user := (trovesnap.seller_linked_user()).id;
    IF coalesce(p_tenant_id, '') <> '' THEN
        PERFORM trovesnap.seller_in(v_user, p_tenant_id, NULL, 'invalid_reference:tenant', p_tenant_id);
        l := trovesnap.effective_limits(p_tenant_id, p_client_id);
        v_out := trovesnap.seller_limits_json(l);
    END IF;
    RETURN v_out || jsonb_build_object('maximum_open_candidates', coalesce(l.maximum_open_candidates, 20000),
        'maximum_candidate_bytes', coalesce(l.maximum_candidate_bytes, 2684354560));
END
$$;

-- max_bulk_targets: the effective limit (was: the client's, else the
-- tenant's, else §38's 50).
CREATE OR REPLACE FUNCTION trovesnap.max_bulk_targets(p trovesnap.principal) RETURNS integer
    LANGUAGE sql STABLE
    AS $$ SELECT (trovesnap.effective_limits(p.tenant_id, p.client_id)).maximum_bulk_targets $$;

-- daily_paid_budget: maximum_daily_paid_cost_usd binding p_client_id (the
-- smaller of its row and the tenant's) or, for p_client_id '', the
-- tenant's; no row is the §38 default, 0.
CREATE OR REPLACE FUNCTION trovesnap.daily_paid_budget(p_tenant_id text, p_client_id text) RETURNS numeric
    LANGUAGE sql STABLE
    AS $$ SELECT (trovesnap.effective_limits(p_tenant_id, p_client_id)).maximum_daily_paid_cost_usd $$;

-- ---------------------------------------------------------------------------
-- The candidate tier's other writes in the bytes quota
-- ---------------------------------------------------------------------------

CREATE OR REPLACE FUNCTION trovesnap.draft_row_bytes(d trovesnap.draft_revisions) RETURNS bigint
    LANGUAGE sql IMMUTABLE
    AS $$ SELECT 256 + octet_length(d.title) + octet_length(d.description) + octet_length(d.segments::text) $$;

CREATE OR REPLACE FUNCTION trovesnap.export_row_bytes(x trovesnap.export_drafts) RETURNS bigint
    LANGUAGE sql IMMUTABLE
    AS $$ SELECT 256 + octet_length(x.warnings::text) $$;

CREATE OR REPLACE FUNCTION trovesnap.export_item_row_bytes(x trovesnap.export_draft_items) RETURNS bigint
    LANGUAGE sql IMMUTABLE
    AS $$ SELECT 256 + octet_length(x.snapshot::text) + octet_length(x.warnings::text) $$;

-- The backfill reads every tenant's rows: system context for the migration.
SELECT set_config('trovesnap.system', 'on', false);
INSERT INTO trovesnap.tenant_usage AS u (tenant_id, open_candidates, candidate_bytes)
SELECT t.id, 0,
    (SELECT coalesce(sum(trovesnap.draft_row_bytes(d)), 0) FROM trovesnap.draft_revisions d WHERE d.tenant_id = t.id)
    + (SELECT coalesce(sum(trovesnap.export_row_bytes(x)), 0) FROM trovesnap.export_drafts x WHERE x.tenant_id = t.id)
    + (SELECT coalesce(sum(trovesnap.export_item_row_bytes(x)), 0) FROM trovesnap.export_draft_items x WHERE x.tenant_id = t.id)
FROM trovesnap.tenants t
ON CONFLICT (tenant_id) DO UPDATE SET candidate_bytes = u.candidate_bytes + excluded.candidate_bytes;
SELECT set_config('trovesnap.system', 'off', false);

CREATE OR REPLACE FUNCTION trovesnap.usage_drafts() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM trovesnap.usage_add(NEW.tenant_id, 0, trovesnap.draft_row_bytes(NEW));
    ELSE
        PERFORM trovesnap.usage_add(OLD.tenant_id, 0, -trovesnap.draft_row_bytes(OLD));
    END IF;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION trovesnap.usage_exports() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM trovesnap.usage_add(NEW.tenant_id, 0, trovesnap.export_row_bytes(NEW));
    ELSE
        PERFORM trovesnap.usage_add(OLD.tenant_id, 0, -trovesnap.export_row_bytes(OLD));
    END IF;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION trovesnap.usage_export_items() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM trovesnap.usage_add(NEW.tenant_id, 0, trovesnap.export_item_row_bytes(NEW));
    ELSE
        PERFORM trovesnap.usage_add(OLD.tenant_id, 0, -trovesnap.export_item_row_bytes(OLD));
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER draft_revisions_usage AFTER INSERT OR DELETE ON trovesnap.draft_revisions
    FOR EACH ROW EXECUTE FUNCTION trovesnap.usage_drafts();
CREATE TRIGGER export_drafts_usage AFTER INSERT OR DELETE ON trovesnap.export_drafts
    FOR EACH ROW EXECUTE FUNCTION trovesnap.usage_exports();
CREATE TRIGGER export_draft_items_usage AFTER INSERT OR DELETE ON trovesnap.export_draft_items
    FOR EACH ROW EXECUTE FUNCTION trovesnap.usage_export_items();

SELECT trovesnap.revoke_execute(ARRAY['effective_limits', 'mcp_consume_rate', 'seller_effective_limits', 'max_bulk_targets',
    'daily_paid_budget', 'draft_row_bytes', 'export_row_bytes', 'export_item_row_bytes', 'usage_drafts', 'usage_exports',
    'usage_export_items']);
GRANT EXECUTE ON FUNCTION public.mcp_consume_rate(text, text) TO trovesnap_mcp;
SELECT trovesnap.grant_execute('authenticated', ARRAY['public.seller_effective_limits(text, text)']);

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (17, '20261201120400_trovesnap_hardening_limits');

RESET ROLE;
