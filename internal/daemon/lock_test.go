package daemon

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/fsutil"
	"github.com/haroute/haroute/internal/haproxy"
)

// A haroute killed with SIGKILL holds its locks until the kernel has torn
// it down; a restart at once found the run dir "in use" by the dead
// process and stopped (T36). The locks are asked for again meanwhile,
// and a router that keeps them is still refused.
func TestLocksOfADyingRouterAreWaitedFor(t *testing.T) {
	runDir := t.TempDir()
	dying, err := haproxy.LockRunDir(runDir)
	if err != nil {
		t.Fatal(err)
	}
	statePath := filepath.Join(t.TempDir(), StateLockFile)
	dyingState, _, err := fsutil.TryLock(statePath)
	if err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(300*time.Millisecond, func() { dying.Close(); dyingState.Close() })

	var lock *haproxy.RunDirLock
	if err := retryLocked(haproxy.ErrRunDirInUse, func() (err error) {
		lock, err = haproxy.LockRunDir(runDir)
		return err
	}); err != nil {
		t.Fatalf("run dir lock released 300 ms on: %v", err)
	}
	defer lock.Close()
	if err := retryLocked(fsutil.ErrLocked, func() error {
		f, _, err := fsutil.TryLock(statePath)
		if err == nil {
			f.Close()
		}
		return err
	}); err != nil {
		t.Fatalf("state dir lock released 300 ms on: %v", err)
	}

	start := time.Now()
	err = retryLocked(haproxy.ErrRunDirInUse, func() error {
		_, err := haproxy.LockRunDir(runDir)
		return err
	})
	if !errors.Is(err, haproxy.ErrRunDirInUse) || time.Since(start) < lockWait {
		t.Fatalf("a run dir held for good: %v after %v, want ErrRunDirInUse after %v", err, time.Since(start), lockWait)
	}
}
