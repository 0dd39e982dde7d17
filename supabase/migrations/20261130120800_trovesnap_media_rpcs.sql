-- trovesnap live mode, migration 12: candidate media (source assets) in live mode.
--
-- The two media writes of the candidate tools (§13, §29) —
-- trove_attach_candidate_photo and trove_create_media_attachment_candidate —
-- mirroring the embedded store (store/migrations/0004_ingestion.sql,
-- store/assets.go, store/ingestion.go). In live mode the image bytes live
-- in Postgres, in the private source_assets table (bytea) next to their
-- metadata, not in an object store: the bytes, the tenant's quota check,
-- the candidate media rows, the plugin_event and the idempotency row commit
-- in ONE transaction under the same row level security, so there are never
-- orphaned bytes, no second service or key, and a tenant over its quota is
-- refused before anything is written (docs/live-media.md records the
-- decision and its trade-off).
--
-- The photo checks (sniffed type, a real decode, bounded pixels, the
-- content hash) are Go's and run before the RPC (internal/ingest, then
-- internal/live/media.go restating the store's checkMediaInput). The bytes
-- travel base64 in the JSON body; the RPC decodes them, verifies their
-- size and sha256 against what the server says they are and refuses a
-- mismatch, and the table itself refuses a row whose bytes are not the
-- ones its metadata names (source_asset_guard). Each write is shaped like
-- migration 9's: begin_rpc, the client from its credential hash, the
-- input's invariants, the key's advisory lock (a live key replays or
-- conflicts), the client still active with the tool group and permission,
-- the references visible in its tenant (invalid_reference otherwise, the
-- same for a missing and another tenant's record) and in an assigned sale
-- (sale_assignment), the records, then the event and the idempotency row
-- (finish_write). Nothing here writes an item or an item photo: an asset
-- is private source media, attached to reviewable candidates only.
--
-- Errors are trovesnap.fail codes; a reasoned code's detail is a short
-- printable reason without ';' (internal/live/rpc.go safeReason).

SET ROLE trovesnap_owner;

-- ---------------------------------------------------------------------------
-- Tables (store/migrations/0004_ingestion.sql)
-- ---------------------------------------------------------------------------

-- A durable source asset: bytes the server checked (sniffed type, real
-- decode, bounded pixels), with their metadata. One row per tenant and
-- content hash: an upload of the same bytes reuses it. Private always:
-- publication is a reviewed action on an item, not on an asset. Where the
-- store keeps a storage_path (a file it wrote), this table keeps the bytes
-- themselves (content); a later move to an object store would add a
-- storage_key and leave the metadata as it is.
CREATE TABLE trovesnap.source_assets (
    id                   text COLLATE "C" PRIMARY KEY CHECK (id <> ''),
    tenant_id            text COLLATE "C" NOT NULL REFERENCES trovesnap.tenants (id),
    sha256               text COLLATE "C" NOT NULL CHECK (sha256 ~ '^sha256:[0-9a-f]{64}$'),
    mime_type            text NOT NULL CHECK (mime_type IN ('image/jpeg', 'image/png', 'image/gif', 'image/webp')),
    byte_size            integer NOT NULL CHECK (byte_size BETWEEN 1 AND 8388608),
    width                integer NOT NULL CHECK (width > 0),
    height               integer NOT NULL CHECK (height > 0),
    content              bytea NOT NULL,
    visibility           text NOT NULL DEFAULT 'private' CHECK (visibility = 'private'),
    created_by_client_id text COLLATE "C" NOT NULL,
    created_at           timestamptz NOT NULL,
    CHECK (width::bigint * height <= 40000000),
    UNIQUE (tenant_id, id),
    UNIQUE (tenant_id, sha256),
    FOREIGN KEY (tenant_id, created_by_client_id) REFERENCES trovesnap.mcp_clients (tenant_id, id)
);
-- Images are compressed already: keep the bytes out of line, uncompressed
-- (no pglz attempt on every insert, and the size is known from the TOAST
-- pointer without reading them).
ALTER TABLE trovesnap.source_assets ALTER COLUMN content SET STORAGE EXTERNAL;

-- An asset attached to a candidate, in position order. An asset is
-- attached to a candidate at most once.
CREATE TABLE trovesnap.candidate_media (
    id                   text COLLATE "C" PRIMARY KEY CHECK (id <> ''),
    tenant_id            text COLLATE "C" NOT NULL,
    candidate_id         text COLLATE "C" NOT NULL,
    asset_id             text COLLATE "C" NOT NULL,
    caption              text NOT NULL DEFAULT '' CHECK (char_length(caption) <= 200),
    position             integer NOT NULL CHECK (position >= 1),
    created_by_client_id text COLLATE "C" NOT NULL,
    created_at           timestamptz NOT NULL,
    UNIQUE (tenant_id, id),
    UNIQUE (candidate_id, asset_id),
    UNIQUE (candidate_id, position),
    FOREIGN KEY (tenant_id, candidate_id) REFERENCES trovesnap.inventory_candidates (tenant_id, id),
    FOREIGN KEY (tenant_id, asset_id) REFERENCES trovesnap.source_assets (tenant_id, id),
    FOREIGN KEY (tenant_id, created_by_client_id) REFERENCES trovesnap.mcp_clients (tenant_id, id)
);
CREATE INDEX candidate_media_asset ON trovesnap.candidate_media (tenant_id, asset_id);

-- Content is immutable, for every role: a stored asset never changes (and
-- its bytes must be the ones its size and hash name), and an attachment is
-- never edited. (Rows may be deleted by a later retention step; an asset
-- that is attached cannot be, its foreign keys see to that.)
CREATE FUNCTION trovesnap.source_asset_guard() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF TG_OP = 'UPDATE' THEN
        RAISE EXCEPTION USING ERRCODE = 'P0001', MESSAGE = 'trovesnap:immutable:source_assets';
    END IF;
    IF octet_length(NEW.content) <> NEW.byte_size OR 'sha256:' || encode(sha256(NEW.content), 'hex') <> NEW.sha256 THEN
        RAISE EXCEPTION USING ERRCODE = 'P0001', MESSAGE = 'trovesnap:invalid_input:image_base64',
            DETAIL = 'the image did not pass the server''s checks';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER source_assets_guard BEFORE INSERT OR UPDATE ON trovesnap.source_assets
    FOR EACH ROW EXECUTE FUNCTION trovesnap.source_asset_guard();
CREATE TRIGGER candidate_media_immutable BEFORE UPDATE ON trovesnap.candidate_media
    FOR EACH ROW EXECUTE FUNCTION trovesnap.refuse_update();

-- Row level security, exactly as migrations 4 and 9 set it.
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['source_assets', 'candidate_media']
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

-- asset_owner is owner_of for source assets: the tenant of an asset
-- whatever the context, to classify a refused asset_id for the audit only.
CREATE FUNCTION trovesnap.asset_owner(p_id text) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    t text;
BEGIN
    PERFORM set_config('trovesnap.system', 'on', true);
    SELECT a.tenant_id INTO t FROM trovesnap.source_assets a WHERE a.id = p_id;
    PERFORM set_config('trovesnap.system', 'off', true);
    RETURN t;
END
$$;

-- media_input checks the invariants of a media write's input (the server
-- checked every rule already; the store's checkMediaInput): exactly one of
-- the uploaded bytes (p_content, base64) and an asset id; a clean caption
-- of at most 200 characters; for bytes, the metadata the photo checks
-- reported, within the limits. The bytes themselves are verified later
-- (media_asset), after a replay has had its chance to answer.
CREATE FUNCTION trovesnap.media_input(p_media jsonb, p_content text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    AS $$
DECLARE
    v_asset   text := nullif(p_media ->> 'asset_id', '');
    v_caption text := coalesce(p_media ->> 'caption', '');
BEGIN
    IF jsonb_typeof(p_media) IS DISTINCT FROM 'object' THEN
        PERFORM trovesnap.fail('invalid_input:input', 'an object is required');
    END IF;
    IF (coalesce(p_content, '') = '') = (v_asset IS NULL) THEN
        PERFORM trovesnap.fail('invalid_input:image_base64', 'give exactly one of image_base64 or asset_id');
    END IF;
    IF v_asset IS NOT NULL AND v_asset !~ '^asset_[A-Za-z0-9]{1,40}$' THEN
        PERFORM trovesnap.fail('invalid_input:asset_id', 'not an asset id (asset_…)');
    END IF;
    -- CleanLine removed control characters and line separators; the
    -- source record's JSON (media_payload) relies on it.
    IF char_length(v_caption) > 200 OR v_caption ~ '[\x01-\x1f\x7f-\x9f\u2028\u2029]' THEN
        PERFORM trovesnap.fail('invalid_input:caption', 'longer than 200 characters or not clean text');
    END IF;
    IF v_asset IS NOT NULL THEN
        RETURN;
    END IF;
    -- (Two steps: the numbers are compared only once they are known to be
    -- numbers.)
    IF coalesce(p_media ->> 'mime_type', '') NOT IN ('image/jpeg', 'image/png', 'image/gif', 'image/webp')
       OR coalesce(p_media ->> 'content_hash', '') !~ '^sha256:[0-9a-f]{64}$'
       OR coalesce(p_media ->> 'byte_size', '') !~ '^[1-9][0-9]{0,8}$'
       OR coalesce(p_media ->> 'width', '') !~ '^[1-9][0-9]{0,8}$'
       OR coalesce(p_media ->> 'height', '') !~ '^[1-9][0-9]{0,8}$'
       OR length(p_content) > 11184812 THEN
        PERFORM trovesnap.fail('invalid_input:image_base64', 'the image did not pass the server''s checks');
    END IF;
    IF (p_media ->> 'byte_size')::bigint > 8388608
       OR (p_media ->> 'width')::bigint * (p_media ->> 'height')::bigint > 40000000 THEN
        PERFORM trovesnap.fail('invalid_input:image_base64', 'the image did not pass the server''s checks');
    END IF;
END
$$;

-- media_asset resolves the asset of a media write (the store's ingAsset):
-- an asset of the tenant by id (reused), or the uploaded bytes — decoded
-- and verified against the size and sha256 the server gave, then, under
-- the tenant's asset lock (uploads of one tenant serialise, so neither the
-- dedupe nor the quota races), the tenant's asset of the same hash
-- (reused, nothing stored) or a new asset within the tenant's quota of
-- 2 GiB (domain.MaxTenantMediaBytes). Returns the asset's metadata and
-- whether it was reused.
CREATE FUNCTION trovesnap.media_asset(p trovesnap.principal, p_media jsonb, p_content text, p_now timestamptz) RETURNS jsonb
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_asset text := nullif(p_media ->> 'asset_id', '');
    v_hash  text := p_media ->> 'content_hash';
    v_size  integer;
    v_bytes bytea;
    v_used  bigint;
    a       record;
BEGIN
    IF v_asset IS NOT NULL THEN
        SELECT s.id, s.sha256, s.mime_type, s.byte_size, s.width, s.height INTO a
        FROM trovesnap.source_assets s WHERE s.id = v_asset;
        IF NOT FOUND THEN
            PERFORM trovesnap.fail('invalid_reference:asset_id', jsonb_build_object('id', v_asset,
                'cross_tenant', trovesnap.asset_owner(v_asset) IS NOT NULL)::text);
        END IF;
        RETURN jsonb_build_object('id', a.id, 'sha256', a.sha256, 'mime_type', a.mime_type, 'byte_size', a.byte_size,
            'width', a.width, 'height', a.height, 'reused', true);
    END IF;

    v_size := (p_media ->> 'byte_size')::integer;
    BEGIN
        v_bytes := decode(p_content, 'base64');
    EXCEPTION WHEN data_exception THEN
        v_bytes := NULL;
    END;
    IF v_bytes IS NULL OR octet_length(v_bytes) <> v_size OR 'sha256:' || encode(sha256(v_bytes), 'hex') <> v_hash THEN
        PERFORM trovesnap.fail('invalid_input:image_base64', 'the image did not pass the server''s checks');
    END IF;

    PERFORM pg_advisory_xact_lock(hashtextextended('assets/' || p.tenant_id, 0));
    SELECT s.id, s.sha256, s.mime_type, s.byte_size, s.width, s.height INTO a
    FROM trovesnap.source_assets s WHERE s.tenant_id = p.tenant_id AND s.sha256 = v_hash;
    IF FOUND THEN
        RETURN jsonb_build_object('id', a.id, 'sha256', a.sha256, 'mime_type', a.mime_type, 'byte_size', a.byte_size,
            'width', a.width, 'height', a.height, 'reused', true);
    END IF;
    SELECT coalesce(sum(s.byte_size), 0) INTO v_used FROM trovesnap.source_assets s WHERE s.tenant_id = p.tenant_id;
    IF v_used + v_size > 2147483648 THEN
        PERFORM trovesnap.fail('invalid_input:image_base64', 'the tenant''s media quota of 2147483648 bytes is full');
    END IF;
    v_asset := trovesnap.new_id('asset');
    INSERT INTO trovesnap.source_assets (id, tenant_id, sha256, mime_type, byte_size, width, height, content,
                                         created_by_client_id, created_at)
    VALUES (v_asset, p.tenant_id, v_hash, p_media ->> 'mime_type', v_size, (p_media ->> 'width')::integer,
            (p_media ->> 'height')::integer, v_bytes, p.client_id, p_now);
    RETURN jsonb_build_object('id', v_asset, 'sha256', v_hash, 'mime_type', p_media ->> 'mime_type', 'byte_size', v_size,
        'width', (p_media ->> 'width')::integer, 'height', (p_media ->> 'height')::integer, 'reused', false);
END
$$;

-- media_attach attaches asset p_asset_id to candidate p_candidate_id (the
-- store's attachMedia): the existing attachment when there is one
-- (already), else a new one at the next position, at most 12 per candidate
-- (domain.MaxPhotosPerCandidate). The caller holds the candidate's row
-- lock, so concurrent attachments to one candidate serialise.
CREATE FUNCTION trovesnap.media_attach(p trovesnap.principal, p_candidate_id text, p_asset_id text, p_caption text,
                                       p_now timestamptz) RETURNS jsonb
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_id    text;
    v_count integer;
    v_last  integer;
BEGIN
    SELECT m.id INTO v_id FROM trovesnap.candidate_media m WHERE m.candidate_id = p_candidate_id AND m.asset_id = p_asset_id;
    IF FOUND THEN
        RETURN jsonb_build_object('media_id', v_id, 'already', true);
    END IF;
    SELECT count(*), coalesce(max(m.position), 0) INTO v_count, v_last
    FROM trovesnap.candidate_media m WHERE m.candidate_id = p_candidate_id;
    IF v_count >= 12 THEN
        PERFORM trovesnap.fail('invalid_input:candidate_id', 'the candidate already has 12 photos, the most it may have');
    END IF;
    v_id := trovesnap.new_id('media');
    INSERT INTO trovesnap.candidate_media (id, tenant_id, candidate_id, asset_id, caption, position, created_by_client_id,
                                           created_at)
    VALUES (v_id, p.tenant_id, p_candidate_id, p_asset_id, p_caption, v_last + 1, p.client_id, p_now);
    RETURN jsonb_build_object('media_id', v_id, 'already', false);
END
$$;

-- media_payload: the source record of an attach_media candidate, byte for
-- byte the JSON the store encodes (Go's encoding/json without HTML
-- escaping, the fields in its order, caption omitted when empty). The
-- caption is clean text (media_input), which both encoders write alike.
CREATE FUNCTION trovesnap.media_payload(p_item_id text, a jsonb, p_caption text) RETURNS text
    LANGUAGE sql IMMUTABLE
    AS $$
        SELECT '{"kind":"attach_media","item_id":' || to_jsonb(p_item_id)::text
            || ',"asset_id":' || (a -> 'id')::text || ',"content_hash":' || (a -> 'sha256')::text
            || ',"mime_type":' || (a -> 'mime_type')::text || ',"width":' || (a ->> 'width')
            || ',"height":' || (a ->> 'height')
            || CASE WHEN p_caption <> '' THEN ',"caption":' || to_jsonb(p_caption)::text ELSE '' END || '}'
    $$;

-- media_result: the fields of domain.CandidateMediaCreated both writes share.
CREATE FUNCTION trovesnap.media_result(p_candidate_id text, p_kind text, m jsonb, a jsonb) RETURNS jsonb
    LANGUAGE sql IMMUTABLE
    AS $$
        SELECT jsonb_build_object('candidate_id', p_candidate_id, 'kind', p_kind, 'media_id', m ->> 'media_id',
            'asset_id', a ->> 'id', 'content_hash', a ->> 'sha256', 'mime_type', a ->> 'mime_type',
            'width', (a ->> 'width')::integer, 'height', (a ->> 'height')::integer,
            'byte_size', (a ->> 'byte_size')::integer, 'review_status', 'needs_review',
            'asset_reused', (a ->> 'reused')::boolean, 'already_attached', (m ->> 'already')::boolean)
    $$;

-- ---------------------------------------------------------------------------
-- RPCs
-- ---------------------------------------------------------------------------

-- mcp_attach_candidate_media attaches a photo to a candidate awaiting
-- review (the store's AttachCandidateMedia): the candidate of the caller's
-- tenant in an assigned sale, row-locked so its review state holds until
-- commit and attachments to it serialise; not a status report; the asset
-- (media_asset) and the attachment (media_attach), then the event and the
-- idempotency row. No item and no item photo is touched.
CREATE FUNCTION public.mcp_attach_candidate_media(p_credential_hash text, p_tool text, p_tool_major integer, p_key text,
                                                  p_fingerprint text, p_event jsonb, p_started_at timestamptz,
                                                  p_media jsonb, p_content text DEFAULT NULL) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    p         trovesnap.principal;
    v_now     timestamptz := now();
    v_replay  jsonb;
    v_cand    text := p_media ->> 'candidate_id';
    c         trovesnap.inventory_candidates;
    a         jsonb;
    m         jsonb;
    v_related jsonb;
BEGIN
    PERFORM trovesnap.begin_rpc('trovesnap_mcp');
    p := trovesnap.lookup_client(p_credential_hash);
    PERFORM trovesnap.check_write_meta(p_tool, p_tool_major, p_key, p_fingerprint, p_event);
    PERFORM trovesnap.media_input(p_media, p_content);
    IF coalesce(v_cand, '') !~ '^candidate_[A-Za-z0-9]{1,40}$' THEN
        PERFORM trovesnap.fail('invalid_input:candidate_id', 'required: the candidate the photo documents');
    END IF;

    PERFORM set_config('trovesnap.tenant_id', p.tenant_id, true);
    v_replay := trovesnap.idem_replay(p, p_tool, p_tool_major, p_key, p_fingerprint, true);
    IF v_replay IS NOT NULL THEN
        RETURN v_replay;
    END IF;
    PERFORM trovesnap.require_active(p);
    PERFORM trovesnap.require_access(p, 'candidate_write', ARRAY['item.create_candidate']);
    PERFORM trovesnap.check_ref('inventory_candidates', 'candidate_id', v_cand);
    SELECT * INTO c FROM trovesnap.inventory_candidates ic WHERE ic.id = v_cand FOR NO KEY UPDATE;
    PERFORM trovesnap.require_assigned(p, c.sale_id, 'candidate', c.id);
    IF c.review_status <> 'needs_review' THEN
        PERFORM trovesnap.fail('transition_invalid',
            'candidate ' || c.id || ' is ' || c.review_status || ': photos are attached only while it awaits review');
    END IF;
    IF c.kind = 'status_update' THEN
        PERFORM trovesnap.fail('invalid_input:candidate_id', 'a status report takes no photos');
    END IF;

    a := trovesnap.media_asset(p, p_media, p_content, v_now);
    m := trovesnap.media_attach(p, c.id, a ->> 'id', coalesce(p_media ->> 'caption', ''), v_now);
    v_related := trovesnap.empty_related() || jsonb_build_object('candidate_ids', jsonb_build_array(c.id));
    RETURN trovesnap.finish_write(p, p_tool, p_tool_major, p_key, p_fingerprint, p_event, p_started_at,
        trovesnap.media_result(c.id, c.kind, m, a), v_related);
END
$$;

-- mcp_create_media_candidate proposes a photo for an item (the store's
-- CreateMediaCandidate): the item of the caller's tenant in an assigned
-- sale, share-locked so the version and status observed are the ones at
-- commit; the asset (media_asset); a run of one record (media_payload);
-- an attach_media candidate and the item it is about; the attachment; then
-- the event and the idempotency row. The item itself is never changed.
CREATE FUNCTION public.mcp_create_media_candidate(p_credential_hash text, p_tool text, p_tool_major integer, p_key text,
                                                  p_fingerprint text, p_event jsonb, p_started_at timestamptz,
                                                  p_media jsonb, p_content text DEFAULT NULL) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    p         trovesnap.principal;
    v_now     timestamptz := now();
    v_replay  jsonb;
    v_item    text := p_media ->> 'item_id';
    v_caption text := coalesce(p_media ->> 'caption', '');
    v_cand    text := trovesnap.new_id('candidate');
    v_chain   text[];
    i         trovesnap.items;
    a         jsonb;
    m         jsonb;
    v_related jsonb;
BEGIN
    PERFORM trovesnap.begin_rpc('trovesnap_mcp');
    p := trovesnap.lookup_client(p_credential_hash);
    PERFORM trovesnap.check_write_meta(p_tool, p_tool_major, p_key, p_fingerprint, p_event);
    PERFORM trovesnap.media_input(p_media, p_content);
    IF coalesce(v_item, '') !~ '^item_[A-Za-z0-9]{1,40}$' THEN
        PERFORM trovesnap.fail('invalid_input:item_id', 'required: the item the photo is proposed for');
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

    a := trovesnap.media_asset(p, p_media, p_content, v_now);
    v_chain := trovesnap.single_record_run(p, i.sale_id, 'mcp_media', trovesnap.media_payload(i.id, a, v_caption), v_now);
    INSERT INTO trovesnap.inventory_candidates (id, tenant_id, sale_id, kind, title, description, category, room, condition,
        quantity, supplied_price_cents, notes, review_status, source_descriptor_id, import_run_id, source_record_id,
        created_by_client_id, version, created_at)
    VALUES (v_cand, p.tenant_id, i.sale_id, 'attach_media', 'Photo proposed for ' || i.id, '', '', '', '', 1, NULL,
            v_caption, 'needs_review', v_chain[1], v_chain[2], v_chain[3], p.client_id, 1, v_now);
    INSERT INTO trovesnap.candidate_item_changes (candidate_id, tenant_id, kind, item_id, observed_version, observed_status)
    VALUES (v_cand, p.tenant_id, 'attach_media', i.id, i.version, i.status);
    m := trovesnap.media_attach(p, v_cand, a ->> 'id', v_caption, v_now);

    v_related := trovesnap.empty_related() || jsonb_build_object('source_import_run_ids', jsonb_build_array(v_chain[2]),
        'source_import_record_ids', jsonb_build_array(v_chain[3]), 'candidate_ids', jsonb_build_array(v_cand),
        'item_ids', jsonb_build_array(i.id));
    RETURN trovesnap.finish_write(p, p_tool, p_tool_major, p_key, p_fingerprint, p_event, p_started_at,
        trovesnap.media_result(v_cand, 'attach_media', m, a) || jsonb_build_object('already_attached', false,
            'item_id', i.id, 'import_run_id', v_chain[2], 'source_record_id', v_chain[3]),
        v_related);
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
               AND p.proname IN ('source_asset_guard', 'asset_owner', 'media_input', 'media_asset', 'media_attach',
                                 'media_payload', 'media_result', 'mcp_attach_candidate_media',
                                 'mcp_create_media_candidate')
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
    public.mcp_attach_candidate_media(text, text, integer, text, text, jsonb, timestamptz, jsonb, text),
    public.mcp_create_media_candidate(text, text, integer, text, text, jsonb, timestamptz, jsonb, text)
TO trovesnap_mcp;

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (12, '20261130120800_trovesnap_media_rpcs');

RESET ROLE;
