package mcpserver

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// The OAuth 2.1 resource server (MCP authorization; issue 17, part 3).
// Connectors that sign in (ChatGPT, Claude's connectors) present an access
// token issued by the project's authorization server (Supabase Auth's
// OAuth 2.1 server). It is accepted only when
//
//   - it is a JWT signed with ES256 or RS256 by a key of the issuer's JWKS
//     (no other algorithm: no "none", no HMAC, whose key would be public);
//   - its iss is the configured issuer, its aud names this server's MCP
//     endpoint (RFC 8707 audience: a token for another resource is refused,
//     never passed through), it has not expired (exp is required);
//   - it names its subject (the seller) and its OAuth client (client_id: a
//     seller's own session token has none and is refused).
//
// Then the gate resolves the client a seller bound to that OAuth client
// (client register --oauth) afresh on every request, as for a client token.

// OAuthOptions configure the OAuth 2.1 resource server.
type OAuthOptions struct {
	// Issuer is the authorization server's issuer identifier (Supabase:
	// https://<project>.supabase.co/auth/v1), named in the protected
	// resource metadata and required as every token's iss.
	Issuer string
	// JWKSURL is where the issuer's signing keys are (default Issuer +
	// "/.well-known/jwks.json", Supabase's).
	JWKSURL string
	// HTTPClient fetches the JWKS (default: a client with a 5 s timeout).
	HTTPClient *http.Client
	// Logger records JWKS fetch failures (never a token).
	Logger *slog.Logger
}

// Bounds of the resource server.
const (
	maxAccessTokenBytes = 8 << 10 // a Supabase access token is ~1 KiB
	maxJWKSBytes        = 64 << 10
	jwksTTL             = 10 * time.Minute // Supabase's edge caches its JWKS as long
	jwksRefetchAfter    = 30 * time.Second // an unknown kid refetches at most this often
	jwksStaleLimit      = time.Hour        // keys kept while the JWKS does not answer
	tokenLeeway         = 30 * time.Second // clock skew tolerated on exp, nbf, iat
)

// oauthVerifier verifies connectors' access tokens.
type oauthVerifier struct {
	issuer   string
	resource string // this server's MCP endpoint: required among aud
	keys     *jwksCache
	parser   *jwt.Parser
}

func newOAuthVerifier(o OAuthOptions, resource string) *oauthVerifier {
	url := o.JWKSURL
	if url == "" {
		url = strings.TrimSuffix(o.Issuer, "/") + "/.well-known/jwks.json"
	}
	hc := o.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 5 * time.Second}
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &oauthVerifier{
		issuer:   o.Issuer,
		resource: resource,
		keys:     &jwksCache{url: url, hc: hc, log: logger, now: time.Now},
		parser: jwt.NewParser(jwt.WithValidMethods([]string{"ES256", "RS256"}), jwt.WithIssuer(o.Issuer),
			jwt.WithExpirationRequired(), jwt.WithIssuedAt(), jwt.WithLeeway(tokenLeeway)),
	}
}

// accessClaims are the claims read from an access token.
type accessClaims struct {
	jwt.RegisteredClaims
	ClientID string `json:"client_id"`
}

// looksLikeJWT reports a compact JWS (three base64url parts, a JSON
// header): what a connector sends, never a client token (tsk_…).
func looksLikeJWT(s string) bool {
	return strings.HasPrefix(s, "eyJ") && strings.Count(s, ".") == 2
}

// verify checks an access token and returns the connector it names and
// its expiry. A token that is not valid is auth.ErrInvalidToken (401); a
// JWKS that cannot be fetched is another error (500: fail closed).
func (v *oauthVerifier) verify(ctx context.Context, token string) (*domain.Connector, time.Time, error) {
	invalid := func(why string) (*domain.Connector, time.Time, error) {
		return nil, time.Time{}, fmt.Errorf("%w: %s", auth.ErrInvalidToken, why)
	}
	if v.resource == "" {
		return invalid("this server takes no OAuth access token (it has no public URL)")
	}
	if len(token) > maxAccessTokenBytes {
		return invalid("access token too long")
	}
	var claims accessClaims
	var fetchErr error
	_, err := v.parser.ParseWithClaims(token, &claims, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		key, err := v.keys.key(ctx, kid)
		if err != nil {
			fetchErr = err
			return nil, err
		}
		if key == nil {
			return nil, errors.New("unknown signing key")
		}
		if !keyFits(key, t.Method.Alg()) {
			return nil, errors.New("the signing key does not fit the token's algorithm")
		}
		return key, nil
	})
	if fetchErr != nil {
		return nil, time.Time{}, fetchErr
	}
	if err != nil {
		return invalid("access token not valid: " + safeJWTError(err))
	}
	if !oauthex.MatchesResource(claims.Audience, v.resource) {
		return invalid("access token not issued for this server (audience)")
	}
	if claims.Subject == "" || claims.ClientID == "" || !domain.OAuthClientIDRE().MatchString(claims.ClientID) || len(claims.Subject) > 255 {
		return invalid("access token names no subject or OAuth client")
	}
	return &domain.Connector{Subject: claims.Subject, ClientID: claims.ClientID, Token: token}, claims.ExpiresAt.Time, nil
}

// safeJWTError names what was wrong with a token in words of our own: the
// library's messages may quote claims.
func safeJWTError(err error) string {
	for _, e := range []struct {
		err  error
		text string
	}{
		{jwt.ErrTokenMalformed, "malformed"},
		{jwt.ErrTokenUnverifiable, "unverifiable signature"},
		{jwt.ErrTokenSignatureInvalid, "bad signature"},
		{jwt.ErrTokenExpired, "expired"},
		{jwt.ErrTokenRequiredClaimMissing, "a required claim is missing"},
		{jwt.ErrTokenInvalidIssuer, "another issuer"},
		{jwt.ErrTokenNotValidYet, "not valid yet"},
		{jwt.ErrTokenUsedBeforeIssued, "issued in the future"},
		{jwt.ErrTokenInvalidClaims, "invalid claims"},
	} {
		if errors.Is(err, e.err) {
			return e.text
		}
	}
	return "rejected"
}

// keyFits reports whether a JWKS key may verify alg.
func keyFits(key any, alg string) bool {
	switch key.(type) {
	case *ecdsa.PublicKey:
		return alg == "ES256"
	case *rsa.PublicKey:
		return alg == "RS256"
	}
	return false
}

// connectorUserID is the SDK's session owner of a connector: its OAuth
// client and subject, so a refreshed token continues the same session.
func connectorUserID(c *domain.Connector) string {
	sum := sha256.Sum256([]byte(c.ClientID + "\x00" + c.Subject))
	return "oauth:" + hex.EncodeToString(sum[:8])
}

// jwksCache holds the issuer's signing keys by kid. It fetches them on
// first use and again once they are jwksTTL old; an unknown kid fetches
// again, but no fetch starts within jwksRefetchAfter of the last attempt,
// whatever its outcome (an invented kid, or a JWKS that does not answer,
// cannot make the server fetch on every request). While the JWKS does not
// answer, keys fetched less than jwksStaleLimit ago serve; older ones, or
// none, fail closed. One fetch runs at a time, outside the lock and
// detached from the request that started it (a caller hanging up cannot
// fail it), and callers wait for it.
type jwksCache struct {
	url string
	hc  *http.Client
	log *slog.Logger
	now func() time.Time

	mu       sync.Mutex
	keys     map[string]any
	fetched  time.Time     // last successful fetch
	tried    time.Time     // last attempt
	fetching chan struct{} // closed when the running fetch ends; nil when none runs
}

// errKeysUnreadable is the error of a lookup without usable keys.
var errKeysUnreadable = errors.New("the authorization server's signing keys cannot be read")

// key returns the key of kid (nil: none such), or an error when the JWKS
// cannot be read and no usable copy is held.
func (c *jwksCache) key(ctx context.Context, kid string) (any, error) {
	for {
		c.mu.Lock()
		now := c.now()
		if k, ok := c.keys[kid]; ok && now.Sub(c.fetched) < jwksTTL {
			c.mu.Unlock()
			return k, nil
		}
		if wait := c.fetching; wait != nil {
			c.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if !c.tried.IsZero() && now.Sub(c.tried) < jwksRefetchAfter {
			defer c.mu.Unlock()
			if c.keys != nil && now.Sub(c.fetched) < jwksStaleLimit {
				return c.keys[kid], nil // nil: a kid the set does not have
			}
			return nil, errKeysUnreadable
		}
		c.tried = now
		done := make(chan struct{})
		c.fetching = done
		c.mu.Unlock()

		keys, err := c.fetch(context.WithoutCancel(ctx))
		c.mu.Lock()
		if err != nil {
			c.log.Warn("oauth: the issuer's JWKS cannot be read", "err", err)
		} else {
			c.keys, c.fetched = keys, c.now()
		}
		c.fetching = nil
		close(done)
		c.mu.Unlock()
	}
}

// jwk is one key of a JWKS (RFC 7517): the members we read.
type jwk struct {
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	Alg string `json:"alg"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Y   string `json:"y"`
	N   string `json:"n"`
	E   string `json:"e"`
}

func (c *jwksCache) fetch(ctx context.Context) (map[string]any, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
	if err != nil {
		return nil, err
	}
	if len(body) > maxJWKSBytes {
		return nil, errors.New("JWKS too large")
	}
	return parseJWKS(body)
}

// parseJWKS reads the verification keys of a JWKS: EC P-256 (ES256) and
// RSA of at least 2,048 bits (RS256), each with a kid. Other keys (an
// HMAC secret, encryption keys, other curves) are skipped: never usable.
func parseJWKS(body []byte) (map[string]any, error) {
	var set struct {
		Keys []jwk `json:"keys"`
	}
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, fmt.Errorf("JWKS: %v", err)
	}
	keys := map[string]any{}
	for _, k := range set.Keys {
		if k.Kid == "" || (k.Use != "" && k.Use != "sig") {
			continue
		}
		switch {
		case k.Kty == "EC" && k.Crv == "P-256" && (k.Alg == "" || k.Alg == "ES256"):
			x, errX := base64.RawURLEncoding.DecodeString(k.X)
			y, errY := base64.RawURLEncoding.DecodeString(k.Y)
			if errX != nil || errY != nil || len(x) != 32 || len(y) != 32 {
				continue
			}
			pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
			if err != nil {
				continue // not a point of the curve
			}
			keys[k.Kid] = pub
		case k.Kty == "RSA" && (k.Alg == "" || k.Alg == "RS256"):
			n, errN := base64.RawURLEncoding.DecodeString(k.N)
			e, errE := base64.RawURLEncoding.DecodeString(k.E)
			if errN != nil || errE != nil || len(e) == 0 || len(e) > 4 {
				continue
			}
			pub := &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
			if pub.N.BitLen() < 2048 || pub.E < 3 || pub.E%2 == 0 {
				continue
			}
			keys[k.Kid] = pub
		}
	}
	return keys, nil
}
