package cli_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/triunalabs/trovesnap/fixtures"
)

// Attack: whatever token the environment holds — unknown, malformed — no
// output of media add or import csv (stdout, stderr, JSON) repeats it.
func TestAttack_MediaAddAndImportNeverPrintTheToken(t *testing.T) {
	for _, tok := range []string{"tsk_" + strings.Repeat("Zq7", 14), "tsk_short\x1b[2J", "not-a-token-" + strings.Repeat("x", 30)} {
		env, dir := tempEnv(t)
		env["TROVESNAP_CLIENT_TOKEN"] = tok
		db := filepath.Join(dir, "m.db")
		good := writeFile(t, dir, "chair.jpg", photoWithGPS(t, 16, 16, 11))
		csv := writeFile(t, dir, "list.csv", []byte("title\nLamp\n"))
		for _, argv := range [][]string{
			{"--db", db, "media", "add", "--candidate", fixtures.DemoCandidateID, good},
			{"--db", db, "media", "add", "--json", "--candidate", fixtures.DemoCandidateID, good},
			{"--db", db, "import", "csv", csv, "--sale", fixtures.PublishedSaleID, "--preview"},
		} {
			r := run(t, env, argv...)
			secret := strings.TrimPrefix(tok, "tsk_")
			if strings.Contains(r.out+r.err, secret[:min(12, len(secret))]) {
				t.Errorf("%v with token %q printed it: %+v", argv, tok, r)
			}
			if r.code == 0 {
				t.Errorf("%v ran with a token no client holds: %+v", argv, r)
			}
		}
	}
}
