package mcpserver_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/audit"
	"github.com/triunalabs/trovesnap/internal/catalog"
	"github.com/triunalabs/trovesnap/internal/cli"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/gate"
	"github.com/triunalabs/trovesnap/store"
)

// Text a caller sends that must never reach an event, a span or a metric.
const (
	audSecretTitle = "Grandma Ruth's engagement ring AUDTITLE"
	audSecretNotes = "buyer Jane Doe jane@example.com 555-0100 AUDNOTES"
)

// audTelemetry are in-memory OpenTelemetry sinks for one env.
type audTelemetry struct {
	spans  *tracetest.SpanRecorder
	reader *sdkmetric.ManualReader
	meter  *sdkmetric.MeterProvider
}

// newAudEnv is newEnv with recording OpenTelemetry providers.
func newAudEnv(t testing.TB, credential string) (*env, *audTelemetry) {
	t.Helper()
	ctx := context.Background()
	seed := fixtures.Dataset()
	clock := domain.NewFixedClock(fixtures.Epoch)
	ids := domain.NewSeqIDs()
	path := filepath.Join(t.TempDir(), "trovesnap.db")
	st, err := store.Open(ctx, path, store.Options{Mode: domain.ModeMock, Clock: clock, IDs: ids, Seed: &seed})
	if err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	tel := &audTelemetry{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	tel.meter = sdkmetric.NewMeterProvider(sdkmetric.WithReader(tel.reader))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tel.spans))
	g := gate.New(gate.Options{Backend: st, Mode: domain.ModeMock, Clock: clock, IDs: ids, ServerVersion: "test",
		TracerProvider: tp, MeterProvider: tel.meter})
	e := &env{t: t, st: st, gate: g, clock: clock, path: path}
	e.cs = connect(t, g, credential)
	return e, tel
}

// oneEvent returns the single event a call recorded.
func (e *env) oneEvent(env envelope) domain.Event {
	e.t.Helper()
	evs := e.events(env.ServerRequestID)
	if len(evs) != 1 || evs[0].ID != env.Audit.PluginEventID {
		e.t.Fatalf("call %s recorded %d events (want exactly its own %s)", env.ServerRequestID, len(evs), env.Audit.PluginEventID)
	}
	return evs[0]
}

// assertShape checks the §35 fields every MCP invocation's event carries.
func assertShape(t *testing.T, name string, ev domain.Event, tool string) {
	t.Helper()
	fail := func(what string) { t.Errorf("%s: %s (event %+v)", name, what, ev) }
	switch {
	case !domain.ValidID(domain.PrefixEvent, ev.ID), !domain.ValidID(domain.PrefixCorr, ev.CorrelationID):
		fail("event or correlation id")
	case ev.TenantID != fixtures.DemoTenantID:
		fail("tenant")
	case ev.Plugin != domain.PluginRef{Type: "mcp", ID: "trovesnap", Version: "test"}:
		fail("plugin")
	case ev.Client.ID != fixtures.DemoClientID || ev.Client.Name == "":
		fail("client")
	case ev.Tool.Name != tool || ev.Tool.Version == "" || !strings.HasPrefix(ev.Tool.InputSchemaHash, "sha256:") || ev.Tool.Tier == "" || ev.Tool.Risk == "":
		fail("tool {name, version, input_schema_hash, tier, risk}")
	case ev.Actor.ID != fixtures.DemoUserID || ev.Actor.Type != "seller" || ev.Actor.Role != domain.RoleOwner:
		fail("actor")
	case ev.Action != "mcp_tool_called" || ev.Outcome == "":
		fail("action / outcome")
	case !strings.HasPrefix(ev.Payload.InputHash, "sha256:") || ev.Payload.RedactedSummary == nil:
		fail("payload")
	case ev.Approval.Decision == "" || ev.Approval.Requirement == "":
		fail("approval decision / requirement")
	case ev.Metrics.LatencyMS <= 0:
		fail("latency")
	case ev.OccurredAt.IsZero() || ev.Impact.Type == "":
		fail("occurred_at / impact")
	case ev.Domain == nil || ev.Domain.Service == "" || ev.Domain.Operation == "":
		fail("domain function")
	case ev.Related.CandidateIDs == nil || ev.Related.EventIDs == nil:
		fail("related lists must be [] not null")
	}
	for k := range ev.Payload.RedactedSummary {
		if !slices.Contains(audit.SummaryFields(), k) {
			t.Errorf("%s: redacted_summary carries %q, which is not an allow-listed id field", name, k)
		}
	}
}

// §40.16 for every tool tier: each call records exactly one event with
// every §35 field filled as it applies, joined by correlation and causation
// ids, and no secret or caller text.
func TestPluginEvents_EveryTierRecordsTheFullShape(t *testing.T) {
	e, _ := newAudEnv(t, "")
	ctx := context.Background()

	read := e.call("trove_list_sales", map[string]any{"request_id": "req-read-1"})
	evRead := e.oneEvent(read)
	assertShape(t, "read", evRead, "trove_list_sales")
	if evRead.Outcome != "success" || evRead.Tool.Tier != "tenant_read" || evRead.Impact.Material || evRead.RequestID != "req-read-1" ||
		!slices.Equal(evRead.Permissions, []string{domain.PermSaleRead}) || evRead.Approval.Decision != "not_required" {
		t.Errorf("read event %+v", evRead)
	}

	cand := e.call("trove_create_candidate", map[string]any{"sale_id": fixtures.PublishedSaleID, "title": audSecretTitle,
		"notes": audSecretNotes, "idempotency_key": "aud-cand-0001"})
	evCand := e.oneEvent(cand)
	assertShape(t, "candidate", evCand, "trove_create_candidate")
	if evCand.Outcome != "success" || evCand.Impact != (domain.EventImpact{Type: "candidate_created", Material: true}) ||
		len(evCand.Related.CandidateIDs) != 1 || len(evCand.Related.SourceImportRunIDs) != 1 || len(evCand.Related.SourceImportRecordIDs) != 1 ||
		evCand.Payload.RedactedSummary["sale_id"] != fixtures.PublishedSaleID || len(evCand.Payload.RedactedSummary) != 1 {
		t.Errorf("candidate event %+v", evCand)
	}

	propEnv := e.call("trove_propose_candidate_promotion", map[string]any{"candidate_id": fixtures.DemoCandidateID, "expected_version": 3, "idempotency_key": "aud-prop-0001"})
	prop := dataAs[catalog.ProposalView](t, propEnv)
	evProp := e.oneEvent(propEnv)
	assertShape(t, "proposal", evProp, "trove_propose_candidate_promotion")
	if evProp.Approval.ProposalID == nil || *evProp.Approval.ProposalID != prop.ProposalID || evProp.Impact.Type != "proposal_created" ||
		!slices.Contains(evProp.Related.ProposalIDs, prop.ProposalID) || evProp.CausationID != nil {
		t.Errorf("proposal event %+v", evProp)
	}

	exec := map[string]any{"proposal_id": prop.ProposalID, "idempotency_key": "aud-exec-0001"}
	blocked := e.call("trove_execute_candidate_promotion", map[string]any{"proposal_id": prop.ProposalID, "idempotency_key": "aud-exec-0000"})
	evBlocked := e.oneEvent(blocked)
	assertShape(t, "blocked", evBlocked, "trove_execute_candidate_promotion")
	if evBlocked.Outcome != "blocked" || evBlocked.ErrorCode != "approval_required" || evBlocked.CorrelationID != evProp.CorrelationID ||
		evBlocked.CausationID == nil || *evBlocked.CausationID != evProp.ID || evBlocked.Approval.Decision != "human_approval_required" ||
		evBlocked.Approval.Requirement != "human_or_policy" || evBlocked.Approval.ProposalHash != prop.ProposalHash {
		t.Errorf("blocked event %+v", evBlocked)
	}

	g := e.approve(prop.ProposalID)
	var evApproval domain.Event
	for _, ev := range e.allEvents() {
		if ev.Action == "approval_granted" {
			evApproval = ev
		}
	}
	if evApproval.ID == "" || evApproval.TenantID != fixtures.DemoTenantID || evApproval.CorrelationID != evProp.CorrelationID ||
		evApproval.CausationID == nil || *evApproval.CausationID != evProp.ID || evApproval.Actor != (domain.ActorRef{ID: fixtures.DemoUserID, Type: "seller", Role: domain.RoleOwner}) ||
		evApproval.Approval.ApprovalID == nil || *evApproval.Approval.ApprovalID != g.ID || evApproval.Approval.Decision != "allowed" ||
		evApproval.Approval.IssuedBy == nil || evApproval.Approval.IssuedBy.Surface != "trovesnap_approve" || evApproval.Approval.ProposalHash != prop.ProposalHash ||
		evApproval.Client.ID != fixtures.DemoClientID || evApproval.Client.Name == "" || evApproval.Domain == nil ||
		!slices.Equal(evApproval.Permissions, []string{domain.PermApprovalGrant}) || evApproval.Payload.InputHash != prop.ProposalHash {
		t.Errorf("approval event %+v", evApproval)
	}

	done := e.call("trove_execute_candidate_promotion", exec)
	evExec := e.oneEvent(done)
	assertShape(t, "execution", evExec, "trove_execute_candidate_promotion")
	if evExec.Outcome != "success" || evExec.CausationID == nil || *evExec.CausationID != evApproval.ID || evExec.CorrelationID != evProp.CorrelationID ||
		evExec.Approval.ApprovalID == nil || *evExec.Approval.ApprovalID != g.ID || evExec.Approval.Decision != "allowed" ||
		evExec.Approval.IssuedBy == nil || evExec.Approval.IssuedBy.ActorID != fixtures.DemoUserID || evExec.Approval.ProposalHash != prop.ProposalHash ||
		!evExec.Impact.CanonicalStateChanged || len(evExec.Related.ItemIDs) != 1 || evExec.Metrics.EstimatedCostUSD != prop.Impact.EstimatedCostUSD {
		t.Errorf("execution event %+v", evExec)
	}

	replay := e.call("trove_execute_candidate_promotion", exec)
	evReplay := e.oneEvent(replay)
	assertShape(t, "replay", evReplay, "trove_execute_candidate_promotion")
	if evReplay.Outcome != "replayed" || evReplay.CausationID == nil || *evReplay.CausationID != evExec.ID || !slices.Contains(evReplay.Related.EventIDs, evExec.ID) ||
		evReplay.Impact.Type != "idempotent_replay" {
		t.Errorf("replay event %+v", evReplay)
	}

	failed := e.call("trove_get_item", map[string]any{"item_id": "not-an-id"})
	evFailed := e.oneEvent(failed)
	assertShape(t, "failure", evFailed, "trove_get_item")
	if evFailed.Outcome != "failed" || evFailed.ErrorCode != "invalid_input" || len(evFailed.Related.ItemIDs) != 0 || len(evFailed.Payload.RedactedSummary) != 0 {
		t.Errorf("failed event %+v", evFailed)
	}

	dep := e.call("trove_demand_signals", map[string]any{})
	evDep := e.oneEvent(dep)
	assertShape(t, "deprecated", evDep, "trove_demand_signals")
	if !evDep.Tool.Deprecated || evDep.Outcome != "success" {
		t.Errorf("deprecated event %+v", evDep)
	}

	// A notification execution records the proposal's cost and, in the
	// trace, a buyer communication.
	var sale domain.Sale
	for _, s := range fixtures.Dataset().Sales {
		if s.ID == fixtures.PublishedSaleID {
			sale = s
		}
	}
	e.setPaidBudget(5) // SMS costs money: the default budget is $0/day
	note := e.propose("trove_propose_buyer_notification", map[string]any{"sale_id": sale.ID, "expected_version": sale.Version, "audience": "followed_sale",
		"channels": []string{"sms"}, "message_template": "{{sale_title}} opens soon", "idempotency_key": "aud-note-0001"})
	e.approve(note.ProposalID)
	sent := e.call("trove_notify_matched_buyers", map[string]any{"proposal_id": note.ProposalID, "idempotency_key": "aud-note-exec-0001"})
	if evNote := e.oneEvent(sent); note.Impact.EstimatedCostUSD <= 0 || evNote.Metrics.EstimatedCostUSD != note.Impact.EstimatedCostUSD {
		t.Errorf("notification cost: proposal %v, event %+v", note.Impact.EstimatedCostUSD, evNote.Metrics)
	}

	// A registered client's call: its token never reaches the log.
	_, tok := e.register(fixtures.DemoTenantID, fixtures.DemoUserID)
	callOn(t, connect(t, e.gate, tok), "trove_list_sales", map[string]any{}, nil)

	audAssertNoSecrets(t, e, tok)
	rep, err := audit.Verify(ctx, e.st, audit.VerifyOptions{})
	if err != nil || !rep.Intact {
		t.Fatalf("chain after the calls: %+v %v", rep, err)
	}
}

// audAssertNoSecrets scans every stored event body for credentials and for
// the caller text the tests sent.
func audAssertNoSecrets(t *testing.T, e *env, tokens ...string) {
	t.Helper()
	recs, err := e.st.AuditEvents(context.Background(), domain.EventQuery{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if s := audit.FindSecrets(r.Body); len(s) > 0 {
			t.Errorf("event %s holds credential-shaped text %q", r.ID, s)
		}
		for _, bad := range append([]string{"AUDTITLE", "AUDNOTES", "jane@example.com", "555-0100", "Grandma"}, tokens...) {
			if bad != "" && bytes.Contains(r.Body, []byte(bad)) {
				t.Errorf("event %s holds %q", r.ID, bad)
			}
		}
	}
}

// audRunFlow is the §41 walk-through: list sales and items, create a
// candidate, propose its promotion, try to execute (blocked), approve as the
// human, execute, propose a publication, approve, execute.
type audFlow struct {
	candidateID, promo, promoHash, publication, itemID string
	grant                                              domain.Grant
	execReq                                            string
}

func audRunFlow(t *testing.T, e *env) audFlow {
	t.Helper()
	var f audFlow
	for _, tool := range []string{"trove_list_sales", "trove_list_items"} {
		if r := e.call(tool, map[string]any{}); !strings.HasPrefix(r.Status, "succeeded") {
			t.Fatalf("%s: %s", tool, r.raw)
		}
	}
	c := e.call("trove_create_candidate", map[string]any{"sale_id": fixtures.PublishedSaleID, "title": audSecretTitle, "notes": audSecretNotes,
		"category": "jewelry.rings", "idempotency_key": "flow-cand-0001"})
	f.candidateID = dataAs[domain.CandidateCreated](t, c).CandidateID
	p := e.propose("trove_propose_candidate_promotion", map[string]any{"candidate_id": f.candidateID, "expected_version": 1, "idempotency_key": "flow-prop-0001"})
	f.promo, f.promoHash = p.ProposalID, p.ProposalHash
	wantCode(t, e.call("trove_execute_candidate_promotion", map[string]any{"proposal_id": f.promo, "idempotency_key": "flow-exec-0000"}), "approval_required", "approval_required")
	f.grant = e.approve(f.promo)
	f.execReq = "flow-exec-request-1"
	done := e.call("trove_execute_candidate_promotion", map[string]any{"proposal_id": f.promo, "idempotency_key": "flow-exec-0001", "request_id": f.execReq})
	if !strings.HasPrefix(done.Status, "succeeded") {
		t.Fatalf("promotion: %s", done.raw)
	}
	it := readyItem(t)
	f.itemID = it.ID
	pub := e.propose("trove_propose_item_publication", map[string]any{"item_id": it.ID, "expected_version": it.Version, "idempotency_key": "flow-pub-0001"})
	f.publication = pub.ProposalID
	e.approve(pub.ProposalID)
	if r := e.call("trove_publish_item", map[string]any{"proposal_id": pub.ProposalID, "idempotency_key": "flow-pub-exec-0001"}); !strings.HasPrefix(r.Status, "succeeded") {
		t.Fatalf("publication: %s", r.raw)
	}
	// A network retry of the promotion: a replay, joined to the trace.
	e.call("trove_execute_candidate_promotion", map[string]any{"proposal_id": f.promo, "idempotency_key": "flow-exec-0001", "request_id": f.execReq})
	return f
}

// checkPromotionTrace asserts the §45 answers for the promotion flow.
func checkPromotionTrace(t *testing.T, tr audit.TraceResult, f audFlow) {
	t.Helper()
	if len(tr.Proposals) != 1 || tr.Proposals[0].ID != f.promo || tr.Proposals[0].Hash != f.promoHash || tr.Proposals[0].Status != domain.ProposalExecuted ||
		tr.Proposals[0].CreatedByEvent == "" || tr.Proposals[0].ApprovedByEvent == "" || tr.Proposals[0].ExecutedByEvent == "" || !tr.ChainIntact {
		t.Fatalf("proposal trace %+v", tr.Proposals)
	}
	var kinds []string
	byID := map[string]audit.Step{}
	for _, s := range tr.Steps {
		kinds = append(kinds, s.Action+"/"+s.Outcome+"/"+s.Change)
		byID[s.EventID] = s
		if !s.HashValid {
			t.Errorf("step %s does not match its hash", s.EventID)
		}
	}
	want := []string{"mcp_tool_called/success/proposal", "mcp_tool_called/blocked/none", "approval_granted/success/approval",
		"mcp_tool_called/success/canonical", "mcp_tool_called/replayed/none"}
	if !slices.Equal(kinds, want) {
		t.Fatalf("trace steps %v; want %v", kinds, want)
	}
	pt := tr.Proposals[0]
	prop, approval, exec, replay := byID[pt.CreatedByEvent], byID[pt.ApprovedByEvent], byID[pt.ExecutedByEvent], tr.Steps[4]
	// Proposal → approval → execution, joined by correlation and causation.
	if approval.CausationID != prop.EventID || exec.CausationID != approval.EventID || replay.CausationID != exec.EventID ||
		prop.CorrelationID != exec.CorrelationID || approval.CorrelationID != exec.CorrelationID {
		t.Errorf("links: proposal %s, approval caused by %s, execution caused by %s, replay caused by %s", prop.EventID, approval.CausationID, exec.CausationID, replay.CausationID)
	}
	// Who approved, and that the grant was bound to the exact proposal hash.
	ap := exec.Approval
	if !ap.Required || ap.Decision != "allowed" || ap.ApprovalID != f.grant.ID || ap.IssuedBy == nil || ap.IssuedBy.Type != "human" ||
		ap.IssuedBy.ActorID != fixtures.DemoUserID || ap.IssuedBy.Surface != "trovesnap_approve" || !ap.BoundToExactProposal ||
		ap.ProposalHash != f.promoHash || ap.GrantStatusNow != domain.GrantConsumed || ap.Revocable {
		t.Errorf("execution approval answer %+v", ap)
	}
	// The other §45 answers of the execution.
	if exec.Client.ID != fixtures.DemoClientID || exec.Client.StatusNow != domain.ClientActive || !exec.Client.CanSuspend ||
		exec.Client.SuspendCommand != "trovesnap client suspend "+fixtures.DemoClientID ||
		exec.Tool.Name != "trove_execute_candidate_promotion" || !strings.HasPrefix(exec.Tool.InputSchemaHash, "sha256:") ||
		exec.Actor.ID != fixtures.DemoUserID || exec.Actor.Role != domain.RoleOwner || exec.TenantID != fixtures.DemoTenantID ||
		len(exec.Permissions) == 0 || exec.Mode != "mock" || exec.DomainFunction != "inventory.promote_inventory_candidate" ||
		len(exec.RecordsChanged.ItemIDs) != 1 || !slices.Contains(exec.RecordsChanged.CandidateIDs, f.candidateID) ||
		exec.Replayed || exec.Public || exec.BuyerContact || exec.RequestID != f.execReq || exec.EventHash == "" {
		t.Errorf("execution answers %+v", exec)
	}
	if !replay.Replayed || replay.ReplayOf != exec.EventID {
		t.Errorf("replay answers %+v", replay)
	}
}

// Criterion 67 and §45: after a whole §41 flow, the trace of the promotion
// proposal reconstructs proposal → approval → execution (and the retry),
// with who approved and that the grant was bound to the exact proposal; the
// same through `trovesnap audit trace --json`, by proposal, correlation and
// request id.
func TestAuditTrace_ReconstructsTheWholeFlow(t *testing.T) {
	e, _ := newAudEnv(t, "")
	ctx := context.Background()
	f := audRunFlow(t, e)

	tr, err := audit.Trace(ctx, e.st, f.promo)
	if err != nil {
		t.Fatal(err)
	}
	if tr.MatchedBy != "proposal_id" {
		t.Errorf("matched by %s", tr.MatchedBy)
	}
	checkPromotionTrace(t, tr, f)

	byReq, err := audit.Trace(ctx, e.st, f.execReq)
	if err != nil || byReq.MatchedBy != "request_id" {
		t.Fatalf("trace by request id: %v %+v", err, byReq)
	}
	checkPromotionTrace(t, byReq, f)

	pub, err := audit.Trace(ctx, e.st, f.publication)
	if err != nil {
		t.Fatal(err)
	}
	last := pub.Steps[len(pub.Steps)-1]
	if last.Change != "canonical" || !last.Public || last.DomainFunction != "inventory.publish_item" || !last.Approval.BoundToExactProposal ||
		!slices.Contains(last.RecordsChanged.ItemIDs, f.itemID) {
		t.Errorf("publication execution %+v", last)
	}
	if _, err := audit.Trace(ctx, e.st, "proposal_nope"); err == nil {
		t.Error("an unknown proposal traced")
	}

	// The CLI, on the same database, in JSON.
	cliRun := func(argv ...string) (string, string, cli.ExitCode) {
		var out, errb bytes.Buffer
		fac := &cli.Factory{IO: cli.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errb},
			Getenv: func(string) string { return "" }, Clock: e.clock, IDs: domain.RandomIDs{},
			Executable: func() (string, error) { return "/opt/trovesnap", nil }}
		code := cli.Run(ctx, fac, append(argv, "--db", e.path))
		return out.String(), errb.String(), code
	}
	for _, id := range []string{f.promo, tr.CorrelationIDs[0], f.execReq} {
		out, stderr, code := cliRun("audit", "trace", id, "--json")
		if code != cli.ExitOK {
			t.Fatalf("audit trace %s: %d %s", id, code, stderr)
		}
		var got audit.TraceResult
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("audit trace --json: %v\n%s", err, out)
		}
		checkPromotionTrace(t, got, f)
	}
	human, _, code := cliRun("audit", "trace", f.promo)
	for _, want := range []string{"approved by event_", "issued by human " + fixtures.DemoUserID + " via trovesnap_approve", "bound to the exact proposal (hash " + f.promoHash + "): yes",
		"suspend with `trovesnap client suspend " + fixtures.DemoClientID + "`", "domain function: inventory.promote_inventory_candidate", "replay yes"} {
		if code != cli.ExitOK || !strings.Contains(human, want) {
			t.Errorf("human trace lacks %q:\n%s", want, human)
		}
	}
	if out, stderr, code := cliRun("audit", "verify"); code != cli.ExitOK || !strings.Contains(out, "verified") {
		t.Errorf("audit verify after the flow: %d\n%s%s", code, out, stderr)
	}
	if _, stderr, code := cliRun("audit", "trace", "proposal_nope"); code == cli.ExitOK || !strings.Contains(stderr, "proposal_nope") {
		t.Errorf("unknown id: %d %s", code, stderr)
	}
	audAssertNoSecrets(t, e)
}

// §37: the span tree is named exactly, each step is a child of the call's
// tool_call span, a traceparent in _meta continues the caller's trace, the
// metrics are recorded, and no attribute carries caller text or secrets.
func TestTelemetry_SpanTreeTraceparentMetricsAndNoSensitiveAttributes(t *testing.T) {
	e, tel := newAudEnv(t, "")
	ctx := context.Background()
	const (
		callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
		callerSpan  = "00f067aa0ba902b7"
	)
	read := e.callMeta("trove_list_sales", map[string]any{}, mcp.Meta{"traceparent": "00-" + callerTrace + "-" + callerSpan + "-01"})
	cand := e.call("trove_create_candidate", map[string]any{"sale_id": fixtures.PublishedSaleID, "title": audSecretTitle, "notes": audSecretNotes, "idempotency_key": "tel-cand-0001"})
	e.call("trove_create_candidate", map[string]any{"sale_id": fixtures.PublishedSaleID, "title": audSecretTitle, "notes": audSecretNotes, "idempotency_key": "tel-cand-0001"})
	prop := e.propose("trove_propose_candidate_promotion", map[string]any{"candidate_id": fixtures.DemoCandidateID, "expected_version": 3, "idempotency_key": "tel-prop-0001"})
	blocked := e.call("trove_execute_candidate_promotion", map[string]any{"proposal_id": prop.ProposalID, "idempotency_key": "tel-exec-0001"})
	e.approve(prop.ProposalID)
	e.call("trove_execute_candidate_promotion", map[string]any{"proposal_id": prop.ProposalID, "idempotency_key": "tel-exec-0002"})
	e.call("trove_demand_signals", map[string]any{})
	e.callMeta("trove_list_sales", map[string]any{}, mcp.Meta{gate.MetaTenantHint: fixtures.OtherTenantID})
	e.call("trove_get_item", map[string]any{"item_id": "bad id"})
	e.call(audSecretTitle, map[string]any{}) // an unknown tool named with caller text
	_, tok := e.register(fixtures.DemoTenantID, fixtures.DemoUserID)
	callOn(t, connect(t, e.gate, tok), "trove_list_items", map[string]any{}, nil)

	spans := tel.spans.Ended()
	roots := map[string]sdktrace.ReadOnlySpan{} // by span id
	children := map[string][]string{}           // root span id → child names in start order
	for _, s := range spans {
		if s.Name() == audit.SpanToolCall {
			roots[s.SpanContext().SpanID().String()] = s
		}
	}
	for _, s := range spans {
		if s.Name() == audit.SpanToolCall {
			continue
		}
		if !slices.Contains(audit.SpanNames(), s.Name()) {
			t.Errorf("unexpected span %q", s.Name())
		}
		parent := s.Parent().SpanID().String()
		if _, ok := roots[parent]; !ok || s.SpanContext().TraceID() != roots[parent].SpanContext().TraceID() {
			t.Errorf("span %s is not a child of a tool_call span", s.Name())
		}
		children[parent] = append(children[parent], s.Name())
	}
	if len(roots) != 11 {
		t.Errorf("%d tool_call spans for 11 calls", len(roots))
	}
	rootOf := func(env envelope) (sdktrace.ReadOnlySpan, []string) {
		for id, r := range roots {
			for _, a := range r.Attributes() {
				if a.Key == audit.AttrServerRequest && a.Value.AsString() == env.ServerRequestID {
					return r, children[id]
				}
			}
		}
		t.Fatalf("no span for %s", env.ServerRequestID)
		return nil, nil
	}
	full := []string{audit.SpanClientResolve, audit.SpanActorResolve, audit.SpanToolAuthorize, audit.SpanInputValidate, audit.SpanPolicyEvaluate,
		audit.SpanApprovalResolve, audit.SpanDomainExecute, audit.SpanResultProject, audit.SpanPluginEvent}
	if _, got := rootOf(cand); !slices.Equal(got, full) {
		t.Errorf("candidate write steps %v; want %v", got, full)
	}
	if _, got := rootOf(blocked); !slices.Equal(got, append(slices.Clone(full[:6]), audit.SpanPluginEvent)) {
		t.Errorf("blocked execution steps %v", got)
	}
	// traceparent continues the caller's trace; the event records it.
	r, _ := rootOf(read)
	if r.SpanContext().TraceID().String() != callerTrace || r.Parent().SpanID().String() != callerSpan || !r.Parent().IsRemote() {
		t.Errorf("read span trace %s parent %s", r.SpanContext().TraceID(), r.Parent().SpanID())
	}
	if ev := e.oneEvent(read); ev.TraceID != callerTrace || ev.SpanID != r.SpanContext().SpanID().String() {
		t.Errorf("event trace ids %s/%s", ev.TraceID, ev.SpanID)
	}
	if c, _ := rootOf(cand); c.SpanContext().TraceID().String() == callerTrace || c.Parent().IsValid() {
		t.Error("a call without traceparent joined another trace")
	}

	// No attribute carries caller text, a token, or anything but ids/codes.
	for _, s := range spans {
		for _, a := range s.Attributes() {
			audCheckAttr(t, "span "+s.Name(), a, tok)
		}
	}
	var rm metricdata.ResourceMetrics
	if err := tel.reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]int64{} // metric → "tool|extra" → value
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			got[m.Name] = map[string]int64{}
			visit := func(attrs attribute.Set, v int64) {
				tool, _ := attrs.Value(audit.AttrTool)
				got[m.Name][tool.AsString()] += v
				for _, a := range attrs.ToSlice() {
					audCheckAttr(t, "metric "+m.Name, a, tok)
				}
			}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					visit(p.Attributes, p.Value)
				}
			case metricdata.Sum[float64]:
				for _, p := range d.DataPoints {
					visit(p.Attributes, int64(p.Value))
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					visit(p.Attributes, int64(p.Count))
				}
			case metricdata.Gauge[float64]:
				for _, p := range d.DataPoints {
					visit(p.Attributes, 1)
				}
			}
		}
	}
	for _, w := range []struct {
		metric, tool string
		n            int64
	}{
		{audit.MetricCalls, "trove_list_sales", 2}, {audit.MetricLatency, "trove_create_candidate", 2},
		{audit.MetricCandidatesCreated, "trove_create_candidate", 1}, {audit.MetricReplays, "trove_create_candidate", 1},
		{audit.MetricProposalsCreated, "trove_propose_candidate_promotion", 1},
		{audit.MetricApprovalsRequired, "trove_execute_candidate_promotion", 1},
		{audit.MetricDestructiveBlocked, "trove_execute_candidate_promotion", 1},
		{audit.MetricCanonicalExecuted, "trove_execute_candidate_promotion", 1},
		{audit.MetricDeprecatedCalls, "trove_demand_signals", 1},
		{audit.MetricCrossTenant, "trove_list_sales", 1}, {audit.MetricAuthzDenials, "trove_list_sales", 1},
		{audit.MetricErrors, "trove_get_item", 1}, {audit.MetricErrors, "unknown", 1},
		{audit.MetricClientLastUsed, "", 2},
	} {
		if got[w.metric][w.tool] != w.n {
			t.Errorf("%s{%s} = %d; want %d (all: %v)", w.metric, w.tool, got[w.metric][w.tool], w.n, got[w.metric])
		}
	}
}

// audCheckAttr fails on an attribute value that is caller text, a token or
// not an id/name/code.
func audCheckAttr(t *testing.T, where string, a attribute.KeyValue, tokens ...string) {
	t.Helper()
	if a.Value.Type() != attribute.STRING {
		return
	}
	v := a.Value.AsString()
	for _, bad := range append([]string{"AUDTITLE", "AUDNOTES", "jane@", "555-0100", "Grandma", "Ruth"}, tokens...) {
		if strings.Contains(v, bad) {
			t.Errorf("%s attribute %s = %q carries caller text or a secret", where, a.Key, v)
		}
	}
	if !audit.SafeAttributeValue(v) {
		t.Errorf("%s attribute %s = %q is not an id, name or code", where, a.Key, v)
	}
}

// The approval metrics are observed from the store, where the approval
// surface (another process) records its decisions.
func TestTelemetry_ApprovalMetricsObservedFromTheStore(t *testing.T) {
	e, tel := newAudEnv(t, "")
	ctx := context.Background()
	if _, err := audit.ObserveApprovals(tel.meter, e.st.ApprovalCounts); err != nil {
		t.Fatal(err)
	}
	p1 := e.propose("trove_propose_candidate_promotion", map[string]any{"candidate_id": fixtures.DemoCandidateID, "expected_version": 3, "idempotency_key": "obs-prop-0001"})
	e.approve(p1.ProposalID)
	it := readyItem(t)
	p2 := e.propose("trove_propose_item_publication", map[string]any{"item_id": it.ID, "expected_version": it.Version, "idempotency_key": "obs-prop-0002"})
	if err := e.service().Deny(ctx, fixtures.DemoTenantID, p2.ProposalID, fixtures.DemoUserID, "", "not yet"); err != nil {
		t.Fatal(err)
	}
	var rm metricdata.ResourceMetrics
	if err := tel.reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	vals := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if d, ok := m.Data.(metricdata.Sum[int64]); ok && strings.HasPrefix(m.Name, "trovesnap.approvals.") {
				for _, p := range d.DataPoints {
					iss, _ := p.Attributes.Value("trovesnap.approval.issuer")
					vals[m.Name+"/"+iss.AsString()] = p.Value
				}
			}
		}
	}
	for k, want := range map[string]int64{audit.MetricApprovalsRequested + "/": 2, audit.MetricApprovalsGranted + "/human": 1, audit.MetricApprovalsGranted + "/policy": 0,
		audit.MetricApprovalsDenied + "/": 1, audit.MetricApprovalsExpired + "/": 0, audit.MetricApprovalsRevoked + "/": 0} {
		if vals[k] != want {
			t.Errorf("%s = %d; want %d (all %v)", k, vals[k], want, vals)
		}
	}
}

// §45 "which policy issued it": an execution authorised by an automation
// policy records the policy and its version, is caused by the proposal's
// creation, and the trace shows the grant bound to the exact proposal and
// that the policy can still be revoked.
func TestAuditTrace_PolicyAuthorisedExecution(t *testing.T) {
	e, _ := newAudEnv(t, "")
	ctx := context.Background()
	target := itemWithStatus(t, domain.ItemDraft, true)
	pol, err := e.st.CreatePolicy(ctx, domain.Policy{TenantID: fixtures.DemoTenantID, Name: "Tag binding", CreatedBy: fixtures.DemoUserID,
		AllowedTools: []string{"trove_bind_item_identity"}, Scope: domain.PolicyScope{EstateSaleIDs: []string{target.SaleID}},
		Conditions: domain.PolicyConditions{MaxItemsPerRun: 1, PermittedFields: []string{"qr_code"}, RequireNoConflicts: true},
		Limits:     domain.PolicyLimits{MaxDailyActions: 5}})
	if err != nil {
		t.Fatal(err)
	}
	if pol, err = e.st.SetPolicyStatus(ctx, pol.ID, domain.PolicyActive, fixtures.DemoUserID); err != nil {
		t.Fatal(err)
	}
	prop := e.call("trove_propose_identity_binding", map[string]any{"item_id": target.ID, "expected_version": target.Version, "qr_code": "QR-221-0142",
		"action": "bind", "idempotency_key": "audpol-prop-0001"})
	if prop.Status != "proposed" {
		t.Fatalf("proposal: %s", prop.raw)
	}
	pv := dataAs[catalog.ProposalView](t, prop)
	done := e.call("trove_bind_item_identity", map[string]any{"proposal_id": pv.ProposalID, "idempotency_key": "audpol-exec-0001"})
	ev := e.oneEvent(done)
	propEv := e.oneEvent(prop)
	if ev.Outcome != "success" || ev.Approval.Decision != "allowed_by_policy" || ev.Approval.IssuedBy == nil || ev.Approval.IssuedBy.Type != domain.IssuerPolicy ||
		ev.Approval.IssuedBy.PolicyID != pol.ID || ev.Approval.IssuedBy.PolicyVersion != pol.Version || ev.Approval.ApprovalID == nil ||
		ev.CausationID == nil || *ev.CausationID != propEv.ID {
		t.Fatalf("policy execution event %+v", ev)
	}
	tr, err := audit.Trace(ctx, e.st, pv.ProposalID)
	if err != nil {
		t.Fatal(err)
	}
	last := tr.Steps[len(tr.Steps)-1]
	if last.Approval.IssuedBy == nil || last.Approval.IssuedBy.PolicyID != pol.ID || !last.Approval.BoundToExactProposal ||
		last.Approval.PolicyStatusNow != domain.PolicyActive || !last.Approval.Revocable || tr.Proposals[0].ApprovedByEvent != last.EventID {
		t.Errorf("policy trace %+v / %+v", last.Approval, tr.Proposals)
	}
	// Policy changes are events with the full seller shape too.
	var polEvents int
	for _, x := range e.allEvents() {
		if strings.HasPrefix(x.Action, "policy_") {
			polEvents++
			if x.Actor.Role != domain.RoleOwner || !slices.Equal(x.Permissions, []string{domain.PermPolicyManage}) || x.Domain == nil {
				t.Errorf("policy event %+v", x)
			}
		}
	}
	if polEvents != 2 {
		t.Errorf("%d policy events", polEvents)
	}
}

// ranDomainCall reports whether the call that recorded eventID reached its
// domain call (its tool_call span has a domain.execute child).
func (tel *audTelemetry) ranDomainCall(t *testing.T, eventID string) bool {
	t.Helper()
	spans := tel.spans.Ended()
	root := ""
	for _, s := range spans {
		if s.Name() != audit.SpanToolCall {
			continue
		}
		for _, a := range s.Attributes() {
			if string(a.Key) == audit.AttrEventID && a.Value.AsString() == eventID {
				root = s.SpanContext().SpanID().String()
			}
		}
	}
	if root == "" {
		t.Fatalf("no tool_call span records event %s", eventID)
	}
	for _, s := range spans {
		if s.Name() == audit.SpanDomainExecute && s.Parent().SpanID().String() == root {
			return true
		}
	}
	return false
}

// Issue 18: a read is counted in the transaction that records its event.
// Within the limit each read commits its count with its one event; a
// refused read (an unknown item) is counted with its refusal. The first read
// past the limit has run, but its data is withheld: it is answered
// rate_limited, with one blocked event and nothing counted. From then on,
// until the window ends, the client's reads are counted before they run
// and refused without reading. The next window admits it again.
func TestLimits_ReadCountedWithItsEvent(t *testing.T) {
	e, tel := newAudEnv(t, "")
	cs := e.limitedSession(func(l *domain.Limits) { l.ReadsPerMinute = 3 })
	for i := range 2 {
		env := callOn(t, cs, "trove_list_sales", map[string]any{}, nil)
		if env.Status != "succeeded" || e.oneEvent(env).Outcome != domain.OutcomeSuccess {
			t.Fatalf("read %d: %s", i, env.raw)
		}
	}
	missing := callOn(t, cs, "trove_get_item", map[string]any{"item_id": "item_999999"}, nil)
	wantCode(t, missing, "failed", "invalid_reference")
	e.oneEvent(missing)

	before := e.digest()
	over := callOn(t, cs, "trove_list_sales", map[string]any{}, nil)
	wantCode(t, over, "blocked", "rate_limited")
	if string(over.Data) != "null" || strings.Contains(over.raw, "sale_") || !strings.Contains(over.raw, `"retry_after_seconds":60`) {
		t.Fatalf("the read past the limit must carry no data and a retry hint: %s", over.raw)
	}
	if ev := e.oneEvent(over); ev.Outcome != domain.OutcomeBlocked || ev.ErrorCode != "rate_limited" {
		t.Fatalf("its event: %+v", ev)
	}
	assertOnlyEventsChanged(t, before, e.digest())
	if !tel.ranDomainCall(t, over.Audit.PluginEventID) {
		t.Fatal("the first read past the limit was refused before it ran: the count was not taken with its event")
	}
	for _, call := range []struct {
		tool string
		args map[string]any
	}{{"trove_list_sales", map[string]any{}}, {"trove_get_item", map[string]any{"item_id": "item_999999"}}} {
		env := callOn(t, cs, call.tool, call.args, nil)
		wantCode(t, env, "blocked", "rate_limited")
		e.oneEvent(env)
		if tel.ranDomainCall(t, env.Audit.PluginEventID) {
			t.Fatalf("%s ran although this window was seen full", call.tool)
		}
	}
	// Another client keeps its own budget, counted with its events.
	if env := e.call("trove_list_sales", map[string]any{}); env.Status != "succeeded" || !tel.ranDomainCall(t, env.Audit.PluginEventID) {
		t.Fatalf("another client: %s", env.raw)
	}
	e.clock.Advance(time.Minute)
	env := callOn(t, cs, "trove_list_sales", map[string]any{}, nil)
	if env.Status != "succeeded" {
		t.Fatalf("next window: %s", env.raw)
	}
	e.oneEvent(env)
}

// Issue 18, attack review: 50 concurrent reads of one client with a limit
// of 5. Exactly 5 are answered with data, every call has exactly one event,
// no refusal carries data — and at most one refused read ran its domain
// call: only one read per client at a time is counted with its event, the
// others are counted before they run.
func TestLimits_ConcurrentReadsPastTheLimitDoNotRun(t *testing.T) {
	e, tel := newAudEnv(t, "")
	cs := e.limitedSession(func(l *domain.Limits) { l.ReadsPerMinute = 5 })
	const n = 50
	texts := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "trove_list_sales", Arguments: map[string]any{}})
			if err == nil && len(res.Content) == 1 {
				texts[i] = res.Content[0].(*mcp.TextContent).Text
			}
			errs[i] = err
		})
	}
	close(start)
	wg.Wait()
	succeeded, ranButRefused := 0, 0
	for i, text := range texts {
		var env envelope
		if errs[i] != nil || json.Unmarshal([]byte(text), &env) != nil {
			t.Fatalf("call %d: %v %s", i, errs[i], text)
		}
		env.raw = text
		e.oneEvent(env)
		switch {
		case env.Status == "succeeded" && string(env.Data) != "null":
			succeeded++
		case len(env.Errors) == 1 && env.Errors[0].Code == "rate_limited":
			if string(env.Data) != "null" || strings.Contains(text, "sale_") {
				t.Fatalf("refused call %d carries data: %s", i, text)
			}
			if tel.ranDomainCall(t, env.Audit.PluginEventID) {
				ranButRefused++
			}
		default:
			t.Fatalf("call %d: %s", i, text)
		}
	}
	if succeeded != 5 || ranButRefused > 1 {
		t.Fatalf("%d answered with data (want 5), %d refused reads ran (want at most 1)", succeeded, ranButRefused)
	}
}

// Issue 18: a persisted write is counted in its own transaction, first,
// with what it writes. A write refused before that transaction (a reused
// key with other input) or whose transaction rolled back (an unknown sale)
// is counted with its refusal event. So every call past the limits step is
// counted once, and the call past the limit writes nothing but its event.
func TestLimits_WriteCountedInItsTransaction(t *testing.T) {
	e := newEnv(t)
	cs := e.limitedSession(func(l *domain.Limits) { l.CandidateWritesPerMinute = 3 })
	write := func(sale, title, key string) envelope {
		env := callOn(t, cs, "trove_create_candidate", map[string]any{"sale_id": sale, "title": title, "idempotency_key": key}, nil)
		e.oneEvent(env)
		return env
	}
	if env := write(fixtures.PublishedSaleID, "Counted lamp", "count-key-0001"); env.Status != "succeeded_with_warnings" {
		t.Fatalf("first write: %s", env.raw)
	}
	wantCode(t, write("sale_999999", "Counted lamp", "count-key-0002"), "failed", "invalid_reference")
	wantCode(t, write(fixtures.PublishedSaleID, "Other lamp", "count-key-0001"), "failed", "idempotency_conflict")
	before := e.digest()
	for _, key := range []string{"count-key-0003", "count-key-0001"} { // a new write, and the first one's replay
		wantCode(t, write(fixtures.PublishedSaleID, "Counted lamp", key), "blocked", "rate_limited")
	}
	assertOnlyEventsChanged(t, before, e.digest())
	e.clock.Advance(time.Minute)
	if env := write(fixtures.PublishedSaleID, "Counted lamp", "count-key-0003"); env.Status != "succeeded_with_warnings" {
		t.Fatalf("next window: %s", env.raw)
	}
}

// limitedSession connects a new cataloger client of the demo tenant whose
// limits are the defaults changed by set.
func (e *env) limitedSession(set func(*domain.Limits)) *mcp.ClientSession {
	e.t.Helper()
	c, tok := e.register(fixtures.DemoTenantID, fixtures.CatalogerUserID)
	l := domain.DefaultLimits()
	set(&l)
	if err := e.st.SetLimits(context.Background(), fixtures.DemoTenantID, c.ID, l); err != nil {
		e.t.Fatal(err)
	}
	return connect(e.t, e.gate, tok)
}

// Attack review of issue 18: a replay whose write transaction fails (another
// process holds the write lock past the busy timeout) was taken for a write
// that committed, because its key was stored — by the original call — and
// ended with no event and no count. The gate now asks for the call's own
// event: the replay is refused service_unavailable with its one event,
// counted in its class (a limit of 2 is then full).
func TestLimits_ReplayFailingOnABusyDatabaseIsAuditedAndCounted(t *testing.T) {
	e := newEnv(t)
	cs := e.limitedSession(func(l *domain.Limits) { l.CandidateWritesPerMinute = 2 })
	args := map[string]any{"sale_id": fixtures.PublishedSaleID, "title": "Busy lamp", "idempotency_key": "busy-key-0001"}
	e.oneEvent(callOn(t, cs, "trove_create_candidate", args, nil))

	other, err := sql.Open("sqlite", "file:"+e.path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = other.Close() }()
	conn, err := other.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	released := make(chan struct{})
	go func() {
		defer close(released)
		time.Sleep(5500 * time.Millisecond) // past the store's 5 s busy timeout
		_, _ = conn.ExecContext(context.Background(), "ROLLBACK")
		_ = conn.Close()
	}()
	replay := callOn(t, cs, "trove_create_candidate", args, nil)
	<-released
	wantCode(t, replay, "failed", "service_unavailable")
	if ev := e.oneEvent(replay); ev.Outcome != domain.OutcomeFailed {
		t.Fatalf("the failed replay's event: %+v", ev)
	}
	args["idempotency_key"] = "busy-key-0002"
	wantCode(t, callOn(t, cs, "trove_create_candidate", args, nil), "blocked", "rate_limited")
}
