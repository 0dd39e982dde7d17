package domain

import (
	"crypto/rand"
	"encoding/base32"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Clock is injected wherever time matters so that mock runs are reproducible.
type Clock interface{ Now() time.Time }

// SystemClock is the wall clock, in UTC.
type SystemClock struct{}

// Now returns the current UTC time.
func (SystemClock) Now() time.Time { return time.Now().UTC() }

// FixedClock always answers the same instant; Advance moves it. Tests and
// deterministic mock runs use it.
type FixedClock struct {
	mu sync.Mutex
	t  time.Time
}

// NewFixedClock returns a clock frozen at t.
func NewFixedClock(t time.Time) *FixedClock { return &FixedClock{t: t.UTC()} }

// Now returns the frozen instant.
func (c *FixedClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

// Advance moves the clock forward by d.
func (c *FixedClock) Advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// Set moves the clock to t.
func (c *FixedClock) Set(t time.Time) { c.mu.Lock(); c.t = t.UTC(); c.mu.Unlock() }

// IDs mints identifiers of the form "<prefix>_<suffix>". Ids carry their type
// as a prefix so a mistyped id is caught by input validation, not by a lookup.
type IDs interface{ New(prefix string) string }

// RandomIDs mints unguessable ids: 128 random bits, base32 lower-case.
type RandomIDs struct{}

var b32 = base32.StdEncoding.WithPadding(base32.NoPadding)

// New returns prefix + "_" + 26 random base32 characters.
func (RandomIDs) New(prefix string) string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("crypto/rand failed: %v", err)) // the OS RNG never fails on supported platforms
	}
	return prefix + "_" + strings.ToLower(b32.EncodeToString(b[:]))
}

// SeqIDs mints predictable ids (prefix_s0001, prefix_s0002 …) per prefix. It
// exists for deterministic mock runs and tests, never for production writes.
type SeqIDs struct {
	mu sync.Mutex
	n  map[string]int
}

// NewSeqIDs returns a sequence generator starting at 1 for every prefix.
func NewSeqIDs() *SeqIDs { return &SeqIDs{n: map[string]int{}} }

// New returns the next id for prefix.
func (s *SeqIDs) New(prefix string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n[prefix]++
	return fmt.Sprintf("%s_s%04d", prefix, s.n[prefix])
}

// Id prefixes, as in the spec's examples.
const (
	PrefixTenant     = "tenant"
	PrefixUser       = "user"
	PrefixMembership = "membership"
	PrefixSale       = "sale"
	PrefixItem       = "item"
	PrefixPhoto      = "photo"
	PrefixCandidate  = "candidate"
	PrefixRun        = "run"
	PrefixRecord     = "record"
	PrefixSource     = "source"
	PrefixConn       = "conn"
	PrefixClient     = "mcp_client"
	PrefixProposal   = "proposal"
	PrefixApproval   = "approval"
	PrefixPolicy     = "policy"
	PrefixEvent      = "event"
	PrefixCorr       = "corr"
	PrefixRequest    = "mcp_req"
)

// ValidID reports whether id is "<prefix>_<suffix>" with a short
// alphanumeric suffix. It is the one id-format rule for inputs; IDPattern
// (id_patterns.go) spells the same rule for schemas and SQL.
func ValidID(prefix, id string) bool {
	rest, ok := strings.CutPrefix(id, prefix+"_")
	return ok && idSuffix().MatchString(rest)
}
