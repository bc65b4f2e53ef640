package fsutil

import (
	"errors"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A FIFO in the lock file's place locks, and a second TryLock is refused
// at once: reading the holder's pid from it waited for a writer, and
// with it the start. It is not removed: a holder may have its lock on it.
func TestTryLockOnAFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	f, _, err := TryLock(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	done := make(chan error, 1)
	go func() {
		_, _, err := TryLock(path)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrLocked) {
			t.Errorf("second TryLock: %v, want ErrLocked", err)
		}
	case <-time.After(time.Minute): // a hang guard, not a time bound
		t.Fatal("a second TryLock blocked on the FIFO")
	}
}
