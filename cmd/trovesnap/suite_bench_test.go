package main_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkSuite is issue 18's benchmark table (scripts/bench): the built
// binary over raw stdio and the floor server (bench/floor: the same SQLite
// file, one connection, prepared statements, one chained event per call)
// measured in the same run, each figure beside its ratio to the floor.
// Figures are printed, never asserted. Run with -benchtime 1x;
// TROVESNAP_BENCH_CALLS sets the calls per figure (default 1000).
func BenchmarkSuite(b *testing.B) {
	calls := 1000
	if n, err := fmt.Sscan(os.Getenv("TROVESNAP_BENCH_CALLS"), &calls); n != 1 || err != nil {
		calls = 1000
	}
	floorBin := filepath.Join(b.TempDir(), "floor")
	if out, err := exec.Command("go", "build", "-o", floorBin, "../../bench/floor").CombinedOutput(); err != nil {
		b.Fatalf("building the floor: %v\n%s", err, out)
	}
	seed := seededDB(b)
	copyDB := func(name string) string {
		dst := filepath.Join(b.TempDir(), name)
		for _, suffix := range []string{"", "-wal", "-shm"} {
			if data, err := os.ReadFile(seed + suffix); err == nil {
				if err := os.WriteFile(dst+suffix, data, 0o600); err != nil {
					b.Fatal(err)
				}
			}
		}
		return dst
	}
	trove := func(db string, env ...string) *exec.Cmd {
		cmd := exec.Command(binary(b), "mcp", "serve")
		cmd.Env = append(serverEnv(db), env...)
		return cmd
	}
	floor := func(db string, audit bool) *exec.Cmd {
		return exec.Command(floorBin, "-db", db, fmt.Sprintf("-audit=%v", audit))
	}
	tdb, fdb := copyDB("trove.db"), copyDB("floor.db")
	for b.Loop() {
		var rows []suiteRow
		cold := func(mk func() *exec.Cmd) time.Duration {
			var ds []time.Duration
			for range 30 {
				p := startProc(b, mk())
				ds = append(ds, p.ready)
				p.stop()
			}
			return percentile(ds, 0.5)
		}
		rows = append(rows, suiteRow{name: "cold start (spawn → initialize answered)", unit: "ms",
			trove: ms(cold(func() *exec.Cmd { return trove(tdb) })), floor: ms(cold(func() *exec.Cmd { return floor(fdb, true) }))})

		tp, fp := startProc(b, trove(tdb)), startProc(b, floor(fdb, true))
		for _, c := range []struct {
			name string
			tool string
			args func(i int) string
		}{
			{"trove_list_sales (audited read)", "trove_list_sales", func(int) string { return `{}` }},
			{"trove_list_items limit 50", "trove_list_items", func(int) string { return `{"sale_id":"sale_221","limit":50}` }},
			{"trove_create_candidate (new key)", "trove_create_candidate", func(i int) string {
				return fmt.Sprintf(`{"sale_id":"sale_221","title":"Bench lamp","idempotency_key":"suite-%08d"}`, i)
			}},
		} {
			t50, t99, tBytes := tp.timeCalls(b, c.tool, c.args, calls)
			f50, f99, fBytes := fp.timeCalls(b, c.tool, c.args, calls)
			rows = append(rows, suiteRow{name: c.name + " p50", unit: "µs", trove: us(t50), floor: us(f50)},
				suiteRow{name: c.name + " p99", unit: "µs", trove: us(t99), floor: us(f99)},
				suiteRow{name: c.name + " answer", unit: "KB", trove: float64(tBytes) / 1024, floor: float64(fBytes) / 1024})
		}
		tRSS, fRSS := tp.peakRSS(), fp.peakRSS()
		tp.stop()
		fp.stop()
		rows = append(rows, suiteRow{name: "peak RSS (after the calls above)", unit: "MB", trove: tRSS, floor: fRSS})

		unaudited := startProc(b, floor(fdb, false))
		u50, _, _ := unaudited.timeCalls(b, "trove_list_sales", func(int) string { return `{}` }, calls)
		unaudited.stop()
		rows = append(rows, suiteRow{name: "trove_list_sales p50 vs the UNAUDITED floor", unit: "µs", trove: rows[1].trove, floor: us(u50)})

		for _, n := range []int{1, 8} {
			rows = append(rows, suiteRow{name: fmt.Sprintf("calls/s, %d caller(s) (a process each, one database)", n), unit: "/s",
				trove: throughput(b, n, func() *exec.Cmd { return trove(tdb) }), floor: throughput(b, n, func() *exec.Cmd { return floor(fdb, true) })})
		}

		for _, n := range []int{1, 8} {
			rows = append(rows, suiteRow{name: fmt.Sprintf("calls/s, %d in flight on one session (one process)", n), unit: "/s",
				trove: inFlight(b, n, trove(tdb)), floor: inFlight(b, n, floor(fdb, true))})
		}

		owner := listBytes(b, trove(tdb))
		_, catTok := registerFor(b, tdb, "user_90")
		cataloger := listBytes(b, trove(tdb, "TROVESNAP_CLIENT_TOKEN="+catTok))
		public := listBytes(b, trove(tdb, "TROVESNAP_CLIENT_TOKEN=public"))
		printSuite(rows, owner, cataloger, public)
	}
}

type suiteRow struct {
	name         string
	unit         string
	trove, floor float64
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1000 }

func printSuite(rows []suiteRow, owner, cataloger, public int) {
	w := os.Stdout
	fmt.Fprintf(w, "\n| %-60s | %12s | %12s | %9s |\n", "figure (p50 unless named)", "trovesnap", "floor", "ratio")
	fmt.Fprintf(w, "|%s|%s|%s|%s|\n", strings.Repeat("-", 62), strings.Repeat("-", 14), strings.Repeat("-", 14), strings.Repeat("-", 11))
	for _, r := range rows {
		ratio := "—"
		if r.floor > 0 {
			ratio = fmt.Sprintf("%.2f×", r.trove/r.floor)
		}
		fmt.Fprintf(w, "| %-60s | %9.2f %-2s | %9.2f %-2s | %9s |\n", r.name, r.trove, r.unit, r.floor, r.unit, ratio)
	}
	fmt.Fprintf(w, "| %-60s | %9.1f KB | %12s | %9s |\n", "tools/list, owner", float64(owner)/1024, "", "")
	fmt.Fprintf(w, "| %-60s | %9.1f KB | %12s | %9s |\n", "tools/list, cataloger", float64(cataloger)/1024, "", "")
	fmt.Fprintf(w, "| %-60s | %9.1f KB | %12s | %9s |\n\n", "tools/list, public", float64(public)/1024, "", "")
}

// proc is one stdio server the suite drives with raw JSON-RPC lines.
type proc struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *strings.Builder
	id     int
	ready  time.Duration // spawn → initialize answered
}

func startProc(b *testing.B, cmd *exec.Cmd) *proc {
	b.Helper()
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	p := &proc{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20), stderr: &strings.Builder{}}
	cmd.Stderr = p.stderr
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	p.roundTrip(b, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}`)
	p.ready = time.Since(t0)
	fmt.Fprintln(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return p
}

func (p *proc) roundTrip(b *testing.B, method, params string) []byte {
	line, err := p.try(method, params)
	if err != nil {
		b.Fatal(err)
	}
	return line
}

// try sends one request and reads its answer (safe off the benchmark's
// goroutine: it reports, never stops the benchmark).
func (p *proc) try(method, params string) ([]byte, error) {
	p.id++
	fmt.Fprintf(p.in, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", p.id, method, params)
	line, err := p.out.ReadBytes('\n')
	if err != nil {
		return nil, fmt.Errorf("%s: %v (stderr: %.500s)", method, err, p.stderr.String())
	}
	return line, nil
}

func (p *proc) call(b *testing.B, tool, args string) int {
	n, err := p.tryCall(tool, args)
	if err != nil {
		b.Fatal(err)
	}
	return n
}

func (p *proc) tryCall(tool, args string) (int, error) {
	line, err := p.try("tools/call", fmt.Sprintf(`{"name":%q,"arguments":%s}`, tool, args))
	if err != nil {
		return 0, err
	}
	var m struct {
		Result struct{ IsError bool } `json:"result"`
	}
	if err := json.Unmarshal(line, &m); err != nil || m.Result.IsError {
		return 0, fmt.Errorf("%s: %.300s", tool, line)
	}
	return len(line), nil
}

func (p *proc) timeCalls(b *testing.B, tool string, args func(int) string, n int) (p50, p99 time.Duration, size int) {
	ds := make([]time.Duration, 0, n)
	for i := range n {
		t0 := time.Now()
		size = p.call(b, tool, args(i+p.id*n))
		ds = append(ds, time.Since(t0))
	}
	return percentile(ds, 0.5), percentile(ds, 0.99), size
}

func (p *proc) peakRSS() float64 { return peakRSSOf(p.cmd) }

func (p *proc) stop() { _ = p.in.Close(); _ = p.cmd.Wait() }

// throughput is the calls/s of n processes on one database, each calling
// trove_list_sales in a loop for two seconds.
func throughput(b *testing.B, n int, mk func() *exec.Cmd) float64 {
	procs := make([]*proc, n)
	for i := range procs {
		procs[i] = startProc(b, mk())
	}
	var total atomic.Int64
	var wg sync.WaitGroup
	deadline := time.Now().Add(2 * time.Second)
	t0 := time.Now()
	for _, p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				if _, err := p.tryCall("trove_list_sales", `{}`); err != nil {
					b.Error(err)
					return
				}
				total.Add(1)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(t0)
	for _, p := range procs {
		p.stop()
	}
	return float64(total.Load()) / elapsed.Seconds()
}

// inFlight is the calls/s of one server process that always has n
// trove_list_sales requests in flight on its one session, for two seconds:
// several callers sharing a server, as the HTTP transport's sessions or a
// host's parallel tool calls do. Every answer is checked.
func inFlight(b *testing.B, n int, cmd *exec.Cmd) float64 {
	p := startProc(b, cmd)
	defer p.stop()
	send := func() {
		p.id++
		fmt.Fprintf(p.in, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"trove_list_sales","arguments":{}}}`+"\n", p.id)
	}
	for range n {
		send()
	}
	outstanding, done := n, 0
	deadline := time.Now().Add(2 * time.Second)
	t0 := time.Now()
	for outstanding > 0 {
		line, err := p.out.ReadBytes('\n')
		if err != nil {
			b.Fatalf("in flight: %v (stderr: %.500s)", err, p.stderr.String())
		}
		var m struct {
			Result struct{ IsError bool } `json:"result"`
		}
		if err := json.Unmarshal(line, &m); err != nil || m.Result.IsError {
			b.Fatalf("in flight: %.300s", line)
		}
		outstanding--
		done++
		if time.Now().Before(deadline) {
			send()
			outstanding++
		}
	}
	return float64(done) / time.Since(t0).Seconds()
}

// listBytes is the size of the tools/list answer of a server.
func listBytes(b *testing.B, cmd *exec.Cmd) int {
	p := startProc(b, cmd)
	defer p.stop()
	return len(p.roundTrip(b, "tools/list", `{}`))
}

// registerFor registers a client for actor with every group its role may
// use, for the tools/list figure of that role.
func registerFor(b *testing.B, db, actor string) (id, token string) {
	var reg struct {
		ClientID string `json:"client_id"`
		Token    string `json:"token"`
	}
	out := provision(b, db, "client", "register", "--name", "bench "+actor, "--type", "claude_code", "--tenant", "tenant_123",
		"--actor", actor, "--groups", "public_read,tenant_read,candidate_write,action_proposal,controlled_action", "--json", "--portable")
	if err := json.Unmarshal(out, &reg); err != nil {
		b.Fatal(err)
	}
	return reg.ClientID, reg.Token
}
