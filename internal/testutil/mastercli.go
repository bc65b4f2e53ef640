package testutil

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
)

// ServeMasterCLI listens on the unix socket at path as an HAProxy master's
// CLI does for a client that is not interactive: one command a
// connection, answered with what answer returns for it (trimmed), then
// closed. The path is left behind when the test ends, as a master leaves
// its socket: another process may have bound it again meanwhile.
func ServeMasterCLI(t testing.TB, path string, answer func(cmd string) string) {
	t.Helper()
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			cmd, _ := bufio.NewReader(conn).ReadString('\n')
			_, _ = io.WriteString(conn, answer(strings.TrimSpace(cmd)))
			conn.Close()
		}
	}()
}

// AnotherMaster answers as an HAProxy master of pid that failed a reload
// would: it lists itself in `show proc` and fails every reload, its ports
// being another's.
func AnotherMaster(pid int) func(cmd string) string {
	return func(cmd string) string {
		switch cmd {
		case "show proc":
			return "#<PID>          <type>          <reloads>       <uptime>        <version>\n" +
				fmt.Sprintf("%d             master          1 [failed: 1]   0d00h01m00s     2.6.12\n# workers\n", pid)
		case "reload":
			return "Success=0\n--\n[ALERT]    (1) : Starting frontend public: cannot bind socket (Address already in use)\n"
		}
		return ""
	}
}
