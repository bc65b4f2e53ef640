package testutil

import (
	"os"
	"os/exec"
	"testing"
)

// Tmpfs mounts a tmpfs of size (mount's size=, "64k", "4m") on dir,
// unmounted when the test ends: a disk a test can fill, make read-only or
// unmount. It needs root, which CI has; elsewhere the test is skipped
// (Skip: never under CI=true).
func Tmpfs(t testing.TB, dir, size string) {
	t.Helper()
	if os.Geteuid() != 0 {
		Skip(t, "mounting a tmpfs needs root")
	}
	Mount(t, "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir)
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
}

// Mount runs mount(8) with args (a remount, say), failing the test if it
// fails.
func Mount(t testing.TB, args ...string) {
	t.Helper()
	if out, err := exec.Command("mount", args...).CombinedOutput(); err != nil {
		t.Fatalf("mount %v: %v: %s", args, err, out)
	}
}
