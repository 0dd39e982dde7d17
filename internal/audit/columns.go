package audit

import (
	"bytes"
	"encoding/json"
	"errors"
)

// bodyColumns are the body fields that plugin_events repeats in indexed
// columns. Verify checks that each column still says what the body says: a
// column edited behind the store's back (say correlation_id, to hide an
// event from a trace) would otherwise mislead every query that filters on
// it, while the hashed body stayed intact.
//
// The values are sub-slices of the body (decoded only when escaped), so
// reading them allocates nothing in the common case.
type bodyColumns struct {
	ID, TenantID, CorrelationID, CausationID, RequestID, ServerRequestID, ToolName, Outcome, OccurredAt []byte
}

var errBody = errors.New("event body is not a JSON object")

// readColumns extracts bodyColumns. Verify runs it on each of 100,000s of
// events, where encoding/json would dominate the run time: a body as the
// stores write it (compact, no escape) is read by readCompact; any other
// goes through scanColumns, whose answer readCompact gives whenever it
// gives one (FuzzReadColumns holds them together).
func readColumns(b []byte) (bodyColumns, error) {
	if c, ok := readCompact(b); ok {
		return c, nil
	}
	return scanColumns(b)
}

// scanColumns extracts bodyColumns from any JSON object with a small
// scanner that skips every other value without decoding it.
func scanColumns(b []byte) (bodyColumns, error) {
	var c bodyColumns
	s := scanner{b: b}
	err := s.object(func(key []byte) error {
		var dst *[]byte
		switch string(key) {
		case "id":
			dst = &c.ID
		case "tenant_id":
			dst = &c.TenantID
		case "correlation_id":
			dst = &c.CorrelationID
		case "causation_id":
			dst = &c.CausationID
		case "request_id":
			dst = &c.RequestID
		case "server_request_id":
			dst = &c.ServerRequestID
		case "outcome":
			dst = &c.Outcome
		case "occurred_at":
			dst = &c.OccurredAt
		case "tool":
			s.ws()
			if s.peek() != '{' {
				return s.skip()
			}
			return s.object(func(k []byte) error {
				if string(k) == "name" {
					return s.stringOrNull(&c.ToolName)
				}
				return s.skip()
			})
		default:
			return s.skip()
		}
		return s.stringOrNull(dst)
	})
	return c, err
}

type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

func (s *scanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// object walks the members of the object at i, calling member with each
// name; member must consume the value.
func (s *scanner) object(member func(key []byte) error) error {
	s.ws()
	if s.peek() != '{' {
		return errBody
	}
	s.i++
	s.ws()
	if s.peek() == '}' {
		s.i++
		return nil
	}
	for {
		s.ws()
		key, esc, err := s.rawString()
		if err != nil {
			return err
		}
		if esc {
			var k string
			if json.Unmarshal(key, &k) != nil {
				return errBody
			}
			key = []byte(k)
		} else {
			key = key[1 : len(key)-1]
		}
		s.ws()
		if s.peek() != ':' {
			return errBody
		}
		s.i++
		if err := member(key); err != nil {
			return err
		}
		s.ws()
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return errBody
		}
	}
}

// rawString returns the quoted string at i (quotes included) and whether it
// has escapes. It jumps from quote to quote instead of visiting every byte.
func (s *scanner) rawString() ([]byte, bool, error) {
	if s.peek() != '"' {
		return nil, false, errBody
	}
	start := s.i
	esc := false
	j := s.i + 1
	for {
		k := bytes.IndexByte(s.b[j:], '"')
		if k < 0 {
			return nil, false, errBody
		}
		end := j + k
		// The quote is escaped when an odd number of backslashes precede it.
		n := 0
		for end-1-n > start && s.b[end-1-n] == '\\' {
			n++
		}
		if n > 0 {
			esc = true
		}
		if n%2 == 0 {
			if !esc && bytes.IndexByte(s.b[start+1:end], '\\') >= 0 {
				esc = true
			}
			s.i = end + 1
			return s.b[start:s.i], esc, nil
		}
		j = end + 1
	}
}

func (s *scanner) stringOrNull(dst *[]byte) error {
	s.ws()
	if s.peek() == 'n' {
		*dst = nil
		return s.skip()
	}
	raw, esc, err := s.rawString()
	if err != nil {
		return err
	}
	if esc {
		var v string
		if err := json.Unmarshal(raw, &v); err != nil {
			return err
		}
		*dst = []byte(v)
		return nil
	}
	*dst = raw[1 : len(raw)-1]
	return nil
}

// skip consumes one value of any kind.
func (s *scanner) skip() error {
	s.ws()
	switch s.peek() {
	case '"':
		_, _, err := s.rawString()
		return err
	case '{', '[':
		depth := 0
		for s.i < len(s.b) {
			// Jump to the next byte that matters: a quote or a bracket.
			k := indexStructural(s.b[s.i:])
			if k < 0 {
				return errBody
			}
			s.i += k
			switch s.b[s.i] {
			case '"':
				if _, _, err := s.rawString(); err != nil {
					return err
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					s.i++
					return nil
				}
			}
			s.i++
		}
		return errBody
	default:
		start := s.i
		for s.i < len(s.b) && s.b[s.i] != ',' && s.b[s.i] != '}' && s.b[s.i] != ']' && s.b[s.i] != ' ' && s.b[s.i] != '\n' {
			s.i++
		}
		if s.i == start {
			return errBody
		}
		return nil
	}
}

var structural = [256]bool{'"': true, '{': true, '}': true, '[': true, ']': true}

func indexStructural(b []byte) int {
	for i, c := range b {
		if structural[c] {
			return i
		}
	}
	return -1
}

// readCompact reads bodyColumns from a body with no whitespace between
// tokens and no backslash anywhere (so every string ends at its next
// quote): one pass, jumping from quote to quote. Anything else — a space,
// an escape, a malformed value — is not its to judge: it answers !ok and
// scanColumns reads the body.
func readCompact(b []byte) (c bodyColumns, ok bool) {
	if bytes.IndexByte(b, '\\') >= 0 {
		return c, false
	}
	_, ok = compactMembers(b, 0, &c, true)
	return c, ok
}

// compactMembers walks the object at b[i], storing each member that names
// a column (the top level's, or tool's name), and returns the index after
// the object.
func compactMembers(b []byte, i int, c *bodyColumns, top bool) (int, bool) {
	if i >= len(b) || b[i] != '{' {
		return i, false
	}
	i++
	if i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	for {
		key, j, ok := compactString(b, i)
		if !ok || j >= len(b) || b[j] != ':' {
			return i, false
		}
		i = j + 1
		tool := top && string(key) == "tool" && i < len(b) && b[i] == '{'
		var dst *[]byte
		switch {
		case tool:
		case top:
			dst = topColumn(c, key)
		case string(key) == "name":
			dst = &c.ToolName
		}
		switch {
		case tool:
			i, ok = compactMembers(b, i, c, false)
		case dst == nil:
			i, ok = compactSkip(b, i)
		case i < len(b) && b[i] == 'n':
			*dst = nil
			i, ok = compactLiteral(b, i)
		default:
			*dst, i, ok = compactString(b, i)
		}
		if !ok || i >= len(b) {
			return i, false
		}
		switch b[i] {
		case ',':
			i++
		case '}':
			return i + 1, true
		default:
			return i, false
		}
	}
}

func topColumn(c *bodyColumns, key []byte) *[]byte {
	switch string(key) {
	case "id":
		return &c.ID
	case "tenant_id":
		return &c.TenantID
	case "correlation_id":
		return &c.CorrelationID
	case "causation_id":
		return &c.CausationID
	case "request_id":
		return &c.RequestID
	case "server_request_id":
		return &c.ServerRequestID
	case "outcome":
		return &c.Outcome
	case "occurred_at":
		return &c.OccurredAt
	}
	return nil
}

// compactString returns the contents of the string at b[i] and the index
// after it.
func compactString(b []byte, i int) ([]byte, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, i, false
	}
	j := quoteAfter(b, i)
	if j < 0 {
		return nil, i, false
	}
	return b[i+1 : j], j + 1, true
}

// compactSkip passes the value at b[i].
func compactSkip(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch b[i] {
	case '"':
		_, i, ok := compactString(b, i)
		return i, ok
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				if i = quoteAfter(b, i); i < 0 {
					return i, false
				}
				i++
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, true
				}
			}
			i++
		}
		return i, false
	}
	return compactLiteral(b, i)
}

// compactLiteral passes a number, true, false or null: the bytes up to the
// next delimiter, none of them whitespace.
func compactLiteral(b []byte, i int) (int, bool) {
	start := i
	for ; i < len(b); i++ {
		switch b[i] {
		case ',', '}', ']':
			return i, i > start
		case ' ', '\t', '\n', '\r':
			return i, false
		}
	}
	return i, false
}

// quoteAfter is the index of the first quote after b[i], or -1: a loop,
// which beats bytes.IndexByte's call on strings as short as most of a
// body's.
func quoteAfter(b []byte, i int) int {
	for i++; i < len(b); i++ {
		if b[i] == '"' {
			return i
		}
	}
	return -1
}
