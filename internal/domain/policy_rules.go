package domain

import (
	"fmt"
	"slices"
	"time"
)

// FinancialFields are the fields whose change is a financial change, which
// no automation policy may authorise (§18.2): a price, and the price a
// promotion gives the item it creates.
func FinancialFields() []string { return []string{"price_cents", "price", "create_item.price_cents"} }

// SaleCompletionStatuses are the item statuses a change to which completes
// a sale, which no automation policy may authorise (§18.2).
func SaleCompletionStatuses() []string { return []string{ItemSold, ItemPendingPickup} }

// PolicyHumanOnlyReason says why no policy can authorise a proposal ("" if
// some policy could): the §18.2 categories, judged on the action and on
// the proposal's content.
func PolicyHumanOnlyReason(p Proposal) string {
	// The §18.2 categories no policy may authorise, whatever tools it
	// names (publication, external delivery, notifications, disposition,
	// archive, QR release), are the registry's HumanOnly.
	if a, ok := ActionOf(p.Action); ok && a.HumanOnly != "" {
		return a.HumanOnly + " is never authorised by a policy"
	}
	if p.Requirement != RequireHumanOrPolicy {
		return "the tool requires explicit human approval"
	}
	if p.Impact.EstimatedCostUSD > 0 {
		return "paid work is never authorised by a policy"
	}
	if len(p.TargetIDs) > BroadBulkLimit {
		return fmt.Sprintf("more than %d targets is a broad bulk change", BroadBulkLimit)
	}
	for _, c := range p.Changes {
		if slices.Contains(FinancialFields(), c.Field) {
			return "financial changes are never authorised by a policy"
		}
		if to, ok := c.To.(string); ok && c.Field == "status" && slices.Contains(SaleCompletionStatuses(), to) {
			return "sale completion is never authorised by a policy"
		}
	}
	return ""
}

// PolicyContentRefusal says why pol does not authorise proposal p at now,
// judged on the proposal's content and the policy's scope and conditions
// ("" if it does): the proposal not expired, PolicyHumanOnlyReason, the
// sale scope, the items per run, the permitted fields and, where the
// policy asks, no conflicts. Status, tenant, tools and daily limits are
// the caller's. Every backend re-checks it when it executes a proposal
// under a policy, so a direct call cannot skip what the gate decided.
func PolicyContentRefusal(pol Policy, p Proposal, now time.Time) string {
	if !now.Before(p.ExpiresAt) {
		return "proposal expired"
	}
	if r := PolicyHumanOnlyReason(p); r != "" {
		return r
	}
	if len(pol.Scope.EstateSaleIDs) == 0 {
		return "policy has no sale scope"
	}
	if len(p.SaleIDs) == 0 {
		return "proposal targets no sale"
	}
	for _, sale := range p.SaleIDs {
		if !slices.Contains(pol.Scope.EstateSaleIDs, sale) {
			return "target outside the policy's sales: " + sale
		}
	}
	if pol.Conditions.MaxItemsPerRun <= 0 || len(p.TargetIDs) > pol.Conditions.MaxItemsPerRun {
		return fmt.Sprintf("%d targets exceed the policy's %d per run", len(p.TargetIDs), pol.Conditions.MaxItemsPerRun)
	}
	for _, c := range p.Changes {
		if !slices.Contains(pol.Conditions.PermittedFields, c.Field) {
			return "field not permitted by the policy: " + c.Field
		}
	}
	// A checkout scan is authorised only for the scans the policy lists
	// (a hold; the others were refused above as sale completion).
	if p.Action == ActionCheckoutScan {
		for _, c := range p.Changes {
			if scan, _ := c.To.(string); c.Field == "checkout_scan" && !slices.Contains(pol.Conditions.CheckoutScans, scan) {
				return "checkout scan not permitted by the policy: " + scan
			}
		}
	}
	if pol.Conditions.RequireNoConflicts && (p.Validation.Status != "valid" || len(p.Validation.Warnings) > 0) {
		return "policy requires a proposal without conflicts or warnings"
	}
	return ""
}
