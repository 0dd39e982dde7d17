package live_test

import (
	"testing"

	"github.com/triunalabs/trovesnap/internal/contract"
	"github.com/triunalabs/trovesnap/internal/domain"
)

// The database seals cursors with a real HMAC-SHA256 under its own secret:
// a codec built in Go from that secret (read here as the superuser; no role
// the server or a seller holds can read it) makes the very same cursor, and
// opens it. The server process itself never sees the secret.
func TestHardening_LiveCursorIsHMACUnderTheDatabaseSecret(t *testing.T) {
	env := seeded(t)
	b := newBackend(t, env)
	p, err := b.ResolvePrincipal(ctx, contract.CredOwner)
	if err != nil {
		t.Fatal(err)
	}
	page, err := b.ListItems(ctx, p, domain.ItemQuery{Limit: 1})
	if err != nil || len(page.Rows) != 1 || page.NextCursor == "" {
		t.Fatalf("page: %v %q", err, page.NextCursor)
	}
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var secret []byte
	if err := conn.QueryRow(ctx, "SELECT secret FROM trovesnap.cursor_secret").Scan(&secret); err != nil {
		t.Fatal(err)
	}
	c, err := domain.NewCursorCodec(secret)
	if err != nil {
		t.Fatal(err)
	}
	k, err := c.Decode("items", p.TenantID, page.NextCursor)
	if err != nil || k == nil || k.ID != page.Rows[0].ID {
		t.Fatalf("Go opens the database's cursor: %+v, %v", k, err)
	}
	if again := c.Encode("items", p.TenantID, *k); again != page.NextCursor {
		t.Fatalf("Go seals %q, the database %q", again, page.NextCursor)
	}
	// And the database opens what Go sealed with its secret.
	if got, err := b.OpenCursor(ctx, p, "items", c.Encode("items", p.TenantID, domain.Keyset{Key: k.Key, ID: "item_x"})); err != nil || got == nil || got.ID != "item_x" {
		t.Fatalf("database opens Go's cursor: %+v, %v", got, err)
	}
	// The server's role cannot read the secret table.
	var n int
	err = conn.QueryRow(ctx, "SELECT count(*) FROM information_schema.role_table_grants WHERE table_schema = 'trovesnap' AND table_name = 'cursor_secret' AND grantee <> 'trovesnap_owner'").Scan(&n)
	if err != nil || n != 0 {
		t.Fatalf("grants on cursor_secret to other roles: %d, %v", n, err)
	}
}
