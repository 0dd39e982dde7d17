package mcpserver_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/triunalabs/trovesnap/fixtures"
)

// oldSchemeCursor is how c461580 made a cursor: base64url JSON whose tenant
// tag is a hash of a public string, so any caller could mint one.
func oldSchemeCursor(kind, tenantID, key, id string) string {
	sum := sha256.Sum256([]byte("trovesnap-cursor:" + tenantID))
	b, _ := json.Marshal(map[string]any{"v": 1, "t": kind, "n": hex.EncodeToString(sum[:4]), "k": key, "i": id})
	return base64.RawURLEncoding.EncodeToString(b)
}

func itemsPage(t *testing.T, e *env, args map[string]any) (ids []string, next string, res envelope) {
	t.Helper()
	res = e.call("trove_list_items", args)
	if res.Status != "succeeded" {
		return nil, "", res
	}
	var d struct {
		Items []struct {
			ID string `json:"id"`
		} `json:"items"`
		NextCursor string `json:"next_cursor"`
	}
	if err := json.Unmarshal(res.Data, &d); err != nil {
		t.Fatalf("items page: %v %s", err, res.raw)
	}
	for _, it := range d.Items {
		ids = append(ids, it.ID)
	}
	return ids, d.NextCursor, res
}

func wantCursorRefused(t *testing.T, e *env, what, cursor string) {
	t.Helper()
	_, _, res := itemsPage(t, e, map[string]any{"cursor": cursor, "limit": 2})
	wantCode(t, res, "failed", "invalid_input")
	if len(res.Errors) != 1 || res.Errors[0].Field != "cursor" {
		t.Fatalf("%s: %s", what, res.raw)
	}
}

// Finding 8: a cursor is signed with the database's secret. A cursor forged
// with the old public scheme, a real one with a byte flipped, and a real one
// from another database file are refused; a real one still pages.
func TestHardening_CursorsAreSignedPerDatabase(t *testing.T) {
	e := newEnv(t, withFreshSeed())
	first, next, res := itemsPage(t, e, map[string]any{"limit": 2})
	if len(first) != 2 || next == "" {
		t.Fatalf("first page: %s", res.raw)
	}
	second, _, res := itemsPage(t, e, map[string]any{"limit": 2, "cursor": next})
	if len(second) == 0 || second[0] == first[0] || second[0] == first[1] {
		t.Fatalf("second page: %s", res.raw)
	}
	// The old scheme, for the demo tenant (any key text was accepted).
	key := "2026-01-01T00:00:00.000000000Z"
	wantCursorRefused(t, e, "old scheme", oldSchemeCursor("items", fixtures.DemoTenantID, key, first[0]))
	// One byte flipped.
	b := []byte(next)
	i := len(b) / 2
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	wantCursorRefused(t, e, "flipped byte", string(b))
	// Another database file (another secret), same fixtures.
	other := newEnv(t, withFreshSeed())
	wantCursorRefused(t, other, "another database's cursor", next)
}
