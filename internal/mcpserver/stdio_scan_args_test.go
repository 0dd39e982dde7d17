package mcpserver

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"
)

// TestHardening_ScanFindsToolNameAndArgumentsAsTheDecoderDoes: the guard's
// scan must find the tool name and the exact bytes of params.arguments that
// encoding/json finds, in any key order and spacing and however the line is
// cut into chunks, and must decline (toolCall false) a line it cannot follow,
// so that admission never measures the wrong bytes.
func TestHardening_ScanFindsToolNameAndArgumentsAsTheDecoderDoes(t *testing.T) {
	lines := []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"trove_list_sales","arguments":{}}}`,
		`{"params":{"arguments":{"a":[1,{"b":"}]\"{"}],"c":"x"},"name":"trove_get_sale"},"id":"x","method":"tools/call","jsonrpc":"2.0"}`,
		`{ "jsonrpc" : "2.0" , "id" : 2 , "method" : "tools/call" , "params" : { "name" : "t1" , "arguments" : { "k" : "v" } , "_meta" : { "progressToken" : 1 } } }`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"_meta":{"name":"not this","arguments":{"no":1}},"name":"t2","arguments":["a",{"x":"]"}]}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"t3","arguments":"a string with \" and }"}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"t4","arguments":12345}}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"t5","arguments":null,"x":1}}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"t6","nested":{"arguments":{"deep":1},"name":"n"},"arguments":{"top":true}}}`,
		`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"t7","arguments":{"a":1},"arguments":{"b":22}}}`,
		`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"arguments":{"x":"\\"},"name":"trove_list_sales"}}`,
	}
	for _, l := range lines {
		var want struct {
			Method string
			Params struct {
				Name      string
				Arguments json.RawMessage
			}
		}
		if err := json.Unmarshal([]byte(l), &want); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		for _, n := range []int{1, 3, 16, 1 << 20} {
			sc := scan(l, n)
			if !sc.toolCall() {
				t.Errorf("%s (chunks of %d): not read as a tools/call", l, n)
				continue
			}
			got := bytes.TrimSpace([]byte(l[sc.argsStart : sc.argsStart+sc.argsLen]))
			if sc.name != want.Params.Name || !bytes.Equal(got, want.Params.Arguments) {
				t.Errorf("%s (chunks of %d): name %q arguments %s, want %q %s", l, n, sc.name, got, want.Params.Name, want.Params.Arguments)
			}
			sum := sha256.Sum256([]byte(l[sc.argsStart : sc.argsStart+sc.argsLen]))
			if h := sc.argsHash(); h != "sha256:"+hex.EncodeToString(sum[:]) {
				t.Errorf("%s (chunks of %d): hash %s does not cover the arguments bytes", l, n, h)
			}
		}
	}
	// Lines the scan cannot follow are declined, never misread.
	for _, l := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"trove\u005flist_sales","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","argum\u0065nts":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":"t","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5,"arguments":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"open":`,
	} {
		if sc := scan(l, 7); sc.toolCall() {
			t.Errorf("%s: read as a tools/call of %q", l, sc.name)
		}
	}
}
