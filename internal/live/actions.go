package live

import (
	"fmt"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// The controlled actions of migration 10 in live mode: status transitions
// and archiving, bulk item updates, QR identity binding and release,
// dispositions and buyer notifications. As for the first three actions,
// domain's builders make the proposal from the state mcp_proposal_state
// answers, mcp_create_proposal re-verifies it under the key's lock, and
// mcp_execute_proposal runs the domain function in ONE transaction with the
// authority, the versions, the event and the idempotency row.
//
// Neither a buyer notification nor an export delivery is sent by this
// project in live mode: its execution queues one outbound request for an
// external worker and reports its targets "queued", never "sent" or
// "delivered" (docs/live-outbound.md).

// statusCandidateFacts is what a status transition that reviews an imported
// status reads of its candidate.
type statusCandidateFacts struct {
	Found        bool   `json:"found"`
	Kind         string `json:"kind"`
	ReviewStatus string `json:"review_status"`
}

// tagFacts is what binding a QR tag reads: whether the code is one of the
// tenant's printed labels, and whether another item carries it.
type tagFacts struct {
	Code           string `json:"code"`
	Printed        bool   `json:"printed"`
	BoundElsewhere bool   `json:"bound_elsewhere"`
}

// demandCounts are summed demand signals: counts only, never a buyer.
type demandCounts struct {
	Saves   int `json:"saves"`
	Follows int `json:"follows"`
}

// saleDemand is the aggregated demand of one sale, in total and per
// top-level category, from which a notification's audience is sized.
type saleDemand struct {
	SaleID  string                  `json:"sale_id"`
	Saves   int                     `json:"saves"`
	Follows int                     `json:"follows"`
	ByTop   map[string]demandCounts `json:"by_top"`
}

// exportFacts is what an export delivery is built from (domain.ExportFacts):
// status "delivery_queued" once a delivery of it was queued.
type exportFacts struct {
	ID         string `json:"id"`
	Channel    string `json:"channel"`
	Status     string `json:"status"`
	ItemCount  int    `json:"item_count"`
	ValidCount int    `json:"valid_count"`
	Rows       []struct {
		ItemID         string `json:"item_id"`
		StagedVersion  int    `json:"staged_version"`
		SaleID         string `json:"sale_id"`
		CurrentVersion int    `json:"current_version"`
	} `json:"rows"`
}

// liveRules is what live mode needs to propose one action: the draft's
// fields mcp_proposal_state needs besides the targets (state; nil when the
// targets are all it reads) and domain's builder over the state it answers.
type liveRules struct {
	state func(d domain.ProposalDraft, f map[string]any)
	build func(p domain.Principal, d domain.ProposalDraft, prop *domain.Proposal, st proposalState) error
}

// liveActions has the rules of every action of the registry, as a test
// holds: the live database runs them all (migrations 6 and 10).
var liveActions = map[string]liveRules{
	domain.ActionPromoteCandidate: {build: buildPromotion},
	domain.ActionPublishItem:      {build: buildItemPublication},
	domain.ActionPublishSale:      {build: buildSalePublication},
	domain.ActionBulkItemUpdate:   {state: bulkState, build: buildBulkUpdate},
	domain.ActionStatusTransition: {state: statusState, build: buildStatusTransition},
	domain.ActionArchiveItem:      {state: statusState, build: buildStatusTransition},
	domain.ActionBindIdentity:     {state: bindState, build: buildIdentity},
	domain.ActionReleaseIdentity:  {build: buildIdentity},
	domain.ActionDisposition:      {build: buildDisposition},
	domain.ActionBuyerNotify:      {build: buildNotification},
	domain.ActionExportDelivery:   {build: buildExportDelivery},
	domain.ActionCheckoutScan:     {build: buildCheckoutScan},
}

// stateFields are the draft's fields mcp_proposal_state needs besides the
// targets: the bulk changes (checked before any target is read, as the
// store does), the tag to bind, the imported status a transition reviews.
func stateFields(d domain.ProposalDraft) map[string]any {
	f := map[string]any{}
	if r := liveActions[d.Action]; r.state != nil {
		r.state(d, f)
	}
	return f
}

func bulkState(d domain.ProposalDraft, f map[string]any) {
	if ch, ok := d.Fields["changes"].(map[string]any); ok {
		f["changes"] = ch
	}
}

func bindState(d domain.ProposalDraft, f map[string]any) {
	if code, ok := d.Fields["qr_code"].(string); ok {
		f["qr_code"] = code
	}
}

func statusState(d domain.ProposalDraft, f map[string]any) {
	if d.StatusCandidateID != "" {
		f["status_candidate_id"] = d.StatusCandidateID
	}
}

func missingState(what string) error {
	return fmt.Errorf("live: mcp_proposal_state: answer without the %s: %w", what, domain.ErrUnavailable)
}

// stateItems are the item targets the database answered, all of them.
func stateItems(prop *domain.Proposal, st proposalState) ([]domain.Item, error) {
	if len(st.Items) != len(prop.TargetIDs) {
		return nil, missingState("items")
	}
	return st.Items, nil
}

func buildBulkUpdate(p domain.Principal, d domain.ProposalDraft, prop *domain.Proposal, st proposalState) error {
	changes, names, err := domain.BulkUpdateChanges(p, d)
	if err != nil {
		return err
	}
	its, err := stateItems(prop, st)
	if err != nil {
		return err
	}
	return domain.BuildBulkUpdate(p, prop, its, changes, names)
}

func buildStatusTransition(p domain.Principal, d domain.ProposalDraft, prop *domain.Proposal, st proposalState) error {
	its, err := stateItems(prop, st)
	if err != nil {
		return err
	}
	return domain.BuildStatusTransition(p, d, prop, its, func(id string) (string, string, error) {
		c := st.StatusCandidate
		switch {
		case c == nil || id != d.StatusCandidateID:
			return "", "", missingState("status candidate")
		case !c.Found:
			return "", "", domain.UnknownRef("status_candidate_id", id, false)
		}
		return c.Kind, c.ReviewStatus, nil
	})
}

func buildIdentity(p domain.Principal, d domain.ProposalDraft, prop *domain.Proposal, st proposalState) error {
	its, err := stateItems(prop, st)
	if err != nil {
		return err
	}
	return domain.BuildIdentity(p, d, prop, its, func(code, itemID string) error {
		t := st.Tag
		switch {
		case t == nil || t.Code != code || len(prop.TargetIDs) == 0 || itemID != prop.TargetIDs[0]:
			return missingState("tag")
		case !t.Printed:
			return domain.Because(domain.ErrTransitionInvalid, "tag %s is not one of your printed labels", code)
		case t.BoundElsewhere:
			return domain.Because(domain.ErrTransitionInvalid, "tag %s is bound to another item", code)
		}
		return nil
	})
}

func buildCheckoutScan(p domain.Principal, d domain.ProposalDraft, prop *domain.Proposal, st proposalState) error {
	its, err := stateItems(prop, st)
	if err != nil {
		return err
	}
	return domain.BuildCheckoutScan(p, d, prop, its)
}

func buildDisposition(p domain.Principal, d domain.ProposalDraft, prop *domain.Proposal, st proposalState) error {
	its, err := stateItems(prop, st)
	if err != nil {
		return err
	}
	return domain.BuildDisposition(p, d, prop, its)
}

func buildNotification(p domain.Principal, d domain.ProposalDraft, prop *domain.Proposal, st proposalState) error {
	var target domain.NotificationTarget
	if domain.ValidID(domain.PrefixItem, prop.TargetIDs[0]) {
		its, err := stateItems(prop, st)
		if err != nil {
			return err
		}
		target.Item = &its[0]
	} else {
		if st.Sale == nil {
			return missingState("sale")
		}
		target.Sale = st.Sale
	}
	return domain.BuildNotification(p, d, prop, target, func(saleID, top string) (int, int, error) {
		dm := st.Demand
		if dm == nil || dm.SaleID != saleID {
			return 0, 0, missingState("demand")
		}
		if top == "" {
			return dm.Saves, dm.Follows, nil
		}
		c := dm.ByTop[top]
		return c.Saves, c.Follows, nil
	})
}

func buildExportDelivery(p domain.Principal, _ domain.ProposalDraft, prop *domain.Proposal, st proposalState) error {
	e := st.Export
	if e == nil || e.ID != prop.TargetIDs[0] {
		return missingState("export")
	}
	facts := domain.ExportFacts{Channel: e.Channel, Status: e.Status, Items: e.ItemCount, Valid: e.ValidCount}
	for _, r := range e.Rows {
		facts.Rows = append(facts.Rows, domain.ExportItem{ItemID: r.ItemID, StagedVersion: r.StagedVersion, SaleID: r.SaleID,
			CurrentVersion: r.CurrentVersion})
	}
	return domain.BuildExportDelivery(p, prop, facts)
}
