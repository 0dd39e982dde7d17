// Package setup renders the host configuration snippets ("setup previews")
// that `trovesnap client register` prints so a seller can wire an MCP host
// (Claude Code, Codex, Claude Desktop, or any stdio client) to the trovesnap
// stdio server.
//
// Everything comes from one strict, pure function, [Previews]. The trusted
// caller (the CLI) supplies the facts once — server name, the absolute path of
// the managed executable, the client token, the database path — and every
// host's snippet is derived from that same [Input]. So the Claude Code shell
// line, the Codex TOML and the Desktop JSON can never disagree about which
// binary runs, with which arguments and which environment; fixing a quoting
// or path rule fixes it for every host at once; and the output is
// deterministic, which makes it golden-testable.
//
// Rules the function enforces:
//
//   - The command is the absolute managed executable by default. The bare
//     name "trovesnap" (resolved through PATH) is used only behind the
//     explicit Portable option; Claude Desktop's note then warns that it
//     needs an absolute path because it does not inherit a shell PATH.
//   - Every value is quoted for its target syntax by a real encoder:
//     encoding/json for JSON, a TOML basic-string quoter for Codex, and POSIX
//     single-quoting for the shell line, so paths with spaces or quotes paste
//     safely.
//   - The project-scoped .mcp.json never embeds the token (project files get
//     committed): it references ${TROVESNAP_CLIENT_TOKEN}, which Claude Code
//     expands from the environment. Without a token, a placeholder is printed
//     instead, so previews shown again later never contain the secret.
//   - The package only prints. It never inspects or edits a host's settings
//     files: the seller pastes the snippet where it belongs.
//
// The package imports only the standard library.
package setup
