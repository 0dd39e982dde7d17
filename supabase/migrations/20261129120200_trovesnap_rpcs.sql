-- trovesnap live mode, migration 3: the governed RPCs of the MCP server (the
-- later migrations add the rest).
--
-- Every mcp_* function is SECURITY DEFINER (it runs as trovesnap_owner, which
-- is itself subject to the FORCEd row level security), has a fixed
-- search_path, starts from an empty request context, checks the caller's JWT
-- role claim, and authenticates the MCP client from the hex sha256 of its
-- credential: the tenant, actor, membership and permissions always come from
-- the database, never from an argument. Errors are SQLSTATE P0001 with the
-- message 'trovesnap:<code>[:<field>]' (see internal/live/errors.go); no
-- other text is meant for the caller.

SET ROLE trovesnap_owner;

-- The principal of a credential, as the database knows it.
CREATE TYPE trovesnap.principal AS (
    client_id     text,
    client_name   text,
    client_type   text,
    client_status text,
    groups        text[],
    actor_id      text,
    tenant_id     text,
    membership_id text,
    role          text,
    sale_scoped   boolean,
    assigned      text[]
);

-- begin_rpc starts every RPC: an empty request context (no tenant, no
-- system access) for the rest of the transaction, and the caller's JWT role
-- claim must be p_role. (PostgREST runs one RPC per transaction; the
-- context is transaction-local.)
CREATE FUNCTION trovesnap.begin_rpc(p_role text) RETURNS void
    LANGUAGE plpgsql
    AS $$
BEGIN
    PERFORM set_config('trovesnap.tenant_id', '', true);
    PERFORM set_config('trovesnap.system', 'off', true);
    IF coalesce(nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'role', '') <> p_role THEN
        PERFORM trovesnap.fail('forbidden');
    END IF;
END
$$;

-- lookup_client finds the client of a credential hash whatever its status
-- (system context: the tenant is not known yet). Unknown → client_not_registered.
CREATE FUNCTION trovesnap.lookup_client(p_hash text) RETURNS trovesnap.principal
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    r trovesnap.principal;
    c trovesnap.mcp_clients;
BEGIN
    IF p_hash IS NULL OR p_hash !~ '^[0-9a-f]{64}$' THEN
        PERFORM trovesnap.fail('client_not_registered');
    END IF;
    PERFORM set_config('trovesnap.system', 'on', true);
    SELECT * INTO c FROM trovesnap.mcp_clients WHERE credential_hash IN (p_hash, 'sha256:' || p_hash);
    IF NOT FOUND THEN
        PERFORM set_config('trovesnap.system', 'off', true);
        PERFORM trovesnap.fail('client_not_registered');
    END IF;
    r.client_id := c.id;
    r.client_name := c.name;
    r.client_type := c.client_type;
    r.client_status := c.status;
    r.groups := c.allowed_tool_groups;
    r.actor_id := c.actor_id;
    r.tenant_id := c.tenant_id;
    SELECT m.id, m.role, m.sale_scoped INTO r.membership_id, r.role, r.sale_scoped
    FROM trovesnap.memberships m WHERE m.tenant_id = c.tenant_id AND m.user_id = c.actor_id;
    IF coalesce(r.sale_scoped, false) THEN
        r.assigned := ARRAY(SELECT ms.sale_id FROM trovesnap.membership_sales ms
                            WHERE ms.membership_id = r.membership_id ORDER BY ms.sale_id);
    ELSE
        r.sale_scoped := false;
    END IF;
    PERFORM set_config('trovesnap.system', 'off', true);
    RETURN r;
END
$$;

-- require_active: suspended → client_suspended; revoked, pending or without
-- a membership in its tenant → client_not_registered.
CREATE FUNCTION trovesnap.require_active(p trovesnap.principal) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    AS $$
BEGIN
    IF p.client_status = 'suspended' THEN
        PERFORM trovesnap.fail('client_suspended');
    END IF;
    IF p.client_status <> 'active' OR p.membership_id IS NULL THEN
        PERFORM trovesnap.fail('client_not_registered');
    END IF;
END
$$;

-- enter_any_group authenticates the call and sets its tenant context: the
-- caller's role claim, an active client of a member, one of the tool
-- groups (several reach some RPCs) and one of the permissions (unless NULL).
CREATE FUNCTION trovesnap.enter_any_group(p_hash text, p_groups text[], p_any_perm text[]) RETURNS trovesnap.principal
    LANGUAGE plpgsql
    AS $$
DECLARE
    p trovesnap.principal;
BEGIN
    PERFORM trovesnap.begin_rpc('trovesnap_mcp');
    p := trovesnap.lookup_client(p_hash);
    PERFORM trovesnap.require_active(p);
    PERFORM trovesnap.require_any_access(p, p_groups, p_any_perm);
    PERFORM set_config('trovesnap.tenant_id', p.tenant_id, true);
    RETURN p;
END
$$;

-- enter: enter_any_group for an RPC of one tool group.
CREATE FUNCTION trovesnap.enter(p_hash text, p_group text, p_any_perm text[]) RETURNS trovesnap.principal
    LANGUAGE plpgsql
    AS $$
BEGIN
    RETURN trovesnap.enter_any_group(p_hash, ARRAY[p_group], p_any_perm);
END
$$;

-- require_any_access: one of the tool groups (else
-- permission_denied:<the first>) and, unless NULL, one of the permissions
-- (else permission_denied:<the first>).
CREATE FUNCTION trovesnap.require_any_access(p trovesnap.principal, p_groups text[], p_any_perm text[]) RETURNS void
    LANGUAGE plpgsql STABLE
    AS $$
BEGIN
    IF NOT (coalesce(p.groups, '{}') && p_groups) THEN
        PERFORM trovesnap.fail('permission_denied:' || p_groups[1]);
    END IF;
    IF p_any_perm IS NOT NULL AND NOT EXISTS (SELECT 1 FROM unnest(p_any_perm) AS perm WHERE trovesnap.has_perm(p.role, perm)) THEN
        PERFORM trovesnap.fail('permission_denied:' || p_any_perm[1]);
    END IF;
END
$$;

-- require_access: require_any_access for one tool group.
CREATE FUNCTION trovesnap.require_access(p trovesnap.principal, p_group text, p_any_perm text[]) RETURNS void
    LANGUAGE plpgsql STABLE
    AS $$
BEGIN
    PERFORM trovesnap.require_any_access(p, ARRAY[p_group], p_any_perm);
END
$$;

-- owner_of returns the tenant of a record by id, whatever the context (NULL
-- when there is none), so that a refused reference can be classified for
-- the audit (missing or another tenant's), or a seller RPC can find the
-- tenant whose membership decides. The answer never reaches the caller: a
-- missing record and another tenant's are the same invalid_reference. The
-- tables are those of this and the later migrations that are looked up so.
CREATE FUNCTION trovesnap.owner_of(p_table text, p_id text) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    t text;
BEGIN
    IF p_table NOT IN ('estate_sales', 'items', 'inventory_candidates', 'import_runs', 'proposals', 'automation_policies',
                       'mcp_clients', 'export_drafts') THEN
        RAISE EXCEPTION 'owner_of: table % is not a reference target', p_table;
    END IF;
    PERFORM set_config('trovesnap.system', 'on', true);
    EXECUTE format('SELECT tenant_id FROM trovesnap.%I WHERE id = $1', p_table) INTO t USING p_id;
    PERFORM set_config('trovesnap.system', 'off', true);
    RETURN t;
END
$$;

-- check_ref: the record must be visible in the tenant context (row level
-- security decides), else invalid_reference with {id, cross_tenant}.
CREATE FUNCTION trovesnap.check_ref(p_table text, p_field text, p_id text) RETURNS void
    LANGUAGE plpgsql
    AS $$
DECLARE
    visible boolean;
    owner   text;
BEGIN
    EXECUTE format('SELECT EXISTS (SELECT 1 FROM trovesnap.%I WHERE id = $1)', p_table) INTO visible USING p_id;
    IF visible THEN
        RETURN;
    END IF;
    owner := trovesnap.owner_of(p_table, p_id);
    PERFORM trovesnap.fail('invalid_reference:' || p_field,
        jsonb_build_object('id', p_id, 'cross_tenant', owner IS NOT NULL)::text);
END
$$;

-- check_sale: check_ref, then the sale assignment of a sale-scoped member.
CREATE FUNCTION trovesnap.check_sale(p trovesnap.principal, p_sale_id text) RETURNS void
    LANGUAGE plpgsql
    AS $$
BEGIN
    PERFORM trovesnap.check_ref('estate_sales', 'sale_id', p_sale_id);
    IF p.sale_scoped AND NOT (p_sale_id = ANY (coalesce(p.assigned, '{}'))) THEN
        PERFORM trovesnap.fail('sale_assignment', p_sale_id);
    END IF;
END
$$;

CREATE FUNCTION trovesnap.page_limit(p_limit integer) RETURNS integer
    LANGUAGE plpgsql IMMUTABLE
    AS $$
BEGIN
    IF p_limit IS NULL OR p_limit = 0 THEN
        RETURN 25;
    ELSIF p_limit < 0 THEN
        PERFORM trovesnap.fail('invalid_input:limit', 'must not be negative');
    END IF;
    RETURN least(p_limit, 100);
END
$$;

-- after_key parses a keyset key (a trovesnap.ts instant) and its id.
CREATE FUNCTION trovesnap.after_key(p_key text, p_id text) RETURNS timestamptz
    LANGUAGE plpgsql IMMUTABLE
    AS $$
BEGIN
    IF p_key IS NULL AND p_id IS NULL THEN
        RETURN NULL;
    END IF;
    IF p_key IS NULL OR p_key !~ '^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{9}Z$' OR coalesce(p_id, '') = '' THEN
        PERFORM trovesnap.fail('invalid_input:cursor', 'not a cursor of this list: start again without a cursor');
    END IF;
    RETURN (left(p_key, 26) || 'Z')::timestamptz;
END
$$;

CREATE FUNCTION trovesnap.one_of(p_field text, p_value text, p_allowed text[]) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    AS $$
BEGIN
    IF p_value IS NOT NULL AND p_value <> '' AND NOT (p_value = ANY (p_allowed)) THEN
        PERFORM trovesnap.fail('invalid_input:' || p_field, 'must be one of ' || array_to_string(p_allowed, ', '));
    END IF;
END
$$;

-- page trims a fetched limit+1 rows to limit and names the keyset of the
-- last row kept (by its key field) when there is more.
CREATE FUNCTION trovesnap.page(p_rows jsonb, p_limit integer, p_key_field text) RETURNS jsonb
    LANGUAGE plpgsql IMMUTABLE
    AS $$
DECLARE
    last jsonb;
BEGIN
    IF jsonb_array_length(p_rows) <= p_limit THEN
        RETURN jsonb_build_object('rows', p_rows, 'next', NULL);
    END IF;
    p_rows := p_rows - p_limit;
    last := p_rows -> (p_limit - 1);
    RETURN jsonb_build_object('rows', p_rows, 'next', jsonb_build_object('k', last ->> p_key_field, 'i', last ->> 'id'));
END
$$;

CREATE FUNCTION trovesnap.new_id(p_prefix text) RETURNS text
    LANGUAGE sql VOLATILE
    AS $$ SELECT p_prefix || '_' || replace(gen_random_uuid()::text, '-', '') $$;

-- canonical_json encodes a flat JSON object with its keys in bytewise order
-- and no insignificant space, like the embedded store's canonicalJSON, so a
-- candidate's source record (and its payload hash) is the same on both.
CREATE FUNCTION trovesnap.canonical_json(p jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE
    AS $$
        SELECT '{' || coalesce(string_agg(to_jsonb(e.key)::text || ':' || e.value::text, ',' ORDER BY e.key COLLATE "C"), '')
               || '}'
        FROM jsonb_each(p) AS e
    $$;

CREATE FUNCTION trovesnap.empty_related() RETURNS jsonb
    LANGUAGE sql IMMUTABLE
    AS $$ SELECT '{"source_import_run_ids":[],"source_import_record_ids":[],"candidate_ids":[],"item_ids":[],"proposal_ids":[],"event_ids":[]}'::jsonb $$;

-- JSON shapes: the field names of internal/domain's entities.
CREATE FUNCTION trovesnap.sale_json(s trovesnap.estate_sales) RETURNS jsonb
    LANGUAGE sql STABLE
    AS $$
        SELECT jsonb_build_object('id', s.id, 'tenant_id', s.tenant_id, 'title', s.title, 'status', s.status,
            'visibility', s.visibility, 'city', s.city, 'region', s.region, 'postal_code', s.postal_code,
            'street_address', s.street_address, 'address_policy', s.address_policy,
            'address_reveal_at', trovesnap.ts(s.address_reveal_at), 'starts_at', trovesnap.ts(s.starts_at),
            'ends_at', trovesnap.ts(s.ends_at), 'version', s.version, 'created_at', trovesnap.ts(s.created_at),
            'updated_at', trovesnap.ts(s.updated_at))
    $$;

CREATE FUNCTION trovesnap.item_json(i trovesnap.items) RETURNS jsonb
    LANGUAGE sql STABLE
    AS $$
        SELECT jsonb_build_object('id', i.id, 'tenant_id', i.tenant_id, 'sale_id', i.sale_id, 'title', i.title,
            'description', i.description, 'category', i.category, 'room', i.room, 'status', i.status,
            'price_cents', i.price_cents, 'internal_price_guidance_cents', i.internal_price_guidance_cents,
            'cost_basis_cents', i.cost_basis_cents, 'appraisal_flag', i.appraisal_flag, 'staff_notes', i.staff_notes,
            'qr_code', i.qr_code, 'version', i.version, 'created_at', trovesnap.ts(i.created_at),
            'updated_at', trovesnap.ts(i.updated_at))
    $$;

CREATE FUNCTION trovesnap.candidate_json(c trovesnap.inventory_candidates) RETURNS jsonb
    LANGUAGE sql STABLE
    AS $$
        SELECT jsonb_build_object('id', c.id, 'tenant_id', c.tenant_id, 'sale_id', c.sale_id, 'kind', c.kind,
            'title', c.title, 'description', c.description, 'category', c.category, 'room', c.room,
            'condition', c.condition, 'quantity', c.quantity, 'supplied_price_cents', c.supplied_price_cents,
            'notes', c.notes, 'review_status', c.review_status,
            'source_descriptor_id', coalesce(c.source_descriptor_id, ''), 'import_run_id', coalesce(c.import_run_id, ''),
            'source_record_id', coalesce(c.source_record_id, ''), 'created_by_client_id', coalesce(c.created_by_client_id, ''),
            'version', c.version, 'created_at', trovesnap.ts(c.created_at))
    $$;

-- item_detail_json: an item with the extras asked for (photos, published
-- or not, in position order; price history in (changed_at, id) order).
CREATE FUNCTION trovesnap.item_detail_json(i trovesnap.items, p_photos boolean, p_history boolean) RETURNS jsonb
    LANGUAGE sql STABLE
    AS $$
        SELECT trovesnap.item_json(i)
            || CASE WHEN p_photos THEN jsonb_build_object('photos', coalesce((
                   SELECT jsonb_agg(jsonb_build_object('id', ph.id, 'item_id', ph.item_id, 'storage_key', ph.storage_key,
                              'width', ph.width, 'height', ph.height, 'position', ph.position, 'published', ph.published)
                          ORDER BY ph.position, ph.id)
                   FROM trovesnap.item_photos ph WHERE ph.tenant_id = i.tenant_id AND ph.item_id = i.id), '[]'))
               ELSE '{}'::jsonb END
            || CASE WHEN p_history THEN jsonb_build_object('price_history', coalesce((
                   SELECT jsonb_agg(jsonb_build_object('id', h.id, 'tenant_id', h.tenant_id, 'item_id', h.item_id,
                              'price_cents', h.price_cents, 'internal_price_guidance_cents', h.internal_price_guidance_cents,
                              'reason', h.reason, 'actor_id', h.actor_id, 'proposal_id', h.proposal_id,
                              'changed_at', trovesnap.ts(h.changed_at))
                          ORDER BY h.changed_at, h.id)
                   FROM trovesnap.item_price_history h WHERE h.tenant_id = i.tenant_id AND h.item_id = i.id), '[]'))
               ELSE '{}'::jsonb END
    $$;

-- check_pricing: price history is for pricing roles only.
CREATE FUNCTION trovesnap.check_pricing(p trovesnap.principal, p_include_price_history boolean) RETURNS void
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF coalesce(p_include_price_history, false) AND NOT trovesnap.has_perm(p.role, 'item.read_pricing') THEN
        PERFORM trovesnap.fail('permission_denied:item.read_pricing');
    END IF;
END
$$;

-- ---------------------------------------------------------------------------
-- RPCs
-- ---------------------------------------------------------------------------

-- mcp_schema_version: the newest migration applied (doctor compares it with
-- the version the binary expects).
CREATE FUNCTION public.mcp_schema_version() RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    PERFORM trovesnap.begin_rpc('trovesnap_mcp');
    RETURN (SELECT max(version) FROM trovesnap.schema_migrations);
END
$$;

-- mcp_role_check runs as the CALLER (security invoker): what the caller's
-- own role may touch. For trovesnap_mcp every list must be empty and every
-- flag false; doctor reports anything else.
CREATE FUNCTION public.mcp_role_check() RETURNS jsonb
    LANGUAGE sql STABLE SECURITY INVOKER
    SET search_path = pg_catalog, pg_temp
    AS $$
        SELECT jsonb_build_object(
            'role', current_user,
            'superuser', r.rolsuper,
            'bypass_rls', r.rolbypassrls,
            'schema_usage', has_schema_privilege(current_user, 'trovesnap', 'USAGE'),
            'table_privileges', coalesce((
                SELECT jsonb_agg(c.relname ORDER BY c.relname)
                FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE n.nspname = 'trovesnap' AND c.relkind IN ('r', 'p', 'v', 'm')
                  AND (has_table_privilege(current_user, c.oid, 'SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER')
                       OR has_any_column_privilege(current_user, c.oid, 'SELECT, INSERT, UPDATE, REFERENCES'))), '[]'::jsonb),
            'functions', coalesce((
                SELECT jsonb_agg(p.proname ORDER BY p.proname)
                FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
                WHERE n.nspname IN ('public', 'trovesnap') AND has_function_privilege(current_user, p.oid, 'EXECUTE')
                  AND p.proowner = 'trovesnap_owner'::regrole), '[]'::jsonb))
        FROM pg_roles r WHERE r.rolname = current_user
    $$;

-- mcp_resolve_principal: the principal of an active client's credential.
CREATE FUNCTION public.mcp_resolve_principal(p_credential_hash text) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    p trovesnap.principal;
BEGIN
    PERFORM trovesnap.begin_rpc('trovesnap_mcp');
    p := trovesnap.lookup_client(p_credential_hash);
    PERFORM trovesnap.require_active(p);
    RETURN jsonb_build_object(
        'client', jsonb_build_object('id', p.client_id, 'name', p.client_name, 'type', p.client_type),
        'client_status', p.client_status,
        'allowed_tool_groups', to_jsonb(coalesce(p.groups, '{}')),
        'actor_id', p.actor_id,
        'actor_type', 'seller',
        'tenant_id', p.tenant_id,
        'membership_id', p.membership_id,
        'role', p.role,
        'public', false,
        'sale_scoped', p.sale_scoped,
        'assigned_sale_ids', CASE WHEN p.sale_scoped THEN to_jsonb(coalesce(p.assigned, '{}')) END);
END
$$;

-- mcp_list_sales: the caller's tenant's sales (assigned ones only for a
-- sale-scoped member), keyset on (starts_at, id).
CREATE FUNCTION public.mcp_list_sales(p_credential_hash text, p_status text DEFAULT NULL, p_limit integer DEFAULT NULL,
                                      p_after_key text DEFAULT NULL, p_after_id text DEFAULT NULL) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    p       trovesnap.principal;
    v_limit integer;
    v_after timestamptz;
    v_rows  jsonb;
BEGIN
    p := trovesnap.enter(p_credential_hash, 'tenant_read', ARRAY['sale.read']);
    v_limit := trovesnap.page_limit(p_limit);
    PERFORM trovesnap.one_of('status', p_status, ARRAY['draft', 'published', 'live', 'closed', 'archived']);
    v_after := trovesnap.after_key(p_after_key, p_after_id);
    SELECT coalesce(jsonb_agg(trovesnap.sale_json(s) ORDER BY s.starts_at, s.id), '[]') INTO v_rows
    FROM (SELECT * FROM trovesnap.estate_sales s
          WHERE (NOT p.sale_scoped OR s.id = ANY (p.assigned))
            AND (coalesce(p_status, '') = '' OR s.status = p_status)
            AND (v_after IS NULL OR (s.starts_at, s.id) > (v_after, p_after_id))
          ORDER BY s.starts_at, s.id
          LIMIT v_limit + 1) s;
    RETURN trovesnap.page(v_rows, v_limit, 'starts_at');
END
$$;

-- mcp_list_items: the caller's tenant's items, keyset on (created_at, id),
-- with photos and (pricing roles only) price history when asked.
CREATE FUNCTION public.mcp_list_items(p_credential_hash text, p_sale_id text DEFAULT NULL, p_status text DEFAULT NULL,
                                      p_room text DEFAULT NULL, p_category text DEFAULT NULL, p_limit integer DEFAULT NULL,
                                      p_after_key text DEFAULT NULL, p_after_id text DEFAULT NULL,
                                      p_include_photos boolean DEFAULT false,
                                      p_include_price_history boolean DEFAULT false) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    p       trovesnap.principal;
    v_limit integer;
    v_after timestamptz;
    v_rows  jsonb;
BEGIN
    p := trovesnap.enter(p_credential_hash, 'tenant_read', ARRAY['item.read', 'item.read_checkout']);
    PERFORM trovesnap.check_pricing(p, p_include_price_history);
    v_limit := trovesnap.page_limit(p_limit);
    PERFORM trovesnap.one_of('status', p_status,
        ARRAY['draft', 'ready', 'published', 'on_hold', 'pending_pickup', 'sold', 'withdrawn', 'archived']);
    v_after := trovesnap.after_key(p_after_key, p_after_id);
    IF coalesce(p_sale_id, '') <> '' THEN
        PERFORM trovesnap.check_sale(p, p_sale_id);
    END IF;
    SELECT coalesce(jsonb_agg(trovesnap.item_detail_json(i, p_include_photos, p_include_price_history)
                              ORDER BY i.created_at, i.id), '[]') INTO v_rows
    FROM (SELECT * FROM trovesnap.items i
          WHERE (NOT p.sale_scoped OR i.sale_id = ANY (p.assigned))
            AND (coalesce(p_sale_id, '') = '' OR i.sale_id = p_sale_id)
            AND (coalesce(p_status, '') = '' OR i.status = p_status)
            AND (coalesce(p_room, '') = '' OR i.room = p_room)
            AND (coalesce(p_category, '') = '' OR i.category = p_category OR starts_with(i.category, p_category || '.'))
            AND (v_after IS NULL OR (i.created_at, i.id) > (v_after, p_after_id))
          ORDER BY i.created_at, i.id
          LIMIT v_limit + 1) i;
    RETURN trovesnap.page(v_rows, v_limit, 'created_at');
END
$$;

-- mcp_list_candidates: the caller's tenant's candidates, keyset on (created_at, id).
CREATE FUNCTION public.mcp_list_candidates(p_credential_hash text, p_sale_id text DEFAULT NULL,
                                           p_review_status text DEFAULT NULL, p_limit integer DEFAULT NULL,
                                           p_after_key text DEFAULT NULL, p_after_id text DEFAULT NULL) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    p       trovesnap.principal;
    v_limit integer;
    v_after timestamptz;
    v_rows  jsonb;
BEGIN
    p := trovesnap.enter(p_credential_hash, 'tenant_read', ARRAY['candidate.read']);
    v_limit := trovesnap.page_limit(p_limit);
    PERFORM trovesnap.one_of('review_status', p_review_status, ARRAY['needs_review', 'approved', 'rejected', 'promoted']);
    v_after := trovesnap.after_key(p_after_key, p_after_id);
    IF coalesce(p_sale_id, '') <> '' THEN
        PERFORM trovesnap.check_sale(p, p_sale_id);
    END IF;
    SELECT coalesce(jsonb_agg(trovesnap.candidate_json(c) ORDER BY c.created_at, c.id), '[]') INTO v_rows
    FROM (SELECT * FROM trovesnap.inventory_candidates c
          WHERE (NOT p.sale_scoped OR c.sale_id = ANY (p.assigned))
            AND (coalesce(p_sale_id, '') = '' OR c.sale_id = p_sale_id)
            AND (coalesce(p_review_status, '') = '' OR c.review_status = p_review_status)
            AND (v_after IS NULL OR (c.created_at, c.id) > (v_after, p_after_id))
          ORDER BY c.created_at, c.id
          LIMIT v_limit + 1) c;
    RETURN trovesnap.page(v_rows, v_limit, 'created_at');
END
$$;

-- mcp_demand_signals: aggregate buyer interest of the caller's tenant.
CREATE FUNCTION public.mcp_demand_signals(p_credential_hash text, p_sale_id text DEFAULT NULL,
                                          p_category text DEFAULT NULL) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    p trovesnap.principal;
BEGIN
    p := trovesnap.enter(p_credential_hash, 'tenant_read', ARRAY['demand.read']);
    IF coalesce(p_sale_id, '') <> '' THEN
        PERFORM trovesnap.check_sale(p, p_sale_id);
    END IF;
    RETURN (
        SELECT coalesce(jsonb_agg(jsonb_build_object('tenant_id', d.tenant_id, 'sale_id', coalesce(d.sale_id, ''),
                   'category', d.category, 'saves', d.saves, 'searches', d.searches, 'follows', d.follows,
                   'window_start', trovesnap.ts(d.window_start), 'window_end', trovesnap.ts(d.window_end))
                   ORDER BY coalesce(d.sale_id, ''), d.category, d.window_start, d.window_end, d.id), '[]')
        FROM trovesnap.demand_signals d
        WHERE (NOT p.sale_scoped OR d.sale_id = ANY (p.assigned))
          AND (coalesce(p_sale_id, '') = '' OR d.sale_id = p_sale_id)
          AND (coalesce(p_category, '') = '' OR d.category = p_category OR starts_with(d.category, p_category || '.')));
END
$$;

-- record_event inserts a plugin_event body (idempotent by event id).
CREATE FUNCTION trovesnap.record_event(p_body jsonb) RETURNS boolean
    LANGUAGE plpgsql
    AS $$
DECLARE
    n integer;
BEGIN
    IF jsonb_typeof(p_body) IS DISTINCT FROM 'object' OR coalesce(p_body ->> 'id', '') = '' THEN
        PERFORM trovesnap.fail('invalid_input:event', 'an event needs an id');
    END IF;
    IF coalesce(p_body ->> 'outcome', '') NOT IN ('success', 'replayed', 'blocked', 'failed') THEN
        PERFORM trovesnap.fail('invalid_input:event', 'outcome must be success, replayed, blocked or failed');
    END IF;
    IF coalesce(p_body ->> 'occurred_at', '') = '' OR p_body ->> 'occurred_at' LIKE '0001-01-01%' THEN
        p_body := p_body || jsonb_build_object('occurred_at', trovesnap.ts(now()));
    END IF;
    INSERT INTO trovesnap.plugin_events (id, tenant_id, correlation_id, request_id, server_request_id, tool_name, outcome,
                                         occurred_at, body)
    VALUES (p_body ->> 'id', coalesce(p_body ->> 'tenant_id', ''), coalesce(p_body ->> 'correlation_id', ''),
            coalesce(p_body ->> 'request_id', ''), coalesce(p_body ->> 'server_request_id', ''),
            coalesce(p_body -> 'tool' ->> 'name', ''), p_body ->> 'outcome', (p_body ->> 'occurred_at')::timestamptz, p_body)
    ON CONFLICT (id) DO NOTHING;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n = 1;
END
$$;

-- mcp_append_event: the audit sink for calls that wrote nothing (reads,
-- blocks, failures, replays), fed by the server's local outbox. Idempotent
-- by event id: a retried flush records an event exactly once.
CREATE FUNCTION public.mcp_append_event(p_event jsonb) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    inserted boolean;
BEGIN
    PERFORM trovesnap.begin_rpc('trovesnap_mcp');
    PERFORM set_config('trovesnap.system', 'on', true);
    inserted := trovesnap.record_event(p_event);
    PERFORM set_config('trovesnap.system', 'off', true);
    RETURN jsonb_build_object('recorded', inserted);
END
$$;

-- mcp_check_idempotency: 'unused', 'replay' (same fingerprint) or
-- 'conflict' for a key of the caller's client.
CREATE FUNCTION public.mcp_check_idempotency(p_credential_hash text, p_tool text, p_tool_major integer, p_key text,
                                             p_fingerprint text) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    p   trovesnap.principal;
    v_row trovesnap.idempotency_keys;
BEGIN
    PERFORM trovesnap.begin_rpc('trovesnap_mcp');
    p := trovesnap.lookup_client(p_credential_hash);
    PERFORM set_config('trovesnap.tenant_id', p.tenant_id, true);
    SELECT * INTO v_row FROM trovesnap.idempotency_keys k
    WHERE k.client_id = p.client_id AND k.tool = p_tool AND k.tool_major = p_tool_major AND k.key = p_key;
    IF NOT FOUND OR v_row.expires_at <= now() THEN
        RETURN 'unused';
    ELSIF v_row.fingerprint = p_fingerprint THEN
        RETURN 'replay';
    END IF;
    RETURN 'conflict';
END
$$;

-- mcp_consume_rate counts one call of a limit class for the caller's client
-- (p_credential_hash NULL: the shared public bucket) in the current
-- one-minute window, unless the window is full. Check and count are one
-- upsert, so servers sharing the database never exceed the limit together.
CREATE FUNCTION public.mcp_consume_rate(p_credential_hash text, p_class text) RETURNS jsonb
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
    IF coalesce(p_class, '') NOT IN ('reads', 'candidate_writes', 'proposals', 'controlled_actions') THEN
        PERFORM trovesnap.fail('invalid_input:class', 'unknown limit class');
    END IF;
    v_limit := CASE p_class WHEN 'reads' THEN 120 WHEN 'candidate_writes' THEN 20 WHEN 'proposals' THEN 20 ELSE 10 END;
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

-- ---------------------------------------------------------------------------
-- Persisted writes: every write RPC (here and in the later migrations) checks
-- its write metadata, replays or conflicts on a used key under the key's
-- lock, and commits its plugin_event and idempotency row with the write.
-- ---------------------------------------------------------------------------

-- check_write_meta: what every persisted write needs besides its input.
CREATE FUNCTION trovesnap.check_write_meta(p_tool text, p_tool_major integer, p_key text, p_fingerprint text,
                                           p_event jsonb) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    AS $$
BEGIN
    IF coalesce(p_key, '') = '' THEN
        PERFORM trovesnap.fail('invalid_input:idempotency_key', 'required for a persisted write');
    END IF;
    IF coalesce(p_tool, '') = '' OR coalesce(p_fingerprint, '') = '' OR p_tool_major IS NULL THEN
        PERFORM trovesnap.fail('invalid_input:idempotency', 'scope without tool or fingerprint');
    END IF;
    IF jsonb_typeof(p_event) IS DISTINCT FROM 'object' OR coalesce(p_event ->> 'id', '') = '' THEN
        PERFORM trovesnap.fail('invalid_input:event', 'a write needs an event id');
    END IF;
END
$$;

-- idem_replay: the stored answer of a live key with the same fingerprint
-- (NULL when the key is unused or expired); another fingerprint is
-- idempotency_conflict. With p_lock (the writes) it first takes the key's
-- advisory lock, so concurrent calls with one key serialise and exactly one
-- executes; an expired row is then removed. Needs the tenant context.
CREATE FUNCTION trovesnap.idem_replay(p trovesnap.principal, p_tool text, p_tool_major integer, p_key text,
                                      p_fingerprint text, p_lock boolean) RETURNS jsonb
    LANGUAGE plpgsql
    AS $$
DECLARE
    k trovesnap.idempotency_keys;
BEGIN
    IF p_lock THEN
        PERFORM pg_advisory_xact_lock(hashtextextended(
            concat_ws('/', 'idem', p.tenant_id, p.client_id, p_tool, p_tool_major::text, p_key), 0));
    END IF;
    SELECT * INTO k FROM trovesnap.idempotency_keys ik
    WHERE ik.client_id = p.client_id AND ik.tool = p_tool AND ik.tool_major = p_tool_major AND ik.key = p_key;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    IF k.expires_at <= now() THEN
        IF p_lock THEN
            DELETE FROM trovesnap.idempotency_keys ik
            WHERE ik.client_id = p.client_id AND ik.tool = p_tool AND ik.tool_major = p_tool_major AND ik.key = p_key;
        END IF;
        RETURN NULL;
    END IF;
    IF k.fingerprint <> p_fingerprint THEN
        PERFORM trovesnap.fail('idempotency_conflict');
    END IF;
    RETURN jsonb_build_object('replayed', true, 'result', k.result -> 'result', 'related', k.result -> 'related',
                              'event_id', k.event_id);
END
$$;

-- event_cause: the event that caused an event about a proposal, in its
-- correlation, as the embedded store's fillCausation finds it: an event
-- that used or revoked a grant was caused by the event that granted it;
-- otherwise an event about a proposal (an approval decision, an execution
-- authorised by a policy) by the proposal's creation event.
CREATE FUNCTION trovesnap.event_cause(p_event jsonb) RETURNS text
    LANGUAGE plpgsql STABLE
    AS $$
DECLARE
    v_corr     text := coalesce(p_event ->> 'correlation_id', '');
    v_approval text := p_event -> 'approval' ->> 'approval_id';
    v_proposal text := p_event -> 'approval' ->> 'proposal_id';
    v_id       text;
BEGIN
    IF v_corr = '' OR (v_approval IS NULL
                       AND (v_proposal IS NULL OR coalesce(p_event -> 'tool' ->> 'tier', '') = 'action_proposal')) THEN
        RETURN NULL;
    END IF;
    IF v_approval IS NOT NULL AND coalesce(p_event ->> 'action', '') <> 'approval_granted' THEN
        SELECT e.id INTO v_id FROM trovesnap.plugin_events e
        WHERE e.correlation_id = v_corr AND e.body ->> 'action' = 'approval_granted'
          AND e.body -> 'approval' ->> 'approval_id' = v_approval
        ORDER BY e.seq LIMIT 1;
    END IF;
    IF v_id IS NULL AND v_proposal IS NOT NULL THEN
        SELECT e.id INTO v_id FROM trovesnap.plugin_events e
        WHERE e.correlation_id = v_corr AND e.outcome = 'success' AND e.body ->> 'action' = 'mcp_tool_called'
          AND coalesce(e.body -> 'related' -> 'proposal_ids', '[]') ? v_proposal
        ORDER BY e.seq LIMIT 1;
    END IF;
    IF v_id = p_event ->> 'id' THEN
        RETURN NULL;
    END IF;
    RETURN v_id;
END
$$;

-- finish_write commits a write's plugin_event (outcome success, the records
-- it names, its latency, its cause) and its idempotency row, and returns the
-- RPC's answer.
CREATE FUNCTION trovesnap.finish_write(p trovesnap.principal, p_tool text, p_tool_major integer, p_key text,
                                       p_fingerprint text, p_event jsonb, p_started_at timestamptz, p_result jsonb,
                                       p_related jsonb) RETURNS jsonb
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_now   timestamptz := now();
    v_event jsonb;
BEGIN
    v_event := p_event || jsonb_build_object('outcome', 'success', 'related', p_related, 'tenant_id', p.tenant_id);
    IF p_started_at IS NOT NULL THEN
        v_event := jsonb_set(v_event, '{metrics}', coalesce(v_event -> 'metrics', '{}'::jsonb) || jsonb_build_object(
            'latency_ms', round((greatest(extract(epoch FROM clock_timestamp() - p_started_at), 0) * 1000)::numeric, 3)));
    END IF;
    IF v_event -> 'causation_id' IS NULL OR jsonb_typeof(v_event -> 'causation_id') = 'null' THEN
        v_event := v_event || jsonb_build_object('causation_id', trovesnap.event_cause(v_event));
    END IF;
    PERFORM trovesnap.record_event(v_event);
    INSERT INTO trovesnap.idempotency_keys (tenant_id, client_id, tool, tool_major, key, fingerprint, result, event_id,
                                            created_at, expires_at)
    VALUES (p.tenant_id, p.client_id, p_tool, p_tool_major, p_key, p_fingerprint,
            jsonb_build_object('result', p_result, 'related', p_related, 'event_id', p_event ->> 'id'),
            p_event ->> 'id', v_now, v_now + interval '24 hours');
    RETURN jsonb_build_object('replayed', false, 'result', p_result, 'related', p_related, 'event_id', p_event ->> 'id');
END
$$;

-- mcp_create_inventory_candidate runs the P5 candidate chain (source
-- descriptor → import run → source record → candidate) with its idempotency
-- row and its plugin_event in ONE transaction, exactly like the embedded
-- store's idempotentWrite:
--   1. a live key with the same fingerprint replays the stored result and
--      writes nothing; another fingerprint is idempotency_conflict;
--   2. the client must (still) be active, its actor a member with
--      item.create_candidate, the client allowed candidate_write;
--   3. the sale must be visible in the client's tenant;
--   4. the event (outcome success, the records written, latency, cause) and
--      the idempotency row commit with the write (finish_write).
-- Concurrent calls with one key serialise on an advisory lock: exactly one
-- executes, the others replay.
CREATE FUNCTION public.mcp_create_inventory_candidate(p_credential_hash text, p_tool text, p_tool_major integer,
                                                      p_key text, p_fingerprint text, p_event jsonb,
                                                      p_started_at timestamptz, p_input jsonb) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    p         trovesnap.principal;
    v_now     timestamptz := now();
    v_replay  jsonb;
    v_sale    text := p_input ->> 'sale_id';
    v_qty     integer;
    v_price   bigint;
    v_desc    text;
    v_run     text;
    v_record  text;
    v_cand    text;
    v_payload text;
    v_related jsonb;
    v_result  jsonb;
BEGIN
    PERFORM trovesnap.begin_rpc('trovesnap_mcp');
    p := trovesnap.lookup_client(p_credential_hash);
    -- Input, as the store validates it.
    IF jsonb_typeof(p_input) IS DISTINCT FROM 'object' THEN
        PERFORM trovesnap.fail('invalid_input:input', 'an object is required');
    END IF;
    IF coalesce(btrim(v_sale), '') = '' THEN
        PERFORM trovesnap.fail('invalid_input:sale_id', 'required');
    END IF;
    IF coalesce(btrim(p_input ->> 'title'), '') = '' THEN
        PERFORM trovesnap.fail('invalid_input:title', 'required');
    END IF;
    v_qty := coalesce((p_input ->> 'quantity')::integer, 0);
    IF v_qty < 0 THEN
        PERFORM trovesnap.fail('invalid_input:quantity', 'must not be negative');
    END IF;
    v_price := (p_input ->> 'supplied_price_cents')::bigint;
    IF v_price < 0 THEN
        PERFORM trovesnap.fail('invalid_input:supplied_price_cents', 'must not be negative');
    END IF;
    PERFORM trovesnap.check_write_meta(p_tool, p_tool_major, p_key, p_fingerprint, p_event);

    PERFORM set_config('trovesnap.tenant_id', p.tenant_id, true);
    v_replay := trovesnap.idem_replay(p, p_tool, p_tool_major, p_key, p_fingerprint, true);
    IF v_replay IS NOT NULL THEN
        RETURN v_replay;
    END IF;

    PERFORM trovesnap.require_active(p);
    PERFORM trovesnap.require_access(p, 'candidate_write', ARRAY['item.create_candidate']);
    PERFORM trovesnap.check_sale(p, v_sale); -- §4.3: assigned sales only, for a sale-scoped member

    -- The one mcp_client source descriptor of (tenant, client).
    SELECT d.id INTO v_desc FROM trovesnap.source_descriptors d WHERE d.client_id = p.client_id AND d.kind = 'mcp_client';
    IF v_desc IS NULL THEN
        v_desc := trovesnap.new_id('source');
        INSERT INTO trovesnap.source_descriptors (id, tenant_id, kind, client_id, label, created_at)
        VALUES (v_desc, p.tenant_id, 'mcp_client', p.client_id, 'MCP client ' || coalesce(nullif(p.client_name, ''), p.client_id), v_now);
    END IF;
    v_run := trovesnap.new_id('run');
    INSERT INTO trovesnap.import_runs (id, tenant_id, source_descriptor_id, sale_id, kind, status, record_count, created_at)
    VALUES (v_run, p.tenant_id, v_desc, v_sale, 'mcp', 'completed', 1, v_now);
    v_record := trovesnap.new_id('record');
    v_payload := trovesnap.canonical_json(p_input);
    INSERT INTO trovesnap.source_records (id, tenant_id, import_run_id, ordinal, payload_hash, payload, created_at)
    VALUES (v_record, p.tenant_id, v_run, 1, 'sha256:' || encode(sha256(convert_to(v_payload, 'UTF8')), 'hex'), v_payload, v_now);
    v_cand := trovesnap.new_id('candidate');
    INSERT INTO trovesnap.inventory_candidates (id, tenant_id, sale_id, kind, title, description, category, room, condition,
        quantity, supplied_price_cents, notes, review_status, source_descriptor_id, import_run_id, source_record_id,
        created_by_client_id, version, created_at)
    VALUES (v_cand, p.tenant_id, v_sale, 'new_item', p_input ->> 'title', coalesce(p_input ->> 'description', ''),
        coalesce(p_input ->> 'category', ''), coalesce(p_input ->> 'room', ''), coalesce(p_input ->> 'condition', ''),
        greatest(v_qty, 1), v_price, coalesce(p_input ->> 'notes', ''), 'needs_review', v_desc, v_run, v_record,
        p.client_id, 1, v_now);

    v_related := trovesnap.empty_related() || jsonb_build_object('source_import_run_ids', jsonb_build_array(v_run),
        'source_import_record_ids', jsonb_build_array(v_record), 'candidate_ids', jsonb_build_array(v_cand));
    v_result := jsonb_build_object('candidate_id', v_cand, 'review_status', 'needs_review', 'canonical_item_created', false,
        'source_descriptor_id', v_desc, 'import_run_id', v_run, 'source_record_id', v_record, 'sale_id', v_sale);
    RETURN trovesnap.finish_write(p, p_tool, p_tool_major, p_key, p_fingerprint, p_event, p_started_at, v_result, v_related);
END
$$;

-- Nobody but the roles named below may execute anything trovesnap owns.
SELECT trovesnap.revoke_execute(NULL);
SELECT trovesnap.grant_execute('authenticated', ARRAY[
    'trovesnap.jwt_tenants()']);
GRANT EXECUTE ON FUNCTION
    public.mcp_schema_version(),
    public.mcp_role_check(),
    public.mcp_resolve_principal(text),
    public.mcp_list_sales(text, text, integer, text, text),
    public.mcp_list_items(text, text, text, text, text, integer, text, text, boolean, boolean),
    public.mcp_list_candidates(text, text, text, integer, text, text),
    public.mcp_demand_signals(text, text, text),
    public.mcp_append_event(jsonb),
    public.mcp_check_idempotency(text, text, integer, text, text),
    public.mcp_consume_rate(text, text),
    public.mcp_create_inventory_candidate(text, text, integer, text, text, jsonb, timestamptz, jsonb)
TO trovesnap_mcp;

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (3, '20261129120200_trovesnap_rpcs');

RESET ROLE;
