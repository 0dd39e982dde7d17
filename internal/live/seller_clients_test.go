package live_test

import (
	"bytes"
	"errors"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/contract"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/live"
	"github.com/triunalabs/trovesnap/internal/live/pgtest"
)

// The refusals of client administration only a live seller session makes
// (the store does not know who acts; the CLI and terminal check for it):
// the database, under the user's own JWT, decides.

// scState is everything client administration could change: every
// table's row count and the full contents of the client, limits and event
// tables.
type scState struct {
	counts   map[string]int64
	contents map[string]string
}

func scSnapshot(t *testing.T, env *pgtest.Env) scState {
	t.Helper()
	counts, err := env.Cluster.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	st := scState{counts: counts, contents: map[string]string{}}
	for _, table := range []string{"mcp_clients", "mcp_limits", "plugin_events", "memberships", "users"} {
		var digest string
		if err := conn.QueryRow(ctx, "SELECT coalesce(md5(string_agg(t::text, '|' ORDER BY t::text)), '') FROM trovesnap."+table+" t").Scan(&digest); err != nil {
			t.Fatal(err)
		}
		st.contents[table] = digest
	}
	return st
}

func (s scState) same(t *testing.T, what string, o scState) {
	t.Helper()
	if !maps.Equal(s.counts, o.counts) {
		t.Errorf("%s: row counts changed: %v → %v", what, s.counts, o.counts)
	}
	for k, v := range s.contents {
		if o.contents[k] != v {
			t.Errorf("%s: %s changed", what, k)
		}
	}
}

func scWantRefusal(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: %v, want %v", what, err, want)
	}
}

func scWantHidden(t *testing.T, what string, err error, field, id string) {
	t.Helper()
	var re *domain.RefError
	if !errors.As(err, &re) || re.Field != field || re.ID != id || re.CrossTenant {
		t.Fatalf("%s: %v, want invalid_reference on %s %s like a missing record (cross_tenant false: no existence oracle)", what, err, field, id)
	}
}

// A member without client.manage (a cataloger, a manager) may read the
// clients and limits of its tenant — the approval terminal lists them — but
// changes nothing.
func TestSellerClients_MemberWithoutClientManageIsRefusedAndNothingChanges(t *testing.T) {
	env := seeded(t)
	for _, user := range []string{fixtures.CatalogerUserID, fixtures.ManagerUserID} {
		s := sellerAs(t, env, user)
		before := scSnapshot(t, env)
		_, tok, err := s.RegisterClient(ctx, domain.NewClient{TenantID: fixtures.DemoTenantID, ActorID: user, Name: "Mine",
			ClientType: "claude_code", Groups: []string{"tenant_read"}})
		scWantRefusal(t, user+" registers", err, domain.ErrPermissionDenied)
		if tok != "" {
			t.Fatal("a refused registration returned a token")
		}
		for _, st := range []string{domain.ClientSuspended, domain.ClientRevoked} {
			_, err = s.SetClientStatus(ctx, fixtures.DemoClientID, st, "")
			scWantRefusal(t, user+" sets "+st, err, domain.ErrPermissionDenied)
		}
		_, err = s.SetClientStatus(ctx, contract.SuspendedClientID, domain.ClientActive, "")
		scWantRefusal(t, user+" reactivates", err, domain.ErrPermissionDenied)
		_, tok, err = s.RotateCredential(ctx, contract.PricerClientID, "")
		scWantRefusal(t, user+" rotates", err, domain.ErrPermissionDenied)
		if tok != "" {
			t.Fatal("a refused rotation returned a token")
		}
		err = s.SetLimits(ctx, fixtures.DemoTenantID, "", domain.Limits{ReadsPerMinute: 1000})
		scWantRefusal(t, user+" sets limits", err, domain.ErrPermissionDenied)
		scSnapshot(t, env).same(t, user+"'s refused changes", before)

		list, err := s.ListClients(ctx, fixtures.DemoTenantID)
		if err != nil || len(list) == 0 || !slices.ContainsFunc(list, func(c domain.Client) bool { return c.ID == fixtures.DemoClientID }) {
			t.Fatalf("%s lists %d clients, %v", user, len(list), err)
		}
		if c, err := s.GetClient(ctx, contract.PricerClientID); err != nil || c.Status != domain.ClientActive {
			t.Fatalf("%s reads a client: %+v, %v", user, c, err)
		}
		if l, err := s.EffectiveLimits(ctx, fixtures.DemoTenantID, contract.PricerClientID); err != nil || l != domain.DefaultLimits() {
			t.Fatalf("%s reads limits: %+v, %v", user, l, err)
		}
		if p, err := s.PrincipalForClient(ctx, contract.PricerClientID); err != nil || p.Role != domain.RolePricer {
			t.Fatalf("%s explains a client: %+v, %v", user, p, err)
		}
	}
	// The credentials still work as before.
	b := newBackend(t, env)
	if _, err := b.ResolvePrincipal(ctx, contract.CredOwner); err != nil {
		t.Fatal(err)
	}
	if _, err := b.ResolvePrincipal(ctx, contract.CredPricer); err != nil {
		t.Fatal(err)
	}
}

// The owner of another tenant sees none of this tenant's clients, tenant or
// limits — every answer is the one a missing record gets — and changes
// nothing.
func TestSellerClients_AnotherTenantsOwnerIsRefusedLikeAMissingRecord(t *testing.T) {
	env := seeded(t)
	s := sellerAs(t, env, fixtures.OtherOwnerUserID)
	before := scSnapshot(t, env)
	_, err := s.GetClient(ctx, fixtures.DemoClientID)
	scWantHidden(t, "get", err, "client", fixtures.DemoClientID)
	_, err = s.PrincipalForClient(ctx, fixtures.DemoClientID)
	scWantHidden(t, "principal", err, "client", fixtures.DemoClientID)
	for _, st := range []string{domain.ClientSuspended, domain.ClientRevoked} {
		_, err = s.SetClientStatus(ctx, fixtures.DemoClientID, st, "")
		scWantHidden(t, "set "+st, err, "client", fixtures.DemoClientID)
	}
	_, err = s.SetClientStatus(ctx, contract.SuspendedClientID, domain.ClientActive, "")
	scWantHidden(t, "reactivate", err, "client", contract.SuspendedClientID)
	_, tok, err := s.RotateCredential(ctx, fixtures.DemoClientID, "")
	scWantHidden(t, "rotate", err, "client", fixtures.DemoClientID)
	if tok != "" {
		t.Fatal("a refused rotation returned a token")
	}
	_, tok, err = s.RegisterClient(ctx, domain.NewClient{TenantID: fixtures.DemoTenantID, ActorID: fixtures.DemoUserID,
		Name: "Intruder", ClientType: "custom", Groups: []string{"controlled_action"}})
	scWantHidden(t, "register in the other tenant", err, "tenant", fixtures.DemoTenantID)
	if tok != "" {
		t.Fatal("a refused registration returned a token")
	}
	_, _, err = s.RegisterClient(ctx, domain.NewClient{TenantID: fixtures.OtherTenantID, ActorID: fixtures.DemoUserID,
		Name: "Borrowed actor", ClientType: "custom", Groups: []string{"tenant_read"}})
	if ie := (*domain.InputError)(nil); !errors.As(err, &ie) || ie.Field != "actor" {
		t.Fatalf("registering a non-member as actor: %v, want invalid input on actor", err)
	}
	_, err = s.ListClients(ctx, fixtures.DemoTenantID)
	scWantHidden(t, "list", err, "tenant", fixtures.DemoTenantID)
	_, err = s.EffectiveLimits(ctx, fixtures.DemoTenantID, fixtures.DemoClientID)
	scWantHidden(t, "effective limits", err, "tenant", fixtures.DemoTenantID)
	err = s.SetLimits(ctx, fixtures.DemoTenantID, "", domain.Limits{ReadsPerMinute: 1})
	scWantHidden(t, "tenant limits", err, "tenant", fixtures.DemoTenantID)
	err = s.SetLimits(ctx, fixtures.OtherTenantID, fixtures.DemoClientID, domain.Limits{ReadsPerMinute: 1})
	scWantHidden(t, "limits of the other tenant's client under its own tenant", err, "client", fixtures.DemoClientID)
	scSnapshot(t, env).same(t, "the other tenant's refused calls", before)
	if p, err := newBackend(t, env).ResolvePrincipal(ctx, contract.CredOwner); err != nil || p.ClientStatus != domain.ClientActive {
		t.Fatalf("the demo client after the refusals: %+v, %v", p, err)
	}

	// Each owner's unfiltered list is its own tenant's clients only.
	for user, tenant := range map[string]string{fixtures.OtherOwnerUserID: fixtures.OtherTenantID, fixtures.DemoUserID: fixtures.DemoTenantID} {
		all, err := sellerAs(t, env, user).ListClients(ctx, "")
		if err != nil || len(all) == 0 {
			t.Fatalf("%s lists %v, %v", user, all, err)
		}
		for _, c := range all {
			if c.TenantID != tenant {
				t.Fatalf("%s's list holds %s of %s", user, c.ID, c.TenantID)
			}
		}
	}
}

// `by` and `created_by` name who acted in the audit log: a seller may name
// only itself.
func TestSellerClients_ActorMayOnlyBeTheSignedInUser(t *testing.T) {
	env := seeded(t)
	s := sellerAs(t, env, fixtures.DemoUserID)
	before := scSnapshot(t, env)
	_, err := s.SetClientStatus(ctx, contract.PricerClientID, domain.ClientSuspended, fixtures.ManagerUserID)
	if ie := (*domain.InputError)(nil); !errors.As(err, &ie) || ie.Field != "by" {
		t.Fatalf("suspend by another member: %v, want invalid input on by", err)
	}
	_, _, err = s.RotateCredential(ctx, contract.PricerClientID, fixtures.ManagerUserID)
	if ie := (*domain.InputError)(nil); !errors.As(err, &ie) || ie.Field != "by" {
		t.Fatalf("rotate by another member: %v, want invalid input on by", err)
	}
	_, _, err = s.RegisterClient(ctx, domain.NewClient{TenantID: fixtures.DemoTenantID, ActorID: fixtures.DemoUserID, Name: "x",
		ClientType: "custom", Groups: []string{"tenant_read"}, CreatedBy: fixtures.ManagerUserID})
	if ie := (*domain.InputError)(nil); !errors.As(err, &ie) || ie.Field != "created_by" {
		t.Fatalf("register as created by another member: %v, want invalid input on created_by", err)
	}
	scSnapshot(t, env).same(t, "calls naming another member", before)
	c, err := s.SetClientStatus(ctx, contract.PricerClientID, domain.ClientSuspended, fixtures.DemoUserID)
	if err != nil || c.Status != domain.ClientSuspended {
		t.Fatalf("suspend by the signed-in user: %+v, %v", c, err)
	}
}

// scRecorder is an http.RoundTripper that keeps every request body.
type scRecorder struct {
	mu     sync.Mutex
	bodies []string
}

func (r *scRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		_ = req.Body.Close()
		r.mu.Lock()
		r.bodies = append(r.bodies, string(b))
		r.mu.Unlock()
		req.Body = io.NopCloser(bytes.NewReader(b))
	}
	return http.DefaultTransport.RoundTrip(req)
}

// The credential is generated on the seller's machine: only its hash
// travels and only its hash is stored; the audit log names neither.
func TestSellerClients_CredentialNeverCrossesTheNetworkInClear(t *testing.T) {
	env := seeded(t)
	rec := &scRecorder{}
	s, err := live.NewSeller(live.Options{URL: env.Endpoint.URL, PublicKey: env.Endpoint.Token("anon", time.Hour),
		HTTPClient: &http.Client{Transport: rec}}, env.Endpoint.UserToken(pgtest.AuthSubject(fixtures.DemoUserID), time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	c, tok, err := s.RegisterClient(ctx, domain.NewClient{TenantID: fixtures.DemoTenantID, ActorID: fixtures.DemoUserID,
		Name: "Wire check", ClientType: "claude_code", Groups: []string{"tenant_read"}})
	if err != nil {
		t.Fatal(err)
	}
	_, tok2, err := s.RotateCredential(ctx, c.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.bodies) != 2 {
		t.Fatalf("%d requests recorded, want 2", len(rec.bodies))
	}
	for i, b := range rec.bodies {
		want := contract.Hash([]string{tok, tok2}[i])
		if strings.Contains(b, domain.TokenPrefix) || !strings.Contains(b, want) {
			t.Fatalf("request %d carries a credential or lacks its hash", i)
		}
	}
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var hash string
	if err := conn.QueryRow(ctx, "SELECT credential_hash FROM trovesnap.mcp_clients WHERE id = $1", c.ID).Scan(&hash); err != nil {
		t.Fatal(err)
	}
	if hash != contract.Hash(tok2) {
		t.Fatal("the stored credential hash is not the hex sha256 of the rotated token")
	}
	var leaks int
	err = conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM trovesnap.mcp_clients t WHERE strpos(t::text, $1) > 0 OR strpos(t::text, $2) > 0)
		+ (SELECT count(*) FROM trovesnap.plugin_events t WHERE strpos(t::text, $1) > 0 OR strpos(t::text, $2) > 0
		   OR strpos(t::text, $3) > 0 OR strpos(t::text, $4) > 0)`, tok, tok2, contract.Hash(tok), contract.Hash(tok2)).Scan(&leaks)
	if err != nil || leaks != 0 {
		t.Fatalf("%d rows hold a credential or (in the audit log) its hash, %v", leaks, err)
	}
}

// Only a signed-in user may call the seller client RPCs: an Auth user linked
// to no TroveSnap user is refused; the server key and the anonymous key are refused by
// the database before anything runs.
func TestSellerClients_OnlyASignedInUserMayCall(t *testing.T) {
	env := seeded(t)
	before := scSnapshot(t, env)
	stranger, err := live.NewSeller(live.Options{URL: env.Endpoint.URL, PublicKey: env.Endpoint.Token("anon", time.Hour)},
		env.Endpoint.UserToken("00000000-0000-0000-0000-000000000000", time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	_, err = stranger.ListClients(ctx, "")
	scWantRefusal(t, "an unlinked Auth user lists", err, domain.ErrPermissionDenied)
	_, _, err = stranger.RegisterClient(ctx, domain.NewClient{TenantID: fixtures.DemoTenantID, ActorID: fixtures.DemoUserID,
		Name: "x", ClientType: "custom", Groups: []string{"tenant_read"}})
	scWantRefusal(t, "an unlinked Auth user registers", err, domain.ErrPermissionDenied)
	for _, role := range []string{"trovesnap_mcp", "anon", "service_role"} {
		s, err := live.NewSeller(live.Options{URL: env.Endpoint.URL, PublicKey: env.Endpoint.Token("anon", time.Hour)},
			env.Endpoint.Token(role, time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		// PostgREST answers an anonymous caller's refusal with 401: for a
		// seller surface that is "sign in" (ErrAuthRequired).
		want := domain.ErrUnavailable
		if role == "anon" {
			want = domain.ErrAuthRequired
		}
		_, err = s.SetClientStatus(ctx, fixtures.DemoClientID, domain.ClientRevoked, "")
		scWantRefusal(t, role+" revokes", err, want)
		_, err = s.GetClient(ctx, fixtures.DemoClientID)
		scWantRefusal(t, role+" reads", err, want)
	}
	scSnapshot(t, env).same(t, "calls without a signed-in user", before)

	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT p.oid::regprocedure::text,
			has_function_privilege('authenticated', p.oid, 'EXECUTE'),
			has_function_privilege('anon', p.oid, 'EXECUTE'),
			has_function_privilege('trovesnap_mcp', p.oid, 'EXECUTE'),
			p.prosecdef, coalesce(array_to_string(p.proconfig, ','), '')
		FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
		WHERE n.nspname = 'public' AND p.proname IN ('seller_register_client', 'seller_list_clients', 'seller_get_client',
			'seller_set_client_status', 'seller_rotate_client_credential', 'seller_client_principal', 'seller_set_limits',
			'seller_effective_limits')`)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		var fn, cfg string
		var authd, anon, mcp, definer bool
		if err := rows.Scan(&fn, &authd, &anon, &mcp, &definer, &cfg); err != nil {
			t.Fatal(err)
		}
		n++
		if !authd || anon || mcp || !definer || !strings.Contains(cfg, "search_path=pg_catalog, pg_temp") {
			t.Errorf("%s: authenticated %v, anon %v, trovesnap_mcp %v, security definer %v, config %q", fn, authd, anon, mcp, definer, cfg)
		}
	}
	if err := rows.Err(); err != nil || n != 8 {
		t.Fatalf("%d seller client RPCs found, want 8 (%v)", n, err)
	}
}
