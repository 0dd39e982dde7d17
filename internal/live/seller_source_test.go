package live_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zalando/go-keyring"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/live"
	"github.com/triunalabs/trovesnap/internal/live/pgtest"
)

// A Seller over a session source outlives its first access token: when the
// token is about to expire the next call refreshes the session once (even
// with calls racing) and saves it, and every call keeps acting as the same
// user. A session ended elsewhere makes the next call fail as not signed in.
func TestSellerSource_RefreshesWhileOpen(t *testing.T) {
	env := seeded(t)
	env.Endpoint.AddAuthUser("owner@heritage.test", "pw-owner", fixtures.DemoUserID)
	a := newAuth(t, env.Endpoint.URL, anonKey(env), nil)
	s, err := a.SignIn(ctx, "owner@heritage.test", "pw-owner")
	if err != nil {
		t.Fatal(err)
	}
	keyring.MockInit()
	sessions := live.OpenSessions()
	if err := sessions.Save(s); err != nil {
		t.Fatal(err)
	}
	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	seller, err := live.NewSellerSource(live.Options{URL: env.Endpoint.URL, PublicKey: anonKey(env)},
		a.Source(sessions, func() time.Time { return time.Unix(0, now.Load()) }))
	if err != nil {
		t.Fatal(err)
	}
	who := func() string {
		t.Helper()
		id, err := seller.WhoAmI(ctx)
		if err != nil {
			t.Fatalf("whoami: %v", err)
		}
		return id.UserID
	}
	if got := who(); got != fixtures.DemoUserID {
		t.Fatalf("whoami = %q", got)
	}
	saved := stored(t, env.Endpoint.URL)
	before := env.Endpoint.AuthRequests()["POST /auth/v1/token"]

	// An hour later (the token is past its life): ten racing calls, one
	// refresh. (The stand-in's next tokens last two hours, so the refreshed
	// one is good at that instant.)
	env.Endpoint.SetAuthTokenTTL(2 * time.Hour)
	t.Cleanup(func() { env.Endpoint.SetAuthTokenTTL(time.Hour) })
	now.Store(s.ExpiresAt.Add(time.Minute).UnixNano())
	var wg sync.WaitGroup
	errs := make(chan error, 10)
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if id, err := seller.WhoAmI(ctx); err != nil || id.UserID != fixtures.DemoUserID {
				errs <- errors.Join(err, errors.New("as "+id.UserID))
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("call after expiry: %v", err)
	}
	if n := env.Endpoint.AuthRequests()["POST /auth/v1/token"]; n != before+1 {
		t.Fatalf("token requests %d → %d: want exactly one refresh", before, n)
	}
	if stored(t, env.Endpoint.URL) == saved {
		t.Fatal("the refreshed session was not saved")
	}

	// Signed out elsewhere: the refresh token is revoked, so once the token
	// needs refreshing again the call says to sign in.
	fresh, err := sessions.Load(env.Endpoint.URL)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.SignOut(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	now.Store(fresh.ExpiresAt.Add(time.Minute).UnixNano())
	if _, err := seller.WhoAmI(ctx); !errors.Is(err, live.ErrSessionEnded) {
		t.Fatalf("after sign-out elsewhere: %v", err)
	}
}

// A seller token the project refuses (expired here) is "sign in again"
// (ErrAuthRequired), not an outage.
func TestSeller_RefusedTokenIsAuthRequired(t *testing.T) {
	env := seeded(t)
	s, err := live.NewSeller(live.Options{URL: env.Endpoint.URL, PublicKey: anonKey(env)},
		env.Endpoint.UserToken(pgtest.AuthSubject(fixtures.DemoUserID), -time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.WhoAmI(ctx); !errors.Is(err, domain.ErrAuthRequired) || errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("expired token: %v", err)
	}
}
