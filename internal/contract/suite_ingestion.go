package contract

import "testing"

// runIngestion runs the contract cases of the ingestion writes (§13) beyond the candidate chain.
func runIngestion(t *testing.T, open func(t *testing.T) Instance) {
	_ = t
	_ = open
}
