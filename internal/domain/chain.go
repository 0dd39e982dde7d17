package domain

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"math"
	"slices"
	"strconv"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// The audit hash chain (plugin_events.prev_hash / event_hash). It lives in
// domain because both the store (which computes it on every insert, inside
// the write transaction) and the audit package (which recomputes it to
// verify) need the one definition, and the store may import only domain.
//
//	event_hash = "sha256:" + hex( SHA-256( JCS(body) ‖ "\n" ‖ prev_hash ) )
//
// body is the stored event JSON; JCS is RFC 8785, so a verifier that
// re-serialises the body (another language, a JSON library that reorders
// members) gets the same bytes. prev_hash is the event_hash of the previous
// event of the same tenant chain, "" for the first one. There is one chain
// per tenant per embedded store; events of no tenant (anonymous calls)
// chain under tenant "". The live plugin_events table in Postgres chains
// by the same definition, computed in SQL as each event is recorded
// (supabase migration 29, trovesnap.audit_jcs and audit_chain_hash), so
// one verifier checks both.

// ChainGenesis is the prev_hash of the first event of a chain.
const ChainGenesis = ""

// ChainRecord is one stored plugin_event with its chain position: the
// indexed columns as stored, the body as stored, and its links. The columns
// are copies of body fields; Verify checks that they still agree.
type ChainRecord struct {
	Seq             int64  `json:"seq"`
	ID              string `json:"id"`
	TenantID        string `json:"tenant_id"`
	CorrelationID   string `json:"correlation_id"`
	CausationID     string `json:"causation_id"`
	RequestID       string `json:"request_id"`
	ServerRequestID string `json:"server_request_id"`
	ToolName        string `json:"tool_name"`
	Outcome         string `json:"outcome"`
	OccurredAt      string `json:"occurred_at"`
	Body            []byte `json:"-"`
	PrevHash        string `json:"prev_hash"`
	EventHash       string `json:"event_hash"`
}

// ChainHead is the newest event of one tenant chain.
type ChainHead struct {
	TenantID  string `json:"tenant_id"`
	Events    int64  `json:"events"`
	Seq       int64  `json:"seq"`
	EventID   string `json:"event_id"`
	EventHash string `json:"event_hash"`
}

// EventQuery selects stored events for the audit tools; set fields must all
// match. AfterSeq pages forward; Limit 0 means no limit.
type EventQuery struct {
	ID              string
	TenantID        string
	RequestID       string
	ServerRequestID string
	CorrelationID   string
	CausationID     string
	AfterSeq        int64
	Limit           int
	// Newest returns the last Limit matches (still in seq order).
	Newest bool
}

// ChainHash hashes an already canonical body onto prev. Callers that stored
// the canonical form (the store always does) can hash the stored bytes
// directly; anything else goes through EventHash.
func ChainHash(canonicalBody []byte, prev string) string {
	h := sha256.New()
	h.Write(canonicalBody)
	h.Write([]byte{'\n'})
	_, _ = io.WriteString(h, prev)
	var sum [sha256.Size]byte
	return "sha256:" + hex.EncodeToString(h.Sum(sum[:0]))
}

var digests = sync.Pool{New: func() any { return sha256.New() }}

// ChainHashMatches reports whether ChainHash(canonicalBody, prev) == want,
// without allocating: verification runs it on every stored event.
func ChainHashMatches(canonicalBody []byte, prev, want string) bool {
	const prefix = "sha256:"
	if len(want) != len(prefix)+2*sha256.Size || want[:len(prefix)] != prefix {
		return false
	}
	h := digests.Get().(hash.Hash)
	defer digests.Put(h)
	h.Reset()
	h.Write(canonicalBody)
	h.Write([]byte{'\n'})
	_, _ = io.WriteString(h, prev)
	var sum [sha256.Size]byte
	var hx [2 * sha256.Size]byte
	hex.Encode(hx[:], h.Sum(sum[:0]))
	return string(hx[:]) == want[len(prefix):]
}

// EventHash canonicalises body (RFC 8785) and hashes it onto prev.
func EventHash(body []byte, prev string) (string, error) {
	c, err := CanonicalJSON(body)
	if err != nil {
		return "", err
	}
	return ChainHash(c, prev), nil
}

// ErrNotCanonicalizable is returned for JSON that RFC 8785 cannot represent:
// malformed text, duplicate member names, lone surrogates, numbers outside
// IEEE 754 double range, or nesting deeper than maxCanonicalDepth.
var ErrNotCanonicalizable = errors.New("json cannot be canonicalised (RFC 8785)")

const maxCanonicalDepth = 128

// CanonicalJSON returns the RFC 8785 (JCS) serialisation of a JSON text:
// no insignificant whitespace, object members sorted by the UTF-16 code
// units of their names, strings with only the mandatory escapes, numbers in
// the ECMAScript shortest round-trip form.
//
// It is the one canonicaliser of the module: the event chain, proposal
// hashes (approval), idempotency fingerprints (gate) and schema hashes
// (catalog) all use it. It is a small single pass because the chain
// canonicalises every event on the write path and the general-purpose
// library, github.com/gowebpki/jcs, is several times slower on an event.
// That library is only a test oracle here: FuzzCanonicalJSON holds the two
// to the same output.
func CanonicalJSON(in []byte) ([]byte, error) {
	c := canonicalizer{in: in, out: make([]byte, 0, len(in)), scratch: make([]byte, 0, len(in)), members: make([]member, 0, 32)}
	if err := c.value(0); err != nil {
		return nil, err
	}
	c.ws()
	if c.pos != len(c.in) {
		return nil, c.fail("trailing data")
	}
	return c.out, nil
}

type canonicalizer struct {
	in  []byte
	pos int
	out []byte
	// members is a stack of the members of the objects being read, and
	// scratch the buffer an object's values are copied to while it is
	// rewritten in name order: both reused, so a typical event costs a few
	// allocations rather than several per object.
	members []member
	scratch []byte
}

func (c *canonicalizer) fail(what string) error {
	return fmt.Errorf("%w: %s at offset %d", ErrNotCanonicalizable, what, c.pos)
}

func (c *canonicalizer) ws() {
	for c.pos < len(c.in) {
		switch c.in[c.pos] {
		case ' ', '\t', '\n', '\r':
			c.pos++
		default:
			return
		}
	}
}

func (c *canonicalizer) value(depth int) error {
	if depth > maxCanonicalDepth {
		return c.fail("nesting too deep")
	}
	c.ws()
	if c.pos >= len(c.in) {
		return c.fail("unexpected end")
	}
	switch ch := c.in[c.pos]; {
	case ch == '{':
		return c.object(depth)
	case ch == '[':
		return c.array(depth)
	case ch == '"':
		s, err := c.str()
		if err != nil {
			return err
		}
		c.out = appendCanonicalString(c.out, s)
		return nil
	case ch == 't':
		return c.literal("true")
	case ch == 'f':
		return c.literal("false")
	case ch == 'n':
		return c.literal("null")
	case ch == '-' || (ch >= '0' && ch <= '9'):
		return c.number()
	}
	return c.fail("unexpected character")
}

func (c *canonicalizer) literal(lit string) error {
	if !bytes.HasPrefix(c.in[c.pos:], []byte(lit)) {
		return c.fail("invalid literal")
	}
	c.pos += len(lit)
	c.out = append(c.out, lit...)
	return nil
}

// member is one object member: its decoded name and where its canonical
// value sits in out.
type member struct {
	name       []byte
	wide       bool // has runes above U+FFFF: compare as UTF-16
	start, end int
}

func compareMembers(a, b member) int {
	if !a.wide && !b.wide {
		return bytes.Compare(a.name, b.name)
	}
	return compareUTF16(a.name, b.name)
}

func (c *canonicalizer) object(depth int) error {
	c.pos++ // {
	objStart := len(c.out)
	c.out = append(c.out, '{')
	c.ws()
	if c.pos < len(c.in) && c.in[c.pos] == '}' {
		c.pos++
		c.out = append(c.out, '}')
		return nil
	}
	base := len(c.members)
	defer func() { c.members = c.members[:base] }()
	for {
		c.ws()
		if c.pos >= len(c.in) || c.in[c.pos] != '"' {
			return c.fail("expected member name")
		}
		name, err := c.str()
		if err != nil {
			return err
		}
		c.ws()
		if c.pos >= len(c.in) || c.in[c.pos] != ':' {
			return c.fail("expected ':'")
		}
		c.pos++
		start := len(c.out)
		if err := c.value(depth + 1); err != nil {
			return err
		}
		c.members = append(c.members, member{name: name, wide: hasSupplementary(name), start: start, end: len(c.out)})
		c.ws()
		if c.pos >= len(c.in) {
			return c.fail("unterminated object")
		}
		if c.in[c.pos] == ',' {
			c.pos++
			continue
		}
		if c.in[c.pos] != '}' {
			return c.fail("expected ',' or '}'")
		}
		c.pos++
		break
	}
	members := c.members[base:]
	if !slices.IsSortedFunc(members, compareMembers) {
		slices.SortFunc(members, compareMembers)
	}
	for i := 1; i < len(members); i++ {
		if bytes.Equal(members[i-1].name, members[i].name) {
			return c.fail("duplicate member name " + strconv.Quote(string(members[i].name)))
		}
	}
	// The values were written in input order (nested objects are complete
	// by now); rewrite this object in name order from a copy of the region.
	c.scratch = append(c.scratch[:0], c.out[objStart+1:]...)
	c.out = c.out[:objStart+1]
	for i, m := range members {
		if i > 0 {
			c.out = append(c.out, ',')
		}
		c.out = appendCanonicalString(c.out, m.name)
		c.out = append(c.out, ':')
		c.out = append(c.out, c.scratch[m.start-objStart-1:m.end-objStart-1]...)
	}
	c.out = append(c.out, '}')
	return nil
}

func (c *canonicalizer) array(depth int) error {
	c.pos++ // [
	c.out = append(c.out, '[')
	c.ws()
	if c.pos < len(c.in) && c.in[c.pos] == ']' {
		c.pos++
		c.out = append(c.out, ']')
		return nil
	}
	for first := true; ; first = false {
		if !first {
			c.out = append(c.out, ',')
		}
		if err := c.value(depth + 1); err != nil {
			return err
		}
		c.ws()
		if c.pos >= len(c.in) {
			return c.fail("unterminated array")
		}
		if c.in[c.pos] == ',' {
			c.pos++
			continue
		}
		if c.in[c.pos] != ']' {
			return c.fail("expected ',' or ']'")
		}
		c.pos++
		c.out = append(c.out, ']')
		return nil
	}
}

// str decodes the JSON string at pos into its UTF-8 bytes. The common case
// (no escapes) returns a sub-slice of the input without copying.
func (c *canonicalizer) str() ([]byte, error) {
	c.pos++ // opening quote
	start := c.pos
	ascii := true
	for c.pos < len(c.in) {
		ch := c.in[c.pos]
		switch {
		case ch == '"':
			s := c.in[start:c.pos]
			c.pos++
			if !ascii && !utf8.Valid(s) {
				return nil, c.fail("invalid UTF-8")
			}
			return s, nil
		case ch == '\\':
			return c.strSlow(start)
		case ch < 0x20:
			return nil, c.fail("control character in string")
		case ch >= utf8.RuneSelf:
			ascii = false
		}
		c.pos++
	}
	return nil, c.fail("unterminated string")
}

func (c *canonicalizer) strSlow(start int) ([]byte, error) {
	buf := append([]byte(nil), c.in[start:c.pos]...)
	if !utf8.Valid(buf) {
		return nil, c.fail("invalid UTF-8")
	}
	for c.pos < len(c.in) {
		ch := c.in[c.pos]
		switch {
		case ch == '"':
			c.pos++
			return buf, nil
		case ch < 0x20:
			return nil, c.fail("control character in string")
		case ch == '\\':
			if c.pos+1 >= len(c.in) {
				return nil, c.fail("unterminated escape")
			}
			e := c.in[c.pos+1]
			c.pos += 2
			switch e {
			case '"', '\\', '/':
				buf = append(buf, e)
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				r, ok := c.hex4()
				if !ok {
					return nil, c.fail("invalid \\u escape")
				}
				if utf16.IsSurrogate(r) {
					// A high surrogate must be followed by an escaped low one.
					if r >= 0xDC00 || c.pos+1 >= len(c.in) || c.in[c.pos] != '\\' || c.in[c.pos+1] != 'u' {
						return nil, c.fail("lone surrogate")
					}
					c.pos += 2
					lo, ok := c.hex4()
					if !ok || lo < 0xDC00 || lo > 0xDFFF {
						return nil, c.fail("lone surrogate")
					}
					r = utf16.DecodeRune(r, lo)
				}
				buf = utf8.AppendRune(buf, r)
			default:
				return nil, c.fail("invalid escape")
			}
		default:
			// Copy a run of plain bytes at once, validating multi-byte runes.
			end := c.pos
			for end < len(c.in) && c.in[end] != '"' && c.in[end] != '\\' && c.in[end] >= 0x20 {
				end++
			}
			if !utf8.Valid(c.in[c.pos:end]) {
				return nil, c.fail("invalid UTF-8")
			}
			buf = append(buf, c.in[c.pos:end]...)
			c.pos = end
		}
	}
	return nil, c.fail("unterminated string")
}

func (c *canonicalizer) hex4() (rune, bool) {
	if c.pos+4 > len(c.in) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(c.in[c.pos:c.pos+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	c.pos += 4
	return rune(v), true
}

// number re-serialises a JSON number the way ECMAScript's Number::toString
// does (RFC 8785 §3.2.2.3).
func (c *canonicalizer) number() error {
	start := c.pos
	if c.in[c.pos] == '-' {
		c.pos++
	}
	digits := func() int {
		n := 0
		for c.pos < len(c.in) && c.in[c.pos] >= '0' && c.in[c.pos] <= '9' {
			c.pos++
			n++
		}
		return n
	}
	intStart := c.pos
	if n := digits(); n == 0 || (n > 1 && c.in[intStart] == '0') {
		return c.fail("invalid number")
	}
	if c.pos < len(c.in) && c.in[c.pos] == '.' {
		c.pos++
		if digits() == 0 {
			return c.fail("invalid number")
		}
	}
	if c.pos < len(c.in) && (c.in[c.pos] == 'e' || c.in[c.pos] == 'E') {
		c.pos++
		if c.pos < len(c.in) && (c.in[c.pos] == '+' || c.in[c.pos] == '-') {
			c.pos++
		}
		if digits() == 0 {
			return c.fail("invalid number")
		}
	}
	f, err := strconv.ParseFloat(string(c.in[start:c.pos]), 64)
	if err != nil || math.IsInf(f, 0) {
		return c.fail("number out of range")
	}
	c.out = AppendES6Number(c.out, f)
	return nil
}

// AppendES6Number appends f as ECMAScript's Number::toString writes it: the
// shortest decimal that round-trips, plain notation for 1e-6 <= |f| < 1e21,
// otherwise exponent notation ("1e+21", "1e-7"); -0 is "0".
func AppendES6Number(b []byte, f float64) []byte {
	if f == 0 {
		return append(b, '0')
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs < 1e-6 || abs >= 1e21 {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// strconv writes e-07; ECMAScript writes e-7.
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// appendCanonicalString writes s (valid UTF-8) as RFC 8785 requires: only
// '"', '\\' and control characters are escaped, the latter with the short
// forms where JSON has them and \u00xx otherwise; everything else literal.
func appendCanonicalString(b, s []byte) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch >= 0x20 && ch != '"' && ch != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch ch {
		case '"', '\\':
			b = append(b, '\\', ch)
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[ch>>4], hexDigits[ch&0xF])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// compareUTF16 orders member names by their UTF-16 code units (RFC 8785
// §3.2.3). For names without runes above U+FFFF that equals the byte order
// of their UTF-8 form, which compareMembers uses instead.
func compareUTF16(a, b []byte) int {
	ua, ub := utf16.Encode([]rune(string(a))), utf16.Encode([]rune(string(b)))
	return slices.Compare(ua, ub)
}

func hasSupplementary(s []byte) bool {
	for _, ch := range s {
		if ch >= 0xF0 { // lead byte of a 4-byte UTF-8 sequence
			return true
		}
	}
	return false
}
