package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/gob"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/catalog"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/mcpserver"
)

var fiveTools = []string{"trove_create_candidate", "trove_demand_signals", "trove_list_candidates", "trove_list_items", "trove_list_sales"}

// §40.4: the five tools of the existing server are listed and work in mock mode.
func TestCompat_FiveToolsListedAndWorkInMock(t *testing.T) {
	e := newEnv(t)
	res, err := e.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		if tool.OutputSchema == nil || tool.InputSchema == nil {
			t.Errorf("%s: missing schema", tool.Name)
		}
	}
	for _, n := range fiveTools {
		if !slices.Contains(names, n) {
			t.Errorf("tools/list lacks %s: %v", n, names)
		}
	}
	if !slices.IsSorted(names) {
		t.Errorf("tools/list not in deterministic (name) order: %v", names)
	}
	if res.CacheScope != "private" {
		t.Errorf("tools/list cacheScope = %q, want private (lists vary by credential)", res.CacheScope)
	}
	init := e.cs.InitializeResult()
	if init == nil || init.ServerInfo.Name != mcpserver.ServerName || init.ServerInfo.Version != mcpserver.ServerVersion || init.ServerInfo.Title != mcpserver.ServerTitle {
		t.Errorf("server identity = %+v", init)
	}
	for _, name := range fiveTools {
		if tool, _ := catalog.Lookup(name); tool.Persists {
			continue // the write is called below, with its idempotency key
		}
		env := e.call(name, map[string]any{})
		if !strings.HasPrefix(env.Status, "succeeded") || env.Mode != "mock" || env.isError || env.Tool.Name != name || env.Tool.Version != "1.0.0" {
			t.Errorf("%s: %s", name, env.raw)
		}
	}
	// The compatibility name answers exactly what its successor answers.
	compat, succ := e.call("trove_demand_signals", map[string]any{"sale_id": fixtures.PublishedSaleID}), e.call("trove_get_demand_signals", map[string]any{"sale_id": fixtures.PublishedSaleID})
	if string(compat.Data) != string(succ.Data) || compat.Status != "succeeded_with_warnings" || succ.Status != "succeeded" {
		t.Errorf("compat %s / successor %s", compat.raw, succ.raw)
	}
	env := e.call("trove_create_candidate", map[string]any{"sale_id": fixtures.PublishedSaleID, "title": "Oak washstand", "idempotency_key": "compat-key-0001"})
	if env.Status != "succeeded_with_warnings" || env.Mode != "mock" {
		t.Errorf("create: %s", env.raw)
	}
}

// The envelope of every tool validates against the outputSchema the tool advertises.
// Every visible tool is listed on one page and no cursor is issued, so a
// cursor — even one the SDK could decode — is refused rather than answered
// with the first page again (attack review of issue 18).
func TestToolsList_OnePageNoCursor(t *testing.T) {
	e := newEnv(t)
	res, err := e.cs.ListTools(context.Background(), nil)
	if err != nil || res.NextCursor != "" || len(res.Tools) == 0 {
		t.Fatalf("tools/list: %d tools, next cursor %q, %v", len(res.Tools), res.NextCursor, err)
	}
	// A cursor as the go-sdk encodes one (gob of its page token, base64).
	var token bytes.Buffer
	if err := gob.NewEncoder(&token).Encode(struct{ LastUID string }{res.Tools[0].Name}); err != nil {
		t.Fatal(err)
	}
	sdkCursor := base64.URLEncoding.EncodeToString(token.Bytes())
	for _, cursor := range []string{"abc", sdkCursor, res.Tools[len(res.Tools)-1].Name} {
		got, err := e.cs.ListTools(context.Background(), &mcp.ListToolsParams{Cursor: cursor})
		if err == nil || !strings.Contains(err.Error(), "issues no cursor") {
			t.Errorf("cursor %q: %v, %v; want refused", cursor, got, err)
		}
	}
}

func TestEnvelope_MatchesAdvertisedOutputSchema(t *testing.T) {
	e := newEnv(t)
	res, err := e.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	schemas := map[string]*jsonschema.Resolved{}
	for _, tool := range res.Tools {
		b, _ := jsonMarshal(tool.OutputSchema)
		var s jsonschema.Schema
		if err := jsonUnmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		r, err := s.Resolve(nil)
		if err != nil {
			t.Fatalf("%s: output schema does not resolve: %v", tool.Name, err)
		}
		schemas[tool.Name] = r
	}
	calls := []struct {
		name string
		args map[string]any
	}{
		{"trove_list_sales", map[string]any{}},
		{"trove_list_items", map[string]any{"limit": 5}},
		{"trove_list_candidates", map[string]any{}},
		{"trove_demand_signals", map[string]any{}},
		{"trove_create_candidate", map[string]any{"sale_id": fixtures.PublishedSaleID, "title": "Brass lamp", "idempotency_key": "schema-key-0001"}},
		{"trove_list_items", map[string]any{"sale_id": "sale_nope"}}, // failure envelope
		{"trove_list_items", map[string]any{"bogus": true}},          // invalid input envelope
	}
	for _, c := range calls {
		env := e.call(c.name, c.args)
		var v any
		if err := jsonUnmarshal([]byte(env.raw), &v); err != nil {
			t.Fatal(err)
		}
		if err := schemas[c.name].Validate(v); err != nil {
			t.Errorf("%s: envelope does not match outputSchema: %v\n%s", c.name, err, env.raw)
		}
	}
}

// §40.3: create_candidate runs source descriptor → run → record → candidate →
// event in one transaction, and never touches items.
func TestCandidateChain_CreatesProvenanceAndNoItem(t *testing.T) {
	e := newEnv(t)
	before, countsBefore := e.digest(), e.counts()
	env := e.call("trove_create_candidate", map[string]any{
		"sale_id": fixtures.PublishedSaleID, "title": "Pioneer SX-780 receiver", "category": "electronics.audio.receiver",
		"room": "den", "condition": "good", "idempotency_key": "chain-key-0001", "request_id": "req-chain-1",
	})
	if env.Status != "succeeded_with_warnings" || env.isError {
		t.Fatalf("create: %s", env.raw)
	}
	if env.RequestID == nil || *env.RequestID != "req-chain-1" {
		t.Errorf("request_id not echoed: %v", env.RequestID)
	}
	if len(env.Warnings) != 1 || env.Warnings[0].Code != "mock_mode_no_persistence" {
		t.Errorf("warnings = %+v, want mock_mode_no_persistence", env.Warnings)
	}
	got := dataAs[domain.CandidateCreated](t, env)
	if got.ReviewStatus != "needs_review" || got.CanonicalItemCreated || !domain.ValidID("candidate", got.CandidateID) {
		t.Fatalf("data = %+v", got)
	}
	if !slices.Equal(env.Related.CandidateIDs, []string{got.CandidateID}) ||
		!slices.Equal(env.Related.SourceImportRunIDs, []string{got.ImportRunID}) ||
		!slices.Equal(env.Related.SourceImportRecordIDs, []string{got.SourceRecordID}) {
		t.Errorf("related = %+v, data = %+v", env.Related, got)
	}
	after, countsAfter := e.digest(), e.counts()
	if after["items"] != before["items"] || after["item_photos"] != before["item_photos"] {
		t.Error("items changed: a candidate write must never touch canonical items")
	}
	for table, delta := range map[string]int64{"import_runs": 1, "source_records": 1, "inventory_candidates": 1, "plugin_events": 1, "idempotency_keys": 1} {
		if countsAfter[table]-countsBefore[table] != delta {
			t.Errorf("%s: +%d rows, want +%d", table, countsAfter[table]-countsBefore[table], delta)
		}
	}
	// The candidate is readable and carries its provenance.
	list := dataAs[catalog.ListCandidatesOutput](t, e.call("trove_list_candidates", map[string]any{"sale_id": fixtures.PublishedSaleID, "limit": 100}))
	found := false
	for _, c := range list.Candidates {
		if c.ID == got.CandidateID {
			found = c.ReviewStatus == "needs_review" && c.Untrusted
		}
	}
	if !found {
		t.Error("created candidate not listed")
	}
	read := dataAs[catalog.GetCandidateOutput](t, e.call("trove_get_candidate", map[string]any{"candidate_id": got.CandidateID}))
	if c := read.Candidate; c.ImportRunID != got.ImportRunID || c.SourceRecordID != got.SourceRecordID || !c.Untrusted {
		t.Errorf("created candidate read without its provenance: %+v", c)
	}
	// Its event is committed with the write and names every record.
	evs := e.events(env.ServerRequestID)
	if len(evs) != 1 || evs[0].ID != env.Audit.PluginEventID || evs[0].Outcome != "success" ||
		!slices.Equal(evs[0].Related.CandidateIDs, []string{got.CandidateID}) || evs[0].Impact.Type != "candidate_created" {
		t.Fatalf("events = %+v", evs)
	}
}

// §40.14: same key + same input → the original result and no new business
// row; same key + other input → idempotency_conflict and nothing written.
func TestIdempotency_ReplayAndConflict(t *testing.T) {
	e := newEnv(t)
	args := map[string]any{"sale_id": fixtures.PublishedSaleID, "title": "Cast iron skillet", "idempotency_key": "idem-key-0001"}
	first := e.call("trove_create_candidate", args)
	beforeReplay := e.digest()
	args["request_id"] = "retry-1" // request_id is not part of the fingerprint
	replay := e.call("trove_create_candidate", args)
	if string(replay.Data) != string(first.Data) || !replay.Audit.Replayed || replay.Status != "succeeded_with_warnings" {
		t.Fatalf("replay:\n%s\nfirst:\n%s", replay.raw, first.raw)
	}
	if !slices.ContainsFunc(replay.Warnings, func(w struct{ Code, Message string }) bool { return w.Code == "idempotent_replay" }) {
		t.Errorf("replay warnings = %+v", replay.Warnings)
	}
	if replay.Audit.PluginEventID == first.Audit.PluginEventID {
		t.Error("a replay is an invocation: it needs its own plugin_event")
	}
	assertOnlyEventsChanged(t, beforeReplay, e.digest())
	if evs := e.events(replay.ServerRequestID); len(evs) != 1 || evs[0].Outcome != "replayed" || !slices.Contains(evs[0].Related.EventIDs, first.Audit.PluginEventID) {
		t.Errorf("replay event = %+v", evs)
	}

	beforeConflict, countsBefore := e.digest(), e.counts()
	args["title"] = "Something else"
	conflict := e.call("trove_create_candidate", args)
	wantCode(t, conflict, "failed", "idempotency_conflict")
	assertOnlyEventsChanged(t, beforeConflict, e.digest())
	if d := e.counts()["plugin_events"] - countsBefore["plugin_events"]; d != 1 {
		t.Errorf("conflict wrote %d events, want 1", d)
	}
}

// Bad input gets invalid_input (or invalid_reference) and writes nothing but
// its own event.
func TestBadInput_ClearErrorNothingWritten(t *testing.T) {
	e := newEnv(t)
	long := strings.Repeat("x", catalog.MaxShortText+1)
	cases := []struct {
		name, tool string
		args       map[string]any
		code       string
		field      string
	}{
		{"unknown field", "trove_list_items", map[string]any{"approved": true}, "invalid_input", "arguments"},
		{"oversize string", "trove_create_candidate", map[string]any{"sale_id": fixtures.PublishedSaleID, "title": long, "idempotency_key": "bad-key-0001"}, "invalid_input", "title"},
		{"malformed id", "trove_list_items", map[string]any{"sale_id": "221"}, "invalid_input", "sale_id"},
		{"unknown id", "trove_list_items", map[string]any{"sale_id": "sale_999999"}, "invalid_reference", "sale_id"},
		{"missing idempotency key", "trove_create_candidate", map[string]any{"sale_id": fixtures.PublishedSaleID, "title": "Lamp"}, "invalid_input", "arguments"},
		{"short idempotency key", "trove_create_candidate", map[string]any{"sale_id": fixtures.PublishedSaleID, "title": "Lamp", "idempotency_key": "k"}, "invalid_input", "idempotency_key"},
		{"wrong type", "trove_list_items", map[string]any{"limit": "ten"}, "invalid_input", "limit"},
		{"limit out of range", "trove_list_items", map[string]any{"limit": 1000}, "invalid_input", "limit"},
		{"bad enum", "trove_list_items", map[string]any{"status": "stolen"}, "invalid_input", "status"},
		{"foreign cursor", "trove_list_items", map[string]any{"cursor": e.st.Cursors().Encode("sales", fixtures.DemoTenantID, domain.Keyset{Key: "x", ID: "sale_221"})}, "invalid_input", "cursor"},
		{"garbage cursor", "trove_list_items", map[string]any{"cursor": "!!!"}, "invalid_input", "cursor"},
		{"unknown sale on write", "trove_create_candidate", map[string]any{"sale_id": "sale_999999", "title": "Lamp", "idempotency_key": "bad-key-0002"}, "invalid_reference", "sale_id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before, countsBefore := e.digest(), e.counts()
			env := e.call(c.tool, c.args)
			wantCode(t, env, "failed", c.code)
			if env.Errors[0].Field != c.field {
				t.Errorf("field = %q, want %q (%s)", env.Errors[0].Field, c.field, env.Errors[0].Message)
			}
			if strings.Contains(strings.ToLower(env.raw), "sql") || strings.Contains(env.raw, long) {
				t.Errorf("error leaks internals or echoes input: %s", env.raw)
			}
			assertOnlyEventsChanged(t, before, e.digest())
			if d := e.counts()["plugin_events"] - countsBefore["plugin_events"]; d != 1 {
				t.Errorf("wrote %d events, want exactly the call's own", d)
			}
		})
	}
}

// A record of another tenant answers exactly like a missing one (no existence
// oracle), while the audit records the cross-tenant attempt.
func TestCrossTenant_SameAnswerAsMissingAuditRecordsAttempt(t *testing.T) {
	e := newEnv(t)
	foreign := e.call("trove_list_items", map[string]any{"sale_id": fixtures.OtherPublishedSaleID})
	missing := e.call("trove_list_items", map[string]any{"sale_id": "sale_999999"})
	wantCode(t, foreign, "failed", "invalid_reference")
	wantCode(t, missing, "failed", "invalid_reference")
	norm := func(env envelope, id string) string {
		return strings.NewReplacer(env.ServerRequestID, "REQ", env.Audit.PluginEventID, "EV", id, "ID").Replace(env.raw)
	}
	if norm(foreign, fixtures.OtherPublishedSaleID) != norm(missing, "sale_999999") {
		t.Errorf("answers differ:\n%s\n%s", foreign.raw, missing.raw)
	}
	if ev := e.events(foreign.ServerRequestID); len(ev) != 1 || ev[0].AuditCode != "cross_tenant_reference" {
		t.Errorf("foreign event = %+v", ev)
	}
	if ev := e.events(missing.ServerRequestID); len(ev) != 1 || ev[0].AuditCode != "" {
		t.Errorf("missing event = %+v", ev)
	}
	// Writes too.
	before := e.digest()
	w := e.call("trove_create_candidate", map[string]any{"sale_id": fixtures.OtherPublishedSaleID, "title": "Lamp", "idempotency_key": "xt-key-0001"})
	wantCode(t, w, "failed", "invalid_reference")
	assertOnlyEventsChanged(t, before, e.digest())
}

// A tenant hint is a hint: another tenant's id is refused, the own tenant's accepted.
func TestTenantHint_CannotOverrideScope(t *testing.T) {
	e := newEnv(t)
	before := e.digest()
	env := e.callMeta("trove_list_sales", map[string]any{}, mcp.Meta{"trovesnap/tenant_id": fixtures.OtherTenantID})
	wantCode(t, env, "blocked", "cross_tenant_reference")
	env = e.call("trove_create_candidate", map[string]any{"tenant_id": fixtures.OtherTenantID, "sale_id": fixtures.PublishedSaleID, "title": "Lamp", "idempotency_key": "hint-key-0001"})
	wantCode(t, env, "blocked", "cross_tenant_reference")
	assertOnlyEventsChanged(t, before, e.digest())
	ok := e.callMeta("trove_list_sales", map[string]any{"tenant_id": fixtures.DemoTenantID}, mcp.Meta{"trovesnap/tenant_id": fixtures.DemoTenantID})
	if ok.Status != "succeeded" {
		t.Errorf("own tenant hint refused: %s", ok.raw)
	}
	for _, s := range dataAs[catalog.ListSalesOutput](t, ok).Sales {
		if strings.HasPrefix(s.ID, "sale_3") {
			t.Errorf("another tenant's sale listed: %s", s.ID)
		}
	}
}

// Unknown tools get tool_not_available in an envelope (and an event).
func TestUnknownTool_NotAvailable(t *testing.T) {
	e := newEnv(t)
	before := e.counts()
	env := e.call("trove_delete_everything", map[string]any{})
	wantCode(t, env, "blocked", "tool_not_available")
	if e.counts()["plugin_events"] != before["plugin_events"]+1 {
		t.Error("unknown tool call not audited")
	}
}

// §25 versioning: a supported major pins, an unsupported one is refused.
func TestVersion_PinnedMajor(t *testing.T) {
	e := newEnv(t)
	for _, v := range []string{"1", "1.0", "1.0.0", "v1"} {
		if env := e.callMeta("trove_list_sales", map[string]any{}, mcp.Meta{"trovesnap/tool_version": v}); env.Status != "succeeded" {
			t.Errorf("version %s: %s", v, env.raw)
		}
	}
	env := e.callMeta("trove_list_sales", map[string]any{}, mcp.Meta{"trovesnap/tool_version": "2.0.0"})
	wantCode(t, env, "failed", "tool_version_unsupported")
}

// Keyset pagination through the tool walks every item exactly once.
func TestListItems_PaginationWalksEveryRowOnce(t *testing.T) {
	e := newEnv(t)
	want := 0
	for _, it := range fixtures.Dataset().Items {
		if it.TenantID == fixtures.DemoTenantID {
			want++
		}
	}
	seen := map[string]bool{}
	cursor := ""
	pages := 0
	for {
		args := map[string]any{"limit": 50}
		if cursor != "" {
			args["cursor"] = cursor
		}
		env := e.call("trove_list_items", args)
		out := dataAs[catalog.ListItemsOutput](t, env)
		for _, it := range out.Items {
			if seen[it.ID] {
				t.Fatalf("item %s on two pages", it.ID)
			}
			seen[it.ID] = true
		}
		pages++
		if out.NextCursor == "" {
			break
		}
		cursor = out.NextCursor
		if pages > 100 {
			t.Fatal("pagination does not end")
		}
	}
	if len(seen) != want {
		t.Fatalf("walked %d items, tenant has %d", len(seen), want)
	}
}

// §40.16: every call — read, write, replay, failure — records one event with
// client, tool + version + schema hash, actor, tenant, input hash (never raw
// input), outcome, related ids and latency.
func TestPluginEvents_EveryCallRecordsOneCompleteEvent(t *testing.T) {
	e := newEnv(t)
	secretish := "Grandma's hidden note about the ring"
	calls := []struct {
		tool    string
		args    map[string]any
		outcome string
	}{
		{"trove_list_sales", map[string]any{}, "success"},
		{"trove_list_items", map[string]any{"sale_id": fixtures.PublishedSaleID}, "success"},
		{"trove_create_candidate", map[string]any{"sale_id": fixtures.PublishedSaleID, "title": secretish, "notes": secretish, "idempotency_key": "ev-key-0001"}, "success"},
		{"trove_create_candidate", map[string]any{"sale_id": fixtures.PublishedSaleID, "title": secretish, "notes": secretish, "idempotency_key": "ev-key-0001"}, "replayed"},
		{"trove_list_items", map[string]any{"bogus": secretish}, "failed"},
	}
	for _, c := range calls {
		env := e.call(c.tool, c.args)
		evs := e.events(env.ServerRequestID)
		if len(evs) != 1 {
			t.Fatalf("%s: %d events, want 1", c.tool, len(evs))
		}
		ev := evs[0]
		tool, _ := catalog.Lookup(c.tool)
		switch {
		case ev.ID != env.Audit.PluginEventID:
			t.Errorf("%s: event id %s, envelope says %s", c.tool, ev.ID, env.Audit.PluginEventID)
		case ev.TenantID != fixtures.DemoTenantID || ev.Client.ID != fixtures.DemoClientID || ev.Client.Name == "":
			t.Errorf("%s: tenant/client = %s/%+v", c.tool, ev.TenantID, ev.Client)
		case ev.Actor.ID != fixtures.DemoUserID || ev.Actor.Type != "seller":
			t.Errorf("%s: actor = %+v", c.tool, ev.Actor)
		case ev.Tool.Name != c.tool || ev.Tool.Version != "1.0.0" || ev.Tool.InputSchemaHash != tool.InputSchemaHash():
			t.Errorf("%s: tool = %+v", c.tool, ev.Tool)
		case !strings.HasPrefix(ev.Payload.InputHash, "sha256:") || len(ev.Payload.InputHash) != 71:
			t.Errorf("%s: input hash = %q", c.tool, ev.Payload.InputHash)
		case ev.Outcome != c.outcome:
			t.Errorf("%s: outcome = %s, want %s", c.tool, ev.Outcome, c.outcome)
		case ev.Metrics.LatencyMS < 0 || ev.Mode != domain.ModeMock || ev.CorrelationID == "" || ev.Plugin.ID != "trovesnap":
			t.Errorf("%s: metrics/mode/correlation = %+v", c.tool, ev)
		case ev.Approval.Decision != "not_required":
			t.Errorf("%s: approval = %+v", c.tool, ev.Approval)
		}
		if strings.Contains(fmt.Sprintf("%+v", ev), secretish) {
			t.Errorf("%s: event contains raw input", c.tool)
		}
	}
	all := e.allEvents()
	for _, ev := range all {
		if strings.Contains(fmt.Sprintf("%+v", ev), secretish) {
			t.Errorf("an event contains raw input: %s", ev.ID)
		}
	}
	if len(all) != len(calls) {
		t.Errorf("%d events for %d calls", len(all), len(calls))
	}
}

// §40.5: two fresh stores answer the same reads byte-identically.
func TestMockMode_DeterministicAcrossFreshStores(t *testing.T) {
	run := func() []string {
		e := newEnv(t)
		var out []string
		for _, c := range []struct {
			tool string
			args map[string]any
		}{
			{"trove_list_sales", map[string]any{}},
			{"trove_list_items", map[string]any{"sale_id": fixtures.PublishedSaleID, "limit": 50}},
			{"trove_list_candidates", map[string]any{}},
			{"trove_demand_signals", map[string]any{"sale_id": fixtures.PublishedSaleID}},
			{"trove_create_candidate", map[string]any{"sale_id": fixtures.PublishedSaleID, "title": "Walnut side table", "idempotency_key": "det-key-0001"}},
		} {
			out = append(out, e.call(c.tool, c.args).raw)
		}
		return out
	}
	// Cursors are sealed with each database's own secret (docs/cursors.md):
	// the one part of a read that differs between two fresh stores, by design.
	cursor := regexp.MustCompile(`"next_cursor":"c2\.[A-Za-z0-9_.-]+"`)
	a, b := run(), run()
	for i := range a {
		a[i], b[i] = cursor.ReplaceAllString(a[i], `"next_cursor":"<sealed>"`), cursor.ReplaceAllString(b[i], `"next_cursor":"<sealed>"`)
		if a[i] != b[i] {
			t.Errorf("call %d differs:\n%s\n%s", i, a[i], b[i])
		}
	}
}

// Every listed tool's annotations say what the catalog's hints say: reads
// are read-only and idempotent; a write says whether it is destructive and
// idempotent; nothing is open-world; the title is not repeated.
func TestListTools_AnnotationsAreTheCatalogsHints(t *testing.T) {
	e := newEnv(t)
	res, err := e.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	reads := 0
	for _, lt := range res.Tools {
		tool, ok := catalog.Lookup(lt.Name)
		a := lt.Annotations
		if !ok || a == nil {
			t.Fatalf("%s: not in the catalog or without annotations", lt.Name)
		}
		h := catalog.HintsFor(tool)
		if a.ReadOnlyHint != h.ReadOnly || a.IdempotentHint != h.Idempotent || a.OpenWorldHint == nil || *a.OpenWorldHint || a.Title != "" {
			t.Errorf("%s: annotations %+v, hints %+v", lt.Name, a, h)
		}
		switch {
		case h.ReadOnly:
			reads++
			if a.DestructiveHint != nil || !a.IdempotentHint {
				t.Errorf("%s: a read is idempotent and says nothing of destruction: %+v", lt.Name, a)
			}
		case a.DestructiveHint == nil || *a.DestructiveHint != h.Destructive:
			t.Errorf("%s: destructiveHint %v, want %v", lt.Name, a.DestructiveHint, h.Destructive)
		}
	}
	if reads < 10 {
		t.Fatalf("%d read tools listed", reads)
	}
}
