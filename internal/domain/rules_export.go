package domain

import "slices"

// The accessors below export the rules the SQL of live mode is generated
// from (internal/sqlgen): every list is a copy in a fixed order, so the
// generated migration is the same bytes for the same rules.

// Transition is one step the item lifecycle allows.
type Transition struct {
	From, To string
}

// ItemTransitions lists every allowed step, by from-status in ItemStatuses
// order, then in the order the lifecycle declares the to-statuses.
func ItemTransitions() []Transition {
	var out []Transition
	for _, from := range ItemStatuses() {
		for _, to := range itemTransitions[from] {
			out = append(out, Transition{From: from, To: to})
		}
	}
	return out
}

// SaleStatuses lists every estate sale status.
func SaleStatuses() []string {
	return []string{SaleDraft, SalePublished, SaleLive, SaleClosed, SaleArchived}
}

// ProposalStatuses lists every stored proposal status.
func ProposalStatuses() []string {
	return []string{ProposalPending, ProposalApproved, ProposalDenied, ProposalExpired, ProposalExecuted}
}

// GrantStatuses lists the statuses a grant is stored with. GrantExpired
// is never stored: a read derives it from the expiry.
func GrantStatuses() []string {
	return []string{GrantActive, GrantConsumed, GrantRevoked}
}

// GrantIssuers lists who may issue a grant.
func GrantIssuers() []string {
	return []string{IssuerHuman, IssuerPolicy}
}

// PolicyStatuses lists every automation policy status.
func PolicyStatuses() []string {
	return []string{PolicyDisabled, PolicyActive, PolicyRevoked}
}

// ClientStatuses lists every MCP client status.
func ClientStatuses() []string {
	return []string{ClientActive, ClientPending, ClientSuspended, ClientRevoked}
}

// ReviewStatuses lists every review status of an inventory candidate.
func ReviewStatuses() []string {
	return []string{ReviewNeedsReview, ReviewApproved, ReviewRejected, ReviewPromoted, ReviewDuplicate}
}

// LabelBatchStatuses lists every status of a label batch.
func LabelBatchStatuses() []string {
	return []string{LabelBatchDraft, LabelBatchPrinted, LabelBatchRetired}
}

// Permissions lists every permission some role grants, sorted.
func Permissions() []string {
	var out []string
	for _, ps := range rolePermissions {
		out = append(out, ps...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
