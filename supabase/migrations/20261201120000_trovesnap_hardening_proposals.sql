-- trovesnap live mode, migration 13: sale assignment (§4.3) on proposals.
--
-- A member whose membership is limited to assigned sales must not read,
-- list, approve, deny or execute a proposal that touches any other sale —
-- and must get the answer a missing proposal gets (issue 13, finding 2;
-- the embedded store's rule is store.ProposalVisibleTo). A proposal's sales
-- are stored in it when it is made (body -> 'sale_ids': the sale of each
-- target), so the rule needs no join.
--
-- The rule is row level security, not a check in each RPC: a RESTRICTIVE
-- policy on proposals, and on approval_grants through their proposal,
-- under the same FORCEd security every SECURITY DEFINER function already
-- runs under. Every statement that reads a proposal — mcp_get_proposal
-- (check_ref), mcp_approval_state, mcp_execute_proposal (its locked
-- SELECT: not found is invalid_reference, before any grant is touched),
-- seller_list_proposals, seller_get_proposal, seller_issue_grant,
-- seller_deny_proposal, and any later RPC — sees an unassigned sale's
-- proposal exactly as it sees a missing one, without this migration
-- replacing any of them.
--
-- The scope is the request context's, like its tenant: the two places
-- that resolve who is calling set it for the rest of the transaction —
-- lookup_client (an MCP client's membership) and seller_in (a signed-in
-- seller's) — to the JSON array of the assigned sales, or '' when the
-- membership is not sale-scoped. System context sees everything.

SET ROLE trovesnap_owner;

-- ctx_sales_visible: whether a proposal naming p_sales (a JSON array of
-- sale ids) is visible in the request context. Unscoped (or system):
-- always. Sale-scoped: only when it names at least one sale and every one
-- of them is assigned (a proposal without a sale is not shown: fail closed).
CREATE OR REPLACE FUNCTION trovesnap.ctx_sales_visible(p_sales jsonb) RETURNS boolean
    LANGUAGE sql STABLE
    AS $$
        SELECT CASE
            WHEN coalesce(trovesnap.ctx_system(), false) THEN true
            WHEN coalesce(current_setting('trovesnap.sale_scope', true), '') = '' THEN true
            WHEN jsonb_typeof(p_sales) IS DISTINCT FROM 'array' OR jsonb_array_length(p_sales) = 0 THEN false
            ELSE NOT EXISTS (SELECT 1 FROM jsonb_array_elements_text(p_sales) AS s(id)
                             WHERE NOT (nullif(current_setting('trovesnap.sale_scope', true), '')::jsonb ? s.id))
        END
    $$;

-- ctx_proposal_visible: whether the proposal p_id is visible (its own row
-- level security decides); grants follow their proposal.
CREATE OR REPLACE FUNCTION trovesnap.ctx_proposal_visible(p_id text) RETURNS boolean
    LANGUAGE sql STABLE
    AS $$
        SELECT CASE
            WHEN coalesce(trovesnap.ctx_system(), false) THEN true
            WHEN coalesce(current_setting('trovesnap.sale_scope', true), '') = '' THEN true
            ELSE EXISTS (SELECT 1 FROM trovesnap.proposals pr WHERE pr.id = p_id)
        END
    $$;

CREATE POLICY sale_scope ON trovesnap.proposals AS RESTRICTIVE FOR ALL TO trovesnap_owner
    USING (trovesnap.ctx_sales_visible(body -> 'sale_ids'))
    WITH CHECK (trovesnap.ctx_sales_visible(body -> 'sale_ids'));
CREATE POLICY sale_scope ON trovesnap.approval_grants AS RESTRICTIVE FOR ALL TO trovesnap_owner
    USING (trovesnap.ctx_proposal_visible(proposal_id))
    WITH CHECK (trovesnap.ctx_proposal_visible(proposal_id));

-- lookup_client (migration 3), now also setting the sale scope of the
-- client's membership for the request.
CREATE OR REPLACE FUNCTION trovesnap.lookup_client(p_hash text) RETURNS trovesnap.principal
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    r trovesnap.principal;
    c trovesnap.mcp_clients;
BEGIN
    IF p_hash IS NULL OR p_hash !~ '^[0-9a-f]{64}$' THEN
        PERFORM trovesnap.fail('client_not_registered');
    END IF;
    PERFORM set_config('trovesnap.system', 'on', true);
    SELECT * INTO c FROM trovesnap.mcp_clients WHERE credential_hash IN (p_hash, 'sha256:' || p_hash);
    IF NOT FOUND THEN
        PERFORM set_config('trovesnap.system', 'off', true);
        PERFORM trovesnap.fail('client_not_registered');
    END IF;
    r.client_id := c.id;
    r.client_name := c.name;
    r.client_type := c.client_type;
    r.client_status := c.status;
    r.groups := c.allowed_tool_groups;
    r.actor_id := c.actor_id;
    r.tenant_id := c.tenant_id;
    SELECT m.id, m.role, m.sale_scoped INTO r.membership_id, r.role, r.sale_scoped
    FROM trovesnap.memberships m WHERE m.tenant_id = c.tenant_id AND m.user_id = c.actor_id;
    IF coalesce(r.sale_scoped, false) THEN
        r.assigned := ARRAY(SELECT ms.sale_id FROM trovesnap.membership_sales ms
                            WHERE ms.membership_id = r.membership_id ORDER BY ms.sale_id);
        PERFORM set_config('trovesnap.sale_scope', to_jsonb(r.assigned)::text, true);
    ELSE
        r.sale_scoped := false;
        PERFORM set_config('trovesnap.sale_scope', '', true);
    END IF;
    PERFORM set_config('trovesnap.system', 'off', true);
    RETURN r;
END
$$;

-- seller_in (migration 7), now also setting the sale scope of the signed-in
-- seller's membership for the request.
CREATE OR REPLACE FUNCTION trovesnap.seller_in(p_user_id text, p_tenant_id text, p_perm text, p_refusal text,
                                               p_ref_id text) RETURNS trovesnap.seller_ctx
    LANGUAGE plpgsql
    AS $$
DECLARE
    s        trovesnap.seller_ctx;
    v_scoped boolean;
BEGIN
    s := trovesnap.seller_member_of(p_user_id, p_tenant_id);
    IF s.membership_id IS NULL THEN
        IF p_refusal LIKE 'invalid_reference:%' THEN
            PERFORM trovesnap.fail(p_refusal, jsonb_build_object('id', p_ref_id, 'cross_tenant', false)::text);
        END IF;
        PERFORM trovesnap.fail(p_refusal);
    END IF;
    IF p_perm IS NOT NULL AND NOT trovesnap.has_perm(s.role, p_perm) THEN
        PERFORM trovesnap.fail('permission_denied:' || p_perm);
    END IF;
    PERFORM set_config('trovesnap.tenant_id', s.tenant_id, true);
    SELECT m.sale_scoped INTO v_scoped FROM trovesnap.memberships m WHERE m.id = s.membership_id;
    IF coalesce(v_scoped, false) THEN
        PERFORM set_config('trovesnap.sale_scope',
            (SELECT coalesce(jsonb_agg(ms.sale_id ORDER BY ms.sale_id), '[]'::jsonb)::text
             FROM trovesnap.membership_sales ms WHERE ms.membership_id = s.membership_id), true);
    ELSE
        PERFORM set_config('trovesnap.sale_scope', '', true);
    END IF;
    RETURN s;
END
$$;

-- Nothing here is executable but by its owner (lookup_client and seller_in
-- keep the privileges they had: none but the owner's).
SELECT trovesnap.revoke_execute(ARRAY['ctx_sales_visible', 'ctx_proposal_visible', 'lookup_client', 'seller_in']);

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (13, '20261201120000_trovesnap_hardening_proposals');

RESET ROLE;
