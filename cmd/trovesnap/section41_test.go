package main_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/triunalabs/trovesnap/fixtures"
)

// agentCall calls tool as the agent and answers the envelope.
func agentCall(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) map[string]any {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return structured(t, res)
}

// data is the envelope's data, which must be there.
func data(t *testing.T, e map[string]any) map[string]any {
	t.Helper()
	d, ok := e["data"].(map[string]any)
	if !ok {
		b, _ := json.Marshal(e)
		t.Fatalf("no data: %s", b)
	}
	return d
}

// approveOnTerminal approves proposal pid as the demo seller in the built
// `trovesnap approve` under a pseudo-terminal: passphrase, enter, a, y.
func approveOnTerminal(t *testing.T, db, pid string) {
	t.Helper()
	term := startTerminal(t, db, "approve", "--as", fixtures.DemoUserID)
	term.waitFor("approve: approval passphrase: ")
	term.press(testPassphrase + "\r")
	term.waitFor(pid)
	term.press("\r")
	term.waitFor("Targets (1)")
	term.press("a")
	term.waitFor("bound to exactly this proposal and to the agent that asked for it,")
	term.press("y")
	term.waitFor("single-use grant")
	term.press("q")
	if err := term.exit(); err != nil {
		t.Fatalf("approve exited: %v", err)
	}
}

// proposeApproveExecute runs one controlled change the §41 way: the agent
// proposes, its execution is refused without a grant, the seller approves
// in the terminal, the agent executes.
func proposeApproveExecute(t *testing.T, cs *mcp.ClientSession, db, proposeTool string, args map[string]any, execTool, key string) map[string]any {
	t.Helper()
	args["idempotency_key"] = key + "-prop"
	p := agentCall(t, cs, proposeTool, args)
	if p["status"] != "proposed" {
		b, _ := json.Marshal(p)
		t.Fatalf("%s: %s", proposeTool, b)
	}
	pid, _ := data(t, p)["proposal_id"].(string)
	execArgs := map[string]any{"proposal_id": pid, "idempotency_key": key + "-exec-1"}
	if st, code := callStatus(t, cs, execTool, execArgs); st != "approval_required" {
		t.Fatalf("%s before approval: %s/%s", execTool, st, code)
	}
	approveOnTerminal(t, db, pid)
	execArgs["idempotency_key"] = key + "-exec-2"
	e := agentCall(t, cs, execTool, execArgs)
	if st, _ := e["status"].(string); !strings.HasPrefix(st, "succeeded") {
		b, _ := json.Marshal(e)
		t.Fatalf("%s after approval: %s", execTool, b)
	}
	return data(t, e)
}

// §41 end to end on a promoted item, mock mode, with the built binary: a
// photo in by `trovesnap media add`, a new candidate, its promotion with
// the photo and a price approved in `trovesnap approve` and executed, the
// item made ready, its publication naming the photo approved and executed,
// and the buyer view showing exactly the approved photo and the price —
// then `trovesnap audit verify` over the chain every step wrote.
func TestBinary_Section41OnAPromotedItem(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "trovesnap.db")
	photo := filepath.Join(dir, "walnut side table.jpg")
	if err := os.WriteFile(photo, noisyPhoto(640, 480, 7), 0o600); err != nil {
		t.Fatal(err)
	}
	// 1. Files in: the seller's photo becomes a private asset of a new
	// candidate (candidate tier, no grant).
	added, stderr, _, _, err := mediaAddBinary(t, db, "--sale", fixtures.PublishedSaleID, "--new-candidates", photo)
	if err != nil || added.Added != 1 || len(added.Photos) != 1 || added.Photos[0].CandidateID == "" || added.Photos[0].AssetID == "" {
		t.Fatalf("media add: %v %+v\n%s", err, added, stderr)
	}
	cand, asset := added.Photos[0].CandidateID, added.Photos[0].AssetID
	ensurePassphrase(t, db)
	cs := connectBinary(t, db)

	// 2. The agent reads the candidate and proposes its promotion with a
	// price; the seller sees the photo and the price and approves.
	c := data(t, agentCall(t, cs, "trove_get_candidate", map[string]any{"candidate_id": cand}))["candidate"].(map[string]any)
	promoted := proposeApproveExecute(t, cs, db, "trove_propose_candidate_promotion", map[string]any{"candidate_id": cand,
		"expected_version": c["version"], "category": "furniture.tables", "price_cents": 4500}, "trove_execute_candidate_promotion", "s41-promo")
	ids, _ := promoted["created_item_ids"].([]any)
	if len(ids) != 1 {
		t.Fatalf("promotion result: %v", promoted)
	}
	item := ids[0].(string)
	got := data(t, agentCall(t, cs, "trove_get_item", map[string]any{"item_id": item}))
	it := got["item"].(map[string]any)
	photos, _ := it["photos"].([]any)
	if it["status"] != "draft" || it["price_cents"] != float64(4500) || len(photos) != 1 || photos[0].(map[string]any)["published"] != false {
		t.Fatalf("the promoted item = %v", it)
	}
	if prov, _ := got["provenance"].(map[string]any); prov["candidate_id"] != cand {
		t.Fatalf("provenance = %v", got["provenance"])
	}
	photoID := photos[0].(map[string]any)["id"].(string)

	// 3. draft → ready.
	proposeApproveExecute(t, cs, db, "trove_propose_status_transition", map[string]any{"item_id": item, "expected_version": it["version"],
		"to_status": "ready", "effective_at": time.Now().UTC().Format(time.RFC3339)}, "trove_update_item_status", "s41-ready")
	it = data(t, agentCall(t, cs, "trove_get_item", map[string]any{"item_id": item}))["item"].(map[string]any)

	// Before publication the buyer sees nothing of it.
	if e := agentCall(t, cs, "trove_get_public_item", map[string]any{"item_id": item}); e["status"] == "succeeded" {
		t.Fatalf("a ready item is public: %v", e)
	}
	// 4. Publication naming the photo; 5. the buyer view.
	proposeApproveExecute(t, cs, db, "trove_propose_item_publication", map[string]any{"item_id": item, "expected_version": it["version"],
		"photo_ids": []string{photoID}}, "trove_publish_item", "s41-publish")
	pub := agentCall(t, cs, "trove_get_public_item", map[string]any{"item_id": item})
	pi := data(t, pub)["item"].(map[string]any)
	pphotos, _ := pi["photos"].([]any)
	if pi["price_cents"] != float64(4500) || len(pphotos) != 1 || pphotos[0].(map[string]any)["id"] != photoID {
		t.Fatalf("the buyer view = %v", pi)
	}
	raw, _ := json.Marshal(pub)
	for _, secret := range []string{asset, "storage_key", "assets/", "internal_price", "cost_basis", "staff_notes", cand} {
		if strings.Contains(string(raw), secret) {
			t.Fatalf("the buyer view carries %q: %s", secret, raw)
		}
	}

	// 6. The audit chain every step wrote verifies.
	cmd := exec.Command(binary(t), "--db", db, "audit", "verify", "--json")
	cmd.Env = serverEnv(db)
	out, err := cmd.Output()
	var rep struct {
		Intact bool  `json:"intact"`
		Events int64 `json:"events"`
	}
	if jerr := json.Unmarshal(out, &rep); err != nil || jerr != nil || !rep.Intact || rep.Events < 10 {
		t.Fatalf("audit verify: %v %v %+v\n%s", err, jerr, rep, out)
	}
}
