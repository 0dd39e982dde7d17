package gate

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestInputHash_StreamEqualsWhole holds the streaming input hash to the
// reference form (re-encode and canonicalise the whole input): idempotency
// fingerprints stored before the change must still match after it.
func TestInputHash_StreamEqualsWhole(t *testing.T) {
	for _, in := range argInputs() {
		args := parseArgs(json.RawMessage(in))
		if got, want := inputHash(args), inputHashWhole(args); got != want {
			t.Errorf("input %q: stream %s, whole %s", in, got, want)
		}
	}
}

// TestParseArgs_SameAsUnmarshal holds the copy-free argument split to what
// json.Unmarshal into a map answers: the same members, and invalid exactly
// when Unmarshal fails (with no members, so no step reads any).
func TestParseArgs_SameAsUnmarshal(t *testing.T) {
	for _, in := range append(argInputs(), `{"a":{"}":"{"},"b":["]",{"c":"\\"}],"d":"\"}"}`, "{\"a\"\n:\t1\r\n,\"b\" : [ ] }",
		`{"a":1}x`, `{"a":}`, `{"a" 1}`, `   `, `"str"`, `1`, `true`, ` null `, `{"a":null,"b":-1.5e+3}`) {
		raw := json.RawMessage(in)
		want := map[string]json.RawMessage{}
		invalid := json.Unmarshal(raw, &want) != nil
		if invalid {
			want = map[string]json.RawMessage{}
		}
		got := parseArgs(raw)
		if got.invalid != invalid || string(got.raw) != in {
			t.Errorf("input %q: invalid %v, raw %q; want invalid %v", in, got.invalid, got.raw, invalid)
		}
		if len(got.members) != len(want) {
			t.Errorf("input %q: got %q, want %q", in, got.members, want)
			continue
		}
		for k, v := range want {
			if string(got.members[k]) != string(v) {
				t.Errorf("input %q key %q: got %q, want %q", in, k, got.members[k], v)
			}
		}
	}
}

func argInputs() []string {
	deep := strings.Repeat("[", 127) + strings.Repeat("]", 127)
	tooDeep := strings.Repeat("[", 128) + strings.Repeat("]", 128)
	inputs := []string{
		`{}`, `null`, `not json`, `[1,2]`, `{"a":1}`,
		`{"idempotency_key":"k-12345678","request_id":"r1","title":"Lamp"}`,
		`{"b":"x","a":"y","é":"z","😀":"w","ﬀ":"v","A":"u"}`,
		`{"t":"tab\there","q":"quote \" inside","u":"\u00e9\u2028 <>&","s":"\ud83d\ude00"}`,
		`{"n":1.0,"m":1e21,"o":-0,"p":0.1,"big":123456789012345678901234567890}`,
		`{"nested":{"z":1,"a":[{"y":2,"b":null}]},"x":true,"w":false}`,
		`{"lone":"\ud800"}`, `{"huge":1e400}`,
		`{"deep":` + deep + `}`, `{"deep":` + tooDeep + `}`,
		`{"dup":1,"dup":2}`, `{"bad utf8":"` + "\xff\xfe" + `"}`, "{\"k\xff\":\"v\"}",
		`{"<key>":"a&b","tenant_id":"tenant_123"}`,
		` { "spaced" : "value" , "n" : [ 1 , 2 ] } `,
	}
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "Z", "é", "😀", "\\n", "\\u0041", "\\\"", " ", "<", "ﬀ", "\\ud83d\\ude00", "/", "\\/"}
	for range 300 {
		var b strings.Builder
		b.WriteByte('{')
		for i := range r.IntN(6) {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteByte('"')
			for range 1 + r.IntN(4) {
				b.WriteString(alphabet[r.IntN(len(alphabet))])
			}
			b.WriteString(`":`)
			switch r.IntN(4) {
			case 0:
				b.WriteByte('"')
				for range r.IntN(20) {
					b.WriteString(alphabet[r.IntN(len(alphabet))])
				}
				b.WriteByte('"')
			case 1:
				b.WriteString([]string{"1", "1.50", "-0.0", "2e-7", "1E3", "9007199254740993"}[r.IntN(6)])
			case 2:
				b.WriteString(`{"b":[1,"x",null],"a":{"ü":true}}`)
			default:
				b.WriteString(`["` + alphabet[r.IntN(len(alphabet))] + `"]`)
			}
		}
		b.WriteByte('}')
		inputs = append(inputs, b.String())
	}
	return inputs
}
