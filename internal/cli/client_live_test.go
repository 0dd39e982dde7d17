package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/zalando/go-keyring"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/cli"
	"github.com/triunalabs/trovesnap/internal/contract"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/live"
	"github.com/triunalabs/trovesnap/internal/live/pgtest"
)

// `trovesnap client …` and `trovesnap limits …` in live mode act as the
// signed-in seller (`trovesnap login`) against a real PostgreSQL behind the
// PostgREST and Supabase Auth stand-ins: the project's seller RPCs decide.
// (These tests need pgtest.Main in this package's TestMain.)

// lcSeller is one seller's own computer: a data directory, and its own
// credential store entry for the project (keychain: held here while the
// computer runs no command, so that sellers signed in to the same project
// on two computers do not share the one mock store's entry).
type lcSeller struct {
	env      map[string]string
	keychain *string
}

// lcEnv seeds the contract dataset and returns the live-mode environment of
// a fresh data directory (not signed in).
func lcEnv(t *testing.T) (*pgtest.Env, func() lcSeller) {
	t.Helper()
	env := pgtest.Need(t)
	if err := env.Seed(context.Background(), contract.Dataset()); err != nil {
		t.Fatalf("seed: %v", err)
	}
	return env, func() lcSeller {
		dir := t.TempDir()
		return lcSeller{env: map[string]string{
			"HOME": dir, "XDG_DATA_HOME": filepath.Join(dir, "data"),
			"SUPABASE_URL":      env.Endpoint.URL,
			"SUPABASE_ANON_KEY": env.PublicKey(),
		}, keychain: new(string)}
	}
}

// lcRun runs one command line with stdin.
func lcRun(t *testing.T, env map[string]string, stdin string, argv ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	f := &cli.Factory{
		IO:         cli.IOStreams{In: strings.NewReader(stdin), Out: &out, ErrOut: &errb},
		Getenv:     func(k string) string { return env[k] },
		Clock:      domain.SystemClock{},
		IDs:        domain.RandomIDs{},
		Executable: func() (string, error) { return "/opt/trovesnap/bin/trovesnap", nil },
	}
	code := cli.Run(context.Background(), f, argv)
	return result{out.String(), errb.String(), code}
}

// exec runs one command line on this computer, with its credential store.
func (s lcSeller) exec(t *testing.T, stdin string, argv ...string) result {
	t.Helper()
	account := live.SessionAccount(s.env["SUPABASE_URL"])
	if *s.keychain != "" {
		_ = keyring.Set(live.KeyringService, account, *s.keychain)
	} else {
		_ = keyring.Delete(live.KeyringService, account)
	}
	defer func() {
		*s.keychain, _ = keyring.Get(live.KeyringService, account)
		_ = keyring.Delete(live.KeyringService, account)
	}()
	return lcRun(t, s.env, stdin, argv...)
}

// lcLogin signs userID in on a new computer.
func lcLogin(t *testing.T, env *pgtest.Env, newSeller func() lcSeller, userID string) lcSeller {
	t.Helper()
	email, pw := userID+"@example.com", "pw-"+userID
	env.Endpoint.AddAuthUser(email, pw, userID)
	s := newSeller()
	if r := s.exec(t, pw+"\n", "login", "--email", email, "--password-stdin"); r.code != cli.ExitOK {
		t.Fatalf("login as %s: %+v", userID, r)
	}
	// The computer's approval passphrase (live mode: local defence in depth).
	if r := s.exec(t, testPass+"\n", "passphrase", "set", "--passphrase-stdin"); r.code != cli.ExitOK {
		t.Fatalf("passphrase set for %s: %+v", userID, r)
	}
	return s
}

func (s lcSeller) run(t *testing.T, argv ...string) result {
	t.Helper()
	return s.exec(t, "", argv...)
}

// runP runs a command that grants or widens authority, with the passphrase
// on stdin.
func (s lcSeller) runP(t *testing.T, argv ...string) result {
	t.Helper()
	return s.exec(t, testPass+"\n", append(argv, "--passphrase-stdin")...)
}

// lcNoToken fails when a command printed anything token-shaped.
func lcNoToken(t *testing.T, what string, r result) {
	t.Helper()
	if strings.Contains(r.out+r.err, domain.TokenPrefix) {
		t.Fatalf("%s printed a credential", what)
	}
}

// lcDigest is what client administration could change: every table's row
// count and the full contents of the client and limits tables.
func lcDigest(t *testing.T, env *pgtest.Env) string {
	t.Helper()
	ctx := context.Background()
	counts, err := env.Cluster.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var sb strings.Builder
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		sb.WriteString(k + "=" + itoa(counts[k]) + ";")
	}
	for _, table := range []string{"mcp_clients", "mcp_limits"} {
		var d string
		if err := conn.QueryRow(ctx, "SELECT coalesce(md5(string_agg(t::text, '|' ORDER BY t::text)), '') FROM trovesnap."+table+" t").Scan(&d); err != nil {
			t.Fatal(err)
		}
		sb.WriteString(table + ":" + d + ";")
	}
	return sb.String()
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func lcResolve(t *testing.T, env *pgtest.Env, token string) (domain.Principal, error) {
	t.Helper()
	b, err := live.New(live.Options{URL: env.Endpoint.URL, PublicKey: env.PublicKey()})
	if err != nil {
		t.Fatal(err)
	}
	return b.ResolvePrincipal(context.Background(), token)
}

func TestClientLive_SellerRegistersGovernsAndRotates(t *testing.T) {
	env, newSeller := lcEnv(t)
	owner := lcLogin(t, env, newSeller, fixtures.DemoUserID)

	// Register: the token is shown once, in the answer, and works at once.
	r := owner.runP(t, "client", "register", "--name", "Paul's Claude Code", "--type", "claude_code", "--tenant", fixtures.DemoTenantID,
		"--actor", fixtures.DemoUserID, "--groups", "tenant_read,candidate_write", "--json")
	if r.code != cli.ExitOK {
		t.Fatalf("register: %+v", r)
	}
	var reg cli.RegisterOutput
	if err := json.Unmarshal([]byte(r.out), &reg); err != nil {
		t.Fatal(err)
	}
	if !domain.WellFormedToken(reg.Token) || reg.Client.ID != reg.ClientID || reg.Client.Status != domain.ClientActive ||
		reg.Client.CreatedBy != fixtures.DemoUserID || !reg.Client.HasCredential || len(reg.Previews) == 0 {
		t.Fatalf("register output = %+v", reg.Client)
	}
	if strings.Contains(r.err, domain.TokenPrefix) {
		t.Fatal("register printed the token on stderr")
	}
	id, tok := reg.ClientID, reg.Token
	if p, err := lcResolve(t, env, tok); err != nil || p.Client.ID != id || p.TenantID != fixtures.DemoTenantID || p.Role != domain.RoleOwner {
		t.Fatalf("the registered client resolves to %+v, %v", p, err)
	}
	// The human answer shows the token (and the previews that embed it) and
	// names the live settings the host needs, never their values.
	h := owner.runP(t, "client", "register", "--name", "Second", "--type", "custom", "--tenant", fixtures.DemoTenantID,
		"--actor", fixtures.CatalogerUserID, "--groups", "tenant_read")
	if h.code != cli.ExitOK || !strings.Contains(h.out, "Token (shown once") || !strings.Contains(h.out, "SUPABASE_URL") ||
		!strings.Contains(h.out, "SUPABASE_ANON_KEY") || strings.Contains(h.out, "TROVESNAP_SUPABASE_KEY") {
		t.Fatalf("human register: %+v", h)
	}
	if i := strings.Index(h.out, domain.TokenPrefix); i < 0 || len(h.out) < i+56 || !domain.WellFormedToken(h.out[i:i+56]) {
		t.Fatalf("human register shows no token: %s", h.out)
	}

	// Read: list, show, preview never print a credential.
	l := owner.run(t, "client", "list", "--tenant", fixtures.DemoTenantID, "--json")
	lcNoToken(t, "client list", l)
	var cs []domain.Client
	if err := json.Unmarshal([]byte(l.out), &cs); err != nil || !slices.ContainsFunc(cs, func(c domain.Client) bool { return c.ID == id }) {
		t.Fatalf("list = %s, %v", l.out, err)
	}
	s := owner.run(t, "client", "show", id, "--json")
	lcNoToken(t, "client show", s)
	var det cli.ClientDetail
	if err := json.Unmarshal([]byte(s.out), &det); err != nil || det.ID != id || det.Limits != domain.DefaultLimits() {
		t.Fatalf("show = %s, %v", s.out, err)
	}
	if p := owner.run(t, "client", "preview", id); p.code != cli.ExitOK || !strings.Contains(p.out, "<paste the token") {
		t.Fatalf("preview: %+v", p)
	} else {
		lcNoToken(t, "client preview", p)
	}

	// Suspend and reactivate: the next resolution sees each at once.
	if r := owner.run(t, "client", "suspend", id); r.code != cli.ExitOK || !strings.Contains(r.out, id+" is now suspended") {
		t.Fatalf("suspend: %+v", r)
	}
	if _, err := lcResolve(t, env, tok); !errors.Is(err, domain.ErrClientSuspended) {
		t.Fatalf("after suspend: %v", err)
	}
	if r := owner.runP(t, "client", "reactivate", id); r.code != cli.ExitOK || !strings.Contains(r.out, "is now active") {
		t.Fatalf("reactivate: %+v", r)
	}

	// Rotate: the old token stops working, the new one works.
	r = owner.runP(t, "client", "rotate", id, "--json")
	var rot cli.RegisterOutput
	if r.code != cli.ExitOK || json.Unmarshal([]byte(r.out), &rot) != nil || !domain.WellFormedToken(rot.Token) || rot.Token == tok {
		t.Fatalf("rotate: %+v", r)
	}
	if _, err := lcResolve(t, env, tok); !errors.Is(err, domain.ErrClientNotRegistered) {
		t.Fatalf("old token after rotate: %v", err)
	}
	if p, err := lcResolve(t, env, rot.Token); err != nil || p.Client.ID != id {
		t.Fatalf("new token after rotate: %+v, %v", p, err)
	}

	// Limits of the client, then of the tenant. A client's limits narrow
	// its tenant's, so the tenant's paid budget is raised first.
	if r := owner.runP(t, "limits", "set", "--tenant", fixtures.DemoTenantID, "--paid-usd-per-day", "2"); r.code != cli.ExitOK {
		t.Fatalf("limits set (tenant): %+v", r)
	}
	if r := owner.runP(t, "limits", "set", "--tenant", fixtures.DemoTenantID, "--client", id, "--reads", "7", "--paid-usd-per-day", "1.5"); r.code != cli.ExitOK {
		t.Fatalf("limits set: %+v", r)
	}
	want := domain.DefaultLimits()
	want.ReadsPerMinute, want.MaxDailyPaidCostUSD = 7, 1.5
	var got domain.Limits
	r = owner.run(t, "limits", "show", "--tenant", fixtures.DemoTenantID, "--client", id, "--json")
	if r.code != cli.ExitOK || json.Unmarshal([]byte(r.out), &got) != nil || got != want {
		t.Fatalf("limits show = %+v (%s), want %+v", got, r.out, want)
	}

	// tools list --as explains a client of the seller's tenant.
	r = owner.run(t, "tools", "list", "--as", contract.SuspendedClientID, "--json")
	var tl cli.ToolsListOutput
	if r.code != cli.ExitOK || json.Unmarshal([]byte(r.out), &tl) != nil || tl.Principal == nil ||
		tl.Principal.ClientStatus != domain.ClientSuspended || tl.Principal.Role != domain.RoleCataloger || tl.Mode != "live" {
		t.Fatalf("tools list --as: %+v", r)
	}

	// Revoke is final: a later reactivation is refused and changes nothing.
	if r := owner.run(t, "client", "revoke", id); r.code != cli.ExitOK || !strings.Contains(r.out, "is now revoked") {
		t.Fatalf("revoke: %+v", r)
	}
	before := lcDigest(t, env)
	if r := owner.runP(t, "client", "reactivate", id); r.code != cli.ExitUsage || !strings.Contains(r.err, "cannot become active") {
		t.Fatalf("reactivate a revoked client: %+v", r)
	}
	if r := owner.runP(t, "client", "rotate", id); r.code != cli.ExitUsage {
		t.Fatalf("rotate a revoked client: %+v", r)
	} else {
		lcNoToken(t, "a refused rotation", r)
	}
	if lcDigest(t, env) != before {
		t.Fatal("refused changes to a revoked client changed the database")
	}
	if _, err := lcResolve(t, env, rot.Token); !errors.Is(err, domain.ErrClientNotRegistered) {
		t.Fatalf("a revoked client's token: %v", err)
	}
}

func TestClientLive_RefusalsChangeNothing(t *testing.T) {
	env, newSeller := lcEnv(t)
	owner := lcLogin(t, env, newSeller, fixtures.DemoUserID)
	cataloger := lcLogin(t, env, newSeller, fixtures.CatalogerUserID)
	other := lcLogin(t, env, newSeller, fixtures.OtherOwnerUserID)
	before := lcDigest(t, env)

	// A member without client.manage reads but changes nothing.
	if r := cataloger.run(t, "client", "list", "--tenant", fixtures.DemoTenantID); r.code != cli.ExitOK || !strings.Contains(r.out, fixtures.DemoClientID) {
		t.Fatalf("cataloger lists: %+v", r)
	}
	for _, argv := range [][]string{
		{"client", "suspend", fixtures.DemoClientID},
		{"client", "revoke", contract.PricerClientID},
		{"client", "rotate", contract.PricerClientID},
		{"client", "register", "--name", "Mine", "--type", "custom", "--tenant", fixtures.DemoTenantID, "--actor", fixtures.CatalogerUserID, "--groups", "tenant_read"},
		{"limits", "set", "--tenant", fixtures.DemoTenantID, "--reads", "999"},
	} {
		run := cataloger.run
		if argv[1] == "rotate" || argv[1] == "register" || argv[1] == "set" {
			run = cataloger.runP
		}
		r := run(t, argv...)
		if r.code != cli.ExitUsage || !strings.Contains(r.err, "client.manage") {
			t.Fatalf("cataloger %v: %+v", argv, r)
		}
		lcNoToken(t, "a refused command", r)
	}
	// Another tenant's owner: this tenant's clients and limits do not exist for it.
	for _, argv := range [][]string{
		{"client", "show", fixtures.DemoClientID},
		{"client", "suspend", fixtures.DemoClientID},
		{"client", "rotate", fixtures.DemoClientID},
		{"tools", "list", "--as", fixtures.DemoClientID},
	} {
		run := other.run
		if argv[1] == "rotate" {
			run = other.runP
		}
		r := run(t, argv...)
		if r.code != cli.ExitUsage || !strings.Contains(r.err, "unknown client "+fixtures.DemoClientID) {
			t.Fatalf("other tenant %v: %+v", argv, r)
		}
	}
	for _, argv := range [][]string{
		{"client", "list", "--tenant", fixtures.DemoTenantID},
		{"limits", "show", "--tenant", fixtures.DemoTenantID},
		{"limits", "set", "--tenant", fixtures.DemoTenantID, "--reads", "1"},
	} {
		r := other.run(t, argv...)
		if r.code != cli.ExitUsage || !strings.Contains(r.err, "unknown tenant "+fixtures.DemoTenantID) {
			t.Fatalf("other tenant %v: %+v", argv, r)
		}
	}
	// The owner may name only itself as the one who acts.
	if r := owner.run(t, "client", "suspend", contract.PricerClientID, "--by", fixtures.ManagerUserID); r.code != cli.ExitUsage ||
		!strings.Contains(r.err, "--by: must be the signed-in user") {
		t.Fatalf("owner --by another member: %+v", r)
	}
	// An account linked to no TroveSnap user acts nowhere.
	unlinked := lcLogin(t, env, newSeller, "user_unlinked")
	if r := unlinked.run(t, "client", "list"); r.code != cli.ExitUsage || !strings.Contains(r.err, "not linked to a TroveSnap user") {
		t.Fatalf("unlinked account: %+v", r)
	}
	// Not signed in: a configuration error that says to sign in.
	if r := newSeller().run(t, "client", "list"); r.code != cli.ExitConfig || !strings.Contains(r.err, "trovesnap login") {
		t.Fatalf("not signed in: %+v", r)
	}
	if lcDigest(t, env) != before {
		t.Fatal("refused commands changed the database")
	}
	if p, err := lcResolve(t, env, contract.CredOwner); err != nil || p.ClientStatus != domain.ClientActive {
		t.Fatalf("the demo client after the refusals: %+v, %v", p, err)
	}
	if p, err := lcResolve(t, env, contract.CredPricer); err != nil || p.ClientStatus != domain.ClientActive {
		t.Fatalf("the pricer client after the refusals: %+v, %v", p, err)
	}
}
