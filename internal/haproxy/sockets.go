package haproxy

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Lost sockets (DESIGN §7). Something may delete the run dir or a socket
// in it (a tmpfiles cleaner, an operator's rm -rf). What can and cannot
// bring a socket back, as seen on 2.6.12:
//   - The master socket (-S) is bound afresh by every reload.
//   - Every other unix listener, the admin socket (stats socket) included,
//     is handed to the next worker at a reload, and to a new master at a
//     takeover (-x), matched by its path: a deleted one stays dead under
//     the same name. Under a new name it is bound afresh, while the TCP
//     listeners pass on as at any reload, so no connection is refused.
// The daemon therefore renames a lost socket (NextSocketName), renders
// the config with the new name, and reloads. A process started with -sf
// and no -x would bind everything afresh too, but with noreuseport it
// must first pause the old process's TCP listeners, and connections
// arriving meanwhile are refused.

// NextSocketName returns the name a lost socket is bound under next:
// admin.sock, admin-1.sock, admin-2.sock, … A name that differs before a
// dot from every name HAProxy held matches none of its listeners (HAProxy
// only treats ".<digits>.tmp" suffixes as the same socket).
func NextSocketName(path string) string {
	dir, base := filepath.Split(path)
	stem, ext, _ := strings.Cut(base, ".")
	if ext != "" {
		ext = "." + ext
	}
	n := 0
	if i := strings.LastIndexByte(stem, '-'); i >= 0 {
		if v, err := strconv.Atoi(stem[i+1:]); err == nil && v > 0 {
			stem, n = stem[:i], v
		}
	}
	return dir + stem + "-" + strconv.Itoa(n+1) + ext
}

// SetSockets tells the supervisor the admin and listener sockets the
// config now declares, for Process.Sockets and for takeovers. Call it
// from the goroutine that drives the supervisor, before the reload that
// binds them.
func (s *Supervisor) SetSockets(admin string, listeners []string) {
	s.opts.AdminSocket = admin
	s.opts.ListenerSockets = append([]string(nil), listeners...)
}

// ListenerSockets are the unix listener sockets the config declares.
func (s *Supervisor) ListenerSockets() []string {
	return append([]string(nil), s.opts.ListenerSockets...)
}

// DefaultAdminSocket is <RunDir>/admin.sock, where operators (and a
// later haroute's takeover) look for the admin socket.
func (s *Supervisor) DefaultAdminSocket() string { return filepath.Join(s.opts.RunDir, "admin.sock") }

// LinkAdminSocket keeps DefaultAdminSocket leading to the admin socket
// when the socket has another name (it was renamed after a loss): a
// symlink there, replaced atomically, so the documented path works. It
// does nothing when the link is right or the names are the same.
func (s *Supervisor) LinkAdminSocket() error {
	link, target := s.DefaultAdminSocket(), s.AdminSocket()
	if link == target || filepath.Dir(target) != s.opts.RunDir {
		return nil
	}
	rel := filepath.Base(target)
	if cur, err := os.Readlink(link); err == nil && cur == rel {
		return nil
	}
	tmp := link + ".link"
	_ = os.Remove(tmp)
	if err := os.Symlink(rel, tmp); err != nil {
		return fmt.Errorf("link admin socket: %w", err)
	}
	if err := os.Rename(tmp, link); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("link admin socket: %w", err)
	}
	return nil
}

// isLiveSocket reports whether a unix socket at path has a listener. It
// is dead only when the path is missing, is not a socket, or refuses.
func isLiveSocket(path string) bool {
	live, _ := probeSocket(path)
	return live
}

// probeSocket connects to the unix socket at path: live reports whether
// it has a listener (see isLiveSocket), owner the pid of the process that
// listens (SO_PEERCRED: its credentials as it called listen), 0 when that
// cannot be told.
//
// It never blocks: a listener whose backlog is full (a hung or stopped
// HAProxy with clients queued) answers EAGAIN and counts as live. A
// blocking connect waited for it, and froze the daemon's loop for as long
// as HAProxy hung, while /readyz said ok. A socket haroute cannot create
// itself (out of descriptors) says nothing of HAProxy's, and counts as
// live too: it read as every socket lost, and healing renamed them all.
func probeSocket(path string) (live bool, owner int) {
	c, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return true, 0
	}
	defer unix.Close(c)
	switch err := unix.Connect(c, &unix.SockaddrUnix{Name: path}); {
	case err == nil:
		if cred, err := unix.GetsockoptUcred(c, unix.SOL_SOCKET, unix.SO_PEERCRED); err == nil {
			return true, int(cred.Pid)
		}
		return true, 0
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ECONNREFUSED), errors.Is(err, unix.ENOTSOCK),
		errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.ELOOP), errors.Is(err, unix.EPROTOTYPE):
		return false, 0
	default:
		return true, 0
	}
}

// SocketsError lists the sockets (or the run dir) that are missing or
// dead; the daemon heals them.
type SocketsError struct {
	// Missing are the paths that do not exist or do not accept
	// connections, as the config declares them (see Process.Where); the
	// run dir alone when it is gone.
	Missing []string
	// MasterOnly is set when only the master socket is missing: a reload
	// signalled to the master brings it back.
	MasterOnly bool
	// MasterHeldBy is the pid of another HAProxy master that took the
	// master socket's path over, 0 if none: a predecessor still draining
	// after a takeover, reloaded from outside (SIGUSR2), binds its own
	// socket there again, and every command of the master CLI reached it
	// rather than the master serving (T39).
	MasterHeldBy int
}

func (e *SocketsError) Error() string {
	msg := "missing or dead: " + strings.Join(e.Missing, ", ")
	if e.MasterHeldBy != 0 {
		msg = fmt.Sprintf("%s (the master socket is another haproxy master's, pid %d)", msg, e.MasterHeldBy)
	}
	return msg
}

// Sockets checks that the run dir and every socket HAProxy serves (the
// master and admin sockets, and Options.ListenerSockets such as the TLS
// hops) exist and accept connections. It returns a *SocketsError when any
// does not.
func (p *Process) Sockets() error {
	if fi, err := os.Stat(p.sup.opts.RunDir); err != nil || !fi.IsDir() {
		// Everything in it is gone with it.
		return &SocketsError{Missing: []string{p.sup.opts.RunDir}}
	}
	e := &SocketsError{}
	for _, path := range append([]string{p.sup.MasterSocket(), p.sup.AdminSocket()}, p.sup.opts.ListenerSockets...) {
		live, owner := probeSocket(p.Where(path))
		switch {
		case !live:
			e.Missing = append(e.Missing, path)
		case path == p.sup.MasterSocket() && p.foreign(owner):
			e.Missing, e.MasterHeldBy = append(e.Missing, path), owner
		}
	}
	if len(e.Missing) == 0 {
		return nil
	}
	e.MasterOnly = len(e.Missing) == 1 && e.Missing[0] == p.sup.MasterSocket()
	return e
}

// foreign reports whether owner, the pid listening on the master
// socket's path (0: not known), is not this master. (A master executing
// itself again for a reload keeps its pid.)
func (p *Process) foreign(owner int) bool { return owner != 0 && owner != p.PID() }

// signalReload reloads the master with SIGUSR2, for when its CLI socket
// is gone: the re-executed master creates it again.
func (p *Process) signalReload() error {
	if err := p.cmd.Process.Signal(syscall.SIGUSR2); err != nil {
		return fmt.Errorf("signal haproxy master %d: %w", p.PID(), err)
	}
	return nil
}

// relocate reports whether the next master binds Options.Relocate's
// sockets in its Fallback: when Dir takes no new file. The probe creates
// and removes a file, as binding a unix socket creates one; a bare
// access(2) says nothing of a full disk. A master taking over from
// another inherits the sockets it finds live, binding nothing: those stay
// where they are, out of the run dir, whose loss they are there to
// outlast.
func (s *Supervisor) relocate(takeover bool) (bool, error) {
	rel := s.opts.Relocate
	if rel == nil {
		return false, nil
	}
	if takeover && s.liveIn(rel.Dir) {
		return false, nil
	}
	f, err := os.CreateTemp(rel.Dir, probePattern)
	if err == nil {
		f.Close()
		_ = os.Remove(f.Name())
		return false, nil
	}
	if err := os.MkdirAll(rel.Fallback, 0o700); err != nil {
		return false, fmt.Errorf("create %s: %w", rel.Fallback, err)
	}
	return true, nil
}

// roomToBind reports, as an error, a run dir (or the fallback the master
// binds in) that takes no new file for want of space or inodes. A 2.6
// master re-executed by a reload binds its sockets afresh (a temporary
// name each, and a link that keeps the previous one), and when it cannot
// it exits ("Non-recoverable mworker wait-mode error"): every route went
// down until the disk had room again. The probe creates as many files as
// that takes, then removes them; probes a haroute killed meanwhile left
// behind (taking inodes that matter here) go first. A read-only run dir
// stops the reload too. Other errors (a run dir deleted, which healing
// recreates) are left to the reload to meet.
func (p *Process) roomToBind() error {
	dirs := []string{p.sup.opts.RunDir}
	if rel := p.sup.opts.Relocate; p.relocated {
		dirs = append(dirs, rel.Fallback)
	}
	n := 2 * (2 + len(p.sup.opts.ListenerSockets))
	for _, dir := range dirs {
		if stale, _ := filepath.Glob(filepath.Join(dir, probePattern)); len(stale) > 0 {
			for _, name := range stale {
				_ = os.Remove(name)
			}
		}
		var made []string
		var err error
		for range n {
			var f *os.File
			if f, err = os.CreateTemp(dir, probePattern); err != nil {
				break
			}
			f.Close()
			made = append(made, f.Name())
		}
		for _, name := range made {
			_ = os.Remove(name)
		}
		if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, syscall.EROFS) {
			return fmt.Errorf("%s takes no new file (%w): a reload would leave the HAProxy master unable to bind its sockets, and it would exit; HAProxy keeps serving its current state until there is room", dir, err)
		}
	}
	return nil
}

// probePattern names the files that probe a directory for room.
const probePattern = ".bind-probe-*"

// liveIn reports whether every listener socket declared in dir answers.
func (s *Supervisor) liveIn(dir string) bool {
	for _, path := range s.opts.ListenerSockets {
		if filepath.Dir(path) == dir && !isLiveSocket(path) {
			return false
		}
	}
	return true
}

// Where is the path at which this master binds the listener socket the
// config declares at path: the same path, unless the socket was
// relocated when the master was launched.
func (p *Process) Where(path string) string {
	if rel := p.sup.opts.Relocate; p.relocated && filepath.Dir(path) == rel.Dir {
		return filepath.Join(rel.Fallback, filepath.Base(path))
	}
	return path
}
