package domain

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"log/slog"
	"math"
	"slices"
	"strings"
)

// Client types (spec §7 mcp_client_type).
var ClientTypes = []string{"claude_code", "claude_desktop", "chatgpt", "local_agent", "desktop_harness", "internal_automation", "custom"}

// Tool groups a client may be allowed (the spec's names; one per tier).
var ToolGroups = []string{"public_read", "tenant_read", "candidate_write", "action_proposal", "controlled_action"}

// Trust levels and risk classes of a client (spec §7 trust).
var (
	TrustLevels = []string{"trusted_local_client", "standard_client", "untrusted_client"}
	RiskClasses = []string{"standard", "elevated", "restricted"}
)

// TokenPrefix marks trovesnap client credentials so they are recognisable in
// a leak scan and cannot be confused with other secrets.
const TokenPrefix = "tsk_"

var tokenRE = LazyRegexp(`^tsk_[a-z2-7]{52}$`)

// NewClientToken returns a fresh credential: "tsk_" + 256 random bits in
// lower-case base32. It is shown once and stored only as a hash.
func NewClientToken() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("crypto/rand failed: " + err.Error())
	}
	return TokenPrefix + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

// PublicCredential is the credential of an explicitly anonymous caller: a
// buyer's view, public tools only, in any mode. It exists so mock mode (where
// no credential means the demo seller) can show what the public sees.
const PublicCredential = "public"

// WellFormedToken reports whether s has the shape of a client credential.
// A malformed credential is refused before any lookup.
func WellFormedToken(s string) bool { return tokenRE().MatchString(s) }

// NewClient is a client registration request.
type NewClient struct {
	TenantID   string
	ActorID    string
	Name       string
	ClientType string
	Groups     []string
	CreatedBy  string
	TrustLevel string // default standard_client
	RiskClass  string // default standard
	// OAuthClientID and OAuthResource bind the client to an OAuth
	// connector (a ChatGPT or Claude connector signing in as the seller):
	// an access token issued to that OAuth client, for the actor, with
	// OAuthResource among its audiences, acts as this client. Both or
	// neither. Such a client's own token is never shown: it is reached only
	// through OAuth.
	OAuthClientID string
	OAuthResource string
}

// Connector is a caller signed in through OAuth (spec §40.6, issue 17): a
// verified access token's subject (the seller's auth user id; the actor's
// user id in mock mode), the OAuth client the token was issued to, and the
// token itself, which live mode forwards so the database verifies it again.
// It is built only by the HTTP server after verifying the token; no
// configuration or argument can name one.
type Connector struct {
	Subject  string
	ClientID string
	Token    string
}

// String, GoString, LogValue and MarshalJSON never show the access token:
// a Connector printed, logged or encoded names its OAuth client only.
func (c Connector) String() string   { return "connector(" + c.ClientID + ")" }
func (c Connector) GoString() string { return c.String() }
func (c Connector) LogValue() slog.Value {
	return slog.GroupValue(slog.String("oauth_client_id", c.ClientID))
}
func (c Connector) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]string{"oauth_client_id": c.ClientID})
}

// The connector binding's rules (client register --oauth), as regular
// expressions both Go (RE2) and PostgreSQL read alike: the live SQL holds
// the same text (live TestOAuth_BindingPatternsAreTheDomains) and the
// same verdicts (TestOAuth_BindingRuleIsTheSameInGoAndSQL).
const (
	// OAuthClientIDPattern: the OAuth client id a client is bound to,
	// printable ASCII without spaces, at most 255 bytes (Supabase's are
	// UUIDs; other authorization servers use other forms).
	OAuthClientIDPattern = `^[!-~]{1,255}$`
	// OAuthResourcePattern: the resource a connector's tokens must name,
	// this server's MCP endpoint: https (http only on a loopback host), a
	// host of letters, digits, dots and hyphens (or a bracketed IPv6
	// address), a numeric port, a path of URI characters and
	// percent-escapes, no credentials, query or fragment.
	OAuthResourcePattern = `^(https://([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])|http://(localhost|127\.0\.0\.1|\[::1\]))(:[0-9]{1,5})?(/([A-Za-z0-9._~!$&'()*+,;=:@/-]|%[0-9A-Fa-f]{2})*)?$`
	// MaxOAuthResourceBytes bounds the resource.
	MaxOAuthResourceBytes = 2048
)

// OAuthClientIDRE returns OAuthClientIDPattern compiled (on first use).
var (
	OAuthClientIDRE = LazyRegexp(OAuthClientIDPattern)
	oauthResourceRE = LazyRegexp(OAuthResourcePattern)
)

// CheckOAuthResource checks the resource URL a connector's tokens must name
// (OAuthResourcePattern, at most MaxOAuthResourceBytes).
func CheckOAuthResource(s string) error {
	if len(s) > MaxOAuthResourceBytes || !oauthResourceRE().MatchString(s) {
		return Invalid("oauth_resource", "the server's MCP endpoint URL (https://host/mcp; http only on loopback), without credentials, query or fragment")
	}
	return nil
}

// ValidateNewClient checks a registration request's own fields; the store
// checks tenant, actor and membership.
func ValidateNewClient(in NewClient) error {
	switch {
	case strings.TrimSpace(in.Name) == "" || len(in.Name) > 100:
		return Invalid("name", "required, at most 100 characters")
	case !slices.Contains(ClientTypes, in.ClientType):
		return Invalid("type", "one of "+strings.Join(ClientTypes, ", "))
	case len(in.Groups) == 0:
		return Invalid("groups", "at least one of "+strings.Join(ToolGroups, ", "))
	case in.TrustLevel != "" && !slices.Contains(TrustLevels, in.TrustLevel):
		return Invalid("trust", "one of "+strings.Join(TrustLevels, ", "))
	case in.RiskClass != "" && !slices.Contains(RiskClasses, in.RiskClass):
		return Invalid("risk_class", "one of "+strings.Join(RiskClasses, ", "))
	}
	for _, g := range in.Groups {
		if !slices.Contains(ToolGroups, g) {
			return Invalid("groups", g+" is not a tool group ("+strings.Join(ToolGroups, ", ")+")")
		}
	}
	switch {
	case in.OAuthClientID == "" && in.OAuthResource == "":
	case !OAuthClientIDRE().MatchString(in.OAuthClientID):
		return Invalid("oauth_client_id", "the OAuth client id of the connector: printable ASCII without spaces, at most 255 bytes")
	default:
		return CheckOAuthResource(in.OAuthResource)
	}
	return nil
}

// Limit classes of a call (spec §38), one per tier family.
const (
	LimitReads             = "reads"
	LimitCandidateWrites   = "candidate_writes"
	LimitProposals         = "proposals"
	LimitControlledActions = "controlled_actions"
	// LimitRejected counts the calls the gate refuses before a tool's own
	// class is counted (invalid input, unknown or invisible tool, version
	// pin, tenant hint, oversize arguments): refusals are not free.
	LimitRejected = "rejected"
)

// DefaultRejectedPerMinute is the rejected-call budget when none is set.
const DefaultRejectedPerMinute = 120

// Limits are the §38 mcp_limits of a tenant or a client (a client's narrow
// its tenant's: see Narrow).
type Limits struct {
	ReadsPerMinute             int     `json:"read_calls_per_minute"`
	CandidateWritesPerMinute   int     `json:"candidate_writes_per_minute"`
	ProposalsPerMinute         int     `json:"proposals_per_minute"`
	ControlledActionsPerMinute int     `json:"controlled_actions_per_minute"`
	MaxBulkTargets             int     `json:"maximum_bulk_targets"`
	MaxDailyPaidCostUSD        float64 `json:"maximum_daily_paid_cost_usd"`
	// RejectedPerMinute bounds refused calls; 0 means the default: an agent
	// learns a schema from its refusals, so the class can be lowered but
	// never closed.
	RejectedPerMinute int `json:"rejected_calls_per_minute"`
	// The candidate-tier quota is the tenant's (docs/quota.md): whatever
	// client's limits are read, these two come from the tenant's row, and
	// setting a client's limits leaves them as they are. Unlike the rates,
	// 0 here means the default (so a Limits built without them never locks
	// a tenant out of the candidate tier); the smallest quota is 1.
	MaxOpenCandidates int   `json:"maximum_open_candidates"`
	MaxCandidateBytes int64 `json:"maximum_candidate_bytes"`
}

// Default candidate-tier quota of a tenant (docs/quota.md). An estate sale
// has a few hundred to two thousand lots; 20,000 candidates in review is
// ten large sales waiting at once. The bytes are the 2 GiB media quota
// (MaxTenantMediaBytes) plus 512 MiB of rows and source records, about
// 110,000 CSV rows at ~4.5 KB each. The live SQL and the store's triggers
// hold the same two numbers (a test compares them).
const (
	DefaultMaxOpenCandidates       = 20_000
	DefaultMaxCandidateBytes int64 = MaxTenantMediaBytes + 512<<20
)

// DefaultLimits are the spec's §38 defaults, plus the candidate quota.
func DefaultLimits() Limits {
	return Limits{ReadsPerMinute: 120, CandidateWritesPerMinute: 20, ProposalsPerMinute: 20, ControlledActionsPerMinute: 10, MaxBulkTargets: 50,
		RejectedPerMinute: DefaultRejectedPerMinute, MaxOpenCandidates: DefaultMaxOpenCandidates, MaxCandidateBytes: DefaultMaxCandidateBytes}
}

// Validate refuses limits no seller can mean: a negative value, or a paid
// budget that is not a finite amount. NaN compares false with everything,
// so a NaN budget would never refuse a cost (nor count as a raise); +Inf is
// no budget at all. Every Backend's SetLimits calls it before writing.
func (l Limits) Validate() error {
	if l.ReadsPerMinute < 0 || l.CandidateWritesPerMinute < 0 || l.ProposalsPerMinute < 0 || l.ControlledActionsPerMinute < 0 ||
		l.MaxBulkTargets < 0 || l.MaxDailyPaidCostUSD < 0 || l.RejectedPerMinute < 0 || l.MaxOpenCandidates < 0 || l.MaxCandidateBytes < 0 {
		return Invalid("limits", "must not be negative")
	}
	if !ValidUSD(l.MaxDailyPaidCostUSD) {
		return Invalid("limits", "maximum_daily_paid_cost_usd must be a finite amount of at least 0")
	}
	return nil
}

// ValidUSD reports whether v is an amount a budget or a grant's maximum
// cost may hold: finite and not negative.
func ValidUSD(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0 }

// Effective returns l with each 0 that means a default replaced by that
// default: the rejected budget and the two quota fields. Comparing limits
// (is this a raise?) and narrowing them works on effective values only: a
// raw 0 there is the largest value, not the smallest.
func (l Limits) Effective() Limits {
	if l.RejectedPerMinute == 0 {
		l.RejectedPerMinute = DefaultRejectedPerMinute
	}
	if l.MaxOpenCandidates == 0 {
		l.MaxOpenCandidates = DefaultMaxOpenCandidates
	}
	if l.MaxCandidateBytes == 0 {
		l.MaxCandidateBytes = DefaultMaxCandidateBytes
	}
	return l
}

// Raises names, by their JSON names, the fields whose effective value next
// raises above l. Every field of Limits is a ceiling, so a larger number
// widens what a client may do and a raise needs the seller's passphrase.
// The comparison is of effective values (see Effective): where 0 means the
// default, 5 → 0 is a raise to that default. The fields are listed one by
// one; a test fails when a field of Limits is not.
func (l Limits) Raises(next Limits) []string {
	c, n := l.Effective(), next.Effective()
	var out []string
	up := func(raised bool, name string) {
		if raised {
			out = append(out, name)
		}
	}
	up(n.ReadsPerMinute > c.ReadsPerMinute, "read_calls_per_minute")
	up(n.CandidateWritesPerMinute > c.CandidateWritesPerMinute, "candidate_writes_per_minute")
	up(n.ProposalsPerMinute > c.ProposalsPerMinute, "proposals_per_minute")
	up(n.ControlledActionsPerMinute > c.ControlledActionsPerMinute, "controlled_actions_per_minute")
	up(n.MaxBulkTargets > c.MaxBulkTargets, "maximum_bulk_targets")
	up(n.MaxDailyPaidCostUSD > c.MaxDailyPaidCostUSD, "maximum_daily_paid_cost_usd")
	up(n.RejectedPerMinute > c.RejectedPerMinute, "rejected_calls_per_minute")
	up(n.MaxOpenCandidates > c.MaxOpenCandidates, "maximum_open_candidates")
	up(n.MaxCandidateBytes > c.MaxCandidateBytes, "maximum_candidate_bytes")
	return out
}

// Narrow returns the limits of a client whose own row is client under a
// tenant whose row is tenant (DefaultLimits where the tenant has none; a
// client without a row of its own has the tenant's): per class the smaller
// effective value. A client's limits narrow its
// tenant's, never widen them, so a client row written once (by lowering one
// field) cannot pin the client above a later tenant-level lowering. The
// candidate quota is the tenant's alone.
func Narrow(tenant, client Limits) Limits {
	t, c := tenant.Effective(), client.Effective()
	out := t
	out.ReadsPerMinute = min(t.ReadsPerMinute, c.ReadsPerMinute)
	out.CandidateWritesPerMinute = min(t.CandidateWritesPerMinute, c.CandidateWritesPerMinute)
	out.ProposalsPerMinute = min(t.ProposalsPerMinute, c.ProposalsPerMinute)
	out.ControlledActionsPerMinute = min(t.ControlledActionsPerMinute, c.ControlledActionsPerMinute)
	out.MaxBulkTargets = min(t.MaxBulkTargets, c.MaxBulkTargets)
	out.MaxDailyPaidCostUSD = min(t.MaxDailyPaidCostUSD, c.MaxDailyPaidCostUSD)
	out.RejectedPerMinute = min(t.RejectedPerMinute, c.RejectedPerMinute)
	return out
}

// Quotas of the candidate tier, as QuotaExceeded names them.
const (
	QuotaOpenCandidates = "open_candidates"
	QuotaCandidateBytes = "candidate_bytes"
)

// QuotaExceeded is the refusal of a write that would take the tenant over
// one of its candidate-tier quotas: invalid_input on the field "quota"
// (the §23 taxonomy has no quota code; rate_limited would tell the agent to
// retry later, which never helps here). The reason names the quota and how
// the seller raises it; the live SQL writes the same reasons.
func QuotaExceeded(quota string) error {
	if quota == QuotaCandidateBytes {
		return Invalid("quota", "this write would exceed the tenant's quota of candidate storage bytes: the seller can raise it with trovesnap limits set --tenant <tenant> --candidate-bytes B")
	}
	return Invalid("quota", "this write would exceed the tenant's quota of open candidates: review or reject candidates, or the seller can raise it with trovesnap limits set --tenant <tenant> --candidates N")
}

// PerMinute returns the per-minute limit of a class.
func (l Limits) PerMinute(class string) int {
	switch class {
	case LimitReads:
		return l.ReadsPerMinute
	case LimitCandidateWrites:
		return l.CandidateWritesPerMinute
	case LimitProposals:
		return l.ProposalsPerMinute
	case LimitControlledActions:
		return l.ControlledActionsPerMinute
	case LimitRejected:
		if l.RejectedPerMinute == 0 {
			return DefaultRejectedPerMinute
		}
		return l.RejectedPerMinute
	}
	return 0
}

// RateBucket is the rate-limit bucket a principal's calls are counted in:
// its client, or "public" for anonymous calls, which share one.
func RateBucket(p Principal) string {
	if p.Public || p.Client.ID == "" {
		return "public"
	}
	return p.Client.ID
}

// RateDecision is the answer of a rate-limit check that, when allowed, has
// already counted the call.
type RateDecision struct {
	Allowed           bool
	Class             string
	Limit             int
	RetryAfterSeconds int
}

// ClientAdmin is the seller-side management of clients and limits (the CLI
// and the approval terminal use it; no MCP tool does).
type ClientAdmin interface {
	RegisterClient(ctx context.Context, in NewClient) (Client, string, error)
	ListClients(ctx context.Context, tenantID string) ([]Client, error)
	GetClient(ctx context.Context, id string) (Client, error)
	// SetClientStatus suspends, reactivates or revokes; revoked is final.
	SetClientStatus(ctx context.Context, id, status, by string) (Client, error)
	// RotateCredential issues a new credential; the old one stops working.
	RotateCredential(ctx context.Context, id, by string) (Client, string, error)
	// PrincipalForClient resolves a client by id, whatever its status, so
	// `tools list --as` can explain visibility.
	PrincipalForClient(ctx context.Context, id string) (Principal, error)
	SetLimits(ctx context.Context, tenantID, clientID string, l Limits) error
	EffectiveLimits(ctx context.Context, tenantID, clientID string) (Limits, error)
}
