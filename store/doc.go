// Package store is trovesnap's embedded Backend: a SQLite file (pure-Go
// modernc.org/sqlite) that holds the mock-mode simulation of the P5/P6 domain
// (tenants, sales, items, the candidate chain) and the P7 records every mode
// needs locally (plugin_events, idempotency_keys).
//
// It exists so that `trovesnap mcp serve` works out of the box, with
// deterministic data and no network, and so that the gate can be tested
// against a real backend instead of hand-written fakes. It owns every SQLite
// policy decision in one place (Open):
//
//   - A file is probed read-only before anything writes to it: a corrupt,
//     foreign or newer-schema file is refused byte-for-byte untouched.
//   - One writer connection whose transactions are BEGIN IMMEDIATE, so a
//     read-then-write transaction never fails half-way with SQLITE_BUSY when
//     several processes (several host windows, `trovesnap approve`) share the
//     file; busy_timeout makes the others wait instead.
//   - Concurrent write transactions of one process are committed in groups
//     (group.go): each function in its own savepoint, one COMMIT, every
//     caller answered only after it. A lone call runs alone, as before.
//   - A small pool of query_only readers; WAL lets them read while the writer
//     writes.
//   - Embedded, numbered migrations tracked by PRAGMA user_version, each in its
//     own IMMEDIATE transaction and re-checked inside it, so two processes that
//     open a fresh file at once migrate (and seed) it exactly once.
//   - Durability: WAL with synchronous=NORMAL by default. An application crash
//     loses nothing committed; a power loss may lose the last transactions
//     whole, never half of one. Options.Synchronous = "FULL" trades ~0.3 ms per
//     write for surviving power loss too.
//
// A domain write commits together with its idempotency row and its
// plugin_event (CreateCandidate), so a replay, a crash or a second process
// can never see one without the others. Errors that callers may act on are
// the domain sentinels (wrapped); driver failures are logged at debug level
// and surface only as domain.ErrUnavailable, so no SQL text can reach a
// model through the gate.
package store
