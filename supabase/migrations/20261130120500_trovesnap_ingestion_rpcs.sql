-- trovesnap live mode, migration 9: Ingestion write RPCs (CSV import, status reports, media, drafts, export staging).
-- (Filled in by the change that adds them.)

SET ROLE trovesnap_owner;

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (9, '20261130120500_trovesnap_ingestion_rpcs');

RESET ROLE;
