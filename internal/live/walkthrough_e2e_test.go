package live_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/zalando/go-keyring"

	"github.com/triunalabs/trovesnap/internal/cli"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/live/pgtest"
)

// The README's "From a new Supabase project to the §41 flow", on an empty
// project, with the documented commands only: the owner bootstrapped in
// SQL (step 2), then `trovesnap login`, `sale create`, `sale list`,
// `client register` on the seller's machine (step 3), `doctor` where the
// host runs (step 4), and the flow over stdio with the built binary, the
// block, `trovesnap approve` on a terminal, the execution, and the audit of
// it all in the project (step 5; §41 steps 1–12 and 16). Then (#16) the
// rest of §41 on the promoted item: its photo came in by `trovesnap media
// add`, the promotion gave it that photo and the supplied price, and it is
// made ready, its sale published and it published naming the photo, each
// approved on the terminal; the buyer sees exactly that photo and the
// price. No fixture, no SQL after the bootstrap, and the host holds the
// public key and its token.
func TestWalkthrough_FreshProjectByTheREADME(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no pseudo-terminals on Windows")
	}
	keyring.MockInit()
	env := pgtest.Need(t)
	if err := env.Seed(ctx, emptyDataset()); err != nil {
		t.Fatal(err)
	}
	bin := trovesnapBinary(t)

	// Step 2: the first owner, as the database owner.
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL ROLE trovesnap_owner"); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "SELECT trovesnap.bootstrap_owner('tenant_heritage', 'Heritage Estate Sales', 'user_jo', 'Jo Seller', 'jo@example.com', $1)",
			pgtest.AuthSubject("user_jo"))
		return err
	}); err != nil {
		t.Fatalf("bootstrap_owner: %v", err)
	}
	env.Endpoint.AddAuthUser("jo@example.com", "jo-password-1", "user_jo")

	// Step 3: the seller's machine.
	jo := newSellerCLI(t, env)
	jo.login(t, "jo@example.com", "jo-password-1")
	starts := time.Now().UTC().AddDate(0, 0, 9).Format("2006-01-02")
	ends := time.Now().UTC().AddDate(0, 0, 12).Format("2006-01-02")
	r := jo.run("", "sale", "create", "--name", "Maple Street Estate", "--starts", starts, "--ends", ends, "--city", "Portland", "--json")
	var sale struct {
		ID       string `json:"id"`
		TenantID string `json:"tenant_id"`
		Status   string `json:"status"`
	}
	if r.code != cli.ExitOK || json.Unmarshal([]byte(r.out), &sale) != nil || sale.ID == "" || sale.TenantID != "tenant_heritage" {
		t.Fatalf("sale create: %+v", r)
	}
	if r := jo.run("", "sale", "list"); r.code != cli.ExitOK || !strings.Contains(r.out, sale.ID) || !strings.Contains(r.out, "Maple Street Estate") {
		t.Fatalf("sale list: %+v", r)
	}
	// Registering a client widens authority: the seller's passphrase, set once
	// on this machine.
	if r := jo.run(livePass+"\n", "passphrase", "set", "--passphrase-stdin"); r.code != cli.ExitOK {
		t.Fatalf("passphrase set: %+v", r)
	}
	r = jo.run(livePass+"\n", "client", "register", "--name", "Jo's Claude Code", "--type", "claude_code", "--tenant", "tenant_heritage",
		"--actor", "user_jo", "--groups", "tenant_read,candidate_write,action_proposal,controlled_action", "--json", "--passphrase-stdin")
	var reg cli.RegisterOutput
	if r.code != cli.ExitOK || json.Unmarshal([]byte(r.out), &reg) != nil || reg.Token == "" {
		t.Fatalf("client register: %+v", r)
	}
	// The printed setup is all a host needs: the URL, the public key, the token.
	var claude string
	for _, p := range reg.Previews {
		if p.Host == "claude_code_cli" {
			claude = p.Text
		}
	}
	for _, want := range []string{"SUPABASE_URL=" + env.Endpoint.URL, "SUPABASE_ANON_KEY=" + jo.vars["SUPABASE_ANON_KEY"], "TROVESNAP_CLIENT_TOKEN=" + reg.Token} {
		if !strings.Contains(claude, want) {
			t.Fatalf("the Claude Code setup lacks %q:\n%s", want, claude)
		}
	}

	// Step 4: doctor where the host runs (its own data directory, the
	// preview's environment).
	host := newSellerCLI(t, env)
	host.vars["TROVESNAP_CLIENT_TOKEN"] = reg.Token
	if r := host.run("", "doctor"); r.code != cli.ExitOK || strings.Contains(r.out, "PROBLEM") || !strings.Contains(r.out, "public role:     anon") {
		t.Fatalf("doctor: %+v", r)
	}

	// Step 5: the flow, from the built binary over stdio.
	dir := t.TempDir()
	cmd := exec.Command(bin, "mcp", "serve")
	cmd.Env = []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH"), "TROVESNAP_DATA_DIR=" + dir,
		"SUPABASE_URL=" + env.Endpoint.URL, "SUPABASE_ANON_KEY=" + anonKey(env), "TROVESNAP_CLIENT_TOKEN=" + reg.Token}
	stderr := &bytes.Buffer{}
	cmd.Stderr = stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "claude-code", Version: "2.1.0"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to the binary: %v\n%s", err, stderr)
	}
	ok := func(name string, e map[string]any) map[string]any {
		t.Helper()
		if e["mode"] != "live" || (e["status"] != "succeeded" && e["status"] != "succeeded_with_warnings" && e["status"] != "proposed") {
			t.Fatalf("%s = %s", name, mustJSON(e))
		}
		return e["data"].(map[string]any)
	}
	sales := ok("trove_list_sales", call(t, cs, "trove_list_sales", map[string]any{}))
	if !strings.Contains(mustJSON(sales), sale.ID) {
		t.Fatalf("trove_list_sales does not list the new sale: %s", mustJSON(sales))
	}
	ok("trove_list_items", call(t, cs, "trove_list_items", map[string]any{"sale_id": sale.ID}))
	cand := ok("trove_create_candidate", call(t, cs, "trove_create_candidate", map[string]any{"sale_id": sale.ID,
		"title": "Walnut secretary desk", "category": "furniture.desks", "supplied_price_cents": 42000, "idempotency_key": "walk-cand-1"}))
	candID, _ := cand["candidate_id"].(string)
	if candID == "" || cand["canonical_item_created"] == true {
		t.Fatalf("candidate = %s", mustJSON(cand))
	}
	// #16: the seller's photo of it, in by `trovesnap media add` of the
	// built binary where the host runs (its token): private candidate
	// media, stored without its location.
	photo := dir + "/secretary desk.jpg"
	if err := os.WriteFile(photo, jpegWithGPS(t), 0o600); err != nil {
		t.Fatal(err)
	}
	media := exec.Command(bin, "media", "add", "--json", "--candidate", candID, photo)
	media.Env = []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH"), "TROVESNAP_DATA_DIR=" + dir,
		"SUPABASE_URL=" + env.Endpoint.URL, "SUPABASE_ANON_KEY=" + anonKey(env), "TROVESNAP_CLIENT_TOKEN=" + reg.Token}
	mout, err := media.Output()
	var added struct {
		Added  int `json:"added"`
		Photos []struct {
			AssetID string `json:"asset_id"`
		} `json:"photos"`
		Mode string `json:"mode"`
	}
	if err != nil || json.Unmarshal(mout, &added) != nil || added.Added != 1 || added.Mode != "live" || added.Photos[0].AssetID == "" ||
		strings.Contains(string(mout), reg.Token) {
		t.Fatalf("media add: %v\n%s", err, mout)
	}
	got := ok("trove_get_candidate", call(t, cs, "trove_get_candidate", map[string]any{"candidate_id": candID}))
	prop := ok("trove_propose_candidate_promotion", call(t, cs, "trove_propose_candidate_promotion", map[string]any{
		"candidate_id": candID, "expected_version": got["candidate"].(map[string]any)["version"], "idempotency_key": "walk-prop-1"}))
	pid := prop["proposal_id"].(string)
	if r := call(t, cs, "trove_execute_candidate_promotion", map[string]any{"proposal_id": pid, "idempotency_key": "walk-exec-0"}); r["status"] != "approval_required" {
		t.Fatalf("execution before approval = %s", mustJSON(r))
	}

	// `trovesnap approve` on the seller's terminal: enter, a, y.
	admin := sellerAs(t, env, "user_jo")
	approve := func(pid string) {
		t.Helper()
		term := startInProcessTerminal(t, jo, "approve")
		term.waitFor(t, "approve: approval passphrase: ")
		term.press(t, livePass+"\r")
		term.waitFor(t, pid)
		term.press(t, "\r")
		term.waitFor(t, "Targets (1)")
		term.press(t, "a")
		term.waitFor(t, "bound to exactly this proposal and to the agent that asked for it,")
		term.press(t, "y")
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) { // the terminal issues it
			grants, err := admin.ListGrants(ctx, "tenant_heritage", domain.GrantActive)
			if err != nil {
				t.Fatal(err)
			}
			if len(grants) == 1 && grants[0].ProposalID == pid {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no grant after y; the terminal showed:\n%s", term.screen())
			}
		}
		term.press(t, "q")
		if code := term.wait(t); code != cli.ExitOK {
			t.Fatalf("approve exited %d: %s", code, term.errOut.String())
		}
	}
	approve(pid)
	done := ok("trove_execute_candidate_promotion", call(t, cs, "trove_execute_candidate_promotion", map[string]any{"proposal_id": pid, "idempotency_key": "walk-exec-1"}))
	items, _ := done["created_item_ids"].([]any)
	if done["executed"] != true || done["simulated"] != false || len(items) != 1 {
		t.Fatalf("promotion = %s", mustJSON(done))
	}
	// §41 step 12: the canonical item, and its provenance in the project.
	item := ok("trove_get_item", call(t, cs, "trove_get_item", map[string]any{"item_id": items[0]}))
	if it, _ := item["item"].(map[string]any); it["sale_id"] != sale.ID || it["title"] != "Walnut secretary desk" {
		t.Fatalf("item = %s", mustJSON(item))
	}
	var provCand, provProp string
	if err := conn.QueryRow(ctx, "SELECT candidate_id, proposal_id FROM trovesnap.item_provenance WHERE item_id = $1", items[0]).Scan(&provCand, &provProp); err != nil ||
		provCand != candID || provProp != pid {
		t.Fatalf("provenance of %v: %s %s, %v", items[0], provCand, provProp, err)
	}
	// §41 step 12 (#16): the seller's agent reads that provenance too.
	if pv, _ := item["provenance"].(map[string]any); pv["candidate_id"] != candID || pv["proposal_id"] != pid || pv["promoted_at"] == "" {
		t.Fatalf("trove_get_item provenance = %s", mustJSON(item))
	}
	// #16: a complete draft — the candidate's supplied price and its photo,
	// private.
	it := item["item"].(map[string]any)
	photos, _ := it["photos"].([]any)
	if it["price_cents"] != float64(42000) || len(photos) != 1 || photos[0].(map[string]any)["published"] != false {
		t.Fatalf("the promoted item = %s", mustJSON(it))
	}
	photoID := photos[0].(map[string]any)["id"].(string)

	// §41 steps 13–15 on the promoted item: ready, the sale published, the
	// item's publication naming its photo, each approved on the terminal
	// and executed; then the buyer's view.
	step := func(proposeTool string, args map[string]any, execTool, key string) map[string]any {
		t.Helper()
		args["idempotency_key"] = key + "-prop"
		p := ok(proposeTool, call(t, cs, proposeTool, args))
		approve(p["proposal_id"].(string))
		return ok(execTool, call(t, cs, execTool, map[string]any{"proposal_id": p["proposal_id"], "idempotency_key": key + "-exec"}))
	}
	step("trove_propose_status_transition", map[string]any{"item_id": items[0], "expected_version": it["version"], "to_status": "ready",
		"effective_at": time.Now().UTC().Format(time.RFC3339)}, "trove_update_item_status", "walk-ready")
	sv := ok("trove_get_sale", call(t, cs, "trove_get_sale", map[string]any{"sale_id": sale.ID}))
	step("trove_propose_sale_publication", map[string]any{"sale_id": sale.ID, "expected_version": sv["sale"].(map[string]any)["version"]},
		"trove_publish_sale", "walk-sale")
	it = ok("trove_get_item", call(t, cs, "trove_get_item", map[string]any{"item_id": items[0]}))["item"].(map[string]any)
	step("trove_propose_item_publication", map[string]any{"item_id": items[0], "expected_version": it["version"], "photo_ids": []string{photoID}},
		"trove_publish_item", "walk-publish")
	pub := call(t, cs, "trove_get_public_item", map[string]any{"item_id": items[0]})
	pi := ok("trove_get_public_item", pub)["item"].(map[string]any)
	pphotos, _ := pi["photos"].([]any)
	if pi["price_cents"] != float64(42000) || len(pphotos) != 1 || pphotos[0].(map[string]any)["id"] != photoID {
		t.Fatalf("the buyer view = %s", mustJSON(pub))
	}
	for _, secret := range []string{added.Photos[0].AssetID, "storage_key", "source_assets", "internal_price", candID} {
		if strings.Contains(mustJSON(pub), secret) {
			t.Fatalf("the buyer view carries %q: %s", secret, mustJSON(pub))
		}
	}
	if err := cs.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	for _, s := range []string{reg.Token} {
		if strings.Contains(stderr.String(), s) {
			t.Fatal("the client token is in the server's log")
		}
	}

	// §41 step 16: every call is an event of this client in the project.
	events, err := env.Events(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, ev := range events {
		if ev.Client.ID == reg.ClientID && ev.Action == "mcp_tool_called" {
			if ev.TenantID != "tenant_heritage" || ev.Actor.ID != "user_jo" {
				t.Fatalf("event %s names %s / %s", ev.ID, ev.TenantID, ev.Actor.ID)
			}
			seen[ev.Tool.Name+"/"+ev.Outcome]++
		}
	}
	for _, want := range []string{"trove_list_sales/success", "trove_create_candidate/success", "trove_propose_candidate_promotion/success",
		"trove_execute_candidate_promotion/blocked", "trove_execute_candidate_promotion/success"} {
		if seen[want] != 1 {
			t.Errorf("%s: %d events, want 1 (all: %v)", want, seen[want], seen)
		}
	}
	// …and the seller verifies the tenant's hash chain from their machine.
	r = jo.run("", "audit", "verify", "--json")
	var rep struct {
		Intact bool  `json:"intact"`
		Events int64 `json:"events"`
	}
	if r.code != cli.ExitOK || json.Unmarshal([]byte(r.out), &rep) != nil || !rep.Intact || rep.Events < int64(len(seen)) {
		t.Fatalf("audit verify: %+v", r)
	}
}
