package setup

import (
	"encoding/base64"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Issue 15's target: no preview, doc or test fixture carries or asks for a
// key that is shared between tenants. Every tracked text file of the docs,
// the previews' golden files, the fixtures and the development seed is
// scanned for a JWT whose role is not anon, a Supabase secret key, and the
// retired server-key variable outside the places that explain its
// retirement.
func TestRepository_NoSharedServerKey(t *testing.T) {
	root := filepath.Join("..", "..")
	secretRE := regexp.MustCompile(`sb_secret_[A-Za-z0-9_-]{8,}`)
	jwtRE := regexp.MustCompile(`eyJ[A-Za-z0-9_-]{8,}\.(eyJ[A-Za-z0-9_-]{8,})\.[A-Za-z0-9_-]{8,}`)
	// Where the retired variable may be named: the docs that say it is
	// retired and refused.
	retiredOK := map[string]bool{"README.md": true, "docs/live-trust.md": true}
	var scanned int
	for _, dir := range []string{"README.md", "docs", "internal/setup/testdata", "fixtures", "supabase/dev", "supabase/README.md"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			rel = filepath.ToSlash(rel)
			text := string(b)
			scanned++
			for _, m := range jwtRE.FindAllStringSubmatch(text, -1) {
				payload, err := base64.RawURLEncoding.DecodeString(m[1])
				var claims struct {
					Role string `json:"role"`
				}
				if err != nil || json.Unmarshal(payload, &claims) != nil || claims.Role != "anon" {
					t.Errorf("%s: a JWT that is not an anon key: %.40s…", rel, m[0])
				}
			}
			if secretRE.MatchString(text) {
				t.Errorf("%s: a Supabase secret key", rel)
			}
			if strings.Contains(text, "TROVESNAP_SUPABASE_KEY") && !retiredOK[rel] {
				t.Errorf("%s: names the retired shared server key", rel)
			}
			if strings.Contains(text, "role\":\"trovesnap_mcp") || strings.Contains(text, "Mint the server key") {
				t.Errorf("%s: tells how to mint the retired server key", rel)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
	}
	if scanned < 10 {
		t.Fatalf("scanned %d files: the scan proves nothing", scanned)
	}
}
