package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sdkEncode encodes v as the go-sdk encodes a result before it reaches the
// transport (encoding/json, HTML left unescaped, no trailing newline).
func sdkEncode(t *testing.T, v any) json.RawMessage {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}

// encodeMessage writes what jsonrpc.EncodeMessage writes, byte for byte, for
// every message: its fast path (a response with a result) and the rest.
func TestEncodeMessage_SameBytesAsTheSDK(t *testing.T) {
	mustID := func(v any) jsonrpc.ID {
		id, err := jsonrpc.MakeID(v)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	envelope := map[string]any{"ok": true, "data": map[string]any{"title": `Pair of "Blue" <Willow> plates & saucers`,
		"note": "line\nbreak\ttab \u2028 \u00e9 \U0001F600", "price_cents": 1250, "tags": []string{"a<b", "c&d"}}}
	result := &mcp.CallToolResult{StructuredContent: json.RawMessage(sdkEncode(t, envelope)),
		Content: []mcp.Content{&mcp.TextContent{Text: string(sdkEncode(t, envelope))}}}
	results := []json.RawMessage{sdkEncode(t, result), sdkEncode(t, map[string]any{}), sdkEncode(t, []any{}), sdkEncode(t, "x<y>&z")}
	ids := []jsonrpc.ID{mustID(float64(0)), mustID(float64(7)), mustID(float64(9007199254740991)), mustID("req-1"),
		mustID(`quote " and <html> & \ backslash`), mustID("é\u2028\U0001F600"), mustID(""), {}}
	var msgs []jsonrpc.Message
	for _, id := range ids {
		for _, r := range results {
			msgs = append(msgs, &jsonrpc.Response{ID: id, Result: r})
		}
		msgs = append(msgs, &jsonrpc.Response{ID: id, Error: errors.New("boom")},
			&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: -32602, Message: "invalid <params>"}},
			&jsonrpc.Response{ID: id})
	}
	// A result that is not one compact object (hand-built, never the SDK's)
	// goes through EncodeMessage: compacted, or refused when invalid.
	for _, r := range []string{"{ \"a\" :\n1 }", "{\"a\":1}\r", "{", "{\"a\":1}garbage", "[1,2]", "7"} {
		msgs = append(msgs, &jsonrpc.Response{ID: mustID("odd"), Result: json.RawMessage(r)})
	}
	msgs = append(msgs, &jsonrpc.Request{Method: "notifications/tools/list_changed"},
		&jsonrpc.Request{ID: mustID("srv-1"), Method: "ping", Params: json.RawMessage(`{}`)})
	fast := 0
	for i, m := range msgs {
		want, werr := jsonrpc.EncodeMessage(m)
		got, gerr := encodeMessage(m)
		if bytes.ContainsAny(got, "\r\n") {
			t.Errorf("message %d: a raw line break on the wire: %q", i, got)
		}
		if (werr == nil) != (gerr == nil) || !bytes.Equal(got, want) {
			t.Errorf("message %d (%#v):\n got %s (%v)\nwant %s (%v)", i, m, got, gerr, want, werr)
		}
		if r, ok := m.(*jsonrpc.Response); ok && r.Error == nil && compactObject(r.Result) && r.ID.IsValid() {
			fast++
		}
	}
	if fast < 14 {
		t.Fatalf("only %d messages took the fast path", fast)
	}
}
