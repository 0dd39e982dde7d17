package live_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/zalando/go-keyring"

	"github.com/triunalabs/trovesnap/internal/contract"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/live"
	"github.com/triunalabs/trovesnap/internal/live/pgtest"
)

// One PostgreSQL 15 cluster for the whole package: started here, stopped
// after the last test (see pgtest.Main for CI and skipping). The OS
// credential store is go-keyring's in-memory mock: no test reads or writes
// the developer's real Keychain or Secret Service.
func TestMain(m *testing.M) {
	keyring.MockInit()
	os.Exit(pgtest.Main(m))
}

var ctx = context.Background()

// seeded returns the shared environment with the contract dataset freshly
// seeded.
func seeded(t testing.TB) *pgtest.Env {
	t.Helper()
	env := pgtest.Need(t)
	if err := env.Seed(ctx, contract.Dataset()); err != nil {
		t.Fatalf("seed: %v", err)
	}
	return env
}

func newBackend(t testing.TB, env *pgtest.Env, mod ...func(*live.Options)) *live.Backend {
	t.Helper()
	o := live.Options{URL: env.Endpoint.URL, PublicKey: env.PublicKey()}
	for _, m := range mod {
		m(&o)
	}
	b, err := live.New(o)
	if err != nil {
		t.Fatalf("live.New: %v", err)
	}
	return b
}

// TestContract_Live runs the Backend contract suite against the live
// backend over real PostgreSQL, seeded with the same data as the store's run.
func TestContract_Live(t *testing.T) {
	contract.Run(t, func(t *testing.T) contract.Instance {
		env := seeded(t)
		publicHeadroom(t, env)
		return contract.Instance{
			Backend: newBackend(t, env),
			Second:  func(t *testing.T) domain.Backend { return newBackend(t, env) },
			Counts: func(t *testing.T) map[string]int64 {
				c, err := env.Cluster.Counts(ctx)
				if err != nil {
					t.Fatal(err)
				}
				return c
			},
			Events: func(t *testing.T) []domain.Event {
				ev, err := env.Events(ctx)
				if err != nil {
					t.Fatal(err)
				}
				return ev
			},
			Admin: func(t *testing.T, _, userID string) domain.ApprovalAdmin {
				a, ok := any(sellerAs(t, env, userID)).(domain.ApprovalAdmin)
				if !ok {
					t.Fatal("live.Seller does not implement domain.ApprovalAdmin")
				}
				return a
			},
			Clients: func(t *testing.T, _, userID string) domain.ClientAdmin {
				a, ok := any(sellerAs(t, env, userID)).(domain.ClientAdmin)
				if !ok {
					t.Fatal("live.Seller does not implement domain.ClientAdmin")
				}
				return a
			},
			Grants: func(t *testing.T, _, userID string) contract.GrantIssuer {
				a, ok := any(sellerAs(t, env, userID)).(contract.GrantIssuer)
				if !ok {
					t.Fatal("live.Seller does not issue grants")
				}
				return a
			},
		}
	})
}

// sellerAs is a seller session of the dataset user userID: the access token
// of its Supabase Auth subject, the project's public key as apikey.
func sellerAs(t testing.TB, env *pgtest.Env, userID string) *live.Seller {
	t.Helper()
	s, err := live.NewSeller(live.Options{URL: env.Endpoint.URL, PublicKey: env.Endpoint.Token("anon", time.Hour)},
		env.Endpoint.UserToken(pgtest.AuthSubject(userID), time.Hour))
	if err != nil {
		t.Fatalf("live.NewSeller: %v", err)
	}
	return s
}
