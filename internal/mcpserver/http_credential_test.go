package mcpserver

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// The HTTP server's own credential, which a call without a request token
// would carry, is no client's: not "" (mock mode's demo client), not the
// anonymous one, and malformed, so the gate refuses it before any lookup.
func TestHTTP_ServerCredentialIsNoClient(t *testing.T) {
	if noRequestToken == "" || noRequestToken == domain.PublicCredential || domain.WellFormedToken(noRequestToken) {
		t.Fatalf("the HTTP server's credential %q could resolve to a client", noRequestToken)
	}
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "trove_list_sales"}}
	if got, conn := callerOf(Options{Credential: noRequestToken}, req); got != noRequestToken || conn != nil {
		t.Fatalf("a request without a token carries %q, connector %v", got, conn)
	}
}
