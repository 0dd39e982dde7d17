package domain

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
)

// Keyset is the position after which a list page continues: the ordering key
// of the last row and its id (keyset pagination; never OFFSET).
type Keyset struct {
	Key string `json:"k"`
	ID  string `json:"i"`
}

// cursorV1 is the opaque cursor payload. It carries only the ordering key and
// id plus two binding tags (list kind, tenant digest) so a cursor from another
// list or tenant is rejected. A cursor is a continuation marker, never authority.
type cursorV1 struct {
	V    int    `json:"v"`
	Kind string `json:"t"`
	Ten  string `json:"n"`
	Keyset
}

func tenantTag(tenantID string) string {
	sum := sha256.Sum256([]byte("trovesnap-cursor:" + tenantID))
	return hex.EncodeToString(sum[:4])
}

// EncodeCursor makes the opaque base64url cursor for the row after k.
func EncodeCursor(kind, tenantID string, k Keyset) string {
	b, _ := json.Marshal(cursorV1{V: 1, Kind: kind, Ten: tenantTag(tenantID), Keyset: k})
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodeCursor parses a cursor made by EncodeCursor for the same list kind and
// tenant. An empty cursor is the first page (nil keyset).
func DecodeCursor(kind, tenantID, s string) (*Keyset, error) {
	if s == "" {
		return nil, nil
	}
	bad := Invalid("cursor", "not a cursor of this list: start again without a cursor")
	if len(s) > 512 || strings.ContainsAny(s, "=+/") {
		return nil, bad
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, bad
	}
	var c cursorV1
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil || c.V != 1 || c.Kind != kind || c.Ten != tenantTag(tenantID) || c.ID == "" {
		return nil, bad
	}
	return &c.Keyset, nil
}
