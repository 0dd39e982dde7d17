-- DEVELOPMENT AND TESTS ONLY. Never part of supabase/migrations, so
-- `supabase db push` never installs it in a real project.
--
-- mcp_seed_fixtures(dataset, credentials) empties every trovesnap table
-- (plugin_events included, whose append-only triggers it disables for the
-- duration of its own transaction) and inserts a domain.Dataset (the JSON of
-- fixtures.Dataset()). credentials maps client ids to credential hashes,
-- which the dataset's JSON never carries. Only trovesnap_admin may call it.

SET ROLE trovesnap_owner;

CREATE OR REPLACE FUNCTION public.mcp_seed_fixtures(p_dataset jsonb, p_credentials jsonb DEFAULT '{}') RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    e  jsonb;
    ph jsonb;
    s  text;
BEGIN
    PERFORM trovesnap.begin_rpc('trovesnap_admin');
    PERFORM set_config('trovesnap.system', 'on', true);
    FOREACH s IN ARRAY ARRAY['plugin_events', 'item_price_history', 'proposals', 'approval_grants',
        'automation_policy_versions', 'policy_uses', 'item_provenance', 'item_status_events',
        'item_change_history', 'item_dispositions', 'outbound_requests', 'checkout_scans']
    LOOP
        EXECUTE format('ALTER TABLE trovesnap.%I DISABLE TRIGGER USER', s);
    END LOOP;
    TRUNCATE trovesnap.qr_labels, trovesnap.label_batches, trovesnap.search_keys, trovesnap.checkout_scans,
             trovesnap.item_status_events, trovesnap.item_provenance, trovesnap.policy_uses,
             trovesnap.automation_policy_versions, trovesnap.automation_policies, trovesnap.approval_grants,
             trovesnap.outbound_requests, trovesnap.item_dispositions, trovesnap.item_change_history, trovesnap.proposals,
             trovesnap.export_draft_items, trovesnap.export_drafts, trovesnap.draft_revisions, trovesnap.candidate_item_changes, trovesnap.import_run_details,
             trovesnap.candidate_media, trovesnap.source_assets,
             trovesnap.plugin_events, trovesnap.idempotency_keys, trovesnap.rate_counters, trovesnap.mcp_limits,
             trovesnap.demand_signals, trovesnap.inventory_candidates, trovesnap.source_records, trovesnap.import_runs,
             trovesnap.source_descriptors, trovesnap.item_price_history, trovesnap.item_photos, trovesnap.items,
             trovesnap.membership_sales, trovesnap.estate_sales, trovesnap.mcp_clients, trovesnap.memberships,
             trovesnap.tenant_usage, trovesnap.users, trovesnap.tenants;
    FOREACH s IN ARRAY ARRAY['plugin_events', 'item_price_history', 'proposals', 'approval_grants',
        'automation_policy_versions', 'policy_uses', 'item_provenance', 'item_status_events',
        'item_change_history', 'item_dispositions', 'outbound_requests', 'checkout_scans']
    LOOP
        EXECUTE format('ALTER TABLE trovesnap.%I ENABLE TRIGGER USER', s);
    END LOOP;

    INSERT INTO trovesnap.tenants (id, name)
    SELECT x ->> 'id', x ->> 'name' FROM jsonb_array_elements(coalesce(p_dataset -> 'tenants', '[]')) x;
    -- auth_subject: the Supabase Auth user id a seller signs in as; in
    -- development a UUID derived from the user id (pgtest.AuthSubject).
    INSERT INTO trovesnap.users (id, display_name, email, auth_subject)
    SELECT x ->> 'id', coalesce(x ->> 'display_name', ''), coalesce(x ->> 'email', ''),
        md5('trovesnap-user:' || (x ->> 'id'))::uuid::text
    FROM jsonb_array_elements(coalesce(p_dataset -> 'users', '[]')) x;
    INSERT INTO trovesnap.memberships (id, tenant_id, user_id, role)
    SELECT x ->> 'id', x ->> 'tenant_id', x ->> 'user_id', x ->> 'role'
    FROM jsonb_array_elements(coalesce(p_dataset -> 'memberships', '[]')) x;
    INSERT INTO trovesnap.mcp_clients (id, tenant_id, source_connection_id, name, client_type, status, actor_id,
        allowed_tool_groups, approval_policy_ids, trust_level, risk_class, demo, created_by, created_at, credential_hash)
    SELECT x ->> 'id', x ->> 'tenant_id', coalesce(x ->> 'source_connection_id', ''), x ->> 'name', x ->> 'client_type',
        x ->> 'status', x ->> 'actor_id',
        ARRAY(SELECT jsonb_array_elements_text(coalesce(x -> 'allowed_tool_groups', '[]'))),
        ARRAY(SELECT jsonb_array_elements_text(coalesce(nullif(x -> 'approval_policy_ids', 'null'), '[]'))),
        coalesce(nullif(x ->> 'trust_level', ''), 'standard_client'), coalesce(nullif(x ->> 'risk_class', ''), 'standard'),
        coalesce((x ->> 'demo')::boolean, false), coalesce(x ->> 'created_by', ''), (x ->> 'created_at')::timestamptz,
        nullif(p_credentials ->> (x ->> 'id'), '')
    FROM jsonb_array_elements(coalesce(p_dataset -> 'clients', '[]')) x;
    -- Sales, then items, each in dataset order: the order their search keys
    -- are recorded in (migration 5's triggers), as in the store.
    INSERT INTO trovesnap.estate_sales (id, tenant_id, title, status, visibility, city, region, postal_code, street_address,
        address_policy, address_reveal_at, starts_at, ends_at, version, created_at, updated_at)
    SELECT x ->> 'id', x ->> 'tenant_id', x ->> 'title', x ->> 'status', x ->> 'visibility', coalesce(x ->> 'city', ''),
        coalesce(x ->> 'region', ''), coalesce(x ->> 'postal_code', ''), coalesce(x ->> 'street_address', ''),
        x ->> 'address_policy', (x ->> 'address_reveal_at')::timestamptz, (x ->> 'starts_at')::timestamptz,
        (x ->> 'ends_at')::timestamptz, greatest(coalesce((x ->> 'version')::integer, 1), 1),
        (x ->> 'created_at')::timestamptz, (x ->> 'updated_at')::timestamptz
    FROM jsonb_array_elements(coalesce(p_dataset -> 'sales', '[]')) WITH ORDINALITY AS a(x, n) ORDER BY n;
    FOR e IN SELECT * FROM jsonb_array_elements(coalesce(p_dataset -> 'sale_scopes', '[]'))
    LOOP
        UPDATE trovesnap.memberships SET sale_scoped = true WHERE id = e ->> 'membership_id' AND tenant_id = e ->> 'tenant_id';
        FOR s IN SELECT jsonb_array_elements_text(coalesce(e -> 'sale_ids', '[]'))
        LOOP
            INSERT INTO trovesnap.membership_sales (membership_id, tenant_id, sale_id)
            VALUES (e ->> 'membership_id', e ->> 'tenant_id', s);
        END LOOP;
    END LOOP;
    INSERT INTO trovesnap.items (id, tenant_id, sale_id, title, description, category, room, status, price_cents,
        internal_price_guidance_cents, cost_basis_cents, appraisal_flag, staff_notes, qr_code, version, created_at, updated_at)
    SELECT x ->> 'id', x ->> 'tenant_id', x ->> 'sale_id', x ->> 'title', coalesce(x ->> 'description', ''),
        coalesce(x ->> 'category', ''), coalesce(x ->> 'room', ''), x ->> 'status', (x ->> 'price_cents')::bigint,
        (x ->> 'internal_price_guidance_cents')::bigint, (x ->> 'cost_basis_cents')::bigint,
        coalesce((x ->> 'appraisal_flag')::boolean, false), coalesce(x ->> 'staff_notes', ''), coalesce(x ->> 'qr_code', ''),
        greatest(coalesce((x ->> 'version')::integer, 1), 1), (x ->> 'created_at')::timestamptz, (x ->> 'updated_at')::timestamptz
    FROM jsonb_array_elements(coalesce(p_dataset -> 'items', '[]')) WITH ORDINALITY AS a(x, n) ORDER BY n;
    FOR e IN SELECT * FROM jsonb_array_elements(coalesce(p_dataset -> 'items', '[]'))
    LOOP
        FOR ph IN SELECT * FROM jsonb_array_elements(coalesce(nullif(e -> 'photos', 'null'), '[]'))
        LOOP
            INSERT INTO trovesnap.item_photos (id, tenant_id, item_id, storage_key, width, height, position, published)
            VALUES (ph ->> 'id', e ->> 'tenant_id', coalesce(nullif(ph ->> 'item_id', ''), e ->> 'id'), ph ->> 'storage_key',
                coalesce((ph ->> 'width')::integer, 0), coalesce((ph ->> 'height')::integer, 0),
                coalesce((ph ->> 'position')::integer, 0), coalesce((ph ->> 'published')::boolean, false));
        END LOOP;
    END LOOP;
    INSERT INTO trovesnap.item_price_history (id, tenant_id, item_id, price_cents, internal_price_guidance_cents, reason,
        actor_id, proposal_id, changed_at)
    SELECT x ->> 'id', x ->> 'tenant_id', x ->> 'item_id', (x ->> 'price_cents')::bigint,
        (x ->> 'internal_price_guidance_cents')::bigint, coalesce(x ->> 'reason', ''), coalesce(x ->> 'actor_id', ''),
        coalesce(x ->> 'proposal_id', ''), (x ->> 'changed_at')::timestamptz
    FROM jsonb_array_elements(coalesce(p_dataset -> 'price_changes', '[]')) x;
    INSERT INTO trovesnap.source_descriptors (id, tenant_id, kind, client_id, label, created_at)
    SELECT x ->> 'id', x ->> 'tenant_id', x ->> 'kind', nullif(x ->> 'client_id', ''), coalesce(x ->> 'label', ''),
        (x ->> 'created_at')::timestamptz
    FROM jsonb_array_elements(coalesce(p_dataset -> 'source_descriptors', '[]')) x;
    INSERT INTO trovesnap.import_runs (id, tenant_id, source_descriptor_id, sale_id, kind, status, record_count, created_at)
    SELECT x ->> 'id', x ->> 'tenant_id', x ->> 'source_descriptor_id', nullif(x ->> 'sale_id', ''), x ->> 'kind',
        x ->> 'status', coalesce((x ->> 'record_count')::integer, 0), (x ->> 'created_at')::timestamptz
    FROM jsonb_array_elements(coalesce(p_dataset -> 'import_runs', '[]')) x;
    INSERT INTO trovesnap.source_records (id, tenant_id, import_run_id, ordinal, payload_hash, payload, created_at)
    SELECT x ->> 'id', x ->> 'tenant_id', x ->> 'import_run_id', coalesce((x ->> 'ordinal')::integer, 0),
        coalesce(x ->> 'payload_hash', ''), coalesce(x ->> 'payload', ''), (x ->> 'created_at')::timestamptz
    FROM jsonb_array_elements(coalesce(p_dataset -> 'source_records', '[]')) x;
    INSERT INTO trovesnap.inventory_candidates (id, tenant_id, sale_id, kind, title, description, category, room, condition,
        quantity, supplied_price_cents, notes, review_status, source_descriptor_id, import_run_id, source_record_id,
        created_by_client_id, version, created_at)
    SELECT x ->> 'id', x ->> 'tenant_id', x ->> 'sale_id', x ->> 'kind', x ->> 'title', coalesce(x ->> 'description', ''),
        coalesce(x ->> 'category', ''), coalesce(x ->> 'room', ''), coalesce(x ->> 'condition', ''),
        greatest(coalesce((x ->> 'quantity')::integer, 1), 1), (x ->> 'supplied_price_cents')::bigint,
        coalesce(x ->> 'notes', ''), x ->> 'review_status', nullif(x ->> 'source_descriptor_id', ''),
        nullif(x ->> 'import_run_id', ''), nullif(x ->> 'source_record_id', ''), nullif(x ->> 'created_by_client_id', ''),
        greatest(coalesce((x ->> 'version')::integer, 1), 1), (x ->> 'created_at')::timestamptz
    FROM jsonb_array_elements(coalesce(p_dataset -> 'candidates', '[]')) x;
    INSERT INTO trovesnap.demand_signals (tenant_id, sale_id, category, saves, searches, follows, window_start, window_end)
    SELECT x ->> 'tenant_id', nullif(x ->> 'sale_id', ''), x ->> 'category', coalesce((x ->> 'saves')::integer, 0),
        coalesce((x ->> 'searches')::integer, 0), coalesce((x ->> 'follows')::integer, 0),
        (x ->> 'window_start')::timestamptz, (x ->> 'window_end')::timestamptz
    FROM jsonb_array_elements(coalesce(p_dataset -> 'demand_signals', '[]')) x;
    -- The read tools' records (store/reads_seed.go): status history, QR
    -- label batches and their codes.
    INSERT INTO trovesnap.item_status_events (id, tenant_id, item_id, sale_id, from_status, to_status, effective_at,
        source_type, actor_id, proposal_id, recorded_at)
    SELECT x ->> 'id', x ->> 'tenant_id', x ->> 'item_id', x ->> 'sale_id', x ->> 'from_status', x ->> 'to_status',
        (x ->> 'effective_at')::timestamptz, x ->> 'source_type', coalesce(x ->> 'actor_id', ''),
        coalesce(x ->> 'proposal_id', ''), (x ->> 'recorded_at')::timestamptz
    FROM jsonb_array_elements(coalesce(nullif(p_dataset -> 'status_events', 'null'), '[]')) x;
    INSERT INTO trovesnap.label_batches (id, tenant_id, sale_id, status, created_at, printed_at)
    SELECT x ->> 'id', x ->> 'tenant_id', x ->> 'sale_id', x ->> 'status', (x ->> 'created_at')::timestamptz,
        (x ->> 'printed_at')::timestamptz
    FROM jsonb_array_elements(coalesce(nullif(p_dataset -> 'label_batches', 'null'), '[]')) x;
    INSERT INTO trovesnap.qr_labels (code, tenant_id, batch_id, ordinal)
    SELECT c.code, x ->> 'tenant_id', x ->> 'id', c.n
    FROM jsonb_array_elements(coalesce(nullif(p_dataset -> 'label_batches', 'null'), '[]')) x,
         jsonb_array_elements_text(coalesce(nullif(x -> 'codes', 'null'), '[]')) WITH ORDINALITY AS c(code, n);

    RETURN jsonb_build_object('tenants', (SELECT count(*) FROM trovesnap.tenants),
                              'items', (SELECT count(*) FROM trovesnap.items),
                              'candidates', (SELECT count(*) FROM trovesnap.inventory_candidates));
END
$$;

REVOKE ALL ON FUNCTION public.mcp_seed_fixtures(jsonb, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION public.mcp_seed_fixtures(jsonb, jsonb) TO trovesnap_admin;

RESET ROLE;
