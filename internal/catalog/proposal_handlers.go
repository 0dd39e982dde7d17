package catalog

import (
	"context"
	"fmt"
	"time"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// lookupTool is Lookup, bound when the catalog is built (a direct reference
// from a constructor would be an initialization cycle).
var lookupTool func(string) (*Tool, bool)

// proposalTool gives a proposal tool its handler: the draft from the input,
// then ONE Backend call that validates it against current state and stores
// the sealed, immutable proposal. The draft chooses the action; the tool
// that will execute it, and so its version and approval, come from the
// action registry (domain.ActionOf), which also says which proposal tool
// proposes the action.
func proposalTool[In any](d Definition, draft func(In) (domain.ProposalDraft, error)) Tool {
	return define(d, func(ctx context.Context, env Env, in In) (ProposalView, Effects, error) {
		dr, err := draft(in)
		if err != nil {
			return ProposalView{}, Effects{}, err
		}
		spec, ok := domain.ActionOf(dr.Action)
		if !ok || spec.ProposalTool != d.Name {
			return ProposalView{}, Effects{}, fmt.Errorf("catalog: %s does not propose %q: %w", d.Name, dr.Action, domain.ErrInvalidInput)
		}
		exec, ok := lookupTool(spec.Tool)
		if !ok {
			return ProposalView{}, Effects{}, fmt.Errorf("catalog: no executor %s: %w", spec.Tool, domain.ErrInvalidInput)
		}
		dr.Tool, dr.Requirement = domain.ExecutingTool{Name: exec.Name, Version: exec.Version}, string(exec.Approval)
		prop, out, err := env.Backend.CreateProposal(ctx, env.Principal, env.Write, dr, env.Seal)
		if err != nil {
			return ProposalView{}, Effects{}, err
		}
		return proposalView(env.Principal.Role, prop), Effects{Related: out.Related, Outcome: out}, nil
	})
}

// proposalView projects a proposal for the agent: everything it needs to
// wait for, and explain, the seller's decision — with each change projected
// for role like every item view (projectChanges). The hash is the hash of
// the whole proposal, so it is withheld from a role that sees a change
// redacted: the redacted values are low-entropy (a price), and hashing
// guesses against the hash would reveal them.
func proposalView(role string, p domain.Proposal) ProposalView {
	decision := map[string]string{
		domain.ProposalPending:  "human_approval_required",
		domain.ProposalApproved: "allowed",
		domain.ProposalExecuted: "allowed",
		domain.ProposalDenied:   "blocked",
		domain.ProposalExpired:  "expired",
	}[p.Status]
	if p.Status == domain.ProposalPending && p.Requirement == string(ApprovalHumanOrPolicy) {
		decision = "human_approval_required" // a policy, if one applies, decides at execution time
	}
	v := ProposalView{
		ProposalID: p.ID, ProposalHash: p.Hash, Status: p.Status, Tool: p.Tool, Action: p.Action,
		TargetIDs: p.TargetIDs, ExpectedVersions: p.ExpectedVersions, Changes: projectChanges(role, p.Changes), Impact: p.Impact,
		Validation: p.Validation, Approval: ProposalApproval{Requirement: p.Requirement, Decision: decision},
		Notification: p.Notification, RequestedBy: p.RequestedBy.ActorID, CreatedAt: p.CreatedAt, ExpiresAt: p.ExpiresAt,
	}
	for _, c := range v.Changes {
		if c.Redacted {
			v.ProposalHash = ""
			break
		}
	}
	if v.TargetIDs == nil {
		v.TargetIDs = []string{}
	}
	if v.ExpectedVersions == nil {
		v.ExpectedVersions = []TargetVersion{}
	}
	return v
}

func one(id string, version int) ([]string, []domain.TargetVersion) {
	return []string{id}, []domain.TargetVersion{{ID: id, Version: version}}
}

func many(ids []string, versions []ItemVersion) ([]string, []domain.TargetVersion) {
	evs := make([]domain.TargetVersion, 0, len(versions))
	for _, v := range versions {
		evs = append(evs, domain.TargetVersion{ID: v.ID, Version: v.Version})
	}
	return ids, evs
}

func draftPromotion(in ProposeCandidatePromotionInput) (domain.ProposalDraft, error) {
	t, v := one(in.CandidateID, in.ExpectedVersion)
	f := map[string]any{}
	for k, val := range map[string]string{"title": in.Title, "description": in.Description, "category": in.Category, "room": in.Room} {
		if val != "" {
			f[k] = domain.CleanText(val)
		}
	}
	return domain.ProposalDraft{Action: domain.ActionPromoteCandidate, TargetIDs: t, ExpectedVersions: v, Fields: f}, nil
}

func draftItemPublication(in ProposeItemPublicationInput) (domain.ProposalDraft, error) {
	t, v := one(in.ItemID, in.ExpectedVersion)
	return domain.ProposalDraft{Action: domain.ActionPublishItem, TargetIDs: t, ExpectedVersions: v}, nil
}

func draftSalePublication(in ProposeSalePublicationInput) (domain.ProposalDraft, error) {
	t, v := one(in.SaleID, in.ExpectedVersion)
	return domain.ProposalDraft{Action: domain.ActionPublishSale, TargetIDs: t, ExpectedVersions: v}, nil
}

func draftBulkUpdate(in ProposeBulkItemUpdateInput) (domain.ProposalDraft, error) {
	t, v := many(in.ItemIDs, in.ExpectedVersions)
	ch := map[string]any{}
	c := in.Changes
	if c.Room != nil {
		ch["room"] = *c.Room
	}
	if c.Category != nil {
		ch["category"] = *c.Category
	}
	if c.Title != nil {
		ch["title"] = domain.CleanLine(*c.Title)
	}
	if c.Description != nil {
		ch["description"] = domain.CleanText(*c.Description)
	}
	if c.PriceCents != nil {
		ch["price_cents"] = float64(*c.PriceCents)
	}
	return domain.ProposalDraft{Action: domain.ActionBulkItemUpdate, TargetIDs: t, ExpectedVersions: v,
		Fields: map[string]any{"changes": ch}}, nil
}

func draftStatusTransition(in ProposeStatusTransitionInput) (domain.ProposalDraft, error) {
	t, v := one(in.ItemID, in.ExpectedVersion)
	eff, err := time.Parse(time.RFC3339Nano, in.EffectiveAt)
	if err != nil {
		return domain.ProposalDraft{}, domain.Invalid("effective_at", "not an RFC 3339 time")
	}
	action := domain.ActionStatusTransition
	if in.ToStatus == domain.ItemArchived {
		action = domain.ActionArchiveItem
	}
	return domain.ProposalDraft{Action: action, TargetIDs: t, ExpectedVersions: v, StatusCandidateID: in.StatusCandidateID,
		Fields: map[string]any{"to_status": in.ToStatus, "effective_at": eff.UTC().Format(time.RFC3339)}}, nil
}

func draftBuyerNotification(in ProposeBuyerNotificationInput) (domain.ProposalDraft, error) {
	if (in.ItemID == "") == (in.SaleID == "") {
		return domain.ProposalDraft{}, domain.Invalid("item_id", "give exactly one of item_id or sale_id")
	}
	id := in.ItemID
	if id == "" {
		id = in.SaleID
	}
	t, v := one(id, in.ExpectedVersion)
	return domain.ProposalDraft{Action: domain.ActionBuyerNotify, TargetIDs: t, ExpectedVersions: v,
		Fields: map[string]any{"audience": in.Audience, "channels": in.Channels, "message_template": domain.CleanText(in.MessageTemplate)}}, nil
}

func draftIdentityBinding(in ProposeIdentityBindingInput) (domain.ProposalDraft, error) {
	t, v := one(in.ItemID, in.ExpectedVersion)
	action := domain.ActionBindIdentity
	if in.Action == "release" {
		action = domain.ActionReleaseIdentity
	}
	return domain.ProposalDraft{Action: action, TargetIDs: t, ExpectedVersions: v, Fields: map[string]any{"qr_code": in.QRCode}}, nil
}

func draftDisposition(in ProposeDispositionActionInput) (domain.ProposalDraft, error) {
	t, v := many(in.ItemIDs, in.ExpectedVersions)
	f := map[string]any{"action": in.Action}
	if in.Counterparty != "" {
		f["counterparty"] = domain.CleanLine(in.Counterparty)
	}
	if in.OfferCents != nil {
		f["offer_cents"] = float64(*in.OfferCents)
	}
	return domain.ProposalDraft{Action: domain.ActionDisposition, TargetIDs: t, ExpectedVersions: v, Fields: f}, nil
}

func draftExportDelivery(in ProposeExportDeliveryInput) (domain.ProposalDraft, error) {
	t, v := one(in.ExportID, 1) // a staged snapshot never changes; its items' versions are bound by the store
	return domain.ProposalDraft{Action: domain.ActionExportDelivery, TargetIDs: t, ExpectedVersions: v}, nil
}
