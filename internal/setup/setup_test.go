package setup

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

const (
	testExe   = "/usr/local/bin/trovesnap"
	testToken = "tsk_Example_Token_0123456789"
	// testPublicKey stands for a project's publishable key (public by design).
	testPublicKey = "sb_publishable_Example_0123456789"
)

// awkward paths: spaces, single and double quotes, a backslash, shell
// metacharacters and non-ASCII text.
const (
	awkwardExe = `/Users/Jo O'Brien/My Apps/trove "beta" \ $HOME;rm -rf *` + "/tr\u00f6vesnap"
	awkwardDB  = "/Users/Jo O'Brien/Library/Application Support/trovesnap/seller's db `x` !.sqlite"
	// awkwardDataDir holds awkwardDB and has glob characters of its own.
	awkwardDataDir = "/Users/Jo O'Brien/Library/Application Support/trovesnap"
	testDataDir    = "/home/jo/.local/share/trovesnap"
)

type goldenCase struct {
	name string
	in   Input
}

var goldenCases = []goldenCase{
	{"default", Input{Executable: testExe, Token: testToken, ClientID: "cli_01", DataDir: testDataDir}},
	{"portable", Input{Portable: true, Token: testToken, ClientID: "cli_01", DataDir: testDataDir}},
	{"placeholder", Input{Executable: testExe}},
	{"awkward_path_db", Input{ServerName: "trovesnap-dev", Executable: awkwardExe, Token: testToken, DBPath: awkwardDB, DataDir: awkwardDataDir}},
	{"db_outside_data_dir", Input{Executable: testExe, Token: testToken, DBPath: "/srv/trove/shop.db", DataDir: testDataDir}},
	{"live", Input{Executable: testExe, Token: testToken, ClientID: "cli_01", SupabaseURL: "https://abcd1234.supabase.co/", SupabasePublicKey: testPublicKey}},
	{"remote", Input{Executable: testExe, Token: testToken, ClientID: "cli_01", DataDir: testDataDir, RemoteURL: testRemote}},
	{"connector", Input{Executable: testExe, Token: testToken, ClientID: "cli_02", DataDir: testDataDir, RemoteURL: testRemote, OAuthClientID: testOAuthClient}},
}

const testOAuthClient = "9a8b7c6d-5e4f-3a2b-1c0d-9e8f7a6b5c4d"

const testRemote = "https://mcp.example.com"

// extraCases are checked for parse-back and invariants but have no golden.
var extraCases = []goldenCase{
	{"portable_placeholder_db", Input{Portable: true, Executable: "ignored/relative", DBPath: "/var/lib/trovesnap/db.sqlite"}},
	{"placeholder_awkward", Input{ServerName: "x_1", Executable: awkwardExe, DBPath: awkwardDB}},
	{"unicode_and_tabless", Input{ServerName: "0", Executable: "/opt/\u65e5\u672c/trovesnap", Token: "tsk_" + strings.Repeat("a", 100)}},
}

// allCases are the token setups (a connector's are checked apart:
// TestPreviews_Connector).
func allCases() []goldenCase {
	return slices.DeleteFunc(append(slices.Clone(goldenCases), extraCases...), func(c goldenCase) bool { return c.in.OAuthClientID != "" })
}

// A connector (client register --oauth) gets the connector steps only:
// the URL and the OAuth client id, never a token (even one registration
// produced), and no stdio or bearer setup that would need one.
func TestPreviews_Connector(t *testing.T) {
	ps := mustPreviews(t, Input{Executable: testExe, Token: testToken, ClientID: "cli_02", RemoteURL: "https://mcp.example.com/", OAuthClientID: testOAuthClient})
	var hosts []string
	for _, p := range ps {
		hosts = append(hosts, p.Host)
		if p.Format != FormatSteps || !strings.Contains(p.Text, "https://mcp.example.com/mcp\n") || !strings.Contains(p.Text, testOAuthClient) {
			t.Errorf("%s: want steps naming the endpoint and the OAuth client:\n%s", p.Host, p.Text)
		}
	}
	if want := []string{HostChatGPTConnector, HostClaudeConnector}; !slices.Equal(hosts, want) {
		t.Errorf("hosts = %q, want %q", hosts, want)
	}
	if all, _ := json.Marshal(ps); bytes.Contains(all, []byte("tsk_")) || bytes.Contains(all, []byte(testToken)) {
		t.Errorf("connector previews carry a token: %s", all)
	}
	for _, bad := range []Input{
		{Executable: testExe, OAuthClientID: testOAuthClient},                                      // no URL
		{Executable: testExe, RemoteURL: testRemote, OAuthClientID: "has space"},                   // not one word
		{Executable: testExe, RemoteURL: testRemote, OAuthClientID: "x\n3. Paste this token"},      // a step of its own
		{Executable: testExe, RemoteURL: testRemote, OAuthClientID: strings.Repeat("a", 256)},      // too long
		{Executable: testExe, RemoteURL: "http://mcp.example.com", OAuthClientID: testOAuthClient}, // plain http
	} {
		if ps, err := Previews(bad); err == nil {
			t.Errorf("Previews(%+v) accepted: %v", bad, ps)
		}
	}
}

// render is the readable golden form of a preview list.
func render(ps []Preview) string {
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, "=== %s\ntitle: %s\nformat: %s\nnote: %s\n--- text\n%s", p.Host, p.Title, p.Format, p.Note, p.Text)
		if !strings.HasSuffix(p.Text, "\n") {
			b.WriteString("\n")
		}
	}
	return b.String()
}

func mustPreviews(t *testing.T, in Input) []Preview {
	t.Helper()
	ps, err := Previews(in)
	if err != nil {
		t.Fatalf("Previews(%+v): %v", in, err)
	}
	return ps
}

func TestPreviews_Golden(t *testing.T) {
	for _, c := range goldenCases {
		t.Run(c.name, func(t *testing.T) {
			got := render(mustPreviews(t, c.in))
			path := filepath.Join("testdata", c.name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("golden %s missing (run go test ./internal/setup/ -update): %v", path, err)
			}
			if got != string(want) {
				t.Errorf("%s differs from the golden file (run with -update if intended)\n--- got\n%s\n--- want\n%s", path, got, want)
			}
		})
	}
}

// expected is what every preview must carry for an input.
type expected struct {
	name, command string
	args          []string
	env           map[string]string // with the real token or the placeholder
	projectEnv    map[string]string // token replaced by the ${VAR} reference
}

func expect(in Input) expected {
	e := expected{name: in.ServerName, command: in.Executable, args: []string{"mcp", "serve"}}
	if e.name == "" {
		e.name = "trovesnap"
	}
	if in.Portable {
		e.command = "trovesnap"
	}
	tok := in.Token
	if tok == "" {
		tok = TokenPlaceholder
	}
	e.env = map[string]string{"TROVESNAP_CLIENT_TOKEN": tok}
	e.projectEnv = map[string]string{"TROVESNAP_CLIENT_TOKEN": "${TROVESNAP_CLIENT_TOKEN}"}
	if in.DBPath != "" {
		e.env["TROVESNAP_DB"] = in.DBPath
		e.projectEnv["TROVESNAP_DB"] = in.DBPath
	}
	if in.SupabaseURL != "" {
		u := strings.TrimRight(in.SupabaseURL, "/")
		e.env["SUPABASE_URL"], e.env["SUPABASE_ANON_KEY"] = u, in.SupabasePublicKey
		e.projectEnv["SUPABASE_URL"], e.projectEnv["SUPABASE_ANON_KEY"] = u, in.SupabasePublicKey
	}
	return e
}

func byHost(t *testing.T, ps []Preview, host string) Preview {
	t.Helper()
	for _, p := range ps {
		if p.Host == host {
			return p
		}
	}
	t.Fatalf("no %s preview", host)
	return Preview{}
}

type jsonServerT struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
}

func decodeStrict(t *testing.T, text string, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("json does not parse: %v\n%s", err, text)
	}
	if dec.More() {
		t.Fatalf("trailing data after json document:\n%s", text)
	}
}

func checkServer(t *testing.T, what string, got jsonServerT, command string, args []string, env map[string]string) {
	t.Helper()
	if got.Command != command || !slices.Equal(got.Args, args) || !reflect.DeepEqual(got.Env, env) {
		t.Errorf("%s: got command=%q args=%q env=%q; want command=%q args=%q env=%q",
			what, got.Command, got.Args, got.Env, command, args, env)
	}
}

func TestPreviews_JSONParsesBack(t *testing.T) {
	for _, c := range allCases() {
		t.Run(c.name, func(t *testing.T) {
			ps := mustPreviews(t, c.in)
			e := expect(c.in)
			for _, host := range []string{HostClaudeCodeProject, HostClaudeDesktop} {
				p := byHost(t, ps, host)
				if p.Format != FormatJSON {
					t.Fatalf("%s format %q", host, p.Format)
				}
				var doc struct {
					MCPServers map[string]jsonServerT `json:"mcpServers"`
				}
				decodeStrict(t, p.Text, &doc)
				if len(doc.MCPServers) != 1 {
					t.Fatalf("%s: want exactly one server, got %v", host, doc.MCPServers)
				}
				srv, ok := doc.MCPServers[e.name]
				if !ok {
					t.Fatalf("%s: no server %q in %v", host, e.name, doc.MCPServers)
				}
				env := e.env
				if host == HostClaudeCodeProject {
					env = e.projectEnv
				}
				checkServer(t, host, srv, e.command, e.args, env)
				if !strings.HasPrefix(p.Text, "{\n  \"mcpServers\": {\n    ") {
					t.Errorf("%s: not 2-space indented:\n%s", host, p.Text)
				}
			}

			p := byHost(t, ps, HostGenericStdio)
			var g struct {
				jsonServerT
				Transport string `json:"transport"`
			}
			decodeStrict(t, p.Text, &g)
			checkServer(t, HostGenericStdio, g.jsonServerT, e.command, e.args, e.env)
			if g.Transport != "stdio" {
				t.Errorf("generic transport = %q", g.Transport)
			}
		})
	}
}

type codexServerT struct {
	Command           string            `toml:"command"`
	Args              []string          `toml:"args"`
	Env               map[string]string `toml:"env"`
	StartupTimeoutSec int               `toml:"startup_timeout_sec"`
	ToolTimeoutSec    int               `toml:"tool_timeout_sec"`
}

func TestPreviews_CodexTOMLParsesBack(t *testing.T) {
	for _, c := range allCases() {
		t.Run(c.name, func(t *testing.T) {
			p := byHost(t, mustPreviews(t, c.in), HostCodex)
			if p.Format != FormatTOML {
				t.Fatalf("codex format %q", p.Format)
			}
			e := expect(c.in)
			var doc struct {
				MCPServers map[string]codexServerT `toml:"mcp_servers"`
			}
			dec := toml.NewDecoder(strings.NewReader(p.Text))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&doc); err != nil {
				t.Fatalf("toml does not parse: %v\n%s", err, p.Text)
			}
			srv, ok := doc.MCPServers[e.name]
			if len(doc.MCPServers) != 1 || !ok {
				t.Fatalf("want only server %q, got %v", e.name, doc.MCPServers)
			}
			checkServer(t, "codex", jsonServerT{srv.Command, srv.Args, srv.Env}, e.command, e.args, e.env)
			if srv.StartupTimeoutSec != 20 || srv.ToolTimeoutSec != 120 {
				t.Errorf("timeouts = %d, %d; want 20, 120", srv.StartupTimeoutSec, srv.ToolTimeoutSec)
			}
			if !strings.HasPrefix(p.Text, "[mcp_servers."+e.name+"]\n") || !strings.Contains(p.Text, "\n[mcp_servers."+e.name+".env]\n") {
				t.Errorf("unexpected table headers:\n%s", p.Text)
			}
		})
	}
}

// splitPOSIX splits a one-line shell command into words the way a POSIX shell
// would, for the subset a safe preview may use: unquoted words of inert
// characters, '…' single quotes, "…" double quotes without expansions, and
// backslash escapes. Anything the shell would expand or treat as an operator
// outside single quotes is an error.
func splitPOSIX(line string) ([]string, error) {
	line = strings.TrimSuffix(line, "\n")
	if strings.ContainsAny(line, "\n\r") {
		return nil, errors.New("line break inside the command")
	}
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated single quote at %d", i)
			}
			cur.WriteString(line[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(line) && line[i] != '"'; i++ {
				switch line[i] {
				case '$', '`':
					return nil, fmt.Errorf("expansion %q inside double quotes at %d", line[i], i)
				case '\\':
					if i+1 < len(line) && strings.IndexByte("$`\"\\", line[i+1]) >= 0 {
						i++
					}
				}
				cur.WriteByte(line[i])
			}
			if i >= len(line) {
				return nil, errors.New("unterminated double quote")
			}
			inWord = true
		case c == '\\':
			if i+1 >= len(line) {
				return nil, errors.New("trailing backslash")
			}
			i++
			cur.WriteByte(line[i])
			inWord = true
		case shellSafe(c) || c >= 0x80:
			cur.WriteByte(c)
			inWord = true
		default:
			return nil, fmt.Errorf("unquoted shell metacharacter %q at %d", c, i)
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

func claudeArgv(e expected) []string {
	argv := []string{"claude", "mcp", "add", e.name}
	keys := slices.Sorted(maps.Keys(e.env)) // the line lists them in key order
	for _, k := range keys {
		argv = append(argv, "-e", k+"="+e.env[k])
	}
	return append(argv, "--", e.command, "mcp", "serve")
}

func TestPreviews_ShellLineSplitsToArgv(t *testing.T) {
	for _, c := range allCases() {
		t.Run(c.name, func(t *testing.T) {
			p := byHost(t, mustPreviews(t, c.in), HostClaudeCodeCLI)
			if p.Format != FormatShell {
				t.Fatalf("format %q", p.Format)
			}
			got, err := splitPOSIX(p.Text)
			if err != nil {
				t.Fatalf("split %q: %v", p.Text, err)
			}
			want := claudeArgv(expect(c.in))
			if !slices.Equal(got, want) {
				t.Fatalf("argv mismatch\n got: %q\nwant: %q\nline: %s", got, want, p.Text)
			}
			// Claude Code's -e is variadic: the name must come before any -e,
			// and "--" must end the options before the command.
			if first := slices.Index(got, "-e"); first != 4 || got[3] != expect(c.in).name {
				t.Errorf("server name must precede the -e options: %q", got)
			}
			shellCheck(t, p.Text, want)
		})
	}
}

// shellCheck runs the line through a real /bin/sh, with `claude` defined as a
// function printing its arguments, when a shell is available.
func shellCheck(t *testing.T, line string, want []string) {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		return
	}
	script := `claude() { for a in "$@"; do printf '%s\000' "$a"; done; }` + "\n" + line
	cmd := exec.Command(sh, "-c", script)
	cmd.Env = []string{"HOME=/nonexistent", "PATH=/usr/bin:/bin"}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("sh: %v", err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if !slices.Equal(got, want[1:]) {
		t.Errorf("real shell argv mismatch\n got: %q\nwant: %q", got, want[1:])
	}
}

func TestPreviews_Invariants(t *testing.T) {
	for _, c := range allCases() {
		t.Run(c.name, func(t *testing.T) {
			ps := mustPreviews(t, c.in)
			again := mustPreviews(t, c.in)
			if !reflect.DeepEqual(ps, again) {
				t.Error("Previews is not deterministic")
			}
			var hosts []string
			for _, p := range ps {
				hosts = append(hosts, p.Host)
				if p.Title == "" || p.Text == "" || !strings.HasSuffix(p.Text, "\n") {
					t.Errorf("%s: empty title/text or missing final newline: %+v", p.Host, p)
				}
			}
			wantHosts := []string{"claude_code_cli", "claude_code_project", "codex", "claude_desktop", "generic_stdio", "claude_code_guard", "codex_guard"}
			if c.in.RemoteURL != "" {
				wantHosts = append(wantHosts, remoteHosts...)
			}
			if !slices.Equal(hosts, wantHosts) {
				t.Errorf("hosts = %q, want %q", hosts, wantHosts)
			}

			all, _ := json.Marshal(ps)
			project := byHost(t, ps, HostClaudeCodeProject)
			if c.in.Token == "" {
				if bytes.Contains(all, []byte("tsk_")) {
					t.Errorf("placeholder previews contain tsk_: %s", all)
				}
				for _, p := range serverPreviews(ps) {
					if p.Host != HostClaudeCodeProject && !strings.Contains(p.Text, TokenPlaceholder) {
						t.Errorf("%s: placeholder missing from text", p.Host)
					}
				}
			} else {
				if strings.Contains(project.Text+project.Note, c.in.Token) || strings.Contains(project.Text, "tsk_") {
					t.Errorf("project .mcp.json contains the token:\n%s", project.Text)
				}
				for _, p := range serverPreviews(ps) {
					if p.Host != HostClaudeCodeProject && !strings.Contains(p.Text, c.in.Token) {
						t.Errorf("%s: token missing from text", p.Host)
					}
				}
			}
			if !strings.Contains(project.Text, "${TROVESNAP_CLIENT_TOKEN}") || !strings.Contains(project.Note, "export TROVESNAP_CLIENT_TOKEN") {
				t.Errorf("project preview must reference the env var and tell to export it: %+v", project)
			}

			desktop := byHost(t, ps, HostClaudeDesktop)
			if c.in.Portable {
				for _, p := range ps {
					if c.in.Executable != "" && strings.Contains(p.Text, c.in.Executable) {
						t.Errorf("%s: portable preview contains the executable path", p.Host)
					}
				}
				if !strings.Contains(desktop.Note, "Warning") || !strings.Contains(desktop.Note, "absolute path") {
					t.Errorf("portable desktop note must warn about the absolute path: %q", desktop.Note)
				}
			} else if strings.Contains(desktop.Note, "Warning") {
				t.Errorf("non-portable desktop note warns: %q", desktop.Note)
			}
		})
	}
}

// Live mode: every preview names the project URL and its public key, and
// nothing else of the project — no server key, no placeholder asking for
// one; no preview of a mock setup mentions Supabase.
func TestPreviews_LiveSettings(t *testing.T) {
	ps := mustPreviews(t, Input{Executable: testExe, Token: testToken, SupabaseURL: "https://abcd1234.supabase.co/", SupabasePublicKey: testPublicKey})
	for _, p := range serverPreviews(ps) {
		if !strings.Contains(p.Text, "https://abcd1234.supabase.co") || strings.Contains(p.Text, "supabase.co/") {
			t.Errorf("%s: project URL missing or not normalised:\n%s", p.Host, p.Text)
		}
		if !strings.Contains(p.Text, "SUPABASE_ANON_KEY") || !strings.Contains(p.Text, testPublicKey) {
			t.Errorf("%s: the public key is missing:\n%s", p.Host, p.Text)
		}
	}
	for _, p := range ps {
		for _, bad := range []string{"TROVESNAP_SUPABASE_KEY", "server key", "service_role", "trovesnap_mcp"} {
			if strings.Contains(p.Text+p.Note, bad) {
				t.Errorf("%s: a live preview mentions %q:\n%s\n%s", p.Host, bad, p.Text, p.Note)
			}
		}
	}
	for _, bad := range []string{"", "a b", "key\n", "${SUPABASE_ANON_KEY}"} {
		if _, err := Previews(Input{Executable: testExe, Token: testToken, SupabaseURL: "https://abcd1234.supabase.co", SupabasePublicKey: bad}); err == nil {
			t.Errorf("public key %q accepted", bad)
		}
	}
	for _, p := range mustPreviews(t, Input{Executable: testExe, Token: testToken}) {
		if strings.Contains(p.Text+p.Note, "SUPABASE") {
			t.Errorf("%s: a mock preview mentions Supabase:\n%s", p.Host, p.Text)
		}
	}
}

// serverPreviews are the previews that start the server (every one but the
// host-side guards, which carry no token or server setting).
func serverPreviews(ps []Preview) []Preview {
	return slices.DeleteFunc(slices.Clone(ps), func(p Preview) bool {
		return p.Host == HostClaudeCodeGuard || p.Host == HostCodexGuard || slices.Contains(remoteHosts, p.Host)
	})
}

var remoteHosts = []string{HostClaudeCodeRemote, HostCodexRemote, HostCursorRemote, HostGenericHTTP}

// The remote previews (a server started with --http) parse back in each
// host's format to the endpoint and a bearer token read from the
// environment, never the token itself; the Claude Code line, run by a real
// shell with the variable set, passes the header Claude Code needs.
func TestPreviews_RemoteParsesBack(t *testing.T) {
	ps := mustPreviews(t, Input{Executable: testExe, Token: testToken, RemoteURL: testRemote})
	endpoint := testRemote + "/mcp"
	for _, h := range remoteHosts {
		if p := byHost(t, ps, h); strings.Contains(p.Text+p.Note, testToken) || strings.Contains(p.Text, "tsk_") {
			t.Errorf("%s embeds the token:\n%s", h, p.Text)
		}
	}
	var codex struct {
		MCPServers map[string]struct {
			URL               string `toml:"url"`
			BearerTokenEnvVar string `toml:"bearer_token_env_var"`
			ToolTimeoutSec    int    `toml:"tool_timeout_sec"`
		} `toml:"mcp_servers"`
	}
	if err := toml.Unmarshal([]byte(byHost(t, ps, HostCodexRemote).Text), &codex); err != nil {
		t.Fatal(err)
	}
	if c := codex.MCPServers["trovesnap"]; c.URL != endpoint || c.BearerTokenEnvVar != "TROVESNAP_CLIENT_TOKEN" || c.ToolTimeoutSec == 0 {
		t.Errorf("codex: %+v", codex)
	}
	type urlServer struct {
		Type    string            `json:"type"`
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers"`
	}
	var cursor struct {
		MCPServers map[string]urlServer `json:"mcpServers"`
	}
	decodeStrict(t, byHost(t, ps, HostCursorRemote).Text, &cursor)
	if c := cursor.MCPServers["trovesnap"]; c.URL != endpoint || c.Headers["Authorization"] != "Bearer ${env:TROVESNAP_CLIENT_TOKEN}" {
		t.Errorf("cursor: %+v", cursor)
	}
	var generic urlServer
	decodeStrict(t, byHost(t, ps, HostGenericHTTP).Text, &generic)
	if generic.URL != endpoint || generic.Type != "streamable-http" || generic.Headers["Authorization"] != "Bearer ${TROVESNAP_CLIENT_TOKEN}" {
		t.Errorf("generic: %+v", generic)
	}
	line := byHost(t, ps, HostClaudeCodeRemote).Text
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	cmd := exec.Command(sh, "-c", `claude() { for a in "$@"; do printf '%s\000' "$a"; done; }`+"\n"+line)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "TROVESNAP_CLIENT_TOKEN=" + testToken}
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	want := []string{"mcp", "add", "--transport", "http", "trovesnap", endpoint, "--header", "Authorization: Bearer " + testToken}
	if !slices.Equal(got, want) {
		t.Errorf("claude argv %q, want %q", got, want)
	}
	// Only an https URL (http on loopback), with nothing a shell or a
	// config file would read as more than a URL.
	for _, bad := range []string{"http://mcp.example.com", "https://user:pw@mcp.example.com", "https://mcp.example.com/mcp?x=1",
		"https://mcp.example.com/$(id)", "https://mcp.example.com/\"x", "ftp://mcp.example.com", "https://mcp.example.com/a b"} {
		if _, err := Previews(Input{Executable: testExe, RemoteURL: bad}); err == nil {
			t.Errorf("remote URL %q accepted", bad)
		}
	}
	if _, err := Previews(Input{Executable: testExe, RemoteURL: "http://127.0.0.1:8080/mcp"}); err != nil {
		t.Errorf("loopback http: %v", err)
	}
}

func TestPreviews_Defaults(t *testing.T) {
	ps := mustPreviews(t, Input{Executable: testExe, Token: testToken})
	if !strings.HasPrefix(ps[0].Text, "claude mcp add trovesnap -e ") {
		t.Errorf("default server name not used: %q", ps[0].Text)
	}
	if !strings.Contains(ps[3].Text, `"command": "`+testExe+`"`) {
		t.Errorf("desktop preview does not use the absolute executable:\n%s", ps[3].Text)
	}
	if strings.Contains(ps[1].Text, "TROVESNAP_DB") {
		t.Error("TROVESNAP_DB set without a DBPath")
	}
}

func TestPreviews_InvalidInput(t *testing.T) {
	ok := Input{Executable: testExe, Token: testToken}
	if _, err := Previews(ok); err != nil {
		t.Fatalf("base input rejected: %v", err)
	}
	with := func(f func(*Input)) Input { in := ok; f(&in); return in }
	cases := map[string]Input{
		"empty executable":            with(func(in *Input) { in.Executable = "" }),
		"bare executable":             with(func(in *Input) { in.Executable = "trovesnap" }),
		"relative executable":         with(func(in *Input) { in.Executable = "./bin/trovesnap" }),
		"tilde executable":            with(func(in *Input) { in.Executable = "~/bin/trovesnap" }),
		"executable with newline":     with(func(in *Input) { in.Executable = "/opt/tro\nvesnap" }),
		"executable with NUL":         with(func(in *Input) { in.Executable = "/opt/tro\x00vesnap" }),
		"executable invalid utf8":     with(func(in *Input) { in.Executable = "/opt/\xff/trovesnap" }),
		"name upper case":             with(func(in *Input) { in.ServerName = "Trovesnap" }),
		"name leading dash":           with(func(in *Input) { in.ServerName = "-trovesnap" }),
		"name leading underscore":     with(func(in *Input) { in.ServerName = "_trovesnap" }),
		"name with dot":               with(func(in *Input) { in.ServerName = "trove.snap" }),
		"name with space":             with(func(in *Input) { in.ServerName = "trove snap" }),
		"name with quote":             with(func(in *Input) { in.ServerName = `trove"snap` }),
		"name non-ascii":              with(func(in *Input) { in.ServerName = "tr\u00f6vesnap" }),
		"name too long":               with(func(in *Input) { in.ServerName = strings.Repeat("a", 64) }),
		"token with newline":          with(func(in *Input) { in.Token = "tsk_abc\n" }),
		"token with inner newline":    with(func(in *Input) { in.Token = "tsk_a\nb" }),
		"token with double quote":     with(func(in *Input) { in.Token = `tsk_a"b` }),
		"token with single quote":     with(func(in *Input) { in.Token = "tsk_a'b" }),
		"token with space":            with(func(in *Input) { in.Token = "tsk_a b" }),
		"token with dash":             with(func(in *Input) { in.Token = "tsk_a-b" }),
		"token without prefix":        with(func(in *Input) { in.Token = "abc123" }),
		"token only prefix":           with(func(in *Input) { in.Token = "tsk_" }),
		"token wrong case prefix":     with(func(in *Input) { in.Token = "TSK_abc" }),
		"relative db":                 with(func(in *Input) { in.DBPath = "data/trovesnap.db" }),
		"tilde db":                    with(func(in *Input) { in.DBPath = "~/trovesnap.db" }),
		"db with newline":             with(func(in *Input) { in.DBPath = "/var/lib/x\n.db" }),
		"portable still checks name":  with(func(in *Input) { in.Portable = true; in.ServerName = "Bad" }),
		"portable still checks token": with(func(in *Input) { in.Portable = true; in.Token = "tsk_\n" }),
		"portable still checks db":    with(func(in *Input) { in.Portable = true; in.DBPath = "rel.db" }),
		"executable with ${":          with(func(in *Input) { in.Executable = "/opt/${HOME}/trovesnap" }),
		"db with ${":                  with(func(in *Input) { in.DBPath = "/var/${X}/db.sqlite" }),
		"relative data dir":           with(func(in *Input) { in.DataDir = "data" }),
		"data dir with newline":       with(func(in *Input) { in.DataDir = "/var/lib/x\ny" }),
		"client id with newline":      with(func(in *Input) { in.ClientID = "cli\n1" }),
		"client id too long":          with(func(in *Input) { in.ClientID = strings.Repeat("c", 129) }),
		"supabase url not http":       with(func(in *Input) { in.SupabasePublicKey = testPublicKey; in.SupabaseURL = "ftp://abcd.supabase.co" }),
		"supabase url with userinfo":  with(func(in *Input) { in.SupabasePublicKey = testPublicKey; in.SupabaseURL = "https://key@abcd.supabase.co" }),
		"supabase url with query": with(func(in *Input) {
			in.SupabasePublicKey = testPublicKey
			in.SupabaseURL = "https://abcd.supabase.co/?apikey=x"
		}),
		"supabase url with ${": with(func(in *Input) {
			in.SupabasePublicKey = testPublicKey
			in.SupabaseURL = "https://abcd.supabase.co/${X}"
		}),
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			ps, err := Previews(in)
			if err == nil {
				t.Fatalf("accepted: %+v → %v", in, ps)
			}
			if ps != nil {
				t.Errorf("previews returned with error")
			}
			if len(in.Token) > len("tsk_") && strings.Contains(err.Error(), in.Token) {
				t.Errorf("error echoes the token: %v", err)
			}
		})
	}
}

func TestPreviews_PortableIgnoresExecutable(t *testing.T) {
	for _, exe := range []string{"", "relative/trovesnap", "/abs/trovesnap"} {
		ps := mustPreviews(t, Input{Portable: true, Executable: exe})
		var doc struct{ Command string }
		if err := json.Unmarshal([]byte(ps[4].Text), &doc); err != nil || doc.Command != "trovesnap" {
			t.Errorf("Executable %q: command %q, err %v", exe, doc.Command, err)
		}
	}
}

var awkwardStrings = []string{
	"",
	"plain",
	"with space",
	`double " quote`,
	"single ' quote",
	`back\slash`,
	`\u0041 literal`,
	`"""triple"""`,
	"''' triple single '''",
	"tab\there",
	"line\nbreak\r\n",
	"bell\a back\b ff\f vt\v nul\x00 us\x1f del\x7f",
	"$HOME `cmd` $(cmd) ; & | < > * ? [a] # ~ !",
	"unicode \u00e9\u65e5\u672c \U0001F600 \u2028",
	"/Users/Jo O'Brien/My Apps/trove \"beta\"/trovesnap",
	"--",
	"-e",
	"=",
	"a=b c",
}

func TestTOMLString_RoundTrips(t *testing.T) {
	for _, s := range awkwardStrings {
		q := tomlString(s)
		if strings.ContainsAny(q, "\n\r\x00\x7f") {
			t.Errorf("tomlString(%q) = %q contains a raw control character", s, q)
		}
		doc := "v = " + q + "\n" + tomlKey(s) + " = 1\n"
		var got map[string]any
		if err := toml.Unmarshal([]byte(doc), &got); err != nil {
			t.Errorf("tomlString(%q) = %s does not parse: %v", s, q, err)
			continue
		}
		if got["v"] != s {
			t.Errorf("tomlString(%q) = %s parses back as %q", s, q, got["v"])
		}
		if s != "v" && got[s] != int64(1) {
			t.Errorf("tomlKey(%q) = %s parses back as %v", s, tomlKey(s), got)
		}
	}
	for in, want := range map[string]string{
		`a"b`:    `"a\"b"`,
		`a\b`:    `"a\\b"`,
		"a\tb":   `"a\tb"`,
		"a\nb":   `"a\nb"`,
		"\x00":   `"\u0000"`,
		"\x7f":   `"\u007F"`,
		"\x1b[":  `"\u001B["`,
		"\xff":   "\"\uFFFD\"",
		"\u00e9": "\"\u00e9\"",
	} {
		if got := tomlString(in); got != want {
			t.Errorf("tomlString(%q) = %s, want %s", in, got, want)
		}
	}
	for in, want := range map[string]string{"trovesnap": "trovesnap", "a-b_C9": "a-b_C9", "a.b": `"a.b"`, "": `""`, "a b": `"a b"`} {
		if got := tomlKey(in); got != want {
			t.Errorf("tomlKey(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestShellQuote_RoundTrips(t *testing.T) {
	for _, s := range awkwardStrings {
		if strings.ContainsAny(s, "\n\r") {
			continue // previews never contain line breaks; splitPOSIX is one-line
		}
		q := shellQuote(s)
		got, err := splitPOSIX("x " + q)
		if err != nil {
			t.Errorf("shellQuote(%q) = %s: %v", s, q, err)
			continue
		}
		if len(got) != 2 || got[1] != s {
			t.Errorf("shellQuote(%q) = %s splits as %q", s, q, got)
		}
		if !strings.ContainsRune(s, 0) {
			shellCheck(t, "claude "+q, []string{"claude", s})
		}
	}
	for in, want := range map[string]string{
		"":                         "''",
		"/usr/local/bin/trovesnap": "/usr/local/bin/trovesnap",
		"TROVESNAP_DB=/a/b.db":     "TROVESNAP_DB=/a/b.db",
		"a b":                      "'a b'",
		"O'Brien":                  `'O'\''Brien'`,
		"$HOME":                    "'$HOME'",
		"~/x":                      "'~/x'",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestSplitPOSIX_RejectsUnsafe(t *testing.T) {
	for _, line := range []string{"a $b", "a;b", "a 'b", `a "b`, "a `b`", `a "$b"`, "a|b", "a\nb"} {
		if got, err := splitPOSIX(line); err == nil {
			t.Errorf("splitPOSIX(%q) = %q, want error", line, got)
		}
	}
	got, err := splitPOSIX(`a 'b c'd "e\"f" g\ h`)
	if err != nil || !slices.Equal(got, []string{"a", "b cd", `e"f`, "g h"}) {
		t.Errorf("splitPOSIX = %q, %v", got, err)
	}
}

type claudeGuardT struct {
	Permissions struct {
		Deny []string `json:"deny"`
	} `json:"permissions"`
	Sandbox struct {
		Enabled                  bool `json:"enabled"`
		FailIfUnavailable        bool `json:"failIfUnavailable"`
		AllowUnsandboxedCommands bool `json:"allowUnsandboxedCommands"`
		Filesystem               *struct {
			DenyRead  []string `json:"denyRead"`
			DenyWrite []string `json:"denyWrite"`
		} `json:"filesystem"`
	} `json:"sandbox"`
}

// Issue 13: the previews print the host-side guard. For Claude Code, the
// settings.json permission rules that deny the agent every human command
// and its file tools the data directory (a "//" root path), plus a sandbox
// that cannot be left and denies the data directory to every command; for
// Codex, the workspace-write sandbox with the data directory named as what
// must stay outside the writable roots. Both parse back; neither carries
// the token.
func TestHardening_PreviewsPrintTheHostGuards(t *testing.T) {
	for _, c := range allCases() {
		t.Run(c.name, func(t *testing.T) {
			ps := mustPreviews(t, c.in)
			cg := byHost(t, ps, HostClaudeCodeGuard)
			if cg.Format != FormatJSON {
				t.Fatalf("claude guard format %q", cg.Format)
			}
			var g claudeGuardT
			decodeStrict(t, cg.Text, &g)
			for _, cmd := range humanCommands {
				if !slices.Contains(g.Permissions.Deny, "Bash(trovesnap "+cmd+" *)") {
					t.Errorf("claude guard does not deny `trovesnap %s`: %v", cmd, g.Permissions.Deny)
				}
				if !c.in.Portable && shellQuote(c.in.Executable) == c.in.Executable &&
					!slices.Contains(g.Permissions.Deny, "Bash("+c.in.Executable+" "+cmd+" *)") {
					t.Errorf("claude guard does not deny `%s %s`", c.in.Executable, cmd)
				}
			}
			if !g.Sandbox.Enabled || !g.Sandbox.FailIfUnavailable || g.Sandbox.AllowUnsandboxedCommands {
				t.Errorf("claude guard sandbox = %+v; want enabled, failIfUnavailable, no unsandboxed commands", g.Sandbox)
			}
			if c.in.DataDir != "" {
				root := "//" + strings.TrimPrefix(c.in.DataDir, "/")
				if g.Sandbox.Filesystem == nil || !slices.Contains(g.Sandbox.Filesystem.DenyWrite, root) || !slices.Contains(g.Sandbox.Filesystem.DenyRead, root) {
					t.Errorf("sandbox does not deny %s: %+v", root, g.Sandbox.Filesystem)
				}
				for _, tool := range []string{"Read", "Edit"} {
					if !slices.ContainsFunc(g.Permissions.Deny, func(r string) bool {
						return strings.HasPrefix(r, tool+"(//") && strings.HasSuffix(r, "/**)") && strings.Contains(r, "Support/trovesnap") || r == tool+"("+root+"/**)"
					}) {
						t.Errorf("no %s rule for the data directory: %v", tool, g.Permissions.Deny)
					}
				}
			}
			if c.in.DBPath != "" && !within(c.in.DBPath, c.in.DataDir) &&
				!slices.Contains(g.Sandbox.Filesystem.DenyWrite, "//"+strings.TrimPrefix(c.in.DBPath, "/")+"-wal") {
				t.Errorf("a database outside the data directory is not guarded: %+v", g.Sandbox.Filesystem)
			}

			xg := byHost(t, ps, HostCodexGuard)
			if xg.Format != FormatTOML {
				t.Fatalf("codex guard format %q", xg.Format)
			}
			var doc struct {
				SandboxMode    string `toml:"sandbox_mode"`
				ApprovalPolicy string `toml:"approval_policy"`
				Workspace      struct {
					NetworkAccess bool     `toml:"network_access"`
					WritableRoots []string `toml:"writable_roots"`
				} `toml:"sandbox_workspace_write"`
			}
			dec := toml.NewDecoder(strings.NewReader(xg.Text))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&doc); err != nil {
				t.Fatalf("codex guard does not parse: %v\n%s", err, xg.Text)
			}
			if doc.SandboxMode != "workspace-write" || doc.ApprovalPolicy != "on-request" || len(doc.Workspace.WritableRoots) != 0 {
				t.Errorf("codex guard = %+v", doc)
			}
			if c.in.DataDir != "" && !strings.Contains(xg.Text, "#   "+c.in.DataDir+"\n") {
				t.Errorf("codex guard does not name the data directory:\n%s", xg.Text)
			}
			for _, p := range []Preview{cg, xg} {
				if strings.Contains(p.Text+p.Note, "tsk_") || strings.Contains(p.Text, TokenPlaceholder) {
					t.Errorf("%s carries a token:\n%s", p.Host, p.Text)
				}
			}
		})
	}
}

func TestGlobEscape_PathMatchesOnlyItself(t *testing.T) {
	for in, want := range map[string]string{
		"/a/b":              "/a/b",
		"/a/*b?/[c]!":       `/a/\*b\?/\[c\]\!`,
		`/a\b`:              `/a\\b`,
		"/Jo O'Brien/x `y`": "/Jo O'Brien/x `y`",
	} {
		if got := globEscape(in); got != want {
			t.Errorf("globEscape(%q) = %q, want %q", in, got, want)
		}
	}
}
