package haproxy

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/haroute/haroute/internal/testutil"
)

// A listener whose backlog is full, as a hung or stopped HAProxy's admin
// socket becomes with clients queued, is live, and asking does not block:
// a blocking connect froze the daemon's loop for as long as HAProxy hung.
// A missing path and a socket file nobody listens on are dead.
func TestIsLiveSocket(t *testing.T) {
	dir := testutil.ShortTempDir(t)
	path := filepath.Join(dir, "full.sock")
	l, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(l) })
	if err := unix.Bind(l, &unix.SockaddrUnix{Name: path}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(l, 0); err != nil {
		t.Fatal(err)
	}
	// Fill the backlog: nothing accepts.
	full := false
	for range 64 {
		c, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(c) })
		if err := unix.Connect(c, &unix.SockaddrUnix{Name: path}); errors.Is(err, unix.EAGAIN) {
			full = true
			break
		}
	}
	if !full {
		t.Fatal("the backlog never filled")
	}
	done := make(chan bool, 1)
	go func() { done <- isLiveSocket(path) }()
	select {
	case live := <-done:
		if !live {
			t.Error("a listener with a full backlog reads as dead")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("isLiveSocket blocked on a listener with a full backlog")
	}

	if isLiveSocket(filepath.Join(dir, "missing.sock")) {
		t.Error("a missing socket reads as live")
	}
	stale := filepath.Join(dir, "stale.sock")
	s, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Bind(s, &unix.SockaddrUnix{Name: stale}); err != nil {
		t.Fatal(err)
	}
	unix.Close(s) // bound, never listened: connections are refused
	if isLiveSocket(stale) {
		t.Error("a socket file nobody listens on reads as live")
	}
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if isLiveSocket(filepath.Join(dir, "file")) {
		t.Error("a regular file reads as a live socket")
	}
}
