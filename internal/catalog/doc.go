// Package catalog defines every trovesnap tool: its name, version, tier,
// risk, permissions, modes, idempotency and approval requirement, its strict
// input and output schemas (with sha256 hashes), its domain mapping, its
// status and its handler.
//
// A handler turns validated input into ONE Backend call and the result into a
// projection. It never checks permissions, writes audit or touches SQL: the
// gate and the Backend do. All() is the only list of tools.
package catalog
