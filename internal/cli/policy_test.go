package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/cli"
	"github.com/triunalabs/trovesnap/internal/domain"
)

const policyYAML = `name: Bind printed tags
tenant_id: tenant_123
created_by: user_88
allowed_tools: [trove_bind_item_identity]
scope: {estate_sale_ids: [sale_221]}
conditions: {maximum_items_per_run: 5, permitted_fields: [qr_code], require_no_conflicts: true}
limits: {maximum_daily_actions: 100, maximum_cost_usd_per_day: 0}
`

func TestPolicy_CreateEnableListShowRevoke(t *testing.T) {
	env, dir := tempEnv(t)
	db := filepath.Join(dir, "p.db")
	file := filepath.Join(dir, "tags.yaml")
	if err := os.WriteFile(file, []byte(policyYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	setPassphrase(t, env, db)
	r := runP(t, env, "--db", db, "policy", "create", "--file", file)
	if r.code != cli.ExitOK || !strings.Contains(r.out, "disabled") {
		t.Fatalf("%+v", r)
	}
	var ps []domain.Policy
	_ = json.Unmarshal([]byte(run(t, env, "--db", db, "policy", "list", "--tenant", fixtures.DemoTenantID, "--json").out), &ps)
	if len(ps) != 1 || ps[0].Status != domain.PolicyDisabled || ps[0].Version != 1 || ps[0].Conditions.MaxItemsPerRun != 5 {
		t.Fatalf("policies %+v", ps)
	}
	id := ps[0].ID
	// The passphrase is user_88's: a --by naming anyone else is refused on
	// that claim, before any passphrase is read, and the policy stays off.
	if r := runP(t, env, "--db", db, "policy", "enable", id, "--by", fixtures.CatalogerUserID); r.code != cli.ExitUsage ||
		!strings.Contains(r.err, "passphrase belongs to "+fixtures.DemoUserID) {
		t.Errorf("enable --by another user than the passphrase's owner: want a usage error naming %s, got %+v", fixtures.DemoUserID, r)
	}
	var still domain.Policy
	_ = json.Unmarshal([]byte(run(t, env, "--db", db, "policy", "show", id, "--json").out), &still)
	if still.Status != domain.PolicyDisabled || still.Version != 1 {
		t.Errorf("after the refused enable: %+v", still)
	}
	if r := runP(t, env, "--db", db, "policy", "enable", id, "--by", fixtures.DemoUserID); r.code != cli.ExitOK || !strings.Contains(r.out, "active (v2)") {
		t.Errorf("enable: %+v", r)
	}
	var p domain.Policy
	_ = json.Unmarshal([]byte(run(t, env, "--db", db, "policy", "show", id, "--json").out), &p)
	if p.Status != domain.PolicyActive || p.Version != 2 {
		t.Errorf("show %+v", p)
	}
	if r := run(t, env, "--db", db, "policy", "revoke", id, "--by", fixtures.DemoUserID); r.code != cli.ExitOK {
		t.Errorf("revoke: %+v", r)
	}
	if r := runP(t, env, "--db", db, "policy", "enable", id); r.code != cli.ExitUsage {
		t.Errorf("a revoked policy was enabled: %+v", r)
	}
}

func TestPolicy_CreateRefusesBroadOrUnknownDocuments(t *testing.T) {
	env, dir := tempEnv(t)
	db := filepath.Join(dir, "p.db")
	setPassphrase(t, env, db)
	cases := map[string]string{
		"unknown field":         policyYAML + "approve_everything: true\n",
		"publication":           strings.Replace(policyYAML, "trove_bind_item_identity", "trove_publish_item", 1),
		"unscoped":              strings.Replace(policyYAML, "scope: {estate_sale_ids: [sale_221]}", "scope: {estate_sale_ids: []}", 1),
		"another tenant's sale": strings.Replace(policyYAML, "sale_221", "sale_310", 1),
		"not yaml":              "::: [",
		"paid":                  strings.Replace(policyYAML, "maximum_cost_usd_per_day: 0", "maximum_cost_usd_per_day: 10", 1),
	}
	for name, doc := range cases {
		file := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".yaml")
		if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		if r := runP(t, env, "--db", db, "policy", "create", "--file", file); r.code != cli.ExitUsage {
			t.Errorf("%s: %+v", name, r)
		}
	}
	var ps []domain.Policy
	_ = json.Unmarshal([]byte(run(t, env, "--db", db, "policy", "list", "--tenant", fixtures.DemoTenantID, "--json").out), &ps)
	if len(ps) != 0 {
		t.Errorf("refused documents created %d policies", len(ps))
	}
}

// holdPolicyYAML is the README's bounded hold policy for the checkout line.
const holdPolicyYAML = `name: Checkout holds, Saturday sale
tenant_id: tenant_123
created_by: user_88
allowed_tools: [trove_record_checkout_scan]
scope: {estate_sale_ids: [sale_221]}
conditions: {maximum_items_per_run: 1, permitted_fields: [checkout_scan, status, note], checkout_scans: [hold]}
limits: {maximum_daily_actions: 200, maximum_cost_usd_per_day: 0}
`

// Sale day (issue 16): the policy file format takes a bounded hold policy
// (stored with its checkout scans), and refuses one that would let a
// policy record a sale completion, lists no scans, or lists scans for
// another tool — nothing is created then.
func TestPolicy_CreateBoundedHoldPolicy(t *testing.T) {
	env, dir := tempEnv(t)
	db := filepath.Join(dir, "p.db")
	setPassphrase(t, env, db)
	for name, doc := range map[string]string{
		"picked up":          strings.Replace(holdPolicyYAML, "checkout_scans: [hold]", "checkout_scans: [hold, picked_up]", 1),
		"no scans":           strings.Replace(holdPolicyYAML, ", checkout_scans: [hold]", "", 1),
		"scans on tag binds": strings.Replace(holdPolicyYAML, "trove_record_checkout_scan", "trove_bind_item_identity", 1),
	} {
		file := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".yaml")
		if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		if r := runP(t, env, "--db", db, "policy", "create", "--file", file); r.code != cli.ExitUsage || !strings.Contains(r.err, "checkout-scans") {
			t.Errorf("%s: %+v", name, r)
		}
	}
	file := filepath.Join(dir, "holds.yaml")
	if err := os.WriteFile(file, []byte(holdPolicyYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := runP(t, env, "--db", db, "policy", "create", "--file", file); r.code != cli.ExitOK {
		t.Fatalf("the bounded hold policy: %+v", r)
	}
	var ps []domain.Policy
	_ = json.Unmarshal([]byte(run(t, env, "--db", db, "policy", "list", "--tenant", fixtures.DemoTenantID, "--json").out), &ps)
	if len(ps) != 1 || strings.Join(ps[0].Conditions.CheckoutScans, ",") != "hold" || ps[0].AllowedTools[0] != domain.CheckoutScanTool {
		t.Fatalf("policies %+v", ps)
	}
}
