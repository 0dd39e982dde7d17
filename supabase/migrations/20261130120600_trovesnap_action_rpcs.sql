-- trovesnap live mode, migration 10: the remaining controlled actions —
-- status transitions and archiving, bulk item updates, QR identity binding
-- and release, dispositions, buyer notifications and export delivery —
-- exactly as the embedded store runs them (store/build.go,
-- store/execute.go, store/domainfn.go): their records (item_change_history,
-- field-level history of bulk updates and QR changes; item_dispositions;
-- outbound_requests), what their builders read, what creating one of their
-- proposals re-verifies, and their domain functions. The RPCs are
-- migration 6's, which know every action (action_tool names the executing
-- tool and approval of each; mcp_proposal_state answers the state these
-- builders read, mcp_create_proposal re-verifies each action under the
-- key's lock with check_item_proposal, mcp_execute_proposal dispatches to
-- the domain functions below in its ONE transaction; target_version knows
-- staged exports).
--
-- Outbound effects. Mock mode records a *simulated* delivery. Live mode has
-- no notification or channel-delivery service in this project: executing a
-- buyer notification or an export delivery records ONE outbound request
-- (status 'queued') for an external worker and reports its targets
-- 'queued' — never sent, never delivered (docs/live-outbound.md).
--
-- Errors are trovesnap.fail codes; a reasoned code's detail is a short
-- printable reason without ';' (internal/live/rpc.go safeReason).

SET ROLE trovesnap_owner;

-- ---------------------------------------------------------------------------
-- Tables (store/migrations/0005_approvals.sql)
-- ---------------------------------------------------------------------------

-- Field-level change history of items: every field a bulk update or an
-- identity change wrote, before and after, and the proposal that did it.
-- Append-only. Values are text; a missing price is NULL.
CREATE TABLE trovesnap.item_change_history (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id   text COLLATE "C" NOT NULL,
    item_id     text COLLATE "C" NOT NULL,
    field       text NOT NULL CHECK (field IN ('room', 'category', 'title', 'description', 'price_cents', 'qr_code')),
    from_value  text,
    to_value    text,
    proposal_id text COLLATE "C" NOT NULL,
    changed_at  timestamptz NOT NULL,
    FOREIGN KEY (tenant_id, item_id) REFERENCES trovesnap.items (tenant_id, id),
    FOREIGN KEY (tenant_id, proposal_id) REFERENCES trovesnap.proposals (tenant_id, id)
);
CREATE INDEX item_change_history_item ON trovesnap.item_change_history (tenant_id, item_id, changed_at);
CREATE TRIGGER item_change_history_append_only BEFORE UPDATE OR DELETE ON trovesnap.item_change_history
    FOR EACH ROW EXECUTE FUNCTION trovesnap.refuse_change();
CREATE TRIGGER item_change_history_no_truncate BEFORE TRUNCATE ON trovesnap.item_change_history
    FOR EACH STATEMENT EXECUTE FUNCTION trovesnap.refuse_change();

-- What was decided for an unsold item (one decision per item, as in the
-- store). Append-only. Never a payment: a buy-out offer is the offer the
-- seller approved, not a settlement.
CREATE TABLE trovesnap.item_dispositions (
    item_id      text COLLATE "C" PRIMARY KEY,
    tenant_id    text COLLATE "C" NOT NULL,
    action       text NOT NULL CHECK (action IN ('donate', 'consign', 'haul_away', 'return_to_family', 'buyout_offer')),
    counterparty text NOT NULL DEFAULT '',
    offer_cents  bigint CHECK (offer_cents IS NULL OR offer_cents >= 0),
    proposal_id  text COLLATE "C" NOT NULL,
    applied_at   timestamptz NOT NULL,
    FOREIGN KEY (tenant_id, item_id) REFERENCES trovesnap.items (tenant_id, id),
    FOREIGN KEY (tenant_id, proposal_id) REFERENCES trovesnap.proposals (tenant_id, id)
);
CREATE TRIGGER item_dispositions_append_only BEFORE UPDATE OR DELETE ON trovesnap.item_dispositions
    FOR EACH ROW EXECUTE FUNCTION trovesnap.refuse_change();
CREATE TRIGGER item_dispositions_no_truncate BEFORE TRUNCATE ON trovesnap.item_dispositions
    FOR EACH STATEMENT EXECUTE FUNCTION trovesnap.refuse_change();

-- An outbound effect an executed proposal asked for, waiting for a worker
-- outside this project (docs/live-outbound.md): ONE request per proposal,
-- created 'queued'. Its content never changes; a worker may only record the
-- outcome once (queued → delivered or failed, with a short detail). It is
-- never deleted. The payload is the approved plan — counts, channels and
-- the message preview — never a buyer identity.
CREATE TABLE trovesnap.outbound_requests (
    id            text COLLATE "C" PRIMARY KEY CHECK (id <> ''),
    tenant_id     text COLLATE "C" NOT NULL,
    kind          text NOT NULL CHECK (kind IN ('buyer_notification', 'export_delivery')),
    proposal_id   text COLLATE "C" NOT NULL,
    target_id     text COLLATE "C" NOT NULL,
    status        text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'delivered', 'failed')),
    status_detail text NOT NULL DEFAULT '' CHECK (length(status_detail) <= 500),
    payload       jsonb NOT NULL CHECK (jsonb_typeof(payload) = 'object'),
    requested_by  text COLLATE "C" NOT NULL DEFAULT '',
    created_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL,
    UNIQUE (tenant_id, proposal_id, kind),
    FOREIGN KEY (tenant_id, proposal_id) REFERENCES trovesnap.proposals (tenant_id, id)
);
CREATE INDEX outbound_requests_queued ON trovesnap.outbound_requests (created_at, id) WHERE status = 'queued';
-- A staged export is delivered once: one delivery request per export, ever.
CREATE UNIQUE INDEX outbound_requests_one_export_delivery ON trovesnap.outbound_requests (target_id)
    WHERE kind = 'export_delivery';

CREATE FUNCTION trovesnap.outbound_request_guard() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF (NEW.id, NEW.tenant_id, NEW.kind, NEW.proposal_id, NEW.target_id, NEW.payload, NEW.requested_by, NEW.created_at)
       IS DISTINCT FROM (OLD.id, OLD.tenant_id, OLD.kind, OLD.proposal_id, OLD.target_id, OLD.payload, OLD.requested_by,
                         OLD.created_at) THEN
        RAISE EXCEPTION USING ERRCODE = 'P0001', MESSAGE = 'trovesnap:append_only:outbound_requests';
    END IF;
    IF NEW.status IS DISTINCT FROM OLD.status AND (OLD.status <> 'queued' OR NEW.status = 'queued') THEN
        RAISE EXCEPTION USING ERRCODE = 'P0001', MESSAGE = 'trovesnap:transition_invalid',
            DETAIL = format('outbound request %s is %s', OLD.id, OLD.status);
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER outbound_requests_guard BEFORE UPDATE ON trovesnap.outbound_requests
    FOR EACH ROW EXECUTE FUNCTION trovesnap.outbound_request_guard();
CREATE TRIGGER outbound_requests_no_delete BEFORE DELETE ON trovesnap.outbound_requests
    FOR EACH ROW EXECUTE FUNCTION trovesnap.refuse_change();
CREATE TRIGGER outbound_requests_no_truncate BEFORE TRUNCATE ON trovesnap.outbound_requests
    FOR EACH STATEMENT EXECUTE FUNCTION trovesnap.refuse_change();

-- Row level security, as migration 2 sets it for its tables.
SELECT trovesnap.tenant_rls(ARRAY['item_change_history', 'item_dispositions', 'outbound_requests']);

-- ---------------------------------------------------------------------------
-- Helpers
-- ---------------------------------------------------------------------------

-- can_transition: the item lifecycle of internal/domain/lifecycle.go (a Go
-- test compares every pair). Publication happens only through
-- publish_item; sold and pending_pickup never settle a payment.
CREATE FUNCTION trovesnap.can_transition(p_from text, p_to text) RETURNS boolean
    LANGUAGE sql IMMUTABLE
    AS $$
        SELECT coalesce(p_to = ANY (CASE p_from
            WHEN 'draft' THEN ARRAY['ready', 'withdrawn', 'archived']
            WHEN 'ready' THEN ARRAY['draft', 'published', 'withdrawn', 'archived']
            WHEN 'published' THEN ARRAY['ready', 'on_hold', 'pending_pickup', 'sold', 'withdrawn']
            WHEN 'on_hold' THEN ARRAY['published', 'pending_pickup', 'sold', 'withdrawn']
            WHEN 'pending_pickup' THEN ARRAY['sold']
            WHEN 'sold' THEN ARRAY['archived']
            WHEN 'withdrawn' THEN ARRAY['ready', 'archived']
            ELSE ARRAY[]::text[] END), false)
    $$;

-- bulk_field_perm: the permission a bulk update needs to change a field
-- (domain.bulkFields; §30: bulk actions cannot bypass field-level
-- permissions); NULL for a field a bulk update may not change.
CREATE FUNCTION trovesnap.bulk_field_perm(p_field text) RETURNS text
    LANGUAGE sql IMMUTABLE
    AS $$
        SELECT CASE p_field
            WHEN 'room' THEN 'proposal.create'
            WHEN 'category' THEN 'proposal.create'
            WHEN 'title' THEN 'proposal.create'
            WHEN 'description' THEN 'proposal.create'
            WHEN 'price_cents' THEN 'item.update_price'
        END
    $$;

-- check_bulk_changes: a bulk update's changes before any target is read
-- (domain.BulkUpdateChanges): at least one, each a field a bulk update may
-- change and the caller may change.
CREATE FUNCTION trovesnap.check_bulk_changes(p trovesnap.principal, p_changes jsonb) RETURNS void
    LANGUAGE plpgsql STABLE
    AS $$
DECLARE
    f    text;
    perm text;
BEGIN
    IF jsonb_typeof(p_changes) IS DISTINCT FROM 'object' OR p_changes = '{}'::jsonb THEN
        PERFORM trovesnap.fail('invalid_input:changes', 'name at least one field to change');
    END IF;
    FOR f IN SELECT k FROM jsonb_object_keys(p_changes) k ORDER BY k COLLATE "C"
    LOOP
        perm := trovesnap.bulk_field_perm(f);
        IF perm IS NULL THEN
            PERFORM trovesnap.fail('invalid_input:changes', left(f, 60) || ' cannot be changed by a bulk update');
        END IF;
        IF NOT trovesnap.has_perm(p.role, perm) THEN
            PERFORM trovesnap.fail('permission_denied:' || perm);
        END IF;
    END LOOP;
END
$$;

-- item_targets: item targets as a builder reads them (item_state), in
-- order, each visible in the tenant (else invalid_reference item_id) and in
-- an assigned sale for a sale-scoped member (else sale_assignment).
CREATE FUNCTION trovesnap.item_targets(p trovesnap.principal, p_ids text[]) RETURNS jsonb
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_id  text;
    i     trovesnap.items;
    v_out jsonb := '[]';
BEGIN
    FOREACH v_id IN ARRAY p_ids
    LOOP
        PERFORM trovesnap.check_ref('items', 'item_id', v_id);
        SELECT * INTO i FROM trovesnap.items it WHERE it.id = v_id;
        PERFORM trovesnap.require_assigned(p, i.sale_id, 'item', v_id);
        v_out := v_out || jsonb_build_array(trovesnap.item_state(i));
    END LOOP;
    RETURN v_out;
END
$$;

-- qr_bound_elsewhere: whether another item, of any tenant, carries a code
-- (one scan, one item: codes are unique across tenants).
CREATE FUNCTION trovesnap.qr_bound_elsewhere(p_code text, p_item_id text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    v boolean;
BEGIN
    PERFORM set_config('trovesnap.system', 'on', true);
    SELECT EXISTS (SELECT 1 FROM trovesnap.items i WHERE i.qr_code = p_code AND i.id <> p_item_id) INTO v;
    PERFORM set_config('trovesnap.system', 'off', true);
    RETURN v;
END
$$;

-- tag_facts: what the builder's tagFree reads about binding p_code to an
-- item: is it one of the tenant's printed labels, is another item bound to it.
CREATE FUNCTION trovesnap.tag_facts(p_tenant_id text, p_code text, p_item_id text) RETURNS jsonb
    LANGUAGE sql STABLE
    AS $$
        SELECT jsonb_build_object('code', p_code,
            'printed', EXISTS (SELECT 1 FROM trovesnap.qr_labels l WHERE l.tenant_id = p_tenant_id AND l.code = p_code),
            'bound_elsewhere', trovesnap.qr_bound_elsewhere(p_code, p_item_id))
    $$;

-- require_tag_free: a tag must be one of the tenant's printed labels and
-- bound to no other item (the store's checkTagFree).
CREATE FUNCTION trovesnap.require_tag_free(p_tenant_id text, p_code text, p_item_id text) RETURNS void
    LANGUAGE plpgsql
    AS $$
DECLARE
    f jsonb := trovesnap.tag_facts(p_tenant_id, p_code, p_item_id);
BEGIN
    IF NOT (f ->> 'printed')::boolean THEN
        PERFORM trovesnap.fail('transition_invalid', format('tag %s is not one of your printed labels', left(p_code, 60)));
    END IF;
    IF (f ->> 'bound_elsewhere')::boolean THEN
        PERFORM trovesnap.fail('transition_invalid', format('tag %s is bound to another item', left(p_code, 60)));
    END IF;
END
$$;

-- sale_demand: the aggregated demand signals of a sale — the totals and
-- the totals per top-level category (the first part of the dotted path) —
-- from which the builder sizes an audience. Counts only, never a buyer.
CREATE FUNCTION trovesnap.sale_demand(p_sale_id text) RETURNS jsonb
    LANGUAGE sql STABLE
    AS $$
        SELECT jsonb_build_object('sale_id', p_sale_id,
            'saves', (SELECT coalesce(sum(d.saves), 0) FROM trovesnap.demand_signals d WHERE d.sale_id = p_sale_id),
            'follows', (SELECT coalesce(sum(d.follows), 0) FROM trovesnap.demand_signals d WHERE d.sale_id = p_sale_id),
            'by_top', coalesce((
                SELECT jsonb_object_agg(x.top, jsonb_build_object('saves', x.saves, 'follows', x.follows))
                FROM (SELECT split_part(d.category, '.', 1) AS top, sum(d.saves) AS saves, sum(d.follows) AS follows
                      FROM trovesnap.demand_signals d WHERE d.sale_id = p_sale_id GROUP BY 1) x), '{}'::jsonb))
    $$;

-- status_candidate_facts: the kind and review status of the tenant's
-- candidate an imported status names ({found: false} when there is none).
CREATE FUNCTION trovesnap.status_candidate_facts(p_id text) RETURNS jsonb
    LANGUAGE sql STABLE
    AS $$
        SELECT coalesce((SELECT jsonb_build_object('found', true, 'kind', c.kind, 'review_status', c.review_status)
                         FROM trovesnap.inventory_candidates c
                         WHERE c.tenant_id = trovesnap.ctx_tenant() AND c.id = p_id),
                        jsonb_build_object('found', false))
    $$;

-- change_value: the `to` (p_end 'from': the `from`) of a proposal's change
-- of a target's field; NULL when the proposal has none.
CREATE FUNCTION trovesnap.change_value(p_changes jsonb, p_target text, p_field text, p_end text DEFAULT 'to') RETURNS jsonb
    LANGUAGE sql IMMUTABLE
    AS $$
        SELECT ch -> p_end FROM jsonb_array_elements(coalesce(p_changes, '[]')) WITH ORDINALITY AS c(ch, n)
        WHERE ch ->> 'target_id' = p_target AND ch ->> 'field' = p_field ORDER BY n DESC LIMIT 1
    $$;

-- check_item_proposal: what mcp_create_proposal re-verifies of an item
-- action under the key's lock, after the targets' references, assignment
-- and versions: each target in a state the action accepts and the changes
-- what its builder makes of them.
CREATE FUNCTION trovesnap.check_item_proposal(p trovesnap.principal, p_action text, p_ids text[], p_changes jsonb) RETURNS void
    LANGUAGE plpgsql
    AS $$
DECLARE
    i      trovesnap.items;
    ch     jsonb;
    v_id   text;
    v_to   text;
    v_src  text;
    v_cand jsonb;
    v_perm text;
    v_act  text;
    v_num  numeric;
    v_any  boolean := false;
BEGIN
    IF jsonb_typeof(p_changes) IS DISTINCT FROM 'array' THEN
        PERFORM trovesnap.fail('invalid_input:changes', 'the exact changes of the proposal');
    END IF;
    IF EXISTS (SELECT 1 FROM jsonb_array_elements(p_changes) c
               WHERE jsonb_typeof(c) IS DISTINCT FROM 'object' OR NOT (c ->> 'target_id' = ANY (p_ids))) THEN
        PERFORM trovesnap.fail('invalid_input:changes', 'every change is of a target');
    END IF;
    IF p_action IN ('status_transition', 'archive_item', 'bind_identity', 'release_identity') AND cardinality(p_ids) <> 1 THEN
        PERFORM trovesnap.fail('invalid_input:item_id', 'one item per proposal of this action');
    END IF;
    CASE p_action
    WHEN 'status_transition', 'archive_item' THEN
        SELECT * INTO i FROM trovesnap.items it WHERE it.id = p_ids[1];
        v_to := trovesnap.change_value(p_changes, i.id, 'status') #>> '{}';
        IF v_to IS NULL THEN
            PERFORM trovesnap.fail('invalid_input:changes', 'a status change names its new status');
        ELSIF v_to = 'published' THEN
            PERFORM trovesnap.fail('invalid_input:to_status', 'publication has its own proposal (trove_propose_item_publication)');
        ELSIF (p_action = 'archive_item') <> (v_to = 'archived') THEN
            PERFORM trovesnap.fail('invalid_input:to_status', 'archiving is proposed as archive_item and needs an explicit human approval');
        ELSIF NOT trovesnap.can_transition(i.status, v_to) THEN
            PERFORM trovesnap.fail('transition_invalid', format('item %s cannot go from %s to %s', i.id, i.status, left(v_to, 30)));
        END IF;
        v_src := trovesnap.change_value(p_changes, i.id, 'source') #>> '{}';
        IF v_src IS NOT NULL THEN
            IF v_src !~ '^imported:candidate_[A-Za-z0-9]{1,40}$' THEN
                PERFORM trovesnap.fail('invalid_input:changes', 'an imported status names its candidate');
            END IF;
            v_cand := trovesnap.status_candidate_facts(substr(v_src, 10));
            IF NOT (v_cand ->> 'found')::boolean THEN
                PERFORM trovesnap.fail('invalid_reference:status_candidate_id',
                    jsonb_build_object('id', substr(v_src, 10), 'cross_tenant', false)::text);
            END IF;
            IF v_cand ->> 'kind' <> 'status_update' OR v_cand ->> 'review_status' <> 'approved' THEN
                PERFORM trovesnap.fail('candidate_required',
                    format('imported status %s must be approved with approve_status_import first', substr(v_src, 10)));
            END IF;
        END IF;
    WHEN 'bulk_item_update' THEN
        FOREACH v_id IN ARRAY p_ids
        LOOP
            SELECT * INTO i FROM trovesnap.items it WHERE it.id = v_id;
            IF i.status IN ('sold', 'archived', 'pending_pickup') THEN
                PERFORM trovesnap.fail('transition_invalid', format('item %s is %s and cannot be changed', i.id, i.status));
            END IF;
        END LOOP;
        FOR ch IN SELECT c FROM jsonb_array_elements(p_changes) c
        LOOP
            v_any := true;
            v_perm := trovesnap.bulk_field_perm(ch ->> 'field');
            IF v_perm IS NULL THEN
                PERFORM trovesnap.fail('invalid_input:changes', left(coalesce(ch ->> 'field', ''), 60) || ' cannot be changed by a bulk update');
            END IF;
            IF NOT trovesnap.has_perm(p.role, v_perm) THEN
                PERFORM trovesnap.fail('permission_denied:' || v_perm);
            END IF;
            IF ch ->> 'field' = 'price_cents' THEN
                IF jsonb_typeof(ch -> 'to') IS DISTINCT FROM 'number' THEN
                    PERFORM trovesnap.fail('invalid_input:changes', 'price_cents is a whole number of cents');
                END IF;
                v_num := (ch ->> 'to')::numeric;
                IF v_num < 0 OR v_num <> trunc(v_num) OR v_num > 9007199254740991 THEN
                    PERFORM trovesnap.fail('invalid_input:changes', 'price_cents is a whole number of cents');
                END IF;
            ELSIF jsonb_typeof(ch -> 'to') IS DISTINCT FROM 'string' THEN
                PERFORM trovesnap.fail('invalid_input:changes', (ch ->> 'field') || ' is text');
            END IF;
        END LOOP;
        IF NOT v_any THEN
            PERFORM trovesnap.fail('invalid_input:changes', 'name at least one field to change');
        END IF;
    WHEN 'bind_identity' THEN
        SELECT * INTO i FROM trovesnap.items it WHERE it.id = p_ids[1];
        v_to := trovesnap.change_value(p_changes, i.id, 'qr_code') #>> '{}';
        IF coalesce(v_to, '') = '' THEN
            PERFORM trovesnap.fail('invalid_input:qr_code', 'the tag to bind');
        ELSIF i.qr_code = v_to THEN
            PERFORM trovesnap.fail('transition_invalid', format('item %s already carries %s', i.id, left(v_to, 60)));
        ELSIF i.qr_code <> '' THEN
            PERFORM trovesnap.fail('transition_invalid', format('item %s carries %s: release it first', i.id, i.qr_code));
        END IF;
        PERFORM trovesnap.require_tag_free(p.tenant_id, v_to, i.id);
    WHEN 'release_identity' THEN
        SELECT * INTO i FROM trovesnap.items it WHERE it.id = p_ids[1];
        v_src := trovesnap.change_value(p_changes, i.id, 'qr_code', 'from') #>> '{}';
        IF i.qr_code = '' OR i.qr_code IS DISTINCT FROM v_src
           OR (trovesnap.change_value(p_changes, i.id, 'qr_code') #>> '{}') IS DISTINCT FROM '' THEN
            PERFORM trovesnap.fail('transition_invalid', format('item %s does not carry %s', i.id, left(coalesce(v_src, ''), 60)));
        END IF;
    WHEN 'disposition_action' THEN
        FOREACH v_id IN ARRAY p_ids
        LOOP
            SELECT * INTO i FROM trovesnap.items it WHERE it.id = v_id;
            IF i.status IN ('sold', 'pending_pickup', 'archived') THEN
                PERFORM trovesnap.fail('transition_invalid', format('item %s is %s: only unsold items get a disposition', i.id, i.status));
            END IF;
            v_act := trovesnap.change_value(p_changes, i.id, 'disposition') #>> '{}';
            IF v_act IS NULL OR v_act NOT IN ('donate', 'consign', 'haul_away', 'return_to_family', 'buyout_offer') THEN
                PERFORM trovesnap.fail('invalid_input:action', 'donate, consign, haul_away, return_to_family or buyout_offer');
            END IF;
            IF (trovesnap.change_value(p_changes, i.id, 'status') #>> '{}') IS DISTINCT FROM
               (CASE v_act WHEN 'consign' THEN 'withdrawn' ELSE 'archived' END) THEN
                PERFORM trovesnap.fail('invalid_input:changes', 'a disposition archives the item (withdraws it when consigned)');
            END IF;
        END LOOP;
        FOR ch IN SELECT c FROM jsonb_array_elements(p_changes) c WHERE c ->> 'field' = 'offer_cents'
        LOOP
            IF v_act <> 'buyout_offer' THEN
                PERFORM trovesnap.fail('invalid_input:offer_cents', 'only with buyout_offer');
            END IF;
            IF jsonb_typeof(ch -> 'to') IS DISTINCT FROM 'number' OR (ch ->> 'to')::numeric < 0
               OR (ch ->> 'to')::numeric > 9007199254740991 THEN
                PERFORM trovesnap.fail('invalid_input:offer_cents', 'a non-negative number of cents');
            END IF;
        END LOOP;
    END CASE;
END
$$;

-- export_delivery_queued: whether an export's delivery was already queued
-- (by an executed delivery proposal).
CREATE FUNCTION trovesnap.export_delivery_queued(p_export_id text) RETURNS boolean
    LANGUAGE sql STABLE
    AS $$
        SELECT EXISTS (SELECT 1 FROM trovesnap.outbound_requests o
                       WHERE o.kind = 'export_delivery' AND o.target_id = p_export_id)
    $$;

-- export_facts: what the delivery builder reads of a staged export
-- (domain.ExportFacts): its channel and counts, its status — reported
-- 'delivery_queued' once a delivery was queued, since in live mode that,
-- not the export row, records it until a worker delivers — and each valid
-- item (position order) at its staged and its current version.
CREATE FUNCTION trovesnap.export_facts(p_id text) RETURNS jsonb
    LANGUAGE sql STABLE
    AS $$
        SELECT jsonb_build_object('id', e.id, 'channel', e.channel,
            'status', CASE WHEN trovesnap.export_delivery_queued(e.id) THEN 'delivery_queued' ELSE e.status END,
            'item_count', e.item_count, 'valid_count', e.valid_count,
            'rows', coalesce((
                SELECT jsonb_agg(jsonb_build_object('item_id', d.item_id, 'staged_version', d.item_version,
                                                    'sale_id', i.sale_id, 'current_version', i.version) ORDER BY d.position)
                FROM trovesnap.export_draft_items d
                JOIN trovesnap.items i ON i.tenant_id = d.tenant_id AND i.id = d.item_id
                WHERE d.export_id = e.id AND d.valid), '[]'::jsonb))
        FROM trovesnap.export_drafts e WHERE e.id = p_id
    $$;

-- ---------------------------------------------------------------------------
-- The domain functions (§16), as the embedded store runs them
-- (store/domainfn.go). Each locks and re-checks its target, enforces its
-- own rules whoever calls, increments the version of what it changes and
-- leaves history; none deletes anything.
-- ---------------------------------------------------------------------------

-- append_inventory_status_event moves an item along the lifecycle,
-- refusing invalid transitions, and appends the history row: its source is
-- the proposal (an imported status report when the proposal names one). It
-- never records a payment or a price.
CREATE FUNCTION trovesnap.append_inventory_status_event(pr trovesnap.proposals, i trovesnap.items, p_to text,
                                                        p_effective_at text, p_source text) RETURNS integer
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_now timestamptz := now();
    v_eff timestamptz := now();
BEGIN
    IF p_to IS NULL OR NOT trovesnap.can_transition(i.status, p_to) THEN
        PERFORM trovesnap.fail('transition_invalid', format('item %s cannot go from %s to %s', i.id, i.status, left(coalesce(p_to, ''), 30)));
    END IF;
    -- An RFC 3339 instant, else now (like the store's time.Parse fallback).
    IF coalesce(p_effective_at, '') ~ '^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$' THEN
        BEGIN
            v_eff := p_effective_at::timestamptz;
        EXCEPTION WHEN others THEN
            v_eff := v_now;
        END;
    END IF;
    UPDATE trovesnap.items SET status = p_to, version = version + 1, updated_at = v_now
    WHERE tenant_id = pr.tenant_id AND id = i.id;
    INSERT INTO trovesnap.item_status_events (id, tenant_id, item_id, sale_id, from_status, to_status, effective_at,
                                              source_type, actor_id, proposal_id, recorded_at)
    VALUES (trovesnap.new_id('status'), pr.tenant_id, i.id, i.sale_id, i.status, p_to, v_eff,
            CASE WHEN coalesce(p_source, '') LIKE 'imported:%' THEN 'status_import' ELSE 'proposal' END,
            pr.requested_by_actor, pr.id, v_now);
    RETURN i.version + 1;
END
$$;

-- update_item_fields applies a bulk update's exact field changes to one
-- item (update_item_price for price_cents, which also appends the pricing
-- history), keeping field-level history. Status never changes here.
CREATE FUNCTION trovesnap.update_item_fields(pr trovesnap.proposals, i trovesnap.items, p_changes jsonb) RETURNS integer
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_now  timestamptz := now();
    f      text;
    v      jsonb;
    v_text text;
    v_from text;
    v_cent bigint;
BEGIN
    IF i.status IN ('sold', 'archived', 'pending_pickup') THEN
        PERFORM trovesnap.fail('transition_invalid', format('item %s is %s', i.id, i.status));
    END IF;
    FOR f, v IN SELECT e.key, e.value FROM jsonb_each(p_changes) e ORDER BY e.key COLLATE "C"
    LOOP
        IF trovesnap.bulk_field_perm(f) IS NULL THEN
            CONTINUE;
        END IF;
        IF f = 'price_cents' THEN
            IF jsonb_typeof(v) IS DISTINCT FROM 'number' THEN
                PERFORM trovesnap.fail('invalid_input:changes', 'price_cents is a whole number of cents');
            END IF;
            v_cent := trunc((v #>> '{}')::numeric)::bigint;
            v_from := i.price_cents::text;
            v_text := v_cent::text;
            UPDATE trovesnap.items SET price_cents = v_cent WHERE tenant_id = pr.tenant_id AND id = i.id;
            INSERT INTO trovesnap.item_price_history (id, tenant_id, item_id, price_cents, internal_price_guidance_cents,
                                                      reason, actor_id, proposal_id, changed_at)
            VALUES (trovesnap.new_id('price'), pr.tenant_id, i.id, v_cent, i.internal_price_guidance_cents,
                    'approved proposal', pr.requested_by_actor, pr.id, v_now);
        ELSE
            IF jsonb_typeof(v) IS DISTINCT FROM 'string' THEN
                PERFORM trovesnap.fail('invalid_input:changes', f || ' is text');
            END IF;
            v_text := v #>> '{}';
            CASE f
            WHEN 'room' THEN
                v_from := i.room;
                UPDATE trovesnap.items SET room = v_text WHERE tenant_id = pr.tenant_id AND id = i.id;
            WHEN 'category' THEN
                v_from := i.category;
                UPDATE trovesnap.items SET category = v_text WHERE tenant_id = pr.tenant_id AND id = i.id;
            WHEN 'title' THEN
                v_from := i.title;
                UPDATE trovesnap.items SET title = v_text WHERE tenant_id = pr.tenant_id AND id = i.id;
            WHEN 'description' THEN
                v_from := i.description;
                UPDATE trovesnap.items SET description = v_text WHERE tenant_id = pr.tenant_id AND id = i.id;
            END CASE;
        END IF;
        INSERT INTO trovesnap.item_change_history (tenant_id, item_id, field, from_value, to_value, proposal_id, changed_at)
        VALUES (pr.tenant_id, i.id, f, v_from, v_text, pr.id, v_now);
    END LOOP;
    UPDATE trovesnap.items SET version = version + 1, updated_at = v_now WHERE tenant_id = pr.tenant_id AND id = i.id;
    RETURN i.version + 1;
END
$$;

-- set_item_identity binds (bind_item_identity) or releases
-- (release_item_identity) a QR tag: a tag to bind must still be one of the
-- tenant's printed labels and free; the change is in the field history.
CREATE FUNCTION trovesnap.set_item_identity(pr trovesnap.proposals, i trovesnap.items, p_code text) RETURNS integer
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_now timestamptz := now();
BEGIN
    IF p_code <> '' THEN
        PERFORM trovesnap.require_tag_free(pr.tenant_id, p_code, i.id);
    END IF;
    UPDATE trovesnap.items SET qr_code = p_code, version = version + 1, updated_at = v_now
    WHERE tenant_id = pr.tenant_id AND id = i.id;
    INSERT INTO trovesnap.item_change_history (tenant_id, item_id, field, from_value, to_value, proposal_id, changed_at)
    VALUES (pr.tenant_id, i.id, 'qr_code', i.qr_code, p_code, pr.id, v_now);
    RETURN i.version + 1;
END
$$;

-- apply_disposition_action records what happens to an unsold item and
-- moves it out of inventory (archived; withdrawn when consigned) through
-- the lifecycle, which refuses what it does not allow.
CREATE FUNCTION trovesnap.apply_disposition_action(pr trovesnap.proposals, i trovesnap.items, p_changes jsonb) RETURNS integer
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_action text := coalesce(p_changes ->> 'disposition', '');
    v_cp     text;
    v_offer  jsonb;
    v_had    text;
    v        integer;
BEGIN
    SELECT ch ->> 'to' INTO v_cp FROM jsonb_array_elements(pr.body -> 'changes') WITH ORDINALITY AS c(ch, n)
    WHERE ch ->> 'field' = 'counterparty' AND jsonb_typeof(ch -> 'to') = 'string' ORDER BY n DESC LIMIT 1;
    SELECT ch -> 'to' INTO v_offer FROM jsonb_array_elements(pr.body -> 'changes') WITH ORDINALITY AS c(ch, n)
    WHERE ch ->> 'field' = 'offer_cents' AND jsonb_typeof(ch -> 'to') = 'number' ORDER BY n DESC LIMIT 1;
    SELECT d.action INTO v_had FROM trovesnap.item_dispositions d WHERE d.tenant_id = pr.tenant_id AND d.item_id = i.id;
    IF FOUND THEN
        PERFORM trovesnap.fail('transition_invalid', format('item %s already has a disposition (%s)', i.id, v_had));
    END IF;
    -- A published or on-hold item is withdrawn from sale first, then
    -- archived (domain.DispositionSteps): the lifecycle has no direct step.
    IF NOT trovesnap.can_transition(i.status, p_changes ->> 'status') AND p_changes ->> 'status' <> 'withdrawn'
       AND trovesnap.can_transition(i.status, 'withdrawn') AND trovesnap.can_transition('withdrawn', p_changes ->> 'status') THEN
        PERFORM trovesnap.append_inventory_status_event(pr, i, 'withdrawn', '', 'disposition:' || v_action);
        SELECT * INTO i FROM trovesnap.items it WHERE it.tenant_id = pr.tenant_id AND it.id = i.id;
    END IF;
    v := trovesnap.append_inventory_status_event(pr, i, p_changes ->> 'status', '', 'disposition:' || v_action);
    INSERT INTO trovesnap.item_dispositions (item_id, tenant_id, action, counterparty, offer_cents, proposal_id, applied_at)
    VALUES (i.id, pr.tenant_id, v_action, coalesce(v_cp, ''), trunc((v_offer #>> '{}')::numeric)::bigint, pr.id, now());
    RETURN v;
END
$$;

-- apply_item_action runs an item action's domain function on one target:
-- the target locked (check_versions locked it already), its changes as
-- field → value.
CREATE FUNCTION trovesnap.apply_item_action(pr trovesnap.proposals, p_item_id text) RETURNS integer
    LANGUAGE plpgsql
    AS $$
DECLARE
    i  trovesnap.items;
    ch jsonb;
BEGIN
    SELECT * INTO i FROM trovesnap.items it WHERE it.tenant_id = pr.tenant_id AND it.id = p_item_id FOR UPDATE;
    IF NOT FOUND THEN
        PERFORM trovesnap.fail('invalid_reference:item_id', jsonb_build_object('id', p_item_id, 'cross_tenant', false)::text);
    END IF;
    SELECT coalesce(jsonb_object_agg(x.ch ->> 'field', x.ch -> 'to' ORDER BY x.n), '{}') INTO ch
    FROM jsonb_array_elements(pr.body -> 'changes') WITH ORDINALITY AS x(ch, n)
    WHERE x.ch ->> 'target_id' = p_item_id;
    CASE pr.action
    WHEN 'status_transition', 'archive_item' THEN
        RETURN trovesnap.append_inventory_status_event(pr, i, ch ->> 'status', coalesce(ch ->> 'effective_at', ''),
            CASE WHEN jsonb_typeof(ch -> 'source') = 'string' THEN ch ->> 'source' ELSE 'seller_confirmed' END);
    WHEN 'bulk_item_update' THEN
        RETURN trovesnap.update_item_fields(pr, i, ch);
    WHEN 'bind_identity', 'release_identity' THEN
        RETURN trovesnap.set_item_identity(pr, i, CASE WHEN jsonb_typeof(ch -> 'qr_code') = 'string' THEN ch ->> 'qr_code' ELSE '' END);
    WHEN 'disposition_action' THEN
        RETURN trovesnap.apply_disposition_action(pr, i, ch);
    ELSE
        PERFORM trovesnap.fail('transition_invalid', format('%s is not an item action', pr.action));
    END CASE;
    RETURN NULL;
END
$$;

-- notify_matched_buyers in live mode: this project has no notification
-- service, so the approved plan becomes ONE queued outbound request for an
-- external worker (docs/live-outbound.md). Nothing is sent here and nothing
-- claims it was. Returns the request's id.
CREATE FUNCTION trovesnap.notify_matched_buyers(pr trovesnap.proposals) RETURNS text
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_id  text := trovesnap.new_id('outbound');
    v_now timestamptz := now();
BEGIN
    IF jsonb_typeof(pr.body -> 'notification') IS DISTINCT FROM 'object' THEN
        PERFORM trovesnap.fail('transition_invalid', format('proposal %s carries no notification plan', pr.id));
    END IF;
    INSERT INTO trovesnap.outbound_requests (id, tenant_id, kind, proposal_id, target_id, status, payload, requested_by,
                                             created_at, updated_at)
    VALUES (v_id, pr.tenant_id, 'buyer_notification', pr.id, pr.body -> 'target_ids' ->> 0, 'queued',
            jsonb_build_object('target_kind', pr.body ->> 'target_kind', 'plan', pr.body -> 'notification',
                               'impact', pr.body -> 'impact'),
            pr.requested_by_actor, v_now, v_now);
    RETURN v_id;
END
$$;

-- deliver_export in live mode: the channel-specific delivery is not part of
-- this project, so the approved snapshot — exactly the valid listings as
-- staged, which the versions just checked are still current — becomes ONE
-- queued outbound request for an external worker (docs/live-outbound.md).
-- The export can never be delivered twice: its delivery is queued (the
-- unique index backs this), and a worker records the outcome. Returns the
-- request's id.
CREATE FUNCTION trovesnap.deliver_export(pr trovesnap.proposals) RETURNS text
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_export text := pr.body -> 'target_ids' ->> 0;
    e        trovesnap.export_drafts;
    v_id     text := trovesnap.new_id('outbound');
    v_now    timestamptz := now();
BEGIN
    SELECT * INTO e FROM trovesnap.export_drafts x WHERE x.tenant_id = pr.tenant_id AND x.id = v_export FOR UPDATE;
    IF NOT FOUND OR e.status NOT IN ('staged', 'delivery_proposed') OR trovesnap.export_delivery_queued(v_export) THEN
        PERFORM trovesnap.fail('transition_invalid', format('export %s is no longer staged', v_export));
    END IF;
    INSERT INTO trovesnap.outbound_requests (id, tenant_id, kind, proposal_id, target_id, status, payload, requested_by,
                                             created_at, updated_at)
    VALUES (v_id, pr.tenant_id, 'export_delivery', pr.id, v_export, 'queued',
            jsonb_build_object('channel', e.channel, 'export_id', e.id, 'impact', pr.body -> 'impact',
                'listings', coalesce((SELECT jsonb_agg(d.snapshot || jsonb_build_object('item_id', d.item_id, 'version', d.item_version)
                                                       ORDER BY d.position)
                                      FROM trovesnap.export_draft_items d WHERE d.export_id = e.id AND d.valid), '[]'::jsonb)),
            pr.requested_by_actor, v_now, v_now);
    RETURN v_id;
END
$$;

-- Nothing here is executable but by its owner.
SELECT trovesnap.revoke_execute(ARRAY[
    'outbound_request_guard', 'can_transition', 'bulk_field_perm', 'check_bulk_changes', 'item_targets',
    'qr_bound_elsewhere', 'tag_facts', 'require_tag_free', 'sale_demand', 'status_candidate_facts', 'change_value',
    'check_item_proposal', 'append_inventory_status_event', 'update_item_fields', 'set_item_identity',
    'apply_disposition_action', 'apply_item_action', 'notify_matched_buyers', 'export_delivery_queued',
    'export_facts', 'deliver_export']);

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (10, '20261130120600_trovesnap_action_rpcs');

RESET ROLE;
