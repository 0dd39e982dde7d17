package approval

import (
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// PolicyHumanOnlyReason says why no policy can authorise a proposal ("" if
// some policy could); the rule is domain.PolicyHumanOnlyReason.
func PolicyHumanOnlyReason(p domain.Proposal) string { return domain.PolicyHumanOnlyReason(p) }

// EvaluatePolicy decides whether pol authorises proposal p to run as tool
// now. Every clause must hold; the reason names the first that does not.
func EvaluatePolicy(pol domain.Policy, p domain.Proposal, tool string, usage domain.PolicyUsage, now time.Time) (bool, string) {
	switch {
	case pol.Status != domain.PolicyActive:
		return false, "policy " + pol.Status
	case pol.TenantID != p.TenantID:
		return false, "policy of another tenant"
	case !slices.Contains(pol.AllowedTools, tool):
		return false, "policy does not allow " + tool
	}
	// What the proposal holds against the policy's scope and conditions:
	// the rule every backend re-checks at execution.
	if r := domain.PolicyContentRefusal(pol, p, now); r != "" {
		return false, r
	}
	if usage.ActionsToday+1 > pol.Limits.MaxDailyActions {
		return false, "policy's daily action limit reached"
	}
	if usage.CostToday+p.Impact.EstimatedCostUSD > pol.Limits.MaxCostUSDPerDay {
		return false, "policy's daily cost limit reached"
	}
	return true, fmt.Sprintf("policy %s v%d", pol.ID, pol.Version)
}

// ValidatePolicy checks a new policy: narrowly scoped and unable to name
// what it could never authorise.
func ValidatePolicy(pol domain.Policy) error {
	switch {
	case pol.Name == "" || utf8.RuneCountInString(pol.Name) > domain.MaxPolicyNameLen:
		return domain.Invalid("name", fmt.Sprintf("required, at most %d characters", domain.MaxPolicyNameLen))
	case len(pol.AllowedTools) == 0:
		return domain.Invalid("allowed_tools", "name at least one controlled tool")
	case len(pol.Scope.EstateSaleIDs) == 0:
		return domain.Invalid("scope.estate_sale_ids", "a policy must be scoped to named sales")
	case pol.Conditions.MaxItemsPerRun < 1 || pol.Conditions.MaxItemsPerRun > domain.BroadBulkLimit:
		return domain.Invalid("conditions.maximum_items_per_run", fmt.Sprintf("between 1 and %d", domain.BroadBulkLimit))
	case len(pol.Conditions.PermittedFields) == 0:
		return domain.Invalid("conditions.permitted_fields", "name the fields the policy may change")
	case pol.Limits.MaxDailyActions < 1:
		return domain.Invalid("limits.maximum_daily_actions", "at least 1")
	case pol.Limits.MaxCostUSDPerDay != 0:
		return domain.Invalid("limits.maximum_cost_usd_per_day", "policies never authorise paid work: must be 0")
	}
	for _, t := range pol.AllowedTools {
		if !slices.Contains(PolicyAuthorisableTools(), t) {
			return domain.Invalid("allowed_tools", t+" can never be authorised by a policy")
		}
	}
	for _, s := range pol.Scope.EstateSaleIDs {
		if !domain.ValidID(domain.PrefixSale, s) {
			return domain.Invalid("scope.estate_sale_ids", "malformed sale id "+s)
		}
	}
	if field, reason := domain.CheckoutPolicyRefusal(pol); reason != "" {
		return domain.Invalid(field, reason)
	}
	return nil
}

// PolicyAuthorisableTools are the controlled tools an automation policy
// may ever name: those of the registry's actions that need human_or_policy
// and belong to no human-only category (domain.ActionSpec.PolicyMay), in
// registry order.
func PolicyAuthorisableTools() []string {
	var tools []string
	for _, a := range domain.Actions() {
		if a.PolicyMay() {
			tools = append(tools, a.Tool)
		}
	}
	return tools
}
