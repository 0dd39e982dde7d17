-- trovesnap live mode, migration 29: `trovesnap sale create|list` — a
-- seller creates and lists the tenant's estate sales under the signed-in
-- user's JWT (issue 15). Before, a fresh project reached the agent flow
-- only through hand-written SQL: bootstrap_owner makes a tenant, a user and
-- a membership, and no sale.
--
-- Both RPCs are seller RPCs like migration 7's: SECURITY DEFINER, the user
-- from the JWT `sub` (seller_enter), never an actor argument, and a
-- membership of the tenant (permission_denied:tenant_id otherwise, a tenant
-- of someone else answering like a missing one). The tenant argument only
-- chooses among the user's own memberships; empty means the user's only
-- one. Creating needs sale.create (owner, manager: domain.RolePermissions,
-- in the generated role_permissions); a sale-scoped member may not create a
-- sale (sale_assignment): it could not see it afterwards. A new sale is
-- what domain.NewSale* declare (the generated new_sale_* lookups), its id
-- trovesnap.new_id('sale') (domain.IDPattern(sale)), its text bounded by
-- sale_text_max, as domain.ValidateNewSale checks, in the same order. Each
-- call creates a new sale: there is no request id (README, "sale create").
-- A sale_created plugin_event records who created which sale.

SET ROLE trovesnap_owner;

-- seller_enter_tenant: seller_enter in p_tenant_id, or (empty) in the
-- signed-in user's only tenant; a user of several tenants must name one.
CREATE FUNCTION trovesnap.seller_enter_tenant(p_tenant_id text, p_perm text) RETURNS trovesnap.seller_ctx
    LANGUAGE plpgsql
    AS $$
DECLARE
    u      trovesnap.users;
    v_only text[];
BEGIN
    IF coalesce(p_tenant_id, '') <> '' THEN
        RETURN trovesnap.seller_enter(p_tenant_id, p_perm);
    END IF;
    PERFORM trovesnap.begin_rpc('authenticated');
    u := trovesnap.seller_linked_user();
    PERFORM set_config('trovesnap.system', 'on', true);
    v_only := ARRAY(SELECT m.tenant_id FROM trovesnap.memberships m WHERE m.user_id = u.id ORDER BY m.tenant_id LIMIT 2);
    PERFORM set_config('trovesnap.system', 'off', true);
    IF cardinality(v_only) = 0 THEN
        PERFORM trovesnap.fail('permission_denied:tenant_id');
    END IF;
    IF cardinality(v_only) > 1 THEN
        PERFORM trovesnap.fail('invalid_input:tenant_id', 'a member of several tenants names one');
    END IF;
    RETURN trovesnap.seller_in(u.id, v_only[1], p_perm, 'permission_denied:tenant_id', NULL);
END
$$;

-- seller_sale_text: a text field of a new sale, trimmed; refused when it
-- carries control characters (the CLI removes them: domain.CleanLine) or
-- is longer than sale_text_max.
CREATE FUNCTION trovesnap.seller_sale_text(p_field text, p_value text) RETURNS text
    LANGUAGE plpgsql
    AS $$
DECLARE
    v text := btrim(coalesce(p_value, ''));
BEGIN
    IF v ~ '[[:cntrl:]]' THEN
        PERFORM trovesnap.fail('invalid_input:' || p_field, 'no control characters');
    END IF;
    IF char_length(v) > trovesnap.sale_text_max() THEN
        PERFORM trovesnap.fail('invalid_input:' || p_field, format('at most %s characters', trovesnap.sale_text_max()));
    END IF;
    RETURN v;
END
$$;

-- seller_sale_time: a date of a new sale (RFC 3339), required.
CREATE FUNCTION trovesnap.seller_sale_time(p_field text, p_value text) RETURNS timestamptz
    LANGUAGE plpgsql
    AS $$
DECLARE
    v timestamptz;
BEGIN
    IF coalesce(p_value, '') = '' THEN
        PERFORM trovesnap.fail('invalid_input:' || p_field, 'required');
    END IF;
    BEGIN
        v := p_value::timestamptz;
    EXCEPTION WHEN others THEN
        PERFORM trovesnap.fail('invalid_input:' || p_field, 'not an RFC 3339 time');
    END;
    IF NOT isfinite(v) THEN
        PERFORM trovesnap.fail('invalid_input:' || p_field, 'not an RFC 3339 time');
    END IF;
    RETURN v;
END
$$;

-- seller_create_sale creates a draft sale of the tenant (sale.create) and
-- records sale_created. It returns the sale (domain.Sale).
CREATE FUNCTION public.seller_create_sale(p_tenant_id text, p_name text, p_starts_at text, p_ends_at text,
                                          p_city text DEFAULT '', p_region text DEFAULT '',
                                          p_postal_code text DEFAULT '', p_street_address text DEFAULT '') RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    s        trovesnap.seller_ctx;
    e        trovesnap.estate_sales;
    v_name   text;
    v_city   text;
    v_region text;
    v_postal text;
    v_street text;
    v_starts timestamptz;
    v_ends   timestamptz;
    v_now    timestamptz := clock_timestamp();
BEGIN
    s := trovesnap.seller_enter_tenant(p_tenant_id, 'sale.create');
    IF coalesce(current_setting('trovesnap.sale_scope', true), '') <> '' THEN
        PERFORM trovesnap.fail('sale_assignment');
    END IF;
    v_name := trovesnap.seller_sale_text('name', p_name);
    IF v_name = '' THEN
        PERFORM trovesnap.fail('invalid_input:name', format('required, at most %s characters', trovesnap.sale_text_max()));
    END IF;
    v_city := trovesnap.seller_sale_text('city', p_city);
    v_region := trovesnap.seller_sale_text('region', p_region);
    v_postal := trovesnap.seller_sale_text('postal_code', p_postal_code);
    v_street := trovesnap.seller_sale_text('street_address', p_street_address);
    v_starts := trovesnap.seller_sale_time('starts_at', p_starts_at);
    v_ends := trovesnap.seller_sale_time('ends_at', p_ends_at);
    IF v_ends < v_starts THEN
        PERFORM trovesnap.fail('invalid_input:ends_at', 'must not be before starts_at');
    END IF;

    INSERT INTO trovesnap.estate_sales (id, tenant_id, title, status, visibility, city, region, postal_code,
        street_address, address_policy, address_reveal_at, starts_at, ends_at, version, created_at, updated_at)
    VALUES (trovesnap.new_id('sale'), s.tenant_id, v_name, trovesnap.new_sale_status(), trovesnap.new_sale_visibility(),
        v_city, v_region, v_postal, v_street, trovesnap.new_sale_address_policy(), NULL, v_starts, v_ends, 1, v_now, v_now)
    RETURNING * INTO e;
    PERFORM trovesnap.record_event(
        trovesnap.seller_event(s, trovesnap.new_id('corr'), 'sale_created', 'sale.create', 'inventory', 'cli')
        || jsonb_build_object(
            'payload', jsonb_build_object('input_hash', '', 'redacted_summary', jsonb_build_object('sale_id', e.id)),
            'impact', jsonb_build_object('type', 'sale_created', 'material', true, 'canonical_state_changed', true,
                                         'public_state_changed', false),
            'occurred_at', trovesnap.ts(v_now)));
    RETURN trovesnap.sale_json(e);
END
$$;

-- seller_list_sales: the tenant's sales the signed-in member may see
-- (sale.read; a sale-scoped member only its assigned ones, as seller_in
-- set the scope), by (starts_at, id), at most 500.
CREATE FUNCTION public.seller_list_sales(p_tenant_id text DEFAULT NULL) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    s trovesnap.seller_ctx;
BEGIN
    s := trovesnap.seller_enter_tenant(p_tenant_id, 'sale.read');
    RETURN (SELECT coalesce(jsonb_agg(trovesnap.sale_json(x) ORDER BY x.starts_at, x.id), '[]')
            FROM (SELECT * FROM trovesnap.estate_sales e
                  WHERE e.tenant_id = s.tenant_id AND trovesnap.ctx_sales_visible(jsonb_build_array(e.id))
                  ORDER BY e.starts_at, e.id
                  LIMIT 500) x);
END
$$;

SELECT trovesnap.revoke_execute(ARRAY['seller_enter_tenant', 'seller_sale_text', 'seller_sale_time', 'seller_create_sale',
    'seller_list_sales']);
SELECT trovesnap.grant_execute('authenticated', ARRAY[
    'public.seller_create_sale(text, text, text, text, text, text, text, text)', 'public.seller_list_sales(text)']);

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (31, '20261201121800_trovesnap_sale_rpcs');

RESET ROLE;
