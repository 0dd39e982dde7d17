package gate

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// Counting a read with its event (issue 18). A read used to commit twice:
// its rate count in one write transaction before the domain call, its
// plugin_event in another after it. With a Backend that is an eventCounter
// (the embedded store) a read is counted in the transaction that records
// its event instead:
//
//   - The count and the event commit together or not at all, so the limit
//     stays exact across processes sharing the file, and a read that was
//     counted is always audited.
//   - Over the limit nothing is committed with the read: the read's data is
//     withheld and the call ends rate_limited, its refusal recorded as any
//     other ("no audit, no data" holds: the data is released only after
//     the transaction holding its event commits).
//   - A read refused after it would have been counted (not found, invalid
//     reference) is counted with its refusal event, as before.
//
// What this changes is when an over-limit read is refused: after the read
// instead of before it. So that a caller past its limit cannot make the
// server read for it, a process lets at most ONE read per client and class
// at a time take this path (concurrent ones are counted before they run:
// the attack review had 50 concurrent reads past a limit of 5 run several
// refused reads), and it remembers each window it saw full until that
// window ends (fullWindows): its reads are counted before they run again,
// the way a Backend without eventCounter always counts them. Both only
// ever choose the stricter, older path; a process runs at most one read a
// window that it then refuses, and forgetting (restart, eviction) costs one
// read, never a limit.

// A persisted write on a Backend that is also a writeCounter is counted the
// same way: inside the transaction that commits the write and its event
// (WriteMeta.RateClass), first, so a write past the limit does no work. A
// write refused before it reaches that transaction (an idempotency
// conflict, a missing approval) or whose transaction rolled back (an
// unknown reference) is counted with its refusal event instead, so every
// call past the limits step is counted in its class exactly once, as
// before.

// writeCounter is a Backend that counts a persisted write in
// WriteMeta.RateClass inside the write's transaction, refusing it with
// *domain.RateLimitError when the window is full.
type writeCounter interface {
	CountsRateInWrite() bool
}

// countsInWrite reports whether this call is a persisted write the Backend
// counts in its own transaction.
func (c *call) countsInWrite() bool {
	if !c.tool.Persists {
		return false
	}
	wc, ok := c.g.b.(writeCounter)
	_, ec := c.g.b.(eventCounter)
	return ok && ec && wc.CountsRateInWrite()
}

// eventCounter is a Backend that counts a call in its limit class in the
// transaction that records the call's event, and records nothing when the
// window is full (Allowed false, no error).
type eventCounter interface {
	AppendEventCounted(ctx context.Context, ev domain.Event, p domain.Principal, class string) (domain.RateDecision, error)
}

// countsWithEvent reports whether this call's count can wait for its event:
// a read (its event is appended after it, never committed with a write) on
// a Backend that counts with events, for a client whose window this
// process has not seen full.
func (c *call) countsWithEvent() bool {
	if c.tool.Persists {
		return false
	}
	if _, ok := c.g.b.(eventCounter); !ok {
		return false
	}
	key := fullKey(c.p, limitClass(c.tool.Tier))
	if !c.g.full.take(key, c.g.clock.Now()) {
		return false
	}
	c.foldKey = key
	return true
}

// releaseFold gives back the call's place on the count-with-event path.
func (c *call) releaseFold() {
	if c.foldKey != "" {
		c.g.full.give(c.foldKey)
		c.foldKey = ""
	}
}

// appendCounted records ev and counts the call with it (countAtEvent).
// Over the limit it returns the rate_limited failure the call ends with.
func (c *call) appendCounted(ctx context.Context, ev domain.Event) (*failure, error) {
	c.countAtEvent = false
	class := limitClass(c.tool.Tier)
	actx, cancel := auditContext(ctx)
	defer cancel()
	rd, err := c.g.b.(eventCounter).AppendEventCounted(actx, ev, c.p, class)
	if err != nil {
		return nil, err
	}
	if !rd.Allowed {
		c.g.full.mark(fullKey(c.p, class), c.g.clock.Now(), rd.RetryAfterSeconds)
		return rateLimited(rd), nil
	}
	return nil, nil
}

// rateLimited is the failure of a call over its limit class.
func rateLimited(rd domain.RateDecision) *failure {
	return rateLimitedIn(rd.Class, rd.Limit, rd.RetryAfterSeconds)
}

// rateLimitedIn is the failure of a call over the limit of class, whoever
// counted it (this gate, or a Backend that counts in the call).
func rateLimitedIn(class string, limit, retryAfter int) *failure {
	return &failure{code: CodeRateLimited, retryAfter: retryAfter,
		message: fmt.Sprintf("Rate limit of %d %s calls per minute reached for this client: retry in %d s.", limit, class, retryAfter)}
}

// fullWindows remembers the limit windows this process saw full, until they
// end, and which keys have a read on the count-with-event path now. It
// holds at most maxFullWindows remembered windows (one per client and class
// in practice); past that it starts over, which only forgets. A key is in
// inflight only while its call runs.
type fullWindows struct {
	mu       sync.Mutex
	until    map[string]time.Time
	inflight map[string]bool
}

const maxFullWindows = 4096

// fullKey is the store's rate bucket and the class. Client ids are minted
// ids and classes a fixed set: no key can be spelled two ways.
func fullKey(p domain.Principal, class string) string {
	return domain.RateBucket(p) + "\x00" + class
}

// take gives key the count-with-event path if its window was not seen full
// and no other read of it is on the path.
func (f *fullWindows) take(key string, now time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if until, ok := f.until[key]; ok && now.Before(until) {
		return false
	}
	if f.inflight[key] {
		return false
	}
	if f.inflight == nil {
		f.inflight = map[string]bool{}
	}
	f.inflight[key] = true
	return true
}

func (f *fullWindows) give(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.inflight, key)
}

func (f *fullWindows) mark(key string, now time.Time, retryAfter int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.until == nil || len(f.until) >= maxFullWindows {
		f.until = map[string]time.Time{}
	}
	f.until[key] = now.Add(time.Duration(retryAfter) * time.Second)
}
