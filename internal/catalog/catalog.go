package catalog

// The input schemas tools/list sends, generated from the reflected ones.
//go:generate go test -run TestCatalog_GeneratedInputSchemas -update .

import (
	"cmp"
	"slices"
	"sync"
)

// constructors is every tool; All() builds from it. Each file declares the
// list of its own tier beside the definitions, so adding a tool touches
// only the file that defines it.
var constructors = slices.Concat(publicReads, scopedReads, candidateWrites, proposals, controlledActions)

var (
	allOnce sync.Once
	all     []Tool
	byName  map[string]*Tool
)

func build() {
	lookupTool = func(name string) (*Tool, bool) { t, ok := byName[name]; return t, ok }
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
