-- trovesnap live mode, migration 20 (review: cost): the daily paid budget
-- cannot be bent by a cost that is not an amount. Mirrors domain.ValidUSD
-- and domain.Limits.Validate (store/limits.go, store/budget.go,
-- store/grants.go).
--
-- An attacker holding the server key sent mcp_create_proposal a buyer
-- notification whose body said impact.estimated_cost_usd = -500 (and a huge
-- audience), re-hashed: it was stored as sent, a seller's grant of up to
-- -500 was accepted, the execution passed (require_cost_budget returns
-- early for a cost <= 0), and paid_spent_today then summed the -500, so
-- honest paid work passed a $0 budget. And seller_set_limits took
-- p_maximum_daily_paid_cost_usd = 'NaN' (NaN < 0 is false; NaN sorts above
-- every number, so the table's CHECK (>= 0) let it in and no cost ever
-- exceeded it): an unlimited budget.
--
-- Computing the notification plan in SQL is another change; these are the
-- guards:
--  * usd_ok: an amount is finite and at least 0.
--  * proposal_cost_budget (the BEFORE INSERT trigger on proposals, whatever
--    RPC inserts one) first refuses a body whose impact.estimated_cost_usd
--    is missing, not a JSON number, negative, NaN or infinite
--    (invalid_input:estimated_cost_usd); nothing is stored.
--  * require_cost_budget refuses a cost that is not an amount
--    (invalid_input:estimated_cost_usd, or for a grant
--    invalid_input:maximum_cost_usd): seller_issue_grant refuses a grant of
--    a negative, NaN or infinite maximum cost, and mcp_execute_proposal a
--    proposal stored with one before this migration. Done here rather than
--    by replacing seller_issue_grant, so no later change of that function
--    is undone by this file.
--  * paid_spent_today counts each executed cost as at least 0: nothing
--    executed gives budget back.
--  * seller_set_limits refuses a paid budget that is NaN or infinite
--    (invalid_input:limits); the table refuses one too (a CHECK), and a
--    NaN or infinite budget already stored becomes the §38 default, $0.
--    (seller_set_quota takes integers only: nothing to refuse there.)

SET ROLE trovesnap_owner;

-- usd_ok: whether p is an amount of money a cost, a budget or a grant may
-- hold: not NULL, finite, at least 0. (NaN >= 0 holds for numeric, and
-- Infinity is a numeric since PostgreSQL 14: both are named.)
CREATE OR REPLACE FUNCTION trovesnap.usd_ok(p numeric) RETURNS boolean
    LANGUAGE sql IMMUTABLE
    AS $$ SELECT p IS NOT NULL AND p >= 0 AND p::text NOT IN ('NaN', 'Infinity') $$;

-- paid_spent_today: as in migration 14, each cost counted as at least 0.
CREATE OR REPLACE FUNCTION trovesnap.paid_spent_today(p_tenant_id text, p_client_id text) RETURNS numeric
    LANGUAGE sql STABLE
    AS $$
        SELECT coalesce(sum(greatest(coalesce((x.body -> 'impact' ->> 'estimated_cost_usd')::numeric, 0), 0)), 0)
        FROM trovesnap.proposals x
        WHERE x.tenant_id = p_tenant_id AND x.status = 'executed'
          AND x.executed_at >= (date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')
          AND (p_client_id = '' OR x.requested_by_client = p_client_id)
    $$;

-- require_cost_budget: as in migration 14, but a cost that is not an
-- amount is refused (before, a negative one returned early: free work).
-- NULL stays free (a grant without a maximum cost allows none).
CREATE OR REPLACE FUNCTION trovesnap.require_cost_budget(p_tenant_id text, p_client_id text, p_cost numeric,
                                                         p_grant boolean) RETURNS void
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_scope text;
    v_limit numeric;
    v_spent numeric;
BEGIN
    IF NOT trovesnap.usd_ok(coalesce(p_cost, 0)) THEN
        IF p_grant THEN
            PERFORM trovesnap.fail('invalid_input:maximum_cost_usd', 'a grant''s maximum cost must be a finite amount of at least 0');
        END IF;
        PERFORM trovesnap.fail('invalid_input:estimated_cost_usd', 'a proposal''s cost must be a finite amount of at least 0');
    END IF;
    IF coalesce(p_cost, 0) = 0 THEN
        RETURN;
    END IF;
    FOREACH v_scope IN ARRAY ARRAY['client', 'tenant']
    LOOP
        v_limit := trovesnap.daily_paid_budget(p_tenant_id, CASE v_scope WHEN 'client' THEN p_client_id ELSE '' END);
        IF p_grant THEN
            IF p_cost > v_limit THEN
                PERFORM trovesnap.fail('cost_limit_exceeded',
                    format('a grant of up to %s exceeds the %s''s daily paid budget of %s: raise the budget with `trovesnap limits set --paid-usd-per-day` first, or deny the proposal',
                           trovesnap.usd(p_cost), v_scope, trovesnap.usd(v_limit)));
            END IF;
        ELSE
            v_spent := trovesnap.paid_spent_today(p_tenant_id, CASE v_scope WHEN 'client' THEN p_client_id ELSE '' END);
            IF v_spent + p_cost > v_limit THEN
                PERFORM trovesnap.fail('cost_limit_exceeded',
                    format('%s would exceed the %s''s daily paid budget of %s (%s already spent today), only the seller can raise it',
                           trovesnap.usd(p_cost), v_scope, trovesnap.usd(v_limit), trovesnap.usd(v_spent)));
            END IF;
        END IF;
    END LOOP;
END
$$;

-- proposal_cost_budget (trigger proposals_cost_budget): a stored proposal
-- states its cost as a JSON number that is an amount — the builder always
-- writes one, 0 for free work — and fits today's budgets.
CREATE OR REPLACE FUNCTION trovesnap.proposal_cost_budget() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_cost jsonb := NEW.body -> 'impact' -> 'estimated_cost_usd';
BEGIN
    IF jsonb_typeof(v_cost) IS DISTINCT FROM 'number' OR NOT trovesnap.usd_ok((v_cost #>> '{}')::numeric) THEN
        PERFORM trovesnap.fail('invalid_input:estimated_cost_usd',
            'impact.estimated_cost_usd must be a finite amount of at least 0');
    END IF;
    PERFORM trovesnap.require_cost_budget(NEW.tenant_id, NEW.requested_by_client, (v_cost #>> '{}')::numeric, false);
    RETURN NEW;
END
$$;

-- seller_set_limits: as in migration 15, plus: the paid budget is an
-- amount (a NaN one refused nothing, an infinite one is no budget).
CREATE OR REPLACE FUNCTION public.seller_set_limits(p_tenant_id text, p_client_id text, p_read_calls_per_minute integer,
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
    IF NOT trovesnap.usd_ok(p_maximum_daily_paid_cost_usd) THEN
        PERFORM trovesnap.fail('invalid_input:limits', 'maximum_daily_paid_cost_usd must be a finite amount of at least 0');
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

-- A NaN or infinite budget already stored is no budget the seller can have
-- meant: it becomes the §38 default ($0), and the table refuses another.
SELECT set_config('trovesnap.system', 'on', true);
UPDATE trovesnap.mcp_limits SET maximum_daily_paid_cost_usd = 0, updated_at = now()
WHERE NOT trovesnap.usd_ok(maximum_daily_paid_cost_usd);
SELECT set_config('trovesnap.system', 'off', true);
ALTER TABLE trovesnap.mcp_limits ADD CONSTRAINT mcp_limits_paid_budget_finite
    CHECK (maximum_daily_paid_cost_usd::text NOT IN ('NaN', 'Infinity'));

SELECT trovesnap.revoke_execute(ARRAY['usd_ok', 'paid_spent_today', 'require_cost_budget', 'proposal_cost_budget']);

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (20, '20261201120700_trovesnap_review_cost');

RESET ROLE;
