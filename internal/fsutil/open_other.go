//go:build !unix

package fsutil

import "os"

// openNonBlocking is a plain open where FIFOs, O_NONBLOCK and O_NOFOLLOW do
// not exist.
func openNonBlocking(path string, _ bool) (*os.File, error) {
	return os.Open(path)
}
