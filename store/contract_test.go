package store

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/contract"
	"github.com/triunalabs/trovesnap/internal/domain"
)

// TestContract_Store runs the Backend contract suite against the embedded
// store; internal/live runs the same suite against real PostgreSQL.
func TestContract_Store(t *testing.T) {
	contract.Run(t, func(t *testing.T) contract.Instance {
		path := filepath.Join(t.TempDir(), "trovesnap.db")
		clock := domain.NewFixedClock(fixtures.Epoch)
		ds := contract.Dataset()
		open := func(t *testing.T) *Store {
			s, err := Open(context.Background(), path, Options{Clock: clock, Seed: &ds})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return s
		}
		seededCopy(t, path, ds, domain.NewFixedClock(fixtures.Epoch)) // seeded once per process (seeded_copy_test.go)
		s := open(t)
		return contract.Instance{
			Backend: s,
			Second:  func(t *testing.T) domain.Backend { return open(t) },
			Counts:  func(t *testing.T) map[string]int64 { return mustCounts(t, s) },
			Events: func(t *testing.T) []domain.Event {
				ev, err := s.Events(context.Background(), EventFilter{})
				if err != nil {
					t.Fatal(err)
				}
				return ev
			},
			Admin:   func(_ *testing.T, _, userID string) domain.ApprovalAdmin { return s.AsSeller(userID) },
			Clients: func(*testing.T, string, string) domain.ClientAdmin { return s },
			Grants:  func(_ *testing.T, _, userID string) contract.GrantIssuer { return s.AsSeller(userID) },
		}
	})
}
