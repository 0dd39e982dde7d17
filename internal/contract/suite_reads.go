package contract

import "testing"

// runReads runs the contract cases of the public and scoped read methods (§11, §12) beyond the four lists.
func runReads(t *testing.T, open func(t *testing.T) Instance) {
	_ = t
	_ = open
}
