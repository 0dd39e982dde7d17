package domain

import "slices"

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
	// AssignedSaleIDs limits the actor to these sales when SaleScoped (a
	// membership restricted to assigned sales, §4.3).
	SaleScoped      bool     `json:"sale_scoped,omitempty"`
	AssignedSaleIDs []string `json:"assigned_sale_ids,omitempty"`
}

// MaySeeSale reports whether a sale-scoped principal is assigned to sale.
func (p Principal) MaySeeSale(saleID string) bool {
	return !p.SaleScoped || slices.Contains(p.AssignedSaleIDs, saleID)
}

// MaySeeProposal reports whether the principal sees a proposal of its
// tenant: an unscoped member sees every one; a sale-scoped member (§4.3)
// only one whose every sale — the sale of each target, stored in the
// proposal when it was made (Proposal.SaleIDs) — is assigned to it. A
// proposal that names no sale is hidden from a scoped member: it fails
// closed, since nothing shows the proposal is of an assigned sale. The
// live database applies the same rule as row level security
// (trovesnap.ctx_sales_visible).
func (p Principal) MaySeeProposal(prop Proposal) bool {
	if !p.SaleScoped {
		return true
	}
	if len(prop.SaleIDs) == 0 {
		return false
	}
	for _, sale := range prop.SaleIDs {
		if !p.MaySeeSale(sale) {
			return false
		}
	}
	return true
}

// Anonymous is the principal of a call without a credential outside mock mode.
func Anonymous() Principal {
	return Principal{ActorType: "anonymous", Public: true, ClientStatus: ClientActive}
}
