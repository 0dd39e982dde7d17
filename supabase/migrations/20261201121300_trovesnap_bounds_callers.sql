-- trovesnap live mode, migration 26: seller_validate_policy reads the
-- policy name bound, and mcp_run_import the import row bound and the
-- lengths of its id lists, from the lookups generated from internal/domain
-- (migration 25, internal/sqlgen), so each number is written once, in Go.
-- Each function is its latest body with only that change.

SET ROLE trovesnap_owner;

-- seller_validate_policy as in migration 24; the name bound from
-- policy_name_max.
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
    IF coalesce(p_policy ->> 'name', '') = '' OR length(p_policy ->> 'name') > trovesnap.policy_name_max() THEN
        PERFORM trovesnap.fail('invalid_input:name', format('required, at most %s characters', trovesnap.policy_name_max()));
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

-- mcp_run_import as in migration 24; the row bound and the lengths of the
-- id lists from max_import_rows, max_listed_ids and max_related_ids.
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
    IF v_n > trovesnap.max_import_rows() THEN
        PERFORM trovesnap.fail('invalid_input:' || v_field, format('more than %s rows in one import', trovesnap.max_import_rows()));
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

    -- The result lists the first max_listed_ids candidates (counts are
    -- complete); the event names the run, and the first max_related_ids
    -- records and candidates.
    SELECT coalesce(jsonb_agg(v.cand ORDER BY v.n) FILTER (WHERE v.kind = 'new_item' AND v.k <= trovesnap.max_listed_ids()), '[]'),
           coalesce(jsonb_agg(v.cand ORDER BY v.n) FILTER (WHERE v.kind = 'status_update' AND v.k <= trovesnap.max_listed_ids()), '[]'),
           count(*) FILTER (WHERE v.kind = 'new_item'), count(*) FILTER (WHERE v.kind = 'status_update'),
           coalesce(jsonb_agg(v.cand ORDER BY v.n) FILTER (WHERE v.k <= trovesnap.max_related_ids()), '[]')
    INTO v_new_ids, v_upd_ids, v_new_n, v_upd_n, v_rel_cands
    FROM (SELECT a.n, a.r ->> 'kind' AS kind, v_cands[a.n] AS cand, row_number() OVER (ORDER BY a.n) AS k
          FROM jsonb_array_elements(v_rows) WITH ORDINALITY AS a(r, n)
          WHERE (a.r ->> 'valid')::boolean) v;
    v_result := jsonb_build_object('import_run_id', v_run, 'source_descriptor_id', v_desc, 'sale_id', v_sale,
        'status', v_status, 'source_record_count', v_n, 'candidate_count', v_new_n,
        'status_update_candidate_count', v_upd_n, 'candidate_ids', v_new_ids, 'status_update_candidate_ids', v_upd_ids,
        'ids_truncated', v_valid > trovesnap.max_listed_ids(), 'rejected_row_count', v_n - v_valid,
        'rejected_rows', coalesce(p_import -> 'rejected_rows', '[]'));
    v_related := trovesnap.empty_related() || jsonb_build_object('source_import_run_ids', jsonb_build_array(v_run),
        'source_import_record_ids', to_jsonb(v_records[1:trovesnap.max_related_ids()]), 'candidate_ids', v_rel_cands);
    RETURN trovesnap.finish_write(p, p_tool, p_tool_major, p_key, p_fingerprint, p_event, p_started_at, v_result, v_related);
END
$$;

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (26, '20261201121300_trovesnap_bounds_callers');

RESET ROLE;
