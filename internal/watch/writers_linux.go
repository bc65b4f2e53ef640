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
// told (no lease support on this file system, a file of another owner
// without CAP_LEASE) reads as not open: the change then goes ahead after
// the quiet period, as it would without this check.
func openForWriting(path string) bool {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return false
	}
	fd := int(f.Fd())
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_RDLCK); err != nil {
		return errors.Is(err, unix.EAGAIN)
	}
	_, _ = unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_UNLCK)
	return false
}
