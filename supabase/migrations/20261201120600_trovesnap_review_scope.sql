-- trovesnap live mode, migration 19: sale assignment (§4.3) on the audit
-- trail of the approval terminal.
--
-- Migration 13 made a proposal of an unassigned sale, and its grants,
-- invisible to a sale-scoped member by row level security. The plugin_events
-- of a proposal's correlation (its creation, approval and execution) were
-- still read whole by seller_audit_trail, so a sale-scoped seller could read
-- another sale's proposal trail by its correlation id.
--
-- seller_audit_trail now answers only for the correlation of a proposal of
-- the tenant that the seller sees (the proposals' row level security
-- decides, under the sale scope seller_in sets); any other correlation has
-- no events, exactly as one that does not exist. The embedded store's
-- approval surface does the same (store.SellerView.AuditTrail, with the rule
-- domain.Principal.MaySeeProposal).

SET ROLE trovesnap_owner;

CREATE OR REPLACE FUNCTION public.seller_audit_trail(p_tenant_id text, p_correlation_id text) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    s trovesnap.seller_ctx;
BEGIN
    s := trovesnap.seller_enter(p_tenant_id, 'proposal.read');
    IF coalesce(p_correlation_id, '') = '' THEN
        RETURN '[]'::jsonb;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM trovesnap.proposals pr
                   WHERE pr.tenant_id = s.tenant_id AND pr.correlation_id = p_correlation_id) THEN
        RETURN '[]'::jsonb;
    END IF;
    RETURN (SELECT coalesce(jsonb_agg(e.body ORDER BY e.seq), '[]')
            FROM (SELECT * FROM trovesnap.plugin_events e
                  WHERE e.tenant_id = s.tenant_id AND e.correlation_id = p_correlation_id
                  ORDER BY e.seq LIMIT 1000) e);
END
$$;

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (19, '20261201120600_trovesnap_review_scope');

RESET ROLE;
