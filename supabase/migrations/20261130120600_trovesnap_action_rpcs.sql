-- trovesnap live mode, migration 10: the remaining controlled actions —
-- status transitions and archiving, bulk item updates, QR identity binding
-- and release, dispositions, buyer notifications and export delivery —
-- exactly as the embedded store runs them (store/build.go,
-- store/execute.go, store/domainfn.go), through the RPCs of migration 6:
--   action_tool           names the executing tool and approval of each;
--   mcp_proposal_state    also answers the state these builders read (the
--                         rules stay Go's: internal/domain/proposal_build.go).
--                         It takes the draft's fields now (p_fields: the bulk
--                         changes, the QR code, the imported status), so it
--                         is dropped and created again with that argument;
--   mcp_create_proposal   re-verifies each new action under the key's lock;
--   mcp_execute_proposal  dispatches to the new domain functions, in the
--                         same ONE transaction (authority, versions, domain
--                         function, event, idempotency row);
--   target_version        knows staged exports (migration 9's tables).
-- Their records: item_change_history (field-level history of bulk updates
-- and QR changes), item_dispositions, and outbound_requests.
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

-- Row level security, exactly as migration 4 sets it for its tables.
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['item_change_history', 'item_dispositions', 'outbound_requests']
    LOOP
        EXECUTE format('ALTER TABLE trovesnap.%I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE trovesnap.%I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format('CREATE POLICY tenant_context ON trovesnap.%I FOR ALL TO trovesnap_owner
            USING (trovesnap.ctx_system() OR tenant_id = trovesnap.ctx_tenant())
            WITH CHECK (trovesnap.ctx_system() OR tenant_id = trovesnap.ctx_tenant())', t);
        IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'authenticated') THEN
            EXECUTE format('CREATE POLICY seller_member_read ON trovesnap.%I FOR SELECT TO authenticated
                USING (tenant_id IN (SELECT trovesnap.jwt_tenants()))', t);
        END IF;
    END LOOP;
END
$$;

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

-- change_to / change_from: the `to` (or `from`) of a proposal change of a
-- target's field; NULL when the proposal has none.
CREATE FUNCTION trovesnap.change_to(p_changes jsonb, p_target text, p_field text) RETURNS jsonb
    LANGUAGE sql IMMUTABLE
    AS $$
        SELECT ch -> 'to' FROM jsonb_array_elements(coalesce(p_changes, '[]')) WITH ORDINALITY AS c(ch, n)
        WHERE ch ->> 'target_id' = p_target AND ch ->> 'field' = p_field ORDER BY n DESC LIMIT 1
    $$;

CREATE FUNCTION trovesnap.change_from(p_changes jsonb, p_target text, p_field text) RETURNS jsonb
    LANGUAGE sql IMMUTABLE
    AS $$
        SELECT ch -> 'from' FROM jsonb_array_elements(coalesce(p_changes, '[]')) WITH ORDINALITY AS c(ch, n)
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
        v_to := trovesnap.change_to(p_changes, i.id, 'status') #>> '{}';
        IF v_to IS NULL THEN
            PERFORM trovesnap.fail('invalid_input:changes', 'a status change names its new status');
        ELSIF v_to = 'published' THEN
            PERFORM trovesnap.fail('invalid_input:to_status', 'publication has its own proposal (trove_propose_item_publication)');
        ELSIF (p_action = 'archive_item') <> (v_to = 'archived') THEN
            PERFORM trovesnap.fail('invalid_input:to_status', 'archiving is proposed as archive_item and needs an explicit human approval');
        ELSIF NOT trovesnap.can_transition(i.status, v_to) THEN
            PERFORM trovesnap.fail('transition_invalid', format('item %s cannot go from %s to %s', i.id, i.status, left(v_to, 30)));
        END IF;
        v_src := trovesnap.change_to(p_changes, i.id, 'source') #>> '{}';
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
        v_to := trovesnap.change_to(p_changes, i.id, 'qr_code') #>> '{}';
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
        v_src := trovesnap.change_from(p_changes, i.id, 'qr_code') #>> '{}';
        IF i.qr_code = '' OR i.qr_code IS DISTINCT FROM v_src
           OR (trovesnap.change_to(p_changes, i.id, 'qr_code') #>> '{}') IS DISTINCT FROM '' THEN
            PERFORM trovesnap.fail('transition_invalid', format('item %s does not carry %s', i.id, left(coalesce(v_src, ''), 60)));
        END IF;
    WHEN 'disposition_action' THEN
        FOREACH v_id IN ARRAY p_ids
        LOOP
            SELECT * INTO i FROM trovesnap.items it WHERE it.id = v_id;
            IF i.status IN ('sold', 'pending_pickup', 'archived') THEN
                PERFORM trovesnap.fail('transition_invalid', format('item %s is %s: only unsold items get a disposition', i.id, i.status));
            END IF;
            v_act := trovesnap.change_to(p_changes, i.id, 'disposition') #>> '{}';
            IF v_act IS NULL OR v_act NOT IN ('donate', 'consign', 'haul_away', 'return_to_family', 'buyout_offer') THEN
                PERFORM trovesnap.fail('invalid_input:action', 'donate, consign, haul_away, return_to_family or buyout_offer');
            END IF;
            IF (trovesnap.change_to(p_changes, i.id, 'status') #>> '{}') IS DISTINCT FROM
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

-- export_owner: the tenant of an export whatever the context, so a refused
-- reference can be classified for the audit (never shown).
CREATE FUNCTION trovesnap.export_owner(p_id text) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    t text;
BEGIN
    PERFORM set_config('trovesnap.system', 'on', true);
    SELECT e.tenant_id INTO t FROM trovesnap.export_drafts e WHERE e.id = p_id;
    PERFORM set_config('trovesnap.system', 'off', true);
    RETURN t;
END
$$;

-- check_export_ref: the export must be the tenant's, else
-- invalid_reference export_id (another tenant's like a missing one).
CREATE FUNCTION trovesnap.check_export_ref(p_id text) RETURNS void
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM trovesnap.export_drafts e WHERE e.id = p_id) THEN
        PERFORM trovesnap.fail('invalid_reference:export_id',
            jsonb_build_object('id', p_id, 'cross_tenant', trovesnap.export_owner(p_id) IS NOT NULL)::text);
    END IF;
END
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

-- target_version, as in migration 6, with staged exports: an export that
-- can still be delivered (staged or delivery_proposed, no delivery queued)
-- is at domain.ExportVersion, 1; any other has no version, so a proposal
-- bound to it is refused (invalid_reference target) like the store's.
CREATE OR REPLACE FUNCTION trovesnap.target_version(p_id text, p_lock boolean) RETURNS integer
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

-- ---------------------------------------------------------------------------
-- The RPCs of migration 6, extended
-- ---------------------------------------------------------------------------

-- action_tool: the controlled action that executes a proposal action in
-- live mode, and the approval it needs (catalog/actions.go). NULL: the
-- action is not available in live mode.
CREATE OR REPLACE FUNCTION trovesnap.action_tool(p_action text) RETURNS text[]
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

-- mcp_proposal_state, as in migration 6, with the draft's fields (p_fields)
-- the new builders need besides the targets: the bulk changes (checked
-- before any target is read, as the store does), the tag to bind, the
-- imported status a transition reviews. For the new actions it answers the
-- item targets (or the sale of a buyer notification), the facts of the tag
-- and of the status candidate, and the sale's aggregated demand. It writes
-- nothing. The argument list changes, so it is dropped and created again.
DROP FUNCTION public.mcp_proposal_state(text, text, integer, text, text, text, jsonb);
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
    IF coalesce(p_key, '') <> '' AND coalesce(p_tool, '') <> '' AND coalesce(p_fingerprint, '') <> '' AND p_tool_major IS NOT NULL THEN
        v_replay := trovesnap.idem_replay(p, p_tool, p_tool_major, p_key, p_fingerprint, false);
        IF v_replay IS NOT NULL THEN
            RETURN v_replay;
        END IF;
    END IF;
    PERFORM trovesnap.require_active(p);
    -- A proposal reads its targets like a tenant read: the proposal group or
    -- the read group, and proposal.create (the write checks the group).
    IF NOT (coalesce(p.groups, '{}') && ARRAY['action_proposal', 'tenant_read']) THEN
        PERFORM trovesnap.fail('permission_denied:action_proposal');
    END IF;
    IF NOT trovesnap.has_perm(p.role, 'proposal.create') THEN
        PERFORM trovesnap.fail('permission_denied:proposal.create');
    END IF;
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
            SELECT * INTO s FROM trovesnap.estate_sales es WHERE es.id = v_id;
            v_state := v_state || jsonb_build_object('sale', trovesnap.sale_json(s), 'demand', trovesnap.sale_demand(v_id));
        END IF;
    WHEN 'export_delivery' THEN
        v_id := v_ids[1];
        PERFORM trovesnap.check_export_ref(v_id);
        v_state := v_state || jsonb_build_object('export', trovesnap.export_facts(v_id));
    END CASE;
    RETURN v_state;
END
$$;

-- mcp_create_proposal, as in migration 6, re-verifying the new actions too:
-- every item target visible, in an assigned sale, at its expected version
-- and in a state the action accepts, with the changes its builder makes
-- (check_item_proposal); a buyer notification's one target published (an
-- item) or published or live (a sale), with its plan.
CREATE OR REPLACE FUNCTION public.mcp_create_proposal(p_credential_hash text, p_tool text, p_tool_major integer, p_key text,
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
        IF NOT EXISTS (SELECT 1 FROM jsonb_array_elements(p_proposal -> 'changes') ch
                       WHERE ch ->> 'target_id' = v_target AND ch ->> 'field' = 'create_item.sale_id' AND ch ->> 'to' = c.sale_id) THEN
            PERFORM trovesnap.fail('invalid_input:changes', 'the item is created in the candidate''s sale');
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
        PERFORM trovesnap.check_export_ref(v_target);
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

-- mcp_execute_proposal, as in migration 6 (steps 1–6 there), with the new
-- tools' permissions and the new domain functions: an item action runs on
-- each frozen target in order (all or nothing: any refusal rolls back
-- everything, the grant's consumption included); a buyer notification
-- queues its one outbound request and reports its target 'queued'.
CREATE OR REPLACE FUNCTION public.mcp_execute_proposal(p_credential_hash text, p_tool text, p_tool_major integer, p_key text,
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
            jsonb_build_object('id', p_proposal_id, 'cross_tenant', trovesnap.proposal_owner(p_proposal_id) IS NOT NULL)::text);
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

-- seller_current_versions, as in migration 7, with staged exports at
-- domain.ExportVersion while they can still be delivered (as the store's
-- CurrentVersions): the approval step compares a delivery proposal's
-- targets with these before the seller may approve it.
CREATE OR REPLACE FUNCTION public.seller_current_versions(p_tenant_id text, p_ids jsonb) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    s     trovesnap.seller_ctx;
    v_ids text[];
BEGIN
    s := trovesnap.seller_enter(p_tenant_id, 'proposal.read');
    IF p_ids IS NOT NULL AND jsonb_typeof(p_ids) NOT IN ('array', 'null') THEN
        PERFORM trovesnap.fail('invalid_input:ids', 'an array of ids');
    END IF;
    v_ids := ARRAY(SELECT jsonb_array_elements_text(coalesce(nullif(p_ids, 'null'::jsonb), '[]'::jsonb)));
    IF cardinality(v_ids) > 500 THEN
        PERFORM trovesnap.fail('invalid_input:ids', 'at most 500 ids');
    END IF;
    RETURN coalesce((
        SELECT jsonb_object_agg(v.id, v.version) FROM (
            SELECT i.id, i.version FROM trovesnap.items i WHERE i.tenant_id = s.tenant_id AND i.id = ANY (v_ids)
            UNION ALL
            SELECT e.id, e.version FROM trovesnap.estate_sales e WHERE e.tenant_id = s.tenant_id AND e.id = ANY (v_ids)
            UNION ALL
            SELECT c.id, c.version FROM trovesnap.inventory_candidates c WHERE c.tenant_id = s.tenant_id AND c.id = ANY (v_ids)
            UNION ALL
            SELECT x.id, 1 FROM trovesnap.export_drafts x
            WHERE x.tenant_id = s.tenant_id AND x.id = ANY (v_ids) AND x.status IN ('staged', 'delivery_proposed')
              AND NOT trovesnap.export_delivery_queued(x.id)
        ) v), '{}'::jsonb);
END
$$;

-- Nothing here is executable but by its owner, except the RPCs granted below.
DO $$
DECLARE
    f regprocedure;
    r text;
BEGIN
    FOR f IN SELECT p.oid::regprocedure FROM pg_proc p
             WHERE p.proowner = 'trovesnap_owner'::regrole
               AND p.proname IN ('outbound_request_guard', 'can_transition', 'bulk_field_perm', 'check_bulk_changes',
                                 'item_targets', 'qr_bound_elsewhere', 'tag_facts', 'require_tag_free', 'sale_demand',
                                 'status_candidate_facts', 'change_to', 'change_from', 'check_item_proposal',
                                 'append_inventory_status_event', 'update_item_fields', 'set_item_identity',
                                 'apply_disposition_action', 'apply_item_action', 'notify_matched_buyers',
                                 'export_delivery_queued', 'export_owner', 'check_export_ref', 'export_facts',
                                 'target_version', 'deliver_export',
                                 'action_tool', 'mcp_proposal_state', 'mcp_create_proposal', 'mcp_execute_proposal')
    LOOP
        EXECUTE format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', f);
        FOREACH r IN ARRAY ARRAY['anon', 'authenticated', 'service_role']
        LOOP
            IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r) THEN
                EXECUTE format('REVOKE ALL ON FUNCTION %s FROM %I', f, r);
            END IF;
        END LOOP;
    END LOOP;
END
$$;
GRANT EXECUTE ON FUNCTION
    public.mcp_proposal_state(text, text, integer, text, text, text, jsonb, jsonb),
    public.mcp_create_proposal(text, text, integer, text, text, jsonb, timestamptz, jsonb),
    public.mcp_execute_proposal(text, text, integer, text, text, jsonb, timestamptz, text, jsonb)
TO trovesnap_mcp;

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (10, '20261130120600_trovesnap_action_rpcs');

RESET ROLE;
