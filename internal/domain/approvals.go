package domain

// ApprovalBackend holds proposals, grants, automation policies and the
// controlled domain functions (§14–§18).
type ApprovalBackend interface {
}
