-- OAuth connectors (issue 17, part 3): a client may be bound to an OAuth
-- client (a ChatGPT or Claude connector) so that an access token issued to
-- that OAuth client for the client's actor acts as this client
-- (store.ResolveConnector). One OAuth client binds at most one client; the
-- resource is the MCP endpoint the tokens must name (checked by the HTTP
-- server against its own URL; recorded here as it is in live mode).
ALTER TABLE mcp_clients ADD COLUMN oauth_client_id TEXT
    CHECK (oauth_client_id IS NULL OR (length(oauth_client_id) BETWEEN 1 AND 255));
ALTER TABLE mcp_clients ADD COLUMN oauth_resource TEXT
    CHECK ((oauth_resource IS NULL) = (oauth_client_id IS NULL));
CREATE UNIQUE INDEX mcp_clients_oauth ON mcp_clients (oauth_client_id) WHERE oauth_client_id IS NOT NULL;
