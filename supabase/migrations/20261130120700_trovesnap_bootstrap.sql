-- trovesnap live mode, migration 11: onboarding a seller into a fresh
-- project. TroveSnap's tenants, users and memberships are P6 records the
-- product's own sign-up creates; a project set up only for trovesnap has
-- none, so its operator creates the first owner with bootstrap_owner, as
-- the database owner (the SQL editor or psql as `postgres`):
--
--   SET ROLE trovesnap_owner;
--   SELECT trovesnap.bootstrap_owner('tenant_heritage', 'Heritage Estate Sales',
--       'user_jo', 'Jo Seller', 'jo@example.com', '<the Auth user id of jo@example.com>');
--
-- It is executable by no request role (no JWT can reach it): only a
-- session that may SET ROLE trovesnap_owner. It is idempotent for the same
-- arguments and refuses to relink an existing user to another Auth account
-- or to change an existing membership's role.

SET ROLE trovesnap_owner;

CREATE FUNCTION trovesnap.bootstrap_owner(p_tenant_id text, p_tenant_name text, p_user_id text, p_display_name text,
                                          p_email text, p_auth_subject text) RETURNS jsonb
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    u  trovesnap.users;
    m  trovesnap.memberships;
BEGIN
    IF coalesce(btrim(p_tenant_id), '') = '' OR coalesce(btrim(p_user_id), '') = '' OR coalesce(btrim(p_tenant_name), '') = '' THEN
        RAISE EXCEPTION 'bootstrap_owner: tenant id, tenant name and user id are required';
    END IF;
    IF p_auth_subject IS NULL OR p_auth_subject !~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' THEN
        RAISE EXCEPTION 'bootstrap_owner: the auth subject must be the Supabase Auth user id (a lower-case UUID)';
    END IF;
    PERFORM set_config('trovesnap.system', 'on', true);
    INSERT INTO trovesnap.tenants (id, name) VALUES (p_tenant_id, p_tenant_name) ON CONFLICT (id) DO NOTHING;
    SELECT * INTO u FROM trovesnap.users WHERE id = p_user_id;
    IF NOT FOUND THEN
        INSERT INTO trovesnap.users (id, display_name, email, auth_subject)
        VALUES (p_user_id, coalesce(p_display_name, ''), coalesce(p_email, ''), p_auth_subject);
    ELSIF u.auth_subject IS DISTINCT FROM p_auth_subject THEN
        RAISE EXCEPTION 'bootstrap_owner: user % is linked to another Auth account', p_user_id;
    END IF;
    SELECT * INTO m FROM trovesnap.memberships WHERE tenant_id = p_tenant_id AND user_id = p_user_id;
    IF NOT FOUND THEN
        INSERT INTO trovesnap.memberships (id, tenant_id, user_id, role)
        VALUES ('membership_' || replace(gen_random_uuid()::text, '-', ''), p_tenant_id, p_user_id, 'owner')
        RETURNING * INTO m;
    ELSIF m.role <> 'owner' THEN
        RAISE EXCEPTION 'bootstrap_owner: user % is already a % of %', p_user_id, m.role, p_tenant_id;
    END IF;
    PERFORM set_config('trovesnap.system', 'off', true);
    RETURN jsonb_build_object('tenant_id', p_tenant_id, 'user_id', p_user_id, 'membership_id', m.id, 'role', m.role);
END
$$;
SELECT trovesnap.revoke_execute(ARRAY['bootstrap_owner']);

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (11, '20261130120700_trovesnap_bootstrap');

RESET ROLE;
