package gate

import (
	"context"
	"sync"
	"time"
)

// byteBudget is a weighted semaphore of bytes: the gate-wide bound on the
// argument bytes of calls in flight. A request larger than the whole budget
// is admitted alone (the per-tool size limit already bounds it).
type byteBudget struct {
	mu    sync.Mutex
	total int
	used  int
	freed chan struct{} // closed and replaced on every release
}

func newByteBudget(total int) *byteBudget {
	return &byteBudget{total: total, freed: make(chan struct{})}
}

// acquire takes n bytes, waiting at most wait (or until ctx is done) for
// other calls to release theirs. It reports false when the bytes did not
// become free; on true, release must be called exactly once.
func (b *byteBudget) acquire(ctx context.Context, n int, wait time.Duration) (release func(), ok bool) {
	if n > b.total {
		n = b.total
	}
	var timer *time.Timer
	for {
		b.mu.Lock()
		if b.used+n <= b.total {
			b.used += n
			b.mu.Unlock()
			var once sync.Once
			return func() { once.Do(func() { b.release(n) }) }, true
		}
		freed := b.freed
		b.mu.Unlock()
		if timer == nil {
			timer = time.NewTimer(wait)
			defer timer.Stop()
		}
		select {
		case <-freed:
		case <-timer.C:
			return nil, false
		case <-ctx.Done():
			return nil, false
		}
	}
}

func (b *byteBudget) release(n int) {
	b.mu.Lock()
	b.used -= n
	close(b.freed)
	b.freed = make(chan struct{})
	b.mu.Unlock()
}
