package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/fsutil"
	"github.com/haroute/haroute/internal/haproxy"
	"github.com/haroute/haroute/internal/testutil"
)

// A haroute killed with SIGKILL holds its locks until the kernel has torn
// it down; a restart at once found the run dir "in use" by the dead
// process and stopped (T36). The locks are asked for again meanwhile,
// and a router that keeps them is still refused.
func TestLocksOfADyingRouterAreWaitedFor(t *testing.T) {
	d := &Daemon{opts: Options{RunDir: testutil.ShortTempDir(t), StateDir: t.TempDir()}, log: slog.New(slog.DiscardHandler)}
	dying, err := haproxy.LockRunDir(d.opts.RunDir)
	if err != nil {
		t.Fatal(err)
	}
	dyingState, _, err := fsutil.TryLock(filepath.Join(d.opts.StateDir, StateLockFile))
	if err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(300*time.Millisecond, func() { dying.Close(); dyingState.Close() })

	if err := d.lockRunDir(context.Background()); err != nil {
		t.Fatalf("run dir lock released 300 ms on: %v", err)
	}
	defer d.runLock.Close()
	state, err := d.lockStateDir(context.Background())
	if err != nil {
		t.Fatalf("state dir lock released 300 ms on: %v", err)
	}
	defer state.Close()

	other := &Daemon{opts: d.opts, log: d.log}
	if err := other.lockRunDir(context.Background()); !errors.Is(err, haproxy.ErrRunDirInUse) {
		t.Errorf("a run dir held for good: %v, want ErrRunDirInUse", err)
	}
	if _, err := other.lockStateDir(context.Background()); err == nil || !strings.Contains(err.Error(), "state dir in use") {
		t.Errorf("a state dir held for good: %v, want it in use", err)
	}

	// A stop ends the wait.
	defer func(d time.Duration) { lockWait = d }(lockWait)
	lockWait = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	done := make(chan error, 2)
	go func() {
		done <- other.lockRunDir(ctx)
		_, err := other.lockStateDir(ctx)
		done <- err
	}()
	for _, which := range []string{"run", "state"} {
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("the %s dir held for good was locked again", which)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("the wait for the %s dir's lock went on after its context ended", which)
		}
	}
}

// A `haroute reap` holding the run dir is told to go at once, not waited
// for as a dying haroute is: its HAProxy's listeners are closed while it
// drains, every route down (T37: 2 s longer).
func TestRunDirOfAReaperIsTakenAtOnce(t *testing.T) {
	if _, err := exec.LookPath("flock"); err != nil {
		testutil.Skip(t, "flock not installed: %v", err)
	}
	defer func(w time.Duration) { lockWait = w }(lockWait)
	lockWait = time.Minute // a wait for it would show
	run := testutil.ShortTempDir(t)
	lockFile := filepath.Join(run, haproxy.LockFile)
	dir := t.TempDir()
	// argv[1] is "reap", as `haroute reap …`'s; it holds the lock until
	// SIGTERM, which ends the shell's wait at once.
	script := fmt.Sprintf("exec 9<>%s\nflock -x 9\necho $$ >%s\nsleep 60 9>&- &\nwait\n", lockFile, lockFile)
	if err := os.WriteFile(filepath.Join(dir, "reap"), []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	reaper := exec.Command("/bin/sh", "reap")
	reaper.Dir = dir
	if err := reaper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reaper.Process.Kill(); _ = reaper.Wait() })
	for start := time.Now(); haproxy.ReaperHolding(run) != reaper.Process.Pid; time.Sleep(10 * time.Millisecond) {
		if time.Since(start) > 10*time.Second {
			t.Fatal("the reaper never held the run dir")
		}
	}

	d := &Daemon{opts: Options{RunDir: run}, log: slog.New(slog.DiscardHandler)}
	done := make(chan error, 1)
	go func() { done <- d.lockRunDir(context.Background()) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("lockRunDir with a reaper holding it: %v", err)
		}
		d.runLock.Close()
	case <-time.After(30 * time.Second):
		t.Fatal("lockRunDir waited for the reaper as for a dying haroute")
	}
}
