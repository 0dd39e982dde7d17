-- Migration 37: the audit chain's pages are planned for the page asked.
--
-- A plpgsql function keeps the plan of each query it runs; after five calls
-- Postgres may keep one generic plan, made without the arguments. For
-- seller_audit_chain's page (tenant, seq after p_after_seq, LIMIT p_limit)
-- that generic plan walks the primary key from the tenant's first event and
-- filters out every event before the page: reading a chain of 100,000
-- events in pages of 10,000 passed over 450,000 rows instead of 100,000,
-- and live `audit verify` spent a third of its database time there.
--
-- The page query now runs through EXECUTE … USING, which plans it for its
-- arguments on every call (well under a millisecond; a page carries up to
-- 20,000 events). Only that query: a function-level plan_cache_mode would
-- also hold in every function it calls, and audit_jcs, which canonicalises
-- each row from before migration 36, would plan its recursive queries again
-- on every call (2–2.7× slower on such rows). seller_audit_events (trace,
-- tail, show) was not seen to keep a worse plan
-- (TestAuditChain_PagesArePlannedForTheirPage reads a trace too).

SET ROLE trovesnap_owner;

CREATE OR REPLACE FUNCTION public.seller_audit_chain(p_tenant_id text, p_after_seq bigint DEFAULT 0, p_limit integer DEFAULT 10000)
    RETURNS json
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    s      trovesnap.seller_ctx;
    v_page json;
BEGIN
    s := trovesnap.seller_audit_enter(p_tenant_id);
    EXECUTE $q$
        SELECT CASE WHEN count(*) = 0 THEN '{}'::json ELSE json_build_object('seq', array_agg(e.seq), 'id', array_agg(e.id),
                'tenant_id', array_agg(e.tenant_id), 'correlation_id', array_agg(e.correlation_id),
                'request_id', array_agg(e.request_id), 'server_request_id', array_agg(e.server_request_id),
                'tool_name', array_agg(e.tool_name), 'outcome', array_agg(e.outcome), 'occurred_at', array_agg(e.occurred_at),
                'prev_hash', array_agg(e.prev_hash), 'event_hash', array_agg(e.event_hash),
                'body_bytes', array_agg(octet_length(e.b::text)), 'body', json_agg(e.b)) END
        FROM (SELECT e.seq, e.id, e.tenant_id, e.correlation_id, e.request_id, e.server_request_id, e.tool_name, e.outcome,
                     e.occurred_at, e.prev_hash, e.event_hash, coalesce(e.body_jcs, trovesnap.audit_jcs(e.body)::json) AS b
              FROM trovesnap.plugin_events e
              WHERE e.tenant_id = $1 AND e.seq > coalesce($2, 0)
              ORDER BY e.seq LIMIT least(greatest(coalesce($3, 10000), 1), 20000)) e
    $q$ INTO v_page USING s.tenant_id, p_after_seq, p_limit;
    RETURN v_page;
END
$$;

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (37, '20261202130000_trovesnap_audit_plans');

RESET ROLE;
