-- Migration 41: candidates are reviewed (issue 16, part 3; spec §4.7: a
-- candidate is rejected, never deleted). trove_review_candidate rejects a
-- candidate awaiting review, marks it a duplicate of another candidate or
-- of an item, or reopens a rejected or duplicate one, through
-- mcp_review_candidate: a candidate-tier write (class candidate_writes),
-- idempotent, audited by its own plugin_event, that changes the candidate's
-- row only and never an item.
--
-- The rule is Go's domain.CheckCandidateReview, checked here in its order:
-- the review's shape (CandidateReview.Validate), the caller may write
-- candidates, the candidate is the caller's tenant's and in a sale it may
-- see, at the expected version; the step is one of candidate_review_to
-- (generated from domain.CandidateReviewSteps: reject and mark_duplicate
-- from needs_review, reopen from rejected or duplicate); a duplicate's
-- target is the tenant's, in a sale the caller may see, and either a
-- candidate of the same kind that is not closed by review itself (no
-- chains: candidate_review_to('reopen', its status) is NULL), or an item,
-- for a new_item candidate only. The contract suite's review cases
-- (internal/contract/suite_review.go) run the same table on both backends.
--
-- The review status 'duplicate' joins review_statuses() in the generated
-- migration that follows (the CHECK calls it, migration 13); it is not
-- open (candidate_is_open), so the quota trigger lowers open_candidates on
-- a review and raises it on a reopen, refused over the quota.
--
-- candidate_json carries the new columns, so mcp_list_candidates,
-- mcp_get_candidate and mcp_proposal_state return them unchanged
-- otherwise; mcp_get_import_run counts a run's duplicates too.

SET ROLE trovesnap_owner;

ALTER TABLE trovesnap.inventory_candidates
    ADD COLUMN duplicate_of_candidate_id text COLLATE "C",
    ADD COLUMN duplicate_of_item_id text COLLATE "C",
    ADD COLUMN review_reason text NOT NULL DEFAULT '' CHECK (char_length(review_reason) <= 1000),
    ADD CONSTRAINT inventory_candidates_duplicate_of CHECK (CASE WHEN review_status = 'duplicate'
        THEN (duplicate_of_candidate_id IS NULL) <> (duplicate_of_item_id IS NULL)
        ELSE duplicate_of_candidate_id IS NULL AND duplicate_of_item_id IS NULL END),
    ADD CONSTRAINT inventory_candidates_not_own_duplicate CHECK (duplicate_of_candidate_id <> id),
    ADD CONSTRAINT inventory_candidates_duplicate_candidate FOREIGN KEY (tenant_id, duplicate_of_candidate_id)
        REFERENCES trovesnap.inventory_candidates (tenant_id, id),
    ADD CONSTRAINT inventory_candidates_duplicate_item FOREIGN KEY (tenant_id, duplicate_of_item_id)
        REFERENCES trovesnap.items (tenant_id, id);

CREATE OR REPLACE FUNCTION trovesnap.candidate_json(c trovesnap.inventory_candidates) RETURNS jsonb
    LANGUAGE sql STABLE
    AS $$
        SELECT jsonb_build_object('id', c.id, 'tenant_id', c.tenant_id, 'sale_id', c.sale_id, 'kind', c.kind,
            'title', c.title, 'description', c.description, 'category', c.category, 'room', c.room,
            'condition', c.condition, 'quantity', c.quantity, 'supplied_price_cents', c.supplied_price_cents,
            'notes', c.notes, 'review_status', c.review_status,
            'duplicate_of_candidate_id', coalesce(c.duplicate_of_candidate_id, ''),
            'duplicate_of_item_id', coalesce(c.duplicate_of_item_id, ''), 'review_reason', c.review_reason,
            'source_descriptor_id', coalesce(c.source_descriptor_id, ''), 'import_run_id', coalesce(c.import_run_id, ''),
            'source_record_id', coalesce(c.source_record_id, ''), 'created_by_client_id', coalesce(c.created_by_client_id, ''),
            'version', c.version, 'created_at', trovesnap.ts(c.created_at))
    $$;

-- mcp_get_import_run (migration 5, moved into trovesnap by migration 29;
-- same signature, so its wrapper stays) plus the run's duplicate
-- candidates in its counts.
CREATE OR REPLACE FUNCTION trovesnap.mcp_get_import_run(p_credential_hash text, p_run_id text, p_limit integer DEFAULT NULL,
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
                'promoted', count(*) FILTER (WHERE c.review_status = 'promoted'),
                'duplicate', count(*) FILTER (WHERE c.review_status = 'duplicate'))
            FROM trovesnap.inventory_candidates c WHERE c.tenant_id = r.tenant_id AND c.import_run_id = r.id),
        'records', (SELECT coalesce(jsonb_agg((e - 'k') || jsonb_build_object('candidate_ids', coalesce((
                        SELECT jsonb_agg(c.id ORDER BY c.created_at, c.id) FROM trovesnap.inventory_candidates c
                        WHERE c.tenant_id = r.tenant_id AND c.source_record_id = e ->> 'id'), '[]')) ORDER BY n), '[]')
                    FROM jsonb_array_elements(v_page -> 'rows') WITH ORDINALITY AS x(e, n)),
        'next', v_page -> 'next');
END
$$;

-- mcp_review_candidate: the body; public.mcp_review_candidate below counts
-- the call in its class and passes the request's token hash.
CREATE FUNCTION trovesnap.mcp_review_candidate(p_credential_hash text, p_tool text, p_tool_major integer, p_key text,
                                               p_fingerprint text, p_event jsonb, p_started_at timestamptz,
                                               p_review jsonb) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    p          trovesnap.principal;
    v_replay   jsonb;
    v_id       text := p_review ->> 'candidate_id';
    v_action   text := p_review ->> 'action';
    v_dup_c    text := nullif(p_review ->> 'duplicate_of_candidate_id', '');
    v_dup_i    text := nullif(p_review ->> 'duplicate_of_item_id', '');
    v_n        integer;
    v_reason   text := coalesce(p_review ->> 'reason', '');
    v_expected integer;
    v_to       text;
    v_prev     text;
    c          trovesnap.inventory_candidates;
    t          trovesnap.inventory_candidates;
    i          trovesnap.items;
    v_related  jsonb;
BEGIN
    PERFORM trovesnap.begin_rpc('trovesnap_mcp');
    p := trovesnap.lookup_client(p_credential_hash);
    PERFORM trovesnap.check_write_meta(p_tool, p_tool_major, p_key, p_fingerprint, p_event);
    -- The shape (domain.CandidateReview.Validate), before anything is read.
    IF jsonb_typeof(p_review) IS DISTINCT FROM 'object' THEN
        PERFORM trovesnap.fail('invalid_input:input', 'an object is required');
    END IF;
    IF coalesce(btrim(v_id), '') = '' THEN
        PERFORM trovesnap.fail('invalid_input:candidate_id', 'required');
    END IF;
    IF jsonb_typeof(p_review -> 'expected_version') = 'number' AND (p_review ->> 'expected_version') ~ '^[0-9]{1,9}$' THEN
        v_expected := (p_review ->> 'expected_version')::integer;
    END IF;
    IF coalesce(v_expected, 0) < 1 THEN
        PERFORM trovesnap.fail('invalid_input:expected_version', 'required: the candidate''s current version (trove_get_candidate)');
    END IF;
    IF coalesce(v_action, '') <> ALL (trovesnap.candidate_review_actions()) THEN
        PERFORM trovesnap.fail('invalid_input:action', 'must be one of ' || array_to_string(trovesnap.candidate_review_actions(), ', '));
    END IF;
    IF char_length(v_reason) > 1000 THEN
        PERFORM trovesnap.fail('invalid_input:reason', 'longer than 1000 characters');
    END IF;
    IF v_action = 'mark_duplicate' THEN
        IF (v_dup_c IS NULL) = (v_dup_i IS NULL) THEN
            PERFORM trovesnap.fail('invalid_input:duplicate_of_candidate_id',
                'mark_duplicate needs exactly one of duplicate_of_candidate_id or duplicate_of_item_id');
        END IF;
    ELSIF v_dup_c IS NOT NULL OR v_dup_i IS NOT NULL THEN
        PERFORM trovesnap.fail('invalid_input:duplicate_of_candidate_id', 'only mark_duplicate names what the candidate duplicates');
    END IF;
    IF v_action <> 'reopen' AND v_reason ~ '^[[:space:]]*$' THEN
        PERFORM trovesnap.fail('invalid_input:reason', 'required to ' || replace(v_action, '_', ' ') || ': say why, for the seller');
    END IF;
    IF v_dup_c = v_id THEN
        PERFORM trovesnap.fail('invalid_input:duplicate_of_candidate_id', 'a candidate cannot duplicate itself');
    END IF;

    PERFORM set_config('trovesnap.tenant_id', p.tenant_id, true);
    v_replay := trovesnap.idem_replay(p, p_tool, p_tool_major, p_key, p_fingerprint, true);
    IF v_replay IS NOT NULL THEN
        RETURN v_replay;
    END IF;
    PERFORM trovesnap.require_active(p);
    PERFORM trovesnap.require_access(p, 'candidate_write', ARRAY['item.create_candidate']);
    PERFORM trovesnap.check_ref('inventory_candidates', 'candidate_id', v_id);
    SELECT * INTO c FROM trovesnap.inventory_candidates x WHERE x.id = v_id FOR UPDATE;
    PERFORM trovesnap.require_assigned(p, c.sale_id, 'candidate', c.id);
    IF c.version <> v_expected THEN
        PERFORM trovesnap.fail('stale_version', format('candidate %s is at version %s, the review expected %s: read it again',
            c.id, c.version, v_expected));
    END IF;
    v_to := trovesnap.candidate_review_to(v_action, c.review_status);
    IF v_to IS NULL THEN
        PERFORM trovesnap.fail('transition_invalid', format('candidate %s is %s: %s', c.id, c.review_status, CASE
            WHEN c.review_status = 'promoted' THEN 'promotion is final, its item exists'
            WHEN c.review_status = 'approved' THEN 'a seller approved it; review does not undo that'
            WHEN v_action = 'reopen' THEN 'only a rejected or duplicate candidate is reopened'
            ELSE 'reopen it first' END));
    END IF;
    -- A candidate other duplicates point at is not marked a duplicate
    -- itself (no chain by order; domain.CheckCandidateReview). Its row is
    -- locked above, and a duplicate pointing at it locks it too (FOR SHARE).
    IF v_action = 'mark_duplicate' THEN
        SELECT count(*) INTO v_n FROM trovesnap.inventory_candidates x
        WHERE x.tenant_id = c.tenant_id AND x.duplicate_of_candidate_id = c.id AND x.review_status = 'duplicate';
        IF v_n > 0 THEN
            PERFORM trovesnap.fail('transition_invalid', format('candidate %s is the original of %s duplicates: mark them duplicates of what it duplicates, or reopen them, first',
                c.id, v_n));
        END IF;
    END IF;
    IF v_dup_c IS NOT NULL THEN
        PERFORM trovesnap.check_ref('inventory_candidates', 'duplicate_of_candidate_id', v_dup_c);
        SELECT * INTO t FROM trovesnap.inventory_candidates x WHERE x.id = v_dup_c FOR SHARE;
        PERFORM trovesnap.require_assigned(p, t.sale_id, 'candidate', t.id);
        IF t.kind <> c.kind THEN
            PERFORM trovesnap.fail('transition_invalid', format('candidate %s is a %s candidate and %s a %s candidate: a duplicate is of the same kind',
                c.id, c.kind, t.id, t.kind));
        END IF;
        IF trovesnap.candidate_review_to('reopen', t.review_status) IS NOT NULL THEN
            PERFORM trovesnap.fail('transition_invalid', format('candidate %s is %s: mark %s a duplicate of the candidate or item it stands for',
                t.id, t.review_status, c.id));
        END IF;
    ELSIF v_dup_i IS NOT NULL THEN
        PERFORM trovesnap.check_ref('items', 'duplicate_of_item_id', v_dup_i);
        SELECT * INTO i FROM trovesnap.items x WHERE x.id = v_dup_i FOR SHARE;
        PERFORM trovesnap.require_assigned(p, i.sale_id, 'item', i.id);
        IF c.kind <> 'new_item' THEN
            PERFORM trovesnap.fail('transition_invalid', format('candidate %s is a %s candidate, which already names its item: only a new_item candidate duplicates an item',
                c.id, c.kind));
        END IF;
    END IF;

    v_prev := c.review_status;
    UPDATE trovesnap.inventory_candidates x SET review_status = v_to, version = x.version + 1,
        duplicate_of_candidate_id = v_dup_c, duplicate_of_item_id = v_dup_i, review_reason = v_reason
    WHERE x.id = c.id
    RETURNING * INTO c;

    v_related := trovesnap.empty_related() || jsonb_build_object(
        'candidate_ids', to_jsonb(array_remove(ARRAY[c.id, v_dup_c], NULL)),
        'item_ids', to_jsonb(array_remove(ARRAY[v_dup_i], NULL)));
    RETURN trovesnap.finish_write(p, p_tool, p_tool_major, p_key, p_fingerprint, p_event, p_started_at,
        jsonb_build_object('candidate', trovesnap.candidate_json(c), 'action', v_action, 'previous_status', v_prev), v_related);
END
$$;

CREATE FUNCTION public.mcp_review_candidate(p_tool text, p_tool_major integer, p_key text, p_fingerprint text, p_event jsonb,
                                            p_started_at timestamptz, p_review jsonb) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $w$ BEGIN PERFORM trovesnap.count_rpc('mcp_review_candidate'); RETURN trovesnap.mcp_review_candidate(p_credential_hash => trovesnap.request_credential_hash(), p_tool => p_tool, p_tool_major => p_tool_major, p_key => p_key, p_fingerprint => p_fingerprint, p_event => p_event, p_started_at => p_started_at, p_review => p_review); END $w$;
COMMENT ON FUNCTION public.mcp_review_candidate(text, integer, text, text, jsonb, timestamptz, jsonb) IS
    'wrapper: counts the call in its rate class (trovesnap.rpc_rate_class), then runs trovesnap.mcp_review_candidate as the request''s x-trovesnap-client-token';

-- rpc_rate_class (migration 34) plus mcp_review_candidate; held to
-- internal/live's rpcRateClass by TestRPCRates_SQLClassesAreGos.
CREATE OR REPLACE FUNCTION trovesnap.rpc_rate_class(p_fn text) RETURNS text
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
            WHEN 'mcp_review_candidate' THEN 'candidate_writes'
            WHEN 'mcp_create_proposal' THEN 'proposals'
            WHEN 'mcp_execute_proposal' THEN 'controlled_actions'
        END
    $$;

-- Grants: the body is nobody's to call, the wrapper anon's, as every MCP RPC.
SELECT trovesnap.revoke_execute(ARRAY['mcp_review_candidate', 'rpc_rate_class']);
SELECT trovesnap.grant_execute('anon', ARRAY['public.mcp_review_candidate(text, integer, text, text, jsonb, timestamptz, jsonb)']);

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (41, '20261203130000_trovesnap_candidate_review');

RESET ROLE;
