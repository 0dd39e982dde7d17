package catalog

import (
	"context"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// controlledActions are the §16 controlled actions.
var controlledActions = []func() Tool{
	executeCandidatePromotion,
	publishItem,
	publishSale,
	updateItemStatus,
	applyBulkItemUpdate,
	notifyMatchedBuyers,
	bindItemIdentity,
	releaseItemIdentity,
	applyDispositionAction,
	deliverExport,
	archiveItem,
	recordCheckoutScan,
}

// Controlled actions (spec §16) execute an approved proposal through the
// existing P5/P6 domain function. Their input is the proposal id and an
// idempotency key, nothing else: no argument can carry authority (no
// "approved" flag, no grant or policy id). The gate finds the grant or the
// policy decision, recomputes the proposal hash and checks target versions.

// ExecuteProposalInput is the input of every controlled action.
type ExecuteProposalInput struct {
	WriteCommon
	ProposalID string `json:"proposal_id" jsonschema:"the approved proposal to execute" ts:"id=proposal"`
}

// TargetOutcome is what execution did to one target.
type TargetOutcome = domain.TargetOutcome

// ExecutionApproval is the authority an execution used.
type ExecutionApproval = domain.ExecutionApproval

// ExecutionResult is the data of every controlled action.
type ExecutionResult = domain.ExecutionResult

// actionDefinition fills what every controlled action shares, and takes
// its approval, permissions and domain function from the action registry
// (domain.ActionByTool), which declares each controlled action once. A
// controlled tool the registry does not declare is a programming error:
// building the catalog panics, and TestRegistry_CatalogControlledToolsAreTheRegistrys
// fails, before any call is served.
func actionDefinition(name, title, description string, risk Risk, impact domain.EventImpact) Definition {
	a, ok := domain.ActionByTool(name)
	if !ok {
		panic("catalog: controlled tool " + name + " is not declared in the action registry")
	}
	return Definition{
		Name: name, Version: "1.0.0", Title: title, Description: description,
		Tier: TierControlledAction, Risk: risk, Permissions: a.Permissions,
		Modes: bothModes, Idempotent: true, Persists: true, Approval: Approval(a.Requirement), Status: StatusActive,
		Domain: DomainMapping{Service: a.Service, Operation: a.Operation}, Impact: impact,
	}
}

// actionFooter ends every controlled action's description. What every
// controlled action shares besides (the codes it fails with, simulation in
// mock mode, retries) is said once, in the server's instructions.
const actionFooter = " Input is only proposal_id: approval is never an argument."

// action gives a controlled action its handler: ONE Backend call running the
// proposal's domain function under the authority the gate's approval step
// found.
func action(d Definition) Tool {
	return define(d, func(ctx context.Context, env Env, in ExecuteProposalInput) (ExecutionResult, Effects, error) {
		res, out, err := env.Backend.ExecuteProposal(ctx, env.Principal, env.Write, in.ProposalID, env.Authorization)
		if err != nil {
			return ExecutionResult{}, Effects{}, err
		}
		return res, Effects{Related: out.Related, Outcome: out}, nil
	})
}

func executeCandidatePromotion() Tool {
	return action(actionDefinition("trove_execute_candidate_promotion", "Promote a candidate",
		"Execute an approved candidate-promotion proposal: promote_inventory_candidate creates one canonical draft item with provenance. Requires a proposal from trove_propose_candidate_promotion approved by the seller or a seller policy. Does not publish or price the item."+actionFooter,
		RiskControlledWrite, domain.EventImpact{Type: "canonical_change", Material: true, CanonicalStateChanged: true}))
}

func publishItem() Tool {
	return action(actionDefinition("trove_publish_item", "Publish an item",
		"Execute an approved item-publication proposal: publish_item makes the item public on its sale page with its public fields and approved photos only. Requires a proposal from trove_propose_item_publication explicitly approved by the seller."+actionFooter,
		RiskHighImpact, domain.EventImpact{Type: "publication", Material: true, CanonicalStateChanged: true, PublicStateChanged: true}))
}

func publishSale() Tool {
	return action(actionDefinition("trove_publish_sale", "Publish a sale",
		"Execute an approved sale-publication proposal: publish_sale makes the sale visible on the marketplace under its address-reveal policy. Requires a proposal from trove_propose_sale_publication explicitly approved by the seller. Notifies nobody."+actionFooter,
		RiskHighImpact, domain.EventImpact{Type: "publication", Material: true, CanonicalStateChanged: true, PublicStateChanged: true}))
}

func updateItemStatus() Tool {
	return action(actionDefinition("trove_update_item_status", "Update an item's status",
		"Execute an approved status-transition proposal through append_inventory_status_event, which rejects invalid transitions. Requires a proposal from trove_propose_status_transition approved by the seller or a seller policy. Records the lifecycle only, never payment."+actionFooter,
		RiskControlledWrite, domain.EventImpact{Type: "canonical_change", Material: true, CanonicalStateChanged: true, PublicStateChanged: true}))
}

func applyBulkItemUpdate() Tool {
	return action(actionDefinition("trove_apply_bulk_item_update", "Apply a bulk item update",
		"Execute an approved bulk-update proposal: exactly its field changes on exactly its frozen items, reporting per-item version conflicts. Requires a proposal from trove_propose_bulk_item_update approved by the seller or a seller policy. Never changes status."+actionFooter,
		RiskControlledWrite, domain.EventImpact{Type: "canonical_change", Material: true, CanonicalStateChanged: true, PublicStateChanged: true}))
}

func notifyMatchedBuyers() Tool {
	return action(actionDefinition("trove_notify_matched_buyers", "Notify matched buyers",
		"Execute an approved buyer-notification proposal: the notification service sends the approved message to the matched buyers, within rate limits and opt-outs (live mode queues it). Requires a proposal from trove_propose_buyer_notification explicitly approved by the seller. Never returns buyer identities."+actionFooter,
		RiskHighImpact, domain.EventImpact{Type: "notification", Material: true}))
}

func bindItemIdentity() Tool {
	return action(actionDefinition("trove_bind_item_identity", "Bind a QR tag",
		"Execute an approved identity-binding proposal: bind_item_identity attaches the printed QR tag to the item. Requires a proposal from trove_propose_identity_binding (action bind) approved by the seller or a seller policy."+actionFooter,
		RiskControlledWrite, domain.EventImpact{Type: "canonical_change", Material: true, CanonicalStateChanged: true}))
}

func releaseItemIdentity() Tool {
	return action(actionDefinition("trove_release_item_identity", "Release a QR tag",
		"Execute an approved identity-release proposal: release_item_identity detaches the QR tag from the item, even a sold one. Requires a proposal from trove_propose_identity_binding (action release) explicitly approved by the seller."+actionFooter,
		RiskHighImpact, domain.EventImpact{Type: "canonical_change", Material: true, CanonicalStateChanged: true}))
}

func applyDispositionAction() Tool {
	return action(actionDefinition("trove_apply_disposition_action", "Apply a disposition",
		"Execute an approved disposition proposal: donate, consign, haul away, return to family or accept the buy-out for exactly its items; this cannot be undone. Requires a proposal from trove_propose_disposition_action explicitly approved by the seller."+actionFooter,
		RiskHighImpact, domain.EventImpact{Type: "canonical_change", Material: true, CanonicalStateChanged: true}))
}

func deliverExport() Tool {
	return action(actionDefinition("trove_deliver_export", "Deliver an export",
		"Execute an approved export-delivery proposal: hands the staged snapshot to the channel's export function, which may list items outside TroveSnap (live mode queues it). Requires a proposal from trove_propose_export_delivery explicitly approved by the seller. Never delivers items changed since staging."+actionFooter,
		RiskHighImpact, domain.EventImpact{Type: "external_delivery", Material: true, PublicStateChanged: true}))
}

func archiveItem() Tool {
	return action(actionDefinition("trove_archive_item", "Archive an item",
		"Execute an approved archive proposal: the item moves to archived, out of public view; it and its history are kept. Requires a proposal from trove_propose_status_transition (to_status archived) explicitly approved by the seller."+actionFooter,
		RiskControlledWrite, domain.EventImpact{Type: "canonical_change", Material: true, CanonicalStateChanged: true, PublicStateChanged: true}))
}

func recordCheckoutScan() Tool {
	return action(actionDefinition(domain.CheckoutScanTool, "Record a checkout scan",
		"Execute an approved checkout-scan proposal: record_checkout_scan moves the item (hold → on_hold, sold_pending_pickup → pending_pickup, picked_up → sold) and records the scan. Requires a proposal from trove_propose_checkout_scan approved by the seller, or for a hold a seller policy. Never records a payment."+actionFooter,
		RiskControlledWrite, domain.EventImpact{Type: "canonical_change", Material: true, CanonicalStateChanged: true, PublicStateChanged: true}))
}
