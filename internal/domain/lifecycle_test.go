package domain

import (
	"slices"
	"testing"
)

// Every unsold status reaches the end of a disposition in at most two
// lifecycle steps, each one allowed; sold, pending-pickup and archived
// items have no path (they get no disposition).
func TestDispositionSteps(t *testing.T) {
	for _, from := range ItemStatuses() {
		for _, to := range []string{ItemArchived, ItemWithdrawn} {
			steps := DispositionSteps(from, to)
			if from == ItemSold && to == ItemArchived {
				if !slices.Equal(steps, []string{ItemArchived}) {
					t.Errorf("%s → %s: %v", from, to, steps)
				}
				continue
			}
			unsold := from != ItemSold && from != ItemPendingPickup && from != ItemArchived && from != to
			if (steps != nil) != unsold {
				t.Errorf("%s → %s: steps %v", from, to, steps)
				continue
			}
			cur := from
			for _, s := range steps {
				if !CanTransition(cur, s) {
					t.Errorf("%s → %s: step %s → %s is not a lifecycle transition", from, to, cur, s)
				}
				cur = s
			}
			if steps != nil && cur != to {
				t.Errorf("%s → %s: ends at %s", from, to, cur)
			}
		}
	}
	if got := DispositionSteps(ItemPublished, ItemArchived); !slices.Equal(got, []string{ItemWithdrawn, ItemArchived}) {
		t.Errorf("published → archived = %v, want through withdrawn", got)
	}
}
