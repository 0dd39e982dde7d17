-- 0006_audit_chain: tamper evidence for plugin_events.
--
-- Every event carries the hash of its tenant chain's previous event and its
-- own hash (domain.ChainHash):
--     event_hash = "sha256:" || hex(sha256(JCS(body) || "\n" || prev_hash))
-- computed by store.insertEvent inside the write transaction. Writes are
-- serialised by BEGIN IMMEDIATE across processes, so each chain is linear.
-- One chain per tenant; events of no tenant (anonymous calls) chain under
-- tenant_id ''. The first event of a chain has prev_hash ''.
--
-- Rows written before this migration keep event_hash '' ("legacy"): SQL
-- cannot compute the hash, and UPDATE is refused by the append-only
-- trigger. `trovesnap audit verify` reports them as an unchained prefix; a
-- row without a hash after a chain has started is a verification failure.
--
-- causation_id joins the column copies of body fields (like correlation_id)
-- so that a trace can follow "caused by" links with an index.

ALTER TABLE plugin_events ADD COLUMN causation_id TEXT NOT NULL DEFAULT '';
ALTER TABLE plugin_events ADD COLUMN prev_hash TEXT NOT NULL DEFAULT ''
    CHECK (prev_hash = '' OR (prev_hash LIKE 'sha256:%' AND length(prev_hash) = 71));
ALTER TABLE plugin_events ADD COLUMN event_hash TEXT NOT NULL DEFAULT ''
    CHECK (event_hash = '' OR (event_hash LIKE 'sha256:%' AND length(event_hash) = 71));

-- The index per tenant chain: (tenant_id, seq, event_hash) finds a chain's
-- head (the newest event of a tenant, and its hash) from the index alone,
-- on every insert. It replaces plugin_events_tenant (tenant_id, seq), which
-- it covers, so a write touches no more index pages than before.
-- (A UNIQUE (tenant_id, prev_hash) index would also make the database refuse
-- a fork, but it costs one random index page per commit, several times the
-- rest of the chain's cost; the chain is linear by construction under
-- BEGIN IMMEDIATE, and `audit verify` reports a fork as a bad link.)
DROP INDEX plugin_events_tenant;
CREATE INDEX plugin_events_chain ON plugin_events (tenant_id, seq, event_hash);

CREATE INDEX plugin_events_causation ON plugin_events (causation_id, seq) WHERE causation_id <> '';
