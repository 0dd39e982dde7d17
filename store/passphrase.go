package store

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"golang.org/x/crypto/argon2"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// The seller's approval passphrase (migration 0008): one per database file.
// The CLI asks for it before every command that grants or widens authority
// (approve decisions, policy create/enable, client register/reactivate/
// rotate, raising a limit). It is defence in depth against an agent that
// has a shell as the seller's OS user: such a process can still write the
// database file itself, which no local check can prevent (see
// docs/threat-model.md).

// tablesPassphrase lists the table of migration 0008.
var tablesPassphrase = []table{
	{"seller_passphrase", "id"},
}

// keptOnReset are tables `fixtures reset` leaves as they are: clearing the
// passphrase would let whoever runs the reset set a new one.
var keptOnReset = map[string]bool{"seller_passphrase": true}

// Passphrase errors. The CLI maps them to its exit codes.
var (
	ErrNoPassphrase     = errors.New("no approval passphrase is set")
	ErrPassphraseExists = errors.New("an approval passphrase is already set")
	ErrPassphraseWrong  = errors.New("wrong approval passphrase")
	ErrPassphraseLocked = errors.New("approval passphrase locked after repeated wrong attempts")
)

// PassphraseParams are argon2id's cost parameters; each hash is stored with
// the parameters that made it.
type PassphraseParams struct {
	Time      uint32 // passes over memory
	MemoryKiB uint32
	Threads   uint8
}

// DefaultPassphraseParams make new hashes: argon2id with 64 MiB of memory,
// 2 passes and 2 lanes (RFC 9106's memory-constrained choice is 64 MiB with
// 3 passes; OWASP's floor is 19 MiB with 2). One hash took 0.59–0.60 s
// (best of 5) on the shared 2-core build machine at a load average of
// 16–27; an idle core should take a fraction of that. Unnoticed once per
// command, costly for offline guessing.
var DefaultPassphraseParams = PassphraseParams{Time: 2, MemoryKiB: 64 * 1024, Threads: 2}

// Passphrase rate limit: after PassphraseMaxFailures wrong attempts within
// PassphraseWindow, every attempt is refused for PassphraseLockout.
const (
	PassphraseMaxFailures = 5
	PassphraseWindow      = 15 * time.Minute
	PassphraseLockout     = 15 * time.Minute
	passphraseSaltLen     = 16
	passphraseKeyLen      = 32
)

// passphraseHash derives the argon2id key of pass with salt and p.
func passphraseHash(pass, salt []byte, p PassphraseParams) []byte {
	return argon2.IDKey(pass, salt, p.Time, p.MemoryKiB, p.Threads, passphraseKeyLen)
}

// PassphraseInfo says whether a passphrase is set and by whom; never the hash.
type PassphraseInfo struct {
	Set         bool             `json:"set"`
	Owner       string           `json:"owner_user_id,omitempty"`
	SetAt       *time.Time       `json:"set_at,omitempty"`
	Params      PassphraseParams `json:"-"`
	Failures    int              `json:"recent_failures"`
	LockedUntil *time.Time       `json:"locked_until,omitempty"`
}

type passphraseRow struct {
	PassphraseInfo
	salt, hash  []byte
	windowStart *time.Time
}

func (s *Store) readPassphrase(ctx context.Context, q queryRower) (passphraseRow, error) {
	var r passphraseRow
	var setAt string
	var window, locked sql.NullString
	var t, m, th int64
	err := q.QueryRowContext(ctx, `SELECT owner_user_id, time_cost, memory_kib, threads, salt, hash, set_at, failed_count,
		window_start, locked_until FROM seller_passphrase WHERE id = 1`).Scan(&r.Owner, &t, &m, &th, &r.salt, &r.hash, &setAt,
		&r.Failures, &window, &locked)
	if errors.Is(err, sql.ErrNoRows) {
		return r, nil
	}
	if err != nil {
		return r, s.dbErr("read passphrase", err)
	}
	r.Set = true
	r.Params = PassphraseParams{Time: uint32(t), MemoryKiB: uint32(m), Threads: uint8(th)}
	if at, err := parseTS(setAt); err == nil {
		r.SetAt = &at
	}
	if window.Valid {
		if w, err := parseTS(window.String); err == nil {
			r.windowStart = &w
		}
	}
	if locked.Valid {
		if l, err := parseTS(locked.String); err == nil {
			r.LockedUntil = &l
		}
	}
	return r, nil
}

// PassphraseStatus reports the passphrase record without its secret parts.
// An expired lock or failure window reads as none.
func (s *Store) PassphraseStatus(ctx context.Context) (PassphraseInfo, error) {
	r, err := s.readPassphrase(ctx, s.r)
	if err != nil {
		return PassphraseInfo{}, err
	}
	now := s.clock.Now()
	if r.LockedUntil != nil && !now.Before(*r.LockedUntil) {
		r.LockedUntil = nil
	}
	if r.windowStart == nil || now.Sub(*r.windowStart) >= PassphraseWindow {
		r.Failures = 0
	}
	return r.PassphraseInfo, nil
}

// SetPassphrase stores the first passphrase of this database. In mock mode
// owner must be a user holding approval.grant in some tenant of the store
// (the seller the commands then act as); in live mode owner is "" (the
// signed-in user acts). A second call fails with ErrPassphraseExists:
// changing it goes through ChangePassphrase, which needs the old one.
func (s *Store) SetPassphrase(ctx context.Context, owner string, pass []byte) error {
	if err := s.checkOwner(ctx, owner); err != nil {
		return err
	}
	salt, hash, err := newPassphraseHash(pass)
	if err != nil {
		return err
	}
	return s.withTx(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM seller_passphrase").Scan(&n); err != nil {
			return s.dbErr("set passphrase", err)
		}
		if n > 0 {
			return ErrPassphraseExists
		}
		p := DefaultPassphraseParams
		if _, err := tx.ExecContext(ctx, `INSERT INTO seller_passphrase (id, owner_user_id, algorithm, time_cost, memory_kib, threads,
			salt, hash, set_at) VALUES (1, ?, 'argon2id', ?, ?, ?, ?, ?, ?)`,
			owner, p.Time, p.MemoryKiB, p.Threads, salt, hash, ts(s.clock.Now())); err != nil {
			return s.dbErr("set passphrase", err)
		}
		return nil
	})
}

func (s *Store) checkOwner(ctx context.Context, owner string) error {
	if s.mode == domain.ModeLive {
		if owner != "" {
			return domain.Invalid("as", "in live mode the passphrase belongs to this data directory: the signed-in user acts, not a named one")
		}
		return nil
	}
	if owner == "" {
		return domain.Invalid("as", "required: the seller who owns the passphrase")
	}
	rows, err := s.r.QueryContext(ctx, "SELECT role FROM memberships WHERE user_id = ?", owner)
	if err != nil {
		return s.dbErr("passphrase owner", err)
	}
	defer rows.Close()
	member := false
	for rows.Next() {
		var role string
		if err := rows.Scan(&role); err != nil {
			return s.dbErr("passphrase owner", err)
		}
		member = true
		if (domain.Principal{Role: role}).Has(domain.PermApprovalGrant) {
			return nil
		}
	}
	if err := rows.Err(); err != nil {
		return s.dbErr("passphrase owner", err)
	}
	if member {
		return domain.Invalid("as", owner+" may not approve in any tenant here (an owner or a manager sets the passphrase)")
	}
	return domain.Invalid("as", owner+" is not a member of any tenant in this database")
}

func newPassphraseHash(pass []byte) (salt, hash []byte, err error) {
	salt = make([]byte, passphraseSaltLen)
	if _, err := rand.Read(salt); err != nil {
		return nil, nil, fmt.Errorf("store: passphrase salt: %w", err)
	}
	return salt, passphraseHash(pass, salt, DefaultPassphraseParams), nil
}

// PassphraseAttempt describes a command that asks for the passphrase, for
// the audit event of a refusal.
type PassphraseAttempt struct {
	Command  string // e.g. "policy enable"
	TenantID string // the tenant it acts in, when known
	Actor    string // the user it claims to act as, when known
}

// VerifyPassphrase checks pass against the stored hash, in constant time,
// and returns the owner. Wrong attempts are rate-limited across processes:
// the attempt is counted before the slow hash runs (so parallel guesses
// share one budget) and forgiven when right. A wrong or locked attempt
// records a blocked plugin_event and changes nothing else.
func (s *Store) VerifyPassphrase(ctx context.Context, pass []byte, a PassphraseAttempt) (string, error) {
	r, err := s.beginPassphraseAttempt(ctx, a)
	if err != nil {
		return "", err
	}
	got := passphraseHash(pass, r.salt, r.Params)
	if subtle.ConstantTimeCompare(got, r.hash) != 1 {
		return "", s.failPassphraseAttempt(ctx, a)
	}
	err = s.withTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "UPDATE seller_passphrase SET failed_count = 0, window_start = NULL, locked_until = NULL WHERE id = 1")
		return err
	})
	if err != nil {
		return "", s.dbErr("passphrase: forgive attempt", err)
	}
	return r.Owner, nil
}

// ChangePassphrase replaces the passphrase; the old one is verified like
// any attempt (and counted when wrong). The owner stays.
func (s *Store) ChangePassphrase(ctx context.Context, old, next []byte, a PassphraseAttempt) error {
	if _, err := s.VerifyPassphrase(ctx, old, a); err != nil {
		return err
	}
	salt, hash, err := newPassphraseHash(next)
	if err != nil {
		return err
	}
	p := DefaultPassphraseParams
	return s.withTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE seller_passphrase SET algorithm = 'argon2id', time_cost = ?, memory_kib = ?, threads = ?,
			salt = ?, hash = ?, set_at = ? WHERE id = 1`, p.Time, p.MemoryKiB, p.Threads, salt, hash, ts(s.clock.Now())); err != nil {
			return s.dbErr("change passphrase", err)
		}
		return nil
	})
}

// beginPassphraseAttempt refuses a locked record and counts the attempt.
func (s *Store) beginPassphraseAttempt(ctx context.Context, a PassphraseAttempt) (passphraseRow, error) {
	var r passphraseRow
	var locked bool
	err := s.withTx(ctx, func(tx *sql.Tx) error {
		var err error
		if r, err = s.readPassphrase(ctx, tx); err != nil {
			return err
		}
		if !r.Set {
			return ErrNoPassphrase
		}
		if a.Actor == "" {
			a.Actor = r.Owner
		}
		now := s.clock.Now()
		if r.LockedUntil != nil && now.Before(*r.LockedUntil) {
			locked = true // committed with its event: a refusal is recorded, not rolled back
			return s.insertRefusal(ctx, tx, a, "seller_passphrase_locked", map[string]string{"locked_until": ts(*r.LockedUntil)})
		}
		if r.windowStart == nil || now.Sub(*r.windowStart) >= PassphraseWindow {
			r.Failures, r.windowStart = 0, &now
		}
		if r.Failures >= PassphraseMaxFailures { // in-flight attempts used the budget
			until := now.Add(PassphraseLockout)
			r.LockedUntil, locked = &until, true
			if _, err := tx.ExecContext(ctx, "UPDATE seller_passphrase SET locked_until = ? WHERE id = 1", ts(until)); err != nil {
				return s.dbErr("passphrase: lock", err)
			}
			return s.insertRefusal(ctx, tx, a, "seller_passphrase_locked", map[string]string{"locked_until": ts(until)})
		}
		r.Failures++
		_, err = tx.ExecContext(ctx, "UPDATE seller_passphrase SET failed_count = ?, window_start = ?, locked_until = NULL WHERE id = 1",
			r.Failures, ts(*r.windowStart))
		if err != nil {
			return s.dbErr("passphrase: count attempt", err)
		}
		return nil
	})
	if err != nil {
		return r, err
	}
	if locked {
		return r, fmt.Errorf("%w until %s", ErrPassphraseLocked, r.LockedUntil.Format(time.RFC3339))
	}
	return r, nil
}

// failPassphraseAttempt leaves the attempt counted, locks at the limit and
// records the refusal.
func (s *Store) failPassphraseAttempt(ctx context.Context, a PassphraseAttempt) error {
	var lockedUntil *time.Time
	err := s.withTx(ctx, func(tx *sql.Tx) error {
		r, err := s.readPassphrase(ctx, tx)
		if err != nil {
			return err
		}
		if a.Actor == "" {
			a.Actor = r.Owner
		}
		summary := map[string]string{"recent_failures": fmt.Sprint(r.Failures)}
		if r.Failures >= PassphraseMaxFailures {
			until := s.clock.Now().Add(PassphraseLockout)
			lockedUntil = &until
			if _, err := tx.ExecContext(ctx, "UPDATE seller_passphrase SET locked_until = ? WHERE id = 1", ts(until)); err != nil {
				return s.dbErr("passphrase: lock", err)
			}
			summary["locked_until"] = ts(until)
		}
		return s.insertRefusal(ctx, tx, a, "seller_passphrase_refused", summary)
	})
	if err != nil {
		return err
	}
	if lockedUntil != nil {
		return fmt.Errorf("%w (%d wrong in %s): every attempt is refused until %s", ErrPassphraseWrong, PassphraseMaxFailures,
			PassphraseWindow, lockedUntil.Format(time.RFC3339))
	}
	return ErrPassphraseWrong
}

// RecordSellerRefusal records a blocked plugin_event for a seller-side
// command refused before it did anything (the agent-shell tripwire). detail
// is an allow-listed summary: names, never secrets.
func (s *Store) RecordSellerRefusal(ctx context.Context, a PassphraseAttempt, action string, detail map[string]string) error {
	return s.withTx(ctx, func(tx *sql.Tx) error {
		if a.Actor == "" { // the seller it would have acted as: the passphrase's owner
			r, err := s.readPassphrase(ctx, tx)
			if err != nil {
				return err
			}
			a.Actor = r.Owner
		}
		return s.insertRefusal(ctx, tx, a, action, detail)
	})
}

// insertRefusal writes the event of a refused seller command into the
// tenant it named (when that tenant exists here), else into the store-wide
// chain (tenant "").
func (s *Store) insertRefusal(ctx context.Context, tx *sql.Tx, a PassphraseAttempt, action string, detail map[string]string) error {
	tenant := ""
	if a.TenantID != "" {
		var n int
		if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM tenants WHERE id = ?", a.TenantID).Scan(&n); err != nil {
			return s.dbErr("refusal event: tenant", err)
		}
		if n > 0 {
			tenant = a.TenantID
		}
	}
	if tenant == "" && a.Actor != "" {
		// The seller's own tenant, when they have exactly one.
		var only string
		var n int
		if err := tx.QueryRowContext(ctx, "SELECT count(*), coalesce(min(tenant_id), '') FROM memberships WHERE user_id = ?", a.Actor).Scan(&n, &only); err != nil {
			return s.dbErr("refusal event: tenant", err)
		}
		if n == 1 {
			tenant = only
		}
	}
	summary := map[string]string{"command": a.Command}
	for k, v := range detail {
		summary[k] = v
	}
	ev := domain.Event{
		ID:            s.ids.New(domain.PrefixEvent),
		TenantID:      tenant,
		CorrelationID: s.ids.New(domain.PrefixCorr),
		Mode:          s.mode,
		Plugin:        domain.PluginRef{Type: "mcp", ID: "trovesnap", Version: "cli"},
		Actor:         domain.ActorRef{ID: a.Actor, Type: "seller"},
		Action:        action,
		Outcome:       domain.OutcomeBlocked,
		ErrorCode:     "permission_denied",
		Payload:       domain.EventPayload{RedactedSummary: summary},
		Approval:      domain.EventApproval{Decision: "blocked"},
		Impact:        domain.EventImpact{Type: action},
		OccurredAt:    s.clock.Now(),
		Domain:        &domain.EventDomain{Service: "seller_cli", Operation: action},
	}
	if tenant != "" && a.Actor != "" {
		role, err := s.roleIn(ctx, tx, tenant, a.Actor)
		if err != nil {
			return err
		}
		ev.Actor.Role = role
	}
	return s.insertEvent(ctx, tx, ev)
}
