package domain

// IngestionBackend holds the P5 candidate and draft writes (§13) beyond
// CreateCandidate, which is declared in backend.go.
type IngestionBackend interface {
}
