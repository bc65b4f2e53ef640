//go:build unix

package snapshot

import (
	"os"
	"syscall"
)

// openDir opens a directory the walk has already seen as one, refusing a
// final symlink swapped in since (ELOOP) and anything that is no longer a
// directory (ENOTDIR) without waiting: O_NONBLOCK is what keeps a FIFO
// swapped in from blocking the open until a writer comes.
func openDir(name string) (*os.File, error) {
	return os.OpenFile(name, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
}
