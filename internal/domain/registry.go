package domain

import (
	"cmp"
	"slices"
)

// Proposal actions: one per controlled domain function.
const (
	ActionPromoteCandidate = "promote_candidate"
	ActionPublishItem      = "publish_item"
	ActionPublishSale      = "publish_sale"
	ActionBulkItemUpdate   = "bulk_item_update"
	ActionStatusTransition = "status_transition"
	ActionArchiveItem      = "archive_item"
	ActionBuyerNotify      = "buyer_notification"
	ActionBindIdentity     = "bind_identity"
	ActionReleaseIdentity  = "release_identity"
	ActionDisposition      = "disposition_action"
	ActionExportDelivery   = "export_delivery"
	ActionCheckoutScan     = "record_checkout_scan"
)

// Requirement is the approval a controlled action needs before it runs
// (§17): a human grant only, or a human grant or a bounded automation
// policy (§18). Proposals record it (Proposal.Requirement).
type Requirement = string

// Approval requirements.
const (
	RequireExplicitHuman Requirement = "explicit_human"
	RequireHumanOrPolicy Requirement = "human_or_policy"
)

// ActionSpec declares one controlled action, once. The catalog, the gate,
// the approval service, both backends, the approve terminal and the SQL
// generated for live mode (supabase/migrations, `go generate`) read it; no
// other file names an action's tools, approval or permissions.
type ActionSpec struct {
	// Action is the proposal's action (Proposal.Action).
	Action string
	// ProposalTool is the tool that proposes it; one tool may propose two
	// actions (a status change or an archive; a bind or a release).
	ProposalTool string
	// Tool is the controlled tool that executes an approved proposal.
	Tool string
	// Service and Operation name the P5/P6 domain function it runs.
	Service, Operation string
	// Requirement is the approval it needs (§17).
	Requirement Requirement
	// HumanOnly names the §18.2 category that no automation policy may
	// authorise, whatever tools the policy names; "" when a policy may.
	HumanOnly string
	// Permissions are what the executing principal's role must grant.
	Permissions []string
}

// PolicyMay reports whether an automation policy may ever authorise the
// action (§18.2): it needs human_or_policy and no human-only category.
func (a ActionSpec) PolicyMay() bool {
	return a.Requirement == RequireHumanOrPolicy && a.HumanOnly == ""
}

// actions is the registry, in the order tools are listed.
var actions = []ActionSpec{
	{Action: ActionPromoteCandidate, ProposalTool: "trove_propose_candidate_promotion", Tool: "trove_execute_candidate_promotion",
		Service: "inventory", Operation: "promote_inventory_candidate", Requirement: RequireHumanOrPolicy,
		Permissions: []string{PermCandidateRead, PermItemCreateCandidate}},
	{Action: ActionPublishItem, ProposalTool: "trove_propose_item_publication", Tool: "trove_publish_item",
		Service: "inventory", Operation: "publish_item", Requirement: RequireExplicitHuman, HumanOnly: "live publication",
		Permissions: []string{PermItemPublish}},
	{Action: ActionPublishSale, ProposalTool: "trove_propose_sale_publication", Tool: "trove_publish_sale",
		Service: "inventory", Operation: "publish_sale", Requirement: RequireExplicitHuman, HumanOnly: "live publication",
		Permissions: []string{PermSalePublish}},
	{Action: ActionStatusTransition, ProposalTool: "trove_propose_status_transition", Tool: "trove_update_item_status",
		Service: "inventory", Operation: "append_inventory_status_event", Requirement: RequireHumanOrPolicy,
		Permissions: []string{PermItemUpdateStatus}},
	{Action: ActionBulkItemUpdate, ProposalTool: "trove_propose_bulk_item_update", Tool: "trove_apply_bulk_item_update",
		Service: "inventory", Operation: "apply_bulk_item_update", Requirement: RequireHumanOrPolicy,
		Permissions: []string{PermItemUpdatePrice}},
	{Action: ActionBuyerNotify, ProposalTool: "trove_propose_buyer_notification", Tool: "trove_notify_matched_buyers",
		Service: "notifications", Operation: "notify_matched_buyers", Requirement: RequireExplicitHuman, HumanOnly: "buyer notifications",
		Permissions: []string{PermBuyerNotify}},
	{Action: ActionBindIdentity, ProposalTool: "trove_propose_identity_binding", Tool: "trove_bind_item_identity",
		Service: "identity", Operation: "bind_item_identity", Requirement: RequireHumanOrPolicy,
		Permissions: []string{PermItemBindIdentity}},
	{Action: ActionReleaseIdentity, ProposalTool: "trove_propose_identity_binding", Tool: "trove_release_item_identity",
		Service: "identity", Operation: "release_item_identity", Requirement: RequireExplicitHuman, HumanOnly: "QR release",
		Permissions: []string{PermItemBindIdentity}},
	{Action: ActionDisposition, ProposalTool: "trove_propose_disposition_action", Tool: "trove_apply_disposition_action",
		Service: "disposition", Operation: "apply_disposition_action", Requirement: RequireExplicitHuman, HumanOnly: "disposition completion",
		Permissions: []string{PermDispositionApply}},
	{Action: ActionExportDelivery, ProposalTool: "trove_propose_export_delivery", Tool: "trove_deliver_export",
		Service: "exports", Operation: "deliver_export", Requirement: RequireExplicitHuman, HumanOnly: "external marketplace delivery",
		Permissions: []string{PermExportDeliver}},
	// A checkout scan moves an item along the lifecycle (hold, sold awaiting
	// pickup, picked up) and records the scan; a policy may authorise only
	// a hold (PolicyCheckoutScans: the others complete a sale, §18.2).
	{Action: ActionCheckoutScan, ProposalTool: "trove_propose_checkout_scan", Tool: CheckoutScanTool,
		Service: "checkout", Operation: "record_checkout_scan", Requirement: RequireHumanOrPolicy,
		Permissions: []string{PermCheckoutScan, PermItemUpdateStatus}},
	{Action: ActionArchiveItem, ProposalTool: "trove_propose_status_transition", Tool: "trove_archive_item",
		Service: "inventory", Operation: "append_inventory_status_event", Requirement: RequireExplicitHuman, HumanOnly: "a destructive action",
		Permissions: []string{PermItemUpdateStatus}},
}

// Actions lists every controlled action (copies, in registry order).
func Actions() []ActionSpec {
	out := make([]ActionSpec, len(actions))
	for i, a := range actions {
		a.Permissions = slices.Clone(a.Permissions)
		out[i] = a
	}
	return out
}

// ActionOf finds a proposal action's declaration (a copy).
func ActionOf(action string) (ActionSpec, bool) {
	for _, a := range actions {
		if a.Action == action {
			a.Permissions = slices.Clone(a.Permissions)
			return a, true
		}
	}
	return ActionSpec{}, false
}

// ActionByTool finds the action a controlled tool executes (a copy).
func ActionByTool(tool string) (ActionSpec, bool) {
	for _, a := range actions {
		if a.Tool == tool {
			a.Permissions = slices.Clone(a.Permissions)
			return a, true
		}
	}
	return ActionSpec{}, false
}

// BulkField is a field a bulk update may change and the permission changing
// it needs (§30: bulk actions cannot bypass field-level permissions).
type BulkField struct {
	Field, Permission string
}

// BulkFields lists them, sorted by field.
func BulkFields() []BulkField {
	out := make([]BulkField, 0, len(bulkFields))
	for f, p := range bulkFields {
		out = append(out, BulkField{Field: f, Permission: p})
	}
	slices.SortFunc(out, func(a, b BulkField) int { return cmp.Compare(a.Field, b.Field) })
	return out
}
