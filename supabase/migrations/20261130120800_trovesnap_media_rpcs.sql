-- trovesnap live mode, migration 12: candidate media (source assets) in live mode.
-- (Filled in by the change that adds them.)

SET ROLE trovesnap_owner;

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (12, '20261130120800_trovesnap_media_rpcs');

RESET ROLE;
