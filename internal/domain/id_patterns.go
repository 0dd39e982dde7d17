package domain

import "regexp"

// IDSuffixPattern is the one rule for what follows "<prefix>_" in an id: a
// short alphanumeric suffix, as RandomIDs and SeqIDs mint. ValidID, the
// tool input schemas (IDPattern) and the live RPCs' id checks are this rule;
// internal/sqlgen's tests hold the SQL copies to it.
const IDSuffixPattern = `[A-Za-z0-9]{1,40}`

var idSuffix = LazyRegexp(`^` + IDSuffixPattern + `$`)

// IDPattern is ValidID as an anchored regular expression, for tool input
// schemas and for the id checks SQL spells out.
func IDPattern(prefix string) string {
	return "^" + regexp.QuoteMeta(prefix) + "_" + IDSuffixPattern + "$"
}

// IDPrefixes lists every id prefix the domain declares, so a pattern SQL
// spells out for an id can be traced to the prefix it checks.
func IDPrefixes() []string {
	return []string{PrefixTenant, PrefixUser, PrefixMembership, PrefixSale, PrefixItem, PrefixPhoto, PrefixCandidate,
		PrefixRun, PrefixRecord, PrefixSource, PrefixConn, PrefixClient, PrefixProposal, PrefixApproval, PrefixPolicy,
		PrefixEvent, PrefixCorr, PrefixRequest, PrefixAsset, PrefixMedia, PrefixDraft, PrefixExport,
		PrefixStatusEvent, PrefixPriceChange, PrefixLabelBatch}
}
