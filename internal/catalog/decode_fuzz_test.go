package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// FuzzToolArguments: for every tool of the catalog, Decode (the strict input
// step of the gate) on any bytes never panics; what it accepts re-encodes and
// decodes to the same value; what it refuses is a *domain.InputError naming
// "arguments" or one of the tool's own fields, with a short message.
//
// The seeds are built from each tool's input schema (a minimal and a full
// valid example per tool), so the fuzzer starts from accepted input for all
// of them; testdata/fuzz/FuzzToolArguments keeps the regression inputs.
func FuzzToolArguments(f *testing.F) {
	tools := All()
	for i := range tools {
		s := tools[i].InputSchema()
		for _, full := range []bool{false, true} {
			ex, err := json.Marshal(schemaExample(s, full, 0))
			if err != nil {
				f.Fatalf("%s: %v", tools[i].Name, err)
			}
			if _, err := tools[i].Decode(ex); err != nil {
				f.Fatalf("%s: the example built from the schema is refused: %v\n%s", tools[i].Name, err, ex)
			}
			f.Add(uint8(i), ex)
		}
	}
	// Regressions found by this target, by tool name (indices move when
	// tools are added); testdata/fuzz/FuzzToolArguments holds them too.
	for _, r := range fuzzRegressions() {
		f.Add(r.index, r.raw)
	}
	f.Fuzz(func(t *testing.T, which uint8, raw []byte) {
		tool := &tools[int(which)%len(tools)]
		v, err := tool.Decode(raw)
		if err != nil {
			checkInputError(t, tool, err)
			return
		}
		if tr := bytes.TrimSpace(raw); len(tr) > 0 && !json.Valid(tr) {
			t.Fatalf("%s: accepted bytes that are not one JSON value: %q", tool.Name, raw)
		}
		again, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%s: accepted input does not re-encode: %v", tool.Name, err)
		}
		v2, err := tool.Decode(again)
		if err != nil {
			t.Fatalf("%s: re-encoded input is refused: %v\n in: %q\nout: %q", tool.Name, err, raw, again)
		}
		if !reflect.DeepEqual(v, v2) {
			t.Fatalf("%s: round trip changed the value\n in: %q\nout: %q\n%#v\n%#v", tool.Name, raw, again, v, v2)
		}
	})
}

type fuzzRegression struct {
	index uint8
	raw   []byte
}

// fuzzRegressions are inputs that once broke a property of
// FuzzToolArguments: an empty CSV mapping was accepted and, re-encoded
// (omitempty), meant "use the suggested mapping" instead.
func fuzzRegressions() []fuzzRegression {
	var out []fuzzRegression
	for i := range All() {
		switch All()[i].Name {
		case "trove_preview_csv_import":
			out = append(out, fuzzRegression{uint8(i), []byte(`{"sale_id":"sale_221","csv_text":"Lamp","mapping":[]}`)})
		case "trove_apply_csv_import":
			out = append(out, fuzzRegression{uint8(i), []byte(`{"idempotency_key":"fuzz-key-0001","sale_id":"sale_221","csv_text":"Lamp","mapping":[]}`)})
		}
	}
	return out
}

// TestHardening_EmptyCSVMappingRefused: an empty mapping list is refused
// at input (it could only ever fail later with "no column is mapped", and
// its re-encoding meant the opposite: the suggested mapping), naming the
// field; an omitted mapping and a one-entry mapping are still accepted.
func TestHardening_EmptyCSVMappingRefused(t *testing.T) {
	regs := fuzzRegressions()
	if len(regs) != 2 {
		t.Fatalf("%d CSV tools found, want preview and apply", len(regs))
	}
	for _, r := range regs {
		tool := &All()[r.index]
		_, err := tool.Decode(r.raw)
		var ie *domain.InputError
		if !errors.As(err, &ie) || ie.Field != "mapping" || !strings.Contains(ie.Reason, "too few entries") {
			t.Errorf("%s: mapping [] gave %v, want invalid mapping: too few entries", tool.Name, err)
		}
		omitted := strings.Replace(string(r.raw), `,"mapping":[]`, "", 1)
		one := strings.Replace(string(r.raw), `"mapping":[]`, `"mapping":[{"column":"title","field":"title"}]`, 1)
		for _, ok := range []string{omitted, one} {
			if _, err := tool.Decode([]byte(ok)); err != nil {
				t.Errorf("%s: %s refused: %v", tool.Name, ok, err)
			}
		}
	}
}

// checkInputError asserts a refusal is an InputError naming a field of the
// tool (or the arguments as a whole) with a bounded message.
func checkInputError(t *testing.T, tool *Tool, err error) {
	t.Helper()
	var ie *domain.InputError
	if !errors.As(err, &ie) || !errors.Is(err, domain.ErrInvalidInput) {
		t.Fatalf("%s: refusal is %T, not an InputError: %v", tool.Name, err, err)
	}
	top, _, _ := strings.Cut(ie.Field, ".")
	if ie.Field != "arguments" && tool.InputSchema().Properties[top] == nil {
		t.Fatalf("%s: refusal names %q, not a field of the tool: %v", tool.Name, ie.Field, err)
	}
	if len(ie.Reason) == 0 || len(err.Error()) > 400 {
		t.Fatalf("%s: refusal message of %d bytes: %v", tool.Name, len(err.Error()), err)
	}
}

// schemaExample builds a value the schema accepts: required properties only,
// or (full) every property. It knows the schema features the catalog uses
// (see applyTags) and fails loudly on a pattern it cannot satisfy.
func schemaExample(s *jsonschema.Schema, full bool, depth int) any {
	if depth > 8 {
		panic("schemaExample: schema too deep")
	}
	if len(s.Enum) > 0 {
		return s.Enum[len(s.Enum)-1]
	}
	typ := s.Type
	if typ == "" {
		for _, ty := range s.Types {
			if ty != "null" {
				typ = ty
			}
		}
	}
	switch typ {
	case "object":
		out := map[string]any{}
		names := make([]string, 0, len(s.Properties))
		for n := range s.Properties {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			if full || slices.Contains(s.Required, n) {
				out[n] = schemaExample(s.Properties[n], full, depth+1)
			}
		}
		return out
	case "array":
		n := 1
		if s.MinItems != nil && *s.MinItems > n {
			n = *s.MinItems
		}
		out := make([]any, n)
		for i := range out {
			out[i] = schemaExample(s.Items, full, depth+1)
		}
		return out
	case "integer", "number":
		v := 1.0
		if s.Minimum != nil && *s.Minimum > v {
			v = *s.Minimum
		}
		if s.Maximum != nil && *s.Maximum < v {
			v = *s.Maximum
		}
		return v
	case "boolean":
		return true
	case "string":
		return stringExample(s)
	}
	panic(fmt.Sprintf("schemaExample: unhandled type %q / %v", s.Type, s.Types))
}

var examplePatterns sync.Map // pattern → *regexp.Regexp: `{8,255}` is slow to compile

func examplePattern(p string) *regexp.Regexp {
	if re, ok := examplePatterns.Load(p); ok {
		return re.(*regexp.Regexp)
	}
	re := regexp.MustCompile(p)
	examplePatterns.Store(p, re)
	return re
}

var idPatternRE = regexp.MustCompile(`^\^([a-z_]+)_\[A-Za-z0-9\]\{1,40\}\$$`)

// stringExample returns a string within the schema's length bounds that
// matches its pattern.
func stringExample(s *jsonschema.Schema) string {
	min := 0
	if s.MinLength != nil {
		min = *s.MinLength
	}
	fits := func(c string) bool {
		n := len([]rune(c))
		if n < min || (s.MaxLength != nil && n > *s.MaxLength) {
			return false
		}
		return s.Pattern == "" || examplePattern(s.Pattern).MatchString(c)
	}
	cands := []string{"Lamp", "fuzz-key-0001", "seed", "a.b", "2026-01-02T03:04:05Z", "2026-01-02"}
	if m := idPatternRE.FindStringSubmatch(s.Pattern); m != nil {
		cands = append([]string{m[1] + "_221"}, cands...)
	}
	for _, c := range cands {
		if fits(c) {
			return c
		}
	}
	panic(fmt.Sprintf("stringExample: no example for pattern %q min %d", s.Pattern, min))
}

// TestHardening_ToolArgumentsTrailingDelimiterRefused: arguments are one
// JSON object; a stray closing bracket or brace after it (which
// json.Decoder.More does not report) is refused like any trailing data.
func TestHardening_ToolArgumentsTrailingDelimiterRefused(t *testing.T) {
	tool, ok := Lookup("trove_list_sales")
	if !ok {
		t.Fatal("trove_list_sales missing")
	}
	for _, raw := range []string{`{}]`, `{}}`, `{} ]`, `{} {}`, `{} x`} {
		_, err := tool.Decode([]byte(raw))
		var ie *domain.InputError
		if !errors.As(err, &ie) || ie.Field != "arguments" || !strings.Contains(ie.Reason, "trailing data") {
			t.Errorf("%s: %v, want invalid arguments: trailing data", raw, err)
		}
	}
	if _, err := tool.Decode([]byte("{}\n")); err != nil {
		t.Errorf("{} with a newline refused: %v", err)
	}
}
