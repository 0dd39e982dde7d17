package domain_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/triunalabs/trovesnap/internal/domain"
)

func codec(t testing.TB, fill byte) *domain.CursorCodec {
	t.Helper()
	c, err := domain.NewCursorCodec(bytes.Repeat([]byte{fill}, domain.CursorKeySize))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func isBadCursor(err error) bool {
	var ie *domain.InputError
	return errors.As(err, &ie) && ie.Field == "cursor" && ie.Reason == "not a cursor of this list: start again without a cursor"
}

func TestCursorCodec_RoundTripBindsKindTenantAndKey(t *testing.T) {
	a, b := codec(t, 1), codec(t, 2)
	k := domain.Keyset{Key: "2026-11-29T10:00:00.000000000Z", ID: "item_991"}
	s := a.Encode("items", "tenant_1", k)
	got, err := a.Decode("items", "tenant_1", s)
	if err != nil || got == nil || *got != k {
		t.Fatalf("Decode(Encode) = %+v, %v", got, err)
	}
	for name, try := range map[string]func() (*domain.Keyset, error){
		"other kind":   func() (*domain.Keyset, error) { return a.Decode("sales", "tenant_1", s) },
		"other tenant": func() (*domain.Keyset, error) { return a.Decode("items", "tenant_2", s) },
		"other key":    func() (*domain.Keyset, error) { return b.Decode("items", "tenant_1", s) },
		"truncated":    func() (*domain.Keyset, error) { return a.Decode("items", "tenant_1", s[:len(s)-1]) },
		"too long":     func() (*domain.Keyset, error) { return a.Decode("items", "tenant_1", s+strings.Repeat("A", 600)) },
	} {
		if k, err := try(); k != nil || !isBadCursor(err) {
			t.Errorf("%s: %+v, %v", name, k, err)
		}
	}
	if k, err := a.Decode("items", "tenant_1", ""); k != nil || err != nil {
		t.Errorf("empty cursor: %+v, %v", k, err)
	}
	if _, err := domain.NewCursorCodec([]byte("short")); !errors.Is(err, domain.ErrBadCursorKey) {
		t.Errorf("short key: %v", err)
	}
}

// The c461580 scheme: base64url JSON whose tenant tag anyone can compute.
func oldScheme(kind, tenant, key, id string) string {
	sum := sha256.Sum256([]byte("trovesnap-cursor:" + tenant))
	b, _ := json.Marshal(map[string]any{"v": 1, "t": kind, "n": hex.EncodeToString(sum[:4]), "k": key, "i": id})
	return base64.RawURLEncoding.EncodeToString(b)
}

func TestHardening_CursorForgedWithOldSchemeOrFlippedByteIsRefused(t *testing.T) {
	c := codec(t, 7)
	if k, err := c.Decode("items", "tenant_demo", oldScheme("items", "tenant_demo", "2026-11-29T10:00:00.000000000Z", "item_1")); k != nil || !isBadCursor(err) {
		t.Fatalf("old scheme: %+v, %v", k, err)
	}
	s := c.Encode("items", "tenant_demo", domain.Keyset{Key: "2026-11-29T10:00:00.000000000Z", ID: "item_1"})
	for i := range len(s) {
		for _, r := range []byte{'A', 'b', '_', '.', '='} {
			if s[i] == r {
				continue
			}
			m := []byte(s)
			m[i] = r
			if k, err := c.Decode("items", "tenant_demo", string(m)); k != nil || !isBadCursor(err) {
				t.Fatalf("byte %d → %q accepted: %+v, %v", i, r, k, err)
			}
		}
	}
}

// FuzzDecodeCursor: Decode never panics, and accepts only what Encode with
// the same key made: an accepted string re-encodes to itself.
func FuzzDecodeCursor(f *testing.F) {
	c := codec(f, 9)
	for _, k := range []domain.Keyset{{Key: "2026-11-29T10:00:00.000000000Z", ID: "item_1"}, {Key: "", ID: "x"}, {Key: "42", ID: "sale_221"}} {
		f.Add("items", "tenant_1", c.Encode("items", "tenant_1", k))
	}
	f.Add("items", "tenant_1", oldScheme("items", "tenant_1", "k", "i"))
	f.Add("marketplace", "", "c2..eA.")
	f.Add("items", "", "!!!")
	f.Fuzz(func(t *testing.T, kind, tenant, s string) {
		k, err := c.Decode(kind, tenant, s)
		if s == "" {
			if k != nil || err != nil {
				t.Fatalf("empty: %+v, %v", k, err)
			}
			return
		}
		if err != nil {
			if k != nil || !isBadCursor(err) {
				t.Fatalf("refusal %+v, %v", k, err)
			}
			return
		}
		if k == nil || k.ID == "" {
			t.Fatalf("accepted %q without a position", s)
		}
		if again := c.Encode(kind, tenant, *k); again != s {
			t.Fatalf("accepted %q, which Encode does not make (%q)", s, again)
		}
	})
}
