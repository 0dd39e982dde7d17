package audit

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
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

// columnBodies are bodies as the stores write them (compact, canonical),
// one with escapes, one spaced out, for the fast and general readers to
// agree on, as they are and mutated.
func columnBodies(t testing.TB) [][]byte {
	cause := "event_0"
	e := domain.Event{ID: "event_1", TenantID: "tenant_1", CorrelationID: "corr_1", CausationID: &cause, RequestID: "req-1",
		ServerRequestID: "mcp_req_1", Tool: domain.ToolRef{Name: "trove_list_sales", Version: "1.0.0", Tier: "tenant_read"}, Outcome: "success",
		Payload: domain.EventPayload{InputHash: "sha256:0f", RedactedSummary: map[string]string{"x": `}]{[`, "tool": "name"}},
		Client:  domain.ClientRef{ID: "id", Name: "é \u2028 {"}, OccurredAt: time.Date(2026, 6, 20, 1, 2, 3, 4, time.UTC),
		Related: domain.Related{CandidateIDs: []string{"candidate_1", "candidate_2"}}.Normalized(), Metrics: domain.EventMetrics{LatencyMS: 12.5, EstimatedCostUSD: 1e-7},
		Permissions: []string{"item.read"},
	}
	raw, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	canon, err := domain.CanonicalJSON(raw)
	if err != nil {
		t.Fatal(err)
	}
	e.RequestID = `we"ird\{[id`
	esc, _ := json.Marshal(e)
	var spaced bytes.Buffer
	_ = json.Indent(&spaced, canon, "", " ")
	return [][]byte{canon, raw, esc, spaced.Bytes(), []byte(`{}`), []byte(`{"tool":"x","id":null,"outcome":nul}`),
		[]byte(`{"tool":{"tool":{"name":"a"},"name":"b"},"id":[1,{"id":"c"}],"id":"d"}`)}
}

// sameColumns fails unless readColumns (fast path first) answers for body
// exactly what the general scanner answers.
func sameColumns(t *testing.T, body []byte) {
	t.Helper()
	want, werr := scanColumns(body)
	got, gerr := readColumns(body)
	if (werr == nil) != (gerr == nil) || !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\nread %+v, %v\nscan %+v, %v", body, got, gerr, want, werr)
	}
	if c, ok := readCompact(body); ok && (werr != nil || !reflect.DeepEqual(c, want)) {
		t.Fatalf("%q: the compact reader answered %+v where the scanner says %+v, %v", body, c, want, werr)
	}
}

// The compact reader answers what the general scanner answers, on the
// bodies the stores write and on 30,000 mutations of them (a byte dropped,
// doubled, or replaced by one that matters to JSON); and it does read the
// stores' bodies itself.
func TestReadColumns_CompactReaderIsTheScanners(t *testing.T) {
	bodies := columnBodies(t)
	if _, ok := readCompact(bodies[0]); !ok {
		t.Fatal("the compact reader refused a canonical body")
	}
	if _, ok := readCompact(bodies[2]); ok {
		t.Fatal("the compact reader read a body with escapes")
	}
	r := rand.New(rand.NewPCG(15, 37))
	const alphabet = "{}[]\",: n\\\tx0"
	for i := range 30000 {
		body := slices.Clone(bodies[i%len(bodies)])
		for range 1 + r.IntN(3) {
			if len(body) == 0 {
				break
			}
			k := r.IntN(len(body))
			switch r.IntN(3) {
			case 0:
				body = slices.Delete(body, k, k+1)
			case 1:
				body = slices.Insert(body, k, body[k])
			default:
				body[k] = alphabet[r.IntN(len(alphabet))]
			}
		}
		sameColumns(t, body)
	}
}

// Hand-made bodies where a one-pass reader might part from the scanner
// (from the attack review of the compact reader).
func TestReadColumns_CompactReaderOnEdgeBodies(t *testing.T) {
	for _, b := range []string{
		`{"id":"a","id":"b"}`, `{"id":"a","id":null}`, `{"id":null,"id":"a"}`, `{"id":nul}`, `{"id":nullx,"x":1}`, `{"id":tru}`, `{"id":1}`,
		`{"":"x","id":"a"}`, `{"id":"a"}trailing`, `{"id":"a"}}`, `{"id":"a",}`, `{,"id":"a"}`, `{"id":"a""b"}`, `{"id""a"}`,
		`{"tool":{"name":"a","name":"b"}}`, `{"tool":{"tool":{"name":"x"}}}`, `{"tool":{"name":{"name":"x"}}}`, `{"tool":{"name":null}}`,
		`{"tool":{"name":"a"},"tool":{"x":1}}`, `{"tool":{"name":"a"},"tool":"s"}`, `{"tool":["name","x"]}`, `{"name":"x"}`,
		`{"tool":{"name":"a"}`, `{"tool":{}}`, `{"tool":{},"id":"a"}`, `{"x":[}],"id":"a"}`, `{"x":{"id":"y"},"id":"a"}`,
		`{"x":"}","id":"a"}`, `{"x":":","id":"a"}`, `{"x":"{[","id":"a"}`, `{"id":"é\u2028"}`, "{\"id\":\"a\x00b\"}",
		`{"x":-0.5e+3,"id":"a"}`, "{\"x\":1\t,\"id\":\"a\"}", "{\"x\":1\r,\"id\":\"a\"}", "{\"id\":null\t}", "{\"id\":n\r}",
		`{"x":[1,2]]`, `{"x":{"a":1}},"id":"b"}`, `{"occurred_at":"2026","outcome":"ok","server_request_id":"s","request_id":"r","causation_id":null}`,
		`{"tool" :{"name":"a"}}`, `{"tool": {"name":"a"}}`, `{"tool":{"name" :"a"}}`, `{"tool":{"name":"a" }}`,
	} {
		sameColumns(t, []byte(b))
	}
}

func FuzzReadColumns(f *testing.F) {
	for _, b := range columnBodies(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, body []byte) { sameColumns(t, body) })
}

func BenchmarkReadColumns(b *testing.B) {
	body := columnBodies(b)[0]
	b.Run("compact", func(b *testing.B) {
		for b.Loop() {
			if _, err := readColumns(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("scanner", func(b *testing.B) {
		for b.Loop() {
			if _, err := scanColumns(body); err != nil {
				b.Fatal(err)
			}
		}
	})
}
