package catalog

import (
	"fmt"
	"slices"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// Decision says whether a principal may see (and so call) a tool, and why.
// tools/list and tools/call both use Decide, so what is listed is exactly
// what can be called.
type Decision struct {
	Visible bool   `json:"visible"`
	Reason  string `json:"reason"`
	// Missing is the first unmet permission, when that is the reason.
	Missing string `json:"missing_permission,omitempty"`
}

// Decide is the one discovery and call-time visibility rule (spec §26): server
// mode, client status, tool status and risk, tool groups, actor permissions
// (every one of Permissions, and one of AnyPermissions when it is set).
func Decide(t *Tool, mode domain.Mode, p domain.Principal) Decision {
	switch {
	case t.Risk == RiskProhibited:
		return Decision{Reason: "prohibited capability: never exposed"}
	case !t.HasHandler(): // experimental: the catalog test holds that status to "no handler yet"
		return Decision{Reason: "experimental: capability not available yet"}
	case t.Status == StatusSuspended || t.Status == StatusRetired:
		return Decision{Reason: "tool " + string(t.Status)}
	case !slices.Contains(t.Modes, mode):
		return Decision{Reason: fmt.Sprintf("not available in %s mode", mode)}
	case p.ClientStatus != domain.ClientActive:
		return Decision{Reason: "client " + p.ClientStatus}
	}
	if t.Tier == TierPublicRead {
		return Decision{Visible: true, Reason: "public tool"}
	}
	if p.Public {
		return Decision{Reason: "needs a registered client (public access sees public tools only)"}
	}
	if !slices.Contains(p.AllowedToolGroups, string(t.Tier)) {
		return Decision{Reason: fmt.Sprintf("client not allowed tool group %s", t.Tier)}
	}
	for _, perm := range t.Permissions {
		if !p.Has(perm) {
			return Decision{Reason: fmt.Sprintf("role %s lacks permission %s", p.Role, perm), Missing: perm}
		}
	}
	held := slices.Clone(t.Permissions)
	if len(t.AnyPermissions) > 0 {
		i := slices.IndexFunc(t.AnyPermissions, p.Has)
		if i < 0 {
			return Decision{Reason: fmt.Sprintf("role %s has none of %v", p.Role, t.AnyPermissions), Missing: t.AnyPermissions[0]}
		}
		held = append(held, t.AnyPermissions[i])
	}
	return Decision{Visible: true, Reason: fmt.Sprintf("group %s allowed; role %s has %v", t.Tier, p.Role, held)}
}

// Hints are the MCP annotations, derived from tier and risk — never written
// by hand, so they cannot drift from the tool's real authority.
type Hints struct {
	ReadOnly    bool
	Destructive bool
	Idempotent  bool
	OpenWorld   bool
}

// HintsFor derives a tool's annotations. A candidate write or a proposal is
// not destructive: it changes nothing canonical.
func HintsFor(t *Tool) Hints {
	return Hints{
		ReadOnly:    t.Tier == TierPublicRead || t.Tier == TierTenantRead,
		Destructive: t.Risk == RiskControlledWrite || t.Risk == RiskHighImpact,
		Idempotent:  t.Idempotent,
		OpenWorld:   false, // every tool acts on TroveSnap's own closed domain
	}
}
