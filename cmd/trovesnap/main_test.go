package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/triunalabs/trovesnap/fixtures"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// binary builds trovesnap once per test run.
func binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "trovesnap-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "trovesnap")
		if runtime.GOOS == "windows" {
			binPath += ".exe"
		}
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func serverEnv(db string) []string {
	env := []string{"TROVESNAP_DB=" + db, "HOME=" + filepath.Dir(db), "PATH=" + os.Getenv("PATH")}
	return env
}

// rawSession drives the binary with raw JSON-RPC lines, as a host would.
type rawSession struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string
	stderr *strings.Builder
	done   chan error
}

func startRaw(t *testing.T, db string) *rawSession {
	t.Helper()
	cmd := exec.Command(binary(t), "mcp", "serve")
	cmd.Env = serverEnv(db)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &rawSession{cmd: cmd, stdin: stdin, lines: make(chan string, 64), stderr: &stderr, done: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			r.lines <- sc.Text()
		}
		close(r.lines)
		r.done <- cmd.Wait()
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return r
}

func (r *rawSession) send(t *testing.T, msg string) {
	t.Helper()
	if _, err := io.WriteString(r.stdin, msg+"\n"); err != nil {
		t.Fatal(err)
	}
}

// next returns the next stdout line, which must be a JSON-RPC message.
func (r *rawSession) next(t *testing.T) map[string]any {
	t.Helper()
	select {
	case line, ok := <-r.lines:
		if !ok {
			t.Fatalf("stdout closed; stderr:\n%s", r.stderr)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil || m["jsonrpc"] != "2.0" {
			t.Fatalf("stdout carried a non-JSON-RPC line: %q", line)
		}
		return m
	case <-time.After(20 * time.Second):
		t.Fatalf("no answer; stderr:\n%s", r.stderr)
	}
	return nil
}

// The built binary over real stdio: a pre-initialize probe with a string id is
// answered and the server keeps serving; initialize, tools/list and a call
// work; stdout carries only JSON-RPC; stdin EOF ends the process.
func TestStdio_ProbeInitializeListCallAndExitOnEOF(t *testing.T) {
	db := filepath.Join(t.TempDir(), "trovesnap.db")
	r := startRaw(t, db)
	r.send(t, `{"jsonrpc":"2.0","id":"server-discover-probe-1","method":"server/discover","params":{}}`)
	probe := r.next(t)
	if probe["id"] != "server-discover-probe-1" {
		t.Fatalf("probe answer: %v", probe)
	}
	r.send(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw-test","version":"1"}}}`)
	init := r.next(t)
	if res, ok := init["result"].(map[string]any); !ok || res["serverInfo"].(map[string]any)["name"] != "trovesnap" {
		t.Fatalf("initialize: %v", init)
	}
	r.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	r.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`)
	list := r.next(t)
	tools := list["result"].(map[string]any)["tools"].([]any)
	names := map[string]bool{}
	for _, tl := range tools {
		names[tl.(map[string]any)["name"].(string)] = true
	}
	for _, n := range []string{"trove_list_sales", "trove_list_items", "trove_create_candidate", "trove_list_candidates", "trove_demand_signals"} {
		if !names[n] {
			t.Fatalf("tools/list lacks %s: %v", n, names)
		}
	}
	r.send(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"trove_list_sales","arguments":{}}}`)
	call := r.next(t)
	sc := call["result"].(map[string]any)["structuredContent"].(map[string]any)
	if sc["status"] != "succeeded" || sc["mode"] != "mock" {
		t.Fatalf("call: %v", call)
	}
	r.send(t, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"trove_list_sales","arguments":"not an object"}}`)
	bad := r.next(t)
	if bad["id"].(float64) != 4 {
		t.Fatalf("malformed arguments: %v", bad)
	}
	if res, ok := bad["result"].(map[string]any); ok {
		sc := res["structuredContent"].(map[string]any)
		if res["isError"] != true || sc["errors"].([]any)[0].(map[string]any)["code"] != "invalid_input" {
			t.Fatalf("malformed arguments: %v", bad)
		}
	} else if _, ok := bad["error"]; !ok {
		t.Fatalf("malformed arguments: %v", bad)
	}
	// A line that is not JSON at all gets a JSON-RPC error, and the server keeps serving.
	for _, line := range []string{`{garbage`, `42`, `{"foo":1}`, `[]`, `{"jsonrpc":"2.0","id":{"x":1},"method":"tools/list"}`, "\x00\x01binary"} {
		r.send(t, line)
		if parseErr := r.next(t); parseErr["error"] == nil {
			t.Fatalf("bad line %q: %v", line, parseErr)
		}
	}
	r.send(t, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"trove_list_sales","arguments":{}}}`)
	if again := r.next(t); again["id"].(float64) != 5 || again["result"] == nil {
		t.Fatalf("server stopped serving after bad input: %v", again)
	}
	_ = r.stdin.Close()
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		t.Fatal("server did not exit on stdin EOF")
	}
	for line := range r.lines {
		t.Errorf("unexpected stdout after EOF: %q", line)
	}
}

// SIGINT (how Claude Code stops servers) and SIGTERM end the server promptly.
func TestStdio_ExitsOnSignals(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("signals")
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		db := filepath.Join(t.TempDir(), "trovesnap.db")
		r := startRaw(t, db)
		r.send(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw-test","version":"1"}}}`)
		r.next(t)
		if err := r.cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		select {
		case <-r.done:
		case <-time.After(10 * time.Second):
			t.Fatalf("server ignored %v", sig)
		}
	}
}

// A go-sdk client over the real binary (CommandTransport).
func connectBinary(t testing.TB, db string, extraEnv ...string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(binary(t), "mcp", "serve")
	cmd.Env = append(serverEnv(db), extraEnv...)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "stdio-test", Version: "1"}, nil).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to binary: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func structured(t testing.TB, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	b, _ := json.Marshal(res.StructuredContent)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// Two server processes on one DB file create candidates with the same
// idempotency keys at the same time: exactly one candidate per key.
func TestStdio_TwoProcessesSameKeysOneCandidateEach(t *testing.T) {
	db := filepath.Join(t.TempDir(), "trovesnap.db")
	// Create and seed the DB first so both processes start on the same state.
	if out, err := exec.Command(binary(t), "--db", db, "doctor").CombinedOutput(); err != nil {
		t.Fatalf("doctor: %v\n%s", err, out)
	}
	const keys = 30
	// 180 candidate writes in well under a minute: lift the tenant's limit
	// (the default is 20 a minute) so the race, not the limiter, is tested.
	provision(t, db, "limits", "set", "--tenant", "tenant_123", "--candidate-writes", "1000")
	sessions := []*mcp.ClientSession{connectBinary(t, db), connectBinary(t, db)}
	ids := make([][]string, len(sessions))
	var wg sync.WaitGroup
	for p, cs := range sessions {
		ids[p] = make([]string, keys)
		for w := 0; w < 3; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := 0; k < keys; k++ {
					res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "trove_create_candidate", Arguments: map[string]any{
						"sale_id": "sale_221", "title": fmt.Sprintf("Race item %d", k), "idempotency_key": fmt.Sprintf("race-key-%04d", k),
					}})
					if err != nil {
						t.Error(err)
						return
					}
					m := structured(t, res)
					data, _ := m["data"].(map[string]any)
					if data == nil {
						t.Errorf("call failed: %v", m)
						return
					}
					id := data["candidate_id"].(string)
					if ids[p][k] != "" && ids[p][k] != id {
						t.Errorf("key %d: two candidates %s and %s", k, ids[p][k], id)
					}
					ids[p][k] = id
				}
			}()
		}
	}
	wg.Wait()
	for k := 0; k < keys; k++ {
		if ids[0][k] != ids[1][k] {
			t.Errorf("key %d: process A got %s, process B got %s", k, ids[0][k], ids[1][k])
		}
	}
	// Count from a third process: the doctor's row counts.
	out, err := exec.Command(binary(t), "--db", db, "doctor", "--json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var rep struct{ Rows map[string]int64 }
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Rows["idempotency_keys"] != keys {
		t.Errorf("idempotency rows = %d, want %d", rep.Rows["idempotency_keys"], keys)
	}
	if want := int64(len(fixtures.Dataset().Candidates) + keys); rep.Rows["inventory_candidates"] != want {
		t.Errorf("inventory_candidates = %d, want seed + %d = %d", rep.Rows["inventory_candidates"], keys, want)
	}
}
