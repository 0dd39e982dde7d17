-- trovesnap live mode, migration 6: proposals, approval state and the
-- controlled actions.
--
-- The MCP server proposes and executes through these RPCs exactly as the
-- embedded store does in one SQLite transaction (store/proposals.go,
-- store/execute.go, store/domainfn.go, store/grants.go). They know every
-- action live mode executes: candidate promotion and publication, whose
-- domain functions are here, and the remaining ones, whose records, checks
-- and domain functions are migration 10's (the functions below call them;
-- plpgsql binds them when they run):
--   mcp_proposal_state    the current state a proposal is built from (the
--                         rules themselves are Go's, shared with the store:
--                         internal/domain/proposal_build.go);
--   mcp_create_proposal   stores the sealed proposal with its idempotency row
--                         and plugin_event, re-verifying under the lock what
--                         it was built from (client, targets, versions);
--   mcp_get_proposal, mcp_approval_state  what the gate's approval step reads;
--   mcp_execute_proposal  ONE transaction: replay or conflict, the proposal
--                         locked, the grant or policy re-checked and consumed,
--                         the target versions, the ONE domain function, the
--                         event and the idempotency row.
-- Grants come from a human: seller_issue_grant and seller_revoke_grant
-- (migration 7, with the other seller RPCs) run under the signed-in
-- seller's own JWT (role authenticated) and decide from its `sub` who acts,
-- never from an argument.
--
-- Errors are trovesnap.fail codes; a reasoned code's detail is a short
-- printable reason without ';' (internal/live/rpc.go safeReason).

SET ROLE trovesnap_owner;

-- ---------------------------------------------------------------------------
-- Helpers
-- ---------------------------------------------------------------------------

-- proposal_status: a pending or approved proposal past its expiry is
-- expired (the stored status catches up lazily, as in the embedded store).
CREATE FUNCTION trovesnap.proposal_status(pr trovesnap.proposals) RETURNS text
    LANGUAGE sql STABLE
    AS $$
        SELECT CASE WHEN pr.status IN ('pending_approval', 'approved') AND now() >= pr.expires_at THEN 'expired'
                    ELSE pr.status END
    $$;

-- proposal_json: a domain.Proposal — the content as sealed (the body) and
-- what is not content (the columns).
CREATE FUNCTION trovesnap.proposal_json(pr trovesnap.proposals) RETURNS jsonb
    LANGUAGE sql STABLE
    AS $$
        SELECT pr.body || jsonb_build_object('id', pr.id, 'proposal_hash', pr.proposal_hash,
            'status', trovesnap.proposal_status(pr), 'correlation_id', pr.correlation_id)
    $$;

-- grant_json: a domain.Grant as stored.
CREATE FUNCTION trovesnap.grant_json(g trovesnap.approval_grants) RETURNS jsonb
    LANGUAGE sql STABLE
    AS $$
        SELECT jsonb_build_object('id', g.id, 'tenant_id', g.tenant_id, 'proposal_id', g.proposal_id,
            'proposal_hash', g.proposal_hash,
            'issued_by', jsonb_strip_nulls(jsonb_build_object('type', g.issuer_type, 'actor_id', nullif(g.issuer_actor, ''),
                'surface', nullif(g.issuer_surface, ''), 'policy_id', nullif(g.policy_id, ''),
                'policy_version', nullif(g.policy_version, 0))),
            'tool', g.tool, 'target_ids', to_jsonb(g.target_ids), 'constraints', g.constraints, 'status', g.status,
            'single_use', g.single_use, 'issued_at', trovesnap.ts(g.issued_at), 'expires_at', trovesnap.ts(g.expires_at),
            'consumed_at', trovesnap.ts(g.consumed_at), 'revoked_at', trovesnap.ts(g.revoked_at))
    $$;

-- policy_json: a domain.Policy (the body holds allowed_tools, scope,
-- conditions and limits).
CREATE FUNCTION trovesnap.policy_json(pol trovesnap.automation_policies) RETURNS jsonb
    LANGUAGE sql STABLE
    AS $$
        SELECT pol.body || jsonb_build_object('id', pol.id, 'tenant_id', pol.tenant_id, 'name', pol.name,
            'version', pol.version, 'status', pol.status, 'created_by', pol.created_by,
            'created_at', trovesnap.ts(pol.created_at), 'updated_at', trovesnap.ts(pol.updated_at))
    $$;

-- policy_usage: what a policy authorised since the start of the UTC day.
CREATE FUNCTION trovesnap.policy_usage(p_policy_id text) RETURNS jsonb
    LANGUAGE sql STABLE
    AS $$
        SELECT jsonb_build_object('actions_today', count(*), 'cost_today', coalesce(sum(u.cost_usd), 0))
        FROM trovesnap.policy_uses u
        WHERE u.policy_id = p_policy_id AND u.used_at >= (date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')
    $$;

-- action_tool: the controlled action that executes a proposal action, the
-- approval it needs and the domain function it runs (domain.Actions; the
-- generated domain-rules migrations replace it). NULL: no such action.
CREATE FUNCTION trovesnap.action_tool(p_action text) RETURNS text[]
    LANGUAGE sql IMMUTABLE
    AS $$
        SELECT CASE p_action
            WHEN 'promote_candidate' THEN ARRAY['trove_execute_candidate_promotion', 'human_or_policy', 'promote_inventory_candidate']
            WHEN 'publish_item' THEN ARRAY['trove_publish_item', 'explicit_human', 'publish_item']
            WHEN 'publish_sale' THEN ARRAY['trove_publish_sale', 'explicit_human', 'publish_sale']
            WHEN 'status_transition' THEN ARRAY['trove_update_item_status', 'human_or_policy', 'append_inventory_status_event']
            WHEN 'archive_item' THEN ARRAY['trove_archive_item', 'explicit_human', 'append_inventory_status_event']
            WHEN 'bulk_item_update' THEN ARRAY['trove_apply_bulk_item_update', 'human_or_policy', 'update_item_fields']
            WHEN 'bind_identity' THEN ARRAY['trove_bind_item_identity', 'human_or_policy', 'bind_item_identity']
            WHEN 'release_identity' THEN ARRAY['trove_release_item_identity', 'explicit_human', 'release_item_identity']
            WHEN 'disposition_action' THEN ARRAY['trove_apply_disposition_action', 'explicit_human', 'apply_disposition_action']
            WHEN 'buyer_notification' THEN ARRAY['trove_notify_matched_buyers', 'explicit_human', 'notify_matched_buyers']
            WHEN 'export_delivery' THEN ARRAY['trove_deliver_export', 'explicit_human', 'deliver_export']
        END
    $$;

-- require_assigned: a sale-scoped member reaches only its assigned sales (§4.3).
CREATE FUNCTION trovesnap.require_assigned(p trovesnap.principal, p_sale_id text, p_kind text, p_id text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    AS $$
BEGIN
    IF p.sale_scoped AND NOT (p_sale_id = ANY (coalesce(p.assigned, '{}'))) THEN
        PERFORM trovesnap.fail('sale_assignment', p_kind || ' ' || p_id);
    END IF;
END
$$;

-- require_export_assigned: every item of a staged export must be in a sale
-- the (sale-scoped) member is assigned to (§4.3).
CREATE FUNCTION trovesnap.require_export_assigned(p trovesnap.principal, p_export_id text) RETURNS void
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_sale text;
BEGIN
    IF NOT p.sale_scoped THEN
        RETURN;
    END IF;
    FOR v_sale IN SELECT DISTINCT i.sale_id FROM trovesnap.export_draft_items x
                  JOIN trovesnap.items i ON i.tenant_id = x.tenant_id AND i.id = x.item_id
                  WHERE x.export_id = p_export_id
    LOOP
        PERFORM trovesnap.require_assigned(p, v_sale, 'export', p_export_id);
    END LOOP;
END
$$;

-- item_state: an item with its photos (position order), as a builder reads
-- it: no internal pricing, appraisal flag or staff notes (no rule needs them).
CREATE FUNCTION trovesnap.item_state(i trovesnap.items) RETURNS jsonb
    LANGUAGE sql STABLE
    AS $$
        SELECT trovesnap.item_detail_json(i, true, false)
               - 'internal_price_guidance_cents' - 'cost_basis_cents' - 'appraisal_flag' - 'staff_notes'
    $$;

-- item_ready: the publication checklist (domain.PublicationReadiness).
CREATE FUNCTION trovesnap.item_ready(i trovesnap.items) RETURNS boolean
    LANGUAGE sql STABLE
    AS $$
        SELECT btrim(i.title) <> '' AND i.category <> '' AND i.price_cents IS NOT NULL
           AND EXISTS (SELECT 1 FROM trovesnap.item_photos ph
                       WHERE ph.tenant_id = i.tenant_id AND ph.item_id = i.id AND ph.published)
    $$;

-- max_bulk_targets: the client's limit, else the tenant's, else §38's 50.
CREATE FUNCTION trovesnap.max_bulk_targets(p trovesnap.principal) RETURNS integer
    LANGUAGE sql STABLE
    AS $$
        SELECT coalesce((SELECT l.maximum_bulk_targets FROM trovesnap.mcp_limits l
                         WHERE l.tenant_id = p.tenant_id AND l.client_id IN ('', p.client_id)
                         ORDER BY l.client_id DESC LIMIT 1), 50)
    $$;

-- target_version: the current version of a target by its id prefix (the
-- tenant context bounds it); NULL when there is none. With p_lock the row
-- stays locked until commit, so what is checked is what the domain
-- function then changes. A staged export (migration 9's tables) that can
-- still be delivered (staged or delivery_proposed, no delivery queued) is
-- at domain.ExportVersion, 1; any other has no version, so a proposal bound
-- to it is refused (invalid_reference target) like the store's.
CREATE FUNCTION trovesnap.target_version(p_id text, p_lock boolean) RETURNS integer
    LANGUAGE plpgsql
    AS $$
DECLARE
    v integer;
BEGIN
    IF p_id ~ '^item_' THEN
        IF p_lock THEN
            SELECT i.version INTO v FROM trovesnap.items i WHERE i.id = p_id FOR UPDATE;
        ELSE
            SELECT i.version INTO v FROM trovesnap.items i WHERE i.id = p_id;
        END IF;
    ELSIF p_id ~ '^sale_' THEN
        IF p_lock THEN
            SELECT s.version INTO v FROM trovesnap.estate_sales s WHERE s.id = p_id FOR UPDATE;
        ELSE
            SELECT s.version INTO v FROM trovesnap.estate_sales s WHERE s.id = p_id;
        END IF;
    ELSIF p_id ~ '^candidate_' THEN
        IF p_lock THEN
            SELECT c.version INTO v FROM trovesnap.inventory_candidates c WHERE c.id = p_id FOR UPDATE;
        ELSE
            SELECT c.version INTO v FROM trovesnap.inventory_candidates c WHERE c.id = p_id;
        END IF;
    ELSIF p_id ~ '^export_' THEN
        IF p_lock THEN
            PERFORM 1 FROM trovesnap.export_drafts e WHERE e.id = p_id FOR UPDATE;
        END IF;
        SELECT 1 INTO v FROM trovesnap.export_drafts e
        WHERE e.id = p_id AND e.status IN ('staged', 'delivery_proposed') AND NOT trovesnap.export_delivery_queued(p_id);
    END IF;
    RETURN v;
END
$$;

-- check_versions: every expected version of a proposal still current, else
-- stale_version naming the targets that moved (invalid_reference:target for
-- one that is gone). With p_lock (execution) the targets are locked, in id
-- order so that two executions never wait on each other crosswise.
CREATE FUNCTION trovesnap.check_versions(p_expected jsonb, p_lock boolean) RETURNS void
    LANGUAGE plpgsql
    AS $$
DECLARE
    ev      jsonb;
    v       integer;
    v_stale text[] := '{}';
BEGIN
    FOR ev IN SELECT e FROM jsonb_array_elements(coalesce(p_expected, '[]')) e ORDER BY e ->> 'id' COLLATE "C"
    LOOP
        v := trovesnap.target_version(ev ->> 'id', p_lock);
        IF v IS NULL THEN
            PERFORM trovesnap.fail('invalid_reference:target', jsonb_build_object('id', ev ->> 'id', 'cross_tenant', false)::text);
        END IF;
        IF v <> (ev ->> 'version')::integer THEN
            v_stale := v_stale || format('%s is at version %s, the proposal expected %s', ev ->> 'id', v, ev ->> 'version');
        END IF;
    END LOOP;
    IF cardinality(v_stale) > 0 THEN
        PERFORM trovesnap.fail('stale_version', left(array_to_string(v_stale, ', '), 200));
    END IF;
END
$$;

-- ---------------------------------------------------------------------------
-- The domain functions (§16), as the embedded store simulates them
-- (store/domainfn.go). Each enforces its own rules, increments the version
-- of what it changes and leaves history; none deletes anything.
-- ---------------------------------------------------------------------------

-- promote_inventory_candidate creates the canonical draft item from a
-- candidate with the proposal's create_item.* values, with provenance back
-- to candidate, source record, import run and proposal; the candidate
-- becomes promoted.
CREATE FUNCTION trovesnap.promote_inventory_candidate(pr trovesnap.proposals) RETURNS text
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_cand text := pr.body -> 'target_ids' ->> 0;
    c      trovesnap.inventory_candidates;
    f      jsonb;
    v_item text;
    v_now  timestamptz := now();
BEGIN
    SELECT * INTO c FROM trovesnap.inventory_candidates ic WHERE ic.tenant_id = pr.tenant_id AND ic.id = v_cand FOR UPDATE;
    IF NOT FOUND THEN
        PERFORM trovesnap.fail('invalid_reference:candidate_id', jsonb_build_object('id', v_cand, 'cross_tenant', false)::text);
    END IF;
    IF c.kind <> 'new_item' OR c.review_status NOT IN ('needs_review', 'approved') THEN
        PERFORM trovesnap.fail('transition_invalid', format('candidate %s is %s', v_cand, c.review_status));
    END IF;
    SELECT coalesce(jsonb_object_agg(ch ->> 'field', ch -> 'to'), '{}') INTO f
    FROM jsonb_array_elements(pr.body -> 'changes') ch
    WHERE ch ->> 'target_id' = v_cand AND jsonb_typeof(ch -> 'to') = 'string';
    v_item := trovesnap.new_id('item');
    INSERT INTO trovesnap.items (id, tenant_id, sale_id, title, description, category, room, status, version,
                                 created_at, updated_at)
    VALUES (v_item, pr.tenant_id, c.sale_id, coalesce(f ->> 'create_item.title', ''),
            coalesce(f ->> 'create_item.description', ''), coalesce(f ->> 'create_item.category', ''),
            coalesce(f ->> 'create_item.room', ''), 'draft', 1, v_now, v_now);
    INSERT INTO trovesnap.item_provenance (item_id, tenant_id, candidate_id, source_record_id, import_run_id, proposal_id,
                                           created_at)
    VALUES (v_item, pr.tenant_id, v_cand, c.source_record_id, c.import_run_id, pr.id, v_now);
    UPDATE trovesnap.inventory_candidates SET review_status = 'promoted', version = version + 1 WHERE id = v_cand;
    RETURN v_item;
END
$$;

-- publish_item moves a ready item that passes the readiness checklist to
-- published and appends its lifecycle history (source: the proposal).
CREATE FUNCTION trovesnap.publish_item(pr trovesnap.proposals, p_item_id text) RETURNS integer
    LANGUAGE plpgsql
    AS $$
DECLARE
    i     trovesnap.items;
    v_now timestamptz := now();
BEGIN
    SELECT * INTO i FROM trovesnap.items it WHERE it.tenant_id = pr.tenant_id AND it.id = p_item_id FOR UPDATE;
    IF NOT FOUND THEN
        PERFORM trovesnap.fail('invalid_reference:item_id', jsonb_build_object('id', p_item_id, 'cross_tenant', false)::text);
    END IF;
    IF i.status <> 'ready' OR NOT trovesnap.item_ready(i) THEN
        PERFORM trovesnap.fail('transition_invalid', format('item %s is no longer ready to publish', p_item_id));
    END IF;
    UPDATE trovesnap.items SET status = 'published', version = version + 1, updated_at = v_now WHERE id = p_item_id;
    INSERT INTO trovesnap.item_status_events (id, tenant_id, item_id, sale_id, from_status, to_status, effective_at,
                                              source_type, actor_id, proposal_id, recorded_at)
    VALUES (trovesnap.new_id('status'), pr.tenant_id, i.id, i.sale_id, i.status, 'published', v_now, 'proposal',
            pr.requested_by_actor, pr.id, v_now);
    RETURN i.version + 1;
END
$$;

-- publish_sale makes a draft sale published and public under its address
-- policy (the address itself is revealed by the public reads, by policy).
CREATE FUNCTION trovesnap.publish_sale(pr trovesnap.proposals, p_sale_id text) RETURNS integer
    LANGUAGE plpgsql
    AS $$
DECLARE
    s trovesnap.estate_sales;
BEGIN
    SELECT * INTO s FROM trovesnap.estate_sales es WHERE es.tenant_id = pr.tenant_id AND es.id = p_sale_id FOR UPDATE;
    IF NOT FOUND THEN
        PERFORM trovesnap.fail('invalid_reference:sale_id', jsonb_build_object('id', p_sale_id, 'cross_tenant', false)::text);
    END IF;
    IF s.status <> 'draft' THEN
        PERFORM trovesnap.fail('transition_invalid', format('sale %s is %s', p_sale_id, s.status));
    END IF;
    UPDATE trovesnap.estate_sales SET status = 'published', visibility = 'public', version = version + 1, updated_at = now()
    WHERE id = p_sale_id;
    RETURN s.version + 1;
END
$$;

-- ---------------------------------------------------------------------------
-- MCP RPCs
-- ---------------------------------------------------------------------------

-- mcp_proposal_state: what a proposal of p_action on p_target_ids is built
-- from, for the calling client: the database's now, the client's bulk
-- limit, and the targets (each visible in the client's tenant, else
-- invalid_reference; in an assigned sale for a sale-scoped member, else
-- sale_assignment). p_fields are the draft's fields the builders need
-- besides the targets: the bulk changes (checked before any target is
-- read, as the store does), the tag to bind, the imported status a
-- transition reviews; for those actions it also answers the facts of the
-- tag and of the status candidate, and a sale's aggregated demand. A used
-- key answers its stored result first (replay) or idempotency_conflict, as
-- the write would. It writes nothing.
CREATE FUNCTION public.mcp_proposal_state(p_credential_hash text, p_tool text, p_tool_major integer, p_key text,
                                          p_fingerprint text, p_action text, p_target_ids jsonb,
                                          p_fields jsonb DEFAULT '{}'::jsonb) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    p        trovesnap.principal;
    v_replay jsonb;
    v_ids    text[];
    v_id     text;
    v_max    integer;
    v_state  jsonb;
    v_items  jsonb := '[]';
    v_sales  jsonb := '{}';
    v_fields jsonb := coalesce(p_fields, '{}'::jsonb);
    c        trovesnap.inventory_candidates;
    i        trovesnap.items;
    s        trovesnap.estate_sales;
BEGIN
    PERFORM trovesnap.begin_rpc('trovesnap_mcp');
    p := trovesnap.lookup_client(p_credential_hash);
    PERFORM set_config('trovesnap.tenant_id', p.tenant_id, true);
    v_replay := trovesnap.state_replay(p, p_tool, p_tool_major, p_key, p_fingerprint);
    IF v_replay IS NOT NULL THEN
        RETURN v_replay;
    END IF;
    PERFORM trovesnap.require_active(p);
    -- A proposal reads its targets like a tenant read: the proposal group or
    -- the read group, and proposal.create (the write checks the group).
    PERFORM trovesnap.require_any_access(p, ARRAY['action_proposal', 'tenant_read'], ARRAY['proposal.create']);
    IF trovesnap.action_tool(p_action) IS NULL THEN
        PERFORM trovesnap.fail('invalid_input:action', 'not available in live mode');
    END IF;
    IF jsonb_typeof(p_target_ids) IS DISTINCT FROM 'array' THEN
        PERFORM trovesnap.fail('invalid_input:targets', 'a list of ids');
    END IF;
    IF jsonb_typeof(v_fields) IS DISTINCT FROM 'object' THEN
        PERFORM trovesnap.fail('invalid_input:fields', 'an object');
    END IF;
    v_ids := ARRAY(SELECT jsonb_array_elements_text(p_target_ids));
    v_max := trovesnap.max_bulk_targets(p);
    v_state := jsonb_build_object('replayed', false, 'now', trovesnap.ts(now()), 'max_bulk_targets', v_max);
    -- Too many or no targets: the builder refuses before reading any.
    IF cardinality(v_ids) = 0 OR cardinality(v_ids) > v_max THEN
        RETURN v_state;
    END IF;
    CASE p_action
    WHEN 'promote_candidate' THEN
        v_id := v_ids[1];
        PERFORM trovesnap.check_ref('inventory_candidates', 'candidate_id', v_id);
        SELECT * INTO c FROM trovesnap.inventory_candidates ic WHERE ic.id = v_id;
        PERFORM trovesnap.require_assigned(p, c.sale_id, 'candidate', v_id);
        v_state := v_state || jsonb_build_object('candidate', trovesnap.candidate_json(c));
    WHEN 'publish_item' THEN
        FOREACH v_id IN ARRAY v_ids
        LOOP
            PERFORM trovesnap.check_ref('items', 'item_id', v_id);
            SELECT * INTO i FROM trovesnap.items it WHERE it.id = v_id;
            PERFORM trovesnap.require_assigned(p, i.sale_id, 'item', v_id);
            v_items := v_items || jsonb_build_array(trovesnap.item_state(i));
            v_sales := v_sales || jsonb_build_object(i.sale_id,
                (SELECT es.status FROM trovesnap.estate_sales es WHERE es.id = i.sale_id));
        END LOOP;
        v_state := v_state || jsonb_build_object('items', v_items, 'sale_statuses', v_sales);
    WHEN 'publish_sale' THEN
        v_id := v_ids[1];
        PERFORM trovesnap.check_ref('estate_sales', 'sale_id', v_id);
        PERFORM trovesnap.require_assigned(p, v_id, 'sale', v_id);
        SELECT * INTO s FROM trovesnap.estate_sales es WHERE es.id = v_id;
        v_state := v_state || jsonb_build_object('sale', trovesnap.sale_json(s));
    WHEN 'bulk_item_update', 'status_transition', 'archive_item', 'bind_identity', 'release_identity', 'disposition_action' THEN
        IF p_action = 'bulk_item_update' THEN
            PERFORM trovesnap.check_bulk_changes(p, v_fields -> 'changes');
        END IF;
        v_state := v_state || jsonb_build_object('items', trovesnap.item_targets(p, v_ids));
        IF p_action IN ('status_transition', 'archive_item') AND coalesce(v_fields ->> 'status_candidate_id', '') <> '' THEN
            v_state := v_state || jsonb_build_object('status_candidate',
                trovesnap.status_candidate_facts(v_fields ->> 'status_candidate_id'));
        END IF;
        IF p_action = 'bind_identity' THEN
            v_state := v_state || jsonb_build_object('tag',
                trovesnap.tag_facts(p.tenant_id, coalesce(v_fields ->> 'qr_code', ''), v_ids[1]));
        END IF;
    WHEN 'buyer_notification' THEN
        v_id := v_ids[1];
        IF v_id ~ '^item_[A-Za-z0-9]{1,40}$' THEN
            v_items := trovesnap.item_targets(p, v_ids);
            v_state := v_state || jsonb_build_object('items', v_items,
                'demand', trovesnap.sale_demand(v_items -> 0 ->> 'sale_id'));
        ELSE
            PERFORM trovesnap.check_ref('estate_sales', 'sale_id', v_id);
            PERFORM trovesnap.require_assigned(p, v_id, 'sale', v_id);
            SELECT * INTO s FROM trovesnap.estate_sales es WHERE es.id = v_id;
            v_state := v_state || jsonb_build_object('sale', trovesnap.sale_json(s), 'demand', trovesnap.sale_demand(v_id));
        END IF;
    WHEN 'export_delivery' THEN
        v_id := v_ids[1];
        PERFORM trovesnap.check_ref('export_drafts', 'export_id', v_id);
        PERFORM trovesnap.require_export_assigned(p, v_id);
        v_state := v_state || jsonb_build_object('export', trovesnap.export_facts(v_id));
    END CASE;
    RETURN v_state;
END
$$;

-- mcp_create_proposal stores a proposal the server built (with the shared
-- builder, from mcp_proposal_state) and sealed, in ONE transaction with its
-- idempotency row and its plugin_event, exactly like the embedded store's
-- CreateProposal. Under the key's lock it re-verifies what the proposal was
-- built from: a live key replays (same fingerprint) or conflicts; the
-- client must still be active and allowed action_proposal with
-- proposal.create; the proposal is the client's and its actor's, for this
-- tenant, with the executing tool and approval requirement of its action,
-- created now and expiring within 24 hours; every target is visible, in an
-- assigned sale, still at its expected version and still in a state the
-- action accepts, with the changes its builder makes (check_item_proposal
-- for the item actions); a buyer notification's one target is published
-- (an item) or published or live (a sale), with its plan. It is stored
-- pending_approval; its content never changes again (a trigger refuses it).
CREATE FUNCTION public.mcp_create_proposal(p_credential_hash text, p_tool text, p_tool_major integer, p_key text,
                                           p_fingerprint text, p_event jsonb, p_started_at timestamptz,
                                           p_proposal jsonb) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    p         trovesnap.principal;
    v_now     timestamptz := now();
    v_replay  jsonb;
    v_id      text := p_proposal ->> 'id';
    v_action  text := p_proposal ->> 'action';
    v_tool    text[];
    v_kind    text;
    v_ids     text[];
    v_evids   text[];
    v_sales   text[];
    v_created timestamptz;
    v_expires timestamptz;
    v_target  text;
    v_facts   jsonb;
    c         trovesnap.inventory_candidates;
    i         trovesnap.items;
    s         trovesnap.estate_sales;
    v_body    jsonb;
    v_result  jsonb;
    v_related jsonb;
    v_event   jsonb := p_event;
BEGIN
    PERFORM trovesnap.begin_rpc('trovesnap_mcp');
    p := trovesnap.lookup_client(p_credential_hash);
    PERFORM trovesnap.check_write_meta(p_tool, p_tool_major, p_key, p_fingerprint, p_event);
    IF jsonb_typeof(p_proposal) IS DISTINCT FROM 'object' THEN
        PERFORM trovesnap.fail('invalid_input:proposal', 'an object is required');
    END IF;
    PERFORM set_config('trovesnap.tenant_id', p.tenant_id, true);
    v_replay := trovesnap.idem_replay(p, p_tool, p_tool_major, p_key, p_fingerprint, true);
    IF v_replay IS NOT NULL THEN
        RETURN v_replay;
    END IF;
    PERFORM trovesnap.require_active(p);
    PERFORM trovesnap.require_access(p, 'action_proposal', ARRAY['proposal.create']);

    -- The proposal is this client's, for this tenant, of an action live mode
    -- executes, by the tool and under the approval the catalog gives it.
    IF coalesce(v_id, '') !~ '^proposal_[A-Za-z0-9]{1,40}$' THEN
        PERFORM trovesnap.fail('invalid_input:proposal_id', 'not a proposal id');
    END IF;
    IF coalesce(p_proposal ->> 'proposal_hash', '') !~ '^sha256:[0-9a-f]{64}$' THEN
        PERFORM trovesnap.fail('invalid_input:proposal_hash', 'a sealed proposal carries its sha256 hash');
    END IF;
    IF p_proposal ->> 'tenant_id' IS DISTINCT FROM p.tenant_id THEN
        PERFORM trovesnap.fail('invalid_input:tenant_id', 'a proposal is for the client''s own tenant');
    END IF;
    IF p_proposal -> 'requested_by' ->> 'client_id' IS DISTINCT FROM p.client_id
       OR p_proposal -> 'requested_by' ->> 'actor_id' IS DISTINCT FROM p.actor_id THEN
        PERFORM trovesnap.fail('invalid_input:requested_by', 'a proposal is requested by the calling client and its actor');
    END IF;
    v_tool := trovesnap.action_tool(v_action);
    IF v_tool IS NULL THEN
        PERFORM trovesnap.fail('invalid_input:action', 'not available in live mode');
    END IF;
    IF p_proposal -> 'tool' ->> 'name' IS DISTINCT FROM v_tool[1]
       OR coalesce(p_proposal -> 'tool' ->> 'version', '') = '' THEN
        PERFORM trovesnap.fail('invalid_input:tool', 'the action is executed by ' || v_tool[1]);
    END IF;
    IF p_proposal ->> 'approval_requirement' IS DISTINCT FROM v_tool[2] THEN
        PERFORM trovesnap.fail('invalid_input:approval_requirement', v_tool[1] || ' needs ' || v_tool[2]);
    END IF;
    BEGIN
        v_created := (p_proposal ->> 'created_at')::timestamptz;
        v_expires := (p_proposal ->> 'expires_at')::timestamptz;
    EXCEPTION WHEN others THEN
        PERFORM trovesnap.fail('invalid_input:expires_at', 'not a timestamp');
    END;
    IF v_created IS NULL OR v_expires IS NULL OR v_created < v_now - interval '5 minutes' OR v_created > v_now + interval '5 minutes' THEN
        PERFORM trovesnap.fail('invalid_input:created_at', 'a proposal is created now');
    END IF;
    IF v_expires <= v_created OR v_expires > v_created + interval '24 hours' THEN
        PERFORM trovesnap.fail('invalid_input:expires_at', 'a proposal expires within 24 hours');
    END IF;

    -- Targets: the frozen set, each named once with its expected version.
    IF jsonb_typeof(p_proposal -> 'target_ids') IS DISTINCT FROM 'array'
       OR jsonb_typeof(p_proposal -> 'expected_versions') IS DISTINCT FROM 'array' THEN
        PERFORM trovesnap.fail('invalid_input:targets', 'at least one target');
    END IF;
    v_ids := ARRAY(SELECT jsonb_array_elements_text(p_proposal -> 'target_ids'));
    v_evids := ARRAY(SELECT ev ->> 'id' FROM jsonb_array_elements(p_proposal -> 'expected_versions') ev);
    -- (An export delivery is bound to its export AND to each valid item at
    -- its staged version: its expected versions start with the export.)
    IF cardinality(v_ids) = 0
       OR (v_action <> 'export_delivery' AND v_ids IS DISTINCT FROM v_evids)
       OR (v_action = 'export_delivery' AND (cardinality(v_ids) <> 1 OR v_evids[1] IS DISTINCT FROM v_ids[1]))
       OR cardinality(v_evids) <> (SELECT count(DISTINCT x) FROM unnest(v_evids) x) THEN
        PERFORM trovesnap.fail('invalid_input:expected_versions', 'give exactly one version per target');
    END IF;
    IF cardinality(v_ids) > trovesnap.max_bulk_targets(p) THEN
        PERFORM trovesnap.fail('invalid_input:item_ids', 'too many targets for one plan');
    END IF;
    IF EXISTS (SELECT 1 FROM jsonb_array_elements(p_proposal -> 'expected_versions') ev
               WHERE jsonb_typeof(ev -> 'version') IS DISTINCT FROM 'number') THEN
        PERFORM trovesnap.fail('invalid_input:expected_versions', 'a version is a number');
    END IF;

    -- Each target as the action needs it, under the tenant context: visible,
    -- assigned, in a state the action accepts; then every version current.
    CASE v_action
    WHEN 'promote_candidate' THEN
        v_kind := 'candidate';
        v_target := v_ids[1];
        PERFORM trovesnap.check_ref('inventory_candidates', 'candidate_id', v_target);
        SELECT * INTO c FROM trovesnap.inventory_candidates ic WHERE ic.id = v_target;
        PERFORM trovesnap.require_assigned(p, c.sale_id, 'candidate', v_target);
        PERFORM trovesnap.check_versions(p_proposal -> 'expected_versions', false);
        IF c.kind <> 'new_item' THEN
            PERFORM trovesnap.fail('candidate_required', format('candidate %s is a %s candidate', v_target, c.kind));
        END IF;
        IF c.review_status NOT IN ('needs_review', 'approved') THEN
            PERFORM trovesnap.fail('transition_invalid', format('candidate %s is %s and cannot be promoted', v_target, c.review_status));
        END IF;
        -- Exactly one change per create_item field, and the sale is the
        -- candidate's: no duplicate a later reader could take instead.
        IF (SELECT count(*) FROM jsonb_array_elements(p_proposal -> 'changes') ch
            WHERE ch ->> 'target_id' = v_target AND ch ->> 'field' = 'create_item.sale_id' AND ch ->> 'to' = c.sale_id) <> 1
           OR EXISTS (SELECT 1 FROM jsonb_array_elements(p_proposal -> 'changes') ch
                      WHERE ch ->> 'field' LIKE 'create\_item.%' GROUP BY ch ->> 'target_id', ch ->> 'field' HAVING count(*) > 1) THEN
            PERFORM trovesnap.fail('invalid_input:changes', 'the item is created in the candidate''s sale, each field once');
        END IF;
        v_sales := ARRAY[c.sale_id];
    WHEN 'publish_item' THEN
        v_kind := 'item';
        FOREACH v_target IN ARRAY v_ids
        LOOP
            PERFORM trovesnap.check_ref('items', 'item_id', v_target);
            SELECT * INTO i FROM trovesnap.items it WHERE it.id = v_target;
            PERFORM trovesnap.require_assigned(p, i.sale_id, 'item', v_target);
        END LOOP;
        PERFORM trovesnap.check_versions(p_proposal -> 'expected_versions', false);
        FOREACH v_target IN ARRAY v_ids
        LOOP
            SELECT * INTO i FROM trovesnap.items it WHERE it.id = v_target;
            IF i.status <> 'ready' OR NOT trovesnap.item_ready(i) THEN
                PERFORM trovesnap.fail('transition_invalid', format('item %s is not ready to publish', v_target));
            END IF;
        END LOOP;
        v_sales := ARRAY(SELECT DISTINCT it.sale_id FROM trovesnap.items it WHERE it.id = ANY (v_ids) ORDER BY 1);
    WHEN 'publish_sale' THEN
        v_kind := 'sale';
        v_target := v_ids[1];
        PERFORM trovesnap.check_ref('estate_sales', 'sale_id', v_target);
        PERFORM trovesnap.require_assigned(p, v_target, 'sale', v_target);
        PERFORM trovesnap.check_versions(p_proposal -> 'expected_versions', false);
        SELECT * INTO s FROM trovesnap.estate_sales es WHERE es.id = v_target;
        IF s.status <> 'draft' THEN
            PERFORM trovesnap.fail('transition_invalid', format('sale %s is %s', v_target, s.status));
        END IF;
        v_sales := ARRAY[v_target];
    WHEN 'bulk_item_update', 'status_transition', 'archive_item', 'bind_identity', 'release_identity', 'disposition_action' THEN
        v_kind := 'item';
        PERFORM trovesnap.item_targets(p, v_ids);
        PERFORM trovesnap.check_versions(p_proposal -> 'expected_versions', false);
        PERFORM trovesnap.check_item_proposal(p, v_action, v_ids, p_proposal -> 'changes');
        v_sales := ARRAY(SELECT DISTINCT it.sale_id FROM trovesnap.items it WHERE it.id = ANY (v_ids) ORDER BY 1);
    WHEN 'buyer_notification' THEN
        IF cardinality(v_ids) <> 1 THEN
            PERFORM trovesnap.fail('invalid_input:targets', 'one item or one sale');
        END IF;
        v_target := v_ids[1];
        IF v_target ~ '^item_[A-Za-z0-9]{1,40}$' THEN
            v_kind := 'item';
            PERFORM trovesnap.item_targets(p, v_ids);
            PERFORM trovesnap.check_versions(p_proposal -> 'expected_versions', false);
            SELECT * INTO i FROM trovesnap.items it WHERE it.id = v_target;
            IF i.status <> 'published' THEN
                PERFORM trovesnap.fail('transition_invalid', format('item %s is %s: only published items are announced', v_target, i.status));
            END IF;
            v_sales := ARRAY[i.sale_id];
        ELSE
            v_kind := 'sale';
            PERFORM trovesnap.check_ref('estate_sales', 'sale_id', v_target);
            PERFORM trovesnap.require_assigned(p, v_target, 'sale', v_target);
            PERFORM trovesnap.check_versions(p_proposal -> 'expected_versions', false);
            SELECT * INTO s FROM trovesnap.estate_sales es WHERE es.id = v_target;
            IF s.status NOT IN ('published', 'live') THEN
                PERFORM trovesnap.fail('transition_invalid', format('sale %s is %s: only published sales are announced', v_target, s.status));
            END IF;
            v_sales := ARRAY[v_target];
        END IF;
        IF jsonb_typeof(p_proposal -> 'notification') IS DISTINCT FROM 'object' THEN
            PERFORM trovesnap.fail('invalid_input:notification', 'a notification proposal carries its reviewable plan');
        END IF;
    WHEN 'export_delivery' THEN
        v_kind := 'export';
        v_target := v_ids[1];
        PERFORM trovesnap.check_ref('export_drafts', 'export_id', v_target);
        PERFORM trovesnap.require_export_assigned(p, v_target);
        v_facts := trovesnap.export_facts(v_target);
        IF v_facts ->> 'status' NOT IN ('staged', 'delivery_proposed') THEN
            PERFORM trovesnap.fail('transition_invalid', format('export %s is %s: only a staged export can be delivered',
                                                                v_target, v_facts ->> 'status'));
        END IF;
        IF (v_facts ->> 'valid_count')::integer = 0 OR jsonb_array_length(v_facts -> 'rows') = 0 THEN
            PERFORM trovesnap.fail('transition_invalid', format('export %s has no item that passes %s''s checks',
                                                                v_target, v_facts ->> 'channel'));
        END IF;
        IF p_proposal -> 'expected_versions' IS DISTINCT FROM
           jsonb_build_array(jsonb_build_object('id', v_target, 'version', 1)) || (
               SELECT jsonb_agg(jsonb_build_object('id', r ->> 'item_id', 'version', (r ->> 'staged_version')::integer) ORDER BY n)
               FROM jsonb_array_elements(v_facts -> 'rows') WITH ORDINALITY AS x(r, n)) THEN
            PERFORM trovesnap.fail('invalid_input:expected_versions', 'the export, then each valid item at its staged version');
        END IF;
        PERFORM trovesnap.check_versions(p_proposal -> 'expected_versions', false);
        v_sales := ARRAY(SELECT DISTINCT r ->> 'sale_id' FROM jsonb_array_elements(v_facts -> 'rows') r ORDER BY 1);
    END CASE;
    IF p_proposal ->> 'target_kind' IS DISTINCT FROM v_kind THEN
        PERFORM trovesnap.fail('invalid_input:target_kind', 'must be ' || v_kind);
    END IF;
    -- The sales the targets belong to are a policy's scope: they must be exact.
    IF ARRAY(SELECT jsonb_array_elements_text(coalesce(p_proposal -> 'sale_ids', '[]')) ORDER BY 1) IS DISTINCT FROM v_sales THEN
        PERFORM trovesnap.fail('invalid_input:sale_ids', 'the sales of the targets');
    END IF;

    v_body := p_proposal || jsonb_build_object('id', '', 'proposal_hash', '', 'status', '', 'correlation_id', '');
    INSERT INTO trovesnap.proposals (id, tenant_id, tool_name, action, requested_by_client, requested_by_actor,
                                     correlation_id, body, proposal_hash, created_at, expires_at, status)
    VALUES (v_id, p.tenant_id, v_tool[1], v_action, p.client_id, p.actor_id, coalesce(p_event ->> 'correlation_id', ''),
            v_body, p_proposal ->> 'proposal_hash', v_created, v_expires, 'pending_approval');

    v_result := p_proposal || jsonb_build_object('status', 'pending_approval',
                                                 'correlation_id', coalesce(p_event ->> 'correlation_id', ''));
    v_related := trovesnap.empty_related() || jsonb_build_object('proposal_ids', jsonb_build_array(v_id));
    IF v_kind = 'candidate' THEN
        v_related := v_related || jsonb_build_object('candidate_ids', to_jsonb(v_ids));
    ELSIF v_kind = 'item' THEN
        v_related := v_related || jsonb_build_object('item_ids', to_jsonb(v_ids));
    END IF;
    -- A proposal's own creation event names it in approval.proposal_id (§35):
    -- it is the approval request later events answer.
    IF coalesce(v_event -> 'approval' ->> 'proposal_id', '') = '' AND coalesce(v_event -> 'tool' ->> 'tier', '') = 'action_proposal' THEN
        v_event := jsonb_set(v_event, '{approval}', coalesce(v_event -> 'approval', '{}'::jsonb)
                                                    || jsonb_build_object('proposal_id', v_id));
    END IF;
    RETURN trovesnap.finish_write(p, p_tool, p_tool_major, p_key, p_fingerprint, v_event, p_started_at, v_result, v_related);
END
$$;

-- mcp_get_proposal: a proposal of the caller's tenant as stored (expired
-- when past its expiry); another tenant's is like a missing one.
CREATE FUNCTION public.mcp_get_proposal(p_credential_hash text, p_proposal_id text) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    p  trovesnap.principal;
    pr trovesnap.proposals;
BEGIN
    p := trovesnap.enter_any_group(p_credential_hash, ARRAY['tenant_read', 'action_proposal', 'controlled_action'], NULL);
    PERFORM trovesnap.check_ref('proposals', 'proposal_id', p_proposal_id);
    SELECT * INTO pr FROM trovesnap.proposals x WHERE x.id = p_proposal_id;
    RETURN trovesnap.proposal_json(pr);
END
$$;

-- mcp_approval_state: what could authorise a proposal of the caller's
-- tenant — its grants (issue order) and the tenant's active policies that
-- name p_tool, each with what it authorised today.
CREATE FUNCTION public.mcp_approval_state(p_credential_hash text, p_proposal_id text, p_tool text) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    p trovesnap.principal;
BEGIN
    p := trovesnap.enter_any_group(p_credential_hash, ARRAY['tenant_read', 'action_proposal', 'controlled_action'], NULL);
    RETURN jsonb_build_object(
        'grants', (SELECT coalesce(jsonb_agg(trovesnap.grant_json(g) ORDER BY g.issued_at, g.id), '[]')
                   FROM trovesnap.approval_grants g WHERE g.tenant_id = p.tenant_id AND g.proposal_id = p_proposal_id),
        'policies', (SELECT coalesce(jsonb_agg(jsonb_build_object('policy', trovesnap.policy_json(pol),
                                                                  'usage', trovesnap.policy_usage(pol.id)) ORDER BY pol.id), '[]')
                     FROM trovesnap.automation_policies pol
                     WHERE pol.tenant_id = p.tenant_id AND pol.status = 'active'
                       AND coalesce(pol.body -> 'allowed_tools', '[]') ? p_tool));
END
$$;

-- mcp_execute_proposal runs an approved proposal's ONE domain function, in
-- ONE transaction with its idempotency row and its plugin_event, exactly
-- like the embedded store's ExecuteProposal:
--   1. a live key replays its first result (writing nothing) or conflicts;
--   2. the client must still be active, allowed controlled_action and hold
--      the tool's permissions;
--   3. the proposal, locked: still the hash the approval step verified, not
--      executed or rejected, unexpired, executed by this tool;
--   4. the authority re-checked and used up under that lock: a human grant
--      (active, unconsumed, unexpired, bound to this proposal's id, hash and
--      tool) is consumed; a policy (active at the decided version, within
--      its daily limits) records a policy grant and a use;
--   5. every target still at its expected version;
--   6. the domain function; the proposal executed; the event (with its
--      cause) and the idempotency row.
-- An item action runs on each frozen target in order; a buyer notification
-- or an export delivery queues its one outbound request (migration 10) and
-- reports its targets 'queued'.
-- Two servers executing one grant serialise on the proposal's row lock:
-- exactly one executes, the other finds it executed (approval_consumed).
-- Any refusal rolls back everything, the consumption included.
CREATE FUNCTION public.mcp_execute_proposal(p_credential_hash text, p_tool text, p_tool_major integer, p_key text,
                                            p_fingerprint text, p_event jsonb, p_started_at timestamptz,
                                            p_proposal_id text, p_auth jsonb) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    p          trovesnap.principal;
    v_now      timestamptz := now();
    v_replay   jsonb;
    v_perm     text;
    v_perms    text[];
    pr         trovesnap.proposals;
    g          trovesnap.approval_grants;
    pol        trovesnap.automation_policies;
    v_hash     text := coalesce(p_auth ->> 'proposal_hash', '');
    v_grant_id text := coalesce(p_auth ->> 'grant_id', '');
    v_pol_id   text := coalesce(p_auth ->> 'policy_id', '');
    v_used     text;
    v_usage    jsonb;
    v_cost     numeric;
    v_tool     text[];
    v_target   text;
    v_item     text;
    v_version  integer;
    v_results  jsonb := '[]';
    v_result   jsonb;
    v_related  jsonb;
    v_event    jsonb := p_event;
BEGIN
    PERFORM trovesnap.begin_rpc('trovesnap_mcp');
    p := trovesnap.lookup_client(p_credential_hash);
    PERFORM trovesnap.check_write_meta(p_tool, p_tool_major, p_key, p_fingerprint, p_event);
    IF jsonb_typeof(p_auth) IS DISTINCT FROM 'object' THEN
        PERFORM trovesnap.fail('invalid_input:authorization', 'an object is required');
    END IF;
    PERFORM set_config('trovesnap.tenant_id', p.tenant_id, true);
    v_replay := trovesnap.idem_replay(p, p_tool, p_tool_major, p_key, p_fingerprint, true);
    IF v_replay IS NOT NULL THEN
        RETURN v_replay;
    END IF;
    PERFORM trovesnap.require_active(p);
    -- The permissions of each tool (catalog/actions.go).
    v_perms := CASE p_tool
        WHEN 'trove_execute_candidate_promotion' THEN ARRAY['candidate.read', 'item.create_candidate']
        WHEN 'trove_publish_item' THEN ARRAY['item.publish']
        WHEN 'trove_publish_sale' THEN ARRAY['sale.publish']
        WHEN 'trove_update_item_status' THEN ARRAY['item.update_status']
        WHEN 'trove_archive_item' THEN ARRAY['item.update_status']
        WHEN 'trove_apply_bulk_item_update' THEN ARRAY['item.update_price']
        WHEN 'trove_bind_item_identity' THEN ARRAY['item.bind_identity']
        WHEN 'trove_release_item_identity' THEN ARRAY['item.bind_identity']
        WHEN 'trove_apply_disposition_action' THEN ARRAY['disposition.apply']
        WHEN 'trove_notify_matched_buyers' THEN ARRAY['buyer.notify']
        WHEN 'trove_deliver_export' THEN ARRAY['export.deliver'] END;
    IF v_perms IS NULL THEN
        PERFORM trovesnap.fail('invalid_input:tool', 'not a controlled action available in live mode');
    END IF;
    FOREACH v_perm IN ARRAY v_perms
    LOOP
        PERFORM trovesnap.require_access(p, 'controlled_action', ARRAY[v_perm]);
    END LOOP;

    -- 3: the proposal, locked until commit.
    SELECT * INTO pr FROM trovesnap.proposals x WHERE x.id = p_proposal_id FOR UPDATE;
    IF NOT FOUND THEN
        PERFORM trovesnap.fail('invalid_reference:proposal_id',
            jsonb_build_object('id', p_proposal_id, 'cross_tenant', trovesnap.owner_of('proposals', p_proposal_id) IS NOT NULL)::text);
    END IF;
    IF v_hash = '' OR pr.proposal_hash <> v_hash THEN
        PERFORM trovesnap.fail('proposal_changed', 'proposal ' || pr.id);
    ELSIF pr.status = 'executed' THEN
        PERFORM trovesnap.fail('approval_consumed', format('proposal %s was already executed', pr.id));
    ELSIF pr.status = 'rejected' THEN
        PERFORM trovesnap.fail('approval_invalid', format('proposal %s was rejected', pr.id));
    ELSIF v_now >= pr.expires_at THEN
        PERFORM trovesnap.fail('approval_expired', format('proposal %s expired', pr.id));
    ELSIF pr.tool_name <> p_tool THEN
        PERFORM trovesnap.fail('approval_invalid', format('proposal %s is for %s', pr.id, pr.tool_name));
    END IF;

    -- 4: the authority, re-checked and used up.
    IF v_grant_id <> '' THEN
        SELECT * INTO g FROM trovesnap.approval_grants x WHERE x.id = v_grant_id FOR UPDATE;
        IF NOT FOUND THEN
            PERFORM trovesnap.fail('approval_invalid', 'grant ' || v_grant_id);
        ELSIF g.tenant_id <> pr.tenant_id OR g.proposal_id <> pr.id OR g.tool <> pr.tool_name THEN
            PERFORM trovesnap.fail('approval_invalid', format('grant %s is for another proposal', g.id));
        ELSIF g.proposal_hash <> pr.proposal_hash THEN
            PERFORM trovesnap.fail('proposal_changed', 'grant ' || g.id);
        ELSIF g.status = 'revoked' THEN
            PERFORM trovesnap.fail('approval_revoked', 'grant ' || g.id);
        ELSIF g.status = 'consumed' THEN
            PERFORM trovesnap.fail('approval_consumed', 'grant ' || g.id);
        ELSIF v_now >= g.expires_at THEN
            PERFORM trovesnap.fail('approval_expired', 'grant ' || g.id);
        END IF;
        IF g.single_use THEN
            UPDATE trovesnap.approval_grants SET status = 'consumed', consumed_at = v_now
            WHERE id = g.id AND status = 'active';
            IF NOT FOUND THEN
                PERFORM trovesnap.fail('approval_consumed', 'grant ' || g.id);
            END IF;
        END IF;
        v_used := g.id;
    ELSIF v_pol_id <> '' THEN
        -- The policy row lock serialises the daily count of its uses.
        SELECT * INTO pol FROM trovesnap.automation_policies x WHERE x.id = v_pol_id FOR UPDATE;
        IF NOT FOUND THEN
            PERFORM trovesnap.fail('approval_invalid', 'policy ' || v_pol_id);
        ELSIF pol.tenant_id <> pr.tenant_id OR NOT (coalesce(pol.body -> 'allowed_tools', '[]') ? pr.tool_name) THEN
            PERFORM trovesnap.fail('approval_invalid', format('policy %s does not cover this proposal', pol.id));
        ELSIF pol.status = 'revoked' THEN
            PERFORM trovesnap.fail('approval_revoked', format('policy %s was revoked', pol.id));
        ELSIF pol.status <> 'active' OR pol.version IS DISTINCT FROM (p_auth ->> 'policy_version')::integer THEN
            PERFORM trovesnap.fail('approval_revoked', format('policy %s changed (now v%s, %s)', pol.id, pol.version, pol.status));
        END IF;
        -- A policy never stands in for an explicit human approval (§18).
        IF coalesce(pr.body ->> 'approval_requirement', '') <> 'human_or_policy' THEN
            PERFORM trovesnap.fail('approval_required', format('proposal %s needs an explicit human approval', pr.id));
        END IF;
        v_usage := trovesnap.policy_usage(pol.id);
        v_cost := coalesce((pr.body -> 'impact' ->> 'estimated_cost_usd')::numeric, 0);
        IF (v_usage ->> 'actions_today')::integer + 1 > coalesce((pol.body -> 'limits' ->> 'maximum_daily_actions')::integer, 0)
           OR (v_usage ->> 'cost_today')::numeric + v_cost > coalesce((pol.body -> 'limits' ->> 'maximum_cost_usd_per_day')::numeric, 0) THEN
            PERFORM trovesnap.fail('approval_required', format('policy %s reached its daily limit', pol.id));
        END IF;
        -- A policy authorisation is a distinguishable grant record, consumed
        -- at once (its expiry only satisfies the table: it is never usable).
        v_used := trovesnap.new_id('approval');
        INSERT INTO trovesnap.approval_grants (id, tenant_id, proposal_id, proposal_hash, issuer_type, policy_id,
            policy_version, tool, target_ids, constraints, status, single_use, issued_at, expires_at, consumed_at)
        VALUES (v_used, pr.tenant_id, pr.id, pr.proposal_hash, 'policy', pol.id, pol.version, pr.tool_name,
            ARRAY(SELECT jsonb_array_elements_text(pr.body -> 'target_ids')),
            jsonb_build_object('maximum_items', coalesce((pol.body -> 'conditions' ->> 'maximum_items_per_run')::integer, 0),
                               'maximum_cost_usd', 0, 'allow_publication', false, 'allow_notifications', false),
            'consumed', true, v_now, v_now + interval '1 microsecond', v_now);
        INSERT INTO trovesnap.policy_uses (tenant_id, policy_id, policy_version, proposal_id, grant_id, cost_usd, used_at)
        VALUES (pr.tenant_id, pol.id, pol.version, pr.id, v_used, v_cost, v_now);
        v_event := jsonb_set(v_event, '{approval}', coalesce(v_event -> 'approval', '{}'::jsonb)
                                                    || jsonb_build_object('approval_id', v_used));
    ELSE
        PERFORM trovesnap.fail('approval_required', 'no grant or policy');
    END IF;

    -- 5: the frozen target set at its expected versions: nothing else runs.
    PERFORM trovesnap.check_versions(pr.body -> 'expected_versions', true);

    -- 6: the ONE domain function.
    v_tool := trovesnap.action_tool(pr.action);
    v_related := trovesnap.empty_related() || jsonb_build_object('proposal_ids', jsonb_build_array(pr.id));
    CASE pr.action
    WHEN 'promote_candidate' THEN
        v_target := pr.body -> 'target_ids' ->> 0;
        v_item := trovesnap.promote_inventory_candidate(pr);
        v_results := jsonb_build_array(
            jsonb_build_object('target_id', v_target, 'outcome', 'applied', 'new_version', NULL),
            jsonb_build_object('target_id', v_item, 'outcome', 'applied', 'new_version', 1));
        v_related := v_related || jsonb_build_object('candidate_ids', jsonb_build_array(v_target),
                                                     'item_ids', jsonb_build_array(v_item));
    WHEN 'publish_item' THEN
        FOR v_target IN SELECT jsonb_array_elements_text(pr.body -> 'target_ids')
        LOOP
            v_version := trovesnap.publish_item(pr, v_target);
            v_results := v_results || jsonb_build_array(jsonb_build_object('target_id', v_target, 'outcome', 'applied',
                                                                           'new_version', v_version));
        END LOOP;
        v_related := v_related || jsonb_build_object('item_ids', pr.body -> 'target_ids');
    WHEN 'publish_sale' THEN
        v_target := pr.body -> 'target_ids' ->> 0;
        v_version := trovesnap.publish_sale(pr, v_target);
        v_results := jsonb_build_array(jsonb_build_object('target_id', v_target, 'outcome', 'applied', 'new_version', v_version));
    WHEN 'status_transition', 'archive_item', 'bulk_item_update', 'bind_identity', 'release_identity', 'disposition_action' THEN
        FOR v_target IN SELECT jsonb_array_elements_text(pr.body -> 'target_ids')
        LOOP
            v_version := trovesnap.apply_item_action(pr, v_target);
            v_results := v_results || jsonb_build_array(jsonb_build_object('target_id', v_target, 'outcome', 'applied',
                                                                           'new_version', v_version));
        END LOOP;
        v_related := v_related || jsonb_build_object('item_ids', pr.body -> 'target_ids');
    WHEN 'buyer_notification' THEN
        PERFORM trovesnap.notify_matched_buyers(pr);
        v_results := jsonb_build_array(jsonb_build_object('target_id', pr.body -> 'target_ids' ->> 0, 'outcome', 'queued',
                                                          'new_version', NULL));
    WHEN 'export_delivery' THEN
        PERFORM trovesnap.deliver_export(pr);
        SELECT jsonb_agg(jsonb_build_object('target_id', ev ->> 'id', 'outcome', 'queued', 'new_version', NULL) ORDER BY n)
        INTO v_results FROM jsonb_array_elements(pr.body -> 'expected_versions') WITH ORDINALITY AS x(ev, n);
        v_related := v_related || jsonb_build_object('item_ids', coalesce((
            SELECT jsonb_agg(ev ->> 'id' ORDER BY n) FROM jsonb_array_elements(pr.body -> 'expected_versions') WITH ORDINALITY AS x(ev, n)
            WHERE n > 1), '[]'::jsonb));
    ELSE
        PERFORM trovesnap.fail('transition_invalid', format('%s is not executed in live mode', pr.action));
    END CASE;
    UPDATE trovesnap.proposals SET status = 'executed', executed_at = v_now WHERE id = pr.id;

    v_result := jsonb_build_object('proposal_id', pr.id, 'executed', true, 'simulated', false,
        'domain_function', v_tool[3], 'results', v_results,
        'approval', jsonb_build_object('decision', coalesce(p_auth ->> 'decision', ''), 'approval_id', v_used,
                                       'policy_id', nullif(v_pol_id, '')));
    IF v_item IS NOT NULL THEN
        v_result := v_result || jsonb_build_object('created_item_ids', jsonb_build_array(v_item));
    END IF;
    RETURN trovesnap.finish_write(p, p_tool, p_tool_major, p_key, p_fingerprint, v_event, p_started_at, v_result, v_related);
END
$$;

-- Nothing here is executable but by its owner, except the RPCs granted below.
SELECT trovesnap.revoke_execute(ARRAY[
    'proposal_status', 'proposal_json', 'grant_json', 'policy_json', 'policy_usage', 'action_tool',
    'require_assigned', 'require_export_assigned', 'item_state', 'item_ready', 'max_bulk_targets', 'target_version', 'check_versions',
    'promote_inventory_candidate', 'publish_item', 'publish_sale', 'mcp_proposal_state', 'mcp_create_proposal',
    'mcp_get_proposal', 'mcp_approval_state', 'mcp_execute_proposal']);
GRANT EXECUTE ON FUNCTION
    public.mcp_proposal_state(text, text, integer, text, text, text, jsonb, jsonb),
    public.mcp_create_proposal(text, text, integer, text, text, jsonb, timestamptz, jsonb),
    public.mcp_get_proposal(text, text),
    public.mcp_approval_state(text, text, text),
    public.mcp_execute_proposal(text, text, integer, text, text, jsonb, timestamptz, text, jsonb)
TO trovesnap_mcp;

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (6, '20261130120200_trovesnap_proposal_rpcs');

RESET ROLE;
