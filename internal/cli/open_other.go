//go:build !unix

package cli

import "os"

// openForRead opens a file the seller named for reading (see open_unix.go).
func openForRead(path string) (*os.File, error) { return os.Open(path) }
