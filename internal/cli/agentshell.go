package cli

import (
	"errors"
	"fmt"
	"strings"
)

// agentMarker is an environment variable an agent host sets for the
// commands its agent runs.
type agentMarker struct {
	Name string // the variable
	Host string // who sets it
	Note string // what it is known from
}

// agentMarkers is the only list of agent-shell markers. A command that
// grants or widens authority refuses to run when any of them holds a
// non-blank value. It is a tripwire, not a boundary: an agent that unsets
// the variable passes it, and the passphrase is what still stands (see
// docs/threat-model.md). Markers that also appear in a person's own
// terminal (Cursor's CURSOR_TRACE_ID, set in every integrated terminal of
// the editor) are left out; Aider sets no marker of its own.
var agentMarkers = []agentMarker{
	{"CLAUDECODE", "Claude Code", "set to 1 in the shell of its Bash tool (since v0.2.47) and in the IDE extensions' terminals"},
	{"CLAUDE_CODE_ENTRYPOINT", "Claude Code", "cli, sdk-ts, sdk-py …: inherited by every command Claude Code starts"},
	{"CODEX_SANDBOX", "Codex", "seatbelt (macOS) for commands run under its sandbox"},
	{"CODEX_SANDBOX_NETWORK_DISABLED", "Codex", "1 for its shell tool's commands when the sandbox blocks the network"},
	{"CODEX_THREAD_ID", "Codex", "the session's thread id, exported into every shell it spawns"},
	{"GEMINI_CLI", "Gemini CLI", "1 in the environment of run_shell_command"},
	{"CURSOR_AGENT", "Cursor", "1 for commands of the Cursor agent (CLI and agent terminals)"},
	{"CLINE_ACTIVE", "Cline", "true in the terminals Cline opens to run commands"},
	{"GOOSE_TERMINAL", "Goose", "1 in its built-in shell session"},
	{"OPENCODE", "OpenCode", "1 for the commands of its bash tool"},
	{"OPENCODE_CLIENT", "OpenCode", "the client name, for the commands of its bash tool"},
	{"AI_AGENT", "any agent host", "the cross-tool convention: set by a host for the commands its agent runs"},
}

// AgentShellMarkers returns the names of the markers, for tests that must
// run the human commands with a clean environment.
func AgentShellMarkers() []string {
	out := make([]string, len(agentMarkers))
	for i, m := range agentMarkers {
		out[i] = m.Name
	}
	return out
}

// errAgentShell refuses a human command inside an agent's shell (exit 7).
var errAgentShell = errors.New("refused inside an agent's shell")

// agentShellError names the marker found.
type agentShellError struct {
	Command string
	Marker  agentMarker
}

func (e *agentShellError) Error() string {
	return fmt.Sprintf("%s: %s (%s is set, as %s sets it for the commands its agent runs): commands that grant or widen authority "+
		"are for the seller at their own terminal, never for an agent; run it yourself in a terminal the agent does not drive",
		e.Command, errAgentShell, e.Marker.Name, e.Marker.Host)
}

func (e *agentShellError) Unwrap() error { return errAgentShell }

// detectAgentShell returns the first marker set to a non-blank value. An
// empty or blank value counts as unset (what `VAR=` leaves).
func detectAgentShell(getenv func(string) string) (agentMarker, bool) {
	for _, m := range agentMarkers {
		if strings.TrimSpace(getenv(m.Name)) != "" {
			return m, true
		}
	}
	return agentMarker{}, false
}
