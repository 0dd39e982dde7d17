// Package sqlgen writes the domain rules of internal/domain as SQL: the
// pure IMMUTABLE lookup functions (and the role → permission table) that
// the live RPCs of supabase/migrations call, so no rule is copied into SQL
// by hand.
//
// Applied migrations are never edited, so a change of the rules is a new
// migration: `go generate ./internal/sqlgen` compares the newest generated
// migration with Render and, when they differ, writes the next numbered
// file. It also records the sha256 of every new migration file in
// supabase/migrations.sum, which the tests hold applied files to.
package sqlgen

//go:generate go run ./cmd/sqlgen -dir ../../supabase
