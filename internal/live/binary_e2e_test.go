package live_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/approval"
	"github.com/triunalabs/trovesnap/internal/contract"
	"github.com/triunalabs/trovesnap/internal/domain"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// trovesnapBinary builds cmd/trovesnap once for the package.
func trovesnapBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "trovesnap-live-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "trovesnap")
		if runtime.GOOS == "windows" {
			binPath += ".exe"
		}
		if out, err := exec.Command("go", "build", "-o", binPath, "../../cmd/trovesnap").CombinedOutput(); err != nil {
			binErr = err
			binPath = string(out)
		}
	})
	if binErr != nil {
		t.Fatalf("go build: %v\n%s", binErr, binPath)
	}
	return binPath
}

// The §41 flow as a host runs it: the built binary, `trovesnap mcp serve`
// over stdio, configured only by the environment the README names
// (SUPABASE_URL, SUPABASE_ANON_KEY, TROVESNAP_CLIENT_TOKEN); a go-sdk
// client on its stdin/stdout; the seller approving under their own JWT in
// between. The read events travel through the server's local outbox and are
// in the project once the server has exited; the client token is in no
// output of the process.
func TestBinary_LiveFlowOverStdio(t *testing.T) {
	env := seeded(t)
	bin := trovesnapBinary(t)
	key := env.PublicKey()
	var stderrs []*bytes.Buffer
	serve := func(token string) *mcp.ClientSession {
		t.Helper()
		dir := t.TempDir()
		cmd := exec.Command(bin, "mcp", "serve")
		cmd.Env = []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH"), "TROVESNAP_DATA_DIR=" + dir,
			"SUPABASE_URL=" + env.Endpoint.URL, "SUPABASE_ANON_KEY=" + key, "TROVESNAP_CLIENT_TOKEN=" + token}
		stderr := &bytes.Buffer{}
		cmd.Stderr = stderr
		stderrs = append(stderrs, stderr)
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "claude-code", Version: "2.1.0"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatalf("connect to the binary: %v\n%s", err, stderr)
		}
		return cs
	}
	data := func(name string, e map[string]any) map[string]any {
		t.Helper()
		if e["mode"] != "live" || (e["status"] != "succeeded" && e["status"] != "succeeded_with_warnings" && e["status"] != "proposed") {
			t.Fatalf("%s = %s", name, mustJSON(e))
		}
		return e["data"].(map[string]any)
	}
	seller := approval.Service{Admin: sellerAs(t, env, fixtures.DemoUserID), Clock: domain.SystemClock{}, IDs: domain.RandomIDs{}}
	approve := func(id, hash string) {
		t.Helper()
		if _, err := seller.Approve(ctx, approval.ApproveRequest{TenantID: fixtures.DemoTenantID, ProposalID: id, ExpectedHash: hash,
			ActorID: fixtures.DemoUserID}); err != nil {
			t.Fatalf("approve %s: %v", id, err)
		}
	}

	cs := serve(contract.CredOwner)
	data("trove_list_sales", call(t, cs, "trove_list_sales", map[string]any{}))
	data("trove_list_items", call(t, cs, "trove_list_items", map[string]any{"sale_id": fixtures.PublishedSaleID}))
	cand := data("trove_create_candidate", call(t, cs, "trove_create_candidate", map[string]any{"sale_id": fixtures.PublishedSaleID,
		"title": "Brass floor lamp", "category": "lighting.lamps", "idempotency_key": "bin-cand-1"}))["candidate_id"].(string)
	prop := data("trove_propose_candidate_promotion", call(t, cs, "trove_propose_candidate_promotion", map[string]any{
		"candidate_id": cand, "expected_version": 1, "idempotency_key": "bin-prop-1"}))
	promo := prop["proposal_id"].(string)
	if r := call(t, cs, "trove_execute_candidate_promotion", map[string]any{"proposal_id": promo, "idempotency_key": "bin-exec-0"}); r["status"] != "approval_required" {
		t.Fatalf("execution before approval = %s", mustJSON(r))
	}
	approve(promo, prop["proposal_hash"].(string))
	done := data("trove_execute_candidate_promotion", call(t, cs, "trove_execute_candidate_promotion", map[string]any{"proposal_id": promo, "idempotency_key": "bin-exec-1"}))
	if done["executed"] != true || done["simulated"] != false || len(done["created_item_ids"].([]any)) != 1 {
		t.Fatalf("promotion = %s", mustJSON(done))
	}
	pub := data("trove_propose_item_publication", call(t, cs, "trove_propose_item_publication", map[string]any{
		"item_id": "item_1003", "expected_version": 2, "idempotency_key": "bin-pub-1"}))
	approve(pub["proposal_id"].(string), pub["proposal_hash"].(string))
	data("trove_publish_item", call(t, cs, "trove_publish_item", map[string]any{"proposal_id": pub["proposal_id"], "idempotency_key": "bin-pub-exec-1"}))
	if err := cs.Close(); err != nil {
		t.Logf("close: %v", err)
	}

	// The buyer's view, from a server started for an anonymous client.
	buyer := serve(domain.PublicCredential)
	pi := data("trove_get_public_item", call(t, buyer, "trove_get_public_item", map[string]any{"item_id": "item_1003"}))["item"].(map[string]any)
	if pi["id"] != "item_1003" || pi["status"] != "available" {
		t.Fatalf("public item = %s", mustJSON(pi))
	}
	if _, ok := pi["internal_price_guidance_cents"]; ok {
		t.Fatalf("the public view carries internal pricing: %s", mustJSON(pi))
	}
	_ = buyer.Close()

	// Every call of the owner's server is a plugin_event in the project —
	// the writes committed with them, the reads and the block delivered from
	// the outbox before the process exited.
	events, err := env.Events(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, ev := range events {
		if ev.Client.ID == fixtures.DemoClientID && ev.Action == "mcp_tool_called" {
			seen[ev.Tool.Name+"/"+ev.Outcome]++
		}
	}
	for _, want := range []string{"trove_list_sales/success", "trove_list_items/success", "trove_create_candidate/success",
		"trove_propose_candidate_promotion/success", "trove_execute_candidate_promotion/blocked", "trove_execute_candidate_promotion/success",
		"trove_propose_item_publication/success", "trove_publish_item/success"} {
		if seen[want] != 1 {
			t.Errorf("%s: %d events, want 1 (all: %v)", want, seen[want], seen)
		}
	}
	for _, e := range stderrs {
		for _, tok := range []string{contract.CredOwner, contract.Hash(contract.CredOwner)} {
			if strings.Contains(e.String(), tok) {
				t.Fatal("the client token or its hash is in the server's log")
			}
		}
	}
}
