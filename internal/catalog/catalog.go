package catalog

import (
	"cmp"
	"slices"
	"sync"
)

// constructors is THE ordered list of tools; All() builds from it.
var constructors = []func() Tool{
	// §11 public reads (public.go).
	searchMarketplace,
	getPublicSale,
	getPublicItem,
	resolvePublicQR,

	// §12 scoped reads (reads.go); trove_demand_signals is the §12.1
	// compatibility name of trove_get_demand_signals.
	listSales,
	getSale,
	listItems,
	getItem,
	listCandidates,
	getCandidate,
	demandSignals,
	getDemandSignals,
	listImportRuns,
	getImportRun,
	listStatusEvents,
	listLabelBatches,
	getDispositionQueue,

	// §13 candidate and draft writes (candidates.go, csv.go, drafts.go).
	createCandidate,
	attachCandidatePhoto,
	runManualImport,
	mapCSVColumns,
	previewCSVImport,
	applyCSVImport,
	draftListingCopy,
	stageExport,
	createStatusUpdateCandidate,
	createMediaAttachmentCandidate,

	// §14 proposals (proposals.go), and the read of one.
	proposeCandidatePromotion,
	proposeItemPublication,
	proposeSalePublication,
	proposeBulkItemUpdate,
	proposeStatusTransition,
	proposeBuyerNotification,
	proposeIdentityBinding,
	proposeDispositionAction,
	proposeExportDelivery,
	getProposal,

	// §16 controlled actions (actions.go).
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
}

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
