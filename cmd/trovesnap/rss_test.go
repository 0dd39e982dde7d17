package main_test

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// rssLimitBytes is the issue 13 requirement: the server's peak RSS stays
// under 100 MB whatever one client sends.
const rssLimitBytes = 100_000_000

// hugeKeysLine is a tools/call of trove_list_sales whose arguments are one
// object of about size bytes with hundreds of thousands of keys.
func hugeKeysLine(id, size int) string {
	var b strings.Builder
	b.Grow(size + 200)
	fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"trove_list_sales","arguments":{`, id)
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%07d":%d`, i, i%10)
	}
	b.WriteString(`}}}`)
	return b.String()
}

// photoLine is a tools/call of trove_attach_candidate_photo carrying an
// image_base64 of n characters: within the tool's own argument limit, so it
// is parsed and decoded (the bytes are random, not an image).
func photoLine(id, n int, body string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"trove_attach_candidate_photo","arguments":{"candidate_id":"candidate_771","idempotency_key":"rss-photo-%04d","image_base64":"%s"}}}`,
		id, id, body[:n])
}

// vmHWM reads a process's peak resident set size from /proc.
func vmHWM(t *testing.T, pid int) int64 {
	t.Helper()
	f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc status")
	return 0
}

// TestHardening_PeakRSSUnder100MBWithPipelinedHugeArguments drives the built
// binary over real stdio with six pipelined ~10 MB argument objects of
// hundreds of thousands of keys (far over trove_list_sales' 256 KiB limit)
// and six ~11 MB photo-size calls (within the photo tool's limit), and reads
// the server's peak RSS: it must stay under 100 MB, every call must be
// answered, and the server must go on serving. Measured 156 MB on 61db3fb;
// ~73 MB since the stdio guard admits calls on their raw line and holds
// their arguments away from the SDK (docs/memory.md).
func TestHardening_PeakRSSUnder100MBWithPipelinedHugeArguments(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads VmHWM from /proc")
	}
	db := filepath.Join(t.TempDir(), "trovesnap.db")
	r := startRaw(t, db)
	r.send(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"rss-test","version":"1"}}}`)
	if init := r.next(t); init["result"] == nil {
		t.Fatalf("initialize: %v", init)
	}
	r.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	r.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"trove_list_sales","arguments":{}}}`)
	if first := r.next(t); first["result"] == nil {
		t.Fatalf("warm-up call: %v", first)
	}
	baseline := vmHWM(t, r.cmd.Process.Pid)

	raw := make([]byte, 8_300_000)
	_, _ = rand.Read(raw)
	body := base64.StdEncoding.EncodeToString(raw) // ~11.07 MB
	var lines []string
	for i := range 6 {
		lines = append(lines, hugeKeysLine(100+i, 10_000_000))
	}
	for i := range 6 {
		lines = append(lines, photoLine(200+i, len(body)-4*i, body))
	}
	for _, l := range lines {
		if len(l) > 11<<20 {
			t.Fatalf("test line of %d bytes exceeds the 11 MiB stdio frame", len(l))
		}
	}
	// Pipelined: everything is written before any answer is read.
	go func() {
		var buf bytes.Buffer
		for _, l := range lines {
			buf.Reset()
			buf.WriteString(l)
			buf.WriteByte('\n')
			if _, err := r.stdin.Write(buf.Bytes()); err != nil {
				return
			}
		}
	}()
	codes, fields := map[float64]string{}, map[float64]string{}
	for range lines {
		var m map[string]any
		select {
		case line, ok := <-r.lines:
			if !ok {
				t.Fatalf("stdout closed (peak RSS so far unknown); stderr:\n%s", r.stderr)
			}
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("stdout carried a non-JSON-RPC line: %.200q", line)
			}
		case <-time.After(5 * time.Minute): // a hang guard, not a timing assertion
			t.Fatalf("no answer; VmHWM %d MB", vmHWM(t, r.cmd.Process.Pid)>>20)
		}
		id, _ := m["id"].(float64)
		res, ok := m["result"].(map[string]any)
		if !ok {
			t.Fatalf("call %v: want a tool result, got %v", id, m)
		}
		sc := res["structuredContent"].(map[string]any)
		code, field := "", ""
		if errs, _ := sc["errors"].([]any); len(errs) > 0 {
			code = errs[0].(map[string]any)["code"].(string)
			field, _ = errs[0].(map[string]any)["field"].(string)
		}
		codes[id], fields[id] = code, field
	}
	for i := range 6 {
		if c := codes[float64(100+i)]; c != "invalid_input" {
			t.Errorf("oversize trove_list_sales call %d: code %q, want invalid_input", 100+i, c)
		}
		// Each photo call must have been decoded and found no image: a
		// service_unavailable (the argument budget was full) means its
		// bytes were never decoded, so the peak below did not measure them.
		id := float64(200 + i)
		switch c, ok := codes[id]; {
		case !ok:
			t.Errorf("photo call %d not answered", 200+i)
		case c == "service_unavailable":
			t.Errorf("photo call %d: service_unavailable — it was refused before its image was decoded, so the decode path was not measured", 200+i)
		case c != "invalid_input" || fields[id] != "image_base64":
			t.Errorf("photo call %d: code %q on field %q, want invalid_input on image_base64 (random bytes are no image)", 200+i, c, fields[id])
		}
	}
	r.send(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"trove_list_sales","arguments":{}}}`)
	if again := r.next(t); again["id"].(float64) != 3 || again["result"] == nil {
		t.Fatalf("server stopped serving: %v", again)
	}
	peak := vmHWM(t, r.cmd.Process.Pid)
	t.Logf("VmHWM: %.1f MB after warm-up, %.1f MB after the huge calls; codes %v", float64(baseline)/1e6, float64(peak)/1e6, codes)
	if peak >= rssLimitBytes {
		t.Fatalf("peak RSS %.1f MB, want < %.1f MB", float64(peak)/1e6, float64(rssLimitBytes)/1e6)
	}
}
