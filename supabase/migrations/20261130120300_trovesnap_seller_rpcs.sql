-- trovesnap live mode, migration 7: Seller-surface RPCs under a signed-in user's JWT.
-- (Filled in by the change that adds them.)

SET ROLE trovesnap_owner;

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (7, '20261130120300_trovesnap_seller_rpcs');

RESET ROLE;
