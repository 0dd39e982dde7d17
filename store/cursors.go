package store

import (
	"context"
	"crypto/rand"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// unlistedTables are tables of the schema that are not data: Counts, Digest
// and Reset skip them. store_secrets holds this database's cursor secret,
// random per file, so two fresh stores differ there by design, and a
// fixtures reset keeps it (cursors stay cursors of this file).
var unlistedTables = []string{"store_secrets"}

const secretCursorKey = "cursor_hmac"

// loadCursorKey reads this database's cursor secret, creating it (32 bytes
// from crypto/rand) on the first open. INSERT OR IGNORE under the write lock
// makes two processes opening a fresh file agree on one secret.
func (s *Store) loadCursorKey(ctx context.Context) error {
	fresh := make([]byte, domain.CursorKeySize)
	if _, err := rand.Read(fresh); err != nil {
		return s.openErr("cursor secret", err)
	}
	var key []byte
	// Read first: every open after the first finds the secret without
	// taking the write lock, so many processes starting at once (a host
	// spawning servers while another imports) do not queue on it.
	if err := s.w.QueryRowContext(ctx, "SELECT value FROM store_secrets WHERE name = ?", secretCursorKey).Scan(&key); err == nil && len(key) > 0 {
		if s.cursors, err = domain.NewCursorCodec(key); err != nil {
			return s.openErr("cursor secret", err)
		}
		return nil
	}
	err := func() error {
		tx, err := s.w.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback() }()
		if _, err := tx.ExecContext(ctx, "INSERT OR IGNORE INTO store_secrets (name, value) VALUES (?, ?)", secretCursorKey, fresh); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, "SELECT value FROM store_secrets WHERE name = ?", secretCursorKey).Scan(&key); err != nil {
			return err
		}
		return tx.Commit()
	}()
	if err != nil {
		return s.openErr("cursor secret", err)
	}
	if s.cursors, err = domain.NewCursorCodec(key); err != nil {
		return s.openErr("cursor secret", err)
	}
	return nil
}

// Cursors is the codec that seals this store's list cursors. Tests use it
// to page through lists the way a client does.
func (s *Store) Cursors() *domain.CursorCodec { return s.cursors }

// OpenCursor opens a cursor this database sealed for the list kind and the
// principal's tenant (the public tenant for the marketplace). Anything else
// — forged, altered, truncated, another list's, another tenant's or another
// database's — is invalid_input on the field cursor.
func (s *Store) OpenCursor(_ context.Context, p domain.Principal, kind, cursor string) (*domain.Keyset, error) {
	tenant := p.TenantID
	if kind == domain.CursorMarketplace {
		tenant = domain.PublicTenant
	}
	return s.cursors.Decode(kind, tenant, cursor)
}

var _ domain.CursorOpener = (*Store)(nil)
