// Package audit makes the plugin_event record answerable and checkable:
// it verifies the per-tenant hash chains the store writes (Verify, Heads),
// reconstructs what happened to a request or a proposal and answers the
// spec's §45 questions for every invocation in it (Trace), holds the
// allow-list that decides what of a call's input an event may repeat
// (redaction), and owns the OpenTelemetry names, instruments and provider
// setup (§37).
//
// It reads the store through the small interfaces below and imports only
// internal/domain: the chain hash itself (domain.ChainHash) is shared with
// the store, which computes it on every insert.
//
// What the chain proves, and what it does not: recomputing every chain
// detects an event that was modified, deleted (anywhere but at the end),
// reordered, duplicated or inserted between two others. It cannot detect
// the loss of the newest events (truncation) or a chain rewritten end to end
// by someone with write access to the file, because the hash has no secret:
// such a chain verifies on its own. The head hash kept somewhere else
// (`trovesnap audit head`, then `audit verify --against`) is what detects
// those, for every event up to the kept head.
package audit
