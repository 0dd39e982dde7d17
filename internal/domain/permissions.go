package domain

import "slices"

// Permissions (P6 names). A tool requires some of them; a role grants a set.
const (
	PermSaleRead = "sale.read"
	// PermSaleCreate creates a draft estate sale (`trovesnap sale create`,
	// a seller surface: no MCP tool creates a sale).
	PermSaleCreate          = "sale.create"
	PermItemRead            = "item.read"
	PermItemReadPricing     = "item.read_pricing"
	PermItemReadCheckout    = "item.read_checkout"
	PermCandidateRead       = "candidate.read"
	PermItemCreateCandidate = "item.create_candidate"
	PermDemandRead          = "demand.read"
	PermImportRead          = "import.read"
	PermProposalCreate      = "proposal.create"
	PermProposalRead        = "proposal.read"
	PermItemUpdateStatus    = "item.update_status"
	PermCheckoutScan        = "checkout.scan"
	PermItemPublish         = "item.publish"
	PermSalePublish         = "sale.publish"
	PermItemUpdatePrice     = "item.update_price"
	PermItemBindIdentity    = "item.bind_identity"
	PermDispositionApply    = "disposition.apply"
	PermExportStage         = "export.stage"
	PermExportDeliver       = "export.deliver"
	PermBuyerNotify         = "buyer.notify"
	PermApprovalGrant       = "approval.grant"
	PermClientManage        = "client.manage"
	PermPolicyManage        = "policy.manage"
)

// rolePermissions is the documented permission matrix (README "Roles").
var rolePermissions = map[string][]string{
	RoleOwner: {
		PermSaleRead, PermSaleCreate, PermItemRead, PermItemReadPricing, PermItemReadCheckout, PermCandidateRead,
		PermItemCreateCandidate, PermDemandRead, PermImportRead, PermProposalCreate, PermProposalRead,
		PermItemUpdateStatus, PermCheckoutScan, PermItemPublish, PermSalePublish, PermItemUpdatePrice,
		PermItemBindIdentity, PermDispositionApply, PermExportStage, PermExportDeliver, PermBuyerNotify,
		PermApprovalGrant, PermClientManage, PermPolicyManage,
	},
	RoleManager: {
		PermSaleRead, PermSaleCreate, PermItemRead, PermItemReadPricing, PermItemReadCheckout, PermCandidateRead,
		PermItemCreateCandidate, PermDemandRead, PermImportRead, PermProposalCreate, PermProposalRead,
		PermItemUpdateStatus, PermCheckoutScan, PermItemPublish, PermSalePublish, PermItemUpdatePrice,
		PermItemBindIdentity, PermDispositionApply, PermExportStage, PermExportDeliver, PermBuyerNotify,
		PermApprovalGrant,
	},
	RoleCataloger: {
		PermSaleRead, PermItemRead, PermCandidateRead, PermItemCreateCandidate, PermDemandRead,
		PermImportRead, PermProposalCreate, PermProposalRead, PermExportStage,
	},
	RolePricer: {
		PermSaleRead, PermItemRead, PermItemReadPricing, PermCandidateRead, PermDemandRead,
		PermProposalCreate, PermProposalRead,
	},
	RoleCheckout: {
		PermSaleRead, PermItemReadCheckout, PermItemUpdateStatus, PermCheckoutScan,
	},
}

// RolePermissions returns the permissions a role grants (a copy, sorted).
func RolePermissions(role string) []string {
	p := slices.Clone(rolePermissions[role])
	slices.Sort(p)
	return p
}

// Roles lists the known roles in a fixed order.
func Roles() []string {
	return []string{RoleOwner, RoleManager, RoleCataloger, RolePricer, RoleCheckout}
}

// Has reports whether the principal's role grants perm.
func (p Principal) Has(perm string) bool {
	return slices.Contains(rolePermissions[p.Role], perm)
}
