package domain

// ReadBackend holds the public marketplace reads (§11) and the scoped reads
// (§12) beyond the original four lists, which are declared in backend.go.
type ReadBackend interface {
}
