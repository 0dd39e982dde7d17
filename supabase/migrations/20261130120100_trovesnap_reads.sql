-- trovesnap live mode, migration 5: Public and scoped read RPCs.
-- (Filled in by the change that adds them.)

SET ROLE trovesnap_owner;

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (5, '20261130120100_trovesnap_reads');

RESET ROLE;
