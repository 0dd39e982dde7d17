package main_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// conformanceScenarios are the official MCP conformance suite's server
// scenarios a tools-only server can pass: the others call test tools
// (test_simple_text, json_schema_2020_12_tool …) or capabilities
// (completions, resources, prompts, sampling, elicitation) that trovesnap
// does not have.
var conformanceScenarios = []string{"server-initialize", "ping", "tools-list", "logging-set-level", "dns-rebinding-protection"}

// The suite (package.json pins it; scripts/test installs it) runs against
// the built binary's HTTP server directly: the public path, which needs no
// token (this version of the suite sends none), on loopback. Every check of
// every scenario must succeed.
func TestHTTP_ConformanceSuite(t *testing.T) {
	suite, err := filepath.Abs(filepath.Join("..", "..", "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js"))
	if err != nil {
		t.Fatal(err)
	}
	node, nodeErr := exec.LookPath("node")
	if _, err := os.Stat(suite); err != nil || nodeErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the MCP conformance suite is not installed (npm install --no-save --ignore-scripts): %v %v", err, nodeErr)
		}
		t.Skip("the MCP conformance suite is not installed (npm install --no-save --ignore-scripts)")
	}
	db := filepath.Join(t.TempDir(), "trovesnap.db")
	cli(t, db, "doctor")
	base, _, _ := startHTTP(t, db)
	for _, sc := range conformanceScenarios {
		out := t.TempDir()
		cmd := exec.Command(node, suite, "server", "--url", base+"/public/mcp", "--scenario", sc, "-o", out)
		cmd.Env = append(os.Environ(), "NO_COLOR=1")
		log, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("%s: %v\n%s", sc, err, log)
			continue
		}
		files, _ := filepath.Glob(filepath.Join(out, "*", "checks.json"))
		if len(files) != 1 {
			t.Errorf("%s: %d result files", sc, len(files))
			continue
		}
		b, err := os.ReadFile(files[0])
		if err != nil {
			t.Fatal(err)
		}
		var checks []struct {
			ID, Status, ErrorMessage string
		}
		if err := json.Unmarshal(b, &checks); err != nil || len(checks) == 0 {
			t.Errorf("%s: checks %s (%v)", sc, b, err)
			continue
		}
		for _, c := range checks {
			if c.Status != "SUCCESS" {
				t.Errorf("%s: %s %s: %s", sc, c.ID, c.Status, c.ErrorMessage)
			}
		}
	}
}
