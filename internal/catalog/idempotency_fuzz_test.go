package catalog

import (
	"encoding/json"
	"maps"
	"regexp"
	"strings"
	"testing"
)

// References written from the README's rules, not from the schema tags:
// idempotency_key is 8–255 characters of A-Z a-z 0-9 . _ : - and request_id
// (optional) 1–128 of the same.
var (
	refIdemKey   = regexp.MustCompile(`\A[-A-Za-z0-9._:]{8,255}\z`)
	refRequestID = regexp.MustCompile(`\A[-A-Za-z0-9._:]{1,128}\z`)
)

// FuzzIdempotencyKey is a differential check of the write keys: for every
// persisted write, Decode of otherwise valid arguments accepts exactly the
// idempotency_key (and request_id, when present) the reference accepts, and
// the key it decodes is the key that was sent.
func FuzzIdempotencyKey(f *testing.F) {
	var writes []*Tool
	var bases []map[string]any // each write's required arguments, built once
	for i := range All() {
		if All()[i].Persists {
			writes = append(writes, &All()[i])
			bases = append(bases, schemaExample(All()[i].InputSchema(), false, 0).(map[string]any))
		}
	}
	if len(writes) == 0 {
		f.Fatal("no persisted write in the catalog")
	}
	for i, k := range []string{"fuzz-key-0001", "1234567", "12345678", strings.Repeat("k", 255), strings.Repeat("k", 256),
		"key with space", "key\n0001", "ключ-0001", "key/0001", "a:b.c_d-e", "key-0001\x00"} {
		f.Add(uint8(i), k, "")
	}
	f.Add(uint8(0), "fuzz-key-0001", "req-1")
	f.Add(uint8(0), "fuzz-key-0001", strings.Repeat("r", 129))
	f.Add(uint8(0), "fuzz-key-0001", "req 1")
	f.Fuzz(func(t *testing.T, which uint8, key, reqID string) {
		tool := writes[int(which)%len(writes)]
		args := maps.Clone(bases[int(which)%len(writes)])
		args["idempotency_key"] = key
		if reqID != "" {
			args["request_id"] = reqID
		}
		raw, err := json.Marshal(args)
		if err != nil {
			t.Fatal(err)
		}
		want := refIdemKey.MatchString(key) && (reqID == "" || refRequestID.MatchString(reqID))
		v, err := tool.Decode(raw)
		if err != nil {
			checkInputError(t, tool, err)
		}
		if got := err == nil; got != want {
			t.Fatalf("%s: key %q request_id %q: accepted %v, reference %v (%v)", tool.Name, key, reqID, got, want, err)
		}
		if err != nil {
			return
		}
		// The decoded key is the one sent, byte for byte.
		var back struct {
			Key string `json:"idempotency_key"`
		}
		b, _ := json.Marshal(v)
		if err := json.Unmarshal(b, &back); err != nil || back.Key != key {
			t.Fatalf("%s: key %q decoded as %q (%v)", tool.Name, key, back.Key, err)
		}
	})
}
