package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/triunalabs/trovesnap/internal/audit"
	"github.com/triunalabs/trovesnap/internal/domain"
)

// holdLeader runs a transaction that holds the writer until n more calls
// are waiting, so the next transaction groups exactly those n (run hands
// the lead to the oldest, who takes all of them). It returns when the
// holding transaction has committed.
func holdLeader(t *testing.T, s *Store, n int) (release func()) {
	t.Helper()
	started := make(chan struct{})
	finished := make(chan error, 1)
	go func() {
		finished <- s.withTx(context.Background(), func(*sql.Tx) error {
			close(started)
			deadline := time.Now().Add(10 * time.Second)
			for time.Now().Before(deadline) {
				s.group.mu.Lock()
				waiting := len(s.group.pending)
				s.group.mu.Unlock()
				if waiting >= n {
					return nil
				}
				time.Sleep(time.Millisecond)
			}
			return errors.New("the other calls never queued")
		})
	}()
	<-started
	return func() {
		if err := <-finished; err != nil {
			t.Error(err)
		}
	}
}

// counterRow is a real table with no foreign keys: each call of the tests
// below writes one row, named by its bucket.
func insertCounter(ctx context.Context, tx *sql.Tx, bucket string) error {
	_, err := tx.ExecContext(ctx, "INSERT INTO rate_counters (bucket, class, window_start, count) VALUES (?, 'read', 0, 1)", bucket)
	return err
}

func counterBuckets(t *testing.T, s *Store) map[string]bool {
	t.Helper()
	rows, err := s.r.Query("SELECT bucket FROM rate_counters WHERE window_start = 0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rows.Close() }()
	out := map[string]bool{}
	for rows.Next() {
		var b string
		if err := rows.Scan(&b); err != nil {
			t.Fatal(err)
		}
		out[b] = true
	}
	return out
}

// TestGroupCommit_FailureLeavesNoTraceAndOthersCommit: seven calls share a
// transaction; the ones that fail (an error, a panic) are rolled back alone,
// the others commit, and every caller gets its own result. A call whose
// context ended while it queued leaves the queue without running.
func TestGroupCommit_FailureLeavesNoTraceAndOthersCommit(t *testing.T) {
	s := openTest(t)
	release := holdLeader(t, s, 7)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	gone := s.withTx(cancelled, func(tx *sql.Tx) error { return insertCounter(cancelled, tx, "call_gone") })
	if !errors.Is(gone, domain.ErrUnavailable) || !errors.Is(gone, context.Canceled) {
		t.Errorf("cancelled call: %v, want unavailable wrapping context.Canceled", gone)
	}
	errFn := errors.New("this call's own failure")
	type result struct {
		err      error
		panicked any
	}
	results := make([]result, 7)
	var wg sync.WaitGroup
	for i := range 7 {
		wg.Go(func() {
			defer func() { results[i].panicked = recover() }()
			ctx := context.Background()
			results[i].err = s.withTx(ctx, func(tx *sql.Tx) error {
				if err := insertCounter(ctx, tx, fmt.Sprintf("call_%d", i)); err != nil {
					return err
				}
				switch i {
				case 1:
					return errFn
				case 3:
					panic("call 3 panics after its write")
				}
				return nil
			})
		})
	}
	release()
	wg.Wait()
	if got := s.group.groups.Load(); got != 1 {
		t.Fatalf("the seven calls ran in %d shared transactions, want 1", got)
	}
	want := map[string]bool{"call_0": true, "call_2": true, "call_4": true, "call_5": true, "call_6": true}
	if got := counterBuckets(t, s); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("rows after the group = %v, want %v", got, want)
	}
	for i, r := range results {
		switch i {
		case 1:
			if !errors.Is(r.err, errFn) || r.panicked != nil {
				t.Errorf("call 1: %v %v, want its own error", r.err, r.panicked)
			}
		case 3:
			if r.panicked != "call 3 panics after its write" {
				t.Errorf("call 3: panic %v, want its own panic in its own goroutine", r.panicked)
			}
		default:
			if r.err != nil || r.panicked != nil {
				t.Errorf("call %d: %v %v, want success", i, r.err, r.panicked)
			}
		}
	}
}

// TestGroupCommit_CancellableCallRunsAlone: a call whose context can be
// cancelled does not share a transaction. Cancelled in the middle of a long
// write, SQLite rolls its whole transaction back — only its own: the calls
// queued with it commit (found by the attack review: grouped, they failed).
func TestGroupCommit_CancellableCallRunsAlone(t *testing.T) {
	s := openTest(t)
	release := holdLeader(t, s, 3)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() {
			ctx, cancel := context.Background(), context.CancelFunc(func() {})
			if i == 1 {
				ctx, cancel = context.WithCancel(ctx)
			}
			defer cancel()
			errs[i] = s.withTx(ctx, func(tx *sql.Tx) error {
				if err := insertCounter(ctx, tx, fmt.Sprintf("call_%d", i)); err != nil {
					return err
				}
				if i != 1 {
					return nil
				}
				time.AfterFunc(30*time.Millisecond, cancel)
				_, err := tx.ExecContext(ctx, `WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM n WHERE x < 50000000)
					INSERT INTO rate_counters (bucket, class, window_start, count) SELECT 'big_'||x, 'read', 1, 1 FROM n`)
				return err
			})
		})
	}
	release()
	wg.Wait()
	if errs[0] != nil || errs[2] != nil {
		t.Fatalf("the calls queued with a cancelled one failed: %v, %v", errs[0], errs[2])
	}
	if !errors.Is(errs[1], context.Canceled) {
		t.Fatalf("the cancelled call: %v, want its cancellation", errs[1])
	}
	got := counterBuckets(t, s)
	if !got["call_0"] || !got["call_2"] || got["call_1"] {
		t.Fatalf("rows: %v, want call_0 and call_2 only", got)
	}
	var big int
	if err := s.r.QueryRow("SELECT count(*) FROM rate_counters WHERE window_start = 1").Scan(&big); err != nil || big != 0 {
		t.Fatalf("the interrupted write left %d rows (%v)", big, err)
	}
}

// TestGroupCommit_QueuedCallHonoursItsDeadline: a call queued behind a long
// transaction returns at its deadline, having run nothing; a withTx nested
// inside a function (forbidden: it waits for its own caller) gets out the
// same way instead of wedging the writer.
func TestGroupCommit_QueuedCallHonoursItsDeadline(t *testing.T) {
	s := openTest(t)
	hold := make(chan struct{})
	held := make(chan error, 1)
	go func() {
		held <- s.withTx(context.Background(), func(tx *sql.Tx) error {
			<-hold
			return insertCounter(context.Background(), tx, "holder")
		})
	}()
	for {
		s.group.mu.Lock()
		running := s.group.running
		s.group.mu.Unlock()
		if running {
			break
		}
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := s.withTx(ctx, func(tx *sql.Tx) error { return insertCounter(ctx, tx, "queued") })
	if waited := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || waited > 2*time.Second {
		t.Fatalf("queued call: %v after %v, want its deadline", err, waited)
	}
	close(hold)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	nested := s.withTx(context.Background(), func(*sql.Tx) error {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		return s.withTx(ctx, func(tx *sql.Tx) error { return insertCounter(ctx, tx, "nested") })
	})
	if !errors.Is(nested, context.DeadlineExceeded) {
		t.Fatalf("nested withTx: %v, want its deadline", nested)
	}
	if got := counterBuckets(t, s); fmt.Sprint(got) != fmt.Sprint(map[string]bool{"holder": true}) {
		t.Fatalf("rows: %v, want only the holder's", got)
	}
	// The writer still works.
	if err := s.withTx(context.Background(), func(tx *sql.Tx) error { return insertCounter(context.Background(), tx, "after") }); err != nil {
		t.Fatal(err)
	}
}

// TestGroupCommit_AbandonedTransactionFailsEveryCaller: when SQLite ends the
// shared transaction under the group (here a function rolls it back, as a
// full disk would), no caller is told it succeeded and nothing is written —
// not even what the functions before it wrote and released.
func TestGroupCommit_AbandonedTransactionFailsEveryCaller(t *testing.T) {
	s := openTest(t)
	before := mustCounts(t, s)
	release := holdLeader(t, s, 4)
	errs := make([]error, 4)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			ctx := context.Background()
			errs[i] = s.withTx(ctx, func(tx *sql.Tx) error {
				if err := insertCounter(ctx, tx, fmt.Sprintf("call_%d", i)); err != nil {
					return err
				}
				if i == 2 {
					_, err := tx.ExecContext(ctx, "ROLLBACK")
					return err
				}
				return nil
			})
		})
	}
	release()
	wg.Wait()
	for i, err := range errs {
		if !errors.Is(err, domain.ErrUnavailable) {
			t.Errorf("call %d: %v, want unavailable", i, err)
		}
	}
	if got := counterBuckets(t, s); len(got) != 0 {
		t.Errorf("rows after the abandoned group: %v, want none", got)
	}
	if after := mustCounts(t, s); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("table counts moved: %v → %v", before, after)
	}
	// The writer is usable again.
	if err := s.withTx(context.Background(), func(tx *sql.Tx) error { return insertCounter(context.Background(), tx, "after") }); err != nil {
		t.Fatal(err)
	}
	if got := counterBuckets(t, s); !got["after"] || len(got) != 1 {
		t.Fatalf("rows after the next call: %v", got)
	}
}

// TestGroupCommit_ConcurrentEventsKeepTheChain: 200 events appended by 16
// goroutines into three tenant chains. Every call returns only after its
// event is committed (each is readable when its call returns), the events
// were grouped, and `audit verify` finds every chain intact.
func TestGroupCommit_ConcurrentEventsKeepTheChain(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	tenants := []string{tenantA, tenantB, ""}
	base := s.group.groups.Load()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < 200; i += 16 {
				e := benchEvent(i, tenants[i%3])
				if err := s.AppendEvent(ctx, e); err != nil {
					mu.Lock()
					failures = append(failures, err.Error())
					mu.Unlock()
					return
				}
				var n int
				if err := s.r.QueryRow("SELECT count(*) FROM plugin_events WHERE id = ?", e.ID).Scan(&n); err != nil || n != 1 {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("%s not committed when its call returned (%d, %v)", e.ID, n, err))
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if len(failures) > 0 {
		t.Fatal(failures)
	}
	rep, err := audit.Verify(ctx, s, audit.VerifyOptions{})
	if err != nil || !rep.Intact {
		t.Fatalf("verify: %v %+v", err, rep)
	}
	var n int
	if err := s.r.QueryRow("SELECT count(*) FROM plugin_events WHERE id LIKE 'event_b%'").Scan(&n); err != nil || n != 200 {
		t.Fatalf("events: %d %v", n, err)
	}
	t.Logf("200 events in %d shared transactions", s.group.groups.Load()-base)
}

// A window's first count drops the older windows of its bucket and class,
// and only then: the counters hold the current window (and nothing older)
// of each bucket and class that counted in it.
func TestConsumeRate_NewWindowDropsOlderOnes(t *testing.T) {
	ctx := context.Background()
	clock := domain.NewFixedClock(epoch.Truncate(time.Minute).Add(5 * time.Second))
	s := openTest(t, func(o *Options) { o.Clock = clock })
	p := principal(t, s, "")
	rows := func() (n int, oldest int64) {
		t.Helper()
		if err := s.r.QueryRowContext(ctx, "SELECT count(*), ifnull(min(window_start), 0) FROM rate_counters WHERE class = ?",
			domain.LimitReads).Scan(&n, &oldest); err != nil {
			t.Fatal(err)
		}
		return n, oldest
	}
	count := func() {
		t.Helper()
		if d, err := s.ConsumeRate(ctx, p, domain.LimitReads); err != nil || !d.Allowed {
			t.Fatalf("ConsumeRate: %+v %v", d, err)
		}
	}
	count()
	count()
	first := clock.Now().Unix() - clock.Now().Unix()%60
	if n, oldest := rows(); n != 1 || oldest != first {
		t.Fatalf("after two counts in one window: %d rows, oldest %d; want 1, %d", n, oldest, first)
	}
	// Another bucket's old window is not this bucket's to drop.
	other := p
	other.Client.ID = "client_other"
	if _, err := s.ConsumeRate(ctx, other, domain.LimitReads); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Minute)
	count()
	now := clock.Now().Unix() - clock.Now().Unix()%60
	var mine, theirs int
	if err := s.r.QueryRowContext(ctx, `SELECT count(*) FILTER (WHERE bucket = ?), count(*) FILTER (WHERE bucket <> ?)
		FROM rate_counters WHERE class = ?`, domain.RateBucket(p), domain.RateBucket(p), domain.LimitReads).Scan(&mine, &theirs); err != nil {
		t.Fatal(err)
	}
	if mine != 1 || theirs != 1 {
		t.Fatalf("after the new window's first count: %d rows of the bucket (want 1: the new window), %d of another (want 1: untouched)", mine, theirs)
	}
	if n, oldest := rows(); n != 2 || oldest != first {
		t.Fatalf("rows %d oldest %d", n, oldest)
	}
	var cur int
	if err := s.r.QueryRowContext(ctx, "SELECT count FROM rate_counters WHERE bucket = ? AND class = ? AND window_start = ?",
		domain.RateBucket(p), domain.LimitReads, now).Scan(&cur); err != nil || cur != 1 {
		t.Fatalf("the new window's count = %d, %v", cur, err)
	}
}
