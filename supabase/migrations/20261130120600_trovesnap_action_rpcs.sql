-- trovesnap live mode, migration 10: The remaining controlled actions (status, bulk updates, identity, disposition, notifications, export delivery).
-- (Filled in by the change that adds them.)

SET ROLE trovesnap_owner;

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (10, '20261130120600_trovesnap_action_rpcs');

RESET ROLE;
