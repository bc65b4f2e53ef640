package render

import (
	"cmp"
	"fmt"
	"path"
	"strings"
)

// Sockets names the unix sockets haproxy.cfg binds (the master socket is
// HAProxy's -S, not the config's).
//
// HAProxy hands its listening sockets to the next worker at a reload, and
// to a new master taking over (-x), matched by path. A socket whose file
// was deleted therefore stays dead across reloads under the same name:
// it comes back only under a new one. That is why the names are inputs
// here; the daemon renames a socket when its file is lost (see
// internal/daemon/heal.go).
type Sockets struct {
	// Admin and SNI are file names in Input.RunDir; "" means AdminSocket
	// and SNISocket.
	Admin, SNI string
	// SNIBackup, when set, is the absolute path of a second TLS hop
	// socket, kept outside the run dir: be_sni falls over to it at once
	// when the first hop refuses a connection, so TLS routes keep serving
	// while a deleted run dir or hop socket is being healed.
	SNIBackup string
}

func (s Sockets) admin() string { return cmp.Or(s.Admin, AdminSocket) }
func (s Sockets) sni() string   { return cmp.Or(s.SNI, SNISocket) }

// check refuses names that are not plain file names, and a backup path
// that is not absolute and clean.
func (s Sockets) check() error {
	for _, n := range []struct{ what, name string }{{"admin socket", s.Admin}, {"hop socket", s.SNI}} {
		if n.name == "" {
			continue
		}
		if err := checkWord(n.what, n.name); err != nil {
			return err
		}
		if strings.Contains(n.name, "/") || n.name == "." || n.name == ".." {
			return fmt.Errorf("%s %q must be a file name", n.what, n.name)
		}
	}
	if b := s.SNIBackup; b != "" {
		if err := checkWord("backup hop socket", b); err != nil {
			return err
		}
		if !path.IsAbs(b) || path.Clean(b) != b {
			return fmt.Errorf("backup hop socket %q must be an absolute, clean path", b)
		}
		if strings.ContainsAny(b, "${}") {
			return fmt.Errorf("backup hop socket %q: '$', '{' and '}' would be read as an environment variable", b)
		}
	}
	return nil
}

// HopDirEnv names the environment variable that moves the backup hop
// socket out of its directory for one HAProxy master: when the state dir
// takes no new files (read-only, full), a master could not bind the
// socket there, and so would not start at all, while the config naming
// it, on that same disk, cannot be rewritten. The supervisor sets it
// (haproxy.Relocation); unset, the socket is where Sockets.SNIBackup says,
// which is also what `haproxy -c` or an operator's own run sees.
const HopDirEnv = "HAROUTE_HOP_DIR"

// backupHop is the address of the backup hop socket at p, its directory
// given through HopDirEnv (HAProxy expands "${NAME-default}" in double
// quotes).
func backupHop(p string) string {
	return `"unix@${` + HopDirEnv + "-" + path.Dir(p) + "}/" + path.Base(p) + `"`
}
