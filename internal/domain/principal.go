package domain

// ClientRef names the MCP client behind a call, safely (no credential).
type ClientRef struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Type string `json:"type,omitempty"`
}

// Principal is who a call acts as, resolved server-side from the client's
// credential. Client-sent tenant or actor values are hints only and never
// fill a Principal.
type Principal struct {
	Client            ClientRef `json:"client"`
	ClientStatus      string    `json:"client_status"`
	AllowedToolGroups []string  `json:"allowed_tool_groups"`
	ActorID           string    `json:"actor_id"`
	ActorType         string    `json:"actor_type"` // seller | anonymous
	TenantID          string    `json:"tenant_id"`
	MembershipID      string    `json:"membership_id"`
	Role              string    `json:"role"`
	Public            bool      `json:"public"` // no credential: public tools only
}

// Anonymous is the principal of a call without a credential outside mock mode.
func Anonymous() Principal {
	return Principal{ActorType: "anonymous", Public: true, ClientStatus: ClientActive}
}
