-- trovesnap live mode, migration 9: Ingestion write RPCs (CSV import, status reports, media, drafts, export staging).
--
-- The records of the candidate and draft tools (§13) beyond the candidate
-- chain, mirroring the embedded store (store/migrations/0004_ingestion.sql,
-- store/ingestion.go, store/ingestion_drafts.go), and the RPCs that write
-- them. Every write is ONE transaction, shaped like migration 3's
-- mcp_create_inventory_candidate: begin_rpc, the client from its credential
-- hash, the key's advisory lock (a live key replays or conflicts), the
-- client still active with the tool group and permission, the references
-- visible in its tenant (invalid_reference otherwise, the same for a
-- missing and another tenant's record) and in an assigned sale
-- (sale_assignment), the records, then the call's plugin_event and the
-- idempotency row (finish_write). None of them writes an item, a photo or a
-- status event: what they create is reviewable, non-canonical data.
--
-- The pure rules are Go's, as in the store (listing copy and channel rules
-- are internal/domain's; the row checks and the source records' JSON are
-- restated rule for rule in internal/live/ingestion.go): the server
-- computes them from the state a read RPC answers (mcp_import_targets,
-- mcp_draft_facts, mcp_export_state), and the write RPC re-reads that state
-- under its locks and refuses with stale_version if it moved meanwhile (the
-- server then reads again), so what is stored is exactly what the state it
-- names gives. The write RPCs still check every invariant they rely on.
--
-- Media (source assets, candidate_media) are not here: their bytes need an
-- object store next to the database (see internal/live/unavailable.go), so
-- those two tools stay mock-only.

SET ROLE trovesnap_owner;

-- ---------------------------------------------------------------------------
-- Tables (store/migrations/0004_ingestion.sql)
-- ---------------------------------------------------------------------------

-- What an import run read: its label, the hash and size of the original
-- file (CSV), the column mapping it applied and how many rows it rejected.
CREATE TABLE trovesnap.import_run_details (
    import_run_id        text COLLATE "C" PRIMARY KEY,
    tenant_id            text COLLATE "C" NOT NULL,
    source_label         text NOT NULL DEFAULT '',
    content_sha256       text CHECK (content_sha256 IS NULL
                                     OR (content_sha256 LIKE 'sha256:%' AND length(content_sha256) = 71)),
    content_bytes        integer NOT NULL DEFAULT 0 CHECK (content_bytes >= 0),
    mapping              jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(mapping) = 'array'),
    rows_total           integer NOT NULL CHECK (rows_total >= 0),
    rows_rejected        integer NOT NULL DEFAULT 0 CHECK (rows_rejected >= 0 AND rows_rejected <= rows_total),
    created_by_client_id text COLLATE "C" NOT NULL,
    FOREIGN KEY (tenant_id, import_run_id) REFERENCES trovesnap.import_runs (tenant_id, id),
    FOREIGN KEY (tenant_id, created_by_client_id) REFERENCES trovesnap.mcp_clients (tenant_id, id)
);
CREATE INDEX import_run_details_client ON trovesnap.import_run_details (tenant_id, created_by_client_id);

-- The item a status_update (or, in mock mode, attach_media) candidate is
-- about, the item's version and status when the candidate was made and,
-- for a status report, what it claims. effective_at may be unknown (a
-- spreadsheet row without a date).
CREATE TABLE trovesnap.candidate_item_changes (
    candidate_id     text COLLATE "C" PRIMARY KEY,
    tenant_id        text COLLATE "C" NOT NULL,
    kind             text NOT NULL CHECK (kind IN ('status_update', 'attach_media')),
    item_id          text COLLATE "C" NOT NULL,
    observed_version integer NOT NULL CHECK (observed_version >= 1),
    observed_status  text NOT NULL,
    reported_status  text CHECK (reported_status IS NULL
                                 OR reported_status IN ('on_hold', 'pending_pickup', 'sold', 'withdrawn')),
    effective_at     timestamptz,
    report_source    text,
    CHECK (kind <> 'status_update' OR (reported_status IS NOT NULL AND report_source IS NOT NULL)),
    CHECK (kind <> 'attach_media' OR reported_status IS NULL),
    FOREIGN KEY (tenant_id, candidate_id) REFERENCES trovesnap.inventory_candidates (tenant_id, id),
    FOREIGN KEY (tenant_id, item_id) REFERENCES trovesnap.items (tenant_id, id)
);
CREATE INDEX candidate_item_changes_item ON trovesnap.candidate_item_changes (tenant_id, item_id);

-- A stored draft of listing copy for a candidate or an item: immutable (a
-- new draft is a new revision), never the item's public text.
CREATE TABLE trovesnap.draft_revisions (
    id                   text COLLATE "C" PRIMARY KEY CHECK (id <> ''),
    tenant_id            text COLLATE "C" NOT NULL,
    candidate_id         text COLLATE "C",
    item_id              text COLLATE "C",
    revision             integer NOT NULL CHECK (revision >= 1),
    source_version       integer NOT NULL CHECK (source_version >= 1),
    tone                 text NOT NULL,
    title                text NOT NULL,
    description          text NOT NULL,
    segments             jsonb NOT NULL CHECK (jsonb_typeof(segments) = 'array'),
    created_by_client_id text COLLATE "C" NOT NULL,
    created_at           timestamptz NOT NULL,
    CHECK ((candidate_id IS NULL) <> (item_id IS NULL)),
    UNIQUE (tenant_id, id),
    UNIQUE (candidate_id, revision),
    UNIQUE (item_id, revision),
    FOREIGN KEY (tenant_id, candidate_id) REFERENCES trovesnap.inventory_candidates (tenant_id, id),
    FOREIGN KEY (tenant_id, item_id) REFERENCES trovesnap.items (tenant_id, id),
    FOREIGN KEY (tenant_id, created_by_client_id) REFERENCES trovesnap.mcp_clients (tenant_id, id)
);

-- A staged export: a frozen snapshot of items' public fields at their
-- versions, validated for one channel. Staging never delivers: only the
-- later, approved delivery step may move status past 'staged'; the
-- snapshot itself never changes (triggers below).
CREATE TABLE trovesnap.export_drafts (
    id                   text COLLATE "C" PRIMARY KEY CHECK (id <> ''),
    tenant_id            text COLLATE "C" NOT NULL REFERENCES trovesnap.tenants (id),
    channel              text NOT NULL CHECK (channel IN ('ebay', 'facebook_marketplace', 'etsy', 'csv_file')),
    status               text NOT NULL CHECK (status IN ('staged', 'delivery_proposed', 'delivered', 'cancelled')),
    item_count           integer NOT NULL CHECK (item_count BETWEEN 1 AND 50),
    valid_count          integer NOT NULL CHECK (valid_count >= 0 AND valid_count <= item_count),
    warnings             jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(warnings) = 'array'),
    created_by_client_id text COLLATE "C" NOT NULL,
    created_at           timestamptz NOT NULL,
    UNIQUE (tenant_id, id),
    FOREIGN KEY (tenant_id, created_by_client_id) REFERENCES trovesnap.mcp_clients (tenant_id, id)
);
CREATE INDEX export_drafts_list ON trovesnap.export_drafts (tenant_id, created_at, id);

CREATE TABLE trovesnap.export_draft_items (
    export_id    text COLLATE "C" NOT NULL,
    tenant_id    text COLLATE "C" NOT NULL,
    position     integer NOT NULL CHECK (position >= 1),
    item_id      text COLLATE "C" NOT NULL,
    item_version integer NOT NULL CHECK (item_version >= 1),
    snapshot     jsonb NOT NULL CHECK (jsonb_typeof(snapshot) = 'object'),
    valid        boolean NOT NULL,
    warnings     jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(warnings) = 'array'),
    PRIMARY KEY (export_id, position),
    UNIQUE (export_id, item_id),
    FOREIGN KEY (tenant_id, export_id) REFERENCES trovesnap.export_drafts (tenant_id, id),
    FOREIGN KEY (tenant_id, item_id) REFERENCES trovesnap.items (tenant_id, id)
);
CREATE INDEX export_draft_items_item ON trovesnap.export_draft_items (tenant_id, item_id);

-- Immutability, as the store's triggers: a draft revision and a staged
-- snapshot never change (an export's status may move; nothing else of it).
CREATE FUNCTION trovesnap.refuse_update() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'P0001', MESSAGE = 'trovesnap:immutable:' || TG_TABLE_NAME;
END
$$;
CREATE TRIGGER draft_revisions_immutable BEFORE UPDATE ON trovesnap.draft_revisions
    FOR EACH ROW EXECUTE FUNCTION trovesnap.refuse_update();
CREATE TRIGGER export_draft_items_immutable BEFORE UPDATE ON trovesnap.export_draft_items
    FOR EACH ROW EXECUTE FUNCTION trovesnap.refuse_update();

CREATE FUNCTION trovesnap.export_snapshot_immutable() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF (NEW.id, NEW.tenant_id, NEW.channel, NEW.item_count, NEW.valid_count, NEW.warnings, NEW.created_by_client_id,
        NEW.created_at)
       IS DISTINCT FROM
       (OLD.id, OLD.tenant_id, OLD.channel, OLD.item_count, OLD.valid_count, OLD.warnings, OLD.created_by_client_id,
        OLD.created_at) THEN
        RAISE EXCEPTION USING ERRCODE = 'P0001', MESSAGE = 'trovesnap:immutable:export_drafts';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER export_drafts_snapshot_immutable BEFORE UPDATE ON trovesnap.export_drafts
    FOR EACH ROW EXECUTE FUNCTION trovesnap.export_snapshot_immutable();

-- Row level security, exactly as migrations 2 and 4 set it.
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['import_run_details', 'candidate_item_changes', 'draft_revisions', 'export_drafts',
        'export_draft_items']
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

-- client_descriptor: the one mcp_client source descriptor of the caller's
-- (tenant, client), created on first use (the store's mcpDescriptor). Two
-- first uses racing meet on the unique index; the loser reads the winner's.
CREATE FUNCTION trovesnap.client_descriptor(p trovesnap.principal, p_now timestamptz) RETURNS text
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_id text;
BEGIN
    SELECT d.id INTO v_id FROM trovesnap.source_descriptors d WHERE d.client_id = p.client_id AND d.kind = 'mcp_client';
    IF v_id IS NOT NULL THEN
        RETURN v_id;
    END IF;
    INSERT INTO trovesnap.source_descriptors (id, tenant_id, kind, client_id, label, created_at)
    VALUES (trovesnap.new_id('source'), p.tenant_id, 'mcp_client', p.client_id,
            'MCP client ' || coalesce(nullif(p.client_name, ''), p.client_id), p_now)
    ON CONFLICT (tenant_id, client_id) WHERE kind = 'mcp_client' DO NOTHING;
    SELECT d.id INTO v_id FROM trovesnap.source_descriptors d WHERE d.client_id = p.client_id AND d.kind = 'mcp_client';
    RETURN v_id;
END
$$;

-- payload_hash: "sha256:" + hex of a source record's payload (domain.OriginalHash).
CREATE FUNCTION trovesnap.payload_hash(p text) RETURNS text
    LANGUAGE sql IMMUTABLE
    AS $$ SELECT 'sha256:' || encode(sha256(convert_to(p, 'UTF8')), 'hex') $$;

-- single_record_run writes the provenance of a one-record MCP chain (the
-- client's descriptor, a completed run of one record, the record) and
-- returns [descriptor, run, record] (the store's ingSingleRecordCandidate).
CREATE FUNCTION trovesnap.single_record_run(p trovesnap.principal, p_sale_id text, p_kind text, p_payload text,
                                            p_now timestamptz) RETURNS text[]
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_desc   text := trovesnap.client_descriptor(p, p_now);
    v_run    text := trovesnap.new_id('run');
    v_record text := trovesnap.new_id('record');
BEGIN
    INSERT INTO trovesnap.import_runs (id, tenant_id, source_descriptor_id, sale_id, kind, status, record_count, created_at)
    VALUES (v_run, p.tenant_id, v_desc, p_sale_id, p_kind, 'completed', 1, p_now);
    INSERT INTO trovesnap.source_records (id, tenant_id, import_run_id, ordinal, payload_hash, payload, created_at)
    VALUES (v_record, p.tenant_id, v_run, 1, trovesnap.payload_hash(p_payload), p_payload, p_now);
    RETURN ARRAY[v_desc, v_run, v_record];
END
$$;

-- import_items: what an import knows of the items its status rows name
-- (the tenant context bounds it): the items a sale-scoped member may see,
-- by id, and the ids of the tenant's items in sales outside its assignment
-- (an import of an assigned sale reports those as in another sale, like
-- the store). Another tenant's item is in neither, exactly like a missing
-- one. With p_lock the items are share-locked, in id order, until commit.
CREATE FUNCTION trovesnap.import_items(p trovesnap.principal, p_ids text[], p_lock boolean) RETURNS jsonb
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_items jsonb;
    v_else  jsonb;
BEGIN
    IF p_lock THEN
        PERFORM 1 FROM trovesnap.items i WHERE i.id = ANY (p_ids) ORDER BY i.id FOR SHARE;
    END IF;
    SELECT coalesce(jsonb_object_agg(i.id, jsonb_build_object('id', i.id, 'sale_id', i.sale_id, 'status', i.status,
                                                               'version', i.version))
                        FILTER (WHERE NOT p.sale_scoped OR i.sale_id = ANY (coalesce(p.assigned, '{}'))), '{}'),
           coalesce(jsonb_agg(i.id ORDER BY i.id)
                        FILTER (WHERE p.sale_scoped AND NOT (i.sale_id = ANY (coalesce(p.assigned, '{}')))), '[]')
    INTO v_items, v_else
    FROM trovesnap.items i WHERE i.id = ANY (p_ids);
    RETURN jsonb_build_object('items', v_items, 'elsewhere', v_else);
END
$$;

-- import_item_ids: the ids the status rows of an import name (the ones
-- shaped like an item id: no other can exist).
CREATE FUNCTION trovesnap.import_item_ids(p_rows jsonb) RETURNS text[]
    LANGUAGE sql IMMUTABLE
    AS $$
        SELECT coalesce(array_agg(DISTINCT r ->> 'item_id'), '{}')
        FROM jsonb_array_elements(p_rows) r
        WHERE r ->> 'kind' = 'status_update' AND coalesce(r ->> 'item_id', '') ~ '^item_[A-Za-z0-9]{1,40}$'
    $$;

-- draft_facts: the recorded facts listing copy is drafted from (the
-- store's draftFacts): a new_item candidate's (observed) or an item's (the
-- seller's own, supplied), of the caller's tenant and an assigned sale.
-- With p_lock the source row stays locked until commit, which also
-- serialises the revisions of one source.
CREATE FUNCTION trovesnap.draft_facts(p trovesnap.principal, p_candidate_id text, p_item_id text, p_lock boolean) RETURNS jsonb
    LANGUAGE plpgsql
    AS $$
DECLARE
    c trovesnap.inventory_candidates;
    i trovesnap.items;
BEGIN
    IF coalesce(p_candidate_id, '') <> '' THEN
        PERFORM trovesnap.check_ref('inventory_candidates', 'candidate_id', p_candidate_id);
        IF p_lock THEN
            SELECT * INTO c FROM trovesnap.inventory_candidates ic WHERE ic.id = p_candidate_id FOR NO KEY UPDATE;
        ELSE
            SELECT * INTO c FROM trovesnap.inventory_candidates ic WHERE ic.id = p_candidate_id;
        END IF;
        IF c.kind <> 'new_item' THEN
            PERFORM trovesnap.fail('invalid_input:candidate_id',
                'only a new_item candidate has listing copy: this one proposes a change to an item');
        END IF;
        PERFORM trovesnap.require_assigned(p, c.sale_id, 'candidate', c.id);
        RETURN jsonb_build_object('source_id', c.id, 'source_kind', 'candidate', 'version', c.version, 'origin', 'observed',
            'title', c.title, 'description', c.description, 'category', c.category, 'room', c.room,
            'condition', c.condition, 'quantity', c.quantity);
    END IF;
    PERFORM trovesnap.check_ref('items', 'item_id', coalesce(p_item_id, ''));
    IF p_lock THEN
        SELECT * INTO i FROM trovesnap.items it WHERE it.id = p_item_id FOR NO KEY UPDATE;
    ELSE
        SELECT * INTO i FROM trovesnap.items it WHERE it.id = p_item_id;
    END IF;
    PERFORM trovesnap.require_assigned(p, i.sale_id, 'item', i.id);
    RETURN jsonb_build_object('source_id', i.id, 'source_kind', 'item', 'version', i.version, 'origin', 'supplied',
        'title', i.title, 'description', i.description, 'category', i.category, 'room', i.room,
        'condition', '', 'quantity', 1);
END
$$;

-- export_snapshot: the public fields of an item of the caller's tenant in
-- an assigned sale (never internal pricing, notes or unpublished photos),
-- as a staged export freezes them (the store's exportSnapshot).
CREATE FUNCTION trovesnap.export_snapshot(p trovesnap.principal, p_item_id text) RETURNS jsonb
    LANGUAGE plpgsql
    AS $$
DECLARE
    i trovesnap.items;
BEGIN
    PERFORM trovesnap.check_ref('items', 'item_ids', coalesce(p_item_id, ''));
    SELECT * INTO i FROM trovesnap.items it WHERE it.id = p_item_id;
    PERFORM trovesnap.require_assigned(p, i.sale_id, 'item', i.id);
    RETURN jsonb_build_object('item_id', i.id, 'sale_id', i.sale_id, 'version', i.version, 'status', i.status,
        'title', i.title, 'description', i.description, 'category', i.category, 'price_cents', i.price_cents,
        'photo_count', (SELECT count(*) FROM trovesnap.item_photos ph
                        WHERE ph.tenant_id = i.tenant_id AND ph.item_id = i.id AND ph.published));
END
$$;

-- state_replay: what a read that prepares a write answers first when it
-- is given the write's key: the stored result of a live key with the same
-- fingerprint (a replay), idempotency_conflict for another fingerprint,
-- exactly as the write would (without its lock); NULL otherwise.
CREATE FUNCTION trovesnap.state_replay(p trovesnap.principal, p_tool text, p_tool_major integer, p_key text,
                                       p_fingerprint text) RETURNS jsonb
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF coalesce(p_key, '') <> '' AND coalesce(p_tool, '') <> '' AND coalesce(p_fingerprint, '') <> '' AND p_tool_major IS NOT NULL THEN
        RETURN trovesnap.idem_replay(p, p_tool, p_tool_major, p_key, p_fingerprint, false);
    END IF;
    RETURN NULL;
END
$$;

-- ---------------------------------------------------------------------------
-- RPCs
-- ---------------------------------------------------------------------------

-- mcp_import_targets: the read an import is prepared from (and the CSV
-- preview's only Backend call): the sale must be visible and assigned, and
-- the items the status rows name are reported as import_items does. With
-- the write's key (RunImport) a used key answers its stored result first.
-- It writes nothing.
CREATE FUNCTION public.mcp_import_targets(p_credential_hash text, p_sale_id text, p_item_ids jsonb,
                                          p_tool text DEFAULT NULL, p_tool_major integer DEFAULT NULL,
                                          p_key text DEFAULT NULL, p_fingerprint text DEFAULT NULL) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    p        trovesnap.principal;
    v_replay jsonb;
BEGIN
    PERFORM trovesnap.begin_rpc('trovesnap_mcp');
    p := trovesnap.lookup_client(p_credential_hash);
    PERFORM set_config('trovesnap.tenant_id', p.tenant_id, true);
    v_replay := trovesnap.state_replay(p, p_tool, p_tool_major, p_key, p_fingerprint);
    IF v_replay IS NOT NULL THEN
        RETURN v_replay;
    END IF;
    PERFORM trovesnap.require_active(p);
    PERFORM trovesnap.require_access(p, 'candidate_write', ARRAY['item.create_candidate']);
    IF jsonb_typeof(p_item_ids) IS DISTINCT FROM 'array' THEN
        PERFORM trovesnap.fail('invalid_input:item_id', 'a list of item ids');
    END IF;
    IF jsonb_array_length(p_item_ids) > 10000 THEN
        PERFORM trovesnap.fail('invalid_input:item_id', 'too many items');
    END IF;
    PERFORM trovesnap.check_sale(p, coalesce(p_sale_id, ''));
    RETURN jsonb_build_object('replayed', false, 'sale_id', p_sale_id,
        'targets', trovesnap.import_items(p, ARRAY(SELECT DISTINCT jsonb_array_elements_text(p_item_ids)), false));
END
$$;

-- mcp_run_import writes one import (the store's RunImport) in ONE
-- transaction: one run for the sale with its details, one source record
-- per row (the row as the server normalised it, hashed here), one
-- candidate per valid row — new_item, or status_update with the item it
-- reports on, its status and version as locked now and the claim (never a
-- status event, never a price) — then the event and the idempotency row.
-- p_import carries the server's work: per row its ordinal, kind, validity,
-- payload, candidate fields and the item it names; the targets it was
-- computed from (mcp_import_targets), which must still be what the locked
-- items give, else stale_version and nothing is written.
CREATE FUNCTION public.mcp_run_import(p_credential_hash text, p_tool text, p_tool_major integer, p_key text,
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
                           OR coalesce(r ->> 'reported_status', '') NOT IN ('on_hold', 'pending_pickup', 'sold', 'withdrawn')))) THEN
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

-- mcp_create_status_report records a reported item status as a
-- status_update candidate (the store's CreateStatusReport): the item of
-- the caller's tenant in an assigned sale, share-locked so the status and
-- version observed are the ones at commit; a run of one record (the report
-- as the server encoded it); the candidate and what it claims. The item
-- itself is never changed.
CREATE FUNCTION public.mcp_create_status_report(p_credential_hash text, p_tool text, p_tool_major integer, p_key text,
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
    IF coalesce(v_claim, '') NOT IN ('on_hold', 'pending_pickup', 'sold', 'withdrawn') THEN
        PERFORM trovesnap.fail('invalid_input:reported_status', 'must be one of on_hold, pending_pickup, sold, withdrawn');
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

-- mcp_draft_facts: the facts listing copy is drafted from (draft_facts),
-- for the client's write of p_key: a used key answers its stored result
-- first. It writes nothing.
CREATE FUNCTION public.mcp_draft_facts(p_credential_hash text, p_tool text, p_tool_major integer, p_key text,
                                       p_fingerprint text, p_candidate_id text, p_item_id text) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    p        trovesnap.principal;
    v_replay jsonb;
BEGIN
    PERFORM trovesnap.begin_rpc('trovesnap_mcp');
    p := trovesnap.lookup_client(p_credential_hash);
    PERFORM set_config('trovesnap.tenant_id', p.tenant_id, true);
    v_replay := trovesnap.state_replay(p, p_tool, p_tool_major, p_key, p_fingerprint);
    IF v_replay IS NOT NULL THEN
        RETURN v_replay;
    END IF;
    PERFORM trovesnap.require_active(p);
    PERFORM trovesnap.require_access(p, 'candidate_write', ARRAY['item.create_candidate']);
    IF (coalesce(p_candidate_id, '') = '') = (coalesce(p_item_id, '') = '') THEN
        PERFORM trovesnap.fail('invalid_input:candidate_id', 'give exactly one of candidate_id or item_id');
    END IF;
    RETURN jsonb_build_object('replayed', false, 'facts', trovesnap.draft_facts(p, p_candidate_id, p_item_id, false));
END
$$;

-- mcp_draft_listing_copy stores the outcome of a draft (the store's
-- DraftListingCopy): the copy the server composed from p_draft.facts
-- (mcp_draft_facts), which must still be the source's facts under its row
-- lock, else stale_version. With persist it adds an immutable revision
-- (the next number for the source); either way the event and the
-- idempotency row commit. The item's public text is never changed.
CREATE FUNCTION public.mcp_draft_listing_copy(p_credential_hash text, p_tool text, p_tool_major integer, p_key text,
                                              p_fingerprint text, p_event jsonb, p_started_at timestamptz,
                                              p_draft jsonb) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    p         trovesnap.principal;
    v_now     timestamptz := now();
    v_replay  jsonb;
    v_cand    text := nullif(p_draft ->> 'candidate_id', '');
    v_item    text := nullif(p_draft ->> 'item_id', '');
    v_tone    text := p_draft ->> 'tone';
    v_words   integer;
    v_copy    jsonb := p_draft -> 'copy';
    v_facts   jsonb;
    v_id      text;
    v_rev     integer;
    v_result  jsonb;
    v_related jsonb;
BEGIN
    PERFORM trovesnap.begin_rpc('trovesnap_mcp');
    p := trovesnap.lookup_client(p_credential_hash);
    PERFORM trovesnap.check_write_meta(p_tool, p_tool_major, p_key, p_fingerprint, p_event);
    IF jsonb_typeof(p_draft) IS DISTINCT FROM 'object' THEN
        PERFORM trovesnap.fail('invalid_input:input', 'an object is required');
    END IF;
    IF (v_cand IS NULL) = (v_item IS NULL) THEN
        PERFORM trovesnap.fail('invalid_input:candidate_id', 'give exactly one of candidate_id or item_id');
    END IF;
    IF v_cand IS NOT NULL AND v_cand !~ '^candidate_[A-Za-z0-9]{1,40}$' THEN
        PERFORM trovesnap.fail('invalid_input:candidate_id', 'not a candidate id');
    END IF;
    IF v_item IS NOT NULL AND v_item !~ '^item_[A-Za-z0-9]{1,40}$' THEN
        PERFORM trovesnap.fail('invalid_input:item_id', 'not an item id');
    END IF;
    IF coalesce(v_tone, '') NOT IN ('plain', 'warm', 'collector', 'concise') THEN
        PERFORM trovesnap.fail('invalid_input:tone', 'must be one of plain, warm, collector, concise');
    END IF;
    v_words := coalesce((p_draft ->> 'max_words')::integer, 0);
    IF v_words <> 0 AND (v_words < 20 OR v_words > 400) THEN
        PERFORM trovesnap.fail('invalid_input:max_words', 'must be from 20 to 400');
    END IF;
    IF jsonb_typeof(v_copy) IS DISTINCT FROM 'object' OR jsonb_typeof(v_copy -> 'title') IS DISTINCT FROM 'string'
       OR jsonb_typeof(v_copy -> 'description') IS DISTINCT FROM 'string'
       OR jsonb_typeof(v_copy -> 'segments') IS DISTINCT FROM 'array'
       OR jsonb_typeof(v_copy -> 'unverified_claims') IS DISTINCT FROM 'array' THEN
        PERFORM trovesnap.fail('invalid_input:copy', 'the drafted copy is required');
    END IF;

    PERFORM set_config('trovesnap.tenant_id', p.tenant_id, true);
    v_replay := trovesnap.idem_replay(p, p_tool, p_tool_major, p_key, p_fingerprint, true);
    IF v_replay IS NOT NULL THEN
        RETURN v_replay;
    END IF;
    PERFORM trovesnap.require_active(p);
    PERFORM trovesnap.require_access(p, 'candidate_write', ARRAY['item.create_candidate']);
    v_facts := trovesnap.draft_facts(p, v_cand, v_item, true);
    IF v_facts IS DISTINCT FROM p_draft -> 'facts' THEN
        PERFORM trovesnap.fail('stale_version', 'the record changed while its copy was drafted');
    END IF;

    v_result := jsonb_build_object('source_id', v_facts ->> 'source_id', 'source_kind', v_facts ->> 'source_kind',
        'source_version', (v_facts ->> 'version')::integer, 'copy', v_copy, 'persisted', false);
    IF v_cand IS NOT NULL THEN
        v_related := trovesnap.empty_related() || jsonb_build_object('candidate_ids', jsonb_build_array(v_cand));
    ELSE
        v_related := trovesnap.empty_related() || jsonb_build_object('item_ids', jsonb_build_array(v_item));
    END IF;
    IF coalesce((p_draft ->> 'persist')::boolean, false) THEN
        IF v_cand IS NOT NULL THEN
            SELECT coalesce(max(d.revision), 0) + 1 INTO v_rev FROM trovesnap.draft_revisions d WHERE d.candidate_id = v_cand;
        ELSE
            SELECT coalesce(max(d.revision), 0) + 1 INTO v_rev FROM trovesnap.draft_revisions d WHERE d.item_id = v_item;
        END IF;
        v_id := trovesnap.new_id('draft');
        INSERT INTO trovesnap.draft_revisions (id, tenant_id, candidate_id, item_id, revision, source_version, tone, title,
                                               description, segments, created_by_client_id, created_at)
        VALUES (v_id, p.tenant_id, v_cand, v_item, v_rev, (v_facts ->> 'version')::integer, v_tone, v_copy ->> 'title',
                v_copy ->> 'description', v_copy -> 'segments', p.client_id, v_now);
        v_result := v_result || jsonb_build_object('persisted', true, 'draft_id', v_id, 'revision', v_rev);
    END IF;
    RETURN trovesnap.finish_write(p, p_tool, p_tool_major, p_key, p_fingerprint, p_event, p_started_at, v_result, v_related);
END
$$;

-- mcp_export_state: the snapshots a staged export is validated from
-- (export_snapshot, in the order given: the first id refused decides), for
-- the client's write of p_key: a used key answers its stored result first.
-- It writes nothing.
CREATE FUNCTION public.mcp_export_state(p_credential_hash text, p_tool text, p_tool_major integer, p_key text,
                                        p_fingerprint text, p_item_ids jsonb) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    p        trovesnap.principal;
    v_replay jsonb;
    v_id     text;
    v_snaps  jsonb := '[]';
BEGIN
    PERFORM trovesnap.begin_rpc('trovesnap_mcp');
    p := trovesnap.lookup_client(p_credential_hash);
    PERFORM set_config('trovesnap.tenant_id', p.tenant_id, true);
    v_replay := trovesnap.state_replay(p, p_tool, p_tool_major, p_key, p_fingerprint);
    IF v_replay IS NOT NULL THEN
        RETURN v_replay;
    END IF;
    PERFORM trovesnap.require_active(p);
    PERFORM trovesnap.require_access(p, 'candidate_write', ARRAY['export.stage']);
    IF jsonb_typeof(p_item_ids) IS DISTINCT FROM 'array' THEN
        PERFORM trovesnap.fail('invalid_input:item_ids', 'give 1 to 50 items');
    END IF;
    IF jsonb_array_length(p_item_ids) NOT BETWEEN 1 AND 50 THEN
        PERFORM trovesnap.fail('invalid_input:item_ids', 'give 1 to 50 items');
    END IF;
    FOR v_id IN SELECT x FROM jsonb_array_elements_text(p_item_ids) WITH ORDINALITY AS a(x, n) ORDER BY a.n
    LOOP
        v_snaps := v_snaps || jsonb_build_array(trovesnap.export_snapshot(p, v_id));
    END LOOP;
    RETURN jsonb_build_object('replayed', false, 'listings', v_snaps);
END
$$;

-- mcp_stage_export stores a staged export (the store's StageExport): the
-- listings the server validated for the channel from mcp_export_state,
-- whose snapshots must still be the items' public fields under a share
-- lock, else stale_version; the frozen snapshot per item, the export as
-- 'staged', the event and the idempotency row. It delivers, lists and
-- publishes nothing, and changes no item.
CREATE FUNCTION public.mcp_stage_export(p_credential_hash text, p_tool text, p_tool_major integer, p_key text,
                                        p_fingerprint text, p_event jsonb, p_started_at timestamptz,
                                        p_export jsonb) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    p         trovesnap.principal;
    v_now     timestamptz := now();
    v_replay  jsonb;
    v_channel text := p_export ->> 'channel';
    v_ids     text[];
    v_list    jsonb := p_export -> 'listings';
    v_id      text;
    v_n       integer;
    v_l       jsonb;
    v_valid   integer;
    v_export  text := trovesnap.new_id('export');
    v_result  jsonb;
    v_related jsonb;
BEGIN
    PERFORM trovesnap.begin_rpc('trovesnap_mcp');
    p := trovesnap.lookup_client(p_credential_hash);
    PERFORM trovesnap.check_write_meta(p_tool, p_tool_major, p_key, p_fingerprint, p_event);
    IF jsonb_typeof(p_export) IS DISTINCT FROM 'object' THEN
        PERFORM trovesnap.fail('invalid_input:input', 'an object is required');
    END IF;
    IF coalesce(v_channel, '') NOT IN ('ebay', 'facebook_marketplace', 'etsy', 'csv_file') THEN
        PERFORM trovesnap.fail('invalid_input:channel', 'must be one of ebay, facebook_marketplace, etsy, csv_file');
    END IF;
    IF jsonb_typeof(p_export -> 'item_ids') IS DISTINCT FROM 'array' THEN
        PERFORM trovesnap.fail('invalid_input:item_ids', 'give 1 to 50 items');
    END IF;
    IF jsonb_array_length(p_export -> 'item_ids') NOT BETWEEN 1 AND 50 THEN
        PERFORM trovesnap.fail('invalid_input:item_ids', 'give 1 to 50 items');
    END IF;
    v_ids := ARRAY(SELECT x FROM jsonb_array_elements_text(p_export -> 'item_ids') WITH ORDINALITY AS a(x, n) ORDER BY a.n);
    IF EXISTS (SELECT 1 FROM unnest(v_ids) x WHERE x !~ '^item_[A-Za-z0-9]{1,40}$') THEN
        PERFORM trovesnap.fail('invalid_input:item_ids', 'an entry is not an item id');
    END IF;
    IF cardinality(v_ids) <> (SELECT count(DISTINCT x) FROM unnest(v_ids) x) THEN
        PERFORM trovesnap.fail('invalid_input:item_ids', 'an item is listed twice');
    END IF;
    IF jsonb_typeof(v_list) IS DISTINCT FROM 'array' THEN
        PERFORM trovesnap.fail('invalid_input:listings', 'one validated listing per item');
    END IF;
    IF jsonb_array_length(v_list) <> cardinality(v_ids)
       OR EXISTS (SELECT 1 FROM jsonb_array_elements(v_list) l
                  WHERE jsonb_typeof(l -> 'valid') IS DISTINCT FROM 'boolean' OR jsonb_typeof(l -> 'warnings') IS DISTINCT FROM 'array')
       OR jsonb_typeof(p_export -> 'warnings') IS DISTINCT FROM 'array' THEN
        PERFORM trovesnap.fail('invalid_input:listings', 'one validated listing per item');
    END IF;

    PERFORM set_config('trovesnap.tenant_id', p.tenant_id, true);
    v_replay := trovesnap.idem_replay(p, p_tool, p_tool_major, p_key, p_fingerprint, true);
    IF v_replay IS NOT NULL THEN
        RETURN v_replay;
    END IF;
    PERFORM trovesnap.require_active(p);
    PERFORM trovesnap.require_access(p, 'candidate_write', ARRAY['export.stage']);
    -- Lock the items in id order (no crosswise waits), then check each in
    -- the order given: visible, assigned, still what the server validated.
    PERFORM 1 FROM trovesnap.items i WHERE i.id = ANY (v_ids) ORDER BY i.id FOR SHARE;
    FOR v_n IN 1 .. cardinality(v_ids)
    LOOP
        v_id := v_ids[v_n];
        v_l := v_list -> (v_n - 1);
        IF (v_l - 'valid' - 'warnings') IS DISTINCT FROM trovesnap.export_snapshot(p, v_id) THEN
            PERFORM trovesnap.fail('stale_version', 'the items changed while the export was prepared');
        END IF;
    END LOOP;
    SELECT count(*) FILTER (WHERE (l ->> 'valid')::boolean) INTO v_valid FROM jsonb_array_elements(v_list) l;

    INSERT INTO trovesnap.export_drafts (id, tenant_id, channel, status, item_count, valid_count, warnings,
                                         created_by_client_id, created_at)
    VALUES (v_export, p.tenant_id, v_channel, 'staged', cardinality(v_ids), v_valid, p_export -> 'warnings', p.client_id, v_now);
    INSERT INTO trovesnap.export_draft_items (export_id, tenant_id, position, item_id, item_version, snapshot, valid, warnings)
    SELECT v_export, p.tenant_id, a.n, a.l ->> 'item_id', (a.l ->> 'version')::integer, a.l - 'valid' - 'warnings',
           (a.l ->> 'valid')::boolean, a.l -> 'warnings'
    FROM jsonb_array_elements(v_list) WITH ORDINALITY AS a(l, n) ORDER BY a.n;

    v_result := jsonb_build_object('export_id', v_export, 'channel', v_channel, 'status', 'staged', 'listings', v_list,
        'valid_count', v_valid, 'warnings', p_export -> 'warnings', 'created_at', trovesnap.ts(v_now));
    v_related := trovesnap.empty_related() || jsonb_build_object('item_ids', to_jsonb(v_ids));
    RETURN trovesnap.finish_write(p, p_tool, p_tool_major, p_key, p_fingerprint, p_event, p_started_at, v_result, v_related);
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
               AND p.proname IN ('refuse_update', 'export_snapshot_immutable', 'client_descriptor', 'payload_hash',
                                 'single_record_run', 'import_items', 'import_item_ids', 'draft_facts', 'export_snapshot',
                                 'state_replay', 'mcp_import_targets', 'mcp_run_import', 'mcp_create_status_report',
                                 'mcp_draft_facts', 'mcp_draft_listing_copy', 'mcp_export_state', 'mcp_stage_export')
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
    public.mcp_import_targets(text, text, jsonb, text, integer, text, text),
    public.mcp_run_import(text, text, integer, text, text, jsonb, timestamptz, jsonb),
    public.mcp_create_status_report(text, text, integer, text, text, jsonb, timestamptz, jsonb),
    public.mcp_draft_facts(text, text, integer, text, text, text, text),
    public.mcp_draft_listing_copy(text, text, integer, text, text, jsonb, timestamptz, jsonb),
    public.mcp_export_state(text, text, integer, text, text, jsonb),
    public.mcp_stage_export(text, text, integer, text, text, jsonb, timestamptz, jsonb)
TO trovesnap_mcp;

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (9, '20261130120500_trovesnap_ingestion_rpcs');

RESET ROLE;
