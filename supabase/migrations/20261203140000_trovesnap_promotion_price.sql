-- Migration 44 (issue 16 hardening). The price a promotion gives its item is a whole number of
-- cents from 0 to domain.MaxPriceCents (100000000), as the Go builder
-- (domain.BuildPromotion) and a bulk update's check hold a price
-- (check_item_proposal, migration 10). derive_proposal echoes the draft's
-- create_item.price_cents, so a body sent to mcp_create_proposal directly
-- by a pricing token's holder could store a promotion priced -500, 12.5 or
-- 10^15 cents for the seller to approve, whose execution then failed on a
-- CHECK or a cast. Like proposals_cost_budget (migration 26), the rule
-- holds whichever RPC inserts a proposal.
-- internal/live/promotion_price_attack_test.go holds the bound to Go's.

SET ROLE trovesnap_owner;

CREATE FUNCTION trovesnap.proposal_promotion_price() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
    ch    jsonb;
    v_num numeric;
BEGIN
    IF NEW.action <> 'promote_candidate' OR jsonb_typeof(NEW.body -> 'changes') IS DISTINCT FROM 'array' THEN
        RETURN NEW;
    END IF;
    FOR ch IN SELECT c FROM jsonb_array_elements(NEW.body -> 'changes') c WHERE c ->> 'field' = 'create_item.price_cents'
    LOOP
        IF jsonb_typeof(ch -> 'to') IS DISTINCT FROM 'number' THEN
            PERFORM trovesnap.fail('invalid_input:changes', 'price_cents is a whole number of cents from 0 to 100000000');
        END IF;
        v_num := (ch ->> 'to')::numeric;
        IF v_num < 0 OR v_num <> trunc(v_num) OR v_num > 100000000 THEN
            PERFORM trovesnap.fail('invalid_input:changes', 'price_cents is a whole number of cents from 0 to 100000000');
        END IF;
    END LOOP;
    RETURN NEW;
END
$$;
CREATE TRIGGER proposals_promotion_price BEFORE INSERT ON trovesnap.proposals
    FOR EACH ROW EXECUTE FUNCTION trovesnap.proposal_promotion_price();

-- The executing tool's version, which the seller's approval screen prints
-- and mcp_create_proposal only required to be non-empty, is a version
-- (major.minor.patch, as every catalog tool's): no text a token holder
-- chose, terminal control sequences among it.
CREATE FUNCTION trovesnap.proposal_tool_version() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF coalesce(NEW.body -> 'tool' ->> 'version', '') !~ '^[0-9]{1,4}\.[0-9]{1,4}\.[0-9]{1,4}$' THEN
        PERFORM trovesnap.fail('invalid_input:tool', 'the tool''s version is major.minor.patch');
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER proposals_tool_version BEFORE INSERT ON trovesnap.proposals
    FOR EACH ROW EXECUTE FUNCTION trovesnap.proposal_tool_version();

SELECT trovesnap.revoke_execute(ARRAY['proposal_promotion_price', 'proposal_tool_version']);

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (44, '20261203140000_trovesnap_promotion_price');

RESET ROLE;
