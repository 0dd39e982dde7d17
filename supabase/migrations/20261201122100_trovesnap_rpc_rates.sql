-- trovesnap live mode, migration 34: the database counts rate limits
-- (issue 15). Until now only the Go gate counted a call in its limit class
-- (mcp_consume_rate, a separate RPC); a caller holding a client token and
-- the public key calls the RPCs itself and simply never called it, so for
-- direct calls there were no limits: unlimited candidates, proposals,
-- executions and reads.
--
-- From this migration every public MCP RPC that serves a tool counts its own
-- call in the limit class of that tool, in its own transaction, before its
-- body runs, and refuses over the limit with trovesnap:rate_limited, whose
-- detail is JSON: {"class", "limit", "retry_after_seconds"}. Nothing is
-- written then: the body never ran. It is done in one place, the wrappers
-- of migration 29, rebuilt here as: count (trovesnap.count_rpc), then call
-- the body. The public reads, which had no wrapper, move their bodies into
-- trovesnap behind one; without a token they count in the shared public
-- bucket, as the gate counted them.
--
-- trovesnap.rpc_rate_class is the map RPC → class. It is held to the Go
-- table that derives it (internal/live rates.go, rpcRateClass, whose classes
-- are the catalog tiers' limit classes) by TestRPCRates_SQLClassesAreGos.
-- RPCs with no class count nothing: the plumbing every tool call makes
-- (resolve_principal, check_idempotency, cursors, approval_state, the
-- state reads that prepare a write), the doctor's schema_version and
-- role_check, mcp_consume_rate itself, and mcp_append_event (its body limits
-- anonymous events).

SET ROLE trovesnap_owner;

-- rpc_rate_class: the limit class an MCP RPC counts its call in; NULL for
-- an RPC that counts nothing. Held to internal/live's rpcRateClass.
CREATE FUNCTION trovesnap.rpc_rate_class(p_fn text) RETURNS text
    LANGUAGE sql IMMUTABLE
    AS $$
        SELECT CASE p_fn
            WHEN 'mcp_demand_signals' THEN 'reads'
            WHEN 'mcp_disposition_queue' THEN 'reads'
            WHEN 'mcp_get_candidate' THEN 'reads'
            WHEN 'mcp_get_import_run' THEN 'reads'
            WHEN 'mcp_get_item' THEN 'reads'
            WHEN 'mcp_get_proposal' THEN 'reads'
            WHEN 'mcp_get_sale' THEN 'reads'
            WHEN 'mcp_list_candidates' THEN 'reads'
            WHEN 'mcp_list_import_runs' THEN 'reads'
            WHEN 'mcp_list_items' THEN 'reads'
            WHEN 'mcp_list_label_batches' THEN 'reads'
            WHEN 'mcp_list_sales' THEN 'reads'
            WHEN 'mcp_list_status_events' THEN 'reads'
            WHEN 'mcp_public_item' THEN 'reads'
            WHEN 'mcp_public_sale' THEN 'reads'
            WHEN 'mcp_resolve_public_qr' THEN 'reads'
            WHEN 'mcp_search_marketplace' THEN 'reads'
            WHEN 'mcp_attach_candidate_media' THEN 'candidate_writes'
            WHEN 'mcp_create_inventory_candidate' THEN 'candidate_writes'
            WHEN 'mcp_create_media_candidate' THEN 'candidate_writes'
            WHEN 'mcp_create_status_report' THEN 'candidate_writes'
            WHEN 'mcp_draft_listing_copy' THEN 'candidate_writes'
            WHEN 'mcp_run_import' THEN 'candidate_writes'
            WHEN 'mcp_stage_export' THEN 'candidate_writes'
            WHEN 'mcp_create_proposal' THEN 'proposals'
            WHEN 'mcp_execute_proposal' THEN 'controlled_actions'
        END
    $$;

-- count_rpc counts the call of RPC p_fn in its class for the request's
-- client (the token's; none: the public bucket) and refuses it over the
-- limit. An unknown or suspended token fails as the body would.
CREATE FUNCTION trovesnap.count_rpc(p_fn text) RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    v_class text := trovesnap.rpc_rate_class(p_fn);
    v_rate  jsonb;
BEGIN
    IF v_class IS NULL THEN
        RETURN;
    END IF;
    v_rate := trovesnap.mcp_consume_rate(p_credential_hash => trovesnap.request_credential_hash(), p_class => v_class);
    IF NOT (v_rate ->> 'allowed')::boolean THEN
        PERFORM trovesnap.fail('rate_limited', jsonb_build_object('class', v_class, 'limit', (v_rate ->> 'limit')::integer,
            'retry_after_seconds', (v_rate ->> 'retry_after_seconds')::integer)::text);
    END IF;
END
$$;

-- The wrappers: every public MCP RPC with a class first counts, then runs
-- its body. Those of migration 29 pass the token's hash as before; the
-- public reads move into trovesnap behind a wrapper of the same signature.
DO $$
DECLARE
    f      record;
    v_pass text;
    v_hash boolean;
BEGIN
    FOR f IN
        SELECT p.oid, p.proname, p.proargnames, p.pronargs,
               pg_get_function_identity_arguments(p.oid) AS ident,
               pg_get_function_arguments(p.oid) AS args,
               pg_get_function_result(p.oid) AS result
        FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
        WHERE n.nspname = 'public' AND p.proname LIKE 'mcp\_%' AND p.proowner = 'trovesnap_owner'::regrole
          AND trovesnap.rpc_rate_class(p.proname) IS NOT NULL
        ORDER BY p.proname
    LOOP
        IF f.pronargs > 0 AND (f.proargnames IS NULL OR array_length(f.proargnames, 1) <> f.pronargs) THEN
            RAISE EXCEPTION 'unexpected signature: %(%)', f.proname, f.args;
        END IF;
        IF f.result LIKE 'SETOF %' OR f.result LIKE 'TABLE%' THEN
            RAISE EXCEPTION 'a set-returning RPC needs another wrapper: %', f.proname;
        END IF;
        SELECT coalesce(string_agg(format('%1$I => %1$I', a), ', ' ORDER BY i), '')
        INTO v_pass FROM unnest(f.proargnames) WITH ORDINALITY AS x(a, i);
        v_hash := EXISTS (SELECT 1 FROM pg_proc b JOIN pg_namespace bn ON bn.oid = b.pronamespace
                          WHERE bn.nspname = 'trovesnap' AND b.proname = f.proname
                            AND b.proargnames[1] = 'p_credential_hash');
        IF v_hash THEN
            v_pass := 'p_credential_hash => trovesnap.request_credential_hash()'
                      || CASE WHEN v_pass = '' THEN '' ELSE ', ' || v_pass END;
        ELSE
            EXECUTE format('ALTER FUNCTION public.%I(%s) SET SCHEMA trovesnap', f.proname, f.ident);
        END IF;
        EXECUTE format(
            'CREATE OR REPLACE FUNCTION public.%1$I(%2$s) RETURNS %3$s LANGUAGE plpgsql SECURITY DEFINER '
            'SET search_path = pg_catalog, pg_temp '
            'AS $w$ BEGIN PERFORM trovesnap.count_rpc(%4$L); RETURN trovesnap.%1$I(%5$s); END $w$',
            f.proname, f.args, f.result, f.proname, v_pass);
        EXECUTE format('COMMENT ON FUNCTION public.%I(%s) IS %L', f.proname, f.ident,
                       'wrapper: counts the call in its rate class (trovesnap.rpc_rate_class), then runs trovesnap.'
                       || f.proname || CASE WHEN v_hash THEN ' as the request''s x-trovesnap-client-token' ELSE '' END);
    END LOOP;
END
$$;

-- Grants: the bodies (the moved public reads too) are nobody's to call;
-- the wrappers are anon's, as every MCP RPC.
SELECT trovesnap.revoke_execute(ARRAY(
    SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
    WHERE n.nspname = 'trovesnap' AND p.proowner = 'trovesnap_owner'::regrole AND p.proname LIKE 'mcp\_%'));
SELECT trovesnap.revoke_execute(ARRAY['rpc_rate_class', 'count_rpc']);
SELECT trovesnap.grant_execute('anon', ARRAY(
    SELECT p.oid::regprocedure::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
    WHERE n.nspname = 'public' AND p.proowner = 'trovesnap_owner'::regrole AND p.proname LIKE 'mcp\_%'
    ORDER BY 1));

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (34, '20261201122100_trovesnap_rpc_rates');

RESET ROLE;
