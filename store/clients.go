package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/triunalabs/trovesnap/internal/domain"
)

var _ domain.ClientAdmin = (*Store)(nil)

const clientCols = `id, tenant_id, source_connection_id, name, client_type, status, actor_id, allowed_tool_groups,
	approval_policy_ids, trust_level, risk_class, demo, created_by, created_at,
	(SELECT last_seen_at FROM client_activity a WHERE a.client_id = mcp_clients.id), credential_hash IS NOT NULL,
	coalesce(oauth_client_id, '')`

func scanClient(row interface{ Scan(...any) error }) (domain.Client, error) {
	var (
		c             domain.Client
		groups, pols  string
		demo          int
		created       string
		lastSeen      sql.NullString
		hasCredential bool
	)
	if err := row.Scan(&c.ID, &c.TenantID, &c.SourceConnectionID, &c.Name, &c.ClientType, &c.Status, &c.ActorID, &groups,
		&pols, &c.TrustLevel, &c.RiskClass, &demo, &c.CreatedBy, &created, &lastSeen, &hasCredential, &c.OAuthClientID); err != nil {
		return c, err
	}
	var tp timeScanner
	c.CreatedAt = tp.at(created)
	c.LastSeenAt = tp.ptr(lastSeen)
	if tp.err != nil {
		return c, tp.err
	}
	if err := json.Unmarshal([]byte(groups), &c.AllowedToolGroups); err != nil {
		return c, err
	}
	if err := json.Unmarshal([]byte(pols), &c.ApprovalPolicyIDs); err != nil {
		return c, err
	}
	c.Demo = demo == 1
	c.HasCredential = hasCredential
	return c, nil
}

// RegisterClient creates an active client for a member of a tenant and
// issues its credential, which is returned once and stored only as a hash.
// The registration is recorded as a plugin_event.
func (s *Store) RegisterClient(ctx context.Context, in domain.NewClient) (domain.Client, string, error) {
	if err := domain.ValidateNewClient(in); err != nil {
		return domain.Client{}, "", err
	}
	if in.TrustLevel == "" {
		in.TrustLevel = "standard_client"
	}
	if in.RiskClass == "" {
		in.RiskClass = "standard"
	}
	if in.CreatedBy == "" {
		in.CreatedBy = in.ActorID
	}
	groups := slices.Clone(in.Groups)
	slices.Sort(groups)
	groups = slices.Compact(groups)
	token := domain.NewClientToken()
	var out domain.Client
	err := s.withTx(ctx, func(tx *sql.Tx) error {
		if err := s.requireMember(ctx, tx, in.TenantID, in.ActorID, "actor"); err != nil {
			return err
		}
		if err := s.requireMember(ctx, tx, in.TenantID, in.CreatedBy, "created_by"); err != nil {
			return err
		}
		var oauthID, oauthResource any
		if in.OAuthClientID != "" {
			var bound string
			switch err := tx.QueryRowContext(ctx, "SELECT id FROM mcp_clients WHERE oauth_client_id = ?", in.OAuthClientID).Scan(&bound); {
			case err == nil:
				return domain.Invalid("oauth_client_id", "this OAuth client is already bound to client "+bound)
			case !errors.Is(err, sql.ErrNoRows):
				return s.dbErr("register client: oauth binding", err)
			}
			oauthID, oauthResource = in.OAuthClientID, in.OAuthResource
		}
		now := s.clock.Now()
		id := s.ids.New(domain.PrefixClient)
		gj, _ := json.Marshal(groups)
		if _, err := tx.ExecContext(ctx, `INSERT INTO mcp_clients (id, tenant_id, source_connection_id, name, client_type, status,
			actor_id, allowed_tool_groups, demo, created_by, created_at, credential_hash, trust_level, risk_class,
			oauth_client_id, oauth_resource)
			VALUES (?, ?, ?, ?, ?, 'active', ?, ?, 0, ?, ?, ?, ?, ?, ?, ?)`,
			id, in.TenantID, s.ids.New(domain.PrefixConn), in.Name, in.ClientType, in.ActorID, string(gj), in.CreatedBy,
			ts(now), CredentialHash(token), in.TrustLevel, in.RiskClass, oauthID, oauthResource); err != nil {
			return s.dbErr("register client", err)
		}
		c, err := scanClient(tx.QueryRowContext(ctx, "SELECT "+clientCols+" FROM mcp_clients WHERE id = ?", id))
		if err != nil {
			return s.dbErr("register client: read back", err)
		}
		out = c
		return s.adminEvent(ctx, tx, c, in.CreatedBy, "client_registered", now)
	})
	if err != nil {
		return domain.Client{}, "", err
	}
	return out, token, nil
}

// requireMember checks that user is a member of tenant (the tenant must exist).
func (s *Store) requireMember(ctx context.Context, tx *sql.Tx, tenantID, userID, field string) error {
	var n int
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM tenants WHERE id = ?", tenantID).Scan(&n); err != nil {
		return s.dbErr("check tenant", err)
	}
	if n == 0 {
		return domain.UnknownRef("tenant", tenantID, false)
	}
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM memberships WHERE tenant_id = ? AND user_id = ?", tenantID, userID).Scan(&n); err != nil {
		return s.dbErr("check membership", err)
	}
	if n == 0 {
		return domain.Invalid(field, fmt.Sprintf("%s is not a member of %s", userID, tenantID))
	}
	return nil
}

// adminEvent records a seller-side action on a client in the audit log.
func (s *Store) adminEvent(ctx context.Context, tx *sql.Tx, c domain.Client, by, action string, now time.Time) error {
	ev := domain.Event{
		ID:            s.ids.New(domain.PrefixEvent),
		TenantID:      c.TenantID,
		CorrelationID: s.ids.New(domain.PrefixCorr),
		Mode:          s.mode,
		Plugin:        domain.PluginRef{Type: "mcp", ID: "trovesnap", Version: "cli"},
		Client:        domain.ClientRef{ID: c.ID, Name: c.Name, Type: c.ClientType},
		Actor:         domain.ActorRef{ID: by, Type: "seller"},
		Action:        action,
		Outcome:       domain.OutcomeSuccess,
		Payload:       domain.EventPayload{RedactedSummary: map[string]string{"client_id": c.ID}},
		Approval:      domain.EventApproval{Decision: "not_required"},
		Impact:        domain.EventImpact{Type: action, Material: true},
		OccurredAt:    now,
	}
	if err := s.completeSellerEvent(ctx, tx, &ev, "clients", domain.PermClientManage); err != nil {
		return err
	}
	return s.insertEvent(ctx, tx, ev)
}

// ListClients lists clients, of one tenant or (tenantID "") of all, by id.
func (s *Store) ListClients(ctx context.Context, tenantID string) ([]domain.Client, error) {
	q := "SELECT " + clientCols + " FROM mcp_clients"
	var args []any
	if tenantID != "" {
		q += " WHERE tenant_id = ?"
		args = append(args, tenantID)
	}
	out := []domain.Client{}
	err := s.withRead(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, q+" ORDER BY tenant_id, id", args...)
		if err != nil {
			return s.dbErr("list clients", err)
		}
		defer rows.Close()
		for rows.Next() {
			c, err := scanClient(rows)
			if err != nil {
				return s.dbErr("list clients: scan", err)
			}
			out = append(out, c)
		}
		return rows.Err()
	})
	return out, err
}

// GetClient returns one client by id.
func (s *Store) GetClient(ctx context.Context, id string) (domain.Client, error) {
	c, err := scanClient(s.r.QueryRowContext(ctx, "SELECT "+clientCols+" FROM mcp_clients WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return c, domain.UnknownRef("client", id, false)
	}
	if err != nil {
		return c, s.dbErr("get client", err)
	}
	return c, nil
}

// clientTransitions: revoked is final; pending only becomes active or revoked.
var clientTransitions = map[string][]string{
	domain.ClientActive:    {domain.ClientSuspended, domain.ClientRevoked},
	domain.ClientSuspended: {domain.ClientActive, domain.ClientRevoked},
	domain.ClientPending:   {domain.ClientActive, domain.ClientRevoked},
}

// SetClientStatus suspends, reactivates or revokes a client. The change is
// seen by the very next call of every server process, since principals are
// resolved from the database on each call.
func (s *Store) SetClientStatus(ctx context.Context, id, status, by string) (domain.Client, error) {
	var out domain.Client
	err := s.withTx(ctx, func(tx *sql.Tx) error {
		c, err := scanClient(tx.QueryRowContext(ctx, "SELECT "+clientCols+" FROM mcp_clients WHERE id = ?", id))
		if errors.Is(err, sql.ErrNoRows) {
			return domain.UnknownRef("client", id, false)
		}
		if err != nil {
			return s.dbErr("set client status", err)
		}
		if err := s.mayManage(ctx, tx, c, by); err != nil {
			return err
		}
		if !slices.Contains(clientTransitions[c.Status], status) {
			return domain.Because(domain.ErrTransitionInvalid, "client %s is %s and cannot become %s", id, c.Status, status)
		}
		if by == "" {
			by = c.CreatedBy
		}
		q := "UPDATE mcp_clients SET status = ? WHERE id = ?"
		if status == domain.ClientRevoked {
			q = "UPDATE mcp_clients SET status = ?, credential_hash = NULL WHERE id = ?" // a revoked credential is gone
		}
		if _, err := tx.ExecContext(ctx, q, status, id); err != nil {
			return s.dbErr("set client status", err)
		}
		c.Status = status
		c.HasCredential = c.HasCredential && status != domain.ClientRevoked
		out = c
		action := map[string]string{domain.ClientActive: "client_reactivated", domain.ClientSuspended: "client_suspended", domain.ClientRevoked: "client_revoked"}[status]
		return s.adminEvent(ctx, tx, c, by, action, s.clock.Now())
	})
	return out, err
}

// mayManage decides who changes a client. A named user (a seller surface:
// the approval terminal, a signed-in CLI) must hold client.manage in the
// client's tenant; a user of another tenant finds no such client, exactly
// as the live RPCs answer. No user is the machine's operator at the local
// CLI in mock mode.
func (s *Store) mayManage(ctx context.Context, tx *sql.Tx, c domain.Client, by string) error {
	if by == "" {
		return nil
	}
	role, err := s.roleIn(ctx, tx, c.TenantID, by)
	if err != nil {
		return err
	}
	switch {
	case role == "":
		return domain.UnknownRef("client", c.ID, true)
	case !(domain.Principal{Role: role}).Has(domain.PermClientManage):
		return domain.Because(domain.ErrPermissionDenied, "%s (%s) may not manage clients", by, role)
	}
	return nil
}

// RotateCredential replaces a client's credential; the old one stops
// working at once.
func (s *Store) RotateCredential(ctx context.Context, id, by string) (domain.Client, string, error) {
	token := domain.NewClientToken()
	var out domain.Client
	err := s.withTx(ctx, func(tx *sql.Tx) error {
		c, err := scanClient(tx.QueryRowContext(ctx, "SELECT "+clientCols+" FROM mcp_clients WHERE id = ?", id))
		if errors.Is(err, sql.ErrNoRows) {
			return domain.UnknownRef("client", id, false)
		}
		if err != nil {
			return s.dbErr("rotate credential", err)
		}
		if err := s.mayManage(ctx, tx, c, by); err != nil {
			return err
		}
		if c.Status == domain.ClientRevoked {
			return domain.Because(domain.ErrTransitionInvalid, "client %s is revoked", id)
		}
		if c.Demo {
			return domain.Because(domain.ErrTransitionInvalid, "the mock demo client has no credential")
		}
		if c.OAuthClientID != "" {
			// A token would reach the connector's client without OAuth.
			return domain.Because(domain.ErrTransitionInvalid, "client %s is a connector: it signs in through OAuth and has no token to rotate", id)
		}
		if _, err := tx.ExecContext(ctx, "UPDATE mcp_clients SET credential_hash = ? WHERE id = ?", CredentialHash(token), id); err != nil {
			return s.dbErr("rotate credential", err)
		}
		c.HasCredential = true
		out = c
		if by == "" {
			by = c.CreatedBy
		}
		return s.adminEvent(ctx, tx, c, by, "client_credential_rotated", s.clock.Now())
	})
	if err != nil {
		return domain.Client{}, "", err
	}
	return out, token, nil
}

// PrincipalForClient resolves a client by id whatever its status (for
// explaining visibility); an actor without membership yields no role.
func (s *Store) PrincipalForClient(ctx context.Context, id string) (domain.Principal, error) {
	c, err := s.GetClient(ctx, id)
	if err != nil {
		return domain.Principal{}, err
	}
	p := domain.Principal{
		Client:            domain.ClientRef{ID: c.ID, Name: c.Name, Type: c.ClientType},
		ClientStatus:      c.Status,
		AllowedToolGroups: c.AllowedToolGroups,
		ActorID:           c.ActorID,
		ActorType:         "seller",
		TenantID:          c.TenantID,
	}
	err = s.r.QueryRowContext(ctx, "SELECT id, role FROM memberships WHERE tenant_id = ? AND user_id = ?", c.TenantID, c.ActorID).Scan(&p.MembershipID, &p.Role)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return p, s.dbErr("principal for client", err)
	}
	if err := s.loadSaleScope(ctx, s.r, &p); err != nil {
		return p, err
	}
	return p, nil
}
