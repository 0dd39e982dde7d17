package domain

import (
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

// idPrefixes are the id types inputs carry (the README: ids are
// `<type>_<alphanumeric>`).
var idPrefixes = []string{
	PrefixTenant, PrefixUser, PrefixMembership, PrefixSale, PrefixItem, PrefixPhoto, PrefixCandidate, PrefixRun,
	PrefixRecord, PrefixSource, PrefixConn, PrefixClient, PrefixProposal, PrefixApproval, PrefixPolicy, PrefixEvent,
	PrefixCorr, PrefixRequest, PrefixAsset, PrefixMedia, PrefixDraft, PrefixExport, PrefixStatusEvent,
	PrefixPriceChange, PrefixLabelBatch,
}

// The references, written from the README's rules rather than from the
// code: an id suffix is 1 to 40 ASCII letters or digits; a token is "tsk_"
// and 52 characters of the lower-case base32 alphabet (256 bits).
var (
	refIDSuffix = regexp.MustCompile(`\A[0-9A-Za-z]{1,40}\z`)
	typeName    = regexp.MustCompile(`\A[a-z][a-z_]{0,30}\z`)
	refToken    = regexp.MustCompile(`\Atsk_[abcdefghijklmnopqrstuvwxyz234567]{52}\z`)
)

var idPatterns sync.Map // prefix → compiled IDPattern (`{1,40}` is slow to compile)

func idPatternRE(prefix string) (*regexp.Regexp, error) {
	if re, ok := idPatterns.Load(prefix); ok {
		return re.(*regexp.Regexp), nil
	}
	re, err := regexp.Compile(IDPattern(prefix))
	if err == nil && slices.Contains(idPrefixes, prefix) { // fuzzed prefixes are not kept
		idPatterns.Store(prefix, re)
	}
	return re, err
}

// FuzzIDs is a differential check of the id and credential shapes: for any
// string (and any of the id types, or a fuzzed one), ValidID and the
// schema pattern IDPattern agree with the reference, and WellFormedToken
// agrees with the token reference. None of them panics.
func FuzzIDs(f *testing.F) {
	for i, p := range idPrefixes {
		f.Add(uint8(i), "", p+"_221")
	}
	f.Add(uint8(3), "", "sale_")
	f.Add(uint8(3), "", "sale_221\n")
	f.Add(uint8(3), "", "sale_22-1")
	f.Add(uint8(3), "", "SALE_221")
	f.Add(uint8(3), "", "sale_"+strings.Repeat("a", 40))
	f.Add(uint8(3), "", "sale_"+strings.Repeat("a", 41))
	f.Add(uint8(3), "", "sale_２２１")
	f.Add(uint8(11), "", "mcp_client_s0001")
	f.Add(uint8(255), "we.ird(+", "we.ird(+_1")
	f.Add(uint8(255), "sale_item", "sale_item_1")
	f.Add(uint8(255), "", "_1")
	f.Add(uint8(0), "", NewClientToken())
	f.Add(uint8(0), "", "tsk_"+strings.Repeat("a", 51))
	f.Add(uint8(0), "", "tsk_"+strings.Repeat("A", 52))
	f.Add(uint8(0), "", "tsk_"+strings.Repeat("a", 52)+"\n")
	f.Add(uint8(0), "", "tsk_"+strings.Repeat("1", 52))
	f.Fuzz(func(t *testing.T, which uint8, custom, id string) {
		// A fuzzed type stands for a type name a schema tag could hold
		// (prefixes are constants of the code, never input).
		prefix := custom
		if int(which) < len(idPrefixes) || !typeName.MatchString(custom) {
			prefix = idPrefixes[int(which)%len(idPrefixes)]
		}
		rest, ok := strings.CutPrefix(id, prefix+"_")
		want := ok && refIDSuffix.MatchString(rest)
		if got := ValidID(prefix, id); got != want {
			t.Fatalf("ValidID(%q, %q) = %v, reference %v", prefix, id, got, want)
		}
		re, err := idPatternRE(prefix)
		if err != nil {
			t.Fatalf("IDPattern(%q) does not compile: %v", prefix, err)
		}
		if got := re.MatchString(id); got != want {
			t.Fatalf("IDPattern(%q) matches %q: %v, reference %v", prefix, id, got, want)
		}
		if got, want := WellFormedToken(id), refToken.MatchString(id); got != want {
			t.Fatalf("WellFormedToken(%q) = %v, reference %v", id, got, want)
		}
	})
}
