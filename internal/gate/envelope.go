package gate

import (
	"github.com/triunalabs/trovesnap/internal/catalog"
	"github.com/triunalabs/trovesnap/internal/domain"
)

// Envelope statuses (§22).
const (
	StatusSucceeded             = "succeeded"
	StatusSucceededWithWarnings = "succeeded_with_warnings"
	StatusProposed              = "proposed"
	StatusApprovalRequired      = "approval_required"
	StatusBlocked               = "blocked"
	StatusFailed                = "failed"
)

// Envelope is the §22 tool_response: the structuredContent of every call.
type Envelope struct {
	RequestID       *string           `json:"request_id"`
	ServerRequestID string            `json:"server_request_id"`
	Mode            domain.Mode       `json:"mode"`
	Tool            ToolID            `json:"tool"`
	Status          string            `json:"status"`
	Data            any               `json:"data"`
	Warnings        []catalog.Warning `json:"warnings"`
	Errors          []Error           `json:"errors"`
	Related         domain.Related    `json:"related"`
	Audit           Audit             `json:"audit"`
}

// ToolID names the tool and version that answered.
type ToolID struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Error is one envelope error.
type Error struct {
	Code      Code   `json:"code"`
	Message   string `json:"message"`
	Field     string `json:"field,omitempty"`
	Retryable bool   `json:"retryable"`
	// RetryAfterSeconds is set with rate_limited.
	RetryAfterSeconds int `json:"retry_after_seconds,omitempty"`
}

// Audit links the envelope to its plugin_event.
type Audit struct {
	PluginEventID string `json:"plugin_event_id"`
	Replayed      bool   `json:"idempotent_replay"`
}

// IsError reports whether the envelope must be sent with isError (blocked or failed).
func (e *Envelope) IsError() bool { return e.Status == StatusBlocked || e.Status == StatusFailed }
