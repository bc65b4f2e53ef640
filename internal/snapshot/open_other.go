//go:build !unix

package snapshot

import "os"

// openDir is a plain open where O_DIRECTORY and O_NOFOLLOW do not exist.
func openDir(name string) (*os.File, error) {
	return os.Open(name)
}
