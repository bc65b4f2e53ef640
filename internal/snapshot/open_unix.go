//go:build unix

package snapshot

import (
	"os"
	"syscall"
)

// openNoFollow opens a file the walk has already vetted, refusing a final
// symlink that was swapped in since: the check and the open see one file.
func openNoFollow(name string) (*os.File, error) {
	return os.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
}
