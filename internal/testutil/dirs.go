package testutil

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// ShortTempDir returns a new directory under the system temp dir with a
// short name (/tmp/hr…), removed when the test ends. Unix socket paths
// must fit in 108 bytes, which t.TempDir()'s long names can exceed.
func ShortTempDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "hr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// AdminCommand sends one command to the HAProxy admin socket
// <runDir>/admin.sock, behind haroute's back as an operator would, and
// returns the answer.
func AdminCommand(runDir, cmd string) (string, error) {
	conn, err := net.DialTimeout("unix", filepath.Join(runDir, "admin.sock"), 2*time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return "", err
	}
	if _, err := fmt.Fprintf(conn, "%s\n", cmd); err != nil {
		return "", err
	}
	b, err := io.ReadAll(conn)
	return string(b), err
}
