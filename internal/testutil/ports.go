package testutil

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
)

var (
	portsMu    sync.Mutex
	portsUsed  = map[int]bool{}
	portsNext  = 0
	portsLocks []*os.File // held open for the life of the process
)

// Ports for HAProxy's listeners come from below the kernel's ephemeral
// range (32768–60999 on Linux): a port taken from listen(":0") and closed
// again could be handed straight back to the next listen(":0") — a backend
// here, or another test package running in parallel — before HAProxy binds
// it. Each process starts at its own offset so parallel test binaries
// rarely probe the same ports.
const (
	portsLow  = 20000
	portsHigh = 32000
)

// FreePort returns a port on 127.0.0.1 that was free a moment ago, that no
// other caller in this process has been given, and that no listen(":0")
// can take in the meantime.
//
// A port is also reserved across processes, by an flock on a file named
// for it that this process holds until it exits. Without that, a test that
// restarts haroute on the same metrics port leaves the port free for a
// moment, and a test binary running in parallel could probe it, find it
// free and hand it to its own HAProxy (CI saw exactly that: "metrics
// address ... address already in use" after a restart in TestChaos).
func FreePort(t testing.TB) int {
	t.Helper()
	portsMu.Lock()
	defer portsMu.Unlock()
	if portsNext == 0 {
		portsNext = portsLow + (os.Getpid()*97)%(portsHigh-portsLow)
	}
	lockDir := filepath.Join(os.TempDir(), "haroute-test-ports")
	if err := os.MkdirAll(lockDir, 0o777); err != nil {
		t.Fatalf("port reservations: %v", err)
	}
	for range portsHigh - portsLow {
		port := portsNext
		portsNext++
		if portsNext >= portsHigh {
			portsNext = portsLow
		}
		if portsUsed[port] {
			continue
		}
		lock, ok := reservePort(lockDir, port)
		if !ok {
			continue
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			lock.Close()
			continue
		}
		ln.Close()
		portsUsed[port] = true
		portsLocks = append(portsLocks, lock)
		return port
	}
	t.Fatal("no free port in 20000-32000")
	return 0
}

// reservePort takes the cross-process lock for port, or reports that
// another live process holds it. The kernel drops the lock when the holder
// exits, however it exits.
func reservePort(dir string, port int) (*os.File, bool) {
	f, err := os.OpenFile(filepath.Join(dir, fmt.Sprint(port)), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, false
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, false
	}
	return f, true
}
