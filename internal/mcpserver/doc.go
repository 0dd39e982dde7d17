// Package mcpserver adapts the gate to the MCP go-sdk: server identity, the
// per-principal tool list (receiving middleware, since the SDK has no
// per-session registry), tools/call routed through the gate, and the stdio
// transport. It holds no policy of its own.
package mcpserver
