// Package cli holds trovesnap's cobra commands: each parses flags into an
// options struct, builds what it needs through the Factory and prints. No
// domain logic lives here.
package cli
