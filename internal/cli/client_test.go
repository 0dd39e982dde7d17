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

func registerJSON(t *testing.T, env map[string]string, db string, extra ...string) cli.RegisterOutput {
	t.Helper()
	argv := append([]string{"--db", db, "client", "register", "--name", "Cat Claude", "--type", "claude_code",
		"--tenant", fixtures.DemoTenantID, "--actor", fixtures.CatalogerUserID, "--groups", "tenant_read,candidate_write", "--json"}, extra...)
	setPassphrase(t, env, db)
	r := runP(t, env, argv...)
	if r.code != cli.ExitOK {
		t.Fatalf("register: %+v", r)
	}
	var out cli.RegisterOutput
	if err := json.Unmarshal([]byte(r.out), &out); err != nil {
		t.Fatalf("register --json: %v\n%s", err, r.out)
	}
	return out
}

// The CLI contract: register --json prints client_id, token and one preview
// per host; list/show --json; suspend/reactivate/revoke/rotate; revoked is final.
func TestClient_RegisterListShowAndLifecycle(t *testing.T) {
	env, dir := tempEnv(t)
	db := filepath.Join(dir, "c.db")
	reg := registerJSON(t, env, db)
	if !domain.ValidID("mcp_client", reg.ClientID) || !domain.WellFormedToken(reg.Token) || reg.Client.Status != "active" {
		t.Fatalf("%+v", reg)
	}
	hosts := map[string]bool{}
	for _, p := range reg.Previews {
		hosts[p.Host] = true
		if p.Host == "claude_code_cli" && (!strings.Contains(p.Text, reg.Token) || !strings.Contains(p.Text, "/opt/trovesnap/bin/trovesnap") || !strings.Contains(p.Text, "TROVESNAP_DB=")) {
			t.Errorf("claude preview: %s", p.Text)
		}
	}
	for _, h := range []string{"claude_code_cli", "claude_code_project", "codex", "claude_desktop", "generic_stdio"} {
		if !hosts[h] {
			t.Errorf("no %s preview", h)
		}
	}
	// list and show never print the token or its hash.
	list := run(t, env, "--db", db, "client", "list", "--json")
	var cs []domain.Client
	if err := json.Unmarshal([]byte(list.out), &cs); err != nil || len(cs) != 3 {
		t.Fatalf("list: %v %s", err, list.out)
	}
	show := run(t, env, "--db", db, "client", "show", reg.ClientID, "--json")
	var d cli.ClientDetail
	if err := json.Unmarshal([]byte(show.out), &d); err != nil || d.ID != reg.ClientID || d.Limits.ReadsPerMinute != 120 || !d.HasCredential {
		t.Fatalf("show: %v %s", err, show.out)
	}
	for _, r := range []result{list, show, run(t, env, "--db", db, "client", "list"), run(t, env, "--db", db, "client", "show", reg.ClientID)} {
		if strings.Contains(r.out+r.err, "tsk_") || strings.Contains(r.out, "credential_hash") {
			t.Errorf("secret printed: %s", r.out)
		}
	}
	// Preview again: no secret.
	pv := run(t, env, "--db", db, "client", "preview", reg.ClientID)
	if pv.code != cli.ExitOK || strings.Contains(pv.out, "tsk_") || !strings.Contains(pv.out, "paste the token") {
		t.Errorf("preview: %+v", pv)
	}
	// Lifecycle.
	steps := []struct {
		argv []string
		code cli.ExitCode
		want string
	}{
		{[]string{"client", "suspend", reg.ClientID}, cli.ExitOK, "suspended"},
		{[]string{"client", "suspend", reg.ClientID}, cli.ExitUsage, "cannot become"},
		{[]string{"client", "reactivate", reg.ClientID}, cli.ExitOK, "active"},
		{[]string{"client", "rotate", reg.ClientID}, cli.ExitOK, "New token"},
		{[]string{"client", "revoke", reg.ClientID}, cli.ExitOK, "revoked"},
		{[]string{"client", "reactivate", reg.ClientID}, cli.ExitUsage, "cannot become"},
		{[]string{"client", "rotate", reg.ClientID}, cli.ExitUsage, "revoked"},
		{[]string{"client", "show", "mcp_client_nope"}, cli.ExitUsage, "unknown client"},
	}
	for _, s := range steps {
		r := run(t, env, append([]string{"--db", db}, s.argv...)...)
		if s.argv[1] == "reactivate" || s.argv[1] == "rotate" { // they widen authority: the passphrase
			r = runP(t, env, append([]string{"--db", db}, s.argv...)...)
		}
		if r.code != s.code || !strings.Contains(r.out+r.err, s.want) {
			t.Errorf("%v: %+v", s.argv, r)
		}
	}
}

func TestClient_RegisterRejectsBadInputWritingNothing(t *testing.T) {
	env, dir := tempEnv(t)
	db := filepath.Join(dir, "c.db")
	base := []string{"--db", db, "client", "register", "--name", "X", "--type", "claude_code", "--tenant", fixtures.DemoTenantID, "--actor", fixtures.CatalogerUserID, "--groups", "tenant_read"}
	cases := map[string][]string{
		"bad type":                {"--type", "robot"},
		"bad group":               {"--groups", "everything"},
		"actor of another tenant": {"--actor", fixtures.OtherOwnerUserID},
		"unknown tenant":          {"--tenant", "tenant_999"},
		"missing name":            {"--name", ""},
	}
	setPassphrase(t, env, db)
	for name, override := range cases {
		argv := append(append([]string{}, base...), override...)
		r := runP(t, env, argv...)
		if r.code != cli.ExitUsage {
			t.Errorf("%s: %+v", name, r)
		}
	}
	list := run(t, env, "--db", db, "client", "list", "--json")
	var cs []domain.Client
	_ = json.Unmarshal([]byte(list.out), &cs)
	if len(cs) != 2 {
		t.Errorf("rejected registrations wrote clients: %d", len(cs))
	}
}

// Previews go to a file the user names — never into a host's settings.
func TestClient_RegisterOutFile(t *testing.T) {
	env, dir := tempEnv(t)
	db := filepath.Join(dir, "c.db")
	out := filepath.Join(dir, "setup.txt")
	reg := registerJSON(t, env, db, "--out", out)
	_ = reg
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(out)
	if fi.Mode().Perm() != 0o600 || !strings.Contains(string(b), "claude mcp add") || !strings.Contains(string(b), "tsk_") {
		t.Errorf("out file %v:\n%s", fi.Mode(), b)
	}
	for _, bad := range []string{out, filepath.Join(dir, ".mcp.json"), filepath.Join(dir, "claude_desktop_config.json")} {
		r := runP(t, env, "--db", db, "client", "register", "--name", "Y", "--type", "custom", "--tenant", fixtures.DemoTenantID, "--actor", fixtures.DemoUserID, "--groups", "tenant_read", "--out", bad)
		if r.code != cli.ExitUsage {
			t.Errorf("--out %s: %+v", bad, r)
		}
	}
	list := run(t, env, "--db", db, "client", "list", "--json")
	var cs []domain.Client
	_ = json.Unmarshal([]byte(list.out), &cs)
	if len(cs) != 3 {
		t.Errorf("a refused --out registered a client anyway: %d clients", len(cs))
	}
}

// tools list --as explains, per tool, why a client does or does not see it.
func TestTools_ListAsExplainsVisibility(t *testing.T) {
	env, dir := tempEnv(t)
	db := filepath.Join(dir, "c.db")
	reg := registerJSON(t, env, db)
	r := run(t, env, "--db", db, "tools", "list", "--as", reg.ClientID, "--json")
	var out cli.ToolsListOutput
	if err := json.Unmarshal([]byte(r.out), &out); err != nil {
		t.Fatal(err, r.out)
	}
	if out.Principal == nil || out.Principal.Role != "cataloger" {
		t.Fatalf("principal: %+v", out.Principal)
	}
	visible := 0
	for _, tool := range out.Tools {
		if tool.Decision == nil || tool.Decision.Reason == "" {
			t.Fatalf("%s: no decision", tool.Name)
		}
		if tool.Decision.Visible {
			visible++
		}
		if tool.Name == "trove_create_candidate" && !tool.Decision.Visible {
			t.Errorf("cataloger cannot see create_candidate: %s", tool.Decision.Reason)
		}
	}
	if visible == 0 || visible == len(out.Tools) {
		t.Errorf("visible %d of %d", visible, len(out.Tools))
	}
	human := run(t, env, "--db", db, "tools", "list", "--as", reg.ClientID)
	if !strings.Contains(human.out, "VISIBLE") || !strings.Contains(human.out, "tools visible") {
		t.Errorf("human: %s", human.out)
	}
	run(t, env, "--db", db, "client", "suspend", reg.ClientID)
	r = run(t, env, "--db", db, "tools", "list", "--as", reg.ClientID, "--json")
	_ = json.Unmarshal([]byte(r.out), &out)
	for _, tool := range out.Tools {
		if tool.Decision.Visible {
			t.Errorf("suspended client sees %s", tool.Name)
		}
	}
	reg2 := run(t, env, "tools", "list")
	if reg2.code != cli.ExitOK || !strings.Contains(reg2.out, "trove_create_candidate") {
		t.Errorf("registry: %+v", reg2)
	}
}

func TestLimits_SetAndShow(t *testing.T) {
	env, dir := tempEnv(t)
	db := filepath.Join(dir, "c.db")
	if r := run(t, env, "--db", db, "limits", "set", "--tenant", fixtures.DemoTenantID, "--reads", "7"); r.code != cli.ExitOK {
		t.Fatal(r)
	}
	r := run(t, env, "--db", db, "limits", "show", "--tenant", fixtures.DemoTenantID, "--json")
	var l domain.Limits
	if err := json.Unmarshal([]byte(r.out), &l); err != nil || l.ReadsPerMinute != 7 || l.CandidateWritesPerMinute != 20 {
		t.Errorf("%v %s", err, r.out)
	}
	if r := run(t, env, "--db", db, "limits", "set", "--tenant", fixtures.DemoTenantID, "--reads", "-1"); r.code != cli.ExitUsage {
		t.Errorf("negative limit: %+v", r)
	}
}

// A connector (client register --oauth): bound to its OAuth client for the
// server's /mcp, no token printed anywhere, the connector steps as
// previews; it cannot be given a token by rotation, and a second binding
// of the same OAuth client is refused, writing nothing.
func TestClient_RegisterConnector(t *testing.T) {
	env, dir := tempEnv(t)
	db := filepath.Join(dir, "c.db")
	const oauthID = "9a8b7c6d-5e4f-3a2b-1c0d-9e8f7a6b5c4d"
	reg := registerJSON(t, env, db, "--type", "chatgpt", "--oauth-client-id", oauthID, "--remote-url", "https://mcp.example.com")
	if reg.Token != "" || reg.Client.OAuthClientID != oauthID {
		t.Fatalf("connector registration: %+v", reg)
	}
	var hosts []string
	for _, p := range reg.Previews {
		hosts = append(hosts, p.Host)
		if !strings.Contains(p.Text, "https://mcp.example.com/mcp") || !strings.Contains(p.Text, oauthID) {
			t.Errorf("%s: %s", p.Host, p.Text)
		}
	}
	if strings.Join(hosts, ",") != "chatgpt_connector,claude_connector" {
		t.Errorf("previews %v", hosts)
	}
	human := runP(t, env, "--db", db, "client", "register", "--name", "Claude", "--type", "claude_desktop", "--tenant", fixtures.DemoTenantID,
		"--actor", fixtures.CatalogerUserID, "--groups", "tenant_read", "--oauth", "--oauth-client-id", "claude-web", "--remote-url", "https://mcp.example.com")
	if human.code != cli.ExitOK || strings.Contains(human.out+human.err, "tsk_") || !strings.Contains(human.out, "no token to paste") {
		t.Fatalf("register --oauth: %+v", human)
	}
	list := func() int {
		var cs []domain.Client
		_ = json.Unmarshal([]byte(run(t, env, "--db", db, "client", "list", "--json").out), &cs)
		return len(cs)
	}
	n := list()
	for name, argv := range map[string][]string{
		"taken":      {"--oauth-client-id", oauthID, "--remote-url", "https://mcp.example.com"},
		"no url":     {"--oauth", "--oauth-client-id", "other"},
		"no id":      {"--oauth", "--remote-url", "https://mcp.example.com"},
		"plain http": {"--oauth-client-id", "other", "--remote-url", "http://mcp.example.com"},
	} {
		r := runP(t, env, append([]string{"--db", db, "client", "register", "--name", "X", "--type", "chatgpt", "--tenant", fixtures.DemoTenantID,
			"--actor", fixtures.CatalogerUserID, "--groups", "tenant_read"}, argv...)...)
		if r.code != cli.ExitUsage {
			t.Errorf("%s: %+v", name, r)
		}
	}
	if r := runP(t, env, "--db", db, "client", "rotate", reg.ClientID); r.code != cli.ExitUsage || strings.Contains(r.out, "tsk_") {
		t.Errorf("rotating a connector: %+v", r)
	}
	if got := list(); got != n {
		t.Errorf("refused registrations wrote clients: %d → %d", n, got)
	}
	// Preview of the connector: its steps again.
	if pv := run(t, env, "--db", db, "client", "preview", reg.ClientID, "--remote-url", "https://mcp.example.com"); pv.code != cli.ExitOK || !strings.Contains(pv.out, oauthID) {
		t.Errorf("preview: %+v", pv)
	}
}
