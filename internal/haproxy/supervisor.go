package haproxy

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// readyTimeout bounds Start's wait for the first worker.
const readyTimeout = 30 * time.Second

// Options configure a Supervisor.
type Options struct {
	Binary     string // haproxy executable; "" = "haproxy" from PATH
	ConfigPath string
	// RunDir holds master.sock, haproxy.pid and haroute.lock (and, by
	// convention, the admin.sock the rendered config declares). Created
	// with mode 0700.
	RunDir string
	// AdminSocket is the admin socket the config declares, with
	// `expose-fd listeners`: a takeover fetches the listening sockets
	// through it. Default <RunDir>/admin.sock. SetSockets changes it.
	AdminSocket string
	// ListenerSockets are unix sockets the config binds (the TLS hop);
	// Process.Sockets checks them too. SetSockets changes them.
	ListenerSockets []string
	Logger          *slog.Logger
	// SoftStopTimeout bounds how long Stop lets workers finish their
	// connections after SIGUSR1 before it sends SIGTERM (default 10 s).
	SoftStopTimeout time.Duration
	// SpareBackendPrefix starts the names of the backends haroute fills
	// and empties itself at runtime (its pool of spares): HAProxy's alerts
	// about them are logged at debug.
	SpareBackendPrefix string
	// Relocate, when set, moves listener sockets out of a directory that
	// takes no new files when a master is launched.
	Relocate *Relocation
	// OnWorkerCrash, when set, is called (from the goroutine reading
	// HAProxy's output) for each old worker the master says crashed or
	// was killed (workerCrash): the connections it drained were cut.
	OnWorkerCrash func(pid int, status string)
}

// Relocation moves the listener sockets the config binds in Dir to
// Fallback, for one master, when Dir takes no new files at its launch (a
// read-only or full disk): HAProxy binds a unix socket by creating it,
// and a master that cannot bind one does not start at all. The config
// names such sockets "unix@${Env-Dir}/<name>" (in double quotes), so the
// master is pointed elsewhere by its environment alone; the config files
// themselves, which may sit on that same disk, need not change.
type Relocation struct {
	Env, Dir, Fallback string
}

// Supervisor starts HAProxy master-worker processes for one configuration.
// It keeps no process state itself: Start returns a Process, and the caller
// (the daemon) owns the restart policy — it waits on Process.Done, logs
// Process.Err and calls Start again with its own backoff.
type Supervisor struct {
	opts   Options
	binary string
	log    *slog.Logger
	// kept holds the running HAProxy's TCP listening sockets, so that
	// the ports stay open while a killed one is started again
	// (listeners.go).
	kept keptListeners
	// emptied are the backends haroute's commands took servers out of
	// lately, shared by every HAProxy's output log (Emptying).
	emptied emptiedBackends
	// answered is the earlier master awaitMaster last heard from.
	answered int
	// warnedPID is the pid a stale pid file named when findPrevious
	// last warned of it.
	warnedPID int
}

// Emptying tells the output logs that haroute is taking servers out of
// backends: HAProxy's alert that one has no server left is then its own
// change's consequence, logged as information.
func (s *Supervisor) Emptying(backends []string) { s.emptied.mark(backends, time.Now()) }

// NewSupervisor checks opts and finds the binary.
func NewSupervisor(opts Options) (*Supervisor, error) {
	if opts.ConfigPath == "" {
		return nil, errors.New("haproxy supervisor: no config path")
	}
	if opts.RunDir == "" {
		return nil, errors.New("haproxy supervisor: no run dir")
	}
	if strings.Contains(opts.RunDir, ",") {
		// -S takes "<path>,<option>,…": a comma in the path would be read
		// as an option separator.
		return nil, fmt.Errorf("haproxy supervisor: run dir %q contains a comma", opts.RunDir)
	}
	if n := len(filepath.Join(opts.RunDir, handOverSocket)); n > 107 {
		return nil, fmt.Errorf("haproxy supervisor: socket path in %q is %d bytes, unix sockets allow 107", opts.RunDir, n)
	}
	bin, err := resolveBinary(opts.Binary)
	if err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.AdminSocket == "" {
		opts.AdminSocket = filepath.Join(opts.RunDir, "admin.sock")
	}
	if opts.SoftStopTimeout <= 0 {
		opts.SoftStopTimeout = 10 * time.Second
	}
	return &Supervisor{opts: opts, binary: bin, log: opts.Logger}, nil
}

// MasterSocket is the master CLI socket path.
func (s *Supervisor) MasterSocket() string { return filepath.Join(s.opts.RunDir, "master.sock") }

// AdminSocket is the admin socket path.
func (s *Supervisor) AdminSocket() string { return s.opts.AdminSocket }

// handOverSocket is where a master started after a death fetches the
// listening sockets the supervisor kept (-x); the longest name in the run
// dir.
const handOverSocket = "listeners.sock"

// PIDFile is where HAProxy writes the master's PID.
func (s *Supervisor) PIDFile() string { return filepath.Join(s.opts.RunDir, "haproxy.pid") }

// Process is one running HAProxy master and its workers.
type Process struct {
	sup     *Supervisor
	cmd     *exec.Cmd
	master  *Master
	out     *outputLog
	log     *slog.Logger
	softTTL time.Duration
	// known is the last `show proc` read by Start or Reload: what a
	// reload signalled without the master CLI is confirmed against.
	known ProcInfo
	// relocated is set when this master binds Options.Relocate's sockets
	// in its Fallback (see Where).
	relocated bool

	done    chan struct{}
	waitErr error // set before done is closed
	// reapMu orders group signals against reaping the master (see killGroup).
	reapMu   sync.Mutex
	reaped   bool
	stopOnce sync.Once
	stopErr  error
	// stopping is set once Stop begins: a fetch of the listening sockets
	// still pending (keepListenersAfterReload) must not hold them again.
	stopping atomic.Bool
	// failedStart is set on a master that did not come up, before it is
	// stopped: its stop leaves the kept sockets to Start or TryStart.
	failedStart bool
	// served is set once the master came up (waitReady).
	served atomic.Bool
}

// Start runs `haproxy -W -S <run>/master.sock,mode,600 -f <cfg> -p
// <run>/haproxy.pid` in the foreground as a child (no -D), logs its output,
// and returns once the master CLI lists a worker. If HAProxy exits first,
// the error carries its last messages (a port in use reads "cannot bind
// socket (Address already in use) [0.0.0.0:9080]").
//
// When the pid file names a master an earlier haroute left running on
// this run dir, Start takes over from it: the new HAProxy inherits its
// listening sockets (`-x <admin socket>`) and soft-stops it (`-sf`), so
// no request is refused; it finishes its connections and exits in the
// background (drain), as old workers do after a reload.
//
// `-S <path>,mode,600` is accepted by 2.6.12 and the socket is created
// 0600 (checked in TestStartStop), so no chmod race is needed.
func (s *Supervisor) Start(ctx context.Context) (*Process, error) {
	p, err := s.TryStart(ctx)
	if err != nil {
		// Whatever stopped this start (the run dir, the binary, a master
		// that did not come up), nothing accepts on the kept sockets
		// until the next: the ports must refuse meanwhile.
		s.kept.release()
	}
	return p, err
}

// TryStart is Start for a caller that may start again at once: when it
// fails, the listening sockets kept (from the last HAProxy, or from the
// one a takeover sent away) stay held, queueing connections for the next
// start, which is handed them. A caller that gives up calls
// ReleaseListeners.
func (s *Supervisor) TryStart(ctx context.Context) (p *Process, err error) {
	if err := prepareRunDir(s.opts.RunDir); err != nil {
		return nil, err
	}
	prev := s.findPrevious()
	if prev == nil {
		prev = s.awaitStarting(ctx)
	}
	if prev != nil {
		s.awaitMaster(ctx, prev)
	}
	if err := ctx.Err(); err != nil {
		// Stopped while waiting for an earlier HAProxy: it keeps serving.
		if prev != nil {
			_ = unix.Close(prev.pidfd)
		}
		return nil, err
	}
	prevPID := 0
	if prev != nil {
		prevPID = prev.pid
		s.keepPrevious()
	}
	p, err = s.launch(ctx, prevPID)
	if err != nil {
		if prev != nil {
			_ = unix.Close(prev.pidfd) // it keeps serving; the next Start tries again
		}
		return nil, err
	}
	if prev != nil {
		go drain(prev, s.log)
	}
	return p, nil
}

// launchedHook, when a test sets it, runs once a master is launched,
// before launch waits for it to be ready.
var launchedHook func()

// masterArgs are the arguments of every HAProxy master a Supervisor
// launches; isOurs recognises a master of this run dir by them.
func (s *Supervisor) masterArgs() []string {
	return []string{
		"-W",
		"-S", s.MasterSocket() + ",mode,600",
		"-f", s.opts.ConfigPath,
		"-p", s.PIDFile(),
	}
}

// launch starts HAProxy with extra arguments and waits until it is ready.
// Without a previous master to take over from, it hands the new one the
// listening sockets kept from the last (-x <run>/listeners.sock), as it
// does when it takes over from prevPID (non-zero) with sockets kept.
func (s *Supervisor) launch(ctx context.Context, prevPID int) (*Process, error) {
	takeover := prevPID != 0
	relocated, err := s.relocate(takeover)
	if err != nil {
		return nil, err
	}
	// The listening sockets come from the admin socket of the HAProxy
	// taken over while it is live, else from those kept, handed over.
	from := ""
	if takeover && isLiveSocket(s.AdminSocket()) {
		from = s.AdminSocket()
	}
	var kept int
	if from == "" {
		var stop func()
		if kept, stop = s.handOverKept(); stop != nil {
			defer stop()
			from = filepath.Join(s.opts.RunDir, handOverSocket)
		}
	}
	var extra []string
	switch {
	case takeover:
		extra = takeoverArgs(prevPID, from)
		s.log.Warn("taking over haproxy left running by an earlier haroute", "pid", prevPID, "args", strings.Join(extra, " "))
	case from != "":
		extra = []string{"-x", from}
	}
	cmd := exec.Command(s.binary, append(s.masterArgs(), extra...)...)
	if relocated {
		rel := s.opts.Relocate
		cmd.Env = append(os.Environ(), rel.Env+"="+rel.Fallback)
		s.log.Warn("directory takes no new files; haproxy binds its sockets elsewhere until its next start",
			"dir", rel.Dir, "sockets", rel.Fallback)
	}
	// A process group of its own: signals to haroute's group (Ctrl-C in a
	// terminal) do not hit HAProxy behind Stop's back, and Stop can sweep
	// the group as a safety net.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}

	// One pipe for stdout and stderr keeps lines in order. It is an
	// *os.File, so exec hands it over directly and Wait does not wait for
	// workers that still hold it open.
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("haproxy output pipe: %w", err)
	}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("start %s: %w", s.binary, err)
	}
	w.Close()
	p := &Process{
		sup:     s,
		cmd:     cmd,
		master:  NewMaster(s.MasterSocket()),
		out:     newOutputLog(r, s.log.With("pid", cmd.Process.Pid), s.opts.SpareBackendPrefix, &s.emptied, s.opts.OnWorkerCrash),
		log:     s.log,
		softTTL: s.opts.SoftStopTimeout,
		done:    make(chan struct{}),

		relocated: relocated,
	}
	go p.wait()
	s.log.Info("haproxy started", "pid", cmd.Process.Pid, "config", s.opts.ConfigPath)
	if launchedHook != nil {
		launchedHook()
	}

	ready := ctx
	if takeover {
		// A stop that comes while the new master takes over does not stop
		// it: -sf may already have sent the previous one away, and
		// stopping this one too would leave no HAProxy at all. It comes
		// up (or fails) within readyTimeout, and the stop then hands it
		// over like any other.
		ready = context.WithoutCancel(ctx)
	}
	if err := p.waitReady(ready, readyTimeout); err != nil {
		p.failedStart = true // Start or TryStart decide about the kept sockets
		_ = p.Stop(context.Background())
		return nil, err
	}
	if kept > 0 {
		s.log.Info("haproxy adopted the listening sockets kept while it was down; connections that came meanwhile are served", "sockets", kept)
	}
	p.keepListeners(true)
	return p, nil
}

// ReleaseListeners closes the listening sockets kept from the last
// HAProxy. The daemon calls it when HAProxy is not to be started again
// at once (a restart backing off): connections must then be refused, so
// that clients and load balancers in front fail over, not wait.
func (s *Supervisor) ReleaseListeners() {
	if n := s.kept.count(); n > 0 {
		s.kept.release()
		s.log.Info("let go of the listening sockets kept from the last haproxy: its restart is not imminent, and connections are refused until it is back", "sockets", n)
	}
}

// handOverKept serves the kept listening sockets for a master about to be
// launched, and returns how many and the function that stops serving them;
// nil when none are kept or they cannot be served.
func (s *Supervisor) handOverKept() (int, func()) {
	n := s.kept.count()
	if n == 0 {
		return 0, nil
	}
	stop, err := s.kept.handOver(filepath.Join(s.opts.RunDir, handOverSocket))
	if err != nil {
		s.log.Warn("cannot hand the kept listening sockets to haproxy; it binds its own", "err", err)
		s.kept.release()
		return 0, nil
	}
	return n, stop
}

// keepListeners holds the listening sockets of p instead of those held
// so far, at once (synchronously when now is set) and again a moment
// later: until the old workers of a reload, or the old master of a
// takeover, have closed their listeners, one of them may answer the first
// fetch with the sockets of the old config.
//
// A fetch that fails lets go of what is held (a port the config no
// longer binds must not be kept open), unless p died meanwhile: its
// sockets are then what its successor needs. (The fetch at once, of a
// master that has just come up, does not wait to see.)
func (p *Process) keepListeners(now bool) {
	admin := p.sup.AdminSocket()
	keep := func(wait bool) {
		ticket := p.sup.kept.begin()
		n, err := p.sup.kept.fetch(admin, p.stopping.Load)
		switch {
		case errors.Is(err, errReleased):
			return // stopped meanwhile
		case err != nil:
			if wait {
				select {
				case <-p.done:
					return
				case <-time.After(diedWithin):
				}
			}
			if p.stopping.Load() {
				return
			}
			// A later fetch holds them, or decides: the one a second
			// after a reload, where this first one reached the worker
			// the reload retired. Released here, they were lost until
			// the next reload (T36, T37).
			if !p.sup.kept.releaseIfLatest(ticket) {
				return
			}
			p.log.Warn("cannot keep haproxy's listening sockets; a kill of haproxy refuses connections until it is back", "err", err)
		default:
			p.log.Debug("kept haproxy's listening sockets", "sockets", n)
		}
	}
	if now {
		keep(false)
	} else {
		go keep(true)
	}
	time.AfterFunc(keepAgainAfter, func() { keep(true) })
}

// diedWithin is how long a failed fetch waits to see whether its master
// died (Done waits for its output to end, up to a second). Longer than
// keepAgainAfter, so that the next fetch has begun when it decides.
const diedWithin = 2 * time.Second

func (p *Process) wait() {
	pid := p.cmd.Process.Pid
	// Wait for the master to exit without reaping it (WNOWAIT): while it
	// is a zombie its PID, which is also the process group id, cannot be
	// reused, so the sweep below cannot hit an unrelated process.
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			break
		}
	}
	// Workers exit when their master dies (verified on 2.6.12, also after
	// SIGKILL of the master); sweep the group anyway so none can hold the
	// ports against the next Start.
	p.reapMu.Lock()
	p.signalGroup(syscall.SIGKILL)
	err := p.cmd.Wait()
	p.reaped = true
	p.reapMu.Unlock()
	// Let the reader drain what the master wrote before it died, so Err
	// and startup errors carry its last words; a worker still dying may
	// hold the pipe a moment longer, hence the bound.
	p.out.waitEOF(time.Second)
	if err == nil {
		err = errors.New("exited with status 0")
	}
	p.waitErr = fmt.Errorf("haproxy master %d: %w%s", pid, err, p.out.tailSuffix(p.served.Load()))
	close(p.done)
}

// waitReady polls `show proc` until this master lists a worker that has
// loaded the configuration: from 3.1 the worker loads it after it is
// listed (loadsInWorker), and answers through the master once it did
// (Master.workerLoaded).
// Taken as ready before, a configuration the worker then refused (a port
// another process holds) read as a crash after the start instead of a
// failed start, and the first commands found no admin socket.
func (p *Process) waitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var lastErr error
	for {
		select {
		case <-p.done:
			return p.startupError()
		default:
		}
		qctx, qcancel := context.WithTimeout(ctx, time.Second)
		info, err := p.master.ShowProc(qctx)
		qcancel()
		// During a takeover the socket path may still lead to the master
		// being replaced: only this master's answer counts.
		ours := err == nil && info.Master.PID == p.PID()
		if ours && len(info.Workers) > 0 && p.master.loaded(ctx, info) {
			p.known = info
			p.served.Store(true)
			return nil
		}
		switch {
		case err != nil:
			lastErr = err
		case !ours:
			lastErr = fmt.Errorf("master socket answered by pid %d, not %d", info.Master.PID, p.PID())
		case len(info.Workers) == 0:
			lastErr = errors.New("no worker listed yet")
		default:
			lastErr = errors.New("the worker is still loading the configuration")
		}
		select {
		case <-p.done:
			return p.startupError()
		case <-ctx.Done():
			return fmt.Errorf("haproxy not ready: %w (last: %v)%s", ctx.Err(), lastErr, p.out.tailSuffix(false))
		case <-tick.C:
		}
	}
}

// startupError says why HAProxy exited before it was ready. A port held by
// another process (with noreuseport, a second router or a stray HAProxy)
// is named first, in HAProxy's words.
func (p *Process) startupError() error {
	for _, line := range p.out.lines() {
		if _, bind, ok := strings.Cut(line, "cannot bind socket"); ok {
			// 3.0 ends the sentence with a period ("…[127.0.0.1:80]."), 2.6
			// does not; the error reads the same on both.
			bind = strings.TrimSuffix(bind, ".")
			// waitErr names haroute's own master, which exited: said
			// after the holder's part, or it read as the holder.
			// A port in the ephemeral range (net.ipv4.ip_local_port_range)
			// may be held by an outgoing connection, which ss -ltnp does
			// not show (an audit's port 53936, held by a client socket).
			return fmt.Errorf("haproxy exited during startup: cannot bind socket%s; another process holds the port (ss -tanp names it: a listener, or an outgoing connection the kernel gave it from its ephemeral range, net.ipv4.ip_local_port_range); %w", bind, p.waitErr)
		}
	}
	return fmt.Errorf("haproxy exited during startup: %w", p.waitErr)
}

// PID is the master's process id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Master returns the master CLI client.
func (p *Process) Master() *Master { return p.master }

// Done is closed when the master has exited (and been reaped).
func (p *Process) Done() <-chan struct{} { return p.done }

// Err returns nil while the master runs and, once Done is closed, why it
// exited, with its last output lines. It is non-nil even for status 0:
// for a supervised HAProxy every exit is worth a restart or a look.
func (p *Process) Err() error {
	select {
	case <-p.done:
		return p.waitErr
	default:
		return nil
	}
}

// Reload reloads through the master CLI and confirms it (see
// Master.Reload). A failed reload's error carries the [ALERT] lines the
// master printed for it.
//
// When the master socket is gone or answers nothing, the reload is
// signalled (SIGUSR2) and confirmed once the re-executed master has
// created the socket again.
func (p *Process) Reload(ctx context.Context) (ProcInfo, error) {
	ctx, stop := p.Watch(ctx)
	defer stop()
	if p.relocated {
		// A deleted run dir comes back without it; the re-executed master
		// binds there again.
		if err := os.MkdirAll(p.sup.opts.Relocate.Fallback, 0o700); err != nil {
			return ProcInfo{}, fmt.Errorf("create %s: %w", p.sup.opts.Relocate.Fallback, err)
		}
	}
	if err := p.roomToBind(); err != nil {
		return ProcInfo{}, err
	}
	mark := p.out.mark()
	var info ProcInfo
	var err error
	if !p.masterAnswers(ctx) {
		// Gone, or replaced by what answers nothing (a FIFO, a file, a
		// socket nobody listens on): the master CLI cannot be reached,
		// and only a missing path fell back on the signal, so every
		// reload (a heal's too) failed until someone removed it.
		if _, owner := probeSocket(p.master.socketPath); p.foreign(owner) {
			p.log.Warn("master socket taken over by another haproxy master; reloading this one by signal, which binds it again", "socket", p.master.socketPath, "other_pid", owner)
		} else {
			p.log.Warn("master socket missing or not answering; reloading by signal", "socket", p.master.socketPath)
		}
		if err = p.signalReload(); err == nil {
			info, err = p.master.confirmReload(ctx, p.known)
		}
	} else {
		info, err = p.master.Reload(ctx)
	}
	if err == nil && loadsInWorker(info.Master.Version) {
		// A signal's new worker is listed while it loads, and so is the
		// CLI's when its answer was lost (a master that cannot pass the
		// connection on to the next re-executes all the same, and the
		// connection dies): `show proc` alone confirmed the reload. When
		// the CLI answered, the worker has loaded: one question.
		info, err = p.awaitLoaded(ctx, info)
	}
	if err == nil {
		p.known = info
		// Off the caller's goroutine (the daemon's loop): a worker that
		// does not answer must not hold changes up.
		p.keepListeners(false)
		return info, nil
	}
	// The master prints "Loading failure!" after its alerts; wait briefly
	// for the reader to catch up with it.
	alerts := p.out.alertsSince(mark, 500*time.Millisecond, "Loading failure", "Failed to load worker")
	if len(alerts) > 0 {
		return info, fmt.Errorf("%w: %s", err, strings.Join(alerts, "; "))
	}
	return info, err
}

// awaitLoaded waits until the reload's new worker, which info lists and
// p.known did not, has loaded the configuration (3.1+, see
// Master.workerLoaded). A reload whose new worker exits while it loads
// is a failed reload: the master then lists none of them.
func (p *Process) awaitLoaded(ctx context.Context, info ProcInfo) (ProcInfo, error) {
	known := append(slices.Clone(p.known.Workers), p.known.OldWorkers...)
	var fresh []Proc
	for _, w := range info.Workers {
		if !slices.ContainsFunc(known, func(o Proc) bool { return o.PID == w.PID }) {
			fresh = append(fresh, w)
		}
	}
	if len(fresh) == 0 {
		return info, nil // confirmReload found none: nothing to wait for
	}
	pid := youngest(fresh).PID
	for !p.master.workerLoaded(ctx, pid) {
		select {
		case <-ctx.Done():
			return info, fmt.Errorf("reload not confirmed: the new worker %d did not finish loading: %w", pid, context.Cause(ctx))
		case <-p.done:
			return info, p.waitErr
		case <-time.After(20 * time.Millisecond):
		}
		now, err := p.master.ShowProc(ctx)
		if err != nil {
			continue // the master is busy; ask again
		}
		if !slices.ContainsFunc(now.Workers, func(w Proc) bool { return w.PID == pid }) {
			return now, fmt.Errorf("%w: the new worker exited while it loaded the configuration; the previous worker keeps serving", ErrReloadFailed)
		}
	}
	if now, err := p.master.ShowProc(ctx); err == nil {
		info = now
	}
	return info, nil
}

// masterAnswers reports whether the master CLI can be reached. A socket
// that refuses connections may be a master re-executing for a reload
// someone else asked for (it binds its socket afresh): it is given
// masterReexecGrace to answer, as a signal then would reload it twice, or
// reach it before it handles the signal. What is not a socket at all (a
// FIFO, a file) or is missing does not wait, nor does another master's
// socket (Process.foreign): its CLI would reload that one.
func (p *Process) masterAnswers(ctx context.Context) bool {
	path := p.master.socketPath
	if live, owner := probeSocket(path); live {
		return !p.foreign(owner)
	}
	deadline := time.Now().Add(masterReexecGrace)
	for {
		if fi, err := os.Lstat(path); err != nil || fi.Mode().Type() != fs.ModeSocket {
			return false
		}
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(100 * time.Millisecond):
		}
		if isLiveSocket(path) {
			return true
		}
	}
}

// masterReexecGrace is how long a master socket that refuses connections
// is waited for before a reload goes by signal: a 2.6 master re-executes
// in well under a second.
const masterReexecGrace = 3 * time.Second

// keepAgainAfter is how long after a start or reload the kept sockets
// are fetched again.
const keepAgainAfter = time.Second

// errMasterExited ends a reload or runtime session whose master exited
// during it (Watch).
var errMasterExited = errors.New("the HAProxy master exited during the exchange")

// watchEvery is how often an exchange in flight looks at its master.
const watchEvery = 250 * time.Millisecond

// Watch returns ctx ended as soon as the master exits, for an exchange
// with HAProxy (a reload, a runtime session): a reload is confirmed by
// polling the master, which would otherwise go on until the caller's
// deadline (minutes) while nothing serves and the daemon, busy with it,
// restarts nothing. A master or worker stopped by a signal (SIGSTOP, a
// debugger) is resumed meanwhile, as the daemon's housekeeping does
// between changes, since it waits behind the exchange too: a runtime
// session with a stopped worker waited its whole timeout, then fell back
// to a reload.
func (p *Process) Watch(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	go func() {
		tick := time.NewTicker(watchEvery)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-p.done:
				cancel(fmt.Errorf("%w: %v", errMasterExited, p.waitErr))
				return
			case <-tick.C:
				if pids := p.ResumeStopped(); len(pids) > 0 {
					p.log.Warn("stopped HAProxy processes resumed: a reload or runtime change waited for them", "pids", pids)
				}
			}
		}
	}()
	return ctx, func() { cancel(nil) }
}

// Stop stops HAProxy and its workers: SIGUSR1 (soft stop: listeners close,
// workers finish their connections), then SIGTERM after SoftStopTimeout or
// when ctx is done, then SIGKILL to the whole process group. It returns
// once the master is reaped. Calling it again returns the first result.
func (p *Process) Stop(ctx context.Context) error {
	p.stopOnce.Do(func() { p.stopErr = p.stop(ctx) })
	return p.stopErr
}

func (p *Process) stop(ctx context.Context) error {
	// Nothing takes over a stopped HAProxy's ports: they must refuse
	// connections, not queue them for nobody.
	p.stopping.Store(true)
	if !p.failedStart {
		p.sup.kept.release()
	}
	steps := []struct {
		sig   syscall.Signal
		group bool
		wait  time.Duration
	}{
		{syscall.SIGUSR1, false, p.softTTL},
		{syscall.SIGTERM, false, 5 * time.Second},
		{syscall.SIGKILL, true, 5 * time.Second},
	}
	for i, st := range steps {
		select {
		case <-p.done:
			return nil
		default:
		}
		if st.group {
			p.killGroup(st.sig)
		} else if err := p.cmd.Process.Signal(st.sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
			return fmt.Errorf("signal haproxy master %d: %w", p.PID(), err)
		}
		p.log.Info("haproxy stopping", "pid", p.PID(), "signal", st.sig.String())
		// Once ctx is done only the last step's wait applies: a stop must
		// still stop.
		var ctxDone <-chan struct{}
		if i < len(steps)-1 {
			ctxDone = ctx.Done()
		}
		var resend func()
		if st.sig == syscall.SIGUSR1 {
			mark := p.out.mark()
			resend = func() {
				if !p.out.seenSince(mark, masterStopping) {
					_ = p.cmd.Process.Signal(syscall.SIGUSR1)
				}
			}
		}
		if p.await(st.wait, ctxDone, resend) {
			return nil
		}
	}
	select {
	case <-p.done:
		return nil
	default:
		return fmt.Errorf("haproxy master %d did not exit after SIGKILL", p.PID())
	}
}

// softStopResend is how often a soft stop repeats its SIGUSR1 until the
// master says it is stopping (masterStopping). HAProxy's master loses a
// SIGUSR1 that comes after its worker started serving but before its own
// main loop runs (2.6.12 and 3.0.11, from 100 backends up), and one that
// comes while it re-executes for a reload (2.6.12, 10k backends): sent
// once, a stop during a start, a `systemctl stop` moments after one,
// waited out SoftStopTimeout and ended with SIGTERM. A repeated SIGUSR1
// is acted on, and one during a soft stop under way changes nothing but
// another line of output: connections in flight still finish (checked
// on both versions).
const softStopResend = 500 * time.Millisecond

// masterStopping is what the master prints when it acts on a stop signal.
const masterStopping = "Exiting Master process"

// await waits up to d for the master to exit, or for ctxDone; it reports
// whether the master exited. resend, when set, runs every softStopResend.
func (p *Process) await(d time.Duration, ctxDone <-chan struct{}, resend func()) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	var tick <-chan time.Time
	if resend != nil {
		t := time.NewTicker(softStopResend)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-p.done:
			return true
		case <-ctxDone:
			return false
		case <-timer.C:
			return false
		case <-tick:
			resend()
		}
	}
}

// killGroup signals every process left in HAProxy's process group, whose
// id is the master's PID, unless the master has been reaped: from then on
// the kernel may hand that PID to an unrelated process.
func (p *Process) killGroup(sig syscall.Signal) {
	p.reapMu.Lock()
	defer p.reapMu.Unlock()
	if !p.reaped {
		p.signalGroup(sig)
	}
}

// signalGroup does the signalling; the caller holds reapMu.
func (p *Process) signalGroup(sig syscall.Signal) {
	if err := syscall.Kill(-p.cmd.Process.Pid, sig); err == nil {
		p.log.Debug("signalled haproxy process group", "pgid", p.cmd.Process.Pid, "signal", sig.String())
	}
}
