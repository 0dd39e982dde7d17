package live

import (
	"context"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// Cursors in live mode are sealed and opened by the database: the secret
// (trovesnap.cursor_secret, 32 random bytes made by the migration) never
// leaves Postgres, so no host — whose client token is its only secret —
// holds a key that could forge another tenant's cursor. The format and MAC
// are the embedded store's (domain.CursorCodec); docs/cursors.md records
// the decision and its cost (one small RPC per sealed or opened cursor).

// cursorCredential is the client token the cursor RPCs derive the tenant
// from; the public lists have none (their tenant is domain.PublicTenant).
func (b *Backend) cursorCredential(p domain.Principal, kind string) (secret, error) {
	if kind == domain.CursorMarketplace {
		return "", nil
	}
	return b.tokenOf(p)
}

// sealCursor asks the database for the cursor of the row after k.
func (b *Backend) sealCursor(ctx context.Context, p domain.Principal, kind string, k domain.Keyset) (string, error) {
	tok, err := b.cursorCredential(p, kind)
	if err != nil {
		return "", err
	}
	var c string
	if err := b.callClient(ctx, tok, "mcp_cursor_seal", map[string]any{"p_kind": kind, "p_key": k.Key, "p_id": k.ID}, &c); err != nil {
		return "", err
	}
	return c, nil
}

// OpenCursor opens a cursor the database sealed for this list and the
// caller's tenant; anything else is invalid_input on the field cursor. The
// shape is checked here first, so a string that cannot be a cursor costs no
// round trip.
func (b *Backend) OpenCursor(ctx context.Context, p domain.Principal, kind, cursor string) (*domain.Keyset, error) {
	if cursor == "" {
		return nil, nil
	}
	if _, _, _, ok := domain.SplitCursor(cursor); !ok {
		return nil, domain.BadCursor()
	}
	tok, err := b.cursorCredential(p, kind)
	if err != nil {
		return nil, err
	}
	var k struct {
		K *string `json:"k"`
		I *string `json:"i"`
	}
	if err := b.callClient(ctx, tok, "mcp_cursor_open", map[string]any{"p_kind": kind, "p_cursor": cursor}, &k); err != nil {
		return nil, err
	}
	if k.K == nil || k.I == nil || *k.I == "" {
		return nil, domain.BadCursor()
	}
	return &domain.Keyset{Key: *k.K, ID: *k.I}, nil
}

var _ domain.CursorOpener = (*Backend)(nil)
