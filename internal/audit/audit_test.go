package audit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/triunalabs/trovesnap/internal/audit"
	"github.com/triunalabs/trovesnap/internal/domain"
)

// chain is an in-memory ChainSource: rows as the store would hold them.
type chain []domain.ChainRecord

func (c chain) ScanChain(_ context.Context, after int64, fn func(domain.ChainRecord) error) error {
	for _, r := range c {
		if r.Seq > after {
			if err := fn(r); err != nil {
				return err
			}
		}
	}
	return nil
}

var at = time.Date(2026, 6, 20, 0, 0, 0, 0, time.UTC)

// build appends events the way store.insertEvent does: canonical body,
// hashed onto the head of the event's tenant chain.
func build(t *testing.T, tenants ...string) chain {
	t.Helper()
	var out chain
	heads := map[string]string{}
	for i, tenant := range tenants {
		e := domain.Event{ID: fmt.Sprintf("event_%d", i+1), TenantID: tenant, CorrelationID: fmt.Sprintf("corr_%d", i+1),
			ServerRequestID: fmt.Sprintf("mcp_req_%d", i+1), Tool: domain.ToolRef{Name: "trove_list_sales", Version: "1.0.0"},
			Outcome: domain.OutcomeSuccess, Related: domain.Related{}.Normalized(), OccurredAt: at.Add(time.Duration(i) * time.Second)}
		out = append(out, record(t, int64(i+1), e, heads[tenant]))
		heads[tenant] = out[len(out)-1].EventHash
	}
	return out
}

func record(t *testing.T, seq int64, e domain.Event, prev string) domain.ChainRecord {
	t.Helper()
	raw, _ := json.Marshal(e)
	body, err := domain.CanonicalJSON(raw)
	if err != nil {
		t.Fatal(err)
	}
	cause := ""
	if e.CausationID != nil {
		cause = *e.CausationID
	}
	return domain.ChainRecord{Seq: seq, ID: e.ID, TenantID: e.TenantID, CorrelationID: e.CorrelationID, CausationID: cause, RequestID: e.RequestID,
		ServerRequestID: e.ServerRequestID, ToolName: e.Tool.Name, Outcome: e.Outcome, OccurredAt: e.OccurredAt.UTC().Format("2006-01-02T15:04:05.000000000Z07:00"),
		Body: body, PrevHash: prev, EventHash: domain.ChainHash(body, prev)}
}

func verify(t *testing.T, c chain, against ...domain.ChainHead) audit.Report {
	t.Helper()
	rep, err := audit.Verify(context.Background(), c, audit.VerifyOptions{Against: against})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestVerify_IntactChainsPerTenant(t *testing.T) {
	c := build(t, "tenant_a", "tenant_b", "tenant_a", "", "tenant_b", "tenant_a")
	rep := verify(t, c)
	if !rep.Intact || rep.Events != 6 || len(rep.Chains) != 3 || rep.Err() != nil {
		t.Fatalf("%+v", rep)
	}
	for _, ch := range rep.Chains {
		if ch.TenantID == "tenant_a" && (ch.Events != 3 || ch.HeadEvent != "event_6" || ch.HeadHash != c[5].EventHash) {
			t.Errorf("tenant_a chain %+v", ch)
		}
	}
	// A body re-serialised by another writer (same JSON, other bytes) still verifies.
	var generic map[string]any
	_ = json.Unmarshal(c[2].Body, &generic)
	c[2].Body, _ = json.MarshalIndent(generic, "", "  ")
	if rep := verify(t, c); !rep.Intact {
		t.Errorf("re-serialised body: %+v", rep.First)
	}
}

// Each kind of tampering is detected at the right event and named.
func TestVerify_DetectsAndNamesEachTampering(t *testing.T) {
	tenants := []string{"tenant_a", "tenant_b", "tenant_a", "tenant_a", "tenant_b", "tenant_a", "tenant_a"}
	// tenant_a chain: seq 1, 3, 4, 6, 7
	for name, tc := range map[string]struct {
		tamper    func(c chain) chain
		kind, id  string
		wantInMsg string
	}{
		"flip a byte of a body": {func(c chain) chain {
			c[2].Body = []byte(strings.Replace(string(c[2].Body), "mcp_req_3", "mcp_req_X", 1))
			return c
		}, audit.ProblemModified, "event_3", "no longer matches its hash"},
		"body no longer JSON":       {func(c chain) chain { c[3].Body = c[3].Body[:len(c[3].Body)-1]; return c }, audit.ProblemModified, "event_4", "no longer the JSON"},
		"edit an indexed column":    {func(c chain) chain { c[3].CorrelationID = "corr_hidden"; return c }, audit.ProblemModified, "event_4", "correlation_id column"},
		"edit the causation column": {func(c chain) chain { c[3].CausationID = "event_1"; return c }, audit.ProblemModified, "event_4", "causation_id column"},
		"move the time by a microsecond": {func(c chain) chain {
			c[3].OccurredAt = at.Add(time.Microsecond).Format(time.RFC3339Nano)
			return c
		}, audit.ProblemModified, "event_4", "occurred_at column"},
		"delete a row": {func(c chain) chain { return slices.Delete(c, 2, 3) }, audit.ProblemDeleted, "event_4", "missing"},
		"reorder two rows": {func(c chain) chain {
			c[2].Seq, c[3].Seq = c[3].Seq, c[2].Seq
			c[2], c[3] = c[3], c[2]
			return c
		}, audit.ProblemReordered, "event_4", "stored after it"},
		"duplicate a row": {func(c chain) chain {
			dup := c[2]
			dup.Seq, dup.ID = 8, "event_dup"
			return append(c, dup)
		}, audit.ProblemDuplicated, "event_dup", "a copy"},
		"duplicate a row with its id": {func(c chain) chain {
			dup := c[0]
			dup.Seq = 8
			return append(c, dup)
		}, audit.ProblemDuplicated, "event_1", "seq 1"},
		"insert a forged row with a correct hash": {func(c chain) chain {
			forged := record(t, 0, domain.Event{ID: "event_forged", TenantID: "tenant_a", Outcome: domain.OutcomeSuccess, OccurredAt: at}, c[2].EventHash)
			out := append(slices.Clone(c[:3]), forged)
			for _, r := range c[3:] {
				out = append(out, r)
			}
			for i := range out {
				out[i].Seq = int64(i + 1)
			}
			return out
		}, audit.ProblemInserted, "event_forged", "not part of the chain"},
		"append a forged row with a wrong hash": {func(c chain) chain {
			forged := record(t, 9, domain.Event{ID: "event_forged", TenantID: "tenant_a", Outcome: domain.OutcomeSuccess, OccurredAt: at}, c[6].EventHash)
			forged.EventHash = "sha256:" + strings.Repeat("0", 64)
			return append(c, forged)
		}, audit.ProblemModified, "event_forged", "no longer matches"},
		"restart the chain": {func(c chain) chain {
			return append(c, record(t, 9, domain.Event{ID: "event_9", TenantID: "tenant_a", Outcome: domain.OutcomeSuccess, OccurredAt: at}, ""))
		}, audit.ProblemInserted, "event_9", "second chain"},
		"strip a hash": {func(c chain) chain { c[5].EventHash, c[5].PrevHash = "", ""; return c }, audit.ProblemInserted, "event_6", "no hash"},
	} {
		t.Run(name, func(t *testing.T) {
			rep := verify(t, tc.tamper(build(t, tenants...)))
			if rep.Intact || rep.First == nil || rep.First.Kind != tc.kind || rep.First.EventID != tc.id || !strings.Contains(rep.First.Reason, tc.wantInMsg) {
				t.Fatalf("want %s at %s (%q); got %+v", tc.kind, tc.id, tc.wantInMsg, rep.First)
			}
			if err := rep.Err(); !errors.Is(err, audit.ErrChainBroken) || !strings.Contains(err.Error(), tc.id) {
				t.Errorf("Err() = %v", err)
			}
			for _, ch := range rep.Chains {
				if ch.TenantID == "tenant_b" && !ch.Intact {
					t.Error("the other tenant's chain was reported broken")
				}
			}
		})
	}
}

// The limits, stated honestly: losing the newest event, or rewriting the
// last one with a recomputed hash, verifies on its own; a saved head
// detects both.
func TestVerify_SavedHeadDetectsTruncationAndRewrite(t *testing.T) {
	c := build(t, "tenant_a", "tenant_a", "tenant_a")
	saved := domain.ChainHead{TenantID: "tenant_a", Events: 3, Seq: 3, EventID: "event_3", EventHash: c[2].EventHash}
	if rep := verify(t, c, saved); !rep.Intact || rep.Against != 1 {
		t.Fatalf("untouched chain against its head: %+v", rep.First)
	}
	truncated := c[:2]
	if rep := verify(t, truncated); !rep.Intact {
		t.Fatal("truncation is not detectable without a saved head (the documented limit)")
	}
	if rep := verify(t, truncated, saved); rep.Intact || rep.First.Kind != audit.ProblemTruncated || rep.First.EventID != "event_3" {
		t.Errorf("truncation against the saved head: %+v", rep.First)
	}
	rewritten := slices.Clone(c)
	e := domain.Event{ID: "event_3", TenantID: "tenant_a", Outcome: domain.OutcomeFailed, OccurredAt: at}
	rewritten[2] = record(t, 3, e, c[1].EventHash)
	if rep := verify(t, rewritten); !rep.Intact {
		t.Fatal("a consistently rewritten tail verifies on its own (the documented limit)")
	}
	if rep := verify(t, rewritten, saved); rep.Intact || rep.First.Kind != audit.ProblemRewritten {
		t.Errorf("rewrite against the saved head: %+v", rep.First)
	}
	// Later events after the saved head are fine.
	longer := build(t, "tenant_a", "tenant_a", "tenant_a", "tenant_a")
	if rep := verify(t, longer, saved); !rep.Intact {
		t.Errorf("growth past the saved head: %+v", rep.First)
	}
}

// Events recorded before the chain existed (migration 0006) are an
// unchained prefix, reported, not a failure.
func TestVerify_LegacyPrefix(t *testing.T) {
	c := build(t, "tenant_a", "tenant_a")
	for i := range c {
		c[i].Seq++
	}
	legacy := domain.ChainRecord{Seq: 1, ID: "event_0", TenantID: "tenant_a", Body: []byte(`{}`)}
	rep := verify(t, append(chain{legacy}, c...))
	if !rep.Intact || rep.Chains[0].Legacy != 1 || rep.Chains[0].Events != 3 {
		t.Fatalf("%+v %+v", rep.Chains, rep.First)
	}
}

func TestRedactedSummary_AllowListedWellFormedIDsOnly(t *testing.T) {
	args := map[string]json.RawMessage{
		"sale_id": json.RawMessage(`"sale_221"`), "item_id": json.RawMessage(`"not an id"`), "candidate_id": json.RawMessage(`"item_1"`),
		"title": json.RawMessage(`"Grandma's ring"`), "notes": json.RawMessage(`"tsk_secret"`), "proposal_id": json.RawMessage(`7`),
		"status_candidate_id": json.RawMessage(`"candidate_9"`),
	}
	got := audit.RedactedSummary(args)
	if len(got) != 2 || got["sale_id"] != "sale_221" || got["status_candidate_id"] != "candidate_9" {
		t.Errorf("summary %v", got)
	}
}

func TestSecrets_FoundAndAttributeSafety(t *testing.T) {
	for _, s := range []string{"tsk_abcdefghijklmnop", "Bearer abcdefghijk", "eyJhbGciOiJIUzI1.eyJzdWIiOiIxMjM0", `"password": "hunter22"`, "sb_secret_abcdefghij"} {
		if !audit.LooksLikeSecret(s) || audit.SafeAttributeValue(s) {
			t.Errorf("%q not flagged", s)
		}
	}
	for _, s := range []string{"mcp_client_81", "trove_list_sales", "sha256:" + strings.Repeat("ab", 32), "approval_required", "1.0.0", ""} {
		if !audit.SafeAttributeValue(s) {
			t.Errorf("%q refused", s)
		}
	}
	for _, s := range []string{"Grandma's ring", "jane@example.com", strings.Repeat("a", 200)} {
		if audit.SafeAttributeValue(s) {
			t.Errorf("%q accepted as an attribute value", s)
		}
	}
	if audit.SafeAttr("k", "a title with spaces").Value.AsString() != "redacted" {
		t.Error("SafeAttr kept caller text")
	}
}

// Off unless an OTLP endpoint is configured; nothing recorded then.
func TestSetupOTel_NoopWithoutEndpoint(t *testing.T) {
	for _, env := range []map[string]string{{}, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_SDK_DISABLED": "true"}} {
		p, err := audit.SetupOTel(context.Background(), func(k string) string { return env[k] }, "test", nil)
		if err != nil || p.Enabled {
			t.Fatalf("%v: %+v %v", env, p, err)
		}
		_, span := p.Tracer.Tracer("x").Start(context.Background(), audit.SpanToolCall)
		if span.IsRecording() {
			t.Error("no-op tracer records")
		}
		span.End()
		if err := p.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	}
}

// With an endpoint, spans and metrics go to the OTLP/HTTP collector (and
// nowhere else).
func TestSetupOTel_ExportsOverOTLPHTTP(t *testing.T) {
	var (
		mu    sync.Mutex
		paths []string
	)
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	defer collector.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL) // the exporters read the process environment
	p, err := audit.SetupOTel(context.Background(), os.Getenv, "test", nil)
	if err != nil || !p.Enabled {
		t.Fatalf("%+v %v", p, err)
	}
	_, span := p.Tracer.Tracer(audit.InstrumentationName).Start(context.Background(), audit.SpanToolCall)
	span.End()
	m, err := audit.NewMetrics(p.Meter)
	if err != nil {
		t.Fatal(err)
	}
	m.Record(context.Background(), audit.CallFacts{Tool: "trove_list_sales", Outcome: "success", Mode: "mock", At: at})
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Contains(paths, "/v1/traces") || !slices.Contains(paths, "/v1/metrics") {
		t.Errorf("collector saw %v", paths)
	}
}

// bodyOnly is a chain whose store keeps causation_id in the body only.
type bodyOnly struct{ chain }

func (bodyOnly) BodyOnlyColumns() []string { return []string{"causation_id"} }

// A time column agrees within half a microsecond (Postgres rounds the
// body's nanoseconds to the nearest one), and a source with no causation_id column sends none and is
// not compared on it; any other column still is.
func TestVerify_ColumnPrecisionAndBodyOnlyColumns(t *testing.T) {
	cause := "event_0"
	ev := domain.Event{ID: "event_1", TenantID: "tenant_a", CausationID: &cause, Outcome: domain.OutcomeSuccess,
		OccurredAt: at.Add(123456789)} // .123456789
	base := chain{record(t, 1, ev, "")}
	for _, c := range []struct {
		name   string
		src    audit.ChainSource
		edit   func(r *domain.ChainRecord)
		intact bool
	}{
		{"rounded up", base, func(r *domain.ChainRecord) { r.OccurredAt = "2026-06-20T00:00:00.123457+00:00" }, true},
		{"truncated, 789 ns off", base, func(r *domain.ChainRecord) { r.OccurredAt = "2026-06-20T00:00:00.123456Z" }, false},
		{"another zone", base, func(r *domain.ChainRecord) { r.OccurredAt = "2026-06-20T02:00:00.123457+02:00" }, true},
		{"a microsecond off", base, func(r *domain.ChainRecord) { r.OccurredAt = "2026-06-20T00:00:00.123455Z" }, false},
		{"no causation column, none sent", bodyOnly{base}, func(r *domain.ChainRecord) { r.CausationID = "" }, true},
		{"no causation column, another column edited", bodyOnly{base}, func(r *domain.ChainRecord) { r.CausationID, r.Outcome = "", "failed" }, false},
		{"a causation column, emptied", base, func(r *domain.ChainRecord) { r.CausationID = "" }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := base[0]
			c.edit(&rec)
			var src audit.ChainSource = chain{rec}
			if _, ok := c.src.(bodyOnly); ok {
				src = bodyOnly{chain{rec}}
			}
			rep, err := audit.Verify(context.Background(), src, audit.VerifyOptions{})
			if err != nil || rep.Intact != c.intact || (!c.intact && (rep.First == nil || rep.First.Kind != audit.ProblemModified)) {
				t.Fatalf("report %+v, first %+v, %v; want intact=%v", rep, rep.First, err, c.intact)
			}
		})
	}
}

// exact is a chain whose source sends the very bytes that were hashed.
type exact struct{ chain }

func (exact) ExactBodies() bool { return true }

// A body re-serialised to other bytes of the same JSON verifies from a
// source that canonicalises (the embedded store's contract) but is modified
// from one that sends the hashed bytes themselves: a reader there is shown
// the bytes, not their canonical form.
func TestVerify_ExactBodiesRefuseAnotherForm(t *testing.T) {
	r := record(t, 1, domain.Event{ID: "event_1", TenantID: "tenant_a", Outcome: domain.OutcomeSuccess, OccurredAt: at}, "")
	r.Body = []byte(strings.Replace(string(r.Body), ",", ", ", -1))
	if rep, err := audit.Verify(context.Background(), chain{r}, audit.VerifyOptions{}); err != nil || !rep.Intact {
		t.Fatalf("canonicalising source: %+v, %v", rep, err)
	}
	rep, err := audit.Verify(context.Background(), exact{chain{r}}, audit.VerifyOptions{})
	if err != nil || rep.Intact || rep.First == nil || rep.First.Kind != audit.ProblemModified || rep.First.EventID != "event_1" {
		t.Fatalf("exact source: %+v, %v", rep, err)
	}
	// And the hashed bytes themselves verify from it.
	if rep, err := audit.Verify(context.Background(), exact{chain{record(t, 1, domain.Event{ID: "event_1", TenantID: "tenant_a",
		Outcome: domain.OutcomeSuccess, OccurredAt: at}, "")}}, audit.VerifyOptions{}); err != nil || !rep.Intact {
		t.Fatalf("exact source, hashed bytes: %+v, %v", rep, err)
	}
}
