package live

import (
	"strings"
	"testing"
)

// parseChainPage keeps each body's bytes as sent, decodes escaped strings,
// and refuses anything that is not a page of complete rows.
func TestParseChainPage(t *testing.T) {
	const row = `{"seq": 7, "id": "event_\"q\"", "tenant_id": "t", "correlation_id": "c\u00e9", "causation_id": "",
		"request_id": "r", "server_request_id": "s", "tool_name": "x", "outcome": "success", "occurred_at": "2026-12-01T00:00:00Z",
		"prev_hash": "", "event_hash": "sha256:ab", "body": {"a":"}\"]","b":[1,{"c":null}]}}`
	rows, err := parseChainPage([]byte(" [" + row + "," + row + "] "))
	if err != nil || len(rows) != 2 {
		t.Fatalf("rows %+v, %v", rows, err)
	}
	r := rows[1]
	if r.Seq != 7 || r.ID != `event_"q"` || r.CorrelationID != "cé" || r.EventHash != "sha256:ab" || r.OccurredAt != "2026-12-01T00:00:00Z" ||
		string(r.Body) != `{"a":"}\"]","b":[1,{"c":null}]}` {
		t.Fatalf("row %+v body %s", r, r.Body)
	}
	if rows, err := parseChainPage([]byte("[]")); err != nil || len(rows) != 0 {
		t.Fatalf("empty page: %v, %v", rows, err)
	}
	for _, bad := range []string{"", "{}", "[", "[" + row, "[" + row + "] x", `[{"seq": 1}]`, "[" + row[:len(row)-1] + `, "extra": "1"}]`,
		"[" + row[:len(row)-3] + "]", `[{"seq": "1"}]`, "[" + row + ",]", "[" + strings.Replace(row, `"outcome"`, `"tool_name"`, 1) + "]"} {
		if _, err := parseChainPage([]byte(bad)); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}
