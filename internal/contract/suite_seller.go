package contract

import "testing"

// runSeller runs the contract cases of the human approval surface (domain.ApprovalAdmin).
func runSeller(t *testing.T, open func(t *testing.T) Instance) {
	_ = t
	_ = open
}
