package live

import (
	"fmt"
	"strings"
	"testing"
)

// parseChainPage keeps each body's bytes as sent, cut at its length,
// decodes escaped strings, and refuses anything that is not a page of
// complete, equally long columns.
func TestParseChainPage(t *testing.T) {
	b1, b2 := `{"a":"}\"]","b":[1,{"c":null}]}`, `{"x":1}`
	col := func(name, vals string) string { return `"` + name + `" : [` + vals + `]` }
	cols := []string{col("seq", "7, 9"), col("id", `"event_\"q\"","event_2"`), col("tenant_id", `"t","t"`),
		col("correlation_id", `"c\u00e9",""`), col("request_id", `"r",""`), col("server_request_id", `"s",""`),
		col("tool_name", `"x",""`), col("outcome", `"success","failed"`),
		col("occurred_at", `"2026-12-01T00:00:00+00:00","2026-12-01T00:00:01+00:00"`), col("prev_hash", `"","sha256:ab"`),
		col("event_hash", `"sha256:ab","sha256:cd"`), col("body_bytes", fmt.Sprintf("%d,%d", len(b1), len(b2))), col("body", b1+", "+b2)}
	page := func(cs []string) string { return " {" + strings.Join(cs, ", ") + "} " }
	rows, err := parseChainPage([]byte(page(cols)))
	if err != nil || len(rows) != 2 {
		t.Fatalf("rows %+v, %v", rows, err)
	}
	r := rows[0]
	if r.Seq != 7 || r.ID != `event_"q"` || r.CorrelationID != "cé" || r.EventHash != "sha256:ab" || r.OccurredAt != "2026-12-01T00:00:00+00:00" ||
		string(r.Body) != b1 || string(rows[1].Body) != b2 || rows[1].Seq != 9 || rows[1].PrevHash != "sha256:ab" {
		t.Fatalf("rows %+v / %+v", r, rows[1])
	}
	if rows, err := parseChainPage([]byte("{}")); err != nil || len(rows) != 0 {
		t.Fatalf("empty page: %v, %v", rows, err)
	}
	with := func(i int, c string) string {
		cs := append([]string(nil), cols...)
		cs[i] = c
		return page(cs)
	}
	last := len(cols) - 1
	bad := []string{"", "[]", "{", page(cols[:last]), page(cols) + "x", page(append(cols, col("extra", "1, 2"))),
		page(append(cols[:1:1], cols...)),                                               // a column twice
		page(append(append([]string(nil), cols[:last-1]...), cols[last], cols[last-1])), // the bodies before their lengths
		with(0, col("seq", "7")), with(0, col("seq", "7, 9, 11")), with(1, col("id", `"a"`)), with(0, col("seq", `"7", 9`)),
		with(1, col("id", `"a", 1`)), with(last-1, col("body_bytes", fmt.Sprintf("%d,%d", len(b1)+1, len(b2)))),
		with(last-1, col("body_bytes", fmt.Sprintf("%d,%d", len(b1), 1000))), with(last-1, col("body_bytes", "0, 0")),
		with(2, col("tenant_id", "\"t\x01\",\"t\"")), with(2, col("tenant_id", `"t\", "t"`)), // a raw control character; an escaped end
		with(last, col("body", b1+" "+b2)), with(last, col("body", b1+", "+b2+", "+b2)), with(last, col("body", `[1], {"x":1}`)),
	}
	for _, b := range bad {
		if _, err := parseChainPage([]byte(b)); err == nil {
			t.Errorf("accepted %q", b)
		}
	}
}
