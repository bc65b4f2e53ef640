//go:build !unix

package snapshot

import "os"

// openNoFollow falls back to a plain open where O_NOFOLLOW does not exist.
func openNoFollow(name string) (*os.File, error) {
	return os.Open(name)
}
