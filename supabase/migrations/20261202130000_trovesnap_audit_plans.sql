-- Migration 37: the audit chain's pages are planned for the page asked.
--
-- A plpgsql function keeps the plan of each query it runs; after five calls
-- Postgres may keep one generic plan, made without the arguments. For
-- seller_audit_chain's page (tenant, seq after p_after_seq, LIMIT p_limit)
-- that generic plan walks the primary key from the tenant's first event and
-- filters out every event before the page: reading a chain of 100,000
-- events in pages of 10,000 passed over 450,000 rows instead of 100,000,
-- and live `audit verify` spent a third of its database time there. The
-- function now plans each call with its arguments (planning costs well
-- under a millisecond; a page carries up to 20,000 events).
-- seller_audit_events (trace, tail, show) was not seen to keep a worse
-- plan (TestAuditChain_PagesArePlannedForTheirPage reads a trace too).

SET ROLE trovesnap_owner;

ALTER FUNCTION public.seller_audit_chain(text, bigint, integer) SET plan_cache_mode = force_custom_plan;

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (37, '20261202130000_trovesnap_audit_plans');

RESET ROLE;
