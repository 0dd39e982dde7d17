package catalog

import (
	"cmp"
	"slices"
	"sync"
)

// constructors is THE ordered list of tools; All() builds from it.
var constructors = []func() Tool{
	listSales,
	listItems,
	listCandidates,
	demandSignals,
	createCandidate,
}

var (
	allOnce sync.Once
	all     []Tool
	byName  map[string]*Tool
)

func build() {
	all = make([]Tool, 0, len(constructors))
	for _, c := range constructors {
		all = append(all, c())
	}
	slices.SortFunc(all, func(a, b Tool) int { return cmp.Compare(a.Name, b.Name) })
	byName = make(map[string]*Tool, len(all))
	for i := range all {
		byName[all[i].Name] = &all[i]
	}
}

// All returns every tool, in deterministic (name) order. The slice and its
// tools are shared and must not be modified.
func All() []Tool {
	allOnce.Do(build)
	return all
}

// Lookup finds a tool by name.
func Lookup(name string) (*Tool, bool) {
	allOnce.Do(build)
	t, ok := byName[name]
	return t, ok
}
