package live_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/live"
	"github.com/triunalabs/trovesnap/internal/live/pgtest"
)

// The README's path for a fresh project: the operator bootstraps the first
// owner (as the database owner), the owner signs in, creates a sale and registers a client
// — only its hash reaches the project — and the MCP server, holding only
// the trovesnap_mcp key, resolves that client and works in its tenant.
// bootstrap_owner is idempotent, refuses to relink a user or demote a
// member, and no request role can execute it.
func TestOnboarding_FreshProjectToFirstCandidate(t *testing.T) {
	env := pgtest.Need(t)
	if err := env.Seed(ctx, emptyDataset()); err != nil { // an empty project
		t.Fatal(err)
	}
	const tenant, user, email = "tenant_fresh", "user_nia", "nia@fresh.test"
	subject := pgtest.AuthSubject(user)
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	asOwner := func(sql string, args ...any) (string, error) {
		var out string
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "SET LOCAL ROLE trovesnap_owner"); err != nil {
				return err
			}
			return tx.QueryRow(ctx, sql, args...).Scan(&out)
		})
		return out, err
	}
	boot := "SELECT trovesnap.bootstrap_owner($1, $2, $3, $4, $5, $6)::text"
	for range 2 { // idempotent
		out, err := asOwner(boot, tenant, "Fresh Estate Co", user, "Nia", email, subject)
		if err != nil || !strings.Contains(out, `"role": "owner"`) {
			t.Fatalf("bootstrap: %s, %v", out, err)
		}
	}
	if _, err := asOwner(boot, tenant, "Fresh Estate Co", user, "Nia", email, pgtest.AuthSubject("someone-else")); err == nil {
		t.Fatal("a user was relinked to another Auth account")
	}
	// No request role may run it: not the server's, not a signed-in user's.
	for _, role := range []string{"trovesnap_mcp", "authenticated", "anon"} {
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "SET LOCAL ROLE "+role); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, boot, "tenant_x", "X", "user_x", "X", "x@x.test", pgtest.AuthSubject("user_x"))
			return err
		})
		if err == nil || !strings.Contains(err.Error(), "permission denied") {
			t.Errorf("%s ran bootstrap_owner: %v", role, err)
		}
	}
	// The owner signs in and registers a client for themself.
	env.Endpoint.AddAuthUser(email, "pw-nia", user)
	a := newAuth(t, env.Endpoint.URL, anonKey(env), nil)
	sess, err := a.SignIn(ctx, email, "pw-nia")
	if err != nil {
		t.Fatal(err)
	}
	seller, err := sess.Seller(live.Options{URL: env.Endpoint.URL, PublicKey: anonKey(env)})
	if err != nil {
		t.Fatal(err)
	}
	who, err := seller.WhoAmI(ctx)
	if err != nil || who.UserID != user {
		t.Fatalf("whoami: %+v, %v", who, err)
	}
	// The owner creates the first sale (`trovesnap sale create`): no
	// hand-written SQL between bootstrap and the agent flow.
	sale, err := seller.CreateSale(ctx, domain.NewSale{Name: "Maple Street", StartsAt: time.Now().UTC(),
		EndsAt: time.Now().UTC().Add(48 * time.Hour)})
	if err != nil || sale.TenantID != tenant || sale.Status != domain.SaleDraft {
		t.Fatalf("create sale: %+v, %v", sale, err)
	}
	c, token, err := seller.RegisterClient(ctx, domain.NewClient{TenantID: tenant, ActorID: user, Name: "Nia's Claude Code",
		ClientType: "claude_code", Groups: []string{"tenant_read", "candidate_write", "action_proposal", "controlled_action"}})
	if err != nil || !strings.HasPrefix(token, domain.TokenPrefix) || c.TenantID != tenant {
		t.Fatalf("register: %+v, %v", c, err)
	}

	// The server, with the trovesnap_mcp key only.
	b := newBackend(t, env)
	p, err := b.ResolvePrincipal(ctx, token)
	if err != nil || p.TenantID != tenant || p.ActorID != user || p.Role != "owner" {
		t.Fatalf("principal: %+v, %v", p, err)
	}
	sales, err := b.ListSales(ctx, p, domain.SaleQuery{})
	if err != nil || len(sales.Rows) != 1 || sales.Rows[0].ID != sale.ID {
		t.Fatalf("sales: %+v, %v", sales, err)
	}
	w := domain.WriteMeta{
		Idem:    domain.IdempotencyKey{TenantID: tenant, ClientID: c.ID, Tool: "trove_create_candidate", ToolMajor: 1, Key: "fresh-0001", Fingerprint: "sha256:fresh"},
		Event:   domain.Event{ID: "evt_fresh_0001", TenantID: tenant, Outcome: domain.OutcomeSuccess, Tool: domain.ToolRef{Name: "trove_create_candidate", Version: "1.0.0"}},
		Started: time.Now(),
	}
	cand, _, err := b.CreateCandidate(ctx, p, w, domain.NewCandidate{SaleID: sale.ID, Title: "Oak sideboard"})
	if err != nil || cand.CandidateID == "" || cand.CanonicalItemCreated {
		t.Fatalf("candidate: %+v, %v", cand, err)
	}
	// Another Auth account with no TroveSnap user acts nowhere.
	env.Endpoint.AddAuthUser("drifter@fresh.test", "pw", "user_drifter")
	ds, err := a.SignIn(ctx, "drifter@fresh.test", "pw")
	if err != nil {
		t.Fatal(err)
	}
	drifter, _ := ds.Seller(live.Options{URL: env.Endpoint.URL, PublicKey: anonKey(env)})
	if _, err := drifter.ListClients(ctx, tenant); !errors.Is(err, domain.ErrPermissionDenied) {
		t.Fatalf("an unlinked account listed the tenant's clients: %v", err)
	}
}

// emptyDataset is a Dataset whose every list is empty (not null), which is
// what the seed loader reads as "no rows".
func emptyDataset() domain.Dataset {
	var ds domain.Dataset
	v := reflect.ValueOf(&ds).Elem()
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() == reflect.Slice {
			f.Set(reflect.MakeSlice(f.Type(), 0, 0))
		}
	}
	return ds
}
