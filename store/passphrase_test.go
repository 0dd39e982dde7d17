package store

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/triunalabs/trovesnap/internal/domain"
)

const goodPass = "correct horse battery staple"

// changedTables lists the tables whose digest differs.
func changedTables(before, after map[string]string) []string {
	d := diffKeys(before, after)
	slices.Sort(d)
	return d
}

// The passphrase is stored as argon2id with a random salt and the
// parameters that made it; the right one verifies and names the owner.
func TestHardening_PassphraseIsAnArgon2idHashWithSaltAndParameters(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	if info, err := s.PassphraseStatus(ctx); err != nil || info.Set {
		t.Fatalf("a new store has a passphrase: %+v, %v", info, err)
	}
	if _, err := s.VerifyPassphrase(ctx, []byte(goodPass), PassphraseAttempt{Command: "t"}); !errors.Is(err, ErrNoPassphrase) {
		t.Fatalf("verify without one = %v", err)
	}
	if err := s.SetPassphrase(ctx, userAlice, []byte(goodPass)); err != nil {
		t.Fatal(err)
	}
	var algo string
	var tc, mem, th int
	var salt, hash []byte
	if err := s.r.QueryRow("SELECT algorithm, time_cost, memory_kib, threads, salt, hash FROM seller_passphrase").Scan(&algo, &tc, &mem, &th, &salt, &hash); err != nil {
		t.Fatal(err)
	}
	p := DefaultPassphraseParams
	if algo != "argon2id" || tc != int(p.Time) || mem != int(p.MemoryKiB) || th != int(p.Threads) || len(salt) != 16 || len(hash) != 32 {
		t.Fatalf("stored %s t=%d m=%d p=%d salt %d hash %d", algo, tc, mem, th, len(salt), len(hash))
	}
	if mem < 64*1024 || tc < 2 {
		t.Fatalf("parameters weaker than 64 MiB × 2 passes: %+v", p)
	}
	if bytes.Contains(hash, []byte(goodPass)) || !bytes.Equal(hash, passphraseHash([]byte(goodPass), salt, p)) {
		t.Fatal("the stored hash is not argon2id(passphrase, salt)")
	}
	// A second store with the same passphrase gets another salt.
	s2 := openTest(t)
	if err := s2.SetPassphrase(ctx, userAlice, []byte(goodPass)); err != nil {
		t.Fatal(err)
	}
	var salt2 []byte
	if err := s2.r.QueryRow("SELECT salt FROM seller_passphrase").Scan(&salt2); err != nil || bytes.Equal(salt, salt2) {
		t.Fatalf("salt reused: %v", err)
	}
	owner, err := s.VerifyPassphrase(ctx, []byte(goodPass), PassphraseAttempt{Command: "t"})
	if err != nil || owner != userAlice {
		t.Fatalf("verify = %q, %v", owner, err)
	}
	// Set again: refused, nothing changed.
	before := mustDigest(t, s)
	if err := s.SetPassphrase(ctx, userAlice, []byte("another passphrase here")); !errors.Is(err, ErrPassphraseExists) {
		t.Fatalf("second set = %v", err)
	}
	if d := changedTables(before, mustDigest(t, s)); len(d) != 0 {
		t.Fatalf("a refused set changed %v", d)
	}
}

// Only a member who may approve owns the passphrase in mock mode.
func TestHardening_PassphraseOwnerMustBeAnApprover(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	before := mustCounts(t, s)
	for _, owner := range []string{"", userCarol, "user_nobody"} {
		var ie *domain.InputError
		if err := s.SetPassphrase(ctx, owner, []byte(goodPass)); !errors.As(err, &ie) {
			t.Fatalf("owner %q: %v", owner, err)
		}
	}
	if after := mustCounts(t, s); after["seller_passphrase"] != 0 || after["plugin_events"] != before["plugin_events"] {
		t.Fatalf("refused sets wrote rows: %v", after)
	}
	if err := s.SetPassphrase(ctx, userBob, []byte(goodPass)); err != nil { // a manager of B
		t.Fatal(err)
	}
}

// A wrong passphrase is refused, recorded as a blocked event in the
// owner's tenant, and changes nothing else; after five wrong ones in 15
// minutes even the right one is refused for 15 minutes.
func TestHardening_WrongPassphraseIsAuditedAndLocksAfterFive(t *testing.T) {
	ctx := context.Background()
	clock := domain.NewFixedClock(epoch)
	s := openTest(t, func(o *Options) { o.Clock = clock })
	if err := s.SetPassphrase(ctx, userAlice, []byte(goodPass)); err != nil {
		t.Fatal(err)
	}
	before := mustDigest(t, s)
	a := PassphraseAttempt{Command: "policy enable"}
	for i := 1; i <= PassphraseMaxFailures; i++ {
		clock.Advance(time.Minute)
		if _, err := s.VerifyPassphrase(ctx, []byte("wrong guess number"), a); !errors.Is(err, ErrPassphraseWrong) {
			t.Fatalf("wrong attempt %d = %v", i, err)
		}
	}
	if d := changedTables(before, mustDigest(t, s)); !slices.Equal(d, []string{"plugin_events", "seller_passphrase"}) {
		t.Fatalf("wrong attempts changed %v", d)
	}
	evs, err := s.Events(ctx, EventFilter{TenantID: tenantA})
	if err != nil {
		t.Fatal(err)
	}
	var refused int
	for _, e := range evs {
		if e.Action == "seller_passphrase_refused" {
			refused++
			if e.Outcome != domain.OutcomeBlocked || e.Actor.ID != userAlice || e.Payload.RedactedSummary["command"] != "policy enable" {
				t.Fatalf("refusal event %+v", e)
			}
		}
	}
	if refused != PassphraseMaxFailures {
		t.Fatalf("%d refusal events in %s, want %d", refused, tenantA, PassphraseMaxFailures)
	}
	// Locked: the right passphrase is refused too.
	clock.Advance(time.Minute)
	if _, err := s.VerifyPassphrase(ctx, []byte(goodPass), a); !errors.Is(err, ErrPassphraseLocked) {
		t.Fatalf("right passphrase while locked = %v", err)
	}
	if info, _ := s.PassphraseStatus(ctx); info.LockedUntil == nil {
		t.Fatalf("status does not say locked: %+v", info)
	}
	clock.Advance(PassphraseLockout)
	if owner, err := s.VerifyPassphrase(ctx, []byte(goodPass), a); err != nil || owner != userAlice {
		t.Fatalf("after the lockout = %q, %v", owner, err)
	}
	if info, _ := s.PassphraseStatus(ctx); info.Failures != 0 || info.LockedUntil != nil {
		t.Fatalf("a right attempt did not clear the count: %+v", info)
	}
	// Failures spread over more than the window never lock.
	for i := 0; i < 2*PassphraseMaxFailures; i++ {
		clock.Advance(PassphraseWindow / 3)
		if _, err := s.VerifyPassphrase(ctx, []byte("wrong again, slowly"), a); !errors.Is(err, ErrPassphraseWrong) {
			t.Fatalf("slow wrong attempt %d = %v", i, err)
		}
	}
}

// Changing the passphrase needs the old one; the new one replaces it.
func TestHardening_PassphraseChangeNeedsTheOldOne(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	if err := s.SetPassphrase(ctx, userAlice, []byte(goodPass)); err != nil {
		t.Fatal(err)
	}
	var hash []byte
	_ = s.r.QueryRow("SELECT hash FROM seller_passphrase").Scan(&hash)
	next := []byte("a brand new passphrase")
	if err := s.ChangePassphrase(ctx, []byte("not the old one!"), next, PassphraseAttempt{Command: "passphrase change"}); !errors.Is(err, ErrPassphraseWrong) {
		t.Fatalf("change with a wrong old one = %v", err)
	}
	var still []byte
	_ = s.r.QueryRow("SELECT hash FROM seller_passphrase").Scan(&still)
	if !bytes.Equal(hash, still) {
		t.Fatal("a refused change replaced the hash")
	}
	if err := s.ChangePassphrase(ctx, []byte(goodPass), next, PassphraseAttempt{Command: "passphrase change"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.VerifyPassphrase(ctx, []byte(goodPass), PassphraseAttempt{}); !errors.Is(err, ErrPassphraseWrong) {
		t.Fatalf("the old passphrase still works: %v", err)
	}
	if owner, err := s.VerifyPassphrase(ctx, next, PassphraseAttempt{}); err != nil || owner != userAlice {
		t.Fatalf("the new one = %q, %v", owner, err)
	}
}

// `fixtures reset` keeps the passphrase: clearing it would let whoever ran
// the reset set their own.
func TestHardening_FixturesResetKeepsThePassphrase(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	if err := s.SetPassphrase(ctx, userAlice, []byte(goodPass)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reset(ctx, testDataset(), "test"); err != nil {
		t.Fatal(err)
	}
	if owner, err := s.VerifyPassphrase(ctx, []byte(goodPass), PassphraseAttempt{}); err != nil || owner != userAlice {
		t.Fatalf("after reset = %q, %v", owner, err)
	}
	if err := s.SetPassphrase(ctx, userAlice, []byte("the attacker's own one")); !errors.Is(err, ErrPassphraseExists) {
		t.Fatalf("set after reset = %v", err)
	}
}
