-- trovesnap live mode, migration 24: the public visibility rule, the
-- marketplace page and query bounds, the status-report claims, the policy
-- run limit and the remaining status lists are read from the lookups
-- generated from internal/domain (migration 23, internal/sqlgen), so each
-- is written once, in Go. Each function is its latest body with only that
-- change; the row level security policies of the public context and the
-- CHECK constraints name the generated lists too.

SET ROLE trovesnap_owner;

-- What the public context may read (migration 5): the public sale and item
-- statuses from public_sale_statuses and public_item_statuses.
ALTER POLICY public_read ON trovesnap.estate_sales
    USING (trovesnap.ctx_public() AND visibility = 'public' AND status = ANY (trovesnap.public_sale_statuses()));
ALTER POLICY public_read ON trovesnap.items
    USING (trovesnap.ctx_public() AND status = ANY (trovesnap.public_item_statuses())
           AND EXISTS (SELECT 1 FROM trovesnap.estate_sales s
                       WHERE s.tenant_id = items.tenant_id AND s.id = items.sale_id
                         AND s.visibility = 'public' AND s.status = ANY (trovesnap.public_sale_statuses())));

-- public_item_json as in migration 5; the public status from public_item_status.
CREATE OR REPLACE FUNCTION trovesnap.public_item_json(i trovesnap.items, s trovesnap.estate_sales) RETURNS jsonb
    LANGUAGE sql STABLE
    AS $$
        SELECT jsonb_build_object('id', i.id, 'sale_id', i.sale_id, 'title', i.title, 'description', i.description,
            'category', i.category,
            'status', trovesnap.public_item_status(i.status),
            'price_cents', i.price_cents,
            'photos', coalesce((SELECT jsonb_agg(trovesnap.public_photo_json(ph) ORDER BY ph.position, ph.id)
                                FROM trovesnap.item_photos ph
                                WHERE ph.tenant_id = i.tenant_id AND ph.item_id = i.id AND ph.published), '[]'),
            'sale', trovesnap.public_sale_json(s))
    $$;

-- public_item_where as in migration 5; the public statuses from the
-- generated lists.
CREATE OR REPLACE FUNCTION trovesnap.public_item_where(p_item_id text, p_qr_code text, p_field text, p_value text) RETURNS jsonb
    LANGUAGE plpgsql
    AS $$
DECLARE
    i trovesnap.items;
    s trovesnap.estate_sales;
BEGIN
    IF p_qr_code IS NULL THEN
        SELECT * INTO i FROM trovesnap.items it
        WHERE it.id = p_item_id AND it.status = ANY (trovesnap.public_item_statuses());
    ELSE
        -- qr_code <> '' is the partial unique index items_qr_code.
        SELECT * INTO i FROM trovesnap.items it
        WHERE it.qr_code = p_qr_code AND it.qr_code <> '' AND it.status = ANY (trovesnap.public_item_statuses());
    END IF;
    IF FOUND THEN
        SELECT * INTO s FROM trovesnap.estate_sales es
        WHERE es.tenant_id = i.tenant_id AND es.id = i.sale_id
          AND es.visibility = 'public' AND es.status = ANY (trovesnap.public_sale_statuses());
    END IF;
    IF i.id IS NULL OR s.id IS NULL THEN
        PERFORM trovesnap.fail('invalid_reference:' || p_field,
            jsonb_build_object('id', coalesce(p_value, ''), 'cross_tenant', false)::text);
    END IF;
    RETURN trovesnap.public_item_json(i, s);
END
$$;

-- mcp_public_sale as in migration 5; the public sale statuses from
-- public_sale_statuses.
CREATE OR REPLACE FUNCTION public.mcp_public_sale(p_sale_id text) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    s trovesnap.estate_sales;
BEGIN
    PERFORM trovesnap.begin_public();
    SELECT * INTO s FROM trovesnap.estate_sales es
    WHERE es.id = p_sale_id AND es.visibility = 'public' AND es.status = ANY (trovesnap.public_sale_statuses());
    IF NOT FOUND THEN
        PERFORM trovesnap.fail('invalid_reference:sale_id',
            jsonb_build_object('id', coalesce(p_sale_id, ''), 'cross_tenant', false)::text);
    END IF;
    RETURN trovesnap.public_sale_json(s);
END
$$;

-- mcp_search_marketplace as in migration 5; the page size from
-- search_page_limit, the word limit from search_max_terms, the public sale
-- statuses from public_sale_statuses.
CREATE OR REPLACE FUNCTION public.mcp_search_marketplace(p_terms text[] DEFAULT NULL, p_category text DEFAULT NULL,
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
    v_limit := trovesnap.search_page_limit(p_limit);
    IF cardinality(p_terms) > trovesnap.search_max_terms() THEN
        PERFORM trovesnap.fail('invalid_input:query', format('at most %s words', trovesnap.search_max_terms()));
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
          AND s.visibility = 'public' AND s.status = ANY (trovesnap.public_sale_statuses())
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

-- mcp_list_candidates as in migration 3; the statuses from review_statuses.
CREATE OR REPLACE FUNCTION public.mcp_list_candidates(p_credential_hash text, p_sale_id text DEFAULT NULL,
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
    PERFORM trovesnap.one_of('review_status', p_review_status, trovesnap.review_statuses());
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

-- mcp_list_label_batches as in migration 5; the statuses from
-- label_batch_statuses.
CREATE OR REPLACE FUNCTION public.mcp_list_label_batches(p_credential_hash text, p_sale_id text DEFAULT NULL,
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
    PERFORM trovesnap.one_of('status', p_status, trovesnap.label_batch_statuses());
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

-- mcp_disposition_queue as in migration 5; which sales have a queue and
-- which of their items are in it from disposition_sale_statuses and
-- unsold_item_statuses.
CREATE OR REPLACE FUNCTION public.mcp_disposition_queue(p_credential_hash text, p_sale_id text, p_room text DEFAULT NULL,
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
    IF s.status <> ALL (trovesnap.disposition_sale_statuses()) THEN
        RETURN jsonb_build_object('rows', '[]'::jsonb, 'next', NULL);
    END IF;
    SELECT coalesce(jsonb_agg(
               trovesnap.item_detail_json(i, coalesce(p_include_photos, false), coalesce(p_include_price_history, false))
               || jsonb_build_object('queued_at', trovesnap.ts(s.ends_at))
               ORDER BY i.created_at, i.id), '[]') INTO v_rows
    FROM (SELECT * FROM trovesnap.items i
          WHERE i.tenant_id = s.tenant_id AND i.sale_id = s.id AND i.status = ANY (trovesnap.unsold_item_statuses())
            AND (coalesce(p_room, '') = '' OR i.room = p_room)
            AND (v_after IS NULL OR (i.created_at, i.id) > (v_after, p_after_id))
          ORDER BY i.created_at, i.id
          LIMIT v_limit + 1) i;
    RETURN trovesnap.page(v_rows, v_limit, 'created_at');
END
$$;

-- mcp_run_import as in migration 9; what a status row may report from
-- reportable_statuses.
CREATE OR REPLACE FUNCTION public.mcp_run_import(p_credential_hash text, p_tool text, p_tool_major integer, p_key text,
                                      p_fingerprint text, p_event jsonb, p_started_at timestamptz,
                                      p_import jsonb) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    p           trovesnap.principal;
    v_now       timestamptz := now();
    v_replay    jsonb;
    v_kind      text := p_import ->> 'kind';
    v_sale      text := p_import ->> 'sale_id';
    v_rows      jsonb := p_import -> 'rows';
    v_field     text;
    v_label     text := coalesce(p_import ->> 'source_label', '');
    v_hash      text := nullif(p_import ->> 'content_hash', '');
    v_n         integer;
    v_valid     integer;
    v_state     jsonb;
    v_desc      text;
    v_run       text;
    v_status    text;
    v_records   text[];
    v_cands     text[];
    v_new_ids   jsonb;
    v_upd_ids   jsonb;
    v_new_n     integer;
    v_upd_n     integer;
    v_rel_cands jsonb;
    v_result    jsonb;
    v_related   jsonb;
BEGIN
    PERFORM trovesnap.begin_rpc('trovesnap_mcp');
    p := trovesnap.lookup_client(p_credential_hash);
    PERFORM trovesnap.check_write_meta(p_tool, p_tool_major, p_key, p_fingerprint, p_event);
    -- Input: the server has checked every rule; these are its invariants.
    IF jsonb_typeof(p_import) IS DISTINCT FROM 'object' THEN
        PERFORM trovesnap.fail('invalid_input:import', 'an object is required');
    END IF;
    IF coalesce(v_kind, '') NOT IN ('manual', 'csv') THEN
        PERFORM trovesnap.fail('invalid_input:kind', 'must be manual or csv');
    END IF;
    v_field := CASE v_kind WHEN 'csv' THEN 'csv_text' ELSE 'rows' END;
    IF coalesce(v_sale, '') !~ '^sale_[A-Za-z0-9]{1,40}$' THEN
        PERFORM trovesnap.fail('invalid_input:sale_id', 'required: the sale every row belongs to');
    END IF;
    v_n := CASE WHEN jsonb_typeof(v_rows) = 'array' THEN jsonb_array_length(v_rows) ELSE 0 END;
    IF v_n = 0 THEN
        PERFORM trovesnap.fail('invalid_input:' || v_field, 'no rows to import');
    END IF;
    IF v_n > 10000 THEN
        PERFORM trovesnap.fail('invalid_input:' || v_field, 'more than 10000 rows in one import');
    END IF;
    IF EXISTS (SELECT 1 FROM jsonb_array_elements(v_rows) r
               WHERE jsonb_typeof(r) IS DISTINCT FROM 'object'
                  OR coalesce(r ->> 'row', '') !~ '^[0-9]{1,9}$' OR jsonb_typeof(r -> 'valid') IS DISTINCT FROM 'boolean'
                  OR jsonb_typeof(r -> 'payload') IS DISTINCT FROM 'string' OR coalesce(r ->> 'payload', '') = ''
                  OR coalesce(r ->> 'kind', '') NOT IN ('new_item', 'status_update')
                  OR (r -> 'valid' = 'true' AND (jsonb_typeof(r -> 'candidate') IS DISTINCT FROM 'object'
                                                 OR coalesce(btrim(r -> 'candidate' ->> 'title'), '') = ''))
                  OR (r -> 'valid' = 'true' AND r ->> 'kind' = 'status_update'
                      AND (coalesce(r ->> 'item_id', '') !~ '^item_[A-Za-z0-9]{1,40}$'
                           OR coalesce(r ->> 'reported_status', '') <> ALL (trovesnap.reportable_statuses())))) THEN
        PERFORM trovesnap.fail('invalid_input:' || v_field, 'a row is malformed');
    END IF;
    SELECT count(*) FILTER (WHERE (r ->> 'valid')::boolean) INTO v_valid FROM jsonb_array_elements(v_rows) r;
    IF v_valid = 0 THEN
        PERFORM trovesnap.fail('invalid_input:' || v_field, 'no row is valid, so nothing was imported');
    END IF;
    IF v_valid < v_n AND NOT coalesce((p_import ->> 'skip_invalid_rows')::boolean, false) THEN
        PERFORM trovesnap.fail('invalid_input:' || v_field, 'some rows are invalid and nothing was imported');
    END IF;
    IF jsonb_typeof(coalesce(p_import -> 'mapping', '[]')) IS DISTINCT FROM 'array'
       OR jsonb_typeof(coalesce(p_import -> 'rejected_rows', '[]')) IS DISTINCT FROM 'array' THEN
        PERFORM trovesnap.fail('invalid_input:mapping', 'a list is required');
    END IF;
    IF v_hash IS NOT NULL AND v_hash !~ '^sha256:[0-9a-f]{64}$' THEN
        PERFORM trovesnap.fail('invalid_input:content_hash', 'not a sha256 hash');
    END IF;

    PERFORM set_config('trovesnap.tenant_id', p.tenant_id, true);
    v_replay := trovesnap.idem_replay(p, p_tool, p_tool_major, p_key, p_fingerprint, true);
    IF v_replay IS NOT NULL THEN
        RETURN v_replay;
    END IF;
    PERFORM trovesnap.require_active(p);
    PERFORM trovesnap.require_access(p, 'candidate_write', ARRAY['item.create_candidate']);
    PERFORM trovesnap.check_sale(p, v_sale);

    -- The items the status rows name, locked, as the server read them; and
    -- each valid status row about an item of this sale the caller sees.
    v_state := trovesnap.import_items(p, trovesnap.import_item_ids(v_rows), true);
    IF v_state IS DISTINCT FROM p_import -> 'targets' THEN
        PERFORM trovesnap.fail('stale_version', 'the items the import names changed while it was prepared');
    END IF;
    IF EXISTS (SELECT 1 FROM jsonb_array_elements(v_rows) r
               WHERE (r ->> 'valid')::boolean AND r ->> 'kind' = 'status_update'
                 AND (v_state -> 'items' -> (r ->> 'item_id') ->> 'sale_id') IS DISTINCT FROM v_sale) THEN
        PERFORM trovesnap.fail('invalid_input:' || v_field, 'a status row names an item outside the sale');
    END IF;

    -- Provenance: a csv_upload descriptor naming the client per file, the
    -- client's own descriptor for typed rows; the run and its details.
    IF v_kind = 'csv' THEN
        v_desc := trovesnap.new_id('source');
        INSERT INTO trovesnap.source_descriptors (id, tenant_id, kind, client_id, label, created_at)
        VALUES (v_desc, p.tenant_id, 'csv_upload', p.client_id, coalesce(nullif(v_label, ''), 'CSV upload'), v_now);
    ELSE
        v_desc := trovesnap.client_descriptor(p, v_now);
    END IF;
    v_run := trovesnap.new_id('run');
    v_status := CASE WHEN v_valid < v_n THEN 'completed_with_rejections' ELSE 'completed' END;
    INSERT INTO trovesnap.import_runs (id, tenant_id, source_descriptor_id, sale_id, kind, status, record_count, created_at)
    VALUES (v_run, p.tenant_id, v_desc, v_sale, v_kind, v_status, v_n, v_now);
    INSERT INTO trovesnap.import_run_details (import_run_id, tenant_id, source_label, content_sha256, content_bytes, mapping,
                                              rows_total, rows_rejected, created_by_client_id)
    VALUES (v_run, p.tenant_id, v_label, v_hash, greatest(coalesce((p_import ->> 'content_bytes')::integer, 0), 0),
            coalesce(p_import -> 'mapping', '[]'), v_n, v_n - v_valid, p.client_id);

    -- Records for every row, candidates for the valid ones, in row order.
    v_records := ARRAY(SELECT trovesnap.new_id('record') FROM generate_series(1, v_n));
    v_cands := ARRAY(SELECT CASE WHEN (a.r ->> 'valid')::boolean THEN trovesnap.new_id('candidate') END
                     FROM jsonb_array_elements(v_rows) WITH ORDINALITY AS a(r, n) ORDER BY a.n);
    INSERT INTO trovesnap.source_records (id, tenant_id, import_run_id, ordinal, payload_hash, payload, created_at)
    SELECT v_records[a.n], p.tenant_id, v_run, (a.r ->> 'row')::integer, trovesnap.payload_hash(a.r ->> 'payload'),
           a.r ->> 'payload', v_now
    FROM jsonb_array_elements(v_rows) WITH ORDINALITY AS a(r, n) ORDER BY a.n;
    INSERT INTO trovesnap.inventory_candidates (id, tenant_id, sale_id, kind, title, description, category, room, condition,
        quantity, supplied_price_cents, notes, review_status, source_descriptor_id, import_run_id, source_record_id,
        created_by_client_id, version, created_at)
    SELECT v_cands[a.n], p.tenant_id, v_sale, a.r ->> 'kind', a.r -> 'candidate' ->> 'title',
           coalesce(a.r -> 'candidate' ->> 'description', ''), coalesce(a.r -> 'candidate' ->> 'category', ''),
           coalesce(a.r -> 'candidate' ->> 'room', ''), coalesce(a.r -> 'candidate' ->> 'condition', ''),
           greatest(coalesce((a.r -> 'candidate' ->> 'quantity')::integer, 1), 1),
           CASE WHEN a.r ->> 'kind' = 'new_item' THEN (a.r -> 'candidate' ->> 'supplied_price_cents')::bigint END,
           coalesce(a.r -> 'candidate' ->> 'notes', ''), 'needs_review', v_desc, v_run, v_records[a.n], p.client_id, 1, v_now
    FROM jsonb_array_elements(v_rows) WITH ORDINALITY AS a(r, n)
    WHERE (a.r ->> 'valid')::boolean ORDER BY a.n;
    INSERT INTO trovesnap.candidate_item_changes (candidate_id, tenant_id, kind, item_id, observed_version, observed_status,
                                                  reported_status, effective_at, report_source)
    SELECT v_cands[a.n], p.tenant_id, 'status_update', i.id, i.version, i.status, a.r ->> 'reported_status',
           (a.r ->> 'effective_at')::timestamptz, 'spreadsheet'
    FROM jsonb_array_elements(v_rows) WITH ORDINALITY AS a(r, n)
    JOIN trovesnap.items i ON i.id = a.r ->> 'item_id'
    WHERE (a.r ->> 'valid')::boolean AND a.r ->> 'kind' = 'status_update' ORDER BY a.n;

    -- The result lists the first 500 candidates (counts are complete); the
    -- event names the run, and the first 100 records and candidates.
    SELECT coalesce(jsonb_agg(v.cand ORDER BY v.n) FILTER (WHERE v.kind = 'new_item' AND v.k <= 500), '[]'),
           coalesce(jsonb_agg(v.cand ORDER BY v.n) FILTER (WHERE v.kind = 'status_update' AND v.k <= 500), '[]'),
           count(*) FILTER (WHERE v.kind = 'new_item'), count(*) FILTER (WHERE v.kind = 'status_update'),
           coalesce(jsonb_agg(v.cand ORDER BY v.n) FILTER (WHERE v.k <= 100), '[]')
    INTO v_new_ids, v_upd_ids, v_new_n, v_upd_n, v_rel_cands
    FROM (SELECT a.n, a.r ->> 'kind' AS kind, v_cands[a.n] AS cand, row_number() OVER (ORDER BY a.n) AS k
          FROM jsonb_array_elements(v_rows) WITH ORDINALITY AS a(r, n)
          WHERE (a.r ->> 'valid')::boolean) v;
    v_result := jsonb_build_object('import_run_id', v_run, 'source_descriptor_id', v_desc, 'sale_id', v_sale,
        'status', v_status, 'source_record_count', v_n, 'candidate_count', v_new_n,
        'status_update_candidate_count', v_upd_n, 'candidate_ids', v_new_ids, 'status_update_candidate_ids', v_upd_ids,
        'ids_truncated', v_valid > 500, 'rejected_row_count', v_n - v_valid,
        'rejected_rows', coalesce(p_import -> 'rejected_rows', '[]'));
    v_related := trovesnap.empty_related() || jsonb_build_object('source_import_run_ids', jsonb_build_array(v_run),
        'source_import_record_ids', to_jsonb(v_records[1:100]), 'candidate_ids', v_rel_cands);
    RETURN trovesnap.finish_write(p, p_tool, p_tool_major, p_key, p_fingerprint, p_event, p_started_at, v_result, v_related);
END
$$;

-- mcp_create_status_report as in migration 9; what a report may claim
-- from reportable_statuses.
CREATE OR REPLACE FUNCTION public.mcp_create_status_report(p_credential_hash text, p_tool text, p_tool_major integer, p_key text,
                                                p_fingerprint text, p_event jsonb, p_started_at timestamptz,
                                                p_report jsonb) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    p         trovesnap.principal;
    v_now     timestamptz := now();
    v_replay  jsonb;
    v_item    text := p_report ->> 'item_id';
    v_claim   text := p_report ->> 'reported_status';
    v_source  text := p_report ->> 'source';
    v_notes   text := coalesce(p_report ->> 'notes', '');
    v_payload text := p_report ->> 'payload';
    v_at      timestamptz;
    v_chain   text[];
    v_cand    text := trovesnap.new_id('candidate');
    i         trovesnap.items;
    v_result  jsonb;
    v_related jsonb;
BEGIN
    PERFORM trovesnap.begin_rpc('trovesnap_mcp');
    p := trovesnap.lookup_client(p_credential_hash);
    PERFORM trovesnap.check_write_meta(p_tool, p_tool_major, p_key, p_fingerprint, p_event);
    IF jsonb_typeof(p_report) IS DISTINCT FROM 'object' THEN
        PERFORM trovesnap.fail('invalid_input:input', 'an object is required');
    END IF;
    IF coalesce(v_item, '') !~ '^item_[A-Za-z0-9]{1,40}$' THEN
        PERFORM trovesnap.fail('invalid_input:item_id', 'required: the item whose status was reported');
    END IF;
    IF coalesce(v_claim, '') <> ALL (trovesnap.reportable_statuses()) THEN
        PERFORM trovesnap.fail('invalid_input:reported_status', 'must be one of ' || array_to_string(trovesnap.reportable_statuses(), ', '));
    END IF;
    BEGIN
        v_at := (p_report ->> 'effective_at')::timestamptz;
    EXCEPTION WHEN others THEN
        v_at := NULL;
    END;
    IF v_at IS NULL OR v_at < '0002-01-01T00:00:00Z'::timestamptz THEN
        PERFORM trovesnap.fail('invalid_input:effective_at', 'required');
    END IF;
    IF coalesce(btrim(v_source), '') = '' THEN
        PERFORM trovesnap.fail('invalid_input:source', 'required');
    END IF;
    IF char_length(v_notes) > 4000 THEN
        PERFORM trovesnap.fail('invalid_input:notes', 'longer than 4000 characters');
    END IF;
    IF coalesce(v_payload, '') = '' THEN
        PERFORM trovesnap.fail('invalid_input:input', 'the report''s source record is required');
    END IF;

    PERFORM set_config('trovesnap.tenant_id', p.tenant_id, true);
    v_replay := trovesnap.idem_replay(p, p_tool, p_tool_major, p_key, p_fingerprint, true);
    IF v_replay IS NOT NULL THEN
        RETURN v_replay;
    END IF;
    PERFORM trovesnap.require_active(p);
    PERFORM trovesnap.require_access(p, 'candidate_write', ARRAY['item.create_candidate']);
    PERFORM trovesnap.check_ref('items', 'item_id', v_item);
    SELECT * INTO i FROM trovesnap.items it WHERE it.id = v_item FOR SHARE;
    PERFORM trovesnap.require_assigned(p, i.sale_id, 'item', i.id);

    v_chain := trovesnap.single_record_run(p, i.sale_id, 'mcp_status_report', v_payload, v_now);
    INSERT INTO trovesnap.inventory_candidates (id, tenant_id, sale_id, kind, title, description, category, room, condition,
        quantity, supplied_price_cents, notes, review_status, source_descriptor_id, import_run_id, source_record_id,
        created_by_client_id, version, created_at)
    VALUES (v_cand, p.tenant_id, i.sale_id, 'status_update', 'Reported ' || v_claim || ': ' || i.id, '', '', '', '', 1, NULL,
            v_notes, 'needs_review', v_chain[1], v_chain[2], v_chain[3], p.client_id, 1, v_now);
    INSERT INTO trovesnap.candidate_item_changes (candidate_id, tenant_id, kind, item_id, observed_version, observed_status,
                                                  reported_status, effective_at, report_source)
    VALUES (v_cand, p.tenant_id, 'status_update', i.id, i.version, i.status, v_claim, v_at, v_source);

    v_result := jsonb_build_object('candidate_id', v_cand, 'kind', 'status_update', 'item_id', i.id, 'sale_id', i.sale_id,
        'reported_status', v_claim, 'review_status', 'needs_review', 'import_run_id', v_chain[2],
        'source_record_id', v_chain[3], 'observed_item_status', i.status, 'observed_item_version', i.version);
    v_related := trovesnap.empty_related() || jsonb_build_object('source_import_run_ids', jsonb_build_array(v_chain[2]),
        'source_import_record_ids', jsonb_build_array(v_chain[3]), 'candidate_ids', jsonb_build_array(v_cand),
        'item_ids', jsonb_build_array(i.id));
    RETURN trovesnap.finish_write(p, p_tool, p_tool_major, p_key, p_fingerprint, p_event, p_started_at, v_result, v_related);
END
$$;

-- seller_validate_policy as in migration 22; the most items per run from
-- broad_bulk_limit (§18.2).
CREATE OR REPLACE FUNCTION trovesnap.seller_validate_policy(p_policy jsonb) RETURNS void
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_tools  jsonb := p_policy -> 'allowed_tools';
    v_sales  jsonb := p_policy -> 'scope' -> 'estate_sale_ids';
    v_fields jsonb := p_policy -> 'conditions' -> 'permitted_fields';
    v_max    numeric;
    v_daily  numeric;
    v_cost   numeric;
    v        text;
BEGIN
    IF jsonb_typeof(p_policy) IS DISTINCT FROM 'object' THEN
        PERFORM trovesnap.fail('invalid_input:policy', 'an object is required');
    END IF;
    IF coalesce(p_policy ->> 'name', '') = '' OR length(p_policy ->> 'name') > 100 THEN
        PERFORM trovesnap.fail('invalid_input:name', 'required, at most 100 characters');
    END IF;
    IF jsonb_typeof(v_tools) IS DISTINCT FROM 'array' OR jsonb_array_length(v_tools) = 0 THEN
        PERFORM trovesnap.fail('invalid_input:allowed_tools', 'name at least one controlled tool');
    END IF;
    IF jsonb_typeof(v_sales) IS DISTINCT FROM 'array' OR jsonb_array_length(v_sales) = 0 THEN
        PERFORM trovesnap.fail('invalid_input:scope.estate_sale_ids', 'a policy must be scoped to named sales');
    END IF;
    IF jsonb_typeof(p_policy -> 'conditions' -> 'maximum_items_per_run') IS DISTINCT FROM 'number' THEN
        PERFORM trovesnap.fail('invalid_input:conditions.maximum_items_per_run', format('between 1 and %s', trovesnap.broad_bulk_limit()));
    END IF;
    v_max := (p_policy -> 'conditions' ->> 'maximum_items_per_run')::numeric;
    IF v_max < 1 OR v_max > trovesnap.broad_bulk_limit() OR v_max <> trunc(v_max) THEN
        PERFORM trovesnap.fail('invalid_input:conditions.maximum_items_per_run', format('between 1 and %s', trovesnap.broad_bulk_limit()));
    END IF;
    IF jsonb_typeof(v_fields) IS DISTINCT FROM 'array' OR jsonb_array_length(v_fields) = 0 THEN
        PERFORM trovesnap.fail('invalid_input:conditions.permitted_fields', 'name the fields the policy may change');
    END IF;
    IF jsonb_typeof(p_policy -> 'limits' -> 'maximum_daily_actions') IS DISTINCT FROM 'number' THEN
        PERFORM trovesnap.fail('invalid_input:limits.maximum_daily_actions', 'at least 1');
    END IF;
    v_daily := (p_policy -> 'limits' ->> 'maximum_daily_actions')::numeric;
    IF v_daily < 1 OR v_daily <> trunc(v_daily) THEN
        PERFORM trovesnap.fail('invalid_input:limits.maximum_daily_actions', 'at least 1');
    END IF;
    IF jsonb_typeof(p_policy -> 'conditions' -> 'require_no_conflicts') NOT IN ('boolean', 'null') THEN
        PERFORM trovesnap.fail('invalid_input:conditions.require_no_conflicts', 'true or false');
    END IF;
    IF jsonb_typeof(p_policy -> 'limits' -> 'maximum_cost_usd_per_day') NOT IN ('number', 'null') THEN
        PERFORM trovesnap.fail('invalid_input:limits.maximum_cost_usd_per_day', 'policies never authorise paid work: must be 0');
    END IF;
    v_cost := coalesce((p_policy -> 'limits' ->> 'maximum_cost_usd_per_day')::numeric, 0);
    IF v_cost <> 0 THEN
        PERFORM trovesnap.fail('invalid_input:limits.maximum_cost_usd_per_day', 'policies never authorise paid work: must be 0');
    END IF;
    FOR v IN SELECT x FROM jsonb_array_elements_text(v_tools) x
    LOOP
        IF NOT trovesnap.policy_may(v) THEN
            PERFORM trovesnap.fail('invalid_input:allowed_tools', left(v, 60) || ' can never be authorised by a policy');
        END IF;
    END LOOP;
    FOR v IN SELECT x FROM jsonb_array_elements_text(v_sales) x
    LOOP
        IF v !~ '^sale_[A-Za-z0-9]{1,40}$' THEN
            PERFORM trovesnap.fail('invalid_input:scope.estate_sale_ids', 'malformed sale id');
        END IF;
    END LOOP;
    FOR v IN SELECT x FROM jsonb_array_elements_text(v_fields) x
    LOOP
        IF v = '' OR length(v) > 100 THEN
            PERFORM trovesnap.fail('invalid_input:conditions.permitted_fields', 'a field name of at most 100 characters');
        END IF;
    END LOOP;
END
$$;

-- The status CHECKs of the tables name the generated lists. Each is added
-- NOT VALID and then validated, so the new definition is checked against
-- every existing row without holding the table's exclusive lock for the scan.
ALTER TABLE trovesnap.candidate_item_changes DROP CONSTRAINT candidate_item_changes_reported_status_check,
    ADD CONSTRAINT candidate_item_changes_reported_status_check
        CHECK (reported_status IS NULL OR reported_status = ANY (trovesnap.reportable_statuses())) NOT VALID;
ALTER TABLE trovesnap.candidate_item_changes VALIDATE CONSTRAINT candidate_item_changes_reported_status_check;
ALTER TABLE trovesnap.item_status_events DROP CONSTRAINT item_status_events_source_type_check,
    ADD CONSTRAINT item_status_events_source_type_check CHECK (source_type = ANY (trovesnap.status_sources())) NOT VALID;
ALTER TABLE trovesnap.item_status_events VALIDATE CONSTRAINT item_status_events_source_type_check;
ALTER TABLE trovesnap.approval_grants DROP CONSTRAINT approval_grants_status_check,
    ADD CONSTRAINT approval_grants_status_check CHECK (status = ANY (trovesnap.grant_statuses())) NOT VALID,
    DROP CONSTRAINT approval_grants_issuer_type_check,
    ADD CONSTRAINT approval_grants_issuer_type_check CHECK (issuer_type = ANY (trovesnap.grant_issuers())) NOT VALID;
ALTER TABLE trovesnap.approval_grants VALIDATE CONSTRAINT approval_grants_status_check;
ALTER TABLE trovesnap.approval_grants VALIDATE CONSTRAINT approval_grants_issuer_type_check;
ALTER TABLE trovesnap.automation_policies DROP CONSTRAINT automation_policies_status_check,
    ADD CONSTRAINT automation_policies_status_check CHECK (status = ANY (trovesnap.policy_statuses())) NOT VALID;
ALTER TABLE trovesnap.automation_policies VALIDATE CONSTRAINT automation_policies_status_check;
ALTER TABLE trovesnap.mcp_clients DROP CONSTRAINT mcp_clients_status_check,
    ADD CONSTRAINT mcp_clients_status_check CHECK (status = ANY (trovesnap.client_statuses())) NOT VALID;
ALTER TABLE trovesnap.mcp_clients VALIDATE CONSTRAINT mcp_clients_status_check;
ALTER TABLE trovesnap.inventory_candidates DROP CONSTRAINT inventory_candidates_review_status_check,
    ADD CONSTRAINT inventory_candidates_review_status_check CHECK (review_status = ANY (trovesnap.review_statuses())) NOT VALID;
ALTER TABLE trovesnap.inventory_candidates VALIDATE CONSTRAINT inventory_candidates_review_status_check;
ALTER TABLE trovesnap.label_batches DROP CONSTRAINT label_batches_status_check,
    ADD CONSTRAINT label_batches_status_check CHECK (status = ANY (trovesnap.label_batch_statuses())) NOT VALID;
ALTER TABLE trovesnap.label_batches VALIDATE CONSTRAINT label_batches_status_check;

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (24, '20261201121100_trovesnap_status_rules_callers');

RESET ROLE;
