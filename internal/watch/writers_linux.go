package watch

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// openForWriting reports whether some process holds the regular file at
// path open for writing. Linux grants a read lease only on a file nobody
// has open for writing, and refuses it with EAGAIN otherwise; the lease,
// taken on a read-only descriptor, is given back at once. What cannot be
// told reads as not open, so the change goes ahead after the quiet
// period as it would without this check: a file gone or replaced (nil
// error), or no lease allowed (a file of another owner without
// CAP_LEASE, a file system without leases), which is returned.
func openForWriting(path string) (bool, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW, 0)
	if err != nil {
		return false, nil
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return false, nil
	}
	fd := f.Fd()
	if _, err := unix.FcntlInt(fd, unix.F_SETLEASE, unix.F_RDLCK); err != nil {
		if errors.Is(err, unix.EAGAIN) {
			return true, nil
		}
		return false, err
	}
	_, _ = unix.FcntlInt(fd, unix.F_SETLEASE, unix.F_UNLCK)
	return false, nil
}
