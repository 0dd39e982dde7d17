package domain

import "slices"

// itemTransitions is the P6 item lifecycle: which status may follow which.
// Publication (→ published) happens only through publish_item; sold and
// pending_pickup never settle a payment or set a price.
var itemTransitions = map[string][]string{
	ItemDraft:         {ItemReady, ItemWithdrawn, ItemArchived},
	ItemReady:         {ItemDraft, ItemPublished, ItemWithdrawn, ItemArchived},
	ItemPublished:     {ItemReady, ItemOnHold, ItemPendingPickup, ItemSold, ItemWithdrawn},
	ItemOnHold:        {ItemPublished, ItemPendingPickup, ItemSold, ItemWithdrawn},
	ItemPendingPickup: {ItemSold},
	ItemSold:          {ItemArchived},
	ItemWithdrawn:     {ItemReady, ItemArchived},
	ItemArchived:      {},
}

// CanTransition reports whether an item may move from one status to another.
func CanTransition(from, to string) bool { return slices.Contains(itemTransitions[from], to) }

// DispositionSteps is the path a disposition moves an unsold item along to
// its end status (archived; withdrawn when consigned): straight there when
// the lifecycle allows it, else through withdrawn — a published or on-hold
// item is withdrawn from sale first, then archived. Nil: no path.
func DispositionSteps(from, to string) []string {
	switch {
	case CanTransition(from, to):
		return []string{to}
	case to != ItemWithdrawn && CanTransition(from, ItemWithdrawn) && CanTransition(ItemWithdrawn, to):
		return []string{ItemWithdrawn, to}
	}
	return nil
}

// ItemStatuses lists every item status.
func ItemStatuses() []string {
	return []string{ItemDraft, ItemReady, ItemPublished, ItemOnHold, ItemPendingPickup, ItemSold, ItemWithdrawn, ItemArchived}
}
