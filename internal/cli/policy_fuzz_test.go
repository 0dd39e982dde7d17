package cli

import (
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/triunalabs/trovesnap/internal/approval"
	"github.com/triunalabs/trovesnap/internal/domain"
)

const fuzzPolicyYAML = `name: Bind printed tags
tenant_id: tenant_123
created_by: user_88
allowed_tools: [trove_bind_item_identity]
scope: {estate_sale_ids: [sale_221]}
conditions: {maximum_items_per_run: 5, permitted_fields: [qr_code], require_no_conflicts: true}
limits: {maximum_daily_actions: 100, maximum_cost_usd_per_day: 0}
`

const fuzzPolicyJSON = `{"name":"Bind printed tags","tenant_id":"tenant_123","created_by":"user_88",
"allowed_tools":["trove_bind_item_identity","trove_update_item_status"],"scope":{"estate_sale_ids":["sale_221","sale_222"]},
"conditions":{"maximum_items_per_run":20,"permitted_fields":["qr_code"],"require_no_conflicts":false},
"limits":{"maximum_daily_actions":1,"maximum_cost_usd_per_day":0}}`

// billionLaughs is the classic YAML bomb: nine levels of ten aliases.
func billionLaughs() string {
	var b strings.Builder
	b.WriteString("a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n")
	for c := 'b'; c <= 'i'; c++ {
		p := string(c - 1)
		b.WriteString(string(c) + ": &" + string(c) + " [" + strings.TrimSuffix(strings.Repeat("*"+p+",", 10), ",") + "]\n")
	}
	return b.String()
}

// wideBomb stays under the YAML library's alias-ratio guard: one large
// scalar, aliased n times (n × size bytes once expanded).
func wideBomb(size, n int) string {
	return "name: &s \"" + strings.Repeat("A", size) + "\"\nallowed_tools: [" + strings.TrimSuffix(strings.Repeat("*s,", n), ",") + "]\n"
}

// refSaleID is the README's id rule for a sale, written independently of
// domain.ValidID.
var refSaleID = regexp.MustCompile(`\Asale_[0-9A-Za-z]{1,40}\z`)

// FuzzPolicyFile: whatever the bytes, as JSON or as YAML, parsing a policy
// document never panics, fails only with a usage error, keeps what it
// accepts bounded (a YAML bomb is refused, not expanded), reads back the
// same from its own JSON and YAML encodings, and what the validator then
// accepts keeps every rule of a policy (checked here independently).
func FuzzPolicyFile(f *testing.F) {
	f.Add([]byte(fuzzPolicyYAML), true)
	f.Add([]byte(fuzzPolicyJSON), false)
	f.Add([]byte(fuzzPolicyJSON), true) // JSON is YAML
	f.Add([]byte(fuzzPolicyJSON+" {}"), false)
	f.Add([]byte("name: &n x\ncreated_by: *n\n"), true)
	f.Add([]byte("a: &a [*a]\n"), true)
	f.Add([]byte("<<: {name: x}\n"), true)
	f.Add([]byte("name: !!binary aGVsbG8=\n"), true)
	f.Add([]byte("limits: {maximum_cost_usd_per_day: .nan}\n"), true)
	f.Add([]byte("? [a]\n: b\n"), true)
	f.Add([]byte(billionLaughs()), true)
	f.Add([]byte(wideBomb(200, 400)), true)
	f.Add([]byte(strings.Repeat("#", maxPolicyFile+1)), true)
	f.Fuzz(func(t *testing.T, raw []byte, isYAML bool) {
		pf, err := parsePolicyFile(raw, isYAML)
		if err != nil {
			var ue usageError
			if !errors.As(err, &ue) || !strings.HasPrefix(err.Error(), "--file: ") {
				t.Fatalf("refusal is %T, not a usage error on --file: %v", err, err)
			}
			return
		}
		if !isYAML && !json.Valid(raw) {
			t.Fatalf("accepted bytes that are not one JSON value: %q", raw)
		}
		enc, err := json.Marshal(pf)
		if err != nil {
			t.Fatalf("accepted policy does not encode: %v", err)
		}
		if len(enc) > 8*maxPolicyFile {
			t.Fatalf("a %d-byte document became a %d-byte policy", len(raw), len(enc))
		}
		if back, err := parsePolicyFile(enc, false); err != nil || !reflect.DeepEqual(back, pf) {
			t.Fatalf("JSON round trip: %v\n%#v\n%#v", err, pf, back)
		}
		var generic any
		if err := json.Unmarshal(enc, &generic); err != nil {
			t.Fatal(err)
		}
		y, err := yaml.Marshal(generic)
		if err != nil {
			t.Fatalf("accepted policy does not encode as YAML: %v", err)
		}
		if back, err := parsePolicyFile(y, true); err != nil || !reflect.DeepEqual(back, pf) {
			t.Fatalf("YAML round trip: %v\n%s\n%#v\n%#v", err, y, pf, back)
		}
		pol := domain.Policy{Name: pf.Name, TenantID: pf.TenantID, CreatedBy: pf.CreatedBy, AllowedTools: pf.AllowedTools,
			Scope: pf.Scope, Conditions: pf.Conditions, Limits: pf.Limits}
		if err := approval.ValidatePolicy(pol); err != nil {
			if !errors.Is(err, domain.ErrInvalidInput) {
				t.Fatalf("validator refusal is not invalid input: %v", err)
			}
			return
		}
		switch {
		case pol.Name == "" || len(pol.Name) > 100:
			t.Fatalf("name of %d bytes accepted", len(pol.Name))
		case len(pol.AllowedTools) == 0 || len(pol.Scope.EstateSaleIDs) == 0 || len(pol.Conditions.PermittedFields) == 0:
			t.Fatalf("an unscoped policy accepted: %+v", pol)
		case pol.Conditions.MaxItemsPerRun < 1 || pol.Conditions.MaxItemsPerRun > domain.BroadBulkLimit || pol.Limits.MaxDailyActions < 1:
			t.Fatalf("limits out of range accepted: %+v", pol)
		case pol.Limits.MaxCostUSDPerDay != 0:
			t.Fatalf("a paid policy accepted: %+v", pol.Limits)
		}
		for _, tool := range pol.AllowedTools {
			if !slices.Contains([]string{"trove_execute_candidate_promotion", "trove_update_item_status",
				"trove_apply_bulk_item_update", "trove_bind_item_identity"}, tool) {
				t.Fatalf("tool %q accepted", tool)
			}
		}
		for _, s := range pol.Scope.EstateSaleIDs {
			if !refSaleID.MatchString(s) {
				t.Fatalf("sale id %q accepted", s)
			}
		}
	})
}

// TestHardening_PolicyFileYAMLBombRefused: a 64 KiB YAML document whose
// aliases expand to megabytes (one large scalar aliased thousands of times
// stays under the YAML library's own alias-ratio guard) is refused before
// it is expanded, with a message that says why; the same document written
// out in full was never within the size limit either. The classic
// billion-laughs document stays refused.
func TestHardening_PolicyFileYAMLBombRefused(t *testing.T) {
	dir := t.TempDir()
	for name, doc := range map[string]string{
		"wide.yaml":           wideBomb(20000, 2000), // ~40 MB once expanded
		"billion_laughs.yaml": billionLaughs(),
		"self.yaml":           "name: &a [*a]\n",
	} {
		path := dir + "/" + name
		if len(doc) > maxPolicyFile {
			t.Fatalf("%s: the seed is %d bytes, over the file limit", name, len(doc))
		}
		if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		pf, err := readPolicyFile(path)
		var ue usageError
		if err == nil || !errors.As(err, &ue) {
			t.Fatalf("%s: accepted (%d allowed tools), want a usage error", name, len(pf.AllowedTools))
		}
		if name == "wide.yaml" && !strings.Contains(err.Error(), "expands beyond 64 KiB") {
			t.Errorf("%s: %v, want the expansion named", name, err)
		}
	}
}

// TestHardening_PolicyFileTrailingDataRefused: a JSON policy file is one
// object; a second document after it (which a reader might take for the
// policy), or a stray closing brace or bracket, is refused, not silently
// ignored.
func TestHardening_PolicyFileTrailingDataRefused(t *testing.T) {
	path := t.TempDir() + "/p.json"
	for _, doc := range []string{
		fuzzPolicyJSON + "\n" + strings.Replace(fuzzPolicyJSON, "Bind printed tags", "Another policy", 1),
		fuzzPolicyJSON + "}",
		fuzzPolicyJSON + "\n]",
	} {
		if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		pf, err := readPolicyFile(path)
		if err == nil || !strings.Contains(err.Error(), "trailing data") {
			t.Fatalf("accepted %q (%v), want trailing data refused", pf.Name, err)
		}
	}
	if err := os.WriteFile(path, []byte(fuzzPolicyJSON+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if pf, err := readPolicyFile(path); err != nil || pf.Name != "Bind printed tags" || len(pf.AllowedTools) != 2 {
		t.Fatalf("a single policy object: %+v, %v", pf, err)
	}
}
