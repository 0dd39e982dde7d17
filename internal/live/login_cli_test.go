package live_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/zalando/go-keyring"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/cli"
	"github.com/triunalabs/trovesnap/internal/contract"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/live"
	"github.com/triunalabs/trovesnap/internal/live/pgtest"
)

// The seller commands in live mode, end to end: `trovesnap login`, the
// policy commands and `trovesnap approve` as the signed-in seller, and
// `trovesnap logout`, over the Auth stand-in and the seller RPCs on real
// PostgreSQL.

// sellerCLI is one seller's machine: its own data directory and its own
// credential store entry (keychain: the project's entry while this machine
// is not running a command), configured for the test project.
type sellerCLI struct {
	env      *pgtest.Env
	dir      string
	vars     map[string]string
	keychain string
}

type cliResult struct {
	out, err string
	code     cli.ExitCode
}

func newSellerCLI(t *testing.T, env *pgtest.Env) *sellerCLI {
	dir := t.TempDir()
	return &sellerCLI{env: env, dir: dir, vars: map[string]string{
		"SUPABASE_URL": env.Endpoint.URL, "SUPABASE_ANON_KEY": anonKey(env),
		"TROVESNAP_DATA_DIR": dir, "TROVESNAP_DB": filepath.Join(dir, "live.db"), "HOME": dir, "NO_COLOR": "1"}}
}

func (c *sellerCLI) factory(in io.Reader, out, errOut io.Writer) *cli.Factory {
	return &cli.Factory{IO: cli.IOStreams{In: in, Out: out, ErrOut: errOut},
		Getenv: func(k string) string { return c.vars[k] }, Clock: domain.SystemClock{}, IDs: domain.RandomIDs{},
		Executable: func() (string, error) { return "/usr/local/bin/trovesnap", nil }}
}

// enter puts this machine's credential store entry in the (one, mock)
// credential store; leave takes it back out. Two machines signed in to the
// same project as different sellers do not see each other's session.
func (c *sellerCLI) enter() {
	account := live.SessionAccount(c.vars["SUPABASE_URL"])
	if c.keychain == "" {
		_ = keyring.Delete(live.KeyringService, account)
		return
	}
	_ = keyring.Set(live.KeyringService, account, c.keychain)
}

func (c *sellerCLI) leave() {
	c.keychain, _ = keyring.Get(live.KeyringService, live.SessionAccount(c.vars["SUPABASE_URL"]))
	_ = keyring.Delete(live.KeyringService, live.SessionAccount(c.vars["SUPABASE_URL"]))
}

func (c *sellerCLI) run(stdin string, argv ...string) cliResult {
	c.enter()
	defer c.leave()
	var out, errb bytes.Buffer
	code := cli.Run(ctx, c.factory(strings.NewReader(stdin), &out, &errb), argv)
	return cliResult{out.String(), errb.String(), code}
}

// refreshToken reads the kept session's refresh token from the (mock)
// credential store: the only place it is kept. The access token is kept
// nowhere; each command derives its own.
func (c *sellerCLI) refreshToken(t *testing.T) string {
	t.Helper()
	var e struct {
		RefreshToken string `json:"refresh_token"`
	}
	if err := json.Unmarshal([]byte(c.keychain), &e); err != nil || e.RefreshToken == "" {
		t.Fatalf("no session in the credential store: %v", err)
	}
	return e.RefreshToken
}

// livePass is the approval passphrase the sellers set on their machines.
const livePass = "seller approval passphrase"

// setPassphrase sets this machine's approval passphrase (live mode: local
// defence in depth; the signed-in user acts).
func (c *sellerCLI) setPassphrase(t *testing.T) {
	t.Helper()
	if r := c.run(livePass+"\n", "passphrase", "set", "--passphrase-stdin"); r.code != cli.ExitOK {
		t.Fatalf("passphrase set: %+v", r)
	}
}

func (c *sellerCLI) login(t *testing.T, email, password string) cliResult {
	t.Helper()
	r := c.run(password+"\n", "login", "--email", email, "--password-stdin")
	if r.code != cli.ExitOK {
		t.Fatalf("login %s: %+v", email, r)
	}
	return r
}

func TestCLI_LiveLoginPolicyLogout(t *testing.T) {
	keyring.MockInit()
	env := seeded(t)
	env.Endpoint.AddAuthUser("paul@heritage.test", "paul-pass-1", fixtures.DemoUserID)
	env.Endpoint.AddAuthUser("cat@heritage.test", "cat-pass-1", fixtures.CatalogerUserID)
	owner := newSellerCLI(t, env)
	var printed strings.Builder
	keep := func(r cliResult) cliResult { printed.WriteString(r.out + r.err); return r }

	// Not signed in: the configuration exit code and what to do.
	if r := keep(owner.run("", "policy", "list")); r.code != cli.ExitConfig || !strings.Contains(r.err, "trovesnap login") || r.out != "" {
		t.Fatalf("policy list before login: %+v", r)
	}
	// Refused sign-ins write nothing.
	if r := keep(owner.run("wrong\n", "login", "--email", "paul@heritage.test", "--password-stdin")); r.code != cli.ExitError ||
		!strings.Contains(r.err, "invalid email or password") || strings.Contains(r.out+r.err, "wrong") {
		t.Fatalf("wrong password: %+v", r)
	}
	if r := keep(owner.run("paul-pass-1\n", "login", "--email", "paul@heritage.test")); r.code != cli.ExitUsage || !strings.Contains(r.err, "--password-stdin") {
		t.Fatalf("a password from a pipe without --password-stdin: %+v", r)
	}
	if owner.keychain != "" {
		t.Fatal("a refused sign-in left a session")
	}

	// A session file an older release left is deleted unread, and said so.
	legacy := filepath.Join(owner.dir, live.LegacySessionFileName)
	if err := os.WriteFile(legacy, []byte(`{"version":1,"refresh_token":"old-release-token"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	r := keep(owner.login(t, "paul@heritage.test", "paul-pass-1"))
	for _, want := range []string{"Signed in to " + env.Endpoint.URL + " as paul@heritage.test", "TroveSnap user user_88", "owner of tenant_123",
		"Session kept in the OS credential store"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("login output lacks %q:\n%s", want, r.out)
		}
	}
	if _, err := os.Stat(legacy); !os.IsNotExist(err) || !strings.Contains(r.err, "older release") {
		t.Fatalf("the old session file: %v; stderr %q", err, r.err)
	}
	refresh := owner.refreshToken(t)
	noTokenInFiles(t, owner.dir, refresh)
	owner.setPassphrase(t)

	// The policy commands act as the signed-in owner.
	file := filepath.Join(owner.dir, "tags.yaml")
	if err := os.WriteFile(file, []byte(`name: Bind printed tags
allowed_tools: [trove_bind_item_identity]
scope: {estate_sale_ids: [sale_221]}
conditions: {maximum_items_per_run: 5, permitted_fields: [qr_code], require_no_conflicts: true}
limits: {maximum_daily_actions: 100, maximum_cost_usd_per_day: 0}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := keep(owner.run(livePass+"\n", "policy", "create", "--file", file, "--passphrase-stdin")); r.code != cli.ExitOK || !strings.Contains(r.out, "v1 (disabled") {
		t.Fatalf("policy create: %+v", r)
	}
	var ps []domain.Policy
	r = keep(owner.run("", "policy", "list", "--json"))
	if err := json.Unmarshal([]byte(r.out), &ps); err != nil || len(ps) != 1 || ps[0].Status != domain.PolicyDisabled ||
		ps[0].CreatedBy != fixtures.DemoUserID || ps[0].TenantID != fixtures.DemoTenantID {
		t.Fatalf("policy list: %+v (%v)", r, err)
	}
	id := ps[0].ID
	if r := keep(owner.run("", "policy", "enable", id, "--by", fixtures.ManagerUserID)); r.code != cli.ExitUsage || !strings.Contains(r.err, "signed-in user user_88") {
		t.Fatalf("enable in another user's name: %+v", r)
	}
	if r := keep(owner.run(livePass+"\n", "policy", "enable", id, "--passphrase-stdin")); r.code != cli.ExitOK || !strings.Contains(r.out, "active (v2)") {
		t.Fatalf("policy enable: %+v", r)
	}
	var p domain.Policy
	if r := keep(owner.run("", "policy", "show", id, "--json")); json.Unmarshal([]byte(r.out), &p) != nil || p.Status != domain.PolicyActive || p.Version != 2 {
		t.Fatalf("policy show: %+v", r)
	}

	// A cataloger signed in on another machine may not manage policies;
	// nothing changes.
	cat := newSellerCLI(t, env)
	keep(cat.login(t, "cat@heritage.test", "cat-pass-1"))
	cat.setPassphrase(t)
	before := counts(t, env)
	if r := keep(cat.run("", "policy", "disable", id)); r.code != cli.ExitUsage || !strings.Contains(r.err, "permission denied") {
		t.Fatalf("cataloger disabled a policy: %+v", r)
	}
	if r := keep(cat.run(livePass+"\n", "policy", "create", "--file", file, "--passphrase-stdin")); r.code != cli.ExitUsage || !strings.Contains(r.err, "permission denied") {
		t.Fatalf("cataloger created a policy: %+v", r)
	}
	sameCounts(t, env, before, "the cataloger's refused policy commands")

	// Each command is a new process: it finds only the refresh token, so it
	// refreshes once, and the rotated session is saved.
	refreshes := env.Endpoint.AuthRequests()["POST /auth/v1/token"]
	if r := keep(owner.run("", "policy", "show", id)); r.code != cli.ExitOK {
		t.Fatalf("policy show in a new process: %+v", r)
	}
	refresh2 := owner.refreshToken(t)
	if refresh2 == refresh || env.Endpoint.AuthRequests()["POST /auth/v1/token"] != refreshes+1 {
		t.Fatal("the kept session was not refreshed once and saved")
	}
	noTokenInFiles(t, owner.dir, refresh, refresh2)

	// Logout revokes the session on the project and deletes the file.
	if r := keep(owner.run("", "logout")); r.code != cli.ExitOK || !strings.Contains(r.out, "revoked") {
		t.Fatalf("logout: %+v", r)
	}
	if owner.keychain != "" {
		t.Fatal("the session survived logout in the credential store")
	}
	if status, body := postJSON(t, env.Endpoint.URL+"/auth/v1/token?grant_type=refresh_token", anonKey(env), "", `{"refresh_token":"`+refresh2+`"}`); status != http.StatusBadRequest {
		t.Fatalf("the revoked refresh token still refreshes: %d %v", status, body)
	}
	if r := keep(owner.run("", "logout")); r.code != cli.ExitOK || !strings.Contains(r.out, "Not signed in") {
		t.Fatalf("logout again: %+v", r)
	}
	if r := keep(owner.run("", "policy", "list")); r.code != cli.ExitConfig || !strings.Contains(r.err, "trovesnap login") {
		t.Fatalf("after logout: %+v", r)
	}
	// Logout where the session cannot be revoked (it was ended elsewhere:
	// its refresh token was spent by another client) still deletes the kept
	// session, and says so.
	keep(cat.login(t, "cat@heritage.test", "cat-pass-1"))
	catRefresh := cat.refreshToken(t)
	if status, _ := postJSON(t, env.Endpoint.URL+"/auth/v1/token?grant_type=refresh_token", anonKey(env), "", `{"refresh_token":"`+catRefresh+`"}`); status != http.StatusOK {
		t.Fatalf("spending the cataloger's refresh token: %d", status)
	}
	if r := keep(cat.run("", "logout")); r.code != cli.ExitOK || !strings.Contains(r.out, "deleted") || !strings.Contains(r.err, "already ended") {
		t.Fatalf("logout of an ended session: %+v", r)
	}
	if cat.keychain != "" {
		t.Fatal("the session survived a logout that could not revoke it")
	}

	for _, secret := range []string{refresh, refresh2, catRefresh, "paul-pass-1", "cat-pass-1", anonKey(env)} {
		if strings.Contains(printed.String(), secret) {
			t.Fatalf("a secret was printed:\n%s", printed.String())
		}
	}
}

// An Auth account linked to no TroveSnap user signs in, is told so, and
// can act nowhere.
func TestCLI_LiveLoginOfAnUnlinkedAccount(t *testing.T) {
	keyring.MockInit()
	env := seeded(t)
	env.Endpoint.AddAuthUser("new@heritage.test", "new-pass-1", "user_not_in_the_dataset")
	c := newSellerCLI(t, env)
	r := c.login(t, "new@heritage.test", "new-pass-1")
	if !strings.Contains(r.out, "not linked to a TroveSnap user") || !strings.Contains(r.out, pgtest.AuthSubject("user_not_in_the_dataset")) {
		t.Fatalf("login of an unlinked account: %+v", r)
	}
	if r := c.run("", "policy", "list"); r.code != cli.ExitUsage || !strings.Contains(r.err, "not linked") {
		t.Fatalf("policy list of an unlinked account: %+v", r)
	}
}

// `trovesnap approve` in live mode, on a real pseudo-terminal: the signed-in
// owner sees the agent's proposal, approves it (enter, a, y), and the grant
// the project records is a human one by that owner — issued under the
// owner's own token.
func TestCLI_LiveApproveOnATerminal(t *testing.T) {
	keyring.MockInit()
	if runtime.GOOS == "windows" {
		t.Skip("no pseudo-terminals on Windows")
	}
	env := seeded(t)
	env.Endpoint.AddAuthUser("paul@heritage.test", "paul-pass-1", fixtures.DemoUserID)
	c := newSellerCLI(t, env)

	// Without a terminal: refused before anything is opened.
	if r := c.run("y\n", "approve"); r.code != cli.ExitNotTTY || r.out != "" {
		t.Fatalf("approve without a terminal: %+v", r)
	}
	c.login(t, "paul@heritage.test", "paul-pass-1")
	c.setPassphrase(t)

	lg := newLiveGate(t, env)
	res := call(t, connect(t, lg.g, contract.CredOwner), "trove_propose_candidate_promotion", map[string]any{
		"candidate_id": fixtures.DemoCandidateID, "expected_version": 3, "idempotency_key": "cli-live-approve-1"})
	pid, _ := res["data"].(map[string]any)["proposal_id"].(string)
	if pid == "" {
		t.Fatalf("proposal = %v", res)
	}

	// --as names someone else: refused.
	term := startInProcessTerminal(t, c, "approve", "--as", fixtures.ManagerUserID)
	if code := term.wait(t); code != cli.ExitUsage || !strings.Contains(term.errOut.String(), "signed-in user user_88") {
		t.Fatalf("approve --as another user: exit %d, %s", code, term.errOut.String())
	}

	term = startInProcessTerminal(t, c, "approve")
	term.waitFor(t, "approve: approval passphrase: ")
	term.press(t, livePass+"\r")
	term.waitFor(t, pid)
	term.waitFor(t, "promote_candidate")
	term.press(t, "\r")
	term.waitFor(t, "Targets (1)")
	term.press(t, "a")
	term.waitFor(t, "bound to exactly this proposal and to the agent that asked for it,")
	term.press(t, "y")
	admin := sellerAs(t, env, fixtures.DemoUserID)
	var grants []domain.Grant
	for deadline := time.Now().Add(20 * time.Second); len(grants) == 0; time.Sleep(50 * time.Millisecond) { // polling the project
		var err error
		if grants, err = admin.ListGrants(ctx, fixtures.DemoTenantID, domain.GrantActive); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no grant after y; the terminal showed:\n%s", term.screen())
		}
	}
	if g := grants[0]; g.ProposalID != pid || g.IssuedBy.Type != domain.IssuerHuman || g.IssuedBy.ActorID != fixtures.DemoUserID ||
		g.IssuedBy.Surface != "trovesnap_approve" {
		t.Fatalf("grant %+v", g)
	}
	term.press(t, "q")
	if code := term.wait(t); code != cli.ExitOK {
		t.Fatalf("approve exited %d: %s", code, term.errOut.String())
	}
}

// inProcessTerminal runs one CLI command in this process with a pseudo-
// terminal as its stdin and stdout.
type inProcessTerminal struct {
	ptmx    *os.File
	tty     *os.File
	machine *sellerCLI
	mu      sync.Mutex
	out     bytes.Buffer
	errOut  *bytes.Buffer
	done    chan cli.ExitCode
}

func startInProcessTerminal(t *testing.T, c *sellerCLI, argv ...string) *inProcessTerminal {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatalf("pty: %v", err)
	}
	_ = pty.Setsize(ptmx, &pty.Winsize{Rows: 30, Cols: 110})
	term := &inProcessTerminal{ptmx: ptmx, tty: tty, machine: c, errOut: &bytes.Buffer{}, done: make(chan cli.ExitCode, 1)}
	runCtx, cancel := context.WithCancel(ctx)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			term.mu.Lock()
			term.out.Write(buf[:n])
			term.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	c.enter() // the machine's credential store, for as long as the terminal runs
	go func() { term.done <- cli.Run(runCtx, c.factory(tty, tty, term.errOut), argv) }()
	t.Cleanup(func() { cancel(); _ = tty.Close(); _ = ptmx.Close() })
	return term
}

func (term *inProcessTerminal) screen() string {
	term.mu.Lock()
	defer term.mu.Unlock()
	return term.out.String()
}

func (term *inProcessTerminal) waitFor(t *testing.T, s string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(term.screen(), s); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the terminal never showed %q; it showed:\n%q\nstderr: %s", s, term.screen(), term.errOut.String())
		}
	}
}

func (term *inProcessTerminal) press(t *testing.T, keys string) {
	t.Helper()
	if _, err := io.WriteString(term.ptmx, keys); err != nil {
		t.Fatal(err)
	}
}

func (term *inProcessTerminal) wait(t *testing.T) cli.ExitCode {
	t.Helper()
	select {
	case code := <-term.done:
		term.machine.leave()
		return code
	case <-time.After(20 * time.Second):
		t.Fatalf("the command did not exit; the terminal showed:\n%q", term.screen())
	}
	return 0
}

// noSessionFiles fails when a file under dir holds any token the stand-in
// issued.
func noSessionFiles(t *testing.T, env *pgtest.Env, dir string) {
	t.Helper()
	noTokenInFiles(t, dir, env.Endpoint.AuthTokens()...)
}

// Where no credential store answers (here: Linux without a Secret Service)
// — or TROVESNAP_SESSION_STORE=memory says not to use it — login checks the
// sign-in, says clearly that the session is not kept, writes no file, and
// revokes the session it could not keep. A seller command from a pipe
// then says it needs a terminal to sign in.
func TestCLI_LiveLoginWithoutACredentialStore(t *testing.T) {
	keyring.MockInitWithError(errors.New("The name org.freedesktop.secrets was not provided by any .service files"))
	t.Cleanup(keyring.MockInit)
	env := seeded(t)
	env.Endpoint.AddAuthUser("paul@heritage.test", "paul-pass-1", fixtures.DemoUserID)
	c := newSellerCLI(t, env)
	legacy := filepath.Join(c.dir, live.LegacySessionFileName)
	if err := os.WriteFile(legacy, []byte(`{"version":1,"refresh_token":"old-release-token"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	logouts := env.Endpoint.AuthRequests()["POST /auth/v1/logout"]
	r := c.login(t, "paul@heritage.test", "paul-pass-1")
	for _, want := range []string{"Signed in to " + env.Endpoint.URL, "TroveSnap user user_88", "Session not kept", "sign in per session"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("login output lacks %q:\n%s", want, r.out)
		}
	}
	for _, want := range []string{"no credential store is available", "org.freedesktop.secrets", "no file is written", "older release"} {
		if !strings.Contains(r.err, want) {
			t.Errorf("login's stderr lacks %q:\n%s", want, r.err)
		}
	}
	if entries, _ := os.ReadDir(c.dir); len(entries) != 0 {
		t.Fatalf("login without a credential store left files: %v", entries)
	}
	if n := env.Endpoint.AuthRequests()["POST /auth/v1/logout"]; n != logouts+1 {
		t.Fatalf("the session login could not keep was not revoked: logout requests %d → %d", logouts, n)
	}
	noSessionFiles(t, env, c.dir)

	if r := c.run("", "policy", "list"); r.code != cli.ExitConfig || !strings.Contains(r.err, "no credential store") ||
		!strings.Contains(r.err, "terminal") {
		t.Fatalf("policy list from a pipe without a credential store: %+v", r)
	}
	if r := c.run("", "logout"); r.code != cli.ExitOK || !strings.Contains(r.out, "no credential store keeps a session here") {
		t.Fatalf("logout without a credential store: %+v", r)
	}

	// The store works, but the seller said not to use it.
	keyring.MockInit()
	c.vars["TROVESNAP_SESSION_STORE"] = "memory"
	r = c.login(t, "paul@heritage.test", "paul-pass-1")
	if !strings.Contains(r.out, "Session not kept") || !strings.Contains(r.err, "TROVESNAP_SESSION_STORE=memory") || c.keychain != "" {
		t.Fatalf("login with TROVESNAP_SESSION_STORE=memory: %+v (kept %v)", r, c.keychain != "")
	}
	noSessionFiles(t, env, c.dir)
}
