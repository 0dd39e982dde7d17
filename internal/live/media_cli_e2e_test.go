package live_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/contract"
)

// cliGPS is the latitude the photo of the live `media add` test carries.
var cliGPS = []byte{0x2D, 0x1A, 0x2B, 0x3C, 0x0E, 0x5F, 0x60, 0x71}

// jpegWithGPS is a small JPEG with an Exif APP1 whose GPS IFD holds cliGPS.
func jpegWithGPS(t *testing.T) []byte {
	t.Helper()
	return jpegCarryingGPS(t, cliGPS)
}

// `trovesnap media add` of the built binary in live mode, configured only
// by the environment the README names: the photo reaches the project
// through the same gate and RPC as an MCP call, as the client of the token,
// stored without its location; a rerun replays; the token is in no output.
func TestBinary_LiveMediaAddStoresTheStrippedPhotoAsTheClient(t *testing.T) {
	env := seeded(t)
	bin := trovesnapBinary(t)
	dir := t.TempDir()
	photo := filepath.Join(dir, "side view.jpg")
	if err := os.WriteFile(photo, jpegWithGPS(t), 0o600); err != nil {
		t.Fatal(err)
	}
	type photoResult struct {
		Status      string `json:"status"`
		AssetID     string `json:"asset_id"`
		ContentHash string `json:"content_hash"`
		CandidateID string `json:"candidate_id"`
	}
	add := func() (mode string, ph photoResult) {
		t.Helper()
		cmd := exec.Command(bin, "media", "add", "--json", "--candidate", "candidate_771", photo)
		cmd.Env = []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH"), "TROVESNAP_DATA_DIR=" + dir,
			"SUPABASE_URL=" + env.Endpoint.URL, "SUPABASE_ANON_KEY=" + env.PublicKey(), "TROVESNAP_CLIENT_TOKEN=" + contract.CredOwner}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		var res struct {
			Photos []photoResult `json:"photos"`
			Mode   string        `json:"mode"`
		}
		if err != nil || json.Unmarshal(out, &res) != nil || len(res.Photos) != 1 {
			t.Fatalf("media add: %v\n%s\n%s", err, out, stderr.String())
		}
		if strings.Contains(string(out)+stderr.String(), contract.CredOwner) {
			t.Fatal("the client token is in the command's output")
		}
		return res.Mode, res.Photos[0]
	}
	mode, ph := add()
	if mode != "live" || ph.Status != "added" || ph.CandidateID != "candidate_771" || !strings.HasPrefix(ph.AssetID, "asset_") {
		t.Fatalf("media add: %s %+v", mode, ph)
	}
	conn := superConn(t, env)
	var content []byte
	var hash, client string
	if err := conn.QueryRow(ctx, "SELECT content, sha256, created_by_client_id FROM trovesnap.source_assets WHERE id = $1", ph.AssetID).
		Scan(&content, &hash, &client); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(content)
	if bytes.Contains(content, cliGPS) || hash != ph.ContentHash || "sha256:"+hex.EncodeToString(sum[:]) != hash || client == "" {
		t.Fatalf("stored asset: GPS kept %v, hash %s (result %s), client %q", bytes.Contains(content, cliGPS), hash, ph.ContentHash, client)
	}
	var events int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM trovesnap.plugin_events WHERE tenant_id = $1
		AND tool_name = 'trove_attach_candidate_photo' AND outcome = 'success'`, fixtures.DemoTenantID).Scan(&events); err != nil || events != 1 {
		t.Fatalf("%d success events of the attach, %v", events, err)
	}

	_, again := add()
	var assets int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM trovesnap.candidate_media WHERE asset_id = $1", ph.AssetID).Scan(&assets); err != nil ||
		again.Status != "replayed" || again.AssetID != ph.AssetID || assets != 1 {
		t.Fatalf("rerun: %+v, %d attachments, %v", again, assets, err)
	}
}
