package haproxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// killGroup kills the master and its worker at once, as the OOM killer or
// an operator's kill -9 of the group does, and waits for the supervisor
// to see it.
func killGroup(t *testing.T, p *Process) {
	t.Helper()
	if err := syscall.Kill(-p.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("haproxy did not exit after SIGKILL")
	}
}

// sendGet opens a connection and writes a request on it, without reading.
func sendGet(t *testing.T, port int) (net.Conn, error) {
	t.Helper()
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 2*time.Second)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { c.Close() })
	_, err = fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	return c, err
}

func readStatus(t *testing.T, c net.Conn) string {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	defer resp.Body.Close()
	return resp.Status
}

func (r *rig) restart(t *testing.T) error {
	t.Helper()
	proc, err := r.sup.Start(ctxT(t, 20*time.Second))
	if err != nil {
		return err
	}
	r.proc = proc
	t.Cleanup(func() { _ = proc.Stop(context.Background()) })
	return nil
}

// While a killed HAProxy is down, its ports stay open on the sockets the
// supervisor kept: a connection made meanwhile waits in the queue, and the
// next master, handed those sockets (-x), answers it. Without them the
// connection is refused.
func TestKilledHAProxyRestartsOnKeptListeners(t *testing.T) {
	r := newRig(t)
	r.start(t)
	if got := r.sup.kept.count(); got != 2 {
		t.Fatalf("%d listening sockets kept, want 2 (the config's two TCP binds)", got)
	}
	killGroup(t, r.proc)

	c, err := sendGet(t, r.HTTP)
	if err != nil {
		t.Fatalf("a connection while haproxy is down: %v, want it queued", err)
	}
	if err := r.restart(t); err != nil {
		t.Fatal(err)
	}
	if got := readStatus(t, c); got != "200 OK" {
		t.Fatalf("the queued connection got %q, want 200 OK", got)
	}
	if !strings.Contains(r.log.String(), "adopted the listening sockets") {
		t.Errorf("the restart did not say it adopted the kept sockets; log:\n%s", r.log)
	}
	if got := r.get(t, ""); got != "200 b0" {
		t.Errorf("GET after the restart = %q", got)
	}
	// The new master's own sockets are kept in turn.
	if got := r.sup.kept.count(); got != 2 {
		t.Errorf("%d listening sockets kept after the restart, want 2", got)
	}
	// It reloads like any master: the re-executed one drops -x from its
	// arguments (listeners.sock is gone by then) and takes the sockets
	// from its worker.
	if _, err := r.proc.Reload(ctxT(t, 20*time.Second)); err != nil {
		t.Fatalf("reload after the restart: %v", err)
	}
	if got := r.get(t, ""); got != "200 b0" {
		t.Errorf("GET after the reload = %q", got)
	}

	// A deliberate stop lets go of them: the port refuses, as it does
	// with no HAProxy at all.
	if err := r.proc.Stop(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := sendGet(t, r.HTTP); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("a connection after a stop: %v, want connection refused", err)
	}
}

// A master that does not come back (here, a config it refuses) must not
// leave the ports queueing connections for nobody: the kept sockets are
// let go, and the next start binds its own.
func TestKeptListenersReleasedWhenHAProxyDoesNotComeBack(t *testing.T) {
	r := newRig(t)
	r.start(t)
	good, err := os.ReadFile(r.Cfg)
	if err != nil {
		t.Fatal(err)
	}
	killGroup(t, r.proc)
	writeFile(t, r.Cfg, string(good)+"\nbogus_section\n")
	if err := r.restart(t); err == nil {
		t.Fatal("haproxy started on a config it should refuse")
	}
	if _, err := sendGet(t, r.HTTP); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("a connection after a failed restart: %v, want connection refused", err)
	}
	writeFile(t, r.Cfg, string(good))
	if err := r.restart(t); err != nil {
		t.Fatal(err)
	}
	if got := r.get(t, ""); got != "200 b0" {
		t.Errorf("GET after the restart = %q", got)
	}
}

// A reload that moves a port leaves nothing kept on the old one: it
// refuses connections, and the new port's socket is the one kept.
func TestReloadKeepsTheNewPortsOnly(t *testing.T) {
	r := newRig(t)
	r.start(t)
	good, err := os.ReadFile(r.Cfg)
	if err != nil {
		t.Fatal(err)
	}
	old := r.HTTP
	r.HTTP = freePortOtherThan(t, old)
	writeFile(t, r.Cfg, strings.Replace(string(good), fmt.Sprintf("127.0.0.1:%d\n", old), fmt.Sprintf("127.0.0.1:%d\n", r.HTTP), 1))
	if _, err := r.proc.Reload(ctxT(t, 20*time.Second)); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "the old port refuses", func() bool {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", old), time.Second)
		if err == nil {
			c.Close()
		}
		return errors.Is(err, syscall.ECONNREFUSED)
	})
	// Past the second fetch too.
	time.Sleep(keepAgainAfter + 500*time.Millisecond)
	if _, err := sendGet(t, old); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("the old port after the reload: %v, want connection refused", err)
	}
	killGroup(t, r.proc)
	c, err := sendGet(t, r.HTTP)
	if err != nil {
		t.Fatalf("the new port while haproxy is down: %v, want it queued", err)
	}
	if err := r.restart(t); err != nil {
		t.Fatal(err)
	}
	if got := readStatus(t, c); got != "200 OK" {
		t.Fatalf("the queued connection got %q, want 200 OK", got)
	}
}

func freePortOtherThan(t *testing.T, port int) int {
	t.Helper()
	for {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		if p != port {
			return p
		}
	}
}

// Both sides of _getsocks against each other, with more sockets than one
// batch carries (253): every TCP listener arrives, in order and with its
// description, and the unix one is dropped.
func TestGetsocksRoundTrip(t *testing.T) {
	var from keptListeners
	var ports []int
	for range 300 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
		from.sockets = append(from.sockets, keptSocket{fd: dupListener(t, ln), meta: []byte{0, 2, 'l', 'o', 0, 0, 0, 0}})
	}
	unixLn, err := net.Listen("unix", filepath.Join(t.TempDir(), "u.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unixLn.Close() })
	from.sockets = append(from.sockets, keptSocket{fd: dupListener(t, unixLn), meta: []byte{0, 0, 0, 0, 0, 0}})
	t.Cleanup(from.release)

	path := filepath.Join(t.TempDir(), "l.sock")
	stop, err := from.handOver(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("hand-over socket: %v, mode %v; want 0600", err, fi.Mode().Perm())
	}
	var to keptListeners
	t.Cleanup(to.release)
	n, err := to.fetch(path, func() bool { return false })
	if err != nil {
		t.Fatal(err)
	}
	stop()
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("hand-over socket left behind: %v", err)
	}
	if n != len(ports) {
		t.Fatalf("fetched %d sockets, want the %d TCP listeners", n, len(ports))
	}
	for i, s := range to.sockets {
		sa, err := unix.Getsockname(s.fd)
		if err != nil {
			t.Fatal(err)
		}
		if got := sa.(*unix.SockaddrInet4).Port; got != ports[i] {
			t.Fatalf("socket %d listens on %d, want %d", i, got, ports[i])
		}
		if string(s.meta) != "\x00\x02lo\x00\x00\x00\x00" {
			t.Fatalf("socket %d description %q", i, s.meta)
		}
	}
}

// dupListener returns a descriptor of its own for ln's socket.
func dupListener(t *testing.T, ln net.Listener) int {
	t.Helper()
	raw, err := ln.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	fd := -1
	if err := raw.Control(func(s uintptr) { fd, err = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		t.Fatal(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return fd
}

// A start that fails before HAProxy is even launched (here, its run dir
// replaced by a file) lets the kept sockets go too: the ports refuse
// rather than queue connections for nobody while the daemon retries.
func TestKeptListenersReleasedWhenAStartFailsEarly(t *testing.T) {
	r := newRig(t)
	r.start(t)
	killGroup(t, r.proc)
	if err := os.RemoveAll(r.Run); err != nil {
		t.Fatal(err)
	}
	writeFile(t, r.Run, "not a directory\n")
	if err := r.restart(t); err == nil {
		t.Fatal("haproxy started without its run dir")
	}
	if _, err := sendGet(t, r.HTTP); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("a connection after the failed start: %v, want connection refused", err)
	}
}

// After a reload the first fetch can reach the worker the reload retired
// ("already sent and closed"); the one a second later holds the new
// worker's sockets. The first's failure, handled two seconds on, let go
// of them: a kill of HAProxy then refused connections (T36, on 3.2); and
// with the later fetch still under way, it ended that one too (T37). A
// failed fetch releases only when no fetch began after it.
func TestFailedFetchKeepsWhatALaterFetchHolds(t *testing.T) {
	// keepListeners relies on the order below: the fetch after a reload
	// fails only once the fetch keepAgainAfter later has begun.
	if diedWithin <= keepAgainAfter {
		t.Fatalf("a failed fetch decides after %s, before the next fetch begins (%s): it would release what that one holds", diedWithin, keepAgainAfter)
	}
	var from keptListeners
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	from.sockets = []keptSocket{{fd: dupListener(t, ln), meta: []byte{0, 0, 0, 0, 0, 0}}}
	t.Cleanup(from.release)
	path := filepath.Join(t.TempDir(), "l.sock")
	stop, err := from.handOver(path)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()

	var kept keptListeners
	t.Cleanup(kept.release)
	failed := kept.begin()
	if _, err := kept.fetch(filepath.Join(t.TempDir(), "gone.sock"), func() bool { return false }); err == nil {
		t.Fatal("a fetch from no socket succeeded")
	}
	// A later fetch under way: the failure leaves the decision to it.
	later := kept.begin()
	if kept.releaseIfLatest(failed) {
		t.Fatal("the failed fetch released while a later one was under way")
	}
	if n, err := kept.fetch(path, func() bool { return false }); err != nil || n != 1 {
		t.Fatalf("the later fetch: %d sockets, %v", n, err)
	}
	if kept.releaseIfLatest(failed) || kept.count() != 1 {
		t.Fatalf("the failed fetch let go of what the later one holds: %d held", kept.count())
	}
	if !kept.releaseIfLatest(later) || kept.count() != 0 {
		t.Fatalf("the last fetch begun, failing, kept %d sockets", kept.count())
	}
}
