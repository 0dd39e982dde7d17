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

// readColumns extracts bodyColumns with a small scanner that skips every
// other value without decoding it: Verify runs it on each of 100,000s of
// events, where encoding/json would dominate the run time.
func readColumns(b []byte) (bodyColumns, error) {
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
