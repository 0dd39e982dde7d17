// Package live is the live-mode domain.Backend: every read and persisted
// write is one governed Supabase RPC (supabase/migrations), called through a
// small net/http helper with a context, a timeout and strict status
// handling — supabase-go's Rpc hides HTTP and network errors.
//
// The server key (a JWT for the trovesnap_mcp role, which may EXECUTE the
// mcp_* RPCs and nothing else) is sent as `apikey` and `Authorization:
// Bearer` and appears in no error, log line or output. Each RPC
// authenticates the MCP client again from the sha256 of its credential, so
// the tenant, actor, membership and permissions always come from the
// database, never from an argument this package sends.
//
// Errors are the domain's wrapped sentinels, as the embedded store returns
// them; PostgREST and Postgres text never travels upward.
package live
