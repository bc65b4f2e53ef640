package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/haroute/haroute/internal/fsutil"
	"github.com/haroute/haroute/internal/haproxy"
	"github.com/haroute/haroute/internal/plan"
	"github.com/haroute/haroute/internal/render"
	"github.com/haroute/haroute/internal/status"
)

// The run dir is haroute's own: one haroute holds it (a lock file), and
// what lives in it — the master and admin sockets, the TLS hop socket —
// is checked every housekeeping tick and brought back when something
// deleted it (a tmpfiles cleaner, an operator's rm -rf): without the hop
// socket TLS routes would fail, without the admin socket every change
// would fall back to a reload. While it is broken, /readyz says so.
//
// Healing costs no request (internal/haproxy/sockets.go has what HAProxy
// 2.6 can and cannot rebind):
//   - The TLS hop has a backup socket in the state dir, which be_sni falls
//     over to at once, so TLS routes keep serving from the moment of the
//     loss until the heal, and in the old worker after it.
//   - A lost master socket comes back with a reload.
//   - A lost admin or hop socket is renamed (admin-1.sock, fe_sni-1.sock,
//     …): the config is rendered with the new name, checked, and HAProxy
//     reloads at once. The new worker binds the new name afresh and
//     inherits the TCP listeners, as at any reload. <run-dir>/admin.sock
//     then is a symlink to the renamed admin socket, so the documented
//     path keeps working; a restart of haroute goes back to the default
//     names.

// socketsReason starts the reason /readyz gives while sockets are lost.
const socketsReason = "haproxy sockets "

// maxBackupSocketPath bounds the backup hop's path: HAProxy binds a unix
// socket under "<path>.<pid>.tmp" first, which must fit in sun_path (108
// bytes) with a pid of up to 7 digits, and a renamed socket is longer.
const maxBackupSocketPath = 88

// healState is what heal remembers between ticks.
type healState struct {
	broken string // the reason last found; "" when all is well
	// renamed is set once the lost sockets have new names, until they
	// serve: a reload that failed is tried again under the same names.
	// before are the names they had, put back when the config with the
	// new ones could not even be written (a read-only state disk): the
	// HAProxy that runs, or is restarted, binds what is on disk.
	renamed bool
	before  render.Sockets
	// after and backoff space out heals that fail (up to a minute), so a
	// reload that cannot succeed is not retried every tick.
	after   time.Time
	backoff time.Duration
	// linkErr is the last failure to link admin.sock, logged once.
	linkErr string
	// masterGone is when the master socket alone was first found
	// missing, for masterLossGrace.
	masterGone time.Time
}

// masterLossGrace is how long the master socket alone may be missing
// before it is healed: longer than a master takes to execute itself
// again and parse a large config.
const masterLossGrace = 5 * time.Second

// initialSockets are the default socket names, and the backup hop in the
// state dir unless its path cannot name a unix socket in HAProxy's
// syntax.
func initialSockets(opts Options) render.Sockets {
	s := render.Sockets{Admin: render.AdminSocket, SNI: render.SNISocket}
	backup := filepath.Join(opts.StateDir, render.SNISocket)
	switch {
	case len(backup) > maxBackupSocketPath:
		opts.Logger.Warn("state dir path too long for the backup TLS hop socket; TLS routes fail while a deleted run dir is healed",
			"path", backup, "max", maxBackupSocketPath)
	case strings.ContainsAny(backup, "${}"):
		opts.Logger.Warn("state dir path holds '$', '{' or '}'; no backup TLS hop socket, so TLS routes fail while a deleted run dir is healed",
			"path", backup)
	default:
		s.SNIBackup = backup
	}
	return s
}

// hopRelocation lets a master started while the state dir takes no new
// files (read-only, full) bind the backup hop in <run-dir>/hop instead:
// else it would not start at all, and the live bundle naming the socket
// sits on that same disk. Nil when that path is too long for a socket.
func hopRelocation(opts Options) *haproxy.Relocation {
	rel := &haproxy.Relocation{Env: render.HopDirEnv, Dir: opts.StateDir, Fallback: filepath.Join(opts.RunDir, "hop")}
	if len(filepath.Join(rel.Fallback, render.SNISocket)) > maxBackupSocketPath {
		return nil
	}
	return rel
}

// useSockets makes s the socket names of the next render, and points
// everything that talks to HAProxy's sockets at them.
func (d *Daemon) useSockets(s render.Sockets) error {
	admin := filepath.Join(d.opts.RunDir, s.Admin)
	inspector, err := haproxy.NewInspector(admin)
	if err != nil {
		return err
	}
	listeners := []string{filepath.Join(d.opts.RunDir, s.SNI)}
	if s.SNIBackup != "" {
		listeners = append(listeners, s.SNIBackup)
	}
	d.sup.SetSockets(admin, listeners)
	// The runtime client is shared with the metrics scrape: it is pointed
	// at the new socket, not replaced.
	if d.runtime == nil {
		d.runtime = haproxy.NewRuntime(admin)
	}
	d.runtime.SetSocket(admin)
	d.inspector = inspector
	d.sockets = s
	return nil
}

// lockRunDir takes the run dir's lock for as long as the daemon runs: a
// second haroute on the same run dir fails here, before it touches
// anything.
func (d *Daemon) lockRunDir(ctx context.Context) error {
	var lock *haproxy.RunDirLock
	// A reaper's lock is not a dying haroute's: no waiting for it (T37).
	dying := func(err error) bool {
		return errors.Is(err, haproxy.ErrRunDirInUse) && haproxy.ReaperHolding(d.opts.RunDir) == 0
	}
	err := retryLocked(ctx, dying, func() (err error) {
		lock, err = haproxy.LockRunDir(d.opts.RunDir)
		return err
	})
	if pid := haproxy.ReaperHolding(d.opts.RunDir); errors.Is(err, haproxy.ErrRunDirInUse) && pid > 0 {
		// A `haroute reap` left by the last haroute is stopping its
		// HAProxy, whose listeners are closed: this haroute refused to
		// start until the drain was over, every route down meanwhile.
		// The reaper goes; the HAProxy it soft-stopped drains on its own,
		// and Start takes over from it.
		d.log.Info("a haroute reap holds the run dir, stopping a left HAProxy; taking over from it", "pid", pid)
		_ = syscall.Kill(pid, syscall.SIGTERM)
		for range 50 {
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
			if lock, err = haproxy.LockRunDir(d.opts.RunDir); !errors.Is(err, haproxy.ErrRunDirInUse) || ctx.Err() != nil {
				break
			}
		}
	}
	if err != nil {
		return err
	}
	d.runLock = lock
	return nil
}

// retryLocked runs take until it fails with an error that held does not
// call a lock held, for lockWait at most: a haroute killed with SIGKILL
// holds its locks until the kernel has torn it down, which for a large
// heap takes a moment, and a restart at once found the run dir "in use"
// by the dead process, and stopped, leaving its HAProxy with no one to
// supervise it (T36). A second router on the same directories is still
// refused, after lockWait or once ctx ends.
func retryLocked(ctx context.Context, held func(error) bool, take func() error) error {
	deadline := time.Now().Add(lockWait)
	for {
		err := take()
		if !held(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// lockWait is how long retryLocked waits for a lock a dying process holds.
var lockWait = 2 * time.Second

// lockStateDir locks the state dir, waiting as lockRunDir does for a
// haroute that is dying.
func (d *Daemon) lockStateDir(ctx context.Context) (*os.File, error) {
	var lock *os.File
	var holder string
	locked := func(err error) bool { return errors.Is(err, fsutil.ErrLocked) }
	err := retryLocked(ctx, locked, func() (err error) {
		lock, holder, err = fsutil.TryLock(filepath.Join(d.opts.StateDir, StateLockFile))
		return err
	})
	if errors.Is(err, fsutil.ErrLocked) {
		return nil, fmt.Errorf("state dir in use: %s is locked by another haroute (pid %s); give each router its own --state-dir", d.opts.StateDir, holder)
	}
	return lock, err
}

// heal checks the run dir and HAProxy's sockets, and brings back what is
// missing: the run dir (0700) and its lock first; then a master socket
// alone comes back with a reload (signalled: the master CLI is what is
// missing), lost admin and hop sockets under new names with a reload at
// once.
func (d *Daemon) heal(ctx context.Context) {
	if d.proc == nil {
		return
	}
	broken := d.proc.Sockets()
	if broken == nil {
		if d.healing.broken != "" {
			d.log.Info("haproxy sockets healed")
			if d.applied.Desired != nil {
				// Ready again, as the loss made it not ready, even when
				// no change has been published since (the state disk
				// refusing writes, say).
				d.status.Set(func(s *status.Status) {
					if strings.HasPrefix(s.NotReadyReason, socketsReason) {
						s.Ready, s.NotReadyReason = true, ""
					}
				})
			}
		}
		d.healing = healState{linkErr: d.healing.linkErr}
		d.linkAdminSocket()
		return
	}
	var se *haproxy.SocketsError
	if errors.As(broken, &se) && se.MasterOnly && se.MasterHeldBy == 0 && d.healing.broken == "" {
		// A master that reloads (an operator's `reload` on the master
		// CLI, a SIGUSR2) executes itself again and binds its socket
		// afresh: for a moment, up to a config parse at 10k routes, the
		// socket is gone or refuses. Healing that would reload a second
		// time, and fail on the very socket that is coming back; only a
		// loss that outlasts masterLossGrace is one. (Another master's
		// socket there is not this one coming back.)
		now := time.Now()
		if d.healing.masterGone.IsZero() {
			d.healing.masterGone = now
		}
		if now.Sub(d.healing.masterGone) < masterLossGrace {
			d.log.Debug("haproxy master socket missing; waiting for a reloading master to bind it again", "since", d.healing.masterGone)
			return
		}
	}
	if pids := d.proc.ResumeStopped(); len(pids) > 0 {
		// Stopped, not gone: its sockets answer again once it runs.
		d.log.Warn("haproxy processes were stopped (SIGSTOP); resumed them", "pids", pids)
		return
	}
	reason := socketsReason + broken.Error()
	d.setNotReady(reason)
	if reason != d.healing.broken {
		d.recordError(fmt.Errorf("%s; healing", reason))
		d.healing.broken = reason
	}
	if time.Now().Before(d.healing.after) {
		return
	}
	// The lock file went with a deleted run dir; Refresh recreates both.
	if err := d.runLock.Refresh(); err != nil {
		d.healFailed(fmt.Errorf("heal run dir: %w", err))
		return
	}
	if se == nil {
		d.healFailed(fmt.Errorf("heal: %w", broken))
		return
	}
	if se.MasterOnly {
		if !d.throttle.pending {
			d.throttle.request(plan.Reason{Kind: plan.KindHeal, Subject: reason})
		}
		return
	}
	if !d.healing.renamed {
		d.healing.before = d.sockets
		if err := d.renameLost(se.Missing); err != nil {
			d.healFailed(fmt.Errorf("heal: %w", err))
			return
		}
		d.healing.renamed = true
	}
	d.rebind(ctx, reason)
}

// renameLost gives each admin or hop socket among missing, or in the run
// dir when the run dir is missing, its next name.
func (d *Daemon) renameLost(missing []string) error {
	s := d.sockets
	runDirLost := slices.Contains(missing, d.opts.RunDir)
	lost := func(path string) bool {
		return slices.Contains(missing, path) || runDirLost && strings.HasPrefix(d.proc.Where(path), d.opts.RunDir+"/")
	}
	if lost(filepath.Join(d.opts.RunDir, s.Admin)) {
		s.Admin = haproxy.NextSocketName(s.Admin)
	}
	if lost(filepath.Join(d.opts.RunDir, s.SNI)) {
		s.SNI = haproxy.NextSocketName(s.SNI)
	}
	if s.SNIBackup != "" && lost(s.SNIBackup) {
		s.SNIBackup = haproxy.NextSocketName(s.SNIBackup)
	}
	d.log.Warn("renaming lost haproxy sockets", "admin", s.Admin, "hop", s.SNI, "backup_hop", s.SNIBackup)
	return d.useSockets(s)
}

// rebind writes what HAProxy serves again, rendered with the current
// socket names and checked, and reloads at once rather than after the
// reload interval: the new worker binds the renamed sockets and inherits
// every other listener. On failure the running HAProxy keeps serving
// (TLS over the backup hop), and a later tick tries again.
func (d *Daemon) rebind(ctx context.Context, reason string) {
	next, err := d.prepare(d.desired.Desired, d.live.path, envOf(d.desired))
	if err == nil {
		err = d.writeChecked(ctx, next)
	}
	if err != nil {
		// The new names reached no file: back to those on disk, which
		// a restarted HAProxy binds and the check must look for.
		if uerr := d.useSockets(d.healing.before); uerr == nil {
			d.healing.renamed = false
		}
		d.healFailed(fmt.Errorf("heal: %w", err))
		return
	}
	d.desired = next
	d.throttle.request(plan.Reason{Kind: plan.KindHeal, Subject: reason})
	d.reload(ctx)
	if d.throttle.pending {
		// reload recorded why and asked again.
		d.healFailed(errors.New("heal: reload onto the renamed sockets failed"))
		return
	}
	// HAProxy holds the new names: a loss found from now on is a new one,
	// even before a tick has seen every socket answer.
	d.healing.renamed = false
}

// linkAdminSocket keeps <run-dir>/admin.sock leading to a renamed admin
// socket. A failure is recorded once, and does not make /readyz fail:
// haroute itself uses the socket's real path.
func (d *Daemon) linkAdminSocket() {
	err := d.sup.LinkAdminSocket()
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if msg != d.healing.linkErr && err != nil {
		d.recordError(err)
	}
	d.healing.linkErr = msg
}

// healFailed records a failed heal and spaces out the next try.
func (d *Daemon) healFailed(err error) {
	d.healing.backoff = min(max(2*d.healing.backoff, time.Second), time.Minute)
	d.healing.after = time.Now().Add(d.healing.backoff)
	d.recordError(fmt.Errorf("%w (next try in %v)", err, d.healing.backoff))
}
