package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// The tool names of spec §11–§14 and §16, written out from the spec.
var (
	specPublic = []string{"trove_search_marketplace", "trove_get_public_sale", "trove_get_public_item", "trove_resolve_public_qr"}
	specReads  = []string{"trove_list_sales", "trove_get_sale", "trove_list_items", "trove_get_item", "trove_list_candidates",
		"trove_get_candidate", "trove_get_demand_signals", "trove_list_import_runs", "trove_get_import_run",
		"trove_list_status_events", "trove_list_label_batches", "trove_get_disposition_queue"}
	specCandidates = []string{"trove_create_candidate", "trove_attach_candidate_photo", "trove_run_manual_import",
		"trove_map_csv_columns", "trove_preview_csv_import", "trove_apply_csv_import", "trove_draft_listing_copy",
		"trove_stage_export", "trove_create_status_update_candidate", "trove_create_media_attachment_candidate"}
	specProposals = []string{"trove_propose_candidate_promotion", "trove_propose_item_publication",
		"trove_propose_sale_publication", "trove_propose_bulk_item_update", "trove_propose_status_transition",
		"trove_propose_buyer_notification", "trove_propose_identity_binding", "trove_propose_disposition_action",
		"trove_propose_export_delivery"}
	specActions = []string{"trove_execute_candidate_promotion", "trove_publish_item", "trove_publish_sale",
		"trove_update_item_status", "trove_apply_bulk_item_update", "trove_notify_matched_buyers",
		"trove_bind_item_identity", "trove_release_item_identity", "trove_apply_disposition_action",
		"trove_deliver_export", "trove_archive_item"}
	// Tools beyond those lists: the §12.1 compatibility name and the read of
	// a proposal the §14 tools return.
	specExtra = []string{"trove_demand_signals", "trove_get_proposal"}
)

// Input fields that could carry authority or scope the server must resolve
// itself (§4.6, §17.2, §20, §40.7), or reach outside the closed domain (§28).
var authorityFields = []string{"approved", "approval", "approval_id", "approval_token", "grant", "grant_id", "policy_id",
	"tenant_id", "actor_id", "client_id", "membership_id", "mode", "permissions", "role",
	"sql", "query_sql", "command", "shell", "path", "file_path", "url"}

// Output fields no public tool may return (§11, §39 items 21–23).
var privateFields = []string{"internal_price_guidance_cents", "cost_basis_cents", "appraisal_flag", "staff_notes",
	"pricing_history", "supplied_price_cents", "tenant_id", "buyer_id", "buyer_email", "qr_code"}

// Capabilities the normal catalog never offers (§4.7, §16 forbidden list, §28).
var forbiddenNameParts = []string{"delete", "purge", "approve", "grant", "polic", "sql", "shell", "command", "read_file", "exec_"}

func TestCatalog_SpecToolNames(t *testing.T) {
	want := map[string]Tier{}
	for _, g := range []struct {
		names []string
		tier  Tier
	}{{specPublic, TierPublicRead}, {specReads, TierTenantRead}, {specCandidates, TierCandidateWrite},
		{specProposals, TierActionProposal}, {specActions, TierControlledAction}, {specExtra[:1], TierTenantRead}, {specExtra[1:], TierTenantRead}} {
		for _, n := range g.names {
			if _, dup := want[n]; dup {
				t.Fatalf("test lists %s twice", n)
			}
			want[n] = g.tier
		}
	}
	if len(want) != 4+12+10+9+11+2 {
		t.Fatalf("expected list has %d names", len(want))
	}
	count := map[string]int{}
	for _, tool := range All() {
		count[tool.Name]++
		tier, ok := want[tool.Name]
		switch {
		case !ok:
			// A tool beyond the spec's lists is allowed: the lists are the
			// floor, and every rule below (forbidden capabilities, authority
			// fields, tiers, the action registry) holds over All().
			// TestCatalog_EachTierFileListsOnlyItsTier holds its tier.
			t.Logf("%s is beyond the tools spec §11–§14/§16 names", tool.Name)
		case tool.Tier != tier:
			t.Errorf("%s: tier %s, want %s", tool.Name, tool.Tier, tier)
		}
	}
	for n := range want {
		if count[n] != 1 {
			t.Errorf("%s registered %d times, want exactly once", n, count[n])
		}
	}
	for n, c := range count {
		if c != 1 {
			t.Errorf("%s registered %d times, want exactly once", n, c)
		}
	}
	if len(All()) != len(constructors) {
		t.Errorf("All() has %d tools and constructors %d", len(All()), len(constructors))
	}
	for _, tool := range All() {
		for _, part := range forbiddenNameParts {
			if strings.Contains(tool.Name, part) {
				t.Errorf("%s: a %q capability is never a normal tool", tool.Name, part)
			}
		}
	}
	if !slices.IsSortedFunc(All(), func(a, b Tool) int { return strings.Compare(a.Name, b.Name) }) {
		t.Error("All() is not sorted by name")
	}
	dm, _ := Lookup("trove_demand_signals")
	if dm.CompatFor != "trove_get_demand_signals" || dm.Status != StatusDeprecated {
		t.Errorf("trove_demand_signals: compat_for %q status %s", dm.CompatFor, dm.Status)
	}
}

// Experimental tools have no capability yet: nobody discovers or calls them,
// not even an owner whose client may use every group, in either mode.
func TestDecide_ExperimentalToolsInvisible(t *testing.T) {
	owner := domain.Principal{ClientStatus: domain.ClientActive, Role: domain.RoleOwner, TenantID: "tenant_1", ActorID: "user_1",
		AllowedToolGroups: []string{string(TierPublicRead), string(TierTenantRead), string(TierCandidateWrite), string(TierActionProposal), string(TierControlledAction)}}
	for _, mode := range []domain.Mode{domain.ModeMock, domain.ModeLive} {
		for _, p := range []domain.Principal{owner, domain.Anonymous()} {
			var visible []string
			for i := range All() {
				tool := &All()[i]
				d := Decide(tool, mode, p)
				if d.Visible {
					visible = append(visible, tool.Name)
				}
				if tool.Status == StatusExperimental && (d.Visible || !strings.HasPrefix(d.Reason, "experimental")) {
					t.Errorf("%s %s: experimental %s decided %+v", mode, p.Role, tool.Name, d)
				}
			}
			// The owner sees every tool with a capability that runs in this
			// mode; the public principal sees the public ones only.
			var want []string
			for _, tool := range All() {
				if tool.Status != StatusExperimental && slices.Contains(tool.Modes, mode) && (!p.Public || tool.Tier == TierPublicRead) {
					want = append(want, tool.Name)
				}
			}
			if !slices.Equal(visible, want) {
				t.Errorf("%s public=%v sees %v, want %v", mode, p.Public, visible, want)
			}
		}
	}
	// Experimental means exactly "no capability yet", and every tool runs
	// in both modes: the live backend serves them all.
	for _, tool := range All() {
		if !slices.Contains(tool.Modes, domain.ModeMock) || !slices.Contains(tool.Modes, domain.ModeLive) {
			t.Errorf("%s runs in %v, want mock and live", tool.Name, tool.Modes)
		}
		if (tool.Status == StatusExperimental) == tool.HasHandler() {
			t.Errorf("%s: status %s but handler present = %v", tool.Name, tool.Status, tool.HasHandler())
		}
	}
}

// Literal id prefixes and size limits in ts tags agree with their constants.
func TestCatalog_TagLiterals(t *testing.T) {
	prop := func(tool, field string) *jsonschema.Schema {
		t.Helper()
		tl, ok := Lookup(tool)
		if !ok || tl.InputSchema().Properties[field] == nil {
			t.Fatalf("%s.%s missing", tool, field)
		}
		return tl.InputSchema().Properties[field]
	}
	for _, c := range []struct {
		tool, field, prefix string
	}{
		{"trove_propose_export_delivery", "export_id", prefixExport},
		{"trove_attach_candidate_photo", "asset_id", prefixAsset},
		{"trove_create_media_attachment_candidate", "asset_id", prefixAsset},
	} {
		if p := prop(c.tool, c.field); p.Pattern != domain.IDPattern(c.prefix) {
			t.Errorf("%s.%s pattern %q, want prefix %q", c.tool, c.field, p.Pattern, c.prefix)
		}
	}
	for _, c := range []struct {
		tool, field string
		max         int
	}{
		{"trove_attach_candidate_photo", "image_base64", MaxImageBase64},
		{"trove_create_media_attachment_candidate", "image_base64", MaxImageBase64},
		{"trove_preview_csv_import", "csv_text", MaxCSVText},
		{"trove_apply_csv_import", "csv_text", MaxCSVText},
		{"trove_map_csv_columns", "csv_text", MaxCSVSample},
	} {
		p := prop(c.tool, c.field)
		if p.MaxLength == nil || *p.MaxLength != c.max {
			t.Errorf("%s.%s maxLength %v, want %d", c.tool, c.field, p.MaxLength, c.max)
		}
		tl, _ := Lookup(c.tool)
		if limit := ArgumentLimit(tl.Name); limit < c.max+1024 {
			t.Errorf("%s: argument limit %d cannot carry a %s of %d bytes", c.tool, limit, c.field, c.max)
		}
	}
	for _, tool := range All() {
		if p := tool.InputSchema().Properties["effective_at"]; p != nil && p.Pattern != rfc3339Pattern {
			t.Errorf("%s.effective_at pattern %q, want the RFC 3339 pattern", tool.Name, p.Pattern)
		}
	}
}

// The schemas of the new tools hold at the edges: authority fields, target
// counts, nested fields, nulls and per-tool argument limits.
func TestDecode_NewToolEdges(t *testing.T) {
	items := func(n int) ([]string, []map[string]any) {
		ids, vs := make([]string, n), make([]map[string]any, n)
		for i := range n {
			ids[i] = fmt.Sprintf("item_%d", i+1)
			vs[i] = map[string]any{"id": ids[i], "version": 1}
		}
		return ids, vs
	}
	ids50, vs50 := items(50)
	ids51, vs51 := items(51)
	key := "edge-key-0001"
	cases := []struct {
		tool  string
		args  map[string]any
		field string // "" = accepted
	}{
		{"trove_publish_item", map[string]any{"proposal_id": "proposal_1", "idempotency_key": key}, ""},
		{"trove_publish_item", map[string]any{"proposal_id": "proposal_1", "idempotency_key": key, "approved": true}, "arguments"},
		{"trove_publish_item", map[string]any{"proposal_id": "proposal_1", "idempotency_key": key, "approval_id": "approval_1"}, "arguments"},
		{"trove_publish_item", map[string]any{"proposal_id": "item_1", "idempotency_key": key}, "proposal_id"},
		{"trove_publish_item", map[string]any{"proposal_id": "proposal_1"}, "arguments"},
		{"trove_propose_bulk_item_update", map[string]any{"item_ids": ids50, "expected_versions": vs50, "changes": map[string]any{"room": "den"}, "idempotency_key": key}, ""},
		{"trove_propose_bulk_item_update", map[string]any{"item_ids": ids51, "expected_versions": vs50, "changes": map[string]any{"room": "den"}, "idempotency_key": key}, "item_ids"},
		{"trove_propose_bulk_item_update", map[string]any{"item_ids": ids50, "expected_versions": vs51, "changes": map[string]any{"room": "den"}, "idempotency_key": key}, "expected_versions"},
		{"trove_propose_bulk_item_update", map[string]any{"item_ids": []string{}, "expected_versions": vs50, "changes": map[string]any{}, "idempotency_key": key}, "item_ids"},
		{"trove_propose_bulk_item_update", map[string]any{"item_ids": nil, "expected_versions": vs50, "changes": map[string]any{}, "idempotency_key": key}, "item_ids"},
		{"trove_propose_bulk_item_update", map[string]any{"item_ids": []string{"sale_1"}, "expected_versions": vs50, "changes": map[string]any{}, "idempotency_key": key}, "item_ids"},
		{"trove_propose_bulk_item_update", map[string]any{"item_ids": ids50, "expected_versions": vs50, "changes": map[string]any{"status": "sold"}, "idempotency_key": key}, "arguments"}, // unknown nested field
		{"trove_propose_bulk_item_update", map[string]any{"item_ids": ids50, "expected_versions": vs50, "changes": map[string]any{"room": "Den Room"}, "idempotency_key": key}, "changes"},
		{"trove_propose_bulk_item_update", map[string]any{"item_ids": ids50, "expected_versions": []map[string]any{{"id": "item_1", "version": 0}}, "changes": map[string]any{"room": "den"}, "idempotency_key": key}, "expected_versions"},
		{"trove_propose_buyer_notification", map[string]any{"item_id": "item_1", "expected_version": 2, "audience": "saved_item", "channels": []string{"email", "fax"}, "message_template": "New: {{item_title}}", "idempotency_key": key}, "channels"},
		{"trove_propose_status_transition", map[string]any{"item_id": "item_1", "expected_version": 2, "to_status": "sold", "effective_at": "2026-06-20T15:04:05Z", "idempotency_key": key}, ""},
		{"trove_propose_status_transition", map[string]any{"item_id": "item_1", "expected_version": 2, "to_status": "published", "effective_at": "2026-06-20T15:04:05Z", "idempotency_key": key}, "to_status"},
		{"trove_propose_status_transition", map[string]any{"item_id": "item_1", "expected_version": 2, "to_status": "sold", "effective_at": "yesterday", "idempotency_key": key}, "effective_at"},
		{"trove_run_manual_import", map[string]any{"sale_id": "sale_1", "rows": []map[string]any{{"title": "Oak washstand", "condition": "good"}}, "idempotency_key": key}, ""},
		{"trove_run_manual_import", map[string]any{"sale_id": "sale_1", "rows": []map[string]any{{"title": strings.Repeat("x", 201)}}, "idempotency_key": key}, "rows"},
		{"trove_run_manual_import", map[string]any{"sale_id": "sale_1", "rows": []map[string]any{{"title": "ok", "publish": true}}, "idempotency_key": key}, "arguments"},
		{"trove_apply_csv_import", map[string]any{"sale_id": "sale_1", "csv_text": "title\nlamp\n", "mapping": []map[string]any{{"column": "title", "field": "price"}}, "idempotency_key": key}, "mapping"},
		// image_base64 has no pattern: a path or URL sent there must reach the
		// handler, which refuses it with the reason (not a bare "malformed").
		{"trove_attach_candidate_photo", map[string]any{"candidate_id": "candidate_1", "image_base64": "/Users/paul/Pictures/lamp.jpg", "idempotency_key": key}, ""},
		{"trove_attach_candidate_photo", map[string]any{"candidate_id": "candidate_1", "image_base64": strings.Repeat("A", MaxImageBase64+1), "idempotency_key": key}, "image_base64"},
		{"trove_attach_candidate_photo", map[string]any{"candidate_id": "candidate_1", "asset_id": "asset_1", "idempotency_key": key}, ""},
		{"trove_search_marketplace", map[string]any{"query": "lamp", "date_from": "2026-06-20"}, ""},
		{"trove_resolve_public_qr", map[string]any{"qr_code": "QR-221-0001"}, ""},
		{"trove_resolve_public_qr", map[string]any{"qr_code": "../../etc/passwd"}, "qr_code"},
	}
	for i, c := range cases {
		tool, ok := Lookup(c.tool)
		if !ok {
			t.Fatalf("no tool %s", c.tool)
		}
		raw, _ := json.Marshal(c.args)
		_, err := tool.Decode(raw)
		var ie *domain.InputError
		switch {
		case c.field == "" && err != nil:
			t.Errorf("case %d %s: rejected: %v", i, c.tool, err)
		case c.field != "" && (!errors.As(err, &ie) || ie.Field != c.field):
			t.Errorf("case %d %s: err = %v, want invalid %s", i, c.tool, err, c.field)
		}
	}

	// A CSV larger than the default argument limit fits a CSV tool, not another.
	big := "title\n" + strings.Repeat("brass lamp\n", (MaxArgumentBytes/11)+10)
	preview, _ := Lookup("trove_preview_csv_import")
	raw, _ := json.Marshal(map[string]any{"sale_id": "sale_1", "csv_text": big})
	if _, err := preview.Decode(raw); err != nil {
		t.Errorf("preview of a %d-byte CSV: %v", len(big), err)
	}
	create, _ := Lookup("trove_create_candidate")
	raw, _ = json.Marshal(map[string]any{"sale_id": "sale_1", "title": "x", "notes": big, "idempotency_key": key})
	if _, err := create.Decode(raw); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("create_candidate with %d bytes of arguments: %v", len(raw), err)
	}
}

// isDryRun reports a candidate-tier tool that persists nothing: it reads the
// tenant's scope, writes nothing and records a non-material preview.
func isDryRun(t *Tool) bool {
	return t.Tier == TierCandidateWrite && !t.Persists && t.Risk == RiskTenantRead &&
		t.Impact == domain.EventImpact{Type: "preview"}
}

// checkTier applies the rules of each tier (spec §10, §14, §16, §18.2).
func checkTier(t *testing.T, tool *Tool) {
	t.Helper()
	props := propertyNames(tool.InputSchema())
	noChange := !tool.Impact.CanonicalStateChanged && !tool.Impact.PublicStateChanged
	switch tool.Tier {
	case TierPublicRead:
		if len(tool.Permissions) != 0 || tool.Risk != RiskPublicRead || tool.Approval != ApprovalNone || !HintsFor(tool).ReadOnly || tool.Impact != readImpact {
			t.Errorf("a public tool needs no permission and only reads: %+v", tool.Definition)
		}
		for _, f := range privateFields {
			if hasProperty(tool.OutputSchema(), f) {
				t.Errorf("public output exposes %s", f)
			}
		}
	case TierTenantRead:
		if tool.Risk != RiskTenantRead || tool.Approval != ApprovalNone || !HintsFor(tool).ReadOnly || tool.Impact != readImpact {
			t.Errorf("a scoped read is a tenant_read with a read impact: %+v", tool.Definition)
		}
	case TierCandidateWrite:
		if tool.Approval != ApprovalNone || !noChange || HintsFor(tool).Destructive {
			t.Error("a candidate write needs no action approval and changes nothing canonical or public")
		}
		if tool.Persists && (tool.Risk != RiskLowWrite || !tool.Impact.Material) {
			t.Error("a persisted candidate write is a material low_write")
		}
	case TierActionProposal:
		// A proposal needs proposal.create, except the sale-day proposals
		// checkout makes (issue 16): a status change (proposal.create or
		// item.update_status; the domain limits the latter to checkout's
		// transitions) and a checkout scan (checkout.scan).
		perms, anyOf := []string{domain.PermProposalCreate}, []string(nil)
		switch tool.Name {
		case "trove_propose_status_transition":
			perms, anyOf = nil, []string{domain.PermProposalCreate, domain.PermItemUpdateStatus}
		case "trove_propose_checkout_scan":
			perms = []string{domain.PermCheckoutScan}
		}
		if !tool.Persists || !tool.Idempotent || tool.Risk != RiskLowWrite || tool.Approval != ApprovalNone ||
			HintsFor(tool).Destructive || tool.Impact != proposalImpact || !slices.Equal(tool.Permissions, perms) ||
			!slices.Equal(tool.AnyPermissions, anyOf) {
			t.Errorf("a proposal is an idempotent, persisted, non-destructive low_write needing proposal.create: %+v", tool.Definition)
		}
		if !strings.HasPrefix(tool.Name, "trove_propose_") {
			t.Error("proposal tools are named trove_propose_*")
		}
		bound := slices.Contains(props, "expected_version") || slices.Contains(props, "expected_versions") ||
			slices.Contains(props, "export_id") // a staged export binds its own item versions
		if !bound {
			t.Error("a proposal binds its targets' versions")
		}
		if slices.Contains(props, "item_ids") != slices.Contains(props, "expected_versions") {
			t.Error("a multi-target proposal takes expected_versions for its item_ids")
		}
		if !strings.Contains(tool.Description, "not an approval") {
			t.Error("a proposal's description says it is not an approval")
		}
	case TierControlledAction:
		slices.Sort(props)
		if !slices.Equal(props, []string{"idempotency_key", "proposal_id", "request_id"}) {
			t.Errorf("controlled action input = %v, want exactly proposal_id, idempotency_key, request_id", props)
		}
		if !slices.Contains(tool.InputSchema().Required, "proposal_id") {
			t.Error("proposal_id is required")
		}
		if tool.Risk != RiskControlledWrite && tool.Risk != RiskHighImpact {
			t.Errorf("risk %s: a controlled action is controlled_write or high_impact", tool.Risk)
		}
		if tool.Risk == RiskHighImpact && tool.Approval != ApprovalExplicitHuman {
			t.Error("a high-impact action needs explicit human approval (§18.2)")
		}
		if !tool.Impact.Material || tool.Impact.Type == "" || tool.Impact.Type == "read" {
			t.Error("a controlled action has a material impact")
		}
		if !HintsFor(tool).Destructive {
			t.Error("a controlled action is annotated destructive")
		}
		if !strings.Contains(tool.Description, "Requires a proposal from trove_propose_") {
			t.Error("the description names the proposal tool the action needs")
		}
	}
}

// §18.2: categories never auto-approved stay human-only.
func TestCatalog_ExplicitHumanActions(t *testing.T) {
	human := []string{"trove_publish_item", "trove_publish_sale", "trove_notify_matched_buyers", "trove_deliver_export",
		"trove_release_item_identity", "trove_apply_disposition_action", "trove_archive_item",
		"trove_propose_export_delivery", "trove_deliver_export"}
	high := []string{"trove_publish_item", "trove_publish_sale", "trove_notify_matched_buyers", "trove_deliver_export",
		"trove_release_item_identity", "trove_apply_disposition_action"}
	for _, name := range specActions {
		tool, _ := Lookup(name)
		wantApproval := ApprovalHumanOrPolicy
		if slices.Contains(human, name) {
			wantApproval = ApprovalExplicitHuman
		}
		wantRisk := RiskControlledWrite
		if slices.Contains(high, name) {
			wantRisk = RiskHighImpact
		}
		if tool.Approval != wantApproval || tool.Risk != wantRisk {
			t.Errorf("%s: approval %s risk %s, want %s %s", name, tool.Approval, tool.Risk, wantApproval, wantRisk)
		}
	}
}

// §16: controlled actions call the mapped domain functions.
func TestCatalog_ActionDomainMapping(t *testing.T) {
	want := map[string]string{
		"trove_execute_candidate_promotion": "promote_inventory_candidate",
		"trove_publish_item":                "publish_item",
		"trove_publish_sale":                "publish_sale",
		"trove_update_item_status":          "append_inventory_status_event",
		"trove_archive_item":                "append_inventory_status_event",
		"trove_bind_item_identity":          "bind_item_identity",
		"trove_release_item_identity":       "release_item_identity",
		"trove_apply_disposition_action":    "apply_disposition_action",
	}
	for name, op := range want {
		if tool, _ := Lookup(name); tool.Domain.Operation != op {
			t.Errorf("%s maps to %s, want %s", name, tool.Domain.Operation, op)
		}
	}
}

// checkStrict walks a schema: every object rejects unknown fields, every
// string is bounded, every array has maxItems.
func checkStrict(t *testing.T, path string, s *jsonschema.Schema) {
	t.Helper()
	if s == nil {
		return
	}
	switch {
	case isType(s, "object"):
		if ap := s.AdditionalProperties; ap == nil || ap.Not == nil {
			t.Errorf("%s: object must reject unknown fields", path)
		}
		for name, p := range s.Properties {
			checkStrict(t, path+"."+name, p)
		}
	case isType(s, "array"):
		if s.MaxItems == nil {
			t.Errorf("%s: unbounded array", path)
		}
		if slices.Contains(s.Types, "null") {
			t.Errorf("%s: an input list is never null", path)
		}
		checkStrict(t, path+"[]", s.Items)
	case isType(s, "string"):
		// maxLength, or an enum or anchored pattern that bounds as much
		// (dropImpliedMaxLength; PatternMaxLen is tested on its own).
		if _, bounded := PatternMaxLen(s.Pattern); s.MaxLength == nil && s.Enum == nil && !bounded {
			t.Errorf("unbounded string %s", path)
		}
	}
}

func isType(s *jsonschema.Schema, typ string) bool {
	return s.Type == typ || slices.Contains(s.Types, typ)
}

// hasProperty reports whether name is a property at any depth of s.
func hasProperty(s *jsonschema.Schema, name string) bool {
	if s == nil {
		return false
	}
	for n, p := range s.Properties {
		if n == name || hasProperty(p, name) {
			return true
		}
	}
	for _, sub := range append([]*jsonschema.Schema{s.Items}, s.AnyOf...) {
		if hasProperty(sub, name) {
			return true
		}
	}
	return false
}

func propertyNames(s *jsonschema.Schema) []string {
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	return names
}

// A ts:"enum=…" tag is a struct tag, so it cannot call internal/domain;
// each enum that is a domain list is held to its one declaration here.
func TestCatalog_TagEnumsAreTheDomains(t *testing.T) {
	for _, c := range []struct {
		tool, field string
		want        []string
	}{
		{"trove_propose_disposition_action", "action", domain.DispositionActions()},
		{"trove_list_sales", "status", domain.SaleStatuses()},
		{"trove_list_items", "status", domain.ItemStatuses()},
		{"trove_list_candidates", "review_status", domain.ReviewStatuses()},
		{"trove_list_status_events", "to_status", domain.ItemStatuses()},
		{"trove_list_label_batches", "status", domain.LabelBatchStatuses()},
		{"trove_create_status_update_candidate", "reported_status", domain.ReportableStatuses},
		{"trove_draft_listing_copy", "tone", domain.DraftTones},
		{"trove_stage_export", "channel", domain.ExportChannels},
		{"trove_propose_buyer_notification", "audience", domain.NotificationAudiences()},
		{"trove_propose_buyer_notification", "channels", domain.NotificationChannels()},
	} {
		tl, ok := Lookup(c.tool)
		if !ok || tl.InputSchema().Properties[c.field] == nil {
			t.Errorf("%s.%s missing", c.tool, c.field)
			continue
		}
		var got []string
		enum := tl.InputSchema().Properties[c.field].Enum
		if items := tl.InputSchema().Properties[c.field].Items; len(enum) == 0 && items != nil {
			enum = items.Enum // a list of enum values
		}
		for _, e := range enum {
			s, _ := e.(string)
			got = append(got, s)
		}
		if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(c.want))) {
			t.Errorf("%s.%s enum %v, domain declares %v", c.tool, c.field, got, c.want)
		}
	}
}

// Each tier's file lists only tools of that tier, so a tool beyond the
// spec's lists (which TestCatalog_SpecToolNames allows) still gets the tier
// of the file it is added to, and a tool cannot be filed as a read by
// mistake.
func TestCatalog_EachTierFileListsOnlyItsTier(t *testing.T) {
	for _, l := range []struct {
		name string
		list []func() Tool
		tier Tier
	}{
		{"publicReads", publicReads, TierPublicRead},
		{"scopedReads", scopedReads, TierTenantRead},
		{"candidateWrites", candidateWrites, TierCandidateWrite},
		{"proposals", proposals, TierActionProposal},
		{"controlledActions", controlledActions, TierControlledAction},
	} {
		if len(l.list) == 0 {
			t.Errorf("%s is empty", l.name)
		}
		for _, c := range l.list {
			if tool := c(); tool.Tier != l.tier {
				t.Errorf("%s lists %s of tier %s, want %s", l.name, tool.Name, tool.Tier, l.tier)
			}
		}
	}
}
