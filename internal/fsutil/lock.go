package fsutil

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrLocked is wrapped by TryLock's error when another process holds the
// lock.
var ErrLocked = errors.New("locked by another process")

// TryLock takes an exclusive flock on path (created 0600), or fails at
// once with ErrLocked and the holder's pid, as the holder wrote it. The kernel drops the lock
// when the process dies, however it dies; closing the file releases it.
// The pid written into the file is for the next process's error message
// only.
func TryLock(path string) (f *os.File, holder string, err error) {
	f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if errors.Is(err, unix.EROFS) {
		// A read-only file system: an flock needs no write access, and
		// the file is there when an earlier run used the directory.
		f, err = os.Open(path)
	}
	if err != nil {
		return nil, "", fmt.Errorf("lock %s: %w", path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		pid, _ := ReadRegular(path) // a FIFO locks, but reading it waited for a writer
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, strings.TrimSpace(string(pid)), ErrLocked
		}
		return nil, "", fmt.Errorf("lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, "", nil
}
