package gate

import (
	"crypto/sha256"
	"sync"
	"time"
)

// unresolvedPerMinute bounds the calls of one credential that does not
// resolve to an active client (unknown, malformed, suspended, revoked).
// Such a call has no client whose rejected budget the database could
// count, so the process counts it: without this a suspended client's host
// could refuse-flood at full speed (found by the attack review).
const unresolvedPerMinute = 120

// unresolvedLimiter counts unresolved calls per credential digest in fixed
// one-minute windows, in memory. It holds at most maxUnresolvedKeys keys (a
// stdio process has one credential); past that the oldest window is
// dropped, which can only make the limiter forget, never refuse a good
// credential — a resolved one never reaches it.
type unresolvedLimiter struct {
	mu     sync.Mutex
	window int64
	counts map[[16]byte]int
}

const maxUnresolvedKeys = 4096

// allow counts one call of credential at now and reports whether it is
// within the budget, and if not, the seconds until the window turns.
func (l *unresolvedLimiter) allow(credential string, now time.Time) (bool, int) {
	sum := sha256.Sum256([]byte(credential))
	var key [16]byte
	copy(key[:], sum[:16])
	w := now.Unix() / 60
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.window != w || l.counts == nil || len(l.counts) >= maxUnresolvedKeys {
		l.window, l.counts = w, map[[16]byte]int{}
	}
	l.counts[key]++
	if l.counts[key] > unresolvedPerMinute {
		return false, int(60 - now.Unix()%60)
	}
	return true, 0
}
