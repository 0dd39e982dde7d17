package domain

// The lists below are rules the SQL of both modes spells out (a CHECK in an
// applied migration, a literal in a live RPC) and Go declared only as
// loose constants. Each is declared here once; store/rules_checks_test.go
// and internal/sqlgen's literal tests hold every SQL copy to it.

// Sale visibilities.
const (
	VisibilityPrivate = "private"
	VisibilityPublic  = "public"
)

// SaleVisibilities lists every estate sale visibility.
func SaleVisibilities() []string { return []string{VisibilityPrivate, VisibilityPublic} }

// AddressPolicies lists every address reveal policy of a sale.
func AddressPolicies() []string { return []string{AddressHiddenUntil, AddressAlways, AddressNever} }

// ItemChangeKinds lists the candidate kinds that propose a change to an
// existing item (candidate_item_changes.kind), never a new item.
func ItemChangeKinds() []string { return []string{CandidateStatusUpdate, CandidateAttachMedia} }

// ImportKinds lists the kinds of an import run.
func ImportKinds() []string { return []string{ImportManual, ImportCSV} }

// ImportRowKinds lists what one row of an import may be: a new item or a
// reported status of an existing one.
func ImportRowKinds() []string { return []string{CandidateNewItem, CandidateStatusUpdate} }

// Export draft statuses beyond ExportStaged.
const (
	ExportDeliveryProposed = "delivery_proposed"
	ExportDelivered        = "delivered"
	ExportCancelled        = "cancelled"
)

// ExportStatuses lists every export draft status.
func ExportStatuses() []string {
	return []string{ExportStaged, ExportDeliveryProposed, ExportDelivered, ExportCancelled}
}

// ExportDeliverableStatuses lists the statuses from which an export may
// still be proposed for delivery and delivered.
func ExportDeliverableStatuses() []string { return []string{ExportStaged, ExportDeliveryProposed} }

// OutboundKinds lists the kinds of an outbound request (live
// outbound_requests, mock simulated_deliveries): the actions whose effect
// leaves the machine.
func OutboundKinds() []string { return []string{ActionBuyerNotify, ActionExportDelivery} }

// Outbound request states of live mode: the server only queues; the
// delivery worker (docs/live-outbound.md) marks delivered or failed.
const (
	OutboundQueued    = "queued"
	OutboundDelivered = "delivered"
	OutboundFailed    = "failed"
)

// OutboundStatuses lists every state of a live outbound request.
func OutboundStatuses() []string { return []string{OutboundQueued, OutboundDelivered, OutboundFailed} }

// LimitClasses lists every rate-limit class a call is counted in.
func LimitClasses() []string {
	return []string{LimitReads, LimitCandidateWrites, LimitProposals, LimitControlledActions, LimitRejected}
}

// ImportedSourcePrefix marks the source of a status change an approved
// status import caused: "imported:" + the status candidate's id. The live
// RPC checks the whole reference as "^imported:" + IDPattern(candidate).
const ImportedSourcePrefix = "imported:"

// LockedItemStatuses lists the statuses that lock an item against a field
// change (a bulk update, a single field update) and a disposition: it is
// sold, on its way to the buyer, or out of inventory.
func LockedItemStatuses() []string { return []string{ItemSold, ItemArchived, ItemPendingPickup} }

// OpenReviewStatuses lists the review statuses of a candidate still open:
// it may be promoted, and it counts against the open-candidate quota.
func OpenReviewStatuses() []string { return []string{ReviewNeedsReview, ReviewApproved} }

// OpenProposalStatuses lists the proposal statuses still waiting on a
// decision or an execution: a proposal in one of them lapses to expired
// once its expiry has passed.
func OpenProposalStatuses() []string { return []string{ProposalPending, ProposalApproved} }
