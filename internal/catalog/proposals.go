package catalog

import (
	"context"
	"slices"
	"time"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// proposals are the §14 proposal tools (the read of one proposal is a scoped read).
var proposals = []func() Tool{
	proposeCandidatePromotion,
	proposeItemPublication,
	proposeSalePublication,
	proposeBulkItemUpdate,
	proposeStatusTransition,
	proposeBuyerNotification,
	proposeIdentityBinding,
	proposeDispositionAction,
	proposeExportDelivery,
	proposeCheckoutScan,
}

// Proposal tools (spec §14) build an immutable action proposal: exact
// targets, the versions read, exact changes, estimated impact, validation
// and the approval the execution will need. Creating a proposal changes no
// canonical or public state and is not an approval; a seller (or a policy the
// seller configured) approves it outside MCP, and the matching controlled
// action executes it.

// Id prefixes of records domain does not model yet; ts tags spell them as
// literals (id=export, id=asset) and the catalog test checks they agree.
const (
	prefixExport = "export" // a staged export
	prefixAsset  = "asset"  // a durable source asset (uploaded media)
)

// proposalImpact is what creating a proposal does.
var proposalImpact = domain.EventImpact{Type: "proposal_created", Material: true}

// rfc3339Pattern bounds a timestamp input.
const rfc3339Pattern = `^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?(Z|[+-][0-9]{2}:[0-9]{2})$`

// ItemVersion binds a proposal to the version of an item as you read it.
type ItemVersion struct {
	ID      string `json:"id" jsonschema:"the item id" ts:"id=item"`
	Version int    `json:"version" jsonschema:"the item's version as you read it" ts:"min=1,max=2147483647"`
}

// ExecutingTool names the controlled action that executes a proposal.
type ExecutingTool = domain.ExecutingTool

// TargetVersion is a target and the version the proposal is bound to.
type TargetVersion = domain.TargetVersion

// FieldChange is one exact change a proposal would make.
type FieldChange = domain.FieldChange

// ProposalImpact is the estimated effect of executing a proposal.
type ProposalImpact = domain.ProposalImpact

// ProposalValidation is the domain's verdict on a proposal when it was made.
type ProposalValidation = domain.ProposalValidation

// ProposalApproval is what a proposal needs, and has, to be executed.
type ProposalApproval struct {
	Requirement string  `json:"requirement" jsonschema:"explicit_human or human_or_policy"`
	Decision    string  `json:"decision" jsonschema:"an approval_decision: proposal_required, human_approval_required, allowed, allowed_by_policy, blocked, expired or revoked"`
	ApprovalID  *string `json:"approval_id"`
	PolicyID    *string `json:"policy_id"`
}

// NotificationPlan is the reviewable plan of a buyer-notification proposal.
// It never names a buyer: the notification service resolves recipients.
type NotificationPlan = domain.NotificationPlan

// ProposalView is an immutable action proposal (spec §15).
type ProposalView struct {
	ProposalID       string             `json:"proposal_id"`
	ProposalHash     string             `json:"proposal_hash,omitempty" jsonschema:"sha256 of the whole proposal; left out when a change is redacted for your role, because hashing guesses of a hidden value (a price) against it would reveal the value"`
	Status           string             `json:"status" jsonschema:"pending_approval, approved, executed, rejected, expired or superseded"`
	Tool             ExecutingTool      `json:"tool" jsonschema:"the controlled action that executes this proposal once approved"`
	Action           string             `json:"action"`
	TargetIDs        []string           `json:"target_ids"`
	ExpectedVersions []TargetVersion    `json:"expected_versions"`
	Changes          []ChangeView       `json:"changes" jsonschema:"the exact changes; a field your role may not see (as in trove_get_item) is listed redacted, without values"`
	Impact           ProposalImpact     `json:"impact"`
	Validation       ProposalValidation `json:"validation"`
	Approval         ProposalApproval   `json:"approval"`
	Notification     *NotificationPlan  `json:"notification,omitempty"`
	RequestedBy      string             `json:"requested_by" jsonschema:"the actor the proposing client acted for"`
	CreatedAt        time.Time          `json:"created_at"`
	ExpiresAt        time.Time          `json:"expires_at"`
}

// proposalDefinition fills what every proposal tool shares.
func proposalDefinition(name, title, description, operation string) Definition {
	return Definition{
		Name: name, Version: "1.0.0", Title: title, Description: description,
		Tier: TierActionProposal, Risk: RiskLowWrite, Permissions: []string{domain.PermProposalCreate},
		Modes: bothModes, Idempotent: true, Persists: true, Approval: ApprovalNone, Status: StatusActive,
		Domain: DomainMapping{Service: "approval", Operation: operation},
		Impact: proposalImpact,
	}
}

// proposalFooter ends every proposal description.
const proposalFooter = " Creates only an immutable proposal, not an approval: the seller approves it outside MCP."

// ProposeCandidatePromotionInput is the input of trove_propose_candidate_promotion.
type ProposeCandidatePromotionInput struct {
	WriteCommon
	CandidateID     string `json:"candidate_id" jsonschema:"the reviewed candidate to promote" ts:"id=candidate"`
	ExpectedVersion int    `json:"expected_version" jsonschema:"the candidate's version as you read it" ts:"min=1,max=2147483647"`
	Title           string `json:"title,omitempty" jsonschema:"item title, if different from the candidate's" ts:"min=1,max=200"`
	Description     string `json:"description,omitempty" jsonschema:"item description, if different from the candidate's" ts:"max=4000"`
	Category        string `json:"category,omitempty" jsonschema:"dotted category path, if different from the candidate's" ts:"max=128,pattern=^[a-z0-9_]+(\\.[a-z0-9_]+)*$"`
	Room            string `json:"room,omitempty" jsonschema:"room, if different from the candidate's" ts:"max=64,pattern=^[a-z0-9_]{1,64}$"`
	PriceCents      *int64 `json:"price_cents,omitempty" jsonschema:"price in cents, if different from the supplied one (needs pricing permission)" ts:"min=0,max=100000000"`
}

func proposeCandidatePromotion() Tool {
	return proposalTool(proposalDefinition(
		"trove_propose_candidate_promotion", "Propose promoting a candidate",
		"Propose promoting one reviewed candidate into a canonical draft item, with optional corrections, bound to the candidate's version; the item gets its photos, private. An attach_media candidate adds its photos to the item it names. Executed by trove_execute_candidate_promotion. Never publishes."+proposalFooter,
		"propose_candidate_promotion"), draftPromotion)
}

func draftPromotion(in ProposeCandidatePromotionInput) (domain.ProposalDraft, error) {
	t, v := one(in.CandidateID, in.ExpectedVersion)
	f := map[string]any{}
	for k, val := range map[string]string{"title": in.Title, "description": in.Description, "category": in.Category, "room": in.Room} {
		if val != "" {
			f[k] = domain.CleanText(val)
		}
	}
	if in.PriceCents != nil {
		f["price_cents"] = *in.PriceCents
	}
	return domain.ProposalDraft{Action: domain.ActionPromoteCandidate, TargetIDs: t, ExpectedVersions: v, Fields: f}, nil
}

// ProposeItemPublicationInput is the input of trove_propose_item_publication.
type ProposeItemPublicationInput struct {
	WriteCommon
	ItemID          string   `json:"item_id" jsonschema:"the canonical item to publish" ts:"id=item"`
	ExpectedVersion int      `json:"expected_version" jsonschema:"the item's version as you read it" ts:"min=1,max=2147483647"`
	PhotoIDs        []string `json:"photo_ids,omitempty" jsonschema:"photos to make public (the others become private); omit to keep the approved ones" ts:"id=photo,minitems=1,maxitems=12"`
}

func proposeItemPublication() Tool {
	return proposalTool(proposalDefinition(
		"trove_propose_item_publication", "Propose publishing an item",
		"Propose publishing one item on its sale page, bound to its version, naming the photos to make public, with a readiness check (title, category, price, approved photo). Executed by trove_publish_item."+proposalFooter,
		"propose_item_publication"), draftItemPublication)
}

func draftItemPublication(in ProposeItemPublicationInput) (domain.ProposalDraft, error) {
	t, v := one(in.ItemID, in.ExpectedVersion)
	d := domain.ProposalDraft{Action: domain.ActionPublishItem, TargetIDs: t, ExpectedVersions: v}
	if len(in.PhotoIDs) > 0 {
		d.Fields = map[string]any{"photo_ids": slices.Clone(in.PhotoIDs)}
	}
	return d, nil
}

// ProposeSalePublicationInput is the input of trove_propose_sale_publication.
type ProposeSalePublicationInput struct {
	WriteCommon
	SaleID          string `json:"sale_id" jsonschema:"the draft sale to publish" ts:"id=sale"`
	ExpectedVersion int    `json:"expected_version" jsonschema:"the sale's version as you read it" ts:"min=1,max=2147483647"`
}

func proposeSalePublication() Tool {
	return proposalTool(proposalDefinition(
		"trove_propose_sale_publication", "Propose publishing a sale",
		"Propose publishing one sale to the marketplace, bound to its version, validating dates, location and the address-reveal policy. Executed by trove_publish_sale."+proposalFooter,
		"propose_sale_publication"), draftSalePublication)
}

func draftSalePublication(in ProposeSalePublicationInput) (domain.ProposalDraft, error) {
	t, v := one(in.SaleID, in.ExpectedVersion)
	return domain.ProposalDraft{Action: domain.ActionPublishSale, TargetIDs: t, ExpectedVersions: v}, nil
}

// BulkItemChanges are the exact field changes of a bulk update; at least one
// is required, and each applies to every target.
type BulkItemChanges struct {
	Room        *string `json:"room,omitempty" jsonschema:"new room" ts:"max=64,pattern=^[a-z0-9_]{1,64}$"`
	Category    *string `json:"category,omitempty" jsonschema:"new dotted category path" ts:"max=128,pattern=^[a-z0-9_]+(\\.[a-z0-9_]+)*$"`
	Title       *string `json:"title,omitempty" jsonschema:"new public title" ts:"min=1,max=200"`
	Description *string `json:"description,omitempty" jsonschema:"new public description" ts:"max=4000"`
	PriceCents  *int64  `json:"price_cents,omitempty" jsonschema:"new public price in cents (needs pricing permission)" ts:"min=0,max=100000000"`
}

// ProposeBulkItemUpdateInput is the input of trove_propose_bulk_item_update.
type ProposeBulkItemUpdateInput struct {
	WriteCommon
	ItemIDs          []string        `json:"item_ids" jsonschema:"the items to change; the set is frozen" ts:"id=item,minitems=1,maxitems=50"`
	ExpectedVersions []ItemVersion   `json:"expected_versions" jsonschema:"each item's version as you read it" ts:"minitems=1,maxitems=50"`
	Changes          BulkItemChanges `json:"changes" jsonschema:"the exact field changes, the same for every item"`
}

func proposeBulkItemUpdate() Tool {
	return proposalTool(proposalDefinition(
		"trove_propose_bulk_item_update", "Propose a bulk item update",
		"Propose the same field changes (room, category, title, description, price) on up to 50 listed items, each bound to its version; the set is frozen. Executed by trove_apply_bulk_item_update. Never changes status."+proposalFooter,
		"propose_bulk_item_update"), draftBulkUpdate)
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

// ProposeStatusTransitionInput is the input of trove_propose_status_transition.
type ProposeStatusTransitionInput struct {
	WriteCommon
	ItemID            string `json:"item_id" jsonschema:"the item" ts:"id=item"`
	ExpectedVersion   int    `json:"expected_version" jsonschema:"the item's version as you read it" ts:"min=1,max=2147483647"`
	ToStatus          string `json:"to_status" jsonschema:"the new lifecycle status (publication has its own proposal)" ts:"enum=ready|on_hold|pending_pickup|sold|withdrawn|archived"`
	EffectiveAt       string `json:"effective_at" jsonschema:"when the change takes effect (RFC 3339, e.g. 2026-06-20T15:04:05Z)" ts:"max=35,pattern=^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,9})?(Z|[+-][0-9]{2}:[0-9]{2})$"`
	StatusCandidateID string `json:"status_candidate_id,omitempty" jsonschema:"the imported status_update candidate this reviews, if any" ts:"id=candidate"`
	Reason            string `json:"reason,omitempty" jsonschema:"why, for the seller reviewing the proposal" ts:"max=1000"`
}

func proposeStatusTransition() Tool {
	d := proposalDefinition(
		"trove_propose_status_transition", "Propose an item status change",
		"Propose moving one item to a new lifecycle status, bound to its version, optionally reviewing an imported status_update candidate. Executed by trove_update_item_status (trove_archive_item for archived). Checkout may propose only the item's checkout_actions. Never records payment."+proposalFooter,
		"propose_status_transition")
	// Checkout proposes the checkout transitions of its sales' items
	// (domain.CheckoutActionsFor decides which); the other roles propose
	// with proposal.create.
	d.Permissions, d.AnyPermissions = nil, domain.ProposalPermissions(domain.ActionStatusTransition)
	return proposalTool(d, draftStatusTransition)
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

// ProposeBuyerNotificationInput is the input of trove_propose_buyer_notification.
type ProposeBuyerNotificationInput struct {
	WriteCommon
	ItemID          string   `json:"item_id,omitempty" jsonschema:"announce this published item (or sale_id)" ts:"id=item"`
	SaleID          string   `json:"sale_id,omitempty" jsonschema:"announce this published sale (or item_id)" ts:"id=sale"`
	ExpectedVersion int      `json:"expected_version" jsonschema:"the version of the item or sale as you read it" ts:"min=1,max=2147483647"`
	Audience        string   `json:"audience" jsonschema:"buyers who saved the item, follow the sale, or follow its category" ts:"enum=saved_item|followed_sale|category_interest"`
	Channels        []string `json:"channels" jsonschema:"channels; each buyer's preferences still apply" ts:"enum=email|sms|push,minitems=1,maxitems=3"`
	MessageTemplate string   `json:"message_template" jsonschema:"the message; {{item_title}}, {{sale_title}} and {{sale_dates}} are filled in" ts:"min=1,max=1000"`
}

func proposeBuyerNotification() Tool {
	return proposalTool(proposalDefinition(
		"trove_propose_buyer_notification", "Propose notifying matched buyers",
		"Propose notifying buyers interested in a published item or sale: shows audience size, channels, a message preview and cost, never buyer identities. Executed by trove_notify_matched_buyers."+proposalFooter,
		"propose_buyer_notification"), draftBuyerNotification)
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

// ProposeIdentityBindingInput is the input of trove_propose_identity_binding.
type ProposeIdentityBindingInput struct {
	WriteCommon
	ItemID          string `json:"item_id" jsonschema:"the item" ts:"id=item"`
	ExpectedVersion int    `json:"expected_version" jsonschema:"the item's version as you read it" ts:"min=1,max=2147483647"`
	QRCode          string `json:"qr_code" jsonschema:"the tag's code, e.g. QR-221-0001" ts:"max=64,pattern=^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$"`
	Action          string `json:"action" jsonschema:"bind the tag to the item, or release it" ts:"enum=bind|release"`
}

func proposeIdentityBinding() Tool {
	return proposalTool(proposalDefinition(
		"trove_propose_identity_binding", "Propose binding or releasing a QR tag",
		"Propose binding a printed QR tag to an item, or releasing it, bound to the item's version. Executed by trove_bind_item_identity or trove_release_item_identity."+proposalFooter,
		"propose_identity_binding"), draftIdentityBinding)
}

func draftIdentityBinding(in ProposeIdentityBindingInput) (domain.ProposalDraft, error) {
	t, v := one(in.ItemID, in.ExpectedVersion)
	action := domain.ActionBindIdentity
	if in.Action == "release" {
		action = domain.ActionReleaseIdentity
	}
	return domain.ProposalDraft{Action: action, TargetIDs: t, ExpectedVersions: v, Fields: map[string]any{"qr_code": in.QRCode}}, nil
}

// ProposeDispositionActionInput is the input of trove_propose_disposition_action.
type ProposeDispositionActionInput struct {
	WriteCommon
	ItemIDs          []string      `json:"item_ids" jsonschema:"the exact unsold items (1 to 50)" ts:"id=item,minitems=1,maxitems=50"`
	ExpectedVersions []ItemVersion `json:"expected_versions" jsonschema:"each item's version as you read it" ts:"minitems=1,maxitems=50"`
	Action           string        `json:"action" jsonschema:"what happens to the items" ts:"enum=donate|consign|haul_away|return_to_family|buyout_offer"`
	Counterparty     string        `json:"counterparty,omitempty" jsonschema:"the charity, shop or buyer, by name" ts:"max=200"`
	OfferCents       *int64        `json:"offer_cents,omitempty" jsonschema:"the buy-out offer in cents (buyout_offer only)" ts:"min=0,max=100000000"`
	Notes            string        `json:"notes,omitempty" jsonschema:"for the seller reviewing the proposal" ts:"max=1000"`
}

func proposeDispositionAction() Tool {
	return proposalTool(proposalDefinition(
		"trove_propose_disposition_action", "Propose a disposition",
		"Propose what happens to up to 50 unsold items after a sale (donate, consign, haul away, return to family, buy-out offer), each bound to its version. Executed by trove_apply_disposition_action."+proposalFooter,
		"propose_disposition_action"), draftDisposition)
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

// ProposeExportDeliveryInput is the input of trove_propose_export_delivery.
type ProposeExportDeliveryInput struct {
	WriteCommon
	ExportID string `json:"export_id" jsonschema:"the export staged by trove_stage_export" ts:"id=export"`
}

func proposeExportDelivery() Tool {
	return proposalTool(proposalDefinition(
		"trove_propose_export_delivery", "Propose delivering an export",
		"Propose delivering a staged export to its outside channel, bound to the staged snapshot and its item versions. Executed by trove_deliver_export."+proposalFooter,
		"propose_export_delivery"), draftExportDelivery)
}

func draftExportDelivery(in ProposeExportDeliveryInput) (domain.ProposalDraft, error) {
	t, v := one(in.ExportID, 1) // a staged snapshot never changes; its items' versions are bound by the store
	return domain.ProposalDraft{Action: domain.ActionExportDelivery, TargetIDs: t, ExpectedVersions: v}, nil
}

// ProposeCheckoutScanInput is the input of trove_propose_checkout_scan.
type ProposeCheckoutScanInput struct {
	WriteCommon
	ItemID          string `json:"item_id" jsonschema:"the scanned item" ts:"id=item"`
	ExpectedVersion int    `json:"expected_version" jsonschema:"the item's version as you read it" ts:"min=1,max=2147483647"`
	QRCode          string `json:"qr_code,omitempty" jsonschema:"the tag code scanned; must be the item's" ts:"max=64,pattern=^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$"`
	Scan            string `json:"scan" jsonschema:"hold, sold_pending_pickup (sold, awaiting pickup) or picked_up (sold and gone)" ts:"enum=hold|sold_pending_pickup|picked_up"`
	Note            string `json:"note,omitempty" jsonschema:"for the seller, e.g. the buyer's first name for a hold; never payment details" ts:"max=280"`
}

func proposeCheckoutScan() Tool {
	d := proposalDefinition(
		"trove_propose_checkout_scan", "Propose recording a checkout scan",
		"Propose one checkout scan of an item of your assigned sales, bound to its version: hold, sold_pending_pickup or picked_up. Executed by trove_record_checkout_scan; a seller policy may allow holds. Never records a payment or price."+proposalFooter,
		"propose_checkout_scan")
	d.Permissions = domain.ProposalPermissions(domain.ActionCheckoutScan)
	return proposalTool(d, draftCheckoutScan)
}

func draftCheckoutScan(in ProposeCheckoutScanInput) (domain.ProposalDraft, error) {
	t, v := one(in.ItemID, in.ExpectedVersion)
	f := map[string]any{"scan": in.Scan}
	if in.QRCode != "" {
		f["qr_code"] = in.QRCode
	}
	if n := domain.CleanLine(in.Note); n != "" {
		f["note"] = n
	}
	return domain.ProposalDraft{Action: domain.ActionCheckoutScan, TargetIDs: t, ExpectedVersions: v, Fields: f}, nil
}

// GetProposalInput is the input of trove_get_proposal.
type GetProposalInput struct {
	Common
	ProposalID string `json:"proposal_id" jsonschema:"the proposal" ts:"id=proposal"`
}

func getProposal() Tool {
	return define[GetProposalInput, ProposalView](Definition{
		Name: "trove_get_proposal", Version: "1.0.0", Title: "Get a proposal",
		Description: "Get one proposal of your tenant: targets, versions, changes, impact, validation, expiry and approval decision. It cannot approve. A change to a field your role may not see is redacted, and proposal_hash left out.",
		Tier:        TierTenantRead, Risk: RiskTenantRead, Permissions: []string{domain.PermProposalRead},
		Modes: bothModes, Idempotent: true, Approval: ApprovalNone, Status: StatusActive,
		Domain: DomainMapping{Service: "approval", Operation: "get_action_proposal"},
		Impact: readImpact,
	}, func(ctx context.Context, env Env, in GetProposalInput) (ProposalView, Effects, error) {
		prop, err := env.Backend.GetProposal(ctx, env.Principal, in.ProposalID)
		if err != nil {
			return ProposalView{}, Effects{}, err
		}
		rel := domain.Related{ProposalIDs: []string{prop.ID}}
		return proposalView(env.Principal.Role, prop), Effects{Related: rel}, nil
	})
}
