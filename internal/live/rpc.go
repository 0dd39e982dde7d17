package live

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// maxAnswer bounds an RPC answer (a page of 100 items with photos and
// pricing history is far below it).
const maxAnswer = 32 << 20

// PostgRESTError is the error body PostgREST answers with. Its Message may
// quote SQL: it goes to the debug log, never into a returned error.
type PostgRESTError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Details string `json:"details"`
	Hint    string `json:"hint"`
}

// UnmarshalJSON accepts details and hint as strings or null (PostgREST sends
// null when Postgres gave none).
func (e *PostgRESTError) UnmarshalJSON(b []byte) error {
	var raw struct {
		Code    any `json:"code"`
		Message any `json:"message"`
		Details any `json:"details"`
		Hint    any `json:"hint"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	str := func(v any) string {
		switch x := v.(type) {
		case nil:
			return ""
		case string:
			return x
		default:
			j, _ := json.Marshal(x)
			return string(j)
		}
	}
	e.Code, e.Message, e.Details, e.Hint = str(raw.Code), str(raw.Message), str(raw.Details), str(raw.Hint)
	return nil
}

// call POSTs args (named arguments) to /rest/v1/rpc/fn and decodes a 2xx
// answer into out (nil: ignore it). Everything else is a domain error: the
// trovesnap:* codes the RPCs raise map to their sentinels, and any other
// failure — network, timeout, a status or body we do not expect — is
// ErrUnavailable, so the gate fails closed.
//
// call carries no client: the public reads, the schema version and the
// events of calls no client made. The request role is the project's anon
// role, which the public key selects.
func (b *Backend) call(ctx context.Context, fn string, args any, out any) error {
	return b.do(ctx, "", "", fn, args, out)
}

// callClient is call as the MCP client whose token tok is ("" = none): the
// token travels in the ClientTokenHeader over TLS, and the RPC hashes it and
// finds the client — tenant, actor and permissions come from the database.
func (b *Backend) callClient(ctx context.Context, tok secret, fn string, args any, out any) error {
	return b.do(ctx, "", tok, fn, args, out)
}

// callAs is call with a bearer token (a seller's access token); the apikey
// header stays the project's public key.
func (b *Backend) callAs(ctx context.Context, bearer secret, fn string, args any, out any) error {
	return b.do(ctx, bearer, "", fn, args, out)
}

// ClientTokenHeader is the request header that carries an MCP client's
// token to the RPCs (trovesnap.request_credential_hash reads it).
const ClientTokenHeader = "X-Trovesnap-Client-Token"

func (b *Backend) do(ctx context.Context, bearer, tok secret, fn string, args any, out any) error {
	body, err := json.Marshal(args)
	if err != nil {
		return fmt.Errorf("live: %s: encode arguments: %w", fn, domain.ErrInvalidInput)
	}
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.rpcURL+fn, bytes.NewReader(body))
	if err != nil {
		return b.unavailable(fn, err)
	}
	req.Header.Set("apikey", b.apiKey.reveal())
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer.reveal())
	}
	if t, ok := strings.CutPrefix(tok.reveal(), oauthBearer); ok && bearer == "" {
		req.Header.Set("Authorization", "Bearer "+t) // a connector's access token (ResolveConnector)
	} else if tok != "" {
		req.Header.Set(ClientTokenHeader, tok.reveal())
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := b.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return b.unavailable(fn, ctx.Err())
		}
		return b.unavailable(fn, err)
	}
	defer drain(resp.Body)
	// An answer of known length is read into one buffer of its size (a
	// chain page is megabytes; growing by doubling copied it several times).
	var buf bytes.Buffer
	if n := resp.ContentLength; n > 0 && n <= maxAnswer {
		buf.Grow(int(n) + bytes.MinRead)
	}
	if _, err := buf.ReadFrom(io.LimitReader(resp.Body, maxAnswer+1)); err != nil {
		return b.unavailable(fn, err)
	}
	data := buf.Bytes()
	if len(data) > maxAnswer {
		return b.unavailable(fn, errors.New("answer too large"))
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		if out == nil {
			return nil
		}
		if raw, ok := out.(*rawAnswer); ok {
			*raw = data // the caller decodes it (seller_audit_chain's pages)
			return nil
		}
		if err := json.Unmarshal(data, out); err != nil {
			return b.unavailable(fn, fmt.Errorf("HTTP %d: undecodable answer: %v", resp.StatusCode, err))
		}
		return nil
	}
	var pe PostgRESTError
	if err := json.Unmarshal(data, &pe); err != nil || (pe.Code == "" && pe.Message == "") {
		return b.unavailable(fn, fmt.Errorf("HTTP %d without a PostgREST error body", resp.StatusCode))
	}
	return b.mapError(fn, resp.StatusCode, pe)
}

// unavailable is the error of a call that did not get a usable answer. The
// cause goes to the debug log (net/http errors name the URL, never the key,
// which travels in headers only).
func (b *Backend) unavailable(fn string, cause error) error {
	b.log.Debug("live: rpc unavailable", "rpc", fn, "err", cause)
	if errors.Is(cause, context.Canceled) || errors.Is(cause, context.DeadlineExceeded) {
		return fmt.Errorf("live: %s: %w: %w", fn, domain.ErrUnavailable, cause)
	}
	return fmt.Errorf("live: %s: %w", fn, domain.ErrUnavailable)
}

// Error codes the RPCs raise (SQLSTATE P0001, message "trovesnap:<code>[:<field>]").
const (
	codeInvalidInput        = "invalid_input"
	codeInvalidReference    = "invalid_reference"
	codeIdempotencyConflict = "idempotency_conflict"
	codeClientNotRegistered = "client_not_registered"
	codeClientSuspended     = "client_suspended"
	codePermissionDenied    = "permission_denied"
	codeSaleAssignment      = "sale_assignment"
	codeForbidden           = "forbidden"
	codeNotFound            = "not_found"
	codeAuthRequired        = "auth_required"
	codeRateLimited         = "rate_limited"
)

// reasoned maps the codes whose detail is a reason the RPC wrote (shown to
// the caller after safeReason) to their sentinels: trovesnap.fail('<code>',
// '<reason>') becomes domain.Because(<sentinel>, "<reason>").
var reasoned = map[string]error{
	"stale_version":        domain.ErrStaleVersion,
	"transition_invalid":   domain.ErrTransitionInvalid,
	"candidate_required":   domain.ErrCandidateRequired,
	"approval_required":    domain.ErrApprovalRequired,
	"approval_invalid":     domain.ErrApprovalInvalid,
	"approval_expired":     domain.ErrApprovalExpired,
	"approval_revoked":     domain.ErrApprovalRevoked,
	"approval_consumed":    domain.ErrApprovalConsumed,
	"proposal_changed":     domain.ErrProposalChanged,
	"cost_limit_exceeded":  domain.ErrCostLimit,
	"idempotency_inflight": domain.ErrIdempotencyInFlight,
}

// mapError turns a PostgREST error into the domain's sentinel. Only the
// stable code, the field and our own details are read; Postgres' message
// text never reaches the returned error.
func (b *Backend) mapError(fn string, status int, pe PostgRESTError) error {
	rest, ours := strings.CutPrefix(pe.Message, "trovesnap:")
	if pe.Code != "P0001" || !ours {
		switch {
		case b.seller && (status == http.StatusUnauthorized || strings.HasPrefix(pe.Code, "PGRST3")):
			// The user's access token was refused (expired, revoked, or
			// signed by another project): signing in again is the fix.
			b.log.Debug("live: the seller session was refused", "rpc", fn, "status", status, "code", pe.Code)
			return fmt.Errorf("live: %s: the session was refused, run `trovesnap login` again: %w", fn, domain.ErrAuthRequired)
		case b.seller && (pe.Code == "42501" || status == http.StatusForbidden):
			b.log.Error("live: seller RPC not executable by signed-in users: are this release's migrations applied?",
				"rpc", fn, "status", status, "code", pe.Code)
		case pe.Code == "42501" || status == http.StatusUnauthorized || status == http.StatusForbidden || strings.HasPrefix(pe.Code, "PGRST3"):
			b.log.Error("live: the project's public key was refused or lacks a grant: check SUPABASE_ANON_KEY and that this release's migrations are applied",
				"rpc", fn, "status", status, "code", pe.Code)
		case strings.HasPrefix(pe.Code, "PGRST2"):
			b.log.Error("live: RPC not found: are the migrations applied?", "rpc", fn, "status", status, "code", pe.Code)
		default:
			b.log.Debug("live: rpc failed", "rpc", fn, "status", status, "code", pe.Code, "message", pe.Message)
		}
		return fmt.Errorf("live: %s: HTTP %d: %w", fn, status, domain.ErrUnavailable)
	}
	code, field, _ := strings.Cut(rest, ":")
	switch code {
	case codeInvalidInput:
		return domain.Invalid(field, safeReason(pe.Details))
	case codeInvalidReference:
		var d struct {
			ID          string `json:"id"`
			CrossTenant bool   `json:"cross_tenant"`
		}
		_ = json.Unmarshal([]byte(pe.Details), &d)
		return fmt.Errorf("live: %s: %w", fn, domain.UnknownRef(field, d.ID, d.CrossTenant))
	case codeIdempotencyConflict:
		return fmt.Errorf("live: %s: %w", fn, domain.ErrIdempotencyConflict)
	case codeClientNotRegistered:
		return fmt.Errorf("live: %s: %w", fn, domain.ErrClientNotRegistered)
	case codeClientSuspended:
		return fmt.Errorf("live: %s: %w", fn, domain.ErrClientSuspended)
	case codePermissionDenied:
		// The RPC's name is context for the logs; the permission it names
		// is the reason.
		return fmt.Errorf("live: %s: %w", fn, domain.Because(domain.ErrPermissionDenied, "%s", field))
	case codeSaleAssignment:
		return fmt.Errorf("live: %s: sale not assigned: %w", fn, domain.ErrSaleAssignment)
	case codeNotFound:
		// A record the caller may not see or that does not exist: the same
		// answer for both (no existence oracle).
		return fmt.Errorf("live: %s: %s: %w", fn, field, domain.ErrNotFound)
	case codeAuthRequired:
		return fmt.Errorf("live: %s: %w", fn, domain.ErrAuthRequired)
	case codeRateLimited:
		var d struct {
			Class string `json:"class"`
			Limit int    `json:"limit"`
			Retry *int   `json:"retry_after_seconds"`
		}
		if fn == "mcp_append_event" || json.Unmarshal([]byte(pe.Details), &d) != nil || d.Retry == nil {
			// Anonymous events over the public bucket: delivered later.
			return fmt.Errorf("live: %s: over the rate limit: %w", fn, domain.ErrUnavailable)
		}
		// The RPC counted the call in its class (its wrapper, migration
		// 34) and refused it over the limit: nothing ran.
		return fmt.Errorf("live: %s: %w", fn, &domain.RateLimitError{Class: d.Class, Limit: d.Limit, RetryAfterSeconds: *d.Retry})
	case codeForbidden:
		if b.seller {
			b.log.Error("live: this RPC is not for a signed-in seller", "rpc", fn)
			break
		}
		// The MCP RPCs run as the project's anon role: a bearer token of
		// another role (a seller's session, a retired server key) is refused.
		b.log.Error("live: the MCP RPCs take the project's public key only, with no bearer token", "rpc", fn)
	default:
		if sentinel, ok := reasoned[code]; ok {
			if pe.Details == "" {
				return fmt.Errorf("live: %s: %w", fn, sentinel)
			}
			return domain.Because(sentinel, "%s", safeReason(pe.Details))
		}
		b.log.Debug("live: unknown trovesnap error code", "rpc", fn, "code", code)
	}
	return fmt.Errorf("live: %s: %w", fn, domain.ErrUnavailable)
}

// safeReason keeps a reason the RPCs wrote (short, printable) and replaces
// anything else.
func safeReason(s string) string {
	if s == "" || len(s) > 200 || strings.ContainsAny(s, "\n\r\t;") {
		return "not accepted"
	}
	return s
}
