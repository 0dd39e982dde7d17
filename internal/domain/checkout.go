package domain

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// Sale day (§12.2, §40.10): checkout works items of its assigned sales
// through status changes only — a hold, sold awaiting pickup, picked up —
// never a payment or a price. A checkout principal (item.update_status
// without proposal.create) proposes only the transitions checkoutActions
// lists, and a checkout scan (record_checkout_scan) records one of them
// with the scan that caused it.

// checkoutActions is what a principal without proposal.create may propose
// (to_status of trove_propose_status_transition) from each status: hold an
// available piece, record it sold awaiting pickup, or sold (picked up).
// Releasing a hold, withdrawing or archiving stays with the seller's team.
var checkoutActions = map[string][]string{
	ItemPublished:     {ItemOnHold, ItemPendingPickup, ItemSold},
	ItemOnHold:        {ItemPendingPickup, ItemSold},
	ItemPendingPickup: {ItemSold},
}

// CheckoutActionsFor returns the to_status values checkout may propose
// from status (empty when none).
func CheckoutActionsFor(status string) []string {
	return append([]string{}, checkoutActions[status]...)
}

// CheckoutTransition reports whether checkout may propose from → to.
func CheckoutTransition(from, to string) bool { return slices.Contains(checkoutActions[from], to) }

// MaxCheckoutNoteLen bounds the note of a checkout scan, in characters.
const MaxCheckoutNoteLen = 280

// Checkout scans: what the checkout line records when it scans a tag.
const (
	ScanHold              = "hold"
	ScanSoldPendingPickup = "sold_pending_pickup"
	ScanPickedUp          = "picked_up"
)

// checkoutScanStatus is the item status each scan records (the lifecycle,
// lifecycle.go, decides whether the item may move there).
var checkoutScanStatus = map[string]string{
	ScanHold:              ItemOnHold,
	ScanSoldPendingPickup: ItemPendingPickup,
	ScanPickedUp:          ItemSold,
}

// CheckoutScans lists every scan, in the order of a sale day.
func CheckoutScans() []string { return []string{ScanHold, ScanSoldPendingPickup, ScanPickedUp} }

// CheckoutScanStatus is the status a scan records (false: no such scan).
func CheckoutScanStatus(scan string) (string, bool) {
	s, ok := checkoutScanStatus[scan]
	return s, ok
}

// PolicyCheckoutScans are the scans an automation policy may ever
// authorise: those whose status does not complete a sale (§18.2), so
// only a hold; sold awaiting pickup and picked up stay with a person.
func PolicyCheckoutScans() []string {
	var out []string
	for _, s := range CheckoutScans() {
		if !slices.Contains(SaleCompletionStatuses(), checkoutScanStatus[s]) {
			out = append(out, s)
		}
	}
	return out
}

// ProposalPermissions are the permissions one of which a principal's role
// must grant to propose action: proposal.create, except on sale day — a
// status change may also be proposed with item.update_status (checkout,
// limited to its transitions by BuildStatusTransition) and a checkout scan
// needs checkout.scan. The proposal tools' permissions and live's
// proposal_perms (generated) are these.
func ProposalPermissions(action string) []string {
	switch action {
	case ActionStatusTransition, ActionArchiveItem:
		return []string{PermProposalCreate, PermItemUpdateStatus}
	case ActionCheckoutScan:
		return []string{PermCheckoutScan}
	}
	return []string{PermProposalCreate}
}

// CheckoutScanTool is the controlled tool that records a checkout scan.
const CheckoutScanTool = "trove_record_checkout_scan"

// CheckoutPolicyRefusal is the bound on a policy naming the checkout-scan
// tool, checked when the policy is created (the field and why; "" when it
// holds): it lists the scans it authorises in conditions.checkout_scans,
// each one a policy may ever authorise (a hold); a policy that does not
// name the tool lists none. Every policy is also scoped to named sales and
// has a daily maximum (approval.ValidatePolicy), so a hold policy is
// bounded by sale, by day and to one kind of scan.
func CheckoutPolicyRefusal(pol Policy) (field, reason string) {
	names := slices.Contains(pol.AllowedTools, CheckoutScanTool)
	scans := pol.Conditions.CheckoutScans
	switch {
	case !names && len(scans) > 0:
		return "conditions.checkout_scans", "only a policy naming " + CheckoutScanTool + " lists checkout scans"
	case names && len(scans) == 0:
		return "conditions.checkout_scans", "a policy naming " + CheckoutScanTool + " lists the scans it authorises: " + strings.Join(PolicyCheckoutScans(), ", ")
	}
	for _, s := range scans {
		if !slices.Contains(PolicyCheckoutScans(), s) {
			return "conditions.checkout_scans", s + " is never authorised by a policy: only " + strings.Join(PolicyCheckoutScans(), ", ")
		}
	}
	return "", ""
}

// statusProposalAuthority refuses a status proposal a principal without
// proposal.create may not make: it needs item.update_status, proposes a
// checkout transition from the item's current status, and reviews no
// imported status.
func statusProposalAuthority(p Principal, it Item, to, statusCandidate string) error {
	if p.Has(PermProposalCreate) {
		return nil
	}
	switch {
	case !p.Has(PermItemUpdateStatus):
		return Because(ErrPermissionDenied, "proposing a status change needs %s or %s", PermProposalCreate, PermItemUpdateStatus)
	case statusCandidate != "":
		return Because(ErrPermissionDenied, "reviewing an imported status needs %s", PermProposalCreate)
	case !CheckoutTransition(it.Status, to):
		return Because(ErrPermissionDenied, "checkout may propose only %v from %s, not %s", CheckoutActionsFor(it.Status), it.Status, to)
	}
	return nil
}

// BuildCheckoutScan builds a record_checkout_scan proposal: the scan, and
// the status it moves the item to (CheckoutScanStatus), from the item's
// current status as the lifecycle allows. qr_code, when the draft names
// it, must be the tag the item carries (the scan read it). A note goes to
// the seller with the proposal. Never a payment or a price.
func BuildCheckoutScan(p Principal, d ProposalDraft, prop *Proposal, items []Item) error {
	prop.TargetKind = "item"
	scan, _ := d.Fields["scan"].(string)
	code, _ := d.Fields["qr_code"].(string)
	note, _ := d.Fields["note"].(string)
	if !p.Has(PermCheckoutScan) {
		return Because(ErrPermissionDenied, "recording a checkout scan needs %s", PermCheckoutScan)
	}
	if err := BindItemTargets(p, prop, items); err != nil {
		return err
	}
	it := items[0]
	to, ok := CheckoutScanStatus(scan)
	if !ok {
		return Invalid("scan", strings.Join(CheckoutScans(), ", "))
	}
	if utf8.RuneCountInString(note) > MaxCheckoutNoteLen {
		return Invalid("note", fmt.Sprintf("at most %d characters", MaxCheckoutNoteLen))
	}
	if code != "" && code != it.QRCode {
		return Because(ErrTransitionInvalid, "item %s does not carry tag %s", it.ID, code)
	}
	if !CanTransition(it.Status, to) {
		return Because(ErrTransitionInvalid, "item %s is %s: a %s scan cannot move it to %s", it.ID, it.Status, scan, to)
	}
	prop.Changes = append(prop.Changes,
		FieldChange{TargetID: it.ID, Field: "checkout_scan", From: nil, To: scan},
		FieldChange{TargetID: it.ID, Field: "status", From: it.Status, To: to})
	if note != "" {
		prop.Changes = append(prop.Changes, FieldChange{TargetID: it.ID, Field: "note", From: nil, To: note})
	}
	prop.Impact.ItemsChanged = 1
	if it.Status == ItemPublished {
		prop.Impact.PublicRecordsChanged = 1
	}
	return nil
}
