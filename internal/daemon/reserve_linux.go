package daemon

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// reserve allocates size bytes to f, so that writing them later cannot
// fail for want of space. It reports false, with no error, when the file
// system cannot reserve (the caller then writes the content at once).
func reserve(f *os.File, size int64) (bool, error) {
	if size == 0 {
		return true, nil
	}
	err := unix.Fallocate(int(f.Fd()), 0, 0, size)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.ENOSYS):
		return false, nil
	default:
		return false, err
	}
}
