// Package gate is the one road every tool call walks: client → actor and
// tenant → visible tool → version → strict input → limits → idempotency →
// approval → ONE domain function → projection → envelope + audit event.
//
// It owns the §22 envelope, the §23 error taxonomy and the mapping from
// domain errors to it. Nothing reaches the Backend any other way.
package gate
