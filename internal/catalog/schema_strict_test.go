package catalog

import (
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// TestHardening_InputSchemasRefuseUnknownPropertiesAtEveryLevel holds the
// premise of decodeStrict, which decodes validated arguments with
// json.Unmarshal (no unknown-field check of its own): every object schema
// of every tool's input names its properties and forbids any other.
func TestHardening_InputSchemasRefuseUnknownPropertiesAtEveryLevel(t *testing.T) {
	objects := 0
	var walk func(tool, path string, s *jsonschema.Schema)
	walk = func(tool, path string, s *jsonschema.Schema) {
		if s == nil {
			return
		}
		if len(s.Properties) > 0 {
			objects++
			ap := s.AdditionalProperties
			if ap == nil || ap.Not == nil {
				t.Errorf("%s %s: an object schema with properties allows unknown ones", tool, path)
			}
			for k, p := range s.Properties {
				walk(tool, path+"/"+k, p)
			}
		}
		walk(tool, path+"/items", s.Items)
		if s.AdditionalProperties != nil && s.AdditionalProperties.Not == nil {
			walk(tool, path+"/additionalProperties", s.AdditionalProperties)
		}
		for i, sub := range append(append(append([]*jsonschema.Schema{}, s.AnyOf...), s.OneOf...), s.AllOf...) {
			walk(tool, path+"/of"+string(rune('0'+i)), sub)
		}
	}
	for _, tl := range All() {
		walk(tl.Name, "", tl.InputSchema)
	}
	if objects < len(All()) {
		t.Fatalf("walked %d object schemas for %d tools", objects, len(All()))
	}
}

// TestHardening_DecodeStrictRefusesUnknownFieldsAndTrailingData: the one
// in-place decode keeps the answers of the two-pass one.
func TestHardening_DecodeStrictRefusesUnknownFieldsAndTrailingData(t *testing.T) {
	type In struct {
		Title string `json:"title"`
	}
	in, err := jsonschema.For[In](nil)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := in.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ raw, field, msg string }{
		{`{"title":"lamp","Title":"x"}`, "arguments", "unknown field"},
		{`{"TITLE":"lamp"}`, "arguments", "unknown field"},
		{`{"title":"lamp"} {}`, "arguments", "trailing data"},
		{`{"title":`, "arguments", "not valid JSON"},
		{`[1]`, "arguments", "must be a JSON object"},
		{`{"title":5}`, "title", "wrong type"},
	} {
		var v In
		err := decodeStrict(rs, []byte(c.raw), &v, 1<<20)
		if err == nil || !strings.Contains(err.Error(), c.field) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: got %v, want %s: %s", c.raw, err, c.field, c.msg)
		}
	}
	var v In
	if err := decodeStrict(rs, []byte(`{"title":"brass lamp"}`), &v, 1<<20); err != nil || v.Title != "brass lamp" {
		t.Fatalf("valid input: %v %+v", err, v)
	}
}
