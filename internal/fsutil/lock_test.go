package fsutil

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// A FIFO in the lock file's place is replaced by a file: a lock on it
// held, but the holder's pid could not be written, nor read back for the
// next process's message (and reading it blocked).
func TestTryLockReplacesAFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	f, _, err := TryLock(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("lock file after TryLock: %v, %v", fi, err)
	}
	_, holder, err := TryLock(path)
	if !errors.Is(err, ErrLocked) || holder != strconv.Itoa(os.Getpid()) {
		t.Errorf("second TryLock: holder %q, %v; want ErrLocked held by %d", holder, err, os.Getpid())
	}
}
