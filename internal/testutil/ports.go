package testutil

import (
	"fmt"
	"net"
	"os"
	"sync"
	"testing"
)

var (
	portsMu   sync.Mutex
	portsUsed = map[int]bool{}
	portsNext = 0
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
func FreePort(t testing.TB) int {
	t.Helper()
	portsMu.Lock()
	defer portsMu.Unlock()
	if portsNext == 0 {
		portsNext = portsLow + (os.Getpid()*97)%(portsHigh-portsLow)
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
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		ln.Close()
		portsUsed[port] = true
		return port
	}
	t.Fatal("no free port in 20000-32000")
	return 0
}
