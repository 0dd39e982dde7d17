package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// scan runs the line scanner over s in chunks of n bytes, as readLine feeds
// it from a bufio.Reader.
func scan(s string, n int) *lineScan {
	sc := &lineScan{}
	for len(s) > 0 {
		k := min(n, len(s))
		sc.feed([]byte(s[:k]))
		s = s[k:]
	}
	return sc
}

// refDepth is the deepest nesting of a valid JSON text, by the standard
// library's tokenizer: the reference the scanner must agree with.
func refDepth(t testing.TB, s string) int {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	depth, deepest := 0, 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return deepest
		}
		if err != nil {
			t.Fatalf("reference tokenizer: %v", err)
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
			deepest = max(deepest, depth)
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
}

func nest(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

// Brackets and braces inside strings are text: they do not count, however
// many, and an escaped quote does not end the string they are in.
func TestHardening_DepthScannerIgnoresBracketsInStringsAndEscapedQuotes(t *testing.T) {
	deepText := strings.Repeat("[{", 5000)
	for _, line := range []string{
		`{"a":"` + deepText + `"}`,
		`{"a":"\"` + deepText + `"}`,
		`{"a":"x\\\"` + deepText + `\"` + deepText + `"}`,
		`{"` + deepText + `":"\u005b\"[[[["}`,
		`{"a":["\\\\","` + deepText + `"]}`,
	} {
		for _, chunk := range []int{1, 3, 64 << 10} {
			sc := scan(line, chunk)
			if sc.tooDeep || sc.inString || sc.depth != 0 {
				t.Errorf("chunks of %d: %.60q: tooDeep=%v inString=%v depth=%d", chunk, line, sc.tooDeep, sc.inString, sc.depth)
			}
		}
		if refDepth(t, line) > 2 {
			t.Fatalf("test line is deeper than meant: %.60q", line)
		}
	}
}

// After an escaped backslash the quote does end the string, so brackets
// after it count: escapes are honoured in both directions.
func TestHardening_DepthScannerCountsBracketsAfterAnEscapedBackslash(t *testing.T) {
	line := `{"a":"\\",` + `"b":` + nest(MaxDepth) + `}`
	if sc := scan(line, 7); !sc.tooDeep {
		t.Fatalf("nesting after an escaped backslash was not counted (depth %d)", refDepth(t, line))
	}
}

// The cap is exactly MaxDepth: a line that reaches it passes the scan, one
// level more does not, and the answer does not depend on how the line
// arrives in chunks.
func TestHardening_DepthCapIsExactlyMaxDepth(t *testing.T) {
	for _, c := range []struct {
		line    string
		tooDeep bool
	}{
		{nest(MaxDepth), false},
		{nest(MaxDepth + 1), true},
		{`{"jsonrpc":"2.0","id":1,"method":"x","params":` + nest(MaxDepth-1) + `}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"x","params":` + nest(MaxDepth) + `}`, true},
		{nest(100_000), true},
	} {
		for _, chunk := range []int{1, 2, 5, 1 << 20} {
			if sc := scan(c.line, chunk); sc.tooDeep != c.tooDeep {
				t.Errorf("depth %d, chunks of %d: tooDeep=%v, want %v", refDepth(t, c.line), chunk, sc.tooDeep, c.tooDeep)
			}
		}
	}
}

// A refused line is answered with the request's own id when the scan read
// it cheaply (a string or a finite number at the top level of a line with a
// method), and with null otherwise.
func TestHardening_RefusalAnswersTheRequestIDWhenItCanBeRead(t *testing.T) {
	deep := nest(MaxDepth + 10)
	for _, c := range []struct{ line, id string }{
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":` + deep + `}`, `7`},
		{`{"jsonrpc":"2.0","id":"a,}\"b","method":"tools/call","params":` + deep + `}`, `"a,}\"b"`},
		{`{"id" : -1.5e3 ,"method":"x","params":` + deep + `}`, `-1.5e3`},
		{`{"method":"x","params":` + deep + `,"id":9}`, `9`},
		{`{"jsonrpc":"2.0","method":"x","params":{"id":5,"a":` + deep + `}}`, `null`},            // nested id is not the id
		{`{"jsonrpc":"2.0","id":{"x":1},"method":"x","params":` + deep + `}`, `null`},            // not a string or number
		{`{"jsonrpc":"2.0","id":1e400,"method":"x","params":` + deep + `}`, `null`},              // not a number a client reads back
		{`{"jsonrpc":"2.0","id":3,"result":` + deep + `}`, `null`},                               // a response: not ours to answer
		{`{"jsonrpc":"2.0","id":"` + strings.Repeat("x", 300) + `","method":"x"` + deep, `null`}, // too long to echo
		{deep, `null`},
		{`{"jsonrpc":"2.0","id":12,"method":"x","params":{`, `12`}, // cut off: a parse error, still answerable
	} {
		line, sc, _ := readLine(bufio.NewReaderSize(strings.NewReader(c.line), 16), fixedLimit(1<<20))
		_, reply := judge(line, sc, 1<<20)
		var m struct {
			ID    json.RawMessage
			Error struct{ Code int }
		}
		want := jsonrpc.CodeInvalidRequest
		if !sc.tooDeep {
			want = jsonrpc.CodeParseError
		}
		if err := json.Unmarshal(reply, &m); err != nil || m.Error.Code != want {
			t.Fatalf("%.80q: reply %s", c.line, reply)
		}
		if string(m.ID) != c.id {
			t.Errorf("%.80q: id %s, want %s", c.line, m.ID, c.id)
		}
	}
}

// readLine keeps no bytes of a line past the frame limit, reads to its end,
// and the next line is read whole.
func TestHardening_ReadLineDropsAnOversizeLineAndReadsTheNext(t *testing.T) {
	const limit = 100
	big := `{"jsonrpc":"2.0","id":4,"method":"ping","params":{"a":"` + strings.Repeat("x", 1000) + `"}}`
	next := `{"jsonrpc":"2.0","id":5,"method":"ping"}`
	r := bufio.NewReaderSize(strings.NewReader(big+"\n"+next+"\r\n"), 16)
	line, sc, err := readLine(r, fixedLimit(limit))
	if err != nil || line != nil || sc.size != len(big) {
		t.Fatalf("oversize line: kept %d bytes, size %d, err %v", len(line), sc.size, err)
	}
	if _, reply := judge(line, sc, limit); !bytes.Contains(reply, []byte(`"id":4`)) || !bytes.Contains(reply, []byte("larger than 100 bytes")) {
		t.Fatalf("oversize reply: %s", reply)
	}
	line, sc, err = readLine(r, fixedLimit(limit))
	if err != nil || string(line) != next {
		t.Fatalf("next line: %q, %v", line, err)
	}
	if msg, reply := judge(line, sc, limit); msg == nil || reply != nil {
		t.Fatalf("next line refused: %s", reply)
	}
}

// Lines the SDK's decoder could not read (and that ended the session) are
// answered by the guard and never reach the SDK.
func TestHardening_CheckFrameRefusesWhatTheSDKCannotDecode(t *testing.T) {
	for _, line := range []string{
		`{"JSONRPC":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","result":{}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"x"}}`,
		`{"jsonrpc":"2.0","id":1,"error":"x"}`,
		`{"jsonrpc":"2.0","id":1e400,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":true,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"method":null}`,
		`{"jsonrpc":"2.0","id":1,"method":7}`,
		`{"jsonrpc":"2.0","id":1}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		`[]`,
		`"jsonrpc"`,
	} {
		msg, reply := checkFrame([]byte(line), nil)
		if msg != nil || !json.Valid(reply) {
			t.Errorf("%s: accepted (%v) or bad reply %s", line, msg, reply)
		}
	}
	msg, reply := checkFrame([]byte(`{"jsonrpc":"2.0","id":"r1","method":"tools/call","params":{"name":"x","arguments":{"a":[1,2]}},"extra":1}`), nil)
	req, ok := msg.(*jsonrpc.Request)
	if !ok || reply != nil || req.Method != "tools/call" || req.ID.Raw() != "r1" || string(req.Params) != `{"name":"x","arguments":{"a":[1,2]}}` {
		t.Fatalf("well-formed request: %#v %s", msg, reply)
	}
}

// FuzzJSONRPCFrame: for any line, the scanner agrees with the standard
// library on depth, the judgement never panics, and it yields either a
// message the SDK can re-encode or one well-formed JSON-RPC error — never a
// line deeper than MaxDepth or not valid JSON handed to the SDK.
func FuzzJSONRPCFrame(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"trove_list_sales","arguments":{}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		const limit = 4 << 10
		for _, seg := range bytes.Split(data, []byte("\n")) {
			if json.Valid(seg) {
				if want, sc := refDepth(t, string(seg)), scan(string(seg), 3); sc.tooDeep != (want > MaxDepth) || sc.depth != 0 || sc.inString {
					t.Fatalf("scanner tooDeep=%v depth=%d inString=%v, reference depth %d: %q", sc.tooDeep, sc.depth, sc.inString, want, seg)
				}
			}
		}
		r := bufio.NewReaderSize(bytes.NewReader(data), 16)
		for {
			line, sc, err := readLine(r, fixedLimit(limit))
			msg, reply := judge(line, sc, limit)
			switch {
			case msg != nil && reply != nil:
				t.Fatalf("both a message and a reply for %q", line)
			case msg != nil:
				if sc.tooDeep || sc.size > limit || !json.Valid(bytes.TrimSpace(line)) {
					t.Fatalf("passed a line the guard must refuse: %q", line)
				}
				if _, err := jsonrpc.EncodeMessage(msg); err != nil {
					t.Fatalf("passed a message that does not re-encode: %q: %v", line, err)
				}
			case reply != nil:
				checkReply(t, reply)
			default:
				if len(bytes.TrimSpace(line)) != 0 || sc.tooDeep || sc.size > limit {
					t.Fatalf("no answer to %q", line)
				}
			}
			if err != nil {
				return
			}
		}
	})
}

// checkReply: one line, one JSON-RPC error object, its id null, a string or
// a number.
func checkReply(t *testing.T, reply []byte) {
	t.Helper()
	if bytes.Count(reply, []byte("\n")) != 1 || reply[len(reply)-1] != '\n' {
		t.Fatalf("reply is not one line: %q", reply)
	}
	var m struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(reply, &m); err != nil || m.JSONRPC != "2.0" || m.Error == nil || m.Error.Message == "" {
		t.Fatalf("reply is not a JSON-RPC error: %q", reply)
	}
	if c := m.Error.Code; c != jsonrpc.CodeParseError && c != jsonrpc.CodeInvalidRequest {
		t.Fatalf("reply code %d", c)
	}
	if _, err := jsonrpc.MakeID(decodeAny(m.ID)); err != nil {
		t.Fatalf("reply id %s", m.ID)
	}
}

func decodeAny(raw json.RawMessage) any {
	var v any
	_ = json.Unmarshal(raw, &v)
	return v
}

// runGuard feeds input to a StdioTransport connection and returns what the
// SDK would read and what the guard wrote back itself.
func runGuard(t *testing.T, input string) ([]jsonrpc.Message, []byte) {
	t.Helper()
	var out syncBuffer
	conn, err := StdioTransport(strings.NewReader(input), &out).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var msgs []jsonrpc.Message
	for {
		msg, err := conn.Read(context.Background())
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatalf("Read: %v", err)
			}
			return msgs, out.Bytes()
		}
		msgs = append(msgs, msg)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.b.Bytes())
}

// FuzzStdioGuard: whatever lines come first, the guard never panics, the
// connection ends only at EOF, every line it writes is one complete
// JSON-RPC error object, and a well-formed request that follows reaches the
// SDK unchanged (same id, method and params bytes).
func FuzzStdioGuard(f *testing.F) {
	f.Add("{garbage\n[]\n", "tools/call", `{"name":"trove_list_sales","arguments":{}}`)
	f.Fuzz(func(t *testing.T, lines, method, params string) {
		if !utf8.ValidString(method) { // json.Marshal would replace the bad bytes
			method = "tools/call"
		}
		if !json.Valid([]byte(params)) || !strings.HasPrefix(strings.TrimSpace(params), "{") ||
			refDepth(t, params) > MaxDepth-1 || len(params) > 64<<10 {
			params = `{}`
		}
		m, _ := json.Marshal(method)
		wellFormed := `{"jsonrpc":"2.0","id":"guard-sentinel","method":` + string(m) + `,"params":` + params + `}`
		msgs, out := runGuard(t, lines+"\n"+wellFormed+"\n")
		for _, line := range bytes.SplitAfter(out, []byte("\n")) {
			if len(line) > 0 {
				checkReply(t, line)
			}
		}
		if len(msgs) == 0 {
			t.Fatalf("the well-formed request did not reach the SDK; guard wrote %q", out)
		}
		req, ok := msgs[len(msgs)-1].(*jsonrpc.Request)
		if !ok || req.ID.Raw() != "guard-sentinel" || req.Method != method || string(req.Params) != params {
			t.Fatalf("the well-formed request changed: %#v", msgs[len(msgs)-1])
		}
	})
}

// fixedLimit is a frame limit that does not depend on the line.
func fixedLimit(n int) func(*lineScan) int { return func(*lineScan) int { return n } }
