package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// peakRSSOf reads a process's high-water resident set (Linux), in MB.
func peakRSSOf(cmd *exec.Cmd) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			kb, _ := strconv.Atoi(strings.Fields(l)[1])
			return float64(kb) / 1024
		}
	}
	return 0
}

// BenchmarkHTTP_50ClientsLoad is issue 17's load target on loopback: 50
// concurrent sessions (ten registered clients, five sessions each) against
// the built binary's --http server, each making TROVESNAP_LOAD_CALLS
// tools/call (default 1000) of trove_list_sales. The floor, measured in the
// same run on the same sessions, is a JSON-RPC ping: the HTTP transport and
// the SDK without the gate. Reports errors (must be 0), p50/p99 of both,
// throughput and the server's peak RSS. Run with -benchtime 1x.
func BenchmarkHTTP_50ClientsLoad(b *testing.B) {
	calls := 1000
	if v, err := strconv.Atoi(os.Getenv("TROVESNAP_LOAD_CALLS")); err == nil && v > 0 {
		calls = v
	}
	db := seededDB(b)
	var tokens []string
	for i := range 10 {
		var reg struct {
			Token string `json:"token"`
		}
		out := provision(b, db, "client", "register", "--name", fmt.Sprintf("load %d", i), "--type", "claude_code", "--tenant", "tenant_123",
			"--actor", "user_88", "--groups", "tenant_read", "--json", "--portable")
		if err := json.Unmarshal(out, &reg); err != nil {
			b.Fatal(err)
		}
		tokens = append(tokens, reg.Token)
	}
	base, cmd, _ := startHTTP(b, db)
	ctx := context.Background()
	var sessions []*mcp.ClientSession
	for i := range 50 {
		tr := &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: bearer{tokens[i%10]}}}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "load", Version: "1"}, nil).Connect(ctx, tr, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		sessions = append(sessions, cs)
	}
	run := func(op func(cs *mcp.ClientSession) error) (lat []time.Duration, errs int, wall time.Duration) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		start := time.Now()
		for _, cs := range sessions {
			wg.Add(1)
			go func() {
				defer wg.Done()
				mine := make([]time.Duration, 0, calls)
				bad := 0
				for range calls {
					t0 := time.Now()
					if err := op(cs); err != nil {
						bad++
					}
					mine = append(mine, time.Since(t0))
				}
				mu.Lock()
				lat, errs = append(lat, mine...), errs+bad
				mu.Unlock()
			}()
		}
		wg.Wait()
		return lat, errs, time.Since(start)
	}
	for b.Loop() {
		floor, floorErrs, floorWall := run(func(cs *mcp.ClientSession) error { return cs.Ping(ctx, nil) })
		lat, errs, wall := run(func(cs *mcp.ClientSession) error {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "trove_list_sales", Arguments: map[string]any{}})
			if err != nil {
				return err
			}
			if m, _ := res.StructuredContent.(map[string]any); m["status"] != "succeeded" {
				return fmt.Errorf("status %v", m["status"])
			}
			return nil
		})
		b.ReportMetric(float64(errs+floorErrs), "errors")
		b.ReportMetric(float64(percentile(lat, 0.5).Microseconds())/1000, "call-p50-ms")
		b.ReportMetric(float64(percentile(lat, 0.99).Microseconds())/1000, "call-p99-ms")
		b.ReportMetric(float64(percentile(floor, 0.5).Microseconds())/1000, "ping-p50-ms")
		b.ReportMetric(float64(percentile(floor, 0.99).Microseconds())/1000, "ping-p99-ms")
		b.ReportMetric(float64(len(lat))/wall.Seconds(), "calls/s")
		b.ReportMetric(float64(len(floor))/floorWall.Seconds(), "pings/s")
		b.ReportMetric(peakRSSOf(cmd), "peak-RSS-MB")
	}
}
