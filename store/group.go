package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Group commit (issue 18). Every write transaction of a process goes to the
// one writer connection; under concurrent calls (several requests in flight
// on one session, the HTTP transport's sessions) each used to wait for the
// others' BEGIN … COMMIT in turn. Now the calls that arrive while a
// transaction is open wait together, and the next transaction runs all of
// them, each function inside its own savepoint, and commits once.
//
// What each caller is promised does not change:
//
//   - withTx returns only after the COMMIT that holds fn's writes (or after
//     they were rolled back): an answer is never released before its own
//     event is durable.
//   - The effect is that of the calls running one after another in the
//     group's order: a function sees what the functions before it wrote,
//     and a function that fails (or panics) is rolled back to its savepoint
//     and leaves no trace.
//   - If the shared transaction cannot commit, or SQLite abandoned it (a
//     full disk rolls the whole transaction back), every caller in it gets
//     the error: nothing is reported written that is not.
//   - A lone call runs exactly as before: BEGIN IMMEDIATE, fn, COMMIT, on
//     its own context.
//
// There is no goroutine of its own: the first caller to find no
// transaction running leads, runs the pending group, and hands the lead to
// the oldest caller still waiting, so no caller serves others for longer
// than one group.

// maxGroup bounds the functions one transaction runs, so one COMMIT never
// waits behind an unbounded queue.
const maxGroup = 32

type groupCommit struct {
	mu      sync.Mutex
	pending []*groupJob
	running bool // a leader holds the writer

	groups atomic.Int64 // shared transactions run (two calls or more), for tests and figures
}

type groupJob struct {
	ctx context.Context
	fn  func(*sql.Tx) error

	lead chan struct{} // closed when this job is handed the lead
	done chan struct{} // closed when err/panicked are final

	err      error
	panicked any
}

// run is withTx: it queues fn and returns its result once its group has
// committed or rolled back.
func (g *groupCommit) run(s *Store, ctx context.Context, fn func(*sql.Tx) error) error {
	j := &groupJob{ctx: ctx, fn: fn, lead: make(chan struct{}), done: make(chan struct{})}
	g.mu.Lock()
	g.pending = append(g.pending, j)
	leading := !g.running
	g.running = true
	g.mu.Unlock()
	if !leading {
		// A follower waits for its group's result, or for the lead. A
		// follower whose context ends before a group took it leaves the
		// queue and returns; once taken, it waits for the group's result:
		// its function may already be inside an open transaction, and the
		// caller must not answer before knowing whether it committed.
		select {
		case <-j.done:
			return j.result()
		case <-j.lead:
		case <-ctx.Done():
			if err, left := g.leave(j, ctx); left {
				return s.dbErr("begin", err)
			}
			select {
			case <-j.done:
				return j.result()
			case <-j.lead:
			}
		}
	}
	for {
		g.mu.Lock()
		n := min(len(g.pending), maxGroup)
		batch := g.pending[:n:n]
		g.pending = g.pending[n:]
		g.mu.Unlock()
		s.commitGroup(batch)
		mine := false
		for _, b := range batch {
			if b == j {
				mine = true
			} else {
				close(b.done)
			}
		}
		if !mine {
			continue // j was queued behind the first maxGroup: it leads on
		}
		g.mu.Lock()
		if len(g.pending) == 0 {
			g.running = false
		} else {
			close(g.pending[0].lead) // the oldest waiting caller leads next
		}
		g.mu.Unlock()
		return j.result()
	}
}

// leave takes j out of the queue if no group took it and it was not handed
// the lead (then it must lead: nobody else will).
func (g *groupCommit) leave(j *groupJob, ctx context.Context) (error, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	i := slices.Index(g.pending, j)
	if i < 0 {
		return nil, false
	}
	select {
	case <-j.lead:
		return nil, false
	default:
	}
	g.pending = slices.Delete(g.pending, i, i+1)
	return ctx.Err(), true
}

func (j *groupJob) result() error {
	if j.panicked != nil {
		panic(j.panicked)
	}
	return j.err
}

// commitGroup runs batch in one transaction (a lone job in its own, on its
// own context) and sets every job's result. It never closes done: run does,
// after the lead is settled.
func (s *Store) commitGroup(batch []*groupJob) {
	// A job whose context may end soon runs alone: modernc interrupts a
	// statement when its context ends, and SQLite then rolls back the whole
	// transaction, which would fail every other caller in the group.
	shared := batch[:0:0]
	for _, j := range batch {
		if groupable(j.ctx) {
			shared = append(shared, j)
		} else {
			s.commitGroup1(j)
		}
	}
	switch len(shared) {
	case 0:
		return
	case 1:
		s.commitGroup1(shared[0])
		return
	}
	batch = shared
	failAll := func(err error) {
		for _, j := range batch {
			if j.err == nil {
				j.err = err
			}
		}
	}
	s.group.groups.Add(1)
	// The shared transaction is not any one caller's: a caller that goes
	// away must not roll back the others' work.
	tx, err := s.w.BeginTx(context.Background(), nil)
	if err != nil {
		failAll(s.dbErr("begin", err))
		return
	}
	for _, j := range batch {
		if _, err := tx.ExecContext(context.Background(), "SAVEPOINT call"); err != nil {
			_ = tx.Rollback()
			failAll(s.dbErr("savepoint", err))
			return
		}
		if err := j.ctx.Err(); err != nil {
			// Gone before its turn: run nothing for it.
			j.err = s.dbErr("begin", err)
		} else {
			j.err, j.panicked = catch(func() error { return j.fn(tx) })
		}
		if j.err == nil && j.panicked == nil {
			_, err = tx.ExecContext(context.Background(), "RELEASE call")
		} else if _, err = tx.ExecContext(context.Background(), "ROLLBACK TO call"); err == nil {
			_, err = tx.ExecContext(context.Background(), "RELEASE call")
		}
		if err != nil {
			// SQLite ended the transaction under us (an I/O error or a full
			// disk rolls it back whole): what the group wrote is gone.
			_ = tx.Rollback()
			failAll(s.dbErr("savepoint", err))
			return
		}
	}
	if err := tx.Commit(); err != nil {
		failAll(s.dbErr("commit", err))
	}
}

// commitGroup1 runs one job alone, on its own context.
func (s *Store) commitGroup1(j *groupJob) {
	j.err, j.panicked = catch(func() error { return s.withSoloTx(j.ctx, j.fn) })
}

// groupMinDeadline is how far a context's deadline must be for its job to
// share a transaction: well past SQLite's busy timeout, so that a group
// waiting for the lock, or one long function, cannot outlast it.
const groupMinDeadline = 4 * busyTimeoutMS * time.Millisecond

// groupable reports whether a job on ctx may share a transaction: its
// context cannot end, or has a deadline far enough away. The gate's writes
// are detached from the request (their contexts cannot end) and its audit
// writes are bounded by 30 s; a caller's cancellable context carries no
// deadline or a short one, and runs alone. (A context both cancellable and
// given a far deadline would be grouped: no caller passes one.)
func groupable(ctx context.Context) bool {
	if ctx.Done() == nil {
		return true
	}
	d, ok := ctx.Deadline()
	return ok && time.Until(d) > groupMinDeadline && ctx.Err() == nil
}

// catch runs fn and returns its error, or the value it panicked with (its
// error is then set too, so no caller can take a panic for success).
func catch(fn func() error) (err error, panicked any) {
	defer func() {
		if p := recover(); p != nil {
			panicked = p
			err = fmt.Errorf("store: transaction function panicked: %w", errPanicked)
		}
	}()
	return fn(), nil
}

var errPanicked = errors.New("panic")
