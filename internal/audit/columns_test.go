package audit

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// readColumns agrees with encoding/json on the fields it extracts, through
// escapes, brackets inside strings and nested values it skips.
func TestReadColumns_MatchesEncodingJSON(t *testing.T) {
	cause := "event_0"
	e := domain.Event{ID: "event_1", TenantID: "tenant_1", CorrelationID: "corr_1", CausationID: &cause, RequestID: `we"ird\\{[id`,
		ServerRequestID: "mcp_req_1", Tool: domain.ToolRef{Name: "trove_list_sales", Version: "1.0.0"}, Outcome: "success",
		Payload: domain.EventPayload{RedactedSummary: map[string]string{"x": `}]"{[`}},
		Client:  domain.ClientRef{ID: "id", Name: "é \u2028 {"}, OccurredAt: time.Date(2026, 6, 20, 1, 2, 3, 4, time.UTC),
		Related: domain.Related{}.Normalized(),
	}
	raw, _ := json.Marshal(e)
	canon, _ := domain.CanonicalJSON(raw)
	for _, body := range [][]byte{raw, canon} {
		c, err := readColumns(body)
		if err != nil {
			t.Fatal(err)
		}
		got := []string{string(c.ID), string(c.TenantID), string(c.CorrelationID), string(c.CausationID), string(c.RequestID),
			string(c.ServerRequestID), string(c.ToolName), string(c.Outcome), string(c.OccurredAt)}
		want := []string{e.ID, e.TenantID, e.CorrelationID, cause, e.RequestID, e.ServerRequestID, "trove_list_sales", "success", "2026-06-20T01:02:03.000000004Z"}
		if !slices.Equal(got, want) {
			t.Errorf("got %q\nwant %q", got, want)
		}
	}
	for _, bad := range []string{``, `[]`, `{"id":`, `{"id":"x"`, `{"tool":{"name":"x"}`} {
		if _, err := readColumns([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
