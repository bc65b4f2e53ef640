//go:build unix

package fsutil

import (
	"os"
	"syscall"
)

// openNonBlocking opens path read-only with O_NONBLOCK, so a FIFO opens at
// once instead of waiting for a writer; O_NOFOLLOW when asked.
func openNonBlocking(path string, noFollow bool) (*os.File, error) {
	flag := os.O_RDONLY | syscall.O_NONBLOCK
	if noFollow {
		flag |= syscall.O_NOFOLLOW
	}
	return os.OpenFile(path, flag, 0)
}
