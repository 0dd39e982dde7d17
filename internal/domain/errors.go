package domain

import (
	"errors"
	"fmt"
)

// Sentinel errors a Backend returns (wrapped with context). The gate maps
// each to one code of the P7 taxonomy with a message safe for a model.
var (
	ErrNotFound            = errors.New("record not found")
	ErrCrossTenant         = errors.New("record belongs to another tenant")
	ErrInvalidInput        = errors.New("invalid input")
	ErrIdempotencyConflict = errors.New("idempotency key reused with different input")
	ErrIdempotencyInFlight = errors.New("idempotency key in use by a request still running")
	ErrStaleVersion        = errors.New("target version changed")
	ErrTransitionInvalid   = errors.New("domain transition not allowed")
	ErrPermissionDenied    = errors.New("permission denied")
	ErrClientNotRegistered = errors.New("client not registered")
	ErrClientSuspended     = errors.New("client suspended")
	ErrAuthRequired        = errors.New("authentication required")
	ErrUnavailable         = errors.New("backend unavailable")
	// ErrSaleAssignment: the actor's role is limited to assigned sales and
	// this sale is not one of them (§4.3).
	ErrSaleAssignment = errors.New("sale assignment required")
	// ErrRateLimited: a Backend that counts a call in its limit class
	// inside the call (live mode: the RPC itself) refused it over the
	// limit; a *RateLimitError carries the class, limit and retry delay.
	ErrRateLimited = errors.New("rate limit reached")
)

// RateLimitError is the refusal of a call over its limit class by the
// Backend that counted it. It matches ErrRateLimited with errors.Is.
type RateLimitError struct {
	Class             string
	Limit             int
	RetryAfterSeconds int
}

func (e *RateLimitError) Error() string {
	return fmt.Sprintf("%d %s calls a minute reached, retry in %d s: %v", e.Limit, e.Class, e.RetryAfterSeconds, ErrRateLimited)
}

// Is makes errors.Is(err, ErrRateLimited) true.
func (e *RateLimitError) Is(target error) bool { return target == ErrRateLimited }

// InputError is an invalid-input error that names the offending field and a
// reason a model can act on. It matches ErrInvalidInput with errors.Is.
type InputError struct {
	Field  string
	Reason string
}

func (e *InputError) Error() string { return fmt.Sprintf("invalid %s: %s", e.Field, e.Reason) }

// Is makes errors.Is(err, ErrInvalidInput) true.
func (e *InputError) Is(target error) bool { return target == ErrInvalidInput }

// Invalid builds an InputError.
func Invalid(field, reason string) error { return &InputError{Field: field, Reason: reason} }

// RefError reports an unknown reference by its field and id. The same error
// is returned for a missing record and a record of another tenant, so answers
// give no existence oracle; CrossTenant is for the audit only.
type RefError struct {
	Field       string
	ID          string
	CrossTenant bool
}

func (e *RefError) Error() string { return fmt.Sprintf("unknown %s %q", e.Field, e.ID) }

// Is makes errors.Is match ErrNotFound, and ErrCrossTenant when it applies.
func (e *RefError) Is(target error) bool {
	return target == ErrNotFound || (e.CrossTenant && target == ErrCrossTenant)
}

// UnknownRef builds a RefError.
func UnknownRef(field, id string, crossTenant bool) error {
	return &RefError{Field: field, ID: id, CrossTenant: crossTenant}
}

// ReasonError is a refusal (a wrapped sentinel: ErrStaleVersion,
// ErrTransitionInvalid, an approval error …) with its reason kept apart, so
// the gate shows the reason to a model without taking the error's text
// apart. The reason is written for a model: ids, versions and states, never
// storage internals. Its text is what fmt.Errorf("<reason>: %w", sentinel)
// gives, and it matches the sentinel with errors.Is.
type ReasonError struct {
	Sentinel error
	Reason   string
}

func (e *ReasonError) Error() string { return e.Reason + ": " + e.Sentinel.Error() }

// Unwrap returns the sentinel.
func (e *ReasonError) Unwrap() error { return e.Sentinel }

// Because builds a ReasonError whose reason is format applied to args.
func Because(sentinel error, format string, args ...any) error {
	return &ReasonError{Sentinel: sentinel, Reason: fmt.Sprintf(format, args...)}
}
