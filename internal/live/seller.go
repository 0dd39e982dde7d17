package live

import (
	"context"
	"fmt"
	"strings"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// Seller is a seller surface's connection to the project (`trovesnap
// approve`, `client`, `policy` in live mode): every RPC runs under the
// signed-in user's own access token (role authenticated, sub the user's
// Supabase Auth id), so the seller_* RPCs and row level security decide
// what the user may see and do — never a key of this process. It is safe
// for concurrent use.
type Seller struct {
	b     *Backend
	token secret
	// src, when set, supplies the token of each call instead (a session
	// that is refreshed while a long-running surface stays open).
	src TokenSource
}

// TokenSource returns the access token for the next call.
type TokenSource func(ctx context.Context) (string, error)

// NewSellerSource connects like NewSeller, asking src for the access token
// before every call, so a terminal left open outlives one token.
func NewSellerSource(o Options, src TokenSource) (*Seller, error) {
	if src == nil {
		return nil, fmt.Errorf("live: not signed in (run `trovesnap login`): %w", domain.ErrAuthRequired)
	}
	b, err := New(o)
	if err != nil {
		return nil, err
	}
	b.seller = true
	return &Seller{b: b, src: src}, nil
}

// NewSeller connects as the user of accessToken. o.PublicKey is the project's
// public (anon) API key, sent as `apikey`; the access token is the bearer.
func NewSeller(o Options, accessToken string) (*Seller, error) {
	if strings.TrimSpace(accessToken) == "" {
		return nil, fmt.Errorf("live: not signed in (run `trovesnap login`): %w", domain.ErrAuthRequired)
	}
	b, err := New(o)
	if err != nil {
		return nil, err
	}
	b.seller = true
	return &Seller{b: b, token: secret(strings.TrimSpace(accessToken))}, nil
}

// call runs a seller RPC under the user's token.
func (s *Seller) call(ctx context.Context, fn string, args any, out any) error {
	tok := s.token
	if s.src != nil {
		t, err := s.src(ctx)
		if err != nil {
			return err
		}
		tok = secret(strings.TrimSpace(t))
	}
	return s.b.callAs(ctx, tok, fn, args, out)
}

// String never shows the token.
func (s *Seller) String() string { return "live.Seller(" + s.b.rpcURL + ")" }

// GoString never shows the token either.
func (s *Seller) GoString() string { return s.String() }
