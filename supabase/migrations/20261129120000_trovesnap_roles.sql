-- trovesnap live mode, migration 1 of 3: roles, the private schema, the
-- request context and the role/permission matrix.
--
-- Roles (all NOLOGIN: PostgREST's authenticator switches to them from the
-- `role` claim of a JWT signed with the project's JWT secret):
--   trovesnap_owner  owns the schema, every table and every function. It is
--                    NOT a superuser and has no BYPASSRLS, and every table
--                    FORCEs row level security, so even the SECURITY DEFINER
--                    functions only see the rows the request context allows.
--   trovesnap_mcp    the MCP server's role: EXECUTE on the mcp_* RPCs and
--                    nothing else (no schema usage, no table grant).
--   trovesnap_admin  development only: EXECUTE on mcp_seed_fixtures (installed
--                    from supabase/dev, never by these migrations).
--
-- Applied in order by `supabase db push` (or psql -f) as the project's
-- `postgres` role; each file is one transaction.

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'trovesnap_owner') THEN
        CREATE ROLE trovesnap_owner NOLOGIN NOINHERIT NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'trovesnap_mcp') THEN
        CREATE ROLE trovesnap_mcp NOLOGIN NOINHERIT NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'trovesnap_admin') THEN
        CREATE ROLE trovesnap_admin NOLOGIN NOINHERIT NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
    END IF;
    -- The migration runner must be able to act as the owner (SET ROLE below).
    EXECUTE format('GRANT trovesnap_owner TO %I', current_user);
    -- PostgREST's login role switches to the request roles.
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'authenticator') THEN
        GRANT trovesnap_mcp TO authenticator;
        GRANT trovesnap_admin TO authenticator;
    END IF;
END
$$;

-- The RPCs live in `public` (the schema PostgREST exposes); the owner needs
-- to create them there. The tables live in `trovesnap`, which is not exposed
-- and on which no request role has USAGE.
GRANT USAGE, CREATE ON SCHEMA public TO trovesnap_owner;
CREATE SCHEMA IF NOT EXISTS trovesnap AUTHORIZATION trovesnap_owner;
REVOKE ALL ON SCHEMA trovesnap FROM PUBLIC;

SET ROLE trovesnap_owner;

-- Functions are executable by nobody unless granted explicitly.
ALTER DEFAULT PRIVILEGES FOR ROLE trovesnap_owner REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC;

-- revoke_execute makes sure of it where a project grants more by default:
-- EXECUTE on the named functions trovesnap_owner owns (every overload;
-- NULL: all of them) is revoked from PUBLIC and from each request role the
-- project has (Supabase's anon, authenticated and service_role, and
-- trovesnap_mcp and trovesnap_admin). Every migration calls it for its own
-- functions, then grants what a role may call, explicitly.
CREATE FUNCTION trovesnap.revoke_execute(p_names text[]) RETURNS void
    LANGUAGE plpgsql
    AS $$
DECLARE
    f regprocedure;
    r text;
BEGIN
    FOR f IN SELECT p.oid::regprocedure FROM pg_proc p
             WHERE p.proowner = 'trovesnap_owner'::regrole AND (p_names IS NULL OR p.proname = ANY (p_names))
    LOOP
        EXECUTE format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', f);
        FOREACH r IN ARRAY ARRAY['anon', 'authenticated', 'service_role', 'trovesnap_mcp', 'trovesnap_admin']
        LOOP
            IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r) THEN
                EXECUTE format('REVOKE ALL ON FUNCTION %s FROM %I', f, r);
            END IF;
        END LOOP;
    END LOOP;
END
$$;

-- grant_execute grants EXECUTE on functions (by signature) to p_role where
-- the project has that role: Supabase's `authenticated`, for the seller
-- RPCs, exists in a Supabase project but not in every PostgreSQL.
CREATE FUNCTION trovesnap.grant_execute(p_role text, p_functions text[]) RETURNS void
    LANGUAGE plpgsql
    AS $$
DECLARE
    f text;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = p_role) THEN
        RETURN;
    END IF;
    FOREACH f IN ARRAY p_functions
    LOOP
        EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %I', f, p_role);
    END LOOP;
END
$$;

CREATE TABLE trovesnap.schema_migrations (
    version    integer PRIMARY KEY,
    name       text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
);

-- Request context (transaction-local settings, so they end with the
-- request: PostgREST runs one RPC per transaction). Every RPC first empties
-- it (trovesnap.begin_rpc), sets the tenant only after resolving the caller's
-- credential, and the row level security policies compare each row's
-- tenant_id to it. `system` access is switched on only inside a few small
-- helper functions (credential lookup, reference classification, the audit
-- sink, seeding), which switch it off again before they return.
-- (Not function-level SET clauses: PostgreSQL 15 lets only superusers put
-- custom settings there, and Supabase's postgres role is not one.)
CREATE FUNCTION trovesnap.ctx_tenant() RETURNS text
    LANGUAGE sql STABLE
    AS $$ SELECT nullif(current_setting('trovesnap.tenant_id', true), '') $$;

CREATE FUNCTION trovesnap.ctx_system() RETURNS boolean
    LANGUAGE sql STABLE
    AS $$ SELECT coalesce(current_setting('trovesnap.system', true), '') = 'on' $$;

-- fail raises the one error shape the Go side maps: SQLSTATE P0001 and the
-- message 'trovesnap:<code>[:<field>]'. detail is data for the server (a
-- reason, or a JSON object), never SQL.
CREATE FUNCTION trovesnap.fail(p_code text, p_detail text DEFAULT NULL) RETURNS void
    LANGUAGE plpgsql
    AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'P0001', MESSAGE = 'trovesnap:' || p_code, DETAIL = coalesce(p_detail, '');
END
$$;

-- ts formats an instant like the embedded store: UTC, nine fractional
-- digits, so keyset keys and JSON timestamps are the same on both backends.
CREATE FUNCTION trovesnap.ts(p timestamptz) RETURNS text
    LANGUAGE sql IMMUTABLE
    AS $$ SELECT to_char(p AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US') || '000Z' $$;

-- The role → permission matrix of internal/domain/permissions.go (a Go test
-- compares them).
CREATE TABLE trovesnap.role_permissions (
    role       text NOT NULL,
    permission text NOT NULL,
    PRIMARY KEY (role, permission)
);
INSERT INTO trovesnap.role_permissions (role, permission)
SELECT 'owner', p FROM unnest(ARRAY[
    'sale.read', 'item.read', 'item.read_pricing', 'item.read_checkout', 'candidate.read', 'item.create_candidate',
    'demand.read', 'import.read', 'proposal.create', 'proposal.read', 'item.update_status', 'checkout.scan',
    'item.publish', 'sale.publish', 'item.update_price', 'item.bind_identity', 'disposition.apply', 'export.stage',
    'export.deliver', 'buyer.notify', 'approval.grant', 'client.manage', 'policy.manage']) AS p
UNION ALL
SELECT 'manager', p FROM unnest(ARRAY[
    'sale.read', 'item.read', 'item.read_pricing', 'item.read_checkout', 'candidate.read', 'item.create_candidate',
    'demand.read', 'import.read', 'proposal.create', 'proposal.read', 'item.update_status', 'checkout.scan',
    'item.publish', 'sale.publish', 'item.update_price', 'item.bind_identity', 'disposition.apply', 'export.stage',
    'export.deliver', 'buyer.notify', 'approval.grant']) AS p
UNION ALL
SELECT 'cataloger', p FROM unnest(ARRAY[
    'sale.read', 'item.read', 'candidate.read', 'item.create_candidate', 'demand.read', 'import.read',
    'proposal.create', 'proposal.read', 'export.stage']) AS p
UNION ALL
SELECT 'pricer', p FROM unnest(ARRAY[
    'sale.read', 'item.read', 'item.read_pricing', 'candidate.read', 'demand.read', 'proposal.create',
    'proposal.read']) AS p
UNION ALL
SELECT 'checkout', p FROM unnest(ARRAY[
    'sale.read', 'item.read_checkout', 'item.update_status', 'checkout.scan']) AS p;

CREATE FUNCTION trovesnap.has_perm(p_role text, p_perm text) RETURNS boolean
    LANGUAGE sql STABLE
    AS $$ SELECT EXISTS (SELECT 1 FROM trovesnap.role_permissions WHERE role = p_role AND permission = p_perm) $$;

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (1, '20261129120000_trovesnap_roles');

RESET ROLE;
