package catalog

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/format"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/triunalabs/trovesnap/internal/domain"
)

var update = flag.Bool("update", false, "rewrite schema snapshots under testdata")

var (
	nameRE   = regexp.MustCompile(`^trove_[a-z][a-z_]*[a-z]$`)
	semverRE = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`)
)

// Catalog-wide invariants over All(): a new tool cannot skip them.
func TestCatalog_Invariants(t *testing.T) {
	seen := map[string]bool{}
	tiers := []Tier{TierPublicRead, TierTenantRead, TierCandidateWrite, TierActionProposal, TierControlledAction}
	for i := range All() {
		tool := &All()[i]
		t.Run(tool.Name, func(t *testing.T) {
			if !nameRE.MatchString(tool.Name) || seen[tool.Name] {
				t.Errorf("bad or duplicate name %q", tool.Name)
			}
			seen[tool.Name] = true
			if strings.Contains(tool.Name, "delete") || strings.Contains(tool.Name, "purge") {
				t.Error("hard deletion is not a normal tool (§4.7)")
			}
			if !semverRE.MatchString(tool.Version) || tool.Major() < 1 {
				t.Errorf("version %q", tool.Version)
			}
			if !slices.Contains(tiers, tool.Tier) || tool.Risk == "" || tool.Status == "" || tool.Approval == "" {
				t.Errorf("incomplete classification: %+v", tool.Definition)
			}
			// Schemas resolve lazily at a tool's first call: prove every one resolves.
			if _, err := tool.InputSchema().Resolve(nil); err != nil {
				t.Errorf("input schema does not resolve: %v", err)
			}
			if _, err := tool.Decode([]byte(`{}`)); err != nil && !errors.Is(err, domain.ErrInvalidInput) {
				t.Errorf("decoding {}: %v", err)
			}
			if tool.Status == StatusActive && !tool.HasHandler() {
				t.Error("active tool without a handler")
			}
			if tool.Title == "" || len(tool.Description) < 30 || tool.Domain.Operation == "" || tool.Impact.Type == "" {
				t.Error("missing title, description, domain mapping or impact")
			}
			if len(tool.Modes) == 0 {
				t.Error("no allowed modes")
			}
			if tool.Tier != TierPublicRead && len(tool.Permissions) == 0 && len(tool.AnyPermissions) == 0 {
				t.Error("a non-public tool must require a permission")
			}
			if tool.Tier == TierPublicRead && len(tool.AnyPermissions) != 0 {
				t.Error("a public tool needs no permission")
			}
			if tool.Tier == TierControlledAction && tool.Approval == ApprovalNone {
				t.Error("every controlled action is approval-gated")
			}
			writeTier := tool.Tier == TierCandidateWrite || tool.Tier == TierActionProposal || tool.Tier == TierControlledAction
			switch {
			case tool.Persists && !writeTier:
				t.Error("reads never persist")
			case !tool.Persists && writeTier && !isDryRun(tool):
				t.Error("writes persist (only a candidate-tier dry run, risk tenant_read with a non-material preview impact, may not)")
			}
			// Strict, bounded input, at every depth.
			checkStrict(t, "input", tool.InputSchema())
			for _, name := range authorityFields {
				if hasProperty(tool.InputSchema(), name) {
					t.Errorf("input field %q could carry authority or scope: the server resolves it (§4.6, §20)", name)
				}
			}
			if tool.Domain.Service == "" {
				t.Error("domain mapping without a service")
			}
			if tool.Status == StatusExperimental && tool.HasHandler() || tool.Status != StatusExperimental && !tool.HasHandler() {
				t.Error("a tool is experimental exactly while it has no handler")
			}
			if tool.CompatFor != "" {
				if other, ok := Lookup(tool.CompatFor); !ok || other.CompatFor != "" || other.Domain != tool.Domain {
					t.Errorf("compat_for %q must name a tool with the same domain mapping", tool.CompatFor)
				}
			}
			checkTier(t, tool)
			if tool.Persists && !slices.Contains(tool.InputSchema().Required, "idempotency_key") {
				t.Error("a persisted write must require idempotency_key")
			}
			if _, ok := tool.InputSchema().Properties["request_id"]; !ok {
				t.Error("every tool accepts request_id (§21)")
			}
			// Annotations follow tier and risk.
			h := HintsFor(tool)
			if h.ReadOnly != (tool.Tier == TierPublicRead || tool.Tier == TierTenantRead) {
				t.Error("readOnlyHint disagrees with tier")
			}
			if h.Destructive && (tool.Tier == TierCandidateWrite || tool.Tier == TierActionProposal) {
				t.Error("candidate writes and proposals are not destructive")
			}
			if !strings.HasPrefix(tool.InputSchemaHash(), "sha256:") || !strings.HasPrefix(tool.OutputSchemaHash(), "sha256:") {
				t.Error("schema hashes missing")
			}
		})
	}
}

// Schema snapshots: a schema change must be deliberate (and may need a new
// major version). `go test ./internal/catalog -update` rewrites them.
func TestCatalog_SchemaSnapshots(t *testing.T) {
	dir := filepath.Join("testdata", "schemas")
	for i := range All() {
		tool := &All()[i]
		snap := struct {
			Definition   Definition `json:"definition"`
			InputHash    string     `json:"input_schema_hash"`
			OutputHash   string     `json:"output_schema_hash"`
			InputSchema  any        `json:"input_schema"`
			OutputSchema any        `json:"output_schema"`
		}{tool.Definition, tool.InputSchemaHash(), tool.OutputSchemaHash(), tool.InputSchema(), tool.OutputSchema()}
		got, err := json.MarshalIndent(snap, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, '\n')
		path := filepath.Join(dir, tool.Name+".json")
		if *update {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%s: no snapshot (run go test ./internal/catalog -update): %v", tool.Name, err)
			continue
		}
		if string(want) != string(got) {
			t.Errorf("%s: schema or definition changed; review, bump the version if it breaks callers, and run with -update", tool.Name)
		}
	}
}

// Decide: the public principal sees public tools only; a suspended client
// sees nothing; permissions and groups gate the rest.
func TestDecide_Rules(t *testing.T) {
	owner := domain.Principal{ClientStatus: domain.ClientActive, Role: domain.RoleOwner, TenantID: "tenant_1",
		AllowedToolGroups: []string{"tenant_read", "candidate_write"}}
	create, _ := Lookup("trove_create_candidate")
	if !Decide(create, domain.ModeMock, owner).Visible {
		t.Error("owner with candidate_write cannot see create_candidate")
	}
	suspended := owner
	suspended.ClientStatus = domain.ClientSuspended
	readOnly := owner
	readOnly.AllowedToolGroups = []string{"tenant_read"}
	checkout := owner
	checkout.Role = domain.RoleCheckout
	for name, p := range map[string]domain.Principal{"suspended": suspended, "read-only client": readOnly, "checkout": checkout, "public": domain.Anonymous()} {
		if d := Decide(create, domain.ModeMock, p); d.Visible || d.Reason == "" {
			t.Errorf("%s sees create_candidate (%s)", name, d.Reason)
		}
	}
	if d := Decide(create, domain.ModeMock, checkout); d.Missing != domain.PermItemCreateCandidate {
		t.Errorf("checkout reason = %+v", d)
	}
}

// AnyPermissions: one of them suffices, none of them hides the tool (naming
// the first as missing), and every one of Permissions still applies.
func TestDecide_AnyOfPermissions(t *testing.T) {
	p := func(role string) domain.Principal {
		return domain.Principal{ClientStatus: domain.ClientActive, Role: role, TenantID: "tenant_1", AllowedToolGroups: []string{"tenant_read"}}
	}
	getItem, _ := Lookup("trove_get_item")
	for _, role := range domain.Roles() {
		if d := Decide(getItem, domain.ModeMock, p(role)); !d.Visible {
			t.Errorf("%s cannot see trove_get_item: %s", role, d.Reason)
		}
	}
	if d := Decide(getItem, domain.ModeMock, p("auditor")); d.Visible || d.Missing != domain.PermItemRead {
		t.Errorf("unknown role decided %+v", d)
	}

	tool := *getItem
	tool.Permissions = []string{domain.PermSaleRead}
	tool.AnyPermissions = []string{domain.PermItemReadPricing, domain.PermItemReadCheckout}
	for role, visible := range map[string]bool{domain.RoleCataloger: false, domain.RolePricer: true, domain.RoleCheckout: true, domain.RoleOwner: true} {
		d := Decide(&tool, domain.ModeMock, p(role))
		if d.Visible != visible {
			t.Errorf("%s: decided %+v, want visible=%v", role, d, visible)
		}
		if !visible && d.Missing != domain.PermItemReadPricing {
			t.Errorf("%s: missing %q, want the first any-of permission", role, d.Missing)
		}
	}
	tool.Permissions = []string{domain.PermCandidateRead} // checkout has an any-of but not this one
	if d := Decide(&tool, domain.ModeMock, p(domain.RoleCheckout)); d.Visible || d.Missing != domain.PermCandidateRead {
		t.Errorf("checkout without candidate.read decided %+v", d)
	}
}

// The input schemas tools/list sends are generated (inputschemas_gen.go):
// each is exactly the reflected schema that validates the tool's calls, and
// there is one per tool. `go test ./internal/catalog -update` (or go
// generate) rewrites the file.
func TestCatalog_GeneratedInputSchemas(t *testing.T) {
	var b strings.Builder
	b.WriteString("// Code generated by go test ./internal/catalog -run TestCatalog_GeneratedInputSchemas -update. DO NOT EDIT.\n\n")
	b.WriteString("package catalog\n\n")
	b.WriteString("// generatedInputSchemas is each tool's input schema as tools/list sends it.\n")
	b.WriteString("var generatedInputSchemas = map[string]string{\n")
	for i := range All() {
		tool := &All()[i]
		reflected, err := json.Marshal(tool.InputSchema())
		if err != nil {
			t.Fatal(err)
		}
		if g, ok := generatedInputSchemas[tool.Name]; !*update && (!ok || g != string(reflected)) {
			t.Errorf("%s: the generated input schema is not the reflected one: run go test ./internal/catalog -update", tool.Name)
		}
		if !*update && string(tool.InputSchemaJSON) != string(reflected) {
			t.Errorf("%s: tools/list would send another schema than the one that validates", tool.Name)
		}
		fmt.Fprintf(&b, "\t%q: %q,\n", tool.Name, reflected)
	}
	b.WriteString("}\n")
	if len(generatedInputSchemas) != len(All()) && !*update {
		t.Errorf("%d generated schemas for %d tools", len(generatedInputSchemas), len(All()))
	}
	if *update {
		src, err := format.Source([]byte(b.String()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile("inputschemas_gen.go", src, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
