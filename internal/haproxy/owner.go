package haproxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/haroute/haroute/internal/fsutil"
)

// One HAProxy per run dir, owned by one haroute (DESIGN §7). Three parts:
//   - a lock file in the run dir, so a second haroute on the same run dir
//     refuses to start;
//   - at start, an HAProxy master an earlier haroute left running (its
//     haroute was killed with SIGKILL, say) is found through the pid file
//     and taken over: the new HAProxy inherits its listening sockets and
//     then soft-stops it, so no request is refused; one still loading
//     its configuration, with no pid file yet, is waited for first;
//   - the rendered global `noreuseport` makes any other process on the same
//     ports (a second router with another run dir, a stray HAProxy) fail
//     to bind, with HAProxy's "cannot bind socket … [addr:port]" in the
//     start error, instead of silently sharing the traffic.

// LockFile is the lock a running haroute holds in its run dir.
const LockFile = "haroute.lock"

// ErrRunDirInUse is wrapped by LockRunDir's error when another process
// holds the run dir.
var ErrRunDirInUse = errors.New("run dir in use")

// RunDirLock is an flock on <run dir>/haroute.lock, held while haroute
// runs. The kernel drops it when the process dies, however it dies.
type RunDirLock struct {
	path string
	f    *os.File
}

// LockRunDir creates runDir (0700) and takes its lock, or fails at once
// with ErrRunDirInUse naming the holder's pid.
func LockRunDir(runDir string) (*RunDirLock, error) {
	if err := prepareRunDir(runDir); err != nil {
		return nil, err
	}
	l := &RunDirLock{path: filepath.Join(runDir, LockFile)}
	if err := l.lock(); err != nil {
		return nil, err
	}
	return l, nil
}

// ReaperHolding returns the pid of the `haroute reap` holding runDir's
// lock (the lock file names its holder), or 0 when none does.
func ReaperHolding(runDir string) int {
	b, err := fsutil.ReadRegular(filepath.Join(runDir, LockFile))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return 0
	}
	if args := strings.Split(string(cmdline), "\x00"); len(args) > 1 && args[1] == "reap" {
		return pid
	}
	return 0
}

func (l *RunDirLock) lock() error {
	f, holder, err := fsutil.TryLock(l.path)
	if errors.Is(err, fsutil.ErrLocked) {
		return fmt.Errorf("%w: %s is locked by another haroute (pid %s); give each router its own --run-dir", ErrRunDirInUse, l.path, holder)
	}
	if err != nil {
		return err
	}
	if l.f != nil {
		l.f.Close()
	}
	l.f = f
	return nil
}

// Refresh takes the lock again when the lock file was removed or replaced
// (the run dir deleted behind haroute's back): a lock on a deleted file
// keeps nobody out.
func (l *RunDirLock) Refresh() error {
	var held, cur unix.Stat_t
	if err := unix.Fstat(int(l.f.Fd()), &held); err != nil {
		return fmt.Errorf("lock %s: %w", l.path, err)
	}
	if err := unix.Stat(l.path, &cur); err == nil && cur.Dev == held.Dev && cur.Ino == held.Ino {
		return nil
	}
	if err := prepareRunDir(filepath.Dir(l.path)); err != nil {
		return err
	}
	return l.lock()
}

// Close releases the lock. The file stays: removing it would let a
// second haroute lock a new file while a third still waits on the old.
func (l *RunDirLock) Close() error { return l.f.Close() }

// prepareRunDir creates the run dir, or tightens an existing one: it
// holds admin-level sockets.
func prepareRunDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create run dir: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("restrict run dir: %w", err)
	}
	return nil
}

// previous is an HAProxy master left running on this run dir by an
// earlier haroute, held through a pidfd so that no signal can reach a
// process that reused its pid.
type previous struct {
	pid   int
	pidfd int
}

// pidFileMaster is the master pid the run dir's pid file names, 0 if none
// (or what it holds is not a number).
func (s *Supervisor) pidFileMaster() int {
	b, err := fsutil.ReadRegular(s.PIDFile())
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// findPrevious returns the master named by the pid file if it still runs
// and its command line names this run dir's master socket or this config:
// a pid file outlives its process, and the pid may since belong to
// anything. nil when there is none. A pid file naming another process is
// warned about once for that pid: awaitStarting asks every 20 ms, and a
// daemon waiting for a RouterConfig at every read.
func (s *Supervisor) findPrevious() *previous {
	pid := s.pidFileMaster()
	if pid <= 1 || pid == os.Getpid() {
		return nil
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return nil // gone
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	// Read after the pidfd was opened: if the pidfd still names a live
	// process now, the command line read was that process's.
	if err != nil || !s.isOurs(cmdline) || unix.PidfdSendSignal(fd, 0, nil, 0) != nil {
		if err == nil && !s.isOurs(cmdline) && s.warnedPID != pid {
			s.warnedPID = pid
			s.log.Warn("pid file names a process that is not this run dir's haproxy; ignoring it",
				"pid_file", s.PIDFile(), "pid", pid)
		}
		unix.Close(fd)
		return nil
	}
	return &previous{pid: pid, pidfd: fd}
}

// Earlier returns the pid of the HAProxy master an earlier haroute left
// running on this run dir and this one has not taken over, or 0: a
// haroute that stops before it starts HAProxy (waiting for a RouterConfig
// it can use) must still hand it over or stop it, or it serves on
// unsupervised for good.
func (s *Supervisor) Earlier() int {
	prev := s.findPrevious()
	if prev == nil {
		return 0
	}
	unix.Close(prev.pidfd)
	return prev.pid
}

// StopEarlier stops the master Earlier returned, as a reaper would.
func (s *Supervisor) StopEarlier(pid int, softTTL time.Duration) error {
	return StopOrphan(pid, s.opts.RunDir, s.opts.ConfigPath, softTTL, s.log)
}

// awaitStarting finds an HAProxy master of this run dir that the pid file
// does not name, and waits for it if it is still loading its
// configuration: one an earlier haroute launched just before it was
// killed, which writes its pid file only as it binds, about a second later
// at 10k routes. An HAProxy launched beside it raced it for the ports; the
// loser exited, and with it a restarted haroute ("cannot bind socket"),
// leaving the winner unsupervised. It returns the master to take over:
// once the pid file names it, or at once when it already runs workers (its
// pid file was lost); nil when there is none or it exits. The wait ends
// with ctx or after readyTimeout.
func (s *Supervisor) awaitStarting(ctx context.Context) *previous {
	pid, running := s.unnamedMaster()
	if pid == 0 {
		return nil
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return nil // gone
	}
	if running {
		s.log.Warn("an haproxy of this run dir runs without a pid file naming it", "pid", pid, "pid_file", s.PIDFile())
		return &previous{pid: pid, pidfd: fd}
	}
	s.log.Warn("an haproxy of this run dir is still starting; waiting for it, to take it over", "pid", pid)
	deadline := time.Now().Add(readyTimeout)
	for ctx.Err() == nil && time.Now().Before(deadline) {
		if p := s.findPrevious(); p != nil {
			unix.Close(fd)
			return p
		}
		if waitPidfd(fd, 20*time.Millisecond) {
			break // it failed to start; the ports are free
		}
	}
	unix.Close(fd)
	return nil
}

// awaitMaster waits until prev's master answers on the master socket,
// which it does only from its main loop: only there does it act on the
// SIGUSR1 of a takeover (-sf) as a soft stop. A master re-executing for a
// reload (under way when its haroute died) or one whose worker has just
// begun to serve loses it (see softStopResend): it then went on beside
// the new HAProxy, on the same sockets, until retire's SIGTERM, and
// requests failed meanwhile. Without a master socket there is nothing to
// ask. The wait ends with ctx or after readyTimeout.
func (s *Supervisor) awaitMaster(ctx context.Context, prev *previous) {
	if _, err := os.Stat(s.MasterSocket()); err != nil {
		return
	}
	m := NewMaster(s.MasterSocket())
	deadline := time.Now().Add(readyTimeout)
	logged := false
	for ctx.Err() == nil && time.Now().Before(deadline) {
		qctx, cancel := context.WithTimeout(ctx, time.Second)
		info, err := m.ShowProc(qctx)
		cancel()
		if err == nil && info.Master.PID == prev.pid && m.loaded(ctx, info) {
			// (From 3.1 its master answers while its worker loads, and a
			// takeover then found no listening sockets to take over.)
			s.answered = prev.pid
			return
		}
		if s.answered == prev.pid {
			// It answered before, and then a start of this Supervisor's
			// that failed bound its master's socket on the path: prev
			// cannot answer there until it reloads, and waiting for it
			// held a start that was tried again 30 s (T39).
			if _, owner := probeSocket(s.MasterSocket()); owner != prev.pid {
				return
			}
		}
		if !logged {
			s.log.Warn("the earlier haproxy's master does not answer yet, or its worker does not (loading its configuration?); waiting before taking it over", "pid", prev.pid)
			logged = true
		}
		if waitPidfd(prev.pidfd, 20*time.Millisecond) {
			return // gone: the takeover finds nothing to stop
		}
	}
}

// unnamedMaster returns the pid of an HAProxy master of this run dir (see
// isOurs) that is not haroute's own, or 0, and whether it runs workers:
// they are forked with the master's command line, and told apart by
// their parent.
func (s *Supervisor) unnamedMaster() (pid int, running bool) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, false
	}
	ours := func(pid int) bool {
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		return err == nil && s.isOurs(cmdline)
	}
	parents := map[int]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil || p == os.Getpid() || !ours(p) {
			continue
		}
		parents[p] = parentOf(p)
	}
	for p, parent := range parents {
		if _, isWorker := parents[parent]; isWorker {
			continue
		}
		pid = p
	}
	if pid == 0 {
		return 0, false
	}
	for _, parent := range parents {
		running = running || parent == pid
	}
	return pid, running
}

// parentOf returns pid's parent from /proc/<pid>/stat, or 0.
func parentOf(pid int) int {
	_, ppid := procStat(pid)
	return ppid
}

// procStat returns pid's state letter and parent from /proc/<pid>/stat,
// or 0 and 0.
func procStat(pid int) (state byte, ppid int) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0
	}
	// "pid (comm) state ppid …"; comm may hold spaces and parentheses.
	i := strings.LastIndexByte(string(stat), ')')
	if i < 0 {
		return 0, 0
	}
	fields := strings.Fields(string(stat[i+1:]))
	if len(fields) < 2 || len(fields[0]) != 1 {
		return 0, 0
	}
	ppid, _ = strconv.Atoi(fields[1])
	return fields[0][0], ppid
}

// withWorkers returns master and the processes it is the parent of (its
// workers), from /proc.
func withWorkers(master int) []int {
	pids := []int{master}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return pids
	}
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			if _, ppid := procStat(pid); ppid == master {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// ResumeStopped sends SIGCONT to the master and to each of its workers
// that is stopped (SIGSTOP, SIGTSTP: state T; not a debugger's tracing
// stop), and returns their pids. A stopped worker answers nothing: its
// sockets read as dead, and every reload fails because it cannot hand its
// listeners over; nothing but SIGCONT brings it back.
func (p *Process) ResumeStopped() []int {
	var stopped []int
	for _, pid := range withWorkers(p.PID()) {
		if state, _ := procStat(pid); state == 'T' {
			stopped = append(stopped, pid)
		}
	}
	for _, pid := range stopped {
		_ = syscall.Kill(pid, syscall.SIGCONT)
	}
	return stopped
}

// isOurs reports whether a /proc cmdline is an HAProxy master started for
// this run dir or this config. `haproxy -c -f <live config>` (a check
// before a reload, left running by a haroute killed during it) names the
// config too, but is no master.
func (s *Supervisor) isOurs(cmdline []byte) bool {
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	if slices.Contains(args, "-c") {
		return false
	}
	for i := 0; i+1 < len(args); i++ {
		switch v := args[i+1]; args[i] {
		case "-S":
			if v == s.MasterSocket() || strings.HasPrefix(v, s.MasterSocket()+",") {
				return true
			}
		case "-f":
			if v == s.opts.ConfigPath {
				return true
			}
		}
	}
	return false
}

// takeoverArgs are the arguments that make a new HAProxy take over from
// prev: `-x <admin socket>` fetches prev's listening sockets over its
// admin socket (`expose-fd listeners`), so the ports never close; `-sf`
// has the new master soft-stop prev once it serves. Without a usable
// admin socket only `-sf` is given: HAProxy then pauses prev's listeners
// while it binds (a moment in which connections may be refused), unless
// listening sockets are kept (keepPrevious): launch then hands them over,
// and from names where. (A start that failed leaves the admin socket's
// path to its own master, dead.)
func takeoverArgs(prevPID int, from string) []string {
	var args []string
	if from != "" {
		args = append(args, "-x", from)
	}
	return append(args, "-sf", strconv.Itoa(prevPID))
}

// keepPrevious holds the listening sockets of the HAProxy a start takes
// over, unless some are held already: a 2.6 master sends prev away (-sf)
// before it forks its worker, and when that worker died as it started
// (the OOM killer, say), the ports were refused until the next start
// (T39). Held, they queue connections for it, which is handed them.
func (s *Supervisor) keepPrevious() {
	if s.kept.count() > 0 || !isLiveSocket(s.AdminSocket()) {
		return
	}
	if n, err := s.kept.fetch(s.AdminSocket(), func() bool { return false }); err != nil {
		s.log.Debug("cannot keep the listening sockets of the haproxy taken over", "err", err)
	} else {
		s.log.Debug("kept the listening sockets of the haproxy taken over", "sockets", n)
	}
}

// drain lets prev, which a new master has taken over and soft-stopped
// (-sf), finish what it serves: HAProxy's master passes SIGUSR1 to its
// workers, which close their listeners, finish their connections and
// exit, and the master with them, as old workers do after a reload
// (bounded only by hard-stop-after, which its own configuration sets).
// The takeover used to SIGTERM it after SoftStopTimeout, which cut every
// long-lived connection a restart of haroute found open. A master loses a
// SIGUSR1 that comes while it re-executes, and one lost would leave its
// workers accepting on the listeners both HAProxies now hold, so the
// signal is repeated for a while (it is harmless to one that stops).
func drain(prev *previous, log *slog.Logger) {
	defer unix.Close(prev.pidfd)
	for range drainResends {
		if waitPidfd(prev.pidfd, drainResendEvery) {
			log.Info("previous haproxy exited", "pid", prev.pid)
			return
		}
		_ = unix.PidfdSendSignal(prev.pidfd, syscall.SIGUSR1, nil, 0)
	}
	log.Info("previous haproxy finishes its connections before it exits", "pid", prev.pid)
	for !waitPidfd(prev.pidfd, time.Hour) {
	}
	log.Info("previous haproxy exited", "pid", prev.pid)
}

// drain repeats the soft stop every drainResendEvery, drainResends times.
const (
	drainResends     = 20
	drainResendEvery = 500 * time.Millisecond
)

// retire makes sure prev goes: it has been sent SIGUSR1 (soft stop); if
// it is still there after softTTL it gets SIGTERM, then SIGKILL. Its
// workers go with it (verified on 2.6.12, also after SIGKILL). For a stop,
// where nothing takes over what it serves.
func retire(prev *previous, softTTL time.Duration, log *slog.Logger) {
	defer unix.Close(prev.pidfd)
	for _, st := range []struct {
		wait time.Duration
		next syscall.Signal
	}{{softTTL, syscall.SIGTERM}, {5 * time.Second, syscall.SIGKILL}, {5 * time.Second, 0}} {
		if waitPidfd(prev.pidfd, st.wait) {
			log.Info("previous haproxy exited", "pid", prev.pid)
			return
		}
		if st.next == 0 {
			break
		}
		log.Warn("previous haproxy still running; signalling it", "pid", prev.pid, "signal", st.next.String())
		_ = unix.PidfdSendSignal(prev.pidfd, st.next, nil, 0)
	}
	log.Error("previous haproxy did not exit after SIGKILL", "pid", prev.pid)
}

// waitPidfd waits up to d for the process behind a pidfd to exit.
func waitPidfd(fd int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		ms := int(time.Until(deadline) / time.Millisecond)
		if ms < 0 {
			ms = 0
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, ms)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return false
		case n > 0:
			return true
		case ms == 0:
			return false
		}
	}
}
