package contract

import "testing"

// runClients runs the contract cases of client administration (domain.ClientAdmin).
func runClients(t *testing.T, open func(t *testing.T) Instance) {
	_ = t
	_ = open
}
