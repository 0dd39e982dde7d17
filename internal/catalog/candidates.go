package catalog

import (
	"context"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// CreateCandidateInput is the input of trove_create_candidate.
type CreateCandidateInput struct {
	WriteCommon
	SaleID             string `json:"sale_id" jsonschema:"the sale the candidate belongs to" ts:"id=sale"`
	Title              string `json:"title" jsonschema:"short title as observed, e.g. Pioneer SX-series stereo receiver" ts:"min=1,max=200"`
	Description        string `json:"description,omitempty" jsonschema:"what was observed" ts:"max=4000"`
	Category           string `json:"category,omitempty" jsonschema:"dotted category path, e.g. electronics.audio.receiver" ts:"max=128,pattern=^[a-z0-9_]+(\\.[a-z0-9_]+)*$"`
	Room               string `json:"room,omitempty" jsonschema:"room where the item is, e.g. den" ts:"max=64,pattern=^[a-z0-9_]{1,64}$"`
	Condition          string `json:"condition,omitempty" jsonschema:"condition as observed" ts:"enum=new|excellent|good|fair|poor|for_parts"`
	Quantity           int    `json:"quantity,omitempty" jsonschema:"how many identical pieces (default 1)" ts:"min=1,max=10000"`
	SuppliedPriceCents *int64 `json:"supplied_price_cents,omitempty" jsonschema:"a price suggestion in cents; a pricer decides" ts:"min=0,max=100000000"`
	Notes              string `json:"notes,omitempty" jsonschema:"reviewer notes" ts:"max=4000"`
}

func createCandidate() Tool {
	return define(Definition{
		Name: "trove_create_candidate", Version: "1.0.0", Title: "Create inventory candidate",
		Description: "Create an inventory candidate for seller review (never a canonical item). Runs the P5 chain: source descriptor, import run, source record, candidate. Requires idempotency_key: retrying with the same key and input returns the original result.",
		Tier:        TierCandidateWrite, Risk: RiskLowWrite, Permissions: []string{domain.PermItemCreateCandidate},
		Modes: bothModes, Idempotent: true, Persists: true, Approval: ApprovalNone, Status: StatusActive,
		Domain: DomainMapping{Service: "ingestion", Operation: "create_inventory_candidate"},
		Impact: domain.EventImpact{Type: "candidate_created", Material: true},
	}, func(ctx context.Context, env Env, in CreateCandidateInput) (domain.CandidateCreated, Effects, error) {
		res, outcome, err := env.Backend.CreateCandidate(ctx, env.Principal, env.Write, domain.NewCandidate{
			SaleID: in.SaleID, Title: in.Title, Description: in.Description, Category: in.Category, Room: in.Room,
			Condition: in.Condition, Quantity: in.Quantity, SuppliedPriceCents: in.SuppliedPriceCents, Notes: in.Notes,
		})
		if err != nil {
			return domain.CandidateCreated{}, Effects{}, err
		}
		return res, Effects{
			Related: outcome.Related,
			Outcome: outcome,
		}, nil
	})
}
