package daemon

import (
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/haroute/haroute/internal/testutil"
)

// The LISTEN sockets of one port are read from /proc/net/tcp's format;
// other states and ports are not.
func TestParseListening(t *testing.T) {
	const table = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1111 1 0000000000000000 100 0 0 10 0
   1: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2222 1 0000000000000000 100 0 0 10 0
   2: 0100007F:1F91 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 3333 1 0000000000000000 100 0 0 10 0
   3: 0100007F:1F90 0100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 4444 1 0000000000000000 20 4 30 10 -1
`
	if got := parseListening(table, 8080); !slices.Equal(got, []uint64{1111, 2222}) {
		t.Errorf("parseListening(8080) = %v, want [1111 2222]", got)
	}
	if got := parseListening(table, 9090); len(got) != 0 {
		t.Errorf("parseListening(9090) = %v, want none", got)
	}
}

// listeningOn finds a socket this process listens on under a /proc
// mounted with subset=pid, as the packaged unit's ProcSubset=pid mounts
// it: there /proc/net does not exist, and reading it made every listener
// another process's. The test runs itself again in a mount namespace of
// its own with such a /proc (unshare, as root).
func TestListeningOnUnderProcSubsetPid(t *testing.T) {
	if os.Getenv("HAROUTE_PROC_SUBSET") == "1" {
		if _, err := os.Stat("/proc/net"); err == nil {
			t.Fatal("/proc/net exists: /proc is not mounted with subset=pid")
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		port := ln.Addr().(*net.TCPAddr).Port
		inodes, err := listeningOn(port)
		if err != nil || len(inodes) != 1 {
			t.Fatalf("listeningOn(%d) = %v, %v; want this test's listener", port, inodes, err)
		}
		return
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil || os.Geteuid() != 0 {
		testutil.Skip(t, "needs root and unshare(1) to mount a /proc with subset=pid")
	}
	cmd := exec.Command(unshare, "--mount", "sh", "-c",
		`mount -t proc -o subset=pid proc /proc && exec "$0" -test.run='^TestListeningOnUnderProcSubsetPid$' -test.v`, os.Args[0])
	cmd.Env = append(os.Environ(), "HAROUTE_PROC_SUBSET=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS") {
		t.Fatalf("under subset=pid: %v\n%s", err, out)
	}
}
