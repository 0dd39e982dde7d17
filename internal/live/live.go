package live

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
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

// Options configure a Backend. URL and Key are required.
type Options struct {
	// URL is the project URL (SUPABASE_URL), e.g. https://abc.supabase.co.
	URL string
	// Key is the server key: a JWT whose role claim is trovesnap_mcp.
	Key string
	// APIKey, when set, is sent as `apikey` instead of Key (a gateway that
	// only admits the project's own API keys there); Key stays the bearer.
	APIKey string
	// HTTPClient defaults to a client with no timeout of its own: Timeout
	// bounds each call through its context.
	HTTPClient *http.Client
	// Timeout bounds one RPC (default DefaultTimeout).
	Timeout time.Duration
	// Outbox, when set, receives AppendEvent's events (see EventQueue).
	Outbox EventQueue
	// Logger receives diagnostics (never the key). Default: discard.
	Logger *slog.Logger
}

// Backend is the live domain.Backend. It is safe for concurrent use.
type Backend struct {
	rpcURL string
	// seller marks the Backend under a Seller: refusals of the bearer are
	// the user's session, not the server key.
	seller  bool
	key     secret
	apiKey  secret
	hc      *http.Client
	timeout time.Duration
	outbox  EventQueue
	log     *slog.Logger

	// creds maps a client id to the sha256 of the credential that resolved
	// it in this process. Every RPC re-authenticates the client from it, so
	// the database, not this process, decides tenant and permissions; a
	// principal this Backend did not resolve carries no authority here.
	creds sync.Map
}

// New builds a Backend. It does not contact the server (doctor does).
func New(o Options) (*Backend, error) {
	u, err := url.Parse(strings.TrimSpace(o.URL))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("live: the project URL must be an http(s) URL such as https://<project>.supabase.co: %w", domain.ErrInvalidInput)
	}
	if strings.TrimSpace(o.Key) == "" {
		return nil, fmt.Errorf("live: the server key is empty: %w", domain.ErrInvalidInput)
	}
	b := &Backend{
		rpcURL:  strings.TrimRight(u.String(), "/") + "/rest/v1/rpc/",
		key:     secret(strings.TrimSpace(o.Key)),
		hc:      o.HTTPClient,
		timeout: o.Timeout,
		outbox:  o.Outbox,
		log:     o.Logger,
	}
	b.apiKey = b.key
	if k := strings.TrimSpace(o.APIKey); k != "" {
		b.apiKey = secret(k)
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

// Mode is live.
func (b *Backend) Mode() domain.Mode { return domain.ModeLive }

// String never shows the key.
func (b *Backend) String() string { return "live.Backend(" + b.rpcURL + ")" }

// credentialHash is how the database stores a credential: hex sha256.
func credentialHash(credential string) string {
	sum := sha256.Sum256([]byte(credential))
	return hex.EncodeToString(sum[:])
}

// ResolvePrincipal turns a credential into the principal a call acts as:
// "" is domain.Anonymous (live mode has no demo client); otherwise the
// database resolves the client (unknown, pending, revoked or without a
// membership → ErrClientNotRegistered; suspended → ErrClientSuspended). It
// asks the database on every call, so a suspension applies to the next one.
func (b *Backend) ResolvePrincipal(ctx context.Context, credential string) (domain.Principal, error) {
	if credential == "" || credential == domain.PublicCredential {
		return domain.Anonymous(), nil
	}
	h := credentialHash(credential)
	var p domain.Principal
	if err := b.call(ctx, "mcp_resolve_principal", map[string]any{"p_credential_hash": h}, &p); err != nil {
		return domain.Principal{}, err
	}
	if p.Client.ID == "" || p.TenantID == "" {
		return domain.Principal{}, b.unavailable("mcp_resolve_principal", errors.New("answer without client or tenant"))
	}
	if p.AllowedToolGroups == nil {
		p.AllowedToolGroups = []string{}
	}
	b.creds.Store(p.Client.ID, h)
	return p, nil
}

// hashOf is the credential hash of a principal this Backend resolved.
func (b *Backend) hashOf(p domain.Principal) (string, error) {
	if p.Public || p.TenantID == "" {
		return "", fmt.Errorf("live: tenant data needs a tenant principal: %w", domain.ErrAuthRequired)
	}
	return b.hashOfClient(p.Client.ID)
}

func (b *Backend) hashOfClient(clientID string) (string, error) {
	if v, ok := b.creds.Load(clientID); ok {
		return v.(string), nil
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
