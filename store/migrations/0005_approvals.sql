-- Proposals, approval grants, automation policies (§14-§18) and the records
-- the controlled domain functions write.

-- An action proposal. Its content (everything but status) is immutable: the
-- trigger below refuses any change, so a new plan is a new proposal.
CREATE TABLE proposals (
    id                  TEXT PRIMARY KEY CHECK (id <> ''),
    tenant_id           TEXT NOT NULL REFERENCES tenants (id),
    tool_name           TEXT NOT NULL,
    action              TEXT NOT NULL,
    requested_by_client TEXT NOT NULL,
    requested_by_actor  TEXT NOT NULL,
    correlation_id      TEXT NOT NULL,
    body                TEXT NOT NULL CHECK (json_valid(body)),
    proposal_hash       TEXT NOT NULL CHECK (proposal_hash LIKE 'sha256:%'),
    created_at          TEXT NOT NULL,
    expires_at          TEXT NOT NULL,
    status              TEXT NOT NULL CHECK (status IN ('pending_approval', 'approved', 'rejected', 'expired', 'executed')),
    status_reason       TEXT NOT NULL DEFAULT '',
    decided_by          TEXT NOT NULL DEFAULT '',
    executed_at         TEXT,
    UNIQUE (tenant_id, id)
) STRICT;
CREATE INDEX proposals_queue ON proposals (tenant_id, status, created_at);
CREATE TRIGGER proposals_content_immutable
BEFORE UPDATE OF id, tenant_id, tool_name, action, requested_by_client, requested_by_actor, correlation_id, body,
    proposal_hash, created_at, expires_at ON proposals
BEGIN
    SELECT RAISE(ABORT, 'proposal content is immutable');
END;
CREATE TRIGGER proposals_no_delete BEFORE DELETE ON proposals
BEGIN
    SELECT RAISE(ABORT, 'proposals are never deleted');
END;

-- An approval grant, from a human surface or a policy. Its binding is
-- immutable; only status, consumed_at and revocation change.
CREATE TABLE approval_grants (
    id             TEXT PRIMARY KEY CHECK (id <> ''),
    tenant_id      TEXT NOT NULL REFERENCES tenants (id),
    proposal_id    TEXT NOT NULL,
    proposal_hash  TEXT NOT NULL,
    issuer_type    TEXT NOT NULL CHECK (issuer_type IN ('human', 'policy')),
    issuer_actor   TEXT NOT NULL DEFAULT '',
    issuer_surface TEXT NOT NULL DEFAULT '',
    policy_id      TEXT NOT NULL DEFAULT '',
    policy_version INTEGER NOT NULL DEFAULT 0,
    tool           TEXT NOT NULL,
    target_ids     TEXT NOT NULL CHECK (json_valid(target_ids)),
    constraints    TEXT NOT NULL CHECK (json_valid(constraints)),
    status         TEXT NOT NULL CHECK (status IN ('active', 'consumed', 'revoked')),
    single_use     INTEGER NOT NULL DEFAULT 1 CHECK (single_use IN (0, 1)),
    issued_at      TEXT NOT NULL,
    expires_at     TEXT NOT NULL,
    consumed_at    TEXT,
    revoked_at     TEXT,
    revoked_by     TEXT NOT NULL DEFAULT '',
    FOREIGN KEY (tenant_id, proposal_id) REFERENCES proposals (tenant_id, id)
) STRICT;
CREATE INDEX approval_grants_proposal ON approval_grants (proposal_id);
CREATE INDEX approval_grants_tenant ON approval_grants (tenant_id, status, issued_at);
CREATE TRIGGER approval_grants_binding_immutable
BEFORE UPDATE OF id, tenant_id, proposal_id, proposal_hash, issuer_type, issuer_actor, issuer_surface, policy_id,
    policy_version, tool, target_ids, constraints, single_use, issued_at, expires_at ON approval_grants
BEGIN
    SELECT RAISE(ABORT, 'grant binding is immutable');
END;
CREATE TRIGGER approval_grants_no_delete BEFORE DELETE ON approval_grants
BEGIN
    SELECT RAISE(ABORT, 'grants are never deleted');
END;

-- Automation policies: the current version, and every version kept.
CREATE TABLE automation_policies (
    id         TEXT PRIMARY KEY CHECK (id <> ''),
    tenant_id  TEXT NOT NULL REFERENCES tenants (id),
    name       TEXT NOT NULL,
    version    INTEGER NOT NULL CHECK (version >= 1),
    status     TEXT NOT NULL CHECK (status IN ('disabled', 'active', 'revoked')),
    body       TEXT NOT NULL CHECK (json_valid(body)),
    created_by TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
) STRICT;
CREATE INDEX automation_policies_tenant ON automation_policies (tenant_id, status);
CREATE TABLE automation_policy_versions (
    policy_id  TEXT NOT NULL REFERENCES automation_policies (id),
    version    INTEGER NOT NULL,
    status     TEXT NOT NULL,
    body       TEXT NOT NULL CHECK (json_valid(body)),
    changed_by TEXT NOT NULL,
    changed_at TEXT NOT NULL,
    PRIMARY KEY (policy_id, version)
) STRICT;
-- Every use of a policy, for its daily limits and the audit.
CREATE TABLE policy_uses (
    id             INTEGER PRIMARY KEY,
    tenant_id      TEXT NOT NULL,
    policy_id      TEXT NOT NULL REFERENCES automation_policies (id),
    policy_version INTEGER NOT NULL,
    proposal_id    TEXT NOT NULL,
    grant_id       TEXT NOT NULL,
    cost_usd       REAL NOT NULL DEFAULT 0,
    used_at        TEXT NOT NULL
) STRICT;
CREATE INDEX policy_uses_day ON policy_uses (policy_id, used_at);

-- Provenance of a promoted item: candidate, source record, import run.
CREATE TABLE item_provenance (
    item_id          TEXT PRIMARY KEY REFERENCES items (id),
    tenant_id        TEXT NOT NULL,
    candidate_id     TEXT NOT NULL,
    source_record_id TEXT,
    import_run_id    TEXT,
    proposal_id      TEXT NOT NULL,
    created_at       TEXT NOT NULL
) STRICT;

-- Field-level change history of items (bulk updates, price changes, QR).
CREATE TABLE item_change_history (
    id          INTEGER PRIMARY KEY,
    tenant_id   TEXT NOT NULL,
    item_id     TEXT NOT NULL REFERENCES items (id),
    field       TEXT NOT NULL,
    from_value  TEXT,
    to_value    TEXT,
    proposal_id TEXT NOT NULL,
    changed_at  TEXT NOT NULL
) STRICT;
CREATE INDEX item_change_history_item ON item_change_history (tenant_id, item_id, changed_at);

-- Dispositions applied to unsold items.
CREATE TABLE item_dispositions (
    item_id      TEXT PRIMARY KEY REFERENCES items (id),
    tenant_id    TEXT NOT NULL,
    action       TEXT NOT NULL,
    counterparty TEXT NOT NULL DEFAULT '',
    offer_cents  INTEGER,
    proposal_id  TEXT NOT NULL,
    applied_at   TEXT NOT NULL
) STRICT;

-- Simulated outbound effects in mock mode (notifications, external
-- deliveries): recorded, never sent.
CREATE TABLE simulated_deliveries (
    id          TEXT PRIMARY KEY CHECK (id <> ''),
    tenant_id   TEXT NOT NULL,
    kind        TEXT NOT NULL CHECK (kind IN ('buyer_notification', 'export_delivery')),
    proposal_id TEXT NOT NULL,
    summary     TEXT NOT NULL CHECK (json_valid(summary)),
    created_at  TEXT NOT NULL
) STRICT;

-- Checkout scans (record_checkout_scan) and public appraisal links.
CREATE TABLE checkout_scans (
    id         TEXT PRIMARY KEY CHECK (id <> ''),
    tenant_id  TEXT NOT NULL,
    item_id    TEXT NOT NULL REFERENCES items (id),
    qr_code    TEXT NOT NULL,
    scanned_by TEXT NOT NULL,
    scanned_at TEXT NOT NULL
) STRICT;
CREATE TABLE public_appraisal_links (
    id         TEXT PRIMARY KEY CHECK (id <> ''),
    tenant_id  TEXT NOT NULL,
    item_id    TEXT NOT NULL REFERENCES items (id),
    sale_id    TEXT NOT NULL,
    created_by TEXT NOT NULL,
    created_at TEXT NOT NULL
) STRICT;
