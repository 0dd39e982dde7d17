package live_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/jackc/pgx/v5/pgconn"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/audit"
	"github.com/triunalabs/trovesnap/internal/contract"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/live"
	"github.com/triunalabs/trovesnap/internal/live/pgtest"
)

// The live audit chain (migration 29): computed in SQL as each event is
// recorded, verified by the Go verifier through the seller_audit_* RPCs.

// auditEvent is an event of tenant as the gate would send it.
func auditEvent(tenant, key string) domain.Event {
	client := domain.ClientRef{ID: fixtures.DemoClientID, Name: "Paul Claude Code", Type: "claude_code"}
	actor := domain.ActorRef{ID: fixtures.DemoUserID, Type: "seller"}
	switch tenant {
	case fixtures.OtherTenantID:
		client = domain.ClientRef{ID: fixtures.OtherClientID}
	case "": // a call no client made: sent without a token, recorded in no tenant
		client, actor = domain.ClientRef{}, domain.ActorRef{Type: "anonymous"}
	}
	return domain.Event{ID: "event_" + key, TenantID: tenant, CorrelationID: "corr_" + key, RequestID: "req_" + key,
		ServerRequestID: "sreq_" + key, Mode: domain.ModeLive, Client: client,
		Tool: domain.ToolRef{Name: "trove_get_item", Version: "1.0.0", Tier: "tenant_read"}, Actor: actor,
		Action: "mcp_tool_called", Outcome: domain.OutcomeSuccess, Permissions: []string{"item.read"},
		Payload: domain.EventPayload{InputHash: "sha256:" + key, RedactedSummary: map[string]string{"item_id": fixtures.DemoItemID}},
		// Numbers RFC 8785 writes differently from Postgres, and a name
		// outside ASCII.
		Metrics:    domain.EventMetrics{LatencyMS: 12.5, EstimatedCostUSD: 1e-7},
		OccurredAt: time.Now()}
}

// eventBackend is a backend that has authenticated both clients whose
// events auditEvent makes: an event goes to mcp_append_event with its own
// client's token, which decides its tenant and client.
func eventBackend(t testing.TB, env *pgtest.Env) *live.Backend {
	t.Helper()
	b := newBackend(t, env)
	for _, cred := range []string{contract.CredOwner, contract.CredOther} {
		if _, err := b.ResolvePrincipal(ctx, cred); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// sendEvents records n events of tenant through mcp_append_event.
func sendEvents(t testing.TB, b *live.Backend, tenant, prefix string, n int) {
	t.Helper()
	for i := range n {
		if err := b.SendEvent(ctx, auditEvent(tenant, fmt.Sprintf("%s%d", prefix, i))); err != nil {
			t.Fatalf("send event %d: %v", i, err)
		}
	}
}

// chainFixture seeds the dataset and records, through the real RPCs, a
// candidate write (finish_write) and appended events in two tenants.
func chainFixture(t *testing.T) (*pgtest.Env, *live.Backend) {
	t.Helper()
	env := seeded(t)
	b := eventBackend(t, env)
	p, err := b.ResolvePrincipal(ctx, contract.CredOwner)
	if err != nil {
		t.Fatal(err)
	}
	sendEvents(t, b, fixtures.DemoTenantID, "a", 3)
	if _, _, err := b.CreateCandidate(ctx, p, benchMeta(p, "trove_create_candidate", "chain-c1"),
		domain.NewCandidate{SaleID: fixtures.PublishedSaleID, Title: "Brass lamp", Category: "lighting.lamps"}); err != nil {
		t.Fatal(err)
	}
	sendEvents(t, b, fixtures.OtherTenantID, "o", 3)
	sendEvents(t, b, fixtures.DemoTenantID, "b", 3)
	// A tenantless event (one recorded before any client was known) has
	// no client token to send it with: the database's own path records it.
	// (Sent through mcp_append_event it would join the token's tenant.)
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for i := range 2 {
		if _, err := conn.Exec(ctx, "SELECT trovesnap.record_event($1::jsonb)", mustJSON(auditEvent("", fmt.Sprintf("anon%d", i)))); err != nil {
			t.Fatal(err)
		}
	}
	return env, b
}

func verifyAs(t *testing.T, env *pgtest.Env, user, tenant string, against []domain.ChainHead) audit.Report {
	t.Helper()
	rep, err := audit.Verify(ctx, sellerAs(t, env, user).Audit(tenant), audit.VerifyOptions{Against: against})
	if err != nil {
		t.Fatalf("verify %s as %s: %v", tenant, user, err)
	}
	return rep
}

func TestAuditChain_GoVerifierAcceptsWhatSQLWrote(t *testing.T) {
	env, _ := chainFixture(t)
	for _, c := range []struct {
		user, tenant string
		events       int64
	}{{fixtures.DemoUserID, fixtures.DemoTenantID, 7}, {fixtures.OtherOwnerUserID, fixtures.OtherTenantID, 3}} {
		rep := verifyAs(t, env, c.user, c.tenant, nil)
		if !rep.Intact || rep.Events != c.events || len(rep.Chains) != 1 || rep.Chains[0].Legacy != 0 || rep.Chains[0].TenantID != c.tenant {
			t.Fatalf("%s: report %+v", c.tenant, rep)
		}
		heads, err := sellerAs(t, env, c.user).Audit(c.tenant).ChainHeads(ctx)
		if err != nil || len(heads) != 1 || heads[0].Events != c.events || heads[0].EventHash != rep.Chains[0].HeadHash || heads[0].Seq != rep.Chains[0].HeadSeq {
			t.Fatalf("%s: heads %+v, %v; report %+v", c.tenant, heads, err, rep.Chains)
		}
	}
	// Every stored row, the tenantless chain included, verifies from the
	// table itself too, and the write's event is in the demo chain.
	rep, err := audit.Verify(ctx, superChain{env}, audit.VerifyOptions{})
	if err != nil || !rep.Intact || rep.Events != 12 || len(rep.Chains) != 3 {
		t.Fatalf("superuser verify: %+v, %v", rep, err)
	}
	recs, err := sellerAs(t, env, fixtures.DemoUserID).Audit(fixtures.DemoTenantID).AuditEvents(ctx, domain.EventQuery{ID: "event_chain-c1"})
	if err != nil || len(recs) != 1 || recs[0].ToolName != "trove_create_candidate" || recs[0].EventHash == "" {
		t.Fatalf("the write's event: %+v, %v", recs, err)
	}
}

// The SQL canonical form is domain.CanonicalJSON, byte for byte, on the
// inputs where RFC 8785 differs from what Postgres prints.
func TestAuditChain_SQLCanonicalFormIsTheDomains(t *testing.T) {
	env := pgtest.Need(t)
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, in := range []string{
		`{"b":1,"a":[1,2.50,-0,1e21,1e20,123456789012345678,1e-7,0.000001,1.5e-5,1E+2,-3.25e30,5e-324,1.7976931348623157e308]}`,
		`{"é":"ü","e":"\u001f\t\n\"\\/","\ud83d\ude00":1,"\ue000":2,"":{"z":null,"y":true,"x":false,"w":{}}}`,
		`{"nested":[[],[{}],{"k":[0.1,0.2,0.30000000000000004]}],"big":9007199254740993,"neg":-1e-7}`,
		// Without a character above U+FFFF (the fast path, migration 36):
		// names in UTF-8 byte order, numbers and containers at every depth.
		`{"é":"ü","e":"\u001f\t\n\"\\/","\ue000":2,"z":{"b":[1e21,{"y":{"x":[-0.0,1e-7,{"é":1,"e":2}]}}],"a":1.50,"ab":{"é":[],"e":{}}},"":{"z":null,"y":true,"x":false,"w":{}}}`,
		`[{"b":2,"a":1},[3,{"d":1e22,"c":[]}],"s",null,1.0,[[[{"b":0.5,"a":-5e-7}]]]]`,
		`1e-7`, `"\u00e9\u2028"`, `{}`, `[]`,
		// From 2^53, Postgres may print more digits than the shortest
		// form when that form is an end of the value's rounding interval.
		`{"a":4768e20,"b":-75201574799928614,"c":645570000000000000000,"d":[9007199254740992,9007199254740994,1e22,1.5e300,-2.2250738585072014e-308,1.7976931348623157e308,-9.999999999999999e22]}`,
		// One only in a string value: the exact path, the same answer.
		`{"b":"\ud83d\ude00","a":{"d":1,"c":2}}`,
	} {
		want, err := domain.CanonicalJSON([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		var got, hash string
		if err := conn.QueryRow(ctx, "SELECT trovesnap.audit_jcs($1::jsonb), trovesnap.audit_chain_hash($1::jsonb, 'sha256:prev')", in).Scan(&got, &hash); err != nil {
			t.Fatal(err)
		}
		if got != string(want) {
			t.Errorf("audit_jcs(%s)\n = %s\nwant %s", in, got, want)
		}
		if h := domain.ChainHash(want, "sha256:prev"); hash != h {
			t.Errorf("audit_chain_hash = %s, want %s", hash, h)
		}
	}
}

// superChain reads every stored event as the superuser (a ChainSource
// beside the RPCs: the tenantless chain and the migration test need it).
type superChain struct{ env *pgtest.Env }

func (s superChain) ScanChain(ctx context.Context, afterSeq int64, fn func(domain.ChainRecord) error) error {
	conn, err := s.env.Cluster.Super(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	return scanSuper(ctx, conn, afterSeq, fn)
}

func scanSuper(ctx context.Context, conn *pgx.Conn, afterSeq int64, fn func(domain.ChainRecord) error) error {
	rows, err := conn.Query(ctx, `SELECT seq, id, tenant_id, correlation_id, coalesce(body ->> 'causation_id', ''), request_id,
		server_request_id, tool_name, outcome, body ->> 'occurred_at', coalesce(body_jcs::text, body::text), prev_hash, event_hash
		FROM trovesnap.plugin_events WHERE seq > $1 ORDER BY seq`, afterSeq)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var r domain.ChainRecord
		var body string
		if err := rows.Scan(&r.Seq, &r.ID, &r.TenantID, &r.CorrelationID, &r.CausationID, &r.RequestID, &r.ServerRequestID,
			&r.ToolName, &r.Outcome, &r.OccurredAt, &body, &r.PrevHash, &r.EventHash); err != nil {
			return err
		}
		r.Body = []byte(body)
		if err := fn(r); err != nil {
			return err
		}
	}
	return rows.Err()
}

// tamper runs stmts as the superuser with the append-only triggers off.
func tamper(t *testing.T, env *pgtest.Env, stmts ...string) {
	t.Helper()
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL session_replication_role = replica"); err != nil {
			return err
		}
		for _, s := range stmts {
			if _, err := tx.Exec(ctx, s); err != nil {
				return fmt.Errorf("%s: %w", s, err)
			}
		}
		return nil
	}); err != nil {
		t.Fatalf("tamper: %v", err)
	}
}

// seqOf is the seq of one event.
func seqOf(t *testing.T, env *pgtest.Env, id string) int64 {
	t.Helper()
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var s int64
	if err := conn.QueryRow(ctx, "SELECT seq FROM trovesnap.plugin_events WHERE id = $1", id).Scan(&s); err != nil {
		t.Fatalf("seq of %s: %v", id, err)
	}
	return s
}

// Each tamper class the verifier knows is found through the RPCs, as the
// kind it is, at the event it is.
func TestAuditChain_TamperIsDetected(t *testing.T) {
	demo := fixtures.DemoTenantID
	for _, c := range []struct {
		name    string
		against bool
		tamper  func(t *testing.T, env *pgtest.Env) []string
		kind    string
		at      string // the event the problem names
	}{
		{"edited body", false, func(*testing.T, *pgtest.Env) []string {
			// Both forms, as the CHECK requires: the text the chain covers
			// and its jsonb parse.
			return []string{`UPDATE trovesnap.plugin_events SET body = jsonb_set(body, '{outcome}', '"failed"'),
				body_jcs = trovesnap.audit_jcs(jsonb_set(body, '{outcome}', '"failed"'))::json WHERE id = 'event_a1'`}
		}, audit.ProblemModified, "event_a1"},
		{"re-serialised text", false, func(*testing.T, *pgtest.Env) []string {
			// The same JSON in other bytes: what a reader is shown is no
			// longer what was hashed.
			return []string{`UPDATE trovesnap.plugin_events SET body_jcs = replace(body_jcs::text, ',', ', ')::json WHERE id = 'event_a1'`}
		}, audit.ProblemModified, "event_a1"},
		{"text with a leading space", false, func(*testing.T, *pgtest.Env) []string {
			// Reported at its event, not as a page the reader cannot parse.
			return []string{`UPDATE trovesnap.plugin_events SET body_jcs = (' ' || body_jcs::text)::json WHERE id = 'event_a1'`}
		}, audit.ProblemModified, "event_a1"},
		{"time moved by a microsecond", false, func(*testing.T, *pgtest.Env) []string {
			return []string{`UPDATE trovesnap.plugin_events SET occurred_at = occurred_at - interval '1 microsecond' WHERE id = 'event_a1'`}
		}, audit.ProblemModified, "event_a1"},
		{"edited column", false, func(*testing.T, *pgtest.Env) []string {
			return []string{`UPDATE trovesnap.plugin_events SET correlation_id = 'corr_hidden' WHERE id = 'event_a2'`}
		}, audit.ProblemModified, "event_a2"},
		{"deleted event", false, func(*testing.T, *pgtest.Env) []string {
			return []string{`DELETE FROM trovesnap.plugin_events WHERE id = 'event_a1'`}
		}, audit.ProblemDeleted, "event_a2"},
		{"reordered events", false, func(t *testing.T, env *pgtest.Env) []string {
			a, b := seqOf(t, env, "event_b0"), seqOf(t, env, "event_b1")
			return []string{
				`ALTER TABLE trovesnap.plugin_events ALTER COLUMN seq SET GENERATED BY DEFAULT`,
				fmt.Sprintf(`UPDATE trovesnap.plugin_events SET seq = -1 WHERE seq = %d`, a),
				fmt.Sprintf(`UPDATE trovesnap.plugin_events SET seq = %d WHERE seq = %d`, a, b),
				fmt.Sprintf(`UPDATE trovesnap.plugin_events SET seq = %d WHERE seq = -1`, b),
				`ALTER TABLE trovesnap.plugin_events ALTER COLUMN seq SET GENERATED ALWAYS`,
			}
		}, audit.ProblemReordered, "event_b1"},
		{"inserted unchained event", false, func(*testing.T, *pgtest.Env) []string {
			return []string{`INSERT INTO trovesnap.plugin_events (id, tenant_id, correlation_id, tool_name, outcome, occurred_at, body, body_jcs)
				SELECT 'event_forged', tenant_id, correlation_id, tool_name, outcome, occurred_at, body || '{"id":"event_forged"}',
				trovesnap.audit_jcs(body || '{"id":"event_forged"}')::json
				FROM trovesnap.plugin_events WHERE id = 'event_b2'`}
		}, audit.ProblemInserted, "event_forged"},
		{"duplicated event", false, func(*testing.T, *pgtest.Env) []string {
			return []string{`INSERT INTO trovesnap.plugin_events (id, tenant_id, correlation_id, request_id, server_request_id, tool_name,
				outcome, occurred_at, body, body_jcs, prev_hash, event_hash)
				SELECT 'event_copy', tenant_id, correlation_id, request_id, server_request_id, tool_name, outcome, occurred_at, body,
				body_jcs, prev_hash, event_hash FROM trovesnap.plugin_events WHERE id = 'event_a0'`}
		}, audit.ProblemDuplicated, "event_copy"},
		{"truncated chain", true, func(*testing.T, *pgtest.Env) []string {
			return []string{`DELETE FROM trovesnap.plugin_events WHERE id = 'event_b2'`}
		}, audit.ProblemTruncated, "event_b2"},
		{"rewritten head", true, func(*testing.T, *pgtest.Env) []string {
			// A consistent rewrite: the chain alone verifies, the saved
			// head does not.
			return []string{`UPDATE trovesnap.plugin_events SET body = jsonb_set(body, '{outcome}', '"blocked"'),
				body_jcs = trovesnap.audit_jcs(jsonb_set(body, '{outcome}', '"blocked"'))::json, outcome = 'blocked' WHERE id = 'event_b2'`,
				`UPDATE trovesnap.plugin_events SET event_hash = trovesnap.audit_chain_hash(body, prev_hash) WHERE id = 'event_b2'`}
		}, audit.ProblemRewritten, "event_b2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			env, _ := chainFixture(t)
			src := sellerAs(t, env, fixtures.DemoUserID).Audit(demo)
			var saved []domain.ChainHead
			if c.against {
				var err error
				if saved, err = src.ChainHeads(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if rep := verifyAs(t, env, fixtures.DemoUserID, demo, saved); !rep.Intact {
				t.Fatalf("before tampering: %+v", rep.Problems)
			}
			tamper(t, env, c.tamper(t, env)...)
			rep := verifyAs(t, env, fixtures.DemoUserID, demo, saved)
			if rep.Intact || rep.First == nil || rep.First.Kind != c.kind || rep.First.EventID != c.at || len(rep.Problems) != 1 {
				t.Fatalf("after tampering: first %+v; problems %+v; want %s at %s", rep.First, rep.Problems, c.kind, c.at)
			}
			if !errors.Is(rep.Err(), audit.ErrChainBroken) {
				t.Fatalf("report error = %v", rep.Err())
			}
			// The other tenant's chain is untouched.
			if rep := verifyAs(t, env, fixtures.OtherOwnerUserID, fixtures.OtherTenantID, nil); !rep.Intact || rep.Events != 3 {
				t.Fatalf("the other tenant: %+v", rep)
			}
		})
	}
}

// Concurrent appends of one tenant serialise: one chain, no fork, every
// event in it.
func TestAuditChain_ConcurrentAppendsDoNotFork(t *testing.T) {
	env := seeded(t)
	b := eventBackend(t, env)
	const writers, each = 8, 20
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if err := b.SendEvent(ctx, auditEvent(fixtures.DemoTenantID, fmt.Sprintf("w%d-%d", w, i))); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	src := sellerAs(t, env, fixtures.DemoUserID).Audit(fixtures.DemoTenantID)
	src.PageSize = 50 // several pages
	rep, err := audit.Verify(ctx, src, audit.VerifyOptions{})
	if err != nil || !rep.Intact || rep.Events != writers*each {
		t.Fatalf("report %+v, %v", rep, err)
	}
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var links, distinct, genesis int
	if err := conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT prev_hash), count(*) FILTER (WHERE prev_hash = '')
		FROM trovesnap.plugin_events WHERE tenant_id = $1`, fixtures.DemoTenantID).Scan(&links, &distinct, &genesis); err != nil {
		t.Fatal(err)
	}
	if links != writers*each || distinct != links || genesis != 1 {
		t.Fatalf("%d events, %d distinct prev_hash, %d chain starts: the chain forked", links, distinct, genesis)
	}
	// A replayed event id records nothing and leaves the head alone.
	heads, _ := src.ChainHeads(ctx)
	if err := b.SendEvent(ctx, auditEvent(fixtures.DemoTenantID, "w0-0")); err != nil {
		t.Fatal(err)
	}
	if again, err := src.ChainHeads(ctx); err != nil || len(again) != 1 || again[0] != heads[0] {
		t.Fatalf("head after a replay: %+v, %v; before %+v", again, err, heads)
	}
}

// The audit RPCs answer a member with proposal.read on the whole tenant
// only: a non-member, a role without the permission and a sale-scoped
// member are refused, with nothing returned and nothing changed.
func TestAuditChain_SellerRPCsRefuseWhoMayNotRead(t *testing.T) {
	env, _ := chainFixture(t)
	before := counts(t, env)
	for _, c := range []struct {
		user   string
		want   error
		reason string
	}{
		{fixtures.OtherOwnerUserID, domain.ErrPermissionDenied, "tenant_id"},
		{fixtures.CheckoutUserID, domain.ErrPermissionDenied, "proposal.read"},
		{fixtures.ScopedCatalogerUserID, domain.ErrSaleAssignment, ""},
	} {
		src := sellerAs(t, env, c.user).Audit(fixtures.DemoTenantID)
		called := 0
		err := src.ScanChain(ctx, 0, func(domain.ChainRecord) error { called++; return nil })
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.reason) || called != 0 {
			t.Errorf("%s: scan: %v (%d events); want %v %s", c.user, err, called, c.want, c.reason)
		}
		if h, err := src.ChainHeads(ctx); !errors.Is(err, c.want) || h != nil {
			t.Errorf("%s: heads: %v, %v", c.user, h, err)
		}
		if recs, err := src.AuditEvents(ctx, domain.EventQuery{ID: "event_a0"}); !errors.Is(err, c.want) || recs != nil {
			t.Errorf("%s: events: %v, %v", c.user, recs, err)
		}
		// ScanChain asks for the marks first; each page RPC refuses on its
		// own when called directly, and answers nothing of the chain.
		tok := env.Endpoint.UserToken(pgtest.AuthSubject(c.user), time.Hour)
		for _, fn := range []string{"seller_audit_chain", "seller_audit_chain_marks"} {
			st, out := rpcAs(t, env, tok, fn, map[string]any{"p_tenant_id": fixtures.DemoTenantID})
			if st < 400 || strings.Contains(string(out), "event_a0") || strings.Contains(string(out), "sha256:") {
				t.Errorf("%s: %s answered %d: %.200s", c.user, fn, st, out)
			}
		}
	}
	// And the owner reads both: the refusals above are the permission's.
	tok := env.Endpoint.UserToken(pgtest.AuthSubject(fixtures.DemoUserID), time.Hour)
	if st, out := rpcAs(t, env, tok, "seller_audit_chain_marks", map[string]any{"p_tenant_id": fixtures.DemoTenantID, "p_every": 2}); st != 200 ||
		!strings.HasPrefix(string(out), "[") || len(string(out)) < 3 {
		t.Errorf("owner: marks answered %d: %s", st, out)
	}
	if st, out := rpcAs(t, env, tok, "seller_audit_chain", map[string]any{"p_tenant_id": fixtures.DemoTenantID}); st != 200 ||
		!strings.Contains(string(out), "event_a0") {
		t.Errorf("owner: chain answered %d: %.200s", st, out)
	}
	sameCounts(t, env, before, "refused audit reads")
}

// Events recorded before the migration are chained by it, per tenant in
// seq order: on a fresh cluster with every earlier migration applied and
// events recorded, applying it leaves chains that verify from the first
// event (no legacy rows).
func TestAuditChain_MigrationChainsEarlierEvents(t *testing.T) {
	pgtest.Need(t)
	c, err := pgtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	conn, err := c.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, pgtest.Bootstrap); err != nil {
		t.Fatal(err)
	}
	files, err := pgtest.MigrationFiles()
	if err != nil {
		t.Fatal(err)
	}
	apply := func(f string) {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error { _, err := tx.Exec(ctx, string(body)); return err }); err != nil {
			t.Fatalf("%s: %v", filepath.Base(f), err)
		}
	}
	const mine = "20261201121700_trovesnap_audit_chain.sql"
	var rest []string
	for i, f := range files {
		if filepath.Base(f) == mine {
			rest = files[i:]
			break
		}
		apply(f)
	}
	if len(rest) == 0 {
		t.Fatal("the audit chain migration is not among the files")
	}
	// Events of two tenants, interleaved, recorded by the old record_event.
	if _, err := conn.Exec(ctx, `INSERT INTO trovesnap.tenants (id, name) VALUES ('tenant_a', 'A'), ('tenant_b', 'B')`); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		ten := []string{"tenant_a", "tenant_b", ""}[i%3]
		ev := auditEvent(ten, fmt.Sprintf("m%d", i))
		if _, err := conn.Exec(ctx, "SELECT trovesnap.record_event($1::jsonb)", mustJSON(ev)); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range rest {
		apply(f)
	}
	rep, err := audit.Verify(ctx, connChain{conn}, audit.VerifyOptions{})
	if err != nil || !rep.Intact || rep.Events != 10 || len(rep.Chains) != 3 {
		t.Fatalf("after the migration: %+v, %v", rep, err)
	}
	for _, ch := range rep.Chains {
		if ch.Legacy != 0 || !ch.Intact {
			t.Fatalf("chain %+v: not chained from its first event", ch)
		}
	}
	// And the chain goes on from there.
	if _, err := conn.Exec(ctx, "SELECT trovesnap.record_event($1::jsonb)", mustJSON(auditEvent("tenant_a", "m10"))); err != nil {
		t.Fatal(err)
	}
	if rep, err := audit.Verify(ctx, connChain{conn}, audit.VerifyOptions{}); err != nil || !rep.Intact || rep.Events != 11 {
		t.Fatalf("after one more event: %+v, %v", rep, err)
	}
}

type connChain struct{ conn *pgx.Conn }

func (c connChain) ScanChain(ctx context.Context, afterSeq int64, fn func(domain.ChainRecord) error) error {
	return scanSuper(ctx, c.conn, afterSeq, fn)
}

// BenchmarkLive_AuditVerify100k measures `audit verify` in live mode: one
// tenant chain of 100,000 events of about 1 KB (recorded by record_event in
// one statement, so the SQL chain computes every hash), read through
// seller_audit_chain in pages, two at a time, and verified by
// audit.Verify. The target is at most 2 s per verification.
func BenchmarkLive_AuditVerify100k(b *testing.B) {
	const n = 100000
	env := seeded(b)
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	start := time.Now()
	if _, err := conn.Exec(ctx, `SELECT count(trovesnap.record_event($1::jsonb || jsonb_build_object('id', 'event_bv' || g,
		'correlation_id', 'corr_bv' || g, 'request_id', 'req_bv' || g, 'server_request_id', 'sreq_bv' || g)))
		FROM generate_series(1, $2::integer) g`, mustJSON(auditEvent(fixtures.DemoTenantID, "bench")), n); err != nil {
		b.Fatal(err)
	}
	b.Logf("recorded %d chained events in %v", n, time.Since(start).Round(time.Millisecond))
	// A chain is verified long after its rows were written, when autovacuum
	// has long set their hint bits and visibility: the first read of a
	// freshly bulk-written table would otherwise rewrite every page. A
	// VACUUM right after the insert may mark no page all-visible (an
	// auto-analyze that began during the insert still holds its
	// snapshot): it is run again until every page is.
	for try := 0; ; try++ {
		var visible, pages int64
		if _, err := conn.Exec(ctx, "VACUUM ANALYZE trovesnap.plugin_events"); err != nil {
			b.Fatal(err)
		}
		if err := conn.QueryRow(ctx, "SELECT relallvisible, relpages FROM pg_class WHERE oid = 'trovesnap.plugin_events'::regclass").Scan(&visible, &pages); err != nil {
			b.Fatal(err)
		}
		if visible >= pages {
			break
		}
		if try == 20 {
			b.Fatalf("after 20 VACUUMs %d of %d pages are all-visible", visible, pages)
		}
		time.Sleep(250 * time.Millisecond)
	}
	src := sellerAs(b, env, fixtures.DemoUserID).Audit(fixtures.DemoTenantID)
	for b.Loop() {
		rep, err := audit.Verify(ctx, src, audit.VerifyOptions{})
		if err != nil || !rep.Intact || rep.Events != n {
			b.Fatalf("report %+v, %v", rep.Chains, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/verify")
}

// A chain page is planned with its arguments (migration 37): plpgsql
// otherwise kept one generic plan after five calls, which walked the chain
// from the tenant's first event to every page (13,536 rows fetched here
// for 3,000 events). A trace, too, reads only its own events. Counted in
// the rows the calls fetch from plugin_events, one session calling each
// RPC ten times. The function sets no plan_cache_mode, which would hold in
// audit_jcs too and plan its recursive queries again for every legacy row.
func TestAuditChain_PagesArePlannedForTheirPage(t *testing.T) {
	const n, calls = 3000, 10
	env := seeded(t)
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `SELECT count(trovesnap.record_event($1::jsonb || jsonb_build_object('id', 'event_pl' || g,
		'correlation_id', 'corr_pl' || (g % 1000))))
		FROM generate_series(1, $2::integer) g`, mustJSON(auditEvent(fixtures.DemoTenantID, "plan")), n); err != nil {
		t.Fatal(err)
	}
	// The reader's pages: where each starts.
	var events int64
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM trovesnap.plugin_events WHERE tenant_id = $1", fixtures.DemoTenantID).Scan(&events); err != nil {
		t.Fatal(err)
	}
	page := events/calls + 1
	var starts []int64
	if err := conn.QueryRow(ctx, `SELECT array_agg(seq ORDER BY seq) FROM (SELECT seq, row_number() OVER (ORDER BY seq) AS k
		FROM trovesnap.plugin_events WHERE tenant_id = $1) e WHERE k % $2 = 0`, fixtures.DemoTenantID, page).Scan(&starts); err != nil {
		t.Fatal(err)
	}
	starts = append([]int64{0}, starts...)
	if _, err := conn.Exec(ctx, "ANALYZE trovesnap.plugin_events"); err != nil {
		t.Fatal(err)
	}
	var config string
	if err := conn.QueryRow(ctx, `SELECT array_to_string(proconfig, ',') FROM pg_proc WHERE oid = 'public.seller_audit_chain'::regproc`).Scan(&config); err != nil ||
		config != "search_path=pg_catalog, pg_temp" {
		t.Fatalf("seller_audit_chain settings %q, %v", config, err)
	}
	for _, c := range []struct {
		name, call string
		arg        func(i int) any
		want       int64 // events the calls answer
		most       int64 // rows the calls fetch, each planned for its arguments
	}{
		{"the chain read in pages", "SELECT json_array_length(public.seller_audit_chain($1, $2, " + strconv.FormatInt(page, 10) + ") -> 'seq')",
			func(i int) any { return starts[i] }, events, events + calls},
		{"a trace by correlation id", "SELECT json_array_length(public.seller_audit_events($1, p_correlation_id => $2))",
			func(i int) any { return fmt.Sprintf("corr_pl%d", i) }, calls * 3, calls * 4},
	} {
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, `SELECT set_config('request.jwt.claims', $1, true)`,
			mustJSON(map[string]string{"role": "authenticated", "sub": pgtest.AuthSubject(fixtures.DemoUserID)})); err != nil {
			t.Fatal(err)
		}
		// An index scan counts the rows it fetches on the index; the
		// session's counts are read before and after the calls.
		fetchedSoFar := func() int64 {
			var f int64
			if err := tx.QueryRow(ctx, `SELECT sum(pg_stat_get_xact_tuples_fetched(indexrelid))::bigint FROM pg_index
				WHERE indrelid = 'trovesnap.plugin_events'::regclass`).Scan(&f); err != nil {
				t.Fatal(err)
			}
			return f
		}
		before := fetchedSoFar()
		var answered int64
		for i := range calls {
			var got int64
			if err := tx.QueryRow(ctx, c.call, fixtures.DemoTenantID, c.arg(i)).Scan(&got); err != nil {
				t.Fatalf("%s, call %d: %v", c.name, i, err)
			}
			answered += got
		}
		fetched := fetchedSoFar() - before
		_ = tx.Rollback(ctx)
		if answered != c.want || fetched > c.most {
			t.Errorf("%s: %d calls answered %d events (want %d) and fetched %d rows of plugin_events, want at most %d",
				c.name, calls, answered, c.want, fetched, c.most)
		}
	}
}

// A row recorded since migration 36 keeps its text: emptying it (so that
// the row would be read as a legacy one, from its jsonb body) or editing
// only the jsonb body is refused by a CHECK, and nothing changes. An event
// whose time is not RFC 3339 is refused when recorded, so no event can
// stand in the chain as "modified" and hide the problems after it.
func TestAuditChain_TextIsKeptAndTimesAreRFC3339(t *testing.T) {
	env, _ := chainFixture(t)
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var before string
	if err := conn.QueryRow(ctx, `SELECT string_agg(md5(e::text), ',' ORDER BY seq) FROM trovesnap.plugin_events e`).Scan(&before); err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		`UPDATE trovesnap.plugin_events SET body_jcs = NULL WHERE id = 'event_a1'`,
		`UPDATE trovesnap.plugin_events SET body = jsonb_set(body, '{outcome}', '"failed"') WHERE id = 'event_a1'`,
	} {
		_, err := conn.Exec(ctx, "SET session_replication_role = replica; "+stmt)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "23514" {
			t.Errorf("%s: %v, want a check_violation", stmt, err)
		}
	}
	for _, at := range []string{"epoch", "infinity", "2026-12-02 01:00:00+00", "2026-12-02t01:00:00z", "2026-12-02T01:00:60Z"} {
		ev := auditEvent(fixtures.DemoTenantID, "bad_time")
		body := strings.Replace(mustJSON(ev), `"occurred_at":"`+ev.OccurredAt.Format(time.RFC3339Nano)+`"`, `"occurred_at":"`+at+`"`, 1)
		if !strings.Contains(body, at) {
			t.Fatalf("the body names no time to replace: %s", body)
		}
		_, err := conn.Exec(ctx, "SELECT trovesnap.record_event($1::jsonb)", body)
		if err == nil || !strings.Contains(err.Error(), "invalid_input:event") {
			t.Errorf("occurred_at %q: %v, want invalid_input:event", at, err)
		}
	}
	var after string
	if err := conn.QueryRow(ctx, `SELECT string_agg(md5(e::text), ',' ORDER BY seq) FROM trovesnap.plugin_events e`).Scan(&after); err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Fatal("a refused statement changed the events")
	}
	if rep := verifyAs(t, env, fixtures.DemoUserID, fixtures.DemoTenantID, nil); !rep.Intact {
		t.Fatalf("after the refusals: %+v", rep.Problems)
	}
}

// SQL writes every double as Go does, from seeded random ones: short
// decimals times large powers of ten (where a shortest form can be an end
// of the rounding interval) and random bit patterns.
func TestAuditChain_SQLNumbersAreGos(t *testing.T) {
	env := pgtest.Need(t)
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	r := rand.New(rand.NewPCG(15, 36))
	var nums []string
	for range 1500 {
		nums = append(nums, fmt.Sprintf("%de%d", r.IntN(100000), r.IntN(300)))
	}
	for len(nums) < 3000 {
		f := math.Float64frombits(r.Uint64())
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		nums = append(nums, strconv.FormatFloat(f, 'g', -1, 64))
	}
	in := "[" + strings.Join(nums, ",") + "]"
	want, err := domain.CanonicalJSON([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	var got string
	if err := conn.QueryRow(ctx, "SELECT trovesnap.audit_jcs($1::jsonb)", in).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		g, w := strings.Split(strings.Trim(got, "[]"), ","), strings.Split(strings.Trim(string(want), "[]"), ",")
		for i := range min(len(g), len(w)) {
			if g[i] != w[i] {
				t.Errorf("%s: SQL %s, Go %s", nums[i], g[i], w[i])
			}
		}
	}
}

// A scan cancelled while it verifies returns the cancellation at the next
// page, having passed on no event after it; it never waits for a page the
// planner, stopped by the same cancellation, will not read.
func TestAuditChain_CancelledScanStopsAtTheNextPage(t *testing.T) {
	env := seeded(t)
	b := eventBackend(t, env)
	sendEvents(t, b, fixtures.DemoTenantID, "cancel", 40)
	src := sellerAs(t, env, fixtures.DemoUserID).Audit(fixtures.DemoTenantID)
	src.PageSize = 5 // eight pages and more; three read ahead
	for _, at := range []int{1, 5, 12} {
		scan, cancel := context.WithCancel(ctx)
		seen := 0
		done := make(chan error, 1)
		go func() {
			done <- src.ScanChain(scan, 0, func(domain.ChainRecord) error {
				if seen++; seen == at {
					cancel()
				}
				return nil
			})
		}()
		select {
		case err := <-done:
			// The page of the at-th event is finished, nothing after it.
			if want := (at + src.PageSize - 1) / src.PageSize * src.PageSize; !errors.Is(err, context.Canceled) || seen != want {
				t.Errorf("cancelled at event %d: %v after %d events, want context.Canceled after %d", at, err, seen, want)
			}
		case <-time.After(time.Minute):
			t.Fatalf("cancelled at event %d: the scan did not return", at)
		}
		cancel()
	}
}
