package live

import (
	"maps"
	"slices"
	"testing"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// Each action of the registry has exactly one entry in the live rules (the
// state it reads, domain's builder over it), and they name no action the
// registry does not declare: the live database runs every action, so an
// action added to the registry without its live rules fails here.
func TestRegistry_LiveProposesEveryAction(t *testing.T) {
	var actions []string
	for _, a := range domain.Actions() {
		actions = append(actions, a.Action)
	}
	slices.Sort(actions)
	if keys := slices.Sorted(maps.Keys(liveActions)); !slices.Equal(keys, actions) {
		t.Errorf("liveActions has %v, the registry declares %v", keys, actions)
	}
	for action, r := range liveActions {
		if r.build == nil {
			t.Errorf("%s has no builder", action)
		}
	}
}
