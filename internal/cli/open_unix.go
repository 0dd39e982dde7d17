//go:build unix

package cli

import (
	"os"
	"syscall"
)

// openForRead opens a file the seller named for reading without blocking
// on it: opening a named pipe (FIFO) for reading otherwise waits for a
// writer, so a pipe planted among the photos would hang the command before
// its type could be checked. O_NONBLOCK changes nothing for the reads of a
// regular file, the only kind the callers go on to read.
func openForRead(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
