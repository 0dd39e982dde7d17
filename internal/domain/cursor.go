package domain

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
)

// Keyset is the position after which a list page continues: the ordering key
// of the last row and its id (keyset pagination; never OFFSET).
type Keyset struct {
	Key string `json:"k"`
	ID  string `json:"i"`
}

// CursorOpener opens the cursors a Backend sealed. Each Backend holds its own
// secret (docs/cursors.md), so only it can tell a cursor it made from a
// forged one; the handlers of list tools ask it before they read a page.
// p is the caller (the zero Principal for the public lists).
type CursorOpener interface {
	OpenCursor(ctx context.Context, p Principal, kind, cursor string) (*Keyset, error)
}

// CursorKeySize is the size of a cursor secret: 32 random bytes.
const CursorKeySize = 32

// MaxCursorLen bounds a cursor before anything decodes it.
const MaxCursorLen = 512

// cursorPrefix versions the format: c2.<key>.<id>.<mac>, each part
// base64url without padding. Version 1 (a JSON payload with an unkeyed
// tenant digest) is refused like any other foreign string.
const cursorPrefix = "c2."

// cursorB64 is strict: one encoding per byte string, so a decoded cursor
// re-encodes to exactly the string that was given.
var cursorB64 = base64.RawURLEncoding.Strict()

// ErrBadCursorKey: a cursor secret of the wrong size.
var ErrBadCursorKey = errors.New("cursor key must be 32 bytes")

// CursorCodec seals and opens list cursors with HMAC-SHA256 under a
// per-database secret. A cursor carries only the ordering key and id of the
// last row; the MAC binds them to the list kind and tenant, so a cursor that
// was forged, altered, truncated, or made for another list, tenant or
// database is refused. A cursor is a continuation marker, never authority.
type CursorCodec struct {
	key []byte
}

// NewCursorCodec builds a codec over a 32-byte secret.
func NewCursorCodec(key []byte) (*CursorCodec, error) {
	if len(key) != CursorKeySize {
		return nil, ErrBadCursorKey
	}
	return &CursorCodec{key: append([]byte(nil), key...)}, nil
}

// cursorMAC is the MAC of a cursor's two encoded parts for a list kind and
// tenant. The live SQL (trovesnap.cursor_mac) computes the same bytes.
func cursorMAC(key []byte, kind, tenantID, keyPart, idPart string) []byte {
	m := hmac.New(sha256.New, key)
	// Kind and tenant never contain a newline (ids and our own constants).
	m.Write([]byte("trovesnap-cursor-v2\n" + kind + "\n" + tenantID + "\n" + keyPart + "." + idPart))
	return m.Sum(nil)
}

// Encode makes the opaque cursor of the row after k.
func (c *CursorCodec) Encode(kind, tenantID string, k Keyset) string {
	kp, ip := cursorB64.EncodeToString([]byte(k.Key)), cursorB64.EncodeToString([]byte(k.ID))
	return cursorPrefix + kp + "." + ip + "." + cursorB64.EncodeToString(cursorMAC(c.key, kind, tenantID, kp, ip))
}

// BadCursor is the one answer to every cursor that is not ours for this list.
func BadCursor() error {
	return Invalid("cursor", "not a cursor of this list: start again without a cursor")
}

// Decode opens a cursor made by Encode for the same list kind and tenant
// with the same secret. An empty cursor is the first page (nil keyset).
func (c *CursorCodec) Decode(kind, tenantID, s string) (*Keyset, error) {
	if s == "" {
		return nil, nil
	}
	kp, ip, mac, ok := SplitCursor(s)
	if !ok {
		return nil, BadCursor()
	}
	want := cursorMAC(c.key, kind, tenantID, kp, ip)
	if !hmac.Equal(mac, want) {
		return nil, BadCursor()
	}
	key, err1 := cursorB64.DecodeString(kp)
	id, err2 := cursorB64.DecodeString(ip)
	if err1 != nil || err2 != nil || len(id) == 0 {
		return nil, BadCursor()
	}
	return &Keyset{Key: string(key), ID: string(id)}, nil
}

// SplitCursor checks a cursor's shape (bounded length, the version prefix,
// three strict base64url parts) and returns its two encoded parts and the
// decoded MAC. It proves nothing about who made the cursor.
func SplitCursor(s string) (keyPart, idPart string, mac []byte, ok bool) {
	rest, found := strings.CutPrefix(s, cursorPrefix)
	if len(s) > MaxCursorLen || !found {
		return "", "", nil, false
	}
	for _, r := range rest {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return "", "", nil, false
		}
	}
	parts := strings.Split(rest, ".")
	if len(parts) != 3 || parts[1] == "" {
		return "", "", nil, false
	}
	mac, err := cursorB64.DecodeString(parts[2])
	if err != nil || len(mac) != sha256.Size {
		return "", "", nil, false
	}
	if _, err := cursorB64.DecodeString(parts[0]); err != nil {
		return "", "", nil, false
	}
	if _, err := cursorB64.DecodeString(parts[1]); err != nil {
		return "", "", nil, false
	}
	return parts[0], parts[1], mac, true
}
