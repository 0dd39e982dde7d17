package store

import (
	"maps"
	"slices"
	"testing"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// Each action of the registry has exactly one builder and one domain
// function in the embedded store, and the store's tables name no action
// the registry does not declare: an action added to the registry without
// its simulation fails here, not at a seller's call.
func TestRegistry_StoreBuildsAndRunsEveryAction(t *testing.T) {
	var actions []string
	for _, a := range domain.Actions() {
		actions = append(actions, a.Action)
	}
	slices.Sort(actions)
	for name, keys := range map[string][]string{
		"builders":        slices.Sorted(maps.Keys(builders)),
		"domainFunctions": slices.Sorted(maps.Keys(domainFunctions)),
	} {
		if !slices.Equal(keys, actions) {
			t.Errorf("%s has %v, the registry declares %v", name, keys, actions)
		}
	}
}
