package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/triunalabs/trovesnap/internal/mcpserver"
	"github.com/triunalabs/trovesnap/store"
)

// nestObjects is n levels of {"a": … {} …}.
func nestObjects(n int) string {
	return strings.Repeat(`{"a":`, n-1) + "{}" + strings.Repeat("}", n-1)
}

// awaitID returns the stdout message answering id, skipping notifications.
// The wait is a hang guard (huge lines on a loaded machine), not a timing check.
func (r *rawSession) awaitID(t *testing.T, id float64) map[string]any {
	t.Helper()
	deadline := time.After(3 * time.Minute)
	for {
		select {
		case line, ok := <-r.lines:
			if !ok {
				t.Fatalf("stdout closed (the server ended) while waiting for id %v; stderr:\n%s", id, r.stderr)
			}
			m := map[string]any{}
			if err := json.Unmarshal([]byte(line), &m); err != nil || m["jsonrpc"] != "2.0" {
				t.Fatalf("stdout carried a non-JSON-RPC line: %.200q", line)
			}
			if m["id"] == id {
				return m
			}
		case <-deadline:
			t.Fatalf("no answer to id %v; stderr:\n%s", id, r.stderr)
		}
	}
}

func (r *rawSession) initialize(t *testing.T) {
	t.Helper()
	r.send(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"wire-test","version":"1"}}}`)
	r.awaitID(t, 1)
	r.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// listSalesSucceeds sends tools/call trove_list_sales with id and wants a
// succeeded envelope: the session is still serving.
func (r *rawSession) listSalesSucceeds(t *testing.T, id float64) {
	t.Helper()
	r.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"method":"tools/call","params":{"name":"trove_list_sales","arguments":{}}}`, id))
	m := r.awaitID(t, id)
	res, _ := m["result"].(map[string]any)
	sc, _ := res["structuredContent"].(map[string]any)
	if sc == nil || sc["status"] != "succeeded" {
		t.Fatalf("trove_list_sales after the refused line: %v", m)
	}
}

func (r *rawSession) alive(t *testing.T) {
	t.Helper()
	select {
	case err := <-r.done:
		t.Fatalf("the server exited: %v; stderr:\n%s", err, r.stderr)
	default:
	}
}

func wantRPCError(t *testing.T, m map[string]any, code float64) {
	t.Helper()
	e, _ := m["error"].(map[string]any)
	if e == nil || e["code"] != code {
		t.Fatalf("want a JSON-RPC error %v, got %v", code, m)
	}
}

// Finding 1 (issue 13): a tools/call whose arguments or _meta nest ~1000
// levels ended `mcp serve` (the go-sdk decoder stops at 1000 and closes the
// session). The guard now refuses the line on its raw bytes, before anything
// decodes it, and hands the gate a stand-in: the client gets the
// invalid_input envelope on its own id, the call records its one
// plugin_event like any other refused call, nothing else changes, and the
// next call on the same process works.
func TestHardening_DeepNestingLineGetsErrorAndSessionGoesOn(t *testing.T) {
	db := filepath.Join(t.TempDir(), "trovesnap.db")
	r := startRaw(t, db)
	r.initialize(t)
	lines := map[string]string{
		"arguments 998 deep":  `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"trove_list_sales","arguments":` + nestObjects(998) + `}}`,
		"arguments 5000 deep": `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"trove_list_sales","arguments":{"a":` + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + `}}}`,
		"_meta 998 deep":      `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"trove_list_sales","arguments":{},"_meta":` + nestObjects(998) + `}}`,
		"just over the cap":   `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"trove_list_sales","arguments":` + nestObjects(mcpserver.MaxDepth-1) + `}}`,
	}
	id := 10
	for _, name := range []string{"arguments 998 deep", "arguments 5000 deep", "_meta 998 deep", "just over the cap"} {
		t.Run(name, func(t *testing.T) {
			before := eventCount(t, db)
			r.send(t, fmt.Sprintf(lines[name], id))
			m := r.awaitID(t, float64(id))
			res, _ := m["result"].(map[string]any)
			sc, _ := res["structuredContent"].(map[string]any)
			errs, _ := sc["errors"].([]any)
			if len(errs) != 1 || errs[0].(map[string]any)["code"] != "invalid_input" ||
				!strings.Contains(errs[0].(map[string]any)["message"].(string), "nests deeper than "+strconv.Itoa(mcpserver.MaxDepth)) {
				t.Fatalf("want the invalid_input envelope saying why, got %v", m)
			}
			if got := eventCount(t, db) - before; got != 1 {
				t.Fatalf("the refused call recorded %d events, want 1", got)
			}
			r.listSalesSucceeds(t, float64(id+1))
			r.alive(t)
			id += 2
		})
	}
	// At the cap exactly, the line reaches the gate whole, which answers it.
	r.send(t, `{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"trove_list_sales","arguments":`+nestObjects(mcpserver.MaxDepth-2)+`}}`)
	if m := r.awaitID(t, 99); m["result"] == nil {
		t.Fatalf("a line at the depth cap was refused by the transport: %v", m)
	}
	// A message that is not a tools/call has no envelope to answer with: a
	// deep ping gets a JSON-RPC error, and the session goes on.
	r.send(t, `{"jsonrpc":"2.0","id":100,"method":"ping","params":{"_meta":`+nestObjects(998)+`}}`)
	wantRPCError(t, r.awaitID(t, 100), -32600)
	r.listSalesSucceeds(t, 101)
	r.alive(t)
}

// eventCount is the number of plugin_events in db (read beside a running
// server: WAL readers do not block it).
func eventCount(t *testing.T, db string) int64 {
	t.Helper()
	st, err := store.Open(context.Background(), db, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	evs, err := st.Events(context.Background(), store.EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	return int64(len(evs))
}

// A line over the frame limit (the largest tool argument limit plus the
// envelope) is refused before it is held whole; the session goes on. A
// tools/call whose arguments pass its tool's limit is refused as early (the
// guard drops the line past the limit), but answered with the gate's
// envelope, so that the refusal is audited.
func TestHardening_OversizeLineGetsErrorAndSessionGoesOn(t *testing.T) {
	db := filepath.Join(t.TempDir(), "trovesnap.db")
	r := startRaw(t, db)
	r.initialize(t)
	limit := mcpserver.MaxFrameBytes()
	if limit >= 16<<20 {
		t.Fatalf("frame limit %d is not derived from the tools' argument limits", limit)
	}
	head := `{"jsonrpc":"2.0","id":20,"method":"ping","params":{"_meta":{"x":"`
	tail := `"}}}`
	r.send(t, head+strings.Repeat("A", limit+1-len(head)-len(tail))+tail)
	m := r.awaitID(t, 20)
	wantRPCError(t, m, -32600)
	if msg := m["error"].(map[string]any)["message"].(string); !strings.Contains(msg, "larger than ") {
		t.Errorf("message %q does not say why", msg)
	}
	r.listSalesSucceeds(t, 21)

	// The store, opened beside the server (as a second process would) and
	// only read: the refused photo call must leave its one event and change
	// nothing else.
	ctx := context.Background()
	st, err := store.Open(ctx, db, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	before, err := st.Digest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	head = `{"jsonrpc":"2.0","id":22,"method":"tools/call","params":{"name":"trove_attach_candidate_photo","arguments":{"candidate_id":"candidate_1","image_base64":"`
	r.send(t, head+strings.Repeat("A", limit+1-len(head)-len(tail))+tail)
	m = r.awaitID(t, 22)
	res, _ := m["result"].(map[string]any)
	sc, _ := res["structuredContent"].(map[string]any)
	errs, _ := sc["errors"].([]any)
	if len(errs) != 1 || errs[0].(map[string]any)["code"] != "invalid_input" || errs[0].(map[string]any)["field"] != "arguments" {
		t.Fatalf("want the invalid_input envelope on arguments, got %.500v", m)
	}
	srid, _ := sc["server_request_id"].(string)
	evs, err := st.Events(ctx, store.EventFilter{ServerRequestID: srid})
	if err != nil {
		t.Fatal(err)
	}
	if srid == "" || len(evs) != 1 || evs[0].Tool.Name != "trove_attach_candidate_photo" || evs[0].ErrorCode != "invalid_input" {
		t.Fatalf("the refused photo call (server_request_id %q): want one invalid_input event for trove_attach_candidate_photo, got %+v", srid, evs)
	}
	after, err := st.Digest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for table, h := range before {
		if !slices.Contains(store.BookkeepingTables, table) && after[table] != h {
			t.Errorf("the refused photo call changed table %s", table)
		}
	}
	r.listSalesSucceeds(t, 23)
	r.alive(t)
}

// vmHWM is the peak resident set of a process, in MiB (Linux only).
// vmHWMMiB is the process's peak resident set in MiB (rss_test.go reads it).
func vmHWMMiB(t *testing.T, pid int) float64 { return float64(vmHWM(t, pid)) / (1 << 20) }

// envelopeError is the one error of a tool result's envelope (nil when the
// answer is no tool result or has not exactly one error).
func envelopeError(m map[string]any) map[string]any {
	res, _ := m["result"].(map[string]any)
	sc, _ := res["structuredContent"].(map[string]any)
	errs, _ := sc["errors"].([]any)
	if len(errs) != 1 {
		return nil
	}
	e, _ := errs[0].(map[string]any)
	return e
}

// wantArgumentsTooLarge wants the gate's invalid_input envelope refusing the
// arguments of trove_list_sales on their size (256 KiB).
func wantArgumentsTooLarge(t *testing.T, m map[string]any) {
	t.Helper()
	e := envelopeError(m)
	if e == nil || e["code"] != "invalid_input" || e["field"] != "arguments" {
		t.Fatalf("want the invalid_input envelope on arguments, got %.500v", m)
	}
	if msg, _ := e["message"].(string); !strings.Contains(msg, "larger than 262144 bytes") {
		t.Fatalf("message %q does not give the tool's limit", msg)
	}
}

// wantRPCRefusal wants a -32600 JSON-RPC error whose message says why.
func wantRPCRefusal(t *testing.T, m map[string]any, why string) {
	t.Helper()
	wantRPCError(t, m, -32600)
	if msg, _ := m["error"].(map[string]any)["message"].(string); !strings.Contains(msg, why) {
		t.Fatalf("message %q does not say %q", msg, why)
	}
}

// Peak memory of one server process after the worst lines a client can
// send within the transport's limits: a line just under the frame limit of
// nesting just under the depth cap, ~500k keys for trove_list_sales, and a
// ping of the same size. Each gets its exact refusal, the process stays up,
// and its peak resident set stays under the 100 MB bound of rss_test.go.
func TestHardening_PeakMemoryOfWorstLinesIsReported(t *testing.T) {
	limit := mcpserver.MaxFrameBytes()
	deep := func() string {
		head := `{"jsonrpc":"2.0","id":30,"method":"tools/call","params":{"name":"trove_list_sales","arguments":{"a":[`
		tail := `]}}}`
		// message, params, arguments, "a" = 4 levels; each element adds the rest.
		elem := strings.Repeat("[", mcpserver.MaxDepth-4) + strings.Repeat("]", mcpserver.MaxDepth-4)
		n := (limit - len(head) - len(tail) - 1024) / (len(elem) + 1)
		var b strings.Builder
		b.WriteString(head)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(elem)
		}
		b.WriteString(tail)
		return b.String()
	}
	keys := func() string {
		var b strings.Builder
		b.WriteString(`{"jsonrpc":"2.0","id":30,"method":"tools/call","params":{"name":"trove_list_sales","arguments":{`)
		for i := range 500_000 {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"k%d":1`, i)
		}
		b.WriteString(`}}}`)
		return b.String()
	}
	// The same size as a ping's params: what the transport and the SDK cost
	// on their own (no tool, no gate). The guard now refuses any method but
	// tools/call past the default argument limit plus the envelope.
	ping := func() string {
		head := `{"jsonrpc":"2.0","id":30,"method":"ping","params":{"_meta":{"pad":"`
		tail := `"}}}`
		return head + strings.Repeat("A", limit-len(head)-len(tail)-1024) + tail
	}
	for _, c := range []struct {
		name   string
		line   func() string
		answer func(*testing.T, map[string]any)
	}{
		{"deep, just under the frame limit", deep, wantArgumentsTooLarge}, // size is judged before depth,
		{"500k keys for trove_list_sales", keys, wantArgumentsTooLarge},
		{"ping, just under the frame limit", ping, func(t *testing.T, m map[string]any) { t.Helper(); wantRPCRefusal(t, m, "larger than") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := startRaw(t, filepath.Join(t.TempDir(), "trovesnap.db"))
			r.initialize(t)
			r.listSalesSucceeds(t, 2)
			before := vmHWMMiB(t, r.cmd.Process.Pid)
			line := c.line()
			if len(line) > limit {
				t.Fatalf("test line %d bytes is over the frame limit %d", len(line), limit)
			}
			r.send(t, line)
			m := r.awaitID(t, 30)
			c.answer(t, m)
			r.listSalesSucceeds(t, 31)
			r.alive(t)
			after := vmHWMMiB(t, r.cmd.Process.Pid)
			t.Logf("%s: line %d bytes; VmHWM %.1f MiB before, %.1f MiB after", c.name, len(line), before, after)
			if peak := vmHWM(t, r.cmd.Process.Pid); peak >= rssLimitBytes {
				t.Fatalf("peak RSS %.1f MB, want < %.1f MB", float64(peak)/1e6, float64(rssLimitBytes)/1e6)
			}
		})
	}
}
