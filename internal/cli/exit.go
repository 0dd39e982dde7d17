package cli

import (
	"context"
	"errors"

	"github.com/triunalabs/trovesnap/internal/audit"
	"github.com/triunalabs/trovesnap/internal/config"
	"github.com/triunalabs/trovesnap/store"
)

// ExitCode is the process exit status. Every code trovesnap uses is here.
type ExitCode int

// Exit codes (documented in the README).
const (
	ExitOK       ExitCode = 0
	ExitError    ExitCode = 1 // unexpected failure
	ExitUsage    ExitCode = 2 // bad flags or arguments
	ExitConfig   ExitCode = 3 // configuration refused (e.g. live mode without its settings)
	ExitDatabase ExitCode = 4 // database unusable: corrupt, foreign, or from a newer trovesnap
	ExitNotTTY   ExitCode = 5 // `trovesnap approve` without an interactive terminal
	// ExitAuditBroken: `trovesnap audit verify` found a bad link (or a saved
	// head no longer in its chain); the message names the first bad event.
	ExitAuditBroken ExitCode = 6
	// ExitAgentShell: a command that grants or widens authority was run
	// inside a known agent's shell (internal/cli/agentshell.go).
	ExitAgentShell ExitCode = 7
	// ExitPassphrase: such a command was refused for the seller's approval
	// passphrase: none set, none given, wrong, or locked after repeated
	// wrong attempts.
	ExitPassphrase ExitCode = 8
	ExitCanceled   ExitCode = 130
)

// usageError marks errors of flags and arguments.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

// exitCodeFor maps an error to its exit code, in one place.
func exitCodeFor(err error) ExitCode {
	var ue usageError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ue):
		return ExitUsage
	case errors.Is(err, config.ErrLiveUnavailable), errors.Is(err, config.ErrInvalid), errors.Is(err, errConfig):
		return ExitConfig
	case errors.Is(err, store.ErrCorruptDB), errors.Is(err, store.ErrForeignDB), errors.Is(err, store.ErrNewerSchema):
		return ExitDatabase
	case errors.Is(err, errNotInteractive):
		return ExitNotTTY
	case errors.Is(err, audit.ErrChainBroken):
		return ExitAuditBroken
	case errors.Is(err, errAgentShell):
		return ExitAgentShell
	case errors.Is(err, store.ErrNoPassphrase), errors.Is(err, store.ErrPassphraseWrong), errors.Is(err, store.ErrPassphraseLocked),
		errors.Is(err, errPassphraseNeeded):
		return ExitPassphrase
	case errors.Is(err, context.Canceled):
		return ExitCanceled
	default:
		return ExitError
	}
}

var errConfig = errors.New("configuration error")
