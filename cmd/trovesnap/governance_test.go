package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	tscli "github.com/triunalabs/trovesnap/internal/cli"
)

func cli(t *testing.T, db string, argv ...string) []byte {
	t.Helper()
	cmd := exec.Command(binary(t), append([]string{"--db", db}, argv...)...)
	cmd.Env = humanEnv()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("trovesnap %v: %v", argv, err)
	}
	return out
}

// testPassphrase is the seller's approval passphrase the tests set.
const testPassphrase = "seller approval passphrase"

// humanEnv is this process's environment without the agent-shell markers:
// the tests play the seller at their own terminal, even when they run
// inside an agent host.
func humanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(tscli.AgentShellMarkers(), name) {
			env = append(env, kv)
		}
	}
	return env
}

// ensurePassphrase sets the demo seller's passphrase on db unless one is set.
func ensurePassphrase(t testing.TB, db string) {
	t.Helper()
	cmd := exec.Command(binary(t), "--db", db, "passphrase", "status", "--json")
	cmd.Env = humanEnv()
	status, err := cmd.Output()
	if err != nil {
		t.Fatalf("passphrase status: %v", err)
	}
	if bytes.Contains(status, []byte(`"set": true`)) {
		return
	}
	cmd = exec.Command(binary(t), "--db", db, "passphrase", "set", "--as", "user_88", "--passphrase-stdin")
	cmd.Env = humanEnv()
	cmd.Stdin = strings.NewReader(testPassphrase + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("passphrase set: %v\n%s", err, out)
	}
}

// provision runs a command that grants or widens authority as a
// provisioning script does: the passphrase (set first if need be) on stdin
// with --passphrase-stdin.
func provision(t testing.TB, db string, argv ...string) []byte {
	t.Helper()
	run := func(stdin string, argv ...string) ([]byte, error) {
		cmd := exec.Command(binary(t), append([]string{"--db", db}, argv...)...)
		cmd.Env = humanEnv()
		cmd.Stdin = strings.NewReader(stdin)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("trovesnap %v: %w: %s", argv, err, stderr.String())
		}
		return out, nil
	}
	ensurePassphrase(t, db)
	out, err := run(testPassphrase+"\n", append(argv, "--passphrase-stdin")...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func registerClient(t *testing.T, db, actor string) (id, token string) {
	t.Helper()
	var reg struct {
		ClientID string `json:"client_id"`
		Token    string `json:"token"`
	}
	out := provision(t, db, "client", "register", "--name", "proc test", "--type", "claude_code", "--tenant", "tenant_123",
		"--actor", actor, "--groups", "tenant_read,candidate_write", "--json", "--portable")
	if err := json.Unmarshal(out, &reg); err != nil {
		t.Fatal(err)
	}
	return reg.ClientID, reg.Token
}

func callStatus(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (status, code string) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	m := structured(t, res)
	status, _ = m["status"].(string)
	if errs, _ := m["errors"].([]any); len(errs) > 0 {
		code, _ = errs[0].(map[string]any)["code"].(string)
	}
	return status, code
}

// A client registered with the CLI and pasted into a host (its token in
// TROVESNAP_CLIENT_TOKEN) sees its tools; suspended from another process, the
// running server refuses its very next call and lists nothing; reactivated,
// it works again; revoked, it is gone for good.
func TestStdio_SuspensionSeenByRunningServer(t *testing.T) {
	db := filepath.Join(t.TempDir(), "trovesnap.db")
	cli(t, db, "doctor")
	id, token := registerClient(t, db, "user_90")
	cs := connectBinary(t, db, "TROVESNAP_CLIENT_TOKEN="+token)
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(tools.Tools) == 0 {
		t.Fatalf("registered client sees nothing: %v", err)
	}
	if st, _ := callStatus(t, cs, "trove_list_sales", map[string]any{}); st != "succeeded" {
		t.Fatalf("status %s", st)
	}
	cli(t, db, "client", "suspend", id)
	if st, code := callStatus(t, cs, "trove_list_sales", map[string]any{}); st != "blocked" || code != "client_suspended" {
		t.Errorf("after suspend: %s/%s", st, code)
	}
	if tools, _ := cs.ListTools(context.Background(), nil); len(tools.Tools) != 0 {
		t.Errorf("suspended client lists %d tools", len(tools.Tools))
	}
	provision(t, db, "client", "reactivate", id)
	if st, _ := callStatus(t, cs, "trove_list_sales", map[string]any{}); st != "succeeded" {
		t.Errorf("after reactivate: %s", st)
	}
	cli(t, db, "client", "revoke", id)
	if st, code := callStatus(t, cs, "trove_list_sales", map[string]any{}); code != "client_not_registered" {
		t.Errorf("after revoke: %s/%s", st, code)
	}
}

// The per-client limit holds across processes sharing the file: two servers
// for one client admit exactly the limit within a window.
func TestStdio_RateLimitAcrossProcesses(t *testing.T) {
	db := filepath.Join(t.TempDir(), "trovesnap.db")
	cli(t, db, "doctor")
	id, token := registerClient(t, db, "user_90")
	cli(t, db, "limits", "set", "--tenant", "tenant_123", "--client", id, "--reads", "25")
	var ok, limited atomic.Int64
	var wg sync.WaitGroup
	window := func() int64 { return time.Now().Unix() / 60 }
	startWindow := window()
	for p := 0; p < 2; p++ {
		cs := connectBinary(t, db, "TROVESNAP_CLIENT_TOKEN="+token)
		for w := 0; w < 2; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 10; i++ {
					switch st, code := callStatus(t, cs, "trove_list_sales", map[string]any{}); {
					case st == "succeeded":
						ok.Add(1)
					case code == "rate_limited":
						limited.Add(1)
					default:
						t.Errorf("unexpected %s/%s", st, code)
					}
				}
			}()
		}
	}
	wg.Wait()
	if ok.Load()+limited.Load() != 40 {
		t.Fatalf("admitted %d, limited %d: calls lost", ok.Load(), limited.Load())
	}
	// Within one minute window the two processes share one budget: exactly
	// 25 (a per-process limiter would admit 40). Only if the calls straddled a
	// window boundary may up to twice the limit pass.
	if window() == startWindow && ok.Load() != 25 {
		t.Errorf("admitted %d in one window, want exactly 25 across both processes", ok.Load())
	} else if ok.Load() < 25 || ok.Load() > 50 {
		t.Errorf("admitted %d across a window boundary (limit 25/min)", ok.Load())
	}
}
