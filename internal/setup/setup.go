package setup

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// TokenPlaceholder is printed instead of the client token when Input.Token is
// empty (for example when previews are shown again after registration).
const TokenPlaceholder = "<paste the token shown at registration>"

// Fixed facts of the trovesnap stdio server.
const (
	DefaultServerName = "trovesnap"
	PortableCommand   = "trovesnap"

	envClientToken  = "TROVESNAP_CLIENT_TOKEN" // same name as config.EnvClientToken
	envDB           = "TROVESNAP_DB"           // same name as config.EnvDB
	envSupabaseURL  = "SUPABASE_URL"           // same name as config.EnvSupabaseURL
	envSupabaseAnon = "SUPABASE_ANON_KEY"      // same name as config.EnvSupabaseAPIKey

	// projectTokenRef is what the project-scoped .mcp.json holds instead of
	// the secret: Claude Code expands ${VAR} from its environment.
	projectTokenRef = "${" + envClientToken + "}"

	codexStartupTimeoutSec = 20
	codexToolTimeoutSec    = 120
)

// serverArgs are the arguments that start the stdio MCP server.
var serverArgs = []string{"mcp", "serve"}

// Host identifiers, in the order Previews returns them.
const (
	HostClaudeCodeCLI     = "claude_code_cli"
	HostClaudeCodeProject = "claude_code_project"
	HostCodex             = "codex"
	HostClaudeDesktop     = "claude_desktop"
	HostGenericStdio      = "generic_stdio"
	// The host-side guards: settings that keep an agent's own shell and
	// file tools away from trovesnap's human commands and its data.
	HostClaudeCodeGuard = "claude_code_guard"
	HostCodexGuard      = "codex_guard"
	// Remote hosts (Input.RemoteURL), after the guards.
	HostClaudeCodeRemote = "claude_code_remote"
	HostCodexRemote      = "codex_remote"
	HostCursorRemote     = "cursor_remote"
	HostGenericHTTP      = "generic_http"
	// OAuth connectors (Input.OAuthClientID): signed in, no token.
	HostChatGPTConnector = "chatgpt_connector"
	HostClaudeConnector  = "claude_connector"
)

// Formats of Preview.Text.
const (
	FormatShell = "shell"
	FormatJSON  = "json"
	FormatTOML  = "toml"
	FormatSteps = "steps" // numbered steps to follow in a host's settings
)

// Input of Previews. All fields are trusted values from the CLI.
type Input struct {
	ServerName string // key in host configs; default "trovesnap"
	Executable string // absolute path of the installed binary (ignored when Portable)
	Portable   bool   // use bare "trovesnap" (relies on PATH)
	Token      string // the client credential; "" → TokenPlaceholder is printed instead
	DBPath     string // when non-empty, passed as TROVESNAP_DB so the host's server uses the same database
	ClientID   string // for notes only
	// SupabaseURL and SupabasePublicKey, in live mode, are the project URL
	// the host's server calls and the project's public (anon) key. Neither
	// is a secret — the public key is the same for every user and grants
	// nothing without a client token — so both are printed. No host is
	// given a server key: there is none.
	SupabaseURL       string
	SupabasePublicKey string
	// DataDir is trovesnap's data directory (database, live session): the
	// guards deny an agent's shell and file tools reading or writing it.
	DataDir string
	// RemoteURL, when set, is a `trovesnap mcp serve --http` server's MCP
	// endpoint (https://host/mcp): the remote previews are added, each
	// reading the token from TROVESNAP_CLIENT_TOKEN as a bearer token.
	RemoteURL string
	// OAuthClientID, when set, is the OAuth client a connector client is
	// bound to (client register --oauth): the previews are then the
	// connector steps only (ChatGPT, Claude), which need RemoteURL and hold
	// no token — the connector signs in as the seller.
	OAuthClientID string
}

// Preview is one ready-to-paste host configuration snippet.
type Preview struct {
	Host   string `json:"host"`   // claude_code_cli | claude_code_project | codex | claude_desktop | generic_stdio
	Title  string `json:"title"`  // human heading
	Format string `json:"format"` // shell | json | toml
	Text   string `json:"text"`   // exactly what to paste
	Note   string `json:"note,omitempty"`
}

var (
	serverNameRE = domain.LazyRegexp(`^[a-z0-9][a-z0-9_-]{0,62}$`)
	tokenRE      = domain.LazyRegexp(`^tsk_[A-Za-z0-9_]+$`)
)

const maxClientIDLen = 128

// Previews renders the setup previews for every supported host, in a fixed
// order: claude_code_cli, claude_code_project, codex, claude_desktop,
// generic_stdio, then the host-side guards claude_code_guard and
// codex_guard. It is pure and deterministic: the same Input always yields
// the same output, and nothing is read from or written to the system.
func Previews(in Input) ([]Preview, error) {
	f, err := resolve(in)
	if err != nil {
		return nil, err
	}
	if f.oauthClientID != "" {
		return f.connectorPreviews(), nil
	}
	project := f.server(projectTokenRef)
	embedded := f.server(f.token)

	projectJSON, err := encodeJSON(mcpServersDoc{MCPServers: map[string]jsonServer{f.name: project}})
	if err != nil {
		return nil, err
	}
	desktopJSON, err := encodeJSON(mcpServersDoc{MCPServers: map[string]jsonServer{f.name: embedded}})
	if err != nil {
		return nil, err
	}
	genericJSON, err := encodeJSON(genericServer{Command: embedded.Command, Args: embedded.Args, Env: embedded.Env, Transport: "stdio"})
	if err != nil {
		return nil, err
	}
	claudeGuardJSON, err := encodeJSON(f.claudeGuard())
	if err != nil {
		return nil, err
	}

	previews := []Preview{
		{
			Host:   HostClaudeCodeCLI,
			Title:  "Claude Code (command line)",
			Format: FormatShell,
			Text:   f.claudeAddLine(),
			Note: f.notes(
				"Run this in a terminal; it registers the server for the current project only (local scope). Add -s user after the server name to register it for all your projects.",
				f.historyNote(),
				f.placeholderNote(),
			),
		},
		{
			Host:   HostClaudeCodeProject,
			Title:  "Claude Code project file (.mcp.json)",
			Format: FormatJSON,
			Text:   projectJSON,
			Note: f.notes(
				"Save as .mcp.json at the project root. The token is not stored in this file because project files get committed: export " + envClientToken + " (the token shown at registration) in the shell that starts Claude Code, which expands " + projectTokenRef + ".",
			),
		},
		{
			Host:   HostCodex,
			Title:  "Codex (~/.codex/config.toml)",
			Format: FormatTOML,
			Text:   f.codexTOML(),
			Note: f.notes(
				"Append to ~/.codex/config.toml, replacing any existing [mcp_servers."+f.name+"] table. This file contains the client token: keep it private.",
				f.placeholderNote(),
			),
		},
		{
			Host:   HostClaudeDesktop,
			Title:  "Claude Desktop (claude_desktop_config.json)",
			Format: FormatJSON,
			Text:   desktopJSON,
			Note: f.notes(
				f.desktopPathNote(),
				"Merge the \""+f.name+"\" entry into the mcpServers object of claude_desktop_config.json, then restart Claude Desktop. Claude Desktop does not expand environment variables, so the token is stored in this file: keep it private.",
				f.placeholderNote(),
			),
		},
		{
			Host:   HostGenericStdio,
			Title:  "Other stdio MCP clients",
			Format: FormatJSON,
			Text:   genericJSON,
			Note: f.notes(
				"Launch the command with these arguments and environment over stdio.",
				f.placeholderNote(),
			),
		},
		{
			Host:   HostClaudeCodeGuard,
			Title:  "Claude Code guard (~/.claude/settings.json)",
			Format: FormatJSON,
			Text:   claudeGuardJSON,
			Note: f.notes(
				"Merge into ~/.claude/settings.json (every project) or the project's .claude/settings.json. The MCP server is the agent's door; this keeps the agent's own shell and file tools away from the human commands and from trovesnap's data.",
				"The deny rules stop Claude Code's tools from running the commands that grant or widen authority and from reading or editing the data directory (it holds the database and, in live mode, your sign-in session).",
				"Bash rules match the command text and can be worked around (another spelling, a script): the sandbox is what holds. It confines every command the agent runs to its workspace, denies the data directory, and with allowUnsandboxedCommands false no command may leave it.",
				"The sandbox applies to the commands the agent runs, not to the MCP servers Claude Code starts, so trovesnap's own server keeps its database.",
				"Keep the data directory outside the project: `trovesnap doctor` says where it is.",
			),
		},
		{
			Host:   HostCodexGuard,
			Title:  "Codex guard (~/.codex/config.toml)",
			Format: FormatTOML,
			Text:   f.codexGuardTOML(),
			Note: f.notes(
				"Put these keys at the top level of ~/.codex/config.toml (before any [table]), merging with what is there. In workspace-write mode the commands Codex runs can write only the workspace and the temporary directories, so the data directory must not be inside the project, $TMPDIR or /tmp, nor listed (or a parent of it listed) in writable_roots.",
				"Never run Codex with sandbox_mode = \"danger-full-access\" (or --yolo) next to trovesnap: an unsandboxed shell can write the database, and nothing local can stop that.",
				"Codex's sandbox does not hide files from reading; approving a proposal also needs the seller's passphrase on a terminal.",
			),
		},
	}
	if f.remoteURL == "" {
		return previews, nil
	}
	remote, err := f.remotePreviews()
	if err != nil {
		return nil, err
	}
	return append(previews, remote...), nil
}

// RemoteEndpoint is the MCP endpoint of a `trovesnap mcp serve --http`
// server given by its URL: https (http only on loopback), without
// credentials, query or fragment; a bare host gets the path /mcp.
func RemoteEndpoint(raw string) (string, error) {
	u, err := url.Parse(raw)
	loopback := u != nil && (u.Hostname() == "localhost" || u.Hostname() == "127.0.0.1" || u.Hostname() == "::1")
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" ||
		!(u.Scheme == "https" || u.Scheme == "http" && loopback) ||
		strings.ContainsAny(raw, "\"' ${}") || strings.ContainsFunc(raw, isControl) {
		return "", errors.New("setup: the remote URL must be the server's https URL (http only on loopback), without credentials or query")
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/mcp"
	}
	return u.String(), nil
}

// connectorPreviews are the steps of a connector host (ChatGPT, Claude)
// signing in to the server at f.remoteURL through the OAuth client
// f.oauthClientID: nothing to paste but the URL and the client id.
func (f facts) connectorPreviews() []Preview {
	bound := "This client is reached only through access tokens the project's authorization server issued to the OAuth client " + f.oauthClientID +
		" for the member it acts for, naming " + f.remoteURL + " as their audience: tokens of any other OAuth client, of another account, or for another server are refused. No token is pasted anywhere."
	server := "The server must run with `trovesnap mcp serve --http --oauth --public-url` (docs/remote.md)."
	return []Preview{
		{
			Host:   HostChatGPTConnector,
			Title:  "ChatGPT connector (OAuth)",
			Format: FormatSteps,
			Text: "1. In ChatGPT, open Settings, then Apps & Connectors; under Advanced settings turn on Developer mode.\n" +
				"2. Choose Create (a custom connector). Name: TroveSnap.\n" +
				"3. MCP server URL: " + f.remoteURL + "\n" +
				"4. Authentication: OAuth. In the OAuth settings give the client ID " + f.oauthClientID + " (and the client secret the project issued with it, if any).\n" +
				"5. Create, then Connect: sign in as the seller at the project's sign-in page and approve the access.\n",
			Note: f.notes(bound, server),
		},
		{
			Host:   HostClaudeConnector,
			Title:  "Claude connector (claude.ai, Claude Desktop)",
			Format: FormatSteps,
			Text: "1. In Claude, open Settings, then Connectors, and choose Add custom connector.\n" +
				"2. Name: TroveSnap. Remote MCP server URL: " + f.remoteURL + "\n" +
				"3. Under Advanced settings give the OAuth Client ID " + f.oauthClientID + " (and its client secret, if any).\n" +
				"4. Add, then Connect: sign in as the seller at the project's sign-in page and approve the access.\n",
			Note: f.notes(bound, server),
		},
	}
}

// bearerRef is the Authorization header of the remote previews: the token
// is read from the environment, never written into a host's file.
const bearerRef = "Bearer " + projectTokenRef

// remotePreviews are the setups of a host reaching `trovesnap mcp serve
// --http` at f.remoteURL.
func (f facts) remotePreviews() ([]Preview, error) {
	type urlServer struct {
		Type    string            `json:"type,omitempty"`
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers"`
	}
	cursorJSON, err := encodeJSON(map[string]map[string]urlServer{"mcpServers": {f.name: {URL: f.remoteURL,
		Headers: map[string]string{"Authorization": "Bearer ${env:" + envClientToken + "}"}}}})
	if err != nil {
		return nil, err
	}
	genericJSON, err := encodeJSON(urlServer{Type: "streamable-http", URL: f.remoteURL, Headers: map[string]string{"Authorization": bearerRef}})
	if err != nil {
		return nil, err
	}
	envNote := "Export " + envClientToken + " (the token shown at registration) where the host starts; the server resolves it on every request, so a suspension or revocation takes effect on the next one."
	var codex strings.Builder
	fmt.Fprintf(&codex, "[mcp_servers.%s]\n", tomlKey(f.name))
	fmt.Fprintf(&codex, "url = %s\n", tomlString(f.remoteURL))
	fmt.Fprintf(&codex, "bearer_token_env_var = %s\n", tomlString(envClientToken))
	fmt.Fprintf(&codex, "tool_timeout_sec = %d\n", codexToolTimeoutSec)
	claude := strings.Join([]string{"claude", "mcp", "add", "--transport", "http", shellQuote(f.name), shellQuote(f.remoteURL),
		"--header", `"Authorization: ` + bearerRef + `"`}, " ") + "\n"
	return []Preview{
		{
			Host:   HostClaudeCodeRemote,
			Title:  "Claude Code, remote server (command line)",
			Format: FormatShell,
			Text:   claude,
			Note: f.notes("Run this in a terminal where "+envClientToken+" is set: the shell puts the token into the header Claude Code stores for this server (keep its settings private).",
				"The server must be started with `trovesnap mcp serve --http` (docs/remote.md)."),
		},
		{
			Host:   HostCodexRemote,
			Title:  "Codex, remote server (~/.codex/config.toml)",
			Format: FormatTOML,
			Text:   codex.String(),
			Note:   f.notes("Append to ~/.codex/config.toml, replacing any existing [mcp_servers."+f.name+"] table. Codex reads the token from "+envClientToken+" (bearer_token_env_var); the file holds no secret.", envNote),
		},
		{
			Host:   HostCursorRemote,
			Title:  "Cursor, remote server (~/.cursor/mcp.json)",
			Format: FormatJSON,
			Text:   cursorJSON,
			Note:   f.notes("Merge the \""+f.name+"\" entry into the mcpServers object of ~/.cursor/mcp.json; Cursor expands ${env:"+envClientToken+"}.", envNote),
		},
		{
			Host:   HostGenericHTTP,
			Title:  "Other Streamable HTTP MCP clients",
			Format: FormatJSON,
			Text:   genericJSON,
			Note:   f.notes("Send every request to this URL with this Authorization header (the client token as a bearer token).", envNote),
		},
	}, nil
}

// facts are the validated values every preview is derived from.
type facts struct {
	name          string
	command       string
	portable      bool
	token         string // real token or TokenPlaceholder
	placeholder   bool
	db            string
	clientID      string
	remoteURL     string
	oauthClientID string
	supabaseURL   string
	publicKey     string
	dataDir       string
}

func resolve(in Input) (facts, error) {
	f := facts{
		name:     in.ServerName,
		command:  in.Executable,
		portable: in.Portable,
		token:    in.Token,
		db:       in.DBPath,
		clientID: in.ClientID,
		dataDir:  in.DataDir,
	}
	if in.SupabaseURL != "" {
		u, err := url.Parse(in.SupabaseURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.RawQuery != "" ||
			strings.Contains(in.SupabaseURL, "${") || strings.ContainsFunc(in.SupabaseURL, isControl) {
			return f, errors.New("setup: the Supabase URL must be a plain http(s) project URL")
		}
		f.supabaseURL = strings.TrimRight(u.String(), "/")
		k := in.SupabasePublicKey
		if k == "" || len(k) > 4096 || strings.ContainsFunc(k, func(r rune) bool { return isControl(r) || r == ' ' }) ||
			strings.Contains(k, "${") {
			return f, errors.New("setup: live mode needs the project's public key, a single token")
		}
		f.publicKey = k
	}
	if in.RemoteURL != "" {
		u, err := RemoteEndpoint(in.RemoteURL)
		if err != nil {
			return f, err
		}
		f.remoteURL = u
	}
	if in.OAuthClientID != "" {
		if f.remoteURL == "" || len(in.OAuthClientID) > 255 || strings.ContainsFunc(in.OAuthClientID, func(r rune) bool { return r <= ' ' || r > '~' }) {
			return f, errors.New("setup: a connector needs the server's remote URL and a printable OAuth client id")
		}
		f.oauthClientID = in.OAuthClientID
	}
	if f.name == "" {
		f.name = DefaultServerName
	}
	if !serverNameRE().MatchString(f.name) {
		return facts{}, fmt.Errorf("setup: invalid server name %q: want lower-case letters, digits, '_' or '-', starting with a letter or digit, at most 63 characters", f.name)
	}
	if f.portable {
		f.command = PortableCommand
	} else {
		if f.command == "" {
			return facts{}, errors.New("setup: executable path is required unless portable")
		}
		if err := checkPath("executable", f.command); err != nil {
			return facts{}, err
		}
	}
	if f.token == "" {
		f.token, f.placeholder = TokenPlaceholder, true
	} else if !tokenRE().MatchString(f.token) {
		// Never echo the value: it is a credential.
		return facts{}, errors.New(`setup: invalid client token: want "tsk_" followed by letters, digits or '_'`)
	}
	if f.db != "" {
		if err := checkPath("database", f.db); err != nil {
			return facts{}, err
		}
	}
	if f.dataDir != "" {
		if err := checkPath("data directory", f.dataDir); err != nil {
			return facts{}, err
		}
		f.dataDir = filepath.Clean(f.dataDir)
	}
	if len(f.clientID) > maxClientIDLen || !utf8.ValidString(f.clientID) || strings.ContainsFunc(f.clientID, isControl) {
		return facts{}, fmt.Errorf("setup: invalid client id %q", f.clientID)
	}
	return f, nil
}

// checkPath requires an absolute path of printable UTF-8: host configs are
// UTF-8 text, and a control character in a pasted snippet is never intended.
func checkPath(what, p string) error {
	if !utf8.ValidString(p) || strings.ContainsFunc(p, isControl) {
		return fmt.Errorf("setup: %s path %q contains invalid UTF-8 or control characters", what, p)
	}
	if strings.Contains(p, "${") {
		// Claude Code expands ${VAR} in .mcp.json, so such a path would not
		// survive the project preview.
		return fmt.Errorf("setup: %s path %q contains \"${\"", what, p)
	}
	if !filepath.IsAbs(p) {
		return fmt.Errorf("setup: %s path %q is not absolute", what, p)
	}
	return nil
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) }

// env returns the server environment with the given token value and, in
// live mode, the project URL and public key.
func (f facts) env(token string) map[string]string {
	e := map[string]string{envClientToken: token}
	if f.db != "" {
		e[envDB] = f.db
	}
	if f.supabaseURL != "" {
		e[envSupabaseURL] = f.supabaseURL
		e[envSupabaseAnon] = f.publicKey
	}
	return e
}

// sortedEnv returns the environment as key-sorted pairs.
func (f facts) sortedEnv(token string) [][2]string {
	e := f.env(token)
	keys := make([]string, 0, len(e))
	for k := range e {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([][2]string, len(keys))
	for i, k := range keys {
		out[i] = [2]string{k, e[k]}
	}
	return out
}

type jsonServer struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
}

type mcpServersDoc struct {
	MCPServers map[string]jsonServer `json:"mcpServers"`
}

type genericServer struct {
	Command   string            `json:"command"`
	Args      []string          `json:"args"`
	Env       map[string]string `json:"env"`
	Transport string            `json:"transport"`
}

func (f facts) server(token string) jsonServer {
	return jsonServer{Command: f.command, Args: slices.Clone(serverArgs), Env: f.env(token)}
}

// encodeJSON renders v as 2-space indented JSON with a trailing newline.
// encoding/json sorts map keys; HTML escaping is off so the placeholder's
// angle brackets stay readable.
func encodeJSON(v any) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return "", fmt.Errorf("setup: encode json: %w", err)
	}
	return b.String(), nil
}

// claudeAddLine is `claude mcp add NAME -e K=V… -- COMMAND ARGS…`. The name
// comes before the -e options: -e is variadic in Claude Code and would
// swallow a following name, and `--` ends it before the command.
func (f facts) claudeAddLine() string {
	argv := []string{"claude", "mcp", "add", f.name}
	for _, kv := range f.sortedEnv(f.token) {
		argv = append(argv, "-e", kv[0]+"="+kv[1])
	}
	argv = append(argv, "--", f.command)
	argv = append(argv, serverArgs...)
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = shellQuote(a)
	}
	return strings.Join(quoted, " ") + "\n"
}

// codexTOML is the [mcp_servers.NAME] table for ~/.codex/config.toml.
func (f facts) codexTOML() string {
	var b strings.Builder
	table := "mcp_servers." + tomlKey(f.name)
	fmt.Fprintf(&b, "[%s]\n", table)
	fmt.Fprintf(&b, "command = %s\n", tomlString(f.command))
	args := make([]string, len(serverArgs))
	for i, a := range serverArgs {
		args[i] = tomlString(a)
	}
	fmt.Fprintf(&b, "args = [%s]\n", strings.Join(args, ", "))
	fmt.Fprintf(&b, "startup_timeout_sec = %d\n", codexStartupTimeoutSec)
	fmt.Fprintf(&b, "tool_timeout_sec = %d\n", codexToolTimeoutSec)
	fmt.Fprintf(&b, "\n[%s.env]\n", table)
	for _, kv := range f.sortedEnv(f.token) {
		fmt.Fprintf(&b, "%s = %s\n", tomlKey(kv[0]), tomlString(kv[1]))
	}
	return b.String()
}

// humanCommands are the trovesnap commands an agent must never run: the
// ones that grant or widen authority (approve, policy, client, limits,
// passphrase), sign a seller in (login) or discard the audit log
// (fixtures). The guards deny them.
var humanCommands = []string{"approve", "client", "fixtures", "limits", "login", "passphrase", "policy"}

// claudeSettings is the part of Claude Code's settings.json the guard sets:
// permissions.deny rules and the sandbox for the commands the agent runs.
type claudeSettings struct {
	Permissions claudePermissions `json:"permissions"`
	Sandbox     claudeSandbox     `json:"sandbox"`
}

type claudePermissions struct {
	Deny []string `json:"deny"`
}

type claudeSandbox struct {
	Enabled                  bool                `json:"enabled"`
	FailIfUnavailable        bool                `json:"failIfUnavailable"`
	AllowUnsandboxedCommands bool                `json:"allowUnsandboxedCommands"`
	Filesystem               *claudeSandboxPaths `json:"filesystem,omitempty"`
}

type claudeSandboxPaths struct {
	DenyRead  []string `json:"denyRead"`
	DenyWrite []string `json:"denyWrite"`
}

// guarded returns the paths an agent must neither read nor write: the data
// directory, and the database (with its -wal and -shm companions) when
// it lies elsewhere. dirs are directories, files single files.
func (f facts) guarded() (dirs, files []string) {
	if f.dataDir != "" {
		dirs = append(dirs, f.dataDir)
	}
	if f.db != "" && !within(f.db, f.dataDir) {
		for _, suffix := range []string{"", "-wal", "-shm"} {
			files = append(files, f.db+suffix)
		}
	}
	return dirs, files
}

// within reports whether path lies in dir (or is dir).
func within(path, dir string) bool {
	if dir == "" {
		return false
	}
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// claudeGuard is the guard for Claude Code. Path rules and sandbox paths
// start with "//": in Claude Code's settings a single leading "/" is
// relative to the settings file, "//" is the filesystem root. Read and Edit
// are the tools path rules apply to (Edit covers every built-in tool that
// writes files).
func (f facts) claudeGuard() claudeSettings {
	var deny []string
	prefixes := []string{PortableCommand}
	if !f.portable && shellQuote(f.command) == f.command {
		// The rule matches the command as typed: an absolute path that
		// needs quoting would never match, so only a plain one is listed.
		prefixes = append(prefixes, f.command)
	}
	for _, p := range prefixes {
		for _, c := range humanCommands {
			deny = append(deny, "Bash("+p+" "+c+" *)")
		}
	}
	dirs, files := f.guarded()
	g := claudeSettings{Sandbox: claudeSandbox{Enabled: true, FailIfUnavailable: true, AllowUnsandboxedCommands: false}}
	var paths []string
	for _, d := range dirs {
		deny = append(deny, "Read("+rootPath(globEscape(d))+"/**)", "Edit("+rootPath(globEscape(d))+"/**)")
		paths = append(paths, rootPath(d))
	}
	for _, fl := range files {
		deny = append(deny, "Read("+rootPath(globEscape(fl))+")", "Edit("+rootPath(globEscape(fl))+")")
		paths = append(paths, rootPath(fl))
	}
	if len(paths) > 0 {
		g.Sandbox.Filesystem = &claudeSandboxPaths{DenyRead: paths, DenyWrite: slices.Clone(paths)}
	}
	g.Permissions.Deny = deny
	return g
}

// rootPath writes an absolute path the way Claude Code's settings name the
// filesystem root: "//" + the path without its leading "/".
func rootPath(p string) string {
	return "//" + strings.TrimLeft(filepath.ToSlash(p), "/")
}

// globEscape escapes the characters that Claude Code's gitignore-style path
// rules treat as patterns, so a path matches only itself.
func globEscape(p string) string {
	var b strings.Builder
	for _, r := range p {
		if strings.ContainsRune(`\*?[]!`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// codexGuardTOML is the sandbox setting for ~/.codex/config.toml: the
// commands Codex runs may write only their workspace.
func (f facts) codexGuardTOML() string {
	var b strings.Builder
	b.WriteString("sandbox_mode = \"workspace-write\"\n")
	b.WriteString("approval_policy = \"on-request\"\n")
	dirs, files := f.guarded()
	if len(dirs)+len(files) > 0 {
		b.WriteString("# trovesnap's data must stay outside the workspace and every writable root:\n")
		for _, p := range append(dirs, files...) {
			b.WriteString("#   " + p + "\n")
		}
	}
	b.WriteString("\n[sandbox_workspace_write]\n")
	b.WriteString("network_access = false\n")
	b.WriteString("writable_roots = []\n")
	return b.String()
}

func (f facts) placeholderNote() string {
	if !f.placeholder {
		return ""
	}
	return "Replace " + TokenPlaceholder + " with the client token shown when the client was registered."
}

func (f facts) historyNote() string {
	if f.placeholder {
		return ""
	}
	return "The token is part of this command, so your shell may keep it in its history."
}

func (f facts) desktopPathNote() string {
	if f.portable {
		return "Warning: Claude Desktop does not inherit your shell PATH, so the bare command \"" + PortableCommand + "\" will likely not start: replace it with the absolute path of the installed binary (for example the output of `command -v " + PortableCommand + "`)."
	}
	return "The command is an absolute path because Claude Desktop does not inherit your shell PATH."
}

// notes joins the non-empty parts and, when known, names the client.
func (f facts) notes(parts ...string) string {
	var keep []string
	for _, p := range parts {
		if p != "" {
			keep = append(keep, p)
		}
	}
	if f.clientID != "" {
		keep = append(keep, "Client: "+f.clientID+".")
	}
	return strings.Join(keep, " ")
}

// shellQuote quotes s as one POSIX shell word. Words made only of characters
// that are never special to the shell are returned as they are; anything else
// is wrapped in single quotes, each embedded single quote becoming:
//
//	'\''
func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for i := 0; i < len(s); i++ {
		if !shellSafe(s[i]) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func shellSafe(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("_@%+=:,./-", c) >= 0
}

// tomlString quotes s as a TOML basic string: '"' and '\' are
// backslash-escaped, as are all control characters (\b \t \n \f \r, and
// \uXXXX for the rest, including U+007F). Invalid UTF-8 bytes, which TOML
// documents cannot hold, become U+FFFD.
func tomlString(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\f':
			b.WriteString(`\f`)
		case '\r':
			b.WriteString(`\r`)
		default:
			if r < 0x20 || r == 0x7f {
				fmt.Fprintf(&b, `\u%04X`, r)
			} else {
				b.WriteRune(r) // utf8.RuneError for invalid bytes → U+FFFD
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// tomlKey returns k as a bare TOML key when it is one (A-Za-z0-9_-), and as
// a quoted key otherwise.
func tomlKey(k string) string {
	if k == "" {
		return `""`
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return tomlString(k)
		}
	}
	return k
}
