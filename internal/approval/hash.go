package approval

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// canonical is the hashed content of a proposal: everything that defines
// what would happen and on whose request. Status is not content.
type canonical struct {
	TenantID         string                   `json:"tenant_id"`
	Tool             domain.ExecutingTool     `json:"tool"`
	Action           string                   `json:"action"`
	TargetKind       string                   `json:"target_kind"`
	Targets          []string                 `json:"targets"`
	ExpectedVersions []domain.TargetVersion   `json:"expected_versions"`
	Changes          []domain.FieldChange     `json:"changes"`
	Impact           domain.ProposalImpact    `json:"impact"`
	Notification     *domain.NotificationPlan `json:"notification"`
	Requirement      string                   `json:"approval_requirement"`
	ExpiresAt        string                   `json:"expires_at"`
	RequestedBy      domain.Requester         `json:"requested_by"`
}

// Hash is the proposal hash: "sha256:" + hex of the RFC 8785 canonical JSON
// of the proposal's content. Any change of target, value, version, action,
// impact, expiry or requester changes it.
func Hash(p domain.Proposal) (string, error) {
	c := canonical{
		TenantID: p.TenantID, Tool: p.Tool, Action: p.Action, TargetKind: p.TargetKind, Targets: p.TargetIDs,
		ExpectedVersions: p.ExpectedVersions, Changes: p.Changes, Impact: p.Impact, Notification: p.Notification,
		Requirement: p.Requirement, ExpiresAt: p.ExpiresAt.UTC().Format(time.RFC3339Nano), RequestedBy: p.RequestedBy,
	}
	if c.Targets == nil {
		c.Targets = []string{}
	}
	if c.ExpectedVersions == nil {
		c.ExpectedVersions = []domain.TargetVersion{}
	}
	if c.Changes == nil {
		c.Changes = []domain.FieldChange{}
	}
	b, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("approval: encode proposal %s: %w", p.ID, err)
	}
	canon, err := domain.CanonicalJSON(b)
	if err != nil {
		return "", fmt.Errorf("approval: canonicalise proposal %s: %w", p.ID, err)
	}
	sum := sha256.Sum256(canon)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// Seal is Hash as a domain.ProposalSealer.
var Seal domain.ProposalSealer = Hash
