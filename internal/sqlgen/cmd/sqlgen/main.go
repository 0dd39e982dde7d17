// Command sqlgen writes a new generated migration when the domain rules
// changed, then records the sums of unrecorded migrations. It runs via
// `go generate ./internal/sqlgen`.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/triunalabs/trovesnap/internal/sqlgen"
)

func main() {
	dir := flag.String("dir", "supabase", "the supabase directory (migrations/ and migrations.sum)")
	flag.Parse()
	if err := run(*dir); err != nil {
		fmt.Fprintln(os.Stderr, "sqlgen:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	migrations := filepath.Join(dir, "migrations")
	name, err := sqlgen.Generate(migrations)
	if err != nil {
		return err
	}
	if name != "" {
		ms, err := sqlgen.List(migrations)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "sqlgen: wrote %s (schema version %d)\n", name, len(ms))
	}
	added, err := sqlgen.Record(migrations, filepath.Join(dir, "migrations.sum"))
	for _, a := range added {
		fmt.Fprintf(os.Stderr, "sqlgen: recorded %s\n", a)
	}
	return err
}
