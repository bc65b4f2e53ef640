package haproxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
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
	// RunDir holds master.sock and haproxy.pid (and, by convention, the
	// admin.sock the rendered config declares). Created with mode 0700.
	RunDir string
	Logger *slog.Logger
	// SoftStopTimeout bounds how long Stop lets workers finish their
	// connections after SIGUSR1 before it sends SIGTERM (default 10 s).
	SoftStopTimeout time.Duration
}

// Supervisor starts HAProxy master-worker processes for one configuration.
// It keeps no process state itself: Start returns a Process, and the caller
// (the daemon) owns the restart policy — it waits on Process.Done, logs
// Process.Err and calls Start again with its own backoff.
type Supervisor struct {
	opts   Options
	binary string
	log    *slog.Logger
}

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
	if n := len(filepath.Join(opts.RunDir, "master.sock")); n > 107 {
		return nil, fmt.Errorf("haproxy supervisor: socket path in %q is %d bytes, unix sockets allow 107", opts.RunDir, n)
	}
	bin, err := resolveBinary(opts.Binary)
	if err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.SoftStopTimeout <= 0 {
		opts.SoftStopTimeout = 10 * time.Second
	}
	return &Supervisor{opts: opts, binary: bin, log: opts.Logger}, nil
}

// MasterSocket is the master CLI socket path.
func (s *Supervisor) MasterSocket() string { return filepath.Join(s.opts.RunDir, "master.sock") }

// PIDFile is where HAProxy writes the master's PID.
func (s *Supervisor) PIDFile() string { return filepath.Join(s.opts.RunDir, "haproxy.pid") }

// Process is one running HAProxy master and its workers.
type Process struct {
	cmd     *exec.Cmd
	master  *Master
	out     *outputLog
	log     *slog.Logger
	softTTL time.Duration

	done    chan struct{}
	waitErr error // set before done is closed
	// reapMu orders group signals against reaping the master (see killGroup).
	reapMu   sync.Mutex
	reaped   bool
	stopOnce sync.Once
	stopErr  error
}

// Start runs `haproxy -W -S <run>/master.sock,mode,600 -f <cfg> -p
// <run>/haproxy.pid` in the foreground as a child (no -D), logs its output,
// and returns once the master CLI lists a worker. If HAProxy exits first,
// the error carries its last messages (a port in use reads "cannot bind
// socket (Address already in use) [0.0.0.0:9080]").
//
// `-S <path>,mode,600` is accepted by 2.6.12 and the socket is created
// 0600 (checked in TestStartStop), so no chmod race is needed.
func (s *Supervisor) Start(ctx context.Context) (*Process, error) {
	if err := os.MkdirAll(s.opts.RunDir, 0o700); err != nil {
		return nil, fmt.Errorf("create run dir: %w", err)
	}
	// The run dir holds admin-level sockets; tighten a pre-existing one.
	if err := os.Chmod(s.opts.RunDir, 0o700); err != nil {
		return nil, fmt.Errorf("restrict run dir: %w", err)
	}
	cmd := exec.Command(s.binary,
		"-W",
		"-S", s.MasterSocket()+",mode,600",
		"-f", s.opts.ConfigPath,
		"-p", s.PIDFile(),
	)
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
		cmd:     cmd,
		master:  NewMaster(s.MasterSocket()),
		out:     newOutputLog(r, s.log.With("pid", cmd.Process.Pid)),
		log:     s.log,
		softTTL: s.opts.SoftStopTimeout,
		done:    make(chan struct{}),
	}
	go p.wait()
	s.log.Info("haproxy started", "pid", cmd.Process.Pid, "config", s.opts.ConfigPath)

	if err := p.waitReady(ctx, readyTimeout); err != nil {
		_ = p.Stop(context.Background())
		return nil, err
	}
	return p, nil
}

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
	p.waitErr = fmt.Errorf("haproxy master %d: %w%s", pid, err, p.out.tailSuffix())
	close(p.done)
}

// waitReady polls `show proc` until a worker is listed.
func (p *Process) waitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var lastErr error
	for {
		select {
		case <-p.done:
			return fmt.Errorf("haproxy exited during startup: %w", p.waitErr)
		default:
		}
		qctx, qcancel := context.WithTimeout(ctx, time.Second)
		info, err := p.master.ShowProc(qctx)
		qcancel()
		if err == nil && len(info.Workers) > 0 {
			return nil
		}
		if err != nil {
			lastErr = err
		} else {
			lastErr = errors.New("no worker listed yet")
		}
		select {
		case <-p.done:
			return fmt.Errorf("haproxy exited during startup: %w", p.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("haproxy not ready: %w (last: %v)%s", ctx.Err(), lastErr, p.out.tailSuffix())
		case <-tick.C:
		}
	}
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
func (p *Process) Reload(ctx context.Context) (ProcInfo, error) {
	mark := p.out.mark()
	info, err := p.master.Reload(ctx)
	if err == nil {
		return info, nil
	}
	// The master prints "Loading failure!" after its alerts; wait briefly
	// for the reader to catch up with it.
	alerts := p.out.alertsSince(mark, "Loading failure", 500*time.Millisecond)
	if len(alerts) > 0 {
		return info, fmt.Errorf("%w: %s", err, strings.Join(alerts, "; "))
	}
	return info, err
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
		timer := time.NewTimer(st.wait)
		// Once ctx is done only the last step's wait applies: a stop must
		// still stop.
		var ctxDone <-chan struct{}
		if i < len(steps)-1 {
			ctxDone = ctx.Done()
		}
		select {
		case <-p.done:
			timer.Stop()
			return nil
		case <-ctxDone:
		case <-timer.C:
		}
		timer.Stop()
	}
	select {
	case <-p.done:
		return nil
	default:
		return fmt.Errorf("haproxy master %d did not exit after SIGKILL", p.PID())
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
