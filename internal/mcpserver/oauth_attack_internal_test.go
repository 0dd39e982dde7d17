package mcpserver

// OAuth attacker review (issue 17, part 3): the JWKS cache, driven with its
// own clock. Every test asserts the SECURE behaviour; a failing test is a
// finding (see the review report).

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// attackJWKS serves a JWKS whose keys (kid → P-256 key) the test changes,
// and can be made to fail.
type attackJWKS struct {
	srv     *httptest.Server
	mu      sync.Mutex
	keys    map[string]*ecdsa.PrivateKey
	down    atomic.Bool
	fetches atomic.Int32
}

func newAttackJWKS(t *testing.T, kids ...string) *attackJWKS {
	t.Helper()
	j := &attackJWKS{keys: map[string]*ecdsa.PrivateKey{}}
	for _, k := range kids {
		j.add(t, k)
	}
	j.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		j.fetches.Add(1)
		if j.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		j.mu.Lock()
		var set []map[string]any
		for kid, k := range j.keys {
			b, _ := k.PublicKey.Bytes()
			enc := base64.RawURLEncoding.EncodeToString
			set = append(set, map[string]any{"kty": "EC", "crv": "P-256", "kid": kid, "alg": "ES256", "use": "sig",
				"x": enc(b[1:33]), "y": enc(b[33:])})
		}
		j.mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": set})
	}))
	t.Cleanup(j.srv.Close)
	return j
}

func (j *attackJWKS) add(t *testing.T, kid string) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	j.mu.Lock()
	j.keys[kid] = k
	j.mu.Unlock()
}

func (j *attackJWKS) remove(kid string) {
	j.mu.Lock()
	delete(j.keys, kid)
	j.mu.Unlock()
}

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func attackCache(j *attackJWKS, clk *fakeClock) *jwksCache {
	return &jwksCache{url: j.srv.URL, hc: &http.Client{Timeout: 5 * time.Second}, log: slog.New(slog.DiscardHandler), now: clk.now}
}

// ATTEMPT: keep using a key after the JWKS has been unreachable for longer
// than jwksStaleLimit ("keys kept while the JWKS does not answer" — for an
// hour, then fail closed). The key was removed from the JWKS (rotated out
// or revoked) and the JWKS then stopped answering: past the stale limit no
// token signed with it may verify.
func TestAttackOAuth_StaleLimitIsEnforced(t *testing.T) {
	j := newAttackJWKS(t, "old")
	clk := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	c := attackCache(j, clk)
	ctx := context.Background()
	if k, err := c.key(ctx, "old"); k == nil || err != nil {
		t.Fatalf("first fetch: %v %v", k, err)
	}
	j.down.Store(true)
	// Two hours without an answer: far past jwksStaleLimit.
	clk.t = clk.t.Add(2 * time.Hour)
	k, err := c.key(ctx, "old")
	if k != nil || err == nil {
		t.Fatalf("past the stale limit, the first lookup gave a key (%v, %v)", k, err)
	}
	// Every later request within jwksRefetchAfter of that failed attempt.
	var served int
	for i := 1; i <= 29; i++ {
		clk.t = clk.t.Add(time.Second)
		if k, err := c.key(ctx, "old"); k != nil && err == nil {
			served++
		}
	}
	if served > 0 {
		t.Errorf("BROKEN: past jwksStaleLimit (JWKS down 2 h), the stale key still verified %d of the next 29 lookups: "+
			"the stale limit holds only for the one request that retried the fetch", served)
	}
}

// ATTEMPT: an unauthenticated caller keeps the cache from ever refreshing
// by making the refetch fail: the fetch runs under the request's context,
// so a request that is cancelled (the client hangs up) at the moment the
// cache refetches fails the fetch and arms the 30 s back-off. A key the
// issuer added since (rotation) must still become usable.
func TestAttackOAuth_CancelledRequestCannotPoisonTheRefetch(t *testing.T) {
	j := newAttackJWKS(t, "k1")
	clk := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	c := attackCache(j, clk)
	if k, err := c.key(context.Background(), "k1"); k == nil || err != nil {
		t.Fatalf("first fetch: %v %v", k, err)
	}
	// The issuer rotates: k2 signs new tokens.
	j.add(t, "k2")
	clk.t = clk.t.Add(jwksTTL + time.Second) // the cache is due for a refetch
	// The attacker's request arrives first and is already cancelled.
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	_, _ = c.key(cancelled, "whatever")
	// A connector's token signed with the new key, one second later.
	clk.t = clk.t.Add(time.Second)
	if k, err := c.key(context.Background(), "k2"); k == nil || err != nil {
		t.Errorf("BROKEN: after a cancelled request's refetch failed, a token with the issuer's new key is refused (%v, %v); "+
			"an attacker repeating this every 30 s freezes the key set", k, err)
	}
}

// ATTEMPT: a JWKS that does not answer while the cache is still empty
// (server just started): every JWT-shaped request refetches — the
// unknown-kid back-off applies only once some fetch succeeded — and the
// answer is a 500, which the per-address 401 budget does not count.
func TestAttackOAuth_EmptyCacheJWKSDownIsNotRefetchedPerRequest(t *testing.T) {
	j := newAttackJWKS(t, "k1")
	j.down.Store(true)
	clk := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	c := attackCache(j, clk)
	for i := 0; i < 20; i++ {
		clk.t = clk.t.Add(100 * time.Millisecond)
		if _, err := c.key(context.Background(), "k1"); err == nil {
			t.Fatal("a key while the JWKS is down and nothing is cached")
		}
	}
	if n := j.fetches.Load(); n > 2 {
		t.Errorf("BROKEN: 20 lookups within 2 s made %d JWKS fetches while it was down (each up to 5 s under the cache's lock)", n)
	}
}
