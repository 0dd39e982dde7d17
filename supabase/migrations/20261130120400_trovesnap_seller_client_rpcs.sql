-- trovesnap live mode, migration 8: seller-surface RPCs for MCP clients and limits under a signed-in user's JWT.
-- (Filled in by the change that adds them.)

SET ROLE trovesnap_owner;

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (8, '20261130120400_trovesnap_seller_client_rpcs');

RESET ROLE;
