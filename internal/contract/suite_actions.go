package contract

import "testing"

// runActions runs the contract cases of the controlled actions beyond promotion and publication.
func runActions(t *testing.T, open func(t *testing.T) Instance) {
	_ = t
	_ = open
}
