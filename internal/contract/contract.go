// Package contract is the one Backend contract suite: the same cases run
// against the embedded store (store/contract_test.go) and the live
// Supabase backend on a real PostgreSQL (internal/live), seeded with the
// same data. It is test support: only tests import it.
package contract

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/domain"
)

// Credentials of the contract dataset's clients (well-formed, fixed).
var (
	CredOwner     = token('a') // mcp_client_81, owner of fixtures.DemoTenantID
	CredOther     = token('b') // mcp_client_90, owner of fixtures.OtherTenantID
	CredSuspended = token('c') // a suspended client of the demo tenant
	CredRevoked   = token('d') // a revoked client of the demo tenant
	CredScoped    = token('e') // the sale-scoped cataloger (fixtures.LiveSaleID only)
	CredPricer    = token('f') // the pricer of the demo tenant
	CredUnknown   = token('g') // registered nowhere
	CredCataloger = token('i') // a cataloger of the demo tenant who may propose (no pricing permission)
	CredCheckout  = token('h') // the checkout member assigned fixtures.PublishedSaleID only
)

// Client ids the dataset adds to the fixtures.
const (
	SuspendedClientID = "mcp_client_c1"
	RevokedClientID   = "mcp_client_c2"
	ScopedClientID    = "mcp_client_c3"
	PricerClientID    = "mcp_client_c4"
	CatalogerClientID = "mcp_client_c5"
)

// A manager whose membership of fixtures.DemoTenantID is limited to
// fixtures.LiveSaleID: a sale-scoped approver (it holds approval.grant),
// which the fixtures do not have.
const (
	ScopedManagerUserID   = "user_c5"
	ScopedManagerMemberID = "membership_c5"
)

// A checkout member of fixtures.DemoTenantID assigned to
// fixtures.PublishedSaleID only, and its client: what the sale-day cases
// propose and execute as.
const (
	CheckoutUserID   = "user_c6"
	CheckoutMemberID = "membership_c6"
	CheckoutClientID = "mcp_client_c6"
)

func token(c byte) string { return domain.TokenPrefix + strings.Repeat(string(c), 52) }

// Hash is how both backends store a credential: hex sha256.
func Hash(credential string) string {
	sum := sha256.Sum256([]byte(credential))
	return hex.EncodeToString(sum[:])
}

// Dataset is fixtures.Dataset() with credentials for its two clients, four
// more clients (suspended, revoked, sale-scoped, pricer) and a sale-scoped
// manager. Both backends are seeded with it.
func Dataset() domain.Dataset {
	ds := fixtures.Dataset()
	for i := range ds.Clients {
		switch ds.Clients[i].ID {
		case fixtures.DemoClientID:
			ds.Clients[i].CredentialHash = Hash(CredOwner)
		case fixtures.OtherClientID:
			ds.Clients[i].CredentialHash = "sha256:" + Hash(CredOther) // the prefixed notation is accepted too
		}
	}
	at := fixtures.Epoch.Add(-24 * time.Hour)
	add := func(id, actor, status, cred string, groups ...string) {
		ds.Clients = append(ds.Clients, domain.Client{ID: id, TenantID: fixtures.DemoTenantID, Name: "Contract " + id,
			ClientType: "custom", Status: status, ActorID: actor, AllowedToolGroups: groups, CreatedBy: fixtures.DemoUserID,
			CreatedAt: at, CredentialHash: Hash(cred)})
	}
	add(SuspendedClientID, fixtures.CatalogerUserID, domain.ClientSuspended, CredSuspended, "tenant_read", "candidate_write")
	add(RevokedClientID, fixtures.CatalogerUserID, domain.ClientRevoked, CredRevoked, "tenant_read", "candidate_write")
	add(ScopedClientID, fixtures.ScopedCatalogerUserID, domain.ClientActive, CredScoped, "tenant_read", "candidate_write")
	add(PricerClientID, fixtures.PricerUserID, domain.ClientActive, CredPricer, "tenant_read")
	add(CatalogerClientID, fixtures.CatalogerUserID, domain.ClientActive, CredCataloger, "tenant_read", "candidate_write", "action_proposal")
	ds.Users = append(ds.Users, domain.User{ID: ScopedManagerUserID, DisplayName: "Contract scoped manager", Email: "scoped-manager@heritage-estates.example"})
	ds.Memberships = append(ds.Memberships, domain.Membership{ID: ScopedManagerMemberID, TenantID: fixtures.DemoTenantID,
		UserID: ScopedManagerUserID, Role: domain.RoleManager})
	ds.SaleScopes = append(ds.SaleScopes, domain.SaleScope{MembershipID: ScopedManagerMemberID, TenantID: fixtures.DemoTenantID,
		SaleIDs: []string{fixtures.LiveSaleID}})
	ds.Users = append(ds.Users, domain.User{ID: CheckoutUserID, DisplayName: "Contract checkout", Email: "checkout-c6@heritage-estates.example"})
	ds.Memberships = append(ds.Memberships, domain.Membership{ID: CheckoutMemberID, TenantID: fixtures.DemoTenantID,
		UserID: CheckoutUserID, Role: domain.RoleCheckout})
	ds.SaleScopes = append(ds.SaleScopes, domain.SaleScope{MembershipID: CheckoutMemberID, TenantID: fixtures.DemoTenantID,
		SaleIDs: []string{fixtures.PublishedSaleID}})
	add(CheckoutClientID, CheckoutUserID, domain.ClientActive, CredCheckout, "tenant_read", "action_proposal", "controlled_action")
	return ds
}
