package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/triunalabs/trovesnap/internal/domain"
)

func lamp() domain.NewCandidate {
	return domain.NewCandidate{SaleID: saleA1, Title: "Brass <lamp> & shade", Category: "lighting.lamp", Room: "den",
		Condition: "good", Quantity: 2, SuppliedPriceCents: i64(4500), Notes: "from the attic"}
}

func TestCreateCandidate_ChainInOneTx(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	p := principal(t, s, "")
	before := mustDigest(t, s)
	countsBefore := mustCounts(t, s)

	res, out, err := s.CreateCandidate(ctx, p, meta(p, "key-1", "sha256:fp1", "event_1"), lamp())
	if err != nil {
		t.Fatal(err)
	}
	want := domain.CandidateCreated{CandidateID: "candidate_s0001", ReviewStatus: domain.ReviewNeedsReview,
		SourceDescriptorID: "source_s0001", ImportRunID: "run_s0001", SourceRecordID: "record_s0001", SaleID: saleA1}
	if res != want {
		t.Fatalf("result = %+v\nwant     %+v", res, want)
	}
	wantRelated := domain.Related{SourceImportRunIDs: []string{"run_s0001"}, SourceImportRecordIDs: []string{"record_s0001"},
		CandidateIDs: []string{"candidate_s0001"}}.Normalized()
	if out.Replayed || out.OriginalEventID != "event_1" || !relatedEqual(out.Related, wantRelated) {
		t.Fatalf("outcome = %+v", out)
	}

	// Exactly one row in each table of the chain; nothing else changed, and
	// items in particular are untouched.
	after := mustCounts(t, s)
	for _, tb := range []string{"source_descriptors", "import_runs", "source_records", "inventory_candidates", "plugin_events", "idempotency_keys"} {
		if after[tb] != countsBefore[tb]+1 {
			t.Errorf("%s: %d rows, want %d", tb, after[tb], countsBefore[tb]+1)
		}
	}
	changed := diffKeys(before, mustDigest(t, s))
	slices.Sort(changed)
	if want := []string{"idempotency_keys", "import_runs", "inventory_candidates", "plugin_events", "source_descriptors", "source_records", "tenant_usage"}; !slices.Equal(changed, want) {
		t.Fatalf("changed tables = %v; want %v", changed, want)
	}

	// The rows carry provenance, clock and canonical payload.
	cands, err := s.ListCandidates(ctx, p, domain.CandidateQuery{SaleID: saleA1, ReviewStatus: domain.ReviewNeedsReview})
	if err != nil {
		t.Fatal(err)
	}
	c := cands.Rows[len(cands.Rows)-1]
	if c.ID != res.CandidateID || c.Kind != domain.CandidateNewItem || c.Version != 1 || c.Quantity != 2 ||
		c.CreatedByClientID != clientDemo || c.SourceRecordID != res.SourceRecordID || !c.CreatedAt.Equal(epoch) ||
		*c.SuppliedPriceCents != 4500 || c.Title != "Brass <lamp> & shade" {
		t.Fatalf("candidate = %+v", c)
	}
	var payload, hash, kind, status string
	var count int
	if err := s.r.QueryRow("SELECT payload, payload_hash FROM source_records WHERE id = ?", res.SourceRecordID).Scan(&payload, &hash); err != nil {
		t.Fatal(err)
	}
	wantPayload := `{"category":"lighting.lamp","condition":"good","notes":"from the attic","quantity":2,"room":"den","sale_id":"sale_a1","supplied_price_cents":4500,"title":"Brass <lamp> & shade"}`
	sum := sha256.Sum256([]byte(wantPayload))
	if payload != wantPayload || hash != "sha256:"+hex.EncodeToString(sum[:]) {
		t.Fatalf("payload = %s (%s)", payload, hash)
	}
	if err := s.r.QueryRow("SELECT kind, status, record_count FROM import_runs WHERE id = ?", res.ImportRunID).Scan(&kind, &status, &count); err != nil ||
		kind != "mcp" || status != "completed" || count != 1 {
		t.Fatalf("import run = %s %s %d, %v", kind, status, count, err)
	}

	// The event is the gate's, with outcome and related filled by the store.
	evs, err := s.Events(ctx, EventFilter{ServerRequestID: "mcp_req_event_1"})
	if err != nil || len(evs) != 1 {
		t.Fatalf("events = %+v, %v", evs, err)
	}
	if e := evs[0]; e.ID != "event_1" || e.Outcome != domain.OutcomeSuccess || !relatedEqual(e.Related, wantRelated) ||
		!e.OccurredAt.Equal(epoch) || e.Tool.Name != "create_inventory_candidate" || e.Client.ID != clientDemo {
		t.Fatalf("event = %+v", e)
	}

	// The idempotency row keeps the result for replays, for 24 hours.
	var result, created, expires string
	if err := s.r.QueryRow("SELECT result, created_at, expires_at FROM idempotency_keys WHERE key = 'key-1'").Scan(&result, &created, &expires); err != nil {
		t.Fatal(err)
	}
	var sr domain.StoredResult
	if err := json.Unmarshal([]byte(result), &sr); err != nil || sr.EventID != "event_1" || !relatedEqual(sr.Related, wantRelated) {
		t.Fatalf("stored result = %s, %v", result, err)
	}
	if created != ts(epoch) || expires != ts(epoch.Add(24*time.Hour)) {
		t.Fatalf("idempotency window = %s .. %s", created, expires)
	}
}

func relatedEqual(a, b domain.Related) bool {
	ja, _ := json.Marshal(a.Normalized())
	jb, _ := json.Marshal(b.Normalized())
	return string(ja) == string(jb)
}

func TestCreateCandidate_ReusesOneDescriptorPerClient(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	pDemo, pCarol := principal(t, s, ""), principal(t, s, credA2)
	r1, _, err1 := s.CreateCandidate(ctx, pDemo, meta(pDemo, "a", "fa", "event_a"), lamp())
	r2, _, err2 := s.CreateCandidate(ctx, pDemo, meta(pDemo, "b", "fb", "event_b"), lamp())
	r3, _, err3 := s.CreateCandidate(ctx, pCarol, meta(pCarol, "a", "fa", "event_c"), lamp())
	if err := errors.Join(err1, err2, err3); err != nil {
		t.Fatal(err)
	}
	if r1.SourceDescriptorID != r2.SourceDescriptorID || r1.ImportRunID == r2.ImportRunID || r1.CandidateID == r2.CandidateID {
		t.Fatalf("same client: %+v / %+v", r1, r2)
	}
	if r3.SourceDescriptorID == r1.SourceDescriptorID {
		t.Fatalf("another client reused the demo client's descriptor")
	}
	if c := mustCounts(t, s); c["source_descriptors"] != 3 || c["inventory_candidates"] != 4 {
		t.Fatalf("counts = %v", c)
	}
}

func TestCreateCandidate_ReplayWritesNothing(t *testing.T) {
	ctx := context.Background()
	clock := domain.NewFixedClock(epoch)
	s := openTest(t, func(o *Options) { o.Clock = clock })
	p := principal(t, s, "")
	first, out1, err := s.CreateCandidate(ctx, p, meta(p, "key-1", "fp", "event_1"), lamp())
	if err != nil {
		t.Fatal(err)
	}
	before := mustDigest(t, s)
	clock.Advance(23 * time.Hour) // still inside the window

	again, out2, err := s.CreateCandidate(ctx, p, meta(p, "key-1", "fp", "event_2"), lamp())
	if err != nil {
		t.Fatal(err)
	}
	if again != first || !out2.Replayed || out2.OriginalEventID != "event_1" || !relatedEqual(out2.Related, out1.Related) {
		t.Fatalf("replay = %+v %+v; want %+v from event_1", again, out2, first)
	}
	if d := diffKeys(before, mustDigest(t, s)); len(d) != 0 {
		t.Fatalf("a replay wrote to %v", d)
	}
}

func TestCreateCandidate_ConflictWritesNothing(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	p := principal(t, s, "")
	if _, _, err := s.CreateCandidate(ctx, p, meta(p, "key-1", "fp-one", "event_1"), lamp()); err != nil {
		t.Fatal(err)
	}
	before := mustDigest(t, s)
	other := lamp()
	other.Title = "Something else"
	res, out, err := s.CreateCandidate(ctx, p, meta(p, "key-1", "fp-two", "event_2"), other)
	if !errors.Is(err, domain.ErrIdempotencyConflict) {
		t.Fatalf("err = %v; want ErrIdempotencyConflict", err)
	}
	if res != (domain.CandidateCreated{}) || out.Replayed || out.OriginalEventID != "" {
		t.Fatalf("a conflict returned %+v %+v", res, out)
	}
	if d := diffKeys(before, mustDigest(t, s)); len(d) != 0 {
		t.Fatalf("a conflict wrote to %v", d)
	}
	// The same key under another tool major or client is another scope.
	w := meta(p, "key-1", "fp-two", "event_3")
	w.Idem.ToolMajor = 2
	if _, out, err := s.CreateCandidate(ctx, p, w, other); err != nil || out.Replayed {
		t.Fatalf("other tool major: %+v, %v", out, err)
	}
}

func TestCreateCandidate_CrossTenantSaleIsUnknownRef(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	p := principal(t, s, "")
	before := mustDigest(t, s)
	for _, tc := range []struct {
		sale  string
		cross bool
	}{{saleB1, true}, {"sale_nowhere", false}} {
		in := lamp()
		in.SaleID = tc.sale
		_, _, err := s.CreateCandidate(ctx, p, meta(p, "k-"+tc.sale, "fp", "event_"+tc.sale), in)
		var ref *domain.RefError
		if !errors.As(err, &ref) || ref.Field != "sale_id" || ref.ID != tc.sale || ref.CrossTenant != tc.cross {
			t.Fatalf("sale %s: err = %#v; want RefError cross=%v", tc.sale, err, tc.cross)
		}
		if err.Error() != fmt.Sprintf("unknown sale_id %q", tc.sale) {
			t.Fatalf("message %q leaks more than a missing id would", err)
		}
	}
	if d := diffKeys(before, mustDigest(t, s)); len(d) != 0 {
		t.Fatalf("a refused write wrote to %v", d)
	}
}

func TestCreateCandidate_RejectsBadInputAndForeignScope(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	p := principal(t, s, "")
	before := mustDigest(t, s)
	noTitle := lamp()
	noTitle.Title = " "
	foreignScope := meta(p, "k", "fp", "event_x")
	foreignScope.Idem.TenantID = tenantB
	noEvent := meta(p, "k", "fp", "")
	cases := map[string]struct {
		w  domain.WriteMeta
		in domain.NewCandidate
	}{
		"no title":        {meta(p, "k", "fp", "event_x"), noTitle},
		"no key":          {meta(p, "", "fp", "event_x"), lamp()},
		"foreign scope":   {foreignScope, lamp()},
		"no event id":     {noEvent, lamp()},
		"negative amount": {meta(p, "k", "fp", "event_x"), domain.NewCandidate{SaleID: saleA1, Title: "x", SuppliedPriceCents: i64(-1)}},
	}
	for name, tc := range cases {
		if _, _, err := s.CreateCandidate(ctx, p, tc.w, tc.in); !errors.Is(err, domain.ErrInvalidInput) {
			t.Errorf("%s: err = %v; want ErrInvalidInput", name, err)
		}
	}
	if d := diffKeys(before, mustDigest(t, s)); len(d) != 0 {
		t.Fatalf("refused writes wrote to %v", d)
	}
}

// A client suspended after the gate resolved it cannot complete a write.
func TestCreateCandidate_SuspendedClientWritesNothing(t *testing.T) {
	s := openTest(t)
	p := principal(t, s, credA2)
	if _, err := rawDB(t, s.Path()).Exec("UPDATE mcp_clients SET status = 'suspended' WHERE id = ?", clientA2); err != nil {
		t.Fatal(err)
	}
	before := mustDigest(t, s)
	if _, _, err := s.CreateCandidate(context.Background(), p, meta(p, "k", "fp", "event_1"), lamp()); !errors.Is(err, domain.ErrClientSuspended) {
		t.Fatalf("err = %v; want ErrClientSuspended", err)
	}
	if d := diffKeys(before, mustDigest(t, s)); len(d) != 0 {
		t.Fatalf("wrote to %v", d)
	}
}

// If any step fails (here: the event id was already recorded), the whole
// chain rolls back: no descriptor, run, record or candidate without its event
// and idempotency row.
func TestCreateCandidate_FailureRollsBackTheWholeChain(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	p := principal(t, s, "")
	if err := s.AppendEvent(ctx, domain.Event{ID: "event_dup", Outcome: domain.OutcomeBlocked}); err != nil {
		t.Fatal(err)
	}
	before := mustDigest(t, s)
	_, _, err := s.CreateCandidate(ctx, p, meta(p, "k", "fp", "event_dup"), lamp())
	if !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("err = %v; want ErrUnavailable", err)
	}
	if err.Error() != "store: append event: backend unavailable" {
		t.Fatalf("driver text leaked into the error: %q", err)
	}
	if d := diffKeys(before, mustDigest(t, s)); len(d) != 0 {
		t.Fatalf("a failed chain left rows in %v", d)
	}
}

func TestCreateCandidate_ExpiredKeyRunsAgainAndPrunes(t *testing.T) {
	ctx := context.Background()
	clock := domain.NewFixedClock(epoch)
	s := openTest(t, func(o *Options) { o.Clock = clock })
	p := principal(t, s, "")
	r1, _, err := s.CreateCandidate(ctx, p, meta(p, "k", "fp", "event_1"), lamp())
	if err != nil {
		t.Fatal(err)
	}
	if n, err := s.PruneIdempotency(ctx, clock.Now().Add(IdempotencyTTL-time.Nanosecond)); err != nil || n != 0 {
		t.Fatalf("prune before expiry = %d, %v", n, err)
	}
	clock.Advance(IdempotencyTTL)
	r2, out, err := s.CreateCandidate(ctx, p, meta(p, "k", "fp", "event_2"), lamp())
	if err != nil || out.Replayed || r2.CandidateID == r1.CandidateID {
		t.Fatalf("after expiry: %+v %+v, %v; want a new execution", r2, out, err)
	}
	if c := mustCounts(t, s); c["idempotency_keys"] != 1 {
		t.Fatalf("expired row not replaced: %v", c)
	}
	if n, err := s.PruneIdempotency(ctx, clock.Now().Add(IdempotencyTTL)); err != nil || n != 1 {
		t.Fatalf("prune = %d, %v; want 1", n, err)
	}
}

// Two processes (two *Store on one file, each with its own writer) and many
// goroutines retry the same keys at once: each key yields exactly one
// candidate, and every other call replays it.
func TestCreateCandidate_TwoStoresRaceOneCandidatePerKey(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "shared.db")
	// Random ids: two processes with sequential ids would mint the same ones.
	rnd := func(o *Options) { o.IDs = domain.RandomIDs{} }
	stores := []*Store{openAt(t, path, rnd), openAt(t, path, rnd)}
	p := principal(t, stores[0], "")

	const goroutines, keys = 8, 20
	var (
		wg        sync.WaitGroup
		executed  atomic.Int64
		eventSeq  atomic.Int64
		mu        sync.Mutex
		byKey     = map[string]map[string]bool{} // key → candidate ids seen
		firstErr  error
		originals = map[string]string{} // key → event id of the execution
	)
	for si, s := range stores {
		for g := range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := range keys {
					key := fmt.Sprintf("key-%02d", (k+g)%keys) // different goroutines hit keys in different orders
					in := lamp()
					in.Title = "Lamp " + key
					ev := fmt.Sprintf("event_%d", eventSeq.Add(1))
					res, out, err := s.CreateCandidate(ctx, p, meta(p, key, "fp-"+key, ev), in)
					mu.Lock()
					if err != nil && firstErr == nil {
						firstErr = fmt.Errorf("store %d goroutine %d %s: %w", si, g, key, err)
					}
					if err == nil {
						if byKey[key] == nil {
							byKey[key] = map[string]bool{}
						}
						byKey[key][res.CandidateID] = true
						if !out.Replayed {
							executed.Add(1)
							originals[key] = ev
						}
					}
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	if executed.Load() != keys {
		t.Fatalf("%d executions; want exactly %d (one per key)", executed.Load(), keys)
	}
	for key, ids := range byKey {
		if len(ids) != 1 {
			t.Fatalf("%s produced candidates %v", key, ids)
		}
	}
	c := mustCounts(t, stores[1])
	if c["inventory_candidates"] != keys+1 || c["idempotency_keys"] != keys || c["plugin_events"] != keys || c["source_descriptors"] != 2 {
		t.Fatalf("counts = %v", c)
	}
	evs, err := stores[1].Events(ctx, EventFilter{Tool: "create_inventory_candidate"})
	if err != nil || len(evs) != keys {
		t.Fatalf("events = %d, %v", len(evs), err)
	}
	for _, e := range evs {
		if originals[strings.TrimPrefix(e.RequestID, "req_")] != e.ID {
			t.Fatalf("event %s is not the recorded execution of its key", e.ID)
		}
	}
}

// A write given WriteMeta.RateClass is counted in that class inside its own
// transaction, first: with a limit of 2 two writes commit (their count with
// them), and the third is refused with *RateLimitError having written
// nothing at all — not its candidate, not its key, not its event, not a
// count. A write without RateClass is not counted here.
func TestCreateCandidate_RateClassCountedInTheWrite(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	p := principal(t, s, "")
	l := domain.DefaultLimits()
	l.CandidateWritesPerMinute = 2
	if err := s.SetLimits(ctx, p.TenantID, p.Client.ID, l); err != nil {
		t.Fatal(err)
	}
	counted := func(key, event string) domain.WriteMeta {
		w := meta(p, key, "fp-"+key, event)
		w.RateClass = domain.LimitCandidateWrites
		return w
	}
	if _, _, err := s.CreateCandidate(ctx, p, meta(p, "free-1", "fp-free", "event_f1"), lamp()); err != nil {
		t.Fatal(err) // not counted: the limit of 2 is still whole
	}
	for i, k := range []string{"key-1", "key-2"} {
		if _, _, err := s.CreateCandidate(ctx, p, counted(k, fmt.Sprintf("event_%d", i)), lamp()); err != nil {
			t.Fatalf("write %d within the limit: %v", i, err)
		}
	}
	before := mustDigest(t, s)
	_, _, err := s.CreateCandidate(ctx, p, counted("key-3", "event_3"), lamp())
	var rl *domain.RateLimitError
	if !errors.As(err, &rl) || rl.Class != domain.LimitCandidateWrites || rl.Limit != 2 {
		t.Fatalf("the third counted write: %v, want a RateLimitError of 2 candidate writes", err)
	}
	if d := diffKeys(before, mustDigest(t, s)); len(d) != 0 {
		t.Fatalf("the refused write wrote to %v", d)
	}
}
