// Package buildinfo carries the version, commit and date stamped at build
// time with -ldflags "-X github.com/triunalabs/trovesnap/internal/buildinfo.Version=…".
package buildinfo

// Set by the linker; the defaults describe a development build.
var (
	Version = "dev"
	Commit  = "none"
	Date    = "unknown"
)
