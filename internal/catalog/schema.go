package catalog

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp/syntax"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// Limits on tool input, documented in the README.
const (
	MaxArgumentBytes = 256 << 10 // whole arguments object
	// MaxArgumentValues bounds the JSON values (objects, arrays, members,
	// elements) of one arguments object, counted on the raw bytes before
	// anything decodes them: a generic decode costs ~50 bytes a value, so
	// an 11 MB array of 5.5 million zeros cost ~300 MB and 24 s (found by
	// the attack review). The largest honest input, a 500-row manual
	// import, has about 7,000.
	MaxArgumentValues  = 50_000
	MaxShortText       = 200  // titles, names, filters
	MaxLongText        = 4000 // descriptions, notes
	MaxRequestIDLen    = 128
	MaxIdempotencyKey  = 255
	idempotencyPattern = `^[A-Za-z0-9._:\-]{8,255}$`
)

// Common carries the §21 fields every tool accepts. Their meaning is said
// once, in the server's instructions, not on each of the tools.
type Common struct {
	RequestID string `json:"request_id,omitempty" ts:"max=128,pattern=^[A-Za-z0-9._:-]{1,128}$"`
}

// WriteCommon carries the §21 fields of every persisted write.
type WriteCommon struct {
	Common
	IdempotencyKey string `json:"idempotency_key" jsonschema:"one per intended write; reuse only to retry" ts:"max=255,pattern=^[A-Za-z0-9._:-]{8,255}$"`
}

// ArgumentLimit is the size limit of the whole arguments object of the
// tool named name: the tool's own MaxArgumentBytes where it sets one, else
// MaxArgumentBytes (also for an unknown name). The gate and the stdio guard
// refuse by it; the tool's decode holds the same limit.
func ArgumentLimit(name string) int {
	if t, ok := Lookup(name); ok {
		return t.argumentLimit()
	}
	return MaxArgumentBytes
}

// MaxToolArgumentBytes is the largest ArgumentLimit of any tool: the
// largest arguments object the server ever accepts.
func MaxToolArgumentBytes() int { return maxToolArgumentBytes() }

var maxToolArgumentBytes = sync.OnceValue(func() int {
	limit := MaxArgumentBytes
	for _, t := range All() {
		limit = max(limit, t.argumentLimit())
	}
	return limit
})

// argumentLimit is the one rule behind ArgumentLimit, for a definition
// (define cannot look itself up: the catalog is being built).
func (d Definition) argumentLimit() int {
	if d.MaxArgumentBytes > 0 {
		return d.MaxArgumentBytes
	}
	return MaxArgumentBytes
}

// define builds a Tool from a definition and a typed handler. The input
// schema is inferred from In (strict: additionalProperties false) and
// tightened by `ts` struct tags: id=PREFIX, max=N, min=N, pattern=RE,
// enum=a|b|c, maxitems=N, minitems=N. A nil handler defines a tool whose
// capability does not exist yet: it is listed in the catalog but Decide
// never shows it.
func define[In, Out any](d Definition, h func(ctx context.Context, env Env, in In) (Out, Effects, error)) Tool {
	// The input schema by reflection over In and its tags: what validates a
	// call, built on the tool's first call. What tools/list sends is the
	// same schema generated at build time (inputschemas_gen.go, held equal
	// to this one by TestCatalog_GeneratedInputSchemas): reflecting and
	// encoding 51 schemas was a quarter of a server's start.
	input := sync.OnceValue(func() *jsonschema.Schema {
		in, err := jsonschema.For[In](nil)
		if err != nil {
			panic(fmt.Sprintf("catalog: %s input schema: %v", d.Name, err))
		}
		applyTags(in, reflect.TypeFor[In]())
		return in
	})
	inJSON := json.RawMessage(generatedInputSchemas[d.Name])
	if len(inJSON) == 0 {
		// A tool defined since the file was generated (the test fails
		// until it is): encoded here, as before.
		b, err := json.Marshal(input())
		if err != nil {
			panic(fmt.Sprintf("catalog: %s input schema: %v", d.Name, err))
		}
		inJSON = b
	}
	// The output schema cannot fail to build where the catalog test built
	// it; built lazily, a failure would panic on first use, so the test
	// builds every tool's.
	output := sync.OnceValue(func() *jsonschema.Schema {
		out, err := jsonschema.For[Out](nil)
		if err != nil {
			panic(fmt.Sprintf("catalog: %s output schema: %v", d.Name, err))
		}
		return out
	})
	t := Tool{
		Definition:      d,
		InputSchemaJSON: inJSON,
		lazy: &lazySchemas{
			input:      input,
			inputHash:  sync.OnceValue(func() string { return jsonHash(inJSON) }),
			output:     output,
			outputHash: sync.OnceValue(func() string { return schemaHash(output()) }),
		},
	}
	limit := d.argumentLimit()
	// Resolving compiles every pattern: done on a tool's first call rather
	// than at start-up, which keeps a server's cold start short. The catalog
	// test decodes through every tool, so a bad schema still fails the build.
	resolve := sync.OnceValues(func() (*jsonschema.Resolved, error) {
		// What tools/list told hosts must be what validates: a stale
		// generated schema (a release built without the catalog test) fails
		// the tool closed rather than enforce a schema nobody was shown.
		if b, err := json.Marshal(input()); err != nil || !bytes.Equal(b, inJSON) {
			return nil, fmt.Errorf("catalog: %s: the advertised input schema is not the one that validates", d.Name)
		}
		return input().Resolve(nil)
	})
	t.decode = func(raw json.RawMessage) (any, error) {
		resolved, err := resolve()
		if err != nil {
			return nil, fmt.Errorf("catalog: %s input schema does not resolve: %w", d.Name, domain.ErrUnavailable)
		}
		var v In
		if err := decodeStrict(resolved, raw, &v, limit); err != nil {
			return nil, err
		}
		return v, nil
	}
	if h != nil {
		t.handle = func(ctx context.Context, env Env, in any) (any, Effects, error) {
			v, ok := in.(In)
			if !ok {
				return nil, Effects{}, fmt.Errorf("catalog: %s got %T: %w", d.Name, in, domain.ErrInvalidInput)
			}
			return h(ctx, env, v)
		}
	}
	return t
}

// schemaHash is "sha256:" + hex of the RFC 8785 canonical JSON of s.
func schemaHash(s *jsonschema.Schema) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return jsonHash(b)
}

// jsonHash is the canonical hash of an encoded schema.
func jsonHash(b []byte) string {
	c, err := domain.CanonicalJSON(b)
	if err != nil {
		panic(err)
	}
	sum := sha256.Sum256(c)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// applyTags tightens inferred property schemas from `ts` tags. It descends
// into nested objects and arrays of objects, so a nested field is bounded by
// the same rules as a top-level one. On a slice field, id, max, min, pattern
// and enum apply to the elements; maxitems and minitems to the array, which
// is never nullable.
func applyTags(s *jsonschema.Schema, t reflect.Type) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	for _, f := range reflect.VisibleFields(t) {
		if f.Anonymous {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		p := s.Properties[name]
		if p == nil {
			continue
		}
		arr := p  // the array schema of a slice field
		elem := p // where value tags (id, max, pattern, enum …) apply
		ft := deref(f.Type)
		if ft.Kind() == reflect.Slice && p.Items != nil {
			elem = p.Items
			ft = deref(ft.Elem())
			if len(p.Types) > 0 { // a JSON null is never a meaningful input list
				p.Types, p.Type = nil, "array"
			}
		}
		if ft.Kind() == reflect.Struct && ft != timeType {
			applyTags(elem, ft)
		}
		isString := ft.Kind() == reflect.String
		if isString && elem.MaxLength == nil {
			elem.MaxLength = jsonschema.Ptr(MaxShortText) // bounded unless a tag says otherwise
		}
		tag := f.Tag.Get("ts")
		if tag == "" {
			continue
		}
		for _, kv := range splitTag(tag) {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "id":
				elem.Pattern = domain.IDPattern(v)
				elem.MaxLength = jsonschema.Ptr(len(v) + 41)
			case "max":
				n := atoi(v)
				if isString {
					elem.MaxLength = jsonschema.Ptr(n)
				} else {
					elem.Maximum = jsonschema.Ptr(float64(n))
				}
			case "min":
				n := atoi(v)
				if isString {
					elem.MinLength = jsonschema.Ptr(n)
				} else {
					elem.Minimum = jsonschema.Ptr(float64(n))
				}
			case "pattern":
				elem.Pattern = v
			case "enum":
				for _, e := range strings.Split(v, "|") {
					elem.Enum = append(elem.Enum, e)
				}
			case "maxitems":
				arr.MaxItems = jsonschema.Ptr(atoi(v))
			case "minitems":
				arr.MinItems = jsonschema.Ptr(atoi(v))
			default:
				panic(fmt.Sprintf("catalog: unknown ts tag %q on %s.%s", k, t.Name(), f.Name))
			}
		}
		dropImpliedMaxLength(elem)
	}
}

// dropImpliedMaxLength removes a maxLength that the property's enum or
// anchored pattern already bounds as tightly (issue 18: tools/list lands in
// the model's context, and a bound said twice is bytes it reads twice). The
// accepted values do not change: TestSchema_PatternMaxLen holds the bound
// to what a regexp matches, and the catalog test every string to a bound.
func dropImpliedMaxLength(s *jsonschema.Schema) {
	if s.MaxLength == nil {
		return
	}
	if len(s.Enum) > 0 {
		for _, e := range s.Enum {
			if v, ok := e.(string); !ok || utf8.RuneCountInString(v) > *s.MaxLength {
				return
			}
		}
		s.MaxLength = nil
		return
	}
	if n, ok := PatternMaxLen(s.Pattern); ok && n <= *s.MaxLength {
		s.MaxLength = nil
	}
}

// PatternMaxLen is the length in characters of the longest string an
// anchored pattern (^…$) can match; ok is false when the pattern is not
// anchored at both ends or has no upper bound (a *, a + or an open {n,}).
func PatternMaxLen(pattern string) (n int, ok bool) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return 0, false
	}
	if re.Op != syntax.OpConcat || len(re.Sub) < 2 || re.Sub[0].Op != syntax.OpBeginText || re.Sub[len(re.Sub)-1].Op != syntax.OpEndText {
		return 0, false
	}
	return maxMatchLen(re)
}

// maxMatchLen is the longest match of re in characters, false when unbounded.
func maxMatchLen(re *syntax.Regexp) (int, bool) {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpBeginText, syntax.OpEndText, syntax.OpBeginLine, syntax.OpEndLine,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return 0, true
	case syntax.OpLiteral:
		return len(re.Rune), true
	case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return 1, true
	case syntax.OpCapture:
		return maxMatchLen(re.Sub[0])
	case syntax.OpQuest:
		return maxMatchLen(re.Sub[0])
	case syntax.OpRepeat:
		if re.Max < 0 {
			return 0, false
		}
		n, ok := maxMatchLen(re.Sub[0])
		return n * re.Max, ok
	case syntax.OpConcat:
		total := 0
		for _, sub := range re.Sub {
			n, ok := maxMatchLen(sub)
			if !ok {
				return 0, false
			}
			total += n
		}
		return total, true
	case syntax.OpAlternate:
		longest := 0
		for _, sub := range re.Sub {
			n, ok := maxMatchLen(sub)
			if !ok {
				return 0, false
			}
			longest = max(longest, n)
		}
		return longest, true
	}
	return 0, false // star, plus and anything not listed: unbounded or unknown
}

var timeType = reflect.TypeFor[time.Time]()

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// splitTag splits on commas that start a new key=value (patterns may hold commas).
func splitTag(tag string) []string {
	var parts []string
	for _, seg := range strings.Split(tag, ",") {
		if len(parts) > 0 && !strings.Contains(seg, "=") {
			parts[len(parts)-1] += "," + seg
			continue
		}
		if len(parts) > 0 && strings.HasPrefix(parts[len(parts)-1], "pattern=") && !isTagKey(seg) {
			parts[len(parts)-1] += "," + seg
			continue
		}
		parts = append(parts, seg)
	}
	return parts
}

func isTagKey(seg string) bool {
	k, _, ok := strings.Cut(seg, "=")
	switch k {
	case "id", "max", "min", "pattern", "enum", "maxitems", "minitems":
		return ok
	}
	return false
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		panic(fmt.Sprintf("catalog: bad number %q in ts tag", s))
	}
	return n
}

// TooManyValues reports, without decoding, whether raw holds more than
// MaxArgumentValues JSON values: the gate refuses such a call before it
// hashes or parses anything.
func TooManyValues(raw []byte) bool { return countValues(raw, MaxArgumentValues) > MaxArgumentValues }

// countValues counts the structural tokens of raw outside strings (each
// '{', '[' and ',' starts at least one more value), stopping once past max.
// It allocates nothing.
func countValues(raw []byte, max int) int {
	n, inString, escaped := 0, false, false
	for _, c := range raw {
		switch {
		case escaped:
			escaped = false
		case inString:
			switch c {
			case '\\':
				escaped = true
			case '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[' || c == ',':
			if n++; n > max {
				return n
			}
		}
	}
	return n
}

// decodeStrict validates raw against the resolved schema, then decodes it into
// dst refusing unknown fields. Every failure is a *domain.InputError whose
// message names the field and never echoes a long value.
func decodeStrict(rs *jsonschema.Resolved, raw json.RawMessage, dst any, limit int) error {
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		raw = json.RawMessage("{}")
	}
	if len(raw) > limit {
		return domain.Invalid("arguments", fmt.Sprintf("larger than %d bytes", limit))
	}
	if !utf8.Valid(raw) {
		return domain.Invalid("arguments", "not valid UTF-8")
	}
	if n := countValues(raw, MaxArgumentValues); n > MaxArgumentValues {
		return domain.Invalid("arguments", fmt.Sprintf("more than %d JSON values", MaxArgumentValues))
	}
	// json.Unmarshal works on raw in place; a json.Decoder would first copy
	// it into its own growing buffer (twice here), which for a big photo
	// costs more than the decoded value itself.
	var plain any
	if err := json.Unmarshal(raw, &plain); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) && strings.Contains(se.Error(), "after top-level value") {
			return domain.Invalid("arguments", "trailing data after the JSON object")
		}
		return domain.Invalid("arguments", "not valid JSON")
	}
	if _, ok := plain.(map[string]any); !ok {
		return domain.Invalid("arguments", "must be a JSON object")
	}
	if err := rs.Validate(plain); err != nil {
		return schemaError(err)
	}
	plain = nil // the validated copy can go before the typed one is made
	// The schema allows no property it does not name (additionalProperties
	// is false at every level), so after Validate the names match In's
	// fields exactly: no unknown field remains for the decoder to refuse.
	if err := json.Unmarshal(raw, dst); err != nil {
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) {
			return domain.Invalid(ute.Field, "wrong type: want "+ute.Type.String())
		}
		return domain.Invalid("arguments", "does not match the tool's input schema")
	}
	return nil
}

// schemaError turns a jsonschema validation error into an InputError with a
// short, value-free message. jsonschema-go wraps a failure once per schema
// level ("validating /properties/title: maxLength: \"…\" contains …"): the
// field and the keyword are read from that structure only, never from the
// rest of the text, which quotes the caller's own value (a value holding
// "maxLength" or "unexpected additional properties" was misreported, and
// echoed, before the attack review of issue 18).
func schemaError(err error) error {
	rest := err.Error()
	field := "arguments"
	for strings.HasPrefix(rest, "validating ") {
		path, after, ok := strings.Cut(rest[len("validating "):], ": ")
		if !ok {
			break
		}
		if field == "arguments" {
			if _, name, found := strings.Cut(path, "/properties/"); found {
				field, _, _ = strings.Cut(name, "/")
			}
		}
		rest = after
	}
	if names, ok := strings.CutPrefix(rest, "unexpected additional properties"); ok {
		return domain.Invalid("arguments", unknownFields(names))
	}
	keyword, detail, _ := strings.Cut(rest, ": ")
	switch keyword {
	case "required":
		return domain.Invalid("arguments", "missing required field(s) "+truncate(strings.TrimPrefix(detail, "missing properties: "), 120))
	case "maxLength":
		return domain.Invalid(field, "too long")
	case "minLength":
		return domain.Invalid(field, "too short")
	case "pattern":
		return domain.Invalid(field, "malformed: see the tool's input schema for the expected format")
	case "enum":
		return domain.Invalid(field, "not one of the allowed values")
	case "maximum", "minimum":
		return domain.Invalid(field, "out of range")
	case "maxItems":
		return domain.Invalid(field, "too many entries")
	case "minItems":
		return domain.Invalid(field, "too few entries: omit it rather than send an empty list")
	case "type":
		return domain.Invalid(field, "wrong type")
	}
	return domain.Invalid(field, "does not match the tool's input schema")
}

func truncate(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n-- // never cut a character in two
	}
	return s[:n] + "…"
}

// quotedName finds the Go-quoted names of a jsonschema-go message.
var quotedName = domain.LazyRegexp(`"(?:[^"\\]|\\.)*"`)

// plainField is a field name a refusal may repeat: the caller chose it, so
// only a plain identifier is echoed (attack review, issue 18).
var plainField = domain.LazyRegexp(`^[A-Za-z0-9_]{1,64}$`)

// unknownFields names the unknown fields of a refusal: at most five plain
// names, and how many others there are.
func unknownFields(list string) string {
	var shown []string
	others := 0
	for _, q := range quotedName().FindAllString(list, -1) {
		name, err := strconv.Unquote(q)
		if err != nil || !plainField().MatchString(name) || len(shown) == 5 {
			others++
			continue
		}
		shown = append(shown, strconv.Quote(name))
	}
	msg := "unknown field(s) " + strings.Join(shown, ", ")
	switch {
	case len(shown) == 0:
		msg = fmt.Sprintf("%d unknown field(s)", others)
	case others > 0:
		msg += fmt.Sprintf(" and %d other(s)", others)
	}
	return msg + ": remove them"
}

func majorOf(v string) int {
	maj, _, _ := strings.Cut(v, ".")
	n, err := strconv.Atoi(maj)
	if err != nil {
		return 0
	}
	return n
}
