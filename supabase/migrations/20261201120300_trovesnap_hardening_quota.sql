-- trovesnap live mode, hardening (issue 13): signed cursors and the
-- candidate-tier quota. Mirrors store/migrations/*_cursor_secret_quota.sql
-- (numbered 0009 in the plan) and internal/domain/cursor.go.
--
-- Cursors (docs/cursors.md). A list cursor is c2.<key>.<id>.<mac>, each part
-- base64url without padding, the MAC an HMAC-SHA256 over the list kind, the
-- tenant and the two parts under a per-database secret. The secret is made
-- here (32 bytes from Postgres' strong random source) and never leaves the
-- database: mcp_cursor_seal and mcp_cursor_open, callable by the server's
-- role only, seal and open cursors, deriving the tenant from the caller's
-- credential. No host holds a key that could forge a cursor.
--
-- Quota (docs/quota.md). trovesnap.tenant_usage counts, per tenant, the
-- candidates still in review and the stored source bytes (candidate text and
-- source record payloads in UTF-8 bytes plus 256 bytes per row, and source
-- asset bytes). Row triggers keep it and refuse, inside the writing RPC's
-- transaction, a row that takes the tenant over its quota
-- (invalid_input:quota with a reason naming the quota and how to raise it),
-- so the whole write — a CSV apply with all its rows, its event and its
-- idempotency row — is rolled back. The quota sits on the tenant's
-- mcp_limits row (NULL: the default, 20000 candidates and 2.5 GiB;
-- internal/domain/clients.go holds the same numbers).

SET ROLE trovesnap_owner;

-- ---------------------------------------------------------------------------
-- Cursors
-- ---------------------------------------------------------------------------

CREATE TABLE trovesnap.cursor_secret (
    id     boolean PRIMARY KEY DEFAULT true CHECK (id),
    secret bytea NOT NULL CHECK (octet_length(secret) = 32)
);
-- gen_random_uuid draws on pg_strong_random; three of them (366 random
-- bits) hashed give the 32 bytes.
INSERT INTO trovesnap.cursor_secret (secret)
SELECT sha256(convert_to(gen_random_uuid()::text || gen_random_uuid()::text || gen_random_uuid()::text, 'UTF8'));
ALTER TABLE trovesnap.cursor_secret ENABLE ROW LEVEL SECURITY;
ALTER TABLE trovesnap.cursor_secret FORCE ROW LEVEL SECURITY;
-- No grant to any other role, no policy for writes (no RPC changes the
-- secret), and the owner reads it only while cursor_mac has raised its own
-- flag: no other function, context or table scan sees it.
CREATE POLICY cursor_secret_read ON trovesnap.cursor_secret FOR SELECT TO trovesnap_owner
    USING (coalesce(current_setting('trovesnap.cursor_secret', true), '') = 'on');

-- hmac_sha256 is RFC 2104 over sha256 (pgcrypto is not assumed).
CREATE OR REPLACE FUNCTION trovesnap.hmac_sha256(p_key bytea, p_msg bytea) RETURNS bytea
    LANGUAGE plpgsql IMMUTABLE STRICT
    AS $$
DECLARE
    k    bytea := p_key;
    ipad bytea;
    opad bytea;
BEGIN
    IF octet_length(k) > 64 THEN
        k := sha256(k);
    END IF;
    k := k || decode(repeat('00', 64 - octet_length(k)), 'hex');
    ipad := k;
    opad := k;
    FOR i IN 0..63 LOOP
        ipad := set_byte(ipad, i, get_byte(k, i) # 54);
        opad := set_byte(opad, i, get_byte(k, i) # 92);
    END LOOP;
    RETURN sha256(opad || sha256(ipad || p_msg));
END
$$;

CREATE OR REPLACE FUNCTION trovesnap.b64url(p bytea) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT
    AS $$ SELECT translate(encode(p, 'base64'), E'+/=\n', '-_') $$;

CREATE OR REPLACE FUNCTION trovesnap.b64url_decode(p text) RETURNS bytea
    LANGUAGE sql IMMUTABLE STRICT
    AS $$ SELECT decode(rpad(translate(p, '-_', '+/'), ((length(p) + 3) / 4) * 4, '='), 'base64') $$;

-- cursor_mac is domain.CursorMAC: the same bytes for the same secret.
CREATE OR REPLACE FUNCTION trovesnap.cursor_mac(p_kind text, p_tenant text, p_key_part text, p_id_part text) RETURNS bytea
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    v_secret bytea;
BEGIN
    PERFORM set_config('trovesnap.cursor_secret', 'on', true);
    SELECT s.secret INTO v_secret FROM trovesnap.cursor_secret s;
    PERFORM set_config('trovesnap.cursor_secret', 'off', true);
    IF v_secret IS NULL THEN
        RAISE EXCEPTION 'trovesnap: no cursor secret';
    END IF;
    RETURN trovesnap.hmac_sha256(v_secret, convert_to('trovesnap-cursor-v2' || E'\n' || p_kind || E'\n' || p_tenant
        || E'\n' || p_key_part || '.' || p_id_part, 'UTF8'));
END
$$;

-- cursor_tenant starts a cursor RPC and returns the tenant a cursor of
-- p_kind is bound to: none for the public marketplace, else the caller's.
CREATE OR REPLACE FUNCTION trovesnap.cursor_tenant(p_credential_hash text, p_kind text) RETURNS text
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF coalesce(p_kind, '') = '' OR length(p_kind) > 200 THEN
        PERFORM trovesnap.fail('invalid_input:cursor', 'not a cursor of this list: start again without a cursor');
    END IF;
    IF p_kind = 'marketplace' THEN
        PERFORM trovesnap.begin_public();
        RETURN '';
    END IF;
    RETURN (trovesnap.enter_read(p_credential_hash, NULL)).tenant_id;
END
$$;

-- mcp_cursor_seal: the cursor of the row after (p_key, p_id) in the list
-- p_kind of the caller's tenant.
CREATE OR REPLACE FUNCTION public.mcp_cursor_seal(p_credential_hash text, p_kind text, p_key text, p_id text) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    v_tenant text;
    v_kp     text;
    v_ip     text;
BEGIN
    v_tenant := trovesnap.cursor_tenant(p_credential_hash, p_kind);
    IF coalesce(p_id, '') = '' OR p_key IS NULL OR length(p_key) + length(p_id) > 300 THEN
        PERFORM trovesnap.fail('invalid_input:cursor', 'not a cursor of this list: start again without a cursor');
    END IF;
    v_kp := trovesnap.b64url(convert_to(p_key, 'UTF8'));
    v_ip := trovesnap.b64url(convert_to(p_id, 'UTF8'));
    RETURN 'c2.' || v_kp || '.' || v_ip || '.' || trovesnap.b64url(trovesnap.cursor_mac(p_kind, v_tenant, v_kp, v_ip));
END
$$;

-- mcp_cursor_open: the position a cursor sealed for this list and the
-- caller's tenant names; anything else (forged, altered, truncated, another
-- list's, tenant's or database's) is invalid_input:cursor.
CREATE OR REPLACE FUNCTION public.mcp_cursor_open(p_credential_hash text, p_kind text, p_cursor text) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    v_tenant text;
    m        text[];
BEGIN
    v_tenant := trovesnap.cursor_tenant(p_credential_hash, p_kind);
    IF p_cursor IS NULL OR length(p_cursor) > 512 THEN
        PERFORM trovesnap.fail('invalid_input:cursor', 'not a cursor of this list: start again without a cursor');
    END IF;
    m := regexp_match(p_cursor, '^c2\.([A-Za-z0-9_-]*)\.([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]{43})$');
    IF m IS NULL OR trovesnap.b64url(trovesnap.cursor_mac(p_kind, v_tenant, m[1], m[2])) <> m[3] THEN
        PERFORM trovesnap.fail('invalid_input:cursor', 'not a cursor of this list: start again without a cursor');
    END IF;
    RETURN jsonb_build_object('k', convert_from(trovesnap.b64url_decode(m[1]), 'UTF8'),
                              'i', convert_from(trovesnap.b64url_decode(m[2]), 'UTF8'));
END
$$;

-- ---------------------------------------------------------------------------
-- Quota
-- ---------------------------------------------------------------------------

ALTER TABLE trovesnap.mcp_limits ADD COLUMN maximum_open_candidates integer
    CHECK (maximum_open_candidates IS NULL OR maximum_open_candidates >= 0);
ALTER TABLE trovesnap.mcp_limits ADD COLUMN maximum_candidate_bytes bigint
    CHECK (maximum_candidate_bytes IS NULL OR maximum_candidate_bytes >= 0);

CREATE TABLE trovesnap.tenant_usage (
    tenant_id       text COLLATE "C" PRIMARY KEY REFERENCES trovesnap.tenants (id),
    open_candidates bigint NOT NULL DEFAULT 0,
    candidate_bytes bigint NOT NULL DEFAULT 0
);
SELECT trovesnap.tenant_rls(ARRAY['tenant_usage']);

CREATE OR REPLACE FUNCTION trovesnap.candidate_row_bytes(c trovesnap.inventory_candidates) RETURNS bigint
    LANGUAGE sql IMMUTABLE
    AS $$ SELECT 256 + octet_length(c.title) + octet_length(c.description) + octet_length(c.category)
                 + octet_length(c.room) + octet_length(c.condition) + octet_length(c.notes) $$;

CREATE OR REPLACE FUNCTION trovesnap.candidate_is_open(p_status text) RETURNS boolean
    LANGUAGE sql IMMUTABLE
    AS $$ SELECT coalesce(p_status IN ('needs_review', 'approved'), false) $$;

-- The backfill reads every tenant's rows: system context for the migration.
SELECT set_config('trovesnap.system', 'on', false);
INSERT INTO trovesnap.tenant_usage (tenant_id, open_candidates, candidate_bytes)
SELECT t.id,
    (SELECT count(*) FROM trovesnap.inventory_candidates c WHERE c.tenant_id = t.id AND trovesnap.candidate_is_open(c.review_status)),
    (SELECT coalesce(sum(trovesnap.candidate_row_bytes(c)), 0) FROM trovesnap.inventory_candidates c WHERE c.tenant_id = t.id)
    + (SELECT coalesce(sum(256 + octet_length(r.payload)), 0) FROM trovesnap.source_records r WHERE r.tenant_id = t.id)
    + (SELECT coalesce(sum(a.byte_size), 0) FROM trovesnap.source_assets a WHERE a.tenant_id = t.id)
FROM trovesnap.tenants t;
SELECT set_config('trovesnap.system', 'off', false);

-- usage_add moves a tenant's usage and refuses a rise past its quota. The
-- reasons are domain.QuotaExceeded's.
CREATE OR REPLACE FUNCTION trovesnap.usage_add(p_tenant text, p_open bigint, p_bytes bigint) RETURNS void
    LANGUAGE plpgsql
    AS $$
DECLARE
    u trovesnap.tenant_usage;
    l trovesnap.mcp_limits;
BEGIN
    INSERT INTO trovesnap.tenant_usage AS t (tenant_id, open_candidates, candidate_bytes) VALUES (p_tenant, p_open, p_bytes)
    ON CONFLICT (tenant_id) DO UPDATE SET open_candidates = t.open_candidates + excluded.open_candidates,
        candidate_bytes = t.candidate_bytes + excluded.candidate_bytes
    RETURNING * INTO u;
    IF p_open <= 0 AND p_bytes <= 0 THEN
        RETURN;
    END IF;
    SELECT * INTO l FROM trovesnap.mcp_limits m WHERE m.tenant_id = p_tenant AND m.client_id = '';
    IF p_open > 0 AND u.open_candidates > coalesce(l.maximum_open_candidates, 20000) THEN
        PERFORM trovesnap.fail('invalid_input:quota', 'this write would exceed the tenant''s quota of open candidates: '
            || 'review or reject candidates, or the seller can raise it with trovesnap limits set --tenant <tenant> --candidates N');
    END IF;
    IF p_bytes > 0 AND u.candidate_bytes > coalesce(l.maximum_candidate_bytes, 2684354560) THEN
        PERFORM trovesnap.fail('invalid_input:quota', 'this write would exceed the tenant''s quota of candidate storage bytes: '
            || 'the seller can raise it with trovesnap limits set --tenant <tenant> --candidate-bytes B');
    END IF;
END
$$;

CREATE OR REPLACE FUNCTION trovesnap.usage_candidates() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM trovesnap.usage_add(NEW.tenant_id, CASE WHEN trovesnap.candidate_is_open(NEW.review_status) THEN 1 ELSE 0 END,
            trovesnap.candidate_row_bytes(NEW));
    ELSIF TG_OP = 'UPDATE' THEN
        IF trovesnap.candidate_is_open(NEW.review_status) <> trovesnap.candidate_is_open(OLD.review_status) THEN
            PERFORM trovesnap.usage_add(NEW.tenant_id, CASE WHEN trovesnap.candidate_is_open(NEW.review_status) THEN 1 ELSE -1 END, 0);
        END IF;
    ELSE
        PERFORM trovesnap.usage_add(OLD.tenant_id, CASE WHEN trovesnap.candidate_is_open(OLD.review_status) THEN -1 ELSE 0 END,
            -trovesnap.candidate_row_bytes(OLD));
    END IF;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION trovesnap.usage_records() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM trovesnap.usage_add(NEW.tenant_id, 0, 256 + octet_length(NEW.payload));
    ELSE
        PERFORM trovesnap.usage_add(OLD.tenant_id, 0, -(256 + octet_length(OLD.payload)));
    END IF;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION trovesnap.usage_assets() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM trovesnap.usage_add(NEW.tenant_id, 0, NEW.byte_size);
    ELSE
        PERFORM trovesnap.usage_add(OLD.tenant_id, 0, -OLD.byte_size);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER inventory_candidates_usage AFTER INSERT OR DELETE OR UPDATE OF review_status ON trovesnap.inventory_candidates
    FOR EACH ROW EXECUTE FUNCTION trovesnap.usage_candidates();
CREATE TRIGGER source_records_usage AFTER INSERT OR DELETE ON trovesnap.source_records
    FOR EACH ROW EXECUTE FUNCTION trovesnap.usage_records();
CREATE TRIGGER source_assets_usage AFTER INSERT OR DELETE ON trovesnap.source_assets
    FOR EACH ROW EXECUTE FUNCTION trovesnap.usage_assets();

-- seller_set_quota: the tenant's candidate quota (client.manage), on the
-- tenant's limits row that seller_set_limits wrote first (Seller.SetLimits
-- calls both). NULL keeps the default.
CREATE OR REPLACE FUNCTION public.seller_set_quota(p_tenant_id text, p_maximum_open_candidates integer,
                                                   p_maximum_candidate_bytes bigint) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    v_user text;
BEGIN
    PERFORM trovesnap.begin_rpc('authenticated');
    v_user := (trovesnap.seller_linked_user()).id;
    IF p_maximum_open_candidates < 0 OR p_maximum_candidate_bytes < 0 THEN
        PERFORM trovesnap.fail('invalid_input:limits', 'must not be negative');
    END IF;
    PERFORM trovesnap.seller_in(v_user, p_tenant_id, 'client.manage', 'invalid_reference:tenant', p_tenant_id);
    UPDATE trovesnap.mcp_limits SET maximum_open_candidates = p_maximum_open_candidates,
        maximum_candidate_bytes = p_maximum_candidate_bytes, updated_at = now()
    WHERE tenant_id = p_tenant_id AND client_id = '';
    IF NOT FOUND THEN
        PERFORM trovesnap.fail('invalid_input:limits', 'set the tenant''s limits first');
    END IF;
    RETURN jsonb_build_object('maximum_open_candidates', coalesce(p_maximum_open_candidates, 20000),
        'maximum_candidate_bytes', coalesce(p_maximum_candidate_bytes, 2684354560));
END
$$;

-- seller_effective_limits: as before (the client's row, else the tenant's,
-- else the §38 defaults, with the rejected budget of the rates migration),
-- plus the tenant's candidate quota.
CREATE OR REPLACE FUNCTION public.seller_effective_limits(p_tenant_id text, p_client_id text DEFAULT NULL) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    v_user text;
    l      trovesnap.mcp_limits;
    q      trovesnap.mcp_limits;
    v_out  jsonb := jsonb_build_object('read_calls_per_minute', 120, 'candidate_writes_per_minute', 20, 'proposals_per_minute', 20,
        'controlled_actions_per_minute', 10, 'maximum_bulk_targets', 50, 'maximum_daily_paid_cost_usd', 0,
        'rejected_calls_per_minute', 120);
BEGIN
    PERFORM trovesnap.begin_rpc('authenticated');
    v_user := (trovesnap.seller_linked_user()).id;
    IF coalesce(p_tenant_id, '') <> '' THEN
        PERFORM trovesnap.seller_in(v_user, p_tenant_id, NULL, 'invalid_reference:tenant', p_tenant_id);
        SELECT * INTO l FROM trovesnap.mcp_limits m
        WHERE m.tenant_id = p_tenant_id AND m.client_id IN ('', coalesce(p_client_id, ''))
        ORDER BY m.client_id DESC LIMIT 1;
        IF FOUND THEN
            v_out := trovesnap.seller_limits_json(l);
        END IF;
        SELECT * INTO q FROM trovesnap.mcp_limits m WHERE m.tenant_id = p_tenant_id AND m.client_id = '';
    END IF;
    RETURN v_out || jsonb_build_object('maximum_open_candidates', coalesce(q.maximum_open_candidates, 20000),
        'maximum_candidate_bytes', coalesce(q.maximum_candidate_bytes, 2684354560));
END
$$;

SELECT trovesnap.revoke_execute(ARRAY['hmac_sha256', 'b64url', 'b64url_decode', 'cursor_mac', 'cursor_tenant',
    'mcp_cursor_seal', 'mcp_cursor_open', 'candidate_row_bytes', 'candidate_is_open', 'usage_add', 'usage_candidates',
    'usage_records', 'usage_assets', 'seller_set_quota', 'seller_effective_limits']);
GRANT EXECUTE ON FUNCTION
    public.mcp_cursor_seal(text, text, text, text),
    public.mcp_cursor_open(text, text, text)
TO trovesnap_mcp;
SELECT trovesnap.grant_execute('authenticated', ARRAY[
    'public.seller_set_quota(text, integer, bigint)',
    'public.seller_effective_limits(text, text)']);

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (16, '20261201120300_trovesnap_hardening_quota');

RESET ROLE;
