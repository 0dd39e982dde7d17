package live

import (
	"encoding/json"
	"errors"
	"strconv"
)

// rawAnswer receives an RPC's answer undecoded.
type rawAnswer []byte

var errPage = errors.New("malformed seller_audit_chain page")

// parseChainPage decodes a seller_audit_chain answer — a JSON array of
// flat objects whose values are strings, integers and the body object —
// in one pass, keeping each body as the bytes sent (a sub-slice of page).
// encoding/json validates and then decodes, two passes over every body;
// on 100,000 events that was most of `audit verify`'s time. Anything
// unexpected is an error, never a guess.
func parseChainPage(page []byte) ([]chainRow, error) {
	p := pageScanner{b: page}
	var rows []chainRow
	p.ws()
	if !p.eat('[') {
		return nil, errPage
	}
	p.ws()
	if p.eat(']') {
		return rows, p.end()
	}
	for {
		var r chainRow
		if err := p.row(&r); err != nil {
			return nil, err
		}
		rows = append(rows, r)
		p.ws()
		if p.eat(']') {
			return rows, p.end()
		}
		if !p.eat(',') {
			return nil, errPage
		}
	}
}

// pageFields are a row's fields, each with its bit.
var pageFields = func() map[string]uint16 {
	m := map[string]uint16{}
	for i, k := range []string{"seq", "id", "tenant_id", "correlation_id", "causation_id", "request_id", "server_request_id",
		"tool_name", "outcome", "occurred_at", "prev_hash", "event_hash", "body"} {
		m[k] = 1 << i
	}
	return m
}()

type pageScanner struct {
	b []byte
	i int
}

func (p *pageScanner) ws() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\t' || p.b[p.i] == '\n' || p.b[p.i] == '\r') {
		p.i++
	}
}

func (p *pageScanner) eat(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *pageScanner) end() error {
	p.ws()
	if p.i != len(p.b) {
		return errPage
	}
	return nil
}

func (p *pageScanner) row(r *chainRow) error {
	p.ws()
	if !p.eat('{') {
		return errPage
	}
	var seen uint16 // one bit per field
	for first := true; ; first = false {
		p.ws()
		if p.eat('}') {
			if seen != 1<<13-1 {
				return errPage // a field missing (or repeated)
			}
			return nil
		}
		if !first {
			if !p.eat(',') {
				return errPage
			}
			p.ws()
		}
		key, err := p.str()
		if err != nil {
			return err
		}
		p.ws()
		if !p.eat(':') {
			return errPage
		}
		p.ws()
		bit, ok := pageFields[key]
		if !ok || seen&bit != 0 {
			return errPage // unknown or repeated
		}
		seen |= bit
		var dst *string
		switch key {
		case "seq":
			j := p.i
			for p.i < len(p.b) && (p.b[p.i] == '-' || (p.b[p.i] >= '0' && p.b[p.i] <= '9')) {
				p.i++
			}
			if r.Seq, err = strconv.ParseInt(string(p.b[j:p.i]), 10, 64); err != nil {
				return errPage
			}
			continue
		case "body":
			j := p.i
			if err := p.skip(); err != nil {
				return err
			}
			r.Body = json.RawMessage(p.b[j:p.i])
			continue
		case "id":
			dst = &r.ID
		case "tenant_id":
			dst = &r.TenantID
		case "correlation_id":
			dst = &r.CorrelationID
		case "causation_id":
			dst = &r.CausationID
		case "request_id":
			dst = &r.RequestID
		case "server_request_id":
			dst = &r.ServerRequestID
		case "tool_name":
			dst = &r.ToolName
		case "outcome":
			dst = &r.Outcome
		case "occurred_at":
			dst = &r.OccurredAt
		case "prev_hash":
			dst = &r.PrevHash
		case "event_hash":
			dst = &r.EventHash
		default:
			return errPage
		}
		if *dst, err = p.str(); err != nil {
			return err
		}
	}
}

// str reads a JSON string (null is refused: the RPC sends none).
func (p *pageScanner) str() (string, error) {
	if !p.eat('"') {
		return "", errPage
	}
	j := p.i
	escaped := false
	for p.i < len(p.b) {
		switch c := p.b[p.i]; {
		case c == '\\':
			escaped = true
			p.i += 2
			continue
		case c == '"':
			p.i++
			if !escaped {
				return string(p.b[j : p.i-1]), nil
			}
			var s string
			if err := json.Unmarshal(p.b[j-1:p.i], &s); err != nil {
				return "", errPage
			}
			return s, nil
		case c < 0x20:
			return "", errPage
		}
		p.i++
	}
	return "", errPage
}

// skip passes one JSON object or array (a body) by its brackets. It does
// not validate it: the verifier hashes these bytes, and bytes that are not
// what was hashed are canonicalised, which refuses what is not JSON.
func (p *pageScanner) skip() error {
	if p.i >= len(p.b) || (p.b[p.i] != '{' && p.b[p.i] != '[') {
		return errPage
	}
	depth := 0
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case '"':
			p.i++
			for p.i < len(p.b) && p.b[p.i] != '"' {
				if p.b[p.i] == '\\' {
					p.i++
				}
				p.i++
			}
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				p.i++
				return nil
			}
		}
		p.i++
	}
	return errPage
}
