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

var _ domain.ApprovalAdmin = (*Store)(nil)

// DefaultProposalTTL is how long a proposal can be approved and executed.
const DefaultProposalTTL = domain.DefaultProposalTTL

// CreateProposal validates a draft against current state, builds the
// immutable proposal (targets, expected versions, exact changes, impact,
// validation, approval requirement, expiry), seals it with seal and stores
// it as a persisted write (idempotency row and event in the same
// transaction). A draft whose targets moved since they were read is refused
// with ErrStaleVersion; one the domain would refuse is ErrTransitionInvalid.
func (s *Store) CreateProposal(ctx context.Context, p domain.Principal, w domain.WriteMeta, d domain.ProposalDraft, seal domain.ProposalSealer) (domain.Proposal, domain.WriteOutcome, error) {
	if seal == nil {
		return domain.Proposal{}, domain.WriteOutcome{}, fmt.Errorf("store: proposal without a sealer: %w", domain.ErrInvalidInput)
	}
	return idempotentWrite(ctx, s, p, w, func(tx *sql.Tx, now time.Time) (domain.Proposal, domain.Related, error) {
		prop, err := s.buildProposal(ctx, tx, p, d, now)
		if err != nil {
			return domain.Proposal{}, domain.Related{}, err
		}
		if err := s.checkCostBudget(ctx, tx, p.TenantID, p.Client.ID, prop.Impact.EstimatedCostUSD, now); err != nil {
			return domain.Proposal{}, domain.Related{}, err
		}
		prop.ID = s.ids.New(domain.PrefixProposal)
		if prop.Hash, err = seal(prop); err != nil {
			return domain.Proposal{}, domain.Related{}, fmt.Errorf("store: seal proposal: %w", domain.ErrInvalidInput)
		}
		body, err := json.Marshal(proposalBody(prop))
		if err != nil {
			return domain.Proposal{}, domain.Related{}, s.dbErr("encode proposal", err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO proposals (id, tenant_id, tool_name, action, requested_by_client,
			requested_by_actor, correlation_id, body, proposal_hash, created_at, expires_at, status)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			prop.ID, prop.TenantID, prop.Tool.Name, prop.Action, prop.RequestedBy.ClientID, prop.RequestedBy.ActorID,
			w.Event.CorrelationID, string(body), prop.Hash, ts(prop.CreatedAt), ts(prop.ExpiresAt), domain.ProposalPending); err != nil {
			return domain.Proposal{}, domain.Related{}, s.dbErr("insert proposal", err)
		}
		prop.Status, prop.CorrelationID = domain.ProposalPending, w.Event.CorrelationID
		rel := domain.Related{ProposalIDs: []string{prop.ID}}
		addTargets(&rel, prop)
		return prop, rel, nil
	})
}

func addTargets(rel *domain.Related, prop domain.Proposal) {
	switch prop.TargetKind {
	case "candidate":
		rel.CandidateIDs = append(rel.CandidateIDs, prop.TargetIDs...)
	case "item":
		rel.ItemIDs = append(rel.ItemIDs, prop.TargetIDs...)
	}
}

// proposalBody is the stored content: the proposal without id, hash and
// status, which live in their own columns.
func proposalBody(p domain.Proposal) domain.Proposal {
	p.ID, p.Hash, p.Status, p.CorrelationID = "", "", "", ""
	return p
}

const proposalCols = `id, body, proposal_hash, status, correlation_id`

func scanProposal(row interface{ Scan(...any) error }) (domain.Proposal, string, error) {
	var (
		p                          domain.Proposal
		id, body, hash, st, corrID string
	)
	if err := row.Scan(&id, &body, &hash, &st, &corrID); err != nil {
		return p, "", err
	}
	if err := json.Unmarshal([]byte(body), &p); err != nil {
		return p, "", err
	}
	p.ID, p.Hash, p.Status, p.CorrelationID = id, hash, st, corrID
	return p, corrID, nil
}

// GetProposal reads a proposal of the principal's tenant as stored. A
// proposal of another tenant is unknown (RefError, audit-marked); so is one
// that touches a sale a sale-scoped principal is not assigned to (§4.3),
// answered exactly like a missing id.
func (s *Store) GetProposal(ctx context.Context, p domain.Principal, id string) (domain.Proposal, error) {
	if err := requireTenant(p); err != nil {
		return domain.Proposal{}, err
	}
	return s.getProposalAs(ctx, s.r, p, id)
}

// getProposalAs is getProposal for a client principal: every read and the
// execution of a proposal go through it, so sale assignment holds on all
// of them.
func (s *Store) getProposalAs(ctx context.Context, q queryRower, p domain.Principal, id string) (domain.Proposal, error) {
	prop, err := s.getProposal(ctx, q, p.TenantID, id)
	if err != nil {
		return domain.Proposal{}, err
	}
	if !p.MaySeeProposal(prop) {
		return domain.Proposal{}, domain.UnknownRef("proposal_id", id, false)
	}
	return prop, nil
}

// MemberSaleScope returns whether a user's membership in a tenant is
// restricted to assigned sales, and those sales (sorted). The approval
// terminal filters its queue with it; a non-member is unscoped with no
// sales (it sees nothing anyway: MemberRole is "").
func (s *Store) MemberSaleScope(ctx context.Context, tenantID, userID string) (bool, []string, error) {
	var mid string
	err := s.r.QueryRowContext(ctx, "SELECT id FROM memberships WHERE tenant_id = ? AND user_id = ?", tenantID, userID).Scan(&mid)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil, nil
	}
	if err != nil {
		return false, nil, s.dbErr("member sale scope", err)
	}
	p := domain.Principal{MembershipID: mid}
	if err := s.loadSaleScope(ctx, s.r, &p); err != nil {
		return false, nil, err
	}
	return p.SaleScoped, p.AssignedSaleIDs, nil
}

// GetProposalAdmin reads a proposal of a tenant for a human surface.
func (s *Store) GetProposalAdmin(ctx context.Context, tenantID, id string) (domain.Proposal, error) {
	return s.getProposal(ctx, s.r, tenantID, id)
}

func (s *Store) getProposal(ctx context.Context, q queryRower, tenantID, id string) (domain.Proposal, error) {
	prop, _, err := scanProposal(q.QueryRowContext(ctx, "SELECT "+proposalCols+" FROM proposals WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return domain.Proposal{}, domain.UnknownRef("proposal_id", id, false)
	}
	if err != nil {
		return domain.Proposal{}, s.dbErr("get proposal", err)
	}
	if prop.TenantID != tenantID {
		return domain.Proposal{}, domain.UnknownRef("proposal_id", id, true)
	}
	s.expireIfDue(&prop)
	return prop, nil
}

// expireIfDue reports a pending proposal past its expiry as expired (the
// stored status catches up lazily; expiry is a fact of the clock).
func (s *Store) expireIfDue(p *domain.Proposal) {
	if slices.Contains(domain.OpenProposalStatuses(), p.Status) && !s.clock.Now().Before(p.ExpiresAt) {
		p.Status = domain.ProposalExpired
	}
}

// ProposalCorrelation returns the correlation id the proposal was created
// under, so approval and execution events join its trace.
func (s *Store) ProposalCorrelation(ctx context.Context, id string) (string, error) {
	var c string
	err := s.r.QueryRowContext(ctx, "SELECT correlation_id FROM proposals WHERE id = ?", id).Scan(&c)
	if errors.Is(err, sql.ErrNoRows) {
		return "", domain.UnknownRef("proposal_id", id, false)
	}
	if err != nil {
		return "", s.dbErr("proposal correlation", err)
	}
	return c, nil
}

// ListProposals lists a tenant's proposals, newest first, optionally by status.
func (s *Store) ListProposals(ctx context.Context, tenantID, status string) ([]domain.Proposal, error) {
	q := "SELECT " + proposalCols + " FROM proposals WHERE tenant_id = ?"
	args := []any{tenantID}
	if status != "" && status != domain.ProposalExpired {
		q += " AND status = ?"
		args = append(args, status)
	}
	out := []domain.Proposal{}
	err := s.withRead(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, q+" ORDER BY created_at DESC, id DESC LIMIT 500", args...)
		if err != nil {
			return s.dbErr("list proposals", err)
		}
		defer rows.Close()
		for rows.Next() {
			p, _, err := scanProposal(rows)
			if err != nil {
				return s.dbErr("list proposals: scan", err)
			}
			s.expireIfDue(&p)
			if status != "" && p.Status != status {
				continue
			}
			out = append(out, p)
		}
		return rows.Err()
	})
	return out, err
}

// ApprovalState returns the grants issued for a proposal of the principal's
// tenant (none for a proposal it may not see, like a missing one) and the tenant's active policies naming tool, with today's usage.
func (s *Store) ApprovalState(ctx context.Context, p domain.Principal, proposalID, tool string) ([]domain.Grant, []domain.Policy, map[string]domain.PolicyUsage, error) {
	if err := requireTenant(p); err != nil {
		return nil, nil, nil, err
	}
	var (
		grants   []domain.Grant
		policies []domain.Policy
		usage    = map[string]domain.PolicyUsage{}
	)
	err := s.withRead(ctx, func(tx *sql.Tx) error {
		// The grants of a proposal the principal may not see (another
		// sale's, §4.3) are not shown: the answer is a missing proposal's.
		_, err := s.getProposalAs(ctx, tx, p, proposalID)
		hidden := errors.Is(err, domain.ErrNotFound)
		if err != nil && !hidden {
			return err
		}
		if !hidden {
			rows, err := tx.QueryContext(ctx, "SELECT "+grantCols+" FROM approval_grants WHERE tenant_id = ? AND proposal_id = ? ORDER BY issued_at, id", p.TenantID, proposalID)
			if err != nil {
				return s.dbErr("approval state: grants", err)
			}
			for rows.Next() {
				g, err := scanGrant(rows)
				if err != nil {
					rows.Close()
					return s.dbErr("approval state: grant", err)
				}
				grants = append(grants, g)
			}
			rows.Close()
		}
		pols, err := s.listPolicies(ctx, tx, p.TenantID)
		if err != nil {
			return err
		}
		for _, pol := range pols {
			if pol.Status != domain.PolicyActive || !slices.Contains(pol.AllowedTools, tool) {
				continue
			}
			u, err := s.policyUsage(ctx, tx, pol.ID, s.clock.Now())
			if err != nil {
				return err
			}
			policies = append(policies, pol)
			usage[pol.ID] = u
		}
		return nil
	})
	return grants, policies, usage, err
}

func (s *Store) policyUsage(ctx context.Context, q queryRower, policyID string, now time.Time) (domain.PolicyUsage, error) {
	var u domain.PolicyUsage
	day := now.UTC().Truncate(24 * time.Hour)
	err := q.QueryRowContext(ctx, "SELECT count(*), coalesce(sum(cost_usd), 0) FROM policy_uses WHERE policy_id = ? AND used_at >= ?",
		policyID, ts(day)).Scan(&u.ActionsToday, &u.CostToday)
	if err != nil {
		return u, s.dbErr("policy usage", err)
	}
	return u, nil
}

// MemberRole returns the role of a user in a tenant ("" if not a member).
func (s *Store) MemberRole(ctx context.Context, tenantID, userID string) (string, error) {
	var role string
	err := s.r.QueryRowContext(ctx, "SELECT role FROM memberships WHERE tenant_id = ? AND user_id = ?", tenantID, userID).Scan(&role)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", s.dbErr("member role", err)
	}
	return role, nil
}

// CurrentVersions returns the current version of each id (items, sales,
// candidates) of a tenant; unknown ids are absent.
func (s *Store) CurrentVersions(ctx context.Context, tenantID string, ids []string) (map[string]int, error) {
	out := map[string]int{}
	err := s.withRead(ctx, func(tx *sql.Tx) error {
		for _, id := range ids {
			v, err := s.versionOf(ctx, tx, tenantID, id)
			if err != nil && !errors.Is(err, domain.ErrNotFound) {
				return err
			}
			if err == nil {
				out[id] = v
			}
		}
		return nil
	})
	return out, err
}

// versionOf reads the version of a target by its id prefix.
func (s *Store) versionOf(ctx context.Context, q queryRower, tenantID, id string) (int, error) {
	table := ""
	switch {
	case domain.ValidID(domain.PrefixItem, id):
		table = "items"
	case domain.ValidID(domain.PrefixSale, id):
		table = "estate_sales"
	case domain.ValidID(domain.PrefixCandidate, id):
		table = "inventory_candidates"
	case domain.ValidID("export", id):
		var n int
		deliverable := domain.ExportDeliverableStatuses()
		if err := q.QueryRowContext(ctx, "SELECT count(*) FROM export_drafts WHERE tenant_id = ? AND id = ? AND status IN "+placeholders(len(deliverable)),
			append([]any{tenantID, id}, anyArgs(deliverable)...)...).Scan(&n); err != nil {
			return 0, s.dbErr("version of "+id, err)
		}
		if n == 0 {
			return 0, domain.UnknownRef("target", id, false)
		}
		return domain.ExportVersion, nil
	default:
		return 0, domain.UnknownRef("target", id, false)
	}
	var v int
	err := q.QueryRowContext(ctx, "SELECT version FROM "+table+" WHERE tenant_id = ? AND id = ?", tenantID, id).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, domain.UnknownRef("target", id, false)
	}
	if err != nil {
		return 0, s.dbErr("version of "+id, err)
	}
	return v, nil
}

// SellerView is the store's approval surface acting as one seller: what a
// sale-scoped seller (§4.3) reads, approves or denies is limited to the
// proposals of its assigned sales, as the live seller RPCs limit it in SQL.
// A proposal of another sale answers exactly like a missing one.
type SellerView struct {
	*Store
	UserID string
}

// AsSeller is the store's approval surface acting as userID.
func (s *Store) AsSeller(userID string) SellerView { return SellerView{Store: s, UserID: userID} }

// scope is the seller's sale scope in tenantID as a principal: what
// domain.Principal.MaySeeProposal decides on.
func (v SellerView) scope(ctx context.Context, tenantID string) (domain.Principal, error) {
	scoped, sales, err := v.MemberSaleScope(ctx, tenantID, v.UserID)
	if err != nil {
		return domain.Principal{}, err
	}
	return domain.Principal{TenantID: tenantID, ActorID: v.UserID, SaleScoped: scoped, AssignedSaleIDs: sales}, nil
}

// visible reports whether the seller may see prop in tenantID.
func (v SellerView) visible(ctx context.Context, tenantID string, prop domain.Proposal) (bool, error) {
	p, err := v.scope(ctx, tenantID)
	if err != nil {
		return false, err
	}
	return p.MaySeeProposal(prop), nil
}

// ListProposals lists the tenant's proposals the seller may see.
func (v SellerView) ListProposals(ctx context.Context, tenantID, status string) ([]domain.Proposal, error) {
	all, err := v.Store.ListProposals(ctx, tenantID, status)
	if err != nil {
		return nil, err
	}
	p, err := v.scope(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for _, prop := range all {
		if p.MaySeeProposal(prop) {
			out = append(out, prop)
		}
	}
	return out, nil
}

// GetProposalAdmin reads a proposal the seller may see.
func (v SellerView) GetProposalAdmin(ctx context.Context, tenantID, id string) (domain.Proposal, error) {
	prop, err := v.Store.GetProposalAdmin(ctx, tenantID, id)
	if err != nil {
		return domain.Proposal{}, err
	}
	if ok, err := v.visible(ctx, tenantID, prop); err != nil || !ok {
		return domain.Proposal{}, cmpErr(err, domain.UnknownRef("proposal_id", id, false))
	}
	return prop, nil
}

// IssueGrant refuses a proposal the seller may not see before the store
// issues the grant.
func (v SellerView) IssueGrant(ctx context.Context, g domain.Grant) (domain.Grant, error) {
	if _, err := v.GetProposalAdmin(ctx, g.TenantID, g.ProposalID); err != nil {
		return domain.Grant{}, err
	}
	return v.Store.IssueGrant(ctx, g)
}

// DenyProposal refuses a proposal the seller may not see before the store
// records the denial.
func (v SellerView) DenyProposal(ctx context.Context, tenantID, proposalID, actorID, surface, reason string) error {
	if _, err := v.GetProposalAdmin(ctx, tenantID, proposalID); err != nil {
		return err
	}
	return v.Store.DenyProposal(ctx, tenantID, proposalID, actorID, surface, reason)
}

// ListGrants lists the tenant's grants whose proposal the seller may see:
// a grant follows its proposal, as the live row level security on
// approval_grants has it.
func (v SellerView) ListGrants(ctx context.Context, tenantID, status string) ([]domain.Grant, error) {
	all, err := v.Store.ListGrants(ctx, tenantID, status)
	if err != nil {
		return nil, err
	}
	p, err := v.scope(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	if !p.SaleScoped {
		return all, nil
	}
	seen := map[string]bool{} // proposal id → visible
	out := all[:0]
	for _, g := range all {
		ok, known := seen[g.ProposalID]
		if !known {
			if ok, err = v.proposalVisible(ctx, p, g.ProposalID); err != nil {
				return nil, err
			}
			seen[g.ProposalID] = ok
		}
		if ok {
			out = append(out, g)
		}
	}
	return out, nil
}

// proposalVisible reports whether p sees the proposal id of its tenant; a
// proposal it cannot read at all is not visible.
func (v SellerView) proposalVisible(ctx context.Context, p domain.Principal, id string) (bool, error) {
	prop, err := v.getProposal(ctx, v.r, p.TenantID, id)
	if errors.Is(err, domain.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return p.MaySeeProposal(prop), nil
}

// RevokeGrant refuses a grant of a proposal the seller may not see exactly
// as the store refuses a missing grant, before the store revokes it.
func (v SellerView) RevokeGrant(ctx context.Context, tenantID, grantID, actorID string) (domain.Grant, error) {
	var proposalID string
	err := v.r.QueryRowContext(ctx, "SELECT proposal_id FROM approval_grants WHERE tenant_id = ? AND id = ?", tenantID, grantID).Scan(&proposalID)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		// Missing, or another tenant's: the store gives the answer.
	case err != nil:
		return domain.Grant{}, v.dbErr("revoke grant: scope", err)
	default:
		p, err := v.scope(ctx, tenantID)
		if err != nil {
			return domain.Grant{}, err
		}
		ok, err := v.proposalVisible(ctx, p, proposalID)
		if err != nil {
			return domain.Grant{}, err
		}
		if !ok {
			return domain.Grant{}, domain.UnknownRef("grant", grantID, false)
		}
	}
	return v.Store.RevokeGrant(ctx, tenantID, grantID, actorID)
}

// AuditTrail returns the events of one correlation id of the tenant (a
// proposal, its approval and its execution) in append order, only when it
// is the correlation of a proposal the seller may see. Any other — none
// given, a correlation of no proposal, or of a proposal of an unassigned
// sale — has no events, as a missing one has none.
func (v SellerView) AuditTrail(ctx context.Context, tenantID, correlationID string) ([]domain.Event, error) {
	if correlationID == "" {
		return nil, nil // an empty filter field would match everything
	}
	p, err := v.scope(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	rows, err := v.r.QueryContext(ctx, "SELECT "+proposalCols+" FROM proposals WHERE tenant_id = ? AND correlation_id = ?", tenantID, correlationID)
	if err != nil {
		return nil, v.dbErr("audit trail: proposal", err)
	}
	found, ok := false, true
	for rows.Next() {
		prop, _, err := scanProposal(rows)
		if err != nil {
			_ = rows.Close()
			return nil, v.dbErr("audit trail: proposal", err)
		}
		found = true
		ok = ok && p.MaySeeProposal(prop)
	}
	if err := cmpErr(rows.Err(), rows.Close()); err != nil {
		return nil, v.dbErr("audit trail: proposal", err)
	}
	if !found || !ok {
		return []domain.Event{}, nil
	}
	return v.Events(ctx, EventFilter{TenantID: tenantID, CorrelationID: correlationID})
}

// cmpErr is err when there is one, else fallback.
func cmpErr(err, fallback error) error {
	if err != nil {
		return err
	}
	return fallback
}
