package store

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/triunalabs/trovesnap/internal/domain"
)

func TestResolvePrincipal_DemoClientInMock(t *testing.T) {
	s := openTest(t)
	p := principal(t, s, "")
	want := domain.Principal{
		Client:       domain.ClientRef{ID: clientDemo, Name: "Demo Desktop", Type: "desktop"},
		ClientStatus: domain.ClientActive, AllowedToolGroups: []string{"catalog.read", "intake.write"},
		ActorID: userAlice, ActorType: "seller", TenantID: tenantA, MembershipID: "membership_a1", Role: domain.RoleOwner,
	}
	if p.Client != want.Client || p.ClientStatus != want.ClientStatus || !slices.Equal(p.AllowedToolGroups, want.AllowedToolGroups) ||
		p.ActorID != want.ActorID || p.ActorType != want.ActorType || p.TenantID != want.TenantID ||
		p.MembershipID != want.MembershipID || p.Role != want.Role || p.Public {
		t.Fatalf("principal = %+v\nwant        %+v", p, want)
	}
}

func TestResolvePrincipal_AnonymousInLive(t *testing.T) {
	s := openTest(t, func(o *Options) { o.Mode = domain.ModeLive })
	p := principal(t, s, "")
	if p.ActorType != "anonymous" || !p.Public || p.TenantID != "" || p.Client.ID != "" {
		t.Fatalf("principal = %+v; want Anonymous (never the demo client in live mode)", p)
	}
	// A credential still resolves in live mode.
	if p := principal(t, s, credB); p.TenantID != tenantB {
		t.Fatalf("credential in live mode resolved to %+v", p)
	}
}

func TestResolvePrincipal_CredentialSelectsItsClient(t *testing.T) {
	s := openTest(t)
	p := principal(t, s, credA2)
	if p.Client.ID != clientA2 || p.Role != domain.RolePricer || p.MembershipID != "membership_a2" || p.ActorID != userCarol {
		t.Fatalf("principal = %+v", p)
	}
	if p.AllowedToolGroups == nil {
		t.Fatalf("AllowedToolGroups must be a list, never nil")
	}
	// Stored as "sha256:<hex>": matches too.
	if p := principal(t, s, credB); p.Client.ID != clientB || p.TenantID != tenantB || len(p.AllowedToolGroups) != 0 {
		t.Fatalf("principal = %+v", p)
	}
	for _, bad := range []string{"tsk_wrong", credA2 + " ", CredentialHash(credA2)} {
		_, err := s.ResolvePrincipal(context.Background(), bad)
		if !errors.Is(err, domain.ErrClientNotRegistered) {
			t.Errorf("credential %q: err = %v; want ErrClientNotRegistered (never the demo client)", bad, err)
		}
	}
}

// A status change made by another process (here a second, raw connection)
// is enforced on the very next call: nothing is cached.
func TestResolvePrincipal_SuspendedSeenImmediately(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	other := rawDB(t, s.Path())
	principal(t, s, credA2)
	principal(t, s, "")

	set := func(id, status string) {
		t.Helper()
		if _, err := other.Exec("UPDATE mcp_clients SET status = ? WHERE id = ?", status, id); err != nil {
			t.Fatal(err)
		}
	}
	set(clientA2, domain.ClientSuspended)
	if _, err := s.ResolvePrincipal(ctx, credA2); !errors.Is(err, domain.ErrClientSuspended) {
		t.Fatalf("after suspension: err = %v; want ErrClientSuspended", err)
	}
	set(clientA2, domain.ClientRevoked)
	if _, err := s.ResolvePrincipal(ctx, credA2); !errors.Is(err, domain.ErrClientNotRegistered) {
		t.Fatalf("after revocation: err = %v; want ErrClientNotRegistered", err)
	}
	set(clientA2, domain.ClientActive)
	principal(t, s, credA2)

	set(clientDemo, domain.ClientSuspended)
	if _, err := s.ResolvePrincipal(ctx, ""); !errors.Is(err, domain.ErrClientSuspended) {
		t.Fatalf("suspended demo client: err = %v; want ErrClientSuspended", err)
	}
}

func TestResolvePrincipal_NoDemoClientIsNotRegistered(t *testing.T) {
	s := openTest(t)
	if _, err := rawDB(t, s.Path()).Exec("UPDATE mcp_clients SET demo = 0"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ResolvePrincipal(context.Background(), ""); !errors.Is(err, domain.ErrClientNotRegistered) {
		t.Fatalf("err = %v; want ErrClientNotRegistered", err)
	}
}

func TestResolvePrincipal_ReadErrorFailsClosed(t *testing.T) {
	s := openTest(t)
	_ = s.r.Close() // every read now fails
	p, err := s.ResolvePrincipal(context.Background(), "")
	if !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("err = %v; want ErrUnavailable", err)
	}
	if p.TenantID != "" || p.Client.ID != "" {
		t.Fatalf("a failed resolution returned a principal: %+v", p)
	}
}
