package live

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/supabase"
)

// The Backend implements the Backend contract; this fails the build if it drifts.
var _ domain.Backend = (*Backend)(nil)

// SchemaVersion is the migration version of supabase/migrations this
// release expects (mcp_schema_version() must answer it): the number of
// migrations recorded in supabase/migrations.sum, so never kept by hand.
var SchemaVersion = supabase.SchemaVersion()

// DefaultTimeout bounds one RPC round trip.
const DefaultTimeout = 10 * time.Second

// EventQueue is where AppendEvent puts the events of calls that wrote
// nothing, when the server keeps them in a local outbox (the store's
// EnqueueEvent); a flusher then delivers them with SendEvent.
type EventQueue interface {
	EnqueueEvent(ctx context.Context, e domain.Event) error
}

// Options configure a Backend. URL and PublicKey are required.
type Options struct {
	// URL is the project URL (SUPABASE_URL), e.g. https://abc.supabase.co.
	URL string
	// PublicKey is the project's public (anon or publishable) API key,
	// sent as `apikey`. It is the same for every user of the project and
	// grants nothing by itself: an MCP RPC's authority is the client token
	// (ClientTokenHeader), a seller RPC's the user's access token.
	PublicKey string
	// HTTPClient defaults to a client with no timeout of its own: Timeout
	// bounds each call through its context.
	HTTPClient *http.Client
	// Timeout bounds one RPC (default DefaultTimeout).
	Timeout time.Duration
	// Outbox, when set, receives AppendEvent's events (see EventQueue).
	Outbox EventQueue
	// Logger receives diagnostics (never a key or token). Default: discard.
	Logger *slog.Logger
}

// Backend is the live domain.Backend. It is safe for concurrent use.
type Backend struct {
	rpcURL string
	// seller marks the Backend under a Seller: refusals of the bearer are
	// the user's session.
	seller  bool
	apiKey  secret
	hc      *http.Client
	timeout time.Duration
	outbox  EventQueue
	log     *slog.Logger

	// creds maps a client id to the token that resolved it in this process
	// (a secret). Every RPC of that client sends the token again and the
	// database re-authenticates it, so the database, not this process,
	// decides tenant and permissions; a principal this Backend did not
	// resolve carries no authority here.
	creds sync.Map
}

// New builds a Backend. It does not contact the server (doctor does).
func New(o Options) (*Backend, error) {
	u, err := url.Parse(strings.TrimSpace(o.URL))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("live: the project URL must be an http(s) URL such as https://<project>.supabase.co: %w", domain.ErrInvalidInput)
	}
	// Tokens travel in headers: over TLS, or to this machine only (a local
	// Supabase stack, a test).
	if u.Scheme == "http" && !loopback(u.Hostname()) {
		return nil, fmt.Errorf("live: the project URL must use https (http is for a project on this machine only): %w", domain.ErrInvalidInput)
	}
	if strings.TrimSpace(o.PublicKey) == "" {
		return nil, fmt.Errorf("live: the project's public key is empty: %w", domain.ErrInvalidInput)
	}
	b := &Backend{
		rpcURL:  strings.TrimRight(u.String(), "/") + "/rest/v1/rpc/",
		apiKey:  secret(strings.TrimSpace(o.PublicKey)),
		hc:      o.HTTPClient,
		timeout: o.Timeout,
		outbox:  o.Outbox,
		log:     o.Logger,
	}
	if b.hc == nil {
		b.hc = &http.Client{}
	}
	if b.timeout <= 0 {
		b.timeout = DefaultTimeout
	}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	return b, nil
}

// loopback says whether host names this machine.
func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Mode is live.
func (b *Backend) Mode() domain.Mode { return domain.ModeLive }

// String never shows the key.
func (b *Backend) String() string { return "live.Backend(" + b.rpcURL + ")" }

// credentialHash is how the database stores a credential: hex sha256. A
// seller's registration sends it (the token itself never leaves the
// seller's terminal then); an MCP call sends the token, which SQL hashes.
func credentialHash(credential string) string {
	sum := sha256.Sum256([]byte(credential))
	return hex.EncodeToString(sum[:])
}

// ResolvePrincipal turns a credential into the principal a call acts as:
// "" is domain.Anonymous (live mode has no demo client); otherwise the
// database resolves the client from the token (unknown, pending, revoked or
// without a membership → ErrClientNotRegistered; suspended →
// ErrClientSuspended). It asks the database on every call, so a suspension
// applies to the next one.
func (b *Backend) ResolvePrincipal(ctx context.Context, credential string) (domain.Principal, error) {
	if credential == "" || credential == domain.PublicCredential {
		return domain.Anonymous(), nil
	}
	tok := secret(credential)
	var p domain.Principal
	if err := b.callClient(ctx, tok, "mcp_resolve_principal", map[string]any{}, &p); err != nil {
		return domain.Principal{}, err
	}
	if p.Client.ID == "" || p.TenantID == "" {
		return domain.Principal{}, b.unavailable("mcp_resolve_principal", errors.New("answer without client or tenant"))
	}
	if p.AllowedToolGroups == nil {
		p.AllowedToolGroups = []string{}
	}
	b.creds.Store(p.Client.ID, tok)
	return p, nil
}

// ResolveConnector resolves a caller signed in through OAuth: the database
// verifies its access token again (PostgREST checks the signature and
// expiry), and request_credential_hash finds the client bound to the
// token's OAuth client and subject, for whose resource it was issued. The
// token stands for the client's token in this Backend's later calls.
func (b *Backend) ResolveConnector(ctx context.Context, c domain.Connector) (domain.Principal, error) {
	if c.Token == "" {
		return domain.Principal{}, fmt.Errorf("live: connector without an access token: %w", domain.ErrClientNotRegistered)
	}
	return b.ResolvePrincipal(ctx, oauthBearer+c.Token)
}

// oauthBearer marks a connector's access token among client credentials:
// it travels as the request's bearer token (role authenticated) instead of
// the client token header. Anything sent this way is verified by the
// database, so the mark confers nothing.
const oauthBearer = "oauth-bearer "

// tokenOf is the client token of a principal this Backend resolved.
func (b *Backend) tokenOf(p domain.Principal) (secret, error) {
	if p.Public || p.TenantID == "" {
		return "", fmt.Errorf("live: tenant data needs a tenant principal: %w", domain.ErrAuthRequired)
	}
	return b.tokenOfClient(p.Client.ID)
}

func (b *Backend) tokenOfClient(clientID string) (secret, error) {
	if v, ok := b.creds.Load(clientID); ok {
		return v.(secret), nil
	}
	return "", fmt.Errorf("live: client %s was not authenticated by this server: %w", clientID, domain.ErrAuthRequired)
}

// drain discards what is left of a body so the connection is reused.
func drain(r io.ReadCloser) {
	_, _ = io.Copy(io.Discard, io.LimitReader(r, 1<<20))
	_ = r.Close()
}

// GoString never shows the key either (%#v of a Backend).
func (b *Backend) GoString() string { return b.String() }
