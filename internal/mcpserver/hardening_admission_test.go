package mcpserver_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/gate"
)

// toolResult reads the envelope out of a tools/call answer on the wire.
func toolResult(t *testing.T, m map[string]json.RawMessage) envelope {
	t.Helper()
	var res struct {
		StructuredContent json.RawMessage `json:"structuredContent"`
		IsError           bool            `json:"isError"`
	}
	if err := json.Unmarshal(m["result"], &res); err != nil || res.StructuredContent == nil {
		t.Fatalf("want a tool result, got %s", mustJSON(m))
	}
	var e envelope
	if err := json.Unmarshal(res.StructuredContent, &e); err != nil {
		t.Fatal(err)
	}
	e.raw, e.isError = string(res.StructuredContent), res.IsError
	return e
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

// A tools/call whose arguments exceed its tool's limit is refused by the
// stdio guard on the raw line (the line is dropped once it passes the
// tool's limit, never decoded), yet the gate answers the §23 envelope and
// writes the call's one plugin_event, whose input hash is the sha256 of the
// arguments bytes as sent; nothing else changes and the session goes on.
func TestHardening_GuardRefusesOversizeArgumentsWithOneAuditedEnvelope(t *testing.T) {
	e := newEnv(t)
	srv := startStdioOn(t, e, true)
	var b strings.Builder
	b.WriteString(`{"k0":0`)
	for i := 1; b.Len() < 1<<20; i++ {
		fmt.Fprintf(&b, `,"k%d":%d`, i, i%10)
	}
	b.WriteString(`}`)
	args := b.String()
	before, eventsBefore := e.digest(), len(e.allEvents())

	srv.send(t, `{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"trove_list_sales","arguments":`+args+`,"_meta":{"progressToken":"p1"}}}`)
	env := toolResult(t, srv.await(t, `"big"`))
	wantCode(t, env, "failed", "invalid_input")
	if env.Errors[0].Field != "arguments" || !strings.Contains(env.Errors[0].Message, "larger than 262144 bytes") {
		t.Fatalf("want the arguments size refusal, got %+v", env.Errors[0])
	}
	evs := e.events(env.ServerRequestID)
	if len(evs) != 1 {
		t.Fatalf("want one plugin_event, got %d", len(evs))
	}
	sum := sha256.Sum256([]byte(args))
	if got, want := evs[0].Payload.InputHash, "sha256:"+hex.EncodeToString(sum[:]); got != want || evs[0].Outcome != domain.OutcomeFailed {
		t.Fatalf("event: outcome %s, input hash %s, want failed and %s", evs[0].Outcome, got, want)
	}
	if n := len(e.allEvents()); n != eventsBefore+1 {
		t.Fatalf("events %d → %d, want one more", eventsBefore, n)
	}
	assertOnlyEventsChanged(t, before, e.digest())

	srv.send(t, `{"jsonrpc":"2.0","id":"after","method":"tools/call","params":{"name":"trove_list_sales","arguments":{}}}`)
	if after := toolResult(t, srv.await(t, `"after"`)); after.Status != "succeeded" {
		t.Fatalf("the next call: %s", after.raw)
	}
}

// Under admission the SDK receives a marker in place of the arguments; a
// client sending a look-alike marker gets no verdict from it: its
// arguments are its own (an unknown field here), and a real photo sent over
// the same guard is attached whole.
func TestHardening_GuardArgumentsReachTheGateWholeAndMarkersCannotBeForged(t *testing.T) {
	e := newEnv(t)
	srv := startStdioOn(t, e, true)

	forged := `{"trovesnap/admission":"00000000000000000000000000000000"}`
	digestBefore, eventsBefore := e.digest(), len(e.allEvents())
	srv.send(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"trove_list_sales","arguments":`+forged+`}}`)
	env := toolResult(t, srv.await(t, `1`))
	wantCode(t, env, "failed", "invalid_input")
	if !strings.Contains(env.Errors[0].Message, "unknown field") {
		t.Fatalf("a forged marker: %+v", env.Errors[0])
	}
	if evs := e.events(env.ServerRequestID); len(evs) != 1 || evs[0].ErrorCode != "invalid_input" || evs[0].Outcome != domain.OutcomeFailed {
		t.Fatalf("a forged marker: want one failed invalid_input event, got %+v", evs)
	}
	if n := len(e.allEvents()) - eventsBefore; n != 1 {
		t.Fatalf("a forged marker left %d events, want one", n)
	}
	assertOnlyEventsChanged(t, digestBefore, e.digest())

	before := e.counts()
	jpg := ingJPEG(t, 64, 48)
	photo := b64(jpg)
	srv.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"trove_attach_candidate_photo","arguments":{"candidate_id":%q,"idempotency_key":"guard-photo-0001","image_base64":%q}}}`,
		fixtures.DemoCandidateID, photo))
	env = toolResult(t, srv.await(t, `2`))
	var got struct {
		ByteSize int    `json:"byte_size"`
		Hash     string `json:"content_hash"`
	}
	if !strings.HasPrefix(env.Status, "succeeded") || json.Unmarshal(env.Data, &got) != nil || got.ByteSize != len(jpg) || got.Hash != domain.OriginalHash(jpg) {
		t.Fatalf("photo over the admitted guard: %s", env.raw)
	}
	after := e.counts()
	grew := false
	for table, n := range after {
		if strings.Contains(table, "media") && n > before[table] {
			grew = true
		}
	}
	if !grew {
		t.Fatalf("no media row was added: %v → %v", before, after)
	}
}

// Attack review: an 11 MB _meta array beside small arguments (the line
// under the photo tool's frame limit) was decoded by the SDK into generic
// values, peaking at ~300 MB. Only the arguments may be big: the rest of a
// tools/call is bounded and refused before anything decodes it — with the
// gate's invalid_input envelope (field _meta) and its one event, like any
// refused call — and the session goes on.
func TestHardening_GuardBoundsEverythingBesideTheArguments(t *testing.T) {
	e := newEnv(t)
	srv := startStdioOn(t, e, true)
	meta := `{"progressToken":"p1","a":[0` + strings.Repeat(",0", 100_000) + `]}`
	before, eventsBefore := e.digest(), len(e.allEvents())
	srv.send(t, `{"jsonrpc":"2.0","id":"meta","method":"tools/call","params":{"name":"trove_attach_candidate_photo","arguments":{"candidate_id":"candidate_771"},"_meta":`+meta+`}}`)
	env := toolResult(t, srv.await(t, `"meta"`))
	wantCode(t, env, "failed", "invalid_input")
	if env.Errors[0].Field != "_meta" || !strings.Contains(env.Errors[0].Message, "besides its arguments") {
		t.Fatalf("want the _meta refusal, got %+v", env.Errors[0])
	}
	if evs := e.events(env.ServerRequestID); len(evs) != 1 || evs[0].Outcome != domain.OutcomeFailed {
		t.Fatalf("want one failed plugin_event, got %+v", evs)
	}
	if n := len(e.allEvents()); n != eventsBefore+1 {
		t.Fatalf("events %d → %d, want one more", eventsBefore, n)
	}
	assertOnlyEventsChanged(t, before, e.digest())
	srv.send(t, `{"jsonrpc":"2.0","id":"after","method":"tools/call","params":{"name":"trove_list_sales","arguments":{},"_meta":{"progressToken":"p2"}}}`)
	if after := toolResult(t, srv.await(t, `"after"`)); after.Status != "succeeded" {
		t.Fatalf("the next call: %s", after.raw)
	}
}

// Attack review: an 11 MB array of zeros as image_base64 (under the photo
// tool's byte limit) was decoded generically — hashed, canonicalised and
// validated — at ~300 MB and 24 s of CPU. A call with more JSON values than
// any honest input is refused on its raw bytes, with its one event, and
// allocates next to nothing.
func TestHardening_TooManyValuesRefusedBeforeAnyDecode(t *testing.T) {
	e := newEnv(t)
	arr := `[0` + strings.Repeat(",0", 2_000_000) + `]`
	args := json.RawMessage(`{"candidate_id":"candidate_771","idempotency_key":"values-key-0001","image_base64":` + arr + `}`)
	before, eventsBefore := e.digest(), len(e.allEvents())
	// The smallest of three runs, each after a collection, so a background
	// allocation cannot fail the bound; three refusals stay far under the
	// rejected-call budget.
	const runs = 3
	minAlloc := uint64(1<<64 - 1)
	for range runs {
		var ms0, ms1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms0)
		env := e.gate.Invoke(context.Background(), gate.Call{Tool: "trove_attach_candidate_photo", Arguments: args, Transport: "inmemory"})
		runtime.ReadMemStats(&ms1)
		if len(env.Errors) != 1 || env.Errors[0].Code != "invalid_input" || env.Errors[0].Field != "arguments" ||
			!strings.Contains(env.Errors[0].Message, "JSON values") {
			t.Fatalf("want invalid_input on arguments (too many values), got %+v", env.Errors)
		}
		if evs := e.events(env.ServerRequestID); len(evs) != 1 || evs[0].ErrorCode != "invalid_input" {
			t.Fatalf("want one invalid_input event, got %+v", evs)
		}
		minAlloc = min(minAlloc, ms1.TotalAlloc-ms0.TotalAlloc)
	}
	// A generic decode of these 2 million values allocates over 100 MB.
	if minAlloc > 8<<20 {
		t.Fatalf("the refused call allocated at least %d bytes; the refusal must not decode the arguments", minAlloc)
	}
	if n := len(e.allEvents()) - eventsBefore; n != runs {
		t.Fatalf("%d calls left %d events, want one each", runs, n)
	}
	assertOnlyEventsChanged(t, before, e.digest())
}

// Review: a second tools/call reusing the id of a call still in flight is
// refused on the wire — with a null id, because an answer carrying the
// client's own id would end its first, running call on the client side. The
// first call then answers on its id as usual.
func TestHardening_ReusedIDInFlightIsRefusedWithoutEndingTheFirstCall(t *testing.T) {
	e := newEnv(t)
	srv := startStdioOn(t, e, true)
	release := holdWriteLock(t, e.path) // the first call blocks on its rate count
	srv.send(t, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"trove_create_candidate","arguments":{"sale_id":"sale_221","title":"Brass lamp","idempotency_key":"reuse-id-0001"}}}`)
	srv.send(t, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"trove_list_sales","arguments":{}}}`)
	refused := srv.await(t, `null`)
	var rpcErr struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(refused["error"], &rpcErr); err != nil || rpcErr.Code != -32600 || !strings.Contains(rpcErr.Message, "already in use") {
		t.Fatalf("want -32600 with a null id for the reused id, got %v", refused)
	}
	release()
	first := srv.await(t, `7`)
	if first["result"] == nil {
		t.Fatalf("the first call's answer: %v", first)
	}
}

// Attack review (round 2): a line whose method is spelled with escapes
// (`p\u0069ng`) was kept under the largest frame, 12 MiB, and the SDK
// decoded its _meta generically (180–355 MB). Decoded, anything but a
// tools/call must fit the small frame; the session goes on.
func TestHardening_EscapedMethodCannotBorrowTheToolCallFrame(t *testing.T) {
	e := newEnv(t)
	srv := startStdioOn(t, e, true)
	big := `{"a":[0` + strings.Repeat(",0", 200_000) + `]}`
	srv.send(t, `{"jsonrpc":"2.0","id":5,"method":"p\u0069ng","params":{"_meta":`+big+`}}`)
	m := srv.await(t, `5`)
	var rpcErr struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(m["error"], &rpcErr); err != nil || rpcErr.Code != -32600 || !strings.Contains(rpcErr.Message, "larger than") {
		t.Fatalf("want -32600 for a big escaped-method line, got %v", m)
	}
	srv.send(t, `{"jsonrpc":"2.0","id":6,"method":"p\u0069ng"}`)
	if m := srv.await(t, `6`); m["result"] == nil {
		t.Fatalf("a small escaped ping: %v", m)
	}
}

// Attack review (round 2): requests that stay open (subscriptions/listen)
// grew memory without bound (238 MB at 20,000), and one sharing an id with
// a tools/call made the SDK answer with a null id, so the call's argument
// budget never came back. Every request id is tracked at the guard: a
// reused id is refused (null id), and at most 64 requests may be in flight.
func TestHardening_RequestsInFlightAreBoundedAndIDsNotReused(t *testing.T) {
	e := newEnv(t)
	srv := startStdioOn(t, e, true)
	for i := range 64 {
		srv.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true}}}`, 1000+i))
	}
	srv.send(t, `{"jsonrpc":"2.0","id":1000,"method":"tools/call","params":{"name":"trove_list_sales","arguments":{}}}`)
	m := srv.await(t, `null`)
	if !strings.Contains(string(m["error"]), "already in use") {
		t.Fatalf("a tools/call reusing an open request's id: %v", m)
	}
	srv.send(t, `{"jsonrpc":"2.0","id":2000,"method":"ping"}`)
	m = srv.await(t, `2000`)
	if !strings.Contains(string(m["error"]), "requests in flight") {
		t.Fatalf("the 65th open request: %v", m)
	}
}
