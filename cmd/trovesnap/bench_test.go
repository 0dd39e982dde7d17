package main_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"
)

// Figures for the stdio binary, reported with b.ReportMetric, never asserted:
//   go test -run '^$' -bench Stdio ./cmd/trovesnap

type benchServer struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   *bufio.Reader
	id    int
	start time.Time
}

func startBench(b *testing.B, db string) *benchServer {
	b.Helper()
	cmd := exec.Command(binary(b), "mcp", "serve")
	cmd.Env = serverEnv(db)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	s := &benchServer{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20), start: time.Now()}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	s.roundTrip(b, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}`)
	fmt.Fprintln(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return s
}

func (s *benchServer) roundTrip(b *testing.B, method, params string) []byte {
	s.id++
	fmt.Fprintf(s.in, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", s.id, method, params)
	line, err := s.out.ReadBytes('\n')
	if err != nil {
		b.Fatalf("%s: %v", method, err)
	}
	return line
}

func (s *benchServer) call(b *testing.B, tool, args string) {
	line := s.roundTrip(b, "tools/call", fmt.Sprintf(`{"name":%q,"arguments":%s}`, tool, args))
	var m struct {
		Result struct{ IsError bool } `json:"result"`
	}
	if err := json.Unmarshal(line, &m); err != nil || m.Result.IsError {
		b.Fatalf("%s: %s", tool, line)
	}
}

// peakRSSMB is the server's high-water resident set (Linux).
func (s *benchServer) peakRSSMB() float64 { return peakRSSOf(s.cmd) }

func (s *benchServer) stop() { _ = s.in.Close(); _ = s.cmd.Wait() }

func seededDB(b *testing.B) string {
	db := filepath.Join(b.TempDir(), "bench.db")
	if out, err := exec.Command(binary(b), "--db", db, "doctor").CombinedOutput(); err != nil {
		b.Fatalf("%v %s", err, out)
	}
	// Benchmarks measure calls, not the limiter: lift the demo tenant's limits.
	provision(b, db, "limits", "set", "--tenant", "tenant_123", "--reads", "100000000", "--candidate-writes", "100000000")
	return db
}

func percentile(d []time.Duration, p float64) time.Duration {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[int(float64(len(d)-1)*p)]
}

// Cold start: process start to the initialize answer, on an existing DB.
func BenchmarkStdio_ColdStartToInitialize(b *testing.B) {
	db := seededDB(b)
	var ds []time.Duration
	for b.Loop() {
		s := startBench(b, db)
		ds = append(ds, time.Since(s.start))
		s.stop()
	}
	b.ReportMetric(float64(percentile(ds, 0.5).Microseconds())/1000, "p50-ms")
}

func benchCalls(b *testing.B, tool string, args func(i int) string) {
	db := seededDB(b)
	s := startBench(b, db)
	defer s.stop()
	var ds []time.Duration
	i := 0
	for b.Loop() {
		i++
		t0 := time.Now()
		s.call(b, tool, args(i))
		ds = append(ds, time.Since(t0))
	}
	b.ReportMetric(float64(percentile(ds, 0.5).Microseconds()), "p50-µs")
	b.ReportMetric(float64(percentile(ds, 0.99).Microseconds()), "p99-µs")
	b.ReportMetric(s.peakRSSMB(), "peak-RSS-MB")
}

func BenchmarkStdio_ReadListSales(b *testing.B) {
	benchCalls(b, "trove_list_sales", func(int) string { return `{}` })
}

func BenchmarkStdio_ReadListItems50(b *testing.B) {
	benchCalls(b, "trove_list_items", func(int) string { return `{"sale_id":"sale_221","limit":50}` })
}

func BenchmarkStdio_CreateCandidateNewKey(b *testing.B) {
	benchCalls(b, "trove_create_candidate", func(i int) string {
		return fmt.Sprintf(`{"sale_id":"sale_221","title":"Bench lamp","idempotency_key":"bench-%08d"}`, i)
	})
}
