package main_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// startHTTP starts `trovesnap mcp serve --http 127.0.0.1:0` on db and
// returns its base URL (read from its log on stderr), the process and its
// stdout.
func startHTTP(t testing.TB, db string, extra ...string) (string, *exec.Cmd, *strings.Builder) {
	t.Helper()
	cmd := exec.Command(binary(t), append([]string{"mcp", "serve", "--http", "127.0.0.1:0"}, extra...)...)
	cmd.Env = serverEnv(db)
	var stdout strings.Builder
	cmd.Stdout = &stdout
	base := startListening(t, cmd)
	return base, cmd, &stdout
}

// startListening starts cmd (an HTTP server) and returns the base URL its
// "listening" log line names; the rest of its stderr is drained.
func startListening(t testing.TB, cmd *exec.Cmd) string {
	t.Helper()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	found := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`url=(http://127\.0\.0\.1:\d+)/mcp`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	select {
	case u := <-found:
		return u
	case <-time.After(20 * time.Second):
		t.Fatal("the server did not say where it listens")
	}
	return ""
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// The built binary serves Streamable HTTP: a client registered with the CLI
// connects with its token as a bearer, lists its tools and calls one;
// without a token it gets a 401; suspended from another process it sees no
// tools on its next request; SIGTERM drains and exits 0; stdout stays
// empty (the wire is HTTP, logs go to stderr).
func TestHTTP_BinaryServesARegisteredClient(t *testing.T) {
	db := filepath.Join(t.TempDir(), "trovesnap.db")
	cli(t, db, "doctor")
	id, token := registerClient(t, db, "user_90")
	base, cmd, stdout := startHTTP(t, db)
	ctx := context.Background()

	resp, err := http.Post(base+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "resource_metadata=") {
		t.Fatalf("no token: %d %q %s", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body)
	}

	tr := &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: bearer{token}}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "chatgpt", Version: "1.0"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) == 0 {
		t.Fatalf("registered client sees nothing: %v", err)
	}
	if st, _ := callStatus(t, cs, "trove_list_sales", map[string]any{}); st != "succeeded" {
		t.Fatalf("status %s", st)
	}
	cli(t, db, "client", "suspend", id)
	if tools, _ := cs.ListTools(ctx, nil); len(tools.Tools) != 0 {
		t.Errorf("suspended client lists %d tools", len(tools.Tools))
	}
	if st, code := callStatus(t, cs, "trove_list_sales", map[string]any{}); st != "blocked" || code != "client_suspended" {
		t.Errorf("after suspend: %s/%s", st, code)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get(base + path)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Errorf("%s: %v %v", path, resp, err)
		}
		if resp != nil {
			resp.Body.Close()
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("exit after SIGTERM: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no exit after SIGTERM")
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout carried %q", stdout.String())
	}
}
