-- trovesnap live mode, migration 5: the public (§11) and scoped (§12) read
-- RPCs beyond the four lists, mirroring the embedded store
-- (store/reads_public.go, store/reads_scoped.go), and what they need:
-- QR label batches, the public search keys, the indexes of the new lists,
-- and a PUBLIC request context.
--
-- The public context. A public RPC takes no credential (anonymous buyers
-- ask through the server, which calls as trovesnap_mcp like every RPC); it
-- starts from the empty context and switches `trovesnap.public` on, never
-- `system` and never a tenant. Under it, the public_read policies below
-- are the only ones that admit a row: published sales of public
-- visibility, their public items, those items' published photos and their
-- search keys. Row level security, not the RPC's WHERE clause alone,
-- decides that nothing private can be read; the RPCs still select public
-- columns only and compute the public projection (address per the sale's
-- reveal policy at the time of the call) in the database.
--
-- The scoped RPCs authenticate like migration 3's (trovesnap.enter), switch
-- the public context off, and refuse references like the store: unknown
-- and other-tenant ids are the same invalid_reference (cross_tenant tells
-- the audit which), a record of a sale outside a sale-scoped member's
-- assignment is sale_assignment.

SET ROLE trovesnap_owner;

-- ---------------------------------------------------------------------------
-- Tables and indexes (store/migrations/0003_reads.sql)
-- ---------------------------------------------------------------------------

-- QR tags: a batch of printed labels for a sale. A label is bound to an item
-- exactly when the item's qr_code names it (items.qr_code is the one record
-- of binding); a label no item names is spare or released.
CREATE TABLE trovesnap.label_batches (
    id         text COLLATE "C" PRIMARY KEY CHECK (id <> ''),
    tenant_id  text COLLATE "C" NOT NULL,
    sale_id    text COLLATE "C" NOT NULL,
    status     text NOT NULL CHECK (status IN ('draft', 'printed', 'retired')),
    created_at timestamptz NOT NULL,
    printed_at timestamptz,
    UNIQUE (tenant_id, id),
    FOREIGN KEY (tenant_id, sale_id) REFERENCES trovesnap.estate_sales (tenant_id, id),
    CHECK ((status = 'draft') = (printed_at IS NULL))
);
CREATE INDEX label_batches_list ON trovesnap.label_batches (tenant_id, created_at, id);
CREATE INDEX label_batches_sale ON trovesnap.label_batches (tenant_id, sale_id, created_at, id);

-- A printed code is globally unique: the public QR tool resolves a code
-- without knowing its tenant.
CREATE TABLE trovesnap.qr_labels (
    code      text COLLATE "C" PRIMARY KEY CHECK (code <> ''),
    tenant_id text COLLATE "C" NOT NULL,
    batch_id  text COLLATE "C" NOT NULL,
    ordinal   integer NOT NULL CHECK (ordinal >= 1),
    UNIQUE (batch_id, ordinal),
    FOREIGN KEY (tenant_id, batch_id) REFERENCES trovesnap.label_batches (tenant_id, id)
);
CREATE INDEX qr_labels_batch ON trovesnap.qr_labels (tenant_id, batch_id);

-- One tag, one item: resolving a scanned code must name a single item.
CREATE UNIQUE INDEX items_qr_code ON trovesnap.items (qr_code) WHERE qr_code <> '';

-- The new lists' orders.
CREATE INDEX import_runs_recent ON trovesnap.import_runs (tenant_id, created_at, id);
CREATE INDEX import_runs_sale_recent ON trovesnap.import_runs (tenant_id, sale_id, created_at, id);
CREATE INDEX item_status_events_sale ON trovesnap.item_status_events (tenant_id, sale_id, effective_at, id);
CREATE INDEX item_status_events_to ON trovesnap.item_status_events (tenant_id, to_status, effective_at, id);
CREATE INDEX inventory_candidates_record ON trovesnap.inventory_candidates (tenant_id, source_record_id);
CREATE INDEX inventory_candidates_run ON trovesnap.inventory_candidates (tenant_id, import_run_id);

-- Public marketplace search. Like the store's search_keys, every sale and
-- item gets a stable key when it is first recorded, which is the search
-- order, so pages are keyset ranges of it (a page costs the same at any
-- depth). tokens are the words of its public text only — a sale's title,
-- city and region; an item's title, description and category — never staff
-- notes or internal pricing. Publication is checked against the base tables
-- at query time (and by row level security), so a status change needs no
-- index update.
CREATE TABLE trovesnap.search_keys (
    seq       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id text COLLATE "C" NOT NULL,
    kind      text NOT NULL CHECK (kind IN ('sale', 'item')),
    ref_id    text COLLATE "C" NOT NULL UNIQUE,
    tokens    text[] NOT NULL
);
CREATE INDEX search_keys_tokens ON trovesnap.search_keys USING gin (tokens);

-- search_tokens splits text into the words the search matches, like the
-- store's FTS5 tokenizer (unicode61, remove_diacritics 2): lower case,
-- diacritics removed, split at everything that is not a letter or a digit.
-- Non-ASCII letters follow the database's ctype for lower case (Supabase:
-- UTF-8); every text in the fixtures is ASCII.
CREATE FUNCTION trovesnap.search_tokens(p text) RETURNS text[]
    LANGUAGE sql IMMUTABLE
    AS $$
        SELECT coalesce(array_agg(DISTINCT t ORDER BY t), '{}')
        FROM regexp_split_to_table(
                 regexp_replace(normalize(lower(coalesce(p, '')), NFD), '[\u0300-\u036f]', '', 'g'),
                 '[\x01-\x2f\x3a-\x60\x7b-\x7f\u0080-\u00a9\u00ab-\u00b1\u00b4\u00b6-\u00b8\u00bb\u00bf\u00d7\u00f7\u2000-\u206f\u2e00-\u2e7f\u3000-\u303f\s]+') AS t
        WHERE t <> ''
    $$;

-- The triggers keep the keys in step with every writer of sales and items,
-- whichever path (seeding, promotion, edits, an operator's SQL) it takes.
-- They run as the owner and write exactly the key of the row that fired
-- them, which its own table's policies already admitted, so they do it in
-- system context (restoring the writer's context after): a writer outside
-- any request context (a superuser's maintenance) keeps its key in step too.
CREATE FUNCTION trovesnap.search_key_put(p_tenant text, p_kind text, p_ref text, p_tokens text[], p_insert boolean) RETURNS void
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_system text := current_setting('trovesnap.system', true);
BEGIN
    PERFORM set_config('trovesnap.system', 'on', true);
    IF p_insert THEN
        INSERT INTO trovesnap.search_keys (tenant_id, kind, ref_id, tokens) VALUES (p_tenant, p_kind, p_ref, p_tokens);
    ELSE
        UPDATE trovesnap.search_keys SET tokens = p_tokens WHERE ref_id = p_ref;
    END IF;
    PERFORM set_config('trovesnap.system', coalesce(v_system, ''), true);
END
$$;

-- search_index keeps the key of the sale or item that fired it: the words
-- of its public text.
CREATE FUNCTION trovesnap.search_index() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    IF TG_TABLE_NAME = 'estate_sales' THEN
        PERFORM trovesnap.search_key_put(NEW.tenant_id, 'sale', NEW.id,
            trovesnap.search_tokens(concat_ws(' ', NEW.title, NEW.city, NEW.region)), TG_OP = 'INSERT');
    ELSE
        PERFORM trovesnap.search_key_put(NEW.tenant_id, 'item', NEW.id,
            trovesnap.search_tokens(concat_ws(' ', NEW.title, NEW.description, NEW.category)), TG_OP = 'INSERT');
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER estate_sales_search_insert AFTER INSERT ON trovesnap.estate_sales
    FOR EACH ROW EXECUTE FUNCTION trovesnap.search_index();
CREATE TRIGGER estate_sales_search_update AFTER UPDATE OF title, city, region ON trovesnap.estate_sales
    FOR EACH ROW EXECUTE FUNCTION trovesnap.search_index();

CREATE TRIGGER items_search_insert AFTER INSERT ON trovesnap.items
    FOR EACH ROW EXECUTE FUNCTION trovesnap.search_index();
CREATE TRIGGER items_search_update AFTER UPDATE OF title, description, category ON trovesnap.items
    FOR EACH ROW EXECUTE FUNCTION trovesnap.search_index();

-- Keys for what a project already holds: sales, then items, each in the
-- order they were recorded (the store's order for a seeded database).
SELECT set_config('trovesnap.system', 'on', true);
INSERT INTO trovesnap.search_keys (tenant_id, kind, ref_id, tokens)
SELECT s.tenant_id, 'sale', s.id, trovesnap.search_tokens(concat_ws(' ', s.title, s.city, s.region))
FROM trovesnap.estate_sales s ORDER BY s.created_at, s.id;
INSERT INTO trovesnap.search_keys (tenant_id, kind, ref_id, tokens)
SELECT i.tenant_id, 'item', i.id, trovesnap.search_tokens(concat_ws(' ', i.title, i.description, i.category))
FROM trovesnap.items i ORDER BY i.created_at, i.id;
SELECT set_config('trovesnap.system', 'off', true);

-- ---------------------------------------------------------------------------
-- Row level security
-- ---------------------------------------------------------------------------

-- The new tables: the tenant of the context (or system), and the
-- signed-in seller's tenants for reads under a user JWT, as migration 2.
SELECT trovesnap.tenant_rls(ARRAY['label_batches', 'qr_labels', 'search_keys']);

-- ctx_public: the public context, which names no tenant and is no system
-- access (a context with a tenant is never public).
CREATE FUNCTION trovesnap.ctx_public() RETURNS boolean
    LANGUAGE sql STABLE
    AS $$
        SELECT coalesce(current_setting('trovesnap.public', true), '') = 'on' AND trovesnap.ctx_tenant() IS NULL
               AND NOT trovesnap.ctx_system()
    $$;

-- What the public context may read: SELECT only, public rows only. The
-- subqueries are themselves under row level security, so an item is public
-- only in a sale this context can see, a photo only of such an item.
CREATE POLICY public_read ON trovesnap.estate_sales FOR SELECT TO trovesnap_owner
    USING (trovesnap.ctx_public() AND visibility = 'public' AND status IN ('published', 'live'));
CREATE POLICY public_read ON trovesnap.items FOR SELECT TO trovesnap_owner
    USING (trovesnap.ctx_public() AND status IN ('published', 'on_hold', 'pending_pickup', 'sold')
           AND EXISTS (SELECT 1 FROM trovesnap.estate_sales s
                       WHERE s.tenant_id = items.tenant_id AND s.id = items.sale_id
                         AND s.visibility = 'public' AND s.status IN ('published', 'live')));
CREATE POLICY public_read ON trovesnap.item_photos FOR SELECT TO trovesnap_owner
    USING (trovesnap.ctx_public() AND published
           AND EXISTS (SELECT 1 FROM trovesnap.items i WHERE i.tenant_id = item_photos.tenant_id AND i.id = item_photos.item_id));
CREATE POLICY public_read ON trovesnap.search_keys FOR SELECT TO trovesnap_owner
    USING (trovesnap.ctx_public()
           AND CASE kind WHEN 'sale' THEN EXISTS (SELECT 1 FROM trovesnap.estate_sales s WHERE s.id = search_keys.ref_id)
                         ELSE EXISTS (SELECT 1 FROM trovesnap.items i WHERE i.id = search_keys.ref_id) END);

-- ---------------------------------------------------------------------------
-- Helpers
-- ---------------------------------------------------------------------------

-- begin_public starts a public RPC: the empty context of begin_rpc (the
-- caller must be the server's role), then the public context.
CREATE FUNCTION trovesnap.begin_public() RETURNS void
    LANGUAGE plpgsql
    AS $$
BEGIN
    PERFORM trovesnap.begin_rpc('trovesnap_mcp');
    PERFORM set_config('trovesnap.public', 'on', true);
END
$$;

-- enter_read starts a scoped read: the public context off, then enter
-- (client, tool group tenant_read, one of the permissions, tenant context).
CREATE FUNCTION trovesnap.enter_read(p_hash text, p_any_perm text[]) RETURNS trovesnap.principal
    LANGUAGE plpgsql
    AS $$
BEGIN
    PERFORM set_config('trovesnap.public', 'off', true);
    RETURN trovesnap.enter(p_hash, 'tenant_read', p_any_perm);
END
$$;

-- check_assigned: a sale-scoped member sees its assigned sales only (a
-- record without a sale is outside every assignment).
CREATE FUNCTION trovesnap.check_assigned(p trovesnap.principal, p_sale_id text) RETURNS void
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF p.sale_scoped AND NOT (coalesce(p_sale_id, '') = ANY (coalesce(p.assigned, '{}'))) THEN
        PERFORM trovesnap.fail('sale_assignment', coalesce(p_sale_id, ''));
    END IF;
END
$$;

-- visible_item: the item of the caller's tenant (else invalid_reference),
-- of an assigned sale (else sale_assignment).
CREATE FUNCTION trovesnap.visible_item(p trovesnap.principal, p_item_id text) RETURNS trovesnap.items
    LANGUAGE plpgsql
    AS $$
DECLARE
    i trovesnap.items;
BEGIN
    PERFORM trovesnap.check_ref('items', 'item_id', coalesce(p_item_id, ''));
    SELECT * INTO i FROM trovesnap.items WHERE id = p_item_id;
    PERFORM trovesnap.check_assigned(p, i.sale_id);
    RETURN i;
END
$$;

-- public_sale_json: a sale as a buyer sees it. The street address leaves
-- the database only when the reveal policy allows it at the time of the
-- call (the transaction's clock); the announced reveal time of a
-- hidden_until sale is public.
CREATE FUNCTION trovesnap.public_sale_json(s trovesnap.estate_sales) RETURNS jsonb
    LANGUAGE sql STABLE
    AS $$
        SELECT jsonb_build_object('id', s.id, 'title', s.title, 'status', s.status, 'city', s.city, 'region', s.region,
            'street_address', CASE WHEN s.street_address <> ''
                                    AND (s.address_policy = 'always'
                                         OR (s.address_policy = 'hidden_until' AND s.address_reveal_at IS NOT NULL
                                             AND now() >= s.address_reveal_at))
                                   THEN s.street_address END,
            'address_reveal_at', CASE WHEN s.address_policy = 'hidden_until' THEN trovesnap.ts(s.address_reveal_at) END,
            'starts_at', trovesnap.ts(s.starts_at), 'ends_at', trovesnap.ts(s.ends_at),
            'published_items', (SELECT count(*) FROM trovesnap.items i
                                WHERE i.tenant_id = s.tenant_id AND i.sale_id = s.id AND i.status = 'published'))
    $$;

-- public_photo_json: a published photo, without its storage path.
CREATE FUNCTION trovesnap.public_photo_json(ph trovesnap.item_photos) RETURNS jsonb
    LANGUAGE sql IMMUTABLE
    AS $$ SELECT jsonb_build_object('id', ph.id, 'width', ph.width, 'height', ph.height, 'position', ph.position) $$;

-- public_item_json: an item as a buyer sees it (public status vocabulary,
-- public price, published photos) with its sale.
CREATE FUNCTION trovesnap.public_item_json(i trovesnap.items, s trovesnap.estate_sales) RETURNS jsonb
    LANGUAGE sql STABLE
    AS $$
        SELECT jsonb_build_object('id', i.id, 'sale_id', i.sale_id, 'title', i.title, 'description', i.description,
            'category', i.category,
            'status', CASE i.status WHEN 'published' THEN 'available' WHEN 'on_hold' THEN 'on_hold' ELSE 'sold' END,
            'price_cents', i.price_cents,
            'photos', coalesce((SELECT jsonb_agg(trovesnap.public_photo_json(ph) ORDER BY ph.position, ph.id)
                                FROM trovesnap.item_photos ph
                                WHERE ph.tenant_id = i.tenant_id AND ph.item_id = i.id AND ph.published), '[]'),
            'sale', trovesnap.public_sale_json(s))
    $$;

-- public_item_where: the public item an id or a printed code names, or
-- invalid_reference on p_field — the same answer for an unknown, an
-- unpublished, a withdrawn and a private record.
CREATE FUNCTION trovesnap.public_item_where(p_item_id text, p_qr_code text, p_field text, p_value text) RETURNS jsonb
    LANGUAGE plpgsql
    AS $$
DECLARE
    i trovesnap.items;
    s trovesnap.estate_sales;
BEGIN
    IF p_qr_code IS NULL THEN
        SELECT * INTO i FROM trovesnap.items it
        WHERE it.id = p_item_id AND it.status IN ('published', 'on_hold', 'pending_pickup', 'sold');
    ELSE
        -- qr_code <> '' is the partial unique index items_qr_code.
        SELECT * INTO i FROM trovesnap.items it
        WHERE it.qr_code = p_qr_code AND it.qr_code <> '' AND it.status IN ('published', 'on_hold', 'pending_pickup', 'sold');
    END IF;
    IF FOUND THEN
        SELECT * INTO s FROM trovesnap.estate_sales es
        WHERE es.tenant_id = i.tenant_id AND es.id = i.sale_id
          AND es.visibility = 'public' AND es.status IN ('published', 'live');
    END IF;
    IF i.id IS NULL OR s.id IS NULL THEN
        PERFORM trovesnap.fail('invalid_reference:' || p_field,
            jsonb_build_object('id', coalesce(p_value, ''), 'cross_tenant', false)::text);
    END IF;
    RETURN trovesnap.public_item_json(i, s);
END
$$;

-- ---------------------------------------------------------------------------
-- Public RPCs (no credential: the public context only)
-- ---------------------------------------------------------------------------

-- mcp_public_sale: one published sale of public visibility.
CREATE FUNCTION public.mcp_public_sale(p_sale_id text) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    s trovesnap.estate_sales;
BEGIN
    PERFORM trovesnap.begin_public();
    SELECT * INTO s FROM trovesnap.estate_sales es
    WHERE es.id = p_sale_id AND es.visibility = 'public' AND es.status IN ('published', 'live');
    IF NOT FOUND THEN
        PERFORM trovesnap.fail('invalid_reference:sale_id',
            jsonb_build_object('id', coalesce(p_sale_id, ''), 'cross_tenant', false)::text);
    END IF;
    RETURN trovesnap.public_sale_json(s);
END
$$;

-- mcp_public_item: one public item and its sale.
CREATE FUNCTION public.mcp_public_item(p_item_id text) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    PERFORM trovesnap.begin_public();
    RETURN trovesnap.public_item_where(coalesce(p_item_id, ''), NULL, 'item_id', p_item_id);
END
$$;

-- mcp_resolve_public_qr: the public item a printed tag is bound to. The
-- lookup goes through items only, so whether a code was ever printed does
-- not change the answer.
CREATE FUNCTION public.mcp_resolve_public_qr(p_qr_code text) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    PERFORM trovesnap.begin_public();
    IF coalesce(p_qr_code, '') = '' THEN
        PERFORM trovesnap.fail('invalid_reference:qr_code', jsonb_build_object('id', '', 'cross_tenant', false)::text);
    END IF;
    RETURN trovesnap.public_item_where(NULL, p_qr_code, 'qr_code', p_qr_code);
END
$$;

-- mcp_search_marketplace: public sales and the items for sale in them, in
-- search key order, keyset on the key. p_terms are the words of the
-- buyer's query (the server splits them as the store does); every one must
-- be a word of the record. p_category is a dotted path prefix (items
-- only); city and region compare ASCII case-insensitively (SQLite's
-- NOCASE); p_from/p_to bound the sale dates.
CREATE FUNCTION public.mcp_search_marketplace(p_terms text[] DEFAULT NULL, p_category text DEFAULT NULL,
                                              p_city text DEFAULT NULL, p_region text DEFAULT NULL,
                                              p_from timestamptz DEFAULT NULL, p_to timestamptz DEFAULT NULL,
                                              p_limit integer DEFAULT NULL, p_after bigint DEFAULT NULL) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    v_limit  integer;
    v_tokens text[] := '{}';
    v_term   text;
    v_rows   jsonb;
BEGIN
    PERFORM trovesnap.begin_public();
    v_limit := least(trovesnap.page_limit(p_limit), 50);
    IF cardinality(p_terms) > 8 THEN
        PERFORM trovesnap.fail('invalid_input:query', 'at most 8 words');
    END IF;
    FOREACH v_term IN ARRAY coalesce(p_terms, '{}')
    LOOP
        IF coalesce(v_term, '') = '' THEN
            PERFORM trovesnap.fail('invalid_input:query', 'has no words to search for');
        END IF;
        v_tokens := v_tokens || trovesnap.search_tokens(v_term);
    END LOOP;
    IF p_from IS NOT NULL AND p_to IS NOT NULL AND p_from >= p_to THEN
        PERFORM trovesnap.fail('invalid_input:date_from', 'must not be after date_to');
    END IF;
    IF p_after < 0 THEN
        PERFORM trovesnap.fail('invalid_input:cursor', 'not a cursor of this list: start again without a cursor');
    END IF;
    WITH hits AS (
        SELECT k.seq, k.kind, k.ref_id, s.id AS sale_id, s.title AS sale_title, s.city, s.region, s.starts_at, s.ends_at,
               i.tenant_id AS item_tenant, i.title AS item_title, i.price_cents
        FROM trovesnap.search_keys k
        LEFT JOIN trovesnap.items i ON k.kind = 'item' AND i.id = k.ref_id
        JOIN trovesnap.estate_sales s ON s.id = (CASE WHEN k.kind = 'sale' THEN k.ref_id ELSE i.sale_id END)
        WHERE k.seq > coalesce(p_after, 0)
          AND k.tokens @> v_tokens
          AND s.visibility = 'public' AND s.status IN ('published', 'live')
          -- Search finds what is for sale: items still available. Held and
          -- sold items stay readable by id and by their tag.
          AND (k.kind = 'sale' OR (i.status = 'published' AND i.tenant_id = s.tenant_id))
          AND (coalesce(p_category, '') = ''
               OR (k.kind = 'item' AND (i.category = p_category OR starts_with(i.category, p_category || '.'))))
          AND (coalesce(p_city, '') = ''
               OR translate(s.city, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')
                  = translate(p_city, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz'))
          AND (coalesce(p_region, '') = ''
               OR translate(s.region, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')
                  = translate(p_region, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz'))
          AND (p_from IS NULL OR s.ends_at >= p_from)
          AND (p_to IS NULL OR s.starts_at < p_to)
        ORDER BY k.seq
        LIMIT v_limit + 1)
    SELECT coalesce(jsonb_agg(jsonb_build_object('seq', h.seq, 'id', h.ref_id, 'kind', h.kind, 'sale_id', h.sale_id,
               'sale_title', h.sale_title, 'item_id', CASE WHEN h.kind = 'item' THEN h.ref_id ELSE '' END,
               'title', CASE WHEN h.kind = 'item' THEN h.item_title ELSE h.sale_title END,
               'city', h.city, 'region', h.region, 'starts_at', trovesnap.ts(h.starts_at), 'ends_at', trovesnap.ts(h.ends_at),
               'price_cents', CASE WHEN h.kind = 'item' THEN h.price_cents END,
               'photo', CASE WHEN h.kind = 'item' THEN (
                   SELECT trovesnap.public_photo_json(ph) FROM trovesnap.item_photos ph
                   WHERE ph.tenant_id = h.item_tenant AND ph.item_id = h.ref_id AND ph.published
                   ORDER BY ph.position, ph.id LIMIT 1) END)
               ORDER BY h.seq), '[]') INTO v_rows
    FROM hits h;
    RETURN trovesnap.page(v_rows, v_limit, 'seq');
END
$$;

-- ---------------------------------------------------------------------------
-- Scoped RPCs (a client's credential: its tenant, its assignment)
-- ---------------------------------------------------------------------------

-- mcp_get_sale: one sale of the caller's tenant.
CREATE FUNCTION public.mcp_get_sale(p_credential_hash text, p_sale_id text) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    p trovesnap.principal;
    s trovesnap.estate_sales;
BEGIN
    p := trovesnap.enter_read(p_credential_hash, ARRAY['sale.read']);
    PERFORM trovesnap.check_sale(p, coalesce(p_sale_id, ''));
    SELECT * INTO s FROM trovesnap.estate_sales WHERE id = p_sale_id;
    RETURN trovesnap.sale_json(s);
END
$$;

-- mcp_get_item: one item of the caller's tenant with the extras asked for
-- (price history: pricing roles only).
CREATE FUNCTION public.mcp_get_item(p_credential_hash text, p_item_id text, p_include_photos boolean DEFAULT false,
                                    p_include_price_history boolean DEFAULT false) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    p trovesnap.principal;
    i trovesnap.items;
BEGIN
    p := trovesnap.enter_read(p_credential_hash, ARRAY['item.read', 'item.read_checkout']);
    PERFORM trovesnap.check_pricing(p, p_include_price_history);
    i := trovesnap.visible_item(p, p_item_id);
    RETURN trovesnap.item_detail_json(i, coalesce(p_include_photos, false), coalesce(p_include_price_history, false));
END
$$;

-- mcp_get_candidate: one candidate of the caller's tenant.
CREATE FUNCTION public.mcp_get_candidate(p_credential_hash text, p_candidate_id text) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    p trovesnap.principal;
    c trovesnap.inventory_candidates;
BEGIN
    p := trovesnap.enter_read(p_credential_hash, ARRAY['candidate.read']);
    PERFORM trovesnap.check_ref('inventory_candidates', 'candidate_id', coalesce(p_candidate_id, ''));
    SELECT * INTO c FROM trovesnap.inventory_candidates WHERE id = p_candidate_id;
    PERFORM trovesnap.check_assigned(p, c.sale_id);
    RETURN trovesnap.candidate_json(c);
END
$$;

-- run_json: an import run with the kind of its source.
CREATE FUNCTION trovesnap.run_json(r trovesnap.import_runs, p_source_kind text) RETURNS jsonb
    LANGUAGE sql IMMUTABLE
    AS $$
        SELECT jsonb_build_object('id', r.id, 'tenant_id', r.tenant_id, 'source_descriptor_id', r.source_descriptor_id,
            'sale_id', coalesce(r.sale_id, ''), 'kind', r.kind, 'status', r.status, 'record_count', r.record_count,
            'created_at', trovesnap.ts(r.created_at), 'source_kind', p_source_kind)
    $$;

-- mcp_list_import_runs: the caller's tenant's import runs, newest first:
-- keyset on (created_at, id) descending.
CREATE FUNCTION public.mcp_list_import_runs(p_credential_hash text, p_sale_id text DEFAULT NULL,
                                            p_limit integer DEFAULT NULL, p_after_key text DEFAULT NULL,
                                            p_after_id text DEFAULT NULL) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    p       trovesnap.principal;
    v_limit integer;
    v_after timestamptz;
    v_rows  jsonb;
BEGIN
    p := trovesnap.enter_read(p_credential_hash, ARRAY['import.read']);
    v_limit := trovesnap.page_limit(p_limit);
    v_after := trovesnap.after_key(p_after_key, p_after_id);
    IF coalesce(p_sale_id, '') <> '' THEN
        PERFORM trovesnap.check_sale(p, p_sale_id);
    END IF;
    SELECT coalesce(jsonb_agg(trovesnap.run_json(r, d.kind) ORDER BY r.created_at DESC, r.id DESC), '[]') INTO v_rows
    FROM (SELECT * FROM trovesnap.import_runs r
          WHERE (NOT p.sale_scoped OR r.sale_id = ANY (p.assigned))
            AND (coalesce(p_sale_id, '') = '' OR r.sale_id = p_sale_id)
            AND (v_after IS NULL OR (r.created_at, r.id) < (v_after, p_after_id))
          ORDER BY r.created_at DESC, r.id DESC
          LIMIT v_limit + 1) r
    JOIN trovesnap.source_descriptors d ON d.tenant_id = r.tenant_id AND d.id = r.source_descriptor_id;
    RETURN trovesnap.page(v_rows, v_limit, 'created_at');
END
$$;

-- mcp_get_import_run: one run, its candidate counts by review status, and a
-- page of its source records (by ordinal, after p_after_ordinal) with the
-- candidates each produced.
CREATE FUNCTION public.mcp_get_import_run(p_credential_hash text, p_run_id text, p_limit integer DEFAULT NULL,
                                          p_after_ordinal bigint DEFAULT NULL) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    p       trovesnap.principal;
    v_limit integer;
    r       trovesnap.import_runs;
    v_kind  text;
    v_recs  jsonb;
    v_page  jsonb;
BEGIN
    p := trovesnap.enter_read(p_credential_hash, ARRAY['import.read']);
    v_limit := trovesnap.page_limit(p_limit);
    IF p_after_ordinal < 0 THEN
        PERFORM trovesnap.fail('invalid_input:cursor', 'not a cursor of this list: start again without a cursor');
    END IF;
    PERFORM trovesnap.check_ref('import_runs', 'run_id', coalesce(p_run_id, ''));
    SELECT * INTO r FROM trovesnap.import_runs WHERE id = p_run_id;
    PERFORM trovesnap.check_assigned(p, r.sale_id);
    SELECT d.kind INTO v_kind FROM trovesnap.source_descriptors d
    WHERE d.tenant_id = r.tenant_id AND d.id = r.source_descriptor_id;
    SELECT coalesce(jsonb_agg(jsonb_build_object('id', sr.id, 'tenant_id', sr.tenant_id, 'import_run_id', sr.import_run_id,
               'ordinal', sr.ordinal, 'payload_hash', sr.payload_hash, 'payload', sr.payload,
               'created_at', trovesnap.ts(sr.created_at)) ORDER BY sr.ordinal), '[]') INTO v_recs
    FROM (SELECT * FROM trovesnap.source_records x
          WHERE x.tenant_id = r.tenant_id AND x.import_run_id = r.id AND x.ordinal > coalesce(p_after_ordinal, 0)
          ORDER BY x.ordinal
          LIMIT v_limit + 1) sr;
    -- Key the page by ordinal; the candidates of the records kept only.
    v_page := trovesnap.page((SELECT coalesce(jsonb_agg(e || jsonb_build_object('k', e ->> 'ordinal') ORDER BY n), '[]')
                              FROM jsonb_array_elements(v_recs) WITH ORDINALITY AS x(e, n)), v_limit, 'k');
    RETURN jsonb_build_object(
        'run', trovesnap.run_json(r, v_kind),
        'candidates', (SELECT jsonb_build_object(
                'needs_review', count(*) FILTER (WHERE c.review_status = 'needs_review'),
                'approved', count(*) FILTER (WHERE c.review_status = 'approved'),
                'rejected', count(*) FILTER (WHERE c.review_status = 'rejected'),
                'promoted', count(*) FILTER (WHERE c.review_status = 'promoted'))
            FROM trovesnap.inventory_candidates c WHERE c.tenant_id = r.tenant_id AND c.import_run_id = r.id),
        'records', (SELECT coalesce(jsonb_agg((e - 'k') || jsonb_build_object('candidate_ids', coalesce((
                        SELECT jsonb_agg(c.id ORDER BY c.created_at, c.id) FROM trovesnap.inventory_candidates c
                        WHERE c.tenant_id = r.tenant_id AND c.source_record_id = e ->> 'id'), '[]')) ORDER BY n), '[]')
                    FROM jsonb_array_elements(v_page -> 'rows') WITH ORDINALITY AS x(e, n)),
        'next', v_page -> 'next');
END
$$;

-- mcp_list_status_events: the status history of the caller's items, newest
-- first: keyset on (effective_at, id) descending.
CREATE FUNCTION public.mcp_list_status_events(p_credential_hash text, p_item_id text DEFAULT NULL,
                                              p_sale_id text DEFAULT NULL, p_to_status text DEFAULT NULL,
                                              p_limit integer DEFAULT NULL, p_after_key text DEFAULT NULL,
                                              p_after_id text DEFAULT NULL) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    p       trovesnap.principal;
    v_limit integer;
    v_after timestamptz;
    v_rows  jsonb;
BEGIN
    p := trovesnap.enter_read(p_credential_hash, ARRAY['item.read', 'item.read_checkout']);
    v_limit := trovesnap.page_limit(p_limit);
    PERFORM trovesnap.one_of('to_status', p_to_status,
        ARRAY['draft', 'ready', 'published', 'on_hold', 'pending_pickup', 'sold', 'withdrawn', 'archived']);
    v_after := trovesnap.after_key(p_after_key, p_after_id);
    IF coalesce(p_item_id, '') <> '' THEN
        PERFORM trovesnap.visible_item(p, p_item_id);
    END IF;
    IF coalesce(p_sale_id, '') <> '' THEN
        PERFORM trovesnap.check_sale(p, p_sale_id);
    END IF;
    SELECT coalesce(jsonb_agg(jsonb_build_object('id', e.id, 'tenant_id', e.tenant_id, 'item_id', e.item_id,
               'sale_id', e.sale_id, 'from_status', e.from_status, 'to_status', e.to_status,
               'effective_at', trovesnap.ts(e.effective_at), 'source_type', e.source_type, 'actor_id', e.actor_id,
               'proposal_id', e.proposal_id, 'recorded_at', trovesnap.ts(e.recorded_at))
               ORDER BY e.effective_at DESC, e.id DESC), '[]') INTO v_rows
    FROM (SELECT * FROM trovesnap.item_status_events e
          WHERE (NOT p.sale_scoped OR e.sale_id = ANY (p.assigned))
            AND (coalesce(p_item_id, '') = '' OR e.item_id = p_item_id)
            AND (coalesce(p_sale_id, '') = '' OR e.sale_id = p_sale_id)
            AND (coalesce(p_to_status, '') = '' OR e.to_status = p_to_status)
            AND (v_after IS NULL OR (e.effective_at, e.id) < (v_after, p_after_id))
          ORDER BY e.effective_at DESC, e.id DESC
          LIMIT v_limit + 1) e;
    RETURN trovesnap.page(v_rows, v_limit, 'effective_at');
END
$$;

-- mcp_list_label_batches: the caller's tenant's QR label batches, oldest
-- first (keyset on (created_at, id)), with their label and bound counts.
CREATE FUNCTION public.mcp_list_label_batches(p_credential_hash text, p_sale_id text DEFAULT NULL,
                                              p_status text DEFAULT NULL, p_limit integer DEFAULT NULL,
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
    p := trovesnap.enter_read(p_credential_hash, ARRAY['sale.read']);
    v_limit := trovesnap.page_limit(p_limit);
    PERFORM trovesnap.one_of('status', p_status, ARRAY['draft', 'printed', 'retired']);
    v_after := trovesnap.after_key(p_after_key, p_after_id);
    IF coalesce(p_sale_id, '') <> '' THEN
        PERFORM trovesnap.check_sale(p, p_sale_id);
    END IF;
    SELECT coalesce(jsonb_agg(jsonb_build_object('id', b.id, 'tenant_id', b.tenant_id, 'sale_id', b.sale_id,
               'status', b.status,
               'label_count', (SELECT count(*) FROM trovesnap.qr_labels l WHERE l.tenant_id = b.tenant_id AND l.batch_id = b.id),
               'bound_count', (SELECT count(*) FROM trovesnap.qr_labels l
                               JOIN trovesnap.items i ON i.qr_code = l.code AND i.qr_code <> '' AND i.tenant_id = l.tenant_id
                               WHERE l.tenant_id = b.tenant_id AND l.batch_id = b.id),
               'created_at', trovesnap.ts(b.created_at), 'printed_at', trovesnap.ts(b.printed_at))
               ORDER BY b.created_at, b.id), '[]') INTO v_rows
    FROM (SELECT * FROM trovesnap.label_batches b
          WHERE (NOT p.sale_scoped OR b.sale_id = ANY (p.assigned))
            AND (coalesce(p_sale_id, '') = '' OR b.sale_id = p_sale_id)
            AND (coalesce(p_status, '') = '' OR b.status = p_status)
            AND (v_after IS NULL OR (b.created_at, b.id) > (v_after, p_after_id))
          ORDER BY b.created_at, b.id
          LIMIT v_limit + 1) b;
    RETURN trovesnap.page(v_rows, v_limit, 'created_at');
END
$$;

-- mcp_disposition_queue: the unsold items (published or on hold) of a
-- closed sale in (created_at, id) order, each queued at the sale's end; a
-- sale that has not closed has an empty queue.
CREATE FUNCTION public.mcp_disposition_queue(p_credential_hash text, p_sale_id text, p_room text DEFAULT NULL,
                                             p_limit integer DEFAULT NULL, p_after_key text DEFAULT NULL,
                                             p_after_id text DEFAULT NULL, p_include_photos boolean DEFAULT false,
                                             p_include_price_history boolean DEFAULT false) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    p       trovesnap.principal;
    v_limit integer;
    v_after timestamptz;
    s       trovesnap.estate_sales;
    v_rows  jsonb;
BEGIN
    p := trovesnap.enter_read(p_credential_hash, ARRAY['item.read']);
    PERFORM trovesnap.check_pricing(p, p_include_price_history);
    v_limit := trovesnap.page_limit(p_limit);
    v_after := trovesnap.after_key(p_after_key, p_after_id);
    PERFORM trovesnap.check_sale(p, coalesce(p_sale_id, ''));
    SELECT * INTO s FROM trovesnap.estate_sales WHERE id = p_sale_id;
    IF s.status NOT IN ('closed', 'archived') THEN
        RETURN jsonb_build_object('rows', '[]'::jsonb, 'next', NULL);
    END IF;
    SELECT coalesce(jsonb_agg(
               trovesnap.item_detail_json(i, coalesce(p_include_photos, false), coalesce(p_include_price_history, false))
               || jsonb_build_object('queued_at', trovesnap.ts(s.ends_at))
               ORDER BY i.created_at, i.id), '[]') INTO v_rows
    FROM (SELECT * FROM trovesnap.items i
          WHERE i.tenant_id = s.tenant_id AND i.sale_id = s.id AND i.status IN ('published', 'on_hold')
            AND (coalesce(p_room, '') = '' OR i.room = p_room)
            AND (v_after IS NULL OR (i.created_at, i.id) > (v_after, p_after_id))
          ORDER BY i.created_at, i.id
          LIMIT v_limit + 1) i;
    RETURN trovesnap.page(v_rows, v_limit, 'created_at');
END
$$;

-- ---------------------------------------------------------------------------
-- Privileges: nobody may execute this migration's functions but the
-- server's role, and it only the RPCs.
-- ---------------------------------------------------------------------------

SELECT trovesnap.revoke_execute(ARRAY[
    'search_tokens', 'search_key_put', 'search_index', 'ctx_public', 'begin_public',
    'enter_read', 'check_assigned', 'visible_item', 'public_sale_json',
    'public_photo_json', 'public_item_json', 'public_item_where', 'run_json', 'mcp_public_sale', 'mcp_public_item',
    'mcp_resolve_public_qr', 'mcp_search_marketplace', 'mcp_get_sale', 'mcp_get_item', 'mcp_get_candidate',
    'mcp_list_import_runs', 'mcp_get_import_run', 'mcp_list_status_events', 'mcp_list_label_batches',
    'mcp_disposition_queue']);
GRANT EXECUTE ON FUNCTION
    public.mcp_public_sale(text),
    public.mcp_public_item(text),
    public.mcp_resolve_public_qr(text),
    public.mcp_search_marketplace(text[], text, text, text, timestamptz, timestamptz, integer, bigint),
    public.mcp_get_sale(text, text),
    public.mcp_get_item(text, text, boolean, boolean),
    public.mcp_get_candidate(text, text),
    public.mcp_list_import_runs(text, text, integer, text, text),
    public.mcp_get_import_run(text, text, integer, bigint),
    public.mcp_list_status_events(text, text, text, text, integer, text, text),
    public.mcp_list_label_batches(text, text, text, integer, text, text),
    public.mcp_disposition_queue(text, text, text, integer, text, text, boolean, boolean)
TO trovesnap_mcp;

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (5, '20261130120100_trovesnap_reads');

RESET ROLE;
