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

// Permissions lists every permission some role grants, sorted.
func Permissions() []string {
	var out []string
	for _, ps := range rolePermissions {
		out = append(out, ps...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
