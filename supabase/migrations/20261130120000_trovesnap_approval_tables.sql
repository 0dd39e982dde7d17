-- trovesnap live mode, migration 4: the records of the approval flow —
-- proposals, approval grants, automation policies (with every version and
-- every use), item provenance and the item lifecycle history — mirroring
-- the embedded store (store/migrations/0003_reads.sql, 0005_approvals.sql).
-- Row level security as in migration 2: the tenant of the request context
-- (or system) for the server's RPCs, the signed-in seller's tenants for
-- reads under a user JWT. Nothing here is granted to any role: the RPCs of
-- the next migrations are the only way in.

SET ROLE trovesnap_owner;

-- An action proposal. Its content is immutable (the trigger below refuses
-- any change to it), so a new plan is a new proposal; only its status moves.
CREATE TABLE trovesnap.proposals (
    id                  text COLLATE "C" PRIMARY KEY CHECK (id <> ''),
    tenant_id           text COLLATE "C" NOT NULL REFERENCES trovesnap.tenants (id),
    tool_name           text NOT NULL,
    action              text NOT NULL,
    requested_by_client text COLLATE "C" NOT NULL,
    requested_by_actor  text COLLATE "C" NOT NULL,
    correlation_id      text NOT NULL DEFAULT '',
    body                jsonb NOT NULL CHECK (jsonb_typeof(body) = 'object'),
    proposal_hash       text NOT NULL CHECK (proposal_hash LIKE 'sha256:%'),
    created_at          timestamptz NOT NULL,
    expires_at          timestamptz NOT NULL,
    status              text NOT NULL CHECK (status IN ('pending_approval', 'approved', 'rejected', 'expired', 'executed')),
    status_reason       text NOT NULL DEFAULT '',
    decided_by          text NOT NULL DEFAULT '',
    executed_at         timestamptz,
    UNIQUE (tenant_id, id),
    CHECK (expires_at > created_at)
);
CREATE INDEX proposals_queue ON trovesnap.proposals (tenant_id, status, created_at);

CREATE FUNCTION trovesnap.proposal_content_immutable() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF (NEW.id, NEW.tenant_id, NEW.tool_name, NEW.action, NEW.requested_by_client, NEW.requested_by_actor,
        NEW.correlation_id, NEW.body, NEW.proposal_hash, NEW.created_at, NEW.expires_at)
       IS DISTINCT FROM
       (OLD.id, OLD.tenant_id, OLD.tool_name, OLD.action, OLD.requested_by_client, OLD.requested_by_actor,
        OLD.correlation_id, OLD.body, OLD.proposal_hash, OLD.created_at, OLD.expires_at) THEN
        RAISE EXCEPTION USING ERRCODE = 'P0001', MESSAGE = 'trovesnap:immutable:proposals';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER proposals_content_immutable BEFORE UPDATE ON trovesnap.proposals
    FOR EACH ROW EXECUTE FUNCTION trovesnap.proposal_content_immutable();
CREATE TRIGGER proposals_no_delete BEFORE DELETE ON trovesnap.proposals
    FOR EACH ROW EXECUTE FUNCTION trovesnap.refuse_change();
CREATE TRIGGER proposals_no_truncate BEFORE TRUNCATE ON trovesnap.proposals
    FOR EACH STATEMENT EXECUTE FUNCTION trovesnap.refuse_change();

-- An approval grant from a human surface or a policy. Its binding is
-- immutable; only status, consumed_at and the revocation change.
CREATE TABLE trovesnap.approval_grants (
    id             text COLLATE "C" PRIMARY KEY CHECK (id <> ''),
    tenant_id      text COLLATE "C" NOT NULL REFERENCES trovesnap.tenants (id),
    proposal_id    text COLLATE "C" NOT NULL,
    proposal_hash  text NOT NULL CHECK (proposal_hash LIKE 'sha256:%'),
    issuer_type    text NOT NULL CHECK (issuer_type IN ('human', 'policy')),
    issuer_actor   text NOT NULL DEFAULT '',
    issuer_surface text NOT NULL DEFAULT '',
    policy_id      text NOT NULL DEFAULT '',
    policy_version integer NOT NULL DEFAULT 0,
    tool           text NOT NULL,
    target_ids     text[] NOT NULL,
    constraints    jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(constraints) = 'object'),
    status         text NOT NULL CHECK (status IN ('active', 'consumed', 'revoked')),
    single_use     boolean NOT NULL DEFAULT true,
    issued_at      timestamptz NOT NULL,
    expires_at     timestamptz NOT NULL,
    consumed_at    timestamptz,
    revoked_at     timestamptz,
    revoked_by     text NOT NULL DEFAULT '',
    FOREIGN KEY (tenant_id, proposal_id) REFERENCES trovesnap.proposals (tenant_id, id),
    CHECK (expires_at > issued_at)
);
CREATE INDEX approval_grants_proposal ON trovesnap.approval_grants (tenant_id, proposal_id);
CREATE INDEX approval_grants_tenant ON trovesnap.approval_grants (tenant_id, status, issued_at);

CREATE FUNCTION trovesnap.grant_binding_immutable() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF (NEW.id, NEW.tenant_id, NEW.proposal_id, NEW.proposal_hash, NEW.issuer_type, NEW.issuer_actor, NEW.issuer_surface,
        NEW.policy_id, NEW.policy_version, NEW.tool, NEW.target_ids, NEW.constraints, NEW.single_use, NEW.issued_at,
        NEW.expires_at)
       IS DISTINCT FROM
       (OLD.id, OLD.tenant_id, OLD.proposal_id, OLD.proposal_hash, OLD.issuer_type, OLD.issuer_actor, OLD.issuer_surface,
        OLD.policy_id, OLD.policy_version, OLD.tool, OLD.target_ids, OLD.constraints, OLD.single_use, OLD.issued_at,
        OLD.expires_at) THEN
        RAISE EXCEPTION USING ERRCODE = 'P0001', MESSAGE = 'trovesnap:immutable:approval_grants';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER approval_grants_binding_immutable BEFORE UPDATE ON trovesnap.approval_grants
    FOR EACH ROW EXECUTE FUNCTION trovesnap.grant_binding_immutable();
CREATE TRIGGER approval_grants_no_delete BEFORE DELETE ON trovesnap.approval_grants
    FOR EACH ROW EXECUTE FUNCTION trovesnap.refuse_change();
CREATE TRIGGER approval_grants_no_truncate BEFORE TRUNCATE ON trovesnap.approval_grants
    FOR EACH STATEMENT EXECUTE FUNCTION trovesnap.refuse_change();

-- Automation policies: the current version, and every version kept.
CREATE TABLE trovesnap.automation_policies (
    id         text COLLATE "C" PRIMARY KEY CHECK (id <> ''),
    tenant_id  text COLLATE "C" NOT NULL REFERENCES trovesnap.tenants (id),
    name       text NOT NULL,
    version    integer NOT NULL CHECK (version >= 1),
    status     text NOT NULL CHECK (status IN ('disabled', 'active', 'revoked')),
    body       jsonb NOT NULL CHECK (jsonb_typeof(body) = 'object'),
    created_by text NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    UNIQUE (tenant_id, id)
);
CREATE INDEX automation_policies_tenant ON trovesnap.automation_policies (tenant_id, status);

CREATE TABLE trovesnap.automation_policy_versions (
    policy_id  text COLLATE "C" NOT NULL,
    tenant_id  text COLLATE "C" NOT NULL,
    version    integer NOT NULL,
    status     text NOT NULL,
    body       jsonb NOT NULL,
    changed_by text NOT NULL,
    changed_at timestamptz NOT NULL,
    PRIMARY KEY (policy_id, version),
    FOREIGN KEY (tenant_id, policy_id) REFERENCES trovesnap.automation_policies (tenant_id, id)
);
CREATE TRIGGER automation_policy_versions_append_only BEFORE UPDATE OR DELETE ON trovesnap.automation_policy_versions
    FOR EACH ROW EXECUTE FUNCTION trovesnap.refuse_change();

-- Every use of a policy, for its daily limits and the audit.
CREATE TABLE trovesnap.policy_uses (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id      text COLLATE "C" NOT NULL,
    policy_id      text COLLATE "C" NOT NULL,
    policy_version integer NOT NULL,
    proposal_id    text COLLATE "C" NOT NULL,
    grant_id       text COLLATE "C" NOT NULL,
    cost_usd       numeric NOT NULL DEFAULT 0 CHECK (cost_usd >= 0),
    used_at        timestamptz NOT NULL,
    FOREIGN KEY (tenant_id, policy_id) REFERENCES trovesnap.automation_policies (tenant_id, id)
);
CREATE INDEX policy_uses_day ON trovesnap.policy_uses (policy_id, used_at);
CREATE TRIGGER policy_uses_append_only BEFORE UPDATE OR DELETE ON trovesnap.policy_uses
    FOR EACH ROW EXECUTE FUNCTION trovesnap.refuse_change();

-- Provenance of a promoted item: candidate, source record, import run and
-- the proposal that promoted it.
CREATE TABLE trovesnap.item_provenance (
    item_id          text COLLATE "C" PRIMARY KEY,
    tenant_id        text COLLATE "C" NOT NULL,
    candidate_id     text COLLATE "C" NOT NULL,
    source_record_id text COLLATE "C",
    import_run_id    text COLLATE "C",
    proposal_id      text COLLATE "C" NOT NULL,
    created_at       timestamptz NOT NULL,
    FOREIGN KEY (tenant_id, item_id) REFERENCES trovesnap.items (tenant_id, id),
    FOREIGN KEY (tenant_id, candidate_id) REFERENCES trovesnap.inventory_candidates (tenant_id, id),
    FOREIGN KEY (tenant_id, proposal_id) REFERENCES trovesnap.proposals (tenant_id, id)
);
CREATE TRIGGER item_provenance_append_only BEFORE UPDATE OR DELETE ON trovesnap.item_provenance
    FOR EACH ROW EXECUTE FUNCTION trovesnap.refuse_change();

-- The item lifecycle history (trove_list_status_events): append-only.
CREATE TABLE trovesnap.item_status_events (
    id           text COLLATE "C" PRIMARY KEY CHECK (id <> ''),
    tenant_id    text COLLATE "C" NOT NULL,
    item_id      text COLLATE "C" NOT NULL,
    sale_id      text COLLATE "C" NOT NULL,
    from_status  text NOT NULL CHECK (from_status IN ('draft', 'ready', 'published', 'on_hold',
                                                      'pending_pickup', 'sold', 'withdrawn', 'archived')),
    to_status    text NOT NULL CHECK (to_status IN ('draft', 'ready', 'published', 'on_hold',
                                                    'pending_pickup', 'sold', 'withdrawn', 'archived')),
    effective_at timestamptz NOT NULL,
    source_type  text NOT NULL CHECK (source_type IN ('seller_confirmed', 'checkout_scan', 'status_import', 'proposal')),
    actor_id     text NOT NULL DEFAULT '',
    proposal_id  text NOT NULL DEFAULT '',
    recorded_at  timestamptz NOT NULL,
    FOREIGN KEY (tenant_id, item_id) REFERENCES trovesnap.items (tenant_id, id),
    FOREIGN KEY (tenant_id, sale_id) REFERENCES trovesnap.estate_sales (tenant_id, id),
    CHECK (from_status <> to_status)
);
CREATE INDEX item_status_events_list ON trovesnap.item_status_events (tenant_id, effective_at, id);
CREATE INDEX item_status_events_item ON trovesnap.item_status_events (tenant_id, item_id, effective_at, id);
CREATE TRIGGER item_status_events_append_only BEFORE UPDATE OR DELETE ON trovesnap.item_status_events
    FOR EACH ROW EXECUTE FUNCTION trovesnap.refuse_change();

-- Row level security, as migration 2 sets it for its tables.
SELECT trovesnap.tenant_rls(ARRAY['proposals', 'approval_grants', 'automation_policies', 'automation_policy_versions',
    'policy_uses', 'item_provenance', 'item_status_events']);

-- Nothing new is executable by anyone but its owner.
SELECT trovesnap.revoke_execute(ARRAY[
    'proposal_content_immutable', 'grant_binding_immutable']);

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (4, '20261130120000_trovesnap_approval_tables');

RESET ROLE;
