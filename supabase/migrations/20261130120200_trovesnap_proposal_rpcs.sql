-- trovesnap live mode, migration 6: Proposal, approval-state and controlled-action RPCs of the MCP server.
-- (Filled in by the change that adds them.)

SET ROLE trovesnap_owner;

INSERT INTO trovesnap.schema_migrations (version, name) VALUES (6, '20261130120200_trovesnap_proposal_rpcs');

RESET ROLE;
