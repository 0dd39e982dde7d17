package main_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Issue 13, finding 7: a host that writes ${TROVESNAP_CLIENT_TOKEN} into its
// config passes "" when the variable is unset in its own environment. A
// variable that is set must hold a client token: empty, blank or malformed,
// `mcp serve` refuses to start (exit 3), names the variable on stderr
// without echoing the value, writes nothing on stdout and creates no
// database. Only an unset variable means the mock demo client.
func TestHardening_SetButEmptyClientTokenRefusesToStart(t *testing.T) {
	for name, value := range map[string]string{
		"empty":     "",
		"blank":     "   \t",
		"malformed": "tsk_not-a-real-token",
		"reference": "${TROVESNAP_CLIENT_TOKEN}",
	} {
		t.Run(name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "trovesnap.db")
			cmd := exec.Command(binary(t), "mcp", "serve")
			cmd.Env = append(serverEnv(db), "TROVESNAP_CLIENT_TOKEN="+value)
			cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 3 {
				t.Fatalf("exit: %v; want status 3\nstderr: %s", err, stderr.String())
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout carried %q; want nothing", stdout.String())
			}
			if !strings.Contains(stderr.String(), "TROVESNAP_CLIENT_TOKEN") {
				t.Errorf("stderr does not name the variable: %q", stderr.String())
			}
			if v := strings.TrimSpace(value); v != "" && strings.Contains(stderr.String(), v) {
				t.Errorf("stderr echoes the value: %q", stderr.String())
			}
			if _, err := os.Stat(db); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the database was created (stat: %v); a refused start must change nothing", err)
			}
		})
	}
}

// Unset, mock mode still serves the demo client: the owner's tools are
// listed and a tenant read succeeds.
func TestHardening_UnsetClientTokenIsTheMockDemoClient(t *testing.T) {
	db := filepath.Join(t.TempDir(), "trovesnap.db")
	cs := connectBinary(t, db) // serverEnv sets no TROVESNAP_CLIENT_TOKEN
	ctx := context.Background()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	if !slices.Contains(names, "trove_list_sales") || !slices.Contains(names, "trove_propose_sale_publication") {
		t.Fatalf("the demo client does not see the owner's tools: %v", names)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "trove_list_sales", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if env := structured(t, res); env["status"] != "succeeded" {
		t.Fatalf("trove_list_sales as the demo client: %v", env)
	}
}
