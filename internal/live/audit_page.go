package live

import (
	"encoding/json"
	"errors"
	"strconv"
)

// rawAnswer receives an RPC's answer undecoded.
type rawAnswer []byte

var errPage = errors.New("malformed seller_audit_chain page")

// parseChainPage decodes a seller_audit_chain answer: one object of
// columns, each an array with one value per event in seq order — seq,
// id, tenant_id, correlation_id, request_id, server_request_id,
// tool_name, outcome, occurred_at, prev_hash, event_hash, body_bytes and,
// last, body — or {} for no events. A body is kept as the bytes sent (a
// sub-slice of page), cut at its body_bytes length, so the hundred
// megabytes of a long chain are not scanned byte by byte; a wrong length
// only cuts a body the verifier then reports. A row has no causation_id
// (no column holds it: see SellerAudit.BodyOnlyColumns), and its
// occurred_at is the column's timestamp, to the microsecond. Anything unexpected is an error, never a guess.
func parseChainPage(page []byte) ([]chainRow, error) {
	p := pageScanner{b: page}
	p.ws()
	if !p.eat('{') {
		return nil, errPage
	}
	var (
		rows  []chainRow
		sizes []int
		seen  uint16
		n     = -1 // events in the page, from the first column
	)
	for first := true; ; first = false {
		p.ws()
		if p.eat('}') {
			if seen == 0 {
				return nil, p.end() // no events
			}
			if seen != 1<<len(pageColumns)-1 {
				return nil, errPage // a column missing
			}
			return rows, p.end()
		}
		if !first && !p.eat(',') {
			return nil, errPage
		}
		p.ws()
		key, err := p.str()
		if err != nil {
			return nil, err
		}
		p.ws()
		if !p.eat(':') {
			return nil, errPage
		}
		col, ok := pageColumns[key]
		if !ok || seen&(1<<col) != 0 || (key == "body" && seen&(1<<pageColumns["body_bytes"]) == 0) {
			return nil, errPage // unknown, repeated, or the body before its lengths
		}
		seen |= 1 << col
		p.ws()
		if !p.eat('[') {
			return nil, errPage
		}
		// Bodies are cut where they start, spaces included (a body is the
		// stored text as it is, and json_agg writes "[b1, b2]": one space
		// after each comma); other values may have any whitespace around.
		body := key == "body"
		k := 0
		for ; ; k++ {
			if !body {
				p.ws()
			}
			if p.eat(']') {
				break
			}
			if k > 0 {
				if !p.eat(',') {
					return nil, errPage
				}
				if body {
					p.eat(' ')
				} else {
					p.ws()
				}
			}
			if n < 0 {
				rows = append(rows, chainRow{})
			} else if k >= n {
				return nil, errPage // a longer column
			}
			r := &rows[k]
			var dst *string
			switch key {
			case "seq", "body_bytes":
				v, err := p.int()
				if err != nil {
					return nil, err
				}
				if key == "seq" {
					r.Seq = v
					continue
				}
				if v < 1 || v > int64(len(p.b)) {
					return nil, errPage
				}
				sizes = append(sizes, int(v))
				continue
			case "body":
				// Whatever the cut holds is the body: bytes that are not
				// what was hashed are the verifier's to report, at their
				// event, not a failure of the whole page.
				end := p.i + sizes[k]
				if end > len(p.b) {
					return nil, errPage
				}
				r.Body = json.RawMessage(p.b[p.i:end])
				p.i = end
				continue
			case "id":
				dst = &r.ID
			case "tenant_id":
				dst = &r.TenantID
			case "correlation_id":
				dst = &r.CorrelationID
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
			}
			if *dst, err = p.str(); err != nil {
				return nil, err
			}
		}
		if n < 0 {
			n = k
		} else if k != n {
			return nil, errPage // a shorter column
		}
	}
}

// pageColumns are a page's columns, each with its bit.
var pageColumns = func() map[string]uint {
	m := map[string]uint{}
	for i, k := range []string{"seq", "id", "tenant_id", "correlation_id", "request_id", "server_request_id",
		"tool_name", "outcome", "occurred_at", "prev_hash", "event_hash", "body_bytes", "body"} {
		m[k] = uint(i)
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

// int reads a JSON integer.
func (p *pageScanner) int() (int64, error) {
	j := p.i
	for p.i < len(p.b) && (p.b[p.i] == '-' || (p.b[p.i] >= '0' && p.b[p.i] <= '9')) {
		p.i++
	}
	v, err := strconv.ParseInt(string(p.b[j:p.i]), 10, 64)
	if err != nil {
		return 0, errPage
	}
	return v, nil
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
