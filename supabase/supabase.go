// Package supabase carries the record of the live schema's migrations
// (migrations.sum: one line per file, in name order, kept by
// `go generate ./internal/sqlgen` and checked by internal/sqlgen's tests),
// so that the release knows the schema version it expects without a
// number kept by hand.
package supabase

import (
	_ "embed"
	"strings"
)

//go:embed migrations.sum
var sum string

// SchemaVersion is the version of the newest migration: the number of
// migrations recorded, since each file's version is its place in name order.
func SchemaVersion() int {
	n := 0
	for line := range strings.Lines(sum) {
		if strings.TrimSpace(line) != "" {
			n++
		}
	}
	return n
}
