package store

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// credentialHashPrefix is accepted in front of a stored credential hash, so
// a hash written as "sha256:<hex>" (the project's hash notation) matches too.
const credentialHashPrefix = "sha256:"

// CredentialHash is how a client credential is stored: the hex sha256 of
// the token. The token itself is never stored.
func CredentialHash(credential string) string {
	sum := sha256.Sum256([]byte(credential))
	return hex.EncodeToString(sum[:])
}

// ResolvePrincipal turns a credential into the principal a call acts as.
//
//   - "" in mock mode: the demo client (demo = 1), which must be active.
//   - "" in live mode: domain.Anonymous().
//   - otherwise the client whose credential_hash is sha256(credential):
//     unknown, pending or revoked → ErrClientNotRegistered; suspended →
//     ErrClientSuspended. A wrong credential is never the demo client.
//
// It reads the database on every call, without a cache, so a suspension
// committed by any process is enforced on the very next call. A read error
// fails closed with ErrUnavailable.
func (s *Store) ResolvePrincipal(ctx context.Context, credential string) (domain.Principal, error) {
	if credential == domain.PublicCredential || (credential == "" && s.mode == domain.ModeLive) {
		return domain.Anonymous(), nil
	}
	if credential == "" {
		return s.resolveClient(ctx, "WHERE c.demo = 1", "", "store: mock mode has no demo client")
	}
	want := CredentialHash(credential)
	return s.resolveClient(ctx, "WHERE c.credential_hash IN (?, ?)", want, "store: unknown credential", want, credentialHashPrefix+want)
}

// ResolveConnector turns a verified OAuth caller into the principal of the
// client bound to its OAuth client (RegisterClient's OAuthClientID) whose
// actor is the token's subject: in mock mode the subject is the actor's
// user id. An OAuth client bound to no client, or to one of another actor,
// is ErrClientNotRegistered; the client's status, membership and sale scope
// apply as for a token.
func (s *Store) ResolveConnector(ctx context.Context, c domain.Connector) (domain.Principal, error) {
	if c.ClientID == "" || c.Subject == "" {
		return domain.Principal{}, fmt.Errorf("store: connector without client or subject: %w", domain.ErrClientNotRegistered)
	}
	var hash sql.NullString
	err := s.r.QueryRowContext(ctx, "SELECT credential_hash FROM mcp_clients WHERE oauth_client_id = ? AND actor_id = ?", c.ClientID, c.Subject).Scan(&hash)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && !hash.Valid) {
		return domain.Principal{}, fmt.Errorf("store: no client is bound to this OAuth client and subject: %w", domain.ErrClientNotRegistered)
	}
	if err != nil {
		return domain.Principal{}, s.dbErr("resolve connector", err)
	}
	want := strings.TrimPrefix(hash.String, credentialHashPrefix)
	return s.resolveClient(ctx, "WHERE c.credential_hash IN (?, ?)", want, "store: unknown credential", want, credentialHashPrefix+want)
}

// resolveClient reads the client the where clause finds (want: the
// credential hash it must hold, "" for the demo client) and the principal
// it acts as: the client, its actor's membership in its tenant and, for a
// sale-scoped membership, the assigned sales — one statement, so one
// snapshot of them.
func (s *Store) resolveClient(ctx context.Context, where, want, notFound string, args ...any) (domain.Principal, error) {
	var (
		p        domain.Principal
		stored   sql.NullString
		groups   string
		tenantID string
		actorID  string
		status   string
		mID      sql.NullString
		mRole    sql.NullString
		scoped   sql.NullInt64
		sales    sql.NullString
	)
	const cols = `SELECT c.id, c.name, c.client_type, c.status, c.allowed_tool_groups, c.actor_id, c.tenant_id, c.credential_hash,
		m.id, m.role, m.sale_scoped,
		CASE WHEN m.sale_scoped THEN (SELECT json_group_array(ms.sale_id) FROM membership_sales ms WHERE ms.membership_id = m.id) END
		FROM mcp_clients c LEFT JOIN memberships m ON m.tenant_id = c.tenant_id AND m.user_id = c.actor_id `
	err := s.r.QueryRowContext(ctx, cols+where, args...).Scan(&p.Client.ID, &p.Client.Name, &p.Client.Type, &status, &groups, &actorID,
		&tenantID, &stored, &mID, &mRole, &scoped, &sales)
	if errors.Is(err, sql.ErrNoRows) {
		return domain.Principal{}, fmt.Errorf("%s: %w", notFound, domain.ErrClientNotRegistered)
	}
	if err != nil {
		return domain.Principal{}, s.dbErr("resolve principal", err)
	}
	if want != "" {
		// The index lookup found the row; compare again in constant time so
		// the decision itself never depends on where two hashes differ.
		got := strings.TrimPrefix(stored.String, credentialHashPrefix)
		if subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
			return domain.Principal{}, fmt.Errorf("store: unknown credential: %w", domain.ErrClientNotRegistered)
		}
	}
	switch status {
	case domain.ClientActive:
	case domain.ClientSuspended:
		return domain.Principal{}, fmt.Errorf("store: client %s: %w", p.Client.ID, domain.ErrClientSuspended)
	default: // revoked, pending: not (or no longer) a registered client
		return domain.Principal{}, fmt.Errorf("store: client %s is %s: %w", p.Client.ID, status, domain.ErrClientNotRegistered)
	}
	if err := json.Unmarshal([]byte(groups), &p.AllowedToolGroups); err != nil {
		return domain.Principal{}, s.dbErr("resolve principal: tool groups", err)
	}
	if p.AllowedToolGroups == nil {
		p.AllowedToolGroups = []string{}
	}
	if !mID.Valid {
		// A client acts for a member of its tenant; without one it can act
		// for nobody, which is the same as not being registered.
		return domain.Principal{}, fmt.Errorf("store: client %s: actor has no membership in its tenant: %w", p.Client.ID, domain.ErrClientNotRegistered)
	}
	p.MembershipID, p.Role = mID.String, mRole.String
	p.ClientStatus = status
	p.ActorID = actorID
	p.ActorType = "seller"
	p.TenantID = tenantID
	if scoped.Int64 != 0 {
		p.SaleScoped, p.AssignedSaleIDs = true, []string{}
		if err := json.Unmarshal([]byte(sales.String), &p.AssignedSaleIDs); err != nil {
			return domain.Principal{}, s.dbErr("resolve principal: assigned sales", err)
		}
		slices.Sort(p.AssignedSaleIDs)
	}
	return p, nil
}

// loadSaleScope fills p.SaleScoped and p.AssignedSaleIDs (sorted) from p's
// membership (§4.3). Read on every resolution, like the client status, so
// an assignment change applies to the very next call.
func (s *Store) loadSaleScope(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, p *domain.Principal) error {
	p.SaleScoped, p.AssignedSaleIDs = false, nil
	if p.MembershipID == "" {
		return nil
	}
	var scoped bool
	if err := q.QueryRowContext(ctx, "SELECT sale_scoped FROM memberships WHERE id = ?", p.MembershipID).Scan(&scoped); err != nil {
		return s.dbErr("resolve principal: sale scope", err)
	}
	if !scoped {
		return nil
	}
	rows, err := q.QueryContext(ctx, "SELECT sale_id FROM membership_sales WHERE membership_id = ? ORDER BY sale_id", p.MembershipID)
	if err != nil {
		return s.dbErr("resolve principal: assigned sales", err)
	}
	defer func() { _ = rows.Close() }()
	p.SaleScoped, p.AssignedSaleIDs = true, []string{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return s.dbErr("resolve principal: assigned sales", err)
		}
		p.AssignedSaleIDs = append(p.AssignedSaleIDs, id)
	}
	if err := rows.Err(); err != nil {
		return s.dbErr("resolve principal: assigned sales", err)
	}
	return nil
}
