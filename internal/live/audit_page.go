package live

import (
	"bytes"
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
		text  []byte
		ends  []int
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
		// A string column's values are read into one buffer and become
		// substrings of one string: two allocations a column, not one a
		// value (the verifier keeps only ids and hashes, whose strings
		// then hold just their own column).
		text = text[:0]
		ends = ends[:0]
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
			}
			if text, err = p.appendStr(text); err != nil {
				return nil, err
			}
			ends = append(ends, len(text))
		}
		if len(ends) > 0 {
			all, from := string(text), 0
			for i, end := range ends {
				*stringColumn(&rows[i], key) = all[from:end]
				from = end
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

// stringColumn is the field of r that a string column fills.
func stringColumn(r *chainRow, key string) *string {
	switch key {
	case "id":
		return &r.ID
	case "tenant_id":
		return &r.TenantID
	case "correlation_id":
		return &r.CorrelationID
	case "request_id":
		return &r.RequestID
	case "server_request_id":
		return &r.ServerRequestID
	case "tool_name":
		return &r.ToolName
	case "outcome":
		return &r.Outcome
	case "occurred_at":
		return &r.OccurredAt
	case "prev_hash":
		return &r.PrevHash
	}
	return &r.EventHash // the last of pageColumns' strings
}

// appendStr appends the JSON string it reads, decoded, to b (null is
// refused: the RPC sends none).
func (p *pageScanner) appendStr(b []byte) ([]byte, error) {
	if !p.eat('"') {
		return b, errPage
	}
	j := p.i
	k := bytes.IndexByte(p.b[j:], '"')
	if k < 0 {
		return b, errPage
	}
	v := p.b[j : j+k]
	for _, c := range v {
		if c == '\\' || c < 0x20 {
			p.i = j - 1
			s, err := p.str() // escapes: the quote found may be one of them
			return append(b, s...), err
		}
	}
	p.i = j + k + 1
	return append(b, v...), nil
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
