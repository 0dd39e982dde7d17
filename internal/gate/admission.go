package gate

import (
	"context"
	"fmt"

	"github.com/triunalabs/trovesnap/internal/catalog"
)

// Admission is the gate's one rule on a call's raw arguments, applied before
// anything parses them: the tool's size limit, then the gate-wide budget of
// argument bytes in flight. The gate applies it itself in Invoke; a
// transport that reads raw bytes (the stdio guard) applies it earlier, with
// Admit, before it even decodes the message, and hands the verdict to the
// gate in Call.Admission so that the rule runs once and the budget is taken
// once.
type Admission struct {
	refusal *failure
	hash    string // input hash of refused raw arguments ("" = hash them in Invoke)
	release func()
}

// Refused reports whether the arguments were refused.
func (a *Admission) Refused() bool { return a != nil && a.refusal != nil }

// Release gives the admitted call's bytes back to the budget (once; a no-op
// on a refusal).
func (a *Admission) Release() {
	if a != nil && a.release != nil {
		a.release()
	}
}

// Admit decides the raw arguments of one call of tool, size bytes long:
// over the tool's limit they are refused at once (invalid_input, field
// arguments); within it they take size bytes from the budget, waiting at
// most argumentWait (or until ctx ends) for other calls to release theirs,
// else they are refused as service_unavailable (retryable). inputHash is the
// audit hash of the raw bytes ("sha256:…") when the caller has it, else "".
// A refused call must still be invoked (with the Admission in its Call) so
// that its one plugin_event is written and the client gets its envelope.
func (g *Gate) Admit(ctx context.Context, tool string, size int, inputHash string) *Admission {
	if limit := catalog.ArgumentLimit(tool); size > limit {
		return &Admission{hash: inputHash, refusal: oversize(limit)}
	}
	release, ok := g.argMem.acquire(ctx, size, argumentWait)
	if !ok {
		return &Admission{hash: inputHash, refusal: &failure{code: CodeServiceUnavailable, auditCode: "argument_budget_exhausted",
			message: "The server is busy with other large requests: retry shortly."}}
	}
	return &Admission{release: release}
}

// RefuseArguments is the verdict of a transport that refused a call on its
// raw bytes for a reason of its own (nested too deep, too much besides the
// arguments): invalid_input on field, with reason. The call must still be
// invoked with it, so that its envelope and its one plugin_event are written.
func RefuseArguments(field, reason, inputHash string) *Admission {
	return &Admission{hash: inputHash, refusal: &failure{code: CodeInvalidInput, field: field,
		message: fmt.Sprintf("Invalid %s: %s.", field, reason)}}
}

func oversize(limit int) *failure {
	return &failure{code: CodeInvalidInput, field: "arguments", message: fmt.Sprintf("Invalid arguments: larger than %d bytes.", limit)}
}

// ArgumentBudget is the gate-wide budget of argument bytes in flight.
func (g *Gate) ArgumentBudget() int { return g.argMem.total }
