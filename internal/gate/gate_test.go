package gate

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/triunalabs/trovesnap/internal/catalog"
	"github.com/triunalabs/trovesnap/internal/domain"
)

// The taxonomy is exactly the spec's 25 codes, each with a model-safe message.
func TestCodes_ExactlyTheTaxonomyWithMessages(t *testing.T) {
	seen := map[Code]bool{}
	for _, c := range Codes() {
		if seen[c] {
			t.Errorf("%s twice", c)
		}
		seen[c] = true
		m := c.Message()
		if m == "" || strings.Contains(strings.ToLower(m), "sql") || strings.Contains(m, "panic") {
			t.Errorf("%s: message %q", c, m)
		}
	}
	if len(seen) != 25 || len(codes) != 25 {
		t.Errorf("%d codes listed, %d described; the spec has 25", len(seen), len(codes))
	}
}

// A typed reason (domain.Because) is read by type, not cut out of the
// error's text: it is added to the code's message whatever context is
// wrapped around it ("store: " is for the logs), without the sentinel's own
// text, and only for its own sentinel.
func TestDetailed_TypedReasonReadByType(t *testing.T) {
	want := CodeStaleTargetVersion.Message() + " (item_991 is at version 8, the proposal expected 7)"
	typed := domain.Because(domain.ErrStaleVersion, "item_991 is at version %d, the proposal expected %d", 8, 7)
	for _, err := range []error{typed, fmt.Errorf("store: %w", typed), fmt.Errorf("executing prop_1: %w", typed)} {
		if !errors.Is(err, domain.ErrStaleVersion) {
			t.Fatalf("%v does not match its sentinel", err)
		}
		if got := detailed(CodeStaleTargetVersion, err, domain.ErrStaleVersion).message; got != want {
			t.Errorf("%v: message %q, want %q", err, got, want)
		}
	}
	if typed.Error() != "item_991 is at version 8, the proposal expected 7: "+domain.ErrStaleVersion.Error() {
		t.Errorf("text %q differs from the fmt.Errorf form", typed.Error())
	}
	if f := detailed(CodeStaleTargetVersion, &domain.ReasonError{Sentinel: domain.ErrStaleVersion}, domain.ErrStaleVersion); f.message != "" {
		t.Errorf("an empty reason got a message: %q", f.message)
	}
	if f := detailed(CodeStaleTargetVersion, domain.ErrStaleVersion, domain.ErrStaleVersion); f.message != "" {
		t.Errorf("a bare sentinel got a reason: %q", f.message)
	}
	if f := detailed(CodeDomainTransitionInvalid, typed, domain.ErrTransitionInvalid); f.message != "" {
		t.Errorf("another sentinel's reason was shown: %q", f.message)
	}
}

// A Backend that counts a call inside it (live: the RPC) refuses it over
// the limit with domain.ErrRateLimited: the answer is rate_limited with the
// Backend's retry delay, the same as the gate's own count gives.
func TestDomainFailure_BackendRateLimitIsRateLimited(t *testing.T) {
	g := New(Options{})
	err := fmt.Errorf("live: mcp_list_sales: %w", &domain.RateLimitError{Class: domain.LimitReads, Limit: 120, RetryAfterSeconds: 17})
	if f := g.domainFailure(err); f.code != CodeRateLimited || f.retryAfter != 17 || !strings.Contains(f.message, "120 reads calls") {
		t.Fatalf("%v → %+v", err, f)
	}
	if f := g.domainFailure(fmt.Errorf("x: %w", domain.ErrRateLimited)); f.code != CodeRateLimited {
		t.Fatalf("a bare ErrRateLimited → %+v", f)
	}
}

// An error that carries its reason only as text (fmt.Errorf around a
// sentinel, untyped) gets its code's generic message: no part of its
// Error() text (storage context, SQL, ids) reaches the model, for every
// code whose message can carry a domain reason.
func TestDomainFailure_UntypedReasonGetsTheGenericMessage(t *testing.T) {
	g := New(Options{})
	cases := []struct {
		sentinel error
		code     Code
	}{
		{domain.ErrStaleVersion, CodeStaleTargetVersion},
		{domain.ErrTransitionInvalid, CodeDomainTransitionInvalid},
		{domain.ErrPermissionDenied, CodePermissionDenied},
		{domain.ErrApprovalRequired, CodeApprovalRequired},
		{domain.ErrApprovalInvalid, CodeApprovalInvalid},
		{domain.ErrApprovalExpired, CodeApprovalExpired},
		{domain.ErrApprovalRevoked, CodeApprovalRevoked},
		{domain.ErrApprovalConsumed, CodeApprovalAlreadyConsumed},
		{domain.ErrProposalChanged, CodeProposalChanged},
		{domain.ErrCostLimit, CodeCostLimitExceeded},
		{domain.ErrCandidateRequired, CodeCandidateRequired},
	}
	const internals = "SELECT status FROM item WHERE id = 'item_991'"
	for _, c := range cases {
		for _, err := range []error{
			fmt.Errorf("store: %s: %w", internals, c.sentinel),
			fmt.Errorf("live: mcp_execute_action: %s: %w", internals, c.sentinel),
			fmt.Errorf("executing prop_1: %w", fmt.Errorf("%s: %w", internals, c.sentinel)),
		} {
			f := g.domainFailure(err)
			if f.code != c.code {
				t.Errorf("%v: code %s, want %s", err, f.code, c.code)
				continue
			}
			if f.message != "" {
				t.Errorf("%v: message %q, want the code's generic message", err, f.message)
			}
			msg := f.message
			if msg == "" {
				msg = f.code.Message()
			}
			for _, leak := range []string{"SELECT", "item_991", "store:", "live:", "mcp_", "prop_1", c.sentinel.Error()} {
				if strings.Contains(msg, leak) {
					t.Errorf("%v: message %q shows %q", err, msg, leak)
				}
			}
		}
	}
}

func TestCheckVersion_PinnedMajorDeprecatedUnsupported(t *testing.T) {
	tool := &catalog.Tool{Definition: catalog.Definition{Name: "x", Version: "2.1.0", Status: catalog.StatusActive, DeprecatedMajors: []int{1}}}
	cases := []struct {
		pin        any
		deprecated bool
		ok         bool
	}{{nil, false, true}, {"2", false, true}, {"v2.1", false, true}, {"1", true, true}, {"3", false, false}, {7, false, false}, {"two", false, false}}
	for _, c := range cases {
		meta := map[string]any{}
		if c.pin != nil {
			meta[MetaToolVersion] = c.pin
		}
		dep, f := checkVersion(meta, tool)
		if dep != c.deprecated || (f == nil) != c.ok || (f != nil && f.code != CodeToolVersionUnsupported) {
			t.Errorf("pin %v: deprecated %v, failure %+v", c.pin, dep, f)
		}
	}
	tool.Status = catalog.StatusDeprecated
	if dep, f := checkVersion(map[string]any{}, tool); !dep || f != nil {
		t.Error("a deprecated tool is deprecated at any version")
	}
}

// Principal errors fail closed: anything unexpected is service_unavailable.
func TestPrincipalFailure_FailsClosed(t *testing.T) {
	for err, want := range map[error]Code{
		domain.ErrClientSuspended:                  CodeClientSuspended,
		domain.ErrClientNotRegistered:              CodeClientNotRegistered,
		domain.ErrAuthRequired:                     CodeAuthenticationRequired,
		errors.New("disk on fire"):                 CodeServiceUnavailable,
		fmt.Errorf("x: %w", domain.ErrUnavailable): CodeServiceUnavailable,
	} {
		if got := principalFailure(err).code; got != want {
			t.Errorf("%v → %s, want %s", err, got, want)
		}
	}
}

func TestLimitClass_PerTier(t *testing.T) {
	for tier, want := range map[catalog.Tier]string{
		catalog.TierPublicRead: domain.LimitReads, catalog.TierTenantRead: domain.LimitReads,
		catalog.TierCandidateWrite: domain.LimitCandidateWrites, catalog.TierActionProposal: domain.LimitProposals,
		catalog.TierControlledAction: domain.LimitControlledActions,
	} {
		if got := limitClass(tier); got != want {
			t.Errorf("%s → %s", tier, got)
		}
	}
}
