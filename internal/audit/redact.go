package audit

import (
	"encoding/json"
	"regexp"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// summaryFields is the allow-list of argument fields an event may repeat in
// payload.redacted_summary (§35), each with the id prefix its value must
// have. Only well-formed ids pass: titles, notes, CSV text, messages and
// anything else a caller sends are represented by the input hash alone, so
// the audit log can never hold buyer data, seller notes or a pasted secret.
var summaryFields = map[string]string{
	"sale_id": domain.PrefixSale, "item_id": domain.PrefixItem, "candidate_id": domain.PrefixCandidate,
	"status_candidate_id": domain.PrefixCandidate, "proposal_id": domain.PrefixProposal,
	"import_run_id": domain.PrefixRun, "run_id": domain.PrefixRun, "source_record_id": domain.PrefixRecord,
}

// SummaryFields returns the allow-listed argument names (for documentation
// and tests).
func SummaryFields() []string {
	out := make([]string, 0, len(summaryFields))
	for k := range summaryFields {
		out = append(out, k)
	}
	return out
}

// RedactedSummary keeps the allow-listed id fields of a call's arguments
// whose values are well-formed ids of the right kind; everything else is
// dropped. It never fails: unreadable arguments give an empty summary.
func RedactedSummary(args map[string]json.RawMessage) map[string]string {
	out := map[string]string{}
	for field, prefix := range summaryFields {
		raw, ok := args[field]
		if !ok {
			continue
		}
		var v string
		if json.Unmarshal(raw, &v) == nil && domain.ValidID(prefix, v) {
			out[field] = v
		}
	}
	return out
}

// safeValue matches what telemetry attributes may carry: ids, tool and code
// names, versions, modes, hashes — short tokens of [A-Za-z0-9._:-] that
// cannot hold a sentence, a title or an address.
var safeValue = domain.LazyRegexp(`^[A-Za-z0-9._:/-]{0,96}$`)

// SafeAttributeValue reports whether s may be put in a span or metric
// attribute. The gate's telemetry drops any value that fails it (defence in
// depth: it only ever sets ids, names and codes).
func SafeAttributeValue(s string) bool {
	return safeValue().MatchString(s) && !LooksLikeSecret(s)
}

// secretPatterns are the shapes of credential material trovesnap handles or
// might be handed: its own client tokens, bearer/JWT tokens, Supabase keys,
// and generic key=value secrets.
var secretPatterns = []func() *regexp.Regexp{
	domain.LazyRegexp(`tsk_[A-Za-z0-9_-]{8,}`),
	domain.LazyRegexp(`eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`),
	domain.LazyRegexp(`(?i)bearer\s+[A-Za-z0-9._-]{8,}`),
	domain.LazyRegexp(`sb_(secret|publishable)_[A-Za-z0-9_-]{8,}`),
	domain.LazyRegexp(`(?i)(service_role|password|passwd|secret|api_key|refresh_token|access_token)["']?\s*[:=]\s*["']?[^\s"',}]{4,}`),
}

// LooksLikeSecret reports whether s contains something shaped like a
// credential.
func LooksLikeSecret(s string) bool {
	return len(FindSecrets([]byte(s))) > 0
}

// FindSecrets returns the credential-shaped substrings of b. Tests run it
// over every stored event and every span attribute.
func FindSecrets(b []byte) []string {
	var out []string
	for _, re := range secretPatterns {
		for _, m := range re().FindAll(b, -1) {
			out = append(out, string(m))
		}
	}
	return out
}
