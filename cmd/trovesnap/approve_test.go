package main_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/store"
)

// terminal is the built binary running under a real pseudo-terminal, with
// everything it draws collected.
type terminal struct {
	t    *testing.T
	ptmx *os.File
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	done chan error
}

func startTerminal(t *testing.T, db string, argv ...string) *terminal {
	t.Helper()
	return startTerminalEnv(t, db, nil, argv...)
}

// startTerminalEnv is startTerminal with more environment variables.
func startTerminalEnv(t *testing.T, db string, extraEnv []string, argv ...string) *terminal {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("no pseudo-terminals on Windows")
	}
	cmd := exec.Command(binary(t), argv...)
	cmd.Env = append(append(serverEnv(db), "TERM=xterm-256color", "NO_COLOR=1"), extraEnv...)
	ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 24, Cols: 80})
	if err != nil {
		t.Fatalf("pty: %v", err)
	}
	term := &terminal{t: t, ptmx: ptmx, cmd: cmd, done: make(chan error, 1)}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			term.mu.Lock()
			term.out.Write(buf[:n])
			term.mu.Unlock()
			if err != nil {
				return // EIO once the program has exited
			}
		}
	}()
	go func() { term.done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = ptmx.Close() })
	return term
}

// waitFor waits until the screen output contains s.
func (term *terminal) waitFor(s string) {
	term.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		term.mu.Lock()
		ok := bytes.Contains(term.out.Bytes(), []byte(s))
		term.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			term.mu.Lock()
			defer term.mu.Unlock()
			term.t.Fatalf("the terminal never showed %q; it showed:\n%q", s, term.out.String())
		}
		time.Sleep(20 * time.Millisecond) // polling the output, not waiting for time
	}
}

func (term *terminal) press(keys string) {
	term.t.Helper()
	if _, err := io.WriteString(term.ptmx, keys); err != nil {
		term.t.Fatal(err)
	}
}

func (term *terminal) exit() error {
	term.t.Helper()
	select {
	case err := <-term.done:
		return err
	case <-time.After(20 * time.Second):
		term.t.Fatal("the terminal did not exit")
		return nil
	}
}

// The built binary, under a real pseudo-terminal, starts, renders the
// queue, and approves on enter, a, y; the grant it writes is a human one,
// and the agent's execution (another process of the same binary) succeeds.
func TestApprove_BinaryUnderAPseudoTerminalApproves(t *testing.T) {
	db := filepath.Join(t.TempDir(), "trovesnap.db")
	ctx := context.Background()
	agent := connectBinary(t, db)
	res, err := agent.CallTool(ctx, &mcp.CallToolParams{Name: "trove_propose_candidate_promotion", Arguments: map[string]any{
		"candidate_id": fixtures.DemoCandidateID, "expected_version": 3, "idempotency_key": "pty-prop-0001"}})
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := structured(t, res)["data"].(map[string]any)["proposal_id"].(string)
	execArgs := map[string]any{"proposal_id": pid, "idempotency_key": "pty-exec-0001"}
	if st, code := callStatus(t, agent, "trove_execute_candidate_promotion", execArgs); st != "approval_required" {
		t.Fatalf("before approval: %s/%s", st, code)
	}

	ensurePassphrase(t, db)
	term := startTerminal(t, db, "approve", "--as", fixtures.DemoUserID)
	term.waitFor("approve: approval passphrase: ")
	term.press(testPassphrase + "\r")
	term.waitFor(pid)
	term.waitFor("promote_candidate")
	term.press("\r")
	term.waitFor("Targets (1)")
	term.press("a")
	term.waitFor("bound to exactly this proposal and to the agent that asked for it,")
	term.press("y")

	st, err := store.Open(ctx, db, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var grants []domain.Grant
	for deadline := time.Now().Add(20 * time.Second); len(grants) == 0; {
		if grants, err = st.ListGrants(ctx, fixtures.DemoTenantID, domain.GrantActive); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("no grant after y")
		}
		time.Sleep(20 * time.Millisecond) // polling the store
	}
	g := grants[0]
	if g.ProposalID != pid || g.IssuedBy != (domain.GrantIssuer{Type: domain.IssuerHuman, ActorID: fixtures.DemoUserID, Surface: "trovesnap_approve"}) {
		t.Fatalf("grant %+v", g)
	}
	term.press("q")
	if err := term.exit(); err != nil {
		t.Fatalf("exit: %v", err)
	}

	execArgs["idempotency_key"] = "pty-exec-0002"
	if st, code := callStatus(t, agent, "trove_execute_candidate_promotion", execArgs); !strings.HasPrefix(st, "succeeded") {
		t.Fatalf("after approval: %s/%s", st, code)
	}
}

// Without a terminal (pipes, as an agent's shell has) the binary refuses
// with exit code 5 and writes nothing to stdout.
func TestApprove_BinaryRefusesWithoutATerminal(t *testing.T) {
	db := filepath.Join(t.TempDir(), "trovesnap.db")
	cmd := exec.Command(binary(t), "approve", "--as", fixtures.DemoUserID)
	cmd.Env = serverEnv(db)
	cmd.Stdin = strings.NewReader("y\n")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 5 || stdout.Len() != 0 || !strings.Contains(stderr.String(), "needs an interactive terminal") {
		t.Fatalf("err %v, stdout %q, stderr %q", err, stdout.String(), stderr.String())
	}
}

// Keystrokes replayed into `trovesnap approve` (as an agent driving it
// through `script` would) without the passphrase issue no grant: the
// terminal asks for the passphrase before it opens, the keys are a wrong
// one, the command exits 8, the refusal is audited and the proposal stays
// pending. Inside an agent's shell it refuses before asking (exit 7).
func TestHardening_ApproveKeystrokeReplayWithoutThePassphraseIssuesNoGrant(t *testing.T) {
	db := filepath.Join(t.TempDir(), "trovesnap.db")
	ctx := context.Background()
	agent := connectBinary(t, db)
	res, err := agent.CallTool(ctx, &mcp.CallToolParams{Name: "trove_propose_candidate_promotion", Arguments: map[string]any{
		"candidate_id": fixtures.DemoCandidateID, "expected_version": 3, "idempotency_key": "replay-prop-0001"}})
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := structured(t, res)["data"].(map[string]any)["proposal_id"].(string)
	ensurePassphrase(t, db)

	for _, run := range []struct {
		name  string
		env   []string
		keys  string
		code  int
		event string
	}{
		{"enter, a, y", nil, "\r", 8, "seller_passphrase_refused"},
		{"a, y, enter", nil, "ay\r", 8, "seller_passphrase_refused"},
		{"in an agent shell", []string{"CLAUDECODE=1"}, "", 7, "agent_shell_refused"},
	} {
		term := startTerminalEnv(t, db, run.env, "approve")
		if run.keys != "" {
			term.waitFor("approve: approval passphrase: ")
			term.press(run.keys)
			_, _ = io.WriteString(term.ptmx, "\rayq") // the rest of the replay; the terminal may be gone
		}
		err := term.exit()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != run.code {
			term.mu.Lock()
			t.Fatalf("%s: exit %v, want %d; screen:\n%q", run.name, err, run.code, term.out.String())
		}
		st, err := store.Open(ctx, db, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		grants, err := st.ListGrants(ctx, fixtures.DemoTenantID, "")
		if err != nil {
			t.Fatal(err)
		}
		prop, err := st.GetProposalAdmin(ctx, fixtures.DemoTenantID, pid)
		if err != nil {
			t.Fatal(err)
		}
		evs, err := st.Events(ctx, store.EventFilter{TenantID: fixtures.DemoTenantID})
		_ = st.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(grants) != 0 || prop.Status != domain.ProposalPending {
			t.Fatalf("%s: grants %v, proposal %s", run.name, grants, prop.Status)
		}
		if last := evs[len(evs)-1]; last.Action != run.event || last.Outcome != domain.OutcomeBlocked {
			t.Fatalf("%s: last event %+v", run.name, last)
		}
	}
	if st, code := callStatus(t, agent, "trove_execute_candidate_promotion", map[string]any{"proposal_id": pid, "idempotency_key": "replay-exec-0001"}); st != "approval_required" {
		t.Fatalf("after the replays: %s/%s", st, code)
	}
}
