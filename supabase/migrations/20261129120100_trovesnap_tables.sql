-- trovesnap live mode, migration 2 of 3: the P5/P6 subset the tools use, the
-- P7 records (clients, idempotency keys, plugin_events, limits, rate
-- counters), row level security on every table, append-only guards.
--
-- Conventions, as in the embedded store (store/migrations/0001_init.sql):
--   * every tenant-owned row carries tenant_id, and references between them
--     are composite (tenant_id, x_id) → parent (tenant_id, id), so the
--     database refuses a row pointing into another tenant;
--   * ids and other ordering keys use the "C" collation, so keyset order is
--     bytewise, exactly like SQLite's;
--   * optional references are NULL, never ''.

SET ROLE trovesnap_owner;

CREATE TABLE trovesnap.tenants (
    id   text COLLATE "C" PRIMARY KEY CHECK (id <> ''),
    name text NOT NULL
);

-- auth_subject links a Supabase Auth user (the JWT `sub`) to a TroveSnap
-- user, for the seller surfaces that act under a user's own session.
CREATE TABLE trovesnap.users (
    id           text COLLATE "C" PRIMARY KEY CHECK (id <> ''),
    display_name text NOT NULL,
    email        text NOT NULL,
    auth_subject text UNIQUE
);

CREATE TABLE trovesnap.memberships (
    id          text COLLATE "C" PRIMARY KEY CHECK (id <> ''),
    tenant_id   text COLLATE "C" NOT NULL REFERENCES trovesnap.tenants (id),
    user_id     text COLLATE "C" NOT NULL REFERENCES trovesnap.users (id),
    role        text NOT NULL CHECK (role IN ('owner', 'manager', 'cataloger', 'pricer', 'checkout')),
    sale_scoped boolean NOT NULL DEFAULT false,
    UNIQUE (tenant_id, user_id),
    UNIQUE (tenant_id, id)
);
CREATE INDEX memberships_user ON trovesnap.memberships (user_id);

-- A registered MCP client. credential_hash is the hex sha256 of the client's
-- token ("sha256:"-prefixed accepted too); the token is never stored.
CREATE TABLE trovesnap.mcp_clients (
    id                   text COLLATE "C" PRIMARY KEY CHECK (id <> ''),
    tenant_id            text COLLATE "C" NOT NULL REFERENCES trovesnap.tenants (id),
    source_connection_id text NOT NULL DEFAULT '',
    name                 text NOT NULL,
    client_type          text NOT NULL,
    status               text NOT NULL CHECK (status IN ('active', 'pending', 'suspended', 'revoked')),
    actor_id             text COLLATE "C" NOT NULL REFERENCES trovesnap.users (id),
    allowed_tool_groups  text[] NOT NULL DEFAULT '{}',
    approval_policy_ids  text[] NOT NULL DEFAULT '{}',
    trust_level          text NOT NULL DEFAULT 'standard_client'
        CHECK (trust_level IN ('trusted_local_client', 'standard_client', 'untrusted_client')),
    risk_class           text NOT NULL DEFAULT 'standard' CHECK (risk_class IN ('standard', 'elevated', 'restricted')),
    demo                 boolean NOT NULL DEFAULT false,
    created_by           text NOT NULL DEFAULT '',
    created_at           timestamptz NOT NULL,
    last_seen_at         timestamptz,
    credential_hash      text UNIQUE CHECK (credential_hash IS NULL OR credential_hash <> ''),
    UNIQUE (tenant_id, id)
);
CREATE INDEX mcp_clients_actor ON trovesnap.mcp_clients (actor_id);
-- A credential is found by its hex sha256 with or without the "sha256:"
-- prefix, so it must be unique in that normalised form too.
CREATE UNIQUE INDEX mcp_clients_credential_norm ON trovesnap.mcp_clients ((regexp_replace(credential_hash, '^sha256:', '')))
    WHERE credential_hash IS NOT NULL;

CREATE TABLE trovesnap.estate_sales (
    id                text COLLATE "C" PRIMARY KEY CHECK (id <> ''),
    tenant_id         text COLLATE "C" NOT NULL REFERENCES trovesnap.tenants (id),
    title             text NOT NULL,
    status            text NOT NULL CHECK (status IN ('draft', 'published', 'live', 'closed', 'archived')),
    visibility        text NOT NULL CHECK (visibility IN ('private', 'public')),
    city              text NOT NULL DEFAULT '',
    region            text NOT NULL DEFAULT '',
    postal_code       text NOT NULL DEFAULT '',
    street_address    text NOT NULL DEFAULT '',
    address_policy    text NOT NULL CHECK (address_policy IN ('hidden_until', 'always', 'never')),
    address_reveal_at timestamptz,
    starts_at         timestamptz NOT NULL,
    ends_at           timestamptz NOT NULL,
    version           integer NOT NULL DEFAULT 1 CHECK (version >= 1),
    created_at        timestamptz NOT NULL,
    updated_at        timestamptz NOT NULL,
    UNIQUE (tenant_id, id),
    CHECK (ends_at >= starts_at),
    CHECK (address_policy <> 'hidden_until' OR address_reveal_at IS NOT NULL)
);
CREATE INDEX estate_sales_list ON trovesnap.estate_sales (tenant_id, starts_at, id);
CREATE INDEX estate_sales_status ON trovesnap.estate_sales (tenant_id, status, starts_at, id);

-- Sale assignment (§4.3): a sale-scoped membership sees only these sales.
CREATE TABLE trovesnap.membership_sales (
    membership_id text COLLATE "C" NOT NULL,
    tenant_id     text COLLATE "C" NOT NULL,
    sale_id       text COLLATE "C" NOT NULL,
    PRIMARY KEY (membership_id, sale_id),
    FOREIGN KEY (tenant_id, membership_id) REFERENCES trovesnap.memberships (tenant_id, id),
    FOREIGN KEY (tenant_id, sale_id) REFERENCES trovesnap.estate_sales (tenant_id, id)
);

CREATE TABLE trovesnap.items (
    id                            text COLLATE "C" PRIMARY KEY CHECK (id <> ''),
    tenant_id                     text COLLATE "C" NOT NULL,
    sale_id                       text COLLATE "C" NOT NULL,
    title                         text NOT NULL,
    description                   text NOT NULL DEFAULT '',
    category                      text COLLATE "C" NOT NULL DEFAULT '',
    room                          text NOT NULL DEFAULT '',
    status                        text NOT NULL CHECK (status IN ('draft', 'ready', 'published', 'on_hold',
                                                                  'pending_pickup', 'sold', 'withdrawn', 'archived')),
    price_cents                   bigint CHECK (price_cents IS NULL OR price_cents >= 0),
    internal_price_guidance_cents bigint CHECK (internal_price_guidance_cents IS NULL OR internal_price_guidance_cents >= 0),
    cost_basis_cents              bigint CHECK (cost_basis_cents IS NULL OR cost_basis_cents >= 0),
    appraisal_flag                boolean NOT NULL DEFAULT false,
    staff_notes                   text NOT NULL DEFAULT '',
    qr_code                       text NOT NULL DEFAULT '',
    version                       integer NOT NULL DEFAULT 1 CHECK (version >= 1),
    created_at                    timestamptz NOT NULL,
    updated_at                    timestamptz NOT NULL,
    UNIQUE (tenant_id, id),
    FOREIGN KEY (tenant_id, sale_id) REFERENCES trovesnap.estate_sales (tenant_id, id)
);
CREATE INDEX items_list ON trovesnap.items (tenant_id, created_at, id);
CREATE INDEX items_sale ON trovesnap.items (tenant_id, sale_id, created_at, id);
CREATE INDEX items_status ON trovesnap.items (tenant_id, status, created_at, id);
CREATE INDEX items_category ON trovesnap.items (tenant_id, category);

CREATE TABLE trovesnap.item_photos (
    id          text COLLATE "C" PRIMARY KEY CHECK (id <> ''),
    tenant_id   text COLLATE "C" NOT NULL,
    item_id     text COLLATE "C" NOT NULL,
    storage_key text NOT NULL,
    width       integer NOT NULL DEFAULT 0 CHECK (width >= 0),
    height      integer NOT NULL DEFAULT 0 CHECK (height >= 0),
    position    integer NOT NULL DEFAULT 0,
    published   boolean NOT NULL DEFAULT false,
    FOREIGN KEY (tenant_id, item_id) REFERENCES trovesnap.items (tenant_id, id)
);
CREATE INDEX item_photos_item ON trovesnap.item_photos (tenant_id, item_id, position, id);

-- Pricing history, append-only and internal (pricing roles only).
CREATE TABLE trovesnap.item_price_history (
    id                            text COLLATE "C" PRIMARY KEY CHECK (id <> ''),
    tenant_id                     text COLLATE "C" NOT NULL,
    item_id                       text COLLATE "C" NOT NULL,
    price_cents                   bigint CHECK (price_cents IS NULL OR price_cents >= 0),
    internal_price_guidance_cents bigint CHECK (internal_price_guidance_cents IS NULL OR internal_price_guidance_cents >= 0),
    reason                        text NOT NULL DEFAULT '',
    actor_id                      text NOT NULL DEFAULT '',
    proposal_id                   text NOT NULL DEFAULT '',
    changed_at                    timestamptz NOT NULL,
    FOREIGN KEY (tenant_id, item_id) REFERENCES trovesnap.items (tenant_id, id)
);
CREATE INDEX item_price_history_item ON trovesnap.item_price_history (tenant_id, item_id, changed_at, id);

CREATE TABLE trovesnap.source_descriptors (
    id         text COLLATE "C" PRIMARY KEY CHECK (id <> ''),
    tenant_id  text COLLATE "C" NOT NULL REFERENCES trovesnap.tenants (id),
    kind       text NOT NULL CHECK (kind <> ''),
    client_id  text COLLATE "C",
    label      text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL,
    UNIQUE (tenant_id, id),
    FOREIGN KEY (tenant_id, client_id) REFERENCES trovesnap.mcp_clients (tenant_id, id),
    CHECK (kind <> 'mcp_client' OR client_id IS NOT NULL)
);
-- One mcp_client descriptor per (tenant, client): the candidate chain reuses it.
CREATE UNIQUE INDEX source_descriptors_one_per_client ON trovesnap.source_descriptors (tenant_id, client_id)
    WHERE kind = 'mcp_client';

CREATE TABLE trovesnap.import_runs (
    id                   text COLLATE "C" PRIMARY KEY CHECK (id <> ''),
    tenant_id            text COLLATE "C" NOT NULL,
    source_descriptor_id text COLLATE "C" NOT NULL,
    sale_id              text COLLATE "C",
    kind                 text NOT NULL,
    status               text NOT NULL,
    record_count         integer NOT NULL DEFAULT 0 CHECK (record_count >= 0),
    created_at           timestamptz NOT NULL,
    UNIQUE (tenant_id, id),
    FOREIGN KEY (tenant_id, source_descriptor_id) REFERENCES trovesnap.source_descriptors (tenant_id, id),
    FOREIGN KEY (tenant_id, sale_id) REFERENCES trovesnap.estate_sales (tenant_id, id)
);
CREATE INDEX import_runs_descriptor ON trovesnap.import_runs (tenant_id, source_descriptor_id, created_at, id);

CREATE TABLE trovesnap.source_records (
    id            text COLLATE "C" PRIMARY KEY CHECK (id <> ''),
    tenant_id     text COLLATE "C" NOT NULL,
    import_run_id text COLLATE "C" NOT NULL,
    ordinal       integer NOT NULL CHECK (ordinal >= 0),
    payload_hash  text NOT NULL,
    payload       text NOT NULL,
    created_at    timestamptz NOT NULL,
    UNIQUE (tenant_id, id),
    UNIQUE (import_run_id, ordinal),
    FOREIGN KEY (tenant_id, import_run_id) REFERENCES trovesnap.import_runs (tenant_id, id)
);

CREATE TABLE trovesnap.inventory_candidates (
    id                   text COLLATE "C" PRIMARY KEY CHECK (id <> ''),
    tenant_id            text COLLATE "C" NOT NULL,
    sale_id              text COLLATE "C" NOT NULL,
    kind                 text NOT NULL CHECK (kind <> ''),
    title                text NOT NULL,
    description          text NOT NULL DEFAULT '',
    category             text NOT NULL DEFAULT '',
    room                 text NOT NULL DEFAULT '',
    condition            text NOT NULL DEFAULT '',
    quantity             integer NOT NULL DEFAULT 1 CHECK (quantity >= 1),
    supplied_price_cents bigint CHECK (supplied_price_cents IS NULL OR supplied_price_cents >= 0),
    notes                text NOT NULL DEFAULT '',
    review_status        text NOT NULL CHECK (review_status IN ('needs_review', 'approved', 'rejected', 'promoted')),
    source_descriptor_id text COLLATE "C",
    import_run_id        text COLLATE "C",
    source_record_id     text COLLATE "C",
    created_by_client_id text COLLATE "C",
    version              integer NOT NULL DEFAULT 1 CHECK (version >= 1),
    created_at           timestamptz NOT NULL,
    UNIQUE (tenant_id, id),
    FOREIGN KEY (tenant_id, sale_id) REFERENCES trovesnap.estate_sales (tenant_id, id),
    FOREIGN KEY (tenant_id, source_descriptor_id) REFERENCES trovesnap.source_descriptors (tenant_id, id),
    FOREIGN KEY (tenant_id, import_run_id) REFERENCES trovesnap.import_runs (tenant_id, id),
    FOREIGN KEY (tenant_id, source_record_id) REFERENCES trovesnap.source_records (tenant_id, id),
    FOREIGN KEY (tenant_id, created_by_client_id) REFERENCES trovesnap.mcp_clients (tenant_id, id)
);
CREATE INDEX inventory_candidates_list ON trovesnap.inventory_candidates (tenant_id, created_at, id);
CREATE INDEX inventory_candidates_sale ON trovesnap.inventory_candidates (tenant_id, sale_id, created_at, id);
CREATE INDEX inventory_candidates_review ON trovesnap.inventory_candidates (tenant_id, review_status, created_at, id);

-- Buyer-interest counts; never a buyer identity. sale_id NULL = tenant-wide.
CREATE TABLE trovesnap.demand_signals (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id    text COLLATE "C" NOT NULL REFERENCES trovesnap.tenants (id),
    sale_id      text COLLATE "C",
    category     text COLLATE "C" NOT NULL,
    saves        integer NOT NULL DEFAULT 0 CHECK (saves >= 0),
    searches     integer NOT NULL DEFAULT 0 CHECK (searches >= 0),
    follows      integer NOT NULL DEFAULT 0 CHECK (follows >= 0),
    window_start timestamptz NOT NULL,
    window_end   timestamptz NOT NULL,
    FOREIGN KEY (tenant_id, sale_id) REFERENCES trovesnap.estate_sales (tenant_id, id),
    CHECK (window_end >= window_start)
);
CREATE UNIQUE INDEX demand_signals_key
    ON trovesnap.demand_signals (tenant_id, coalesce(sale_id, ''), category, window_start, window_end);

-- plugin_events: the append-only record of every invocation. No foreign
-- keys: the audit accepts the event of any call, including one that names
-- nothing that exists. tenant_id is '' for calls without a tenant.
CREATE TABLE trovesnap.plugin_events (
    seq               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id                text COLLATE "C" NOT NULL UNIQUE CHECK (id <> ''),
    tenant_id         text COLLATE "C" NOT NULL DEFAULT '',
    correlation_id    text NOT NULL DEFAULT '',
    request_id        text NOT NULL DEFAULT '',
    server_request_id text NOT NULL DEFAULT '',
    tool_name         text NOT NULL DEFAULT '',
    outcome           text NOT NULL CHECK (outcome IN ('success', 'replayed', 'blocked', 'failed')),
    occurred_at       timestamptz NOT NULL,
    received_at       timestamptz NOT NULL DEFAULT now(),
    body              jsonb NOT NULL CHECK (jsonb_typeof(body) = 'object')
);
CREATE INDEX plugin_events_tenant ON trovesnap.plugin_events (tenant_id, seq);
CREATE INDEX plugin_events_correlation ON trovesnap.plugin_events (correlation_id, seq);
CREATE INDEX plugin_events_request ON trovesnap.plugin_events (request_id, seq);

-- idempotency_keys: the first result of a persisted write, per scope
-- (tenant, client, tool, tool major, caller key); honoured for 24 hours.
CREATE TABLE trovesnap.idempotency_keys (
    tenant_id   text COLLATE "C" NOT NULL,
    client_id   text COLLATE "C" NOT NULL,
    tool        text NOT NULL,
    tool_major  integer NOT NULL,
    key         text NOT NULL CHECK (key <> ''),
    fingerprint text NOT NULL CHECK (fingerprint <> ''),
    result      jsonb NOT NULL,
    event_id    text NOT NULL,
    created_at  timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, client_id, tool, tool_major, key),
    FOREIGN KEY (tenant_id, client_id) REFERENCES trovesnap.mcp_clients (tenant_id, id)
);
CREATE INDEX idempotency_keys_expiry ON trovesnap.idempotency_keys (expires_at);

-- Limits: one row per tenant (client_id = '') and optional rows per client;
-- no row means the spec's §38 defaults.
CREATE TABLE trovesnap.mcp_limits (
    tenant_id                     text COLLATE "C" NOT NULL REFERENCES trovesnap.tenants (id),
    client_id                     text COLLATE "C" NOT NULL DEFAULT '',
    read_calls_per_minute         integer NOT NULL CHECK (read_calls_per_minute >= 0),
    candidate_writes_per_minute   integer NOT NULL CHECK (candidate_writes_per_minute >= 0),
    proposals_per_minute          integer NOT NULL CHECK (proposals_per_minute >= 0),
    controlled_actions_per_minute integer NOT NULL CHECK (controlled_actions_per_minute >= 0),
    maximum_bulk_targets          integer NOT NULL CHECK (maximum_bulk_targets >= 0),
    maximum_daily_paid_cost_usd   numeric NOT NULL CHECK (maximum_daily_paid_cost_usd >= 0),
    updated_at                    timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, client_id)
);

-- Fixed one-minute windows per client (or 'public') and limit class,
-- counted in one upsert so concurrent servers never exceed a limit.
-- tenant_id is NULL for the public bucket.
CREATE TABLE trovesnap.rate_counters (
    bucket       text COLLATE "C" NOT NULL,
    class        text NOT NULL,
    window_start bigint NOT NULL,
    count        integer NOT NULL,
    tenant_id    text COLLATE "C",
    PRIMARY KEY (bucket, class, window_start)
);

-- Append-only guards: UPDATE, DELETE and TRUNCATE abort. (Only the
-- development seed function, as the owner, disables them to start afresh.)
CREATE FUNCTION trovesnap.refuse_change() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'P0001', MESSAGE = 'trovesnap:append_only:' || TG_TABLE_NAME;
END
$$;
CREATE TRIGGER plugin_events_append_only BEFORE UPDATE OR DELETE ON trovesnap.plugin_events
    FOR EACH ROW EXECUTE FUNCTION trovesnap.refuse_change();
CREATE TRIGGER plugin_events_no_truncate BEFORE TRUNCATE ON trovesnap.plugin_events
    FOR EACH STATEMENT EXECUTE FUNCTION trovesnap.refuse_change();
CREATE TRIGGER item_price_history_append_only BEFORE UPDATE OR DELETE ON trovesnap.item_price_history
    FOR EACH ROW EXECUTE FUNCTION trovesnap.refuse_change();
CREATE TRIGGER item_price_history_no_truncate BEFORE TRUNCATE ON trovesnap.item_price_history
    FOR EACH STATEMENT EXECUTE FUNCTION trovesnap.refuse_change();

-- Row level security: ENABLEd and FORCEd on every table, so the owner (and
-- therefore every SECURITY DEFINER function) is subject to it too. The
-- owner sees a tenant's rows only while the request context names that
-- tenant; `system` context is for the credential lookup, reference
-- classification, the audit sink and seeding.
DO $$
DECLARE
    t text;
BEGIN
    FOR t IN SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname = 'trovesnap' AND c.relkind = 'r'
    LOOP
        EXECUTE format('ALTER TABLE trovesnap.%I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE trovesnap.%I FORCE ROW LEVEL SECURITY', t);
    END LOOP;
END
$$;

-- Seller surfaces (a Supabase Auth session, role `authenticated`) read the
-- rows of the tenants the signed-in user is a member of: jwt_tenants. No
-- table is granted to `authenticated` — the seller RPCs are — so the
-- seller_member_read policies (tenant_rls, below) are the tenant boundary
-- those grants stand behind.
CREATE FUNCTION trovesnap.jwt_tenants() RETURNS SETOF text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    PERFORM set_config('trovesnap.system', 'on', true);
    RETURN QUERY
        SELECT m.tenant_id::text FROM trovesnap.memberships m JOIN trovesnap.users u ON u.id = m.user_id
        WHERE u.auth_subject IS NOT NULL
          AND u.auth_subject = nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'sub';
    PERFORM set_config('trovesnap.system', 'off', true);
END
$$;
SELECT trovesnap.grant_execute('authenticated', ARRAY['trovesnap.jwt_tenants()']);

-- tenant_rls puts tables of tenant-owned rows under row level security,
-- ENABLEd and FORCEd, with the two policies every such table has (this
-- migration's and every later one's): tenant_context, the tenant of the
-- request context (or system) for the owner and so for every SECURITY
-- DEFINER function; and, where the project has the role, seller_member_read,
-- the signed-in seller's tenants for reads under a user JWT.
CREATE FUNCTION trovesnap.tenant_rls(p_tables text[]) RETURNS void
    LANGUAGE plpgsql
    AS $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY p_tables
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

-- Tenant-owned tables: the tenant of the context, or system; the signed-in
-- seller's tenants.
SELECT trovesnap.tenant_rls(ARRAY['memberships', 'mcp_clients', 'estate_sales', 'membership_sales', 'items', 'item_photos',
    'item_price_history', 'source_descriptors', 'import_runs', 'source_records', 'inventory_candidates',
    'demand_signals', 'plugin_events', 'idempotency_keys', 'mcp_limits']);
CREATE POLICY tenant_context ON trovesnap.tenants FOR ALL TO trovesnap_owner
    USING (trovesnap.ctx_system() OR id = trovesnap.ctx_tenant())
    WITH CHECK (trovesnap.ctx_system() OR id = trovesnap.ctx_tenant());
CREATE POLICY tenant_context ON trovesnap.users FOR ALL TO trovesnap_owner
    USING (trovesnap.ctx_system() OR EXISTS (SELECT 1 FROM trovesnap.memberships m
                                             WHERE m.user_id = users.id AND m.tenant_id = trovesnap.ctx_tenant()))
    WITH CHECK (trovesnap.ctx_system());
-- The public rate bucket (tenant_id NULL) belongs to anonymous callers.
CREATE POLICY tenant_context ON trovesnap.rate_counters FOR ALL TO trovesnap_owner
    USING (trovesnap.ctx_system() OR tenant_id IS NOT DISTINCT FROM trovesnap.ctx_tenant())
    WITH CHECK (trovesnap.ctx_system() OR tenant_id IS NOT DISTINCT FROM trovesnap.ctx_tenant());
-- Reference data: readable in any context, writable by migrations only.
CREATE POLICY read_only ON trovesnap.role_permissions FOR SELECT TO trovesnap_owner USING (true);
CREATE POLICY read_only ON trovesnap.schema_migrations FOR SELECT TO trovesnap_owner USING (true);
CREATE POLICY migrate ON trovesnap.schema_migrations FOR INSERT TO trovesnap_owner WITH CHECK (true);

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (2, '20261129120100_trovesnap_tables');

RESET ROLE;
